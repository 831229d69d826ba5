//! Byzantine behaviours, for tests only: the simulator draws them for its faulty principals, and
//! a node built with the `adversary` feature (never a release build) can be told to act one out
//! (`plumb node --adversary NAME`), which is how `plumb bench --scenario` measures a real cluster
//! under attack.
//!
//! A faulty replica runs the correct stage code; the adversary sits between the stage and the
//! network and rewrites, delays or withholds what the stage sends, and ignores some of what it
//! receives ([`Adversary`]). It holds the replica's own keys, so what it sends carries valid
//! MACs and signatures: to the other replicas it is a replica whose code lies. Faulty clients
//! are frame builders ([`client`]) for attacks a correct client library never makes.
//!
//! The adversaries know no application: where a lie is stronger in the application's own terms
//! (a forged write, a plausible wrong result, a checkpoint that loads but holds the wrong state)
//! they ask an [`AppForgery`], which the simulator takes from the application under test.

pub mod client;
mod forgery;
mod replica;

pub use forgery::{AnyApp, AppForgery};
pub use replica::{Adversary, Outgoing, STARVED_CLIENT};

use plumb_wire::{AuthId, ExecId, OrderId, Principal};
use std::fmt;

/// What a Byzantine replica does to its own (correctly computed) output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Behaviour {
    /// Sends nothing at all.
    Silent,
    /// Authentication: AUTH-REQ authenticators with wrong MACs.
    BadMacs,
    /// Authentication: wrong request bodies in COMMAND, and AUTH-REQs (with valid MACs) for
    /// operations the client never issued.
    ForgedRequests,
    /// Order primary: a different, well-formed batch to some backups, with PREPARE/COMMIT
    /// digests matching what each recipient got; as a new primary, a different valid subset
    /// of VIEW-CHANGE proofs to each backup.
    Equivocate,
    /// Order: PREPARE/COMMIT/CHECKPOINT with wrong digests to a random half of recipients.
    ConflictingVotes,
    /// Order: NEXT-BATCH and COMMITTED with an altered batch, LOAD-CP with a wrong token.
    WrongNextBatch,
    /// Order: validly signed VIEW-CHANGEs that lie (a batch prepared in a high view that no
    /// one prepared, amnesia, a checkpoint no one took).
    ForgedViewChange,
    /// Order primary: every PRE-PREPARE held back this many microseconds (seed 004 Table 3.4:
    /// 1, 10 and 100 ms).
    SlowPrimary(u64),
    /// Order: ignores every AUTH-REQ of [`STARVED_CLIENT`], so as primary it never proposes
    /// that client's requests (seed 004 Table 3.5).
    Starve,
    /// Order primary: PRE-PREPAREs with a request whose matrix signature is stripped, which
    /// every correct backup can tell is invalid.
    InvalidBatch,
    /// Order backup: races the new primary with a NEW-VIEW of its own, a valid subset of the
    /// VIEW-CHANGEs it received, signed by itself (simulator only: it needs to see incoming
    /// frames).
    RaceNewView,
    /// Execution: wrong results in REPLY and READ-ONLY-REPLY.
    WrongReplies,
    /// Execution: wrong CP-TOKENs, corrupted checkpoints (three answers in four) and state in
    /// state transfer, corrupted objects and object nodes.
    WrongCheckpoint,
    /// Execution: answers unordered reads (read-only, Prophecy's fast reads, D-Prophecy's
    /// sketches) from the past: with the answer its state gave to the same operation before the
    /// last change, as a replica one write behind would. Drawn only for the simulator's sketcher seeds (`plumb sim
    /// --sketcher`), which check what a stale fast reply may do (simulator only: it needs to
    /// see incoming frames).
    StaleReads,
    /// Execution: answers EARLY-REQUESTs (client speculation) with a wrong result, a plausible
    /// one of the application's, in this many percent of early replies, whatever the
    /// principal's lying rate; everything else it does correctly. Drawn only for the
    /// simulator's speculation seeds (`plumb sim --app spec`): what a lying early replier may
    /// do is make clients speculate on wrong results, which replicas must then abort.
    WrongEarlyReplies(u8),
    /// Any replica: besides its normal output, a stream of maximum-size frames to every peer
    /// (seed 004 Table 3.6). Only a node acts this out; the simulator's network has no
    /// capacity to exhaust.
    Flood,
    /// Order, ZZ mode: besides its normal output, a WAKE to every execution replica on each
    /// EXEC-REPORT it receives, whatever the reports say (simulator only: it acts on incoming
    /// frames). Drawn only for the simulator's ZZ seeds (`plumb sim --zz`): alone, it must
    /// never wake a sleeper.
    WakeSleepers,
    /// Execution, ZZ mode: after its first 64 batches, every REPLY, REPLY-COPY and
    /// EXEC-REPORT held back, 50 ms at first and twice as long after every 64 batches it
    /// reports, up to a minute: an active that lags a little more each time, so that the order
    /// replicas' late-report bound, stretched by its own lags, never catches it unless that
    /// bound has a most. Drawn only for the simulator's ZZ seeds (`plumb sim --zz`).
    CreepingExec,
}

