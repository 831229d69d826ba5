//! Order replicas that lose their records (issue 10, finding 1) and NEW-VIEWs from anyone but
//! the new primary (finding 4). Each scenario once ended with two digests committed at one
//! sequence number (OS-agreement, asserted by the harness on every commit) or with a faulty
//! backup installing its own view. `sabotage.rs` runs the same scenarios with the protections
//! switched off and checks that they fail there.

mod harness;

use harness::scenarios::*;
use harness::Harness;
use plumb_core::DropReason;
use plumb_core::Stage;
use plumb_wire::{OrderId, Seq, View};

/// Heal the cut-off replicas and run until everyone agrees: the wiped replica rejoins, the
/// request waiting meanwhile is ordered, and batch 1 is what it was.
fn heals(h: &mut Harness, wiped: u16) {
    let first = h.committed[&Seq(1)];
    assert!(
        h.replica(OrderId(wiped)).rejoining().is_some(),
        "o{wiped} stays out until it can learn a fence"
    );
    h.cut = vec![false; 3];
    h.run_with_tokens(6_000_000);
    let r = h.replica(OrderId(wiped));
    assert!(
        r.rejoining().is_none(),
        "o{wiped} rejoined (counters {:?})",
        r.counters().iter().collect::<Vec<_>>()
    );
    assert!(r.incarnation() > 0, "a new incarnation");
    assert_eq!(h.committed[&Seq(1)], first, "OS-agreement: batch 1 stands");
    let ordered: Vec<(u32, u64)> = h
        .exec_seen
        .values()
        .flat_map(|b| b.requests.iter().map(|q| (q.client, q.nc.0)))
        .collect();
    assert!(
        ordered.contains(&(1, 1)),
        "the waiting request is ordered: {ordered:?}"
    );
    // It votes again: it commits what its peers commit from now on.
    let before = h.replica(OrderId(0)).last_committed();
    h.request(2, 1, b"c");
    h.run_with_tokens(1_000_000);
    assert!(h.replica(OrderId(0)).last_committed() > before);
    assert_eq!(
        h.replica(OrderId(wiped)).last_committed(),
        h.replica(OrderId(0)).last_committed()
    );
}

#[test]
fn os_agreement_wiped_backup_cannot_vote_away_what_it_committed() {
    let mut h = Harness::new(1, 0, 4);
    wiped_backup_then_view_change(&mut h);
    heals(&mut h, 1);
}

#[test]
fn os_agreement_wiped_primary_does_not_propose_again() {
    let mut h = Harness::new(1, 0, 4);
    wiped_primary_reproposes(&mut h);
    heals(&mut h, 0);
}

#[test]
fn os_agreement_lost_slot_records_make_the_replica_rejoin() {
    let mut h = Harness::new(1, 0, 4);
    slot_records_lost(&mut h);
    heals(&mut h, 1);
}

/// Without client load the fence is reached on null batches the primary orders for the
/// rejoining replica.
#[test]
fn a_wiped_replica_rejoins_an_idle_cluster_on_null_batches() {
    let mut h = Harness::new(1, 1, 4);
    for nc in 1..=6 {
        h.request(0, nc, b"x");
        h.run_with_tokens(40_000);
    }
    let before = h.replica(OrderId(0)).last_committed();
    h.crash(OrderId(3));
    h.wipe(OrderId(3));
    h.restart(OrderId(3));
    h.run_with_tokens(3_000_000);
    let r = h.replica(OrderId(3));
    assert!(
        r.rejoining().is_none(),
        "rejoined without load (counters {:?})",
        r.counters().iter().collect::<Vec<_>>()
    );
    assert!(r.stable_checkpoint() > before, "stable above the fence");
}

