//! `plumb bench zz` (docs/zz.md, seed 002 §5): what sleeping execution replicas save and what
//! a wake-up costs, on `burnkv` (the key-value store, each operation burning a settable,
//! deterministic amount of CPU) at u=1, r=1: two active execution replicas of three.
//!
//! - **Execution CPU per operation** (mode `zz` against `all`, one fresh cluster each, one
//!   after the other): closed-loop writers for a set time; the CPU time of the execution
//!   stages' threads (`plumb-e<i>` and their store threads, read from `/proc`, whole nodes not
//!   counted) over the operations done.
//! - **Recovery** (mode `zz`: the woken replica loads the stable checkpoint on demand, against
//!   `eager`: it transfers every object first): a ZZ cluster is filled to a state size, brought
//!   to a stable checkpoint, then `dirty`% of its state is written again; the node of active e1
//!   (of e0 if e1's hosts the primary) is killed and a new write timed from the kill to its reply, which needs the sleeper e2's (the
//!   client accepts `r + 1 = 2` matching replies, and e1 gives none).
//! - **Latency**: p50 of a few closed-loop writers over 5 s before the fault and over the 5 s
//!   after the recovery (while e2 may still be filling its state in the background).
//! - **After a wake undone** (mode `zz-after-wake`): a ZZ cluster under the CPU rows' load has
//!   an active's node killed, which wakes e2, and restarted, which puts e2 back to sleep once
//!   the group is in step (docs/zz.md "Back to sleep"); then execution CPU per operation as in
//!   the CPU rows: ZZ's saving is back.

use crate::app::BenchApp;
use crate::burnkv::BurnKvBench;
use crate::plumb::{Placement, Plumb, PlumbShape};
use plumb_cluster::ProtocolOverrides;
use plumb_config::MAX_CHECKPOINT_INTERVAL;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// ZZ: max(u,r)+1 execution replicas execute; a woken one loads on demand.
    Zz,
    /// Every execution replica executes.
    All,
    /// ZZ, the woken replica transferring the whole state before it executes.
    Eager,
    /// ZZ, measured after a crash woke the sleeper and the restarted active put it back to
    /// sleep.
    ZzAfterWake,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Zz => "zz",
            Mode::All => "all",
            Mode::Eager => "eager",
            Mode::ZzAfterWake => "zz-after-wake",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ZzBench {
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub base_port: u16,
    /// BLAKE3 rounds each measured operation burns, and the microseconds that took when
    /// calibrated.
    pub iterations: u32,
    pub burn_us: f64,
    /// Bytes per value.
    pub value_bytes: usize,
    /// CPU rows: closed-loop writers, and how long they are measured (after 1 s of warm-up).
    pub cpu_clients: usize,
    pub cpu_seconds: f64,
    /// Recovery rows: state sizes (bytes of values) and shares written since the checkpoint.
    pub sizes: Vec<u64>,
    pub dirty_pcts: Vec<u32>,
    /// Recovery rows: the loads compared (`zz`, `eager`).
    pub recovery_modes: Vec<Mode>,
    /// Closed-loop writers of the latency windows.
    pub latency_clients: usize,
    pub latency_seconds: f64,
    /// `zz_report_timeout_us` of the clusters (`None`: the default).
    pub report_timeout_us: Option<u64>,
    /// Every row measured this many times, the rows of one round before the next round's
    /// (so a slow stretch of the machine falls on every mode alike).
    pub rounds: u32,
    pub progress: bool,
}

