//! Deterministic simulation of whole plumb clusters: plumb's main test.
//!
//! [`run_app_seed`] builds one seeded world (every authentication, order and execution replica
//! and a few clients, in one thread, on simulated time), runs the workload of an application
//! under test ([`SimApp`], an adapter its own crate supplies: `plumb_kv::sim::Kv`,
//! `plumb_bank::sim::BankSim`, ...) through it while
//! the seed's fault plan loses, duplicates, delays and reorders messages, partitions the
//! network, crashes and restarts replicas (losing unsynced writes, sometimes flipping a bit on
//! disk), drifts clocks and turns up to `r` replicas per stage Byzantine (half the faulty order
//! replicas with clocks that stand still, swing or run at the wrong rate). Faults stop at
//! `heal_at`; the run continues for a liveness window on a reliable network. The checkers then
//! judge the run by the library properties LS1-LS7 and LL1-LL2 (seed 004 §4.2.1), the stage
//! properties they rest on where they can be observed (§5.4), linearizability of the correct
//! clients' histories against the application's model, agreed time against real time
//! (TIME-bound), answers only to requests of the client's own life (CLIENT-one-life), and the
//! application's own invariants.
//! Same seed, same run: a failing seed replays exactly.
//!
//! The simulator depends on no application: each application's crate owns its adapter, and a
//! binary registers the ones it links ([`SimApps`]). The one adapter here is speculation's
//! ([`spec::Spec`]): speculative sessions are a capability of the simulated world (`world/`),
//! not an application, and the adapter's workload is half of them.
//!
//! Files: `app.rs` (what the simulator needs of an application), `registry.rs` (a binary's
//! adapters by name), `spec.rs` (speculative sessions' workload), `sabotage.rs` (the gate),
//! `config.rs` (the seed's whole configuration), `faults.rs` (the fault plan), `world/` (event
//! loop and stage driver), `network.rs`, `disk.rs`, `workload.rs`, `check/` (one file per
//! property group), `trace.rs`. Byzantine behaviours come from `plumb-adversary`.

pub mod app;
pub mod check;
pub mod config;
mod disk;
pub mod faults;
mod keys;
mod network;
mod op_record;
mod registry;
pub mod rng;
pub mod spec;
#[cfg(test)]
mod test_kv;
mod trace;
mod workload;
mod world;

pub use app::{AppViolation, Executed, OpRecord, OpResponse, SimApp};
pub use check::Violation;
pub use config::SimConfig;
pub use faults::Behaviour;
/// How Byzantine replicas lie in an application's terms ([`SimApp::forgery`]).
pub use plumb_adversary::{AnyApp, AppForgery};
/// The linearizability checker, whose [`lincheck::Model`] an application supplies.
pub use plumb_lincheck as lincheck;
pub use registry::{SimApps, Simulated};
pub use rng::SimRng;

/// The sabotage switches of the stages and the gate that proves each is caught by the property
/// it breaks (only with the `sabotage` feature).
#[cfg(feature = "sabotage")]
pub mod sabotage;

use plumb_config::{Faults, Quorums};
use plumb_wire::Micros;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What to run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    pub seed: u64,
    pub u: u16,
    pub r: u16,
    /// Print a compact event log to stdout.
    pub trace: bool,
    /// False: a fault-free run (no loss, crashes, partitions or Byzantine principals).
    pub faults: bool,
    /// Event budget: a run that needs more is stopped and reported as a message storm.
    pub max_events: u64,
    /// Correct clients read through a Prophecy sketcher (fast reads to one replica, checked
    /// against its history); their histories are then judged delay-once linearizable.
    pub sketcher: bool,
    /// Execution replicas load checkpoints on demand and hold part of the state until their
    /// background fill is done (`load_objects_on_demand`, docs/objects.md "Partial state"); a
    /// correct one loses its disk mid-run, and three in four faulty ones serve wrong objects.
    pub partial: bool,
    /// ZZ mode (docs/zz.md): only `max(u, r) + 1` execution replicas execute, the rest sleep
    /// until `r + 1` order replicas wake them; the plan's faulty and crashing execution
    /// replicas are mostly actives, so sleepers must wake. Needs `u >= 1` (a sleeper).
    pub zz: bool,
    /// Tentative agreement (docs/protocol.md): `None` draws it per seed (half the seeds),
    /// `Some` sets it, as a seed found before it existed must run to keep its scenario.
    pub tentative: Option<bool>,
    /// The linearizability checker's step budget per partition; a history it cannot decide
    /// within it is reported as undecided, which fails the seed like a violation.
    pub check_max_steps: u64,
    /// Execution replicas beyond the minimum `u + max(u, r) + 1` (`plumb init --exec`): room
    /// for selective execution to spread work. Every quorum stays what `u` and `r` make it.
    pub extra_exec: usize,
}

