//! Delay-once linearizability (Prophecy, NSDI 2010, §4): hand-written key-value histories with
//! known answers, and property tests against linearizability and a brute-force checker.

use plumb_lincheck::kv::{BytesKv, Kv, KvOp, KvRet};
use plumb_lincheck::{
    check, check_delay_once, staleness, Checker, DelayOnce, History, Model, OpId, Operation,
    Outcome, Partition,
};
use proptest::prelude::*;

mod brute_force;
mod common;
mod generated;
use brute_force::brute_force;
use common::{absent, rec, value, Op, Ret, H};
use generated::{kv_ret, kv_value, linearization_order, record, Spec};

fn set(h: &mut H, client: u64, v: &[u8], at: (u64, u64)) -> OpId {
    rec(h, client, Op::set(b"k", v), at, KvRet::Ok)
}

fn get(h: &mut H, client: u64, ret: Ret, at: (u64, u64)) -> OpId {
    rec(h, client, Op::get(b"k"), at, ret)
}

/// Client 1 writes 1, 2 and 3; client 2 reads each of the first two back after it is
/// written, then reads once more after the third write, seeing `last`. The history and the
/// id of that last read.
fn three_writes_read_back(last: Ret) -> (H, OpId) {
    let mut h = H::new();
    set(&mut h, 1, b"1", (0, 1));
    get(&mut h, 2, value(b"1"), (2, 3));
    set(&mut h, 1, b"2", (4, 5));
    get(&mut h, 2, value(b"2"), (6, 7));
    set(&mut h, 1, b"3", (8, 9));
    let last = get(&mut h, 2, last, (10, 11));
    (h, last)
}

fn assert_delay_once(h: &H) {
    let o = check_delay_once(&BytesKv::new(), h);
    assert!(o.is_linearizable(), "{o}\n{h:?}");
}

fn assert_violation(h: &H) -> plumb_lincheck::Violation<Vec<u8>> {
    match check_delay_once(&BytesKv::new(), h) {
        Outcome::NotLinearizable(v) => v,
        other => panic!("expected a delay-once violation, got {other}\n{h:?}"),
    }
}

/// The paper's example: client A sends (R^a, W^b, R^c), client B sends (W^d, R^e, R^f, W^g),
/// with R^a ≺ R^e and W^g ≺ R^c; writes d, b, g make states 1, 2, 3. The intervals give
/// exactly those precedences (plus each client's own order, and what follows by
/// transitivity): a [0,10], b [11,40], c [61,70]; d [1,12], e [13,20], f [21,30], g [31,60].
/// Returns the history and the ids of a, e, f, c.
fn paper_example(e: Ret, c: Ret) -> (H, [OpId; 4]) {
    let mut h = H::new();
    let a = get(&mut h, 1, absent(), (0, 10));
    set(&mut h, 1, b"b", (11, 40));
    let c = get(&mut h, 1, c, (61, 70));
    set(&mut h, 2, b"d", (1, 12));
    let e = get(&mut h, 2, e, (13, 20));
    let f = get(&mut h, 2, value(b"b"), (21, 30));
    set(&mut h, 2, b"g", (31, 60));
    (h, [a, e, f, c])
}

// ---- known good ----

#[test]
fn paper_example_linearizable_history_is_delay_once() {
    // <R0a, W1d, W2b, R2e, R2f, W3g, R3c>
    let (h, _) = paper_example(value(b"b"), value(b"g"));
    assert!(check(&BytesKv::new(), &h).is_linearizable());
    assert_delay_once(&h);
    let s = staleness(&BytesKv::new(), &h).unwrap();
    assert_eq!((s.reads, s.stale.len()), (4, 0));
}

#[test]
fn paper_example_delay_once_history_is_not_linearizable() {
    // <R0a, W1d, W2b, R0e, R2f, W3g, R2c>
    let (h, [_, e, _, c]) = paper_example(absent(), value(b"b"));
    assert!(check(&BytesKv::new(), &h).is_violation());
    assert_delay_once(&h);
    let s = staleness(&BytesKv::new(), &h).unwrap();
    assert_eq!(s.reads, 4);
    let mut stale = vec![e, c];
    stale.sort();
    assert_eq!(s.stale, stale);
    assert!((s.fraction() - 0.5).abs() < 1e-9);
}

#[test]
fn stale_read_after_a_completed_write() {
    let mut h = H::new();
    get(&mut h, 1, absent(), (0, 1));
    set(&mut h, 2, b"1", (2, 3));
    let stale = get(&mut h, 1, absent(), (4, 5));
    assert!(check(&BytesKv::new(), &h).is_violation());
    assert_delay_once(&h);
    assert_eq!(staleness(&BytesKv::new(), &h).unwrap().stale, vec![stale]);
}

