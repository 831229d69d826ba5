//! Runs one pure stage on its own thread with real time and a durable store.
//!
//! The thread takes frames and jobs from the stage's [`Mailbox`], fires timers, and carries out
//! the stage's actions in order, with two liberties, both about `Store(Sync)`:
//! - **Group commit.** A sync is not begun at once: the thread goes on with the next waiting
//!   events (up to [`GROUP_MAX`]), and when the mailbox is empty or the group is full, one
//!   `fdatasync` covers them all. N requests cost one sync instead of N.
//! - **Storage off the thread.** Writes and `fdatasync`s run on the stage's store thread
//!   ([`crate::store_thread`]), in order, and the stage's thread goes on handling events
//!   meanwhile: a disk that stalls for 100 ms, or a checkpoint that writes megabytes, stalls
//!   this stage's messages that wait for it, not the stage. At most one sync is in flight;
//!   syncs asked for meanwhile wait for it and then share the next.
//!
//! What a sync promises stays: every externally visible action (send, completion, push) after
//! a `Sync` is held until a sync begun after that `Sync` was asked for has completed, and held
//! actions leave in order. A crash before then loses only state nothing outside has seen.
//! [`Action::SendUnsynced`] is the stage's own exception: it leaves at once.
//! A failed write or sync ends the process: after a failed `fsync` the kernel may have dropped
//! the dirty pages, and carrying on could acknowledge what is not on disk.

use crate::mailbox::{Item, Mailbox, QueueKey};
use crate::store_thread::StoreThread;
use plumb_core::{Action, Counters, Event, Micros, Observation, Stage, StoreOp, TimerId};
use plumb_storage::{Store, StoreStats};
use plumb_wire::{Principal, ReqNo};
use prometheus_client::metrics::histogram::Histogram;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where a stage's sends go.
pub trait Outbox: Send + Sync {
    fn send(&self, from: Principal, to: Principal, frame: Vec<u8>);
}

/// What the process around a stage does with the actions that are not sends, timers or
/// storage, and with local jobs.
pub trait Host<S>: Send {
    type Job: Send;
    /// A job from the local process (for a client: an operation to submit).
    fn job(&mut self, _stage: &mut S, _now: Micros, _job: Self::Job, _out: &mut Vec<Action>) {}
    /// After every event: a chance to start queued work now that the stage may be idle.
    fn after(&mut self, _stage: &mut S, _now: Micros, _out: &mut Vec<Action>) {}
    fn observe(&mut self, _obs: &Observation) {}
    fn complete(&mut self, _nc: ReqNo, _result: Vec<u8>) {}
    fn pushed(&mut self, _event: u64, _payload: Vec<u8>) {}
}

/// What a running stage shows its process (metrics, status).
pub struct StageShared {
    pub principal: Principal,
    /// The stage's counters (dropped messages by reason...), refreshed a few times a second.
    pub counters: Mutex<Counters>,
    /// Seconds per `Sync`.
    pub fsync_seconds: Histogram,
    /// The store's counters (log size, compactions), refreshed after every sync.
    pub store: Mutex<StoreStats>,
}

impl StageShared {
    pub fn new(principal: Principal) -> Arc<StageShared> {
        Arc::new(StageShared {
            principal,
            counters: Mutex::new(Counters::default()),
            fsync_seconds: Histogram::new(
                [
                    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05,
                    0.1, 0.25, 1.0,
                ]
                .into_iter(),
            ),
            store: Mutex::new(StoreStats::default()),
        })
    }
}

/// Wall-clock time in microseconds since the Unix epoch: the stages' notion of "now" (batch
/// times are agreed wall-clock times; timers use the monotonic clock).
pub fn wall_micros() -> Micros {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as Micros)
        .unwrap_or(0)
}

