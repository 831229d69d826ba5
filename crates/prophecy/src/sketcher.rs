//! One sketcher: Algorithm 1 of the paper as a small state machine per request, plus
//! automatic blacklisting of entries that transition often.
//!
//! The caller drives it: `plan` for a read; then either `on_fast_reply` (or `on_fast_failed`)
//! for the fast read, and `on_replicated` for every replicated reply of a read, whether it
//! was planned replicated or is the fallback of a fast read. Writes never go through `plan`.

use crate::config::{ConfigError, SketcherConfig};
use crate::counters::Counters;
use crate::ring::{Ring, ShardId};
use crate::sketch::{Listing, Position, Sketch};
use crate::table::{Entry, HistoryTable};
use std::sync::Arc;

/// How to issue a read.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Send the read to one replica (the caller picks it, uniformly at random per §4.2).
    /// `expected` is the response sketch the reply should have; `None` only for a
    /// whitelisted request, whose reply is accepted whatever it is. Informational: the
    /// verdict is taken against the entry as it is when the reply arrives.
    Fast { expected: Option<Sketch> },
    /// Issue the read through the replica group's ordered protocol.
    Replicated,
}

/// What to do with a fast reply.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Return the reply to the client.
    Accept,
    /// Do not: issue the read replicated (and report its reply with `on_replicated`).
    Fallback,
}

/// What a replicated reply did to the table (for tests and tracing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// No entry before: one was created.
    Created,
    /// The entry moved to this newer reply, whose sketch differs (a transition).
    Changed,
    /// The entry moved to this newer reply, with the same sketch.
    Confirmed,
    /// The entry is as new or newer: the reply was ignored.
    Stale,
    /// No entry, and the reply is not newer than something the table forgot: ignored.
    BelowFloor,
    /// The request is on the operator's white- or blacklist: no entry is kept.
    Listed,
    /// The request's region is being handed over or is not this shard's.
    NotServed,
}

/// Whether this sketcher may serve a request fast, when it is one shard of a sketching core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Its region is this shard's and settled.
    Serve,
    /// Its region is changing owner: replicated at the old and the new owner alike.
    Handover,
    /// Its region is another shard's (a router with an outdated view sent it here).
    NotOwner,
}

/// The part of the ring a shard serves: its own regions under `ring`, except, while a
/// hand-over is in progress, those whose owner differs between `previous` and `ring`.
#[derive(Clone, Debug)]
pub(crate) struct Scope {
    pub(crate) me: ShardId,
    pub(crate) ring: Arc<Ring>,
    pub(crate) previous: Option<Arc<Ring>>,
}

impl Scope {
    pub(crate) fn standing(&self, q: Sketch) -> Standing {
        let owner = self.ring.owner(q);
        if let Some(prev) = &self.previous {
            if prev.owner(q) != owner {
                return Standing::Handover;
            }
        }
        if owner == self.me {
            Standing::Serve
        } else {
            Standing::NotOwner
        }
    }
}

/// One sketcher (one shard of a sketching core, or the whole of a single one).
#[derive(Clone, Debug)]
pub struct Sketcher {
    config: SketcherConfig,
    table: HistoryTable,
    counters: Counters,
    scope: Option<Scope>,
    /// The newest position of any replicated reply reported here, recorded or not.
    high_water: Option<Position>,
}

/// `SketcherAcceptsUnmatched`: accept every fast reply.
fn accepts_unmatched() -> bool {
    #[cfg(feature = "sabotage")]
    if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::SketcherAcceptsUnmatched) {
        return true;
    }
    false
}

/// `SketcherTakesOlder`: update the table with every replicated reply.
fn takes_older() -> bool {
    #[cfg(feature = "sabotage")]
    if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::SketcherTakesOlder) {
        return true;
    }
    false
}

/// Record one read of `e` in its transition window and blacklist it if it now transitions
/// too often. A free function so that it can borrow the entry and the counters at once.
fn record(
    cfg: &SketcherConfig,
    counters: &mut Counters,
    e: &mut Entry,
    transition: bool,
    now: u64,
) {
    e.window_mut().push(transition, cfg.transition_window);
    if cfg.auto_blacklist
        && !e.blacklisted(now)
        && e.window().transitions() > u32::from(cfg.transition_threshold)
    {
        e.blacklist_until(now.saturating_add(cfg.blacklist_cooldown_us));
        // The reads during the cool-down (all replicated) decide afresh.
        e.window_mut().clear();
        counters.auto_blacklisted += 1;
    }
}

impl Sketcher {
    /// A sketcher that serves every request (no sharding).
    pub fn new(config: SketcherConfig) -> Result<Sketcher, ConfigError> {
        config.validate()?;
        Ok(Sketcher {
            table: HistoryTable::new(config.max_entries),
            config,
            counters: Counters::default(),
            scope: None,
            high_water: None,
        })
    }

    pub(crate) fn with_scope(
        config: SketcherConfig,
        scope: Scope,
    ) -> Result<Sketcher, ConfigError> {
        let mut s = Sketcher::new(config)?;
        s.scope = Some(scope);
        Ok(s)
    }

    pub fn config(&self) -> &SketcherConfig {
        &self.config
    }

    pub fn table(&self) -> &HistoryTable {
        &self.table
    }

    /// The counters, `entries` and `evictions` as of now.
    pub fn counters(&self) -> Counters {
        Counters {
            entries: self.table.len() as u64,
            evictions: self.table.evictions(),
            ..self.counters
        }
    }

    /// The newest position of any replicated reply reported to this sketcher.
    pub fn high_water(&self) -> Option<Position> {
        self.high_water
    }

