//! Seeds that once failed, kept so that they keep passing: `(seed, u, r, what it found)`.
//!
//! A seed names a scenario only together with the generator in `config.rs` / `faults.rs`:
//! changing how a seed's configuration is drawn reshuffles every scenario, after which these
//! seeds still have to pass but may no longer exercise what they once found.

use crate::sim_support;

const REGRESSIONS: &[(u64, u16, u16, &str)] = &[
    (
        17,
        1,
        0,
        "exec replicas cut off while the order window filled never sent LAST-EXEC: stall",
    ),
    (
        121,
        1,
        0,
        "an exec replica far behind the stable checkpoint only repeated its CP-TOKEN",
    ),
    (
        18,
        1,
        0,
        "COMMIT echo to lagging peers ping-ponged for ever: 1.6M frames",
    ),
    (
        9,
        1,
        1,
        "one auth replica's stale pending request blocked the n_auth-u AUTH-REQ quorum",
    ),
    (
        178,
        1,
        1,
        "an order replica raced views ahead alone; the others could not form n-u",
    ),
    (
        44,
        1,
        1,
        "silent primary, forged requests and wrong checkpoints: order catch-up stalled",
    ),
    (
        25,
        1,
        1,
        "view-change storm (views 22 and 59 at once) after crashes and partitions",
    ),
    (
        64,
        0,
        1,
        "u=0: a lagging order replica needed r+1 COMMITTED answers from n-1=r peers",
    ),
    (
        859,
        1,
        1,
        "LB: catch-up deferred a tick while the lagging replica was needed; heartbeats cascaded into view changes onto a dead primary",
    ),
    (
        785,
        1,
        1,
        "LL1: a deferred FETCH-ORDER-STATE was overwritten by the same peer's FETCH-COMMITTED",
    ),
    (
        902,
        2,
        1,
        "LS4: a request pre-prepared at 93 in view 5, proposed afresh at 92 in view 6, chosen again at 93 in view 7: executed twice",
    ),
    (
        271,
        2,
        1,
        "LB: with batches of one request, the burst a new primary re-proposes after a view change looked unfair to some backup every time (requests held before the view counted as passed over): views churned for 10 s",
    ),
    (
        153,
        1,
        0,
        "LS4 (checker): one NEW-VIEW carried both copies of a request (proposed at 201 in view 42, afresh at 199 in view 43), so both committed in view 44; the exemption wanted different views",
    ),
    (
        399,
        2,
        1,
        "LS4 (checker): a replica that caught up from a checkpoint reported its commits in view 0, the view it was in; the checker took that for a commit in view 0 and saw the slot chosen in two views",
    ),
    (
        483,
        1,
        0,
        "LL1: an exec replica with objects restarted holding only its newest checkpoint, so a lagging peer asked it forever for the order stage's stable one while the third was down: the order window filled and stayed full",
    ),
    (
        942,
        1,
        0,
        "LL1: a client whose record sat beside a damaged span learned its number but kept the record's higher one, one above a request that never reached a quorum: a gap the order stage refused for good",
    ),
    (
        33,
        1,
        0,
        "OS-recovering-vote (simulator): actions released by a completed sync were held again behind a sync asked for since, so a VIEW-CHANGE left before the Rejoined it followed",
    ),
    (
        285,
        1,
        1,
        "LS1 (simulator): a client that crashed before its new request's record was synced resent the previous one on restart, and the workload took that for the new operation",
    ),
    (
        737,
        1,
        1,
        "LL1: a Byzantine client superseded one request number twice; auth replicas kept only the newest superseded body, then filed only the pending one when the number was ordered, so the ordered body could not be fetched and execution stalled for every client",
    ),
    (
        8575,
        1,
        1,
        "linearizability: a client that lost its record learned a number from two execution replicas that had just restarted, reused its previous life's number for the very same GET, and accepted that life's result from before a SET that had completed; requests now carry the client's life",
    ),
    (
        2796,
        1,
        1,
        "LL1: o3 came back behind a checkpoint o0, o1 and o2 had made stable, then o2 died for good; o3 took a checkpoint only on n - u votes and two could come, so the cluster that needed its votes stalled (the scenario no longer arises at this seed since the workload changed: crates/order/tests/cluster.rs, a_lagging_replica_the_quorum_needs_catches_up_on_r_plus_one_checkpoint_votes, replays it)",
    ),
];

#[test]
fn regression_seeds_pass() {
    // Found before tentative agreement existed: run as found (docs/protocol.md).
    let runs = REGRESSIONS
        .iter()
        .map(|&(seed, u, r, _found)| plumb_sim::SimOptions {
            tentative: Some(false),
            ..plumb_sim::SimOptions::new(seed, u, r)
        });
    sim_support::assert_runs_pass(runs);
}

/// Seeds of the key-value store with reads through a Prophecy sketcher (`--sketcher`), judged
/// delay-once linearizable.
const SKETCHER_REGRESSIONS: &[(u64, u16, u16, &str)] = &[(
    802,
    1,
    1,
    "delay-once (checker): under D-Prophecy a Byzantine client's ordered GET became the answer replicas vouched for, and a correct client's fast read returned it; the checked history left faulty clients' ordered reads out, so the latest read it knew was older",
)];

#[test]
fn sketcher_regression_seeds_pass() {
    for &(seed, u, r, found) in SKETCHER_REGRESSIONS {
        let opts = plumb_sim::SimOptions {
            sketcher: true,
            tentative: Some(false),
            ..plumb_sim::SimOptions::new(seed, u, r)
        };
        let report = sim_support::run_seed(&opts);
        assert!(
            report.ok(),
            "{} ({found}): {:?} {:?}",
            report.replay_command(),
            report.violations,
            report.undecided
        );
    }
}
