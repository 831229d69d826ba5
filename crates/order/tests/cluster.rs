//! Order replicas in a tiny deterministic network, with auth and execution replicas played by
//! the test: agreement, checkpoints, view change and catch-up, checked by property name.

mod harness;

use harness::Harness;
use plumb_core::{Event, Stage};
use plumb_wire::{ExecId, Message, OrderId, Principal, Seq, View};

#[test]
fn ol1_requests_are_ordered_and_sent_to_execution() {
    let mut h = Harness::new(1, 1, 8);
    for c in 0..4 {
        h.request(c, 1, b"op");
    }
    h.advance(50_000);
    let total: usize = h.exec_seen.values().map(|b| b.requests.len()).sum();
    assert_eq!(total, 4, "all four requests ordered: {:?}", h.exec_seen);
    for seq in h.exec_seen.keys() {
        assert!(
            h.exec_learned(*seq).is_some(),
            "batch {seq} reaches r+1 NextBatch"
        );
    }
    for i in 0..4 {
        assert_eq!(
            h.replica(OrderId(i)).last_committed(),
            *h.exec_seen.keys().last().unwrap()
        );
    }
}

/// An AUTH-REQS is judged request by request, as AUTH-REQs: a wrong MAC on one entry costs that
/// entry alone, and the others are ordered. One longer than `AUTH_REQS_MAX` is dropped whole.
#[test]
fn auth_reqs_are_judged_one_request_at_a_time_and_bounded() {
    let mut h = Harness::new(1, 1, 8);
    let ops: Vec<(u32, u64, &[u8])> = (0..4).map(|c| (c, 1, &b"op"[..])).collect();
    h.requests_bundled(&ops, Some(2));
    h.advance(50_000);
    let ordered: Vec<u32> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|r| r.client))
        .collect();
    let mut sorted = ordered.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [0, 1, 3],
        "every entry but the one with the bad MAC: {ordered:?}"
    );
    for i in 0..4 {
        let drops = h
            .replica(OrderId(i))
            .counters()
            .drops(plumb_core::DropReason::BadAuthenticator);
        assert_eq!(drops, 4, "o{i}: one per auth replica's bad entry");
    }

    let mut h = Harness::new(1, 1, 8);
    let many: Vec<(u32, u64, &[u8])> = (0..=plumb_wire::AUTH_REQS_MAX as u32)
        .map(|c| (c, 1, &b"op"[..]))
        .collect();
    h.requests_bundled(&many, None);
    h.advance(50_000);
    assert!(
        h.exec_seen.is_empty(),
        "nothing ordered from an oversized AUTH-REQS"
    );
    assert_eq!(
        h.replica(OrderId(0))
            .counters()
            .drops(plumb_core::DropReason::AuthReqsTooMany),
        4,
        "one per auth replica"
    );
}

#[test]
fn with_tentative_agreement_every_replica_sends_each_batch_it_prepared_tentatively_and_once() {
    let mut h = Harness::with_config(1, 1, 8, |c| c.tentative_agreement = true);
    for c in 0..4 {
        h.request(c, 1, b"op");
    }
    // The harness checks each TENTATIVE-BATCH leaves after its slot's sync.
    h.advance(50_000);
    assert!(!h.committed.is_empty());
    for (seq, digest) in &h.committed {
        let senders = h
            .tentatives
            .iter()
            .filter(|((_, s), (view, d))| s == seq && *view == View::ZERO && d == digest)
            .count();
        assert_eq!(
            senders, 4,
            "batch {seq}: every order replica prepared it in view 0"
        );
    }
    // Committed in the view it was sent tentatively in: not sent again.
    assert!(h.next_batches.is_empty(), "{:?}", h.next_batches);
    // Off (the default): committed NEXT-BATCHes only.
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 1, b"op");
    h.advance(50_000);
    assert!(!h.exec_seen.is_empty());
    assert!(h.tentatives.is_empty());
}

#[test]
fn os3_next_request_only_after_previous() {
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 2, b"second first");
    h.advance(50_000);
    assert!(
        h.exec_seen.is_empty(),
        "nc=2 without nc=1 must not be ordered"
    );
    h.request(0, 1, b"first");
    h.advance(50_000);
    h.request(0, 2, b"second");
    h.advance(50_000);
    let ncs: Vec<u64> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|r| r.nc.0))
        .collect();
    assert_eq!(ncs, vec![1, 2]);
}

#[test]
fn os4_checkpoints_become_stable_and_bound_the_log() {
    let mut h = Harness::new(1, 1, 4);
    let mut nc = [0u64; 8];
    for round in 0..12 {
        for c in 0..2u32 {
            nc[c as usize] += 1;
            h.request(c, nc[c as usize], format!("op{round}").as_bytes());
        }
        h.advance(20_000);
        let last = h.replica(OrderId(0)).last_committed();
        for s in (4..=last.0).step_by(4) {
            h.cp_tokens(Seq(s));
        }
        h.advance(20_000);
    }
    let last = h.replica(OrderId(0)).last_committed();
    assert!(last >= Seq(8), "progress: {last}");
    for i in 0..4 {
        let r = h.replica(OrderId(i));
        assert!(
            r.stable_checkpoint() >= last.minus(8),
            "replica {i} stable {} last {last}",
            r.stable_checkpoint()
        );
        assert!(
            r.last_committed() <= r.stable_checkpoint() + 8,
            "two-interval bound"
        );
    }
}

#[test]
fn primary_crash_view_change_keeps_committed_batches() {
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 1, b"a");
    h.advance(50_000);
    let before = h.committed.clone();
    assert_eq!(before.len(), 1);
    h.crash(OrderId(0));
    h.request(1, 1, b"b");
    h.advance(2_000_000);
    assert!(h.replica(OrderId(1)).view() >= View(1), "view changed");
    let ncs: Vec<(u32, u64)> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|r| (r.client, r.nc.0)))
        .collect();
    assert!(
        ncs.contains(&(1, 1)),
        "request ordered in the new view: {ncs:?}"
    );
    for (s, d) in before {
        assert_eq!(h.committed[&s], d);
    }
}

