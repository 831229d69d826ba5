//! The authentication stage (seed 004 §5.7.2, §5.3.3, §6.4). See docs/protocol.md.

use plumb_core::{Action, Counters, Event, Micros, Recovered, Stage, StageContext};
use plumb_wire::Principal;

pub struct AuthReplica {
    ctx: StageContext,
    counters: Counters,
}

impl AuthReplica {
    pub fn new(ctx: StageContext, _recovered: Recovered) -> AuthReplica {
        AuthReplica { ctx, counters: Counters::default() }
    }
}

impl Stage for AuthReplica {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }
    fn handle(&mut self, _now: Micros, _event: Event, _out: &mut Vec<Action>) {}
    fn counters(&self) -> &Counters {
        &self.counters
    }
}
