//! The fault plan of one seed: who is Byzantine and how, who crashes when, which partitions
//! come and go, and how every clock drifts. Drawn once, up front, so a seed's whole adversary is
//! printable (`plumb sim --seed S --trace`).
//!
//! The budget follows the fault model (seed 004 ch. 2): at most `r` Byzantine replicas per
//! stage. A *liveness* seed has at most `u` failed replicas per stage once faults stop (Byzantine
//! ones count as failed; every other crashed replica restarts before `heal_at`). A *safety-only*
//! seed may crash any number of replicas and leave them down: safety must hold however many
//! nodes crash, only liveness needs at most `u` failures, so its liveness check is skipped.
//!
//! Correct clients crash too, and restart before `heal_at`, sometimes having lost their record
//! (docs/protocol.md "Clients after a crash"): the operation outstanding at the crash is then
//! abandoned, its outcome unknown, and the restarted client must neither reuse a number for
//! another operation's answer nor get stuck behind a request its previous life stranded.

use crate::rng::SimRng;
use plumb_config::Quorums;
use plumb_wire::{AuthId, ExecId, Micros, OrderId, Principal};
use std::collections::BTreeMap;
use std::fmt;

pub use plumb_adversary::Behaviour;

/// A crash of a replica at `at`, restarted at `restart_at` (never, if `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crash {
    pub node: Principal,
    pub at: Micros,
    pub restart_at: Option<Micros>,
    /// What happens to its disk before the restart.
    pub disk: DiskFault,
}

/// Damage to a replica's durable records, found when it restarts. Every stage must come back
/// from each: authentication and execution replicas by fetching state from peers, order
/// replicas by the recovery protocol (a new incarnation, a fence, no vote until past it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskFault {
    None,
    /// One bit of one durable record flipped.
    FlipBit,
    /// The whole store is gone (a lost disk, a deleted data directory).
    Wipe,
    /// One record whose key starts with this prefix cannot be read back.
    LoseRecord(&'static str),
    /// A damaged span hides a key's newest value and its older one comes back as if valid; the
    /// store reports only that an unidentified span was damaged.
    RollBack,
}

impl DiskFault {
    pub fn damages(self) -> bool {
        self != DiskFault::None
    }
}

impl fmt::Display for DiskFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiskFault::None => Ok(()),
            DiskFault::FlipBit => f.write_str(", disk bit flip"),
            DiskFault::Wipe => f.write_str(", disk wiped"),
            DiskFault::LoseRecord(prefix) => write!(f, ", a record {prefix}* lost"),
            DiskFault::RollBack => f.write_str(", a key rolled back by a damaged span"),
        }
    }
}

/// Targeted amnesia: at `at`, wipe the correct order replica that sent the newest COMMIT and
/// cut off, until `until`, the other replicas that sent one for that batch, so that a quorum
/// must form from replicas that never saw it. The wiped replica restarts at `restart_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetedAmnesia {
    pub at: Micros,
    pub restart_at: Micros,
    pub until: Micros,
}

/// See [`FaultPlan::crash_ahead`]: what a primary must survive for sending ahead of its disk.
#[derive(Debug, Clone, Copy)]
pub struct CrashAhead {
    pub at: Micros,
    pub until: Micros,
    pub down: Micros,
    pub times: u32,
}

/// Between `from` and `until`, messages between `side` and everyone else are lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub from: Micros,
    pub until: Micros,
    pub side: Vec<Principal>,
}

/// A principal's local clock: `offset + global * (1 + drift_ppm / 10^6)`, bent further on a
/// faulty order replica (`bend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Clock {
    pub offset_us: u64,
    pub drift_ppm: i64,
    pub bend: Option<Bend>,
}

/// How a faulty order replica's clock lies, to bend agreed time as its primary: every bend
/// keeps the clock monotonic (the stage code is correct code; only its clock lies).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bend {
    /// Stands still from `at` for `len`, then jumps back to its own time: as primary, a batch
    /// time held still, then a leap.
    Freeze { at: Micros, len: Micros },
    /// Swings `amplitude` either side of its own time, a full swing every `period` (at least
    /// five amplitudes: never backwards, whatever the drift).
    Swing { amplitude: Micros, period: Micros },
    /// Runs fast or slow by this many parts per thousand.
    Rate { permille: i64 },
}

