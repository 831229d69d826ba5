//! Catch-up requests wait for idle time (seed 004 §3.4.2, "idle check"). Answering a lagging
//! peer costs up to two checkpoint intervals of batches, or a stable checkpoint's state, and a
//! faulty peer may ask again and again. So a replica answers at once only when no request waits
//! here for ordering, or when ordering has stalled for a tick: then bringing peers up to date
//! may be what unblocks it, and the rule tunes itself. Otherwise each peer's latest request
//! waits for the next tick that finds the replica idle.

use crate::OrderReplica;
use plumb_core::{Action, Micros};
use plumb_wire::Seq;

/// What a lagging order replica asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CatchUp {
    /// FETCH-COMMITTED: committed batches from this sequence number.
    Committed(Seq),
    /// FETCH-ORDER-STATE: the order state of this stable checkpoint.
    OrderState(Seq),
}

impl OrderReplica {
    pub(crate) fn on_catch_up(&mut self, now: Micros, j: u16, ask: CatchUp, out: &mut Vec<Action>) {
        if self.idle_for_catch_up(now) {
            self.serve_catch_up(j, ask, out);
        } else {
            self.counters.add("catch-up-deferred");
            self.deferred_catch_up.insert(j, ask);
        }
    }

    /// On each tick: answer what waited, if the replica is idle now.
    pub(crate) fn serve_deferred_catch_up(&mut self, now: Micros, out: &mut Vec<Action>) {
        if self.deferred_catch_up.is_empty() || !self.idle_for_catch_up(now) {
            return;
        }
        for (j, ask) in std::mem::take(&mut self.deferred_catch_up) {
            self.serve_catch_up(j, ask, out);
        }
    }

    fn idle_for_catch_up(&self, now: Micros) -> bool {
        now >= self.last_progress + self.cfg.catch_up_us || self.oldest_pending().is_none()
    }

    fn serve_catch_up(&mut self, j: u16, ask: CatchUp, out: &mut Vec<Action>) {
        match ask {
            CatchUp::Committed(from) => self.on_fetch_committed(j, from, out),
            CatchUp::OrderState(seq) => self.on_fetch_order_state(j, seq, out),
        }
    }
}
