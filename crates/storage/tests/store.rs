//! Behaviour of `Store` on real files: round trips, power loss, corruption, compaction,
//! crashes during compaction, the lock, header errors.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use plumb_storage::{Recovered, Store, StoreError, StoreOp, StoreOptions, LOG_FILE, TEMP_FILE};

mod common;
use common::apply_model;

/// Record header length (see the crate docs).
const HEADER: u64 = 28;
/// File header length.
const FILE_HEADER: u64 = 20;

fn put(key: &str, value: &[u8]) -> StoreOp {
    StoreOp::Put {
        key: key.into(),
        value: value.to_vec(),
    }
}

fn del(key: &str) -> StoreOp {
    StoreOp::Delete { key: key.into() }
}

fn del_prefix(prefix: &str) -> StoreOp {
    StoreOp::DeletePrefix {
        prefix: prefix.into(),
    }
}

fn open(dir: &Path) -> (Store, Recovered) {
    Store::open(dir).expect("open")
}

fn small(threshold: u64) -> StoreOptions {
    StoreOptions {
        compact_threshold: threshold,
        compact_step: 1 << 10,
        write_buffer: 512,
    }
}

/// A new, empty store in a new temporary directory, which lasts as long as the `TempDir`.
fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = open(dir.path());
    (dir, s)
}

/// Apply each of `ops` in turn.
fn apply_all(store: &mut Store, ops: impl IntoIterator<Item = StoreOp>) {
    for op in ops {
        store.apply(op).expect("apply");
    }
}

/// Apply `op` and return the log offset its record starts at.
fn apply_at(store: &mut Store, op: StoreOp) -> u64 {
    let at = store.stats().log_bytes;
    store.apply(op).expect("apply");
    at
}

fn flip(path: &Path, off: u64, mask: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[off as usize] ^= mask;
    fs::write(path, bytes).unwrap();
}

fn records(pairs: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, rec) = open(dir.path());
    assert!(rec.is_empty());
    let ops = vec![
        put("order/slot/00000001", b"one"),
        put("order/slot/00000002", b"two"),
        put("order/slot/00000003", b"three"),
        put("order/view", b"7"),
        put("exec/cp/1", &[9u8; 5000]),
        put("order/slot/00000002", b"two again"),
        del("order/slot/00000001"),
        del("never/written"),
        del_prefix("exec/"),
        put("exec/cp/2", b"cp"),
        put("empty", b""),
        StoreOp::Sync,
    ];
    let mut model = BTreeMap::new();
    for op in ops {
        apply_model(&mut model, &op);
        s.apply(op).unwrap();
    }
    assert_eq!(s.records(), &model);
    assert_eq!(s.get("order/view"), Some(&b"7"[..]));
    let stats = s.stats();
    assert_eq!(stats.syncs, 1);
    assert_eq!(stats.synced_bytes, stats.log_bytes);
    assert_eq!(fs::metadata(s.log_path()).unwrap().len(), stats.log_bytes);
    drop(s);

    let (s, rec) = open(dir.path());
    assert_eq!(rec.records, model);
    assert!(rec.corrupt.is_empty());
    let stats = s.stats();
    assert_eq!(stats.recovered_records, model.len() as u64);
    assert_eq!(stats.torn_tail_bytes, 0);
    assert_eq!(stats.live_records, model.len() as u64);
    drop(s);
    // Opening changes nothing.
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.records, model);
}

#[test]
fn sync_without_writes_does_nothing() {
    let (_dir, mut s) = new_store();
    s.apply(StoreOp::Sync).unwrap();
    assert_eq!(s.stats().syncs, 0);
    apply_all(&mut s, [put("a", b"1"), StoreOp::Sync, StoreOp::Sync]);
    assert_eq!(s.stats().syncs, 1);
    // Deleting what is not there writes nothing either.
    let len = s.stats().log_bytes;
    apply_all(&mut s, [del("b"), del_prefix("zz")]);
    assert_eq!(s.stats().log_bytes, len);
    s.apply(StoreOp::Sync).unwrap();
    assert_eq!(s.stats().syncs, 1);
}