/// The rates at which a [`Behaviour::WrongEarlyReplies`] replica lies that the simulator draws
/// from (and `Behaviour::parse` knows): above and far above a client's 1% fault threshold.
pub const EARLY_LIE_PERCENTS: [u8; 3] = [5, 30, 100];

impl Behaviour {
    /// The behaviours the simulator draws for a replica of `p`'s stage.
    pub fn for_stage(p: Principal) -> &'static [Behaviour] {
        match p {
            Principal::Auth(_) => &[
                Behaviour::Silent,
                Behaviour::BadMacs,
                Behaviour::ForgedRequests,
            ],
            Principal::Order(_) => &[
                Behaviour::Silent,
                Behaviour::Equivocate,
                Behaviour::ConflictingVotes,
                Behaviour::WrongNextBatch,
                Behaviour::ForgedViewChange,
                Behaviour::SlowPrimary(1_000),
                Behaviour::SlowPrimary(10_000),
                Behaviour::SlowPrimary(100_000),
                Behaviour::Starve,
                Behaviour::InvalidBatch,
                Behaviour::RaceNewView,
            ],
            Principal::Exec(_) => &[
                Behaviour::Silent,
                Behaviour::WrongReplies,
                Behaviour::WrongCheckpoint,
            ],
            Principal::Client(_) => &[],
        }
    }

    /// Every behaviour: what the simulator draws for each stage, and `Flood`.
    pub fn all() -> Vec<Behaviour> {
        let mut all: Vec<Behaviour> = [
            Principal::Auth(AuthId(0)),
            Principal::Order(OrderId(0)),
            Principal::Exec(ExecId(0)),
        ]
        .iter()
        .flat_map(|p| Behaviour::for_stage(*p).iter().copied())
        .collect();
        all.push(Behaviour::Flood);
        all.push(Behaviour::WakeSleepers);
        all.push(Behaviour::CreepingExec);
        all.extend(
            EARLY_LIE_PERCENTS
                .iter()
                .map(|&p| Behaviour::WrongEarlyReplies(p)),
        );
        all.sort();
        all.dedup();
        all
    }

    /// Parse a command-line name (`slow-primary-10ms`, `starve`, ...).
    pub fn parse(name: &str) -> Result<Behaviour, String> {
        Behaviour::all()
            .into_iter()
            .find(|b| b.to_string() == name)
            .ok_or_else(|| {
                let names: Vec<String> = Behaviour::all().iter().map(|b| b.to_string()).collect();
                format!(
                    "unknown adversary behaviour {name:?}; one of: {}",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Behaviour::Silent => f.write_str("silent"),
            Behaviour::BadMacs => f.write_str("bad-macs"),
            Behaviour::ForgedRequests => f.write_str("forged-requests"),
            Behaviour::Equivocate => f.write_str("equivocate"),
            Behaviour::ConflictingVotes => f.write_str("conflicting-votes"),
            Behaviour::WrongNextBatch => f.write_str("wrong-next-batch"),
            Behaviour::ForgedViewChange => f.write_str("forged-view-change"),
            Behaviour::SlowPrimary(us) => write!(f, "slow-primary-{}ms", us / 1000),
            Behaviour::Starve => f.write_str("starve"),
            Behaviour::InvalidBatch => f.write_str("invalid-batch"),
            Behaviour::RaceNewView => f.write_str("race-new-view"),
            Behaviour::WrongReplies => f.write_str("wrong-replies"),
            Behaviour::WrongCheckpoint => f.write_str("wrong-checkpoint"),
            Behaviour::StaleReads => f.write_str("stale-reads"),
            Behaviour::WrongEarlyReplies(pct) => write!(f, "wrong-early-replies-{pct}pct"),
            Behaviour::Flood => f.write_str("flood"),
            Behaviour::WakeSleepers => f.write_str("wake-sleepers"),
            Behaviour::CreepingExec => f.write_str("creeping-exec"),
        }
    }
}

/// The adversary's dice: deterministic from a seed, so a simulated run replays exactly.
#[derive(Clone, Debug)]
pub struct Dice(plumb_core::Rng);

impl Dice {
    pub fn new(seed: u64) -> Dice {
        Dice(plumb_core::Rng::new(seed))
    }

    pub fn chance(&mut self, p: f64) -> bool {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.below(hi.saturating_sub(lo) + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in Behaviour::all() {
            assert_eq!(Behaviour::parse(&b.to_string()), Ok(b));
        }
        assert!(Behaviour::parse("nice")
            .unwrap_err()
            .contains("slow-primary-100ms"));
    }
}
