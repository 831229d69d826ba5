//! The nemesis: faults injected into a real plumb cluster, one at a time, under a Redis load
//! whose every operation is checked for linearizability.
//!
//! For each fault (kill with `SIGKILL` then restart, pause with `SIGSTOP` then `SIGCONT`,
//! partition with packet-filter rules then heal) and each role (the primary's node, then the
//! node next in line to be primary), the harness
//! 1. waits until every node has caught up and measures the fault-free rate for a while,
//! 2. injects the fault, holds it, heals it, and watches the load recover,
//! 3. reports the longest window with no successful operation (from the fault on) and how long
//!    after healing the load was back to half its fault-free rate.
//!
//! At the end every key is read once more and the whole history is checked: a lost
//! acknowledged write or a stale read is a linearizability violation. Safety failures (a
//! violation, a process that exits) fail the run; the timing figures are reported against
//! their targets ([`MAX_GAP`], [`MAX_BACK_TO_HALF`]) but never fail it, as wall time on a
//! shared machine is a measurement, not a property.

pub mod load;
pub mod measure;
pub mod partition;
pub mod processes;

use load::{Load, Recorder};
use measure::{back_to_half, longest_gap, rate, Nanos};
use partition::Firewall;
use processes::{host, Processes};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Target: no window without a successful operation longer than this, for any single fault.
pub const MAX_GAP: Duration = Duration::from_secs(1);
/// Target: back to half the fault-free rate within this long of healing.
pub const MAX_BACK_TO_HALF: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// SIGKILL, then restart from its disk.
    Kill,
    /// SIGSTOP, then SIGCONT.
    Pause,
    /// Every packet from or to the node dropped, then the rules removed.
    Partition,
}

impl Fault {
    pub const ALL: [Fault; 3] = [Fault::Kill, Fault::Pause, Fault::Partition];

    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Pause => "pause",
            Fault::Partition => "partition",
        }
    }

    /// `kill`, `pause`, `partition`, a comma-separated list of them, or `all`.
    pub fn parse_list(text: &str) -> Result<Vec<Fault>, String> {
        if text == "all" {
            return Ok(Fault::ALL.to_vec());
        }
        text.split(',')
            .map(|name| {
                Fault::ALL
                    .into_iter()
                    .find(|f| f.name() == name.trim())
                    .ok_or_else(|| format!("unknown fault `{name}`: give kill, pause, partition, a list of them, or all"))
            })
            .collect()
    }
}

/// Which node a fault hits, named by its role when the fault starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The node hosting the current primary.
    Primary,
    /// The node hosting the order replica that is primary in the next view: the one a view
    /// change would hand the role to.
    NextPrimary,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::NextPrimary => "next-primary",
        }
    }
}

pub struct Options {
    /// The `plumb` binary: `init`, the nodes and the gateway.
    pub exe: PathBuf,
    /// A fresh directory for the cluster (its data and every process's log).
    pub dir: PathBuf,
    pub u: u16,
    pub r: u16,
    /// The nodes take ports from here (node `i` on `127.0.0.(10+i)`), the gateway `+90`.
    pub base_port: u16,
    pub faults: Vec<Fault>,
    /// Closed-loop Redis clients.
    pub clients: u64,
    /// Fault-free load measured before each fault: the baseline rate.
    pub baseline: Duration,
    /// How long each fault lasts.
    pub hold: Duration,
    /// How long the load is watched after healing.
    pub recover: Duration,
    /// Print a line per fault as it ends.
    pub progress: bool,
}

/// What one fault did.
#[derive(Clone, Debug, Serialize)]
pub struct Episode {
    pub fault: Fault,
    pub role: Role,
    pub node: usize,
    /// Successful operations per second before the fault.
    pub baseline_ops_per_s: f64,
    /// Successful operations per second while the fault lasted.
    pub faulty_ops_per_s: f64,
    /// The longest window with no successful operation, from the fault to the end of the
    /// observation, and when it started (after the fault).
    #[serde(serialize_with = "millis")]
    pub longest_gap: Duration,
    #[serde(serialize_with = "millis")]
    pub gap_started_after: Duration,
    /// From healing until a 500 ms window ran at half the baseline rate; `None`: not within
    /// the observation.
    #[serde(serialize_with = "millis_opt")]
    pub back_to_half: Option<Duration>,
    /// The view before the fault and after the observation.
    pub views: (u64, u64),
    /// How long the cluster took to catch up before this fault was injected.
    #[serde(serialize_with = "millis")]
    pub settled_in: Duration,
}

impl Episode {
    pub fn meets_targets(&self) -> bool {
        self.longest_gap < MAX_GAP && self.back_to_half.is_some_and(|d| d <= MAX_BACK_TO_HALF)
    }
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

fn millis_opt<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&(d.as_millis() as u64)),
        None => s.serialize_none(),
    }
}

