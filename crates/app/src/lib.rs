//! The application contract (seed 004 §4.2.2 and appendix B), in Rust: the [`Application`]
//! trait, the types in its signatures, the versioned [`codec`] and the optional object
//! interface ([`ObjectState`]). The guide below (`guide.md` beside this file) is the long
//! form; the doc comment of each method is its contract.
//!
#![doc = include_str!("guide.md")]

use plumb_crypto::Digest;
/// The batch number [`Application::execute`] is given, so that an application needs no other
/// crate to name it.
pub use plumb_wire::Seq;
use plumb_wire::{request_id, ClientId, Life, Micros, ReqNo};

mod access;
pub mod codec;
mod objects;

pub use access::AccessSet;
pub use objects::{ObjectId, ObjectState, ObjectWrite, OBJECT_ID_BITS_MAX};

/// Agreed time and PRNG seed of a batch: identical on every replica, and the only time and
/// randomness an application may use ([determinism](crate#determinism)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonDeterminism {
    /// Microseconds, agreed by the order stage; strictly increasing from batch to batch (LS7).
    pub time: Micros,
    /// A seed for a pseudo-random generator.
    pub seed: u64,
}

/// One request of a batch.
#[derive(Clone, Copy, Debug)]
pub struct Command<'a> {
    /// The client that sent it.
    pub client: ClientId,
    /// Its request number, which its client chose.
    pub nc: ReqNo,
    /// The operation: bytes from a client, who may be faulty.
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

/// Why [`Application::load_checkpoint`] (or an [`ObjectState`] load) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The checkpoint refers to state this replica does not hold; fetch these tokens from
    /// peers ([`Application::fetch_state`] on them) and retry. At least one token: an empty
    /// list is a refusal.
    #[error("checkpoint needs {} piece(s) of state this replica does not hold", .0.len())]
    MissingState(Vec<Digest>),
    /// The bytes are not a checkpoint this application can load.
    #[error("checkpoint does not decode: {0}")]
    Corrupt(String),
}

