//! When a stored request is forced: on `r + 1` order replicas' RETRANSMITs within a period,
//! at most once per client per period, whatever faulty order replicas name.

use crate::force::{ForceVerdict, Forcing, ASKS_PER_REPLICA};
use plumb_wire::OrderId;
use proptest::prelude::*;

const PERIOD: u64 = 1_000;

/// u = r = 1: four order replicas, forcing on two.
fn forcing() -> Forcing {
    Forcing::new(2, 4, PERIOD)
}

#[test]
fn r_plus_1_distinct_order_replicas_force_and_one_repeating_does_not() {
    let mut f = forcing();
    let c = 7;
    assert_eq!(f.on_retransmit(0, OrderId(1), c), ForceVerdict::Waiting);
    assert_eq!(f.on_retransmit(10, OrderId(1), c), ForceVerdict::Waiting);
    assert_eq!(f.on_retransmit(20, OrderId(2), c), ForceVerdict::Force);
    f.check_invariants();
}

#[test]
fn a_client_is_forced_at_most_once_per_period() {
    let mut f = forcing();
    let c = 7;
    f.on_retransmit(0, OrderId(0), c);
    assert_eq!(f.on_retransmit(0, OrderId(1), c), ForceVerdict::Force);
    // Asks within the period are refused, and not kept for later.
    for o in 0..4 {
        assert_eq!(
            f.on_retransmit(PERIOD - 1, OrderId(o), c),
            ForceVerdict::RateLimited
        );
    }
    assert_eq!(
        f.on_retransmit(PERIOD, OrderId(2), c),
        ForceVerdict::Waiting
    );
    assert_eq!(f.on_retransmit(PERIOD, OrderId(3), c), ForceVerdict::Force);
    // Another client is not held back by this one's force.
    f.on_retransmit(PERIOD, OrderId(0), 8);
    assert_eq!(f.on_retransmit(PERIOD, OrderId(1), 8), ForceVerdict::Force);
}

#[test]
fn asks_further_apart_than_a_period_do_not_add_up() {
    let mut f = forcing();
    let c = 7;
    f.on_retransmit(0, OrderId(0), c);
    assert_eq!(
        f.on_retransmit(PERIOD, OrderId(1), c),
        ForceVerdict::Waiting
    );
    assert_eq!(
        f.on_retransmit(PERIOD + 1, OrderId(0), c),
        ForceVerdict::Force
    );
}

#[test]
fn a_sender_outside_the_configuration_is_refused() {
    let mut f = forcing();
    assert_eq!(
        f.on_retransmit(0, OrderId(4), 1),
        ForceVerdict::NoSuchReplica
    );
}

#[test]
#[should_panic(expected = "a force quorum of 3 among 2 order replicas")]
fn a_quorum_larger_than_the_order_stage_is_a_bug() {
    Forcing::new(3, 2, PERIOD);
}

/// A faulty order replica that names many clients evicts only its own asks: a correct
/// client's retransmission, relayed by two correct order replicas, still forces.
#[test]
fn a_faulty_order_replica_naming_many_clients_crowds_out_nobody() {
    let mut f = forcing();
    let c = 1;
    assert_eq!(f.on_retransmit(0, OrderId(1), c), ForceVerdict::Waiting);
    for n in 0..(3 * ASKS_PER_REPLICA as u32) {
        assert_ne!(
            f.on_retransmit(1, OrderId(3), 1000 + n),
            ForceVerdict::Force
        );
    }
    f.check_invariants();
    assert_eq!(f.on_retransmit(2, OrderId(2), c), ForceVerdict::Force);
}

proptest! {
    /// Whatever the asks: a force needs `r + 1` distinct order replicas asking within one
    /// period, comes at most once per client per period, and the tables stay bounded.
    #[test]
    fn forces_need_a_quorum_within_a_period_and_are_rate_limited(
        asks in proptest::collection::vec((0u64..50, 0u16..5, 0u32..6), 1..400),
    ) {
        let mut f = forcing();
        let mut now = 0u64;
        // client -> (order replica -> time of its last ask since the last force)
        let mut seen: std::collections::HashMap<u32, std::collections::HashMap<u16, u64>> =
            Default::default();
        let mut last_force: std::collections::HashMap<u32, u64> = Default::default();
        for (dt, o, c) in asks {
            now += dt;
            let verdict = f.on_retransmit(now, OrderId(o), c);
            f.check_invariants();
            match verdict {
                ForceVerdict::NoSuchReplica => prop_assert!(o >= 4),
                ForceVerdict::RateLimited => {
                    prop_assert!(last_force.get(&c).is_some_and(|&t| now < t + PERIOD));
                }
                ForceVerdict::Waiting | ForceVerdict::Force => {
                    let mine = seen.entry(c).or_default();
                    mine.insert(o, now);
                    let fresh = mine.values().filter(|&&t| now < t + PERIOD).count();
                    prop_assert_eq!(verdict == ForceVerdict::Force, fresh >= 2);
                    if verdict == ForceVerdict::Force {
                        prop_assert!(last_force.get(&c).is_none_or(|&t| now >= t + PERIOD));
                        last_force.insert(c, now);
                        mine.clear();
                    }
                }
            }
        }
    }
}
