//! Algorithm 1, the table bound, automatic blacklisting and the sharded hand-over.

use crate::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn q(i: u32) -> Sketch {
    Sketch::of(format!("GET /q/{i}").as_bytes())
}

fn r(i: u32) -> Sketch {
    Sketch::of(format!("response {i}").as_bytes())
}

fn at(seq: u64) -> Position {
    Position::new(seq, 0)
}

fn sketcher() -> Sketcher {
    Sketcher::new(SketcherConfig::default()).expect("default config is valid")
}

fn small(max_entries: usize) -> Sketcher {
    Sketcher::new(SketcherConfig {
        max_entries,
        ..SketcherConfig::default()
    })
    .expect("valid")
}

#[test]
fn invalid_config_is_refused() {
    let err = Sketcher::new(SketcherConfig {
        max_entries: 0,
        ..SketcherConfig::default()
    })
    .unwrap_err();
    assert_eq!(err, ConfigError::NoEntries);
}

#[test]
fn first_read_is_replicated_then_fast_hit() {
    let mut sk = sketcher();
    assert_eq!(sk.plan(q(1), 0), Plan::Replicated);
    assert_eq!(sk.counters().no_entry, 1);
    assert_eq!(sk.on_replicated(q(1), r(1), at(3), 1), Update::Created);
    assert_eq!(
        sk.plan(q(1), 2),
        Plan::Fast {
            expected: Some(r(1))
        }
    );
    assert_eq!(sk.on_fast_reply(q(1), r(1), 3), Verdict::Accept);
    let c = sk.counters();
    assert_eq!(
        (c.reads, c.fast_planned, c.fast_hits, c.fallbacks, c.entries),
        (2, 1, 1, 1, 1)
    );
}

#[test]
fn mismatch_falls_back_and_the_replicated_reply_updates_the_table() {
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(1), at(3), 0);
    assert!(matches!(sk.plan(q(1), 1), Plan::Fast { .. }));
    assert_eq!(sk.on_fast_reply(q(1), r(2), 2), Verdict::Fallback);
    assert_eq!(sk.on_replicated(q(1), r(2), at(5), 3), Update::Changed);
    assert_eq!(sk.table().entry(q(1)).map(|e| e.response()), Some(r(2)));
    assert_eq!(sk.table().entry(q(1)).map(|e| e.position()), Some(at(5)));
    assert_eq!(
        sk.plan(q(1), 4),
        Plan::Fast {
            expected: Some(r(2))
        }
    );
    assert_eq!(sk.on_fast_reply(q(1), r(2), 5), Verdict::Accept);
    let c = sk.counters();
    assert_eq!((c.mismatches, c.fallbacks, c.fast_hits), (1, 1, 1));
    // The mismatch and its fallback are one transition, not two.
    assert_eq!(
        sk.table().entry(q(1)).map(|e| e.window().transitions()),
        Some(1)
    );
}

#[test]
fn older_replicated_reply_is_ignored() {
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(2), at(10), 0);
    assert_eq!(sk.on_replicated(q(1), r(1), at(9), 1), Update::Stale);
    assert_eq!(sk.table().entry(q(1)).map(|e| e.response()), Some(r(2)));
    assert_eq!(sk.counters().stale_replies, 1);
    assert_eq!(sk.high_water(), Some(at(10)));
}

#[test]
fn equal_position_is_ignored() {
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(1), at(10), 0);
    assert_eq!(sk.on_replicated(q(1), r(2), at(10), 1), Update::Stale);
    assert_eq!(sk.table().entry(q(1)).map(|e| e.response()), Some(r(1)));
}

#[test]
fn positions_within_one_batch_are_ordered_by_index() {
    // [read x, write x, read x] in batch 7: the second read is the newer one.
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(2), Position::new(7, 2), 0);
    assert_eq!(
        sk.on_replicated(q(1), r(1), Position::new(7, 0), 1),
        Update::Stale
    );
    assert_eq!(sk.table().entry(q(1)).map(|e| e.response()), Some(r(2)));
    assert_eq!(
        sk.on_replicated(q(1), r(3), Position::new(8, 0), 2),
        Update::Changed
    );
    assert!(Position::new(7, 9) < Position::new(8, 0));
}

