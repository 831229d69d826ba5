//! Prophecy in the gateway (seed 000 §3.3, docs/prophecy.md): reads of unmodified clients go
//! through a sketching core before they reach the replica group.
//!
//! A read's request sketch `s(q)` is the digest of the application operation the front end made
//! of it (for RESP: the command and its keys and arguments; for HTTP: method, path and the
//! headers that select content), and its response sketch `s(r)` the digest of the application's
//! answer, which carries no volatile parts (the front end adds dates and the like afterwards).
//! The core (`plumb_prophecy`) plans each read: a *fast* read goes to one uniformly random
//! execution replica and is accepted only if its sketch matches the history table's; otherwise,
//! and for reads with no usable entry, the read is *replicated* (ordered) and its answer, with
//! the position it was executed at, updates the table before the caller sees it (the caller
//! contract of `plumb_prophecy`). Writes never come here.
//!
//! **Several sketchers**: the table is partitioned by consistent hashing of `s(q)` over `N`
//! response sketchers, each with its own replica clients (its own pool: identities, thread and
//! links), so a read is served by the sketcher that owns its region, and sketchers work in
//! parallel. A region changing hands is replicated everywhere until the hand-over settles.

use crate::pool::{Pool, PoolError};
use plumb_client::net::{Answered, Route};
pub use plumb_prophecy::SketcherConfig;
use plumb_prophecy::{
    Counters, Plan, Position, ShardId, ShardingConfig, SharedSketchers, Sketch, Verdict,
};
use plumb_wire::ExecId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub struct SketchedReads {
    core: SharedSketchers,
    /// Sketcher `i`'s replica clients.
    pools: Vec<Arc<Pool>>,
    /// Execution replicas a fast read may go to, `0..exec`: those that execute (in ZZ mode
    /// the actives; a sleeper answers nothing). Safety does not depend on which one answers:
    /// the answer is checked against the table.
    exec: u16,
    started: Instant,
    /// State of the replica picker (splitmix64): uniform, not adversarial (seed 000 §4.2
    /// assumes the choice is not steered by faulty replicas; nothing here lets them).
    picker: AtomicU64,
    /// For benchmarks: one fast reply in `forced_transitions` of 1000 is treated as a
    /// mismatch, which is how seed 000 §7.2 sets a transition ratio. 0 in production.
    forced_transitions: AtomicU64,
    counter: AtomicU64,
}

impl SketchedReads {
    /// `pools[i]` are sketcher `i`'s replica clients; `exec` the cluster's execution replicas
    /// that execute (`ProtocolConfig::executing_replicas`).
    pub fn new(
        pools: Vec<Arc<Pool>>,
        exec: usize,
        config: SketcherConfig,
    ) -> Result<SketchedReads, String> {
        if pools.is_empty() {
            return Err("the sketcher needs at least one pool of replica clients".into());
        }
        let members: Vec<ShardId> = (0..pools.len() as u32).map(ShardId).collect();
        let core = SharedSketchers::new(&members, config, ShardingConfig::default())
            .map_err(|e| format!("sketcher configuration: {e}"))?;
        Ok(SketchedReads {
            core,
            pools,
            exec: u16::try_from(exec.max(1)).unwrap_or(u16::MAX),
            started: Instant::now(),
            picker: AtomicU64::new(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id())),
            forced_transitions: AtomicU64::new(0),
            counter: AtomicU64::new(0),
        })
    }

    /// Treat `per_mille` of 1000 fast replies as transitions (benchmarks only).
    pub fn force_transitions(&self, per_mille: u64) {
        self.forced_transitions
            .store(per_mille.min(1000), Ordering::Relaxed);
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn random(&self) -> u64 {
        let mut z = self
            .picker
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Run the read `op` (an application operation that changes nothing) through the sketcher,
    /// with the digests of the operation and of the answer as its sketches.
    pub async fn read(&self, op: Vec<u8>) -> Result<Vec<u8>, PoolError> {
        let q = Sketch::of(&op);
        let pool = {
            let owner = self.core.owner(q).0 as usize;
            self.pools.get(owner).unwrap_or(&self.pools[0]).clone()
        };
        let now = self.now();
        self.core.tick(now);
        if let Plan::Fast { .. } = self.core.plan(q, now) {
            let exec = ExecId((self.random() % u64::from(self.exec)) as u16);
            let answer = pool.call_on(op.clone(), Route::Fast { exec }).await?;
            match answer.answered {
                Answered::Fast { .. } => {
                    let forced = self.forced_transitions.load(Ordering::Relaxed);
                    let n = self.counter.fetch_add(1, Ordering::Relaxed);
                    let r = if forced > 0 && n % 1000 < forced {
                        // A reply sketch no table holds: a transition.
                        Sketch::of(b"forced transition")
                    } else {
                        Sketch::of(&answer.result)
                    };
                    if self.core.on_fast_reply(q, r, self.now()) == Verdict::Accept {
                        return Ok(answer.result);
                    }
                }
                _ => self.core.on_fast_failed(q, self.now()),
            }
        }
        let answer = pool.call_on(op, Route::Ordered).await?;
        if let Answered::Ordered { at } = answer.answered {
            let at = Position::new(at.seq.0, at.index);
            let _ = self
                .core
                .on_replicated(q, Sketch::of(&answer.result), at, self.now());
        }
        Ok(answer.result)
    }

    /// The sketchers' counters, summed.
    pub fn counters(&self) -> Counters {
        self.core.counters()
    }

    /// Sketchers in the core.
    pub fn sketchers(&self) -> usize {
        self.pools.len()
    }

    /// Prometheus lines for the gateway's `/metrics`.
    pub fn metrics(&self) -> String {
        let c = self.counters();
        let mut out = String::new();
        for (name, help, v) in [
            ("reads", "reads planned by the sketcher", c.reads),
            (
                "fast_hits",
                "fast reads accepted (sketch matched)",
                c.fast_hits,
            ),
            (
                "mismatches",
                "fast replies whose sketch did not match",
                c.mismatches,
            ),
            (
                "fallbacks",
                "reads replicated after or instead of a fast read",
                c.fallbacks,
            ),
            (
                "fast_failed",
                "fast reads that got no answer",
                c.fast_failed,
            ),
            (
                "evictions",
                "history entries evicted at the bound",
                c.evictions,
            ),
            (
                "auto_blacklisted",
                "entries blacklisted for transitioning often",
                c.auto_blacklisted,
            ),
            (
                "handover_replicated",
                "reads replicated during a hand-over",
                c.handover_replicated,
            ),
            ("entries", "history table entries", c.entries),
        ] {
            out.push_str(&format!(
                "# HELP plumb_sketcher_{name} {help}\n# TYPE plumb_sketcher_{name} {}\nplumb_sketcher_{name} {v}\n",
                if name == "entries" { "gauge" } else { "counter" }
            ));
        }
        out
    }
}