impl Clock {
    pub fn local(&self, global: Micros) -> Micros {
        // The clock's own time at global `g`: offset and drift.
        let own = |g: Micros| {
            self.offset_us as i128 + g as i128 + (g as i128 * self.drift_ppm as i128) / 1_000_000
        };
        let t = match self.bend {
            None => own(global),
            Some(Bend::Freeze { at, len }) if global >= at && global < at.saturating_add(len) => {
                own(at)
            }
            Some(Bend::Freeze { .. }) => own(global),
            Some(Bend::Swing { amplitude, period }) => {
                // A triangle wave in [-amplitude, amplitude].
                let period = period.max(1) as i128;
                let phase = (global as i128) % period;
                let a = amplitude as i128;
                let wave = if phase < period / 2 {
                    -a + 4 * a * phase / period
                } else {
                    3 * a - 4 * a * phase / period
                };
                own(global) + wave
            }
            Some(Bend::Rate { permille }) => own(global) + global as i128 * permille as i128 / 1000,
        };
        t.max(0) as Micros
    }

    /// How far this clock, unbent, is from global time at most until `end`.
    pub fn max_error(&self, end: Micros) -> Micros {
        let at_end = self.offset_us as i128 + (end as i128 * self.drift_ppm as i128) / 1_000_000;
        (self.offset_us as i128).abs().max(at_end.abs()) as Micros
    }

    /// The global duration of a local one (a timer set for `after` local micros).
    pub fn to_global(&self, after: Micros) -> Micros {
        let rate = 1_000_000i128 + self.drift_ppm as i128;
        ((after as i128 * 1_000_000 + rate - 1) / rate).max(0) as Micros
    }
}

#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    /// False for safety-only seeds: more than `u` failures, liveness is not checked.
    pub liveness: bool,
    pub byzantine: BTreeMap<Principal, Behaviour>,
    /// Probability that a Byzantine replica (other than a silent one) corrupts a given message.
    pub byzantine_rate: f64,
    /// A client that reuses request numbers with other operations and sends garbage.
    pub byzantine_client: Option<u32>,
    pub crashes: Vec<Crash>,
    pub partitions: Vec<Partition>,
    pub targeted_amnesia: Option<TargetedAmnesia>,
    /// From `at` until `until`, the first correct order replica to send a PRE-PREPARE ahead
    /// of its disk crashes at once (power loss) and restarts `down` later; `times` such
    /// crashes, each armed again half a second after the previous restart.
    pub crash_ahead: Option<CrashAhead>,
    /// The same for execution replicas: from `at` until `until`, the first correct execution
    /// replica to send while a sync of its own is pending (a reply, report or fetch that left
    /// ahead of its checkpoint) crashes at once, losing the checkpoint, and restarts `down`
    /// later; `times` such crashes.
    pub exec_crash_ahead: Option<CrashAhead>,
    pub clocks: BTreeMap<Principal, Clock>,
    /// The plan restarts every execution replica while the order stage is cut off (the
    /// workload then sends every `Get` read-only).
    pub exec_restart_while_order_cut_off: bool,
}

impl FaultPlan {
    pub fn is_byzantine(&self, p: Principal) -> bool {
        match p {
            Principal::Client(c) => self.byzantine_client == Some(c),
            _ => self.byzantine.contains_key(&p),
        }
    }

    /// Replicas down at the end of the run.
    pub fn down_at_end(&self) -> Vec<Principal> {
        self.crashes
            .iter()
            .filter(|c| c.restart_at.is_none())
            .map(|c| c.node)
            .collect()
    }
}

/// The replicas of each stage.
pub fn stages(q: &Quorums) -> [Vec<Principal>; 3] {
    [
        AuthId::all(q.auth).map(Principal::Auth).collect(),
        OrderId::all(q.order).map(Principal::Order).collect(),
        ExecId::all(q.exec).map(Principal::Exec).collect(),
    ]
}

