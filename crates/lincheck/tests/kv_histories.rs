//! Hand-written key-value histories with known answers.

use plumb_lincheck::kv::{BytesKv, KvError, KvOp, KvRet};
use plumb_lincheck::{check, Checker, HistoryError, OpId, Outcome, Partition};

mod common;
use common::{absent, rec, value, Op, H};

fn some(v: &[u8]) -> Option<Vec<u8>> {
    Some(v.to_vec())
}

fn outcome(h: &H) -> Outcome<Vec<u8>> {
    check(&BytesKv::new(), h)
}

fn assert_linearizable(h: &H) {
    let o = outcome(h);
    assert!(o.is_linearizable(), "{o}\n{h:?}");
}

fn assert_violation(h: &H) -> plumb_lincheck::Violation<Vec<u8>> {
    match outcome(h) {
        Outcome::NotLinearizable(v) => v,
        other => panic!("expected a violation, got {other}\n{h:?}"),
    }
}

// ---- known good ----

#[test]
fn sequential_history_of_every_operation_is_linearizable() {
    let mut h = H::new();
    rec(&mut h, 1, Op::get(b"k"), (0, 1), absent());
    rec(&mut h, 1, Op::set(b"k", b"5"), (2, 3), KvRet::Ok);
    rec(&mut h, 2, Op::increment(b"k", 2), (4, 5), KvRet::Int(7));
    rec(
        &mut h,
        1,
        Op::compare_and_set(b"k", some(b"7"), b"x"),
        (6, 7),
        KvRet::Bool(true),
    );
    rec(
        &mut h,
        2,
        Op::increment(b"k", 1),
        (8, 9),
        KvRet::Error(KvError::NotInteger),
    );
    rec(&mut h, 1, Op::get(b"k"), (10, 11), value(b"x"));
    rec(&mut h, 2, Op::delete(b"k"), (12, 13), KvRet::Bool(true));
    rec(&mut h, 2, Op::delete(b"k"), (14, 15), KvRet::Bool(false));
    rec(&mut h, 1, Op::get(b"k"), (16, 17), absent());
    assert_linearizable(&h);
}

#[test]
fn read_overlapping_a_write_may_see_the_old_value() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 10), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k"), (5, 8), absent());
    assert_linearizable(&h);
}

#[test]
fn read_overlapping_a_write_may_see_the_new_value() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 10), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k"), (5, 8), value(b"1"));
    assert_linearizable(&h);
}

#[test]
fn concurrent_writes_may_land_in_either_order() {
    for winner in [&b"1"[..], b"2"] {
        let mut h = H::new();
        rec(&mut h, 1, Op::set(b"k", b"1"), (0, 10), KvRet::Ok);
        rec(&mut h, 2, Op::set(b"k", b"2"), (1, 9), KvRet::Ok);
        rec(&mut h, 3, Op::get(b"k"), (11, 12), value(winner));
        rec(&mut h, 1, Op::get(b"k"), (13, 14), value(winner));
        assert_linearizable(&h);
    }
}

#[test]
fn touching_intervals_count_as_concurrent() {
    // The write responds at 10, the read is invoked at 10: either order is allowed.
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 10), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k"), (10, 12), absent());
    assert_linearizable(&h);
}

#[test]
fn concurrent_increments_return_distinct_running_totals() {
    let mut h = H::new();
    rec(&mut h, 1, Op::increment(b"n", 1), (0, 10), KvRet::Int(2));
    rec(&mut h, 2, Op::increment(b"n", 1), (2, 8), KvRet::Int(1));
    rec(&mut h, 3, Op::increment(b"n", 1), (9, 20), KvRet::Int(3));
    rec(&mut h, 3, Op::get(b"n"), (21, 22), value(b"3"));
    assert_linearizable(&h);
}

#[test]
fn unanswered_write_that_took_effect() {
    let mut h = H::new();
    h.invoke(1, Op::set(b"k", b"1"), 0);
    rec(&mut h, 2, Op::get(b"k"), (5, 6), absent());
    rec(&mut h, 2, Op::get(b"k"), (100, 101), value(b"1"));
    rec(&mut h, 3, Op::get(b"k"), (102, 103), value(b"1"));
    assert_linearizable(&h);
}

