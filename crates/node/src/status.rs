//! What a node shows its operator: `/status` (JSON) and `/metrics` (Prometheus text), both fed
//! by the stages' observations and counters.

use crate::mirror::advance_to;
use crate::router::Router;
use plumb_core::{Observation, StallStage, ViewChangeCause, WaitReason};
use plumb_crypto::Digest;
use plumb_runtime::{Host, Mailbox, StageShared};
use plumb_wire::Seq;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Status {
    pub node: u16,
    /// The application the node's execution replica runs (the cluster file's `app`).
    pub app: String,
    pub principals: Vec<String>,
    pub u: u16,
    pub r: u16,
    /// The order stage's current view, and the node hosting its primary.
    pub view: Option<u64>,
    pub primary: Option<String>,
    pub primary_node: Option<u16>,
    pub last_committed: Option<Seq>,
    pub last_executed: Option<Seq>,
    pub stable_checkpoint: Option<Seq>,
    pub exec_checkpoint: Option<Seq>,
    pub batches_ordered: u64,
    pub requests_executed: u64,
    pub uptime_s: u64,
    /// Peer node id -> whether our link to it is up.
    pub peers: Vec<(u16, bool)>,
    /// Set while the node's order replica recovers from lost records: it casts no vote until
    /// a checkpoint above its fence is stable (docs/operations.md, "Losing a disk").
    pub order_recovery: Option<String>,
    /// ZZ mode, a sleeper's node: `asleep`, or which order replicas woke it or put it back to
    /// sleep (docs/zz.md).
    pub sleeper: Option<String>,
    /// ZZ mode, an order replica's node: execution replicas it found faulty (a report or
    /// checkpoint token that differed from the agreed one) and stopped sending batches to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zz_found_faulty: Vec<u16>,
    /// The last divergence report of this node's execution replica, if its state ever
    /// differed from the agreed checkpoint (docs/divergence.md).
    pub last_divergence: Option<String>,
    /// The last view change this node's order replica asked for, with its cause.
    pub last_view_change: Option<String>,
    /// The execution replica's report of the last batch it executed (docs/objects.md "Batch
    /// reports"): equal on every correct replica at the same batch.
    pub last_report: Option<LastReport>,
    /// Order replica: the last batch report `r + 1` execution replicas agreed on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_agreed_report: Option<LastReport>,
    /// The emulated wide-area network this node runs under (`[wan]`, docs/wan-emulation.md):
    /// its site and the delay to other sites; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wan: Option<String>,
}

/// A [`plumb_wire::BatchReport`] as `/status` shows it: digests in hex. The digests are kept
/// as they came and written as hex only when `/status` is read: a report arrives with every
/// batch (on an execution replica, and agreed on an order replica), and formatting its 96
/// bytes then, one string per byte, took about 4% of the execution threads' samples and some
/// 100 allocations per report (a profile of u1r0 writes at 64 clients, 2026-12-04).
#[derive(Clone, Debug, Serialize)]
pub struct LastReport {
    pub seq: Seq,
    #[serde(serialize_with = "hex")]
    pub replies: Digest,
    /// Without objects, the application has no write sets: absent.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "hex_some")]
    pub writes: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "hex_some")]
    pub history: Option<Digest>,
}

impl LastReport {
    fn of(r: &plumb_wire::BatchReport) -> LastReport {
        LastReport {
            seq: r.seq,
            replies: r.replies,
            writes: r.writes,
            history: r.history,
        }
    }
}

fn hex<S: serde::Serializer>(d: &Digest, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&d.hex())
}