pub struct Runner<S: Stage, H: Host<S>> {
    stage: S,
    store: StoreThread,
    mailbox: Arc<Mailbox<H::Job>>,
    outbox: Arc<dyn Outbox>,
    host: H,
    shared: Arc<StageShared>,
    timers: HashMap<TimerId, Instant>,
    actions: Vec<Action>,
    /// Syncs and the actions that wait for them.
    syncs: Syncs,
    /// Time spent waiting for the store thread so far (its queue full): the part of a slow
    /// step that was the disk's.
    store_time: Duration,
    /// When a slow step was last logged, and how many went unlogged since.
    slow_logged: Option<(Instant, u64)>,
    /// This thread's CPU time when the current round (due timers, a group of events, their
    /// commit) began.
    round_cpu: Duration,
}

/// A replica's step (one event handled, or one group commit) or a timer's lateness beyond this
/// is logged: it is a pause every peer sees (the heartbeat is 40 ms).
const SLOW_STEP: Duration = Duration::from_millis(20);

/// Where a step started: to tell, if it is slow, how much was storage.
#[derive(Clone, Copy)]
struct StepMark {
    started: Instant,
    stored: Duration,
}

/// What a slow step spent: CPU time of the stage's thread in the round so far (at least the
/// step's own; far less than the step's wall time means it waited for a core or the disk),
/// and time in storage calls.
#[derive(Clone, Copy)]
struct StepCost {
    cpu: Duration,
    stored: Duration,
}

/// CPU time this thread has used (zero where the platform does not say).
fn thread_cpu_time() -> Duration {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    Duration::ZERO
}

/// The syncs of one stage. Syncs are numbered from 1 in the order they begin; `begun` and
/// `done` are the latest begun and completed (0: none), and at most one is in flight.
#[derive(Default)]
struct Syncs {
    /// A `Sync` was asked for since the latest sync began: the next one (`begun + 1`) must
    /// cover it.
    wanted: bool,
    begun: u64,
    done: u64,
    /// Visible actions in order, each with the sync it waits for.
    held: VecDeque<(u64, Action)>,
}

impl Syncs {
    fn in_flight(&self) -> bool {
        self.begun > self.done
    }

    /// The sync an action carried out now must wait for (`<= done`: none).
    fn needed(&self) -> u64 {
        self.begun + u64::from(self.wanted)
    }
}

/// Most events handled under one group commit.
pub const GROUP_MAX: usize = 64;

/// Longest the thread sleeps without looking at its timers and counters.
const TICK: Duration = Duration::from_millis(100);

impl<S: Stage + Send + 'static, H: Host<S> + 'static> Runner<S, H> {
    /// A runner for `stage`; fails only if the store thread cannot be started.
    pub fn new(
        stage: S,
        store: Store,
        mailbox: Arc<Mailbox<H::Job>>,
        outbox: Arc<dyn Outbox>,
        host: H,
        shared: Arc<StageShared>,
    ) -> std::io::Result<Self> {
        *shared.store.lock().unwrap_or_else(|p| p.into_inner()) = store.stats();
        let on_synced = {
            let (mailbox, shared) = (mailbox.clone(), shared.clone());
            move |stats, took: Duration| {
                shared.fsync_seconds.observe(took.as_secs_f64());
                *shared.store.lock().unwrap_or_else(|p| p.into_inner()) = stats;
                mailbox.push(QueueKey::Local, Item::Synced);
            }
        };
        let store = StoreThread::start(store, shared.principal, on_synced)?;
        Ok(Runner {
            stage,
            store,
            mailbox,
            outbox,
            host,
            shared,
            timers: HashMap::new(),
            actions: Vec::new(),
            syncs: Syncs::default(),
            store_time: Duration::ZERO,
            slow_logged: None,
            round_cpu: Duration::ZERO,
        })
    }

