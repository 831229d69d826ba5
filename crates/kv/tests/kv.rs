//! Properties of the key-value application, named after what they check.

use plumb_app::{Application, Command, NonDeterminism};
use plumb_kv::*;
use plumb_wire::{Life, ReqNo, Seq};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;
use common::{assert_checkpoint_refused, splitmix};

const KEYS: &[&[u8]] = &[b"a", b"ab", b"b", b"counter"];

fn nd(time: u64) -> NonDeterminism {
    NonDeterminism { time, seed: 0 }
}

/// Execute encoded ops as one batch at `time`; the decoded replies.
fn run_batch(store: &mut KvStore, seq: u64, ops: &[Vec<u8>], time: u64) -> Vec<KvResult> {
    let batch: Vec<Command<'_>> = ops
        .iter()
        .map(|op| Command::new(1, Life(0), ReqNo(seq), op))
        .collect();
    let out = store.execute(Seq(seq), &batch, nd(time));
    assert_eq!(out.replies.len(), ops.len());
    assert!(out.pushes.is_empty());
    out.replies
        .iter()
        .map(|r| KvResult::decode(r).expect("the store's replies decode"))
        .collect()
}

/// Execute ops one per batch, batch `i` at time `base + i`.
fn run_each(store: &mut KvStore, ops: &[KvOp], base: u64) -> Vec<KvResult> {
    ops.iter()
        .enumerate()
        .flat_map(|(i, op)| run_batch(store, i as u64, &[op.encode()], base + i as u64))
        .collect()
}

fn set(key: &[u8], value: &[u8], expire: Option<u64>) -> KvOp {
    KvOp::Set {
        key: key.to_vec(),
        value: value.to_vec(),
        expire,
    }
}

fn get(key: &[u8]) -> KvOp {
    KvOp::Get { key: key.to_vec() }
}

fn incr(key: &[u8], delta: i64) -> KvOp {
    KvOp::Increment {
        key: key.to_vec(),
        delta,
    }
}

fn cas(key: &[u8], expected: Option<&[u8]>, new: &[u8]) -> KvOp {
    KvOp::CompareAndSet {
        key: key.to_vec(),
        expected: expected.map(<[u8]>::to_vec),
        new: new.to_vec(),
    }
}

fn value(v: &[u8]) -> KvResult {
    KvResult::Value(Some(v.to_vec()))
}

fn random_batches(seed: u64, batches: usize, per_batch: usize) -> Vec<Vec<Vec<u8>>> {
    let mut rng = splitmix(seed);
    (0..batches)
        .map(|_| {
            (0..per_batch)
                .map(|_| random_op_with_expiry(&mut rng, KEYS, 5).encode())
                .collect()
        })
        .collect()
}

/// A store holding a hash at `h`, which no implemented operation can create.
fn checkpoint_with_hash() -> Vec<u8> {
    let mut entries = BTreeMap::new();
    let hash = BTreeMap::from([(b"field".to_vec(), b"v".to_vec())]);
    entries.insert(
        b"h".to_vec(),
        Entry {
            value: Value::Hash(hash),
            expires_at: None,
        },
    );
    entries.insert(
        b"s".to_vec(),
        Entry {
            value: Value::Str(b"x".to_vec()),
            expires_at: Some(50),
        },
    );
    let mut bytes = vec![CHECKPOINT_VERSION];
    bytes.extend(postcard::to_stdvec(&entries).unwrap());
    bytes
}

#[test]
fn apps2_same_batches_give_same_replies_and_digests() {
    for seed in 0..20 {
        let batches = random_batches(seed, 30, 8);
        let (mut a, mut b) = (KvStore::new(), KvStore::new());
        for (i, batch) in batches.iter().enumerate() {
            let time = 1 + i as u64;
            assert_eq!(
                run_batch(&mut a, i as u64, batch, time),
                run_batch(&mut b, i as u64, batch, time)
            );
            assert_eq!(a.state_digest(), b.state_digest(), "seed {seed} batch {i}");
        }
    }
}

