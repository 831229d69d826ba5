//! Property tests: the store against a model under reopen and power loss, and hostile bytes.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::path::Path;
use std::sync::OnceLock;

use plumb_storage::{Store, StoreOp, StoreOptions, LOG_FILE};
use proptest::prelude::*;

mod common;
use common::apply_model;

const KEYS: &[&str] = &[
    "a/0",
    "a/1",
    "a/10",
    "a/2",
    "b/0",
    "b/1",
    "c",
    "order/slot/00000042",
];
const PREFIXES: &[&str] = &["a/", "a/1", "b/", "c", "", "order/", "zz"];

#[derive(Debug, Clone)]
enum Step {
    Put {
        key: usize,
        len: usize,
        fill: u8,
    },
    Delete {
        key: usize,
    },
    DeletePrefix {
        prefix: usize,
    },
    Sync,
    /// Drop and open again (a process crash after the buffer reached the file).
    Reopen,
    /// Drop, cut the file somewhere after the synced length (power loss), open again.
    PowerLoss {
        frac: u16,
    },
    Compact,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0..KEYS.len(), prop_oneof![0..40usize, 0..700usize], any::<u8>())
            .prop_map(|(key, len, fill)| Step::Put { key, len, fill }),
        3 => (0..KEYS.len()).prop_map(|key| Step::Delete { key }),
        1 => (0..PREFIXES.len()).prop_map(|prefix| Step::DeletePrefix { prefix }),
        3 => Just(Step::Sync),
        1 => Just(Step::Reopen),
        1 => any::<u16>().prop_map(|frac| Step::PowerLoss { frac }),
        1 => Just(Step::Compact),
    ]
}

fn to_op(s: &Step) -> Option<StoreOp> {
    Some(match *s {
        Step::Put { key, len, fill } => StoreOp::Put {
            key: KEYS[key].into(),
            value: (0..len).map(|i| fill.wrapping_add(i as u8)).collect(),
        },
        Step::Delete { key } => StoreOp::Delete {
            key: KEYS[key].into(),
        },
        Step::DeletePrefix { prefix } => StoreOp::DeletePrefix {
            prefix: PREFIXES[prefix].into(),
        },
        Step::Sync => StoreOp::Sync,
        _ => return None,
    })
}

fn opts(threshold: u64) -> StoreOptions {
    StoreOptions {
        compact_threshold: threshold,
        compact_step: 100,
        write_buffer: 300,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Everything synced (or compacted, or recovered by an open) survives power loss, and what
    /// survives of the rest is a prefix of it.
    #[test]
    fn store_matches_model(
        steps in prop::collection::vec(step(), 1..70),
        threshold in prop_oneof![Just(u64::MAX), 300..4000u64],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, rec) = Store::open_with(dir.path(), opts(threshold)).unwrap();
        prop_assert!(rec.is_empty());
        let mut durable: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut pending: Vec<StoreOp> = Vec::new();
        let mut current = BTreeMap::new();
        for s in &steps {
            match s {
                Step::Reopen => {
                    drop(store);
                    let (st, rec) = Store::open_with(dir.path(), opts(threshold)).unwrap();
                    store = st;
                    prop_assert_eq!(&rec.records, &current);
                    prop_assert!(rec.corrupt.is_empty());
                    durable = current.clone();
                    pending.clear();
                }
                Step::PowerLoss { frac } => {
                    let synced = store.stats().synced_bytes;
                    drop(store);
                    let path = dir.path().join(LOG_FILE);
                    let len = fs::metadata(&path).unwrap().len();
                    prop_assert!(len >= synced);
                    let cut = synced + (len - synced) * u64::from(*frac) / u64::from(u16::MAX);
                    OpenOptions::new().write(true).open(&path).unwrap().set_len(cut).unwrap();
                    let (st, rec) = Store::open_with(dir.path(), opts(threshold)).unwrap();
                    store = st;
                    prop_assert!(rec.corrupt.is_empty(), "{:?}", rec.corrupt);
                    let mut state = durable.clone();
                    let mut ok = state == rec.records;
                    for op in &pending {
                        apply_model(&mut state, op);
                        ok |= state == rec.records;
                    }
                    prop_assert!(ok, "recovered {:?} is no prefix state", rec.records);
                    current = rec.records.clone();
                    durable = current.clone();
                    pending.clear();
                }
                Step::Compact => {
                    store.compact().unwrap();
                    durable = current.clone();
                    pending.clear();
                }
                other => {
                    let op = to_op(other).unwrap();
                    let before = store.stats().compactions;
                    store.apply(op.clone()).unwrap();
                    apply_model(&mut current, &op);
                    if op == StoreOp::Sync || store.stats().compactions > before {
                        durable = current.clone();
                        pending.clear();
                    } else {
                        pending.push(op);
                    }
                }
            }
            prop_assert_eq!(store.records(), &current);
            let stats = store.stats();
            prop_assert_eq!(stats.live_records, current.len() as u64);
            prop_assert!(stats.synced_bytes <= stats.log_bytes);
        }
        store.apply(StoreOp::Sync).unwrap();
        drop(store);
        let (_store, rec) = Store::open_with(dir.path(), opts(threshold)).unwrap();
        prop_assert_eq!(rec.records, current);
    }
}

