//! The load generator: closed-loop clients (each keeps one request outstanding) or an open
//! loop (requests issued at a target rate, whatever the system's speed), measured after a
//! warm-up, with a progress line while it runs.

use crate::cost;
use crate::cpu::total_cpu_seconds;
use crate::report::RunResult;
use crate::target::{BatchStats, Op, Session, Target};
use crate::workload::Workload;
use hdrhistogram::Histogram;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// `clients` sessions, each with one request outstanding at a time.
    Closed { clients: usize },
    /// Requests issued at `rate` per second over `clients` sessions; latency counts from the
    /// moment a request was due, so a system that falls behind is charged for the queue.
    Open { rate: f64, clients: usize },
}

impl Load {
    pub fn clients(&self) -> usize {
        match *self {
            Load::Closed { clients } | Load::Open { clients, .. } => clients,
        }
    }

    pub fn label(&self) -> String {
        match *self {
            Load::Closed { clients } => format!("closed:{clients}"),
            Load::Open { rate, .. } => format!("open:{rate}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunSpec {
    pub workload: Workload,
    pub load: Load,
    pub warmup: Duration,
    /// Measure for this long...
    pub duration: Duration,
    /// ...or until this many operations completed, whichever comes first.
    pub max_ops: Option<u64>,
    /// Print a progress line on stderr.
    pub progress: bool,
    /// Count the servers' system calls and fsyncs with `perf` ([`crate::cost`]).
    pub syscalls: bool,
}

/// What the clients share while a run goes on.
struct Shared {
    /// Set when measuring starts (after warm-up).
    measuring: AtomicBool,
    stop: AtomicBool,
    ops: AtomicU64,
    errors: AtomicU64,
    first_error: FirstError,
    histogram: Mutex<Histogram<u64>>,
    /// When the last operation completed while measuring, and the longest window so far in
    /// which none did (a stall every client waits out shows here, whatever the percentiles say).
    gaps: Mutex<(Instant, Duration)>,
}

/// The first error any caller saw: what a run that completed nothing reports.
#[derive(Default)]
pub(crate) struct FirstError(Mutex<Option<String>>);

impl FirstError {
    /// Keep `e` unless an error was kept before.
    pub(crate) fn keep(&self, e: String) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }

    /// The error kept, or `otherwise` when there was none.
    pub(crate) fn or(&self, otherwise: &str) -> String {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| otherwise.into())
    }
}

impl Shared {
    fn record(&self, latency: Duration, ok: Result<(), String>) {
        if !self.measuring.load(Ordering::Relaxed) || self.stop.load(Ordering::Relaxed) {
            return;
        }
        match ok {
            Ok(()) => {
                self.ops.fetch_add(1, Ordering::Relaxed);
                let us = (latency.as_micros() as u64).max(1);
                let mut h = self.histogram.lock().unwrap_or_else(|p| p.into_inner());
                let _ = h.record(us);
                drop(h);
                self.completed_at(Instant::now());
            }
            Err(e) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                self.first_error.keep(e);
            }
        }
    }
}

impl Shared {
    fn completed_at(&self, now: Instant) {
        let mut g = self.gaps.lock().unwrap_or_else(|p| p.into_inner());
        let gap = now.saturating_duration_since(g.0);
        g.1 = g.1.max(gap);
        g.0 = g.0.max(now);
    }
}