#[test]
fn process_crash_keeps_written_but_unsynced_records() {
    let (dir, mut s) = new_store();
    apply_all(
        &mut s,
        [put("a", b"1"), StoreOp::Sync, put("b", b"2"), del("a")],
    );
    drop(s); // writes the buffer, like a process exit leaves the page cache
    let (s, rec) = open(dir.path());
    assert_eq!(rec.records, records(&[("b", b"2")]));
    // `open` synced what it recovered.
    assert_eq!(s.stats().synced_bytes, s.stats().log_bytes);
}

/// Power loss: the file is cut anywhere after the last synced byte. Every synced op survives,
/// and what survives of the rest is a prefix of it.
#[test]
fn power_loss_at_every_offset_after_the_last_sync() {
    let base = tempfile::tempdir().unwrap();
    let (mut s, _) = Store::open_with(base.path(), small(u64::MAX)).unwrap();
    let mut synced = BTreeMap::new();
    for i in 0..20 {
        let op = put(&format!("k/{i:02}"), format!("v{i}").as_bytes());
        apply_model(&mut synced, &op);
        s.apply(op).unwrap();
    }
    s.apply(del("k/03")).unwrap();
    synced.remove("k/03");
    s.apply(StoreOp::Sync).unwrap();
    let synced_len = s.stats().synced_bytes;
    let pending = vec![
        put("k/00", b"changed"),
        del("k/01"),
        put("new", &[7u8; 300]),
        del_prefix("k/1"),
        put("k/10", b"back"),
    ];
    // The state after each prefix of `pending`.
    let mut states = vec![synced.clone()];
    for op in &pending {
        let mut next = states.last().unwrap().clone();
        apply_model(&mut next, op);
        states.push(next);
        s.apply(op.clone()).unwrap();
    }
    drop(s);
    let full = fs::read(base.path().join(LOG_FILE)).unwrap();
    assert!(full.len() as u64 > synced_len + 300);

    let mut last_k = 0;
    for cut in synced_len..=full.len() as u64 {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(LOG_FILE), &full[..cut as usize]).unwrap();
        let (mut s, rec) = open(dir.path());
        assert!(rec.corrupt.is_empty(), "cut {cut}: {:?}", rec.corrupt);
        let k = states
            .iter()
            .rposition(|st| *st == rec.records)
            .unwrap_or_else(|| panic!("cut {cut}: state is no prefix of the writes"));
        assert!(k >= last_k, "cut {cut}: went back from {last_k} to {k}");
        last_k = k;
        // The log is the kept prefix, ended by a sync record if it did not end with one.
        let kept = cut - s.stats().torn_tail_bytes;
        let now = fs::read(dir.path().join(LOG_FILE)).unwrap();
        assert_eq!(now.len() as u64, s.stats().log_bytes);
        assert_eq!(now[..kept as usize], full[..kept as usize], "cut {cut}");
        let added = now.len() as u64 - kept;
        assert!(
            added == 0 || added == HEADER,
            "cut {cut}: {added} bytes added"
        );
        assert_eq!(s.stats().synced_bytes, now.len() as u64);
        // The store goes on appending after the truncation point.
        apply_all(&mut s, [put("after", b"x"), StoreOp::Sync]);
        drop(s);
        let (_s, rec2) = open(dir.path());
        let mut expect = rec.records.clone();
        expect.insert("after".into(), b"x".to_vec());
        assert_eq!(rec2.records, expect, "cut {cut}");
    }
    assert_eq!(last_k, pending.len());
}

#[test]
fn flipped_value_bit_reports_the_key() {
    let (dir, mut s) = new_store();
    apply_all(&mut s, [put("a", b"alpha"), put("b", b"old")]);
    let b = apply_at(&mut s, put("b", b"bravo"));
    apply_all(&mut s, [put("c", b"charlie"), StoreOp::Sync]);
    let path = s.log_path().to_path_buf();
    drop(s);
    flip(&path, b + HEADER + 1 + 2, 0x08);

    let (mut s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec!["b".to_string()]);
    assert_eq!(rec.records, records(&[("a", b"alpha"), ("c", b"charlie")]));
    assert_eq!(s.stats().recovered_corrupt, 1);
    assert_eq!(s.stats().torn_tail_bytes, 0);
    assert_eq!(s.corrupt_keys().collect::<Vec<_>>(), ["b"]);
    // The stage recovers b from peers and writes it again: no longer corrupt.
    apply_all(&mut s, [put("b", b"from peers"), StoreOp::Sync]);
    drop(s);
    let (_s, rec) = open(dir.path());
    assert!(rec.corrupt.is_empty());
    assert_eq!(rec.records.get("b").unwrap(), b"from peers");
}

