//! The seeded world: every replica and client of one cluster in one thread, driven by a
//! deterministic event queue ordered by (simulated time, insertion number).
//!
//! Each principal has its stage, its simulated disk, its (drifting) clock, its timer table and
//! possibly an adversary that rewrites what it sends. The world carries out each stage's
//! actions in order: sends go to the network, storage writes to the disk's volatile buffer
//! (`Sync` makes them durable, after a simulated latency), timers into the queue, observations
//! to the checkers, client completions to the workload.
//!
//! `clients.rs` drives the workload and the Byzantine client; `report.rs` judges the run;
//! `syncs.rs` holds visible actions until the syncs before them complete.

mod clients;
mod report;
mod sketching;
mod speculating;
mod syncs;

use crate::app::SimApp;
use crate::check::Checker;
use crate::config::SimConfig;
use crate::disk::Disk;
use crate::faults::{secs, Clock, DiskFault};
use crate::keys::{self, KeySet};
use crate::network::Network;
use crate::rng::SimRng;
use crate::trace::{self, Trace};
use crate::workload::Workload;
use crate::Stats;
use plumb_adversary::{Adversary, Outgoing};
use plumb_app::Application;
use plumb_auth::AuthReplica;
use plumb_client::Client;
use plumb_config::ProtocolConfig;
use plumb_core::{Action, Event, Observation, Recovered, Stage, StageContext, TimerId};
use plumb_exec::ExecReplica;
use plumb_order::OrderReplica;
use plumb_wire::{ExecId, Message, Micros, OrderId, Principal};
use plumb_zz::Sleeper;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

/// The stage a principal runs (boxed: the stages differ a lot in size); `P` is the
/// application the execution replicas run.
pub enum StageBox<P: Application> {
    Auth(Box<AuthReplica>),
    Order(Box<OrderReplica>),
    Exec(Box<ExecReplica<P>>),
    /// A sleeping execution replica of ZZ mode, or the replica it woke as.
    Sleeper(Box<Sleeper<P>>),
    Client(Box<Client>),
}

impl<P: Application> StageBox<P> {
    fn stage(&mut self) -> &mut dyn Stage {
        match self {
            StageBox::Auth(s) => s.as_mut(),
            StageBox::Order(s) => s.as_mut(),
            StageBox::Exec(s) => s.as_mut(),
            StageBox::Sleeper(s) => s.as_mut(),
            StageBox::Client(s) => s.as_mut(),
        }
    }

    /// The execution replica running here, if any (a sleeper runs none until woken).
    fn exec(&self) -> Option<&ExecReplica<P>> {
        match self {
            StageBox::Exec(e) => Some(e),
            StageBox::Sleeper(s) => s.awake(),
            _ => None,
        }
    }
}

struct Node<P: Application> {
    p: Principal,
    stage: Option<StageBox<P>>,
    disk: Disk,
    clock: Clock,
    /// Armed timers: id -> generation of the queue entry that fires it.
    timers: HashMap<TimerId, u64>,
    incarnation: u64,
    adversary: Option<Adversary>,
    /// Byzantine principals' observations are not evidence of anything.
    correct: bool,
    /// Damage done to the disk before the next restart.
    disk_fault: DiskFault,
    /// Syncs in flight and the actions waiting for them.
    syncs: syncs::Syncs,
    /// A sleeper's (ZZ): the order replicas whose WAKEs reached it while it slept, as the
    /// network saw them (what `ZZ-wake-quorum` holds its waking against).
    wakes_seen: BTreeSet<OrderId>,
    /// A woken sleeper's: the order replicas whose SLEEPs reached it while awake
    /// (`ZZ-sleep-quorum`).
    sleeps_seen: BTreeSet<OrderId>,
}

enum Ev {
    Deliver {
        to: usize,
        from: usize,
        frame: Vec<u8>,
    },
    Timer {
        node: usize,
        id: TimerId,
        generation: u64,
    },
    /// Build the stage from its disk and deliver `Event::Start` (first start or restart).
    Start {
        node: usize,
    },
    Crash {
        node: usize,
        disk: DiskFault,
    },
    /// Targeted amnesia (faults.rs): wipe the newest COMMIT's sender, cut off its co-voters.
    TargetedAmnesia,
    /// A client's think time is over. `life`: the incarnation that scheduled it; a wake-up
    /// scheduled before a crash is void (the restart schedules its own).
    Wake {
        node: usize,
        life: u64,
    },
    ByzantineClientTick {
        node: usize,
    },
    PartitionStart(usize),
    PartitionEnd(usize),
    Heal,
    /// From now, the next correct replica of the stage to send ahead of its disk crashes.
    ArmCrashAhead(Ahead),
    /// Node `node`'s sync in flight completes (void if it crashed since: `life`).
    Synced {
        node: usize,
        life: u64,
    },
}