/// Draw the adversary of one seed. `heal_at`: when every network and crash fault stops.
pub fn generate(rng: &mut SimRng, q: &Quorums, clients: u32, heal_at: Micros) -> FaultPlan {
    let (u, r) = (q.faults.u as usize, q.faults.r as usize);
    let mut plan = FaultPlan {
        liveness: rng.chance(0.85),
        ..FaultPlan::default()
    };
    let stage_lists = stages(q);
    if r > 0 && rng.chance(0.75) {
        // In a liveness seed Byzantine replicas use up the stage's `u` budget.
        let per_stage_max = if plan.liveness { r.min(u) } else { r };
        for list in &stage_lists {
            if per_stage_max == 0 || !rng.chance(0.65) {
                continue;
            }
            let count = rng.range(1, per_stage_max as u64) as usize;
            for p in choose_byzantine(rng, list, count) {
                let behaviour = *rng
                    .pick(Behaviour::for_stage(p))
                    .unwrap_or(&Behaviour::Silent);
                plan.byzantine.insert(p, behaviour);
            }
        }
    }
    plan.byzantine_rate = if rng.chance(0.5) { 1.0 } else { 0.5 };
    if clients >= 2 && rng.chance(0.25) {
        plan.byzantine_client = Some(clients - 1);
    }
    plan.crashes = crashes(rng, &plan, &stage_lists, u, heal_at);
    plan.partitions = partitions(rng, &plan, &stage_lists, clients, heal_at);
    plan.targeted_amnesia = targeted_amnesia(rng, &plan, &stage_lists, u, heal_at);
    for p in stage_lists
        .iter()
        .flatten()
        .copied()
        .chain((0..clients).map(Principal::Client))
    {
        let clock = Clock {
            offset_us: rng.range(0, 100_000),
            drift_ppm: rng.range(0, 10_000) as i64 - 5_000,
            bend: None,
        };
        plan.clocks.insert(p, clock);
    }
    // Drawn last, so that adding it left every earlier draw of a seed as it was.
    exec_restart_while_order_cut_off(rng, &mut plan, &stage_lists, heal_at);
    // After that, for the same reason.
    client_crashes(rng, &mut plan, clients, heal_at);
    // And after that.
    plan.crash_ahead = crash_ahead(rng, &plan, &stage_lists, u, heal_at);
    // And after that.
    bend_clocks(rng, &mut plan, heal_at);
    // And after that.
    plan.exec_crash_ahead = exec_crash_ahead(rng, &plan, &stage_lists, u, heal_at);
    plan
}

/// The time adversary: half of the faulty order replicas get a clock that lies (`Bend`), on
/// top of what else they do. As primary each proposes batch times from it, which correct
/// backups must keep within `max_clock_skew_us` of their own clocks (TIME-bound).
fn bend_clocks(rng: &mut SimRng, plan: &mut FaultPlan, heal_at: Micros) {
    let faulty: Vec<Principal> = plan
        .byzantine
        .keys()
        .copied()
        .filter(|p| matches!(p, Principal::Order(_)))
        .collect();
    for p in faulty {
        if !rng.chance(0.5) {
            continue;
        }
        let bend = match rng.range(0, 2) {
            0 => Bend::Freeze {
                at: rng.range(0, heal_at),
                len: rng.range(500_000, 4_000_000),
            },
            1 => {
                let amplitude = rng.range(100_000, 2_000_000);
                Bend::Swing {
                    amplitude,
                    period: amplitude * rng.range(5, 10),
                }
            }
            _ => {
                let permille = rng.range(50, 500) as i64;
                Bend::Rate {
                    permille: if rng.chance(0.5) { permille } else { -permille },
                }
            }
        };
        if let Some(clock) = plan.clocks.get_mut(&p) {
            clock.bend = Some(bend);
        }
    }
}

/// A crash of the primary right after a PRE-PREPARE it sent ahead of its disk, restarting
/// before the backups' heartbeat would replace it: it must not propose that slot again. Once
/// restarted it is a correct replica (every vote it cast is on its disk), so a liveness seed
/// may combine it with a failed order replica, a Byzantine one included: the view change must
/// not wait for the faulty one to report a batch the restarted primary forgot (LL1).
fn crash_ahead(
    rng: &mut SimRng,
    plan: &FaultPlan,
    stages: &[Vec<Principal>; 3],
    u: usize,
    heal_at: Micros,
) -> Option<CrashAhead> {
    let latest = spare_order_replica(rng, plan, stages, u, heal_at, Spare::BesideFailures)?;
    Some(CrashAhead::draw(rng, latest))
}

impl CrashAhead {
    /// Armed from 0.3 s until `latest`, each crash down for 1 to 30 ms, one to three times.
    fn draw(rng: &mut SimRng, latest: Micros) -> CrashAhead {
        CrashAhead {
            at: rng.range(300_000, latest),
            until: latest,
            down: rng.range(1_000, 30_000),
            times: rng.range(1, 4) as u32,
        }
    }
}

