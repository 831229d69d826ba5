//! Sorted sets: scores (parsing, order, Redis' printing), every sorted-set operation with its
//! options and errors, kinds, read-only execution, determinism and checkpoints.

use plumb_app::{Application, Command, NonDeterminism};
use plumb_kv::*;
use plumb_wire::{Life, ReqNo, Seq};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;
use common::{assert_checkpoint_refused, b, batch, err, items, set, splitmix};

fn sc(x: f64) -> Score {
    Score::new(x).unwrap()
}

fn incl(x: f64) -> ScoreBound {
    ScoreBound::inclusive(sc(x))
}

fn excl(x: f64) -> ScoreBound {
    ScoreBound::exclusive(sc(x))
}

fn scored(v: &[(&str, f64)]) -> KvResult {
    KvResult::Scored(v.iter().map(|(m, s)| (b(m), sc(*s))).collect())
}

fn score(x: f64) -> KvResult {
    KvResult::Score(Some(sc(x)))
}

fn one(store: &mut KvStore, op: KvOp) -> KvResult {
    batch(store, &[op], 10, 0).remove(0)
}

/// A read-only op on both paths: the results must agree; the result.
fn read(store: &KvStore, op: KvOp) -> KvResult {
    assert!(!op.is_mutating(), "{op:?}");
    let fast = KvResult::decode(&store.execute_read_only(1, &op.encode())).unwrap();
    let mut ordered = store.clone();
    let slow = one(&mut ordered, op.clone());
    assert_eq!(fast, slow, "{op:?}");
    assert_eq!(&ordered, store, "{op:?} changed state");
    fast
}

fn zadd_with(key: &str, pairs: &[(f64, &str)], options: ZAddOptions) -> KvOp {
    KvOp::ZAdd {
        key: b(key),
        members: pairs.iter().map(|(s, m)| (sc(*s), b(m))).collect(),
        options,
    }
}

fn zadd(key: &str, pairs: &[(f64, &str)]) -> KvOp {
    zadd_with(key, pairs, ZAddOptions::default())
}

fn opts(words: &str) -> ZAddOptions {
    let mut o = ZAddOptions::default();
    for w in words.split_whitespace() {
        match w {
            "nx" => o.nx = true,
            "xx" => o.xx = true,
            "gt" => o.gt = true,
            "lt" => o.lt = true,
            "ch" => o.ch = true,
            "incr" => o.incr = true,
            other => panic!("{other}"),
        }
    }
    o
}

fn zscore(key: &str, member: &str) -> KvOp {
    KvOp::ZScore {
        key: b(key),
        member: b(member),
    }
}

fn zrange(key: &str, start: i64, stop: i64, rev: bool, with_scores: bool) -> KvOp {
    KvOp::ZRange {
        key: b(key),
        range: ZRangeBy::Index { start, stop },
        rev,
        with_scores,
    }
}

fn zbyscore(
    key: &str,
    min: ScoreBound,
    max: ScoreBound,
    limit: Option<(i64, i64)>,
    rev: bool,
) -> KvOp {
    KvOp::ZRange {
        key: b(key),
        range: ZRangeBy::Score { min, max, limit },
        rev,
        with_scores: false,
    }
}

fn all(key: &str) -> KvOp {
    zrange(key, 0, -1, false, true)
}

fn zpop(key: &str, max: bool, count: u64) -> KvOp {
    KvOp::ZPop {
        key: b(key),
        max,
        count,
    }
}

fn zrank(key: &str, member: &str, rev: bool) -> KvOp {
    KvOp::ZRank {
        key: b(key),
        member: b(member),
        rev,
    }
}

/// `z` holding g=-1 a=1 b=2 c=3 d=4 e=5 f=5.
fn seven() -> KvStore {
    let mut store = KvStore::new();
    let pairs = [
        (1.0, "a"),
        (2.0, "b"),
        (3.0, "c"),
        (4.0, "d"),
        (5.0, "e"),
        (5.0, "f"),
        (-1.0, "g"),
    ];
    assert_eq!(one(&mut store, zadd("z", &pairs)), KvResult::Int(7));
    store
}

// ---- Scores ----

