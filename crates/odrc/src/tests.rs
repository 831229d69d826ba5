//! The selector against a replica that executes everything: whatever the assignment, the mix
//! of requests, the checkpoints certified and the requests forced, a replica that executes
//! what its selector decides gives every request it executes the reply the full replica gave,
//! keeps every object it maintains current, and reaches the full state when it catches up on
//! everything. And each request runs, as it comes, on at least `m` replicas (the replies a
//! client needs while every maintainer is correct).

use crate::{CatchUp, Decision, Maintenance, Partition, Position, Selector};
use plumb_app::{AccessSet, ObjectId};
use plumb_wire::{ExecId, Seq};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// Ten objects, ids 0 to 9 of 4-bit ids: partitions of 3 bits hold two of them (or none),
/// of 4 bits one (or none).
const OBJECTS: u64 = 10;
const OBJECT_ID_BITS: u8 = 4;

fn pos(seq: u64, index: u32) -> Position {
    Position {
        seq: Seq(seq),
        index,
    }
}

fn ids(v: &[u64]) -> AccessSet {
    AccessSet::objects(v.iter().map(|&i| ObjectId(i)))
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A toy request: its reply depends on the values of the objects it touches, and it rewrites
/// each of them from the reply, so any missed or reordered update shows.
fn run(values: &mut [u64], at: Position, access: &AccessSet) -> u64 {
    let touched: Vec<u64> = match access {
        AccessSet::All => (0..OBJECTS).collect(),
        AccessSet::Objects(ids) => ids.iter().map(|o| o.0).collect(),
    };
    let mut h = mix(at.seq.0 << 8 | u64::from(at.index));
    for &o in &touched {
        h = mix(h ^ values[o as usize]);
    }
    for &o in &touched {
        values[o as usize] = mix(h ^ o);
    }
    h
}

/// What the replica that executes everything saw.
struct Full {
    replies: HashMap<Position, u64>,
    /// The values after each request.
    after_request: HashMap<Position, Vec<u64>>,
    /// The values after each batch (batch 0: the initial state).
    after: BTreeMap<Seq, Vec<u64>>,
    values: Vec<u64>,
}

fn full(batches: &[Vec<AccessSet>]) -> Full {
    let mut values = vec![0; OBJECTS as usize];
    let mut after = BTreeMap::from([(Seq(0), values.clone())]);
    let mut replies = HashMap::new();
    let mut after_request = HashMap::new();
    for (b, batch) in batches.iter().enumerate() {
        let seq = b as u64 + 1;
        for (i, access) in batch.iter().enumerate() {
            let at = pos(seq, i as u32);
            replies.insert(at, run(&mut values, at, access));
            after_request.insert(at, values.clone());
        }
        after.insert(Seq(seq), values.clone());
    }
    Full {
        replies,
        after_request,
        after,
        values,
    }
}

/// One replica that executes what its selector decides.
struct Partial<'a> {
    selector: Selector,
    values: Vec<u64>,
    full: &'a Full,
    access: &'a HashMap<Position, AccessSet>,
}

impl Partial<'_> {
    fn execute(&mut self, at: Position) {
        let reply = run(&mut self.values, at, &self.access[&at]);
        assert_eq!(reply, self.full.replies[&at], "reply of {at:?}");
    }

    fn catch_up(&mut self, c: CatchUp) {
        let checkpoint = &self.full.after[&c.as_of];
        for o in c.load {
            self.values[o.0 as usize] = checkpoint[o.0 as usize];
        }
        for at in c.replay {
            self.execute(at);
        }
    }

    /// Every object the selector calls current holds the full replica's value `expected`.
    fn check_current(&self, expected: &[u64]) -> Result<(), TestCaseError> {
        for o in 0..OBJECTS {
            if self.selector.is_current(ObjectId(o)) {
                prop_assert_eq!(
                    self.values[o as usize],
                    expected[o as usize],
                    "object {}",
                    o
                );
            }
        }
        Ok(())
    }
}