/// Whether the plan makes a replica of `stage` Byzantine or crashes one.
fn stage_fails(plan: &FaultPlan, stage: &[Principal]) -> bool {
    stage
        .iter()
        .any(|p| plan.byzantine.contains_key(p) || plan.crashes.iter().any(|c| c.node == *p))
}

/// In 30% of seeds with `u >= 1`: execution replicas that send ahead of their checkpoint's
/// sync must survive losing it (they execute the batches again from the checkpoint they
/// recover, and say the same). In a liveness seed only when no execution replica fails
/// otherwise: the crashed one is the stage's failure while it is down.
fn exec_crash_ahead(
    rng: &mut SimRng,
    plan: &FaultPlan,
    stages: &[Vec<Principal>; 3],
    u: usize,
    heal_at: Micros,
) -> Option<CrashAhead> {
    if u == 0 || !rng.chance(0.3) {
        return None;
    }
    let latest = heal_at.saturating_sub(1_500_000);
    if (plan.liveness && stage_fails(plan, &stages[2])) || latest <= 600_000 {
        return None;
    }
    Some(CrashAhead::draw(rng, latest))
}

/// Up to two crashes of correct clients, each restarting within a second, most with their
/// disk damaged: the record of the last request lost (the case the recovery is for), the whole
/// store wiped, a bit flipped, or the record rolled back behind a damaged span.
fn client_crashes(rng: &mut SimRng, plan: &mut FaultPlan, clients: u32, heal_at: Micros) {
    if clients == 0 || !rng.chance(0.4) {
        return;
    }
    let latest = heal_at.saturating_sub(1_500_000);
    if latest <= 300_000 {
        return;
    }
    for _ in 0..rng.range(1, 2) {
        let c = rng.index(clients as usize) as u32;
        if plan.byzantine_client == Some(c) {
            continue;
        }
        let node = Principal::Client(c);
        let at = rng.range(200_000, latest);
        let restart_at = at + rng.range(1_000, 1_000_000);
        if plan
            .crashes
            .iter()
            .any(|x| x.node == node && overlaps(x, at, restart_at))
        {
            continue;
        }
        let disk = match rng.index(6) {
            0 => DiskFault::None,
            1 => DiskFault::Wipe,
            2 => DiskFault::FlipBit,
            3 => DiskFault::RollBack,
            _ => DiskFault::LoseRecord("client/out"),
        };
        plan.crashes.push(Crash {
            node,
            at,
            restart_at: Some(restart_at),
            disk,
        });
    }
    plan.crashes.sort_by_key(|c| (c.at, c.node));
}

/// Every execution replica crashes and restarts at once (disks intact), and the order stage is
/// cut off from just before the restart: they come back at their last checkpoints, behind
/// writes some of them executed and acknowledged, and cannot catch up until the partition
/// heals. Read-only requests must not be answered from that state (docs/protocol.md
/// "Read-only requests"). The outage is short, since every client that sends an ordered
/// request meanwhile waits for the heal: the read-only requests that follow the restart are
/// what this fault is for. Skipped when it would overlap another crash of an execution
/// replica.
fn exec_restart_while_order_cut_off(
    rng: &mut SimRng,
    plan: &mut FaultPlan,
    stages: &[Vec<Principal>; 3],
    heal_at: Micros,
) {
    if !rng.chance(0.2) {
        return;
    }
    let at = rng.range(200_000, heal_at.saturating_sub(4_000_000).max(200_000));
    let restart = at + rng.range(5_000, 50_000);
    let from = restart - rng.range(0, 5_000);
    let until = restart + rng.range(500_000, 3_000_000);
    if until + 300_000 > heal_at {
        return;
    }
    let execs = &stages[2];
    let clash = plan
        .crashes
        .iter()
        .any(|c| execs.contains(&c.node) && overlaps(c, at, restart));
    if clash {
        return;
    }
    for &node in execs {
        plan.crashes.push(Crash {
            node,
            at,
            restart_at: Some(restart),
            disk: DiskFault::None,
        });
    }
    plan.crashes.sort_by_key(|c| (c.at, c.node));
    plan.partitions.push(Partition {
        from,
        until,
        side: stages[1].clone(),
    });
    plan.exec_restart_while_order_cut_off = true;
}

