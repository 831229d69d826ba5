//! `plumb bench speculation`: the set-up of seed 001 §5 (PBFT-CS, Fig. 4) for issue 16. One
//! client issues a sequence of *dependent* operations (each made from the previous result),
//! one at a time, and the run time is measured, against:
//!
//! - `unreplicated`: one process running the application directly ([`crate::unreplicated`]);
//! - `plumb`: a fresh u = 1, r = 1 cluster of `plumb node` processes, each node on its own
//!   loopback address, called through the normal client library, one operation at a time;
//! - `plumb-spec`: the same cluster, called through a speculative session
//!   (`plumb_speculation::session`): each operation goes on with execution replica 0's early
//!   reply, on as many lanes as a speculation group has (`SPEC_GROUP` client identities: the
//!   core allows one outstanding request per identity);
//!
//! in three topologies under plumb's emulated wide-area network (docs/wan-emulation.md):
//!
//! - `lan`: no added delay;
//! - `near`: node 0 (which hosts the view-0 primary) at the client's site, the other nodes
//!   `delay` away from it and from the client; the unreplicated server at the client's site;
//! - `far`: every node at a site of its own, `delay` from the client and from each other; the
//!   unreplicated server `delay` away.
//!
//! And a `peak` row per system: many closed-loop callers on `lan`, operations per second; the
//! callers run on clients of two identities each, with speculation (`plumb-spec`: a session
//! per client) or without (`plumb`: two callers per client).
//!
//! Every system runs the same application, `specbench` behind the predicated-request shim
//! (`plumb_speculation::Speculative<SpecBench>`; the unreplicated server too), so the
//! figures differ only in how the operations reach it. A workload is a [`DependentOps`].

use crate::app::BenchApp;
use crate::plumb::{Placement, Plumb, PlumbShape};
use crate::prophecy::loadavg;
use crate::target::{BoxFuture, ServerProcess};
use crate::unreplicated::UnreplicatedClient;
use plumb_cluster::WanEntry;
use plumb_gateway::Pool;
use plumb_speculation::app::{create_op, incr_op, read_op, write_op, FsReply, FsStatus, IncrReply};
use plumb_speculation::session::Session;
use plumb_speculation::{SpecOp, SpecReply, SPEC_GROUP};
use plumb_wire::ExecId;
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
    PlumbSpec,
    /// `plumb` with tentative agreement (docs/protocol.md): a round of COMMITs fewer before a
    /// batch executes.
    PlumbTentative,
}

impl System {
    pub const ALL: [System; 4] = [
        System::Unreplicated,
        System::Plumb,
        System::PlumbSpec,
        System::PlumbTentative,
    ];

    pub fn name(self) -> &'static str {
        match self {
            System::Unreplicated => "unreplicated",
            System::Plumb => "plumb",
            System::PlumbSpec => "plumb-spec",
            System::PlumbTentative => "plumb-tentative",
        }
    }

    pub fn parse(text: &str) -> Result<System, String> {
        System::ALL
            .into_iter()
            .find(|s| s.name() == text.trim())
            .ok_or_else(|| {
                format!(
                    "unknown system `{text}`: use unreplicated, plumb, plumb-spec or plumb-tentative"
                )
            })
    }
}

/// Lanes (client identities of one speculation group) of a `plumb-spec` session in the
/// single-client runs: as many as a group has, so the chain can go on as far as possible
/// past operations that have not committed.
const SPEC_LANES: u32 = SPEC_GROUP;
/// Identities of each client in the peak row: a `plumb-spec` session's lanes, or two `plumb`
/// callers sharing a client.
const PEAK_SPEC_LANES: u32 = 2;

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
/// `plumb_client::net::Client`), every operation ordered, one at a time.
struct PoolCaller(Arc<Pool>);

impl Caller for PoolCaller {
    fn call(&self, op: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        Box::pin(async move { self.0.call(op, false).await.map_err(|e| e.to_string()) })
    }
}

/// The client library on identities of its own, every operation ordered.
struct ClientCaller(plumb_client::net::Client);

