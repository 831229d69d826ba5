//! The operations behind the Redis gateway: strings with options, multi-key commands, expiry
//! in agreed time, glob `KEYS`, hashes, lists, sets, deterministic `SPOP`, encodings.

use plumb_app::{AccessSet, Application, Command, NonDeterminism, ObjectId, ObjectState};
use plumb_kv::*;
use plumb_wire::{Life, ReqNo, Seq};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;
use common::{b, batch, err, items, set, splitmix};

fn bs(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| b(s)).collect()
}

fn value(v: &str) -> KvResult {
    KvResult::Value(Some(b(v)))
}

/// Each op in its own batch, at `time`, `time + 1`, ...
fn each(store: &mut KvStore, ops: &[KvOp], time: u64) -> Vec<KvResult> {
    ops.iter()
        .enumerate()
        .flat_map(|(i, op)| batch(store, std::slice::from_ref(op), time + i as u64, 7))
        .collect()
}

fn one(store: &mut KvStore, op: KvOp, time: u64) -> KvResult {
    batch(store, &[op], time, 0).remove(0)
}

fn read(store: &KvStore, op: &KvOp) -> KvResult {
    KvResult::decode(&store.execute_read_only(1, &op.encode())).unwrap()
}

fn set_ex(key: &str, v: &str, expire: SetExpiry, condition: SetCondition, get: bool) -> KvOp {
    KvOp::SetExtended {
        key: b(key),
        value: b(v),
        expire,
        condition,
        get,
    }
}

fn get(key: &str) -> KvOp {
    KvOp::Get { key: b(key) }
}

fn ttl(key: &str) -> KvOp {
    KvOp::Ttl { key: b(key) }
}

fn expire(key: &str, after: i64, condition: ExpireCondition) -> KvOp {
    KvOp::Expire {
        key: b(key),
        after,
        condition,
    }
}

fn hset(key: &str, pairs: &[(&str, &str)]) -> KvOp {
    KvOp::HSet {
        key: b(key),
        fields: pairs.iter().map(|(f, v)| (b(f), b(v))).collect(),
    }
}

fn push(key: &str, end: End, values: &[&str]) -> KvOp {
    KvOp::Push {
        key: b(key),
        end,
        values: bs(values),
    }
}

fn pop(key: &str, end: End, count: Option<u64>) -> KvOp {
    KvOp::Pop {
        key: b(key),
        end,
        count,
    }
}

fn lrange(key: &str, start: i64, stop: i64) -> KvOp {
    KvOp::LRange {
        key: b(key),
        start,
        stop,
    }
}

fn sadd(key: &str, members: &[&str]) -> KvOp {
    KvOp::SAdd {
        key: b(key),
        members: bs(members),
    }
}

fn spop(key: &str, count: Option<u64>) -> KvOp {
    KvOp::SPop { key: b(key), count }
}

/// A store with a string `s`, hash `h`, list `l` and set `z`.
fn one_of_each() -> KvStore {
    let mut store = KvStore::new();
    each(
        &mut store,
        &[
            set("s", "text"),
            hset("h", &[("f", "v")]),
            push("l", End::Right, &["x"]),
            sadd("z", &["m"]),
        ],
        1,
    );
    store
}

#[test]
fn set_extended_conditions_get_and_keepttl() {
    use SetCondition::*;
    use SetExpiry::*;
    let mut store = KvStore::new();
    let replies = each(
        &mut store,
        &[
            set_ex("k", "1", Clear, IfPresent, false), // XX on absent: not written
            get("k"),
            set_ex("k", "1", Clear, IfAbsent, false), // NX on absent: written
            set_ex("k", "2", Clear, IfAbsent, false), // NX on present: not written
            set_ex("k", "3", Clear, IfPresent, true), // XX GET: old value
            set_ex("k", "4", Clear, IfAbsent, true),  // NX GET on present: old value, no write
            get("k"),
            set_ex("new", "v", Clear, Always, true), // GET on absent: nil, written
            get("new"),
        ],
        10,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Bool(false),
            KvResult::Value(None),
            KvResult::Bool(true),
            KvResult::Bool(false),
            value("1"),
            value("3"),
            value("3"),
            KvResult::Value(None),
            value("v"),
        ]
    );

    // KEEPTTL keeps the expiry, a plain write clears it, an expiry is relative to the batch.
    let replies = each(
        &mut store,
        &[
            set_ex("k", "5", After(1_000), Always, false),
            set_ex("k", "6", Keep, Always, false),
            ttl("k"),
            set_ex("k", "7", Clear, Always, false),
            ttl("k"),
        ],
        100,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Bool(true),
            KvResult::Bool(true),
            KvResult::Int(1_000 - 2),
            KvResult::Bool(true),
            KvResult::Int(-1),
        ]
    );
    assert_eq!(
        one(&mut store, set_ex("k", "8", After(0), Always, false), 200),
        KvResult::Bool(true)
    );
    assert_eq!(one(&mut store, get("k"), 201), KvResult::Value(None));
}

#[test]
fn set_get_on_another_kind_is_wrongtype_and_writes_nothing() {
    use SetCondition::*;
    let mut store = one_of_each();
    let before = store.take_checkpoint();
    for key in ["h", "l", "z"] {
        let op = set_ex(key, "v", SetExpiry::Clear, Always, true);
        assert_eq!(one(&mut store, op, 10), err(ERR_WRONG_TYPE), "{key}");
    }
    assert_eq!(store.take_checkpoint(), before);
    // Without GET, SET overwrites any kind; NX sees a key of any kind as present.
    let op = set_ex("h", "v", SetExpiry::Clear, IfAbsent, false);
    assert_eq!(one(&mut store, op, 11), KvResult::Bool(false));
    let op = set_ex("h", "v", SetExpiry::Clear, IfPresent, false);
    assert_eq!(one(&mut store, op, 12), KvResult::Bool(true));
    assert_eq!(one(&mut store, get("h"), 13), value("v"));
}

#[test]
fn delete_many_exists_append_strlen_mget_mset() {
    let mut store = KvStore::new();
    let replies = each(
        &mut store,
        &[
            KvOp::MSet {
                pairs: vec![(b("a"), b("1")), (b("b"), b("2")), (b("a"), b("3"))],
            },
            KvOp::MGet {
                keys: bs(&["a", "b", "c", "a"]),
            },
            KvOp::Exists {
                keys: bs(&["a", "a", "c", "b"]),
            },
            KvOp::Append {
                key: b("a"),
                value: b("xy"),
            },
            KvOp::Append {
                key: b("n"),
                value: b("abc"),
            },
            KvOp::StrLen { key: b("a") },
            KvOp::StrLen { key: b("none") },
            KvOp::DeleteMany {
                keys: bs(&["a", "a", "c", "n"]),
            },
            KvOp::DbSize,
        ],
        1,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Ok,
            KvResult::Values(vec![Some(b("3")), Some(b("2")), None, Some(b("3"))]),
            KvResult::Int(3),
            KvResult::Int(3),
            KvResult::Int(3),
            KvResult::Int(3),
            KvResult::Int(0),
            KvResult::Int(2),
            KvResult::Int(1),
        ]
    );
    // MGET gives nil for other kinds; MSET overwrites them and clears expiries.
    let mut store = one_of_each();
    one(&mut store, expire("s", 50, ExpireCondition::default()), 5);
    let replies = each(
        &mut store,
        &[
            KvOp::MGet {
                keys: bs(&["s", "h", "l", "z"]),
            },
            KvOp::MSet {
                pairs: vec![(b("h"), b("now")), (b("s"), b("str"))],
            },
            ttl("s"),
            KvOp::Type { key: b("h") },
        ],
        6,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Values(vec![Some(b("text")), None, None, None]),
            KvResult::Ok,
            KvResult::Int(-1),
            value("string"),
        ]
    );
}

