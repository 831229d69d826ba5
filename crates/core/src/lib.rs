//! The shape every plumb stage shares.
//!
//! A stage (authentication, order, execution replica, or client) is a deterministic state
//! machine: [`Stage::handle`] takes the current time and one [`Event`] and appends
//! [`Action`]s. It never touches sockets, files, clocks, threads or an entropy source; time
//! arrives with each event and randomness through the seed it was built with. Drivers (the
//! production node, the simulator) carry out the actions *in order*: in particular every
//! [`StoreOp::Sync`] completes before any action after it, so "persist, sync, then send" in
//! an action list means the message leaves only once the record is durable. The one
//! exception is [`Action::SendUnsynced`], which may overtake pending syncs (and the actions
//! held behind them); a driver may also carry out a sync while it goes on handling later
//! events, holding their visible actions until it completes. It tells the stage as it begins
//! one ([`Stage::before_sync`]), so that what several events produced can leave as one message.

pub mod drop_reason;
pub mod keys;
pub mod observe;
pub mod rng;
#[cfg(feature = "sabotage")]
pub mod sabotage;

/// Whether the named sabotage switch is on: `sabotaged!(AnyNewView)`. Always false, and the
/// switch compiled out, in a crate built without its own `sabotage` feature (which must turn
/// on `plumb-core/sabotage`), so a production build carries no switch.
#[macro_export]
macro_rules! sabotaged {
    ($switch:ident) => {{
        #[cfg(feature = "sabotage")]
        let on = $crate::sabotage::on($crate::sabotage::Sabotage::$switch);
        #[cfg(not(feature = "sabotage"))]
        let on = false;
        on
    }};
}
pub mod stall;
pub mod storage;

pub use drop_reason::DropReason;
pub use keys::KeyRing;
pub use observe::{Counters, DeliveredRequest, DivergenceReport, Observation};
pub use plumb_wire::Micros;
pub use rng::Rng;
pub use stall::{Evidence, SlowRequest, StallStage, ViewChangeCause, WaitReason};
pub use storage::{Recovered, StoreOp};

use plumb_wire::{ClientId, ExecId, Principal, ReqNo};

/// A stage-defined timer name. Setting a timer that is already set re-arms it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(pub u32);

#[derive(Debug)]
pub enum Event {
    /// Delivered once, right after the stage is built or recovered: set initial timers.
    Start,
    /// A frame from the network, not yet authenticated.
    Receive(Vec<u8>),
    Timer(TimerId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send an already sealed frame, once every sync asked for before it has completed.
    Send {
        to: Principal,
        frame: Vec<u8>,
    },
    /// Send an already sealed frame now, ahead of pending syncs and of the actions held
    /// behind them. The stage takes on what the barrier would have given it: the message may
    /// reach its peers while the records written before it are lost in a crash. Two uses: the
    /// primary's PRE-PREPARE (docs/protocol.md, "Pre-prepares ahead of the disk") and a
    /// speculating client's copy of its request for the early replica, which nothing commits
    /// (docs/speculation.md, "Early replies").
    SendUnsynced {
        to: Principal,
        frame: Vec<u8>,
    },
    SetTimer {
        id: TimerId,
        after: Micros,
    },
    CancelTimer {
        id: TimerId,
    },
    Store(StoreOp),
    /// Something a checker or a metrics exporter wants to know. No protocol effect.
    Observe(Observation),
    /// Client only: the answer to the outstanding operation (`nc` its ordered number, 0 if it
    /// was not ordered), and which path answered it.
    Complete {
        nc: ReqNo,
        result: Vec<u8>,
        answered: Answered,
    },
    /// Client only: a speculative answer to the outstanding ordered request `nc`, one
    /// execution replica's early execution (seed 001). Unverified: the caller may act on it
    /// only in ways it can undo; [`Action::Complete`] follows with the agreed answer.
    Early {
        nc: ReqNo,
        exec: ExecId,
        result: Vec<u8>,
    },
    /// Client only: a push event from the service.
    Pushed {
        event: u64,
        payload: Vec<u8>,
    },
}

/// How a client's operation was answered: the path, and what the caller may rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answered {
    /// Ordered, voted by `r + 1` execution replicas: linearizable, executed at `at`.
    Ordered { at: plumb_wire::Position },
    /// The read-only path: every execution replica answered alike (linearizable).
    ReadOnly,
    /// A fast read (Prophecy, seed 000 §3.1): one execution replica's answer, NOT voted. It
    /// had executed every batch below `executed + 1`. Only a sketcher's check makes it usable.
    Fast {
        exec: ExecId,
        executed: plumb_wire::Seq,
    },
    /// D-Prophecy (seed 000 §3.2): one replica's answer whose digest every other execution
    /// replica vouched for from its history of ordered executions of the same read.
    Sketched { exec: ExecId },
    /// A fast read that got no answer in time (`result` is empty): the caller decides what
    /// to do (a sketcher issues the read on the ordered path).
    Unanswered,
}

pub trait Stage {
    fn principal(&self) -> Principal;
    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>);
    /// The driver is about to begin a sync covering every write this stage asked for so far
    /// (it asked for a `Sync` since the last one began). What the stage does here is held
    /// behind that sync like everything it did since asking: the place to send, as one
    /// message, what several events produced. Drivers call it once per sync they begin, so a
    /// stage that keeps something back for it must have asked for a `Sync`.
    fn before_sync(&mut self, now: Micros, out: &mut Vec<Action>) {
        let _ = (now, out);
    }
    /// Dropped messages by reason, and other counts.
    fn counters(&self) -> &Counters;
    /// The invariants of this stage's own state, each checked where it lives. The simulator
    /// calls this after every step of every correct stage, so a run stops being right at the
    /// step that broke one, not when its consequences reach a check at the end. Never about
    /// remote input (that is dropped and counted); cheap, since it runs that often.
    fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        Ok(())
    }
}

/// A local invariant that does not hold: its name (what the simulator reports it as) and what
/// was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokenInvariant {
    pub name: &'static str,
    pub detail: String,
}

impl BrokenInvariant {
    /// `Err` naming `name` unless `holds`; `detail` is built only when it fails.
    pub fn check(
        holds: bool,
        name: &'static str,
        detail: impl FnOnce() -> String,
    ) -> Result<(), BrokenInvariant> {
        if holds {
            Ok(())
        } else {
            Err(BrokenInvariant {
                name,
                detail: detail(),
            })
        }
    }
}

/// Convenience for tests: one event as a group of its own, as a driver runs it when nothing
/// else waits (the event, then [`Stage::before_sync`] if it asked for a sync).
pub fn run(stage: &mut dyn Stage, now: Micros, event: Event) -> Vec<Action> {
    let mut out = Vec::new();
    stage.handle(now, event, &mut out);
    if out
        .iter()
        .any(|a| matches!(a, Action::Store(StoreOp::Sync)))
    {
        stage.before_sync(now, &mut out);
    }
    out
}

/// A client's identity as a principal.
pub fn client(c: ClientId) -> Principal {
    Principal::Client(c)
}

/// What every stage is built from.
#[derive(Clone)]
pub struct StageContext {
    pub config: std::sync::Arc<plumb_config::ProtocolConfig>,
    pub keys: KeyRing,
    /// Seed of the stage's deterministic PRNG.
    pub seed: u64,
}
