//! The durability contract of `Store` on the faulty in-memory disk (`SimFs`): random op
//! sequences with power losses anywhere (between ops, inside a write, a sync or a compaction),
//! process restarts, and media damage.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plumb_storage::inspect;
use plumb_storage::{Recovered, SimFs, Store, StoreOp, StoreOptions, LOG_FILE};
use proptest::prelude::*;

mod common;
use common::apply_model;

type State = common::Model;

const DIR: &str = "/data/store";

fn opts() -> StoreOptions {
    // Tiny limits: compactions and partial buffer writes happen every few ops.
    StoreOptions {
        compact_threshold: 2 << 10,
        compact_step: 200,
        write_buffer: 256,
    }
}

fn open(fs: &SimFs) -> (Store<SimFs>, Recovered) {
    Store::open_in(fs.clone(), Path::new(DIR), opts()).expect("a crashed store reopens")
}

#[derive(Debug, Clone)]
enum Step {
    Put(u8, u16),
    Delete(u8),
    DeletePrefix(bool),
    Sync,
    Compact,
    /// The process dies (no power loss): everything written survives.
    Restart,
    /// Power loss now (`None`) or after this many more file-system operations.
    Crash(Option<u8>, u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0..8u8, 0..400u16).prop_map(|(k, len)| Step::Put(k, len)),
        2 => (0..8u8).prop_map(Step::Delete),
        1 => any::<bool>().prop_map(Step::DeletePrefix),
        3 => Just(Step::Sync),
        1 => Just(Step::Compact),
        1 => Just(Step::Restart),
        2 => (prop::option::of(0..8u8), any::<u64>()).prop_map(|(a, s)| Step::Crash(a, s)),
    ]
}

fn key(k: u8) -> String {
    format!("{}/{}", if k < 4 { "a" } else { "b" }, k % 4)
}

/// Each Put's value is unique (its number first), so an older value is never mistaken for
/// the latest one.
fn op(step: &Step, n: usize) -> Option<StoreOp> {
    Some(match *step {
        Step::Put(k, len) => {
            let mut value = format!("{n}:").into_bytes();
            value.resize(value.len() + len as usize, (n % 251) as u8);
            StoreOp::Put { key: key(k), value }
        }
        Step::Delete(k) => StoreOp::Delete { key: key(k) },
        Step::DeletePrefix(a) => StoreOp::DeletePrefix {
            prefix: if a { "a/" } else { "b/" }.into(),
        },
        Step::Sync => StoreOp::Sync,
        _ => return None,
    })
}

/// The contract after a power loss: every key has its value at the last sync point or a value
/// it took later (never an older one, never garbage) unless recovery reports it corrupt; and
/// corruption is reported only if the power failed in the middle of an operation (a sync cut
/// short may persist its sync record before an earlier sector).
fn check(rec: &Recovered, states: &[State], mid_op: bool) -> Result<(), TestCaseError> {
    prop_assert!(
        mid_op || rec.corrupt.is_empty(),
        "corrupt {:?}",
        rec.corrupt
    );
    let corrupt: BTreeSet<&str> = rec.corrupt.iter().map(String::as_str).collect();
    let keys: BTreeSet<&String> = states.iter().flat_map(|s| s.keys()).collect();
    for k in rec.records.keys() {
        prop_assert!(keys.contains(k), "recovered unknown key {k}");
    }
    for k in keys {
        if corrupt.contains(k.as_str()) {
            continue;
        }
        let got = rec.records.get(k);
        prop_assert!(
            states.iter().any(|s| s.get(k) == got),
            "key {k}: recovered {:?}, not a value since the last sync point",
            got.map(|v| String::from_utf8_lossy(&v[..v.len().min(8)]).into_owned())
        );
    }
    Ok(())
}

