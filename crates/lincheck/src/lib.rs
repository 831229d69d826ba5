//! A linearizability checker for client histories.
//!
//! A *history* is a set of operations, each with the client that issued it, an invocation time
//! and either a response (a return value and a response time) or no response at all (the client
//! timed out or stopped, so the operation may or may not have taken effect). The history is
//! *linearizable* with respect to a sequential [`Model`] if there is a total order of the
//! completed operations plus any subset of the unanswered ones such that
//! - running the model through that order yields every recorded return value
//!   (an unanswered operation's return value is unconstrained), and
//! - the order respects real time: if `a` responded strictly before `b` was invoked, `a` comes
//!   first (an unanswered operation's response time is +infinity: it precedes nothing).
//!
//! # Algorithm
//!
//! The search is Wing and Gong's, with Lowe's improvements ([`wgl`]):
//! - Invocation and response events are kept in one time-ordered doubly linked list. At every
//!   step the candidates to linearize next are exactly the operations whose invocation comes
//!   before the first remaining response event (anything later would violate real time).
//! - Linearizing a candidate runs the model; if the return value matches, the operation's
//!   events are unlinked from the list and the search goes deeper. When no candidate fits, it
//!   backtracks (events are re-linked in reverse order, dancing-links style).
//! - Memoisation: a configuration is the *set* of linearized operations plus the model state.
//!   Two orders that reach the same configuration have the same future, so each configuration
//!   is expanded at most once (Lowe's cache). The work then grows with the number of
//!   operations in flight at once, not with the number of orders.
//! - Reads first: a candidate the model calls read-only ([`Model::is_read_only`]) whose
//!   recorded value fits the current state is linearized at once, without branching (any
//!   linearization can be reordered to start with it).
//! - P-compositionality: when the model is a product of independent objects (e.g. one register
//!   per key), the history is linearizable iff each object's sub-history is. [`Model::partition`]
//!   names the object an operation touches; each partition is searched on its own, from the
//!   model's initial state, smallest first.
//! - The search is bounded by a step budget per partition ([`Checker::with_max_steps`]); when it
//!   runs out the answer is [`Outcome::Unknown`], never a pass.
//! - Nondeterministic models: an operation may have several outcomes ([`Model::choices`],
//!   [`Model::step_choice`]); each fitting one is a branch. Deterministic models (the default,
//!   one choice) search as before.
//!
//! [`delay_once`] checks Prophecy's weaker *delay-once linearizability* (a read may reflect
//! what the latest read saw instead of the latest write) as linearizability against a derived
//! nondeterministic model, on the same [`History`].
//!
//! # Use
//!
//! ```
//! use plumb_lincheck::{check, History};
//! use plumb_lincheck::kv::{BytesKv, KvOp, KvRet};
//!
//! let mut h = History::<BytesKv>::new();
//! let w = h.invoke(1, KvOp::set(b"k", b"1"), 0);
//! let r = h.invoke(2, KvOp::get(b"k"), 5);
//! h.complete(w, KvRet::Ok, 10).unwrap();
//! h.complete(r, KvRet::Value(Some(b"1".to_vec())), 12).unwrap();
//! // The read overlaps the write, so it may see the new value.
//! assert!(check(&BytesKv::new(), &h).is_linearizable());
//! ```

mod check;
pub mod coord;
pub mod delay_once;
mod history;
pub mod kv;
pub mod wgl;

pub use check::{check, Checker, Outcome, Partition, Report, Violation, DEFAULT_MAX_STEPS};
pub use delay_once::{check_delay_once, staleness, DelayOnce, DelayOnceState, Staleness};
pub use history::{History, HistoryError, Issuer, OpId, Operation, Response, Time};

use std::fmt::Debug;
use std::hash::Hash;

/// A sequential specification: what a single copy of the object does, one operation at a time.
///
/// `step` must be a pure function of its arguments (the search calls it many times on the same
/// state and caches states).
pub trait Model {
    /// The object's state. Hashed and compared for memoisation, so keep it small.
    type State: Clone + Eq + Hash;
    type Op: Debug;
    type Ret: PartialEq + Debug;
    /// Names the independent object an operation touches (a key); `()` if the model does not
    /// partition.
    type PartitionKey: Ord + Clone + Debug;

    fn init(&self) -> Self::State;

    /// Apply `op` to `state`: the new state and what the operation returns.
    fn step(&self, state: &Self::State, op: &Self::Op) -> (Self::State, Self::Ret);

    /// The object `op` touches, if the model is a product of independent objects and `op`
    /// touches only one of them. `None` means "may touch anything": then the whole history is
    /// checked as one partition. Returning `Some` is a promise that operations on different
    /// keys commute and never see each other's effects.
    fn partition(&self, _op: &Self::Op) -> Option<Self::PartitionKey> {
        None
    }

    /// How explanations name a partition key (its `Debug` form unless overridden).
    fn describe_key(&self, key: &Self::PartitionKey) -> String {
        format!("{key:?}")
    }

    /// True if `op` never changes the state (under any of its [`choices`](Model::choices)).
    /// Unanswered read-only operations constrain nothing, so the checker drops them before
    /// searching. Returning `false` is always safe.
    fn is_read_only(&self, _op: &Self::Op) -> bool {
        false
    }

    /// How many outcomes `op` may have from a state: 1 (the default) for a deterministic model.
    /// A nondeterministic model (such as [`delay_once::DelayOnce`], where a read may reflect
    /// either of two states) returns more and implements [`step_choice`](Model::step_choice);
    /// the search then tries every choice whose return value fits the recorded one.
    fn choices(&self, _op: &Self::Op) -> usize {
        1
    }

    /// Outcome number `choice` (below [`choices`](Model::choices)) of `op` on `state`: the new
    /// state and the return value, or `None` if that outcome is impossible from `state`. The
    /// default is [`step`](Model::step) for choice 0. Must be pure, like `step`.
    fn step_choice(
        &self,
        state: &Self::State,
        op: &Self::Op,
        choice: usize,
    ) -> Option<(Self::State, Self::Ret)> {
        (choice == 0).then(|| self.step(state, op))
    }

    /// How explanations name outcome `choice` of `op` (nothing, for a deterministic model).
    fn describe_choice(&self, _op: &Self::Op, _choice: usize) -> String {
        String::new()
    }
}