/// Preload every key with a value of the workload's reply size, so reads return that much.
pub async fn preload(
    target: &dyn Target,
    workload: &Workload,
    sessions: usize,
) -> Result<(), String> {
    let ops: Vec<Op> = workload.preload().collect();
    let per = ops.len().div_ceil(sessions.max(1)).max(1);
    let mut tasks = Vec::new();
    for chunk in ops.chunks(per) {
        let mut session = target.session().await?;
        let chunk = chunk.to_vec();
        tasks.push(tokio::spawn(async move {
            for op in &chunk {
                session.run(op).await?;
            }
            Ok::<(), String>(())
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| format!("a preload task failed: {e}"))??;
    }
    Ok(())
}

/// Run `spec` against `target` and measure it.
pub async fn run(target: &dyn Target, spec: &RunSpec) -> Result<RunResult, String> {
    let clients = spec.load.clients().max(1);
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        sessions.push(target.session().await?);
    }
    let shared = Arc::new(Shared {
        measuring: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        first_error: FirstError::default(),
        histogram: Mutex::new(
            Histogram::new_with_bounds(1, 600_000_000, 3).map_err(|e| e.to_string())?,
        ),
        gaps: Mutex::new((Instant::now(), Duration::ZERO)),
    });
    let start = Instant::now();
    let mut tasks = Vec::new();
    match spec.load {
        Load::Closed { .. } => {
            for (i, session) in sessions.into_iter().enumerate() {
                tasks.push(tokio::spawn(closed_client(
                    session,
                    spec.workload.clone(),
                    seed(i),
                    shared.clone(),
                )));
            }
        }
        Load::Open { rate, .. } => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Instant>();
            let rx = Arc::new(tokio::sync::Mutex::new(rx));
            for (i, session) in sessions.into_iter().enumerate() {
                tasks.push(tokio::spawn(open_client(
                    session,
                    spec.workload.clone(),
                    seed(i),
                    shared.clone(),
                    rx.clone(),
                )));
            }
            tasks.push(tokio::spawn(schedule(rate, start, tx, shared.clone())));
        }
    }
    let pids = target.server_pids();
    tokio::time::sleep(spec.warmup).await;
    let cpu_before = total_cpu_seconds(&pids);
    let batches_before = target.batch_stats().await;
    let cost_before = cost::Cost {
        counters: target.cost_counters().await,
        ..cost::Cost::default()
    };
    let switches_before = cost::Switches::of(&pids);
    // An error of perf's is returned once the clients are stopped, below.
    let syscalls = spec
        .syscalls
        .then(|| cost::SyscallCount::start(&pids))
        .transpose();
    let measure_start = Instant::now();
    *shared.gaps.lock().unwrap_or_else(|p| p.into_inner()) = (measure_start, Duration::ZERO);
    shared.measuring.store(true, Ordering::Relaxed);
    let label = format!(
        "{} {} {} {}",
        target.system(),
        target.config(),
        spec.workload.name(),
        spec.load.label()
    );
    let tty = std::io::stderr().is_terminal();
    let mut last_print = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let elapsed = measure_start.elapsed();
        let ops = shared.ops.load(Ordering::Relaxed);
        let done = elapsed >= spec.duration || spec.max_ops.is_some_and(|m| ops >= m);
        if spec.progress
            && (done || last_print.elapsed() >= Duration::from_secs(if tty { 1 } else { 5 }))
        {
            last_print = Instant::now();
            let line = format!(
                "  {label}: {:.0}/{:.0} s, {ops} ops, {:.0} ops/s, {} errors",
                elapsed.as_secs_f64(),
                spec.duration.as_secs_f64(),
                ops as f64 / elapsed.as_secs_f64().max(1e-9),
                shared.errors.load(Ordering::Relaxed)
            );
            if tty {
                eprint!("\r{line}\x1b[K");
            } else {
                eprintln!("{line}");
            }
        }
        if done {
            break;
        }
    }
    shared.stop.store(true, Ordering::Relaxed);
    // The window from the last completion to the end counts too.
    shared.completed_at(Instant::now());
    let seconds = measure_start.elapsed().as_secs_f64();
    let cpu = total_cpu_seconds(&pids) - cpu_before;
    let switches = cost::Switches::of(&pids);
    let counted = syscalls.and_then(|c| c.map(cost::SyscallCount::stop).transpose());
    let cost = cost::Cost {
        wakeups: switches.voluntary.saturating_sub(switches_before.voluntary),
        preemptions: switches
            .involuntary
            .saturating_sub(switches_before.involuntary),
        syscalls: None,
        fsyncs: None,
        counters: target.cost_counters().await,
    }
    .since(&cost_before);
    let batches_after = target.batch_stats().await;
    if spec.progress && tty {
        eprintln!();
    }
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
    let cost = match counted? {
        Some((syscalls, fsyncs)) => cost::Cost {
            syscalls: Some(syscalls),
            fsyncs: Some(fsyncs),
            ..cost
        },
        None => cost,
    };
    let during = match (&batches_before, &batches_after) {
        (Some(b), Some(a)) => Some(a.since(b)),
        _ => None,
    };
    let ops = shared.ops.load(Ordering::Relaxed);
    let errors = shared.errors.load(Ordering::Relaxed);
    if ops == 0 {
        let why = shared.first_error.or("no operation completed");
        return Err(format!(
            "{label}: nothing completed in {seconds:.1} s: {why}"
        ));
    }
    let longest_gap_ms = {
        let gaps = shared.gaps.lock().unwrap_or_else(|p| p.into_inner());
        gaps.1.as_secs_f64() * 1000.0
    };
    let h = shared.histogram.lock().unwrap_or_else(|p| p.into_inner());
    let ms = |us: u64| us as f64 / 1000.0;
    Ok(RunResult {
        system: target.system().into(),
        config: target.config(),
        workload: spec.workload.name(),
        load: spec.load.label(),
        clients,
        ops,
        errors,
        seconds,
        ops_per_s: ops as f64 / seconds,
        p50_ms: ms(h.value_at_quantile(0.50)),
        p90_ms: ms(h.value_at_quantile(0.90)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        p999_ms: ms(h.value_at_quantile(0.999)),
        max_ms: ms(h.max()),
        mean_ms: h.mean() / 1000.0,
        longest_gap_ms,
        cpu_us_per_op: (!pids.is_empty()).then(|| cpu * 1e6 / ops as f64),
        cost: (!pids.is_empty()).then_some(cost),
        batch_mean: during.as_ref().and_then(BatchStats::mean),
        views: during.as_ref().map(|d| d.view),
        stalls: during.as_ref().map(|d| {
            let mut parts = Vec::new();
            if !d.view_changes.is_empty() {
                parts.push(format!(
                    "view changes asked for: {}",
                    BatchStats::line(&d.view_changes)
                ));
            }
            if !d.slow.is_empty() {
                parts.push(format!("slow requests: {}", BatchStats::line(&d.slow)));
            }
            if !d.drops.is_empty() {
                parts.push(format!("messages dropped: {}", BatchStats::line(&d.drops)));
            }
            if d.slow_syncs > 0 {
                parts.push(format!("syncs over 50 ms: {}", d.slow_syncs));
            }
            parts.join("; ")
        }),
        round: 1,
    })
}