#[test]
fn verdict_uses_the_current_entry_not_the_planned_one() {
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(1), at(1), 0);
    assert_eq!(
        sk.plan(q(1), 1),
        Plan::Fast {
            expected: Some(r(1))
        }
    );
    // While the fast read is in flight a newer replicated read (another client's) lands.
    sk.on_replicated(q(1), r(2), at(2), 2);
    // The fast reply reflects the state the plan expected, which is no longer the latest.
    assert_eq!(sk.on_fast_reply(q(1), r(1), 3), Verdict::Fallback);
    assert_eq!(sk.on_fast_reply(q(1), r(2), 4), Verdict::Accept);
}

#[test]
fn fast_reply_after_the_entry_was_evicted_falls_back() {
    let mut sk = small(1);
    sk.on_replicated(q(1), r(1), at(1), 0);
    assert!(matches!(sk.plan(q(1), 1), Plan::Fast { .. }));
    sk.on_replicated(q(2), r(2), at(2), 2);
    assert_eq!(sk.on_fast_reply(q(1), r(1), 3), Verdict::Fallback);
}

#[test]
fn fast_failed_counts_a_fallback() {
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(1), at(1), 0);
    assert!(matches!(sk.plan(q(1), 1), Plan::Fast { .. }));
    sk.on_fast_failed(q(1));
    let c = sk.counters();
    assert_eq!((c.fast_failed, c.fallbacks), (1, 1));
    // Its replicated reply counts as a read of its own (it was no mismatch).
    assert_eq!(sk.on_replicated(q(1), r(1), at(2), 2), Update::Confirmed);
    assert_eq!(sk.table().entry(q(1)).map(|e| e.window().reads()), Some(1));
}

#[test]
fn whitelisted_requests_are_fast_and_accept_anything() {
    let mut sk = sketcher();
    sk.on_replicated(q(1), r(1), at(1), 0);
    sk.set_listing(q(1), Listing::White);
    assert!(sk.table().entry(q(1)).is_none());
    assert_eq!(sk.plan(q(1), 1), Plan::Fast { expected: None });
    assert_eq!(sk.on_fast_reply(q(1), r(7), 2), Verdict::Accept);
    assert_eq!(sk.on_fast_reply(q(1), r(8), 3), Verdict::Accept);
    assert_eq!(sk.on_replicated(q(1), r(9), at(5), 4), Update::Listed);
    assert_eq!(sk.table().lookup(q(1), 5).listing, Listing::White);
    assert_eq!(sk.table().lookup(q(1), 5).response, None);
}

#[test]
fn blacklisted_requests_are_always_replicated_and_keep_no_entry() {
    let mut sk = sketcher();
    sk.set_listing(q(1), Listing::Black);
    for t in 0..3 {
        assert_eq!(sk.plan(q(1), t), Plan::Replicated);
        assert_eq!(sk.on_replicated(q(1), r(1), at(t + 1), t), Update::Listed);
    }
    assert!(sk.table().is_empty());
    assert_eq!(sk.on_fast_reply(q(1), r(1), 9), Verdict::Fallback);
    assert_eq!(sk.counters().blacklisted_replicated, 3);
}

#[test]
fn unlisting_raises_the_floor_to_the_high_water() {
    let mut sk = sketcher();
    sk.set_listing(q(1), Listing::Black);
    // Replies for the listed request are not recorded; a client has seen position 20.
    sk.on_replicated(q(1), r(2), at(20), 0);
    sk.set_listing(q(1), Listing::Neither);
    // A straggler from before must not become the entry.
    assert_eq!(sk.on_replicated(q(1), r(1), at(15), 1), Update::BelowFloor);
    assert_eq!(sk.plan(q(1), 2), Plan::Replicated);
    assert_eq!(sk.on_replicated(q(1), r(2), at(21), 3), Update::Created);
    assert!(matches!(sk.plan(q(1), 4), Plan::Fast { .. }));
}

