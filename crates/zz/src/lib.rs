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
//! Once every active and woken replica sent the agreed token of one checkpoint, order replicas
//! ask the woken replica to sleep again (SLEEP); on `r + 1` of them it pauses: it keeps its
//! replica in memory, runs nothing and drops everything but WAKEs, and resumes as after a
//! restart when woken again (seed 002's paused replicas).
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
use plumb_wire::{Message, OrderId, Principal, Seq};
use votes::{Vote, Votes};

static NO_COUNTS: Counters = Counters::new();

/// A sleeping execution replica, or the replica it woke as.
pub struct Sleeper<A: Application> {
    me: Principal,
    /// `r + 1`, and the order replicas in the cluster: what [`Votes`] count.
    quorum: usize,
    order: usize,
    state: State<A>,
}

enum State<A: Application> {
    /// Never woken since the node started: the replica is not built.
    Asleep(Box<Dormant<A>>),
    /// Running, counting the order replicas that asked it to sleep again.
    Awake(Box<Held<A>>),
    /// Put back to sleep: the replica is kept as it was, counting who asks it to wake.
    Paused(Box<Held<A>>),
    /// Only within a transition, while the parts move.
    Moving,
}

/// What the replica will be built from, and who asked it to wake.
struct Dormant<A> {
    ctx: StageContext,
    app: A,
    recovered: Recovered,
    votes: Votes,
    counters: Counters,
}

/// A built replica and the votes that would move it to the other state.
struct Held<A: Application> {
    replica: ExecReplica<A>,
    votes: Votes,
    /// Awake: the first batch it had to execute when it woke. A SLEEP names a checkpoint
    /// whose token this replica sent, so one naming an earlier checkpoint was sent in an
    /// earlier time awake, before a fault woke it again, and is not counted.
    since: Seq,
}

/// The record a sleeper writes, and syncs, before it wakes, and deletes when it sleeps again:
/// a sleeper restarted after a crash is awake at once if it holds it (its WAKEs were spent;
/// the order replicas that sent them have heard from it and ask no more).
pub const WOKEN_KEY: &str = "zz/woken";

impl<A: Application> Sleeper<A> {
    /// A sleeper that will run `app` as the execution replica of `ctx`, recovered from
    /// `recovered`, once woken; awake at once if `recovered` says it woke before.
    pub fn new(ctx: StageContext, app: A, mut recovered: Recovered) -> Sleeper<A> {
        let (quorum, order) = (ctx.config.quorums.small(), ctx.config.quorums.order);
        let me = ctx.keys.me();
        if recovered.records.remove(WOKEN_KEY).is_some() {
            let replica = ExecReplica::new(ctx, app, recovered);
            let votes = Votes::to_sleep(quorum, order);
            let since = replica.next_seq();
            return Sleeper {
                me,
                quorum,
                order,
                state: State::Awake(Box::new(Held {
                    replica,
                    votes,
                    since,
                })),
            };
        }
        Sleeper {
            me,
            quorum,
            order,
            state: State::Asleep(Box::new(Dormant {
                votes: Votes::to_wake(quorum, order),
                ctx,
                app,
                recovered,
                counters: Counters::default(),
            })),
        }
    }

    /// The execution replica, while awake.
    pub fn awake(&self) -> Option<&ExecReplica<A>> {
        match &self.state {
            State::Awake(h) => Some(&h.replica),
            State::Asleep(_) | State::Paused(_) | State::Moving => None,
        }
    }

    /// Handle a frame while never woken; `true` once the quorum has asked.
    fn dormant_frame(d: &mut Dormant<A>, frame: &[u8]) -> bool {
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
        count_vote(&mut d.counters, d.votes.ask(o), WAKE_COUNTERS)
    }

