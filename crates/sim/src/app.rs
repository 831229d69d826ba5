//! The application under simulation: everything the simulator needs to know about the service
//! it replicates, so that the world, the workload, the trace and the checkers know none.
//!
//! An implementation supplies the [`Application`] each execution replica runs, the operations
//! the simulated clients issue, text for the trace, the sequential model the correct clients'
//! histories are checked against (plumb-lincheck), and optionally the application's own
//! invariants, checked on every correct execution replica's final state and on every state of
//! the reference replay. Each application's crate owns its adapter: `plumb_kv::sim::Kv` (feature
//! `sim`) is the key-value store's, `examples/bank/src/sim.rs` the bank's.

pub use crate::op_record::{OpRecord, Response as OpResponse};
use crate::rng::SimRng;
use plumb_adversary::{AnyApp, AppForgery};
use plumb_app::Application;
use plumb_lincheck::Model;
use std::sync::Arc;

/// A broken application invariant, named like the library's properties ("BANK-conservation").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppViolation {
    pub property: &'static str,
    pub detail: String,
}

impl AppViolation {
    /// What one of an application's own checks found, as the simulator reports it: nothing, or
    /// one violation of `property`.
    pub fn from_check(property: &'static str, found: Result<(), String>) -> Vec<AppViolation> {
        match found {
            Ok(()) => Vec::new(),
            Err(detail) => vec![AppViolation { property, detail }],
        }
    }
}

/// Something the application ends by agreed time once it is not renewed: what COORD-session-live
/// and KV-ttl judge (check/leases.rs). The application says which leases a state holds and
/// which requests renew or end them; *when* a lease was last renewed the check reads from the
/// agreed history, not from the application, whose own bookkeeping is what it judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// One lease for as long as it lives (a session id; a key of the expiry workload).
    pub id: i64,
    pub kind: LeaseKind,
    /// How long it lives unrenewed, in agreed time.
    pub timeout: plumb_wire::Micros,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseKind {
    /// A coordination session.
    Session,
    /// A key set to expire.
    Key,
}

impl LeaseKind {
    /// The property an early end breaks.
    pub fn property(&self) -> &'static str {
        match self {
            LeaseKind::Session => "COORD-session-live",
            LeaseKind::Key => "KV-ttl",
        }
    }

    pub fn noun(&self) -> &'static str {
        match self {
            LeaseKind::Session => "session",
            LeaseKind::Key => "the expiring key",
        }
    }
}

/// What one request does to leases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseOp {
    /// May create a lease whose id only its result tells (opening a session).
    Opens,
    /// Renews lease `id` (or creates it, if it is not there).
    Renews(i64),
    /// Ends lease `id`.
    Ends(i64),
}

/// One request of the agreed sequence as the reference replay executed it.
#[derive(Clone, Copy, Debug)]
pub struct Executed<'a> {
    pub seq: plumb_wire::Seq,
    pub client: plumb_wire::ClientId,
    /// The request number it was ordered under.
    pub nc: plumb_wire::ReqNo,
    /// Its identity, `H(client, life, nc, H(op))`.
    pub request: plumb_crypto::Digest,
    pub op: &'a [u8],
    pub result: &'a [u8],
}

/// An application under simulation. `Sync`: one value serves every worker thread of a sweep.
///
/// **Determinism:** every method that takes the [`SimRng`] must draw the same values in the same
/// order for the same inputs: a seed replays exactly only if the workload does.
pub trait SimApp: Sync {
    /// The application every execution replica runs (and the reference replay).
    type App: Application;
    /// The sequential specification of the operations clients see.
    type Model: Model;

    /// Short name, as `plumb sim --app NAME` takes it.
    fn name(&self) -> &'static str;

    /// Adjust the seed's configuration for this application (more clients, speculative
    /// sessions, behaviours of Byzantine replicas only it exercises). It must draw from its own
    /// [`SimRng`] stream, so other applications' seeds are unchanged. Default: nothing.
    fn configure(&self, _cfg: &mut crate::config::SimConfig) {}

    /// A fresh instance in its initial state: for each (re)started execution replica (which
    /// then recovers from its disk and its peers) and for the reference replay.
    fn new_app(&self) -> Self::App;

