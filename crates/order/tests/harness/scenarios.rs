//! Lost-record scenarios, run with the protections on (`lost_records.rs`) and off
//! (`sabotage.rs`).

use super::Harness;

/// u = 1, r = 0: three order replicas, quorums of two. o0 (primary) and o1 commit batch 1
/// while o2 is cut off. Then o1 loses its disk, and o0 is cut off: the only quorum left is o1,
/// which forgot batch 1, and o2, which never saw it. A view change there would choose null at
/// 1 and order the next request in its place.
pub fn wiped_backup_then_view_change(h: &mut Harness) {
    h.cut[2] = true;
    h.request(0, 1, b"a");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 1, "batch 1 committed by o0 and o1");
    h.crash(1);
    h.wipe(1);
    h.restart(1);
    h.cut[0] = true;
    h.cut[2] = false;
    h.request(1, 1, b"b");
    h.advance(3_000_000);
}

/// The primary o0 commits batch 1 with o1 (o2 cut off), loses its disk, and comes back as the
/// primary of view 0 with nothing in its log: it would propose afresh at sequence 1, and o2,
/// which never saw batch 1, would go along.
pub fn wiped_primary_reproposes(h: &mut Harness) {
    h.cut[2] = true;
    h.request(0, 1, b"a");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 1);
    h.crash(0);
    h.wipe(0);
    h.restart(0);
    h.cut[1] = true;
    h.cut[2] = false;
    h.request(1, 1, b"b");
    h.advance(3_000_000);
}

/// Only o1's slot records are lost (its store reports them corrupt); the rest of the store,
/// the genesis record included, is fine.
pub fn slot_records_lost(h: &mut Harness) {
    h.cut[2] = true;
    h.request(0, 1, b"a");
    h.advance(50_000);
    assert_eq!(h.committed.len(), 1);
    h.crash(1);
    let slots: Vec<String> = h.disks[1]
        .keys()
        .filter(|k| k.starts_with("order/slot/"))
        .cloned()
        .collect();
    assert!(!slots.is_empty());
    for k in slots {
        h.disks[1].remove(&k);
        h.corrupt[1].push(k);
    }
    h.restart(1);
    h.cut[0] = true;
    h.cut[2] = false;
    h.request(1, 1, b"b");
    h.advance(3_000_000);
}
