//! `plumb sim`: run many seeds (or replay one) and report every violated property.

use clap::Args;
use plumb_sim::{app_seed_config, run_app_seed, seed_config, SeedReport, SimOptions};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Number of seeds to run.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// First seed of the range.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Replay this one seed, printing every violation and warning.
    #[arg(long)]
    seed: Option<u64>,
    /// Failures tolerated while staying live.
    #[arg(long, default_value_t = 1)]
    u: u16,
    /// Commission failures tolerated while staying safe.
    #[arg(long, default_value_t = 1)]
    r: u16,
    /// With --seed: print the seed's configuration and a compact event log.
    #[arg(long)]
    trace: bool,
    /// Run without any fault (a baseline).
    #[arg(long)]
    no_faults: bool,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Stop handing out seeds once one fails (seeds already running finish): for proving a
    /// sabotage is caught, where the first failing seed is the answer.
    #[arg(long)]
    first_failure: bool,
    /// Break the protocol on purpose (`list` prints the names); requires the `sabotage` feature.
    #[arg(long)]
    sabotage: Option<String>,
    /// The application under test: `kv` (the key-value store), `redis` (the key-value store
    /// with Redis transactions and pipelines in the workload), `bank` (examples/bank) or `coord`
    /// (the coordination application, ZooKeeper's data model) or `spec` (client speculation:
    /// speculative sessions over the speculation shim and its counter and file service).
    #[arg(long, default_value = "kv", value_parser = ["kv", "redis", "bank", "coord", "spec"])]
    app: String,
    /// Correct clients read through a Prophecy sketcher (fast reads from one execution
    /// replica, checked against its history table; docs/prophecy.md); histories are judged
    /// delay-once linearizable instead of linearizable.
    #[arg(long)]
    sketcher: bool,
}

/// Run one seed of the application `--app` names.
fn run_seed(args: &SimArgs, opts: &SimOptions) -> SeedReport {
    match args.app.as_str() {
        "bank" => run_app_seed(&plumb_bank::sim::BankSim, opts),
        "redis" => run_app_seed(&plumb_sim::apps::redis::Redis, opts),
        "coord" => run_app_seed(&plumb_sim::apps::coord::Coord, opts),
        "spec" => run_app_seed(&plumb_sim::apps::spec::Spec, opts),
        _ => run_app_seed(&plumb_sim::apps::kv::Kv, opts),
    }
}

/// The configuration a seed of `--app` runs with (the application may adjust the generic one).
fn config(args: &SimArgs, opts: &SimOptions) -> plumb_sim::SimConfig {
    match args.app.as_str() {
        "spec" => app_seed_config(&plumb_sim::apps::spec::Spec, opts),
        _ => seed_config(opts),
    }
}

