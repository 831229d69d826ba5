//! Membership of a sketching core and the hand-over of regions between shards (§5).
//!
//! Shared by [`crate::ShardedSketcher`] (shards owned directly) and
//! [`crate::SharedSketchers`] (each shard behind its own lock) through the small [`Cell`]
//! trait, so that the hand-over logic exists once.

use crate::config::{ConfigError, ShardingConfig, SketcherConfig};
use crate::ring::{Ring, RingError, ShardId};
use crate::sketch::{Listing, Sketch};
use crate::sketcher::{Scope, Sketcher};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

/// Why a sketching core cannot be built or its membership changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardingError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Ring(#[from] RingError),
    #[error("a hand-over started at {started} is still in progress; settle it before the next membership change")]
    HandoverPending { started: u64 },
}

/// How a shard is held: directly, or behind a mutex.
pub(crate) trait Cell {
    fn wrap(s: Sketcher) -> Self;
    fn sketcher(&mut self) -> &mut Sketcher;
}

impl Cell for Sketcher {
    fn wrap(s: Sketcher) -> Self {
        s
    }
    fn sketcher(&mut self) -> &mut Sketcher {
        self
    }
}

impl Cell for Mutex<Sketcher> {
    fn wrap(s: Sketcher) -> Self {
        Mutex::new(s)
    }
    fn sketcher(&mut self) -> &mut Sketcher {
        // A panic while a shard was locked leaves a table that is still consistent (every
        // method keeps its invariants before it can panic), so carry on with it.
        self.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Handover {
    pub(crate) previous: Arc<Ring>,
    pub(crate) started: u64,
}

/// The membership state of a sketching core.
#[derive(Clone, Debug)]
pub(crate) struct Membership {
    pub(crate) config: SketcherConfig,
    pub(crate) sharding: ShardingConfig,
    pub(crate) ring: Arc<Ring>,
    pub(crate) handover: Option<Handover>,
    /// The operator's lists, applied to every shard (also ones that join later), since a
    /// request's owner changes with the membership.
    pub(crate) lists: BTreeMap<Sketch, Listing>,
}

impl Membership {
    pub(crate) fn new<S: Cell>(
        members: &[ShardId],
        config: SketcherConfig,
        sharding: ShardingConfig,
    ) -> Result<(Membership, BTreeMap<ShardId, S>), ShardingError> {
        config.validate()?;
        sharding.validate()?;
        let ring = Arc::new(Ring::new(members, sharding.vnodes_per_shard)?);
        let mut shards = BTreeMap::new();
        for id in ring.shards() {
            let scope = Scope {
                me: *id,
                ring: ring.clone(),
                previous: None,
            };
            shards.insert(*id, S::wrap(Sketcher::with_scope(config.clone(), scope)?));
        }
        let m = Membership {
            config,
            sharding,
            ring,
            handover: None,
            lists: BTreeMap::new(),
        };
        Ok((m, shards))
    }

    pub(crate) fn settle_due(&self, now: u64) -> bool {
        match (&self.handover, self.sharding.handover_us) {
            (Some(h), Some(after)) => now >= h.started.saturating_add(after),
            _ => false,
        }
    }

    pub(crate) fn set_listing<S: Cell>(
        &mut self,
        shards: &mut BTreeMap<ShardId, S>,
        q: Sketch,
        listing: Listing,
    ) {
        if listing == Listing::Neither {
            self.lists.remove(&q);
        } else {
            self.lists.insert(q, listing);
        }
        for s in shards.values_mut() {
            s.sketcher().set_listing(q, listing);
        }
    }

    /// Start a membership change: the new ring takes effect for routing at once, and every
    /// region whose owner changes is served replicated by its old and new owner alike (and
    /// by any other shard a stale router sends it to) until `settle`. The old owner forgets
    /// its entries for the regions it gives up; the new owner has none for them.
    pub(crate) fn begin<S: Cell>(
        &mut self,
        shards: &mut BTreeMap<ShardId, S>,
        members: &[ShardId],
        now: u64,
    ) -> Result<(), ShardingError> {
        if let Some(h) = &self.handover {
            return Err(ShardingError::HandoverPending { started: h.started });
        }
        let next = Arc::new(Ring::new(members, self.sharding.vnodes_per_shard)?);
        if *next == *self.ring {
            return Ok(());
        }
        let previous = std::mem::replace(&mut self.ring, next.clone());
        for id in next.shards() {
            if !shards.contains_key(id) {
                let scope = Scope {
                    me: *id,
                    ring: next.clone(),
                    previous: Some(previous.clone()),
                };
                let mut s = Sketcher::with_scope(self.config.clone(), scope)?;
                for (q, l) in &self.lists {
                    s.set_listing(*q, *l);
                }
                shards.insert(*id, S::wrap(s));
            }
        }
        for (id, cell) in shards.iter_mut() {
            let s = cell.sketcher();
            s.set_scope(Scope {
                me: *id,
                ring: next.clone(),
                previous: Some(previous.clone()),
            });
            s.drop_unserved();
        }
        self.handover = Some(Handover {
            previous,
            started: now,
        });
        Ok(())
    }

    /// Finish the hand-over: the new owners serve their new regions fast again (after a
    /// first replicated read), shards that left are dropped.
    ///
    /// A new owner must not create an entry from a reply older than one some client has
    /// already been given for a request of the region: such a reply may still arrive (it was
    /// in flight). It cannot know which request each reply was for, so it refuses replies at
    /// or below the newest position any shard has seen (its floor).
    pub(crate) fn settle<S: Cell>(&mut self, shards: &mut BTreeMap<ShardId, S>) -> bool {
        let Some(h) = self.handover.take() else {
            return false;
        };
        let high_water = shards
            .values_mut()
            .filter_map(|c| c.sketcher().high_water())
            .max();
        let gainers: BTreeSet<ShardId> = Ring::moves(&h.previous, &self.ring)
            .iter()
            .map(|m| m.to)
            .collect();
        let ring = self.ring.clone();
        shards.retain(|id, _| ring.contains(*id));
        for (id, cell) in shards.iter_mut() {
            let s = cell.sketcher();
            s.set_scope(Scope {
                me: *id,
                ring: ring.clone(),
                previous: None,
            });
            if gainers.contains(id) {
                if let Some(hw) = high_water {
                    s.raise_floor(hw);
                }
            }
            let dropped = s.drop_unserved();
            // Nothing in a moved region was recorded during the hand-over.
            debug_assert_eq!(dropped, 0);
        }
        true
    }
}