    /// Run on a new thread until the mailbox is closed.
    pub fn spawn(self, name: String) -> std::io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new()
            .name(name)
            .spawn(move || self.run())
    }

    fn run(mut self) {
        self.step(Event::Start);
        self.commit();
        let mut published = Instant::now();
        loop {
            // One CPU-clock reading per round (it is a system call); a slow step's line reports
            // the CPU its round used up to it.
            self.round_cpu = thread_cpu_time();
            let now = Instant::now();
            let due: Vec<TimerId> = self
                .timers
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(id, _)| *id)
                .collect();
            for id in due {
                if let Some(at) = self.timers.remove(&id) {
                    let late = now.saturating_duration_since(at);
                    if late > SLOW_STEP {
                        self.log_slow("a timer fired late (the thread got no CPU, or was busy with a group of events)", late, None);
                    }
                }
                self.step(Event::Timer(id));
            }
            self.commit();
            let wait = self
                .timers
                .values()
                .min()
                .map(|at| at.saturating_duration_since(Instant::now()))
                .unwrap_or(TICK)
                .min(TICK);
            // Wait for the first event; then take whatever else is already waiting, up to a
            // group, before the group's one sync.
            let mut handled = 0;
            let mut timeout = wait;
            while handled < GROUP_MAX {
                match self.mailbox.pop(timeout) {
                    Some(Item::Frame(f)) => self.step(Event::Receive(f)),
                    Some(Item::Job(job)) => {
                        let mut out = std::mem::take(&mut self.actions);
                        let now = wall_micros();
                        self.host.job(&mut self.stage, now, job, &mut out);
                        self.carry_out(&mut out);
                        self.actions = out;
                        self.after();
                    }
                    Some(Item::Synced) => self.synced(),
                    None => break,
                }
                handled += 1;
                timeout = Duration::ZERO;
            }
            self.commit();
            if handled == 0 && self.mailbox.is_closed() {
                break;
            }
            if published.elapsed() >= TICK {
                published = Instant::now();
                let mut c = self
                    .shared
                    .counters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                *c = self.stage.counters().clone();
            }
        }
        // Make sure everything written so far is durable before the thread ends.
        if self.syncs.in_flight() {
            self.store.wait_synced();
            self.completed();
        }
        self.syncs.begun += 1;
        if self.store.sync() {
            self.store.wait_synced();
        }
        // Everything is durable now: what waited for it may go (a completion's caller learns
        // its operation's outcome rather than that the client closed).
        self.completed();
        self.store.stop();
    }

    /// The group is over: begin the sync it asked for, unless one is in flight (then the
    /// next begins when that one completes). A sync with nothing to do completes at once and
    /// may let the host start work that asks for another: repeat.
    fn commit(&mut self) {
        let mark = self.mark();
        while self.syncs.wanted && !self.syncs.in_flight() {
            self.begin_sync();
        }
        self.check_slow("group commit", mark);
    }

    fn begin_sync(&mut self) {
        // What the stage kept back for the group's sync goes out behind it (`wanted` is still
        // set, so its sends are held for this sync).
        let mut out = std::mem::take(&mut self.actions);
        self.stage.before_sync(wall_micros(), &mut out);
        self.carry_out(&mut out);
        self.actions = out;
        self.syncs.wanted = false;
        self.syncs.begun += 1;
        if !self.store.sync() {
            // Durable already: nothing was written since the last sync.
            self.completed();
        }
    }

    /// The store thread says the sync in flight is over.
    fn synced(&mut self) {
        for _ in 0..self.store.take_synced() {
            self.completed();
        }
    }

    /// The latest sync begun is complete: release what waited for it. What was released may
    /// let the host start more work (a completed client takes the next job).
    fn completed(&mut self) {
        let me = self.shared.principal;
        self.syncs.done = self.syncs.begun;
        while let Some((need, _)) = self.syncs.held.front() {
            if *need > self.syncs.done {
                break;
            }
            let Some((_, action)) = self.syncs.held.pop_front() else {
                break;
            };
            match action {
                Action::Send { to, frame } => self.outbox.send(me, to, frame),
                Action::Complete { nc, result, .. } => self.host.complete(nc, result),
                Action::Pushed { event, payload } => self.host.pushed(event, payload),
                _ => {}
            }
        }
        self.after();
    }

    fn step(&mut self, event: Event) {
        let mark = self.mark();
        let what = match event {
            Event::Start => "starting",
            Event::Receive(_) => "handling a message",
            Event::Timer(_) => "handling a timer",
        };
        let mut out = std::mem::take(&mut self.actions);
        self.stage.handle(wall_micros(), event, &mut out);
        self.carry_out(&mut out);
        self.actions = out;
        self.after();
        self.check_slow(what, mark);
    }

    fn mark(&self) -> StepMark {
        StepMark {
            started: Instant::now(),
            stored: self.store_time,
        }
    }

    fn check_slow(&mut self, what: &str, mark: StepMark) {
        let took = mark.started.elapsed();
        if took > SLOW_STEP {
            let cost = StepCost {
                cpu: thread_cpu_time().saturating_sub(self.round_cpu),
                stored: self.store_time.saturating_sub(mark.stored),
            };
            self.log_slow(what, took, Some(cost));
        }
    }

    /// One line per second at most, saying how many went unlogged: under a stall every step
    /// is slow.
    fn log_slow(&mut self, what: &str, took: Duration, cost: Option<StepCost>) {
        // A client runs inside an application's process, whose stderr is the application's.
        if matches!(self.shared.principal, Principal::Client(_)) {
            return;
        }
        let now = Instant::now();
        if let Some((last, skipped)) = &mut self.slow_logged {
            if now.duration_since(*last) < Duration::from_secs(1) {
                *skipped += 1;
                return;
            }
        }
        let skipped = self.slow_logged.map_or(0, |(_, n)| n);
        let store = cost.map_or(String::new(), |c| {
            format!(
                ", {} ms in storage; the thread's round used {} ms of CPU so far",
                c.stored.as_millis(),
                c.cpu.as_millis()
            )
        });
        let more = match skipped {
            0 => String::new(),
            n => format!(" ({n} more slow steps since the last line)"),
        };
        eprintln!(
            "plumb: {}: slow step: {what} took {} ms{store}{more}",
            self.shared.principal,
            took.as_millis()
        );
        self.slow_logged = Some((now, 0));
    }

    fn after(&mut self) {
        let mut out = std::mem::take(&mut self.actions);
        self.host.after(&mut self.stage, wall_micros(), &mut out);
        self.carry_out(&mut out);
        self.actions = out;
    }

    fn carry_out(&mut self, actions: &mut Vec<Action>) {
        let me = self.shared.principal;
        for action in actions.drain(..) {
            match action {
                Action::Store(StoreOp::Sync) => self.syncs.wanted = true,
                Action::Store(op) => self.store_op(op),
                Action::Send { .. } | Action::Complete { .. } | Action::Pushed { .. }
                    if self.syncs.needed() > self.syncs.done =>
                {
                    let need = self.syncs.needed();
                    self.syncs.held.push_back((need, action))
                }
                Action::Send { to, frame } | Action::SendUnsynced { to, frame } => {
                    self.outbox.send(me, to, frame)
                }
                Action::Complete { nc, result, .. } => self.host.complete(nc, result),
                Action::Pushed { event, payload } => self.host.pushed(event, payload),
                // A client group keeps its members' early replies itself
                // (`plumb_client::net`); no other stage emits them.
                Action::Early { .. } => {}
                Action::SetTimer { id, after } => {
                    self.timers
                        .insert(id, Instant::now() + Duration::from_micros(after));
                }
                Action::CancelTimer { id } => {
                    self.timers.remove(&id);
                }
                Action::Observe(obs) => self.host.observe(&obs),
            }
        }
    }

    fn store_op(&mut self, op: StoreOp) {
        self.store_time += self.store.write(op);
    }
}