/// Only called for `Some` (`skip_serializing_if` skips `None`).
fn hex_some<S: serde::Serializer>(d: &Option<Digest>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => hex(d, s),
        None => s.serialize_none(),
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DropLabels {
    pub principal: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StoreLabels {
    pub principal: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventLabels {
    pub principal: String,
    pub event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub queue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CauseLabels {
    pub cause: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SlowLabels {
    pub stage: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PeerLabels {
    pub node: String,
}

pub struct Metrics {
    registry: Registry,
    batches_ordered: Counter,
    batches_executed: Counter,
    requests_executed: Counter,
    view: Gauge,
    last_committed: Gauge,
    last_executed: Gauge,
    stable_checkpoint: Gauge,
    exec_checkpoint: Gauge,
    divergences: Counter,
    divergence_seq: Gauge,
    divergence_objects: Gauge,
    divergence_requests: Gauge,
    exec_checkpoints_differing: Family<PeerLabels, Counter>,
    view_changes: Family<CauseLabels, Counter>,
    slow_requests: Family<SlowLabels, Counter>,
    dropped: Family<DropLabels, Counter>,
    events: Family<EventLabels, Counter>,
    queue_depth: Family<QueueLabels, Gauge>,
    peer_up: Family<PeerLabels, Gauge>,
    peer_cut_off: Family<PeerLabels, Gauge>,
    handshakes_refused: Family<ReasonLabels, Counter>,
    handshakes_failed: Family<PeerLabels, Counter>,
    store_log_bytes: Family<StoreLabels, Gauge>,
    store_live_bytes: Family<StoreLabels, Gauge>,
    store_compactions: Family<StoreLabels, Counter>,
    store_max_compaction_step_us: Family<StoreLabels, Gauge>,
    cost: crate::cost_metrics::CostMetrics,
}

impl Metrics {
    pub fn new(stages: &[Arc<StageShared>]) -> Metrics {
        let mut registry = Registry::with_prefix("plumb");
        let m = Metrics {
            batches_ordered: Counter::default(),
            batches_executed: Counter::default(),
            requests_executed: Counter::default(),
            view: Gauge::default(),
            last_committed: Gauge::default(),
            last_executed: Gauge::default(),
            stable_checkpoint: Gauge::default(),
            exec_checkpoint: Gauge::default(),
            divergences: Counter::default(),
            divergence_seq: Gauge::default(),
            divergence_objects: Gauge::default(),
            divergence_requests: Gauge::default(),
            exec_checkpoints_differing: Family::default(),
            view_changes: Family::default(),
            slow_requests: Family::default(),
            dropped: Family::default(),
            events: Family::default(),
            queue_depth: Family::default(),
            peer_up: Family::default(),
            peer_cut_off: Family::default(),
            handshakes_refused: Family::default(),
            handshakes_failed: Family::default(),
            store_log_bytes: Family::default(),
            store_live_bytes: Family::default(),
            store_compactions: Family::default(),
            store_max_compaction_step_us: Family::default(),
            cost: crate::cost_metrics::CostMetrics::register(&mut registry),
            registry: Registry::default(),
        };
        registry.register(
            "batches_ordered",
            "Batches this node's order replica committed",
            m.batches_ordered.clone(),
        );
        registry.register(
            "batches_executed",
            "Batches this node's execution replica executed (null batches included)",
            m.batches_executed.clone(),
        );
        registry.register(
            "requests_executed",
            "Client requests this node's execution replica executed",
            m.requests_executed.clone(),
        );
        registry.register("view", "Current view of the order replica", m.view.clone());
        registry.register(
            "last_committed_seq",
            "Highest batch number the order replica committed",
            m.last_committed.clone(),
        );
        registry.register(
            "last_executed_seq",
            "Highest batch number the execution replica executed",
            m.last_executed.clone(),
        );
        registry.register(
            "stable_checkpoint_seq",
            "Batch number of the order stage's last stable checkpoint",
            m.stable_checkpoint.clone(),
        );
        registry.register(
            "exec_checkpoint_seq",
            "Batch number of the execution replica's newest checkpoint",
            m.exec_checkpoint.clone(),
        );
        registry.register(
            "divergences",
            "Times this node's execution replica found its state different from the agreed checkpoint and rolled back (the report is in the log and /status)",
            m.divergences.clone(),
        );
        registry.register(
            "divergence_seq",
            "Checkpoint at which the last divergence was found (0: none)",
            m.divergence_seq.clone(),
        );
        registry.register(
            "divergence_objects",
            "Objects that differed in the last divergence (applications with objects)",
            m.divergence_objects.clone(),
        );
        registry.register(
            "divergence_requests",
            "Requests executed in the batches where the last divergence happened",
            m.divergence_requests.clone(),
        );
        registry.register(
            "exec_checkpoints_differing",
            "Execution checkpoints this node's order replica saw differ from the agreed one, by execution replica (label node: its index)",
            m.exec_checkpoints_differing.clone(),
        );
        for cause in ViewChangeCause::ALL {
            let _ = m.view_changes.get_or_create(&CauseLabels {
                cause: cause.as_str().to_string(),
            });
        }
        registry.register(
            "view_changes",
            "View changes this node's order replica asked for, by cause (heartbeat, slow-primary, unfair, progress-timeout, uncommitted and commission are suspicions of the primary; rotation is the deliberate rising bar; joined: peers asked first)",
            m.view_changes.clone(),
        );
        registry.register(
            "slow_requests",
            "Requests that waited longer than slow_request_us in one of this node's stages, by stage and the reason they waited (docs/operations.md)",
            m.slow_requests.clone(),
        );
        registry.register(
            "messages_dropped",
            "Messages dropped, by receiving principal and reason",
            m.dropped.clone(),
        );
        registry.register(
            "stage_events",
            "Other things a stage counted, by principal and name (for example recovered-corrupt: records refused at restart)",
            m.events.clone(),
        );
        registry.register("queue_depth", "Frames waiting: per stage mailbox (mailbox-<principal>) and per outgoing peer link (link-node-<id>)", m.queue_depth.clone());
        registry.register(
            "peer_connected",
            "1 if the link to the peer node is up",
            m.peer_up.clone(),
        );
        registry.register(
            "peer_cut_off",
            "1 while this node drops the peer node's frames for flooding",
            m.peer_cut_off.clone(),
        );
        registry.register(
            "peer_handshakes_refused",
            "Connections whose peer handshake this node refused, by reason (a dialer that could not prove it is the node it named)",
            m.handshakes_refused.clone(),
        );
        registry.register(
            "peer_handshakes_failed",
            "Handshakes this node's link to the peer node did not complete (refused by the peer, or cut short)",
            m.handshakes_failed.clone(),
        );
        registry.register(
            "store_log_bytes",
            "Length of the stage's storage log (a compaction starts at 64 MiB when it is more than twice the live bytes)",
            m.store_log_bytes.clone(),
        );
        registry.register(
            "store_live_bytes",
            "Bytes the stage's live records take in its storage log",
            m.store_live_bytes.clone(),
        );
        registry.register(
            "store_compactions",
            "Compactions of the stage's storage log finished since the node started",
            m.store_compactions.clone(),
        );
        registry.register(
            "store_max_compaction_step_us",
            "Longest time one storage op of the stage spent on compaction since the node started, in microseconds",
            m.store_max_compaction_step_us.clone(),
        );
        for s in stages {
            let sub = registry.sub_registry_with_label((
                std::borrow::Cow::Borrowed("principal"),
                std::borrow::Cow::Owned(s.principal.to_string()),
            ));
            sub.register(
                "fsync_seconds",
                "Time to make a stage's writes durable (fdatasync)",
                s.fsync_seconds.clone(),
            );
        }
        Metrics { registry, ..m }
    }
}

/// Everything `/status` and `/metrics` read.
pub struct Observed {
    pub status: Mutex<Status>,
    pub metrics: Metrics,
    pub started: Instant,
    pub stages: Vec<Arc<StageShared>>,
    pub mailboxes: Vec<(String, Arc<Mailbox<()>>)>,
    pub order_replicas: u64,
    /// Node id hosting order replica `i`.
    pub order_nodes: Vec<u16>,
    /// When each kind of slow request was last logged, and how many went unlogged since.
    pub slow_logged: Mutex<BTreeMap<(StallStage, WaitReason), SlowLogged>>,
}

/// When a kind of slow request was last logged (`None`: never), and how many like it went
/// unlogged since.
pub type SlowLogged = (Option<Instant>, u64);

impl Observed {
    fn lock(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn observe(&self, obs: &Observation) {
        let m = &self.metrics;
        let mut s = self.lock();
        match obs {
            Observation::Committed { seq, .. } => {
                m.batches_ordered.inc();
                s.batches_ordered += 1;
                if s.last_committed.is_none_or(|x| *seq > x) {
                    s.last_committed = Some(*seq);
                    m.last_committed.set(seq.0 as i64);
                }
            }
            Observation::Delivered { seq, requests, .. } => {
                m.batches_executed.inc();
                m.requests_executed.inc_by(requests.len() as u64);
                s.requests_executed += requests.len() as u64;
                s.last_executed = Some(*seq);
                m.last_executed.set(seq.0 as i64);
            }
            Observation::BatchReported(report) => s.last_report = Some(LastReport::of(report)),
            Observation::ExecReportAgreed(report) => {
                s.last_agreed_report = Some(LastReport::of(report))
            }
            // The stage counts them (`on-demand-objects`); each one is for the simulator.
            Observation::ObjectFetched { .. } => {}
            Observation::CheckpointTaken { seq, .. }
            | Observation::CheckpointLoaded { seq, .. } => {
                s.exec_checkpoint = Some(*seq);
                m.exec_checkpoint.set(seq.0 as i64);
                if matches!(obs, Observation::CheckpointLoaded { .. }) {
                    s.last_executed = Some(*seq);
                    m.last_executed.set(seq.0 as i64);
                }
            }
            Observation::ViewEntered { view, .. } => {
                s.view = Some(view.0);
                m.view.set(view.0 as i64);
                let primary = view.primary(self.order_replicas.max(1) as usize);
                s.primary = Some(format!("{primary:?}"));
                s.primary_node = self.order_nodes.get(primary.index()).copied();
            }
            Observation::StableCheckpoint { seq } => {
                s.stable_checkpoint = Some(*seq);
                m.stable_checkpoint.set(seq.0 as i64);
                // A checkpoint adopted from peers moves the order state past batches this
                // replica never committed itself.
                if s.last_committed.is_none_or(|x| *seq > x) {
                    s.last_committed = Some(*seq);
                    m.last_committed.set(seq.0 as i64);
                }
            }
            Observation::Recovering { incarnation } => {
                s.order_recovery = Some(format!(
                    "recovering lost records (incarnation {incarnation}): asking peers for the fence"
                ));
            }
            Observation::Fenced { fence } => {
                s.order_recovery = Some(format!(
                    "recovering lost records: waiting for a stable checkpoint at or above {fence}"
                ));
            }
            Observation::Rejoined { .. } => s.order_recovery = None,
            Observation::Woken { asked } => {
                let asked: Vec<String> = asked.iter().map(|o| o.0.to_string()).collect();
                s.sleeper = Some(format!("woken by order replicas {}", asked.join(", ")));
            }
            Observation::Slept { asked } => {
                let asked: Vec<String> = asked.iter().map(|o| o.0.to_string()).collect();
                s.sleeper = Some(format!(
                    "asleep again, asked by order replicas {}",
                    asked.join(", ")
                ));
            }
            Observation::ActiveSuspected { cause, evidence } => {
                eprintln!(
                    "node {}: ZZ: suspect an active execution replica: {cause} ({evidence}); waking a sleeper (docs/zz.md)",
                    s.node
                );
            }
            Observation::ExecFoundFaulty { exec } => {
                s.zz_found_faulty.push(exec.0);
                eprintln!(
                    "node {}: execution replica e{exec} said other than the agreed report or checkpoint token: found faulty, sent no more batches (docs/zz.md); repair or replace its node",
                    s.node
                );
            }
            Observation::ClientAccepted { .. } => {}
            Observation::ExecCheckpointDiffers {
                exec,
                seq,
                agreed,
                reported,
            } => {
                m.exec_checkpoints_differing
                    .get_or_create(&PeerLabels {
                        node: format!("e{exec}"),
                    })
                    .inc();
                eprintln!(
                    "node {}: execution replica e{exec}'s checkpoint at batch {seq} is {}, not the agreed {}: its state diverged; told it to load the agreed one",
                    s.node,
                    reported.short(),
                    agreed.short()
                );
            }
            Observation::Diverged(report) => {
                m.divergences.inc();
                m.divergence_seq.set(report.seq.0 as i64);
                m.divergence_objects
                    .set(report.objects.as_ref().map_or(0, Vec::len) as i64);
                m.divergence_requests.set(report.requests.len() as i64);
                eprintln!("node {}: DIVERGENCE: {report}", s.node);
                s.last_divergence = Some(report.to_string());
            }
            Observation::ViewChangeStarted { view, cause } => {
                m.view_changes
                    .get_or_create(&CauseLabels {
                        cause: cause.as_str().to_string(),
                    })
                    .inc();
                let line = format!("asked for view {view}: {}", cause.as_str());
                eprintln!("node {}: {line}", s.node);
                s.last_view_change = Some(line);
            }
            Observation::Suspected {
                view,
                cause,
                evidence,
            } => {
                let why = match evidence {
                    plumb_core::Evidence::None => String::new(),
                    e => format!(" ({e})"),
                };
                eprintln!(
                    "node {}: suspect the primary of view {view}: {}{why}",
                    s.node,
                    cause.as_str()
                );
            }
            Observation::SlowRequest(slow) => {
                m.slow_requests
                    .get_or_create(&SlowLabels {
                        stage: slow.stage.as_str().to_string(),
                        reason: slow.reason.as_str().to_string(),
                    })
                    .inc();
                let node = s.node;
                drop(s);
                self.log_slow(node, slow);
            }
        }
    }

    /// One log line per kind of slow request per second at most, saying how many went
    /// unlogged: under a stall every request is slow, and the log must stay readable.
    fn log_slow(&self, node: u16, slow: &plumb_core::SlowRequest) {
        let mut logged = self.slow_logged.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let (last, skipped) = logged.entry((slow.stage, slow.reason)).or_insert((None, 0));
        if last.is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(1)) {
            *skipped += 1;
            return;
        }
        let more = match *skipped {
            0 => String::new(),
            n => format!(" (and {n} more like it since the last line)"),
        };
        eprintln!("node {node}: slow: {slow}{more}");
        *last = Some(now);
        *skipped = 0;
    }

    /// ZZ mode: the node's execution replica sleeps until woken.
    pub fn sleeping(&self) {
        self.lock().sleeper = Some("asleep".to_string());
    }

    pub fn recovered_exec(&self, executed: Seq) {
        self.lock().last_executed = Some(executed);
        self.metrics.last_executed.set(executed.0 as i64);
    }

    pub fn status_json(&self, router: &Router) -> String {
        let mut s = self.lock().clone();
        s.uptime_s = self.started.elapsed().as_secs();
        s.peers = router
            .links
            .iter()
            .map(|(n, l)| {
                (
                    *n,
                    l.stats()
                        .connected
                        .load(std::sync::atomic::Ordering::Relaxed),
                )
            })
            .collect();
        serde_json::to_string_pretty(&s).unwrap_or_default() + "\n"
    }

    pub fn metrics_text(&self, router: &Router) -> String {
        let m = &self.metrics;
        let mut current: Vec<(DropLabels, u64)> = Vec::new();
        for stage in &self.stages {
            let counters = stage
                .counters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            for (name, v) in counters.iter() {
                if let Some(reason) = name.strip_prefix("drop-") {
                    current.push((
                        DropLabels {
                            principal: stage.principal.to_string(),
                            reason: reason.to_string(),
                        },
                        v,
                    ));
                } else {
                    let labels = EventLabels {
                        principal: stage.principal.to_string(),
                        event: name.to_string(),
                    };
                    advance_to(&m.events.get_or_create(&labels), v);
                }
            }
        }
        for stage in &self.stages {
            let st = stage
                .store
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let labels = StoreLabels {
                principal: stage.principal.to_string(),
            };
            let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            m.store_log_bytes
                .get_or_create(&labels)
                .set(gauge(st.log_bytes));
            m.store_live_bytes
                .get_or_create(&labels)
                .set(gauge(st.live_bytes));
            advance_to(&m.store_compactions.get_or_create(&labels), st.compactions);
            m.store_max_compaction_step_us
                .get_or_create(&labels)
                .set(gauge(st.max_compaction_step.as_micros() as u64));
        }
        for (reason, v) in router.drops.snapshot() {
            current.push((
                DropLabels {
                    principal: "node".to_string(),
                    reason: reason.to_string(),
                },
                v,
            ));
        }
        for (name, mb) in &self.mailboxes {
            current.push((
                DropLabels {
                    principal: name.clone(),
                    reason: "mailbox-full".to_string(),
                },
                mb.dropped(),
            ));
            m.queue_depth
                .get_or_create(&QueueLabels {
                    queue: format!("mailbox-{name}"),
                })
                .set(mb.depth() as i64);
        }
        for (n, link) in &router.links {
            let stats = link.stats();
            current.push((
                DropLabels {
                    principal: format!("link-node-{n}"),
                    reason: "link-queue-full".to_string(),
                },
                stats.dropped.load(std::sync::atomic::Ordering::Relaxed),
            ));
            m.queue_depth
                .get_or_create(&QueueLabels {
                    queue: format!("link-node-{n}"),
                })
                .set(link.depth() as i64);
            m.peer_up
                .get_or_create(&PeerLabels {
                    node: n.to_string(),
                })
                .set(stats.connected.load(std::sync::atomic::Ordering::Relaxed) as i64);
        }
        let now = std::time::Instant::now();
        for (n, link) in &router.links {
            let labels = PeerLabels {
                node: n.to_string(),
            };
            m.peer_cut_off
                .get_or_create(&labels)
                .set(router.flood.is_cut(*n, now) as i64);
            advance_to(
                &m.handshakes_failed.get_or_create(&labels),
                link.stats()
                    .handshake_failures
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
        }
        for (reason, v) in router.drops.refused_snapshot() {
            let labels = ReasonLabels {
                reason: reason.to_string(),
            };
            advance_to(&m.handshakes_refused.get_or_create(&labels), v);
        }
        for (labels, v) in current {
            advance_to(&m.dropped.get_or_create(&labels), v);
        }
        m.cost.update(router);
        let mut text = String::new();
        let _ = encode(&mut text, &m.registry);
        text
    }
}

/// The host of a replica stage: its observations feed the node's status and metrics.
pub struct ReplicaHost(pub Arc<Observed>);

impl<S> Host<S> for ReplicaHost {
    type Job = ();
    fn observe(&mut self, obs: &Observation) {
        self.0.observe(obs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_shows_its_digests_in_hex_and_leaves_out_absent_ones() {
        let mut replies = Digest::ZERO;
        replies.0[0] = 0xab;
        replies.0[31] = 0x01;
        let report = plumb_wire::BatchReport {
            seq: Seq(7),
            replies,
            writes: None,
            history: Some(Digest([0xff; 32])),
        };
        let json = serde_json::to_value(LastReport::of(&report)).unwrap();
        let replies_hex = format!("ab{}01", "00".repeat(30));
        assert_eq!(
            json,
            serde_json::json!({
                "seq": 7,
                "replies": replies_hex,
                "history": "ff".repeat(32),
            })
        );
    }
}