#[test]
fn unanswered_write_that_did_not_take_effect() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"0"), (0, 1), KvRet::Ok);
    h.invoke(1, Op::set(b"k", b"1"), 2);
    rec(&mut h, 2, Op::get(b"k"), (100, 101), value(b"0"));
    rec(&mut h, 3, Op::increment(b"k", 1), (102, 103), KvRet::Int(1));
    assert_linearizable(&h);
}

#[test]
fn unanswered_increment_and_cas_may_each_take_effect_or_not() {
    let mut h = H::new();
    h.invoke(1, Op::increment(b"n", 5), 0);
    h.invoke(2, Op::compare_and_set(b"n", some(b"5"), b"50"), 1);
    rec(&mut h, 3, Op::get(b"n"), (10, 11), value(b"50"));
    assert_linearizable(&h);

    let mut h = H::new();
    h.invoke(1, Op::increment(b"n", 5), 0);
    h.invoke(2, Op::compare_and_set(b"n", some(b"5"), b"50"), 1);
    rec(&mut h, 3, Op::get(b"n"), (10, 11), value(b"5"));
    assert_linearizable(&h);
}

#[test]
fn keys_are_independent() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"a", b"1"), (0, 1), KvRet::Ok);
    rec(&mut h, 1, Op::get(b"b"), (2, 3), absent());
    rec(&mut h, 2, Op::set(b"b", b"1"), (4, 5), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"a"), (6, 7), value(b"1"));
    assert_linearizable(&h);
}

#[test]
fn empty_history_is_linearizable() {
    assert_linearizable(&H::new());
}

// ---- known bad ----

#[test]
fn stale_read_after_a_completed_write() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 1), KvRet::Ok);
    rec(&mut h, 1, Op::set(b"k", b"2"), (2, 3), KvRet::Ok);
    let stale = rec(&mut h, 2, Op::get(b"k"), (4, 5), value(b"1"));
    let v = assert_violation(&h);
    assert_eq!(v.partition, Partition::Key(b"k".to_vec()));
    assert!(
        v.explanation
            .contains(&format!("{stale} c2 [4, 5] Get(b\"k\")")),
        "{}",
        v.explanation
    );
}

#[test]
fn lost_update_of_concurrent_increments() {
    let mut h = H::new();
    rec(&mut h, 1, Op::increment(b"n", 1), (0, 10), KvRet::Int(1));
    rec(&mut h, 2, Op::increment(b"n", 1), (1, 9), KvRet::Int(1));
    assert_violation(&h);
}

#[test]
fn lost_update_of_read_modify_write() {
    // Both clients read 0 and wrote 1 with CAS; the second CAS must fail.
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"n", b"0"), (0, 1), KvRet::Ok);
    rec(
        &mut h,
        1,
        Op::compare_and_set(b"n", some(b"0"), b"1"),
        (5, 10),
        KvRet::Bool(true),
    );
    rec(
        &mut h,
        2,
        Op::compare_and_set(b"n", some(b"0"), b"1"),
        (6, 11),
        KvRet::Bool(true),
    );
    assert_violation(&h);
}

#[test]
fn read_of_a_value_never_written() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 10), KvRet::Ok);
    h.invoke(3, Op::set(b"k", b"2"), 0);
    rec(&mut h, 2, Op::get(b"k"), (0, 10), value(b"3"));
    let v = assert_violation(&h);
    assert!(
        v.explanation.contains("but the model returns"),
        "{}",
        v.explanation
    );
}

#[test]
fn non_monotonic_reads_across_clients() {
    // A slow write; client 2 sees it, then client 3 (starting after) does not.
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 100), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k"), (10, 20), value(b"1"));
    rec(&mut h, 3, Op::get(b"k"), (30, 40), absent());
    assert_violation(&h);
}

#[test]
fn cas_from_absent_succeeding_twice() {
    let mut h = H::new();
    rec(
        &mut h,
        1,
        Op::compare_and_set(b"lock", None, b"c1"),
        (0, 10),
        KvRet::Bool(true),
    );
    rec(
        &mut h,
        2,
        Op::compare_and_set(b"lock", None, b"c2"),
        (1, 11),
        KvRet::Bool(true),
    );
    assert_violation(&h);
}

#[test]
fn unanswered_write_cannot_take_effect_before_its_invocation() {
    let mut h = H::new();
    rec(&mut h, 2, Op::get(b"k"), (0, 5), value(b"1"));
    h.invoke(1, Op::set(b"k", b"1"), 10);
    assert_violation(&h);
}

