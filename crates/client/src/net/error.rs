//! Everything that can go wrong when calling a cluster, as one error type. Each message says
//! what was wrong and what to do about it, because the person reading it is usually the one
//! who has to fix it.

use std::path::PathBuf;
use std::time::Duration;

/// Why a [`Client`](crate::net::Client) could not connect or an operation did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The cluster file could not be read or is not a valid cluster configuration.
    #[error("cannot use the cluster configuration: {0}; pass the cluster.toml `plumb init` wrote (docs/operations.md describes every field)")]
    Config(#[source] plumb_cluster::ClusterError),

    /// A client's key file could not be read or does not hold a key.
    #[error("cannot read client {id}'s key from {}: {reason}; `plumb init` writes it as keys/client-{id}.key beside cluster.toml", path.display())]
    KeyFile {
        /// The client id the key was for.
        id: u32,
        /// The key file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },

    /// The client id is not one the cluster knows: replicas would drop its requests (LS6).
    #[error("client {id} is not listed in {}; use a client id from its [[client]] entries (`plumb init --cli-clients N` adds some)", config.display())]
    UnknownClient {
        /// The client id given.
        id: u32,
        /// The cluster file that does not list it.
        config: PathBuf,
    },

    /// The key given for a client id is not the one whose public half the cluster lists:
    /// replicas would reject every message from it.
    #[error("the key given for client {id} does not match the public key {} lists for it; use the key file `plumb init` wrote for this client (keys/client-{id}.key)", config.display())]
    WrongKey {
        /// The client id given.
        id: u32,
        /// The cluster file listing the client's public key.
        config: PathBuf,
    },

    /// No identity, or the same identity twice.
    #[error("invalid set of client identities: {0}; give each client id once, and at least one")]
    Identities(String),

    /// Another process (or another client in this one) holds this client record: one client
    /// identity numbers its requests in one sequence, so it can run in one place at a time.
    #[error("the client record in {} is in use by another client; a client identity may run in one process at a time: stop the other one, or use another identity or record directory", dir.display())]
    RecordInUse {
        /// The record directory.
        dir: PathBuf,
    },

    /// The client record directory could not be opened.
    #[error("cannot open the client record in {}: {reason}; check that the directory is writable, or choose another with ClientOptions::record", dir.display())]
    Record {
        /// The record directory.
        dir: PathBuf,
        /// What went wrong.
        reason: String,
    },

    /// The async client was started outside a tokio runtime.
    #[error("the async client must be started inside a tokio runtime; use BlockingClient from code that is not async")]
    NoRuntime,

    /// The client's thread could not be started.
    #[error("cannot start the client's thread: {0}")]
    Thread(#[source] std::io::Error),

    /// Too few replicas could be reached to make progress.
    #[error("cannot reach enough replicas within {after:?}: connected to nodes {connected:?}, not to nodes {down:?} (a request needs {auth_needed} authentication and {exec_needed} execution replicas); check that the nodes run (`plumb status`) and that the addresses in the cluster file are reachable from here")]
    Unreachable {
        /// How long the client tried.
        after: Duration,
        /// Nodes a connection is up to.
        connected: Vec<u16>,
        /// Nodes no connection is up to.
        down: Vec<u16>,
        /// Authentication replicas needed (`n_auth - u`).
        auth_needed: usize,
        /// Execution replicas needed (`n_exec - u`).
        exec_needed: usize,
    },

    /// No answer that enough replicas agree on arrived in time.
    #[error("no answer agreed by enough replicas within {after:?}; the operation may still be executed: the client keeps resending it, and the next operation of this client identity waits for it. Check that enough nodes run (`plumb status`), or raise ClientOptions::op_timeout")]
    TimedOut {
        /// The timeout that passed.
        after: Duration,
    },

    /// The client shut down before the operation completed.
    #[error("the client shut down before the operation completed; it may have been executed, but its answer is lost. Connect again to go on")]
    Closed,

    /// A fast read or an early reply was asked of an execution replica that sleeps (ZZ mode,
    /// docs/zz.md): it answers nothing, and a woken one is not known to clients.
    #[error("execution replica {exec} sleeps in this ZZ cluster and answers no read or early request; ask one of the active execution replicas 0..{actives} (docs/zz.md)")]
    Asleep {
        /// The execution replica asked.
        exec: u16,
        /// Execution replicas `0..actives` are active.
        actives: usize,
    },

    /// The operation is larger than a request may be.
    #[error("an operation of {len} bytes is larger than the {max} bytes a request may carry; split it into smaller operations")]
    OperationTooLarge {
        /// The operation's size.
        len: usize,
        /// The largest operation a request carries.
        max: usize,
    },
}
