//! Selective execution with on-demand replica consistency (ODRC, seed 003; issue 39).
//!
//! Every object is kept current by `m = max(u, r) + 1` execution replicas, its maintainers
//! (`maintenance.rs`); the others execute a request only when it touches an object they
//! maintain, and then bring its other objects up to date first, from the last certified
//! checkpoint and the requests they stored instead of executing (`selector.rs`, seed 003
//! Figures 2-4). Both are pure: the execution stage feeds the selector the agreed requests'
//! access sets and carries out what it decides.
//!
//! Not wired into the execution stage yet: docs/odrc.md says what is built and what is not.

mod maintenance;
mod selector;

#[cfg(test)]
mod tests;

pub use maintenance::{Maintenance, MaintenanceError, Partition};
/// Where a request stands in the agreed order: its batch and its place in the batch.
pub use plumb_wire::Position;
pub use selector::{CatchUp, Decision, Selector};
