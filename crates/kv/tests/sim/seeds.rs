//! A few seeds of every standard fault model in `cargo test`; `plumb sim --seeds 1000` runs
//! the full sweep.

use crate::sim_support;

#[test]
fn crash_fault_tolerant_u1_r0() {
    sim_support::assert_seeds_pass(1, 0, 0..10);
}

#[test]
fn byzantine_fault_tolerant_u1_r1() {
    sim_support::assert_seeds_pass(1, 1, 0..10);
}

#[test]
fn hybrid_u2_r1() {
    sim_support::assert_seeds_pass(2, 1, 0..6);
}

#[test]
fn safe_but_not_live_u0_r1() {
    sim_support::assert_seeds_pass(0, 1, 0..10);
}

/// Without faults every operation completes and nothing is violated.
#[test]
fn fault_free_run_completes_every_operation() {
    let mut opts = plumb_sim::SimOptions::new(7, 1, 1);
    opts.faults = false;
    let report = sim_support::run_seed(&opts);
    assert!(report.ok(), "{:?}", report.violations);
    assert!(report.liveness_checked);
    assert!(
        report.stats.completed > 20,
        "only {} operations completed",
        report.stats.completed
    );
    assert!(report.stats.agreed_batches > 0);
}

/// A run that exceeds its event budget is stopped and reported as a message storm, with the
/// traffic named, instead of running for ever.
#[test]
fn event_budget_reports_a_storm() {
    let mut opts = plumb_sim::SimOptions::new(7, 1, 1);
    opts.faults = false;
    opts.max_events = 5_000;
    let report = sim_support::run_seed(&opts);
    let storm = report
        .violations
        .iter()
        .find(|v| v.property == "message-storm");
    let storm = storm.unwrap_or_else(|| panic!("no storm reported: {:?}", report.violations));
    assert!(storm.detail.contains(" from "), "{}", storm.detail);
    assert!(!report.liveness_checked);
}