/// Run `steps`; returns how many power losses were checked.
fn run(steps: &[Step], seed: u64) -> Result<u32, TestCaseError> {
    let fs = SimFs::new(seed);
    let (mut store, rec) = open(&fs);
    prop_assert!(rec.is_empty());
    // states[0] is the state at the last sync point; later entries follow each op since.
    let mut states: Vec<State> = vec![State::new()];
    let mut armed = false;
    let mut crashes = 0;
    let mut pending: Option<u64> = None;
    for (n, s) in steps.iter().enumerate() {
        let res = match s {
            Step::Crash(None, crash_seed) if !armed => {
                pending = Some(*crash_seed);
                Ok(())
            }
            Step::Crash(Some(after), crash_seed) if !armed => {
                fs.crash_after(u64::from(*after));
                armed = true;
                pending = Some(*crash_seed);
                continue;
            }
            Step::Crash(..) => continue,
            Step::Restart if !armed => {
                let now = states.last().cloned().unwrap_or_default();
                drop(store);
                let (s, rec) = open(&fs);
                store = s;
                prop_assert!(rec.corrupt.is_empty());
                prop_assert_eq!(
                    &rec.records,
                    &now,
                    "a process restart loses nothing written"
                );
                states = vec![now];
                continue;
            }
            Step::Restart => continue,
            Step::Compact => store.compact(),
            other => {
                let op = op(other, n).expect("a store op");
                let mut next = states.last().cloned().unwrap_or_default();
                apply_model(&mut next, &op);
                // The op counts as written before the crash even if the crash cut it short.
                states.push(next);
                store.apply(op)
            }
        };
        let power_lost = res.is_err() || matches!(s, Step::Crash(None, _));
        if res.is_err() {
            prop_assert!(fs.powered_off(), "only a power failure makes an op fail");
        }
        if power_lost {
            drop(store);
            fs.power_loss(pending.take().unwrap_or(seed));
            let mid_op = std::mem::take(&mut armed);
            let (s, rec) = open(&fs);
            store = s;
            check(&rec, &states, mid_op)?;
            crashes += 1;
            if !rec.corrupt.is_empty() {
                // What a stage would do next (fetch from peers) is beyond this test.
                return Ok(crashes);
            }
            states = vec![rec.records];
        } else {
            let st = store.stats();
            if st.synced_bytes == st.log_bytes {
                // Everything written is durable: a new sync point.
                states = vec![states.pop().unwrap_or_default()];
            }
        }
    }
    Ok(crashes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Durability under power loss anywhere, including inside compactions (tiny threshold,
    /// explicit compactions, crashes armed to fire after any file-system operation).
    #[test]
    fn power_loss_keeps_every_synced_write(
        steps in prop::collection::vec(step(), 1..80),
        seed in any::<u64>(),
    ) {
        run(&steps, seed)?;
    }

    /// Media damage to the durable log: a recovered value is always one the key really had;
    /// a key missing its latest value is reported corrupt, or (if the damage hid which
    /// record it was) a `?corrupt@` span is.
    #[test]
    fn damage_is_reported_never_garbage(
        puts in prop::collection::vec((0..8u8, 0..200u16, any::<bool>()), 1..40),
        at in any::<u64>(),
        masks in (1..=255u8, 0..=255u8),
        seed in any::<u64>(),
    ) {
        let fs = SimFs::new(seed);
        let (mut store, _) = open(&fs);
        let mut state = State::new();
        let mut ever: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
        for (n, &(k, len, sync)) in puts.iter().enumerate() {
            let op = op(&Step::Put(k, len), n).expect("a put");
            apply_model(&mut state, &op);
            if let StoreOp::Put { key, value } = &op {
                ever.entry(key.clone()).or_default().insert(value.clone());
            }
            store.apply(op).unwrap();
            if sync {
                store.apply(StoreOp::Sync).unwrap();
            }
        }
        store.apply(StoreOp::Sync).unwrap();
        drop(store);
        fs.power_loss(seed);
        let log = Path::new(DIR).join(LOG_FILE);
        let bytes = fs.durable_file(&log).expect("the log exists");
        let recs = inspect::records(&bytes).expect("its header verifies");
        // Damage stays clear of the final sync record: damage spanning it and the record
        // before it reads exactly like a sync cut short by a crash, and is truncated as a torn
        // tail (the limitation the crate docs state; `damage_to_the_final_sync_point_...`).
        let last_sync = recs.iter().rev().find(|r| r.kind == inspect::RecordKind::Sync);
        let end = last_sync.map_or(inspect::durable_end(&recs), |r| r.off);
        prop_assume!(end > inspect::FILE_HEADER_LEN + 1);
        let off = inspect::FILE_HEADER_LEN + at % (end - 1 - inspect::FILE_HEADER_LEN);
        // One or two damaged bytes next to each other.
        prop_assert!(fs.damage(&log, off, masks.0));
        fs.damage(&log, off + 1, masks.1);
        let (_, rec) = open(&fs);
        let spans = rec.corrupt.iter().any(|k| k.starts_with("?corrupt@"));
        for (k, v) in &rec.records {
            prop_assert!(ever.get(k).is_some_and(|vs| vs.contains(v)), "garbage for {}", k);
        }
        for (k, v) in &state {
            if rec.records.get(k) != Some(v) {
                prop_assert!(
                    spans || rec.corrupt.contains(k),
                    "{} lost its latest value silently: {:?}", k, rec.corrupt
                );
            }
        }
    }
}

/// The power-loss property really exercises what it claims: crashes inside compactions, and
/// torn records reported after a crash cut a sync short.
#[test]
fn crashes_land_inside_compactions() {
    let mut inside = 0;
    for seed in 0..200u64 {
        let fs = SimFs::new(seed);
        let (mut store, _) = open(&fs);
        for n in 0..40 {
            let op = op(&Step::Put((n % 8) as u8, 100), n).unwrap();
            store.apply(op).unwrap();
        }
        let before = fs.ops();
        fs.crash_after(seed % 6);
        if store.compact().is_err() {
            inside += 1;
        }
        assert!(fs.ops() >= before);
        drop(store);
        fs.power_loss(seed);
        let (_, rec) = open(&fs);
        // Nothing was synced before the compaction: any prefix is allowed, garbage is not.
        assert!(rec.corrupt.is_empty(), "seed {seed}: {rec:?}");
    }
    assert!(inside > 100, "{inside}");
}

/// The stated limitation, pinned: two damaged bytes straddling the last synced record and the
/// final sync record look like a sync that a crash cut short, so recovery truncates them as
/// a torn tail and the key's older value comes back with nothing reported. (One flipped bit
/// anywhere is always reported: `props.rs`.)
#[test]
fn damage_to_the_final_sync_point_reads_as_a_torn_tail() {
    let fs = SimFs::new(1);
    let (mut store, _) = open(&fs);
    for value in [&b"old"[..], b"new"] {
        store
            .apply(StoreOp::Put {
                key: "k".into(),
                value: value.to_vec(),
            })
            .unwrap();
        store.apply(StoreOp::Sync).unwrap();
    }
    drop(store);
    let log = Path::new(DIR).join(LOG_FILE);
    let recs = inspect::records(&fs.durable_file(&log).unwrap()).unwrap();
    let last = recs.last().unwrap();
    assert_eq!(last.kind, inspect::RecordKind::Sync);
    assert!(fs.damage(&log, last.off - 1, 1));
    assert!(fs.damage(&log, last.off, 1));
    let (store, rec) = open(&fs);
    assert_eq!(rec.records.get("k").map(Vec::as_slice), Some(&b"old"[..]));
    assert!(rec.corrupt.is_empty());
    assert!(store.stats().torn_tail_bytes > 0);
}
