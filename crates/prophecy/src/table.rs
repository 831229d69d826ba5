//! The history table: s(q) -> (s(r), position, listing, transition statistics), bounded with
//! LRU eviction, plus the operator's explicit white- and blacklists.
//!
//! Everything is ordered (`BTreeMap`, a logical LRU clock), never hashed, so the table's
//! decisions depend on its inputs only.

use crate::sketch::{Listing, Position, Sketch};
use crate::window::TransitionWindow;
use std::collections::BTreeMap;

/// One entry: what the latest replicated read of a request returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    response: Sketch,
    position: Position,
    /// Set while the entry is automatically blacklisted: until this `now`.
    blacklisted_until: Option<u64>,
    window: TransitionWindow,
    /// Fast replies that mismatched and whose fallback replicated reply has not come back.
    /// That reply does not count as a transition of its own: the mismatch already did.
    awaiting_fallbacks: u32,
    /// Logical time of the last use, the key of this entry in the LRU index.
    last_used: u64,
}

impl Entry {
    /// The sketch of the response of the latest replicated read.
    pub fn response(&self) -> Sketch {
        self.response
    }

    /// The order position that response reflects.
    pub fn position(&self) -> Position {
        self.position
    }

    /// `Black` while the entry is automatically blacklisted at `now`, else `Neither`.
    pub fn listing(&self, now: u64) -> Listing {
        if self.blacklisted(now) {
            Listing::Black
        } else {
            Listing::Neither
        }
    }

    pub fn blacklisted(&self, now: u64) -> bool {
        self.blacklisted_until.is_some_and(|until| now < until)
    }

    pub fn blacklisted_until(&self) -> Option<u64> {
        self.blacklisted_until
    }

    pub fn window(&self) -> TransitionWindow {
        self.window
    }

    pub(crate) fn set_response(&mut self, response: Sketch, position: Position) {
        self.response = response;
        self.position = position;
    }

    pub(crate) fn window_mut(&mut self) -> &mut TransitionWindow {
        &mut self.window
    }

    pub(crate) fn blacklist_until(&mut self, until: u64) {
        self.blacklisted_until = Some(until);
    }

    pub(crate) fn expect_fallback(&mut self) {
        self.awaiting_fallbacks = self.awaiting_fallbacks.saturating_add(1);
    }

    /// Whether a replicated reply is the fallback of an earlier mismatch (consumes it).
    pub(crate) fn take_fallback(&mut self) -> bool {
        if self.awaiting_fallbacks > 0 {
            self.awaiting_fallbacks -= 1;
            true
        } else {
            false
        }
    }
}

/// What the table says about a request, in the paper's terms: (s(r), σ, b), plus the
/// entry's transition statistics. The response sketch is `None` when there is no entry or
/// the request is white- or blacklisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookup {
    pub response: Option<Sketch>,
    pub position: Option<Position>,
    pub listing: Listing,
    pub window: Option<TransitionWindow>,
}

/// The bounded history table.
#[derive(Clone, Debug)]
pub struct HistoryTable {
    max_entries: usize,
    entries: BTreeMap<Sketch, Entry>,
    /// LRU index: logical use time -> request sketch. The first key is the least recently
    /// used entry.
    lru: BTreeMap<u64, Sketch>,
    clock: u64,
    /// The operator's lists. Kept apart from the entries so that they survive eviction.
    lists: BTreeMap<Sketch, Listing>,
    /// No entry is created from a reply at or below this position. Raised whenever an entry
    /// is forgotten (evicted, dropped by a listing, handed over): the forgotten entry may
    /// have been newer than a straggling reply for the same request, and installing that
    /// reply would let a fast read go back in time (see the crate doc).
    floor: Option<Position>,
    evictions: u64,
}

