//! A simulated disk: the production store ([`plumb_storage::Store`]: log format, checksums,
//! sync points, compaction, recovery) running on [`SimFs`], an in-memory file system that
//! loses power like a real disk (unsynced sectors torn or lost, directory changes without a
//! directory fsync lost; see `plumb_storage::SimFs`). So the crashes and damage the fault plan
//! injects hit the code that runs on real disks, and stages see exactly what that code
//! recovers.

use crate::rng::SimRng;
use plumb_core::{Recovered, StoreOp};
use plumb_storage::inspect::{self, RecordInfo, RecordKind};
use plumb_storage::{SimFs, Store, StoreError, StoreOptions, LOG_FILE};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the store lives on the simulated file system.
const DIR: &str = "/store";

/// Small limits so compaction (and crashes inside it) and partial buffer writes happen often.
fn options() -> StoreOptions {
    StoreOptions {
        compact_threshold: 16 << 10,
        compact_step: 1 << 10,
        write_buffer: 2 << 10,
    }
}

pub struct Disk {
    fs: SimFs,
    /// The open store while the stage runs; `None` before the first start and after a crash.
    store: Option<Store<SimFs>>,
}

impl Disk {
    /// An empty disk (no store yet); `seed` drives the salts of the logs written on it.
    pub fn new(seed: u64) -> Disk {
        Disk {
            fs: SimFs::new(seed),
            store: None,
        }
    }

    fn dir() -> &'static Path {
        Path::new(DIR)
    }

    fn log_path() -> PathBuf {
        Self::dir().join(LOG_FILE)
    }

    /// Carry out a stage's storage action. Like the production driver, which stops the
    /// process when the store fails, a failure here ends the run (as a reported panic): the
    /// simulated disk only fails when a crash is being injected, never under a running stage.
    pub fn apply(&mut self, op: StoreOp) {
        if self.store.is_none() {
            // Stages write only after starting from `recover`; be total anyway.
            let _ = self.recover();
        }
        if let Some(store) = self.store.as_mut() {
            if let Err(e) = store.apply(op) {
                panic!("simulated disk: durable storage failed: {e}");
            }
        }
    }

    /// Power loss. Sometimes the crash lands inside a compaction (after a random number of
    /// its file operations); then whatever unsynced writes reached the platter survive, torn
    /// at sector granularity, and unsynced directory changes are partly lost.
    pub fn crash(&mut self, rng: &mut SimRng) {
        if let Some(store) = self.store.as_mut() {
            if rng.chance(0.2) {
                // A compaction is: create, write, fdatasync, rename, fsync dir (more writes
                // for a big log); cutting after 0..=5 of them covers every gap.
                self.fs.crash_after(rng.range(0, 5));
                let _ = store.compact();
            }
        }
        // The process dies; dropping the store hands its buffer to the page cache, where
        // power loss treats it like any other unsynced write.
        self.store = None;
        self.fs.power_loss(rng.next_u64());
    }

    /// Flip one bit of the durable part of the log (up to its last sync point: damage after
    /// it would only be a torn tail). Returns what it hit.
    pub fn flip_bit(&mut self, rng: &mut SimRng) -> Option<String> {
        let (records, end) = self.durable_log()?;
        if end <= inspect::FILE_HEADER_LEN {
            return None;
        }
        let off = rng.range(inspect::FILE_HEADER_LEN, end - 1);
        self.damage(off, 1 << rng.index(8));
        let hit = records.iter().find(|r| r.off <= off && off < r.off + r.len);
        Some(match hit {
            Some(r) if r.kind == RecordKind::Sync => format!("sync point at byte {off}"),
            Some(r) => format!("{} at byte {off}", r.key),
            None => format!("damaged span at byte {off}"),
        })
    }

    /// What a restarting stage finds: the store reopened, with its verified records and the
    /// keys (and `?corrupt@` spans) it could not read back. A missing store comes back
    /// empty; so does one whose file header is damaged, which production moves aside.
    pub fn recover(&mut self) -> Recovered {
        self.store = None;
        let (store, recovered) = match Store::open_in(self.fs.clone(), Self::dir(), options()) {
            Ok(opened) => opened,
            Err(StoreError::DamagedHeader { .. } | StoreError::NotALog { .. }) => {
                self.fs.remove_dir_all(Self::dir());
                Store::open_in(self.fs.clone(), Self::dir(), options())
                    .unwrap_or_else(|e| panic!("simulated disk: cannot create a store: {e}"))
            }
            Err(e) => panic!("simulated disk: cannot open the store: {e}"),
        };
        self.store = Some(store);
        recovered
    }
}