    fn wake(&mut self, now: Micros, out: &mut Vec<Action>) {
        let (mut replica, asked) = match std::mem::replace(&mut self.state, State::Moving) {
            State::Asleep(d) => {
                let Dormant {
                    ctx,
                    app,
                    recovered,
                    votes,
                    ..
                } = *d;
                (ExecReplica::new(ctx, app, recovered), votes.asked())
            }
            State::Paused(h) => (h.replica, h.votes.asked()),
            other => {
                self.state = other;
                return;
            }
        };
        out.push(Action::Observe(Observation::Woken { asked }));
        out.push(Action::Store(StoreOp::Put {
            key: WOKEN_KEY.to_string(),
            value: Vec::new(),
        }));
        out.push(Action::Store(StoreOp::Sync));
        let since = replica.next_seq();
        replica.resume(now, out);
        let votes = Votes::to_sleep(self.quorum, self.order);
        self.state = State::Awake(Box::new(Held {
            replica,
            votes,
            since,
        }));
    }

    /// Back to sleep: the replica stops where it is, and a restart finds it asleep.
    fn sleep(&mut self, out: &mut Vec<Action>) {
        let State::Awake(h) = std::mem::replace(&mut self.state, State::Moving) else {
            return;
        };
        let Held {
            mut replica, votes, ..
        } = *h;
        replica.pause(out);
        out.push(Action::Observe(Observation::Slept {
            asked: votes.asked(),
        }));
        out.push(Action::Store(StoreOp::Delete {
            key: WOKEN_KEY.to_string(),
        }));
        out.push(Action::Store(StoreOp::Sync));
        let votes = Votes::to_wake(self.quorum, self.order);
        let since = replica.next_seq();
        self.state = State::Paused(Box::new(Held {
            replica,
            votes,
            since,
        }));
    }
}

/// What a repeated and a counted request are counted as.
type VoteCounters = (&'static str, &'static str);
const WAKE_COUNTERS: VoteCounters = ("wake-repeated", "wake-asked");
const SLEEP_COUNTERS: VoteCounters = ("zz-sleep-repeated", "zz-sleep-counted");

/// Count one request in `counters`; `true` once the quorum has asked.
fn count_vote(counters: &mut Counters, vote: Vote, (repeated, counted): VoteCounters) -> bool {
    match vote {
        Vote::Unknown => counters.dropped(DropReason::UnknownSender),
        Vote::Repeated => counters.add(repeated),
        Vote::Counted => counters.add(counted),
        Vote::Reached => return true,
    }
    false
}

impl<A: Application> Stage for Sleeper<A> {
    fn principal(&self) -> Principal {
        self.me
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        match (&mut self.state, event) {
            (State::Awake(h), event) => {
                h.replica.handle(now, event, out);
                let mut reached = false;
                for (o, seq) in h.replica.take_sleep_asks() {
                    if seq < h.since {
                        h.replica.counters_mut().add("zz-sleep-stale");
                        continue;
                    }
                    let vote = h.votes.ask(o);
                    reached |= count_vote(h.replica.counters_mut(), vote, SLEEP_COUNTERS);
                }
                if reached {
                    self.sleep(out);
                }
            }
            // Asleep or paused: no timer of ours runs (a paused replica's were cancelled), so
            // only frames matter.
            (State::Asleep(_) | State::Paused(_), Event::Start | Event::Timer(_))
            | (State::Moving, _) => {}
            (State::Asleep(d), Event::Receive(frame)) => {
                if Self::dormant_frame(d, &frame) {
                    self.wake(now, out);
                }
            }
            (State::Paused(h), Event::Receive(frame)) => {
                let reached = h.replica.paused_frame(&frame).is_some_and(|o: OrderId| {
                    let vote = h.votes.ask(o);
                    count_vote(h.replica.counters_mut(), vote, WAKE_COUNTERS)
                });
                if reached {
                    self.wake(now, out);
                }
            }
        }
    }

    fn counters(&self) -> &Counters {
        match &self.state {
            State::Awake(h) | State::Paused(h) => h.replica.counters(),
            State::Asleep(d) => &d.counters,
            State::Moving => &NO_COUNTS,
        }
    }

    fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        match &self.state {
            State::Awake(h) => {
                h.votes.check_open("awake")?;
                h.replica.check_invariants()
            }
            State::Paused(h) => {
                h.votes.check_open("asleep")?;
                h.replica.check_invariants()
            }
            State::Asleep(d) => d.votes.check_open("asleep"),
            State::Moving => Ok(()),
        }
    }
}