/// `count` replicas of `list`; an order replica that equivocates is most useful as the first
/// primary, so replica 0 is favoured.
fn choose_byzantine(rng: &mut SimRng, list: &[Principal], count: usize) -> Vec<Principal> {
    let mut pool = list.to_vec();
    let mut chosen = Vec::new();
    while chosen.len() < count && !pool.is_empty() {
        let i = if rng.chance(0.4) {
            0
        } else {
            rng.index(pool.len())
        };
        chosen.push(pool.remove(i));
    }
    chosen
}

fn crashes(
    rng: &mut SimRng,
    plan: &FaultPlan,
    stages: &[Vec<Principal>; 3],
    u: usize,
    heal_at: Micros,
) -> Vec<Crash> {
    let mut out = Vec::new();
    // Per replica, when it is next free to crash (crash intervals never overlap).
    let mut free_from: BTreeMap<Principal, Micros> = BTreeMap::new();
    let mut permanently_down: Vec<Principal> = Vec::new();
    let latest = heal_at.saturating_sub(300_000);

    // Replicas that stay down: at most `u` failures per stage in a liveness seed.
    for list in stages {
        let byz = list
            .iter()
            .filter(|p| plan.byzantine.contains_key(p))
            .count();
        let allowed = if plan.liveness {
            u.saturating_sub(byz)
        } else {
            list.len() - byz
        };
        let candidates: Vec<Principal> = list
            .iter()
            .copied()
            .filter(|p| !plan.byzantine.contains_key(p))
            .collect();
        let want = if allowed == 0 {
            0
        } else if plan.liveness {
            if rng.chance(0.3) {
                rng.range(1, allowed as u64) as usize
            } else {
                0
            }
        } else {
            rng.range(0, allowed as u64) as usize
        };
        let mut pool = candidates;
        for _ in 0..want {
            if pool.is_empty() {
                break;
            }
            let p = pool.remove(rng.index(pool.len()));
            permanently_down.push(p);
        }
    }
    for p in &permanently_down {
        let at = rng.range(200_000, latest);
        out.push(Crash {
            node: *p,
            at,
            restart_at: None,
            disk: DiskFault::None,
        });
    }

    // A replica whose disk is corrupted has lost state until it fetches it from peers: in a
    // liveness seed that counts against its stage's `u` budget.
    let mut corrupt_budget: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, list) in stages.iter().enumerate() {
        let failed = list
            .iter()
            .filter(|p| plan.byzantine.contains_key(p) || permanently_down.contains(p))
            .count();
        let budget = if plan.liveness {
            u.saturating_sub(failed)
        } else {
            list.len()
        };
        corrupt_budget.insert(i, budget);
    }

    // Crash-and-restart faults: any replica but the Byzantine and the permanently down ones.
    let restartable: Vec<Principal> = stages
        .iter()
        .flatten()
        .copied()
        .filter(|p| !plan.byzantine.contains_key(p) && !permanently_down.contains(p))
        .collect();
    let events = if plan.liveness {
        rng.range(0, 4)
    } else {
        rng.range(2, 8)
    };
    for _ in 0..events {
        let Some(&node) = rng.pick(&restartable) else {
            break;
        };
        let start = free_from.get(&node).copied().unwrap_or(200_000);
        if start + 200_000 >= latest {
            continue;
        }
        let at = rng.range(start, latest - 100_000);
        let restart = (at + rng.range(50_000, 3_000_000)).min(latest);
        free_from.insert(node, restart + 100_000);
        let stage = match node {
            Principal::Auth(_) => 0,
            Principal::Exec(_) => 2,
            _ => 1,
        };
        let budget = corrupt_budget.get(&stage).copied().unwrap_or(0);
        let already = out
            .iter()
            .any(|c: &Crash| c.node == node && c.disk.damages());
        let disk = if (already || budget > 0) && rng.chance(0.3) {
            disk_fault(rng, node)
        } else {
            DiskFault::None
        };
        if disk.damages() && !already {
            corrupt_budget.insert(stage, budget - 1);
        }
        out.push(Crash {
            node,
            at,
            restart_at: Some(restart),
            disk,
        });
    }

    // A power loss: every restartable replica goes down at once and comes back.
    if rng.chance(if plan.liveness { 0.1 } else { 0.3 }) {
        let at = rng.range(500_000, latest.saturating_sub(1_000_000).max(500_000));
        let restart_base = at + rng.range(100_000, 1_000_000);
        for &node in &restartable {
            if free_from.get(&node).copied().unwrap_or(0) > at
                || out
                    .iter()
                    .any(|c| c.node == node && overlaps(c, at, restart_base))
            {
                continue;
            }
            let restart = (restart_base + rng.range(0, 200_000)).min(latest);
            out.push(Crash {
                node,
                at,
                restart_at: Some(restart),
                disk: DiskFault::None,
            });
        }
    }
    out.sort_by_key(|c| (c.at, c.node));
    out
}