/// A replicated state machine: what plumb runs on every execution replica. The crate
/// documentation is the guide; every method must keep its [determinism](crate#determinism)
/// rules.
pub trait Application {
    /// Execute batch `seq` and answer each of its commands.
    ///
    /// Must: return exactly one reply per command, in the batch's order (a missing reply
    /// leaves its request unanswered), and change the state as the commands say, depending on
    /// nothing but the state, the commands and `nd`. Garbage operations get an error reply.
    ///
    /// plumb guarantees: batches come in order of `seq`, each once (after a checkpoint is
    /// loaded, from the batch after the checkpoint's). A batch is never empty: a batch with
    /// nothing for the application (view-change filler, or only copies of requests executed
    /// already) is not passed on, so `seq` increases but may skip numbers. A request is
    /// executed at most once per state, and `nd.time` increases strictly.
    fn execute(&mut self, seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput;

    /// Execute some commands of batch `seq`, each given with its index in the batch, in that
    /// order; `None` if the application cannot (the default). Selective execution (seed 003,
    /// docs/odrc.md) runs a command only on the replicas that maintain an object it touches,
    /// and on the others later, when a request needs its objects: then after later batches
    /// ran, with its own batch's `nd`.
    ///
    /// Must: give each command the reply, pushes and object writes that
    /// [`Application::execute`] of the whole batch gives it, provided the objects of its
    /// access set ([`ObjectState::access_set`]) and the metadata hold what they held before it
    /// in agreed order (the other objects may be older or newer); so depend on nothing kept
    /// across commands but those objects and the metadata (no clock of the latest batch:
    /// `nd.time` may be earlier than a batch executed before), give the command at index `i`
    /// the randomness `execute` gives it at `i`, and change no object outside its access set.
    /// The metadata may change only in commands whose access set is empty or
    /// [`AccessSet::All`] (every replica runs those, in order, at their own time), and nothing
    /// may change at a batch's start by time alone. Selective execution is not yet wired into
    /// the execution stage (docs/odrc.md); once it is, plumb calls this only when
    /// [`Application::objects`] is `Some`, and refuses selective execution for an application
    /// that returns `None`.
    fn execute_selected(
        &mut self,
        _seq: Seq,
        _commands: &[(usize, Command<'_>)],
        _nd: NonDeterminism,
    ) -> Option<BatchOutput> {
        None
    }

    /// Answer `op` from `client` against the current state, without ordering it (the
    /// read-only path).
    ///
    /// Must: change nothing (it takes `&self`: no interior mutability that any later reply or
    /// checkpoint could see), give a read the answer [`Application::execute`] would give it
    /// in this state, and refuse a write with an error reply. plumb guarantees: the client
    /// accepts the answer only if every execution replica gives the same bytes, and otherwise
    /// orders `op` like any request; a replica that may be behind what it executed before a
    /// restart does not answer.
    fn execute_read_only(&self, client: ClientId, op: &[u8]) -> Vec<u8>;

    /// Whether `op` is a read whose answer depends only on the state (not on the client):
    /// execution replicas then remember the digest of its last ordered answer, and D-Prophecy
    /// reads of it can be vouched for (docs/prophecy.md).
    ///
    /// Must: depend on `op` alone, and be true only of operations that never change state and
    /// that [`Application::execute_read_only`] answers with the bytes
    /// [`Application::execute`] would reply (else such reads fall back to ordering). plumb calls
    /// it after executing each ordered command, once D-Prophecy reads have reached the
    /// replica. Default: nothing is (D-Prophecy reads are then always ordered).
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
    /// not guess must stay byte-identical to the one that does. plumb calls it only for a
    /// request this replica has not executed. `plumb_speculation::Speculative` provides it
    /// for any application that is `Clone` (docs/speculation.md).
    fn execute_early(&mut self, _command: Command<'_>) -> Option<Vec<u8>> {
        None
    }

    /// A deterministic checkpoint of the state after the last executed batch: either the whole
    /// state, or a token that names state the application keeps itself (then implement
    /// `fetch_state` / `load_state`).
    ///
    /// Must: give equal bytes for equal states on every replica (canonical encoding), since
    /// their digests are compared; `&mut self` is for bookkeeping (a cached encoding), never for
    /// anything a later reply depends on. plumb calls it after every
    /// `checkpoint_interval`-th batch, between batches, and stores the bytes durably itself.
    /// Not called when [`Application::objects`] is `Some`.
    fn take_checkpoint(&mut self) -> Vec<u8>;

    /// Set the state to the one `checkpoint` describes, replacing all of it.
    ///
    /// Must: refuse bytes it cannot load with [`LoadError::Corrupt`] (never panic), or name
    /// the pieces of state it lacks with [`LoadError::MissingState`]. plumb calls it at
    /// start-up with the newest checkpoint on the replica's disk (an older one if refused),
    /// and with a checkpoint whose digest the order stage agreed on when the replica catches
    /// up or is rolled back after a divergence; execution resumes at the next batch. Not
    /// called when [`Application::objects`] is `Some`.
    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError>;

    /// plumb no longer holds `checkpoint` (it keeps them back to two checkpoint intervals
    /// before the latest): state that only it named may be let go. Default: nothing.
    fn release_checkpoint(&mut self, _checkpoint: &[u8]) {}

    /// The piece of state named by `token`, for a peer that is loading a checkpoint; `None`
    /// if this replica does not hold it (the default). Its [`Digest`] must be `token`: the
    /// peer checks.
    fn fetch_state(&self, _token: &Digest) -> Option<Vec<u8>> {
        None
    }

    /// A piece of state fetched from a peer, for a [`LoadError::MissingState`] token; the
    /// library has checked `data` hashes to `token`, and calls
    /// [`Application::load_checkpoint`] again once every missing piece arrived. Default:
    /// nothing.
    fn load_state(&mut self, _token: &Digest, _data: &[u8]) {}

    /// Digest of the current state, for divergence detection in tests and the simulator
    /// (which compares each correct replica's with its reference replay's after the same
    /// batches); a running node does not call it. It must cover the whole replicated state,
    /// and nothing local (such as [`Application::counters`]).
    fn state_digest(&self) -> Digest;

    /// The optional object interface (docs/objects.md): `Some` if the application keeps its
    /// state as objects with stable ids. The library then takes incremental checkpoints that
    /// commit to every object through a Merkle tree, and state transfer moves only the objects
    /// that differ; [`Application::take_checkpoint`] and [`Application::load_checkpoint`] are
    /// no longer called. It must answer alike (`Some` or `None`) for the application's whole
    /// life. The default, `None`, keeps whole checkpoints.
    fn objects(&mut self) -> Option<&mut dyn ObjectState> {
        None
    }

    /// The application's own running totals, for the operator: each `(name, total)` shows in
    /// the node's `/metrics` as `plumb_stage_events_total{principal="e<i>",event="<name>"}`,
    /// refreshed on the execution stage's catch-up tick (every `catch_up_us`). Local
    /// observations, never state: replicas may differ, and checkpoints and
    /// [`Application::state_digest`] must not cover them. Default: none.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}
