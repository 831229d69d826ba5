//! Sleeping execution replicas (ZZ, seed 002; docs/zz.md).
//!
//! In ZZ mode (`zz = true` in the cluster file) only the first `max(u, r) + 1` execution
//! replicas execute. Each of the others runs a [`Sleeper`]: a stage that holds its
//! execution replica's keys, store and (empty) application but no running execution. It
//! drops everything but WAKEs from order replicas (counted as `drop-asleep`), and once
//! `r + 1` distinct order replicas have asked ([`votes`]) it builds its execution replica
//! from what its store held, starts it, and from then on is that replica. The woken replica
//! catches up as any lagging one does: it learns the stable checkpoint from the order stage,
//! adopts its root at once and fetches objects as batches need them, verified
//! (`load_objects_on_demand` is implied in ZZ mode), so it answers before it holds the state.
//!
//! Why a stage in the node process rather than a stopped process: it wakes fastest. A WAKE
//! is handled on the node's own threads, with its connections up and its keys loaded; a
//! stopped (SIGSTOP) or unstarted process must first be resumed or spawned by a daemon that
//! itself holds keys and listens, and its peers' connections to it may have timed out.
//! Asleep, the node costs its network threads' time to drop what reaches it.

pub mod votes;

use plumb_app::Application;
use plumb_core::{
    Action, BrokenInvariant, Counters, DropReason, Event, Micros, Observation, Recovered, Stage,
    StageContext, StoreOp,
};
use plumb_exec::ExecReplica;
use plumb_wire::{Message, Principal};
use votes::{WakeVote, WakeVotes};

static NO_COUNTS: Counters = Counters::new();

/// A sleeping execution replica, or the replica it woke as.
pub struct Sleeper<A: Application> {
    me: Principal,
    state: State<A>,
}

enum State<A: Application> {
    Asleep(Box<Dormant<A>>),
    Awake(Box<ExecReplica<A>>),
    /// Only within [`Sleeper::wake`], while the dormant parts become the replica.
    Waking,
}

/// What the replica will be built from, and who asked it to wake.
struct Dormant<A> {
    ctx: StageContext,
    app: A,
    recovered: Recovered,
    votes: WakeVotes,
    counters: Counters,
}

/// The record a sleeper writes, and syncs, before it wakes: a sleeper restarted after a
/// crash is awake at once if it holds it (its WAKEs were spent; the order replicas that sent
/// them have heard from it and ask no more).
pub const WOKEN_KEY: &str = "zz/woken";

impl<A: Application> Sleeper<A> {
    /// A sleeper that will run `app` as the execution replica of `ctx`, recovered from
    /// `recovered`, once woken; awake at once if `recovered` says it woke before.
    pub fn new(ctx: StageContext, app: A, mut recovered: Recovered) -> Sleeper<A> {
        let q = ctx.config.quorums;
        if recovered.records.remove(WOKEN_KEY).is_some() {
            return Sleeper {
                me: ctx.keys.me(),
                state: State::Awake(Box::new(ExecReplica::new(ctx, app, recovered))),
            };
        }
        Sleeper {
            me: ctx.keys.me(),
            state: State::Asleep(Box::new(Dormant {
                votes: WakeVotes::new(q.small(), q.order),
                ctx,
                app,
                recovered,
                counters: Counters::default(),
            })),
        }
    }

    /// The execution replica, once woken.
    pub fn awake(&self) -> Option<&ExecReplica<A>> {
        match &self.state {
            State::Awake(e) => Some(e),
            State::Asleep(_) | State::Waking => None,
        }
    }

    /// Handle a frame while asleep; `true` once the quorum has asked.
    fn asleep_frame(d: &mut Dormant<A>, frame: &[u8]) -> bool {
        let (from, msg) = match d.ctx.keys.open(frame) {
            Ok(opened) => opened,
            Err(e) => {
                d.counters.dropped(DropReason::from(&e));
                return false;
            }
        };
        let (Principal::Order(o), Message::Wake { .. }) = (from, msg) else {
            d.counters.dropped(DropReason::Asleep);
            return false;
        };
        match d.votes.ask(o) {
            WakeVote::Unknown => d.counters.dropped(DropReason::UnknownSender),
            WakeVote::Repeated => d.counters.add("wake-repeated"),
            WakeVote::Counted => d.counters.add("wake-asked"),
            WakeVote::Wake => return true,
        }
        false
    }

    fn wake(&mut self, now: Micros, out: &mut Vec<Action>) {
        let State::Asleep(d) = std::mem::replace(&mut self.state, State::Waking) else {
            return;
        };
        let Dormant {
            ctx,
            app,
            recovered,
            votes,
            ..
        } = *d;
        let mut replica = ExecReplica::new(ctx, app, recovered);
        out.push(Action::Observe(Observation::Woken {
            asked: votes.asked(),
        }));
        out.push(Action::Store(StoreOp::Put {
            key: WOKEN_KEY.to_string(),
            value: Vec::new(),
        }));
        out.push(Action::Store(StoreOp::Sync));
        replica.handle(now, Event::Start, out);
        self.state = State::Awake(Box::new(replica));
    }
}

impl<A: Application> Stage for Sleeper<A> {
    fn principal(&self) -> Principal {
        self.me
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        match (&mut self.state, event) {
            (State::Awake(e), event) => e.handle(now, event, out),
            // Asleep: no timers are set, so only frames come.
            (State::Asleep(_), Event::Start | Event::Timer(_)) | (State::Waking, _) => {}
            (State::Asleep(d), Event::Receive(frame)) => {
                if Self::asleep_frame(d, &frame) {
                    self.wake(now, out);
                }
            }
        }
    }

    fn counters(&self) -> &Counters {
        match &self.state {
            State::Awake(e) => e.counters(),
            State::Asleep(d) => &d.counters,
            State::Waking => &NO_COUNTS,
        }
    }

    fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        match &self.state {
            State::Awake(e) => e.check_invariants(),
            State::Asleep(d) => d.votes.check_asleep(),
            State::Waking => Ok(()),
        }
    }
}
