//! What the load generator drives: a system under test that hands out sessions, each of
//! which runs one operation at a time.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One operation of the workload.
#[derive(Clone, Debug)]
pub enum Op {
    /// Store `value` under `key`.
    Write { key: String, value: Vec<u8> },
    /// Read `key` linearizably; the system returns the value's length.
    Read { key: String },
    /// ZooKeeper's `create` of a fresh persistent znode holding `value`; the session picks a
    /// name no other operation used. Only systems that speak ZooKeeper's protocol run it.
    Create { value: Vec<u8> },
    /// ZooKeeper's plain `getData` of `key`'s znode, at the system's default consistency (no
    /// `sync` first); returns the value's length. Only systems that speak ZooKeeper's protocol
    /// run it.
    GetData { key: String },
}

impl Op {
    /// The error of a system that does not run this operation.
    pub fn unsupported(&self, system: &str) -> String {
        format!("{system} does not run ZooKeeper operations ({self:?})")
    }
}

/// A system under test, already running. `session` is called once per generator client, so a
/// system whose clients hold a connection each opens one per session.
pub trait Target: Send + Sync {
    /// `plumb`, `etcd`, `zookeeper`, `redis`.
    fn system(&self) -> &'static str;
    /// The shape it runs in, for example `u1r0`.
    fn config(&self) -> String;
    /// Process ids of the servers, so the generator can charge their CPU time to requests.
    fn server_pids(&self) -> Vec<u32>;
    fn session(&self) -> BoxFuture<'_, Result<Box<dyn Session>, String>>;
    /// Requests per batch the system formed since the last call, where it batches and says so.
    fn batch_stats(&self) -> BoxFuture<'_, Option<BatchStats>> {
        Box::pin(async { None })
    }
    /// The servers' own cost counters, summed over them (plumb's `/metrics`: frames, hashes,
    /// allocations; [`crate::cost`]); empty for a system that keeps none.
    fn cost_counters(&self) -> BoxFuture<'_, BTreeMap<String, u64>> {
        Box::pin(async { BTreeMap::new() })
    }
}

pub trait Session: Send {
    /// Run `op`; for a read, return the length of the value read (0 if absent).
    fn run<'a>(&'a mut self, op: &'a Op) -> BoxFuture<'a, Result<usize, String>>;
}

/// Totals read off the replicas: how many batches and requests they ordered, the view, and
/// what stalled (view changes by cause, slow requests by stage and reason, messages dropped by
/// reason, syncs over 50 ms, summed over nodes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchStats {
    pub batches: u64,
    pub requests: u64,
    /// The highest view any order replica is in.
    pub view: u64,
    pub view_changes: BTreeMap<String, u64>,
    pub slow: BTreeMap<String, u64>,
    /// Messages the nodes dropped, by reason, summed over principals and nodes: a stall that
    /// waited out a timer often began with one.
    pub drops: BTreeMap<String, u64>,
    /// Syncs (fdatasync) that took over 50 ms, summed over stages and nodes: every process
    /// of a cluster on one machine shares one disk, so one slow sync often stalls a quorum.
    pub slow_syncs: u64,
}

impl BatchStats {
    pub fn since(&self, earlier: &BatchStats) -> BatchStats {
        let diff = |now: &BTreeMap<String, u64>, then: &BTreeMap<String, u64>| {
            now.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.saturating_sub(then.get(k).copied().unwrap_or(0)),
                    )
                })
                .filter(|(_, v)| *v > 0)
                .collect()
        };
        BatchStats {
            batches: self.batches.saturating_sub(earlier.batches),
            requests: self.requests.saturating_sub(earlier.requests),
            view: self.view.saturating_sub(earlier.view),
            view_changes: diff(&self.view_changes, &earlier.view_changes),
            slow: diff(&self.slow, &earlier.slow),
            drops: diff(&self.drops, &earlier.drops),
            slow_syncs: self.slow_syncs.saturating_sub(earlier.slow_syncs),
        }
    }

    /// `cause 3, other 1`: a map as one line.
    pub fn line(map: &BTreeMap<String, u64>) -> String {
        map.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn mean(&self) -> Option<f64> {
        (self.batches > 0).then(|| self.requests as f64 / self.batches as f64)
    }
}

/// A server process the generator started, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct ServerProcess {
    pub name: String,
    pub child: std::process::Child,
}

impl ServerProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` if it has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
