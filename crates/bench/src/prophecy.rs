//! `plumb bench prophecy`: read throughput and latency of four ways to serve a read at
//! u = r = 1 (seed 000 §7.2, §7.3, §7.7), on one fresh cluster of `plumb node` processes
//! running the [`readwork`](crate::readwork) application:
//!
//! - `replicated`: every read ordered (`Route::Ordered`), executed by every execution replica;
//! - `read-only`: plumb's read-only path (`Route::ReadOnly`): every execution replica executes
//!   the read, the client accepts a unanimous answer, else orders it;
//! - `prophecy`: reads through [`SketchedReads`]: a fast read to one random execution replica,
//!   accepted if its sketch matches the history table, else ordered. THIS process plays the
//!   gateway: it holds the sketchers' pools (one pool of client identities, with its own
//!   thread and links, per sketcher) and the sharded history table;
//! - `d-prophecy`: `Route::Sketched { executor }` with a random executor: the executor runs the
//!   read, every other execution replica answers the digest of its last ordered answer to the
//!   same op, the client accepts on unanimity, else orders it.
//!
//! The transition ratio: for `prophecy`, [`SketchedReads::force_transitions`] treats that share
//! of fast replies as mismatches (as seed 000 §7.2 does). For `d-prophecy` transitions are real:
//! before that share of reads the caller first writes a new value to the key it is about to
//! read (an ordered write, neither timed nor counted), so the executor's answer differs from
//! the other replicas' history and the read falls back to the ordered path. `replicated` and
//! `read-only` keep no history, so they are measured at 0 % only and are the baseline for every
//! ratio.

use crate::cpu::{process_cpu_seconds, total_cpu_seconds};
use crate::load::FirstError;
use crate::plumb::{Placement, Plumb, PlumbShape};
use crate::readwork::{self, ReadWorkBench};
use futures_util::StreamExt;
use hdrhistogram::Histogram;
use plumb_client::net::{Answered, Route};
use plumb_gateway::sketching::SketchedReads;
use plumb_gateway::Pool;
use plumb_prophecy::SketcherConfig;
use plumb_wire::{ExecId, Principal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A way to serve reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Replicated,
    ReadOnly,
    Prophecy,
    DProphecy,
}

