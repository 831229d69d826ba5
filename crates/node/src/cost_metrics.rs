//! The node's share of the per-operation cost table (docs/performance.md, "The cost model"):
//! frames routed ([`crate::traffic`]) and the process-wide counters of `plumb-cost`
//! (allocations, hashes, MACs), as Prometheus counters.

use crate::mirror::advance_to;
use crate::router::Router;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TrafficLabels {
    /// `auth`, `order`, `exec`, or `client` (frames received from clients).
    pub from: String,
    /// `local` (a stage of this node), `peer` (another node), `client`.
    pub to: String,
}

pub struct CostMetrics {
    frames: Family<TrafficLabels, Counter>,
    frame_bytes: Family<TrafficLabels, Counter>,
    process: Vec<(&'static plumb_cost::Counter, Counter)>,
}

impl CostMetrics {
    pub fn register(registry: &mut Registry) -> CostMetrics {
        let m = CostMetrics {
            frames: Family::default(),
            frame_bytes: Family::default(),
            process: Vec::new(),
        };
        registry.register(
            "frames_routed",
            "Frames this node's router moved, by the role that sent them (auth, order, exec; client: frames received from clients) and where they went (local: a stage of this node, no socket; peer: another node; client)",
            m.frames.clone(),
        );
        registry.register(
            "frame_bytes_routed",
            "Bytes of those frames",
            m.frame_bytes.clone(),
        );
        let mut m = m;
        for (name, help, counter) in &plumb_cost::PROCESS_COUNTERS {
            let c = Counter::default();
            registry.register(*name, *help, c.clone());
            m.process.push((*counter, c));
        }
        m
    }

    /// Bring the counters up to the router's and the process's totals.
    pub fn update(&self, router: &Router) {
        for (from, to, frames, bytes) in router.traffic.snapshot() {
            let labels = TrafficLabels {
                from: from.to_string(),
                to: to.to_string(),
            };
            advance_to(&self.frames.get_or_create(&labels), frames);
            advance_to(&self.frame_bytes.get_or_create(&labels), bytes);
        }
        for (source, counter) in &self.process {
            advance_to(counter, source.get());
        }
    }
}