/// A VIEW-CHANGE from an incarnation older than one the replica has shown is refused, and a
/// NEW-VIEW carrying one is too.
#[test]
fn view_changes_of_a_lost_incarnation_are_refused() {
    let mut h = Harness::new(1, 1, 4);
    h.request(0, 1, b"a");
    h.advance(50_000);
    // o3's view change of its old life (incarnation 0), delivered after it rejoined.
    let stale = plumb_wire::Message::ViewChange(h.signed_view_change(OrderId(3), View(1), 0));
    h.crash(OrderId(3));
    h.wipe(OrderId(3));
    h.restart(OrderId(3));
    h.run_with_tokens(3_000_000);
    assert!(h.replica(OrderId(3)).rejoining().is_none());
    h.deliver_to(OrderId(0), &stale, OrderId(3));
    assert_eq!(
        h.replica(OrderId(0))
            .counters()
            .drops(DropReason::ViewChangeOldIncarnation),
        1
    );
}

/// Finding 4: only the new view's primary makes a NEW-VIEW. A backup that sends one of its own,
/// with valid proofs, is ignored; the same proofs under the primary's signature are installed.
#[test]
fn new_view_only_from_the_new_primary() {
    let mut h = Harness::new(1, 1, 4);
    // View 1's primary is o1. o3 builds a NEW-VIEW from valid VIEW-CHANGEs of o0, o2, o3.
    let forged = h.new_view(View(1), &[OrderId(0), OrderId(2), OrderId(3)], OrderId(3));
    h.deliver_to(OrderId(0), &forged, OrderId(3));
    h.deliver_to(OrderId(2), &forged, OrderId(3));
    assert_eq!(
        h.replica(OrderId(0)).view(),
        View(0),
        "a backup's NEW-VIEW is not installed"
    );
    assert_eq!(
        h.replica(OrderId(0))
            .counters()
            .drops(DropReason::NewViewNotFromPrimary),
        1
    );
    // Forwarded by anyone, the primary's NEW-VIEW is installed.
    let real = h.new_view(View(1), &[OrderId(0), OrderId(2), OrderId(3)], OrderId(1));
    h.deliver_to(OrderId(0), &real, OrderId(3));
    assert_eq!(h.replica(OrderId(0)).view(), View(1));
    assert!(h.replica(OrderId(0)).is_view_active());
}

/// Issue 10, finding 6: own order checkpoints above the stable one are reloaded at restart (the
/// replica vouches for them in view changes again), and records of checkpoints below the stable
/// one, left by a crash between a checkpoint becoming stable and the deletes, are removed.
#[test]
fn own_checkpoints_are_reloaded_and_leftovers_deleted_at_restart() {
    let mut h = Harness::new(1, 1, 4);
    // Checkpoint votes get lost: checkpoints 4 and 8 are taken but never become stable.
    h.drop_kinds = vec!["checkpoint"];
    for nc in 1..=8 {
        h.request(0, nc, b"x");
        h.run_with_tokens(40_000);
    }
    let held = h.replica(OrderId(1)).held_checkpoints();
    assert!(held.contains(&Seq(4)) && held.contains(&Seq(8)), "{held:?}");
    h.crash(OrderId(1));
    h.restart(OrderId(1));
    assert_eq!(h.replica(OrderId(1)).held_checkpoints(), held, "reloaded");

    // A leftover record of a checkpoint below the stable one is cleaned up at restart.
    let mut h = Harness::new(1, 1, 4);
    for nc in 1..=10 {
        h.request(0, nc, b"x");
        h.run_with_tokens(40_000);
    }
    let stable = h.replica(OrderId(1)).stable_checkpoint();
    assert!(stable >= Seq(8), "stable {stable}");
    let leftover = format!("order/cp/{:020}", 4);
    let bytes = h.disks[1][&format!("order/cp/{stable:020}")].clone();
    h.disks[1].insert(leftover.clone(), bytes);
    h.crash(OrderId(1));
    h.restart(OrderId(1));
    assert!(!h.disks[1].contains_key(&leftover), "leftover deleted");
    assert_eq!(h.replica(OrderId(1)).stable_checkpoint(), stable);
}