impl System {
    pub const ALL: [System; 4] = [
        System::Replicated,
        System::ReadOnly,
        System::Prophecy,
        System::DProphecy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            System::Replicated => "replicated",
            System::ReadOnly => "read-only",
            System::Prophecy => "prophecy",
            System::DProphecy => "d-prophecy",
        }
    }

    pub fn parse(text: &str) -> Result<System, String> {
        System::ALL
            .into_iter()
            .find(|s| s.name() == text.trim())
            .ok_or_else(|| {
                format!(
                    "unknown system `{text}`: use replicated, read-only, prophecy or d-prophecy"
                )
            })
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct ProphecyBench {
    /// The `plumb` binary (it registers `readwork`).
    pub exe: PathBuf,
    /// Where the cluster keeps its data.
    pub dir: PathBuf,
    pub base_port: u16,
    pub systems: Vec<System>,
    /// CPU time an execution replica spends per read, in microseconds.
    pub work_us: Vec<u64>,
    /// Transition ratios, in percent.
    pub transitions: Vec<u32>,
    /// Sketcher counts (prophecy only).
    pub sketchers: Vec<usize>,
    /// Closed-loop callers.
    pub clients: usize,
    /// Keys read (uniformly).
    pub keys: u32,
    pub warmup: Duration,
    pub duration: Duration,
    pub progress: bool,
}

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub system: &'static str,
    pub work_us: u64,
    pub transition_pct: u32,
    /// Sketchers (0 for the systems without one).
    pub sketchers: usize,
    /// Reads completed while measuring.
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    pub ops_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Share of the measured reads answered on the ordered path, in percent (for prophecy, the
    /// sketcher's fallbacks; for read-only and d-prophecy, reads whose answer was ordered).
    pub ordered_pct: f64,
    /// Writes issued to make d-prophecy's transitions (not counted in `ops`).
    pub writes: u64,
    /// CPU used while measuring, in percent of one core: this process (the callers, the
    /// client pools and the sketchers), and the node processes together.
    pub bench_cpu_pct: f64,
    pub nodes_cpu_pct: f64,
}

/// What every measurement of one cluster shares.
struct Cluster {
    own: Arc<Pool>,
    /// Execution replicas that execute: D-Prophecy's executors are drawn from these.
    exec: usize,
    node_pids: Vec<u32>,
}

/// Everything one run measured, and what it ran on.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    pub failures: Vec<String>,
    /// Rounds of BLAKE3 per microsecond measured on this machine at the start.
    pub rounds_per_us: f64,
    pub nodes: usize,
    pub exec: usize,
    /// `/proc/loadavg` before and after.
    pub load_before: String,
    pub load_after: String,
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// How a read is issued.
#[derive(Clone)]
enum Driver {
    Pool { pool: Arc<Pool>, system: System },
    Sketched(Arc<SketchedReads>),
}

/// Reads keys `0..keys` once each, `concurrency` at a time, through `read`; if any read failed,
/// the error says it was `what`.
async fn read_every_key<T, E: std::fmt::Display, F: std::future::Future<Output = Result<T, E>>>(
    keys: u32,
    concurrency: usize,
    what: &str,
    read: impl FnMut(u32) -> F,
) -> Result<(), String> {
    let results: Vec<_> = futures_util::stream::iter(0..keys)
        .map(read)
        .buffer_unordered(concurrency)
        .collect()
        .await;
    results
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what}: {e}"))?;
    Ok(())
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Driver {
    /// Run one read; `Ok(true)` if its answer came from the ordered path (unknown for the
    /// sketcher, whose counters say it instead).
    async fn read(&self, op: Vec<u8>, exec: u16, rng: &mut u64) -> Result<bool, String> {
        match self {
            Driver::Sketched(s) => s.read(op).await.map(|_| false).map_err(|e| e.to_string()),
            Driver::Pool { pool, system } => {
                let route = match system {
                    System::Replicated => Route::Ordered,
                    System::ReadOnly => Route::ReadOnly,
                    _ => Route::Sketched {
                        executor: ExecId((splitmix(rng) % u64::from(exec.max(1))) as u16),
                    },
                };
                let answer = pool.call_on(op, route).await.map_err(|e| e.to_string())?;
                Ok(matches!(answer.answered, Answered::Ordered { .. }))
            }
        }
    }
}

struct Shared {
    measuring: AtomicBool,
    stop: AtomicBool,
    ops: AtomicU64,
    ordered: AtomicU64,
    errors: AtomicU64,
    writes: AtomicU64,
    first_error: FirstError,
}

impl ProphecyBench {
    /// Start the cluster, measure every configuration, stop the cluster.
    pub async fn run(&self) -> Result<Outcome, String> {
        let mut outcome = Outcome {
            load_before: loadavg(),
            rounds_per_us: readwork::calibrate(),
            ..Outcome::default()
        };
        let shape = PlumbShape {
            u: 1,
            r: 1,
            split: false,
            tentative: false,
            exec: None,
        };
        let c = self.clients.max(1);
        let max_sketchers = if self.systems.contains(&System::Prophecy) {
            self.sketchers.iter().copied().max().unwrap_or(1).max(1)
        } else {
            0
        };
        // The first `c * max_sketchers` identities are the sketchers' (c each); the rest the
        // bench's own pool, for the other systems.
        let plumb = Plumb::start(
            Arc::new(ReadWorkBench),
            &self.exe,
            &self.dir.join("cluster"),
            &shape,
            self.base_port,
            c as u32,
            (c * max_sketchers) as u32,
            None,
            &Placement::default(),
        )
        .await?;
        let cluster = plumb.cluster().clone();
        outcome.nodes = cluster.nodes.len();
        outcome.exec = cluster
            .nodes
            .iter()
            .flat_map(|n| n.principals.iter())
            .filter(|p| matches!(p, Principal::Exec(_)))
            .count();
        let mut sketcher_pools = Vec::new();
        for i in 0..max_sketchers {
            let ids = cluster.cli_clients[i * c..(i + 1) * c].to_vec();
            let pool = Pool::start(
                &cluster,
                &ids,
                &self.dir.join(format!("sketcher-{i}")),
                true,
            )?;
            sketcher_pools.push(Arc::new(pool));
        }
        // The paper's prototype has no automatic blacklisting, and a forced transition ratio
        // would make the sketcher blacklist entries and so change the ratio it was asked for.
        let config = SketcherConfig {
            auto_blacklist: false,
            ..SketcherConfig::default()
        };
        // Fast reads and executors go to replicas that execute (all of them unless ZZ).
        let executing = cluster.protocol.executing_replicas();
        let mut sketched = Vec::new();
        for &n in &self.sketchers {
            let n = n.max(1);
            let s = SketchedReads::new(sketcher_pools[..n].to_vec(), executing, config.clone())?;
            sketched.push((n, Arc::new(s)));
        }
        let cl = Cluster {
            own: plumb.pool().clone(),
            exec: executing,
            node_pids: plumb.node_pids(),
        };
        let own = cl.own.clone();
        for &work in &self.work_us {
            let rounds = (work as f64 * outcome.rounds_per_us).round() as u32;
            for &system in &self.systems {
                let mut runs: Vec<(u32, usize, Driver)> = Vec::new();
                match system {
                    System::Replicated | System::ReadOnly => runs.push((
                        0,
                        0,
                        Driver::Pool {
                            pool: own.clone(),
                            system,
                        },
                    )),
                    System::DProphecy => {
                        for &t in &self.transitions {
                            runs.push((
                                t,
                                0,
                                Driver::Pool {
                                    pool: own.clone(),
                                    system,
                                },
                            ));
                        }
                    }
                    System::Prophecy => {
                        for &t in &self.transitions {
                            for (n, s) in &sketched {
                                runs.push((t, *n, Driver::Sketched(s.clone())));
                            }
                        }
                    }
                }
                for (t, n, driver) in runs {
                    let label = format!(
                        "{} work {work} us, {t}% transitions{}",
                        system.name(),
                        if n > 0 {
                            format!(", {n} sketcher(s)")
                        } else {
                            String::new()
                        }
                    );
                    match self.measure(&cl, system, &driver, rounds, t).await {
                        Ok(mut row) => {
                            row.work_us = work;
                            row.sketchers = n;
                            if self.progress {
                                eprintln!(
                                    "  {label}: {:.0} reads/s, p50 {:.2} ms, p99 {:.2} ms, {:.1}% ordered",
                                    row.ops_per_s, row.p50_ms, row.p99_ms, row.ordered_pct
                                );
                            }
                            outcome.rows.push(row);
                        }
                        Err(e) => outcome.failures.push(format!("{label}: {e}")),
                    }
                }
            }
        }
        outcome.load_after = loadavg();
        drop(sketched);
        drop(plumb);
        Ok(outcome)
    }

    /// Warm up and measure one configuration.
    async fn measure(
        &self,
        cl: &Cluster,
        system: System,
        driver: &Driver,
        rounds: u32,
        transition_pct: u32,
    ) -> Result<Row, String> {
        let own = &cl.own;
        let exec = cl.exec;
        let c = self.clients.max(1);
        let keys = self.keys.max(1);
        let exec = u16::try_from(exec.max(1)).unwrap_or(u16::MAX);
        // Fill the history: the sketcher's table (a read of a key it has no entry for is
        // replicated and fills it), or the replicas' histories of ordered reads.
        match (system, driver) {
            (System::Prophecy, Driver::Sketched(s)) => {
                s.force_transitions(0);
                read_every_key(keys, c, "filling the history table", |k| {
                    s.read(readwork::read_op(k, rounds))
                })
                .await?;
                s.force_transitions(u64::from(transition_pct) * 10);
            }
            (System::DProphecy, _) => {
                read_every_key(keys, c, "filling the replicas' histories", |k| {
                    own.call_on(readwork::read_op(k, rounds), Route::Ordered)
                })
                .await?;
            }
            _ => {}
        }
        let shared = Arc::new(Shared {
            measuring: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            ops: AtomicU64::new(0),
            ordered: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            first_error: FirstError::default(),
        });
        let write_per_mille = if system == System::DProphecy {
            u64::from(transition_pct.min(100)) * 10
        } else {
            0
        };
        let mut tasks = Vec::new();
        for i in 0..c {
            let driver = driver.clone();
            let own = own.clone();
            let shared = shared.clone();
            tasks.push(tokio::spawn(async move {
                let mut h = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)
                    .expect("histogram bounds are valid");
                let mut rng = 0x5eed_u64.wrapping_mul(i as u64 + 1);
                let mut written = 0u64;
                while !shared.stop.load(Ordering::Relaxed) {
                    let key = (splitmix(&mut rng) % u64::from(keys)) as u32;
                    if write_per_mille > 0 && splitmix(&mut rng) % 1000 < write_per_mille {
                        written += 1;
                        let value =
                            [&(i as u64).to_le_bytes()[..], &written.to_le_bytes()[..]].concat();
                        if own
                            .call_on(readwork::write_op(key, &value), Route::Ordered)
                            .await
                            .is_ok()
                            && shared.measuring.load(Ordering::Relaxed)
                        {
                            shared.writes.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let t0 = Instant::now();
                    let r = driver
                        .read(readwork::read_op(key, rounds), exec, &mut rng)
                        .await;
                    let counted = shared.measuring.load(Ordering::Relaxed)
                        && !shared.stop.load(Ordering::Relaxed);
                    match r {
                        Ok(ordered) => {
                            if counted {
                                let _ = h.record(t0.elapsed().as_micros().max(1) as u64);
                                shared.ops.fetch_add(1, Ordering::Relaxed);
                                if ordered {
                                    shared.ordered.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                        Err(e) => {
                            if counted {
                                shared.errors.fetch_add(1, Ordering::Relaxed);
                            }
                            shared.first_error.keep(e);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
                h
            }));
        }
        tokio::time::sleep(self.warmup).await;
        let counters_before = match driver {
            Driver::Sketched(s) => Some(s.counters()),
            _ => None,
        };
        let me = std::process::id();
        let bench_cpu = process_cpu_seconds(me).unwrap_or(0.0);
        let nodes_cpu = total_cpu_seconds(&cl.node_pids);
        shared.measuring.store(true, Ordering::Relaxed);
        let start = Instant::now();
        tokio::time::sleep(self.duration).await;
        shared.stop.store(true, Ordering::Relaxed);
        let seconds = start.elapsed().as_secs_f64();
        let bench_cpu = process_cpu_seconds(me).unwrap_or(0.0) - bench_cpu;
        let nodes_cpu = total_cpu_seconds(&cl.node_pids) - nodes_cpu;
        let counters_after = match driver {
            Driver::Sketched(s) => Some(s.counters()),
            _ => None,
        };
        let mut histogram =
            Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).map_err(|e| e.to_string())?;
        for t in tasks {
            // Callers finish the read they are in; a cluster that stopped answering must not
            // hang the bench.
            match tokio::time::timeout(Duration::from_secs(30), t).await {
                Ok(Ok(h)) => histogram.add(&h).map_err(|e| e.to_string())?,
                Ok(Err(e)) => return Err(format!("a caller failed: {e}")),
                Err(_) => return Err("a read did not complete in 30 s after the run".into()),
            }
        }
        if let Driver::Sketched(s) = driver {
            s.force_transitions(0);
        }
        let ops = shared.ops.load(Ordering::Relaxed);
        if ops == 0 {
            let why = shared.first_error.or("no read completed");
            return Err(why);
        }
        let ordered_pct = match (counters_before, counters_after) {
            (Some(b), Some(a)) => {
                let reads = a.reads.saturating_sub(b.reads).max(1);
                a.fallbacks.saturating_sub(b.fallbacks) as f64 * 100.0 / reads as f64
            }
            _ if system == System::Replicated => 100.0,
            _ => shared.ordered.load(Ordering::Relaxed) as f64 * 100.0 / ops as f64,
        };
        let ms = |us: u64| us as f64 / 1000.0;
        Ok(Row {
            system: system.name(),
            work_us: 0,
            transition_pct,
            sketchers: 0,
            ops,
            errors: shared.errors.load(Ordering::Relaxed),
            seconds,
            ops_per_s: ops as f64 / seconds,
            p50_ms: ms(histogram.value_at_quantile(0.50)),
            p99_ms: ms(histogram.value_at_quantile(0.99)),
            ordered_pct,
            writes: shared.writes.load(Ordering::Relaxed),
            bench_cpu_pct: bench_cpu * 100.0 / seconds,
            nodes_cpu_pct: nodes_cpu * 100.0 / seconds,
        })
    }
}

/// The CSV `--csv` writes.
pub fn csv(rows: &[Row]) -> String {
    let mut out = String::from("system,work_us,transition_pct,sketchers,ops_per_s,p50_ms,p99_ms\n");
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{:.1},{:.3},{:.3}\n",
            r.system, r.work_us, r.transition_pct, r.sketchers, r.ops_per_s, r.p50_ms, r.p99_ms
        ));
    }
    out
}

/// The table of runs, one line each.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<11} {:>8} {:>7} {:>9} {:>10} {:>8} {:>8} {:>9} {:>8} {:>7} {:>10} {:>10}\n",
        "system",
        "work_us",
        "trans%",
        "sketchers",
        "reads/s",
        "p50 ms",
        "p99 ms",
        "ordered%",
        "writes",
        "errors",
        "bench cpu%",
        "nodes cpu%"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<11} {:>8} {:>7} {:>9} {:>10.0} {:>8.2} {:>8.2} {:>9.1} {:>8} {:>7} {:>10.0} {:>10.0}\n",
            r.system,
            r.work_us,
            r.transition_pct,
            r.sketchers,
            r.ops_per_s,
            r.p50_ms,
            r.p99_ms,
            r.ordered_pct,
            r.writes,
            r.errors,
            r.bench_cpu_pct,
            r.nodes_cpu_pct
        ));
    }
    out
}