fn access_strategy() -> impl Strategy<Value = AccessSet> {
    prop_oneof![
        1 => Just(AccessSet::All),
        30 => proptest::collection::vec(0..OBJECTS, 0..=3).prop_map(|v| ids(&v)),
    ]
}

proptest! {
    #[test]
    fn a_selective_replica_replies_as_a_full_one(
        n in 3usize..=6,
        m in 1usize..=3,
        partition_bits in 3u8..=4,
        batches in proptest::collection::vec(proptest::collection::vec(access_strategy(), 1..=4), 1..=30),
        certify in proptest::collection::vec(proptest::option::of(0u64..=30), 30),
        force in proptest::collection::vec(proptest::collection::vec((0u64..30, 0u32..4), 0..=2), 30),
        partition in proptest::collection::vec(proptest::option::of(0u32..16), 30),
    ) {
        let m = m.min(n);
        let maintenance = Maintenance::new(n, m, partition_bits, OBJECT_ID_BITS).unwrap();
        let full = full(&batches);
        let access: HashMap<Position, AccessSet> = batches
            .iter()
            .enumerate()
            .flat_map(|(b, batch)| {
                batch.iter().enumerate().map(move |(i, a)| (pos(b as u64 + 1, i as u32), a.clone()))
            })
            .collect();
        let mut ran_as_it_came: HashMap<Position, usize> = HashMap::new();
        for e in ExecId::all(n) {
            let mut r = Partial {
                selector: Selector::new(e, maintenance),
                values: vec![0; OBJECTS as usize],
                full: &full,
                access: &access,
            };
            for (b, batch) in batches.iter().enumerate() {
                let seq = b as u64 + 1;
                for i in 0..batch.len() {
                    let at = pos(seq, i as u32);
                    // Executed as it comes exactly when it touches an object maintained here,
                    // or no object, or every object: no more work than that.
                    let needed = match &access[&at] {
                        AccessSet::All => true,
                        AccessSet::Objects(v) => {
                            v.is_empty() || v.iter().any(|&o| maintenance.maintains_object(e, o))
                        }
                    };
                    let decision = r.selector.insert(at, &access[&at]);
                    prop_assert_eq!(matches!(decision, Decision::Execute(_)), needed, "e{} {:?}", e, at);
                    if let Decision::Execute(c) = decision {
                        r.catch_up(c);
                        r.execute(at);
                        *ran_as_it_came.entry(at).or_default() += 1;
                    }
                    r.selector.check_invariants();
                    r.check_current(&full.after_request[&at])?;
                }
                let now = &full.after[&Seq(seq)];
                if let Some(c) = certify[b].filter(|&c| c <= seq) {
                    r.selector.on_certified(Seq(c));
                    r.selector.check_invariants();
                    r.check_current(now)?;
                }
                // A partition forced here is brought up to date at a checkpoint.
                if let Some(p) = partition[b].map(|p| Partition(p % maintenance.partitions())) {
                    let c = r.selector.catch_up_partition(p);
                    r.catch_up(c);
                    r.selector.check_invariants();
                    for o in (0..OBJECTS).map(ObjectId).filter(|&o| maintenance.partition_of(o) == p) {
                        prop_assert!(r.selector.is_current(o), "{:?} of {} after its catch-up", o, p);
                    }
                    r.check_current(now)?;
                }
                for &(fb, fi) in &force[b] {
                    let at = pos(fb + 1, fi);
                    if fb < seq && access.contains_key(&at) {
                        if let Some(c) = r.selector.force(at) {
                            r.catch_up(c);
                            r.execute(at);
                        }
                        r.selector.check_invariants();
                        r.check_current(now)?;
                    }
                }
            }
            for o in 0..OBJECTS {
                if maintenance.maintains_object(e, ObjectId(o)) {
                    prop_assert!(r.selector.is_current(ObjectId(o)));
                }
            }
            let c = r.selector.catch_up_all();
            r.catch_up(c);
            r.selector.check_invariants();
            prop_assert_eq!(&r.values, &full.values, "e{} after catching up on everything", e);
            prop_assert_eq!(r.selector.stored(), 0);
        }
        for at in access.keys() {
            prop_assert!(ran_as_it_came.get(at).copied().unwrap_or(0) >= m, "{:?} ran on fewer than {} replicas", at, m);
        }
    }
}

