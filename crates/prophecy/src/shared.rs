//! A sketching core for concurrent callers (the gateway): each shard behind its own mutex,
//! the membership behind a read-write lock.
//!
//! Every call holds the membership read lock while it routes and uses the shard, so a
//! membership change (write lock) never interleaves with a call: within one process no call
//! can reach a shard under an outdated ring. Calls for different shards proceed in parallel.

use crate::config::{ShardingConfig, SketcherConfig};
use crate::counters::Counters;
use crate::membership::{Membership, ShardingError};
use crate::ring::ShardId;
use crate::sketch::{Listing, Position, Sketch};
use crate::sketcher::{Plan, Sketcher, Update, Verdict};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError, RwLock};

#[derive(Debug)]
struct Inner {
    m: Membership,
    shards: BTreeMap<ShardId, Mutex<Sketcher>>,
}

/// [`crate::ShardedSketcher`]'s behaviour with a lock per shard.
#[derive(Debug)]
pub struct SharedSketchers {
    inner: RwLock<Inner>,
}

impl SharedSketchers {
    pub fn new(
        members: &[ShardId],
        config: SketcherConfig,
        sharding: ShardingConfig,
    ) -> Result<SharedSketchers, ShardingError> {
        let (m, shards) = Membership::new(members, config, sharding)?;
        Ok(SharedSketchers {
            inner: RwLock::new(Inner { m, shards }),
        })
    }

    /// Run `f` on the current owner of `q`, under the membership read lock.
    fn with_owner<T>(&self, q: Sketch, now: u64, f: impl FnOnce(&mut Sketcher) -> T) -> Option<T> {
        self.tick(now);
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let id = inner.m.ring.owner(q);
        let cell = inner.shards.get(&id)?;
        let mut s = cell.lock().unwrap_or_else(PoisonError::into_inner);
        Some(f(&mut s))
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shard that owns `q` now.
    pub fn owner(&self, q: Sketch) -> ShardId {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.m.ring.owner(q)
    }

    pub fn plan(&self, q: Sketch, now: u64) -> Plan {
        self.with_owner(q, now, |s| s.plan(q, now))
            .unwrap_or(Plan::Replicated)
    }

    pub fn on_fast_reply(&self, q: Sketch, r: Sketch, now: u64) -> Verdict {
        self.with_owner(q, now, |s| s.on_fast_reply(q, r, now))
            .unwrap_or(Verdict::Fallback)
    }

    pub fn on_fast_failed(&self, q: Sketch, now: u64) {
        self.with_owner(q, now, |s| s.on_fast_failed(q));
    }

    pub fn on_replicated(&self, q: Sketch, r: Sketch, at: Position, now: u64) -> Update {
        self.with_owner(q, now, |s| s.on_replicated(q, r, at, now))
            .unwrap_or(Update::NotServed)
    }

    pub fn set_listing(&self, q: Sketch, listing: Listing) {
        let mut guard = self.write();
        let inner = &mut *guard;
        inner.m.set_listing(&mut inner.shards, q, listing);
    }

    pub fn set_members(&self, members: &[ShardId], now: u64) -> Result<(), ShardingError> {
        let mut guard = self.write();
        let inner = &mut *guard;
        inner.m.begin(&mut inner.shards, members, now)
    }

    pub fn settle(&self) -> bool {
        let mut guard = self.write();
        let inner = &mut *guard;
        inner.m.settle(&mut inner.shards)
    }

    /// Settle the hand-over if its time is up (cheap read-locked check first).
    pub fn tick(&self, now: u64) {
        let due = {
            let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
            inner.m.settle_due(now)
        };
        if due {
            let mut guard = self.write();
            let inner = &mut *guard;
            // Another caller may have settled it in between; `settle_due` is false then.
            if inner.m.settle_due(now) {
                inner.m.settle(&mut inner.shards);
            }
        }
    }

    pub fn handover_started(&self) -> Option<u64> {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        inner.m.handover.as_ref().map(|h| h.started)
    }

    /// All shards' counters added up.
    pub fn counters(&self) -> Counters {
        let inner = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let mut c = Counters::default();
        for cell in inner.shards.values() {
            c.add(
                &cell
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .counters(),
            );
        }
        c
    }
}