impl HistoryTable {
    /// An empty table holding at most `max_entries` entries (at least one; the config is
    /// validated before this is called).
    pub fn new(max_entries: usize) -> HistoryTable {
        debug_assert!(max_entries >= 1);
        HistoryTable {
            max_entries: max_entries.max(1),
            entries: BTreeMap::new(),
            lru: BTreeMap::new(),
            clock: 0,
            lists: BTreeMap::new(),
            floor: None,
            evictions: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Entries evicted so far to stay within the bound.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    pub fn floor(&self) -> Option<Position> {
        self.floor
    }

    /// The entry for `q`, without counting as a use.
    pub fn entry(&self, q: Sketch) -> Option<&Entry> {
        self.entries.get(&q)
    }

    /// The entries, in sketch order.
    pub fn entries(&self) -> impl Iterator<Item = (Sketch, &Entry)> {
        self.entries.iter().map(|(q, e)| (*q, e))
    }

    /// The request sketches from least to most recently used.
    pub fn lru_order(&self) -> impl Iterator<Item = Sketch> + '_ {
        self.lru.values().copied()
    }

    /// The operator's listing of `q` (`Neither` if not listed).
    pub fn listed(&self, q: Sketch) -> Listing {
        self.lists.get(&q).copied().unwrap_or_default()
    }

    /// The paper's lookup: operator listing first, then the entry (whose automatic blacklist
    /// counts as `Black` at `now`).
    pub fn lookup(&self, q: Sketch, now: u64) -> Lookup {
        match self.listed(q) {
            Listing::Neither => {}
            listing => {
                return Lookup {
                    response: None,
                    position: None,
                    listing,
                    window: None,
                }
            }
        }
        match self.entries.get(&q) {
            None => Lookup {
                response: None,
                position: None,
                listing: Listing::Neither,
                window: None,
            },
            Some(e) => {
                let listing = e.listing(now);
                Lookup {
                    response: (listing == Listing::Neither).then_some(e.response),
                    position: Some(e.position),
                    listing,
                    window: Some(e.window),
                }
            }
        }
    }

    /// Put `q` on the operator's white- or blacklist, or take it off (`Neither`). Listing
    /// drops the entry (a listed request has none); `high_water` is the newest position the
    /// caller has seen, to which the floor is raised when `q` is taken off a list, because
    /// replies for a listed request are not recorded and may have been newer than anything
    /// still arriving.
    pub fn set_listing(&mut self, q: Sketch, listing: Listing, high_water: Option<Position>) {
        match listing {
            Listing::Neither => {
                if self.lists.remove(&q).is_some() {
                    if let Some(hw) = high_water {
                        self.raise_floor(hw);
                    }
                }
            }
            l => {
                self.remove(q);
                self.lists.insert(q, l);
            }
        }
    }

    /// The entry for `q`, counted as a use (moved to the most recently used end).
    pub(crate) fn touch(&mut self, q: Sketch) -> Option<&mut Entry> {
        let e = self.entries.get_mut(&q)?;
        self.clock += 1;
        self.lru.remove(&e.last_used);
        e.last_used = self.clock;
        self.lru.insert(self.clock, q);
        Some(e)
    }

    /// Create the entry for `q` (which must have none), evicting the least recently used entry
    /// if the table is full. Returns the evicted request sketch, if any.
    pub(crate) fn insert(
        &mut self,
        q: Sketch,
        response: Sketch,
        position: Position,
    ) -> Option<Sketch> {
        debug_assert!(!self.entries.contains_key(&q));
        let mut evicted = None;
        if self.entries.len() >= self.max_entries {
            if let Some((_, victim)) = self.lru.first_key_value() {
                let victim = *victim;
                self.remove(victim);
                self.evictions += 1;
                evicted = Some(victim);
            }
        }
        self.clock += 1;
        self.entries.insert(
            q,
            Entry {
                response,
                position,
                blacklisted_until: None,
                window: TransitionWindow::default(),
                awaiting_fallbacks: 0,
                last_used: self.clock,
            },
        );
        self.lru.insert(self.clock, q);
        debug_assert!(self.entries.len() <= self.max_entries);
        debug_assert_eq!(self.entries.len(), self.lru.len());
        evicted
    }

    /// Forget the entry for `q`, raising the floor to its position.
    pub(crate) fn remove(&mut self, q: Sketch) -> Option<Entry> {
        let e = self.entries.remove(&q)?;
        self.lru.remove(&e.last_used);
        self.raise_floor(e.position);
        debug_assert_eq!(self.entries.len(), self.lru.len());
        Some(e)
    }

    /// Forget every entry whose request sketch `keep` rejects. Returns how many went.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(Sketch) -> bool) -> usize {
        let gone: Vec<Sketch> = self.entries.keys().copied().filter(|q| !keep(*q)).collect();
        for q in &gone {
            self.remove(*q);
        }
        gone.len()
    }