#[test]
fn unanswered_write_takes_effect_at_most_once() {
    // Seen, then overwritten, then seen again: it would have to take effect twice.
    let mut h = H::new();
    h.invoke(1, Op::set(b"k", b"1"), 0);
    rec(&mut h, 2, Op::get(b"k"), (10, 11), value(b"1"));
    rec(&mut h, 2, Op::set(b"k", b"2"), (12, 13), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k"), (14, 15), value(b"1"));
    assert_violation(&h);
}

#[test]
fn increment_error_on_an_integer_value() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"n", b"5"), (0, 1), KvRet::Ok);
    rec(
        &mut h,
        1,
        Op::increment(b"n", 1),
        (2, 3),
        KvRet::Error(KvError::NotInteger),
    );
    assert_violation(&h);
}

#[test]
fn delete_of_a_missing_key_reporting_it_existed() {
    let mut h = H::new();
    rec(&mut h, 1, Op::delete(b"k"), (0, 1), KvRet::Bool(true));
    assert_violation(&h);
}

// ---- partitions, explanations, budget ----

#[test]
fn smallest_failing_partition_is_reported() {
    let mut h = H::new();
    // Key "big": 4 operations, stale read.
    rec(&mut h, 1, Op::set(b"big", b"1"), (0, 1), KvRet::Ok);
    rec(&mut h, 1, Op::set(b"big", b"2"), (2, 3), KvRet::Ok);
    rec(&mut h, 1, Op::get(b"big"), (4, 5), value(b"2"));
    rec(&mut h, 1, Op::get(b"big"), (6, 7), value(b"1"));
    // Key "small": 2 operations, read of a value never written.
    rec(&mut h, 2, Op::set(b"small", b"1"), (0, 1), KvRet::Ok);
    let bad = rec(&mut h, 2, Op::get(b"small"), (2, 3), value(b"9"));
    // Key "fine": linearizable.
    rec(&mut h, 3, Op::set(b"fine", b"1"), (0, 1), KvRet::Ok);
    let v = assert_violation(&h);
    assert_eq!(v.partition, Partition::Key(b"small".to_vec()));
    assert_eq!(v.ops, vec![OpId(4), bad]);
    assert_eq!(v.longest_prefix, vec![OpId(4)]);
}

#[test]
fn unanswered_reads_are_dropped_before_the_search() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 1), KvRet::Ok);
    h.invoke(2, Op::get(b"k"), 2);
    rec(&mut h, 1, Op::get(b"k"), (3, 4), value(b"2"));
    let v = assert_violation(&h);
    assert_eq!(v.ops, vec![OpId(0), OpId(2)]);
}

