//! `plumb bench speculation`: the set-up of seed 001 §5 (PBFT-CS, Fig. 4) for issue 16. One
//! client issues a sequence of *dependent* operations (each made from the previous result),
//! one at a time, and the run time is measured, against:
//!
//! - `unreplicated`: one process running the application directly ([`crate::unreplicated`]);
//! - `plumb`: a fresh u = 1, r = 1 cluster of `plumb node` processes, each node on its own
//!   loopback address, called through the normal client library;
//!
//! in three topologies under plumb's emulated wide-area network (docs/wan-emulation.md):
//!
//! - `lan`: no added delay;
//! - `near`: node 0 (which hosts the view-0 primary) at the client's site, the other nodes
//!   `delay` away from it and from the client; the unreplicated server at the client's site;
//! - `far`: every node at a site of its own, `delay` from the client and from each other; the
//!   unreplicated server `delay` away.
//!
//! And a `peak` row per system: many closed-loop callers on `lan`, operations per second.
//!
//! A system is a [`System`] variant and one arm of [`System::start`], which returns callers;
//! the speculating client of issue 16 (`plumb-spec`) is added the same way. A workload is a
//! [`DependentOps`]: the speculation work can swap in its own application's operations.

use crate::app::BenchApp;
use crate::plumb::{Placement, Plumb, PlumbShape};
use crate::prophecy::loadavg;
use crate::target::{BoxFuture, ServerProcess};
use crate::unreplicated::UnreplicatedClient;
use plumb_cluster::WanEntry;
use plumb_gateway::Pool;
use plumb_kv::{KvOp, KvResult};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the client and the servers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    Lan,
    Near,
    Far,
}

impl Topology {
    pub const ALL: [Topology; 3] = [Topology::Lan, Topology::Near, Topology::Far];

    pub fn name(self) -> &'static str {
        match self {
            Topology::Lan => "lan",
            Topology::Near => "near",
            Topology::Far => "far",
        }
    }

    pub fn parse(text: &str) -> Result<Topology, String> {
        Topology::ALL
            .into_iter()
            .find(|t| t.name() == text.trim())
            .ok_or_else(|| format!("unknown topology `{text}`: use lan, near or far"))
    }

    /// The `[wan]` of a cluster of `nodes` nodes in this topology (`None` on the LAN).
    pub fn wan(self, nodes: usize, delay_ms: u64) -> Option<WanEntry> {
        let sites = match self {
            Topology::Lan => return None,
            // Seed 001 §5: equal one-way latency between every two sites, a replica per site;
            // primary-local puts the client at the primary's site.
            Topology::Near => (0..nodes)
                .map(|i| {
                    if i == 0 {
                        CLIENT_SITE.to_string()
                    } else {
                        format!("site-{i}")
                    }
                })
                .collect(),
            Topology::Far => (0..nodes).map(|i| format!("site-{i}")).collect(),
        };
        Some(WanEntry {
            sites,
            delay_ms,
            client_site: Some(CLIENT_SITE.to_string()),
        })
    }

    /// How far the unreplicated server is from the client, one way.
    pub fn server_delay(self, delay: Duration) -> Duration {
        match self {
            Topology::Lan | Topology::Near => Duration::ZERO,
            Topology::Far => delay,
        }
    }
}

/// The client's site in every topology.
pub const CLIENT_SITE: &str = "client";

/// A system measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Unreplicated,
    Plumb,
}

impl System {
    pub const ALL: [System; 2] = [System::Unreplicated, System::Plumb];

    pub fn name(self) -> &'static str {
        match self {
            System::Unreplicated => "unreplicated",
            System::Plumb => "plumb",
        }
    }

    pub fn parse(text: &str) -> Result<System, String> {
        System::ALL
            .into_iter()
            .find(|s| s.name() == text.trim())
            .ok_or_else(|| format!("unknown system `{text}`: use unreplicated or plumb"))
    }
}

