//! Incarnations: this replica's, and the highest each peer has shown. A replica that lost its
//! records takes a new incarnation before it sends anything (rejoin.rs); VIEW-CHANGEs carry it,
//! and a VIEW-CHANGE from an older incarnation than one already seen speaks for a life whose
//! records are gone: it is refused. A sub-machine owning this state; the replica stores and
//! sends.

use plumb_core::{BrokenInvariant, Micros};
use plumb_wire::OrderId;
use std::collections::HashMap;

#[derive(Debug, Default)]
pub(crate) struct Incarnations {
    /// 0 from `plumb init`, new after every loss of records.
    own: u64,
    /// The highest incarnation each peer has shown (recovery queries, VIEW-CHANGEs).
    peers: HashMap<OrderId, u64>,
    /// The highest incarnation each peer's VIEW-CHANGEs carried: a rejoining peer is told it,
    /// and must pick a higher one.
    in_view_changes: HashMap<OrderId, u64>,
}

impl Incarnations {
    pub fn own(&self) -> u64 {
        self.own
    }

    /// Restart from durable records: the incarnation stored (0 if none).
    pub fn restore(&mut self, own: u64) {
        self.own = own;
    }

    /// Records lost: a new incarnation above `previous` (the stored one, if it survived) and
    /// at least the wall clock `now`, a floor that keeps growing even when the record is lost
    /// with the rest.
    pub fn begin_new(&mut self, previous: u64, now: Micros) {
        self.own = (previous + 1).max(now);
    }

    /// A peer says a VIEW-CHANGE of ours carried `seen`: a life we do not remember. Move past it;
    /// true if that changed ours.
    pub fn move_past(&mut self, seen: u64) -> bool {
        if seen < self.own {
            return false;
        }
        self.own = seen + 1;
        true
    }

    /// Whether an incarnation `inc` of peer `j` is current: none newer has been seen.
    pub fn is_current(&self, j: OrderId, inc: u64) -> bool {
        self.peers.get(&j).is_none_or(|known| inc >= *known)
    }

    /// Peer `j` sent an authentic VIEW-CHANGE of incarnation `inc`.
    pub fn note_view_change(&mut self, j: OrderId, inc: u64) {
        for known in [
            self.peers.entry(j).or_insert(0),
            self.in_view_changes.entry(j).or_insert(0),
        ] {
            *known = (*known).max(inc);
        }
    }

    /// Peer `j` asks to rejoin as incarnation `inc`; true if that is newer than any seen (what
    /// it said in older lives is void).
    pub fn note_rejoining(&mut self, j: OrderId, inc: u64) -> bool {
        let known = self.peers.entry(j).or_insert(0);
        if inc <= *known {
            return false;
        }
        *known = inc;
        true
    }

    /// The highest incarnation peer `j`'s VIEW-CHANGEs carried.
    pub fn in_view_changes_of(&self, j: OrderId) -> u64 {
        self.in_view_changes.get(&j).copied().unwrap_or(0)
    }

    /// `INV-incarnations-cover-view-changes`: the incarnation known for a peer is at least any
    /// its VIEW-CHANGEs carried (a refused older life stays refused).
    pub fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        for (j, inc) in &self.in_view_changes {
            let known = self.peers.get(j).copied().unwrap_or(0);
            BrokenInvariant::check(known >= *inc, "INV-incarnations-cover-view-changes", || {
                format!("peer {j} known as incarnation {known}, its VIEW-CHANGE carried {inc}")
            })?;
        }
        Ok(())
    }
}