#[test]
fn append_keeps_expiry_and_type_names_kinds() {
    let mut store = one_of_each();
    one(&mut store, expire("s", 100, ExpireCondition::default()), 10);
    let op = KvOp::Append {
        key: b("s"),
        value: b("!"),
    };
    assert_eq!(one(&mut store, op, 20), KvResult::Int(5));
    assert_eq!(one(&mut store, ttl("s"), 30), KvResult::Int(80));
    for (key, name) in [
        ("s", "string"),
        ("h", "hash"),
        ("l", "list"),
        ("z", "set"),
        ("x", "none"),
    ] {
        assert_eq!(read(&store, &KvOp::Type { key: b(key) }), value(name));
    }
}

#[test]
fn expiry_in_agreed_time_and_ttl_counts_down() {
    let mut store = KvStore::new();
    let op = set_ex(
        "k",
        "v",
        SetExpiry::After(10_000),
        SetCondition::Always,
        false,
    );
    one(&mut store, op, 1_000);
    assert_eq!(one(&mut store, ttl("k"), 1_000), KvResult::Int(10_000));
    assert_eq!(one(&mut store, ttl("k"), 4_000), KvResult::Int(7_000));
    // The read-only path answers relative to the last executed batch (time 4_000).
    assert_eq!(read(&store, &ttl("k")), KvResult::Int(7_000));
    assert_eq!(one(&mut store, ttl("k"), 10_999), KvResult::Int(1));
    // An op of the whole key space at or after the expiry removes the key first.
    assert_eq!(one(&mut store, KvOp::DbSize, 11_000), KvResult::Int(0));
    assert_eq!(one(&mut store, ttl("k"), 11_001), KvResult::Int(-2));
    assert!(store.is_empty());
}

/// The gateway's periodic purge removes every due key, and says how many.
#[test]
fn purge_expired_removes_every_due_key() {
    let mut store = KvStore::new();
    let e = |k: &str, after| set_ex(k, "v", SetExpiry::After(after), SetCondition::Always, false);
    each(
        &mut store,
        &[e("a", 10), e("b", 10), e("c", 1_000), set("d", "v")],
        100,
    );
    assert_eq!(one(&mut store, KvOp::PurgeExpired, 200), KvResult::Int(2));
    assert_eq!(store.len(), 2);
    assert_eq!(one(&mut store, KvOp::PurgeExpired, 201), KvResult::Int(0));
    assert_eq!(KvOp::PurgeExpired.access_set(), AccessSet::All);
    assert!(KvOp::PurgeExpired.is_mutating());
}

/// Expiry is per object (docs/objects.md "Access sets"): a due key stays stored, and its
/// bucket unwritten, until an op that names it runs; no client sees it meanwhile.
#[test]
fn an_expired_key_stays_stored_until_an_op_names_it_and_no_client_sees_it() {
    let mut store = KvStore::new();
    let e = set_ex("e", "v", SetExpiry::After(10), SetCondition::Always, false);
    each(&mut store, &[e, set("p", "v"), set("q", "v")], 100);
    store.take_changed_objects();
    // Past e's expiry, an op naming only p leaves e stored and its bucket untouched.
    assert_eq!(
        one(&mut store, get("p"), 200),
        KvResult::Value(Some(b("v")))
    );
    assert!(store.entry(b"e").is_some() && store.live_entry(b"e").is_none());
    assert_eq!(store.take_changed_objects(), Vec::new());
    // The read-only path leaves it out, key by key and over the key space.
    assert_eq!(read(&store, &get("e")), KvResult::Value(None));
    assert_eq!(read(&store, &ttl("e")), KvResult::Int(-2));
    assert_eq!(
        read(
            &store,
            &KvOp::Exists {
                keys: vec![b("e"), b("p")]
            }
        ),
        KvResult::Int(1)
    );
    assert_eq!(read(&store, &KvOp::DbSize), KvResult::Int(2));
    assert_eq!(
        read(&store, &KvOp::Keys { prefix: Vec::new() }),
        KvResult::Keys(vec![b("p"), b("q")])
    );
    assert_eq!(
        read(&store, &KvOp::KeyspaceStats),
        KvResult::Ints(vec![2, 0])
    );
    // An ordered op that names it removes it first: a read, and its bucket is written.
    assert_eq!(one(&mut store, get("e"), 201), KvResult::Value(None));
    assert!(store.entry(b"e").is_none());
    assert_eq!(store.take_changed_objects(), vec![(bucket_of(b"e"), None)]);
}

#[test]
fn expire_persist_and_their_conditions() {
    let none = ExpireCondition::default();
    let nx = ExpireCondition { nx: true, ..none };
    let xx = ExpireCondition { xx: true, ..none };
    let gt = ExpireCondition { gt: true, ..none };
    let lt = ExpireCondition { lt: true, ..none };
    let mut store = KvStore::new();
    let t = 1_000;
    let replies = batch(
        &mut store,
        &[
            expire("k", 10, none), // absent
            set("k", "v"),
            ttl("k"),
            expire("k", 100, xx), // no expiry: XX fails
            expire("k", 100, gt), // no expiry counts as infinite: GT fails
            expire("k", 100, lt), // LT passes
            ttl("k"),
            expire("k", 200, nx), // has expiry: NX fails
            expire("k", 50, gt),  // not greater
            expire("k", 200, gt),
            expire("k", 300, lt), // not less
            ttl("k"),
            KvOp::Persist { key: b("k") },
            KvOp::Persist { key: b("k") },
            ttl("k"),
            expire("k", 500, nx),
            expire("k", -1, none), // past: removes the key
            KvOp::Exists { keys: bs(&["k"]) },
            set("j", "v"),
            expire("j", 0, none),
            get("j"),
        ],
        t,
        0,
    );
    use KvResult::{Bool, Int};
    assert_eq!(
        replies,
        vec![
            Bool(false),
            KvResult::Ok,
            Int(-1),
            Bool(false),
            Bool(false),
            Bool(true),
            Int(100),
            Bool(false),
            Bool(false),
            Bool(true),
            Bool(false),
            Int(200),
            Bool(true),
            Bool(false),
            Int(-1),
            Bool(true),
            Bool(true),
            Int(0),
            KvResult::Ok,
            Bool(true),
            KvResult::Value(None),
        ]
    );
    // The largest expiry: exact, no overflow.
    one(&mut store, set("big", "v"), t + 1);
    one(&mut store, expire("big", i64::MAX, none), t + 2);
    let at = (t + 2) + i64::MAX as u64;
    assert_eq!(store.entry(b"big").unwrap().expires_at, Some(at));
    assert_eq!(
        one(&mut store, ttl("big"), t + 3),
        KvResult::Int(i64::MAX - 1)
    );
}

