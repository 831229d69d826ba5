//! Lost-record scenarios, run with the protections on (`lost_records.rs`) and off
//! (`sabotage.rs`). u = 1, r = 0: three order replicas, quorums of two.

use super::Harness;
use plumb_wire::OrderId;

/// o0 (primary) and o1 commit batch 1 while o2 is cut off; then `damage` happens to
/// `victim` (one of the two voters) across a restart, the *other* voter is cut off and o2
/// comes back: the only quorum left is the victim, which forgot batch 1, and o2, which never
/// saw it. A second request waits to be ordered meanwhile.
fn lose_a_voters_records(h: &mut Harness, victim: OrderId, damage: fn(&mut Harness, OrderId)) {
    h.cut[2] = true;
    h.request(0, 1, b"a");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 1, "batch 1 committed by o0 and o1");
    h.crash(victim);
    damage(h, victim);
    h.restart(victim);
    h.cut[1 - victim.index()] = true;
    h.cut[2] = false;
    h.request(1, 1, b"b");
    h.advance(3_000_000);
}

/// A backup loses its disk. A view change among it and o2 would choose null at 1 and order
/// the next request in its place.
pub fn wiped_backup_then_view_change(h: &mut Harness) {
    lose_a_voters_records(h, OrderId(1), Harness::wipe);
}

/// The primary loses its disk and comes back as the primary of view 0 with nothing in its
/// log: it would propose afresh at sequence 1, and o2 would go along.
pub fn wiped_primary_reproposes(h: &mut Harness) {
    lose_a_voters_records(h, OrderId(0), Harness::wipe);
}

/// Only o1's slot records are lost (its store reports them corrupt); the rest of the store,
/// the genesis record included, is fine.
pub fn slot_records_lost(h: &mut Harness) {
    lose_a_voters_records(h, OrderId(1), |h, i| {
        let slots: Vec<String> = h.disks[i.index()]
            .keys()
            .filter(|k| k.starts_with("order/slot/"))
            .cloned()
            .collect();
        assert!(!slots.is_empty());
        for k in slots {
            h.disks[i.index()].remove(&k);
            h.corrupt[i.index()].push(k);
        }
    });
}
