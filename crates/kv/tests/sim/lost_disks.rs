//! Lost disks, by stage (issue 10): seeds of the generator in which a replica's whole store is
//! wiped and liveness is judged. They must pass with no violation: the order replica rejoins
//! by the recovery protocol without contradicting a vote, and an authentication replica that
//! lost the request bodies it held strands no request (clients' retransmissions bring them
//! back; LL1 and the latency bound would report a stuck client). Clients that lost their
//! record learn their number anew, and their abandoned operations leave no trace in what the
//! others read (CS1 per numbering epoch, LS1, LS6, linearizability, LL1).

use crate::sim_support;

use plumb_config::Faults;
use plumb_sim::faults::DiskFault;
use plumb_sim::{SimConfig, SimOptions};
use plumb_wire::Principal;
use sim_support::run_seed;

/// The first `want` liveness seeds of the u=1 r=1 generator that wipe a store of `stage`.
fn wiping(stage: fn(&Principal) -> bool, want: usize) -> Vec<u64> {
    (0..2_000u64)
        .filter(|seed| {
            let cfg = SimConfig::generate(*seed, Faults::new(1, 1), true);
            cfg.plan.liveness
                && cfg
                    .plan
                    .crashes
                    .iter()
                    .any(|c| stage(&c.node) && c.disk == DiskFault::Wipe && c.restart_at.is_some())
        })
        .take(want)
        .collect()
}

#[test]
fn ll1_an_authentication_replica_that_lost_its_disk_strands_no_request() {
    let seeds = wiping(|p| matches!(p, Principal::Auth(_)), 8);
    assert_eq!(seeds.len(), 8, "the generator wipes authentication disks");
    sim_support::assert_seeds_pass(1, 1, seeds);
}

#[test]
fn os_agreement_an_order_replica_that_lost_its_disk_rejoins() {
    let seeds = wiping(|p| matches!(p, Principal::Order(_)), 8);
    assert_eq!(seeds.len(), 8, "the generator wipes order disks");
    sim_support::assert_seeds_pass(1, 1, seeds);
}

/// Seeds of the u=1 r=1 generator in which a correct client restarts without a trustworthy
/// record (wiped, record lost, or a bit flipped in it): each must pass, and together they must
/// take the recovery path (the restarted clients learn their last number from the execution
/// replicas), or the test proves nothing.
#[test]
fn cs1_ls1_clients_that_lost_their_record_recover_without_a_wrong_answer() {
    let seeds: Vec<u64> = (0..2_000u64)
        .filter(|seed| {
            let cfg = SimConfig::generate(*seed, Faults::new(1, 1), true);
            cfg.plan.liveness
                && cfg.plan.crashes.iter().any(|c| {
                    matches!(c.node, Principal::Client(_))
                        && matches!(c.disk, DiskFault::Wipe | DiskFault::LoseRecord(_))
                })
        })
        .take(12)
        .collect();
    assert_eq!(
        seeds.len(),
        12,
        "the generator makes clients lose their record"
    );
    let mut restarts = 0;
    let mut superseded = 0;
    for &seed in &seeds {
        let report = run_seed(&SimOptions::new(seed, 1, 1));
        assert!(
            report.ok(),
            "{} -> {:?}",
            report.replay_command(),
            report.violations.first()
        );
        restarts += report.stats.client_restarts_without_record;
        superseded += report.stats.counters.get("superseded-stranded");
    }
    assert!(restarts >= 12, "{restarts} restarts without a record");
    eprintln!(
        "{restarts} client restarts without a record, {superseded} stranded requests superseded"
    );
}