#[test]
fn stale_read_one_write_behind_the_latest_read() {
    // Reads saw 1 then 2; after a third write a read may still see 2 (what the latest read
    // saw), or 3, but not 1 (see `stale_read_two_writes_old`).
    for last in [value(b"2"), value(b"3")] {
        let (h, _) = three_writes_read_back(last);
        assert_delay_once(&h);
    }
}

#[test]
fn concurrent_fresh_and_stale_reads_in_the_only_order_that_works() {
    // The latest read saw 1, the state is 2. Two concurrent reads return 2 and 1: only
    // "1 (stale), then 2 (fresh)" works. The read of 2 is invoked first, so a "reads first"
    // shortcut would commit it (fresh, moving the latest read to 2) and then fail on 1.
    let mut h = H::new();
    set(&mut h, 1, b"1", (0, 1));
    get(&mut h, 2, value(b"1"), (2, 3));
    set(&mut h, 1, b"2", (4, 5));
    get(&mut h, 2, value(b"2"), (6, 10));
    get(&mut h, 3, value(b"1"), (7, 10));
    assert_delay_once(&h);
}

#[test]
fn unanswered_read_may_be_the_read_a_stale_read_reflects() {
    // The unanswered read (say, a replicated read whose client gave up) may have seen 1, so
    // the last read may return 1 after 2 was written; without it, that read is too stale.
    let build = |with_unanswered: bool| {
        let mut h = H::new();
        set(&mut h, 1, b"1", (0, 1));
        if with_unanswered {
            h.invoke(2, Op::get(b"k"), 2);
        }
        set(&mut h, 1, b"2", (3, 4));
        get(&mut h, 3, value(b"1"), (5, 6));
        h
    };
    assert_delay_once(&build(true));
    assert_violation(&build(false));
}

#[test]
fn read_modify_writes_are_writes() {
    // Increments and compare-and-sets return what they see on the latest state; reads around
    // them may lag by one read.
    let mut h = H::new();
    rec(&mut h, 1, Op::increment(b"k", 1), (0, 1), KvRet::Int(1));
    get(&mut h, 2, value(b"1"), (2, 3));
    rec(&mut h, 1, Op::increment(b"k", 1), (4, 5), KvRet::Int(2));
    get(&mut h, 2, value(b"1"), (6, 7));
    let cas = Op::compare_and_set(b"k", Some(b"2".to_vec()), b"x");
    rec(&mut h, 1, cas, (8, 9), KvRet::Bool(true));
    get(&mut h, 2, value(b"x"), (10, 11));
    assert_delay_once(&h);
}

#[test]
fn delay_once_model_is_usable_directly_with_check() {
    // `DelayOnce` is an ordinary model: checking a `History<DelayOnce<_>>` with `check` is
    // the same as `check_delay_once` on the plain history.
    let model = DelayOnce(BytesKv::new());
    let mut h = History::<DelayOnce<BytesKv>>::new();
    h.record(1, Op::get(b"k"), 0, absent(), 1).unwrap();
    h.record(2, Op::set(b"k", b"1"), 2, KvRet::Ok, 3).unwrap();
    h.record(1, Op::get(b"k"), 4, absent(), 5).unwrap();
    assert!(check(&model, &h).is_linearizable());
    h.record(1, Op::get(b"k"), 6, value(b"2"), 7).unwrap();
    assert!(check(&model, &h).is_violation());
}

// ---- known bad ----

#[test]
fn monotonic_reads_broken() {
    // R saw 2 (so write 2 precedes it in any order), then R' saw 1: older than what the latest
    // read saw. Bad whether or not the write of 2 had completed.
    for write_end in [4, 10] {
        let mut h = H::new();
        set(&mut h, 1, b"1", (0, 1));
        set(&mut h, 1, b"2", (2, write_end));
        get(&mut h, 2, value(b"2"), (3, 5));
        let late = get(&mut h, 3, value(b"1"), (6, 7));
        let v = assert_violation(&h);
        assert_eq!(v.partition, Partition::Key(b"k".to_vec()));
        assert!(
            v.explanation.contains(&format!("{late} ")),
            "{}",
            v.explanation
        );
    }
}

#[test]
fn read_of_a_value_never_written() {
    let mut h = H::new();
    get(&mut h, 2, absent(), (0, 1));
    set(&mut h, 1, b"1", (2, 3));
    get(&mut h, 2, value(b"zz"), (4, 5));
    let v = assert_violation(&h);
    assert!(v.explanation.contains("zz"), "{}", v.explanation);
}

