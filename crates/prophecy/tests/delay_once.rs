//! End to end: a sharded sketching core in front of a modelled replica group keeps reads
//! delay-once (see `common`), across evictions, out-of-order replies, lagging replicas and
//! membership changes.

mod common;

use proptest::prelude::*;

#[test]
fn many_seeds_keep_delay_once_and_serve_fast_reads() {
    let mut fast = 0;
    let mut changes = 0;
    for seed in 0..300 {
        let out = common::simulate(seed, 600).unwrap_or_else(|e| panic!("{e}"));
        fast += out.fast_accepted;
        changes += out.membership_changes;
    }
    // Not vacuous: fast reads were accepted and memberships changed.
    assert!(fast > 1000, "only {fast} fast reads accepted");
    assert!(changes > 100, "only {changes} membership changes");
}

proptest! {
    #[test]
    fn any_seed_keeps_delay_once(seed in any::<u64>()) {
        let res = common::simulate(seed, 400);
        prop_assert!(res.is_ok(), "{:?}", res.err());
    }
}