impl Caller for ClientCaller {
    fn call(&self, op: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        Box::pin(async move { self.0.invoke(op).await.map_err(|e| e.to_string()) })
    }
}

/// A sequence of dependent operations: each is made from the result of the one before.
/// Operations are `specbench`'s (`plumb_speculation::app`); results its replies (the
/// `Executed` payload).
pub trait DependentOps: Send + Sync {
    /// The workload's name in the table and the csv.
    fn name(&self) -> &'static str;
    /// The first operation (`previous` is `None`), or the next one given the previous
    /// operation's result; an error if that result is not what the sequence expects.
    fn next(&mut self, previous: Option<&[u8]>) -> Result<Vec<u8>, String>;
    /// A copy, for a speculative chain's checkpoints.
    fn boxed(&self) -> Box<dyn DependentOps>;
}

/// The workloads by name.
pub const WORKLOADS: [&str; 2] = ["counter", "files"];

/// Workload `name`, on a counter or directory of its own under `tag` (so runs never see each
/// other's state).
pub fn workload(name: &str, tag: &str) -> Result<Box<dyn DependentOps>, String> {
    match name.trim() {
        "counter" => Ok(Box::new(Counter {
            counter: u32::from_le_bytes(
                plumb_crypto::Digest::of(tag.as_bytes()).0[..4]
                    .try_into()
                    .expect("4 bytes"),
            ),
            token: 0,
            expect: 0,
        })),
        "files" => Ok(Box::new(Files {
            dir: format!("/{}", tag.replace('/', "-")),
            step: 0,
            data: Vec::new(),
        })),
        other => Err(format!("unknown workload `{other}`: use counter or files")),
    }
}

/// Increments of one counter, each carrying the token the previous one answered (seed 001
/// §5.1's counter: "each reply contains a token that the client must present on its next
/// request"); each value must be the previous plus one.
#[derive(Clone)]
struct Counter {
    counter: u32,
    token: u64,
    expect: u64,
}

impl DependentOps for Counter {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn next(&mut self, previous: Option<&[u8]>) -> Result<Vec<u8>, String> {
        if let Some(reply) = previous {
            match IncrReply::decode(reply) {
                Some(IncrReply::Done { value, token }) if value == self.expect => {
                    self.token = token
                }
                other => return Err(format!("counter: expected {}, got {other:?}", self.expect)),
            }
        }
        self.expect += 1;
        Ok(incr_op(self.counter, self.token))
    }

    fn boxed(&self) -> Box<dyn DependentOps> {
        Box::new(self.clone())
    }
}

/// A small file-system-like sequence, three operations per file: create it, write into it
/// what the previous file held plus one byte, read it back; so every write depends on the
/// read before it, and every read is checked against its write.
#[derive(Clone)]
struct Files {
    dir: String,
    step: u64,
    /// What the current file must hold.
    data: Vec<u8>,
}

/// Bytes a file keeps from the previous one (the write stays small).
const FILE_BYTES: usize = 64;

impl DependentOps for Files {
    fn name(&self) -> &'static str {
        "files"
    }

    fn next(&mut self, previous: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let path = |file: u64| format!("{}/f{file}", self.dir);
        if let (Some(reply), Some(last)) = (previous, self.step.checked_sub(1)) {
            let file = last / 3;
            // A read's reply is shaped by its op; a create's and a write's are a status.
            let op = if last % 3 == 2 {
                read_op(&path(file))
            } else {
                Vec::new()
            };
            match (last % 3, FsReply::decode(&op, reply)) {
                (0 | 1, Some(FsReply::Status(FsStatus::Ok))) => {}
                (2, Some(FsReply::Data(d))) if d == self.data => {}
                (_, other) => {
                    return Err(format!(
                        "files: step {last} (file {file}) answered {other:?}; it holds {:?}",
                        self.data
                    ))
                }
            }
        }
        let file = self.step / 3;
        let op = match self.step % 3 {
            0 => create_op(&path(file)),
            1 => {
                self.data.push(file as u8);
                if self.data.len() > FILE_BYTES {
                    self.data.remove(0);
                }
                write_op(&path(file), 0, &self.data)
            }
            _ => read_op(&path(file)),
        };
        self.step += 1;
        Ok(op)
    }

    fn boxed(&self) -> Box<dyn DependentOps> {
        Box::new(self.clone())
    }
}