/// Ahead-of-disk PRE-PREPAREs: the first of a view waits for its sync like any message; once
/// one sent that way prepared, the view's record is durable and the next go unsynced. Backups
/// never send ahead of their disk.
#[test]
fn pre_prepares_go_ahead_of_the_disk_once_one_behind_it_prepared() {
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 1, b"a");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 1);
    assert_eq!(h.unsynced, vec![0; 4], "the first waits for its sync");
    h.request(0, 2, b"b");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 2);
    assert_eq!(
        h.unsynced,
        vec![3, 0, 0, 0],
        "the second goes to the 3 backups at once"
    );
}

/// A primary that restarts in its view may have sent PRE-PREPAREs ahead of its disk and lost
/// them: it proposes nothing more in that view (never a second batch for a slot: OS-vote-
/// equivocation), asks for the next one, and what was committed stays.
#[test]
fn a_primary_restarted_in_its_view_proposes_nothing_more_there() {
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 1, b"a");
    h.advance(50_000);
    h.request(0, 2, b"b");
    h.advance(50_000);
    let before = h.committed.clone();
    assert_eq!(before.len(), 2);
    h.crash(OrderId(0));
    h.restart(OrderId(0));
    assert_eq!(
        h.replica(OrderId(0)).view(),
        View(0),
        "it resumes in its view"
    );
    assert_eq!(h.replica(OrderId(0)).counters().get("suspect-restarted"), 1);
    let sent_before = h.unsynced[0];
    h.request(1, 1, b"c");
    h.advance(2_000_000);
    assert_eq!(h.unsynced[0], sent_before, "no pre-prepare in view 0 again");
    assert!(h.replica(OrderId(1)).view() >= View(1), "the view changed");
    assert_eq!(
        h.replica(OrderId(0))
            .counters()
            .get("view-change-restarted"),
        1
    );
    let ncs: Vec<(u32, u64)> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|r| (r.client, r.nc.0)))
        .collect();
    assert!(ncs.contains(&(1, 1)), "ordered in the new view: {ncs:?}");
    for (s, d) in before {
        assert_eq!(h.committed[&s], d);
    }
}

/// The view change must not lose sight of a batch whose primary forgot it. The primary sends
/// slot 2's PRE-PREPARE ahead of its disk; it reaches replicas 1 and 3, not 2; both PREPARE;
/// the primary crashes before its record is synced (nothing it said after the PRE-PREPARE
/// leaves, the record is lost) and replica 3, the faulty one, says nothing more. When the PRE-PREPARE
/// counted as the primary's vote, replica 1 prepared the batch on {0, 1, 3} and reported it in
/// its VIEW-CHANGE; with 0 and 2 reporting nothing, the choice found neither r+1 replicas
/// vouching for the batch nor n-u reporting no prepared batch, and the view change waited for
/// replica 3 for ever (LL1). Only votes from replicas that hold the batch on disk count now.
#[test]
fn a_batch_its_primary_forgot_does_not_stall_the_view_change() {
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 1, b"a");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 1);
    h.drop_to.push((OrderId(2), "pre-prepare"));
    h.drop_from.push((OrderId(0), "prepare"));
    h.drop_from.push((OrderId(0), "commit"));
    h.drop_from.push((OrderId(0), "next-batch"));
    h.request(0, 2, b"b");
    h.advance(1_000);
    assert_eq!(h.unsynced[0], 3, "slot 2 went ahead of the primary's disk");
    assert_eq!(
        h.replica(OrderId(1)).last_committed(),
        Seq(1),
        "slot 2 did not commit"
    );
    h.crash(OrderId(3));
    h.crash(OrderId(0));
    h.disks[0].remove(&format!("order/slot/{:020}", 2));
    h.drop_to.clear();
    h.drop_from.clear();
    h.restart(OrderId(0));
    h.request(1, 1, b"c");
    h.advance(5_000_000);
    assert!(h.replica(OrderId(1)).view() >= View(1), "the view changed");
    let ncs: Vec<(u32, u64)> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|r| (r.client, r.nc.0)))
        .collect();
    assert!(
        ncs.contains(&(0, 2)) && ncs.contains(&(1, 1)),
        "ordered after the view change: {ncs:?} (replica 1 in view {}, active {})",
        h.replica(OrderId(1)).view(),
        h.replica(OrderId(1)).is_view_active()
    );
}

#[test]
fn restarted_replica_catches_up() {
    let mut h = Harness::new(1, 1, 4);
    h.crash(OrderId(3));
    let mut nc = 0;
    for _ in 0..20 {
        nc += 1;
        h.request(0, nc, b"x");
        h.advance(20_000);
        let last = h.replica(OrderId(0)).last_committed();
        for s in (4..=last.0).step_by(4) {
            h.cp_tokens(Seq(s));
        }
        h.advance(20_000);
    }
    let target = h.replica(OrderId(0)).last_committed();
    h.restart(OrderId(3));
    h.advance(1_000_000);
    let r = h.replica(OrderId(3));
    assert_eq!(
        r.last_committed(),
        target,
        "lagging replica caught up (stable {}, counters {:?})",
        r.stable_checkpoint(),
        r.counters().iter().collect::<Vec<_>>()
    );
}

#[test]
fn partitioned_primary_is_replaced_and_rejoins() {
    let mut h = Harness::new(1, 1, 8);
    h.cut[0] = true;
    h.request(0, 1, b"a");
    h.advance(2_000_000);
    assert!(h.committed.len() == 1);
    h.cut[0] = false;
    h.request(0, 2, b"b");
    h.advance(2_000_000);
    assert_eq!(h.committed.len(), 2);
    h.advance(2_000_000);
    assert_eq!(
        h.replica(OrderId(0)).view(),
        h.replica(OrderId(1)).view(),
        "old primary learned the new view"
    );
}

