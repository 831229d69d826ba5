//! `plumb sim`: run many seeds (or replay one) and report every violated property.

use clap::Args;
use plumb_sim::{SeedReport, SimApps, SimOptions, Simulated};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct SimArgs {
    /// Number of seeds to run (default 100; with --sabotage, the gate's count for it).
    #[arg(long)]
    seeds: Option<u64>,
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
    /// Stop handing out seeds once one fails (seeds already running finish): for finding the
    /// first failing seed of a long range.
    #[arg(long)]
    first_failure: bool,
    /// Print `seed N trace DIGEST` for every seed of a sweep: two builds that should behave
    /// alike (a refactoring) are compared by sorting and diffing these lines.
    #[arg(long)]
    trace_digests: bool,
    /// Break the protocol on purpose and hunt for the first seed that reports it: passes only
    /// if that seed reports the property the breakage violates (the table in
    /// `plumb_sim::sabotage`, which also picks the workload). `all` runs every one; `list`
    /// prints the names. Requires the `sabotage` feature.
    #[arg(long)]
    sabotage: Option<String>,
    /// The application under test (default `kv`): `kv` (the key-value store), `redis` (the
    /// key-value store with Redis transactions and pipelines in the workload), `bank`
    /// (examples/bank), `coord` (the coordination application, ZooKeeper's data model) or
    /// `spec` (client speculation: speculative sessions over the speculation shim and its
    /// counter and file service).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(sim_apps().names()))]
    app: Option<String>,
    /// Correct clients read through a Prophecy sketcher (fast reads from one execution
    /// replica, checked against its history table; docs/prophecy.md); histories are judged
    /// delay-once linearizable instead of linearizable.
    #[arg(long)]
    sketcher: bool,
    /// Execution replicas load checkpoints on demand and hold part of the state until their
    /// background fill is done (docs/objects.md "Partial state"); one correct execution
    /// replica loses its disk mid-run and three in four faulty ones serve wrong objects.
    #[arg(long)]
    partial: bool,
    /// ZZ mode (docs/zz.md): only max(u, r) + 1 execution replicas execute, the others sleep
    /// until r + 1 order replicas wake them; faulty and crashing execution replicas are mostly
    /// actives. Needs u of at least 1.
    #[arg(long)]
    zz: bool,
    /// Tentative agreement (docs/protocol.md) on or off in every seed; absent, each seed draws
    /// it (half of them on). A seed found before tentative agreement existed replays with off.
    #[arg(long, value_parser = ["on", "off"])]
    tentative: Option<String>,
    /// The linearizability checker's step budget per partition. A history it cannot decide
    /// within the budget fails the seed as undecided (lower it to see that gate work).
    #[arg(long, default_value_t = plumb_sim::lincheck::DEFAULT_MAX_STEPS)]
    check_max_steps: u64,
    /// Execution replicas beyond the minimum u + max(u, r) + 1, as `plumb init --exec` makes
    /// (faults drawn from the same u and r budget).
    #[arg(long, default_value_t = 0)]
    extra_exec: usize,
}

impl SimArgs {
    fn seeds(&self) -> u64 {
        self.seeds.unwrap_or(100)
    }
}

/// The applications `plumb sim --app` runs (and `--sabotage` hunts with), each through the
/// simulator adapter its own crate owns (feature `sim`, or always for the bank); speculation's
/// is the simulator's own, since speculative sessions are a capability of its world. The
/// first is the default.
fn sim_apps() -> SimApps {
    SimApps::new()
        .with(&plumb_kv::sim::Kv)
        .with(&plumb_script::sim::Redis)
        .with(&plumb_bank::sim::BankSim)
        .with(&plumb_coord::sim::Coord)
        .with(&plumb_sim::spec::Spec)
}

pub fn run(mut args: SimArgs) -> ExitCode {
    if let Some(name) = args.sabotage.clone() {
        if args.seed.is_none() {
            return sabotage::gate(&args, &name);
        }
        // Replaying one seed of a hunt: the sabotage on, its workload chosen by the table.
        if let Err(e) = sabotage::enable_for_replay(&mut args, &name) {
            eprintln!("plumb sim: {e}");
            return ExitCode::from(2);
        }
    }
    let app = match sim_apps().chosen(args.app.as_deref()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("plumb sim: {e}");
            return ExitCode::from(2);
        }
    };
    if args.zz && args.u == 0 {
        eprintln!("plumb sim: --zz needs u of at least 1 (ZZ's sleepers are the u execution replicas beyond max(u, r) + 1)");
        return ExitCode::from(2);
    }
    if args.zz && args.extra_exec > 0 {
        eprintln!("plumb sim: --zz takes no --extra-exec (ZZ keeps max(u, r) + 1 execution replicas executing and u asleep; more would only sleep, and a cluster file refuses them)");
        return ExitCode::from(2);
    }
    if let Some(seed) = args.seed {
        return replay(&args, app, seed);
    }
    run_many(&args, app)
}