#[test]
fn stale_read_two_writes_old() {
    let (h, old) = three_writes_read_back(value(b"1"));
    let v = assert_violation(&h);
    assert_eq!(v.longest_prefix.len(), 5);
    assert!(!v.longest_prefix.contains(&old));
}

#[test]
fn stale_read_with_no_earlier_read() {
    // Nothing was read before, so there is no state to be stale to: after the write
    // completed, a read must see it.
    let mut h = H::new();
    set(&mut h, 1, b"1", (0, 1));
    get(&mut h, 2, absent(), (2, 3));
    let v = assert_violation(&h);
    // Only the fresh outcome is offered.
    assert!(v.explanation.contains("(fresh"), "{}", v.explanation);
    assert!(!v.explanation.contains("(stale"), "{}", v.explanation);
}

#[test]
fn staleness_is_per_key() {
    // A read of k1 does not let a read of k2 be stale.
    let mut h = H::new();
    rec(&mut h, 1, Op::get(b"k1"), (0, 1), absent());
    rec(&mut h, 1, Op::set(b"k1", b"1"), (2, 3), KvRet::Ok);
    rec(&mut h, 1, Op::set(b"k2", b"1"), (2, 3), KvRet::Ok);
    rec(&mut h, 2, Op::get(b"k1"), (4, 5), absent());
    rec(&mut h, 2, Op::get(b"k2"), (4, 5), absent());
    let v = assert_violation(&h);
    assert_eq!(v.partition, Partition::Key(b"k2".to_vec()));
}

#[test]
fn writes_not_linearizable_among_themselves() {
    let mut h = H::new();
    rec(&mut h, 1, Op::increment(b"k", 1), (0, 1), KvRet::Int(1));
    rec(&mut h, 2, Op::increment(b"k", 1), (2, 3), KvRet::Int(1));
    assert_violation(&h);
    let mut h = H::new();
    let cas = |v: &[u8]| Op::compare_and_set(b"k", None, v);
    rec(&mut h, 1, cas(b"1"), (0, 1), KvRet::Bool(true));
    rec(&mut h, 2, cas(b"2"), (2, 3), KvRet::Bool(true));
    assert_violation(&h);
}