/// Found with real processes: a replica restarted behind asked for the order state of a stable
/// checkpoint that its peers discarded (they moved on to a newer one) before answering, and kept
/// asking for that one forever. It must chase the newest stable checkpoint instead.
#[test]
fn restarted_replica_catches_up_when_the_checkpoint_it_fetches_is_discarded() {
    let mut h = Harness::new(1, 1, 4);
    let mut nc = 0;
    let mut load = |h: &mut Harness, rounds: usize| {
        for _ in 0..rounds {
            nc += 1;
            h.request(0, nc, b"x");
            h.advance(20_000);
            let last = h.replica(OrderId(0)).last_committed();
            for s in (4..=last.0).step_by(4) {
                h.cp_tokens(Seq(s));
            }
            h.advance(20_000);
        }
    };
    h.crash(OrderId(3));
    load(&mut h, 12);
    // Restart while no order state gets through: the replica learns of a stable checkpoint and
    // asks for it, and its peers move two checkpoints further before it is answered.
    h.drop_kinds = vec!["order-state"];
    h.restart(OrderId(3));
    load(&mut h, 12);
    h.drop_kinds.clear();
    load(&mut h, 2);
    h.advance(1_000_000);
    let target = h.replica(OrderId(0)).last_committed();
    let r = h.replica(OrderId(3));
    assert_eq!(
        r.last_committed(),
        target,
        "lagging replica caught up (stable {}, counters {:?})",
        r.stable_checkpoint(),
        r.counters().iter().collect::<Vec<_>>()
    );
}

/// A replica down for longer than the checkpoint-vote window (64 intervals) still learns of its
/// peers' stable checkpoint and catches up.
#[test]
fn replica_down_for_longer_than_the_vote_window_catches_up() {
    let mut h = Harness::new(1, 1, 4);
    h.crash(OrderId(3));
    let mut nc = 0;
    while h.replica(OrderId(0)).stable_checkpoint() < Seq(4 * 70) {
        nc += 1;
        h.request(0, nc, b"x");
        h.advance(20_000);
        let last = h.replica(OrderId(0)).last_committed();
        let newest = last.round_down(4);
        for s in [newest.minus(4), newest] {
            if s > Seq::ZERO {
                h.cp_tokens(s);
            }
        }
        h.advance(20_000);
        assert!(nc < 2_000, "the cluster stopped making checkpoints");
    }
    h.restart(OrderId(3));
    for _ in 0..3 {
        nc += 1;
        h.request(0, nc, b"x");
        h.advance(20_000);
        let last = h.replica(OrderId(0)).last_committed();
        h.cp_tokens(last.round_down(4));
        h.advance(20_000);
    }
    h.advance(1_000_000);
    let target = h.replica(OrderId(0)).last_committed();
    let r = h.replica(OrderId(3));
    assert_eq!(
        r.last_committed(),
        target,
        "lagging replica caught up (stable {}, counters {:?})",
        r.stable_checkpoint(),
        r.counters().iter().collect::<Vec<_>>()
    );
}

/// `plumb sim --seed 2796 --u 1 --r 1` (at ce99fcf): o3 came back behind a checkpoint that
/// o0, o1 and o2 had made stable, and then o2 died for good. Its peers had discarded the batches
/// it lacked and answered its fetches with their stable checkpoint, which it took only on
/// `n - u` matching votes: two could come. The cluster needed o3's votes and stalled for ever.
/// `r + 1` matching votes suffice to fetch a checkpoint it is behind (one is correct, so the
/// digest is right); once it holds the state its own vote is the `n - u`th.
#[test]
fn a_lagging_replica_the_quorum_needs_catches_up_on_r_plus_one_checkpoint_votes() {
    let mut h = Harness::new(1, 1, 4);
    // One request at a time per client, as clients send them; a round per client.
    let mut nc = [0u64; 8];
    let mut load = |h: &mut Harness, clients: std::ops::Range<u32>| {
        for c in clients {
            nc[c as usize] += 1;
            h.request(c, nc[c as usize], b"x");
            h.advance(20_000);
            let last = h.replica(OrderId(0)).last_committed();
            for s in (4..=last.0).step_by(4) {
                h.cp_tokens(Seq(s));
            }
            h.advance(20_000);
        }
    };
    h.crash(OrderId(3));
    for _ in 0..3 {
        load(&mut h, 0..4);
    }
    let stable = h.replica(OrderId(0)).stable_checkpoint();
    assert!(
        stable >= Seq(8),
        "the three live replicas made checkpoints stable"
    );
    h.crash(OrderId(2));
    h.restart(OrderId(3));
    let before = h.replica(OrderId(0)).last_committed();
    load(&mut h, 4..8);
    h.advance(1_000_000);
    let after = h.replica(OrderId(0)).last_committed();
    let r = h.replica(OrderId(3));
    assert!(
        after >= before + 4,
        "the cluster orders again with o3's votes ({before} committed before, {after} after; o3 stable {}, committed {}, counters {:?})",
        r.stable_checkpoint(),
        r.last_committed(),
        r.counters().iter().collect::<Vec<_>>()
    );
    assert_eq!(r.last_committed(), after, "o3 caught up");
}