/// Something that runs one operation and returns its result.
pub trait Caller: Send + Sync {
    fn call(&self, op: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>>;
}

impl Caller for UnreplicatedClient {
    fn call(&self, op: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        Box::pin(self.invoke(op))
    }
}

/// The normal client library (through the pool the gateway uses: a queue in front of
/// `plumb_client::net::Client`), every operation ordered.
struct PoolCaller(Arc<Pool>);

impl Caller for PoolCaller {
    fn call(&self, op: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        Box::pin(async move { self.0.call(op, false).await.map_err(|e| e.to_string()) })
    }
}

/// A sequence of dependent operations: each is made from the result of the one before.
pub trait DependentOps: Send {
    /// The workload's name in the table and the csv.
    fn name(&self) -> &'static str;
    /// The first operation (`previous` is `None`), or the next one given the previous
    /// operation's result; an error if that result is not what the sequence expects.
    fn next(&mut self, previous: Option<&[u8]>) -> Result<Vec<u8>, String>;
}

/// The workloads by name.
pub const WORKLOADS: [&str; 2] = ["counter", "files"];

/// Workload `name`, on keys of its own under `tag` (so runs never see each other's state).
pub fn workload(name: &str, tag: &str) -> Result<Box<dyn DependentOps>, String> {
    match name.trim() {
        "counter" => Ok(Box::new(Counter {
            key: format!("spec:{tag}:counter").into_bytes(),
            expect: 0,
        })),
        "files" => Ok(Box::new(Files {
            dir: format!("spec:{tag}:fs"),
            step: 0,
            parent: 0,
        })),
        other => Err(format!("unknown workload `{other}`: use counter or files")),
    }
}

fn kv_result(reply: &[u8]) -> Result<KvResult, String> {
    KvResult::decode(reply).map_err(|e| format!("undecodable result: {e}"))
}

/// INCR of one key: each result must be the previous one plus one (the counter of seed 001
/// §5.1's micro-benchmark).
struct Counter {
    key: Vec<u8>,
    expect: i64,
}

impl DependentOps for Counter {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn next(&mut self, previous: Option<&[u8]>) -> Result<Vec<u8>, String> {
        if let Some(reply) = previous {
            match kv_result(reply)? {
                KvResult::Int(n) if n == self.expect => {}
                other => return Err(format!("counter: expected {}, got {other:?}", self.expect)),
            }
        }
        self.expect += 1;
        Ok(KvOp::Increment {
            key: self.key.clone(),
            delta: 1,
        }
        .encode())
    }
}

/// A small file-system-like sequence: create a file (HSET of its path with its inode number
/// and its parent's), then stat it (HGET of its inode); the next file is created in the one
/// just stat-ed, so every create depends on the stat before it and every stat on its create.
struct Files {
    dir: String,
    step: u64,
    /// The inode the last stat returned: the next file's parent.
    parent: u64,
}

impl Files {
    fn path(&self, file: u64) -> Vec<u8> {
        format!("{}/f{file}", self.dir).into_bytes()
    }
}

impl DependentOps for Files {
    fn name(&self) -> &'static str {
        "files"
    }