/// Events one seed may take by default. Correct runs take tens of thousands to a few hundred
/// thousand; far beyond that a protocol is flooding (and the seed would blow the time budget).
pub const DEFAULT_MAX_EVENTS: u64 = 3_000_000;

impl SimOptions {
    pub fn new(seed: u64, u: u16, r: u16) -> SimOptions {
        SimOptions {
            seed,
            u,
            r,
            trace: false,
            faults: true,
            max_events: DEFAULT_MAX_EVENTS,
            sketcher: false,
            partial: false,
            zz: false,
            tentative: None,
            check_max_steps: plumb_lincheck::DEFAULT_MAX_STEPS,
            extra_exec: 0,
        }
    }
}

/// Counts from one run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub events: u64,
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub dropped_at_down_node: u64,
    pub sent_to_nobody: u64,
    pub byzantine_lies: u64,
    pub crashes: u64,
    pub completed: u64,
    pub pushes: u64,
    /// Early (speculative) replies that reached clients.
    pub early_replies: u64,
    /// Sleepers woken (ZZ mode).
    pub woken: u64,
    /// Woken replicas that went back to sleep (ZZ mode).
    pub slept: u64,
    pub agreed_batches: u64,
    pub sim_end: Micros,
    /// The slowest operation of a correct client invoked once the cluster had settled after
    /// faults stopped (zero when liveness is not judged).
    pub slowest_settled: Micros,
    /// Restarts of correct clients that found no trustworthy record and learned their number.
    pub client_restarts_without_record: u64,
    /// The stages' own counters, summed over every principal running at the end (a crash
    /// loses a stage's counts): which paths a run took.
    pub counters: plumb_core::Counters,
}

/// The verdict on one seed.
#[derive(Clone, Debug)]
pub struct SeedReport {
    /// The application under test ([`SimApp::name`]).
    pub app: &'static str,
    pub seed: u64,
    pub u: u16,
    pub r: u16,
    /// The reads went through a Prophecy sketcher.
    pub sketcher: bool,
    /// The run was asked for replicas that hold part of the state (`--partial`).
    pub partial: bool,
    /// Execution replicas loaded checkpoints on demand (`--partial`, or implied by `--zz`).
    pub on_demand: bool,
    /// ZZ mode (`--zz`).
    pub zz: bool,
    /// Tentative agreement as asked for (`--tentative`); `None`: drawn per seed.
    pub tentative: Option<bool>,
    /// Execution replicas beyond the minimum (`--extra-exec`).
    pub extra_exec: usize,
    /// False for safety-only seeds (more than `u` failures): liveness was not judged.
    pub liveness_checked: bool,
    pub violations: Vec<Violation>,
    /// Violations beyond the stored cap.
    pub suppressed_violations: usize,
    /// Checks that gave up without a verdict (the linearizability checker's step budget ran
    /// out). Not a pass: the seed fails as if a property were violated.
    pub undecided: Vec<String>,
    /// Things worth knowing that are not violations (e.g. a history the checker gave up on).
    pub warnings: Vec<String>,
    pub stats: Stats,
    /// Digest of every event in order: equal for two runs of one seed.
    pub trace_digest: u64,
}

impl SeedReport {
    /// Every property was checked and none was violated.
    pub fn ok(&self) -> bool {
        self.violations.is_empty() && self.undecided.is_empty()
    }

    pub fn violation_count(&self) -> usize {
        self.violations.len() + self.suppressed_violations
    }

    /// The command that replays this seed (its application named: see
    /// [`SimApps::replay_command`] for a binary's own lines).
    pub fn replay_command(&self) -> String {
        self.replay_command_with_default(None)
    }

    /// The command that replays this seed in a binary whose default application is
    /// `default_app`: `--app` is left out for it.
    pub fn replay_command_with_default(&self, default_app: Option<&str>) -> String {
        let app = if Some(self.app) == default_app {
            String::new()
        } else {
            format!(" --app {}", self.app)
        };
        let sketcher = if self.sketcher { " --sketcher" } else { "" };
        let partial = if self.partial { " --partial" } else { "" };
        let zz = if self.zz { " --zz" } else { "" };
        let tentative = match self.tentative {
            None => "",
            Some(true) => " --tentative on",
            Some(false) => " --tentative off",
        };
        let extra_exec = match self.extra_exec {
            0 => String::new(),
            n => format!(" --extra-exec {n}"),
        };
        format!(
            "plumb sim --seed {} --u {} --r {}{app}{sketcher}{partial}{zz}{tentative}{extra_exec}",
            self.seed, self.u, self.r
        )
    }
}