/// Seed 004 §3.4.3 heartbeat: a primary that holds a request (every auth replica vouched for
/// it) but sends no PRE-PREPARE is replaced after a heartbeat, long before the progress timeout.
#[test]
fn a_primary_that_sends_no_pre_prepare_is_replaced_after_a_heartbeat() {
    let mut h = Harness::new(1, 1, 8);
    let heartbeat = h.cfg.heartbeat_us;
    assert!(heartbeat * 2 < h.cfg.view_change_timeout_us);
    h.drop_kinds = vec!["pre-prepare"];
    h.request(0, 1, b"a");
    h.advance(heartbeat + heartbeat / 2);
    // Enough backups time out on the heartbeat for the rest to join them.
    let fired = (1..4)
        .filter(|b| {
            h.replica(OrderId(*b))
                .counters()
                .get("view-change-heartbeat")
                == 1
        })
        .count();
    assert!(fired >= h.q().view_change_join(), "{fired} heartbeats");
    for b in 1..4 {
        let r = h.replica(OrderId(b));
        assert_eq!(
            r.counters().get("view-change-progress-timeout"),
            0,
            "backup {b}"
        );
        assert!(r.view() >= View(1), "backup {b} left view 0");
    }
    // The new primary orders it (its NEW-VIEW and PRE-PREPAREs get through again).
    h.drop_kinds.clear();
    h.advance(1_000_000);
    assert_eq!(h.committed.len(), 1);
}

/// The heartbeat suspects only a primary that could propose: one that filled its window waits
/// for a stable checkpoint, which waits on execution. Under load on two cores such waits made
/// 4 to 20 false heartbeat suspicions per fault-free 15 s run.
#[test]
fn a_primary_whose_window_is_full_is_not_suspected_by_the_heartbeat() {
    let mut h = Harness::new(1, 1, 2);
    let heartbeat = h.cfg.heartbeat_us;
    for c in 0..4 {
        h.request(c, 1, b"fills the window");
        h.advance(10_000);
    }
    assert_eq!(
        h.replica(OrderId(0)).last_committed(),
        Seq(4),
        "window top: 0 + 2 * 2"
    );
    h.request(4, 1, b"waits for the window");
    h.advance(3 * heartbeat);
    assert_eq!(h.committed.len(), 4);
    for b in 1..4 {
        let r = h.replica(OrderId(b));
        assert_eq!(r.counters().get("suspect-heartbeat"), 0, "backup {b}");
        assert!(r.counters().get("heartbeat-window-full") >= 1, "backup {b}");
        assert_eq!(r.view(), View(0));
    }
    // Execution catches up: the window moves and the request is ordered in the same view.
    h.cp_tokens(Seq(2));
    h.advance(10_000);
    assert_eq!(h.committed.len(), 5);
    for b in 0..4 {
        assert_eq!(h.replica(OrderId(b)).view(), View(0));
        assert_eq!(h.replica(OrderId(b)).counters().get("suspect-heartbeat"), 0);
    }
}

/// A view change waiting for a NEW-VIEW from a primary that turns out dead gives up once the
/// primary has been silent for five heartbeats while the others spoke, not after the whole
/// view-change timeout (the nemesis harness: a node paused as the view moved onto it left
/// 1.1 s without a successful operation).
#[test]
fn a_view_change_to_a_dead_primary_is_given_up_before_its_timeout() {
    let mut h = Harness::with_config(1, 1, 8, |c| c.view_change_timeout_us = 1_000_000);
    let heartbeat = h.cfg.heartbeat_us;
    let timeout = h.cfg.view_change_timeout_us;
    h.request(0, 1, b"a");
    h.advance(20_000);
    assert_eq!(h.committed.len(), 1);
    // o1, the primary of view 1, dies just as o0 stops proposing: the backups go to view 1
    // before o1 has been silent long enough to be skipped.
    h.crash(OrderId(1));
    h.drop_kinds = vec!["pre-prepare"];
    h.request(1, 1, b"b");
    h.advance(heartbeat * 2);
    h.drop_kinds.clear();
    for b in [2, 3] {
        assert_eq!(
            h.replica(OrderId(b)).view(),
            View(1),
            "backup {b} waits for o1's NEW-VIEW"
        );
    }
    h.advance(8 * heartbeat);
    assert!(8 * heartbeat < timeout / 2);
    for b in [0, 2, 3] {
        let r = h.replica(OrderId(b));
        assert!(
            r.view() >= View(2),
            "replica {b} still in view {}",
            r.view()
        );
    }
    assert!([0, 2, 3].iter().any(|b| h
        .replica(OrderId(*b))
        .counters()
        .get("view-change-primary-dead")
        >= 1));
    h.advance(20_000);
    assert_eq!(h.committed.len(), 2);
}

/// Agreement liveness without timers: a PREPARE that overtakes its PRE-PREPARE (it is small,
/// and comes on another connection) still counts. With one replica down every live vote is
/// needed, and a wiped early vote stalled the slot until the 200 ms resend (found by the
/// nemesis harness: 300 ms stalls every few seconds with one node paused).
#[test]
fn a_prepare_that_arrives_before_its_pre_prepare_counts() {
    let mut h = Harness::new(1, 1, 8);
    h.crash(OrderId(3));
    h.hold_to = vec![(OrderId(1), "pre-prepare")];
    h.request(0, 1, b"a");
    h.deliver_all();
    assert!(!h.held.is_empty(), "the PRE-PREPARE to o1 was held back");
    assert!(h.committed.is_empty());
    // No time passes: no tick, no resend. o1 accepts, counts o2's early PREPARE and commits.
    h.release_held();
    assert_eq!(h.committed.len(), 1);
    assert_eq!(h.replica(OrderId(1)).last_committed(), Seq(1));
}

