//! A process `up` starts beside the nodes, through which clients reach the application.

use plumb_cluster::Cluster;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

/// A front end serving its clients: it ends when the process is told to stop, or at once with
/// why it could not start (the command prints that and exits with 2).
pub type Serving = Pin<Box<dyn Future<Output = Result<(), String>>>>;

/// A front end of an application: a process of the same binary that clients connect to
/// instead of speaking plumb's client protocol themselves (the key-value store's Redis
/// gateway is one). `up` starts it after the nodes, waits until it accepts connections, and
/// stops it with them.
#[derive(Clone, Debug)]
pub struct FrontEnd {
    /// What `up` calls it in progress lines and errors, e.g. `"gateway"`.
    pub name: &'static str,
    /// The binary's arguments that run it, e.g. `["gateway"]`; `up` appends
    /// `--config <cluster.toml>`.
    pub args: Vec<String>,
    /// Where it accepts connections, from the cluster file; an error says what the file
    /// lacks for it (a missing section, say). `up` waits for this address to accept.
    pub address: fn(&Cluster) -> Result<SocketAddr, String>,
    /// Lines `up` prints under "ready. Connect with:", e.g. a `redis-cli` command.
    pub hints: fn(&Cluster) -> Vec<String>,
    /// Whether a new cluster file needs a `[gateway]` section with client identities of its
    /// own for this front end (`init` and `up` then write one).
    pub needs_gateway_section: bool,
    /// The port a new cluster file gives it unless `--resp-port`/`--zk-port`/`--http-port` says otherwise
    /// (`None`: the Redis gateway's default, 7379).
    pub default_port: Option<u16>,
    /// Whether a new cluster file turns the gateway's `fast_reads` on: reads that set no watch
    /// take the read-only path (unanimous answers, else ordered). The ZooKeeper front end's
    /// do, as ZooKeeper serves reads without ordering them (docs/coordination.md, "Reads").
    pub fast_reads: bool,
    /// What the process `args` start runs: serve this front end for `cluster` until told to
    /// stop (the `plumb` binary's `gateway` command finds it by the cluster's application and
    /// runs it on its runtime). `sketchers` overrides the cluster file's `[gateway] sketchers`
    /// (`--sketchers`, docs/prophecy.md); a front end without sketchers ignores it.
    pub serve: fn(cluster: Cluster, sketchers: Option<u32>) -> Serving,
}