#[test]
fn eviction_at_the_bound_takes_the_least_recently_used() {
    let mut sk = small(3);
    for i in 0..3 {
        sk.on_replicated(q(i), r(i), at(u64::from(i) + 1), 0);
    }
    // Reading q0 makes q1 the least recently used.
    assert!(matches!(sk.plan(q(0), 1), Plan::Fast { .. }));
    sk.on_replicated(q(3), r(3), at(10), 2);
    assert!(sk.table().entry(q(1)).is_none());
    assert_eq!(sk.table().len(), 3);
    assert_eq!(sk.counters().evictions, 1);
    assert_eq!(sk.counters().entries, 3);
    assert_eq!(
        sk.table().lru_order().collect::<Vec<_>>(),
        vec![q(2), q(0), q(3)]
    );
    // The evicted request is a first read again.
    assert_eq!(sk.plan(q(1), 3), Plan::Replicated);
    // A straggling reply for it older than what was evicted cannot come back.
    assert_eq!(sk.on_replicated(q(1), r(1), at(2), 4), Update::BelowFloor);
    assert_eq!(sk.on_replicated(q(1), r(1), at(11), 5), Update::Created);
    assert_eq!(sk.counters().evictions, 2);
}

fn transition_once(sk: &mut Sketcher, i: u32, seq: &mut u64, now: u64) {
    // A fast read that mismatches, then its fallback changes the entry.
    *seq += 1;
    let next = r(1000 + *seq as u32);
    if let Plan::Fast { .. } = sk.plan(q(i), now) {
        assert_eq!(sk.on_fast_reply(q(i), next, now), Verdict::Fallback);
    }
    sk.on_replicated(q(i), next, at(*seq), now);
}

#[test]
fn auto_blacklist_after_frequent_transitions_and_cooldown_expiry() {
    let cfg = SketcherConfig {
        transition_window: 8,
        transition_threshold: 4,
        blacklist_cooldown_us: 1_000,
        ..SketcherConfig::default()
    };
    let mut sk = Sketcher::new(cfg).expect("valid");
    let mut seq = 0;
    sk.on_replicated(q(1), r(0), at(0), 0);
    // Four transitions: at the threshold, not above it.
    for _ in 0..4 {
        transition_once(&mut sk, 1, &mut seq, 10);
    }
    assert_eq!(sk.counters().auto_blacklisted, 0);
    assert!(matches!(sk.plan(q(1), 10), Plan::Fast { .. }));
    assert_eq!(
        sk.on_fast_reply(q(1), r(1000 + seq as u32), 10),
        Verdict::Accept
    );
    // Fifth transition: blacklisted until 20 + 1000.
    transition_once(&mut sk, 1, &mut seq, 20);
    assert_eq!(sk.counters().auto_blacklisted, 1);
    assert_eq!(sk.plan(q(1), 21), Plan::Replicated);
    assert_eq!(sk.table().lookup(q(1), 21).listing, Listing::Black);
    assert_eq!(sk.plan(q(1), 1_019), Plan::Replicated);
    // During the cool-down replicated replies still keep the entry current.
    let latest = r(77);
    seq += 1;
    assert_eq!(
        sk.on_replicated(q(1), latest, at(seq), 500),
        Update::Changed
    );
    // Cool-down over: fast again, against the latest reply.
    assert_eq!(
        sk.plan(q(1), 1_020),
        Plan::Fast {
            expected: Some(latest)
        }
    );
    assert_eq!(sk.on_fast_reply(q(1), latest, 1_020), Verdict::Accept);
    assert!(sk.counters().blacklisted_replicated >= 2);
}

#[test]
fn a_mostly_stable_entry_is_not_auto_blacklisted() {
    let mut sk = sketcher();
    let mut seq = 0;
    sk.on_replicated(q(1), r(0), at(0), 0);
    for round in 0..20u64 {
        if round % 3 == 0 {
            transition_once(&mut sk, 1, &mut seq, round);
        } else {
            let Plan::Fast { expected: Some(e) } = sk.plan(q(1), round) else {
                panic!("expected a fast plan in round {round}");
            };
            assert_eq!(sk.on_fast_reply(q(1), e, round), Verdict::Accept);
        }
    }
    assert_eq!(sk.counters().auto_blacklisted, 0);
}

#[test]
fn auto_blacklist_can_be_switched_off() {
    let mut sk = Sketcher::new(SketcherConfig {
        auto_blacklist: false,
        ..SketcherConfig::default()
    })
    .expect("valid");
    let mut seq = 0;
    sk.on_replicated(q(1), r(0), at(0), 0);
    for _ in 0..20 {
        transition_once(&mut sk, 1, &mut seq, 5);
    }
    assert_eq!(sk.counters().auto_blacklisted, 0);
    assert!(matches!(sk.plan(q(1), 5), Plan::Fast { .. }));
}