    pub(crate) fn raise_floor(&mut self, p: Position) {
        self.floor = Some(self.floor.map_or(p, |f| f.max(p)));
    }

    /// Whether a reply at `at` may create an entry (it is above the floor).
    pub(crate) fn above_floor(&self, at: Position) -> bool {
        self.floor.is_none_or(|f| at > f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(i: u32) -> Sketch {
        Sketch::of(&i.to_le_bytes())
    }

    #[test]
    fn eviction_at_the_bound_takes_the_least_recently_used() {
        let mut t = HistoryTable::new(3);
        for i in 0..3 {
            assert_eq!(
                t.insert(s(i), s(100 + i), Position::new(u64::from(i), 0)),
                None
            );
        }
        // Use 0, so 1 is now the least recently used.
        assert!(t.touch(s(0)).is_some());
        assert_eq!(t.lru_order().collect::<Vec<_>>(), vec![s(1), s(2), s(0)]);
        assert_eq!(t.insert(s(3), s(103), Position::new(3, 0)), Some(s(1)));
        assert_eq!(t.len(), 3);
        assert_eq!(t.evictions(), 1);
        assert!(t.entry(s(1)).is_none());
        // The evicted entry's position became the floor.
        assert_eq!(t.floor(), Some(Position::new(1, 0)));
        assert!(!t.above_floor(Position::new(1, 0)));
        assert!(t.above_floor(Position::new(1, 1)));
        assert_eq!(t.insert(s(4), s(104), Position::new(4, 0)), Some(s(2)));
        assert_eq!(t.lru_order().collect::<Vec<_>>(), vec![s(0), s(3), s(4)]);
    }

    #[test]
    fn operator_lists_survive_eviction_and_drop_the_entry() {
        let mut t = HistoryTable::new(1);
        t.insert(s(0), s(100), Position::new(5, 0));
        t.set_listing(s(0), Listing::White, None);
        assert!(t.entry(s(0)).is_none());
        assert_eq!(t.floor(), Some(Position::new(5, 0)));
        t.set_listing(s(9), Listing::Black, None);
        for i in 1..10 {
            if t.entry(s(i)).is_none() {
                t.insert(s(i), s(100 + i), Position::new(10 + u64::from(i), 0));
            }
        }
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(s(0), 0).listing, Listing::White);
        assert_eq!(t.lookup(s(9), 0).listing, Listing::Black);
        assert_eq!(t.lookup(s(9), 0).response, None);
        // Unlisting raises the floor to the high water given.
        t.set_listing(s(0), Listing::Neither, Some(Position::new(50, 0)));
        assert_eq!(t.listed(s(0)), Listing::Neither);
        assert_eq!(t.floor(), Some(Position::new(50, 0)));
    }

    #[test]
    fn lookup_reports_auto_blacklisted_entries_as_black_until_the_cooldown_ends() {
        let mut t = HistoryTable::new(4);
        t.insert(s(0), s(100), Position::new(1, 0));
        assert_eq!(
            t.lookup(s(0), 0),
            Lookup {
                response: Some(s(100)),
                position: Some(Position::new(1, 0)),
                listing: Listing::Neither,
                window: Some(TransitionWindow::default()),
            }
        );
        if let Some(e) = t.touch(s(0)) {
            e.blacklist_until(10);
        }
        assert_eq!(t.lookup(s(0), 9).listing, Listing::Black);
        assert_eq!(t.lookup(s(0), 9).response, None);
        assert_eq!(t.lookup(s(0), 10).listing, Listing::Neither);
    }
}