/// Suspecting is a vote, not a departure (suspicion.rs): one backup that misses the
/// PRE-PREPAREs suspects the primary but stays in the view, so the others keep their full
/// quorum; a second voice takes it out.
#[test]
fn a_lone_suspicion_keeps_the_backup_in_the_view_and_a_second_one_changes_it() {
    let mut h = Harness::new(1, 1, 8);
    assert_eq!(h.q().view_change_join(), 2);
    let heartbeat = h.cfg.heartbeat_us;
    // o1 hears nothing of the agreement (so it cannot catch up on its own either).
    h.drop_to = ["pre-prepare", "prepare", "commit", "committed"]
        .into_iter()
        .map(|k| (OrderId(1), k))
        .collect();
    h.request(0, 1, b"a");
    h.advance(heartbeat * 3);
    let r1 = h.replica(OrderId(1));
    assert_eq!(
        r1.counters().get("suspect-heartbeat"),
        1,
        "{:?} committed {}",
        r1.counters().iter().collect::<Vec<_>>(),
        r1.last_committed()
    );
    assert_eq!(r1.counters().get("view-change-heartbeat"), 0);
    assert_eq!(
        r1.view(),
        View(0),
        "a lone suspicion leaves the view in place"
    );
    // The others ordered it without o1's PREPARE (n - u = 3 of them).
    assert_eq!(h.committed.len(), 1);
    for b in [2, 3] {
        assert_eq!(h.replica(OrderId(b)).view(), View(0), "backup {b}");
    }
    // A second replica suspecting view 0 takes o1 out of it (min(u,r) + 1 = 2 voices).
    h.deliver_to(OrderId(1), &Message::Suspect { view: View(0) }, OrderId(2));
    assert_eq!(h.replica(OrderId(1)).view(), View(1));
    assert_eq!(
        h.replica(OrderId(1))
            .counters()
            .get("view-change-heartbeat"),
        1
    );
}

/// Seed 004 §3.4.3 fairness: a primary that never proposes client 0's request while ordering
/// client 1's is declared unfair once `unfair_orders` of client 1's requests were ordered
/// meanwhile, and the next primary orders the request. Requests of as many different clients
/// are not enough: arrival orders differ between replicas by a few milliseconds.
#[test]
fn a_primary_that_passes_over_a_client_is_replaced_and_the_client_served() {
    let mut h = Harness::new(1, 1, 8);
    let starved = |h: &mut Harness| {
        let ring = &h.rings[&Principal::Order(OrderId(0))];
        h.queue.retain(|(to, frame)| {
            *to != Principal::Order(OrderId(0))
                || !matches!(ring.open(frame), Ok((_, Message::AuthReq { core, .. })) if core.client == 0)
        });
    };
    h.request(0, 1, b"victim");
    starved(&mut h);
    h.advance(1_000);
    for c in 2..10 {
        h.request(c, 1, b"another client");
        h.advance(5_000);
        assert_eq!(h.replica(OrderId(1)).view(), View(0), "client {c}");
    }
    let k = h.cfg.unfair_orders as u64;
    for nc in 1..k {
        h.request(1, nc, b"other");
        h.advance(5_000);
        assert_eq!(
            h.replica(OrderId(1)).view(),
            View(0),
            "request {nc} of client 1"
        );
    }
    h.request(1, k, b"last");
    h.advance(5_000);
    for b in 1..4 {
        assert!(
            h.replica(OrderId(b)).counters().get("view-change-unfair") == 1,
            "backup {b}: {:?}",
            h.replica(OrderId(b)).counters().iter().collect::<Vec<_>>()
        );
    }
    h.advance(1_000_000);
    let victim_ordered = h
        .exec_seen
        .values()
        .any(|b| b.requests.iter().any(|r| r.client == 0));
    assert!(victim_ordered, "{:?}", h.exec_seen);
    assert!(h.replica(OrderId(1)).view() >= View(1));
}

/// Seed 004 §3.4.3 fairness without a fault: on two shared cores a backup's links lag by a
/// millisecond or two, so it can see client 1's two requests arrive and get ordered within
/// 1.5 ms while client 0's, which the primary had not received yet, waited there 1.5 ms
/// (a false `unfair` view change in a fault-free u1r0 run with 16 clients). A request counts
/// as passed over only once it was held for a heartbeat.
#[test]
fn a_request_held_for_less_than_a_heartbeat_is_not_passed_over() {
    let mut h = Harness::new(1, 1, 8);
    let late_to_primary = |h: &mut Harness| {
        let ring = &h.rings[&Principal::Order(OrderId(0))];
        h.queue.retain(|(to, frame)| {
            *to != Principal::Order(OrderId(0))
                || !matches!(ring.open(frame), Ok((_, Message::AuthReq { core, .. })) if core.client == 0)
        });
    };
    h.request(0, 1, b"reaches the primary late");
    late_to_primary(&mut h);
    h.advance(500);
    let k = h.cfg.unfair_orders as u64;
    for nc in 1..=k {
        h.request(1, nc, b"ordered meanwhile");
        h.advance(500);
    }
    assert!(h.exec_seen.len() as u64 >= k, "{:?}", h.exec_seen.keys());
    for b in 1..4 {
        let counters = h.replica(OrderId(b)).counters();
        assert_eq!(
            counters.get("suspect-unfair"),
            0,
            "backup {b}: {:?}",
            counters.iter().collect::<Vec<_>>()
        );
    }
}

/// Seed 004 §3.4.3 fairness without a fault: a backup whose PRE-PREPAREs from the primary lag
/// behind the AUTH-REQs takes two orders of client 1, which the primary made a round trip
/// apart, in one burst after client 0's request was held here. The primary could not have had
/// client 0's request when it ordered those (they reached this backup before it), so the
/// backup does not call it unfair. (Counting orders by when their PRE-PREPAREs arrived did:
/// 4 false `unfair` view changes in a fault-free 12 s u1r0 run with 64 clients.)
#[test]
fn a_backup_whose_pre_prepares_lag_does_not_call_the_primary_unfair() {
    let mut h = Harness::new(1, 1, 8);
    h.hold_to = vec![(OrderId(1), "pre-prepare")];
    let k = h.cfg.unfair_orders as u64;
    for nc in 1..=k {
        h.request(1, nc, b"ordered while the backup lags");
        h.advance(5_000);
    }
    assert!(h.exec_seen.len() as u64 >= k, "{:?}", h.exec_seen.keys());
    h.request(0, 1, b"held at the backup before the burst");
    h.advance(1_000);
    h.release_held();
    h.advance(5_000);
    let counters = h.replica(OrderId(1)).counters();
    assert_eq!(
        counters.get("suspect-unfair"),
        0,
        "{:?}",
        counters.iter().collect::<Vec<_>>()
    );
    assert_eq!(h.replica(OrderId(1)).view(), View(0));
}