/// Which damage a crash does to `node`'s disk.
fn disk_fault(rng: &mut SimRng, node: Principal) -> DiskFault {
    let lose: &[&'static str] = match node {
        Principal::Order(_) => &["order/slot/", "order/view", "order/stable", "order/cp/"],
        Principal::Exec(_) => &["exec/"],
        Principal::Auth(_) => &["auth/"],
        Principal::Client(_) => &["client/"],
    };
    match rng.index(4) {
        0 => DiskFault::FlipBit,
        1 => DiskFault::Wipe,
        2 => DiskFault::RollBack,
        _ => DiskFault::LoseRecord(rng.pick(lose).copied().unwrap_or("")),
    }
}

/// Whether a targeted order-stage fault leaves its victim faulty for the liveness check.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spare {
    /// It does (a wiped replica votes for nothing until it has rejoined): in a liveness seed,
    /// only if no other order replica failed.
    Alone,
    /// It does not: beside any other failure, but not beside a second targeted fault.
    BesideFailures,
}

/// For a targeted order-stage fault, drawn in 30% of seeds: an order replica to spare (`u >= 1`,
/// and in a liveness seed none already targeted, nor failed if `spare` says so), and time
/// before the heal for it. Returns the latest time it may strike.
fn spare_order_replica(
    rng: &mut SimRng,
    plan: &FaultPlan,
    stages: &[Vec<Principal>; 3],
    u: usize,
    heal_at: Micros,
    spare: Spare,
) -> Option<Micros> {
    if u == 0 || !rng.chance(0.3) {
        return None;
    }
    let taken =
        plan.targeted_amnesia.is_some() || (spare == Spare::Alone && stage_fails(plan, &stages[1]));
    if plan.liveness && taken {
        return None;
    }
    let latest = heal_at.saturating_sub(1_500_000);
    (latest > 600_000).then_some(latest)
}

/// Targeted amnesia wipes the order replica that sent the newest COMMIT (the wiped one and the
/// cut-off ones are down for a while).
fn targeted_amnesia(
    rng: &mut SimRng,
    plan: &FaultPlan,
    stages: &[Vec<Principal>; 3],
    u: usize,
    heal_at: Micros,
) -> Option<TargetedAmnesia> {
    let latest = spare_order_replica(rng, plan, stages, u, heal_at, Spare::Alone)?;
    let at = rng.range(500_000, latest);
    let restart_at = at + rng.range(10_000, 200_000);
    let until = (restart_at + rng.range(200_000, 1_000_000)).min(heal_at);
    Some(TargetedAmnesia {
        at,
        restart_at,
        until,
    })
}

fn overlaps(c: &Crash, from: Micros, until: Micros) -> bool {
    let end = c.restart_at.unwrap_or(Micros::MAX);
    c.at <= until && from <= end.saturating_add(100_000)
}

