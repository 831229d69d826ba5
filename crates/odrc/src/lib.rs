//! Selective execution with on-demand replica consistency (ODRC, seed 003; issue 39).
//!
//! Every object is kept current by `m = max(u, r) + 1` execution replicas, its maintainers
//! (`maintenance.rs`); the others execute a request only when it touches an object they
//! maintain, and then bring its other objects up to date first, from the last certified
//! checkpoint and the requests they stored instead of executing (`selector.rs`, seed 003
//! Figures 2-4). `execution.rs` carries out what the selector decides on an application, in
//! jobs: objects to load, held commands to replay at their own batch's time and seed
//! (`Application::execute_selected`), commands to answer. `certify.rs` is how replicas whose
//! states legitimately differ agree on a checkpoint: by certified partition roots, forcing
//! the partitions of suspected maintainers. `force.rs` says when a stored request is run after
//! all: on `r + 1` order replicas' RETRANSMITs, at most once per client per period. All of it is pure: the caller fetches the objects,
//! hands in the agreed batches and carries the reports.
//!
//! Not wired into the execution stage yet: docs/odrc.md says what is built and what is not.

mod certify;
mod execution;
mod force;
mod maintenance;
mod selector;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_certify;
#[cfg(test)]
mod tests_force;

pub use certify::{Certifier, CertifierError, Refusal, PARTITION_BITS_MAX, WINDOW};
pub use execution::{AgreedCommand, Answers, Execution, Job, RunError};
pub use force::{ForceVerdict, Forcing, ASKS_PER_REPLICA};
pub use maintenance::{Maintenance, MaintenanceError, Partition};
/// Where a request stands in the agreed order: its batch and its place in the batch.
pub use plumb_wire::Position;
pub use selector::{CatchUp, Decision, Selector};
