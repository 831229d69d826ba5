//! Catch-up requests wait for idle time (seed 004 §3.4.2, "idle check"). Answering a lagging
//! peer costs up to two checkpoint intervals of batches, or a stable checkpoint's state, and a
//! faulty peer may ask again and again. So a replica answers at once only when no request waits
//! here for ordering, or when nothing was ordered for half a heartbeat: then bringing peers up
//! to date may be what unblocks ordering, and the rule tunes itself. Otherwise each peer's
//! latest request of each kind waits, and is looked at again every half heartbeat. Half a heartbeat, so that
//! a stall caused by a lagging replica is served before the heartbeat blames the primary (the
//! simulator found the cascade: seed 859, u=1 r=1).

use crate::OrderReplica;
use plumb_core::{Action, Micros, TimerId};
use plumb_wire::Seq;

pub(crate) const CATCH_UP_IDLE: TimerId = TimerId(4);

/// What a lagging order replica asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CatchUp {
    /// FETCH-COMMITTED: committed batches from this sequence number.
    Committed(Seq),
    /// FETCH-ORDER-STATE: the order state of this stable checkpoint.
    OrderState(Seq),
}

impl CatchUp {
    /// Requests of one kind from one peer replace each other; of different kinds they do not
    /// (a lagging replica may need both, and asks for each on its own schedule).
    pub(crate) fn kind(self) -> u8 {
        match self {
            CatchUp::Committed(_) => 0,
            CatchUp::OrderState(_) => 1,
        }
    }
}

impl OrderReplica {
    pub(crate) fn on_catch_up(&mut self, now: Micros, j: u16, ask: CatchUp, out: &mut Vec<Action>) {
        if self.idle_for_catch_up(now) {
            self.serve_catch_up(j, ask, out);
        } else {
            self.counters.add("catch-up-deferred");
            if self.deferred_catch_up.is_empty() {
                out.push(Action::SetTimer {
                    id: CATCH_UP_IDLE,
                    after: self.idle_after(),
                });
            }
            self.deferred_catch_up.insert((j, ask.kind()), ask);
        }
    }

    /// Answer what waited if the replica is idle now; otherwise look again later.
    pub(crate) fn serve_deferred_catch_up(&mut self, now: Micros, out: &mut Vec<Action>) {
        if self.deferred_catch_up.is_empty() {
            return;
        }
        if !self.idle_for_catch_up(now) {
            out.push(Action::SetTimer {
                id: CATCH_UP_IDLE,
                after: self.idle_after(),
            });
            return;
        }
        for ((j, _), ask) in std::mem::take(&mut self.deferred_catch_up) {
            self.serve_catch_up(j, ask, out);
        }
    }

    fn idle_after(&self) -> Micros {
        (self.cfg.heartbeat_us / 2).max(1)
    }

    fn idle_for_catch_up(&self, now: Micros) -> bool {
        now >= self.last_progress + self.idle_after() || self.oldest_pending().is_none()
    }

    fn serve_catch_up(&mut self, j: u16, ask: CatchUp, out: &mut Vec<Action>) {
        match ask {
            CatchUp::Committed(from) => self.on_fetch_committed(j, from, out),
            CatchUp::OrderState(seq) => self.on_fetch_order_state(j, seq, out),
        }
    }
}
