//! The selector of one execution replica (seed 003 §3.2-§4.2, Figures 2-4): for each agreed
//! request, in order, whether to execute it here, and what to bring up to date first.
//!
//! A request that touches an object this replica maintains is executed. One that touches
//! only objects maintained elsewhere is stored instead, so that those objects can be brought
//! up to date later: a cross-border request (one that touches maintained and unmaintained
//! objects), a request forced because its client's vote came up short, or a request with
//! every object (`AccessSet::All`) first needs its unmaintained objects as they would be here
//! had every request run. The selector finds, going back in agreed order, every stored request
//! that touched one of them, adding the objects each touched in turn (Figure 3); loads the
//! objects whose stored requests a certified checkpoint let go of, as of that checkpoint; and
//! has those stored requests executed in order, then the request.
//!
//! Why that is enough (seed 003 §4.3.1): two requests whose access sets are disjoint commute,
//! so running the selected ones in agreed order gives every object the request touches the
//! value it has after every earlier request, the skipped ones included. A forced request runs
//! in the past, after later requests ran here; that is safe for the same reason. What makes it
//! so, checked by [`Selector::check_invariants`]: no request executed here touched an object
//! of a stored request that comes before it, and no object to be loaded as of the certified
//! checkpoint was touched here since.
//!
//! What the selector assumes of the application: an access set names every object the request
//! may read or write, and whatever else it reads or changes (the application's metadata) is
//! the same on every replica, so changed only by requests every replica runs (those touching
//! no object or every object). The coordination service's zxid, which every write changes and
//! every reply carries, breaks that; it is out of scope (issue 39).

use crate::maintenance::{Maintenance, Partition};
use plumb_app::{AccessSet, ObjectId};
use plumb_wire::{ExecId, Position, Seq};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What the selector decides for one agreed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not executed here: every object it touches is maintained elsewhere. Kept until a
    /// catch-up replays it, it is forced, or a certified checkpoint covers its batch.
    Stored,
    /// Executed here, once the catch-up is done.
    Execute(CatchUp),
}

/// Bringing objects up to date before a request runs: load each object of `load` as it was
/// at the certified checkpoint `as_of` (fetched with its proof against that checkpoint's
/// root), then execute the stored requests of `replay` in order. `as_of` is the certified
/// checkpoint even when there is nothing to load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatchUp {
    pub load: Vec<ObjectId>,
    pub as_of: Seq,
    pub replay: Vec<Position>,
}

impl CatchUp {
    /// Nothing to do first: every object the request touches is current here.
    pub fn is_empty(&self) -> bool {
        self.load.is_empty() && self.replay.is_empty()
    }
}

/// The selector of execution replica `me`.
#[derive(Clone, Debug)]
pub struct Selector {
    me: ExecId,
    maintenance: Maintenance,
    /// Requests not executed here (seed 003's `R_store`), with the objects each touches: none
    /// maintained here, never empty.
    stored: BTreeMap<Position, Vec<ObjectId>>,
    /// The same requests by object: for each object, the positions of the stored requests
    /// that touch it. A catch-up follows it instead of scanning every stored request, which
    /// a checkpoint window under load makes tens of thousands.
    by_object: HashMap<ObjectId, BTreeSet<Position>>,
    /// Objects that stored requests touched before a certified checkpoint let go of them: to
    /// be loaded as of [`Selector::certified`] before they are used.
    behind: BTreeSet<ObjectId>,
    /// The last certified checkpoint: every stored request comes after it.
    certified: Seq,
    /// The last request inserted: agreed order only goes forward.
    last: Option<Position>,
    /// The last position, above the certified checkpoint, at which a request executed here
    /// touched each unmaintained object; and the last request executed here that touched every
    /// object. Only for the invariant.
    last_local: HashMap<ObjectId, Position>,
    last_all: Option<Position>,
}

impl Selector {
    pub fn new(me: ExecId, maintenance: Maintenance) -> Selector {
        Selector {
            me,
            maintenance,
            stored: BTreeMap::new(),
            by_object: HashMap::new(),
            behind: BTreeSet::new(),
            certified: Seq::ZERO,
            last: None,
            last_local: HashMap::new(),
            last_all: None,
        }
    }