#[test]
fn scores_parse_as_redis_zadd_reads_them() {
    for (text, want) in [
        ("1", 1.0),
        ("-2.5", -2.5),
        ("+1.5", 1.5),
        ("1.", 1.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("1E-3", 0.001),
        ("inf", f64::INFINITY),
        ("+inf", f64::INFINITY),
        ("-inf", f64::NEG_INFINITY),
        ("INF", f64::INFINITY),
        ("Infinity", f64::INFINITY),
        ("-infinity", f64::NEG_INFINITY),
        ("4.9e-324", 5e-324),
        ("1e-310", 1e-310),
        ("0", 0.0),
        ("0e500", 0.0),
        ("1.7976931348623157e308", f64::MAX),
    ] {
        assert_eq!(Score::parse(text.as_bytes()), Some(sc(want)), "{text}");
    }
    for text in [
        "", " 1", "1 ", "nan", "NaN", "-nan", "x", "1x", "1e", "e5", ".", "1e400", "-1e400",
        "1e-400", "0x10", "1,5", "1_0", "infinit", "\u{0}",
    ] {
        assert_eq!(Score::parse(text.as_bytes()), None, "{text:?}");
    }
    assert_eq!(Score::parse(b"\xff"), None);
    assert_eq!(Score::new(f64::NAN), None);
}

#[test]
fn score_bounds_parse_as_redis_zslparserange() {
    for (text, bound) in [
        ("1", incl(1.0)),
        ("(1", excl(1.0)),
        ("-inf", incl(f64::NEG_INFINITY)),
        ("(+inf", excl(f64::INFINITY)),
        // strtod's leniency: leading spaces, overflow, empty text.
        (" 2", incl(2.0)),
        ("1e400", incl(f64::INFINITY)),
        ("(-1e400", excl(f64::NEG_INFINITY)),
        ("", incl(0.0)),
        ("(", excl(0.0)),
    ] {
        assert_eq!(ScoreBound::parse(text.as_bytes()), Some(bound), "{text}");
    }
    for text in ["x", "nan", "(nan", "  ", "((1", "1 ", "[1", "1x"] {
        assert_eq!(ScoreBound::parse(text.as_bytes()), None, "{text:?}");
    }
}

#[test]
fn scores_print_as_redis_7_0_does() {
    // Expected texts: C's "%.17g" (Python's '%.17g' and redis-server 7.0.15 agree).
    for (x, text) in [
        (1.0, "1"),
        (1.5, "1.5"),
        (-2.5, "-2.5"),
        (100.0, "100"),
        (0.1, "0.10000000000000001"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1.0 / 3.0, "0.33333333333333331"),
        (3.0000000000000004, "3.0000000000000004"),
        (123456789.123, "123456789.123"),
        // Exactly ...45.125: a tie at 17 digits, rounded to even as C does.
        (123_456_789_012_345.0 + 0.125, "123456789012345.12"),
        (0.0001, "0.0001"),
        (0.00001, "1.0000000000000001e-05"),
        (2.5e-5, "2.5000000000000001e-05"),
        (-2.5e-10, "-2.5000000000000002e-10"),
        (1e16, "10000000000000000"),
        (9.999999999999999e16, "99999999999999984"),
        (1e17, "1e+17"),
        (1e20, "1e+20"),
        (1e21, "1e+21"),
        (f64::MAX, "1.7976931348623157e+308"),
        (5e-324, "4.9406564584124654e-324"),
        (1e-320, "9.9998886718268301e-321"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (0.0, "0"),
        (-0.0, "-0"),
    ] {
        assert_eq!(sc(x).to_string(), text, "{x:e}");
    }
}

#[test]
fn scores_have_a_total_order_and_encode_as_f64() {
    let mut v = vec![sc(2.0), sc(f64::INFINITY), sc(-1.0), sc(0.0), sc(-0.0)];
    v.sort();
    assert_eq!(v, [sc(-1.0), sc(-0.0), sc(0.0), sc(2.0), sc(f64::INFINITY)]);
    assert_ne!(sc(0.0), sc(-0.0));
    assert_eq!(sc(-0.0).normalized(), sc(0.0));
    assert_eq!(postcard::to_stdvec(&sc(1.5)).unwrap(), 1.5f64.to_le_bytes());
    let nan = postcard::to_stdvec(&f64::NAN).unwrap();
    assert!(postcard::from_bytes::<Score>(&nan).is_err());
}

// ---- Operations ----

#[test]
fn zadd_adds_updates_and_counts() {
    let mut store = KvStore::new();
    assert_eq!(
        one(&mut store, zadd("z", &[(1.0, "a"), (2.0, "b"), (3.0, "c")])),
        KvResult::Int(3)
    );
    assert_eq!(one(&mut store, zadd("z", &[(1.0, "a")])), KvResult::Int(0));
    // A member listed twice: the later score wins, added once.
    assert_eq!(
        one(&mut store, zadd("z", &[(7.0, "n"), (8.0, "n")])),
        KvResult::Int(1)
    );
    assert_eq!(read(&store, zscore("z", "n")), score(8.0));
    let op = zadd_with("z", &[(5.0, "a"), (2.0, "b"), (0.5, "d")], opts("ch"));
    assert_eq!(one(&mut store, op), KvResult::Int(2));
    assert_eq!(
        read(&store, all("z")),
        scored(&[("d", 0.5), ("b", 2.0), ("c", 3.0), ("a", 5.0), ("n", 8.0)])
    );
    assert_eq!(read(&store, KvOp::Type { key: b("z") }), {
        KvResult::Value(Some(b("zset")))
    });
}

#[test]
fn zadd_options_follow_redis_7() {
    let mut store = KvStore::new();
    one(&mut store, zadd("z", &[(1.0, "a"), (2.0, "b"), (3.0, "c")]));
    type Case<'a> = (&'a str, Vec<(f64, &'a str)>, KvResult);
    let cases: Vec<Case> = vec![
        ("nx", vec![(10.0, "a"), (10.0, "e")], KvResult::Int(1)),
        ("xx", vec![(11.0, "a"), (11.0, "f")], KvResult::Int(0)),
        ("gt ch", vec![(1.0, "a"), (20.0, "b")], KvResult::Int(1)),
        (
            "lt ch",
            vec![(1.0, "a"), (30.0, "c"), (7.0, "g")],
            KvResult::Int(2),
        ),
        (
            "xx gt ch",
            vec![(100.0, "a"), (1.0, "zz")],
            KvResult::Int(1),
        ),
        ("xx lt incr", vec![(1.0, "a")], KvResult::Score(None)),
        ("xx lt incr", vec![(-1.0, "a")], score(99.0)),
        ("gt incr", vec![(-1.0, "a")], KvResult::Score(None)),
        ("nx incr", vec![(1.0, "a")], KvResult::Score(None)),
        ("nx incr", vec![(1.5, "h")], score(1.5)),
        ("incr", vec![(0.0, "h")], score(1.5)),
    ];
    for (words, pairs, want) in cases {
        let op = zadd_with("z", &pairs, opts(words));
        assert_eq!(one(&mut store, op), want, "{words} {pairs:?}");
    }
    assert_eq!(
        read(&store, all("z")),
        scored(&[
            ("h", 1.5),
            ("c", 3.0),
            ("g", 7.0),
            ("e", 10.0),
            ("b", 20.0),
            ("a", 99.0)
        ])
    );
    // XX on an absent key creates nothing.
    for o in ["xx", "xx incr", "xx ch"] {
        let reply = one(&mut store, zadd_with("new", &[(1.0, "a")], opts(o)));
        assert!(matches!(reply, KvResult::Int(0) | KvResult::Score(None)));
        assert_eq!(store.entry(b"new"), None);
    }
}

#[test]
fn zadd_errors_change_nothing() {
    let mut store = KvStore::new();
    one(&mut store, zadd("z", &[(f64::INFINITY, "a")]));
    let before = store.take_checkpoint();
    let cases = [
        (opts("nx xx"), vec![(1.0, "a")], ERR_ZADD_NX_XX),
        (opts("nx gt"), vec![(1.0, "a")], ERR_ZADD_GT_LT_NX),
        (opts("nx lt"), vec![(1.0, "a")], ERR_ZADD_GT_LT_NX),
        (opts("gt lt"), vec![(1.0, "a")], ERR_ZADD_GT_LT_NX),
        (
            opts("incr"),
            vec![(1.0, "a"), (2.0, "b")],
            ERR_ZADD_INCR_PAIRS,
        ),
        (opts("incr"), vec![], ERR_ZADD_INCR_PAIRS),
        (opts("incr"), vec![(f64::NEG_INFINITY, "a")], ERR_SCORE_NAN),
    ];
    for (o, pairs, text) in cases {
        for key in ["z", "absent"] {
            if key == "absent" && text == ERR_SCORE_NAN {
                continue;
            }
            assert_eq!(one(&mut store, zadd_with(key, &pairs, o)), err(text));
        }
    }
    assert_eq!(store.take_checkpoint(), before);
    assert_eq!(ERR_NOT_FLOAT, "ERR value is not a valid float");
    assert_eq!(ERR_SCORE_NAN, "ERR resulting score is not a number (NaN)");
}

#[test]
fn zadd_empty_pairs_add_nothing_and_create_nothing() {
    let mut store = KvStore::new();
    assert_eq!(one(&mut store, zadd("z", &[])), KvResult::Int(0));
    assert!(store.is_empty());
}

#[test]
fn negative_zero_is_stored_as_zero_as_redis_does() {
    let mut store = KvStore::new();
    // ZINCRBY replies the sum it computed; the set stores 0.
    let op = zadd_with("z", &[(-0.0, "n")], opts("incr"));
    assert_eq!(one(&mut store, op), score(-0.0));
    assert_eq!(read(&store, zscore("z", "n")), score(0.0));
    one(&mut store, zadd("z", &[(-0.0, "a"), (0.0, "b")]));
    assert_eq!(
        read(&store, all("z")),
        scored(&[("a", 0.0), ("b", 0.0), ("n", 0.0)])
    );
    // -0 does not update 0 (not counted by CH).
    let op = zadd_with("z", &[(-0.0, "b")], opts("ch"));
    assert_eq!(one(&mut store, op), KvResult::Int(0));
    let mut other = KvStore::new();
    one(&mut other, zadd("z", &[(0.0, "a"), (0.0, "b"), (0.0, "n")]));
    assert_eq!(other.take_checkpoint(), store.take_checkpoint());
    assert_eq!(
        read(
            &store,
            KvOp::ZCount {
                key: b("z"),
                min: incl(-0.0),
                max: incl(-0.0),
            }
        ),
        KvResult::Int(3)
    );
    assert_eq!(
        read(&store, zbyscore("z", excl(-0.0), incl(1.0), None, false)),
        items(&[])
    );
}

#[test]
fn zincr_sums_and_reports_nan() {
    let mut store = KvStore::new();
    let incr = |x: f64| zadd_with("z", &[(x, "m")], opts("incr"));
    assert_eq!(one(&mut store, incr(0.1)), score(0.1));
    assert_eq!(one(&mut store, incr(0.2)), score(0.1 + 0.2));
    assert_eq!(one(&mut store, incr(f64::INFINITY)), score(f64::INFINITY));
    assert_eq!(one(&mut store, incr(f64::NEG_INFINITY)), err(ERR_SCORE_NAN));
    assert_eq!(read(&store, zscore("z", "m")), score(f64::INFINITY));
    assert_eq!(one(&mut store, incr(1.0)), score(f64::INFINITY));
}

#[test]
fn zscore_zcard_zrank() {
    let store = seven();
    assert_eq!(read(&store, zscore("z", "e")), score(5.0));
    assert_eq!(read(&store, zscore("z", "x")), KvResult::Score(None));
    assert_eq!(read(&store, zscore("none", "x")), KvResult::Score(None));
    assert_eq!(read(&store, KvOp::ZCard { key: b("z") }), KvResult::Int(7));
    assert_eq!(read(&store, KvOp::ZCard { key: b("n") }), KvResult::Int(0));
    for (member, rank) in [("g", 0), ("a", 1), ("e", 5), ("f", 6)] {
        assert_eq!(read(&store, zrank("z", member, false)), KvResult::Int(rank));
        assert_eq!(
            read(&store, zrank("z", member, true)),
            KvResult::Int(6 - rank)
        );
    }
    assert_eq!(read(&store, zrank("z", "x", false)), KvResult::Value(None));
    assert_eq!(read(&store, zrank("n", "x", true)), KvResult::Value(None));
}

#[test]
fn zrange_by_index() {
    let store = seven();
    let r = |start, stop, rev| read(&store, zrange("z", start, stop, rev, false));
    assert_eq!(r(0, -1, false), items(&["g", "a", "b", "c", "d", "e", "f"]));
    assert_eq!(r(2, 4, false), items(&["b", "c", "d"]));
    assert_eq!(r(-3, -1, false), items(&["d", "e", "f"]));
    assert_eq!(r(-100, 1, false), items(&["g", "a"]));
    assert_eq!(r(5, 100, false), items(&["e", "f"]));
    assert_eq!(r(5, 2, false), items(&[]));
    assert_eq!(r(7, 9, false), items(&[]));
    assert_eq!(r(0, -8, false), items(&[]));
    assert_eq!(r(i64::MIN, i64::MAX, false), r(0, -1, false));
    assert_eq!(r(0, 1, true), items(&["f", "e"]));
    assert_eq!(r(-2, -1, true), items(&["a", "g"]));
    assert_eq!(
        read(&store, zrange("z", -3, -1, false, true)),
        scored(&[("d", 4.0), ("e", 5.0), ("f", 5.0)])
    );
    assert_eq!(read(&store, zrange("n", 0, -1, false, false)), items(&[]));
    assert_eq!(read(&store, zrange("n", 0, -1, true, true)), scored(&[]));
}

#[test]
fn zrange_by_score_with_bounds_limit_and_direction() {
    let store = seven();
    let r = |min, max, limit, rev| read(&store, zbyscore("z", min, max, limit, rev));
    let inf = f64::INFINITY;
    assert_eq!(
        r(incl(-inf), incl(inf), None, false),
        items(&["g", "a", "b", "c", "d", "e", "f"])
    );
    assert_eq!(
        r(excl(1.0), excl(5.0), None, false),
        items(&["b", "c", "d"])
    );
    assert_eq!(
        r(excl(1.0), incl(5.0), None, true),
        items(&["f", "e", "d", "c", "b"])
    );
    assert_eq!(r(incl(4.0), incl(2.0), None, false), items(&[]));
    assert_eq!(r(excl(2.0), incl(2.0), None, false), items(&[]));
    assert_eq!(r(incl(5.0), incl(5.0), None, true), items(&["f", "e"]));
    assert_eq!(r(incl(2.5), incl(2.7), None, false), items(&[]));
    assert_eq!(r(incl(inf), incl(inf), None, false), items(&[]));
    assert_eq!(
        r(excl(-inf), excl(inf), None, false),
        r(incl(-inf), incl(inf), None, false)
    );
    // LIMIT offset count: negative count takes all, negative offset nothing.
    let (lo, hi) = (incl(2.0), incl(4.0));
    assert_eq!(r(lo, hi, Some((1, 1)), false), items(&["c"]));
    assert_eq!(r(lo, hi, Some((1, -1)), false), items(&["c", "d"]));
    assert_eq!(r(lo, hi, Some((-1, 2)), false), items(&[]));
    assert_eq!(r(lo, hi, Some((0, 0)), false), items(&[]));
    assert_eq!(r(lo, hi, Some((10, 1)), false), items(&[]));
    assert_eq!(r(lo, hi, Some((1, 1)), true), items(&["c"]));
    assert_eq!(
        r(incl(-inf), incl(inf), Some((0, 2)), true),
        items(&["f", "e"])
    );
    let with = KvOp::ZRange {
        key: b("z"),
        range: ZRangeBy::Score {
            min: excl(3.0),
            max: incl(inf),
            limit: None,
        },
        rev: true,
        with_scores: true,
    };
    assert_eq!(
        read(&store, with),
        scored(&[("f", 5.0), ("e", 5.0), ("d", 4.0)])
    );
    let count = |min, max| {
        read(
            &store,
            KvOp::ZCount {
                key: b("z"),
                min,
                max,
            },
        )
    };
    assert_eq!(count(incl(-inf), incl(inf)), KvResult::Int(7));
    assert_eq!(count(excl(1.0), incl(5.0)), KvResult::Int(5));
    assert_eq!(count(incl(5.0), excl(5.0)), KvResult::Int(0));
    assert_eq!(count(incl(5.0), incl(5.0)), KvResult::Int(2));
    assert_eq!(count(incl(9.0), incl(1.0)), KvResult::Int(0));
    let absent = KvOp::ZCount {
        key: b("n"),
        min: incl(0.0),
        max: incl(1.0),
    };
    assert_eq!(read(&store, absent), KvResult::Int(0));
}

#[test]
fn scores_at_the_edges_of_the_float_range_order_and_range() {
    let mut store = KvStore::new();
    let inf = f64::INFINITY;
    let pairs = [
        (-inf, "a"),
        (-f64::MAX, "b"),
        (-5e-324, "c"),
        (0.0, "d"),
        (5e-324, "e"),
        (f64::MAX, "f"),
        (inf, "g"),
    ];
    one(&mut store, zadd("z", &pairs));
    let r = |min, max, rev| read(&store, zbyscore("z", min, max, None, rev));
    assert_eq!(
        r(incl(-inf), incl(inf), false),
        items(&["a", "b", "c", "d", "e", "f", "g"])
    );
    assert_eq!(
        r(excl(-inf), excl(inf), true),
        items(&["f", "e", "d", "c", "b"])
    );
    assert_eq!(r(excl(0.0), incl(f64::MAX), false), items(&["e", "f"]));
    assert_eq!(r(incl(inf), incl(inf), true), items(&["g"]));
    assert_eq!(r(incl(-inf), excl(-f64::MAX), false), items(&["a"]));
}

#[test]
fn zrem_and_zpop_remove_and_drop_emptied_keys() {
    let mut store = seven();
    let op = KvOp::ZRem {
        key: b("z"),
        members: vec![b("a"), b("x"), b("b"), b("a")],
    };
    assert_eq!(one(&mut store, op), KvResult::Int(2));
    let op = KvOp::ZRem {
        key: b("n"),
        members: vec![b("a")],
    };
    assert_eq!(one(&mut store, op), KvResult::Int(0));
    assert!(store.entry(b"n").is_none());
    assert_eq!(one(&mut store, zpop("z", false, 1)), scored(&[("g", -1.0)]));
    assert_eq!(one(&mut store, zpop("z", true, 1)), scored(&[("f", 5.0)]));
    assert_eq!(
        one(&mut store, zpop("z", false, 2)),
        scored(&[("c", 3.0), ("d", 4.0)])
    );
    assert_eq!(one(&mut store, zpop("z", true, 0)), scored(&[]));
    assert_eq!(
        one(&mut store, zpop("z", true, u64::MAX)),
        scored(&[("e", 5.0)])
    );
    assert!(store.is_empty());
    assert_eq!(one(&mut store, zpop("z", false, 1)), scored(&[]));
    assert_eq!(one(&mut store, zpop("z", false, 0)), scored(&[]));
    one(&mut store, zadd("z", &[(1.0, "a")]));
    let op = KvOp::ZRem {
        key: b("z"),
        members: vec![b("a")],
    };
    assert_eq!(one(&mut store, op), KvResult::Int(1));
    assert!(store.is_empty());
    assert_eq!(store.take_checkpoint(), KvStore::new().take_checkpoint());
}

#[test]
fn an_emptied_zset_keeps_no_expiry_behind() {
    let mut store = KvStore::new();
    one(&mut store, zadd("z", &[(1.0, "a")]));
    let exp = KvOp::Expire {
        key: b("z"),
        after: 100,
        condition: ExpireCondition::default(),
    };
    assert_eq!(one(&mut store, exp), KvResult::Bool(true));
    one(&mut store, zpop("z", false, 1));
    one(&mut store, zadd("z", &[(2.0, "b")]));
    // The new set has no expiry, and the old expiry time does not remove it.
    let later = batch(&mut store, &[KvOp::Ttl { key: b("z") }], 1_000, 0);
    assert_eq!(later, [KvResult::Int(-1)]);
    // A zset with an expiry goes at its time.
    let exp = KvOp::Expire {
        key: b("z"),
        after: 5,
        condition: ExpireCondition::default(),
    };
    batch(&mut store, &[exp], 1_000, 0);
    assert_eq!(
        batch(&mut store, &[KvOp::ZCard { key: b("z") }], 1_005, 0),
        [KvResult::Int(0)]
    );
}

#[test]
fn zset_ops_on_other_kinds_and_other_ops_on_zsets_are_wrongtype() {
    let mut store = KvStore::new();
    let setup = [
        set("s", "text"),
        KvOp::HSet {
            key: b("h"),
            fields: vec![(b("f"), b("v"))],
        },
        KvOp::Push {
            key: b("l"),
            end: End::Left,
            values: vec![b("x")],
        },
        KvOp::SAdd {
            key: b("t"),
            members: vec![b("m")],
        },
        zadd("z", &[(1.0, "m")]),
    ];
    batch(&mut store, &setup, 1, 0);
    let zset_ops = |key: &str| {
        vec![
            zadd(key, &[(1.0, "m")]),
            zadd_with(key, &[(1.0, "m")], opts("xx")),
            zadd_with(key, &[(1.0, "m")], opts("incr")),
            KvOp::ZRem {
                key: b(key),
                members: vec![b("m")],
            },
            zscore(key, "m"),
            KvOp::ZCard { key: b(key) },
            zrank(key, "m", false),
            zrank(key, "m", true),
            zrange(key, 0, -1, false, false),
            zrange(key, 0, -1, true, true),
            zbyscore(key, incl(0.0), incl(1.0), Some((0, 1)), false),
            KvOp::ZCount {
                key: b(key),
                min: incl(0.0),
                max: incl(1.0),
            },
            zpop(key, false, 1),
            zpop(key, true, 0),
        ]
    };
    let other_ops = vec![
        KvOp::Get { key: b("z") },
        KvOp::Increment {
            key: b("z"),
            delta: 1,
        },
        KvOp::Append {
            key: b("z"),
            value: b("x"),
        },
        KvOp::StrLen { key: b("z") },
        KvOp::HGet {
            key: b("z"),
            field: b("f"),
        },
        KvOp::HSet {
            key: b("z"),
            fields: vec![(b("f"), b("v"))],
        },
        KvOp::HGetAll { key: b("z") },
        KvOp::Push {
            key: b("z"),
            end: End::Right,
            values: vec![b("x")],
        },
        KvOp::LRange {
            key: b("z"),
            start: 0,
            stop: -1,
        },
        KvOp::SAdd {
            key: b("z"),
            members: vec![b("x")],
        },
        KvOp::SMembers { key: b("z") },
        KvOp::SPop {
            key: b("z"),
            count: None,
        },
    ];
    let before = store.take_checkpoint();
    let mut ops: Vec<KvOp> = ["s", "h", "l", "t"]
        .iter()
        .flat_map(|k| zset_ops(k))
        .collect();
    ops.extend(other_ops);
    for op in ops {
        let reply = if op.is_mutating() {
            one(&mut store, op.clone())
        } else {
            read(&store, op.clone())
        };
        assert_eq!(reply, err(ERR_WRONG_TYPE), "{op:?}");
    }
    assert_eq!(store.take_checkpoint(), before);
    // Writes of any kind replace a zset, as they replace other kinds.
    one(&mut store, set("z", "v"));
    assert_eq!(one(&mut store, KvOp::Get { key: b("z") }), {
        KvResult::Value(Some(b("v")))
    });
}

#[test]
fn zset_ops_are_classified_and_name_their_key() {
    let store = seven();
    let reads = [
        zscore("z", "a"),
        KvOp::ZCard { key: b("z") },
        zrank("z", "a", true),
        zrange("z", 0, 1, false, true),
        zbyscore("z", incl(0.0), incl(1.0), None, true),
        KvOp::ZCount {
            key: b("z"),
            min: incl(0.0),
            max: incl(1.0),
        },
    ];
    let writes = [
        zadd("z", &[(1.0, "a")]),
        KvOp::ZRem {
            key: b("z"),
            members: vec![b("a")],
        },
        zpop("z", true, 2),
    ];
    for op in &reads {
        assert!(!op.is_mutating(), "{op:?}");
        assert_eq!(op.footprint(), Footprint::Keys(vec![&b"z"[..]]));
        read(&store, op.clone());
    }
    for op in &writes {
        assert!(op.is_mutating(), "{op:?}");
        assert_eq!(op.footprint(), Footprint::Keys(vec![&b"z"[..]]));
        assert_eq!(
            KvResult::decode(&store.execute_read_only(1, &op.encode())),
            Ok(err(ERR_NOT_READ_ONLY))
        );
    }
}

// ---- Encodings, checkpoints, determinism ----

#[test]
fn zset_checkpoints_round_trip_and_have_a_fixed_encoding() {
    let mut store = seven();
    let exp = KvOp::Expire {
        key: b("z"),
        after: 1_000,
        condition: ExpireCondition::default(),
    };
    one(&mut store, exp);
    let checkpoint = store.take_checkpoint();
    let mut loaded = KvStore::new();
    loaded.load_checkpoint(&checkpoint).unwrap();
    assert_eq!(loaded, store);
    assert_eq!(loaded.take_checkpoint(), checkpoint);
    // Until the next batch tells the time, whether "z" has expired is unknown to the
    // read-only path (docs/objects.md "Access sets").
    let unknown = loaded.execute_read_only(1, &zrange("z", 0, 2, true, true).encode());
    assert_eq!(
        KvResult::decode(&unknown),
        Ok(KvResult::error(ERR_TTL_NEEDS_ORDER))
    );
    one(&mut loaded, KvOp::Get { key: b("x") });
    // The ordered index is rebuilt.
    assert_eq!(
        read(&loaded, zrange("z", 0, 2, true, true)),
        scored(&[("f", 5.0), ("e", 5.0), ("d", 4.0)])
    );
    assert_eq!(read(&loaded, zrank("z", "c", false)), KvResult::Int(3));
    // And the expiry: the set goes at time 1_010.
    assert_eq!(
        batch(&mut loaded, &[KvOp::DbSize], 1_010, 0),
        [KvResult::Int(0)]
    );

    // Pinned bytes: version, one entry "z" -> Value::ZSet (variant 4) {"m": 1.5}, no expiry.
    let mut small = KvStore::new();
    one(&mut small, zadd("z", &[(1.5, "m")]));
    let mut want = vec![CHECKPOINT_VERSION, 1, 1, b'z', 4, 1, 1, b'm'];
    want.extend(1.5f64.to_le_bytes());
    want.push(0);
    assert_eq!(small.take_checkpoint(), want);
}

fn zset_checkpoint(score_bits: u64) -> Vec<u8> {
    let mut bytes = vec![CHECKPOINT_VERSION, 1, 1, b'z', 4, 1, 1, b'm'];
    bytes.extend(score_bits.to_le_bytes());
    bytes.push(0);
    bytes
}

#[test]
fn corrupt_zset_checkpoints_are_refused() {
    let empty_zset = vec![CHECKPOINT_VERSION, 1, 1, b'z', 4, 0, 0];
    let unsorted = {
        let mut bytes = vec![CHECKPOINT_VERSION, 1, 1, b'z', 4, 2];
        for m in [b'n', b'm'] {
            bytes.extend([1, m]);
            bytes.extend(1.0f64.to_le_bytes());
        }
        bytes.push(0);
        bytes
    };
    assert!(KvStore::from_canonical_bytes(&zset_checkpoint(2.0f64.to_bits())).is_ok());
    for bad in [
        zset_checkpoint(f64::NAN.to_bits()),
        zset_checkpoint(0x7ff0_0000_0000_0001), // a signalling NaN
        zset_checkpoint((-0.0f64).to_bits()),   // not how a set stores 0
        empty_zset,
        unsorted,
    ] {
        assert_checkpoint_refused(&mut seven(), &bad);
    }
}

#[test]
fn ops_with_nan_scores_do_not_decode() {
    let good = zadd("z", &[(1.0, "m")]).encode();
    let one_bits = 1.0f64.to_le_bytes();
    let at = good
        .windows(8)
        .position(|w| w == one_bits)
        .expect("the score's bytes");
    let mut bad = good.clone();
    bad[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    assert_eq!(KvOp::decode(&bad), Err(DecodeError::Malformed));
    let mut store = KvStore::new();
    let cmd = Command::new(1, Life(0), ReqNo(1), &bad);
    let out = store.execute(Seq(1), &[cmd], NonDeterminism { time: 1, seed: 0 });
    assert_eq!(KvResult::decode(&out.replies[0]), Ok(err(ERR_MALFORMED)));
    assert!(store.is_empty());
}

#[test]
fn old_checkpoints_without_zsets_still_load() {
    // Bytes of a checkpoint with one of each older kind, as encoded before sorted sets.
    let mut entries = BTreeMap::new();
    let put = |entries: &mut BTreeMap<Vec<u8>, Entry>, k: &str, value| {
        entries.insert(
            b(k),
            Entry {
                value,
                expires_at: Some(99),
            },
        );
    };
    put(&mut entries, "s", Value::Str(b("x")));
    put(
        &mut entries,
        "h",
        Value::Hash(BTreeMap::from([(b("f"), b("v"))])),
    );
    put(&mut entries, "l", Value::List([b("x")].into()));
    put(&mut entries, "t", Value::Set([b("m")].into()));
    let mut bytes = vec![CHECKPOINT_VERSION];
    bytes.extend(postcard::to_stdvec(&entries).unwrap());
    // Variant indexes 0..=3 are the old kinds.
    let tags: Vec<u8> = [b"h", b"l", b"s", b"t"]
        .iter()
        .map(|k| {
            let at = bytes.windows(2).position(|w| w == [1, k[0]]).unwrap();
            bytes[at + 2]
        })
        .collect();
    assert_eq!(tags, [1, 2, 0, 3]);
    let loaded = KvStore::from_canonical_bytes(&bytes).unwrap();
    assert_eq!(loaded.len(), 4);
}

/// Random sorted-set-heavy operations on a few keys.
fn zset_op(rng: &mut impl FnMut() -> u64) -> KvOp {
    let keys = ["z", "y", "s"];
    let members = ["a", "b", "c", "d", ""];
    let scores = [
        0.0,
        -0.0,
        1.0,
        1.5,
        -2.0,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let mut pick = |n: usize| (rng() % n as u64) as usize;
    let key = b(keys[pick(3)]);
    let member = b(members[pick(5)]);
    let s = sc(scores[pick(8)]);
    let bound = |i: usize, ex: bool| ScoreBound {
        score: sc(scores[i]),
        exclusive: ex,
    };
    match pick(10) {
        0..=2 => {
            let n = 1 + pick(3);
            let members = (0..n)
                .map(|_| (sc(scores[pick(8)]), b(members[pick(5)])))
                .collect::<Vec<_>>();
            let bits = pick(64);
            let options = ZAddOptions {
                nx: bits & 1 != 0 && bits & 32 == 0,
                xx: bits & 2 != 0,
                gt: bits & 4 != 0 && bits & 8 == 0,
                lt: bits & 8 != 0 && bits & 1 == 0,
                ch: bits & 16 != 0,
                incr: bits & 32 != 0,
            };
            let members = if options.incr {
                vec![(s, member)]
            } else {
                members
            };
            KvOp::ZAdd {
                key,
                members,
                options,
            }
        }
        3 => KvOp::ZRem {
            key,
            members: vec![member],
        },
        4 => KvOp::ZPop {
            key,
            max: pick(2) == 0,
            count: pick(4) as u64,
        },
        5 => KvOp::ZRank {
            key,
            member,
            rev: pick(2) == 0,
        },
        6 => KvOp::ZRange {
            key,
            range: ZRangeBy::Index {
                start: pick(7) as i64 - 3,
                stop: pick(7) as i64 - 3,
            },
            rev: pick(2) == 0,
            with_scores: pick(2) == 0,
        },
        7 => KvOp::ZRange {
            key,
            range: ZRangeBy::Score {
                min: bound(pick(8), pick(2) == 0),
                max: bound(pick(8), pick(2) == 0),
                limit: (pick(2) == 0).then(|| (pick(4) as i64 - 1, pick(4) as i64 - 1)),
            },
            rev: pick(2) == 0,
            with_scores: pick(2) == 0,
        },
        8 => KvOp::ZCount {
            key,
            min: bound(pick(8), pick(2) == 0),
            max: bound(pick(8), pick(2) == 0),
        },
        _ => match pick(4) {
            0 => KvOp::Set {
                key,
                value: b("v"),
                expire: None,
            },
            1 => KvOp::Expire {
                key,
                after: pick(6) as i64,
                condition: ExpireCondition::default(),
            },
            2 => KvOp::Delete { key },
            _ => KvOp::ZScore { key, member },
        },
    }
}

/// A model of one sorted set: a plain list of (member, score), sorted on each read.
fn model_range(z: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
    let mut v: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.clone(), *s)).collect();
    v.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then(a.0.cmp(&b.0)));
    v
}

/// Two replicas running the same batches agree on every reply and digest (APPS2), the two
/// indexes of every sorted set agree, and a checkpoint loads back to an equal state with the
/// same bytes (APPS3/4). The same sets built in another order encode to the same bytes.
fn check_zset_history(seed: u64, len: usize, per_batch: usize) -> Result<(), TestCaseError> {
    let mut rng = splitmix(seed);
    let ops: Vec<KvOp> = (0..len).map(|_| zset_op(&mut rng)).collect();
    let (mut a, mut b) = (KvStore::new(), KvStore::new());
    for (i, chunk) in ops.chunks(per_batch).enumerate() {
        let time = 10 + 2 * i as u64;
        let ra = batch(&mut a, chunk, time, i as u64);
        let rb = batch(&mut b, chunk, time, i as u64);
        prop_assert_eq!(ra, rb);
        prop_assert_eq!(a.state_digest(), b.state_digest());
        for (k, e) in a.entries() {
            let Value::ZSet(z) = &e.value else {
                continue;
            };
            prop_assert!(!z.is_empty(), "empty zset at {:?}", k);
            let ordered: Vec<(Vec<u8>, f64)> =
                z.iter().map(|(m, s)| (m.to_vec(), s.get())).collect();
            let by_member: BTreeMap<Vec<u8>, f64> =
                z.by_member().map(|(m, s)| (m.to_vec(), s.get())).collect();
            prop_assert_eq!(&ordered, &model_range(&by_member));
            // No stored score is -0.
            prop_assert!(z
                .by_member()
                .all(|(_, s)| s.get() != 0.0 || s.get().is_sign_positive()));
        }
    }
    let mut loaded = KvStore::new();
    loaded.load_checkpoint(&a.take_checkpoint()).unwrap();
    prop_assert_eq!(&loaded, &a);
    prop_assert_eq!(loaded.take_checkpoint(), a.take_checkpoint());
    for (k, e) in a.entries() {
        let Value::ZSet(z) = &e.value else {
            continue;
        };
        let mut pairs: Vec<(Score, Vec<u8>)> =
            z.by_member().map(|(m, s)| (s, m.to_vec())).collect();
        pairs.reverse();
        let mut rebuilt = KvStore::new();
        let op = KvOp::ZAdd {
            key: k.to_vec(),
            members: pairs,
            options: ZAddOptions::default(),
        };
        batch(&mut rebuilt, &[op], 1, 0);
        let again = &rebuilt.entry(k).unwrap().value;
        prop_assert_eq!(again, &e.value);
        prop_assert_eq!(
            postcard::to_stdvec(again).unwrap(),
            postcard::to_stdvec(&e.value).unwrap()
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn zset_histories_are_deterministic_and_checkpoint_round_trip(
        seed: u64,
        len in 1usize..150,
        per_batch in 1usize..6,
    ) {
        check_zset_history(seed, len, per_batch)?;
    }

    /// Every score prints to a text that reads back as the same score.
    #[test]
    fn printed_scores_read_back(bits: u64) {
        let x = f64::from_bits(bits);
        prop_assume!(!x.is_nan());
        let s = sc(x);
        let text = s.to_string();
        prop_assert_eq!(Score::parse(text.as_bytes()), Some(s), "{}", text);
        prop_assert_eq!(ScoreBound::parse(text.as_bytes()).map(|b| b.score), Some(s));
    }
}