    /// A correct client's next operation over the seed's objects (`objects`: names such as
    /// `k0`, `k1`: keys of a store, accounts of a ledger).
    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8>;

    /// A correct client's operation (from [`SimApp::random_op`] or [`SimApp::random_read`]) made
    /// concrete with what the client learned from its own earlier operations (`past`, oldest
    /// first, with the results it got): for an application whose operations name something an
    /// earlier reply gave, such as a session the application opened. It draws nothing, so a
    /// seed of an application that does not override it replays as before. Default: `op`.
    fn bind(&self, op: Vec<u8>, _past: &[OpRecord]) -> Vec<u8> {
        op
    }

    /// A read (an operation [`SimApp::read_only_eligible`] accepts), for seeds that make clients
    /// read more (`WorkloadConfig::extra_gets`).
    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8>;

    /// Whether `op` may go down the read-only path. Only such operations are sent read-only,
    /// with the seed's probability; the others are ordered.
    fn read_only_eligible(&self, op: &[u8]) -> bool;

    /// What a Byzantine client's (correct) client code issues: never a write, so the correct
    /// clients' histories do not depend on which of its conflicting requests won.
    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8>;

    /// The non-mutating operation a Byzantine client injects under reused, skipped and flooded
    /// request numbers.
    fn injected_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8>;

    /// A write, which a Byzantine client sends down the read-only path: replicas must refuse it.
    fn mutating_op(&self) -> Vec<u8>;

    /// The application's vocabulary for Byzantine replicas' lies (`plumb-adversary`).
    fn forgery(&self) -> Arc<dyn AppForgery> {
        Arc::new(AnyApp)
    }

    /// One line for the trace: `set k1=7`, `transfer 5 a->b`.
    fn op_text(&self, op: &[u8]) -> String;

    /// One line for the trace and for violations.
    fn result_text(&self, result: &[u8]) -> String;

    /// The model the correct clients' histories are checked against.
    fn model(&self) -> Self::Model;

    /// The model's version of an operation, or `None` if the model does not cover it. Leave
    /// out only operations that never change state (dropping reads keeps a linearizable
    /// history linearizable, so what remains is still a sound test).
    fn model_op(&self, op: &[u8]) -> Option<<Self::Model as Model>::Op>;

    /// The model's version of a result of `op`, or `None` if it cannot express it (the
    /// operation is then treated as unanswered and a warning is given; the reference replay
    /// still judges the exact bytes of ordered replies).
    fn model_ret(
        &self,
        op: &<Self::Model as Model>::Op,
        result: &[u8],
    ) -> Option<<Self::Model as Model>::Ret>;

    /// The leases a state holds (none by default). The reference replay compares them before
    /// and after every batch: a lease gone although no request of the batch named it expired
    /// there (check/leases.rs).
    fn leases(&self, _app: &Self::App) -> Vec<Lease> {
        Vec::new()
    }

    /// What a request does to leases ([`SimApp::leases`]).
    fn lease_ops(&self, _op: &[u8]) -> Vec<LeaseOp> {
        Vec::new()
    }

    /// The application's invariants on one state: a correct execution replica's at the end of
    /// the run, and the reference replay's after every batch.
    fn check_state(&self, _app: &Self::App) -> Vec<AppViolation> {
        Vec::new()
    }

    /// The application's invariants on the agreed history: every request the reference replay
    /// executed, in order, with its result, and the state it ended in.
    fn check_history(&self, _executed: &[Executed<'_>], _end: &Self::App) -> Vec<AppViolation> {
        Vec::new()
    }

    /// The application's invariants on what correct clients received unasked: every push
    /// event a correct client's library delivered, `(client, event id, payload)` in delivery
    /// order, against the agreed history (as for [`SimApp::check_history`]). Called only when
    /// the whole agreed sequence was replayed.
    fn check_pushes(
        &self,
        _pushes: &[(plumb_wire::ClientId, u64, Vec<u8>)],
        _executed: &[Executed<'_>],
    ) -> Vec<AppViolation> {
        Vec::new()
    }
}