    /// Whether this sketcher may serve `q` fast (always `Serve` when not sharded).
    pub fn standing(&self, q: Sketch) -> Standing {
        self.scope
            .as_ref()
            .map_or(Standing::Serve, |s| s.standing(q))
    }

    /// Put `q` on the operator's whitelist or blacklist, or take it off (`Listing::Neither`).
    /// Survives eviction. Taking a request off a list raises the floor to the high water,
    /// since its replies were not recorded while listed.
    pub fn set_listing(&mut self, q: Sketch, listing: Listing) {
        self.table.set_listing(q, listing, self.high_water);
    }

    /// Algorithm 1, steps (1)-(2): how to issue read `q` at `now`.
    pub fn plan(&mut self, q: Sketch, now: u64) -> Plan {
        self.counters.reads += 1;
        if self.standing(q) != Standing::Serve {
            self.counters.handover_replicated += 1;
            self.counters.fallbacks += 1;
            return Plan::Replicated;
        }
        match self.table.listed(q) {
            Listing::White => {
                self.counters.fast_planned += 1;
                return Plan::Fast { expected: None };
            }
            Listing::Black => {
                self.counters.blacklisted_replicated += 1;
                self.counters.fallbacks += 1;
                return Plan::Replicated;
            }
            Listing::Neither => {}
        }
        match self.table.touch(q) {
            None => {
                self.counters.no_entry += 1;
                self.counters.fallbacks += 1;
                Plan::Replicated
            }
            Some(e) if e.blacklisted(now) => {
                self.counters.blacklisted_replicated += 1;
                self.counters.fallbacks += 1;
                Plan::Replicated
            }
            Some(e) => {
                self.counters.fast_planned += 1;
                Plan::Fast {
                    expected: Some(e.response()),
                }
            }
        }
    }

    /// Algorithm 1, step (4) or (3): a fast reply with sketch `r` arrived for `q`. Accepted
    /// iff `r` equals the sketch of the latest replicated read as the table holds it NOW (it
    /// may have moved on while the fast read was in flight), or `q` is whitelisted.
    pub fn on_fast_reply(&mut self, q: Sketch, r: Sketch, now: u64) -> Verdict {
        if accepts_unmatched() {
            self.counters.fast_hits += 1;
            return Verdict::Accept;
        }
        if self.standing(q) != Standing::Serve {
            self.counters.handover_replicated += 1;
            self.counters.fallbacks += 1;
            return Verdict::Fallback;
        }
        match self.table.listed(q) {
            Listing::White => {
                self.counters.fast_hits += 1;
                return Verdict::Accept;
            }
            Listing::Black => {
                self.counters.fallbacks += 1;
                return Verdict::Fallback;
            }
            Listing::Neither => {}
        }
        let Some(e) = self.table.touch(q) else {
            // Evicted or dropped while the fast read was in flight.
            self.counters.fallbacks += 1;
            return Verdict::Fallback;
        };
        if e.response() == r {
            record(&self.config, &mut self.counters, e, false, now);
            self.counters.fast_hits += 1;
            Verdict::Accept
        } else {
            // A transition (or a faulty or out-of-date replica). The fallback's replicated
            // reply will not count again.
            e.expect_fallback();
            record(&self.config, &mut self.counters, e, true, now);
            self.counters.mismatches += 1;
            self.counters.fallbacks += 1;
            Verdict::Fallback
        }
    }

    /// The fast read of `q` got no answer (timeout): the caller issues it replicated.
    pub fn on_fast_failed(&mut self, _q: Sketch) {
        self.counters.fast_failed += 1;
        self.counters.fallbacks += 1;
    }

    /// Algorithm 1, after step (3): a replicated read of `q` returned a reply with sketch `r`
    /// at order position `at`. The entry is updated only if there is none or `at` is newer
    /// than its position: replies of concurrent replicated reads come back in any order, and
    /// the table must always reflect the newest.
    pub fn on_replicated(&mut self, q: Sketch, r: Sketch, at: Position, now: u64) -> Update {
        self.high_water = Some(self.high_water.map_or(at, |h| h.max(at)));
        if self.standing(q) != Standing::Serve {
            return Update::NotServed;
        }
        if self.table.listed(q) != Listing::Neither {
            return Update::Listed;
        }
        let older_too = takes_older();
        if let Some(e) = self.table.touch(q) {
            if !(older_too || at > e.position()) {
                // Consumes a pending fallback: its mismatch was counted already.
                e.take_fallback();
                self.counters.stale_replies += 1;
                return Update::Stale;
            }
            let changed = e.response() != r;
            e.set_response(r, at);
            if !e.take_fallback() {
                record(&self.config, &mut self.counters, e, changed, now);
            }
            return if changed {
                Update::Changed
            } else {
                Update::Confirmed
            };
        }
        if !(older_too || self.table.above_floor(at)) {
            self.counters.below_floor += 1;
            return Update::BelowFloor;
        }
        self.table.insert(q, r, at);
        debug_assert!(self.table.len() <= self.config.max_entries);
        Update::Created
    }

    pub(crate) fn set_scope(&mut self, scope: Scope) {
        self.scope = Some(scope);
    }

    /// Forget every entry this sketcher may not serve under its scope (raising the floor).
    pub(crate) fn drop_unserved(&mut self) -> usize {
        let Some(scope) = &self.scope else {
            return 0;
        };
        self.table.retain(|q| scope.standing(q) == Standing::Serve)
    }

    /// Refuse to create entries from replies at or below `p`.
    pub(crate) fn raise_floor(&mut self, p: Position) {
        self.table.raise_floor(p);
    }
}