#[test]
fn read_only_ttl_after_a_checkpoint_load_needs_the_ordered_path() {
    let mut source = KvStore::new();
    each(
        &mut source,
        &[
            set_ex("e", "v", SetExpiry::After(100), SetCondition::Always, false),
            set("p", "v"),
        ],
        10,
    );
    let mut loaded = KvStore::new();
    loaded.load_checkpoint(&source.take_checkpoint()).unwrap();
    assert_eq!(loaded, source);
    assert_eq!(read(&loaded, &ttl("e")), err(ERR_TTL_NEEDS_ORDER));
    assert_eq!(read(&loaded, &ttl("p")), KvResult::Int(-1));
    assert_eq!(read(&loaded, &ttl("x")), KvResult::Int(-2));
    // The next batch tells the time again; both stores agree from then on.
    assert_eq!(one(&mut loaded, ttl("e"), 50), KvResult::Int(60));
    one(&mut source, get("x"), 50);
    assert_eq!(read(&loaded, &ttl("e")), read(&source, &ttl("e")));
}

#[test]
fn keys_matching_uses_redis_globs() {
    let mut store = KvStore::new();
    let keys = [
        "", "hello", "hallo", "hxllo", "hllo", "heeeello", "user:1", "user:2", "a*b",
    ];
    for k in keys {
        one(&mut store, set(k, "v"), 1);
    }
    let run = |store: &mut KvStore, pattern: &str| {
        let op = KvOp::KeysMatching {
            pattern: b(pattern),
        };
        assert!(!op.is_mutating());
        one(store, op, 2)
    };
    let keys_of = |ks: &[&str]| KvResult::Keys(bs(ks));
    assert_eq!(run(&mut store, "*"), keys_of(&keys_sorted(&keys)));
    assert_eq!(
        run(&mut store, "h?llo"),
        keys_of(&["hallo", "hello", "hxllo"])
    );
    assert_eq!(
        run(&mut store, "h*llo"),
        keys_of(&["hallo", "heeeello", "hello", "hllo", "hxllo"])
    );
    assert_eq!(run(&mut store, "h[ae]llo"), keys_of(&["hallo", "hello"]));
    assert_eq!(run(&mut store, "h[^e]llo"), keys_of(&["hallo", "hxllo"]));
    assert_eq!(run(&mut store, "h[a-f]llo"), keys_of(&["hallo", "hello"]));
    assert_eq!(run(&mut store, "user:*"), keys_of(&["user:1", "user:2"]));
    assert_eq!(run(&mut store, "a\\*b"), keys_of(&["a*b"]));
    assert_eq!(run(&mut store, "nothing*"), keys_of(&[]));
    assert_eq!(
        KvOp::KeysMatching {
            pattern: b("user:?")
        }
        .footprint(),
        Footprint::Prefix(b"user:")
    );
}

fn keys_sorted<'a>(keys: &[&'a str]) -> Vec<&'a str> {
    let mut v = keys.to_vec();
    v.sort();
    v
}

#[test]
fn hashes() {
    let mut store = KvStore::new();
    let replies = each(
        &mut store,
        &[
            hset("h", &[("a", "1"), ("b", "2"), ("a", "3")]),
            hset("h", &[("b", "x"), ("c", "4")]),
            KvOp::HGet {
                key: b("h"),
                field: b("a"),
            },
            KvOp::HGet {
                key: b("h"),
                field: b("zz"),
            },
            KvOp::HGet {
                key: b("none"),
                field: b("a"),
            },
            KvOp::HGetAll { key: b("h") },
            KvOp::HIncrBy {
                key: b("h"),
                field: b("c"),
                delta: 10,
            },
            KvOp::HIncrBy {
                key: b("h"),
                field: b("new"),
                delta: -2,
            },
            KvOp::HIncrBy {
                key: b("h"),
                field: b("b"),
                delta: 1,
            },
            hset("h", &[("m", "9223372036854775807")]),
            KvOp::HIncrBy {
                key: b("h"),
                field: b("m"),
                delta: 1,
            },
            KvOp::HDel {
                key: b("h"),
                fields: bs(&["a", "a", "zz", "b"]),
            },
            KvOp::HDel {
                key: b("h"),
                fields: bs(&["c", "new", "m"]),
            },
            KvOp::Exists { keys: bs(&["h"]) },
            KvOp::HGetAll { key: b("h") },
            KvOp::HDel {
                key: b("h"),
                fields: bs(&["a"]),
            },
            KvOp::HIncrBy {
                key: b("fresh"),
                field: b("f"),
                delta: 5,
            },
        ],
        1,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Int(2),
            KvResult::Int(1),
            value("3"),
            KvResult::Value(None),
            KvResult::Value(None),
            KvResult::Pairs(vec![(b("a"), b("3")), (b("b"), b("x")), (b("c"), b("4"))]),
            KvResult::Int(14),
            KvResult::Int(-2),
            err(ERR_HASH_NOT_INTEGER),
            KvResult::Int(1),
            err(ERR_OVERFLOW),
            KvResult::Int(2),
            KvResult::Int(3),
            KvResult::Int(0),
            KvResult::Pairs(vec![]),
            KvResult::Int(0),
            KvResult::Int(5),
        ]
    );
}

#[test]
fn lists() {
    let mut store = KvStore::new();
    let replies = each(
        &mut store,
        &[
            push("l", End::Left, &["a", "b", "c"]), // c b a
            push("l", End::Right, &["d", "e"]),     // c b a d e
            lrange("l", 0, -1),
            lrange("l", -2, -1),
            lrange("l", 1, 2),
            lrange("l", -100, 100),
            lrange("l", 3, 1),
            lrange("l", 5, 10),
            lrange("l", i64::MIN, i64::MAX),
            KvOp::LLen { key: b("l") },
            pop("l", End::Left, None),
            pop("l", End::Right, None),
            pop("l", End::Left, Some(0)),
            pop("l", End::Right, Some(2)),
            pop("l", End::Left, Some(10)),
            KvOp::LLen { key: b("l") },
            KvOp::Exists { keys: bs(&["l"]) },
            pop("l", End::Left, None),
            pop("l", End::Left, Some(1)),
            lrange("l", 0, -1),
        ],
        1,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Int(3),
            KvResult::Int(5),
            items(&["c", "b", "a", "d", "e"]),
            items(&["d", "e"]),
            items(&["b", "a"]),
            items(&["c", "b", "a", "d", "e"]),
            items(&[]),
            items(&[]),
            items(&["c", "b", "a", "d", "e"]),
            KvResult::Int(5),
            value("c"),
            value("e"),
            items(&[]),
            items(&["d", "a"]),
            items(&["b"]),
            KvResult::Int(0),
            KvResult::Int(0),
            KvResult::Value(None),
            KvResult::Nil,
            items(&[]),
        ]
    );
}

