//! Client speculation for plumb (seed 001, PBFT-CS): clients go on with the first reply of
//! one replica, or with a predicted one, and replicas resolve the speculation.
//!
//! - [`envelope`]: the bytes a speculative request carries (predicates on earlier replies and
//!   the operation) and the replies it gets, inside the core protocol's op and result.
//! - [`shim`]: [`Speculative`], the replica-side shim around any application: checks
//!   predicates against a deterministically truncated log of committed reply digests, and
//!   executes early on a fork for the designated execution replica.
//! - [`client`]: [`Speculation`], the pure client-side bookkeeping: what was issued, on what
//!   it depends, which speculations hold, what must be rolled back, which replicas to trust.
//! - `session` (feature `net`): a speculative session over `plumb_client::net::Client`.
//! - [`app`]: [`SpecBench`], a counter with strictly dependent increments and a small file
//!   store, for the benchmark and the simulator.

pub mod app;
pub mod chain;
pub mod client;
pub mod envelope;
#[cfg(feature = "net")]
pub mod session;
pub mod shim;

#[cfg(test)]
mod tests;

pub use app::SpecBench;
pub use chain::{Chain, ChainStats};
pub use client::{Confirmation, Dependence, Early, OpId, Speculation};
pub use envelope::{answer_digest, Predicate, SpecOp, SpecReply, MAX_PREDICATES};
pub use shim::{SpecStats, Speculative, SPEC_GROUP};
