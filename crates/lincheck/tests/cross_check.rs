//! The WGL search against a brute-force checker on small random histories.
//!
//! The brute force tries every order of every subset of the operations that contains all the
//! answered ones, keeps those that respect real time and accepts if the model reproduces every
//! recorded return value. It shares nothing with the search but `Model` and `Operation`.

use plumb_lincheck::kv::{Kv, KvOp};
use plumb_lincheck::{Checker, History, Model, Outcome, Partition};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod brute_force;
mod generated;
use brute_force::brute_force;
use generated::{kv_ret, kv_value, linearization_order, record, Spec};

/// One register per key (`u8` keys and values), partitioned by key unless `whole`.
struct Registers {
    whole: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RegOp {
    Read(u8),
    Write(u8, u8),
    /// Compare-and-set from `Option<u8>` (None: unset) to a value.
    Cas(u8, Option<u8>, u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RegRet {
    Value(Option<u8>),
    Ok,
    Swapped(bool),
}

impl RegOp {
    fn key(&self) -> u8 {
        match *self {
            RegOp::Read(k) | RegOp::Write(k, _) | RegOp::Cas(k, _, _) => k,
        }
    }
}

impl Model for Registers {
    type State = BTreeMap<u8, u8>;
    type Op = RegOp;
    type Ret = RegRet;
    type PartitionKey = u8;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(&self, s: &Self::State, op: &RegOp) -> (Self::State, RegRet) {
        let mut s = s.clone();
        let ret = match *op {
            RegOp::Read(k) => RegRet::Value(s.get(&k).copied()),
            RegOp::Write(k, v) => {
                s.insert(k, v);
                RegRet::Ok
            }
            RegOp::Cas(k, expected, new) => {
                let swapped = s.get(&k).copied() == expected;
                if swapped {
                    s.insert(k, new);
                }
                RegRet::Swapped(swapped)
            }
        };
        (s, ret)
    }

    fn partition(&self, op: &RegOp) -> Option<u8> {
        (!self.whole).then_some(op.key())
    }

    fn is_read_only(&self, op: &RegOp) -> bool {
        matches!(op, RegOp::Read(_))
    }
}

/// Short operations, most answered, some with a wrong return recorded.
fn spec<O: Clone + std::fmt::Debug, R: Clone + std::fmt::Debug>(
    op: impl Strategy<Value = O>,
    ret: impl Strategy<Value = R>,
) -> impl Strategy<Value = Spec<O, R>> {
    generated::spec(op, ret, 0..12, 0.8, 0.15)
}

/// Execute the specs at their linearization points (so the history is linearizable), then
/// record the wrong return values where asked. Returns the history and whether any return was
/// actually changed.
fn build<M: Model>(model: &M, specs: &[Spec<M::Op, M::Ret>]) -> (History<M>, bool)
where
    M::Op: Clone,
    M::Ret: Clone,
{
    let mut state = model.init();
    let mut rets: Vec<Option<M::Ret>> = vec![None; specs.len()];
    for i in linearization_order(specs) {
        let (next, ret) = model.step(&state, &specs[i].op);
        state = next;
        rets[i] = Some(ret);
    }
    record(specs, rets)
}

fn reg_op(keys: u8) -> impl Strategy<Value = RegOp> {
    let v = 0u8..3;
    prop_oneof![
        (0..keys).prop_map(RegOp::Read),
        (0..keys, v.clone()).prop_map(|(k, v)| RegOp::Write(k, v)),
        (0..keys, prop::option::of(v.clone()), v).prop_map(|(k, e, n)| RegOp::Cas(k, e, n)),
    ]
}

fn reg_ret() -> impl Strategy<Value = RegRet> {
    prop_oneof![
        prop::option::of(0u8..3).prop_map(RegRet::Value),
        Just(RegRet::Ok),
        any::<bool>().prop_map(RegRet::Swapped),
    ]
}

type StrKv = Kv<u8, String>;

fn kv_op() -> impl Strategy<Value = KvOp<u8, String>> {
    let key = 0u8..2;
    prop_oneof![
        key.clone().prop_map(|key| KvOp::Get { key }),
        (key.clone(), kv_value()).prop_map(|(key, value)| KvOp::Set { key, value }),
        key.clone().prop_map(|key| KvOp::Delete { key }),
        (key.clone(), prop::option::of(kv_value()), kv_value())
            .prop_map(|(key, expected, new)| KvOp::CompareAndSet { key, expected, new }),
        (key, -1i64..=2).prop_map(|(key, delta)| KvOp::Increment { key, delta }),
    ]
}

/// The WGL verdict, which must be decided with a generous budget on these sizes.
fn wgl<M: Model>(model: &M, h: &History<M>) -> bool {
    match Checker::new().check(model, h) {
        Outcome::Linearizable => true,
        Outcome::NotLinearizable(_) => false,
        Outcome::Unknown { .. } => panic!("budget ran out on {} operations", h.len()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn wgl_agrees_with_brute_force_on_registers(
        keys in 1u8..=2,
        whole in any::<bool>(),
        specs in prop::collection::vec(spec(reg_op(2), reg_ret()), 1..=6),
    ) {
        let specs: Vec<_> = specs
            .into_iter()
            .map(|mut s| {
                s.op = match s.op {
                    RegOp::Read(k) => RegOp::Read(k % keys),
                    RegOp::Write(k, v) => RegOp::Write(k % keys, v),
                    RegOp::Cas(k, e, n) => RegOp::Cas(k % keys, e, n),
                };
                s
            })
            .collect();
        let model = Registers { whole };
        let (h, corrupted) = build(&model, &specs);
        let expected = brute_force(&model, h.ops());
        prop_assert!(corrupted || expected, "an executed history must be linearizable");
        prop_assert_eq!(wgl(&model, &h), expected, "{:?}", h);
    }

    #[test]
    fn wgl_agrees_with_brute_force_on_kv(
        specs in prop::collection::vec(spec(kv_op(), kv_ret()), 1..=6),
    ) {
        let model = StrKv::new();
        let (h, corrupted) = build(&model, &specs);
        let expected = brute_force(&model, h.ops());
        prop_assert!(corrupted || expected, "an executed history must be linearizable");
        prop_assert_eq!(wgl(&model, &h), expected, "{:?}", h);
    }
}

#[test]
fn unpartitioned_model_reports_the_whole_history() {
    let model = Registers { whole: true };
    let mut h = History::new();
    h.record(0, RegOp::Write(0, 1), 0, RegRet::Ok, 1).unwrap();
    h.record(0, RegOp::Read(1), 2, RegRet::Value(Some(1)), 3)
        .unwrap();
    let v = Checker::new().check(&model, &h);
    assert_eq!(v.violation().map(|v| &v.partition), Some(&Partition::Whole));
    // Partitioned, the read of key 1 fails on its own.
    let h2 = {
        let mut h2 = History::new();
        h2.record(0, RegOp::Write(0, 1), 0, RegRet::Ok, 1).unwrap();
        h2.record(0, RegOp::Read(1), 2, RegRet::Value(Some(1)), 3)
            .unwrap();
        h2
    };
    let v = Checker::new().check(&Registers { whole: false }, &h2);
    assert_eq!(
        v.violation().map(|v| &v.partition),
        Some(&Partition::Key(1))
    );
}

/// The generator must produce both verdicts often, or the cross-check proves little.
#[test]
fn generated_histories_cover_both_verdicts() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(spec(kv_op(), kv_ret()), 1..=6);
    let model = StrKv::new();
    let mut counts = [0u32; 2];
    for _ in 0..500 {
        let specs = strategy.new_tree(&mut runner).unwrap().current();
        let (h, _) = build(&model, &specs);
        counts[usize::from(brute_force(&model, h.ops()))] += 1;
    }
    assert!(counts[0] >= 50 && counts[1] >= 50, "{counts:?}");
}