#[test]
fn flipped_header_bit_is_identified_by_key() {
    let (dir, mut s) = new_store();
    s.apply(put("a", b"alpha")).unwrap();
    let b = apply_at(&mut s, put("bb", b"bravo"));
    apply_all(&mut s, [put("c", b"charlie"), StoreOp::Sync]);
    let path = s.log_path().to_path_buf();
    drop(s);
    flip(&path, b + 9, 0x01); // key length

    let (s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec!["bb".to_string()]);
    assert_eq!(rec.records, records(&[("a", b"alpha"), ("c", b"charlie")]));
    assert_eq!(s.stats().repaired_records, 1);
    assert_eq!(s.stats().corrupt_spans, 0);
}

#[test]
fn damaged_header_resyncs_and_reports_the_span() {
    let (dir, mut s) = new_store();
    apply_all(&mut s, [put("a", b"alpha"), StoreOp::Sync]);
    let b = apply_at(&mut s, put("b", b"bravo"));
    apply_all(
        &mut s,
        [
            put("c", b"charlie"),
            put("d", &[1u8; 1000]),
            StoreOp::Sync,
            put("e", b"echo"),
            StoreOp::Sync,
        ],
    );
    let path = s.log_path().to_path_buf();
    drop(s);
    // Two bits in the header: beyond single-bit repair.
    flip(&path, b + 2, 0x10);
    flip(&path, b + 12, 0x04);

    let (s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec![format!("?corrupt@{b}")]);
    assert_eq!(
        rec.records,
        records(&[
            ("a", b"alpha"),
            ("c", b"charlie"),
            ("d", &[1u8; 1000]),
            ("e", b"echo")
        ])
    );
    assert_eq!(s.stats().corrupt_spans, 1);
    assert_eq!(s.stats().torn_tail_bytes, 0);
    drop(s);
    // Reported again at the next open (the damaged bytes are still there).
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec![format!("?corrupt@{b}")]);
}

#[test]
fn damaged_record_after_the_last_sync_is_a_torn_tail() {
    let (dir, mut s) = new_store();
    apply_all(&mut s, [put("a", b"alpha"), StoreOp::Sync]);
    let b = apply_at(&mut s, put("b", b"bravo"));
    s.apply(put("c", b"charlie")).unwrap();
    let path = s.log_path().to_path_buf();
    let len = s.stats().log_bytes;
    drop(s);
    flip(&path, b + HEADER + 1, 0x01);
    let (s, rec) = open(dir.path());
    assert!(rec.corrupt.is_empty());
    assert_eq!(rec.records, records(&[("a", b"alpha")]));
    assert_eq!(s.stats().torn_tail_bytes, len - b);
}

#[test]
fn delete_prefix_clears_corruption_and_compaction_keeps_it() {
    let (dir, mut s) = new_store();
    let x = apply_at(&mut s, put("x/1", b"one"));
    apply_all(&mut s, [put("y", b"why"), StoreOp::Sync]);
    let path = s.log_path().to_path_buf();
    drop(s);
    flip(&path, x + HEADER + 3, 0x80);

    let (mut s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec!["x/1".to_string()]);
    // Compaction rewrites the log without the damaged record; the key stays corrupt.
    s.compact().unwrap();
    drop(s);
    let (mut s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec!["x/1".to_string()]);
    assert_eq!(rec.records, records(&[("y", b"why")]));
    apply_all(&mut s, [del_prefix("x/"), StoreOp::Sync]);
    assert_eq!(s.corrupt_keys().count(), 0);
    drop(s);
    let (_s, rec) = open(dir.path());
    assert!(rec.corrupt.is_empty());
    assert_eq!(rec.records, records(&[("y", b"why")]));
}

