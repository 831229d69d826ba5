//! Calling a plumb cluster over the network (feature `net`, on by default).
//!
//! - [`Client`]: async (tokio). Connect with the cluster file and a client [`Identity`], then
//!   [`Client::invoke`] operations, [`Client::invoke_read_only`] reads, and take
//!   [`Client::push_events`].
//! - [`BlockingClient`]: the same for code that is not async.
//! - [`ClientError`]: everything that can go wrong, each saying what to do.
//! - [`ClientOptions`]: where the client record lives ([`RecordLocation`]) and how long to wait.
//!
//! Operations are bytes: the client is application-agnostic. The cluster tooling issues the
//! identities: `plumb init` lists each client id with its public key in `cluster.toml` and
//! writes its secret to `keys/client-<id>.key`.
//!
//! Underneath, each identity runs the crate's pure protocol core ([`crate::Client`]), all of
//! them on one thread with one durable store, and one TCP link goes to each node.

mod blocking;
mod client;
mod driver;
mod error;
mod events;
mod group;
mod identity;
mod options;
mod reach;
#[cfg(test)]
mod tests;

pub use crate::Route;
pub use blocking::{BlockingClient, BlockingPushEvents};
pub use client::{Client, SpeculativeCall, MAX_OPERATION_BYTES};
pub use error::ClientError;
pub use events::{PushEvent, PushEvents};
pub use group::key_prefix;
pub use identity::Identity;
pub use options::{ClientOptions, RecordLocation};
/// The cluster configuration a client connects with ([`Cluster::load`] reads `cluster.toml`).
pub use plumb_cluster::{Cluster, ClusterError};
pub use plumb_core::Answered;
pub use plumb_core::Counters;

/// An operation's answer and how it was reached ([`Client::invoke_on`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// What the application returned.
    pub result: Vec<u8>,
    /// Which route answered, and what that answer guarantees.
    pub answered: Answered,
}
