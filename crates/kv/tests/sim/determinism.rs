//! Same seed, same run: the event trace digest of two runs of one seed is identical, so a
//! failing seed replays exactly.

use crate::sim_support;

use plumb_sim::SimOptions;
use sim_support::run_seed;

#[test]
fn same_seed_same_trace() {
    for (seed, u, r) in [(3, 1, 1), (11, 2, 1)] {
        let a = run_seed(&SimOptions::new(seed, u, r));
        let b = run_seed(&SimOptions::new(seed, u, r));
        assert_eq!(
            a.trace_digest, b.trace_digest,
            "seed {seed} u={u} r={r} ran differently twice"
        );
        assert_eq!(a.stats.events, b.stats.events);
        assert_eq!(a.violations, b.violations);
    }
}

#[test]
fn different_seeds_differ() {
    let a = run_seed(&SimOptions::new(1, 1, 1));
    let b = run_seed(&SimOptions::new(2, 1, 1));
    assert_ne!(a.trace_digest, b.trace_digest);
}