/// A speculative chain's state: the workload and the operation it issues next, or what went
/// wrong (kept until the end: a wrong early reply's error is rolled back with it).
struct ChainState {
    ops: Box<dyn DependentOps>,
    op: Vec<u8>,
    error: Option<String>,
}

impl Clone for ChainState {
    fn clone(&self) -> ChainState {
        ChainState {
            ops: self.ops.boxed(),
            op: self.op.clone(),
            error: self.error.clone(),
        }
    }
}

impl ChainState {
    fn start(mut ops: Box<dyn DependentOps>) -> Result<ChainState, String> {
        let op = ops.next(None)?;
        Ok(ChainState {
            ops,
            op,
            error: None,
        })
    }

    fn apply(&self, reply: &SpecReply) -> ChainState {
        let mut next = self.clone();
        if next.error.is_some() {
            return next;
        }
        let step = match reply {
            SpecReply::Executed(bytes) => next.ops.next(Some(bytes)),
            other => Err(format!("the replicas answered {other:?}")),
        };
        match step {
            Ok(op) => next.op = op,
            Err(e) => next.error = Some(e),
        }
        next
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
    /// `plumb-spec`: one speculative session per caller instead.
    sessions: Vec<Session>,
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
                    sessions: Vec::new(),
                    cluster: None,
                    _servers: Box::new(server),
                })
            }
            System::Plumb | System::PlumbSpec | System::PlumbTentative => {
                let shape = PlumbShape {
                    u: 1,
                    r: 1,
                    split: false,
                    tentative: system == System::PlumbTentative,
                    exec: None,
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
                // Client ids `0..` go to clients of consecutive identities, reserved ahead of
                // the harness's pool (which keeps one identity): the single-client `plumb-spec`
                // run takes a whole speculation group as its session's lanes; the peak row
                // gives each caller pair (a session, or for `plumb` two callers sharing a
                // client) two identities. Pairs never straddle a group since groups are even.
                let peak = callers > 1;
                let (clients, lanes) = match (system, peak) {
                    (System::PlumbSpec, false) => (1, SPEC_LANES),
                    (System::PlumbSpec, true) => (callers as u32, PEAK_SPEC_LANES),
                    (_, true) => ((callers as u32).div_ceil(PEAK_SPEC_LANES), PEAK_SPEC_LANES),
                    (_, false) => (0, 0),
                };
                let (pool_clients, reserved) = (1, clients * lanes);
                let plumb = Plumb::start(
                    Arc::new(crate::app::SpecBenchApp) as Arc<dyn BenchApp>,
                    &self.exe,
                    &dir,
                    &shape,
                    port,
                    pool_clients,
                    reserved,
                    None,
                    &placement,
                )
                .await?;
                let pool = plumb.pool().clone();
                let (out, sessions) = match system {
                    System::PlumbSpec => {
                        let mut sessions = Vec::new();
                        for k in 0..clients {
                            let client =
                                lane_client(plumb.cluster(), &dir, k * lanes, lanes).await?;
                            sessions
                                .push(Session::new(client, ExecId(0)).map_err(|e| e.to_string())?);
                        }
                        (Vec::new(), sessions)
                    }
                    // The peak row's callers run on clients shaped as `plumb-spec`'s sessions
                    // (a client per two identities), so the two rows differ only in
                    // speculation.
                    _ if peak => {
                        let mut out: Vec<Arc<dyn Caller>> = Vec::new();
                        for k in 0..clients {
                            let client =
                                lane_client(plumb.cluster(), &dir, k * lanes, lanes).await?;
                            for _ in 0..lanes {
                                out.push(Arc::new(ClientCaller(client.clone())));
                            }
                        }
                        (out, Vec::new())
                    }
                    _ => (
                        vec![Arc::new(PoolCaller(pool.clone())) as Arc<dyn Caller>],
                        Vec::new(),
                    ),
                };
                Ok(Running {
                    callers: out,
                    sessions,
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
                let callers = match (peak, system) {
                    (false, _) => 1,
                    // As many client identities as the other systems' callers.
                    (true, System::PlumbSpec) => {
                        (self.peak_clients / PEAK_SPEC_LANES as usize).max(1)
                    }
                    (true, _) => self.peak_clients,
                };
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
                for name in &self.workloads {
                    let tag = format!("{}-{}", system.name(), topology.name());
                    let timed = match (running.sessions.first(), running.callers.first()) {
                        (Some(session), _) => self.speculative(session, name, &tag).await,
                        (None, Some(caller)) => self.dependent(&**caller, name, &tag).await,
                        (None, None) => Err("nothing to call the system with".to_string()),
                    };
                    match timed {
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
                    let measured = if running.sessions.is_empty() {
                        self.peak(&running.callers, system).await
                    } else {
                        self.peak_speculative(&running.sessions).await
                    };
                    match measured {
                        Ok((ops, run_s)) => {
                            if self.progress {
                                eprintln!(
                                    "  {} peak: {ops} ops in {run_s:.2} s with {} callers",
                                    system.name(),
                                    running.callers.len().max(running.sessions.len())
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

    /// Warm up, then time `self.ops` dependent operations of workload `name` as one
    /// speculative chain.
    async fn speculative(
        &self,
        session: &Session,
        name: &str,
        tag: &str,
    ) -> Result<(u64, f64), String> {
        spec_chain(
            session,
            workload(name, &format!("{tag}-warmup"))?,
            self.warmup_ops,
        )
        .await?;
        let start = Instant::now();
        let stats = spec_chain(session, workload(name, tag)?, self.ops).await?;
        let run_s = start.elapsed().as_secs_f64();
        if self.progress {
            eprintln!(
                "    {name}: {} issued, {} went on with early replies, {} waited, {} rollbacks ({} on a wrong early reply)",
                stats.issued, stats.speculated, stats.waited, stats.rollbacks, stats.wrong_early
            );
        }
        Ok((self.ops, run_s))
    }

    /// The measuring window both peak rows share: `tasks` count into `window` (see
    /// [`PeakWindow`]). After a second of warm-up they count for `peak_duration`, then stop;
    /// (operations counted, seconds measured) once every task (`who`) has ended.
    async fn measure_peak(
        &self,
        window: &PeakWindow,
        tasks: Vec<tokio::task::JoinHandle<Result<(), String>>>,
        who: &str,
    ) -> Result<(u64, f64), String> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        window.measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        tokio::time::sleep(self.peak_duration).await;
        window.stop.store(true, Ordering::Relaxed);
        let run_s = start.elapsed().as_secs_f64();
        let ops = window.done.load(Ordering::Relaxed);
        for t in tasks {
            t.await.map_err(|e| format!("a {who} failed: {e}"))??;
        }
        Ok((ops, run_s))
    }

    /// The peak row of `plumb-spec`: every session runs speculative chains of counter
    /// increments for `peak_duration` after a second of warm-up; confirmed steps count.
    async fn peak_speculative(&self, sessions: &[Session]) -> Result<(u64, f64), String> {
        let window = PeakWindow::default();
        let mut tasks = Vec::new();
        for (i, session) in sessions.iter().enumerate() {
            let session = session.clone();
            let window = window.clone();
            tasks.push(tokio::spawn(async move {
                let mut round = 0u64;
                while window.running() {
                    // Short chains, so the count stops close to the end of the window.
                    let ops = workload("counter", &format!("plumb-spec-peak-{i}-{round}"))?;
                    spec_chain(&session, ops, PEAK_CHAIN).await?;
                    window.completed(PEAK_CHAIN);
                    round += 1;
                }
                Ok::<(), String>(())
            }));
        }
        self.measure_peak(&window, tasks, "session").await
    }

    /// Closed-loop callers, each incrementing a counter of its own, for `peak_duration` after
    /// a second of warm-up.
    async fn peak(
        &self,
        callers: &[Arc<dyn Caller>],
        system: System,
    ) -> Result<(u64, f64), String> {
        let window = PeakWindow::default();
        let mut tasks = Vec::new();
        for (i, caller) in callers.iter().enumerate() {
            let caller = caller.clone();
            let window = window.clone();
            let mut ops = workload("counter", &format!("{}-peak-{i}", system.name()))?;
            tasks.push(tokio::spawn(async move {
                let mut previous: Option<Vec<u8>> = None;
                while window.running() {
                    let op = ops.next(previous.as_deref())?;
                    let reply = call_plain(&*caller, op).await?;
                    window.completed(1);
                    previous = Some(reply);
                }
                Ok::<(), String>(())
            }));
        }
        self.measure_peak(&window, tasks, "caller").await
    }
}

/// What the tasks of a peak row share: whether the measuring window is open, whether to stop,
/// and the operations completed inside the window.
#[derive(Clone, Default)]
struct PeakWindow {
    measuring: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
}

impl PeakWindow {
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }

    /// Counts `n` completed operations if the window is open and not yet closed.
    fn completed(&self, n: u64) {
        if self.measuring.load(Ordering::Relaxed) && !self.stop.load(Ordering::Relaxed) {
            self.done.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// Longest one operation may take before the run is given up.
const OP_TIMEOUT: Duration = Duration::from_secs(30);

async fn call(caller: &dyn Caller, op: Vec<u8>) -> Result<Vec<u8>, String> {
    tokio::time::timeout(OP_TIMEOUT, caller.call(op))
        .await
        .map_err(|_| format!("an operation took more than {} s", OP_TIMEOUT.as_secs()))?
}

/// Steps of each chain in the `plumb-spec` peak row.
const PEAK_CHAIN: u64 = 20;

/// Run `op` (a `specbench` operation) without speculation, as the shim's plain envelope, and
/// return its `Executed` payload.
async fn call_plain(caller: &dyn Caller, op: Vec<u8>) -> Result<Vec<u8>, String> {
    let reply = call(caller, SpecOp::plain(op).encode()).await?;
    match SpecReply::decode(&reply) {
        Ok(SpecReply::Executed(bytes)) => Ok(bytes),
        other => Err(format!("expected an executed reply, got {other:?}")),
    }
}

/// `n` steps of `ops` as one speculative chain of `session`; the final state checked.
async fn spec_chain(
    session: &Session,
    ops: Box<dyn DependentOps>,
    n: u64,
) -> Result<plumb_speculation::ChainStats, String> {
    let init = ChainState::start(ops)?;
    let timed = tokio::time::timeout(
        OP_TIMEOUT.saturating_mul(n.max(1) as u32),
        session.run_chain(n, init, |_, s: &ChainState| s.op.clone(), ChainState::apply),
    )
    .await
    .map_err(|_| "the speculative chain did not finish in time".to_string())?;
    let (state, stats) = timed.map_err(|e| e.to_string())?;
    match state.error {
        Some(e) => Err(e),
        None => Ok(stats),
    }
}

/// A client of the `lanes` identities from `first` on (within one speculation group, so a
/// session may run on them; the bench's sessions speculate on execution replica 0: node 0,
/// beside the view-0 primary, and at the client's site `near`).
async fn lane_client(
    cluster: &plumb_cluster::Cluster,
    dir: &std::path::Path,
    first: u32,
    lanes: u32,
) -> Result<plumb_client::net::Client, String> {
    debug_assert!(lanes == 0 || first / SPEC_GROUP == (first + lanes - 1) / SPEC_GROUP);
    let identities = (first..first + lanes)
        .map(|c| plumb_client::net::Identity::issued(cluster, c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let options = plumb_client::net::ClientOptions {
        record: plumb_client::net::RecordLocation::Dir(dir.join(format!("lanes-{first}"))),
        connect_timeout: Some(Duration::from_secs(30)),
        op_timeout: Some(OP_TIMEOUT),
    };
    plumb_client::net::Client::connect_with(cluster, identities, options)
        .await
        .map_err(|e| e.to_string())
}

/// `n` operations of `ops`, each after the previous one's result, the last result checked too.
async fn run_chain(caller: &dyn Caller, ops: &mut dyn DependentOps, n: u64) -> Result<(), String> {
    let mut previous: Option<Vec<u8>> = None;
    for _ in 0..n {
        let op = ops.next(previous.as_deref())?;
        previous = Some(call_plain(caller, op).await?);
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
        "{:<15} {:<8} {:<8} {:>7} {:>9} {:>10} {:>8}\n",
        "system", "workload", "topology", "ops", "run s", "ops/s", "ms/op"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<15} {:<8} {:<8} {:>7} {:>9.3} {:>10.1} {:>8.3}\n",
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
        "{:<15} {:<8} {:<8} {:>28}\n",
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
            "{:<15} {:<8} {:<8} {:>28}\n",
            r.system, r.workload, r.topology, text
        ));
    }
    // Speculation and tentative agreement against the same cluster without them: the speed-up
    // of a run, and the peak throughput kept.
    for r in rows.iter().filter(|r| {
        r.system == System::PlumbSpec.name() || r.system == System::PlumbTentative.name()
    }) {
        let Some(b) = find(System::Plumb.name(), r.topology, &r.workload) else {
            continue;
        };
        let text = if r.topology == "peak" && b.ops_per_s > 0.0 {
            format!("{:.2}x plumb's throughput", r.ops_per_s / b.ops_per_s)
        } else if r.run_s > 0.0 {
            format!("{:.2}x faster than plumb", b.run_s / r.run_s)
        } else {
            continue;
        };
        out.push_str(&format!(
            "{:<15} {:<8} {:<8} {:>28}\n",
            r.system, r.workload, r.topology, text
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_app::{Application, Command, NonDeterminism};
    use plumb_speculation::SpecBench;
    use plumb_wire::{Life, ReqNo, Seq};

    /// Run a workload against the application itself, `n` steps.
    fn drive(name: &str, n: usize) -> Result<(), String> {
        let mut app = SpecBench::default();
        let mut ops = workload(name, "t")?;
        let mut previous: Option<Vec<u8>> = None;
        for seq in 1..=n as u64 {
            let op = ops.next(previous.as_deref())?;
            let cmd = Command::new(1, Life(0), ReqNo(seq), &op);
            let out = app.execute(Seq(seq), &[cmd], NonDeterminism { time: seq, seed: 0 });
            previous = Some(out.replies[0].clone());
        }
        ops.next(previous.as_deref()).map(|_| ())
    }

    #[test]
    fn workloads_check_every_result_against_the_application() {
        drive("counter", 50).unwrap();
        drive("files", 60).unwrap();
    }

    #[test]
    fn counter_refuses_a_wrong_value() {
        let mut c = workload("counter", "t").unwrap();
        c.next(None).unwrap();
        let wrong = IncrReply::Done { value: 7, token: 1 }.encode();
        let e = c.next(Some(&wrong)).unwrap_err();
        assert!(e.contains("expected 1"), "{e}");
    }

    #[test]
    fn files_refuse_a_read_that_does_not_return_the_write() {
        let mut f = workload("files", "t").unwrap();
        let ok = [FsStatus::Ok as u8];
        f.next(None).unwrap(); // create
        f.next(Some(&ok)).unwrap(); // write
        f.next(Some(&ok)).unwrap(); // read
        let mut wrong = vec![FsStatus::Ok as u8];
        wrong.extend_from_slice(b"not what was written");
        assert!(f.next(Some(&wrong)).is_err());
    }

    #[test]
    fn a_chain_state_keeps_the_first_error() {
        let s = ChainState::start(workload("counter", "t").unwrap()).unwrap();
        let bad = s.apply(&SpecReply::Aborted { predicate: 0 });
        assert!(bad.error.is_some());
        let good = s.apply(&SpecReply::Executed(
            IncrReply::Done { value: 1, token: 9 }.encode(),
        ));
        assert!(good.error.is_none());
        assert_eq!(good.op, incr_op(good_counter(&s), 9));
    }

    fn good_counter(s: &ChainState) -> u32 {
        u32::from_le_bytes(s.op[1..5].try_into().unwrap())
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