#[test]
fn apps2_digest_tells_different_states_apart() {
    let (mut a, mut b) = (KvStore::new(), KvStore::new());
    run_each(&mut a, &[set(b"k", b"1", None)], 1);
    run_each(&mut b, &[set(b"k", b"2", None)], 1);
    assert_ne!(a.state_digest(), b.state_digest());
    run_each(&mut b, &[set(b"k", b"1", Some(10))], 2);
    assert_ne!(a.state_digest(), b.state_digest(), "the expiry is state");
}

#[test]
fn apps3_checkpoint_twice_gives_same_bytes() {
    let mut store = KvStore::new();
    for (i, batch) in random_batches(7, 20, 6).iter().enumerate() {
        run_batch(&mut store, i as u64, batch, 1 + i as u64);
    }
    let first = store.take_checkpoint();
    let second = store.take_checkpoint();
    assert_eq!(first, second);
    assert_eq!(store.state_digest(), plumb_crypto::Digest::of(&first));
}

#[test]
fn apps3_equal_states_from_different_histories_give_same_bytes() {
    let (mut a, mut b) = (KvStore::new(), KvStore::new());
    run_each(&mut a, &[set(b"x", b"1", None), set(b"y", b"2", None)], 1);
    let ops = [
        set(b"x", b"0", None),
        set(b"z", b"gone", None),
        set(b"y", b"2", None),
        set(b"t", b"expires", Some(1)),
        incr(b"x", 1),
        KvOp::Delete { key: b"z".to_vec() },
    ];
    run_each(&mut b, &ops, 1);
    run_each(&mut b, &[get(b"t")], 100); // names t, which has expired: removes it
    assert_eq!(a.take_checkpoint(), b.take_checkpoint());
}

#[test]
fn apps4_load_of_take_restores_the_state() {
    let mut store = KvStore::new();
    for (i, batch) in random_batches(3, 20, 6).iter().enumerate() {
        run_batch(&mut store, i as u64, batch, 1 + i as u64);
    }
    store.apply(&set(b"later", b"v", Some(1_000)), 20);
    let checkpoint = store.take_checkpoint();
    let mut fresh = KvStore::new();
    fresh.load_checkpoint(&checkpoint).unwrap();
    assert_eq!(fresh, store);
    assert_eq!(fresh.state_digest(), store.state_digest());
}

#[test]
fn apps4_load_replaces_a_different_prior_state() {
    let mut source = KvStore::new();
    run_each(
        &mut source,
        &[set(b"a", b"1", Some(100)), set(b"b", b"2", None)],
        1,
    );
    let checkpoint = source.take_checkpoint();

    let mut other = KvStore::new();
    run_each(
        &mut other,
        &[
            set(b"c", b"3", Some(5)),
            set(b"a", b"9", None),
            incr(b"n", 4),
        ],
        1,
    );
    other.load_checkpoint(&checkpoint).unwrap();
    assert_eq!(other, source);

    // Both continue identically, expiry included (the expiry index is rebuilt on load).
    let more: Vec<KvOp> = vec![get(b"a"), get(b"c"), KvOp::DbSize, get(b"a")];
    let expected = run_each(&mut source, &more, 100);
    assert_eq!(run_each(&mut other, &more, 100), expected);
    assert_eq!(expected[0], value(b"1"), "a expires at 101");
    assert_eq!(expected[3], KvResult::Value(None));
}