/// Throughput ratios against the baselines at the same work: prophecy and d-prophecy over
/// replicated and over read-only, and more sketchers over one.
pub fn ratios(rows: &[Row]) -> String {
    let find = |system: &str, work: u64, t: u32, n: usize| {
        rows.iter()
            .find(|r| {
                r.system == system && r.work_us == work && r.transition_pct == t && r.sketchers == n
            })
            .map(|r| r.ops_per_s)
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    };
    let mut out = format!(
        "{:<11} {:>8} {:>7} {:>9} {:>14} {:>13} {:>16}\n",
        "system", "work_us", "trans%", "sketchers", "÷ replicated", "÷ read-only", "÷ 1 sketcher"
    );
    for r in rows
        .iter()
        .filter(|r| r.system == System::Prophecy.name() || r.system == System::DProphecy.name())
    {
        let replicated = find(System::Replicated.name(), r.work_us, 0, 0);
        let read_only = find(System::ReadOnly.name(), r.work_us, 0, 0);
        let one = if r.sketchers > 1 {
            ratio(
                Some(r.ops_per_s),
                find(r.system, r.work_us, r.transition_pct, 1),
            )
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "{:<11} {:>8} {:>7} {:>9} {:>14} {:>13} {:>16}\n",
            r.system,
            r.work_us,
            r.transition_pct,
            r.sketchers,
            ratio(Some(r.ops_per_s), replicated),
            ratio(Some(r.ops_per_s), read_only),
            one
        ));
    }
    out
}
