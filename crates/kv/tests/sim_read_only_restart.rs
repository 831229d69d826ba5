//! Linearizability of read-only requests, read-only after restart: seed 39 (u=1, r=0) restarts
//! every execution replica at 4.09 s while the order stage is cut off, and a client then reads
//! `k0` on the read-only path. Without the read-only gate (sabotage `stale-read-only`) all three
//! replicas answer from their checkpoint, the client accepts the old value, and the
//! linearizability checker reports it; with the gate the seed passes.
//!
//! One test function: the sabotage switch is process-wide.

mod sim_support;

const SEED: u64 = 39;

#[test]
fn read_only_after_restart_seed_passes_and_catches_the_sabotage() {
    sim_support::assert_seeds_pass(1, 0, [SEED]);
    #[cfg(feature = "sabotage")]
    {
        use plumb_sim::sabotage::{by_name, set};
        use plumb_sim::SimOptions;
        use sim_support::run_seed;
        set(by_name("stale-read-only"));
        let report = run_seed(&SimOptions::new(SEED, 1, 0));
        set(None);
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.to_string().contains("linearizab")),
            "stale-read-only not caught by seed {SEED}: {:?}",
            report
                .violations
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
        );
    }
}