#[test]
fn apps4_corrupt_checkpoints_are_refused_and_leave_state_unchanged() {
    let mut good = KvStore::new();
    run_each(
        &mut good,
        &[set(b"a", b"1", None), set(b"b", b"2", Some(9))],
        1,
    );
    let checkpoint = good.take_checkpoint();

    let mut wrong_version = checkpoint.clone();
    wrong_version[0] = CHECKPOINT_VERSION + 1;
    let mut trailing = checkpoint.clone();
    trailing.push(0);
    let truncated = checkpoint[..checkpoint.len() - 1].to_vec();
    // Two keys in descending order: decodes as a map, but is not the canonical encoding.
    let mut unsorted = vec![CHECKPOINT_VERSION, 2];
    for key in [b"b", b"a"] {
        unsorted.extend([1, key[0], 0, 1, b'v', 0]); // key, Value::Str("v"), no expiry
    }
    let empty_hash = {
        let mut entries = BTreeMap::new();
        entries.insert(
            b"h".to_vec(),
            Entry {
                value: Value::Hash(BTreeMap::new()),
                expires_at: None,
            },
        );
        let mut bytes = vec![CHECKPOINT_VERSION];
        bytes.extend(postcard::to_stdvec(&entries).unwrap());
        bytes
    };

    let mut sorted = unsorted.clone();
    sorted[3] = b'a';
    sorted[9] = b'b';
    assert!(
        KvStore::from_canonical_bytes(&sorted).is_ok(),
        "the hand-made encoding is right"
    );

    for bad in [
        vec![],
        wrong_version,
        trailing,
        truncated,
        unsorted,
        empty_hash,
        vec![1, 0xff],
    ] {
        let mut store = KvStore::new();
        run_each(&mut store, &[set(b"keep", b"me", None)], 1);
        assert_checkpoint_refused(&mut store, &bad);
    }
}

#[test]
fn expiry_follows_agreed_time() {
    let mut store = KvStore::new();
    run_batch(&mut store, 1, &[set(b"k", b"v", Some(10)).encode()], 100);
    assert_eq!(
        run_batch(&mut store, 2, &[get(b"k").encode()], 109),
        vec![value(b"v")]
    );
    // Read-only reads the state as of the last batch (time 109): still live.
    let read = KvResult::decode(&store.execute_read_only(1, &get(b"k").encode())).unwrap();
    assert_eq!(read, value(b"v"));
    // Expiry at 110: absent at a batch time of 110, removed from the state.
    let replies = run_batch(
        &mut store,
        3,
        &[get(b"k").encode(), KvOp::DbSize.encode()],
        110,
    );
    assert_eq!(replies, vec![KvResult::Value(None), KvResult::Int(0)]);
    assert!(store.is_empty());
}

/// Expiry is per object (docs/objects.md "Access sets"): a due key is removed when an op
/// names it, so stores that named different keys hold different bytes until an op of the
/// whole key space removes every due key; clients see the same either way.
#[test]
fn expiry_is_per_object_and_no_client_sees_a_due_key() {
    let (mut read, mut unread) = (KvStore::new(), KvStore::new());
    for store in [&mut read, &mut unread] {
        run_batch(
            store,
            1,
            &[
                set(b"k", b"v", Some(5)).encode(),
                set(b"j", b"w", None).encode(),
            ],
            10,
        );
    }
    run_batch(&mut read, 2, &[get(b"k").encode()], 20);
    run_batch(&mut unread, 2, &[get(b"j").encode()], 20);
    assert_ne!(read.take_checkpoint(), unread.take_checkpoint());
    let all = KvOp::Keys { prefix: vec![] }.encode();
    assert_eq!(
        read.execute_read_only(1, &all),
        unread.execute_read_only(1, &all)
    );
    for store in [&mut read, &mut unread] {
        let keys = store.apply(&KvOp::Keys { prefix: vec![] }, 20);
        assert_eq!(keys, KvResult::Keys(vec![b"j".to_vec()]));
    }
    assert_eq!(read.take_checkpoint(), unread.take_checkpoint());
}

#[test]
fn expiry_zero_means_absent_at_once_and_set_clears_expiry() {
    let mut store = KvStore::new();
    let ops = [
        set(b"old", b"1", None),
        set(b"old", b"2", Some(0)),
        get(b"old"),
        set(b"k", b"1", Some(3)),
        set(b"k", b"2", None),
    ];
    let replies = run_batch(
        &mut store,
        1,
        &ops.iter().map(KvOp::encode).collect::<Vec<_>>(),
        10,
    );
    assert_eq!(replies[1], KvResult::Ok);
    assert_eq!(replies[2], KvResult::Value(None));
    assert_eq!(
        run_batch(&mut store, 2, &[get(b"k").encode()], 1_000),
        vec![value(b"2")]
    );
}

