//! Prophecy in the simulator (seed 000 §3.3): with `SimOptions::sketcher`, the correct
//! clients' reads go through one sketching core shared by every client, as they would through
//! a gateway's sketcher whose replica clients are the simulated clients. A read is planned by
//! the core; a fast read goes to one uniformly random execution replica (the client core's
//! `Route::Fast`); its answer is accepted only if the core says its sketch matches, otherwise
//! (and for planned replicated reads) the read is ordered and its answer, with the position it
//! was executed at, updates the core before the client sees it. The core is the production
//! `plumb_prophecy::ShardedSketcher`, with a small table (so entries are evicted) and
//! membership changes (so regions are handed over) during the run.
//!
//! Some seeds run D-Prophecy instead (seed 000 §3.2, no trusted sketcher): every read goes to
//! all execution replicas, one uniformly random executor answers it and the others vouch with
//! the digest of their last ordered answer (`Route::Sketched`); the client falls back to an
//! ordered read itself. The two are not mixed in one run: each is delay-once on its own, but
//! a D-Prophecy read can see newer state than a sketcher's table, and a fast read accepted
//! after it would then go back in time.
//!
//! The correct clients' histories are then checked for delay-once linearizability
//! (`plumb_lincheck::check_delay_once`) instead of linearizability.

use super::World;
use crate::app::SimApp;
use crate::rng::SimRng;
use plumb_client::Route;
use plumb_core::Answered;
use plumb_prophecy::{
    Plan, Position, ShardId, ShardedSketcher, ShardingConfig, Sketch, SketcherConfig, Verdict,
};
use plumb_wire::ExecId;

pub(crate) struct SimSketcher {
    core: ShardedSketcher,
    rng: SimRng,
    /// Shards now in the ring (alternates between two and three).
    shards: u32,
    /// D-Prophecy instead of the sketcher.
    distributed: bool,
}

/// What a sketched read's completion leads to.
pub(super) enum Next {
    /// The answer goes to the client (its history).
    Deliver,
    /// Ordered now (a fast reply that did not match, or none).
    Reissue,
}

impl SimSketcher {
    pub(crate) fn new(seed: u64) -> SimSketcher {
        let mut rng = SimRng::new(seed, "sketcher");
        let config = SketcherConfig {
            // Fewer entries than the seed's keys sometimes: evictions happen.
            max_entries: 3,
            // Half the seeds without automatic blacklisting: a stale replica's mismatches
            // would otherwise blacklist the keys it lies about, and hide what the table does.
            auto_blacklist: rng.chance(0.5),
            blacklist_cooldown_us: 2_000_000,
            ..SketcherConfig::default()
        };
        let sharding = ShardingConfig {
            vnodes_per_shard: 8,
            handover_us: Some(300_000),
        };
        let shards = [ShardId(0), ShardId(1)];
        let core = match ShardedSketcher::new(&shards, config, sharding) {
            Ok(core) => core,
            Err(e) => panic!("the simulator's sketcher configuration is invalid: {e}"),
        };
        SimSketcher {
            core,
            distributed: rng.chance(0.3),
            rng,
            shards: 2,
        }
    }
}

impl SimSketcher {
    /// D-Prophecy (no trusted sketcher) in this run.
    pub(crate) fn distributed(&self) -> bool {
        self.distributed
    }
}

impl<A: SimApp> World<'_, A> {
    /// The route of a correct client's read under the sketcher.
    pub(super) fn sketched_route(&mut self, op: &[u8]) -> Route {
        let now = self.now;
        // Replicas that execute: in ZZ mode the actives (a sleeper answers nothing; the
        // client core orders a D-Prophecy read there anyway).
        let exec = self.cfg.protocol.executing_replicas();
        let Some(s) = self.sketcher.as_mut() else {
            return Route::ReadOnly;
        };
        if s.distributed {
            return Route::Sketched {
                executor: ExecId(s.rng.index(exec) as u16),
            };
        }
        s.core.tick(now);
        // Now and then a sketcher joins or leaves: its regions are handed over.
        if s.rng.chance(0.01) {
            let next = if s.shards == 2 { 3 } else { 2 };
            let members: Vec<ShardId> = (0..next).map(ShardId).collect();
            if s.core.set_members(&members, now).is_ok() {
                s.shards = next;
            }
        }
        match s.core.plan(Sketch::of(op), now) {
            Plan::Fast { .. } => Route::Fast {
                exec: ExecId(s.rng.index(exec) as u16),
            },
            Plan::Replicated => Route::Ordered,
        }
    }

    /// A sketched read of `op` completed with `result` by `answered`.
    pub(super) fn sketched_completion(
        &mut self,
        op: &[u8],
        result: &[u8],
        answered: Answered,
    ) -> Next {
        let now = self.now;
        let Some(s) = self.sketcher.as_mut() else {
            return Next::Deliver;
        };
        if s.distributed {
            // The client checked (or ordered) it itself.
            return Next::Deliver;
        }
        let q = Sketch::of(op);
        match answered {
            Answered::Fast { .. } => match s.core.on_fast_reply(q, Sketch::of(result), now) {
                Verdict::Accept => Next::Deliver,
                Verdict::Fallback => Next::Reissue,
            },
            Answered::Unanswered => {
                s.core.on_fast_failed(q, now);
                Next::Reissue
            }
            Answered::Ordered { at } => {
                let at = Position::new(at.seq.0, at.index);
                let _ = s.core.on_replicated(q, Sketch::of(result), at, now);
                Next::Deliver
            }
            Answered::ReadOnly | Answered::Sketched { .. } => Next::Deliver,
        }
    }

    /// Counts for the report: fast hits and the rest.
    pub(super) fn sketcher_counters(&self) -> Option<plumb_prophecy::Counters> {
        self.sketcher.as_ref().map(|s| s.core.counters())
    }
}