/// Media faults the fault plan injects (faults.rs `DiskFault`).
impl Disk {
    /// The disk is lost or replaced: the store directory is gone.
    pub fn wipe(&mut self) {
        self.store = None;
        self.fs.remove_dir_all(Self::dir());
    }

    /// Damage the newest durable record of a live key starting with `key_prefix` so that it
    /// cannot be read back: recovery reports the key corrupt. Returns the key.
    pub fn lose_record(&mut self, rng: &mut SimRng, key_prefix: &str) -> Option<String> {
        let (records, end) = self.durable_log()?;
        let newest = newest_records(&records);
        let candidates: Vec<&RecordInfo> = newest
            .range::<str, _>((
                std::ops::Bound::Included(key_prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(key_prefix))
            .map(|(_, (latest, _))| *latest)
            .filter(|r| r.kind == RecordKind::Put && r.off + r.len <= end)
            .collect();
        let rec = *rng.pick(&candidates)?;
        // A value bit fails the value checksum; with no value, a key bit is found by the
        // one-bit repair. Either way the key itself is reported corrupt.
        let off = if rec.value_len > 0 {
            rec.value_off + rng.range(0, rec.value_len - 1)
        } else {
            rec.off + inspect::RECORD_HEADER_LEN
        };
        self.damage(off, 1 << rng.index(8));
        Some(rec.key.clone())
    }

    /// Damage the newest durable record of a key that has an older value so that it cannot
    /// even be identified: the key's *older* value is recovered (the documented limitation
    /// of the log format), and only a `?corrupt@<offset>` entry tells that something was
    /// lost. Returns the key.
    pub fn roll_back(&mut self, rng: &mut SimRng) -> Option<String> {
        let (records, end) = self.durable_log()?;
        let newest = newest_records(&records);
        let candidates: Vec<&RecordInfo> = newest
            .values()
            .filter(|(latest, older)| {
                latest.off + latest.len <= end && older.is_some_and(|o| o.kind == RecordKind::Put)
            })
            .map(|(latest, _)| *latest)
            .collect();
        let rec = *rng.pick(&candidates)?;
        // Two bits in the record magic: no single-bit repair can find the record again.
        self.damage(rec.off, 0x01);
        self.damage(rec.off + 1, 0x01);
        Some(rec.key.clone())
    }
}

impl Disk {
    /// The disk holds a value of `key`, or of a key after it that starts with `prefix`, that
    /// a power loss now would not take: that key's newest record in the log is a put, and lies
    /// before the log's last sync point.
    pub fn holds_durably(&self, key: &str, or_later_under: &str) -> bool {
        let Some((records, end)) = self.durable_log() else {
            return false;
        };
        newest_records(&records)
            .range::<str, _>((std::ops::Bound::Included(key), std::ops::Bound::Unbounded))
            .take_while(|(k, _)| *k == key || k.starts_with(or_later_under))
            .any(|(_, (latest, _))| {
                latest.kind == RecordKind::Put && latest.off + latest.len <= end
            })
    }

    fn damage(&self, off: u64, mask: u8) {
        let done = self.fs.damage(&Self::log_path(), off, mask);
        debug_assert!(done, "damaged byte {off} lies in the durable log");
    }

    /// The durable log's valid records and the end of its durable part.
    fn durable_log(&self) -> Option<(Vec<RecordInfo>, u64)> {
        let log = self.fs.durable_file(&Self::log_path())?;
        let records = inspect::records(&log)?;
        let end = inspect::durable_end(&records);
        Some((records, end))
    }
}

/// For each key whose latest record (by file order) is a Put or Delete: that record and the
/// record before it, if that one was a Put or Delete of the key too (not a DeletePrefix).
fn newest_records(records: &[RecordInfo]) -> BTreeMap<String, (&RecordInfo, Option<&RecordInfo>)> {
    let mut newest: BTreeMap<String, (&RecordInfo, Option<&RecordInfo>)> = BTreeMap::new();
    for r in records {
        match r.kind {
            RecordKind::Put | RecordKind::Delete if r.value_ok => {
                let older = newest.get(&r.key).map(|(latest, _)| *latest);
                newest.insert(r.key.clone(), (r, older));
            }
            RecordKind::Put | RecordKind::Delete | RecordKind::Corrupt => {
                newest.remove(&r.key);
            }
            RecordKind::DeletePrefix => newest.retain(|k, _| !k.starts_with(r.key.as_str())),
            RecordKind::Sync => {}
        }
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &[u8]) -> StoreOp {
        StoreOp::Put {
            key: k.to_string(),
            value: v.to_vec(),
        }
    }

    fn started(seed: u64) -> Disk {
        let mut d = Disk::new(seed);
        assert!(d.recover().is_empty());
        d
    }

    fn spans(rec: &Recovered) -> usize {
        rec.corrupt
            .iter()
            .filter(|k| k.starts_with("?corrupt@"))
            .count()
    }

    /// Durability: synced writes survive every crash; of the unsynced ones, whatever
    /// survives is a prefix (here: the delete of "a" only with the put of "b" before it).
    #[test]
    fn unsynced_writes_may_be_lost_synced_ones_survive() {
        let mut rng = SimRng::new(1, "disk");
        for seed in 0..50 {
            let mut d = started(seed);
            d.apply(put("a", b"1"));
            d.apply(StoreOp::Sync);
            d.apply(put("b", b"2"));
            d.apply(StoreOp::Delete { key: "a".into() });
            d.crash(&mut rng);
            let rec = d.recover();
            assert!(rec.corrupt.is_empty(), "{rec:?}");
            match rec.records.get("a") {
                Some(v) => assert_eq!(v, b"1"),
                None => assert_eq!(rec.records.get("b").map(Vec::as_slice), Some(&b"2"[..])),
            }
        }
    }

    /// `holds_durably` (what `ES4-token-durable` asks): a put counts from the sync after it, a
    /// delete likewise, and a later key under the prefix counts once synced.
    #[test]
    fn holds_durably_what_a_sync_covered() {
        let mut d = started(3);
        d.apply(put("cp/1", b"1"));
        assert!(!d.holds_durably("cp/1", "cp/"));
        d.apply(StoreOp::Sync);
        assert!(d.holds_durably("cp/1", "cp/"));
        assert!(
            !d.holds_durably("cp/0", "cp/x"),
            "an earlier key counts only for itself"
        );
        assert!(!d.holds_durably("other", "other"));
        d.apply(StoreOp::Delete { key: "cp/1".into() });
        d.apply(put("cp/2", b"2"));
        assert!(
            d.holds_durably("cp/1", "cp/"),
            "a power loss now would keep cp/1: its delete is not synced"
        );
        d.apply(StoreOp::Sync);
        assert!(!d.holds_durably("cp/1", "zz/"), "deleted, and synced");
        assert!(
            d.holds_durably("cp/1", "cp/"),
            "a later durable key under the prefix counts"
        );
    }

    /// A flipped durable bit never passes as data: the hit key is reported corrupt, or the
    /// flip hit something recovery could do without (a sync point, an overwritten record).
    #[test]
    fn flipped_bit_is_reported_corrupt() {
        let mut rng = SimRng::new(2, "disk");
        let mut reported = 0;
        for seed in 0..40 {
            let mut d = started(seed);
            d.apply(put("log/1", b"hello"));
            d.apply(put("log/2", b"world"));
            d.apply(StoreOp::Sync);
            d.crash(&mut rng);
            let what = d.flip_bit(&mut rng).unwrap();
            let rec = d.recover();
            for (k, v) in &rec.records {
                let want: &[u8] = if k == "log/1" { b"hello" } else { b"world" };
                assert_eq!(v, want, "{what}");
            }
            assert_eq!(rec.records.len() + rec.corrupt.len(), 2, "{what}: {rec:?}");
            reported += rec.corrupt.len();
        }
        assert!(reported > 0);
    }

    #[test]
    fn delete_prefix_removes_only_that_prefix() {
        let mut d = started(3);
        for k in ["cp/1", "cp/2", "cq", "c"] {
            d.apply(put(k, b"x"));
        }
        d.apply(StoreOp::DeletePrefix {
            prefix: "cp/".into(),
        });
        d.apply(StoreOp::Sync);
        let keys: Vec<String> = d.recover().records.into_keys().collect();
        assert_eq!(keys, vec!["c".to_string(), "cq".to_string()]);
    }

    /// A lost disk recovers as an empty store: the stage decides what that means.
    #[test]
    fn wipe_recovers_empty() {
        let mut d = started(4);
        d.apply(put("order/view", b"7"));
        d.apply(StoreOp::Sync);
        d.wipe();
        let rec = d.recover();
        assert!(rec.is_empty(), "{rec:?}");
        // And the fresh store works.
        d.apply(put("x", b"1"));
        d.apply(StoreOp::Sync);
        assert_eq!(d.recover().records.len(), 1);
    }

    /// `lose_record` makes the newest record of a key under the prefix unreadable: that key
    /// is reported corrupt (its older value is not resurrected) and nothing else changes.
    #[test]
    fn lose_record_reports_the_key_corrupt() {
        let mut rng = SimRng::new(5, "disk");
        for seed in 0..20 {
            let mut d = started(seed);
            d.apply(put("order/slot/1", b"old"));
            d.apply(put("order/slot/1", b"new"));
            d.apply(put("order/slot/2", b""));
            d.apply(put("order/view", b"3"));
            d.apply(StoreOp::Sync);
            d.crash(&mut rng);
            let key = d.lose_record(&mut rng, "order/slot/").unwrap();
            assert!(key.starts_with("order/slot/"));
            let rec = d.recover();
            assert_eq!(rec.corrupt, vec![key.clone()]);
            assert!(!rec.records.contains_key(&key));
            assert_eq!(rec.records.len(), 2);
            assert!(d.lose_record(&mut rng, "nothing/").is_none());
        }
    }

    /// `roll_back` hides a key's newest record in an unidentifiable span: the older value
    /// comes back, and a `?corrupt@` entry says something was lost.
    #[test]
    fn roll_back_recovers_the_older_value_and_reports_a_span() {
        let mut rng = SimRng::new(6, "disk");
        let mut d = started(6);
        d.apply(put("order/stable", b"old"));
        d.apply(put("other", b"x"));
        d.apply(StoreOp::Sync);
        d.apply(put("order/stable", b"new"));
        d.apply(StoreOp::Sync);
        // Damage lands on the platter while the store is open; the restart reads it.
        assert_eq!(d.roll_back(&mut rng).as_deref(), Some("order/stable"));
        let rec = d.recover();
        assert_eq!(
            rec.records.get("order/stable").map(Vec::as_slice),
            Some(&b"old"[..])
        );
        assert_eq!(spans(&rec), 1, "{rec:?}");
        assert_eq!(rec.corrupt.len(), 1);
        // Only one key had an older value.
        let mut fresh = started(7);
        fresh.apply(put("a", b"1"));
        fresh.apply(StoreOp::Sync);
        assert!(fresh.roll_back(&mut rng).is_none());
    }
}