#[test]
fn expiry_is_kept_by_increment_and_cleared_by_compare_and_set() {
    let mut store = KvStore::new();
    run_each(
        &mut store,
        &[
            set(b"n", b"1", Some(10)),
            incr(b"n", 1),
            set(b"c", b"x", Some(10)),
        ],
        100,
    );
    assert_eq!(store.entry(b"n").unwrap().expires_at, Some(110));
    run_each(&mut store, &[cas(b"c", Some(b"x"), b"y")], 105);
    assert_eq!(store.entry(b"c").unwrap().expires_at, None);
    assert_eq!(
        run_each(&mut store, &[get(b"n"), get(b"c")], 110),
        vec![KvResult::Value(None), value(b"y")]
    );
}

#[test]
fn expiry_far_in_the_future_saturates() {
    let mut store = KvStore::new();
    run_each(&mut store, &[set(b"k", b"v", Some(u64::MAX))], 5);
    assert_eq!(store.entry(b"k").unwrap().expires_at, Some(u64::MAX));
    assert_eq!(
        run_each(&mut store, &[get(b"k")], u64::MAX - 1),
        vec![value(b"v")]
    );
}

#[test]
fn increment_semantics() {
    let mut store = KvStore::new();
    let ops = [
        incr(b"n", 5), // missing counts as 0
        incr(b"n", -7),
        get(b"n"), // stored as decimal ASCII
        set(b"s", b"abc", None),
        incr(b"s", 1), // not an integer
        get(b"s"),     // unchanged
        set(b"z", b"007", None),
        incr(b"z", 1), // non-canonical decimal is not an integer
        set(b"big", b"9223372036854775807", None),
        incr(b"big", 1), // overflow
        get(b"big"),     // unchanged
        set(b"min", b"-9223372036854775808", None),
        incr(b"min", -1),
        incr(b"min", i64::MAX),
    ];
    let replies = run_each(&mut store, &ops, 1);
    assert_eq!(replies[0], KvResult::Int(5));
    assert_eq!(replies[1], KvResult::Int(-2));
    assert_eq!(replies[2], value(b"-2"));
    assert_eq!(replies[4], KvResult::Error(ERR_NOT_INTEGER.into()));
    assert_eq!(replies[5], value(b"abc"));
    assert_eq!(replies[7], KvResult::Error(ERR_NOT_INTEGER.into()));
    assert_eq!(replies[9], KvResult::Error(ERR_OVERFLOW.into()));
    assert_eq!(replies[10], value(b"9223372036854775807"));
    assert_eq!(replies[12], KvResult::Error(ERR_OVERFLOW.into()));
    assert_eq!(replies[13], KvResult::Int(-1));
}

#[test]
fn increment_error_leaves_state_unchanged() {
    let mut store = KvStore::new();
    run_each(&mut store, &[set(b"s", b"x", Some(50))], 1);
    let before = store.take_checkpoint();
    assert_eq!(
        run_each(&mut store, &[incr(b"s", 1)], 2),
        vec![KvResult::Error(ERR_NOT_INTEGER.into())]
    );
    assert_eq!(store.take_checkpoint(), before);
}

