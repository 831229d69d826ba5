//! The `sabotage` feature breaks the ledger on purpose: a transfer of a multiple of 37 credits
//! the payee without debiting the payer. Every replica does the same (the bug is deterministic),
//! so agreement, the reference replay and the replicas' digests all agree; only the ledger's
//! own invariant can catch it, and it must.
//!
//! `cargo test --release -p plumb-bank --features sabotage --test sabotage`
#![cfg(feature = "sabotage")]

use plumb_bank::sim::BankSim;
use plumb_sim::{run_app_seed, SimOptions};

/// Both invariants fire: on the states (`BANK-conservation`: balances against the books) and on
/// the agreed history (`BANK-history`: balances against the acknowledged deposits and
/// withdrawals).
#[test]
fn money_created_by_a_transfer_is_caught_by_conservation() {
    let mut caught = Vec::new();
    for seed in 0..10 {
        let mut opts = SimOptions::new(seed, 1, 1);
        opts.faults = false;
        let report = run_app_seed(&BankSim, &opts);
        let fired = |name: &str| report.violations.iter().any(|v| v.property == name);
        if fired("BANK-conservation") && fired("BANK-history") {
            caught.push(seed);
        }
    }
    assert!(
        caught.len() >= 5,
        "the invariants caught the sabotage in only {caught:?} of 10 seeds"
    );
}