fn partitions(
    rng: &mut SimRng,
    plan: &FaultPlan,
    stages: &[Vec<Principal>; 3],
    clients: u32,
    heal_at: Micros,
) -> Vec<Partition> {
    let everyone: Vec<Principal> = stages
        .iter()
        .flatten()
        .copied()
        .chain((0..clients).map(Principal::Client))
        .collect();
    let count = rng.range(0, 3);
    let mut out = Vec::new();
    for _ in 0..count {
        let from = rng.range(100_000, heal_at.saturating_sub(500_000));
        let until = (from + rng.range(200_000, 4_000_000)).min(heal_at);
        let size = rng.range(1, (everyone.len() / 2) as u64) as usize;
        let mut pool = everyone.clone();
        let mut side = Vec::new();
        for _ in 0..size {
            side.push(pool.remove(rng.index(pool.len())));
        }
        side.sort();
        out.push(Partition { from, until, side });
    }
    // A correct execution replica cut off long enough to fall behind the order stage's stable
    // checkpoint: it must catch up by state transfer (Figure 6.6), perhaps from a liar.
    let correct_execs: Vec<Principal> = stages[2]
        .iter()
        .copied()
        .filter(|p| !plan.byzantine.contains_key(p))
        .collect();
    if rng.chance(0.5) {
        if let Some(&e) = rng.pick(&correct_execs) {
            let from = rng.range(100_000, heal_at.saturating_sub(1_500_000));
            let until = (from + rng.range(1_000_000, 4_000_000)).min(heal_at);
            out.push(Partition {
                from,
                until,
                side: vec![e],
            });
        }
    }
    out
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "  kind: {}",
            if self.liveness {
                "liveness"
            } else {
                "safety-only"
            }
        )?;
        for (p, b) in &self.byzantine {
            writeln!(f, "  byzantine {p}: {b:?} (rate {})", self.byzantine_rate)?;
            if let Some(bend) = self.clocks.get(p).and_then(|c| c.bend) {
                writeln!(f, "  byzantine {p}'s clock: {bend:?}")?;
            }
        }
        if let Some(c) = self.byzantine_client {
            writeln!(f, "  byzantine client c{c}")?;
        }
        for c in &self.crashes {
            let restart = c.restart_at.map_or("never".to_string(), secs);
            writeln!(
                f,
                "  crash {} at {}, restart {restart}{}",
                c.node,
                secs(c.at),
                c.disk
            )?;
        }
        if let Some(t) = &self.targeted_amnesia {
            writeln!(
                f,
                "  targeted amnesia at {}: the newest COMMIT's sender wiped (restart {}), its co-voters cut off until {}",
                secs(t.at),
                secs(t.restart_at),
                secs(t.until)
            )?;
        }
        if let Some(c) = &self.crash_ahead {
            writeln!(
                f,
                "  from {} until {}: the first order replica to send a PRE-PREPARE ahead of its disk crashes, down {}, {} times",
                secs(c.at),
                secs(c.until),
                secs(c.down),
                c.times
            )?;
        }
        if let Some(c) = &self.exec_crash_ahead {
            writeln!(
                f,
                "  from {} until {}: the first execution replica to send ahead of its checkpoint's sync crashes, down {}, {} times",
                secs(c.at),
                secs(c.until),
                secs(c.down),
                c.times
            )?;
        }
        for p in &self.partitions {
            writeln!(
                f,
                "  partition {}..{}: {:?} cut off",
                secs(p.from),
                secs(p.until),
                p.side
            )?;
        }
        Ok(())
    }
}

/// Micros as seconds, for humans.
pub fn secs(t: Micros) -> String {
    format!("{}.{:06}s", t / 1_000_000, t % 1_000_000)
}

/// `--partial` (docs/objects.md "Partial state"), where execution replicas load checkpoints on
/// demand: so that every seed holds part of the state somewhere, one correct execution replica
/// loses its disk mid-run (within the stage's fault budget in a liveness seed) and comes back
/// to load the stable checkpoint on demand; three in four faulty execution replicas serve wrong
/// objects and tree nodes. Drawn from its own stream: the rest of the seed stays as it was.
pub fn hold_part_of_the_state(plan: &mut FaultPlan, q: &Quorums, heal_at: Micros, seed: u64) {
    let mut rng = SimRng::new(seed, "partial state");
    for (p, behaviour) in plan.byzantine.iter_mut() {
        if matches!(p, Principal::Exec(_)) && rng.chance(0.75) {
            *behaviour = Behaviour::WrongCheckpoint;
        }
    }
    let execs: Vec<Principal> = ExecId::all(q.exec).map(Principal::Exec).collect();
    let down = plan.down_at_end();
    let faulty = execs
        .iter()
        .filter(|p| {
            plan.byzantine.contains_key(p)
                || down.contains(p)
                || plan
                    .crashes
                    .iter()
                    .any(|c| c.node == **p && c.disk.damages())
        })
        .count();
    if plan.liveness && faulty >= usize::from(q.faults.u) {
        return;
    }
    let correct: Vec<Principal> = execs
        .into_iter()
        .filter(|p| !plan.byzantine.contains_key(p) && !down.contains(p))
        .collect();
    let Some(&node) = rng.pick(&correct) else {
        return;
    };
    // Late enough that there is state to fetch, early enough to fill it before the end.
    let latest = heal_at.saturating_sub(1_500_000);
    if latest <= 1_000_000 {
        return;
    }
    let at = rng.range(1_000_000, latest);
    let restart_at = at + rng.range(50_000, 500_000);
    if plan
        .crashes
        .iter()
        .any(|c| c.node == node && overlaps(c, at, restart_at))
    {
        return;
    }
    plan.crashes.push(Crash {
        node,
        at,
        restart_at: Some(restart_at),
        disk: DiskFault::Wipe,
    });
    plan.crashes.sort_by_key(|c| (c.at, c.node));
}

