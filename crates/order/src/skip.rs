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
use plumb_wire::View;

/// A peer silent for this many heartbeats while others spoke is taken for dead. Under load
/// every order replica votes on every batch, every few milliseconds; a live replica starved of
/// CPU on two shared cores was seen silent for 40 ms, not 200.
pub(crate) const SILENT_HEARTBEATS: u64 = 5;

#[derive(Debug, Default)]
pub(crate) struct Liveness {
    /// When an authenticated message from each order replica last arrived (or this replica
    /// started: everyone is presumed alive until shown otherwise).
    last_heard: Vec<Micros>,
}

impl Liveness {
    pub(crate) fn started(&mut self, replicas: usize, now: Micros) {
        self.last_heard = vec![now; replicas];
    }

    pub(crate) fn heard(&mut self, j: u16, now: Micros) {
        if let Some(t) = self.last_heard.get_mut(j as usize) {
            *t = (*t).max(now);
        }
    }

    /// `j` has been silent for `silence` longer than the most recent other peer (not `me`).
    /// When all are quiet (an idle cluster) no one is silent by comparison.
    fn silent(&self, j: u16, me: u16, silence: Micros) -> bool {
        let Some(&heard) = self.last_heard.get(j as usize) else {
            return false;
        };
        let latest_other = self
            .last_heard
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != j as usize && *k != me as usize)
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
        let silence = self.cfg.heartbeat_us.saturating_mul(SILENT_HEARTBEATS);
        p != self.me && self.liveness.silent(p, self.me, silence)
    }

    /// The first view from `view` on whose primary is not known dead, skipping at most
    /// `n_order - 1` views (if every other replica looks dead, `view` itself).
    pub(crate) fn next_live_view(&mut self, view: View) -> View {
        let n = self.q.order as u64;
        let silence = self.cfg.heartbeat_us.saturating_mul(SILENT_HEARTBEATS);
        let live = (view..view + n).find(|v| {
            let p = (v % n) as u16;
            p == self.me || !self.liveness.silent(p, self.me, silence)
        });
        match live {
            Some(v) if v > view => {
                for _ in view..v {
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
    fn a_peer_is_silent_only_against_others_who_spoke() {
        let mut l = Liveness::default();
        l.started(4, 0);
        // All quiet: no one is silent.
        assert!(!l.silent(2, 0, 100));
        l.heard(1, 1_000);
        l.heard(3, 1_000);
        assert!(l.silent(2, 0, 100));
        assert!(!l.silent(2, 0, 1_000), "within the allowed silence");
        // Heard again: alive.
        l.heard(2, 950);
        assert!(!l.silent(2, 0, 100));
    }
}