#[test]
fn explanation_names_the_prefix_and_each_blocked_candidate() {
    let mut h = H::new();
    rec(&mut h, 1, Op::set(b"k", b"1"), (0, 1), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k"), (2, 10), value(b"2"));
    rec(&mut h, 3, Op::set(b"k", b"3"), (3, 9), KvRet::Ok);
    let v = assert_violation(&h);
    let text = &v.explanation;
    assert_eq!(v.longest_prefix.first(), Some(&OpId(0)));
    assert!(text.contains("not linearizable on key b\"k\""), "{text}");
    assert!(
        text.contains("#1 c2 [2, 10] Get(b\"k\") -> Value(Some(b\"2\")) but the model returns"),
        "{text}"
    );
    assert!(text.contains("operations of the partition:"), "{text}");
}

#[test]
fn exhausted_budget_is_unknown_not_a_pass() {
    let mut h = H::new();
    for c in 0..8 {
        h.invoke(c, Op::increment(b"n", 1), 0);
    }
    rec(&mut h, 9, Op::get(b"n"), (1, 2), value(b"8"));
    let tight = Checker::new().with_max_steps(5).check(&BytesKv::new(), &h);
    assert_eq!(
        tight,
        Outcome::Unknown {
            undecided: vec![Partition::Key(b"n".to_vec())]
        }
    );
    assert!(Checker::new().check(&BytesKv::new(), &h).is_linearizable());
}

#[test]
fn a_failing_partition_outranks_an_undecided_one() {
    let mut h = H::new();
    // "hard": linearizable, but the search tries the increments in invocation order, the
    // reverse of their results, so it scans many candidates at every depth.
    for c in 0..10 {
        let result = 10 - c as i64;
        rec(
            &mut h,
            c,
            Op::increment(b"hard", 1),
            (0, 5),
            KvRet::Int(result),
        );
    }
    // "bad": a quick failure, in a larger partition (so it is searched after "hard").
    for t in 0..12 {
        rec(&mut h, 10, Op::get(b"bad"), (t * 2, t * 2 + 1), absent());
    }
    rec(&mut h, 10, Op::get(b"bad"), (100, 101), value(b"x"));
    let o = Checker::new().with_max_steps(40).check(&BytesKv::new(), &h);
    assert!(Checker::new()
        .with_max_steps(40)
        .check(&BytesKv::new(), &without_key(&h, b"bad"))
        .is_unknown());
    assert_eq!(
        o.violation().map(|v| &v.partition),
        Some(&Partition::Key(b"bad".to_vec())),
        "{o}"
    );
}

/// The history minus the operations on `key`.
fn without_key(h: &H, key: &[u8]) -> H {
    let mut out = H::new();
    for o in h
        .ops()
        .iter()
        .filter(|o| o.op.key().is_none_or(|k| k.as_slice() != key))
    {
        let id = out.invoke(o.client, o.op.clone(), o.invoke);
        if let Some(r) = &o.response {
            out.complete(id, r.ret.clone(), r.time).unwrap();
        }
    }
    out
}

// ---- history construction ----

#[test]
fn history_refuses_malformed_responses() {
    let mut h = H::new();
    let id = h.invoke(1, Op::get(b"k"), 10);
    assert_eq!(
        h.complete(id, absent(), 9),
        Err(HistoryError::ResponseBeforeInvocation {
            id,
            invoke: 10,
            response: 9
        })
    );
    assert_eq!(
        h.complete(OpId(7), absent(), 11),
        Err(HistoryError::UnknownOp(OpId(7)))
    );
    assert_eq!(h.complete(id, absent(), 11), Ok(()));
    assert_eq!(
        h.complete(id, absent(), 12),
        Err(HistoryError::AlreadyCompleted(id))
    );
    assert!(h.record(2, Op::get(b"k"), 5, absent(), 4).is_err());
    assert_eq!(h.len(), 1, "a refused record leaves no operation behind");
}

fn tx(guards: &[(&[u8], Option<&[u8]>)], ops: Vec<Op>) -> Op {
    KvOp::Transaction {
        guards: guards
            .iter()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect(),
        ops,
    }
}

#[test]
fn a_transaction_seen_half_done_is_a_violation() {
    // The writer sets a and b in one transaction; a reader's transaction overlapping it may
    // see both or neither, never one.
    let write = || tx(&[], vec![KvOp::set(b"a", b"1"), KvOp::set(b"b", b"1")]);
    let read = || tx(&[], vec![KvOp::get(b"a"), KvOp::get(b"b")]);
    for (ret, ok) in [
        (vec![value(b"1"), value(b"1")], true),
        (vec![absent(), absent()], true),
        (vec![value(b"1"), absent()], false),
    ] {
        let mut h = H::new();
        rec(
            &mut h,
            1,
            write(),
            (0, 10),
            KvRet::Each(vec![KvRet::Ok, KvRet::Ok]),
        );
        rec(&mut h, 2, read(), (2, 8), KvRet::Each(ret));
        if ok {
            assert_linearizable(&h);
        } else {
            let v = assert_violation(&h);
            assert_eq!(v.partition, Partition::Whole);
        }
    }
}

#[test]
fn a_transaction_runs_only_if_its_guards_hold() {
    let guarded = || tx(&[(b"a", None)], vec![KvOp::set(b"a", b"2")]);
    // a was set before the transaction began: its guard (a absent) fails.
    let mut h = H::new();
    rec(&mut h, 1, KvOp::set(b"a", b"1"), (0, 1), KvRet::Ok);
    rec(&mut h, 2, guarded(), (2, 3), KvRet::Aborted);
    assert_linearizable(&h);
    let mut h = H::new();
    rec(&mut h, 1, KvOp::set(b"a", b"1"), (0, 1), KvRet::Ok);
    rec(&mut h, 2, guarded(), (2, 3), KvRet::Each(vec![KvRet::Ok]));
    assert_violation(&h);
    // Concurrent with the set, either outcome fits.
    for ret in [KvRet::Aborted, KvRet::Each(vec![KvRet::Ok])] {
        let mut h = H::new();
        rec(&mut h, 1, KvOp::set(b"a", b"1"), (0, 5), KvRet::Ok);
        rec(&mut h, 2, guarded(), (2, 3), ret);
        assert_linearizable(&h);
    }
}