/// ZZ seeds (`plumb sim --zz`): a fault on a sleeper shows nothing until it wakes, so the
/// plan's faulty and crashing execution replicas are mostly actives. Each faulty sleeper
/// trades places with a fault-free active nine times in ten; half the faulty order replicas
/// send WAKEs at will ([`Behaviour::WakeSleepers`]) and a quarter of the Byzantine actives
/// lag more and more ([`Behaviour::CreepingExec`]); a plan with no faulty execution
/// replica gets a Byzantine active three times in five (within the stage's budget: `r >= 1`
/// and none of the stage's other replicas faulty).
pub fn fault_the_actives(plan: &mut FaultPlan, q: &Quorums, seed: u64) {
    let mut rng = SimRng::new(seed, "zz actives");
    let active = q.active_exec();
    let exec = |i: usize| Principal::Exec(ExecId(i as u16));
    let faulty = |plan: &FaultPlan, p: Principal| {
        plan.byzantine.contains_key(&p) || plan.crashes.iter().any(|c| c.node == p)
    };
    for s in active..q.exec {
        if !faulty(plan, exec(s)) || !rng.chance(0.9) {
            continue;
        }
        let healthy: Vec<Principal> = (0..active)
            .map(exec)
            .filter(|p| !faulty(plan, *p))
            .collect();
        if let Some(&a) = rng.pick(&healthy) {
            trade_places(plan, exec(s), a);
        }
    }
    // Half the faulty order replicas try to wake sleepers at will, and a quarter of the
    // Byzantine actives lag a little more each time.
    for (p, behaviour) in plan.byzantine.iter_mut() {
        match p {
            Principal::Order(_) if rng.chance(0.5) => *behaviour = Behaviour::WakeSleepers,
            Principal::Exec(e) if e.index() < active && rng.chance(0.25) => {
                *behaviour = Behaviour::CreepingExec
            }
            _ => {}
        }
    }
    let none_faulty = (0..q.exec).all(|i| !faulty(plan, exec(i)));
    if none_faulty && q.faults.r > 0 && rng.chance(0.6) {
        let a = exec(rng.range(0, active as u64 - 1) as usize);
        let mut behaviours = Behaviour::for_stage(a).to_vec();
        behaviours.push(Behaviour::CreepingExec);
        let behaviour = *rng.pick(&behaviours).unwrap_or(&Behaviour::Silent);
        plan.byzantine.insert(a, behaviour);
        // A quiet plan (`--no-faults`) drew no lying rate, and at 0 an active that returns
        // wrong replies or wrong checkpoints would never lie. A plan with faults keeps its
        // own (its trace unchanged).
        if plan.byzantine_rate == 0.0 {
            plan.byzantine_rate = if rng.chance(0.5) { 1.0 } else { 0.5 };
        }
    }
}

/// Give `a` every fault the plan has for `b` and the other way round.
fn trade_places(plan: &mut FaultPlan, a: Principal, b: Principal) {
    let other = |p: Principal| {
        if p == a {
            b
        } else if p == b {
            a
        } else {
            p
        }
    };
    plan.byzantine = std::mem::take(&mut plan.byzantine)
        .into_iter()
        .map(|(p, x)| (other(p), x))
        .collect();
    plan.clocks = std::mem::take(&mut plan.clocks)
        .into_iter()
        .map(|(p, x)| (other(p), x))
        .collect();
    for c in &mut plan.crashes {
        c.node = other(c.node);
    }
    plan.crashes.sort_by_key(|c| (c.at, c.node));
    for part in &mut plan.partitions {
        for p in &mut part.side {
            *p = other(*p);
        }
    }
}