#[test]
fn sets() {
    let mut store = KvStore::new();
    let replies = each(
        &mut store,
        &[
            sadd("s", &["b", "a", "b"]),
            sadd("s", &["c", "a"]),
            KvOp::SMembers { key: b("s") },
            KvOp::SIsMember {
                key: b("s"),
                member: b("a"),
            },
            KvOp::SIsMember {
                key: b("s"),
                member: b("x"),
            },
            KvOp::SIsMember {
                key: b("none"),
                member: b("x"),
            },
            KvOp::SRem {
                key: b("s"),
                members: bs(&["a", "x", "a"]),
            },
            KvOp::SRem {
                key: b("none"),
                members: bs(&["a"]),
            },
            KvOp::SMembers { key: b("none") },
            spop("none", None),
            spop("none", Some(3)),
            spop("s", Some(0)),
        ],
        1,
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Int(2),
            KvResult::Int(1),
            items(&["a", "b", "c"]),
            KvResult::Bool(true),
            KvResult::Bool(false),
            KvResult::Bool(false),
            KvResult::Int(1),
            KvResult::Int(0),
            items(&[]),
            KvResult::Value(None),
            items(&[]),
            items(&[]),
        ]
    );
    // Popping one, then more than remain, empties the set and removes the key.
    let KvResult::Value(Some(first)) = one(&mut store, spop("s", None), 10) else {
        panic!("a member")
    };
    let KvResult::Items(rest) = one(&mut store, spop("s", Some(5)), 11) else {
        panic!("members")
    };
    let mut all: Vec<Vec<u8>> = rest.into_iter().chain([first]).collect();
    all.sort();
    assert_eq!(all, bs(&["b", "c"]));
    assert!(store.is_empty());
}