/// How long a row waits for the cluster (a fill, a checkpoint, the reply after the fault).
pub const DEADLINE: Duration = Duration::from_secs(600);

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub mode: Mode,
    pub state_bytes: u64,
    pub dirty_pct: Option<u32>,
    /// From the kill to the reply of the write sent after it.
    pub recovery_ms: Option<f64>,
    /// From the kill to the sleeper's status saying it woke (polled every 2 ms): detection
    /// and the WAKE quorum; the rest of `recovery_ms` is the woken replica's recovery (seed
    /// 002's "recovery time" starts at detection).
    pub woken_ms: Option<f64>,
    pub exec_cpu_us_per_op: Option<f64>,
    /// Per execution replica: its stages' CPU seconds over the run (CPU rows).
    pub exec_cpu_s: Vec<f64>,
    pub ops: u64,
    pub p50_before_ms: Option<f64>,
    pub p50_after_ms: Option<f64>,
    /// The sleeper's `/status` line after the fault, and the node killed (recovery rows).
    pub sleeper: String,
    pub killed: Option<u16>,
    /// Fresh clusters whose sleeper woke before the fault, before this row's (recovery rows).
    pub early_wakes: u32,
    /// `zz-after-wake`: from the killed node's restart to the sleeper's status saying it is
    /// asleep again.
    pub asleep_again_ms: Option<f64>,
    /// The round it was measured in, from 1; 0 for a row of medians ([`medians`]).
    pub round: u32,
}

/// What [`ZzBench::wake_and_undo`] saw.
struct Undone {
    killed: u16,
    woken_ms: f64,
    asleep_again_ms: f64,
    sleeper: String,
}

/// A recovery row measured, or not: the sleeper woke before the fault (why).
pub enum Outcome {
    Measured(Row),
    WokenEarly(String),
}

/// Fresh clusters a recovery row is tried on.
pub const ATTEMPTS: usize = 3;

/// Execution replicas at u=1, r=1, and the one that sleeps in ZZ mode.
const EXEC_REPLICAS: u16 = 3;
const SLEEPER: u16 = 2;

/// Writes in flight while filling the state, and while writing the share of it that the fault
/// finds dirty: the latter many, so that 10% of 1 GiB (6 554 writes) packs into fewer batches
/// than the 512 of a checkpoint interval (256 at a time took 538 batches, filler included).
const FILL_WRITERS: u64 = 16;
const DIRTY_WRITERS: u64 = 512;

fn shape() -> PlumbShape {
    PlumbShape {
        u: 1,
        r: 1,
        split: false,
        tentative: false,
        exec: None,
    }
}

async fn sleeper_status(plumb: &Plumb) -> String {
    plumb
        .status(SLEEPER)
        .await
        .and_then(|s| s.get("sleeper")?.as_str().map(String::from))
        .unwrap_or_default()
}

