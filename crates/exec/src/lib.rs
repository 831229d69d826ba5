//! The execution stage (seed 004 §5.7.4, §6.3, Figure 6.6). See docs/protocol.md.

use plumb_app::Application;
use plumb_core::{Action, Counters, Event, Micros, Recovered, Stage, StageContext};
use plumb_wire::{Principal, Seq};

pub struct ExecReplica<A: Application> {
    ctx: StageContext,
    app: A,
    counters: Counters,
}

impl<A: Application> ExecReplica<A> {
    pub fn new(ctx: StageContext, app: A, _recovered: Recovered) -> ExecReplica<A> {
        ExecReplica { ctx, app, counters: Counters::default() }
    }
    pub fn app(&self) -> &A {
        &self.app
    }
    /// The next batch this replica will execute.
    pub fn next_seq(&self) -> Seq {
        1
    }
}

impl<A: Application> Stage for ExecReplica<A> {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }
    fn handle(&mut self, _now: Micros, _event: Event, _out: &mut Vec<Action>) {}
    fn counters(&self) -> &Counters {
        &self.counters
    }
}
