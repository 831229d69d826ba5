//! A sketching core of several sketcher shards, owned directly (the deterministic simulator;
//! or a caller that does its own locking around the whole core).

use crate::config::{ShardingConfig, SketcherConfig};
use crate::counters::Counters;
use crate::membership::{Membership, ShardingError};
use crate::ring::{Ring, ShardId};
use crate::sketch::{Listing, Position, Sketch};
use crate::sketcher::{Plan, Sketcher, Update, Verdict};
use std::collections::BTreeMap;

/// N sketchers over a consistent-hashing ring. Every call is routed to the CURRENT owner of
/// the request's region, including replies to reads planned before a membership change:
/// the current owner is the one whose table must reflect them.
#[derive(Clone, Debug)]
pub struct ShardedSketcher {
    m: Membership,
    shards: BTreeMap<ShardId, Sketcher>,
}

impl ShardedSketcher {
    pub fn new(
        members: &[ShardId],
        config: SketcherConfig,
        sharding: ShardingConfig,
    ) -> Result<ShardedSketcher, ShardingError> {
        let (m, shards) = Membership::new(members, config, sharding)?;
        Ok(ShardedSketcher { m, shards })
    }

    pub fn ring(&self) -> &Ring {
        &self.m.ring
    }

    /// The shard that owns `q` under the current membership.
    pub fn shard_for(&self, q: Sketch) -> ShardId {
        self.m.ring.owner(q)
    }

    pub fn shard(&self, id: ShardId) -> Option<&Sketcher> {
        self.shards.get(&id)
    }

    /// A shard to drive directly (as a router with its own view of the ring would).
    pub fn shard_mut(&mut self, id: ShardId) -> Option<&mut Sketcher> {
        self.shards.get_mut(&id)
    }

    /// The shards, in id order (during a hand-over also the ones leaving).
    pub fn shards(&self) -> impl Iterator<Item = (ShardId, &Sketcher)> {
        self.shards.iter().map(|(id, s)| (*id, s))
    }

    /// The start time of the hand-over in progress, if any.
    pub fn handover_started(&self) -> Option<u64> {
        self.m.handover.as_ref().map(|h| h.started)
    }

    /// All shards' counters added up.
    pub fn counters(&self) -> Counters {
        let mut c = Counters::default();
        for s in self.shards.values() {
            c.add(&s.counters());
        }
        c
    }

    fn owner(&mut self, q: Sketch, now: u64) -> Option<&mut Sketcher> {
        self.tick(now);
        let id = self.m.ring.owner(q);
        self.shards.get_mut(&id)
    }

    /// See [`Sketcher::plan`].
    pub fn plan(&mut self, q: Sketch, now: u64) -> Plan {
        // Every ring shard has a sketcher; `None` would be a bug, and replicated is safe.
        self.owner(q, now)
            .map_or(Plan::Replicated, |s| s.plan(q, now))
    }

    /// See [`Sketcher::on_fast_reply`].
    pub fn on_fast_reply(&mut self, q: Sketch, r: Sketch, now: u64) -> Verdict {
        self.owner(q, now)
            .map_or(Verdict::Fallback, |s| s.on_fast_reply(q, r, now))
    }

    /// See [`Sketcher::on_fast_failed`].
    pub fn on_fast_failed(&mut self, q: Sketch, now: u64) {
        if let Some(s) = self.owner(q, now) {
            s.on_fast_failed(q);
        }
    }

    /// See [`Sketcher::on_replicated`].
    pub fn on_replicated(&mut self, q: Sketch, r: Sketch, at: Position, now: u64) -> Update {
        self.owner(q, now)
            .map_or(Update::NotServed, |s| s.on_replicated(q, r, at, now))
    }

    /// Put `q` on the operator's white- or blacklist (at every shard, present and future),
    /// or take it off with `Listing::Neither`.
    pub fn set_listing(&mut self, q: Sketch, listing: Listing) {
        self.m.set_listing(&mut self.shards, q, listing);
    }

    /// Change the membership to `members` at `now`. The regions that change owner are
    /// blacklisted at every shard until the hand-over settles (explicitly with `settle`, or
    /// by itself `handover_us` after `now`). Refused while a hand-over is in progress.
    pub fn set_members(&mut self, members: &[ShardId], now: u64) -> Result<(), ShardingError> {
        self.m.begin(&mut self.shards, members, now)
    }

    /// Finish the hand-over in progress, if any (returns whether there was one). Only safe
    /// once nothing routed under the old membership can still reach a shard.
    pub fn settle(&mut self) -> bool {
        self.m.settle(&mut self.shards)
    }

    /// Settle the hand-over in progress if its time is up at `now` (every call with a `now`
    /// does this first).
    pub fn tick(&mut self, now: u64) {
        if self.m.settle_due(now) {
            self.m.settle(&mut self.shards);
        }
    }
}