/// Log bytes and the state they hold.
type Base = (Vec<u8>, BTreeMap<String, Vec<u8>>);

/// A synced log with overwrites, deletions, a compaction, a larger value, and its final state.
fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = Store::open(dir.path()).unwrap();
        let mut model = BTreeMap::new();
        let mut run = |s: &mut Store, op: StoreOp| {
            apply_model(&mut model, &op);
            s.apply(op).unwrap();
        };
        for i in 0..12u8 {
            let key = KEYS[i as usize % KEYS.len()];
            run(
                &mut s,
                StoreOp::Put {
                    key: key.into(),
                    value: vec![i; 10 + i as usize],
                },
            );
            if i % 3 == 0 {
                run(&mut s, StoreOp::Sync);
            }
        }
        run(&mut s, StoreOp::Delete { key: "a/1".into() });
        s.compact().unwrap();
        run(
            &mut s,
            StoreOp::Put {
                key: "exec/cp/1".into(),
                value: vec![0xB7; 600],
            },
        );
        run(
            &mut s,
            StoreOp::DeletePrefix {
                prefix: "b/".into(),
            },
        );
        run(&mut s, StoreOp::Sync);
        run(
            &mut s,
            StoreOp::Put {
                key: "b/1".into(),
                value: b"again".to_vec(),
            },
        );
        run(
            &mut s,
            StoreOp::Put {
                key: "c".into(),
                value: b"over".to_vec(),
            },
        );
        run(&mut s, StoreOp::Delete { key: "a/0".into() });
        run(&mut s, StoreOp::Sync);
        drop(s);
        (fs::read(dir.path().join(LOG_FILE)).unwrap(), model)
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        byte: u8,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    /// A lost sector: a run of zeros.
    Zero {
        at: usize,
        len: usize,
    },
    /// Copy a run of the file elsewhere (plausible-looking records in the wrong place).
    Copy {
        from: usize,
        len: usize,
        to: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0..8u8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        1 => any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        1 => (any::<usize>(), 1..600usize).prop_map(|(at, len)| Mutation::Zero { at, len }),
        1 => (any::<usize>(), 1..300usize, any::<usize>())
            .prop_map(|(from, len, to)| Mutation::Copy { from, len, to }),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let n = bytes.len();
    match m {
        Mutation::Flip { at, bit } => bytes[at % n] ^= 1 << bit,
        Mutation::Set { at, byte } => bytes[at % n] = *byte,
        Mutation::Truncate { at } => bytes.truncate(at % n),
        Mutation::Insert { at, bytes: ins } => {
            let at = at % (n + 1);
            bytes.splice(at..at, ins.iter().copied());
        }
        Mutation::Zero { at, len } => {
            let at = at % n;
            let end = (at + len).min(n);
            bytes[at..end].fill(0);
        }
        Mutation::Copy { from, len, to } => {
            let from = from % n;
            let end = (from + len).min(n);
            let run = bytes[from..end].to_vec();
            let to = to % n;
            let end = (to + run.len()).min(n);
            bytes[to..end].copy_from_slice(&run[..end - to]);
        }
    }
}

fn write_log(dir: &Path, bytes: &[u8]) {
    fs::write(dir.join(LOG_FILE), bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Hostile bytes never panic; when the file opens, reopening it gives the same answer.
    #[test]
    fn mutated_logs_never_panic(muts in prop::collection::vec(mutation(), 1..8)) {
        let (good, _) = base();
        let mut bytes = good.clone();
        for m in &muts {
            mutate(&mut bytes, m);
        }
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), &bytes);
        let Ok((store, rec)) = Store::open(dir.path()) else {
            return Ok(());
        };
        for key in &rec.corrupt {
            prop_assert!(!rec.records.contains_key(key));
        }
        prop_assert_eq!(store.records(), &rec.records);
        drop(store);
        let (store, again) = Store::open(dir.path()).unwrap();
        prop_assert_eq!(&again.records, &rec.records);
        prop_assert_eq!(&again.corrupt, &rec.corrupt);
        prop_assert_eq!(store.stats().torn_tail_bytes, 0);
    }

    /// One flipped bit in a synced log never yields a wrong or stale value: every recovered
    /// record has its true value, every other true key is reported corrupt by name, and the
    /// damage is always identified (no anonymous `?corrupt@` span).
    #[test]
    fn one_flipped_bit_is_caught_and_named(at in any::<usize>(), bit in 0..8u8) {
        let (good, model) = base();
        let mut bytes = good.clone();
        mutate(&mut bytes, &Mutation::Flip { at, bit });
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), &bytes);
        match Store::open(dir.path()) {
            Err(
                plumb_storage::StoreError::DamagedHeader { .. }
                | plumb_storage::StoreError::NotALog { .. },
            ) => {
                prop_assert!(at % good.len() < 20);
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
            Ok((_store, rec)) => {
                for (k, v) in &rec.records {
                    prop_assert_eq!(Some(v), model.get(k), "key {}", k);
                }
                for k in model.keys() {
                    prop_assert!(
                        rec.records.contains_key(k) || rec.corrupt.contains(k),
                        "key {} silently lost", k
                    );
                }
                for k in &rec.corrupt {
                    prop_assert!(!k.starts_with("?corrupt@"), "{:?}", rec.corrupt);
                }
            }
        }
    }
}
