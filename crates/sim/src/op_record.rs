//! One operation of a client's history, as the checkers and the applications' adapters see it.

use plumb_crypto::Digest;
use plumb_wire::{Micros, ReqNo};

#[derive(Clone, Debug)]
pub struct Response {
    pub at: Micros,
    /// The ordered request number, or 0 for an unordered read-only answer.
    pub nc: ReqNo,
    pub result: Vec<u8>,
    /// Ordered answers: the identity of the request the accepted reply names, as the client
    /// reported it (`Observation::ClientAccepted`).
    pub request: Option<Digest>,
}

#[derive(Clone, Debug)]
pub struct OpRecord {
    /// The operation's body, as the application decodes it.
    pub op: Vec<u8>,
    pub read_only: bool,
    pub invoke: Micros,
    /// `None`: never answered, so its outcome is unknown (an ordered one may still take effect).
    pub response: Option<Response>,
    /// Ordered request numbers the client sent for this operation.
    pub ncs: Vec<ReqNo>,
    /// The client crashed and did not resume it: it will never be answered.
    pub abandoned: bool,
}