    pub fn certified(&self) -> Seq {
        self.certified
    }

    /// Requests stored and not yet executed here.
    pub fn stored(&self) -> usize {
        self.stored.len()
    }

    /// Whether object `id` holds here the value every request so far gave it.
    pub fn is_current(&self, id: ObjectId) -> bool {
        self.maintenance.maintains_object(self.me, id)
            || (!self.behind.contains(&id) && !self.by_object.contains_key(&id))
    }

    /// The next agreed request, at `pos`, touching `access` (seed 003 Figure 2, `insert`).
    ///
    /// # Panics
    /// If `pos` does not come after the last request inserted, or is in a batch at or below
    /// the certified checkpoint: the agreed order is the execution stage's to keep, and a
    /// selector fed out of order would diverge silently.
    pub fn insert(&mut self, pos: Position, access: &AccessSet) -> Decision {
        assert!(
            self.last.is_none_or(|last| pos > last),
            "selector of e{}: {pos:?} inserted after {:?}",
            self.me,
            self.last
        );
        assert!(
            pos.seq > self.certified,
            "selector of e{}: {pos:?} inserted at or below the certified checkpoint {:?}",
            self.me,
            self.certified
        );
        self.last = Some(pos);
        let ids = match access {
            AccessSet::All => return Decision::Execute(self.catch_up_all_before(pos)),
            AccessSet::Objects(ids) => ids,
        };
        let unmaintained: Vec<ObjectId> = ids
            .iter()
            .copied()
            .filter(|&id| !self.maintenance.maintains_object(self.me, id))
            .collect();
        // Touching no object (only the application's metadata, the same on every replica:
        // every replica runs it) or none maintained elsewhere: executed as it comes.
        if unmaintained.is_empty() {
            return Decision::Execute(CatchUp {
                as_of: self.certified,
                ..CatchUp::default()
            });
        }
        if unmaintained.len() == ids.len() {
            self.store(pos, unmaintained);
            return Decision::Stored;
        }
        let catch_up = self.bring_up_to_date(unmaintained.iter().copied().collect(), pos);
        self.touched_here(pos, &unmaintained);
        Decision::Execute(catch_up)
    }

    /// Execute the stored request at `pos` after all (seed 003 Figure 4, `force_request`):
    /// its client's vote came up short, or a checkpoint of its objects did not become certified
    /// in time. `None` if it is not stored here (executed already, or let go of at a certified
    /// checkpoint): the caller answers from its reply cache, if at all. Otherwise the caller
    /// does the catch-up, then executes the request.
    pub fn force(&mut self, pos: Position) -> Option<CatchUp> {
        let objects = self.unstore(pos)?;
        let catch_up = self.bring_up_to_date(objects.iter().copied().collect(), pos);
        self.touched_here(pos, &objects);
        Some(catch_up)
    }

    /// Bring every object of partition `p` up to date, as of the last request inserted: what
    /// a replica that reports `p`'s root at a checkpoint without maintaining it (a partition
    /// forced here, `certify.rs`) does when it reaches the checkpoint.
    pub fn catch_up_partition(&mut self, p: Partition) -> CatchUp {
        let in_p = |o: &ObjectId| self.maintenance.partition_of(*o) == p;
        let want: BTreeSet<ObjectId> = self
            .by_object
            .keys()
            .chain(self.behind.iter())
            .copied()
            .filter(in_p)
            .collect();
        let end = Position {
            seq: Seq::MAX,
            index: u32::MAX,
        };
        self.bring_up_to_date(want, end)
    }

    /// Bring every object up to date (seed 003 §5.4, proactive updating when idle; also what
    /// a request touching every object needs).
    pub fn catch_up_all(&mut self) -> CatchUp {
        let pos = Position {
            seq: Seq::MAX,
            index: u32::MAX,
        };
        let catch_up = self.catch_up_all_before(pos);
        self.last_all = self.last;
        catch_up
    }