/// Seed 003 Figure 3 on three replicas with one maintainer each and one object per partition:
/// e0 maintains objects 0, 3, 6, 9; e1 1, 4, ...; e2 2, 5, ...
#[test]
fn a_cross_border_request_brings_in_what_it_touches_and_only_that() {
    let m = Maintenance::new(3, 1, 4, OBJECT_ID_BITS).unwrap();
    let mut s = Selector::new(ExecId(0), m);
    assert_eq!(s.insert(pos(1, 0), &ids(&[1])), Decision::Stored);
    assert_eq!(s.insert(pos(2, 0), &ids(&[2])), Decision::Stored);
    assert_eq!(s.insert(pos(2, 1), &ids(&[4])), Decision::Stored);
    // Batch 1's checkpoint is certified: the request that touched object 1 is let go of, and
    // object 1 will be loaded as of that checkpoint.
    s.on_certified(Seq(1));
    assert_eq!(s.stored(), 2);
    // Object 2 is needed: the stored request that touched it runs first; object 4's does not.
    assert_eq!(
        s.insert(pos(3, 0), &ids(&[0, 2])),
        Decision::Execute(CatchUp {
            load: vec![],
            as_of: Seq(1),
            replay: vec![pos(2, 0)],
        })
    );
    // Object 1 is loaded, and only it.
    assert_eq!(
        s.insert(pos(4, 0), &ids(&[0, 1])),
        Decision::Execute(CatchUp {
            load: vec![ObjectId(1)],
            as_of: Seq(1),
            replay: vec![],
        })
    );
    assert!(s.is_current(ObjectId(1)) && s.is_current(ObjectId(2)));
    assert!(!s.is_current(ObjectId(4)));
    // Forced: the request touching object 4 runs after all; a second force finds nothing.
    assert_eq!(
        s.force(pos(2, 1)),
        Some(CatchUp {
            load: vec![],
            as_of: Seq(1),
            replay: vec![],
        })
    );
    assert_eq!(s.force(pos(2, 1)), None);
    s.check_invariants();
}

#[test]
#[should_panic(expected = "certified before its batch was inserted")]
fn a_checkpoint_ahead_of_the_requests_inserted_is_refused() {
    let mut s = Selector::new(
        ExecId(0),
        Maintenance::new(3, 1, 4, OBJECT_ID_BITS).unwrap(),
    );
    s.insert(pos(1, 0), &ids(&[1]));
    // Loading object 1 as of checkpoint 2 and then running (2, 0) would apply its write twice.
    s.on_certified(Seq(2));
}

#[test]
#[should_panic(expected = "at or below the certified checkpoint")]
fn a_request_of_a_certified_batch_is_refused() {
    let mut s = Selector::new(
        ExecId(0),
        Maintenance::new(3, 1, 4, OBJECT_ID_BITS).unwrap(),
    );
    s.insert(pos(1, 0), &ids(&[1]));
    s.on_certified(Seq(1));
    s.insert(pos(1, 1), &ids(&[1]));
}

#[test]
#[should_panic(expected = "inserted after")]
fn a_request_out_of_agreed_order_is_refused() {
    let mut s = Selector::new(
        ExecId(0),
        Maintenance::new(3, 2, 4, OBJECT_ID_BITS).unwrap(),
    );
    s.insert(pos(2, 0), &ids(&[0]));
    s.insert(pos(1, 5), &ids(&[0]));
}