/// Poll the sleeper's status every 2 ms until it starts with `prefix` (`Ok`, the status) or
/// `wait` has passed (`Err`, the last status).
async fn await_sleeper(plumb: &Plumb, prefix: &str, wait: Duration) -> Result<String, String> {
    let start = Instant::now();
    loop {
        let status = sleeper_status(plumb).await;
        if status.starts_with(prefix) {
            return Ok(status);
        }
        if start.elapsed() > wait {
            return Err(status);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The order replicas' ZZ counters (why they suspected actives, WAKEs sent), summed.
async fn zz_causes(plumb: &Plumb) -> String {
    let mut sums = std::collections::BTreeMap::<String, u64>::new();
    for node in 0..4 {
        for (key, v) in plumb.stage_events(node).await {
            if let Some(event) = key
                .split_once('/')
                .map(|(_, e)| e)
                .filter(|e| e.starts_with("zz-"))
            {
                *sums.entry(event.to_string()).or_default() += v;
            }
        }
    }
    let parts: Vec<String> = sums.iter().map(|(k, v)| format!("{k} {v}")).collect();
    parts.join(", ")
}

async fn status_u64(plumb: &Plumb, node: u16, field: &str) -> u64 {
    plumb
        .status(node)
        .await
        .and_then(|s| s.get(field)?.as_u64())
        .unwrap_or(0)
}

/// Closed-loop `clients` writing `value` to keys `{prefix}0..{prefix}{keys}` until `stop`,
/// each call's latency in milliseconds.
fn writers(
    plumb: &Plumb,
    app: &Arc<dyn BenchApp>,
    clients: usize,
    prefix: &'static str,
    keys: u64,
    value: &Arc<Vec<u8>>,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinSet<Result<Vec<f64>, String>> {
    let mut set = tokio::task::JoinSet::new();
    for w in 0..clients.max(1) as u64 {
        let (pool, app, value, stop) = (
            plumb.pool().clone(),
            app.clone(),
            value.clone(),
            stop.clone(),
        );
        set.spawn(async move {
            let mut latencies = Vec::new();
            let mut k = w;
            while !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                pool.call(app.write(&format!("{prefix}{}", k % keys), &value), false)
                    .await
                    .map_err(|e| format!("a write failed: {e}"))?;
                latencies.push(t0.elapsed().as_secs_f64() * 1e3);
                k += 7919;
            }
            Ok(latencies)
        });
    }
    set
}

async fn join_latencies(
    mut set: tokio::task::JoinSet<Result<Vec<f64>, String>>,
) -> Result<Vec<f64>, String> {
    let mut all = Vec::new();
    while let Some(done) = set.join_next().await {
        all.extend(done.map_err(|e| e.to_string())??);
    }
    Ok(all)
}

/// The median of `ms` (`None` if empty).
pub fn p50(ms: &mut [f64]) -> Option<f64> {
    ms.sort_by(f64::total_cmp);
    ms.get(ms.len() / 2).copied()
}

/// The rows measured in rounds, grouped by the row they measure (same mode, size and dirty
/// share), in first-seen order; no group is empty.
pub fn by_row(rows: &[Row]) -> Vec<Vec<&Row>> {
    let key = |r: &Row| (r.mode, r.state_bytes, r.dirty_pct);
    let mut groups: Vec<Vec<&Row>> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|g| key(g[0]) == key(r)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
}

/// One row per row measured in rounds ([`by_row`]), each figure the median over its rounds
/// ([`p50`]), early wakes summed, round 0.
pub fn medians(rows: &[Row]) -> Vec<Row> {
    by_row(rows).iter().map(|g| median_row(g)).collect()
}

/// The medians of one group of [`by_row`] (not empty).
pub fn median_row(of: &[&Row]) -> Row {
    let median = |f: &dyn Fn(&Row) -> Option<f64>| {
        p50(&mut of.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    let replicas = of.iter().map(|r| r.exec_cpu_s.len()).max().unwrap_or(0);
    let mut ops: Vec<u64> = of.iter().map(|r| r.ops).collect();
    ops.sort_unstable();
    Row {
        recovery_ms: median(&|r| r.recovery_ms),
        woken_ms: median(&|r| r.woken_ms),
        exec_cpu_us_per_op: median(&|r| r.exec_cpu_us_per_op),
        exec_cpu_s: (0..replicas)
            .filter_map(|i| median(&|r| r.exec_cpu_s.get(i).copied()))
            .collect(),
        ops: ops.get(ops.len() / 2).copied().unwrap_or(0),
        p50_before_ms: median(&|r| r.p50_before_ms),
        p50_after_ms: median(&|r| r.p50_after_ms),
        asleep_again_ms: median(&|r| r.asleep_again_ms),
        early_wakes: of.iter().map(|r| r.early_wakes).sum(),
        round: 0,
        ..of[0].clone()
    }
}

/// CPU seconds of each execution replica's stage threads, by replica index.
fn exec_cpu(plumb: &Plumb) -> Vec<f64> {
    let pids = plumb.node_pids();
    (0..EXEC_REPLICAS)
        .map(|e| {
            pids.get(usize::from(e)).map_or(0.0, |&pid| {
                crate::cpu::threads_cpu_seconds(pid, |name| {
                    name == format!("plumb-e{e}") || name == format!("e{e}-store")
                })
            })
        })
        .collect()
}

impl ZzBench {
    pub async fn run(&self) -> Result<Vec<Row>, String> {
        let mut rows = Vec::new();
        for round in 1..=self.rounds.max(1) {
            if self.progress && self.rounds > 1 {
                eprintln!("round {round} of {}", self.rounds);
            }
            // Each round's clusters in a directory of their own: the rows name theirs by
            // mode, size and attempt only.
            let bench = match self.rounds {
                0 | 1 => self.clone(),
                _ => ZzBench {
                    dir: self.dir.join(format!("round-{round}")),
                    ..self.clone()
                },
            };
            for row in bench.round().await? {
                rows.push(Row { round, ..row });
            }
        }
        Ok(rows)
    }

    /// Every row once. Ports start again at the base each round: the clusters of the round
    /// before are stopped, and a long run would otherwise count past the last port.
    async fn round(&self) -> Result<Vec<Row>, String> {
        let mut rows = Vec::new();
        let mut port = self.base_port;
        // `--cpu-seconds 0`: recovery rows only.
        for mode in [Mode::All, Mode::Zz, Mode::ZzAfterWake]
            .into_iter()
            .filter(|_| self.cpu_seconds > 0.0)
        {
            rows.push(self.cpu_row(mode, port).await?);
            port += 100;
        }
        for &size in &self.sizes {
            for &dirty in &self.dirty_pcts {
                for &mode in &self.recovery_modes {
                    // A sleeper woken before the fault (a hiccup of the loaded machine read
                    // as a late active) leaves nothing to measure: a fresh cluster, counted.
                    let mut early = Vec::new();
                    let row = loop {
                        let attempt = early.len() as u32;
                        let outcome = self.recovery_row(mode, size, dirty, attempt, port).await?;
                        port += 100;
                        match outcome {
                            Outcome::Measured(row) => break row,
                            Outcome::WokenEarly(why) if early.len() + 1 < ATTEMPTS => {
                                if self.progress {
                                    eprintln!("{why}; again on a fresh cluster");
                                }
                                early.push(why);
                            }
                            Outcome::WokenEarly(why) => {
                                return Err(format!("{why}, on all {ATTEMPTS} fresh clusters"))
                            }
                        }
                    };
                    rows.push(Row {
                        early_wakes: early.len() as u32,
                        ..row
                    });
                }
            }
        }
        Ok(rows)
    }

    async fn start(
        &self,
        mode: Mode,
        name: String,
        port: u16,
        checkpoint_interval: u64,
        dirty_writers: u64,
    ) -> Result<Plumb, String> {
        let app: Arc<dyn BenchApp> = Arc::new(BurnKvBench {
            iterations: self.iterations,
        });
        let placement = Placement {
            protocol: ProtocolOverrides {
                checkpoint_interval: Some(checkpoint_interval),
                zz: Some(mode != Mode::All),
                zz_report_timeout_us: self.report_timeout_us,
                load_objects_on_demand: Some(mode != Mode::Eager),
                ..ProtocolOverrides::default()
            },
            ..Placement::default()
        };
        // A client identity each, and 513 of them for every cluster took the CI-size run from
        // 27 to 206 s (five clusters): only the rows that write a dirty share have them.
        let clients =
            (self.cpu_clients + self.latency_clients + 17).max(dirty_writers as usize + 1) as u32;
        Plumb::start(
            app,
            &self.exe,
            &self.dir.join(name),
            &shape(),
            port,
            clients,
            0,
            None,
            &placement,
        )
        .await
    }

    async fn cpu_row(&self, mode: Mode, port: u16) -> Result<Row, String> {
        let mut plumb = self
            .start(mode, format!("cpu-{}", mode.name()), port, 128, 0)
            .await?;
        let app = plumb.app().clone();
        let value = Arc::new(vec![0x5a; self.value_bytes]);
        let stop = Arc::new(AtomicBool::new(false));
        let keys = 1024;
        let set = writers(&plumb, &app, self.cpu_clients, "c", keys, &value, &stop);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let undone = match mode {
            Mode::ZzAfterWake => {
                let undone = self.wake_and_undo(&mut plumb).await?;
                // What the woken replica had in flight when it paused (its last syncs, the
                // frames order replicas sent before they counted it asleep) is not the
                // steady state measured.
                tokio::time::sleep(Duration::from_secs(1)).await;
                Some(undone)
            }
            Mode::All | Mode::Zz | Mode::Eager => None,
        };
        let ops_before = status_u64(&plumb, 0, "requests_executed").await;
        let cpu_before = exec_cpu(&plumb);
        tokio::time::sleep(Duration::from_secs_f64(self.cpu_seconds)).await;
        let cpu_after = exec_cpu(&plumb);
        let ops = status_u64(&plumb, 0, "requests_executed").await - ops_before;
        // After a wake undone: whether the sleeper stayed asleep while measured.
        let mut undone = undone;
        if let Some(u) = undone.as_mut() {
            let now = sleeper_status(&plumb).await;
            if now != u.sleeper {
                u.sleeper = format!(
                    "{} (then: {now}; order replicas counted {})",
                    u.sleeper,
                    zz_causes(&plumb).await
                );
            }
            if self.progress {
                eprintln!("zz-after-wake: e{SLEEPER} while measured: {}", u.sleeper);
            }
        }
        stop.store(true, Ordering::Relaxed);
        let mut latencies = join_latencies(set).await?;
        let exec_cpu_s: Vec<f64> = cpu_after
            .iter()
            .zip(&cpu_before)
            .map(|(a, b)| a - b)
            .collect();
        let total: f64 = exec_cpu_s.iter().sum();
        if self.progress {
            eprintln!(
                "cpu {}: {ops} operations, execution stages {:?} CPU s",
                mode.name(),
                exec_cpu_s
            );
        }
        Ok(Row {
            mode,
            state_bytes: keys * self.value_bytes as u64,
            dirty_pct: None,
            recovery_ms: None,
            exec_cpu_us_per_op: (ops > 0).then(|| total * 1e6 / ops as f64),
            exec_cpu_s,
            ops,
            p50_before_ms: p50(&mut latencies),
            p50_after_ms: None,
            sleeper: undone.as_ref().map_or(String::new(), |u| u.sleeper.clone()),
            killed: undone.as_ref().map(|u| u.killed),
            woken_ms: undone.as_ref().map(|u| u.woken_ms),
            asleep_again_ms: undone.as_ref().map(|u| u.asleep_again_ms),
            early_wakes: 0,
            round: 0,
        })
    }

    /// Under load: kill the node of an active that does not host the primary, wait for the
    /// sleeper to wake, restart the node, and wait for the sleeper to be asleep again.
    async fn wake_and_undo(&self, plumb: &mut Plumb) -> Result<Undone, String> {
        const WAIT: Duration = Duration::from_secs(120);
        // A sleeper a hiccup of the loaded machine woke goes back to sleep by itself: wait.
        if let Err(sleeping) = await_sleeper(plumb, "asleep", WAIT).await {
            return Err(format!(
                "zz-after-wake: the sleeper e{SLEEPER} woke before the fault and stayed awake {WAIT:?} ({sleeping}; order replicas counted {})",
                zz_causes(plumb).await
            ));
        }
        let primary = status_u64(plumb, 0, "primary_node").await;
        let killed: u16 = if primary == 1 { 0 } else { 1 };
        plumb.kill(killed)?;
        let fault = Instant::now();
        if let Err(status) = await_sleeper(plumb, "woken", WAIT).await {
            return Err(format!(
                "zz-after-wake: e{SLEEPER} not woken {WAIT:?} after node {killed} was killed ({status})"
            ));
        }
        let woken_ms = fault.elapsed().as_secs_f64() * 1e3;
        plumb.restart(killed)?;
        let restart = Instant::now();
        let sleeper = match await_sleeper(plumb, "asleep again", WAIT).await {
            Ok(status) => status,
            Err(status) => {
                return Err(format!(
                    "zz-after-wake: e{SLEEPER} not asleep again {WAIT:?} after node {killed} restarted ({status}; order replicas counted {})",
                    zz_causes(plumb).await
                ))
            }
        };
        let asleep_again_ms = restart.elapsed().as_secs_f64() * 1e3;
        if self.progress {
            eprintln!(
                "zz-after-wake: node {killed} killed, e{SLEEPER} woken after {woken_ms:.0} ms; restarted, e{SLEEPER} asleep again after {asleep_again_ms:.0} ms"
            );
        }
        Ok(Undone {
            killed,
            woken_ms,
            asleep_again_ms,
            sleeper,
        })
    }

    /// Writes `value` to keys `{prefix}{from..to}` with 16 writers, without burn.
    async fn fill(
        &self,
        plumb: &Plumb,
        prefix: &str,
        from: u64,
        to: u64,
        value: &Arc<Vec<u8>>,
        writers: u64,
    ) -> Result<(), String> {
        let plain: Arc<dyn BenchApp> = Arc::new(BurnKvBench { iterations: 0 });
        let mut set = tokio::task::JoinSet::new();
        for w in 0..writers {
            let (pool, app, value, prefix) = (
                plumb.pool().clone(),
                plain.clone(),
                value.clone(),
                prefix.to_string(),
            );
            set.spawn(async move {
                let mut k = from + w;
                while k < to {
                    pool.call(app.write(&format!("{prefix}{k}"), &value), false)
                        .await
                        .map_err(|e| format!("filling the state: {e}"))?;
                    k += writers;
                }
                Ok::<(), String>(())
            });
        }
        while let Some(done) = set.join_next().await {
            done.map_err(|e| e.to_string())??;
        }
        Ok(())
    }

    async fn recovery_row(
        &self,
        mode: Mode,
        size: u64,
        dirty: u32,
        attempt: u32,
        port: u16,
    ) -> Result<Outcome, String> {
        let keys = (size / self.value_bytes.max(1) as u64).max(1);
        let dirty_keys = keys * u64::from(dirty) / 100;
        // The dirty writes must come after the stable checkpoint and before the next one. The
        // interval is at most 512 (a view change re-votes two intervals at once,
        // plumb_config::MAX_CHECKPOINT_INTERVAL), so they go DIRTY_WRITERS at a time, many to
        // a batch; a checkpoint among them voids the row (checked below).
        let interval = (2 * dirty_keys + 256)
            .next_power_of_two()
            .min(MAX_CHECKPOINT_INTERVAL);
        let name = format!("recovery-{}-{}-{dirty}-{attempt}", mode.name(), size >> 20);
        let dirty_writers = if dirty_keys > 0 { DIRTY_WRITERS } else { 0 };
        let mut plumb = self
            .start(mode, name, port, interval, dirty_writers)
            .await?;
        let app = plumb.app().clone();
        let value = Arc::new(vec![0x11; self.value_bytes]);
        let started = Instant::now();
        self.fill(&plumb, "k", 0, keys, &value, FILL_WRITERS)
            .await?;
        if self.progress {
            eprintln!(
                "{} {} MiB {dirty}%: {keys} keys in {:.1} s",
                mode.name(),
                size >> 20,
                started.elapsed().as_secs_f64()
            );
        }
        // Before the fault: the latency window (its writes go into the checkpoint below).
        let stop = Arc::new(AtomicBool::new(false));
        let set = writers(&plumb, &app, self.latency_clients, "p", 64, &value, &stop);
        tokio::time::sleep(Duration::from_secs_f64(self.latency_seconds)).await;
        stop.store(true, Ordering::Relaxed);
        let mut before = join_latencies(set).await?;
        // A stable checkpoint that covers everything so far: small writes, one at a time (one
        // batch each), until it comes, looked for every few so that few batches follow it.
        let covered = status_u64(&plumb, 0, "last_executed").await;
        let deadline = Instant::now() + DEADLINE;
        let plain = BurnKvBench { iterations: 0 };
        while status_u64(&plumb, 0, "stable_checkpoint").await < covered {
            if Instant::now() > deadline {
                return Err(format!(
                    "no stable checkpoint past batch {covered} within {DEADLINE:?}"
                ));
            }
            for _ in 0..4 {
                plumb
                    .pool()
                    .call(plain.write("filler", b"f"), false)
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
        let stable = status_u64(&plumb, 0, "stable_checkpoint").await;
        let first_dirty = status_u64(&plumb, 0, "last_executed").await + 1;
        let dirty_value = Arc::new(vec![0x22; self.value_bytes]);
        self.fill(
            &plumb,
            "k",
            0,
            dirty_keys,
            &dirty_value,
            dirty_writers.max(1),
        )
        .await?;
        let executed = status_u64(&plumb, 0, "last_executed").await;
        if executed >= stable + interval {
            return Err(format!("{dirty}% of the state took batches {first_dirty} to {executed}, past the next checkpoint at {} (interval {interval}): the row would not be what it says", stable + interval));
        }
        if self.progress {
            eprintln!(
                "{} {} MiB {dirty}%: {dirty_keys} keys written again in batches {first_dirty} to {executed}, after the stable checkpoint at {stable} (interval {interval})",
                mode.name(),
                size >> 20,
            );
        }
        // The fault, and the first write after it.
        let sleeping = sleeper_status(&plumb).await;
        if sleeping != "asleep" {
            return Ok(Outcome::WokenEarly(format!(
                "{} {} MiB {dirty}%: the sleeper e{SLEEPER} was woken before the fault ({sleeping}; order replicas counted {})",
                mode.name(),
                size >> 20,
                zz_causes(&plumb).await
            )));
        }
        // An active's node that does not host the primary: a view change is not what this
        // measures.
        let primary = status_u64(&plumb, 0, "primary_node").await;
        let faulty: u16 = if primary == 1 { 0 } else { 1 };
        plumb.kill(faulty)?;
        let fault = Instant::now();
        // The write after the fault, and meanwhile the sleeper's status every few
        // milliseconds: when it woke splits detection from recovery proper.
        let probe = {
            let (pool, op) = (plumb.pool().clone(), app.write("probe", &value));
            tokio::spawn(async move { pool.call(op, false).await })
        };
        let mut woken = None;
        // With --progress, when the woken replica executed the first dirty batch, half of
        // them and the last: where recovery spends its time.
        let marks = [first_dirty, (first_dirty + executed) / 2, executed];
        let mut reached: Vec<Option<Duration>> = vec![None; marks.len()];
        while !probe.is_finished() && fault.elapsed() < DEADLINE {
            let status = plumb.status(SLEEPER).await;
            let field = |f: &str| status.as_ref().and_then(|s| s.get(f).cloned());
            let awake = field("sleeper")
                .is_some_and(|v| v.as_str().is_some_and(|s| s.starts_with("woken")));
            if woken.is_none() && awake {
                woken = Some(fault.elapsed());
            }
            let last = field("last_executed").and_then(|v| v.as_u64()).unwrap_or(0);
            for (mark, at) in marks.iter().zip(reached.iter_mut()) {
                if at.is_none() && awake && last >= *mark {
                    *at = Some(fault.elapsed());
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if !probe.is_finished() {
            probe.abort();
            return Err(format!("no reply within {DEADLINE:?} of the fault"));
        }
        probe
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("the write after the fault failed: {e}"))?;
        let recovery = fault.elapsed();
        let sleeper = sleeper_status(&plumb).await;
        // After: the latency window.
        let stop = Arc::new(AtomicBool::new(false));
        let set = writers(&plumb, &app, self.latency_clients, "p", 64, &value, &stop);
        tokio::time::sleep(Duration::from_secs_f64(self.latency_seconds)).await;
        stop.store(true, Ordering::Relaxed);
        let mut after = join_latencies(set).await?;
        if self.progress {
            eprintln!(
                "{} {} MiB {dirty}%: node {faulty} killed; e{SLEEPER} woken after {}, the reply after {:.0} ms; e{SLEEPER}: {sleeper}",
                mode.name(),
                size >> 20,
                woken.map_or("?".to_string(), |w| format!("{:.0} ms", w.as_secs_f64() * 1e3)),
                recovery.as_secs_f64() * 1e3
            );
        }
        if self.progress {
            let ms = |d: &Option<Duration>| {
                d.map_or("-".to_string(), |d| {
                    format!("{:.0} ms", d.as_secs_f64() * 1e3)
                })
            };
            let counted: Vec<String> = plumb
                .stage_events(SLEEPER)
                .await
                .into_iter()
                .filter(|(k, _)| {
                    ["on-demand", "fetch", "load", "objects", "learn", "drop-"]
                        .iter()
                        .any(|p| k.split_once('/').is_some_and(|(_, e)| e.starts_with(p)))
                })
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let timeline = if dirty_keys > 0 {
                format!(
                    "executed dirty batch {} at {}, {} at {}, {} at {}; ",
                    marks[0],
                    ms(&reached[0]),
                    marks[1],
                    ms(&reached[1]),
                    marks[2],
                    ms(&reached[2]),
                )
            } else {
                String::new()
            };
            eprintln!(
                "{} {} MiB {dirty}%: e{SLEEPER} {timeline}counted: {}",
                mode.name(),
                size >> 20,
                counted.join(", ")
            );
        }
        Ok(Outcome::Measured(Row {
            mode,
            state_bytes: size,
            dirty_pct: Some(dirty),
            recovery_ms: Some(recovery.as_secs_f64() * 1e3),
            woken_ms: woken.map(|w| w.as_secs_f64() * 1e3),
            exec_cpu_us_per_op: None,
            exec_cpu_s: Vec::new(),
            ops: 0,
            p50_before_ms: p50(&mut before),
            p50_after_ms: p50(&mut after),
            sleeper,
            killed: Some(faulty),
            early_wakes: 0,
            asleep_again_ms: None,
            round: 0,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recovery(round: u32, mode: Mode, ms: f64, woken: f64, early: u32) -> Row {
        Row {
            mode,
            state_bytes: 10 << 20,
            dirty_pct: Some(0),
            recovery_ms: Some(ms),
            woken_ms: Some(woken),
            exec_cpu_us_per_op: None,
            exec_cpu_s: Vec::new(),
            ops: 0,
            p50_before_ms: Some(ms / 100.0),
            p50_after_ms: None,
            sleeper: format!("round {round}"),
            killed: Some(1),
            early_wakes: early,
            asleep_again_ms: None,
            round,
        }
    }

    #[test]
    fn medians_take_each_figure_over_the_rounds_of_one_row() {
        let rows = vec![
            recovery(1, Mode::Zz, 900.0, 700.0, 0),
            recovery(1, Mode::Eager, 800.0, 600.0, 1),
            recovery(2, Mode::Zz, 300.0, 100.0, 1),
            recovery(2, Mode::Eager, 850.0, 650.0, 0),
            recovery(3, Mode::Zz, 400.0, 900.0, 0),
            recovery(3, Mode::Eager, 2000.0, 1500.0, 1),
        ];
        let m = medians(&rows);
        assert_eq!(m.len(), 2, "one row per mode, size and dirty share");
        assert_eq!(m[0].mode, Mode::Zz, "first-seen order");
        // Each figure its own median: 400 ms recovery, 700 ms woken (not the same round's).
        assert_eq!(m[0].recovery_ms, Some(400.0));
        assert_eq!(m[0].woken_ms, Some(700.0));
        assert_eq!(m[0].p50_before_ms, Some(4.0));
        assert_eq!(m[0].p50_after_ms, None, "no round measured it");
        assert_eq!(m[0].early_wakes, 1);
        assert_eq!(m[0].round, 0);
        assert_eq!(m[1].recovery_ms, Some(850.0));
        assert_eq!(m[1].early_wakes, 2);
    }
}
