//! The ledger under every fault the simulator knows: crashes, lost and corrupted disks,
//! partitions, message loss and reordering, Byzantine replicas of every stage and a Byzantine
//! client. Every seed must keep the library's properties, linearizability against the ledger's
//! model, and the ledger's own invariants (`BANK-conservation`, `BANK-history`).
//! `plumb sim --app bank --seeds 1000` runs the long sweep.

use plumb_bank::sim::BankSim;
use plumb_sim::{run_app_seed, SimOptions};

fn assert_seeds_pass(u: u16, r: u16, seeds: std::ops::Range<u64>) {
    let completed = plumb_sim::assert_seeds_pass(&BankSim, u, r, seeds);
    assert!(completed > 0, "no operation completed");
}

#[test]
fn byzantine_u1_r1() {
    assert_seeds_pass(1, 1, 0..100);
}

#[test]
fn hybrid_u2_r1() {
    assert_seeds_pass(2, 1, 0..50);
}

/// Without faults the ledger does real work: accounts open, money moves, and the replay's
/// invariants hold.
#[test]
fn fault_free_run_moves_money() {
    let mut opts = SimOptions::new(7, 1, 1);
    opts.faults = false;
    let report = run_app_seed(&BankSim, &opts);
    assert!(report.ok(), "{:?}", report.violations);
    assert!(report.stats.completed > 20, "{:?}", report.stats);
    assert_eq!(report.app, "bank");
    assert!(report.replay_command().ends_with("--app bank"));
}

/// Same seed, same run: a failing seed of the ledger replays exactly.
#[test]
fn same_seed_same_trace() {
    let a = run_app_seed(&BankSim, &SimOptions::new(3, 1, 1));
    let b = run_app_seed(&BankSim, &SimOptions::new(3, 1, 1));
    assert_eq!(a.trace_digest, b.trace_digest);
    assert_eq!(a.violations, b.violations);
}
