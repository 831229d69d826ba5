//! ZZ mode (docs/zz.md "Back to sleep"): what the execution replica itself knows of being put
//! back to sleep. The decision is the sleeper stage's (`plumb_zz`), which counts the order
//! replicas that sent SLEEP: this replica only notes who asked, stops its timers when paused,
//! and starts again, as after a restart, when resumed.

use crate::{ExecReplica, CATCH_UP, FETCH};
use plumb_app::Application;
use plumb_core::{Action, Counters, DropReason, Event, Micros, Stage};
use plumb_wire::{Message, OrderId, Principal, Seq};

impl<A: Application> ExecReplica<A> {
    /// SLEEP from order replica `o` at checkpoint `seq`: noted for the sleeper stage, which
    /// takes it with [`ExecReplica::take_sleep_asks`]. Outside ZZ mode nobody takes them, so
    /// they are not kept.
    pub(crate) fn on_sleep(&mut self, o: OrderId, seq: Seq) {
        if !self.cfg().zz {
            self.counters.dropped(DropReason::Unexpected);
            return;
        }
        self.counters.add("zz-sleep-asked");
        if !self.sleep_asks.iter().any(|(a, _)| *a == o) {
            self.sleep_asks.push((o, seq));
        }
    }

    /// The order replicas that asked this replica to sleep since last taken, with the
    /// checkpoint each named.
    pub fn take_sleep_asks(&mut self) -> Vec<(OrderId, Seq)> {
        std::mem::take(&mut self.sleep_asks)
    }

    /// Stop: no timer fires while paused, and the read-only gate closes (once resumed this
    /// replica is behind what it may have acknowledged, as after a restart).
    pub fn pause(&mut self, out: &mut Vec<Action>) {
        out.push(Action::CancelTimer { id: CATCH_UP });
        out.push(Action::CancelTimer { id: FETCH });
        self.learning.fetch_timer_at = None;
        self.gate = Some(crate::gate::Gate::default());
        self.sleep_asks.clear();
    }

    /// Run again after [`ExecReplica::pause`]: as a start, it asks the order stage where
    /// things stand and catches up from what it holds.
    pub fn resume(&mut self, now: Micros, out: &mut Vec<Action>) {
        self.handle(now, Event::Start, out);
        // Bodies asked for before the pause are asked again only on this timer, which the
        // pause cancelled.
        self.arm_fetch_timer(out);
    }

    /// A frame while paused: the order replica that sent it if it is a WAKE; anything else
    /// is dropped and counted here.
    pub fn paused_frame(&mut self, frame: &[u8]) -> Option<OrderId> {
        match self.ctx.keys.open(frame) {
            Ok((Principal::Order(o), Message::Wake { .. })) => Some(o),
            Ok(_) => {
                self.counters.dropped(DropReason::Asleep);
                None
            }
            Err(e) => {
                self.counters.dropped(DropReason::from(&e));
                None
            }
        }
    }

    /// This replica's counters, for the sleeper stage that wraps it.
    pub fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }
}