#[test]
fn dynamic_content_stays_blacklisted_after_the_cooldown() {
    let cfg = SketcherConfig {
        blacklist_cooldown_us: 100,
        ..SketcherConfig::default()
    };
    let mut sk = Sketcher::new(cfg).expect("valid");
    let mut seq = 0;
    sk.on_replicated(q(1), r(0), at(0), 0);
    for _ in 0..5 {
        transition_once(&mut sk, 1, &mut seq, 1);
    }
    assert_eq!(sk.counters().auto_blacklisted, 1);
    // Every read during the cool-down still changes the response.
    for t in 2..8 {
        transition_once(&mut sk, 1, &mut seq, t);
    }
    // After the cool-down the first read goes fast, mismatches, and the entry is
    // blacklisted again at once (the cool-down's reads are in its window).
    transition_once(&mut sk, 1, &mut seq, 200);
    assert_eq!(sk.counters().auto_blacklisted, 2);
    assert_eq!(sk.plan(q(1), 201), Plan::Replicated);
}

// ---- The sharded core ----------------------------------------------------------------------

fn ids(v: &[u32]) -> Vec<ShardId> {
    v.iter().map(|i| ShardId(*i)).collect()
}

fn core(members: &[u32], handover_us: Option<u64>) -> ShardedSketcher {
    ShardedSketcher::new(
        &ids(members),
        SketcherConfig::default(),
        ShardingConfig {
            vnodes_per_shard: 32,
            handover_us,
        },
    )
    .expect("valid")
}

/// How many shards would serve `q` fast (must never exceed one).
fn fast_servers(c: &ShardedSketcher, q: Sketch) -> usize {
    c.shards()
        .filter(|(_, s)| s.standing(q) == Standing::Serve)
        .count()
}

fn warm(c: &mut ShardedSketcher, n: u32, seq: &mut u64, now: u64) {
    for i in 0..n {
        *seq += 1;
        assert_eq!(c.plan(q(i), now), Plan::Replicated);
        c.on_replicated(q(i), r(i), at(*seq), now);
    }
}

#[test]
fn sharded_core_routes_each_request_to_one_owner() {
    let mut c = core(&[0, 1, 2], None);
    let mut seq = 0;
    warm(&mut c, 300, &mut seq, 0);
    for i in 0..300 {
        assert_eq!(fast_servers(&c, q(i)), 1);
        let owner = c.shard_for(q(i));
        assert!(c
            .shard(owner)
            .is_some_and(|s| s.table().entry(q(i)).is_some()));
        assert_eq!(
            c.plan(q(i), 1),
            Plan::Fast {
                expected: Some(r(i))
            }
        );
    }
    let total: u64 = c.shards().map(|(_, s)| s.table().len() as u64).sum();
    assert_eq!(total, 300);
    assert_eq!(c.counters().entries, 300);
    assert_eq!(c.counters().fast_planned, 300);
    // A router with an outdated view reaching the wrong shard gets a replicated plan.
    let wrong = c
        .shards()
        .map(|(id, _)| id)
        .find(|id| *id != c.shard_for(q(0)))
        .expect("three shards");
    let s = c.shard_mut(wrong).expect("present");
    assert_eq!(s.standing(q(0)), Standing::NotOwner);
    assert_eq!(s.plan(q(0), 2), Plan::Replicated);
    assert_eq!(s.on_fast_reply(q(0), r(0), 2), Verdict::Fallback);
}