    fn next(&mut self, previous: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let file = self.step / 2;
        if let Some(reply) = previous {
            match (self.step % 2, kv_result(reply)?) {
                // A create added its two fields.
                (1, KvResult::Int(2)) => {}
                // A stat returned the inode its create wrote.
                (0, KvResult::Value(Some(v))) => {
                    let inode = std::str::from_utf8(&v)
                        .ok()
                        .and_then(|s| s.parse::<u64>().ok())
                        .filter(|&i| i == file)
                        .ok_or_else(|| {
                            format!("files: stat of file {} returned {v:?}", file - 1)
                        })?;
                    self.parent = inode;
                }
                (phase, other) => {
                    return Err(format!(
                        "files: unexpected result {other:?} for a {}",
                        if phase == 1 { "create" } else { "stat" }
                    ))
                }
            }
        }
        let op = if self.step.is_multiple_of(2) {
            KvOp::HSet {
                key: self.path(file),
                fields: vec![
                    (b"inode".to_vec(), (file + 1).to_string().into_bytes()),
                    (b"parent".to_vec(), self.parent.to_string().into_bytes()),
                ],
            }
        } else {
            KvOp::HGet {
                key: self.path(file),
                field: b"inode".to_vec(),
            }
        };
        self.step += 1;
        Ok(op.encode())
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct SpeculationBench {
    /// The `plumb` binary: it runs the nodes and the unreplicated server.
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub base_port: u16,
    /// The third octet's network: nodes on `127.0.41.(11 + i)`, the unreplicated server on
    /// `127.0.41.2`.
    pub net: [u8; 3],
    pub systems: Vec<System>,
    pub topologies: Vec<Topology>,
    pub workloads: Vec<String>,
    /// Dependent operations per timed run.
    pub ops: u64,
    /// Operations run before each timed run (not counted).
    pub warmup_ops: u64,
    pub delay_ms: u64,
    /// Closed-loop callers of the peak row (0: no peak row).
    pub peak_clients: usize,
    pub peak_duration: Duration,
    pub progress: bool,
}

/// One measured run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub system: &'static str,
    /// `lan`, `near`, `far`, or `peak`.
    pub topology: &'static str,
    pub workload: String,
    pub ops: u64,
    pub run_s: f64,
    pub ops_per_s: f64,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    pub failures: Vec<String>,
    pub load_before: String,
    pub load_after: String,
    /// Nodes of each plumb cluster.
    pub nodes: usize,
    /// What the replicated systems' clusters said at the end of their runs (their view).
    pub notes: Vec<String>,
}

/// A system running in one topology: its callers, and what keeps it running (dropped last).
struct Running {
    callers: Vec<Arc<dyn Caller>>,
    /// A replicated system's cluster, to read its view off at the end.
    cluster: Option<plumb_cluster::Cluster>,
    _servers: Box<dyn std::any::Any + Send>,
}

/// The bench keeps the view-0 primary, on node 0: without a fault, a primary is replaced only
/// by the rotation rule of seed 004 §3.4.3 (after `throughput_grace_us`, a backup with no
/// earlier view to compare with asks for a view change to measure another primary), which
/// would move the primary to a remote node in the middle of a `near` run and so change the
/// topology under test. One hour: longer than any run. The final view is printed.
const GRACE_US: u64 = 3_600_000_000;

/// The heartbeat under an emulated delay: the default 40 ms (seed 004 §3.4.3) is the LAN's.
/// Between a backup learning that the primary holds a request and the PRE-PREPARE reaching
/// it, the primary may still wait for AUTH-REQs from remote authentication replicas and the
/// PRE-PREPARE crosses the WAN once more: with the default, a fault-free `near` run at 15 ms
/// changed view three times on heartbeat expiries. 40 ms plus four one-way delays.
fn heartbeat_us(delay_ms: u64) -> u64 {
    40_000 + 4 * delay_ms * 1000
}

impl SpeculationBench {
    fn host(&self, last: u8) -> String {
        format!("{}.{}.{}.{last}", self.net[0], self.net[1], self.net[2])
    }