#[test]
fn parse_integer_accepts_only_canonical_decimal() {
    for (text, expected) in [
        (&b"0"[..], Some(0)),
        (b"-12", Some(-12)),
        (b"9223372036854775807", Some(i64::MAX)),
        (b"-9223372036854775808", Some(i64::MIN)),
        (b"9223372036854775808", None),
        (b"+1", None),
        (b"01", None),
        (b"-0", None),
        (b" 1", None),
        (b"", None),
        (b"-", None),
        (b"1e3", None),
        (b"\xff", None),
    ] {
        assert_eq!(
            parse_integer(text),
            expected,
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn get_set_delete_compare_and_set_keys_dbsize_semantics() {
    let mut store = KvStore::new();
    let ops = [
        get(b"a"),
        set(b"a", b"1", None),
        get(b"a"),
        KvOp::Delete { key: b"a".to_vec() },
        KvOp::Delete { key: b"a".to_vec() },
        cas(b"a", Some(b"1"), b"2"), // absent, expected a value
        cas(b"a", None, b"2"),       // absent, expected absent
        cas(b"a", None, b"3"),       // present, expected absent
        cas(b"a", Some(b"x"), b"3"), // wrong value
        cas(b"a", Some(b"2"), b"3"),
        get(b"a"),
        set(b"ab", b"", None),
        set(b"b", b"", None),
        KvOp::Keys {
            prefix: b"a".to_vec(),
        },
        KvOp::Keys { prefix: vec![] },
        KvOp::Keys {
            prefix: b"c".to_vec(),
        },
        KvOp::DbSize,
    ];
    let replies = run_each(&mut store, &ops, 1);
    let keys = |ks: &[&[u8]]| KvResult::Keys(ks.iter().map(|k| k.to_vec()).collect());
    let expected = vec![
        KvResult::Value(None),
        KvResult::Ok,
        value(b"1"),
        KvResult::Bool(true),
        KvResult::Bool(false),
        KvResult::Bool(false),
        KvResult::Bool(true),
        KvResult::Bool(false),
        KvResult::Bool(false),
        KvResult::Bool(true),
        value(b"3"),
        KvResult::Ok,
        KvResult::Ok,
        keys(&[b"a", b"ab"]),
        keys(&[b"a", b"ab", b"b"]),
        keys(&[]),
        KvResult::Int(3),
    ];
    assert_eq!(replies, expected);
}

#[test]
fn wrong_type_is_an_error_and_set_overwrites_any_type() {
    let mut store = KvStore::new();
    store.load_checkpoint(&checkpoint_with_hash()).unwrap();
    let wrong = KvResult::Error(ERR_WRONG_TYPE.into());
    let replies = run_each(
        &mut store,
        &[get(b"h"), incr(b"h", 1), cas(b"h", Some(b"v"), b"w")],
        1,
    );
    assert_eq!(replies, vec![wrong.clone(), wrong.clone(), wrong]);
    let replies = run_each(
        &mut store,
        &[
            cas(b"h", None, b"w"),
            KvOp::DbSize,
            set(b"h", b"s", None),
            get(b"h"),
        ],
        10,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Bool(false),
            KvResult::Int(2),
            KvResult::Ok,
            value(b"s")
        ]
    );
    // `s` expired at 50 from the loaded state.
    assert_eq!(
        run_each(&mut store, &[KvOp::DbSize], 50),
        vec![KvResult::Int(1)]
    );
}

#[test]
fn malformed_op_bytes_get_an_error_reply_and_change_nothing() {
    let mut store = KvStore::new();
    run_each(&mut store, &[set(b"a", b"1", None)], 1);
    let before = store.state_digest();
    let mut trailing = set(b"a", b"2", None).encode();
    trailing.push(0);
    let mut wrong_version = set(b"a", b"2", None).encode();
    wrong_version[0] = OP_VERSION + 1;
    let malformed = KvResult::Error(ERR_MALFORMED.into());
    for bad in [
        vec![],
        vec![OP_VERSION],
        vec![OP_VERSION, 200],
        trailing,
        wrong_version,
    ] {
        assert_eq!(
            run_batch(&mut store, 2, std::slice::from_ref(&bad), 2),
            vec![malformed.clone()]
        );
        assert_eq!(
            KvResult::decode(&store.execute_read_only(1, &bad)).unwrap(),
            malformed
        );
    }
    assert_eq!(store.state_digest(), before);
}

#[test]
fn mutating_op_on_read_only_path_is_refused_without_change() {
    let mut store = KvStore::new();
    run_each(&mut store, &[set(b"a", b"1", None)], 1);
    let before = store.clone();
    for op in [
        set(b"a", b"2", None),
        KvOp::Delete { key: b"a".to_vec() },
        cas(b"a", Some(b"1"), b"2"),
        incr(b"n", 1),
    ] {
        assert!(op.is_mutating());
        let reply = KvResult::decode(&store.execute_read_only(1, &op.encode())).unwrap();
        assert_eq!(reply, KvResult::Error(ERR_NOT_READ_ONLY.into()));
    }
    assert_eq!(store, before);
    let read = |op: KvOp| KvResult::decode(&store.execute_read_only(1, &op.encode())).unwrap();
    assert_eq!(read(get(b"a")), value(b"1"));
    assert_eq!(read(KvOp::DbSize), KvResult::Int(1));
    assert_eq!(
        read(KvOp::Keys { prefix: vec![] }),
        KvResult::Keys(vec![b"a".to_vec()])
    );
}

#[test]
fn decode_errors_name_their_cause() {
    assert_eq!(KvOp::decode(&[]), Err(DecodeError::Empty));
    assert_eq!(KvOp::decode(&[9, 0]), Err(DecodeError::UnknownVersion(9)));
    assert_eq!(KvOp::decode(&[OP_VERSION, 99]), Err(DecodeError::Malformed));
    let mut trailing = KvResult::Ok.encode();
    trailing.push(1);
    assert_eq!(
        KvResult::decode(&trailing),
        Err(DecodeError::TrailingBytes(1))
    );
}

#[test]
fn random_op_produces_every_kind_and_is_total_on_no_keys() {
    let mut rng = splitmix(1);
    let mut kinds = std::collections::HashSet::new();
    for _ in 0..2_000 {
        let op = random_op(&mut rng, KEYS);
        kinds.insert(std::mem::discriminant(&op));
        if let KvOp::Set { expire, .. } = op {
            assert_eq!(expire, None);
        }
    }
    assert_eq!(kinds.len(), 7);
    let op = random_op(&mut rng, &[]);
    assert_eq!(KvOp::decode(&op.encode()), Ok(op));
    let with_expiry = (0..200).any(|_| {
        matches!(
            random_op_with_expiry(&mut rng, KEYS, 10),
            KvOp::Set {
                expire: Some(_),
                ..
            }
        )
    });
    assert!(with_expiry);
}

#[test]
fn footprint_names_the_keys_an_op_touches() {
    assert_eq!(incr(b"n", 1).footprint(), Footprint::Keys(vec![&b"n"[..]]));
    assert_eq!(
        KvOp::Keys {
            prefix: b"p".to_vec()
        }
        .footprint(),
        Footprint::Prefix(b"p")
    );
    assert_eq!(KvOp::DbSize.footprint(), Footprint::Prefix(b""));
}

/// A direct transcription of the spec: lazy expiry checks, no index, no purge.
#[derive(Default)]
struct Model {
    map: BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)>,
}

impl Model {
    fn live(&self, now: u64) -> impl Iterator<Item = (&Vec<u8>, &Vec<u8>)> {
        self.map
            .iter()
            .filter(move |(_, (_, at))| !matches!(at, Some(at) if *at <= now))
            .map(|(k, (v, _))| (k, v))
    }

    fn current(&self, key: &[u8], now: u64) -> Option<(Vec<u8>, Option<u64>)> {
        self.map
            .get(key)
            .filter(|(_, at)| !matches!(at, Some(at) if *at <= now))
            .cloned()
    }

    fn apply(&mut self, op: &KvOp, now: u64) -> KvResult {
        match op {
            KvOp::Get { key } => KvResult::Value(self.current(key, now).map(|(v, _)| v)),
            KvOp::Set { key, value, expire } => {
                self.map.insert(
                    key.clone(),
                    (value.clone(), expire.map(|e| now.saturating_add(e))),
                );
                KvResult::Ok
            }
            KvOp::Delete { key } => {
                let existed = self.current(key, now).is_some();
                self.map.remove(key);
                KvResult::Bool(existed)
            }
            KvOp::CompareAndSet { key, expected, new } => {
                let swap = self.current(key, now).map(|(v, _)| v) == *expected;
                if swap {
                    self.map.insert(key.clone(), (new.clone(), None));
                }
                KvResult::Bool(swap)
            }
            KvOp::Increment { key, delta } => {
                let (old, at) = self.current(key, now).unwrap_or((b"0".to_vec(), None));
                let Some(n) = std::str::from_utf8(&old)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|n| n.to_string().as_bytes() == old)
                else {
                    return KvResult::Error(ERR_NOT_INTEGER.into());
                };
                let Some(new) = n.checked_add(*delta) else {
                    return KvResult::Error(ERR_OVERFLOW.into());
                };
                self.map
                    .insert(key.clone(), (new.to_string().into_bytes(), at));
                KvResult::Int(new)
            }
            KvOp::Keys { prefix } => KvResult::Keys(
                self.live(now)
                    .filter(|(k, _)| k.starts_with(prefix))
                    .map(|(k, _)| k.clone())
                    .collect(),
            ),
            KvOp::DbSize => KvResult::Int(self.live(now).count() as i64),
            other => unimplemented!("random_op never makes {other:?}"),
        }
    }
}