pub fn run(args: SimArgs) -> ExitCode {
    if let Some(name) = &args.sabotage {
        let needs = if args.sketcher {
            "sketcher"
        } else {
            args.app.as_str()
        };
        match sabotage::enable(name, needs) {
            Ok(true) => {}
            Ok(false) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("plumb sim: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(seed) = args.seed {
        return replay(&args, seed);
    }
    run_many(&args)
}

fn options(args: &SimArgs, seed: u64) -> SimOptions {
    SimOptions {
        trace: args.trace,
        faults: !args.no_faults,
        sketcher: args.sketcher,
        ..SimOptions::new(seed, args.u, args.r)
    }
}

fn replay(args: &SimArgs, seed: u64) -> ExitCode {
    let opts = options(args, seed);
    if !args.trace {
        print!("{}", config(args, &opts));
        out!("");
    }
    let started = Instant::now();
    let report = run_seed(args, &opts);
    for v in &report.violations {
        out!("{v}");
    }
    if report.suppressed_violations > 0 {
        out!("(+{} more violations)", report.suppressed_violations);
    }
    for w in &report.warnings {
        out!("warning: {w}");
    }
    let s = &report.stats;
    out!(
        "stats: {} events, {} frames sent ({} delivered, {} lost, {} lies), {} crashes, {} operations completed, {} batches agreed{}",
        s.events,
        s.sent,
        s.delivered,
        s.lost,
        s.byzantine_lies,
        s.crashes,
        s.completed,
        s.agreed_batches,
        if report.liveness_checked { "" } else { "; safety-only seed: liveness not checked" }
    );
    if report.sketcher {
        let sketcher: Vec<String> = s
            .counters
            .iter()
            .filter_map(|(name, n)| name.strip_prefix("sketcher-").map(|k| format!("{k} {n}")))
            .collect();
        out!("sketcher: {}", sketcher.join(", "));
    }
    let speculation: Vec<String> = s
        .counters
        .iter()
        .filter_map(|(name, n)| name.strip_prefix("spec-").map(|k| format!("{k} {n}")))
        .collect();
    if !speculation.is_empty() {
        out!(
            "speculation: {} early replies, {}",
            s.early_replies,
            speculation.join(", ")
        );
    }
    out!("trace digest {:016x}", report.trace_digest);
    summary(1, report.violation_count(), started);
    exit_code(report.violation_count())
}

/// How often a sweep of many seeds reports its progress.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

fn run_many(args: &SimArgs) -> ExitCode {
    let started = Instant::now();
    let next = AtomicU64::new(args.start);
    let end = args.start + args.seeds;
    let violations = AtomicU64::new(0);
    let ran = AtomicU64::new(0);
    let safety_only = AtomicU64::new(0);
    let failing = Mutex::new(Vec::new());
    // (latency, seed) of the slowest settled operation of a correct client.
    let slowest = Mutex::new((0u64, 0u64));
    let jobs = args.jobs.max(1);
    // Long sweeps say how far they are on stderr, at most every PROGRESS_EVERY.
    let last_progress = Mutex::new(Instant::now());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                if args.first_failure && violations.load(Ordering::SeqCst) > 0 {
                    break;
                }
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= end {
                    break;
                }
                let report = run_seed(args, &options(args, seed));
                ran.fetch_add(1, Ordering::SeqCst);
                if !report.liveness_checked {
                    safety_only.fetch_add(1, Ordering::SeqCst);
                }
                if let Ok(mut s) = slowest.lock() {
                    *s = (*s).max((report.stats.slowest_settled, seed));
                }
                if let Ok(mut last) = last_progress.lock() {
                    if last.elapsed() >= PROGRESS_EVERY {
                        *last = Instant::now();
                        eprintln!(
                            "plumb sim: {} of {} seeds run, {} violations, {:.0} s",
                            ran.load(Ordering::SeqCst),
                            args.seeds,
                            violations.load(Ordering::SeqCst),
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                if !report.ok() {
                    violations.fetch_add(report.violation_count() as u64, Ordering::SeqCst);
                    out!("{}", failure_line(&report));
                    if let Ok(mut f) = failing.lock() {
                        f.push(seed);
                    }
                }
            });
        }
    });
    let total = violations.load(Ordering::SeqCst) as usize;
    let failed = failing.lock().map(|f| f.len()).unwrap_or(0);
    out!(
        "{failed} failing seeds; {} of {} seeds were safety-only (more than u failures: liveness not judged)",
        safety_only.load(Ordering::SeqCst),
        ran.load(Ordering::SeqCst)
    );
    let (latency, seed) = slowest.lock().map(|s| *s).unwrap_or_default();
    out!(
        "slowest operation of a correct client after faults stopped and the cluster settled: {:.3} s (seed {seed})",
        latency as f64 / 1e6
    );
    summary(ran.load(Ordering::SeqCst), total, started);
    exit_code(total)
}

/// `seed 42 (u=1 r=1): LS3 violated: ... — replay: plumb sim --seed 42 --u 1 --r 1`
fn failure_line(report: &SeedReport) -> String {
    let first = report
        .violations
        .first()
        .map_or("?".to_string(), |v| v.to_string());
    let more = report.violation_count().saturating_sub(1);
    let more = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    format!(
        "seed {} (u={} r={}): {first}{more} — replay: {}",
        report.seed,
        report.u,
        report.r,
        report.replay_command()
    )
}

fn summary(runs: u64, violations: usize, started: Instant) {
    let elapsed = started.elapsed().as_secs_f64();
    out!("sim: {runs} runs, {violations} violations");
    out!(
        "elapsed {elapsed:.1} s, {:.1} ms per seed",
        elapsed * 1000.0 / runs.max(1) as f64
    );
}

fn exit_code(violations: usize) -> ExitCode {
    if violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(feature = "sabotage")]
mod sabotage {
    use plumb_sim::sabotage::{app_for, set, ALL};

    /// Turn on the named sabotage for a run of `app`. `Ok(false)`: the names were listed,
    /// nothing to run.
    pub fn enable(name: &str, app: &str) -> Result<bool, String> {
        if name == "list" {
            for (_, n) in ALL {
                out!("{n}");
            }
            return Ok(false);
        }
        match ALL.iter().find(|(_, n)| *n == name) {
            Some((s, _)) if app_for(*s) == "sketcher" && app != "sketcher" => Err(format!(
                "sabotage {name} breaks the Prophecy sketcher: add --sketcher"
            )),
            Some((s, _)) if app_for(*s) != app && app_for(*s) != "sketcher" => Err(format!(
                "sabotage {name} breaks what only the {} workload exercises: add --app {}",
                app_for(*s),
                app_for(*s)
            )),
            Some((s, _)) => {
                set(Some(*s));
                Ok(true)
            }
            None => Err(format!(
                "unknown sabotage {name:?}; `plumb sim --sabotage list` names them"
            )),
        }
    }
}

#[cfg(not(feature = "sabotage"))]
mod sabotage {
    pub fn enable(_name: &str, _app: &str) -> Result<bool, String> {
        Err("this build has no sabotage switches (build with --features sabotage)".to_string())
    }
}