    /// Start `system` in `topology` with `callers` callers (numbered `k` among the runs, for
    /// its ports and directory).
    async fn start(
        &self,
        system: System,
        topology: Topology,
        callers: usize,
        k: u16,
        outcome: &mut Outcome,
    ) -> Result<Running, String> {
        let delay = Duration::from_millis(self.delay_ms);
        let port = self
            .base_port
            .checked_add(20 * k)
            .ok_or("--base-port too high")?;
        let dir = self
            .dir
            .join(format!("{}-{}", system.name(), topology.name()));
        match system {
            System::Unreplicated => {
                let addr: SocketAddr = format!("{}:{port}", self.host(2))
                    .parse()
                    .map_err(|e| format!("{e}"))?;
                let server = spawn_unreplicated(&self.exe, addr, &dir)?;
                let server_delay = topology.server_delay(delay);
                let mut out: Vec<Arc<dyn Caller>> = Vec::new();
                for _ in 0..callers.max(1) {
                    out.push(Arc::new(connect_unreplicated(addr, server_delay).await?));
                }
                Ok(Running {
                    callers: out,
                    cluster: None,
                    _servers: Box::new(server),
                })
            }
            System::Plumb => {
                let shape = PlumbShape {
                    u: 1,
                    r: 1,
                    split: false,
                };
                // u = 1, r = 1 co-located: 4 authentication, 4 order and 3 execution
                // replicas on 4 nodes (seed 004 Table 6.1).
                let nodes = 4;
                outcome.nodes = nodes;
                let placement = Placement {
                    hosts: (0..nodes).map(|i| self.host(11 + i as u8)).collect(),
                    wan: topology.wan(nodes, self.delay_ms),
                    protocol: plumb_cluster::ProtocolOverrides {
                        throughput_grace_us: Some(GRACE_US),
                        heartbeat_us: (topology != Topology::Lan)
                            .then(|| heartbeat_us(self.delay_ms)),
                        ..Default::default()
                    },
                };
                let plumb = Plumb::start_placed(
                    Arc::new(crate::app::KvBench) as Arc<dyn BenchApp>,
                    &self.exe,
                    &dir,
                    &shape,
                    port,
                    callers.max(1) as u32,
                    0,
                    None,
                    &placement,
                )
                .await?;
                let pool = plumb.pool().clone();
                let out: Vec<Arc<dyn Caller>> = (0..callers.max(1))
                    .map(|_| Arc::new(PoolCaller(pool.clone())) as Arc<dyn Caller>)
                    .collect();
                Ok(Running {
                    callers: out,
                    cluster: Some(plumb.cluster().clone()),
                    _servers: Box::new(plumb),
                })
            }
        }
    }

    /// Every run, one system and topology at a time.
    pub async fn run(&self) -> Result<Outcome, String> {
        let mut outcome = Outcome {
            load_before: loadavg(),
            ..Outcome::default()
        };
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let mut k = 0u16;
        for &topology in &self.topologies {
            for &system in &self.systems {
                let peak = topology == Topology::Lan && self.peak_clients > 0;
                let callers = if peak { self.peak_clients } else { 1 };
                let label = format!("{} {}", system.name(), topology.name());
                if self.progress {
                    eprintln!("  starting {label}");
                }
                let running = match self.start(system, topology, callers, k, &mut outcome).await {
                    Ok(r) => r,
                    Err(e) => {
                        outcome.failures.push(format!("{label}: {e}"));
                        k += 1;
                        continue;
                    }
                };
                k += 1;
                let single = running.callers[0].clone();
                for name in &self.workloads {
                    let tag = format!("{}-{}", system.name(), topology.name());
                    match self.dependent(&*single, name, &tag).await {
                        Ok((ops, run_s)) => {
                            let row = Row {
                                system: system.name(),
                                topology: topology.name(),
                                workload: name.clone(),
                                ops,
                                run_s,
                                ops_per_s: ops as f64 / run_s,
                            };
                            if self.progress {
                                eprintln!(
                                    "  {label} {name}: {ops} ops in {run_s:.3} s ({:.2} ms/op)",
                                    run_s * 1000.0 / ops as f64
                                );
                            }
                            outcome.rows.push(row);
                        }
                        Err(e) => outcome.failures.push(format!("{label} {name}: {e}")),
                    }
                }
                if peak {
                    match self.peak(&running.callers, system).await {
                        Ok((ops, run_s)) => {
                            if self.progress {
                                eprintln!(
                                    "  {} peak: {ops} ops in {run_s:.2} s with {} callers",
                                    system.name(),
                                    running.callers.len()
                                );
                            }
                            outcome.rows.push(Row {
                                system: system.name(),
                                topology: "peak",
                                workload: "counter".into(),
                                ops,
                                run_s,
                                ops_per_s: ops as f64 / run_s,
                            });
                        }
                        Err(e) => outcome
                            .failures
                            .push(format!("{} peak: {e}", system.name())),
                    }
                }
                if let Some(cluster) = &running.cluster {
                    let note = match crate::plumb::cluster_batch_stats(cluster).await {
                        Some(stats) => {
                            let asked: Vec<String> = stats
                                .view_changes
                                .iter()
                                .filter(|(_, n)| **n > 0)
                                .map(|(k, n)| format!("{k} {n}"))
                                .collect();
                            format!(
                                "{label}: ended in view {}; view changes asked for: {}",
                                stats.view,
                                if asked.is_empty() {
                                    "none".to_string()
                                } else {
                                    asked.join(", ")
                                }
                            )
                        }
                        None => format!("{label}: no node answered /metrics at the end"),
                    };
                    outcome.notes.push(note);
                }
                drop(single);
                drop(running);
            }
        }
        outcome.load_after = loadavg();
        Ok(outcome)
    }