proptest! {
    #[test]
    fn apps2_different_batchings_give_same_replies_and_digest(seed: u64, len in 0usize..200, cuts_a in 1usize..8, cuts_b in 1usize..8) {
        let mut rng = splitmix(seed);
        let ops: Vec<Vec<u8>> = (0..len).map(|_| random_op(&mut rng, KEYS).encode()).collect();
        let run = |size: usize| {
            let mut store = KvStore::new();
            let mut replies = Vec::new();
            for (i, batch) in ops.chunks(size).enumerate() {
                replies.extend(run_batch(&mut store, i as u64, batch, 1 + i as u64));
            }
            (replies, store.state_digest())
        };
        prop_assert_eq!(run(cuts_a), run(cuts_b));
    }

    #[test]
    fn store_matches_the_spec_model_with_expiry(seed: u64, len in 0usize..300, per_batch in 1usize..6) {
        let mut rng = splitmix(seed);
        let (mut store, mut model) = (KvStore::new(), Model::default());
        let ops: Vec<KvOp> = (0..len).map(|_| random_op_with_expiry(&mut rng, KEYS, 8)).collect();
        for (i, batch) in ops.chunks(per_batch).enumerate() {
            let time = 10 + 2 * i as u64;
            let encoded: Vec<Vec<u8>> = batch.iter().map(KvOp::encode).collect();
            let replies = run_batch(&mut store, i as u64, &encoded, time);
            let expected: Vec<KvResult> = batch.iter().map(|op| model.apply(op, time)).collect();
            prop_assert_eq!(replies, expected);
        }
    }

    #[test]
    fn apps4_load_take_round_trips_random_states(seed: u64, len in 0usize..100) {
        let mut rng = splitmix(seed);
        let mut store = KvStore::new();
        for i in 0..len {
            store.apply(&random_op_with_expiry(&mut rng, KEYS, 20), i as u64);
        }
        let mut other = KvStore::new();
        other.apply(&set(b"prior", b"state", Some(3)), 0);
        other.load_checkpoint(&store.take_checkpoint()).unwrap();
        prop_assert_eq!(&other, &store);
        prop_assert_eq!(other.take_checkpoint(), store.take_checkpoint());
    }

    #[test]
    fn op_and_result_encodings_round_trip(seed: u64) {
        let mut rng = splitmix(seed);
        let op = random_op_with_expiry(&mut rng, KEYS, 100);
        prop_assert_eq!(KvOp::decode(&op.encode()), Ok(op.clone()));
        let result = KvStore::new().apply(&op, 1);
        prop_assert_eq!(KvResult::decode(&result.encode()), Ok(result));
    }

    #[test]
    fn decoders_are_total_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = KvOp::decode(&bytes);
        let _ = KvResult::decode(&bytes);
        let mut store = KvStore::new();
        let reply = KvResult::decode(&store.execute_read_only(1, &bytes));
        prop_assert!(reply.is_ok());
        if let Ok(loaded) = KvStore::from_canonical_bytes(&bytes) {
            prop_assert_eq!(loaded.canonical_bytes(), bytes.clone());
        }
        let replies = run_batch(&mut store, 1, &[bytes], 1);
        prop_assert_eq!(replies.len(), 1);
    }
}
