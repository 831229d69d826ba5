//! The order stage (seed 004 §5.7.3, §6.2). See docs/protocol.md.

use plumb_core::{Action, Counters, Event, Micros, Recovered, Stage, StageContext};
use plumb_wire::{Principal, View};

pub struct OrderReplica {
    ctx: StageContext,
    counters: Counters,
}

impl OrderReplica {
    pub fn new(ctx: StageContext, _recovered: Recovered) -> OrderReplica {
        OrderReplica { ctx, counters: Counters::default() }
    }
    pub fn view(&self) -> View {
        0
    }
}

impl Stage for OrderReplica {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }
    fn handle(&mut self, _now: Micros, _event: Event, _out: &mut Vec<Action>) {}
    fn counters(&self) -> &Counters {
        &self.counters
    }
}