#[test]
fn compaction_shrinks_the_log_and_keeps_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, _) = Store::open_with(dir.path(), small(8 << 10)).unwrap();
    let mut model = BTreeMap::new();
    let mut max_len = 0;
    for i in 0..3000u32 {
        let op = put(&format!("key/{}", i % 10), &i.to_le_bytes().repeat(25));
        apply_model(&mut model, &op);
        s.apply(op).unwrap();
        if i % 7 == 0 {
            s.apply(StoreOp::Sync).unwrap();
        }
        max_len = max_len.max(s.stats().log_bytes);
    }
    s.apply(StoreOp::Sync).unwrap();
    let stats = s.stats();
    // 3000 records of ~140 bytes would be ~400 KiB without compaction.
    assert!(stats.compactions >= 10, "{stats:?}");
    assert!(max_len < (8 << 10) + 1024, "log grew to {max_len}");
    assert_eq!(fs::metadata(s.log_path()).unwrap().len(), stats.log_bytes);
    assert!(!dir.path().join(TEMP_FILE).exists());
    drop(s);
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.records, model);
    assert!(rec.corrupt.is_empty());
}

/// A compaction runs a step at a time beside the store: it spans several syncs, and the ops
/// applied meanwhile (on keys the copy has passed and keys it has not reached, deletions of
/// either, a prefix deletion across both) are all in the log that replaces the old one.
#[test]
fn compaction_spreads_over_syncs_and_keeps_the_ops_applied_during_it() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions {
        compact_threshold: 16 << 10,
        compact_step: 1 << 10,
        write_buffer: 512,
    };
    let (mut s, _) = Store::open_with(dir.path(), opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    let run = |s: &mut Store, model: &mut BTreeMap<String, Vec<u8>>, op: StoreOp| {
        apply_model(model, &op);
        s.apply(op).unwrap();
    };
    // 40 live keys of ~130 bytes (about 5 KiB live), overwritten until the log passes 16 KiB
    // and twice the live bytes: a compaction starts.
    let mut i = 0u32;
    while s.stats().compacting_bytes == 0 {
        run(
            &mut s,
            &mut model,
            put(&format!("k/{:02}", i % 40), &i.to_le_bytes().repeat(25)),
        );
        i += 1;
    }
    assert_eq!(s.stats().compactions, 0);
    let mut syncs_during = 0;
    let mut round = 0u32;
    while s.stats().compactions == 0 {
        // The copy goes in key order: k/00 is behind the cursor soon, k/39 ahead of it
        // until the end.
        run(
            &mut s,
            &mut model,
            put("k/00", format!("behind {round}").as_bytes()),
        );
        run(
            &mut s,
            &mut model,
            put("k/39", format!("ahead {round}").as_bytes()),
        );
        run(&mut s, &mut model, del(&format!("k/{:02}", 1 + round % 38)));
        run(
            &mut s,
            &mut model,
            put(&format!("new/{round}"), b"added during"),
        );
        if round == 3 {
            run(&mut s, &mut model, del_prefix("k/3"));
        }
        run(&mut s, &mut model, StoreOp::Sync);
        syncs_during += 1;
        round += 1;
        assert!(syncs_during < 100, "the compaction never finished");
    }
    assert!(syncs_during > 1, "the compaction did not spread over syncs");
    assert!(!dir.path().join(TEMP_FILE).exists());
    assert_eq!(s.records(), &model);
    let stats = s.stats();
    assert_eq!(stats.synced_bytes, stats.log_bytes);
    assert_eq!(fs::metadata(s.log_path()).unwrap().len(), stats.log_bytes);
    drop(s);
    let (_s, rec) = Store::open_with(dir.path(), opts).unwrap();
    assert_eq!(rec.records, model);
    assert!(rec.corrupt.is_empty());
}