/// The configuration a seed runs with (printable).
pub fn seed_config(opts: &SimOptions) -> SimConfig {
    let minimal = Quorums::minimal(Faults::new(opts.u, opts.r));
    let quorums = Quorums {
        exec: minimal.exec + opts.extra_exec,
        ..minimal
    };
    let mut cfg = SimConfig::generate_for(opts.seed, quorums, opts.faults);
    if let Some(on) = opts.tentative {
        cfg.protocol.tentative_agreement = on;
    }
    if opts.sketcher {
        // A read-mostly workload, as Prophecy is for: most reads go through the sketcher.
        cfg.sketcher = true;
        cfg.workload.read_only_gets = 0.9;
        cfg.workload.extra_gets = cfg.workload.extra_gets.max(0.5);
        // Half the faulty execution replicas answer reads from the past instead: stale fast
        // replies, which only the sketcher's check stands between and the client.
        let mut rng = rng::SimRng::new(opts.seed, "sketcher byzantine");
        for (p, behaviour) in cfg.plan.byzantine.iter_mut() {
            if matches!(p, plumb_wire::Principal::Exec(_)) && rng.chance(0.5) {
                *behaviour = plumb_adversary::Behaviour::StaleReads;
            }
        }
    }
    if opts.partial {
        cfg.protocol.load_objects_on_demand = true;
        let q = cfg.protocol.quorums;
        faults::hold_part_of_the_state(&mut cfg.plan, &q, cfg.heal_at, cfg.seed);
    }
    if opts.zz {
        cfg.protocol.zz = true;
        // As a cluster file with `zz = true` has it (docs/zz.md).
        cfg.protocol.load_objects_on_demand = true;
        // Lost and late messages make a correct active's report late: with the default floor
        // most seeds wake their sleepers early. Half the seeds wait long, so that a sleeper
        // wakes for the plan's faults, in the middle of the run.
        if rng::SimRng::new(opts.seed, "zz timeout").chance(0.5) {
            cfg.protocol.zz_report_timeout_us = 2_000_000;
        }
        let q = cfg.protocol.quorums;
        faults::fault_the_actives(&mut cfg.plan, &q, cfg.seed);
    }
    cfg
}

/// Run `seeds` of `app` at (`u`, `r`) and panic if any violates a property, listing each failing
/// seed with the command that replays it and its first violations. Returns how many operations
/// the correct clients completed over all seeds, so a caller can check that the sweep did work.
/// This is how an application's own tests sweep it (`examples/bank/tests/sim_sweep.rs`).
pub fn assert_seeds_pass<A: SimApp>(
    app: &A,
    u: u16,
    r: u16,
    seeds: impl IntoIterator<Item = u64>,
) -> u64 {
    assert_runs_pass(app, seeds.into_iter().map(|s| SimOptions::new(s, u, r)))
}

/// [`assert_seeds_pass`] over runs given whole: a regression seed kept with the options it
/// was found with.
pub fn assert_runs_pass<A: SimApp>(app: &A, runs: impl IntoIterator<Item = SimOptions>) -> u64 {
    let mut failures = Vec::new();
    let mut completed = 0;
    for opts in runs {
        let report = run_app_seed(app, &opts);
        completed += report.stats.completed;
        if !report.ok() {
            let first: Vec<String> = report
                .violations
                .iter()
                .map(|v| v.to_string())
                .chain(report.undecided.iter().cloned())
                .take(3)
                .collect();
            failures.push(format!(
                "{} -> {}",
                report.replay_command(),
                first.join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "failing seeds:\n{}",
        failures.join("\n")
    );
    completed
}

/// The configuration a seed of `app` runs with: [`seed_config`], adjusted by the application
/// ([`SimApp::configure`]).
pub fn app_seed_config<A: SimApp>(app: &A, opts: &SimOptions) -> SimConfig {
    let mut cfg = seed_config(opts);
    app.configure(&mut cfg);
    cfg
}

/// Run one seed of application `app` and judge it. A panic in any stage (or in the
/// application) is reported as a violation ("panic"): hostile input must never panic.
pub fn run_app_seed<A: SimApp>(app: &A, opts: &SimOptions) -> SeedReport {
    let cfg = app_seed_config(app, opts);
    if opts.trace {
        println!("{cfg}");
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut world = world::World::new(app, cfg, opts.trace, opts.max_events);
        world.check_max_steps = opts.check_max_steps;
        world.run();
        let mut report = world.finish(opts.u, opts.r);
        // What was asked for, so that the replay command runs this seed again: `--zz` implies
        // loads on demand without `--partial`'s plan.
        report.partial = opts.partial;
        report.tentative = opts.tentative;
        report.extra_exec = opts.extra_exec;
        report
    }));
    outcome.unwrap_or_else(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        SeedReport {
            app: app.name(),
            seed: opts.seed,
            u: opts.u,
            r: opts.r,
            sketcher: opts.sketcher,
            partial: opts.partial,
            on_demand: opts.partial || opts.zz,
            zz: opts.zz,
            tentative: opts.tentative,
            extra_exec: opts.extra_exec,
            liveness_checked: false,
            violations: vec![Violation {
                property: "panic",
                detail: text,
            }],
            suppressed_violations: 0,
            undecided: Vec::new(),
            warnings: Vec::new(),
            stats: Stats::default(),
            trace_digest: 0,
        }
    })
}