#[test]
fn spop_is_a_function_of_seed_and_position() {
    let members: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
    let refs: Vec<&str> = members.iter().map(String::as_str).collect();
    let run = |seed: u64, filler: usize| {
        let mut store = KvStore::new();
        one(&mut store, sadd("s", &refs), 1);
        let mut ops: Vec<KvOp> = (0..filler).map(|_| KvOp::DbSize).collect();
        ops.extend([spop("s", None), spop("s", Some(5)), spop("s", None)]);
        let replies = batch(&mut store, &ops, 2, seed);
        (replies[filler..].to_vec(), store.take_checkpoint())
    };
    // Two replicas given the same batches reach the same replies and state.
    for seed in [0, 1, 42, u64::MAX] {
        assert_eq!(run(seed, 0), run(seed, 0));
    }
    // The choice follows the seed and the request's position in the batch.
    let outcomes: std::collections::HashSet<_> = (0..8).map(|seed| run(seed, 0).1).collect();
    assert!(outcomes.len() > 1, "SPOP ignores the seed");
    assert_ne!(run(3, 0).0, run(3, 1).0, "SPOP ignores the position");
    // Popped members are distinct members of the set and no longer in it.
    let (replies, _) = run(9, 0);
    let mut popped = Vec::new();
    for r in replies {
        match r {
            KvResult::Value(Some(m)) => popped.push(m),
            KvResult::Items(ms) => popped.extend(ms),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(popped.len(), 7);
    popped.sort();
    popped.dedup();
    assert_eq!(popped.len(), 7);
}

#[test]
fn type_specific_ops_on_other_kinds_are_wrongtype() {
    let wrong = err(ERR_WRONG_TYPE);
    let on = |key: &str| -> Vec<KvOp> {
        let k = b(key);
        let mut ops = vec![
            get(key),
            KvOp::Increment {
                key: k.clone(),
                delta: 1,
            },
            KvOp::Append {
                key: k.clone(),
                value: b("x"),
            },
            KvOp::StrLen { key: k.clone() },
            set_ex(key, "v", SetExpiry::Clear, SetCondition::Always, true),
            KvOp::HSet {
                key: k.clone(),
                fields: vec![(b("f"), b("v"))],
            },
            KvOp::HGet {
                key: k.clone(),
                field: b("f"),
            },
            KvOp::HDel {
                key: k.clone(),
                fields: bs(&["f"]),
            },
            KvOp::HGetAll { key: k.clone() },
            KvOp::HIncrBy {
                key: k.clone(),
                field: b("f"),
                delta: 1,
            },
            push(key, End::Left, &["x"]),
            push(key, End::Right, &["x"]),
            pop(key, End::Left, None),
            pop(key, End::Right, Some(1)),
            lrange(key, 0, -1),
            KvOp::LLen { key: k.clone() },
            sadd(key, &["x"]),
            KvOp::SRem {
                key: k.clone(),
                members: bs(&["x"]),
            },
            KvOp::SMembers { key: k.clone() },
            KvOp::SIsMember {
                key: k.clone(),
                member: b("x"),
            },
            spop(key, None),
            spop(key, Some(2)),
        ];
        ops.retain(|op| {
            let kind_ops: &[usize] = match key {
                "s" => &[0, 1, 2, 3, 4],
                "h" => &[5, 6, 7, 8, 9],
                "l" => &[10, 11, 12, 13, 14, 15],
                _ => &[16, 17, 18, 19, 20, 21],
            };
            let all = on_all_index(op);
            !kind_ops.contains(&all)
        });
        ops
    };
    for key in ["s", "h", "l", "z"] {
        let mut store = one_of_each();
        let before = store.take_checkpoint();
        for op in on(key) {
            let reply = if op.is_mutating() {
                one(&mut store, op.clone(), 10)
            } else {
                read(&store, &op)
            };
            assert_eq!(reply, wrong, "{op:?}");
        }
        assert_eq!(store.take_checkpoint(), before, "{key}");
    }
}

/// Position of an op's kind in the list used by `type_specific_ops_on_other_kinds_are_wrongtype`.
fn on_all_index(op: &KvOp) -> usize {
    match op {
        KvOp::Get { .. } => 0,
        KvOp::Increment { .. } => 1,
        KvOp::Append { .. } => 2,
        KvOp::StrLen { .. } => 3,
        KvOp::SetExtended { .. } => 4,
        KvOp::HSet { .. } => 5,
        KvOp::HGet { .. } => 6,
        KvOp::HDel { .. } => 7,
        KvOp::HGetAll { .. } => 8,
        KvOp::HIncrBy { .. } => 9,
        KvOp::Push { end: End::Left, .. } => 10,
        KvOp::Push { .. } => 11,
        KvOp::Pop { count: None, .. } => 12,
        KvOp::Pop { .. } => 13,
        KvOp::LRange { .. } => 14,
        KvOp::LLen { .. } => 15,
        KvOp::SAdd { .. } => 16,
        KvOp::SRem { .. } => 17,
        KvOp::SMembers { .. } => 18,
        KvOp::SIsMember { .. } => 19,
        KvOp::SPop { count: None, .. } => 20,
        KvOp::SPop { .. } => 21,
        _ => usize::MAX,
    }
}

#[test]
fn flushall_removes_every_key_and_expiry() {
    let mut store = one_of_each();
    one(&mut store, expire("s", 5, ExpireCondition::default()), 10);
    assert_eq!(one(&mut store, KvOp::FlushAll, 11), KvResult::Ok);
    assert!(store.is_empty());
    assert_eq!(store.take_checkpoint(), KvStore::new().take_checkpoint());
    // No stale expiry index entry removes a later key of the same name.
    one(&mut store, set("s", "again"), 12);
    assert_eq!(one(&mut store, get("s"), 100), value("again"));
    assert_eq!(KvOp::FlushAll.footprint(), Footprint::Prefix(b""));
}

#[test]
fn collections_round_trip_through_checkpoints() {
    let mut store = one_of_each();
    one(
        &mut store,
        expire("l", 1_000, ExpireCondition::default()),
        10,
    );
    let checkpoint = store.take_checkpoint();
    let mut loaded = KvStore::new();
    loaded.load_checkpoint(&checkpoint).unwrap();
    assert_eq!(loaded, store);
    assert_eq!(loaded.take_checkpoint(), checkpoint);
    // The expiry index is rebuilt: the list expires in the loaded store too.
    assert_eq!(one(&mut loaded, KvOp::DbSize, 1_010), KvResult::Int(3));
}

#[test]
fn footprints_name_every_key() {
    let op = KvOp::MSet {
        pairs: vec![(b("a"), b("1")), (b("b"), b("2"))],
    };
    assert_eq!(op.footprint(), Footprint::Keys(vec![&b"a"[..], b"b"]));
    let op = KvOp::DeleteMany {
        keys: bs(&["x", "y"]),
    };
    assert_eq!(op.footprint(), Footprint::Keys(vec![&b"x"[..], b"y"]));
    assert_eq!(
        KvOp::SPop {
            key: b("s"),
            count: None
        }
        .footprint(),
        Footprint::Keys(vec![&b"s"[..]])
    );
}

// ---- Random operations over every kind, for the properties below. ----

const KEYS: &[&str] = &["a", "b", "h", "l", "s"];
const VALS: &[&str] = &["0", "1", "-5", "x", "", "9223372036854775807"];

fn pick<T: Copy>(rng: &mut impl FnMut() -> u64, items: &[T]) -> T {
    items[(rng() % items.len() as u64) as usize]
}

fn some_bytes(rng: &mut impl FnMut() -> u64, from: &[&str]) -> Vec<Vec<u8>> {
    (0..1 + rng() % 3).map(|_| b(pick(rng, from))).collect()
}

fn score(rng: &mut impl FnMut() -> u64) -> Score {
    let x = pick(
        rng,
        &[0.0, -0.0, 1.0, -2.5, 7.0, f64::INFINITY, f64::NEG_INFINITY],
    );
    Score::new(x).unwrap()
}

fn bound(rng: &mut impl FnMut() -> u64) -> ScoreBound {
    ScoreBound {
        score: score(rng),
        exclusive: rng().is_multiple_of(2),
    }
}

/// Each of `NX`, `XX`, `GT`, `LT` one time in four, so some conflict.
fn expire_condition(rng: &mut impl FnMut() -> u64) -> ExpireCondition {
    ExpireCondition {
        nx: rng().is_multiple_of(4),
        xx: rng().is_multiple_of(4),
        gt: rng().is_multiple_of(4),
        lt: rng().is_multiple_of(4),
    }
}

fn any_op(rng: &mut impl FnMut() -> u64) -> KvOp {
    any_op_of(rng, true)
}

/// A random op of any kind; pipelines and transactions only if `nesting` (their ops are
/// single commands).
fn any_op_of(rng: &mut impl FnMut() -> u64, nesting: bool) -> KvOp {
    let key = b(pick(rng, KEYS));
    let v = b(pick(rng, VALS));
    let small = (rng() % 7) as i64 - 3;
    let count = match rng() % 3 {
        0 => None,
        _ => Some(rng() % 4),
    };
    let end = pick(rng, &[End::Left, End::Right]);
    match rng() % 95 {
        0 => KvOp::Get { key },
        1 => KvOp::Set {
            key,
            value: v,
            expire: rng().is_multiple_of(2).then(|| rng() % 20),
        },
        2 => KvOp::Delete { key },
        3 => KvOp::CompareAndSet {
            key,
            expected: Some(v.clone()),
            new: v,
        },
        4 => KvOp::Increment { key, delta: small },
        5 => KvOp::Keys { prefix: vec![] },
        6 if rng().is_multiple_of(2) => KvOp::DbSize,
        6 => KvOp::PurgeExpired,
        7 => {
            let at = rng() % 40;
            KvOp::SetExtended {
                key,
                value: v,
                expire: pick(
                    rng,
                    &[
                        SetExpiry::Clear,
                        SetExpiry::Keep,
                        SetExpiry::After(5),
                        SetExpiry::At(at),
                    ],
                ),
                condition: pick(
                    rng,
                    &[
                        SetCondition::Always,
                        SetCondition::IfAbsent,
                        SetCondition::IfPresent,
                    ],
                ),
                get: rng().is_multiple_of(2),
            }
        }
        8 => KvOp::DeleteMany {
            keys: some_bytes(rng, KEYS),
        },
        9 => KvOp::Exists {
            keys: some_bytes(rng, KEYS),
        },
        10 => KvOp::Append { key, value: v },
        11 => KvOp::StrLen { key },
        12 => KvOp::MGet {
            keys: some_bytes(rng, KEYS),
        },
        13 => KvOp::MSet {
            pairs: some_bytes(rng, KEYS)
                .into_iter()
                .map(|k| (k, v.clone()))
                .collect(),
        },
        14 => KvOp::Expire {
            key,
            after: small * 4,
            condition: expire_condition(rng),
        },
        15 => KvOp::Ttl { key },
        16 => KvOp::KeysMatching {
            pattern: b(pick(rng, &["*", "?", "[ab]*", "h*", "\\a"])),
        },
        17 => KvOp::HSet {
            key,
            fields: some_bytes(rng, VALS)
                .into_iter()
                .map(|f| (f, v.clone()))
                .collect(),
        },
        18 => KvOp::HGet { key, field: v },
        19 => KvOp::HDel {
            key,
            fields: some_bytes(rng, VALS),
        },
        20 => KvOp::HGetAll { key },
        21 => KvOp::HIncrBy {
            key,
            field: v,
            delta: small,
        },
        22 => KvOp::Push {
            key,
            end,
            values: some_bytes(rng, VALS),
        },
        23 => KvOp::Pop { key, end, count },
        24 => KvOp::LRange {
            key,
            start: small,
            stop: -small,
        },
        25 => KvOp::LLen { key },
        26 => KvOp::SAdd {
            key,
            members: some_bytes(rng, VALS),
        },
        27 => KvOp::SRem {
            key,
            members: some_bytes(rng, VALS),
        },
        28 => KvOp::SMembers { key },
        29 => KvOp::SIsMember { key, member: v },
        30 => KvOp::SPop { key, count },
        31 => match rng() % 8 {
            0 => KvOp::FlushAll,
            _ => KvOp::Persist { key },
        },
        32 => KvOp::Type { key },
        33 => {
            let bits = rng();
            let options = ZAddOptions {
                nx: bits & 1 != 0,
                xx: bits & 2 != 0,
                gt: bits & 4 != 0,
                lt: bits & 8 != 0,
                ch: bits & 16 != 0,
                incr: bits & 32 != 0,
            };
            // Mostly compatible options, so most ZADDs write.
            let options = if bits & 64 == 0 {
                ZAddOptions {
                    nx: options.nx && !options.xx,
                    gt: options.gt && !options.nx,
                    lt: options.lt && !options.nx && !options.gt,
                    ..options
                }
            } else {
                options
            };
            let members = some_bytes(rng, VALS)
                .into_iter()
                .map(|m| (score(rng), m))
                .take(if options.incr { 1 } else { 3 })
                .collect();
            KvOp::ZAdd {
                key,
                members,
                options,
            }
        }
        34 => KvOp::ZRem {
            key,
            members: some_bytes(rng, VALS),
        },
        35 => KvOp::ZScore { key, member: v },
        36 => KvOp::ZCard { key },
        37 => KvOp::ZRank {
            key,
            member: v,
            rev: rng().is_multiple_of(2),
        },
        38 => KvOp::ZRange {
            key,
            range: if rng().is_multiple_of(2) {
                ZRangeBy::Index {
                    start: small,
                    stop: -small,
                }
            } else {
                ZRangeBy::Score {
                    min: bound(rng),
                    max: bound(rng),
                    limit: rng()
                        .is_multiple_of(2)
                        .then(|| ((rng() % 4) as i64 - 1, (rng() % 4) as i64 - 1)),
                }
            },
            rev: rng().is_multiple_of(2),
            with_scores: rng().is_multiple_of(2),
        },
        39 => KvOp::ZCount {
            key,
            min: bound(rng),
            max: bound(rng),
        },
        40 => KvOp::ZPop {
            key,
            max: rng().is_multiple_of(2),
            count: count.unwrap_or(1),
        },
        41 | 42 if !nesting => KvOp::Get { key },
        41 => KvOp::Pipeline {
            ops: (0..rng() % 4)
                .map(|_| any_op_of(rng, false).encode())
                .collect(),
        },
        42 => KvOp::Transaction {
            // An arbitrary fingerprint never matches: half the watched transactions abort.
            watched: (0..rng() % 2)
                .map(|_| Watched {
                    key: key.clone(),
                    fingerprint: [rng() as u8; 32],
                })
                .collect(),
            ops: (0..rng() % 4)
                .map(|_| any_op_of(rng, false).encode())
                .collect(),
        },
        43 => KvOp::Fingerprints {
            keys: some_bytes(rng, KEYS),
        },
        44 => KvOp::HMGet {
            key,
            fields: some_bytes(rng, VALS),
        },
        45 => KvOp::HExists { key, field: v },
        46 => KvOp::HLen { key },
        47 => KvOp::HKeys {
            key,
            values: rng().is_multiple_of(2),
        },
        48 => KvOp::HSetNx {
            key,
            field: v.clone(),
            value: v,
        },
        49 => KvOp::HStrLen { key, field: v },
        50 => KvOp::SCard { key },
        51 => KvOp::SMIsMember {
            key,
            members: some_bytes(rng, VALS),
        },
        52 => KvOp::LIndex { key, index: small },
        53 => KvOp::LSet {
            key,
            index: small,
            value: v,
        },
        54 => KvOp::LTrim {
            key,
            start: small,
            stop: -small,
        },
        55 => KvOp::GetDel { key },
        56 => KvOp::Rename {
            from: key,
            to: b(pick(rng, KEYS)),
            nx: rng().is_multiple_of(2),
        },
        57 => KvOp::PopFirst {
            keys: some_bytes(rng, KEYS),
            end,
        },
        58 => KvOp::Move {
            from: key,
            to: b(pick(rng, KEYS)),
            from_end: end,
            to_end: pick(rng, &[End::Left, End::Right]),
        },
        59 => KvOp::Scan {
            cursor: rng() % (1 << 22),
            count: 1 + rng() % 5,
            pattern: rng()
                .is_multiple_of(2)
                .then(|| b(pick(rng, &["*", "h*", "[ab]*"]))),
            kind: rng()
                .is_multiple_of(2)
                .then(|| b(pick(rng, &["string", "hash", "list"]))),
        },
        60 => KvOp::ScanCollection {
            key,
            of: pick(
                rng,
                &[
                    CollectionKind::Hash,
                    CollectionKind::Set,
                    CollectionKind::ZSet,
                ],
            ),
            pattern: rng().is_multiple_of(2).then(|| b(pick(rng, &["*", "a*"]))),
        },
        61 => KvOp::ExpireAt {
            key,
            at: (rng() % 60) as i64 - 10,
            condition: expire_condition(rng),
        },
        62 => KvOp::ExpireTime { key },
        63 => KvOp::LRem {
            key,
            count: small,
            element: v,
        },
        64 => KvOp::LInsert {
            key,
            before: rng().is_multiple_of(2),
            pivot: b(pick(rng, VALS)),
            element: v,
        },
        65 => KvOp::LPos {
            key,
            element: v,
            rank: if small == 0 { 1 } else { small },
            count: count.map(|c| c % 3),
            maxlen: rng() % 4,
        },
        66 => KvOp::SMove {
            from: key,
            to: b(pick(rng, KEYS)),
            member: v,
        },
        67 => KvOp::SRandMember {
            key,
            count: rng().is_multiple_of(2).then_some(small),
        },
        68 => KvOp::MSetNx {
            pairs: some_bytes(rng, KEYS)
                .into_iter()
                .map(|k| (k, v.clone()))
                .collect(),
        },
        69 => KvOp::GetRange {
            key,
            start: small,
            end: -small,
        },
        70 => KvOp::SetRange {
            key,
            offset: rng() % 6,
            value: v,
        },
        71 => KvOp::ZRemRangeByScore {
            key,
            min: bound(rng),
            max: bound(rng),
        },
        72 => KvOp::ZRemRangeByRank {
            key,
            start: small,
            stop: -small,
        },
        74 => KvOp::KeyspaceStats,
        77 | 78 => {
            let mut bounds = [0, 1].map(|_| match rng() % 4 {
                0 => LexBound::Lowest,
                1 => LexBound::Highest,
                2 => LexBound::Inclusive(v.clone()),
                _ => LexBound::Exclusive(v.clone()),
            });
            bounds.swap(0, (rng() % 2) as usize);
            let [min, max] = bounds;
            if rng().is_multiple_of(2) {
                KvOp::ZLexCount { key, min, max }
            } else {
                KvOp::ZRemRangeByLex { key, min, max }
            }
        }
        76 => KvOp::ZSetAlgebra {
            op: pick(rng, &[SetOp::Inter, SetOp::Union, SetOp::Diff]),
            keys: some_bytes(rng, KEYS),
            weights: if rng().is_multiple_of(2) {
                Vec::new()
            } else {
                vec![score(rng), score(rng), score(rng)]
            },
            aggregate: pick(rng, &[Aggregate::Sum, Aggregate::Min, Aggregate::Max]),
            store: rng().is_multiple_of(2).then(|| b(pick(rng, KEYS))),
            with_scores: rng().is_multiple_of(2),
        },
        75 => KvOp::GetEx {
            key,
            expire: pick(
                rng,
                &[
                    None,
                    Some(SetExpiry::Clear),
                    Some(SetExpiry::Keep),
                    Some(SetExpiry::After(5)),
                    Some(SetExpiry::At(20)),
                ],
            ),
        },
        80 => KvOp::ListMPop {
            keys: some_bytes(rng, KEYS),
            end,
            count: 1 + rng() % 3,
        },
        81 => KvOp::ZMPop {
            keys: some_bytes(rng, KEYS),
            max: rng().is_multiple_of(2),
            count: 1 + rng() % 3,
        },
        82 => KvOp::IncrByFloat {
            key,
            delta: score(rng),
        },
        83 => KvOp::HIncrByFloat {
            key,
            field: v,
            delta: score(rng),
        },
        84 => KvOp::HRandField {
            key,
            count: count.map(|n| n as i64 - 2),
            with_values: rng().is_multiple_of(2),
        },
        85 => KvOp::ZRandMember {
            key,
            count: count.map(|n| n as i64 - 2),
            with_scores: rng().is_multiple_of(2),
        },
        86 => KvOp::RandomKey,
        90 => KvOp::MemoryUsage { key },
        91 => KvOp::SetBit {
            key,
            offset: rng() % 20,
            bit: rng().is_multiple_of(2),
        },
        93 => KvOp::Lcs {
            a: key,
            b: b(pick(rng, KEYS)),
            len_only: rng().is_multiple_of(3),
            idx: rng().is_multiple_of(2),
            min_match_len: rng() % 3,
            with_match_len: rng().is_multiple_of(2),
        },
        92 => KvOp::GetBit {
            key,
            offset: rng() % 20,
        },
        87 => KvOp::Copy {
            from: key,
            to: b(pick(rng, KEYS)),
            replace: rng().is_multiple_of(2),
        },
        88 => KvOp::ZRangeStore {
            dest: b(pick(rng, KEYS)),
            src: key,
            range: ZRangeBy::Index {
                start: small,
                stop: -small,
            },
            rev: rng().is_multiple_of(2),
        },
        89 => KvOp::InterCard {
            keys: some_bytes(rng, KEYS),
            limit: rng() % 3,
            sorted: rng().is_multiple_of(2),
        },
        73 => KvOp::ZMScore {
            key,
            members: some_bytes(rng, VALS),
        },
        94 => KvOp::PushExisting {
            key,
            end,
            values: some_bytes(rng, VALS),
        },
        _ => KvOp::SetAlgebra {
            op: pick(rng, &[SetOp::Inter, SetOp::Union, SetOp::Diff]),
            keys: some_bytes(rng, KEYS),
            store: rng().is_multiple_of(2).then(|| b(pick(rng, KEYS))),
        },
    }
}

/// The keys whose entries differ between two stores.
fn changed_keys(a: &KvStore, b: &KvStore) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = a.entries().map(|(k, _)| k.to_vec()).collect();
    keys.extend(b.entries().map(|(k, _)| k.to_vec()));
    keys.sort();
    keys.dedup();
    keys.retain(|k| a.entry(k) != b.entry(k));
    keys
}

#[test]
fn any_op_makes_every_kind() {
    let mut rng = splitmix(5);
    let kinds: std::collections::HashSet<_> = (0..5_000)
        .map(|_| std::mem::discriminant(&any_op(&mut rng)))
        .collect();
    assert_eq!(kinds.len(), 97);
}

fn arb_result() -> impl Strategy<Value = KvResult> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..6);
    prop_oneof![
        proptest::option::of(bytes()).prop_map(KvResult::Value),
        Just(KvResult::Ok),
        any::<bool>().prop_map(KvResult::Bool),
        any::<i64>().prop_map(KvResult::Int),
        "[ -~]{0,12}".prop_map(KvResult::Error),
        proptest::collection::vec(bytes(), 0..4).prop_map(KvResult::Keys),
        proptest::collection::vec(proptest::option::of(bytes()), 0..4).prop_map(KvResult::Values),
        proptest::collection::vec(bytes(), 0..4).prop_map(KvResult::Items),
        proptest::collection::vec((bytes(), bytes()), 0..4).prop_map(KvResult::Pairs),
        Just(KvResult::Nil),
        proptest::option::of(any::<f64>().prop_filter_map("not NaN", Score::new))
            .prop_map(KvResult::Score),
        proptest::collection::vec(
            (bytes(), any::<f64>().prop_filter_map("not NaN", Score::new)),
            0..4
        )
        .prop_map(KvResult::Scored),
        proptest::collection::vec(bytes(), 0..4).prop_map(KvResult::Each),
        Just(KvResult::Aborted),
        proptest::collection::vec(any::<i64>(), 0..4).prop_map(KvResult::Ints),
        (any::<u64>(), proptest::collection::vec(bytes(), 0..4))
            .prop_map(|(c, items)| KvResult::Cursor(c, items)),
        (bytes(), proptest::collection::vec(bytes(), 0..4))
            .prop_map(|(k, items)| KvResult::Popped(k, items)),
        (
            bytes(),
            proptest::collection::vec(
                (bytes(), any::<f64>().prop_filter_map("not NaN", Score::new)),
                0..4
            )
        )
            .prop_map(|(k, scored)| KvResult::PoppedScored(k, scored)),
        (
            proptest::collection::vec(proptest::collection::vec(any::<i64>(), 4..6), 0..3),
            any::<i64>()
        )
            .prop_map(|(ranges, len)| KvResult::Matches(ranges, len)),
    ]
}