    /// A checkpoint at `seq` is certified: its objects' values are agreed, so stored requests
    /// of batches up to `seq` are let go of, and the objects they touched will be loaded as of
    /// this checkpoint instead (seed 003 §3.4). An older checkpoint changes nothing.
    ///
    /// # Panics
    /// If batch `seq` has not been inserted: every request of the batches up to `seq` must be
    /// (a later request of batch `seq` then panics in [`Selector::insert`]). A replica that
    /// learns of a checkpoint it has not reached loads it by state transfer instead, with a
    /// new selector: loading objects as of a checkpoint that already holds the writes of the
    /// requests about to run would run them twice.
    pub fn on_certified(&mut self, seq: Seq) {
        if seq <= self.certified {
            return;
        }
        assert!(
            self.last.is_some_and(|last| last.seq >= seq),
            "selector of e{}: checkpoint {seq:?} certified before its batch was inserted (last {:?})",
            self.me,
            self.last
        );
        let after = self.stored.split_off(&Position {
            seq: seq.next(),
            index: 0,
        });
        for (pos, objects) in std::mem::replace(&mut self.stored, after) {
            self.unindex(pos, &objects);
            self.behind.extend(objects);
        }
        self.certified = seq;
        self.last_local.retain(|_, p| p.seq > seq);
        if self.last_all.is_some_and(|p| p.seq <= seq) {
            self.last_all = None;
        }
    }

    /// Every stored request before `pos` and every object behind: what a request touching
    /// every object needs first.
    fn catch_up_all_before(&mut self, pos: Position) -> CatchUp {
        let after = self.stored.split_off(&pos);
        let before = std::mem::replace(&mut self.stored, after);
        for (p, objects) in &before {
            self.unindex(*p, objects);
        }
        let replay: Vec<Position> = before.into_keys().collect();
        self.last_all = Some(pos);
        CatchUp {
            load: std::mem::take(&mut self.behind).into_iter().collect(),
            as_of: self.certified,
            replay,
        }
    }