#[test]
fn handover_blacklists_moved_regions_at_old_and_new_owner_until_settle() {
    let mut c = core(&[0, 1, 2], None);
    let mut seq = 0;
    warm(&mut c, 400, &mut seq, 0);
    let before = c.ring().clone();
    c.set_members(&ids(&[0, 1, 2, 3]), 100).expect("change");
    assert_eq!(c.handover_started(), Some(100));
    let after = c.ring().clone();
    let moved: Vec<u32> = (0..400)
        .filter(|i| before.owner(q(*i)) != after.owner(q(*i)))
        .collect();
    let stayed: Vec<u32> = (0..400)
        .filter(|i| before.owner(q(*i)) == after.owner(q(*i)))
        .collect();
    assert!(!moved.is_empty() && !stayed.is_empty());
    for &i in &moved {
        assert_eq!(fast_servers(&c, q(i)), 0, "moved request {i} served fast");
        let (old, new) = (before.owner(q(i)), after.owner(q(i)));
        assert_eq!(after.owner(q(i)), ShardId(3));
        for id in [old, new] {
            let s = c.shard_mut(id).expect("present");
            assert_eq!(s.standing(q(i)), Standing::Handover);
            assert_eq!(s.plan(q(i), 101), Plan::Replicated);
            // Both owners are empty for it: the old dropped its entry.
            assert!(s.table().entry(q(i)).is_none());
        }
        assert_eq!(c.plan(q(i), 101), Plan::Replicated);
        seq += 1;
        assert_eq!(c.on_replicated(q(i), r(i), at(seq), 102), Update::NotServed);
    }
    // Regions that do not move keep being served fast by their owner.
    for &i in &stayed {
        assert_eq!(fast_servers(&c, q(i)), 1);
        assert_eq!(
            c.plan(q(i), 103),
            Plan::Fast {
                expected: Some(r(i))
            }
        );
    }
    assert!(c.counters().handover_replicated >= 2 * moved.len() as u64);
    // A second change is refused until this one settles.
    assert_eq!(
        c.set_members(&ids(&[0, 1]), 104),
        Err(ShardingError::HandoverPending { started: 100 })
    );

    assert!(c.settle());
    assert_eq!(c.handover_started(), None);
    for i in 0..400 {
        assert_eq!(fast_servers(&c, q(i)), 1);
    }
    let high_water = at(seq);
    for &i in &moved {
        // The new owner starts empty: one replicated read, then fast.
        assert_eq!(c.plan(q(i), 200), Plan::Replicated);
        // A straggler from before the settle is refused (floor at the high water) ...
        assert_eq!(
            c.on_replicated(q(i), r(i), high_water, 201),
            Update::BelowFloor
        );
        // ... a fresh reply is taken.
        seq += 1;
        assert_eq!(c.on_replicated(q(i), r(i), at(seq), 202), Update::Created);
        assert_eq!(
            c.plan(q(i), 203),
            Plan::Fast {
                expected: Some(r(i))
            }
        );
        assert_eq!(c.on_fast_reply(q(i), r(i), 204), Verdict::Accept);
    }
}

#[test]
fn removing_a_shard_hands_its_regions_over_and_drops_it_at_settle() {
    let mut c = core(&[0, 1, 2], None);
    let mut seq = 0;
    warm(&mut c, 300, &mut seq, 0);
    let before = c.ring().clone();
    c.set_members(&ids(&[0, 2]), 10).expect("change");
    // The leaving shard is still there during the hand-over, serving nothing fast.
    let leaving = c.shard(ShardId(1)).expect("still present");
    for i in 0..300 {
        assert_ne!(leaving.standing(q(i)), Standing::Serve);
        if before.owner(q(i)) == ShardId(1) {
            assert_eq!(fast_servers(&c, q(i)), 0);
        } else {
            assert_eq!(fast_servers(&c, q(i)), 1);
        }
    }
    assert!(leaving.table().is_empty());
    c.settle();
    assert!(c.shard(ShardId(1)).is_none());
    for i in 0..300 {
        assert_eq!(fast_servers(&c, q(i)), 1);
    }
}

#[test]
fn handover_settles_by_itself_after_the_configured_time() {
    let mut c = core(&[0, 1], Some(1_000));
    let mut seq = 0;
    warm(&mut c, 100, &mut seq, 0);
    c.set_members(&ids(&[0, 1, 2]), 5_000).expect("change");
    let moved = (0..100)
        .find(|i| c.shard_for(q(*i)) == ShardId(2))
        .expect("some request moves to the new shard");
    c.tick(5_999);
    assert_eq!(c.handover_started(), Some(5_000));
    assert_eq!(c.plan(q(moved), 5_999), Plan::Replicated);
    // Any call at or after 6_000 settles first.
    assert_eq!(c.plan(q(moved), 6_000), Plan::Replicated);
    assert_eq!(c.handover_started(), None);
    seq += 1;
    assert_eq!(
        c.on_replicated(q(moved), r(1), at(seq), 6_001),
        Update::Created
    );
    assert!(matches!(c.plan(q(moved), 6_002), Plan::Fast { .. }));
}