/// Seed 004 §3.4.2 idle check: while a request waits for ordering and ordering progresses, a
/// replica leaves a peer's catch-up request for later; once it is idle (here: nothing ordered
/// for half a heartbeat) it answers.
#[test]
fn catch_up_requests_wait_until_the_replica_is_idle() {
    let mut h = Harness::new(1, 1, 8);
    h.request(0, 1, b"a");
    h.deliver_all();
    assert_eq!(h.committed.len(), 1, "ordered just now: progress");
    // Client 1's request is pending at o1; its pre-prepare never arrives.
    h.drop_kinds = vec!["pre-prepare"];
    h.request(1, 1, b"b");
    h.deliver_all();
    let o3 = Principal::Order(OrderId(3));
    let ask = h.rings[&o3]
        .seal(
            Principal::Order(OrderId(1)),
            &Message::FetchCommitted { from: Seq(1) },
        )
        .unwrap();
    let answers = |h: &Harness| {
        h.queue
            .iter()
            .filter(|(to, f)| {
                *to == o3 && matches!(h.rings[&o3].open(f), Ok((_, Message::Committed { .. })))
            })
            .count()
    };
    h.step(OrderId(1), Event::Receive(ask));
    assert_eq!(answers(&h), 0);
    assert_eq!(h.replica(OrderId(1)).counters().get("catch-up-deferred"), 1);
    // Half a heartbeat later nothing was ordered: idle, so it answers.
    let due = h.timers[1][&4];
    assert_eq!(due, h.now + h.cfg.heartbeat_us / 2);
    h.now = due;
    h.timers[1].remove(&4);
    h.step(OrderId(1), Event::Timer(plumb_core::TimerId(4)));
    assert_eq!(answers(&h), 1);
}

/// docs/divergence.md: an execution replica whose checkpoint token differs from the one
/// `max(u,r) + 1` replicas agree on is told to load the agreed checkpoint, by every order
/// replica, once per checkpoint (again only after a catch-up period); a late divergent token
/// after the checkpoint was learned is caught too.
#[test]
fn an_execution_replica_whose_checkpoint_differs_is_told_to_load_the_agreed_one() {
    use plumb_crypto::Digest;
    let mut h = Harness::new(1, 1, 4);
    for nc in 1..=6u64 {
        h.request(0, nc, format!("op{nc}").as_bytes());
        h.advance(20_000);
    }
    assert!(h.replica(OrderId(0)).last_committed() >= Seq(4));
    let agreed = Digest::of(&4u64.to_le_bytes());
    let wrong = Digest::of(b"a state no correct replica holds");
    // Exec 2 diverged before the checkpoint is learned, exec 1's token comes late.
    h.cp_token_from(ExecId(2), Seq(4), wrong);
    h.cp_token_from(ExecId(0), Seq(4), agreed);
    h.advance(1_000);
    assert!(h.load_cps.is_empty(), "one token is no agreement yet");
    h.cp_token_from(ExecId(1), Seq(4), agreed);
    h.advance(1_000);
    let order = h.q().order;
    let told: Vec<(ExecId, OrderId, Seq, Digest)> = OrderId::all(order)
        .map(|o| (ExecId(2), o, Seq(4), agreed))
        .collect();
    let mut got = h.load_cps.clone();
    got.sort();
    assert_eq!(
        got, told,
        "every order replica names the agreed checkpoint to exec 2"
    );
    for o in OrderId::all(order) {
        assert_eq!(h.replica(o).counters().get("exec-checkpoint-differs"), 1);
    }
    // Its token repeated (an idle replica repeats its newest) gets no answer within a period...
    h.load_cps.clear();
    h.cp_token_from(ExecId(2), Seq(4), wrong);
    h.advance(1_000);
    assert!(h.load_cps.is_empty());
    // ...and one after it (the first LOAD-CP may have been lost), reported once still.
    h.advance(h.cfg.catch_up_us);
    h.cp_token_from(ExecId(2), Seq(4), wrong);
    h.advance(1_000);
    assert_eq!(h.load_cps.len(), order);
    assert_eq!(
        h.replica(OrderId(0))
            .counters()
            .get("exec-checkpoint-differs"),
        1
    );
    // The agreeing replicas are never told anything.
    h.load_cps.clear();
    h.cp_token_from(ExecId(0), Seq(4), agreed);
    h.advance(1_000);
    assert!(h.load_cps.is_empty());
}

/// One round of closed-loop load: `clients` send their request `nc`, the primary's
/// PRE-PREPAREs reach the backups `wait` later, and execution takes every checkpoint.
fn load_round(h: &mut Harness, clients: u32, nc: u64, wait: u64) {
    let primary = h.replica(OrderId(0)).view().primary(h.q().order);
    h.hold_to = OrderId::all(h.q().order)
        .filter(|b| *b != primary)
        .map(|b| (b, "pre-prepare"))
        .collect();
    for c in 0..clients {
        h.request(c, nc, b"op");
    }
    h.advance(wait);
    h.release_held();
    h.advance(100);
    h.tokens_through_committed();
    h.advance(100);
}