    /// Seed 003 Figure 3: going back from `pos`, select every stored request that touches an
    /// object wanted, and want its objects too; load the wanted objects that are behind.
    ///
    /// Done by object rather than by scanning back: each wanted object is needed up to a
    /// position (`pos` for the objects asked for; for an object a selected request touches,
    /// that request's position), and every stored request touching it before that position
    /// is selected. Both select the same requests: the least set closed under "touches an
    /// object needed after it". Each stored request is looked at once per object it touches.
    fn bring_up_to_date(&mut self, want: BTreeSet<ObjectId>, pos: Position) -> CatchUp {
        #[cfg(test)]
        let by_scan = self.replay_by_scan(want.clone(), pos);
        // Object -> the position it is needed up to (exclusive); work: objects whose bound rose.
        let mut needed: HashMap<ObjectId, Position> = want.iter().map(|&o| (o, pos)).collect();
        // Object -> the bound below which its requests were already selected.
        let mut done: HashMap<ObjectId, Position> = HashMap::new();
        let mut work: Vec<ObjectId> = want.iter().copied().collect();
        let mut selected: BTreeSet<Position> = BTreeSet::new();
        let floor = Position {
            seq: Seq::ZERO,
            index: 0,
        };
        while let Some(o) = work.pop() {
            let bound = needed[&o];
            let from = done.insert(o, bound).unwrap_or(floor);
            let Some(positions) = self.by_object.get(&o) else {
                continue;
            };
            for &p in positions.range(from..bound) {
                if !selected.insert(p) {
                    continue;
                }
                for &other in &self.stored[&p] {
                    let need = needed.entry(other).or_insert(floor);
                    if *need < p {
                        *need = p;
                        work.push(other);
                    }
                }
            }
        }
        let replay: Vec<Position> = selected.into_iter().collect();
        #[cfg(test)]
        assert_eq!(replay, by_scan, "the index and the scan back select alike");
        for &p in &replay {
            if let Some(objects) = self.unstore(p) {
                self.touched_here(p, &objects);
            }
        }
        let load: Vec<ObjectId> = needed
            .into_keys()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|o| self.behind.remove(o))
            .collect();
        CatchUp {
            load,
            as_of: self.certified,
            replay,
        }
    }

    /// Figure 3 as the seed writes it, scanning back over every stored request: what the
    /// unit tests check [`Selector::bring_up_to_date`]'s selection against.
    #[cfg(test)]
    fn replay_by_scan(&self, mut want: BTreeSet<ObjectId>, pos: Position) -> Vec<Position> {
        let mut replay = Vec::new();
        for (&p, objects) in self.stored.range(..pos).rev() {
            if objects.iter().any(|o| want.contains(o)) {
                replay.push(p);
                want.extend(objects.iter().copied());
            }
        }
        replay.reverse();
        replay
    }

    fn store(&mut self, pos: Position, objects: Vec<ObjectId>) {
        for &o in &objects {
            self.by_object.entry(o).or_default().insert(pos);
        }
        self.stored.insert(pos, objects);
    }

    fn unstore(&mut self, pos: Position) -> Option<Vec<ObjectId>> {
        let objects = self.stored.remove(&pos)?;
        self.unindex(pos, &objects);
        Some(objects)
    }

    fn unindex(&mut self, pos: Position, objects: &[ObjectId]) {
        for o in objects {
            if let Some(positions) = self.by_object.get_mut(o) {
                positions.remove(&pos);
                if positions.is_empty() {
                    self.by_object.remove(o);
                }
            }
        }
    }

    fn touched_here(&mut self, pos: Position, unmaintained: &[ObjectId]) {
        for &o in unmaintained {
            let last = self.last_local.entry(o).or_insert(pos);
            *last = (*last).max(pos);
        }
    }

    /// The selector's invariants; a broken one panics, naming it.
    pub fn check_invariants(&self) {
        assert!(
            self.certified == Seq::ZERO || self.last.is_some_and(|l| l.seq >= self.certified),
            "certified checkpoint {:?} beyond the last request inserted {:?}",
            self.certified,
            self.last
        );
        for (pos, objects) in &self.stored {
            assert!(
                pos.seq > self.certified,
                "stored {pos:?} at or below the certified checkpoint {:?}",
                self.certified
            );
            assert!(!objects.is_empty(), "stored {pos:?} touches no object");
            assert!(
                self.last.is_some_and(|last| *pos <= last),
                "stored {pos:?} after the last request inserted"
            );
            assert!(
                self.last_all.is_none_or(|all| all < *pos),
                "stored {pos:?} before a request that touched every object ran here at {:?}",
                self.last_all
            );
            for o in objects {
                assert!(
                    !self.maintenance.maintains_object(self.me, *o),
                    "stored {pos:?} touches {o:?}, which e{} maintains",
                    self.me
                );
                // The one that makes a catch-up right: nothing executed here after a stored
                // request touched any of its objects.
                if let Some(last) = self.last_local.get(o) {
                    assert!(
                        last < pos,
                        "{o:?} of stored {pos:?} was touched here later, at {last:?}"
                    );
                }
            }
        }
        let indexed: usize = self.by_object.values().map(BTreeSet::len).sum();
        let touches: usize = self.stored.values().map(Vec::len).sum();
        assert_eq!(
            indexed, touches,
            "the index by object does not match the stored requests"
        );
        for (o, positions) in &self.by_object {
            assert!(
                !positions.is_empty(),
                "{o:?} indexed with no stored request"
            );
            for p in positions {
                assert!(
                    self.stored
                        .get(p)
                        .is_some_and(|objects| objects.contains(o)),
                    "{o:?} indexed at {p:?}, where no stored request touches it"
                );
            }
        }
        for o in &self.behind {
            assert!(
                !self.maintenance.maintains_object(self.me, *o),
                "{o:?} behind although e{} maintains it",
                self.me
            );
            // Loaded as of the certified checkpoint, it would lose what ran here since.
            assert!(
                !self.last_local.contains_key(o),
                "{o:?} behind although a request touched it here at {:?}, after the certified checkpoint",
                self.last_local.get(o)
            );
            assert!(
                self.last_all.is_none(),
                "{o:?} behind although a request touching every object ran here at {:?}, after the certified checkpoint",
                self.last_all
            );
        }
    }
}