fn seed(i: usize) -> u64 {
    0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1)
}

async fn closed_client(
    mut session: Box<dyn Session>,
    w: Workload,
    mut rng: u64,
    shared: Arc<Shared>,
) {
    while !shared.stop.load(Ordering::Relaxed) {
        let op = w.next(&mut rng);
        let t0 = Instant::now();
        let r = session.run(&op).await;
        let failed = r.is_err();
        shared.record(t0.elapsed(), r.map(|_| ()));
        if failed {
            // A failing system must not turn the client into a busy loop.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn open_client(
    mut session: Box<dyn Session>,
    w: Workload,
    mut rng: u64,
    shared: Arc<Shared>,
    due: Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Instant>>>,
) {
    loop {
        let Some(at) = due.lock().await.recv().await else {
            return;
        };
        let op = w.next(&mut rng);
        let r = session.run(&op).await;
        shared.record(at.elapsed(), r.map(|_| ()));
    }
}

/// Emit the due time of request k, `start + k / rate`, as each comes due.
async fn schedule(
    rate: f64,
    start: Instant,
    tx: tokio::sync::mpsc::UnboundedSender<Instant>,
    shared: Arc<Shared>,
) {
    let mut sent: u64 = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        let due = (start.elapsed().as_secs_f64() * rate) as u64;
        while sent < due {
            let at = start + Duration::from_secs_f64(sent as f64 / rate);
            if tx.send(at).is_err() {
                return;
            }
            sent += 1;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