/// A rate below the bar is not the primary's doing when requests waited no longer than
/// usual for their PRE-PREPAREs: fewer clients, not a slower primary (a fault-free 5-minute
/// run on two cores made 42 `slow-primary` suspicions from such windows). A primary that does
/// hold requests back is still replaced.
#[test]
fn a_rate_below_the_bar_counts_against_the_primary_only_if_requests_waited_for_it() {
    let mut h = Harness::with_config(1, 1, 8, |c| {
        c.throughput_window_us = 20_000;
        c.throughput_grace_us = 100_000;
    });
    // View 0: 8 clients, each request ordered 1 ms after it is pending. After the grace
    // period, with no past view to compare with, the backups change view (no-reference).
    let mut nc = 0;
    while h.replica(OrderId(2)).view() == View(0) {
        nc += 1;
        assert!(nc < 1_000, "no view change for a reference");
        load_round(&mut h, 8, nc, 1_000);
    }
    let view = h.replica(OrderId(2)).view();
    let committed = h.committed.len();
    // Two clients, ordered as promptly: a quarter of the rate, yet the primary kept up.
    for _ in 0..300 {
        nc += 1;
        load_round(&mut h, 2, nc, 1_000);
    }
    assert!(h.committed.len() > committed, "the load went on");
    for b in 0..4 {
        let r = h.replica(OrderId(b));
        assert_eq!(r.view(), view, "replica {b} changed view");
        assert_eq!(r.counters().get("suspect-slow-primary"), 0, "replica {b}");
    }
    assert!((0..4).any(|b| h
        .replica(OrderId(b))
        .counters()
        .get("rate-below-bar-primary-kept-up")
        >= 2));
    // Now the primary holds each PRE-PREPARE back 8 ms: slow-primary.
    for _ in 0..100 {
        nc += 1;
        load_round(&mut h, 2, nc, 8_000);
        if h.replica(OrderId(2)).view() > view {
            break;
        }
    }
    assert!(
        h.replica(OrderId(2)).view() > view,
        "the slow primary was kept"
    );
    assert!((0..4).any(|b| h.replica(OrderId(b)).counters().get("suspect-slow-primary") >= 1));
}

/// Fair order for a client's next request (`Collected::vouched_order`): a client whose request
/// committed at the execution stage sends its next one while the primary has that request
/// only accepted, not committed. The primary proposes requests in the order auth replicas
/// came to vouch for them, so the later one waits behind those vouched for before it. It was
/// proposed first (it was never "pending" here, and that sorted it ahead), and a speculating
/// session's chain then ran out of its order and its replicas aborted the overtaking step.
#[test]
fn a_request_after_an_uncommitted_one_is_ordered_by_its_arrival() {
    let mut h = Harness::new(1, 1, 8);
    // The primary accepts client 0's first request and hears no COMMIT for it.
    h.hold_to = vec![(OrderId(0), "commit")];
    h.request(0, 1, b"first");
    h.deliver_all();
    assert_eq!(h.replica(OrderId(0)).last_committed(), Seq(0));
    assert!(
        h.replica(OrderId(1)).last_committed() >= Seq(1),
        "the backups commit it"
    );
    // Batch 1 is in flight at the primary, so it gathers the next batch until its timer.
    h.request(1, 1, b"earlier");
    h.deliver_all();
    h.request(0, 2, b"later");
    h.deliver_all();
    h.hold_to.clear();
    h.release_held();
    h.advance(50_000);
    let order: Vec<(u32, u64)> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|r| (r.client, r.nc.0)))
        .collect();
    assert_eq!(order, vec![(0, 1), (1, 1), (0, 2)]);
}

/// Agreed time (docs/protocol.md, "Agreed time"): a primary whose batch time is outside
/// `max_clock_skew_us` of every correct backup's clock, behind or ahead, gets nothing ordered
/// and is replaced; the next primary orders the request with its own time.
#[test]
fn a_batch_time_outside_the_skew_either_side_is_refused_and_the_primary_replaced() {
    for off in [-1_000_000i64, 1_000_000] {
        let mut h = Harness::new(1, 1, 8);
        h.advance(5_000_000);
        let skew = h.cfg.max_clock_skew_us as i64;
        assert!(off.abs() > skew);
        h.clock_offset[0] = off;
        h.request(0, 1, b"a");
        h.advance(10_000);
        assert!(
            h.committed.is_empty(),
            "offset {off}: nothing ordered at o0's time"
        );
        for b in 1..4 {
            assert_eq!(
                h.replica(OrderId(b))
                    .counters()
                    .get("batch-time-out-of-bound"),
                1,
                "o{b}"
            );
        }
        h.advance(2_000_000);
        assert_eq!(
            h.committed.len(),
            1,
            "offset {off}: ordered in a later view"
        );
        let view = h.replica(OrderId(1)).view();
        assert!(view >= View(1), "offset {off}: view {view}");
        let batch = h.exec_seen.get(&Seq(1)).expect("batch 1 reached execution");
        // Proposed by a primary whose clock is right, once the request was there.
        assert!(
            (5_000_000..=h.now).contains(&batch.time),
            "offset {off}: agreed {} by {}",
            batch.time,
            h.now
        );
    }
}

/// A correct backup whose own clock is off (or whose pre-prepare came late) does not withhold
/// its vote for good: it takes the batch once `r + 1` peers prepared it, counted so that an
/// operator sees the clock, and nobody suspects the primary.
#[test]
fn a_backup_whose_own_clock_is_off_takes_the_batch_on_r_plus_one_vouchers() {
    let mut h = Harness::new(1, 1, 8);
    h.advance(5_000_000);
    h.clock_offset[1] = -1_000_000;
    h.request(0, 1, b"a");
    h.advance(10_000);
    assert_eq!(h.committed.len(), 1);
    let r1 = h.replica(OrderId(1));
    assert_eq!(r1.counters().get("batch-time-out-of-bound"), 1);
    assert_eq!(r1.counters().get("batch-time-vouched-by-peers"), 1);
    assert_eq!(r1.last_committed(), Seq(1));
    for i in 0..4 {
        assert_eq!(
            h.replica(OrderId(i)).view(),
            View(0),
            "o{i} stays in view 0"
        );
    }
}