    /// Warm up, then time `self.ops` dependent operations of workload `name`.
    async fn dependent(
        &self,
        caller: &dyn Caller,
        name: &str,
        tag: &str,
    ) -> Result<(u64, f64), String> {
        let mut warm = workload(name, &format!("{tag}-warmup"))?;
        run_chain(caller, &mut *warm, self.warmup_ops).await?;
        let mut timed = workload(name, tag)?;
        let start = Instant::now();
        run_chain(caller, &mut *timed, self.ops).await?;
        Ok((self.ops, start.elapsed().as_secs_f64()))
    }

    /// Closed-loop callers, each incrementing a counter of its own, for `peak_duration` after
    /// a second of warm-up.
    async fn peak(
        &self,
        callers: &[Arc<dyn Caller>],
        system: System,
    ) -> Result<(u64, f64), String> {
        let measuring = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for (i, caller) in callers.iter().enumerate() {
            let caller = caller.clone();
            let (measuring, stop, done) = (measuring.clone(), stop.clone(), done.clone());
            let mut ops = workload("counter", &format!("{}-peak-{i}", system.name()))?;
            tasks.push(tokio::spawn(async move {
                let mut previous: Option<Vec<u8>> = None;
                while !stop.load(Ordering::Relaxed) {
                    let op = ops.next(previous.as_deref())?;
                    let reply = call(&*caller, op).await?;
                    if measuring.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    previous = Some(reply);
                }
                Ok::<(), String>(())
            }));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        tokio::time::sleep(self.peak_duration).await;
        stop.store(true, Ordering::Relaxed);
        let run_s = start.elapsed().as_secs_f64();
        let ops = done.load(Ordering::Relaxed);
        for t in tasks {
            t.await.map_err(|e| format!("a caller failed: {e}"))??;
        }
        Ok((ops, run_s))
    }
}

/// Longest one operation may take before the run is given up.
const OP_TIMEOUT: Duration = Duration::from_secs(30);

async fn call(caller: &dyn Caller, op: Vec<u8>) -> Result<Vec<u8>, String> {
    tokio::time::timeout(OP_TIMEOUT, caller.call(op))
        .await
        .map_err(|_| format!("an operation took more than {} s", OP_TIMEOUT.as_secs()))?
}

/// `n` operations of `ops`, each after the previous one's result, the last result checked too.
async fn run_chain(caller: &dyn Caller, ops: &mut dyn DependentOps, n: u64) -> Result<(), String> {
    let mut previous: Option<Vec<u8>> = None;
    for _ in 0..n {
        let op = ops.next(previous.as_deref())?;
        previous = Some(call(caller, op).await?);
    }
    if let Some(last) = previous {
        ops.next(Some(&last))?;
    }
    Ok(())
}

/// Start the unreplicated server process (`plumb bench unreplicated --listen ADDR`).
fn spawn_unreplicated(
    exe: &std::path::Path,
    addr: SocketAddr,
    dir: &std::path::Path,
) -> Result<ServerProcess, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let log_path = dir.join("unreplicated.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let child = std::process::Command::new(exe)
        .args(["bench", "unreplicated", "--listen", &addr.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    Ok(ServerProcess {
        name: "unreplicated server".into(),
        child,
    })
}

/// Connect to the unreplicated server, waiting up to 10 s for it to listen.
async fn connect_unreplicated(
    addr: SocketAddr,
    delay: Duration,
) -> Result<UnreplicatedClient, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match UnreplicatedClient::connect(addr, delay).await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The csv `--csv` writes: `system,topology,ops,run_s,ops_per_s`, then the workload.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from("system,topology,ops,run_s,ops_per_s,workload\n");
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{:.4},{:.1},{}\n",
            r.system, r.topology, r.ops, r.run_s, r.ops_per_s, r.workload
        ));
    }
    out
}