struct Queued {
    at: Micros,
    order: u64,
    ev: Ev,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    /// Reversed: the heap pops the earliest (then first inserted) event.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

pub struct World<'a, A: SimApp> {
    /// The application under test: what execution replicas run, what clients ask, what the
    /// checkers expect.
    app: &'a A,
    cfg: SimConfig,
    keys: Arc<KeySet>,
    protocol: Arc<ProtocolConfig>,
    now: Micros,
    queue: BinaryHeap<Queued>,
    inserted: u64,
    nodes: Vec<Node<A::App>>,
    net: Network,
    fault_rng: SimRng,
    /// Draws sync latencies.
    sync_rng: SimRng,
    /// The plan's crashes ahead of the disk (faults.rs): of order replicas, of execution
    /// replicas.
    crashes_ahead: [CrashesAhead; 2],
    workload: Workload,
    checker: Checker,
    trace: Trace,
    stats: Stats,
    /// Scratch buffers, reused to avoid allocation per event.
    actions: Vec<Action>,
    delays: Vec<Micros>,
    /// The run hit its event budget: end-of-run checks that assume a finished run are skipped.
    stormed: bool,
    /// Local invariants correct stages have broken: (node, invariant), each reported once.
    broken: BTreeSet<(usize, &'static str)>,
    max_events: u64,
    /// The linearizability checker's step budget per partition ([`crate::SimOptions`]).
    pub check_max_steps: u64,
    /// Correct order replicas that sent a COMMIT, for the newest few sequence numbers: whom
    /// targeted amnesia wipes and whom it cuts off.
    commit_senders: BTreeMap<plumb_wire::Seq, BTreeSet<usize>>,
    /// Checkpoint tokens found durable (`ES4-token-durable`), by node, life and checkpoint:
    /// within one life a checkpoint found durable stays so (or gives way to later durable
    /// ones), so its resends need not read the disk again.
    durable_tokens: HashSet<(usize, u64, plumb_wire::Seq)>,
    /// Prophecy's sketching core, when the correct clients' reads go through one.
    sketcher: Option<sketching::SimSketcher>,
    /// Speculative sessions, when the application runs some (`speculating.rs`).
    sessions: Option<speculating::Sessions>,
}

/// Events sampled to name the traffic of a storm.
const STORM_SAMPLE: usize = 20_000;

impl<'a, A: SimApp> World<'a, A> {
    pub fn new(app: &'a A, cfg: SimConfig, verbose: bool, max_events: u64) -> World<'a, A> {
        let q = cfg.protocol.quorums;
        let keys = keys::key_set(&q);
        let mut principals = keys::principals(&q);
        principals.retain(|p| !matches!(p, Principal::Client(c) if *c >= cfg.clients));
        let nodes = principals
            .iter()
            .map(|&p| {
                let behaviour = cfg.plan.byzantine.get(&p).copied();
                let adversary = behaviour.map(|b| {
                    Adversary::new(
                        b,
                        cfg.plan.byzantine_rate,
                        cfg.protocol.quorums.order_medium(),
                        SimRng::new(cfg.seed, &format!("byzantine {p}")).next_u64(),
                    )
                    .with_forgery(app.forgery())
                });
                let mut disk = Disk::new(SimRng::new(cfg.seed, &format!("disk {p}")).next_u64());
                if matches!(p, Principal::Order(_)) {
                    // What `plumb init` writes: the store of a fresh order replica.
                    for op in plumb_order::genesis() {
                        disk.apply(op);
                    }
                }
                Node {
                    p,
                    stage: None,
                    disk,
                    clock: cfg.plan.clocks.get(&p).copied().unwrap_or_default(),
                    timers: HashMap::new(),
                    incarnation: 0,
                    adversary,
                    correct: !cfg.plan.is_byzantine(p),
                    disk_fault: DiskFault::None,
                    syncs: Default::default(),
                    wakes_seen: BTreeSet::new(),
                    sleeps_seen: BTreeSet::new(),
                }
            })
            .collect();
        let net = Network::new(cfg.net.clone(), SimRng::new(cfg.seed, "network"));
        let workload = Workload::new(
            cfg.workload.clone(),
            SimRng::new(cfg.seed, "workload"),
            cfg.clients,
            cfg.plan.byzantine_client,
        );
        let mut checker = Checker::default();
        checker.byzantine = cfg.plan.byzantine.keys().copied().collect();
        checker.order_replicas = q.order as u64;
        let mut world = World {
            app,
            protocol: Arc::new(cfg.protocol.clone()),
            keys,
            now: 0,
            queue: BinaryHeap::new(),
            inserted: 0,
            nodes,
            net,
            fault_rng: SimRng::new(cfg.seed, "faults"),
            sync_rng: SimRng::new(cfg.seed, "disk syncs"),
            crashes_ahead: Default::default(),
            workload,
            checker,
            trace: Trace::new(verbose),
            stats: Stats::default(),
            actions: Vec::new(),
            delays: Vec::new(),
            stormed: false,
            broken: Default::default(),
            max_events,
            check_max_steps: plumb_lincheck::DEFAULT_MAX_STEPS,
            commit_senders: BTreeMap::new(),
            durable_tokens: HashSet::new(),
            sketcher: cfg.sketcher.then(|| sketching::SimSketcher::new(cfg.seed)),
            sessions: speculating::Sessions::new(cfg.seed, &cfg.sessions),
            cfg,
        };
        world.schedule_everything();
        world
    }

    /// Dense index of a principal of this cluster.
    fn index(&self, p: Principal) -> Option<usize> {
        let q = &self.cfg.protocol.quorums;
        let (base, i, len) = match p {
            Principal::Auth(i) => (0, i.index(), q.auth),
            Principal::Order(i) => (q.auth, i.index(), q.order),
            Principal::Exec(i) => (q.auth + q.order, i.index(), q.exec),
            Principal::Client(c) => (
                q.auth + q.order + q.exec,
                c as usize,
                self.cfg.clients as usize,
            ),
        };
        (i < len).then_some(base + i)
    }

    fn push(&mut self, at: Micros, ev: Ev) {
        self.inserted += 1;
        self.queue.push(Queued {
            at,
            order: self.inserted,
            ev,
        });
    }

    fn schedule_everything(&mut self) {
        for node in 0..self.nodes.len() {
            let at = self.fault_rng.range(0, 5_000);
            self.push(at, Ev::Start { node });
        }
        let crashes = self.cfg.plan.crashes.clone();
        for c in crashes {
            let Some(node) = self.index(c.node) else {
                continue;
            };
            self.push(c.at, Ev::Crash { node, disk: c.disk });
            if let Some(t) = c.restart_at {
                self.push(t, Ev::Start { node });
            }
        }
        let partitions = self.cfg.plan.partitions.clone();
        for (i, p) in partitions.iter().enumerate() {
            self.push(p.from, Ev::PartitionStart(i));
            self.push(p.until, Ev::PartitionEnd(i));
        }
        if let Some(c) = self.cfg.plan.crash_ahead {
            self.push(c.at, Ev::ArmCrashAhead(Ahead::Order));
        }
        if let Some(c) = self.cfg.plan.exec_crash_ahead {
            self.push(c.at, Ev::ArmCrashAhead(Ahead::Exec));
        }
        if let Some(t) = &self.cfg.plan.targeted_amnesia {
            self.push(t.at, Ev::TargetedAmnesia);
        }
        self.push(self.cfg.heal_at, Ev::Heal);
        if let Some(c) = self.cfg.plan.byzantine_client {
            if let Some(node) = self.index(Principal::Client(c)) {
                self.push(200_000, Ev::ByzantineClientTick { node });
            }
        }
    }

    /// Run to the end of the liveness window, or until the event budget runs out.
    pub fn run(&mut self) {
        while let Some(next) = self.queue.pop() {
            if next.at > self.cfg.end_at {
                break;
            }
            self.now = next.at;
            self.stats.events += 1;
            if self.stats.events == self.max_events {
                self.sample_storm();
                return;
            }
            self.dispatch(next.ev);
        }
        self.now = self.cfg.end_at;
    }

    /// The run exceeded its event budget: a message storm (or a timer loop). Sample the next
    /// events to name the traffic, and stop: the seed is reported, not run to its end.
    fn sample_storm(&mut self) {
        let mut tally: BTreeMap<(Principal, &'static str), u64> = BTreeMap::new();
        for _ in 0..STORM_SAMPLE {
            let Some(next) = self.queue.pop() else { break };
            self.now = next.at;
            if let Ev::Deliver { to, from, frame } = &next.ev {
                let kind = match self.keys.ring(self.nodes[*to].p).map(|r| r.open(frame)) {
                    Some(Ok((_, msg))) => msg.kind(),
                    _ => "garbage",
                };
                *tally.entry((self.nodes[*from].p, kind)).or_insert(0) += 1;
            }
            self.dispatch(next.ev);
        }
        let mut top: Vec<((Principal, &'static str), u64)> = tally.into_iter().collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        let named: Vec<String> = top
            .iter()
            .take(4)
            .map(|((p, k), n)| format!("{n} {k} from {p}"))
            .collect();
        let detail = format!(
            "{} events by {} (simulated), run stopped; of the next {STORM_SAMPLE}: {}",
            self.max_events,
            secs(self.now),
            named.join(", ")
        );
        self.checker.violate("message-storm", detail);
        self.stormed = true;
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Deliver { to, from, frame } => self.deliver(to, from, frame),
            Ev::Timer {
                node,
                id,
                generation,
            } => {
                if self.nodes[node].timers.get(&id) == Some(&generation) {
                    self.nodes[node].timers.remove(&id);
                    self.trace.fold(&[self.now, 2, node as u64, id.0 as u64]);
                    self.step(node, Event::Timer(id));
                }
            }
            Ev::Start { node } => self.start(node),
            Ev::Crash { node, disk } => self.crash(node, disk),
            Ev::TargetedAmnesia => self.targeted_amnesia(),
            Ev::Wake { node, life } => {
                if self.nodes[node].incarnation == life {
                    self.wake(node)
                }
            }
            Ev::ByzantineClientTick { node } => self.byzantine_client_tick(node),
            Ev::PartitionStart(i) => {
                let side = self.partition_side(i);
                self.trace
                    .line(self.now, format_args!("partition {i} starts"));
                self.net.start_partition(i, side);
            }
            Ev::PartitionEnd(i) => {
                self.trace
                    .line(self.now, format_args!("partition {i} heals"));
                self.net.end_partition(i);
            }
            Ev::Synced { node, life } => self.synced(node, life),
            Ev::ArmCrashAhead(stage) => self.crashes_ahead[stage as usize].armed = true,
            Ev::Heal => {
                self.trace.line(self.now, format_args!("faults stop"));
                self.net.heal();
            }
        }
    }

    fn partition_side(&self, i: usize) -> Vec<bool> {
        let side = &self.cfg.plan.partitions[i].side;
        self.nodes.iter().map(|n| side.contains(&n.p)).collect()
    }

    fn deliver(&mut self, to: usize, from: usize, mut frame: Vec<u8>) {
        if self.nodes[to].stage.is_none() {
            self.stats.dropped_at_down_node += 1;
            return;
        }
        let p = self.nodes[to].p;
        let keys = self.keys.clone();
        if let (Some(adv), Some(ring)) = (&mut self.nodes[to].adversary, keys.ring(p)) {
            let Some(accepted) = adv.accepts(ring, frame) else {
                self.stats.byzantine_lies += 1;
                return;
            };
            frame = accepted;
            // A NEW-VIEW racer acts on what it receives, not only on what it sends.
            for (dest, extra) in adv.incoming(ring, &frame) {
                if let Some(d) = self.index(dest) {
                    self.stats.byzantine_lies += 1;
                    self.transmit(to, d, extra);
                }
            }
        }
        self.stats.delivered += 1;
        self.note_wake(to, &frame);
        self.trace.fold(&[
            self.now,
            1,
            to as u64,
            from as u64,
            trace::frame_fingerprint(&frame),
        ]);
        if self.trace.verbose {
            let text = self.describe_frame(to, &frame);
            self.trace.line(
                self.now,
                format_args!("{} <- {}: {text}", self.nodes[to].p, self.nodes[from].p),
            );
        }
        self.step(to, Event::Receive(frame));
    }

    /// A WAKE from an order replica reaching a sleeper that sleeps, or a SLEEP reaching one
    /// that is awake: remember who sent it.
    fn note_wake(&mut self, to: usize, frame: &[u8]) {
        let Some(StageBox::Sleeper(s)) = &self.nodes[to].stage else {
            return;
        };
        let awake = s.awake().is_some();
        let Some(ring) = self.keys.ring(self.nodes[to].p) else {
            return;
        };
        match (ring.open(frame), awake) {
            (Ok((Principal::Order(o), Message::Wake { .. })), false) => {
                self.nodes[to].wakes_seen.insert(o);
            }
            (Ok((Principal::Order(o), Message::Sleep { .. })), true) => {
                self.nodes[to].sleeps_seen.insert(o);
            }
            _ => {}
        }
    }

    /// `ZZ-wake-quorum`: a correct sleeper woke only after `r + 1` distinct order replicas'
    /// WAKEs reached it (at least one correct order replica asked). `ZZ-sleep-quorum`: a
    /// correct woken replica went back to sleep only after `r + 1` distinct order replicas'
    /// SLEEPs reached it while awake. Either way the count starts again.
    fn check_zz_quorum(&mut self, i: usize, woke: bool, asked: &[OrderId]) {
        let quorum = self.cfg.protocol.quorums.small();
        let node = &self.nodes[i];
        let (seen, what, property) = if woke {
            (&node.wakes_seen, "woke with WAKEs", "ZZ-wake-quorum")
        } else {
            (
                &node.sleeps_seen,
                "went back to sleep with SLEEPs",
                "ZZ-sleep-quorum",
            )
        };
        if seen.len() < quorum {
            let detail = format!(
                "{} {what} from {seen:?} reaching it at {} ({quorum} needed), saying {asked:?} asked",
                node.p,
                secs(self.now),
            );
            self.checker.violate(property, detail);
        }
        if woke {
            self.stats.woken += 1;
        } else {
            self.stats.slept += 1;
        }
        let node = &mut self.nodes[i];
        node.wakes_seen.clear();
        node.sleeps_seen.clear();
    }

    fn describe_frame(&self, to: usize, frame: &[u8]) -> String {
        match self.keys.ring(self.nodes[to].p).map(|r| r.open(frame)) {
            Some(Ok((_, msg))) => trace::describe(self.app, &msg),
            Some(Err(e)) => format!("<{}>", e.reason()),
            None => "<no key>".to_string(),
        }
    }

    /// Hand `event` to node `i`'s stage at its local time and carry out what it asks for.
    fn step(&mut self, i: usize, event: Event) {
        let local = self.nodes[i].clock.local(self.now);
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        let Some(stage) = self.nodes[i].stage.as_mut() else {
            self.actions = actions;
            return;
        };
        let kind = event_kind(&event);
        stage.stage().handle(local, event, &mut actions);
        if self.nodes[i].correct {
            self.check_invariants(i, kind);
        }
        self.carry_out(i, &mut actions);
        self.actions = actions;
    }

    /// Node `i` is about to begin a sync: its stage's [`Stage::before_sync`], carried out
    /// like a step's actions but without beginning a sync (the caller begins it).
    fn before_sync(&mut self, i: usize) {
        let local = self.nodes[i].clock.local(self.now);
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        let Some(stage) = self.nodes[i].stage.as_mut() else {
            self.actions = actions;
            return;
        };
        stage.stage().before_sync(local, &mut actions);
        if self.nodes[i].correct {
            self.check_invariants(i, "before-sync");
        }
        for action in actions.drain(..) {
            if let Some(action) = self.nodes[i].syncs.hold(action) {
                self.perform(i, action);
            }
        }
        self.actions = actions;
    }

    /// A correct stage's own invariants, after every step: a broken one is reported as the
    /// property of that name, at the step that broke it (once per node and invariant).
    fn check_invariants(&mut self, i: usize, event: &str) {
        let Some(stage) = self.nodes[i].stage.as_mut() else {
            return;
        };
        if let Err(broken) = stage.stage().check_invariants() {
            if self.broken.insert((i, broken.name)) {
                let detail = format!(
                    "{} at {} after handling {event}: {}",
                    self.nodes[i].p,
                    secs(self.now),
                    broken.detail
                );
                self.checker.violate(broken.name, detail);
            }
        }
    }

    /// Carry out node `i`'s actions, holding the visible ones that wait for a sync.
    fn carry_out(&mut self, i: usize, actions: &mut Vec<Action>) {
        for action in actions.drain(..) {
            if let Some(action) = self.nodes[i].syncs.hold(action) {
                self.perform(i, action);
            }
        }
        self.begin_sync(i);
    }

    fn perform(&mut self, i: usize, action: Action) {
        match action {
            Action::Send { to, frame } => self.send(i, to, frame),
            Action::SendUnsynced { to, frame } => {
                self.send(i, to, frame);
                self.maybe_crash_ahead(i);
            }
            Action::SetTimer { id, after } => {
                self.inserted += 1;
                let generation = self.inserted;
                self.nodes[i].timers.insert(id, generation);
                let at = self.now + self.nodes[i].clock.to_global(after);
                self.push(
                    at,
                    Ev::Timer {
                        node: i,
                        id,
                        generation,
                    },
                );
            }
            Action::CancelTimer { id } => {
                self.nodes[i].timers.remove(&id);
            }
            Action::Store(op) => self.nodes[i].disk.apply(op),
            Action::Observe(obs) => {
                let p = self.nodes[i].p;
                if self.trace.verbose {
                    self.trace.line(
                        self.now,
                        format_args!("{p} {}", trace::describe_observation(&obs)),
                    );
                }
                if let (
                    Observation::ClientAccepted {
                        client, request, ..
                    },
                    true,
                ) = (&obs, self.nodes[i].correct)
                {
                    self.workload.accepting(*client, *request);
                }
                match (&obs, self.nodes[i].correct) {
                    (Observation::Woken { asked }, true) => self.check_zz_quorum(i, true, asked),
                    (Observation::Slept { asked }, true) => self.check_zz_quorum(i, false, asked),
                    _ => {}
                }
                if self.nodes[i].correct {
                    self.checker.observe(self.now, p, &obs);
                }
            }
            Action::Complete {
                nc,
                result,
                answered,
            } => self.complete(i, nc, result, answered),
            Action::Early { nc, exec, result } => {
                self.stats.early_replies += 1;
                if let (Principal::Client(c), true) = (self.nodes[i].p, self.nodes[i].correct) {
                    // The client passes on only an early reply naming its outstanding request.
                    let outstanding = match &self.nodes[i].stage {
                        Some(StageBox::Client(client)) => client.outstanding_identity(),
                        _ => None,
                    };
                    if let (true, Some((number, req))) = (self.is_lane(c), outstanding) {
                        debug_assert_eq!(
                            number, nc,
                            "an early reply names the outstanding request"
                        );
                        self.lane_early(c, nc, req, exec, &result);
                    }
                }
            }
            Action::Pushed { event, payload } => {
                self.stats.pushes += 1;
                if let (Principal::Client(c), true) = (self.nodes[i].p, self.nodes[i].correct) {
                    self.checker.pushed.push((c, event, payload));
                }
            }
        }
    }

    fn send(&mut self, from: usize, to: Principal, frame: Vec<u8>) {
        self.stats.sent += 1;
        let Some(to_index) = self.index(to) else {
            self.stats.sent_to_nobody += 1;
            return;
        };
        let sender = self.nodes[from].p;
        if let Principal::Client(c) = sender {
            self.record_client_frame(c, to, &frame);
        }
        if let (Principal::Order(o), true) = (sender, self.nodes[from].correct) {
            self.record_order_frame(from, o, to, &frame);
        }
        if let (Principal::Exec(e), Principal::Order(_), true) =
            (sender, to, self.nodes[from].correct)
        {
            self.check_token_durable(from, e, to, &frame);
        }
        let frame = match (self.nodes[from].adversary.as_mut(), self.keys.ring(sender)) {
            (Some(adv), Some(ring)) => match adv.outgoing(ring, frame) {
                Outgoing::Drop => return,
                Outgoing::Keep(f) => f,
                Outgoing::Replace(f) => {
                    self.stats.byzantine_lies += 1;
                    f
                }
                Outgoing::Delay(f, extra) => {
                    self.stats.byzantine_lies += 1;
                    self.transmit_after(from, to_index, f, extra);
                    return;
                }
            },
            _ => frame,
        };
        self.transmit(from, to_index, frame);
    }

    /// Put `frame` on the network from node `from` to node `to`.
    fn transmit(&mut self, from: usize, to: usize, frame: Vec<u8>) {
        self.transmit_after(from, to, frame, 0);
    }

    /// `transmit`, `extra` microseconds late.
    fn transmit_after(&mut self, from: usize, to: usize, frame: Vec<u8>, extra: Micros) {
        let mut delays = std::mem::take(&mut self.delays);
        self.net.deliveries(from, to, &mut delays);
        for d in delays.iter_mut() {
            *d += extra;
        }
        if delays.is_empty() {
            self.stats.lost += 1;
        }
        if let Some((&last, rest)) = delays.split_last() {
            for &d in rest {
                self.push(
                    self.now + d,
                    Ev::Deliver {
                        to,
                        from,
                        frame: frame.clone(),
                    },
                );
            }
            self.push(self.now + last, Ev::Deliver { to, from, frame });
        }
        self.delays = delays;
    }

    /// LS6 needs what each client actually asked for: read its ordered requests off the wire.
    fn record_client_frame(&mut self, c: u32, to: Principal, frame: &[u8]) {
        let Some(ring) = self.keys.ring(to) else {
            return;
        };
        if let Ok((_, Message::Request { life, nc, op })) = ring.open(frame) {
            self.workload.sent_identity(c, life, nc, &op, self.now);
            self.workload.sent_request(c, nc, &op);
        }
    }

    /// What correct order replicas send is checked as it leaves them (check/votes.rs).
    fn record_order_frame(&mut self, from: usize, o: OrderId, to: Principal, frame: &[u8]) {
        let Some(ring) = self.keys.ring(to) else {
            return;
        };
        let Ok((_, msg)) = ring.open(frame) else {
            return;
        };
        if let Message::Commit { seq, .. } = &msg {
            self.commit_senders.entry(*seq).or_default().insert(from);
            while self.commit_senders.len() > 16 {
                self.commit_senders.pop_first();
            }
        }
        self.checker.order_sent(o, &msg);
    }

    /// ES4 (`ES4-token-durable`): a correct execution replica sends the token of a checkpoint
    /// only once its disk holds that checkpoint durably, so that the order stage never counts
    /// toward a stable checkpoint a token that the replica could not stand behind after a
    /// power loss. A later durable checkpoint counts too: a token held behind a long sync can
    /// leave after the replica took later checkpoints and let this one go (sim seed 1 `--app
    /// spec --partial`: a 127 ms sync), and the sync that released it made those durable.
    fn check_token_durable(&mut self, from: usize, e: ExecId, to: Principal, frame: &[u8]) {
        let Some(ring) = self.keys.ring(to) else {
            return;
        };
        let Ok((_, Message::CpToken { seq, .. })) = ring.open(frame) else {
            return;
        };
        let checked = (from, self.nodes[from].incarnation, seq);
        if self.durable_tokens.contains(&checked) {
            return;
        }
        let key = plumb_exec::checkpoint_key(seq);
        if self.nodes[from]
            .disk
            .holds_durably(&key, plumb_exec::CHECKPOINT_PREFIX)
        {
            self.durable_tokens.insert(checked);
        } else {
            self.checker.violate(
                "ES4-token-durable",
                format!(
                    "e{} sent the token of checkpoint {seq} before its disk held it (or a later one) durably",
                    e.0
                ),
            );
        }
    }

    /// Wipe the correct order replica that sent the newest COMMIT and cut off the others that
    /// sent one for that batch, so that the next quorum forms from replicas that never saw it:
    /// only the recovery protocol keeps the wiped replica from voting it away.
    fn targeted_amnesia(&mut self) {
        let Some(plan) = self.cfg.plan.targeted_amnesia.clone() else {
            return;
        };
        let Some((&seq, senders)) = self
            .commit_senders
            .iter()
            .rev()
            .find(|(_, s)| s.iter().any(|i| self.nodes[*i].stage.is_some()))
        else {
            return;
        };
        let senders: Vec<usize> = senders.iter().copied().collect();
        let Some(&victim) = senders.iter().find(|i| self.nodes[**i].stage.is_some()) else {
            return;
        };
        self.trace.line(
            self.now,
            format_args!(
                "targeted amnesia: {} (sent COMMIT for {seq}) loses its disk",
                self.nodes[victim].p
            ),
        );
        self.crash(victim, DiskFault::Wipe);
        self.push(plan.restart_at, Ev::Start { node: victim });
        let cut: Vec<bool> = (0..self.nodes.len())
            .map(|i| i != victim && senders.contains(&i))
            .collect();
        if cut.iter().any(|c| *c) {
            let id = self.cfg.plan.partitions.len();
            self.net.start_partition(id, cut);
            self.push(plan.until, Ev::PartitionEnd(id));
        }
    }

    fn build(
        &self,
        p: Principal,
        recovered: Recovered,
        incarnation: u64,
    ) -> Option<StageBox<A::App>> {
        let keys = self.keys.ring(p)?.clone();
        let seed = plumb_crypto::Digest::of_parts(&[
            b"stage seed",
            &self.cfg.seed.to_le_bytes(),
            &p.label().to_le_bytes(),
            &incarnation.to_le_bytes(),
        ]);
        let seed = u64::from_le_bytes(*seed.0.first_chunk::<8>()?);
        let ctx = StageContext {
            config: self.protocol.clone(),
            keys,
            seed,
        };
        Some(match p {
            Principal::Auth(_) => StageBox::Auth(Box::new(AuthReplica::new(ctx, recovered))),
            Principal::Order(_) => StageBox::Order(Box::new(OrderReplica::new(ctx, recovered))),
            Principal::Exec(e) if self.cfg.protocol.is_sleeper(e.0) => {
                StageBox::Sleeper(Box::new(Sleeper::new(ctx, self.app.new_app(), recovered)))
            }
            Principal::Exec(_) => StageBox::Exec(Box::new(ExecReplica::new(
                ctx,
                self.app.new_app(),
                recovered,
            ))),
            Principal::Client(_) => StageBox::Client(Box::new(Client::new(ctx, recovered))),
        })
    }

    fn start(&mut self, i: usize) {
        if self.nodes[i].stage.is_some() {
            return;
        }
        let p = self.nodes[i].p;
        let damage = match std::mem::replace(&mut self.nodes[i].disk_fault, DiskFault::None) {
            DiskFault::None => None,
            DiskFault::FlipBit => self.nodes[i]
                .disk
                .flip_bit(&mut self.fault_rng)
                .map(|key| format!("bit flipped in record {key}")),
            DiskFault::Wipe => {
                self.nodes[i].disk.wipe();
                Some("disk wiped".to_string())
            }
            DiskFault::LoseRecord(prefix) => self.nodes[i]
                .disk
                .lose_record(&mut self.fault_rng, prefix)
                .map(|key| format!("record {key} lost")),
            DiskFault::RollBack => self.nodes[i]
                .disk
                .roll_back(&mut self.fault_rng)
                .map(|what| format!("rolled back: {what}")),
        };
        if let Some(what) = damage {
            self.trace.line(self.now, format_args!("{p}: {what}"));
        }
        let recovered = self.nodes[i].disk.recover();
        let incarnation = self.nodes[i].incarnation;
        self.trace.fold(&[
            self.now,
            3,
            i as u64,
            recovered.records.len() as u64,
            recovered.corrupt.len() as u64,
        ]);
        self.trace.line(
            self.now,
            format_args!(
                "{p} starts (incarnation {incarnation}, {} records, {} corrupt)",
                recovered.records.len(),
                recovered.corrupt.len()
            ),
        );
        self.nodes[i].stage = self.build(p, recovered, incarnation);
        if matches!(p, Principal::Exec(_)) && self.nodes[i].correct {
            self.checker.exec_started(p);
        }
        // What a restarted client resumes is known from its record, before it resends
        // anything: a resent request must not be taken for the operation it was invoking when
        // it crashed, which never left if the crash came before its record was synced.
        if let (Principal::Client(c), true) = (p, incarnation > 0) {
            if let Some(StageBox::Client(client)) = &self.nodes[i].stage {
                let (resumed, lost_record) = (client.outstanding_request(), client.learning());
                self.workload.client_restarted(c, resumed, lost_record);
                self.stats.client_restarts_without_record += u64::from(lost_record);
                self.lane_restarted(c, resumed);
            }
        }
        self.step(i, Event::Start);
        if let Principal::Client(_) = p {
            // A client that resumed a request is woken by its completion.
            let busy =
                matches!(&self.nodes[i].stage, Some(StageBox::Client(cl)) if cl.outstanding());
            if !busy {
                self.schedule_wake(i);
            }
        }
    }

    fn crash(&mut self, i: usize, disk: DiskFault) {
        if self.nodes[i].stage.is_none() {
            return;
        }
        self.stats.crashes += 1;
        let node = &mut self.nodes[i];
        node.stage = None;
        node.timers.clear();
        node.syncs = Default::default();
        node.incarnation += 1;
        // A sleeper's next life counts the WAKEs and SLEEPs that reach it, not its last's.
        node.wakes_seen.clear();
        node.sleeps_seen.clear();
        node.disk.crash(&mut self.fault_rng);
        node.disk_fault = disk;
        self.trace.fold(&[self.now, 4, i as u64]);
        self.trace
            .line(self.now, format_args!("{} crashes", self.nodes[i].p));
        if let Principal::Client(c) = self.nodes[i].p {
            self.workload.client_crashed(c);
        }
    }

    /// The plan's crash ahead of the disk: node `i` just sent ahead of its pending syncs. It
    /// crashes before they complete (right after this step), losing what they would have made
    /// durable, and restarts soon. An order replica sends ahead of its disk only
    /// PRE-PREPAREs; an execution replica sends everything but checkpoint tokens so, and is
    /// struck only while a sync of its own is pending (it loses the checkpoint behind it).
    fn maybe_crash_ahead(&mut self, i: usize) {
        let (stage, plan) = match self.nodes[i].p {
            Principal::Order(_) => (Ahead::Order, self.cfg.plan.crash_ahead),
            Principal::Exec(_) if self.nodes[i].syncs.pending() => {
                (Ahead::Exec, self.cfg.plan.exec_crash_ahead)
            }
            _ => return,
        };
        let crashes = &mut self.crashes_ahead[stage as usize];
        let (Some(plan), true) = (plan, crashes.armed) else {
            return;
        };
        if !self.nodes[i].correct {
            return;
        }
        crashes.armed = false;
        if self.now > plan.until {
            return;
        }
        crashes.done += 1;
        if crashes.done < plan.times {
            self.push(self.now + plan.down + 500_000, Ev::ArmCrashAhead(stage));
        }
        self.trace.line(
            self.now,
            format_args!("{} sent ahead of its disk: it crashes now", self.nodes[i].p),
        );
        self.push(
            self.now,
            Ev::Crash {
                node: i,
                disk: DiskFault::None,
            },
        );
        self.push(self.now + plan.down, Ev::Start { node: i });
    }

    /// Wake client node `i` after a think time.
    fn schedule_wake(&mut self, i: usize) {
        let at = self.now + self.workload.think_time();
        let life = self.nodes[i].incarnation;
        self.push(at, Ev::Wake { node: i, life });
    }
}

/// The stage a crash ahead of the disk strikes (the fault plan's `crash_ahead` and
/// `exec_crash_ahead`).
#[derive(Clone, Copy, Debug)]
enum Ahead {
    Order = 0,
    Exec = 1,
}

/// One stage's crashes ahead of the disk: armed, and how many struck.
#[derive(Default)]
struct CrashesAhead {
    armed: bool,
    done: u32,
}

/// The kind of an event, for reports.
fn event_kind(event: &Event) -> &'static str {
    match event {
        Event::Start => "its start",
        Event::Receive(_) => "a frame",
        Event::Timer(_) => "a timer",
    }
}