/// Batch reports (docs/objects.md "Batch reports"): `r + 1` matching EXEC-REPORTs make a
/// batch's report agreed on every order replica, a faulty execution replica's other report
/// is counted against it, and a report beyond the window or an oversized message is refused.
#[test]
fn exec_reports_agree_on_r_plus_one_matching_and_count_the_dissenter() {
    use plumb_crypto::Digest;
    use plumb_wire::BatchReport;
    let mut h = Harness::new(1, 1, 8);
    let report = |seq: u64, what: &[u8]| BatchReport {
        seq: Seq(seq),
        replies: Digest::of(what),
        writes: None,
        history: None,
    };
    let send = |h: &mut Harness, e: u16, reports: Vec<BatchReport>| {
        h.exec_sends(ExecId(e), &Message::ExecReport { reports });
        h.deliver_all();
    };
    send(&mut h, 2, vec![report(1, b"lie"), report(2, b"b")]);
    send(&mut h, 0, vec![report(1, b"a"), report(2, b"b")]);
    for o in 0..4 {
        let c = h.replica(OrderId(o)).counters();
        // Batch 2: exec 2 and exec 0 agree (r + 1 = 2); batch 1 not yet.
        assert_eq!(c.get("exec-report-agreed"), 1, "o{o}");
    }
    send(&mut h, 1, vec![report(1, b"a")]);
    // Far beyond the stable checkpoint (4 intervals of 8): ignored.
    send(&mut h, 1, vec![report(33, b"x")]);
    let too_many = vec![report(3, b"c"); plumb_wire::EXEC_REPORTS_MAX + 1];
    send(&mut h, 1, too_many);
    for o in 0..4 {
        let r = h.replica(OrderId(o));
        let c = r.counters();
        assert_eq!(c.get("exec-report-agreed"), 2, "o{o}");
        assert_eq!(
            c.get("exec-report-differs"),
            1,
            "o{o}: exec 2's report of batch 1"
        );
        assert_eq!(c.get("exec-report-outside-window"), 1, "o{o}");
        assert_eq!(
            c.drops(plumb_core::DropReason::ExecReportTooMany),
            1,
            "o{o}"
        );
        r.check_invariants().unwrap();
    }
}

/// A batch accepted in the view that never commits is suspected after the progress timeout,
/// though no request is pending (it left `pending` when the batch was accepted): simulator
/// seed 2192 stalled for good with clients waiting behind such batches.
#[test]
fn a_batch_accepted_and_never_committed_is_suspected() {
    let mut h = Harness::new(1, 1, 8);
    // o1 gets the PRE-PREPARE and the PREPAREs, never a COMMIT nor a commit certificate, nor
    // the request itself from the authentication replicas (so it is never pending there, as
    // the clients' next requests were not in seed 2192).
    h.drop_to = ["commit", "committed", "auth-req"]
        .into_iter()
        .map(|k| (OrderId(1), k))
        .collect();
    h.request(0, 1, b"a");
    h.advance(1_000);
    assert_eq!(h.committed.len(), 1, "the others commit it");
    let timeout = h.cfg.view_change_timeout_us;
    h.advance(timeout / 2);
    let r1 = h.replica(OrderId(1));
    assert_eq!(
        r1.counters().get("suspect-uncommitted"),
        0,
        "not before the timeout"
    );
    h.advance(timeout);
    let r1 = h.replica(OrderId(1));
    assert_eq!(
        r1.counters().get("suspect-uncommitted"),
        1,
        "{:?}",
        r1.counters().iter().collect::<Vec<_>>()
    );
    assert_eq!(r1.counters().get("suspect-heartbeat"), 0);
    assert_eq!(r1.counters().get("suspect-progress-timeout"), 0);
}

/// An execution replica told to load the stable checkpoint asks for the batches after it as
/// soon as it holds it, and gets them at once (a woken sleeper used to wait a catch-up period
/// for them: the LAST-EXEC rate limit had just answered its first ask with the LOAD-CP); the
/// same ask again within the period gets nothing more.
#[test]
fn batches_after_a_load_cp_are_sent_at_once_and_a_repeat_waits() {
    let mut h = Harness::new(1, 1, 4);
    let mut nc = 0;
    while h.replica(OrderId(0)).stable_checkpoint() < Seq(8) {
        nc += 1;
        assert!(nc < 40, "no stable checkpoint at 8");
        h.request(0, nc, format!("op{nc}").as_bytes());
        h.run_with_tokens(20_000);
    }
    // A batch after the checkpoint to send.
    for _ in 0..2 {
        nc += 1;
        h.request(0, nc, format!("op{nc}").as_bytes());
        h.advance(20_000);
    }
    let stable = h.replica(OrderId(0)).stable_checkpoint();
    assert!(h.replica(OrderId(0)).last_committed() > stable);
    let order = h.q().order;
    h.load_cps.clear();
    h.next_batches.clear();
    h.exec_sends(ExecId(2), &Message::LastExec { next: Seq(1) });
    h.advance(1_000);
    assert_eq!(
        h.load_cps.len(),
        order,
        "each order replica names the checkpoint"
    );
    assert!(h
        .load_cps
        .iter()
        .all(|(e, _, s, _)| *e == ExecId(2) && *s == stable));
    h.exec_sends(ExecId(2), &Message::LastExec { next: stable + 1 });
    h.advance(1_000);
    for o in OrderId::all(order) {
        assert!(
            h.next_batches.contains_key(&(o, stable + 1)),
            "{o:?} sent the batch after the checkpoint at once"
        );
    }
    h.next_batches.clear();
    h.exec_sends(ExecId(2), &Message::LastExec { next: stable + 1 });
    h.advance(1_000);
    assert!(
        h.next_batches.is_empty(),
        "a repeat within the period waits"
    );
}