fn options(args: &SimArgs, seed: u64) -> SimOptions {
    SimOptions {
        trace: args.trace,
        faults: !args.no_faults,
        sketcher: args.sketcher,
        partial: args.partial,
        zz: args.zz,
        tentative: args.tentative.as_deref().map(|t| t == "on"),
        check_max_steps: args.check_max_steps,
        extra_exec: args.extra_exec,
        ..SimOptions::new(seed, args.u, args.r)
    }
}

fn replay(args: &SimArgs, app: &dyn Simulated, seed: u64) -> ExitCode {
    let opts = options(args, seed);
    if !args.trace {
        print!("{}", app.seed_config(&opts));
        out!("");
    }
    let started = Instant::now();
    let report = app.run_seed(&opts);
    for v in &report.violations {
        out!("{v}");
    }
    if report.suppressed_violations > 0 {
        out!("(+{} more violations)", report.suppressed_violations);
    }
    for u in &report.undecided {
        out!("undecided: {u}");
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
    if report.on_demand {
        let partial: Vec<String> = s
            .counters
            .iter()
            .filter(|(name, _)| {
                name.starts_with("on-demand-")
                    || *name == "load-cp-on-demand"
                    || *name == "checkpoint-not-persisted-partial"
                    || *name == "read-only-objects-missing"
            })
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        out!("partial state: {}", partial.join(", "));
    }
    if report.zz {
        let wakes: Vec<String> = s
            .counters
            .iter()
            .filter(|(name, _)| name.starts_with("zz-") || name.starts_with("wake-"))
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        out!(
            "zz: {} woken, {} back to sleep; {}",
            s.woken,
            s.slept,
            wakes.join(", ")
        );
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
    let undecided = usize::from(!report.undecided.is_empty());
    summary(1, report.violation_count(), undecided, started);
    exit_code(report.violation_count(), undecided)
}

/// How often a sweep of many seeds reports its progress.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

fn run_many(args: &SimArgs, app: &dyn Simulated) -> ExitCode {
    let started = Instant::now();
    let next = AtomicU64::new(args.start);
    let end = args.start + args.seeds();
    let violations = AtomicU64::new(0);
    // Seeds whose checker gave up: failures, never passes.
    let undecided = AtomicU64::new(0);
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
                if args.first_failure
                    && violations.load(Ordering::SeqCst) + undecided.load(Ordering::SeqCst) > 0
                {
                    break;
                }
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= end {
                    break;
                }
                let report = app.run_seed(&options(args, seed));
                ran.fetch_add(1, Ordering::SeqCst);
                if args.trace_digests {
                    out!("seed {seed} trace {:016x}", report.trace_digest);
                }
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
                            args.seeds(),
                            violations.load(Ordering::SeqCst),
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                if !report.ok() {
                    violations.fetch_add(report.violation_count() as u64, Ordering::SeqCst);
                    if !report.undecided.is_empty() {
                        undecided.fetch_add(1, Ordering::SeqCst);
                    }
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
    let undecided = undecided.load(Ordering::SeqCst) as usize;
    summary(ran.load(Ordering::SeqCst), total, undecided, started);
    exit_code(total, undecided)
}

/// `seed 42 (u=1 r=1): LS3 violated: ... — replay: plumb sim --seed 42 --u 1 --r 1`
fn failure_line(report: &SeedReport) -> String {
    let first = report
        .violations
        .first()
        .map(|v| v.to_string())
        .or_else(|| report.undecided.first().cloned())
        .unwrap_or_else(|| "?".to_string());
    let more = (report.violation_count() + report.undecided.len()).saturating_sub(1);
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
        sim_apps().replay_command(report)
    )
}

/// The closing lines. `undecided`: seeds whose checker gave up, printed only when there are
/// some (the line scripts read stays as it was), and failing the run like a violation.
fn summary(runs: u64, violations: usize, undecided: usize, started: Instant) {
    let elapsed = started.elapsed().as_secs_f64();
    if undecided > 0 {
        out!("sim: {undecided} seeds undecided (a checker spent its budget): not a pass");
    }
    out!("sim: {runs} runs, {violations} violations");
    out!(
        "elapsed {elapsed:.1} s, {:.1} ms per seed",
        elapsed * 1000.0 / runs.max(1) as f64
    );
}

fn exit_code(violations: usize, undecided: usize) -> ExitCode {
    if violations == 0 && undecided == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

#[cfg(feature = "sabotage")]
mod sabotage {
    use super::{sim_apps, SimArgs};
    use plumb_sim::sabotage::{by_name, expectation, hunt, set, Verdict, ALL};
    use std::process::ExitCode;

    /// `--sabotage NAME|all|list` without `--seed`: hunt for each breakage and require that the
    /// first seed reporting anything reports a property the breakage violates.
    pub fn gate(args: &SimArgs, name: &str) -> ExitCode {
        if name == "list" {
            for (_, n) in ALL {
                out!("{n}");
            }
            return ExitCode::SUCCESS;
        }
        let chosen: Vec<_> = ALL
            .iter()
            .filter(|(_, n)| name == "all" || *n == name)
            .collect();
        if chosen.is_empty() {
            eprintln!(
                "plumb sim: unknown sabotage {name:?}; `plumb sim --sabotage list` names them"
            );
            return ExitCode::from(2);
        }
        if args.app.is_some() || args.sketcher || args.partial || args.zz {
            eprintln!("plumb sim: --sabotage picks its own workload (plumb_sim::sabotage's table); leave out --app, --sketcher, --partial and --zz");
            return ExitCode::from(2);
        }
        // Every chosen breakage's workload resolved in this binary's registry before any hunt
        // runs: an application the binary lacks is an error naming it, not a skipped hunt.
        let apps = sim_apps();
        let mut hunts = Vec::new();
        for (s, n) in &chosen {
            let e = expectation(*s);
            match e.workload.resolve(&apps) {
                Ok(app) => hunts.push((*s, *n, e, app)),
                Err(why) => {
                    eprintln!("plumb sim: sabotage {n}: {why}");
                    return ExitCode::from(2);
                }
            }
        }
        let mut caught = 0;
        for (s, n, e, app) in hunts {
            let seeds = args.seeds.unwrap_or(e.seeds);
            let started = std::time::Instant::now();
            let verdict = hunt(
                s,
                (app, e.workload),
                e.properties,
                (args.u, args.r),
                args.start..args.start + seeds,
                args.jobs,
            );
            let replay = |seed: u64| {
                format!(
                    "plumb sim --sabotage {n} --seed {seed} --u {} --r {}",
                    args.u, args.r
                )
            };
            let took = started.elapsed().as_secs_f64();
            match &verdict {
                Verdict::Caught { seed, property } => {
                    caught += 1;
                    out!("sabotage {n} caught by {property} at seed {seed} ({took:.0} s) — replay: {}", replay(*seed));
                }
                Verdict::WrongProperty { seed, found } => out!(
                    "sabotage {n} NOT caught by its property: seed {seed} reported {} where one of {:?} was expected — replay: {}",
                    found.join(", "),
                    e.properties,
                    replay(*seed)
                ),
                Verdict::NotCaught { seeds } => out!(
                    "sabotage {n} NOT caught: {seeds} seeds of {} from seed {} reported nothing (expected one of {:?})",
                    workload_text(e.workload),
                    args.start,
                    e.properties
                ),
            }
        }
        out!(
            "sabotage: {caught} of {} caught, each by a property it breaks",
            chosen.len()
        );
        if caught == chosen.len() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }

    /// How a hunt's workload reads in its verdict: what `plumb sim` runs it with.
    fn workload_text(w: plumb_sim::sabotage::Workload) -> String {
        let sketcher = if w.sketcher { " --sketcher" } else { "" };
        let partial = if w.partial { " --partial" } else { "" };
        let zz = if w.zz { " --zz" } else { "" };
        let quiet = if w.quiet { " --no-faults" } else { "" };
        format!("--app {}{sketcher}{partial}{zz}{quiet}", w.app)
    }

    /// `--sabotage NAME --seed N`: switch it on and run the table's workload.
    pub fn enable_for_replay(args: &mut SimArgs, name: &str) -> Result<(), String> {
        let s = by_name(name).ok_or_else(|| {
            format!("unknown sabotage {name:?}; `plumb sim --sabotage list` names them")
        })?;
        let workload = expectation(s).workload;
        let app = workload
            .resolve(&sim_apps())
            .map_err(|why| format!("sabotage {name}: {why}"))?;
        args.app = Some(app.name().to_string());
        args.sketcher = workload.sketcher;
        args.partial = workload.partial;
        args.zz = workload.zz;
        args.no_faults = workload.quiet;
        set(Some(s));
        Ok(())
    }
}

#[cfg(not(feature = "sabotage"))]
mod sabotage {
    use super::SimArgs;
    use std::process::ExitCode;

    const NONE: &str = "this build has no sabotage switches (build with --features sabotage)";

    pub fn gate(_args: &SimArgs, _name: &str) -> ExitCode {
        eprintln!("plumb sim: {NONE}");
        ExitCode::from(2)
    }

    pub fn enable_for_replay(_args: &mut SimArgs, _name: &str) -> Result<(), String> {
        Err(NONE.to_string())
    }
}
