//! Skipping primaries known to be dead. When this replica leaves a view on its own account (a
//! suspicion vote carried, or a view change that did not complete), the next view's primary
//! may be a replica that has been silent all along: a crashed node. Going to its view costs a
//! whole view-change timeout (1 s, doubling) before the view after it is tried, and with views
//! rotating round-robin every fault of a backup eventually meets it. So the target moves past
//! primaries this replica has heard nothing from for [`SILENT_HEARTBEATS`] heartbeats while it
//! heard the others.
//!
//! A view change already under way to a primary that turns out dead (silent as long, while a
//! quorum of VIEW-CHANGEs is in) is given up at once instead of after its timeout.
//!
//! Safety is untouched: any view number is a safe target (PBFT's view change does not need
//! consecutive views). Liveness: replicas that judge differently converge as before, since
//! `min(u,r)+1` VIEW-CHANGEs for a higher view make the rest join it. A replica joining a view
//! others named does not skip (it would split the quorum of that view). What a faulty replica
//! can do with this: stay silent so that it is skipped, which only removes it from the
//! rotation; it cannot make a correct replica look silent, since only that replica's own
//! authenticated messages count.

use crate::OrderReplica;
use plumb_core::Micros;
use plumb_wire::{OrderId, View};

/// A peer silent for this many heartbeats while others spoke is taken for dead. Under load
/// every order replica votes on every batch, every few milliseconds; a live replica starved of
/// CPU on two shared cores was seen silent for 40 ms, not 200.
pub(crate) const SILENT_HEARTBEATS: u64 = 5;

#[derive(Debug, Default)]
pub(crate) struct Liveness {
    /// When an authenticated message from each order replica last arrived (or this replica
    /// started or woke up: everyone is presumed alive until shown otherwise).
    last_heard: Vec<Micros>,
    /// When this replica last handled an event.
    last_event: Micros,
}

impl Liveness {
    pub(crate) fn started(&mut self, replicas: usize, now: Micros) {
        self.last_heard = vec![now; replicas];
        self.last_event = now;
    }

    /// This replica handles an event at `now`. If it handled none for longer than `stall`
    /// (its tick alone comes more often), it was itself stopped: paused, or starved of CPU.
    /// It heard nothing meanwhile, from anyone, and the first peers whose queued frames it
    /// reads would make the others look silent: after a 2 s `SIGSTOP` a replica took two
    /// live primaries for dead, asked alone for a view two ahead of the cluster's and sat in
    /// that view change, so the next fault found one replica fewer than it needed (the
    /// nemesis harness's `pause next-primary`, 2 s without a successful operation). So
    /// everyone is presumed alive again, as at a start.
    pub(crate) fn awake(&mut self, now: Micros, stall: Micros) {
        if now > self.last_event.saturating_add(stall) {
            for t in &mut self.last_heard {
                *t = (*t).max(now);
            }
        }
        self.last_event = self.last_event.max(now);
    }

    pub(crate) fn heard(&mut self, j: OrderId, now: Micros) {
        if let Some(t) = self.last_heard.get_mut(j.index()) {
            *t = (*t).max(now);
        }
    }

    /// `j` has been silent for `silence` longer than the most recent other peer (not `me`).
    /// When all are quiet (an idle cluster) no one is silent by comparison.
    fn silent(&self, j: OrderId, me: OrderId, silence: Micros) -> bool {
        let Some(&heard) = self.last_heard.get(j.index()) else {
            return false;
        };
        let latest_other = self
            .last_heard
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != j.index() && *k != me.index())
            .map(|(_, t)| *t)
            .max()
            .unwrap_or(0);
        heard.saturating_add(silence) < latest_other
    }
}

impl OrderReplica {
    /// This view's primary is known dead: a view change waiting for its NEW-VIEW gives up
    /// now rather than after the whole view-change timeout (a node paused just as the view
    /// moved onto it left the nemesis harness 1.1 s without a successful operation).
    pub(crate) fn awaited_primary_dead(&self) -> bool {
        let p = self.primary();
        let silence = self.cfg().heartbeat_us.saturating_mul(SILENT_HEARTBEATS);
        p != self.me && self.watch.liveness.silent(p, self.me, silence)
    }

    /// The first view from `view` on whose primary is not known dead, skipping at most
    /// `n_order - 1` views (if every other replica looks dead, `view` itself).
    pub(crate) fn next_live_view(&mut self, view: View) -> View {
        let n = self.q().order;
        let silence = self.cfg().heartbeat_us.saturating_mul(SILENT_HEARTBEATS);
        let live = (0..n as u64).map(|k| view.plus(k)).find(|v| {
            let p = v.primary(n);
            p == self.me || !self.watch.liveness.silent(p, self.me, silence)
        });
        match live {
            Some(v) if v > view => {
                for _ in view.0..v.0 {
                    self.counters.add("view-skipped-dead-primary");
                }
                v
            }
            _ => view,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_that_was_stopped_presumes_everyone_alive() {
        let mut l = Liveness::default();
        l.started(4, 0);
        l.awake(40_000, 100_000);
        l.heard(OrderId(1), 40_000);
        l.heard(OrderId(2), 40_000);
        l.heard(OrderId(3), 40_000);
        // Stopped for 2 s; the queued frames of replica 3 are read first.
        l.awake(2_040_000, 100_000);
        l.heard(OrderId(3), 2_040_000);
        assert!(
            !l.silent(OrderId(1), OrderId(0), 200_000)
                && !l.silent(OrderId(2), OrderId(0), 200_000)
        );
        // Running (events every 50 ms), replica 1 stays silent while 3 speaks: dead.
        for t in (2_090_000..=2_300_000).step_by(50_000) {
            l.awake(t, 100_000);
            l.heard(OrderId(3), t);
        }
        assert!(l.silent(OrderId(1), OrderId(0), 200_000));
    }

    #[test]
    fn a_peer_is_silent_only_against_others_who_spoke() {
        let mut l = Liveness::default();
        l.started(4, 0);
        // All quiet: no one is silent.
        assert!(!l.silent(OrderId(2), OrderId(0), 100));
        l.heard(OrderId(1), 1_000);
        l.heard(OrderId(3), 1_000);
        assert!(l.silent(OrderId(2), OrderId(0), 100));
        assert!(
            !l.silent(OrderId(2), OrderId(0), 1_000),
            "within the allowed silence"
        );
        // Heard again: alive.
        l.heard(OrderId(2), 950);
        assert!(!l.silent(OrderId(2), OrderId(0), 100));
    }
}
