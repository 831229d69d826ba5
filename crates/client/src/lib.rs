//! The client's protocol core (seed 004 §5.7.1, §6.4.2). See docs/protocol.md.

use plumb_core::{Action, Counters, Event, Micros, Recovered, Stage, StageContext};
use plumb_wire::Principal;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientBusy;

pub struct Client {
    ctx: StageContext,
    counters: Counters,
}

impl Client {
    pub fn new(ctx: StageContext, _recovered: Recovered) -> Client {
        Client { ctx, counters: Counters::default() }
    }
    /// Issue an operation. Closed loop (CS2): refused while a request is outstanding.
    pub fn submit(&mut self, _now: Micros, _op: Vec<u8>, _read_only: bool, _out: &mut Vec<Action>) -> Result<(), ClientBusy> {
        Err(ClientBusy)
    }
    pub fn outstanding(&self) -> bool {
        false
    }
}

impl Stage for Client {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }
    fn handle(&mut self, _now: Micros, _event: Event, _out: &mut Vec<Action>) {}
    fn counters(&self) -> &Counters {
        &self.counters
    }
}