/// One cluster's run.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// `u1r1`.
    pub shape: String,
    pub episodes: Vec<Episode>,
    /// Faults not run here, and why (partitions without root).
    pub skipped: Vec<String>,
    /// Nodes still out of the cluster's view (or behind it) 60 s after a fault healed: which,
    /// before which fault, and where their `/status` and `/metrics` of that moment were saved
    /// (docs/robustness.md, "a node that stays out of the cluster's view").
    pub left_behind: Vec<String>,
    /// Operations in the history, and how many have no answer (errors, timeouts).
    pub operations: usize,
    pub unanswered: usize,
    /// `None`: linearizable. Otherwise what the checker found (a violation, or that it could
    /// not decide).
    pub linearizability_failure: Option<String>,
}

impl Outcome {
    pub fn is_safe(&self) -> bool {
        self.linearizability_failure.is_none()
    }
}

/// Runs every fault of `o` on one fresh cluster. An `Err` is a harness or cluster failure (a
/// process exited, the cluster did not come up or catch up): the run could not finish.
pub fn run(o: &Options) -> Result<Outcome, String> {
    let mut processes = Processes::init(&o.exe, &o.dir, o.u, o.r, o.base_port, o.clients as usize)?;
    let mut skipped = Vec::new();
    let firewall = if o.faults.contains(&Fault::Partition) {
        match Firewall::open() {
            Ok(f) => Some(f),
            Err(e) => {
                skipped.push(format!("partition skipped: {e}"));
                None
            }
        }
    } else {
        None
    };
    processes.start_all()?;
    let recorder = Recorder::new();
    let load = Load::start(&recorder, processes.resp_port, o.clients);
    let mut left_behind = Vec::new();
    let result = episodes(
        o,
        &mut processes,
        firewall.as_ref(),
        &recorder,
        &load,
        &mut left_behind,
    );
    load.stop();
    let episodes = result?;
    load::final_reads(
        &recorder,
        processes.resp_port,
        o.clients,
        Duration::from_secs(30),
    )?;
    processes.check_running()?;
    drop(processes);
    let history = recorder.history();
    let operations = history.len();
    let unanswered = history.ops().iter().filter(|op| !op.is_complete()).count();
    let outcome = plumb_lincheck::check(&plumb_lincheck::kv::BytesKv::new(), &history);
    Ok(Outcome {
        shape: format!("u{}r{}", o.u, o.r),
        episodes,
        skipped,
        left_behind,
        operations,
        unanswered,
        linearizability_failure: (!outcome.is_linearizable()).then(|| outcome.to_string()),
    })
}

fn episodes(
    o: &Options,
    processes: &mut Processes,
    firewall: Option<&Firewall>,
    recorder: &Recorder,
    load: &Load,
    left_behind: &mut Vec<String>,
) -> Result<Vec<Episode>, String> {
    let mut episodes = Vec::new();
    for &fault in &o.faults {
        if fault == Fault::Partition && firewall.is_none() {
            continue;
        }
        for role in [Role::Primary, Role::NextPrimary] {
            let (settled_in, behind) = settle(processes)?;
            if !behind.is_empty() {
                // A liveness miss, reported, not a reason to stop: the harness fails on safety
                // (a violation, a dead process) only. The next fault is then a second one.
                // What the nodes say of themselves now is kept for finding out why.
                let saved = save_left_behind(o, processes, &behind, fault, role);
                let line = format!(
                    "nemesis: {} after 60 s, before {} {}; {saved}",
                    behind.description,
                    fault.name(),
                    role.name()
                );
                eprintln!("{line}; going on with the next fault");
                left_behind.push(line);
            }
            std::thread::sleep(o.baseline);
            let baseline_from = recorder.now() - o.baseline.as_nanos() as Nanos;
            let primary = processes.primary().ok_or("no node names a primary")?;
            let node = match role {
                Role::Primary => primary,
                Role::NextPrimary => (primary + 1) % processes.node_count(),
            };
            let view_before = view(processes);
            let faulted = recorder.now();
            match fault {
                Fault::Kill => processes.kill(node),
                Fault::Pause => processes.pause(node),
                Fault::Partition => firewall
                    .expect("checked above")
                    .isolate(host(node as u16))?,
            }
            std::thread::sleep(o.hold);
            let healed = recorder.now();
            match fault {
                Fault::Kill => processes.start_node(node)?,
                Fault::Pause => processes.resume(node),
                Fault::Partition => firewall.expect("checked above").heal()?,
            }
            std::thread::sleep(o.recover);
            let end = recorder.now();
            processes.check_running()?;
            let successes = recorder.successes();
            let baseline = rate(&successes, baseline_from, faulted);
            if baseline == 0.0 {
                return Err(format!(
                    "no operation succeeded in the {:?} before the fault (last error: {:?})",
                    o.baseline,
                    load.last_error()
                ));
            }
            let (gap, gap_at) = longest_gap(&successes, faulted, end);
            let episode = Episode {
                fault,
                role,
                node,
                baseline_ops_per_s: baseline,
                faulty_ops_per_s: rate(&successes, faulted, healed),
                longest_gap: gap,
                gap_started_after: Duration::from_nanos(gap_at - faulted),
                back_to_half: back_to_half(&successes, baseline, healed, end),
                views: (view_before, view(processes)),
                settled_in,
            };
            if o.progress {
                eprintln!("{}", describe(&episode));
            }
            episodes.push(episode);
        }
    }
    Ok(episodes)
}

