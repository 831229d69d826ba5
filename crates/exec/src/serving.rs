//! What an execution replica served, and when: the rate limits that keep a faulty client or
//! peer from making it work without bound, and the state-transfer asks it put off until idle.

use plumb_core::Micros;
use plumb_wire::{ClientId, ExecId, Message, Seq};
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(crate) struct Serving {
    /// When each client's RETRANSMIT was last answered.
    pub retransmit: BTreeMap<ClientId, Micros>,
    /// The checkpoint each peer was last sent, and when.
    pub checkpoints: BTreeMap<ExecId, (Seq, Micros)>,
    /// Object-transfer bytes served per peer: (window start, bytes).
    pub objects: BTreeMap<ExecId, (Micros, usize)>,
    /// State-transfer requests of lagging peers, waiting for idle time.
    pub deferred_transfer: BTreeMap<ExecId, Vec<Message>>,
}