#[test]
fn same_membership_is_no_handover_and_bad_membership_is_refused() {
    let mut c = core(&[0, 1], None);
    c.set_members(&ids(&[1, 0]), 1).expect("same");
    assert_eq!(c.handover_started(), None);
    assert_eq!(
        c.set_members(&[], 1),
        Err(ShardingError::Ring(RingError::NoShards))
    );
    assert!(!c.settle());
}

#[test]
fn operator_lists_follow_a_request_to_its_new_owner() {
    let mut c = core(&[0], None);
    c.set_listing(q(1), Listing::Black);
    c.set_listing(q(2), Listing::White);
    c.set_members(&ids(&[0, 1, 2, 3, 4, 5, 6, 7]), 0)
        .expect("change");
    c.settle();
    assert_eq!(c.plan(q(1), 1), Plan::Replicated);
    assert_eq!(c.plan(q(2), 1), Plan::Fast { expected: None });
    for (_, s) in c.shards() {
        assert_eq!(s.table().listed(q(1)), Listing::Black);
    }
}

#[test]
fn shared_sketchers_behave_like_the_sharded_core() {
    let sharding = ShardingConfig {
        vnodes_per_shard: 32,
        handover_us: Some(50),
    };
    let shared = SharedSketchers::new(&ids(&[0, 1]), SketcherConfig::default(), sharding.clone())
        .expect("valid");
    let mut plain =
        ShardedSketcher::new(&ids(&[0, 1]), SketcherConfig::default(), sharding).expect("valid");
    let mut seq = 0u64;
    let mut log = Vec::new();
    for step in 0..400u64 {
        let i = (step * 7 % 60) as u32;
        if step == 150 {
            shared.set_members(&ids(&[0, 1, 2]), step).expect("change");
            plain.set_members(&ids(&[0, 1, 2]), step).expect("change");
        }
        if step == 320 {
            shared.set_listing(q(3), Listing::Black);
            plain.set_listing(q(3), Listing::Black);
        }
        let a = shared.plan(q(i), step);
        let b = plain.plan(q(i), step);
        assert_eq!(a, b, "step {step}");
        let resp = r(i + (step / 100) as u32);
        if let Plan::Fast { .. } = a {
            let (va, vb) = (
                shared.on_fast_reply(q(i), resp, step),
                plain.on_fast_reply(q(i), resp, step),
            );
            assert_eq!(va, vb);
            if va == Verdict::Accept {
                log.push(step);
                continue;
            }
        }
        seq += 1;
        assert_eq!(
            shared.on_replicated(q(i), resp, at(seq), step),
            plain.on_replicated(q(i), resp, at(seq), step)
        );
    }
    assert_eq!(shared.counters(), plain.counters());
    assert_eq!(shared.handover_started(), None);
    assert_eq!(shared.owner(q(5)), plain.shard_for(q(5)));
    assert!(!log.is_empty());
}