/// One line per run.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<13} {:<8} {:<8} {:>7} {:>9} {:>10} {:>8}\n",
        "system", "workload", "topology", "ops", "run s", "ops/s", "ms/op"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<13} {:<8} {:<8} {:>7} {:>9.3} {:>10.1} {:>8.3}\n",
            r.system,
            r.workload,
            r.topology,
            r.ops,
            r.run_s,
            r.ops_per_s,
            r.run_s * 1000.0 / r.ops.max(1) as f64
        ));
    }
    out
}

/// Every other system against `unreplicated`: run time over the unreplicated run time per
/// topology and workload, and peak throughput over the unreplicated peak.
pub fn ratios(rows: &[Row]) -> String {
    let find = |system: &str, topology: &str, workload: &str| {
        rows.iter()
            .find(|r| r.system == system && r.topology == topology && r.workload == workload)
    };
    let mut out = format!(
        "{:<13} {:<8} {:<8} {:>28}\n",
        "system", "workload", "topology", "÷ unreplicated"
    );
    for r in rows
        .iter()
        .filter(|r| r.system != System::Unreplicated.name())
    {
        let base = find(System::Unreplicated.name(), r.topology, &r.workload);
        let text = match base {
            Some(b) if r.topology == "peak" && b.ops_per_s > 0.0 => {
                format!("{:.2}x throughput", r.ops_per_s / b.ops_per_s)
            }
            Some(b) if b.run_s > 0.0 => format!("{:.2}x run time", r.run_s / b.run_s),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "{:<13} {:<8} {:<8} {:>28}\n",
            r.system, r.workload, r.topology, text
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(r: KvResult) -> Vec<u8> {
        r.encode()
    }

    #[test]
    fn counter_checks_every_result() {
        let mut c = workload("counter", "t").unwrap();
        c.next(None).unwrap();
        c.next(Some(&reply(KvResult::Int(1)))).unwrap();
        let e = c.next(Some(&reply(KvResult::Int(7)))).unwrap_err();
        assert!(e.contains("expected 2"), "{e}");
    }

    #[test]
    fn files_chain_each_create_to_the_last_stat() {
        let mut f = workload("files", "t").unwrap();
        let create0 = KvOp::decode(&f.next(None).unwrap()).unwrap();
        assert!(matches!(create0, KvOp::HSet { .. }));
        let stat0 = KvOp::decode(&f.next(Some(&reply(KvResult::Int(2)))).unwrap()).unwrap();
        assert!(matches!(stat0, KvOp::HGet { .. }));
        let create1 = f
            .next(Some(&reply(KvResult::Value(Some(b"1".to_vec())))))
            .unwrap();
        match KvOp::decode(&create1).unwrap() {
            KvOp::HSet { fields, .. } => {
                assert_eq!(fields[1], (b"parent".to_vec(), b"1".to_vec()));
            }
            other => panic!("{other:?}"),
        }
        // A stat that does not return what the create wrote stops the run.
        f.next(Some(&reply(KvResult::Int(2)))).unwrap();
        assert!(f
            .next(Some(&reply(KvResult::Value(Some(b"9".to_vec())))))
            .is_err());
    }

    #[test]
    fn topologies_place_nodes_and_server() {
        assert!(Topology::Lan.wan(4, 15).is_none());
        let near = Topology::Near.wan(4, 15).unwrap();
        assert_eq!(near.sites, ["client", "site-1", "site-2", "site-3"]);
        let far = Topology::Far.wan(4, 15).unwrap();
        assert!(far.sites.iter().all(|s| s != CLIENT_SITE));
        let d = Duration::from_millis(15);
        assert_eq!(Topology::Near.server_delay(d), Duration::ZERO);
        assert_eq!(Topology::Far.server_delay(d), d);
    }
}