/// One line for an episode, as the progress output and the report print it.
pub fn describe(e: &Episode) -> String {
    format!(
        "{:<9} {:<12} node {}: longest gap {:>5} ms ({} ms after the fault), back to half {} after healing; {:.0} ops/s before, {:.0} during; views {}->{}{}",
        e.fault.name(),
        e.role.name(),
        e.node,
        e.longest_gap.as_millis(),
        e.gap_started_after.as_millis(),
        e.back_to_half.map_or("never".to_string(), |d| format!("{} ms", d.as_millis())),
        e.baseline_ops_per_s,
        e.faulty_ops_per_s,
        e.views.0,
        e.views.1,
        if e.meets_targets() { "" } else { "  [target missed]" },
    )
}

/// The highest view any node reports.
fn view(processes: &Processes) -> u64 {
    (0..processes.node_count())
        .filter_map(|n| processes.status(n)?.get("view")?.as_u64())
        .max()
        .unwrap_or(0)
}

/// Nodes [`settle`] gave up waiting for: which, and how they differed from the others.
#[derive(Default)]
struct Behind {
    nodes: Vec<usize>,
    description: String,
}

impl Behind {
    fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Every node's `/status` and `/metrics` as they are now, in one file of the cluster's
/// directory beside the logs, for the nodes `behind` left behind; what to print of it.
fn save_left_behind(
    o: &Options,
    processes: &Processes,
    behind: &Behind,
    fault: Fault,
    role: Role,
) -> String {
    let mut text = String::new();
    for n in 0..processes.node_count() {
        let mark = if behind.nodes.contains(&n) {
            " (left behind)"
        } else {
            ""
        };
        let get = |path| {
            processes::http_get(
                processes.admin(n),
                path,
                Duration::from_secs(1),
                Duration::from_secs(2),
            )
            .unwrap_or_else(|| "(no answer)".to_string())
        };
        text.push_str(&format!(
            "==== node {n}{mark}: /status\n{}\n==== node {n}: /metrics\n{}\n",
            get("/status"),
            get("/metrics")
        ));
    }
    let path = o
        .dir
        .join(format!("left-behind-{}-{}.txt", fault.name(), role.name()));
    let why: Vec<String> = behind
        .nodes
        .iter()
        .map(|&n| {
            let last = processes
                .status(n)
                .and_then(|s| s.get("last_view_change")?.as_str().map(str::to_string))
                .unwrap_or_else(|| "none".to_string());
            format!("node {n}'s last view change asked for: {last}")
        })
        .collect();
    match std::fs::write(&path, text) {
        Ok(()) => format!(
            "{}; status and metrics in {}",
            why.join(", "),
            path.display()
        ),
        Err(e) => format!(
            "{} (could not save {}: {e})",
            why.join(", "),
            path.display()
        ),
    }
}

/// Waits until every node answers, has committed as far as the furthest one had when the
/// wait began, and works in the same view as the others (a node back from a fault has caught
/// up and votes again: catching up on committed batches alone is not that, and a node still
/// in an old view made the next fault a second one). Returns how long it took, and after 60 s
/// of waiting, which nodes were still behind and how (empty if none).
fn settle(processes: &mut Processes) -> Result<(Duration, Behind), String> {
    let start = Instant::now();
    let target = (0..processes.node_count())
        .filter_map(|n| processes.last_committed(n))
        .max()
        .unwrap_or(0);
    loop {
        processes.check_running()?;
        let statuses: Vec<Option<(u64, u64)>> = (0..processes.node_count())
            .map(|n| {
                let s = processes.status(n)?;
                Some((s.get("last_committed")?.as_u64()?, s.get("view")?.as_u64()?))
            })
            .collect();
        let top_view = statuses.iter().flatten().map(|(_, v)| *v).max();
        let behind: Vec<usize> = (0..processes.node_count())
            .filter(|&n| statuses[n].is_none_or(|(c, v)| c < target || Some(v) != top_view))
            .collect();
        if behind.is_empty() {
            return Ok((start.elapsed(), Behind::default()));
        }
        if start.elapsed() > Duration::from_secs(60) {
            let how: Vec<String> = behind
                .iter()
                .map(|&n| match statuses[n] {
                    Some((c, v)) => format!("node {n} at sequence {c} in view {v}"),
                    None => format!("node {n} not answering"),
                })
                .collect();
            return Ok((
                start.elapsed(),
                Behind {
                    description: format!(
                        "{} (the others reached sequence {target} and view {top_view:?})",
                        how.join(", ")
                    ),
                    nodes: behind,
                },
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
