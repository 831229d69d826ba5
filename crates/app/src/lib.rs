//! The application contract (seed 004 §4.2.2 and appendix B), in Rust.
//!
//! The library delivers a linearized sequence of *batches*; the application must execute them
//! deterministically (APPS2), take deterministic checkpoints (APPS3) and load them back to the
//! same state (APPS4). Time and randomness are the library's gift: use [`NonDeterminism`],
//! never the system clock or an entropy source. Replicas compare reply and checkpoint digests,
//! so an application that breaks determinism is caught and reported with the batch number.

use plumb_crypto::Digest;
use plumb_wire::{request_id, ClientId, Life, Micros, ReqNo, Seq};

pub mod codec;
mod objects;

pub use objects::{ObjectId, ObjectState, ObjectWrite, OBJECT_ID_BITS_MAX};

/// Agreed time and PRNG seed of a batch: identical on every replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonDeterminism {
    /// Strictly increasing from batch to batch (LS7).
    pub time: Micros,
    pub seed: u64,
}

/// One request of a batch.
#[derive(Clone, Copy, Debug)]
pub struct Command<'a> {
    pub client: ClientId,
    pub nc: ReqNo,
    pub op: &'a [u8],
    /// The request's identity, `H(client, life, nc, H(op))` ([`plumb_wire::request_id`]), which
    /// its reply names. `(client, nc)` alone does not name one request: a client that lost its
    /// record starts a new life and may reuse a number its previous life's request was
    /// ordered under. An application that remembers requests to act on later (the
    /// speculation shim's reply log, which predicates are checked against) keys them by this.
    pub request: Digest,
}

impl<'a> Command<'a> {
    /// The command of request `nc` of `client` in its life `life`.
    pub fn new(client: ClientId, life: Life, nc: ReqNo, op: &'a [u8]) -> Self {
        Command {
            client,
            nc,
            op,
            request: request_id(client, life, nc, Digest::of(op)),
        }
    }
}

/// What executing a batch produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchOutput {
    /// One reply per command, in the batch's order.
    pub replies: Vec<Vec<u8>>,
    /// Spontaneous events for clients (watches and the like): an unreliable channel.
    pub pushes: Vec<(ClientId, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The checkpoint refers to state this replica does not hold; fetch these tokens from
    /// peers ([`Application::fetch_state`] on them) and retry.
    #[error("checkpoint needs {} piece(s) of state this replica does not hold", .0.len())]
    MissingState(Vec<Digest>),
    #[error("checkpoint does not decode: {0}")]
    Corrupt(String),
}

pub trait Application {
    /// Execute batch `seq`. Called exactly once per batch, in order, with `seq` increasing by
    /// one (after a checkpoint load, from the checkpoint's successor).
    fn execute(&mut self, seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput;

    /// Execute a read-only operation against the current state. Must not change state.
    fn execute_read_only(&self, client: ClientId, op: &[u8]) -> Vec<u8>;

    /// Whether `op` is a read whose answer depends only on the state (not on the client):
    /// execution replicas then remember the digest of its last ordered answer, and D-Prophecy
    /// reads of it can be vouched for (docs/prophecy.md). Default: nothing is (D-Prophecy
    /// reads are then always ordered).
    fn is_read(&self, _op: &[u8]) -> bool {
        false
    }

    /// Executes `command` on a speculative copy of the state, after every request committed or
    /// executed early before it; `None` if the application does not speculate (the default).
    ///
    /// This is the early reply of client speculation (seed 001 §3.2.1): the one designated
    /// execution replica answers before agreement, so a nearby client can go on with a result
    /// that the committed reply later confirms or corrects. It must never change the state
    /// that [`Application::execute`] works on, nor anything that checkpoints or
    /// [`Application::state_digest`] cover: early execution is a guess, and replicas that do
    /// not guess must stay byte-identical to the one that does.
    fn execute_early(&mut self, _command: Command<'_>) -> Option<Vec<u8>> {
        None
    }

    /// A deterministic checkpoint of the state after the last executed batch: either the whole
    /// state, or a token that names state the application keeps itself (then implement
    /// `fetch_state` / `load_state`).
    fn take_checkpoint(&mut self) -> Vec<u8>;

    /// Set the state to the one `checkpoint` describes.
    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError>;

    /// The library no longer needs `checkpoint`.
    fn release_checkpoint(&mut self, _checkpoint: &[u8]) {}

    /// A piece of state named by `token`, for a peer that is loading a checkpoint.
    fn fetch_state(&self, _token: &Digest) -> Option<Vec<u8>> {
        None
    }

    /// A piece of state fetched from a peer; the library has checked `data` hashes to `token`.
    fn load_state(&mut self, _token: &Digest, _data: &[u8]) {}

    /// Digest of the current state, for divergence detection in tests and the simulator.
    fn state_digest(&self) -> Digest;

    /// The optional object interface (docs/objects.md): `Some` if the application keeps its
    /// state as objects with stable ids. The library then takes incremental checkpoints that
    /// commit to every object through a Merkle tree, and state transfer moves only the objects
    /// that differ; [`Application::take_checkpoint`] and [`Application::load_checkpoint`] are
    /// no longer called. The default, `None`, keeps whole checkpoints.
    fn objects(&mut self) -> Option<&mut dyn ObjectState> {
        None
    }

    /// The application's own running totals, for the operator: each `(name, total)` shows in
    /// the node's `/metrics` as `plumb_stage_events_total{principal="e<i>",event="<name>"}`,
    /// refreshed on the execution stage's catch-up tick (every `catch_up_us`). Local observations, never state: replicas may differ, and
    /// checkpoints and [`Application::state_digest`] must not cover them. Default: none.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