#[test]
fn violation_explains_itself() {
    let (h, _) = three_writes_read_back(value(b"1"));
    let v = assert_violation(&h);
    let e = &v.explanation;
    assert!(
        e.starts_with("not delay-once linearizable on key b\"k\""),
        "{e}"
    );
    // The blocked read, with both outcomes the model allows.
    assert!(
        e.contains(
            r#"Get(b"k") -> Value(Some(b"1")) but the model returns Value(Some(b"3")) (fresh"#
        ),
        "{e}"
    );
    assert!(e.contains(r#"or Value(Some(b"2")) (stale"#), "{e}");
    assert_eq!(v.ops.len(), 6);
    assert_eq!(Outcome::NotLinearizable(v.clone()).to_string(), *e);
    assert!(staleness(&BytesKv::new(), &h).is_err());
}

#[test]
fn exhausted_budget_is_unknown_not_a_pass() {
    let mut h = H::new();
    for c in 0..8 {
        h.invoke(c, Op::increment(b"k", 1), 0);
    }
    get(&mut h, 9, value(b"100"), (1, 2));
    let o = Checker::new()
        .with_max_steps(5)
        .check_delay_once(&BytesKv::new(), &h);
    assert!(o.is_unknown(), "{o}");
    assert!(Checker::new().staleness(&BytesKv::new(), &h).is_err());
}

// ---- property tests ----

type StrKv = Kv<u8, String>;
type StrOp = KvOp<u8, String>;
type StrRet = KvRet<String>;

/// Does every key's sub-history pass [`brute_force`]? (Delay-once is per key: the derived
/// model over the whole map would let a read of one key be stale to a read of another.)
fn brute_force_per_key(ops: &[Operation<StrKv>]) -> bool {
    (0u8..2).all(|key| {
        let on_key: Vec<_> = ops
            .iter()
            .filter(|o| o.op.key() == Some(&key))
            .cloned()
            .collect();
        brute_force(&DelayOnce(StrKv::new()), &on_key)
    })
}

/// One generated operation, and a further corruption of its return if it is a read: the value
/// its key had `stale_by` operations on the key earlier.
type StaleSpec = (Spec<StrOp, StrRet>, usize);

fn op_strategy() -> impl Strategy<Value = StrOp> {
    let key = 0u8..2;
    prop_oneof![
        3 => key.clone().prop_map(|key| KvOp::Get { key }),
        2 => (key.clone(), kv_value()).prop_map(|(key, value)| KvOp::Set { key, value }),
        1 => (key.clone(), prop::option::of(kv_value()), kv_value())
            .prop_map(|(key, expected, new)| KvOp::CompareAndSet { key, expected, new }),
        1 => (key, -1i64..=2).prop_map(|(key, delta)| KvOp::Increment { key, delta }),
    ]
}

/// Specs whose returns are true unless `corrupt`.
fn spec_strategy(corrupt: bool) -> impl Strategy<Value = StaleSpec> {
    (
        generated::spec(op_strategy(), kv_ret(), 0..6, 0.85, 0.1),
        prop_oneof![4 => Just(0usize), 4 => Just(1), 1 => Just(2)],
    )
        .prop_map(move |(mut spec, stale_by)| {
            if !corrupt {
                spec.wrong_ret = None;
            }
            (spec, if corrupt { stale_by } else { 0 })
        })
}

/// Execute the specs at their linearization points (so the history is linearizable), then
/// record the corrupted return values where asked.
fn build(specs: &[StaleSpec]) -> History<StrKv> {
    let (specs, stale_by): (Vec<_>, Vec<_>) = specs.iter().cloned().unzip();
    let model = StrKv::new();
    let mut state = model.init();
    let mut rets: Vec<Option<StrRet>> = vec![None; specs.len()];
    // Per key: its value before and after each operation on it, in linearization order, and
    // the value the latest read reflected.
    let mut values: [Vec<Option<String>>; 2] = [vec![None], vec![None]];
    let mut last_read: [Option<Option<String>>; 2] = [None, None];
    for i in linearization_order(&specs) {
        let (next, mut ret) = model.step(&state, &specs[i].op);
        state = next;
        let key = specs[i].op.key().copied().unwrap_or(0);
        let (values, last_read) = (
            &mut values[usize::from(key)],
            &mut last_read[usize::from(key)],
        );
        if let KvOp::Get { .. } = specs[i].op {
            match (stale_by[i], &*last_read) {
                (1, Some(saw)) => ret = KvRet::Value(saw.clone()),
                (2, _) if values.len() > 2 => ret = KvRet::Value(values[values.len() - 3].clone()),
                _ => {}
            }
            if let KvRet::Value(v) = &ret {
                *last_read = Some(v.clone());
            }
        }
        values.push(state.get(&key).cloned());
        rets[i] = Some(ret);
    }
    record(&specs, rets).0
}

fn decided<K: std::fmt::Debug>(o: Outcome<K>, h: &History<StrKv>) -> bool {
    match o {
        Outcome::Linearizable => true,
        Outcome::NotLinearizable(_) => false,
        Outcome::Unknown { .. } => panic!("budget ran out on {} operations: {h:?}", h.len()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Every linearizable history is delay-once linearizable, and [`staleness`] accounts for
    /// every answered read.
    #[test]
    fn linearizable_histories_are_delay_once(specs in prop::collection::vec(spec_strategy(false), 0..24)) {
        let h = build(&specs);
        prop_assert!(decided(check(&StrKv::new(), &h), &h));
        prop_assert!(decided(check_delay_once(&StrKv::new(), &h), &h));
        let s = staleness(&StrKv::new(), &h).unwrap();
        let reads = h.ops().iter().filter(|o| o.is_complete() && matches!(o.op, KvOp::Get { .. }));
        prop_assert_eq!(s.reads, reads.count());
    }

    /// With some returns corrupted: the search agrees with a brute force over the derived
    /// model, and delay-once is implied by linearizability.
    #[test]
    fn delay_once_agrees_with_brute_force(specs in prop::collection::vec(spec_strategy(true), 0..7)) {
        let h = build(&specs);
        let model = StrKv::new();
        let delay_once = decided(check_delay_once(&model, &h), &h);
        prop_assert_eq!(delay_once, brute_force_per_key(h.ops()), "{:?}", h);
        if decided(check(&model, &h), &h) {
            prop_assert!(delay_once, "{:?}", h);
        }
    }
}

#[test]
fn generated_histories_cover_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(spec_strategy(true), 0..10);
    let (mut pass, mut fail, mut only_delay_once) = (0, 0, 0);
    for _ in 0..500 {
        let h = build(&strategy.new_tree(&mut runner).unwrap().current());
        let lin = check(&StrKv::new(), &h).is_linearizable();
        if check_delay_once(&StrKv::new(), &h).is_linearizable() {
            pass += 1;
            only_delay_once += usize::from(!lin);
        } else {
            fail += 1;
        }
    }
    assert!(
        pass > 50 && fail > 50 && only_delay_once > 8,
        "{pass} {fail} {only_delay_once}"
    );
}