proptest! {
    #[test]
    fn every_op_and_result_round_trips(seed: u64, result in arb_result()) {
        let mut rng = splitmix(seed);
        for _ in 0..20 {
            let op = any_op(&mut rng);
            prop_assert_eq!(KvOp::decode(&op.encode()), Ok(op));
        }
        prop_assert_eq!(KvResult::decode(&result.encode()), Ok(result));
    }

    #[test]
    fn damaged_encodings_never_panic(seed: u64, cut in 0usize..64, flip in 0usize..64, bit in 0u8..8) {
        let mut rng = splitmix(seed);
        let mut store = KvStore::new();
        let mut encoded = any_op(&mut rng).encode();
        if !encoded.is_empty() {
            let i = flip % encoded.len();
            encoded[i] ^= 1 << bit;
        }
        encoded.truncate(cut.max(1));
        let _ = KvOp::decode(&encoded);
        let _ = KvResult::decode(&encoded);
        prop_assert!(KvResult::decode(&store.execute_read_only(1, &encoded)).is_ok());
        let replies = batch_raw(&mut store, &encoded);
        prop_assert!(KvResult::decode(&replies).is_ok());
    }

    /// Access sets (docs/objects.md): a batch run on a store that holds only the buckets its
    /// ops' access sets name, and the metadata, replies, pushes and writes exactly as on the
    /// whole store, and changes no bucket outside them; over every op, with keys expiring
    /// between batches.
    #[test]
    fn batches_run_alike_on_their_access_sets(seed: u64, len in 1usize..120, per_batch in 1usize..5) {
        let mut rng = splitmix(seed);
        let ops: Vec<KvOp> = (0..len).map(|_| any_op(&mut rng)).collect();
        let mut whole = KvStore::new();
        let mut served: BTreeMap<ObjectId, Vec<u8>> = BTreeMap::new();
        for (i, chunk) in ops.chunks(per_batch).enumerate() {
            let nd = NonDeterminism { time: 10 + 3 * i as u64, seed: rng() };
            let encoded: Vec<Vec<u8>> = chunk.iter().map(KvOp::encode).collect();
            let commands: Vec<Command<'_>> = encoded
                .iter()
                .map(|op| Command::new(1, Life(0), ReqNo(1), op))
                .collect();
            let set = encoded
                .iter()
                .fold(AccessSet::Objects(Vec::new()), |s, op| s.union(whole.access_set(op)));
            let mut part = KvStore::new();
            if let Some(ids) = set.ids() {
                for id in ids {
                    if let Some(bytes) = served.get(id) {
                        part.load_object(*id, Some(bytes)).unwrap();
                    }
                }
                part.load_object_metadata(&whole.object_metadata()).unwrap();
            }
            // The read-only path, with due keys still stored, answers every read as the
            // ordered path would at the clock of the last batch.
            if let Some(clock) = whole.clock() {
                for op in chunk.iter().filter(|op| !op.is_mutating()) {
                    let mut ordered = whole.clone();
                    let answer = ordered.apply(op, clock);
                    prop_assert_eq!(KvResult::decode(&whole.execute_read_only(1, &op.encode())), Ok(answer), "{:?}", op);
                }
            }
            let out = whole.execute(Seq(i as u64 + 1), &commands, nd);
            let written = whole.take_changed_objects();
            if let Some(ids) = set.ids() {
                prop_assert_eq!(&part.execute(Seq(i as u64 + 1), &commands, nd), &out, "{:?}", chunk);
                part.take_changed_objects();
                for (id, bytes) in &written {
                    let changed = bytes.as_ref().filter(|b| !b.is_empty()) != served.get(id);
                    prop_assert!(!changed || set.contains(*id), "{:?} changed bucket {}", chunk, id.0);
                }
                for id in ids {
                    prop_assert_eq!(part.bucket_bytes(*id), whole.bucket_bytes(*id), "{:?}", chunk);
                }
            }
            for (id, bytes) in written {
                match bytes.filter(|b| !b.is_empty()) {
                    Some(b) => served.insert(id, b),
                    None => served.remove(&id),
                };
            }
        }
    }

    /// Random histories over every op: two replicas agree (APPS2), read-only ops change nothing
    /// a client can see, mutating ops touch only their footprint, checkpoints
    /// round-trip (APPS3/4), and no collection is left empty.
    #[test]
    fn random_histories_keep_the_invariants(seed: u64, len in 1usize..120, per_batch in 1usize..5) {
        let mut rng = splitmix(seed);
        let ops: Vec<KvOp> = (0..len).map(|_| any_op(&mut rng)).collect();
        let (mut a, mut replica) = (KvStore::new(), KvStore::new());
        for (i, chunk) in ops.chunks(per_batch).enumerate() {
            let time = 10 + 3 * i as u64;
            let nd_seed = rng();
            let expected = batch(&mut replica, chunk, time, nd_seed);
            // Replay on `a` one op at a time, checking each op's effects.
            let mut replies = Vec::new();
            for (j, op) in chunk.iter().enumerate() {
                let before = a.clone();
                let reply = a.apply_seeded(op, time, request_seed(nd_seed, j));
                if !op.is_mutating() {
                    // A read removes the due keys it names (expiry is per object), which no
                    // client could see: with every due key gone, the states are equal.
                    let visible = |s: &KvStore| {
                        let mut s = s.clone();
                        s.apply(&KvOp::PurgeExpired, time);
                        s
                    };
                    prop_assert_eq!(visible(&a), visible(&before), "{:?} changed state", op);
                }
                let changed = changed_keys(&before, &a);
                match op.footprint() {
                    Footprint::Keys(keys) => {
                        for k in &changed {
                            prop_assert!(keys.contains(&k.as_slice()), "{:?} changed {:?}", op, k);
                        }
                    }
                    Footprint::Prefix(p) => {
                        for k in &changed {
                            prop_assert!(k.starts_with(p), "{:?} changed {:?}", op, k);
                        }
                    }
                }
                replies.push(reply);
            }
            prop_assert_eq!(&replies, &expected);
            prop_assert_eq!(a.take_checkpoint(), replica.take_checkpoint());
            for (k, e) in a.entries() {
                let empty = match &e.value {
                    Value::Str(_) => false,
                    Value::Hash(h) => h.is_empty(),
                    Value::List(l) => l.is_empty(),
                    Value::Set(s) => s.is_empty(),
                    Value::ZSet(z) => z.is_empty(),
                };
                prop_assert!(!empty, "empty collection at {:?}", k);
                // A due key stays stored until an op names it, but no client sees it.
                prop_assert_eq!(a.live_entry(k).is_some(), e.expires_at.is_none_or(|at| at > time));
            }
        }
        let mut loaded = KvStore::new();
        loaded.load_checkpoint(&a.take_checkpoint()).unwrap();
        prop_assert_eq!(&loaded, &a);
        prop_assert_eq!(loaded.take_checkpoint(), a.take_checkpoint());
    }
}

/// One raw request as a batch of one; its raw reply.
fn batch_raw(store: &mut KvStore, op: &[u8]) -> Vec<u8> {
    let cmd = Command::new(1, Life(0), ReqNo(1), op);
    let out = store.execute(Seq(1), &[cmd], NonDeterminism { time: 1, seed: 0 });
    out.replies.into_iter().next().unwrap()
}