#[test]
fn shared_sketchers_can_be_used_from_several_threads() {
    let shared = std::sync::Arc::new(
        SharedSketchers::new(
            &ids(&[0, 1, 2, 3]),
            SketcherConfig::default(),
            ShardingConfig::default(),
        )
        .expect("valid"),
    );
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let s = shared.clone();
            std::thread::spawn(move || {
                for k in 0..200u64 {
                    let i = (k % 50) as u32;
                    if s.plan(q(i), k) == Plan::Replicated {
                        s.on_replicated(q(i), r(i), Position::new(k, t as u32), k);
                    } else {
                        assert_eq!(s.on_fast_reply(q(i), r(i), k), Verdict::Accept);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let c = shared.counters();
    assert_eq!(c.reads, 800);
    assert_eq!(c.entries, 50);
}

// ---- Properties ----------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Replicated {
        q: u32,
        seq: u64,
        index: u32,
        r: u32,
    },
    Read {
        q: u32,
        r: u32,
    },
    List {
        q: u32,
        listing: Listing,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..6u32, 0..40u64, 0..3u32, 0..4u32)
            .prop_map(|(q, seq, index, r)| Op::Replicated { q, seq, index, r }),
        3 => (0..6u32, 0..4u32).prop_map(|(q, r)| Op::Read { q, r }),
        1 => (0..6u32, prop_oneof![Just(Listing::Neither), Just(Listing::White), Just(Listing::Black)])
            .prop_map(|(q, listing)| Op::List { q, listing }),
    ]
}

proptest! {
    /// Whatever order replicated replies arrive in, the entry holds the reply with the
    /// maximal position seen for its request (the first such, on a tie).
    #[test]
    fn entry_holds_the_reply_with_the_maximal_position(
        replies in proptest::collection::vec((0..5u32, 0..30u64, 0..3u32, 0..4u32), 1..120)
    ) {
        let mut sk = sketcher();
        let mut best: BTreeMap<u32, (Position, u32)> = BTreeMap::new();
        for (now, (qi, seq, index, ri)) in replies.into_iter().enumerate() {
            let p = Position::new(seq, index);
            sk.on_replicated(q(qi), r(ri), p, now as u64);
            let b = best.entry(qi).or_insert((p, ri));
            if p > b.0 {
                *b = (p, ri);
            }
            for (qi, (p, ri)) in &best {
                let e = sk.table().entry(q(*qi));
                prop_assert_eq!(e.map(|e| (e.position(), e.response())), Some((*p, r(*ri))));
            }
        }
    }

    /// With a tiny table, listings and fast reads mixed in: an entry, whenever present,
    /// reflects the newest reply ever reported for its request, and a fast reply is accepted
    /// only if it equals that reply (or the request is whitelisted), so no accepted read is
    /// older than a reply already returned.
    #[test]
    fn entries_never_go_back_in_time(
        ops in proptest::collection::vec(op(), 1..200),
        max_entries in 1..4usize,
    ) {
        let mut sk = small(max_entries);
        let mut newest: BTreeMap<u32, (Position, u32)> = BTreeMap::new();
        let mut listed: BTreeMap<u32, Listing> = BTreeMap::new();
        for (now, o) in ops.into_iter().enumerate() {
            let now = now as u64;
            match o {
                Op::Replicated { q: qi, seq, index, r: ri } => {
                    let p = Position::new(seq, index);
                    sk.on_replicated(q(qi), r(ri), p, now);
                    let b = newest.entry(qi).or_insert((p, ri));
                    if p > b.0 {
                        *b = (p, ri);
                    }
                }
                Op::Read { q: qi, r: ri } => {
                    if let Plan::Fast { .. } = sk.plan(q(qi), now) {
                        let v = sk.on_fast_reply(q(qi), r(ri), now);
                        let white = listed.get(&qi) == Some(&Listing::White);
                        let latest = newest.get(&qi).map(|(_, r)| *r);
                        if v == Verdict::Accept && !white {
                            prop_assert_eq!(latest, Some(ri));
                        }
                    }
                }
                Op::List { q: qi, listing } => {
                    sk.set_listing(q(qi), listing);
                    listed.insert(qi, listing);
                }
            }
            prop_assert!(sk.table().len() <= max_entries);
            for (qi, (p, ri)) in &newest {
                if let Some(e) = sk.table().entry(q(*qi)) {
                    prop_assert_eq!((e.position(), e.response()), (*p, r(*ri)));
                }
            }
        }
    }

    /// Across any sequence of membership changes and settles, at most one shard serves any
    /// request fast, and none serves a request whose region is being handed over.
    #[test]
    fn never_two_shards_serve_one_request_fast(
        changes in proptest::collection::vec((proptest::collection::btree_set(0..6u32, 1..5), any::<bool>()), 1..6)
    ) {
        let mut c = core(&[0], None);
        for (now, (members, settle)) in changes.into_iter().enumerate() {
            let members: Vec<ShardId> = members.into_iter().map(ShardId).collect();
            let prev = c.ring().clone();
            let pending = c.handover_started().is_some();
            let res = c.set_members(&members, now as u64);
            prop_assert_eq!(res.is_err(), pending);
            if !pending {
                prop_assert_eq!(c.handover_started().is_some(), Ring::new(&members, 32).ok().as_ref() != Some(&prev));
            }
            for i in 0..200 {
                let n = fast_servers(&c, q(i));
                prop_assert!(n <= 1);
                if c.handover_started().is_none() {
                    prop_assert_eq!(n, 1);
                }
            }
            if settle {
                c.settle();
            }
        }
    }
}