#[test]
fn compaction_crash_before_rename_keeps_the_old_log() {
    // A crash during compaction leaves the old log and a temporary file: complete (crash
    // between its fdatasync and the rename) or partial (crash while writing it).
    let old = tempfile::tempdir().unwrap();
    let (mut s, _) = open(old.path());
    apply_all(&mut s, [put("a", b"old"), put("b", b"old"), StoreOp::Sync]);
    drop(s);
    let other = tempfile::tempdir().unwrap();
    let (mut s, _) = open(other.path());
    apply_all(&mut s, [put("a", b"new"), put("c", &[5u8; 2000])]);
    s.compact().unwrap();
    drop(s);
    let new_log = fs::read(other.path().join(LOG_FILE)).unwrap();
    let old_log = fs::read(old.path().join(LOG_FILE)).unwrap();

    for cut in [
        0,
        5,
        FILE_HEADER as usize,
        100,
        new_log.len() - 1,
        new_log.len(),
    ] {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(LOG_FILE), &old_log).unwrap();
        fs::write(dir.path().join(TEMP_FILE), &new_log[..cut]).unwrap();
        let (_s, rec) = open(dir.path());
        assert_eq!(rec.records, records(&[("a", b"old"), ("b", b"old")]));
        assert!(!dir.path().join(TEMP_FILE).exists(), "cut {cut}");
    }
    // After the rename the new log is complete on its own.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(LOG_FILE), &new_log).unwrap();
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.records, records(&[("a", b"new"), ("c", &[5u8; 2000])]));
}

#[test]
fn creates_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("node1").join("order");
    let (mut s, rec) = open(&deep);
    assert!(rec.is_empty());
    apply_all(&mut s, [put("a", b"1"), StoreOp::Sync]);
    drop(s);
    let (_s, rec) = open(&deep);
    assert_eq!(rec.records, records(&[("a", b"1")]));
    // A path that is a file is an error naming it.
    let file = dir.path().join("plain");
    fs::write(&file, b"x").unwrap();
    let err = Store::open(&file).unwrap_err();
    assert!(err.to_string().contains("plain"), "{err}");
}

#[test]
fn crash_while_creating_leaves_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(TEMP_FILE), b"PLUMB").unwrap();
    let (_s, rec) = open(dir.path());
    assert!(rec.is_empty());
    assert!(!dir.path().join(TEMP_FILE).exists());
}

#[test]
fn second_open_of_a_directory_fails_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = open(dir.path());
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    assert!(msg.contains("locked"), "{msg}");
    drop(s);
    let (_s, _) = open(dir.path());
}

#[test]
fn bad_file_headers_are_errors_naming_the_file() {
    let (dir, mut s) = new_store();
    apply_all(&mut s, [put("a", b"1"), StoreOp::Sync]);
    drop(s);
    let path = dir.path().join(LOG_FILE);
    let good = fs::read(&path).unwrap();
    let name = path.display().to_string();

    // Unknown version with a valid header checksum.
    let mut v2 = good.clone();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let c = crc32c::crc32c(&v2[0..16]);
    v2[16..20].copy_from_slice(&c.to_le_bytes());
    fs::write(&path, &v2).unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownVersion { version: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&name));

    let mut damaged = good.clone();
    damaged[13] ^= 1;
    fs::write(&path, &damaged).unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::DamagedHeader { .. }), "{err:?}");
    assert!(err.to_string().contains(&name));

    for junk in [&b""[..], b"hello world, not a log at all"] {
        fs::write(&path, junk).unwrap();
        let err = Store::open(dir.path()).unwrap_err();
        assert!(matches!(err, StoreError::NotALog { .. }), "{err:?}");
        assert!(err.to_string().contains(&name));
    }

    fs::write(&path, &good).unwrap();
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.records, records(&[("a", b"1")]));
}

#[test]
fn oversized_keys_are_refused_without_harm() {
    let (dir, mut s) = new_store();
    let key = "k".repeat(plumb_storage::MAX_KEY_LEN + 1);
    let err = s.apply(put(&key, b"v")).unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err:?}");
    apply_all(&mut s, [put("ok", b"v"), StoreOp::Sync]);
    drop(s);
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.records, records(&[("ok", b"v")]));
}

#[test]
fn large_values_round_trip_and_report_damage() {
    let (dir, mut s) = new_store();
    let big: Vec<u8> = (0..5_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let at = apply_at(&mut s, put("exec/cp/big", &big));
    apply_all(&mut s, [put("after", b"1"), StoreOp::Sync]);
    drop(s);
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.records.get("exec/cp/big"), Some(&big));
    drop(_s);
    flip(
        &dir.path().join(LOG_FILE),
        at + HEADER + "exec/cp/big".len() as u64 + 4_000_000,
        0x20,
    );
    let (_s, rec) = open(dir.path());
    assert_eq!(rec.corrupt, vec!["exec/cp/big".to_string()]);
    assert_eq!(rec.records, records(&[("after", b"1")]));
}
