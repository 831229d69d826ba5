//! Random histories that are linearizable by construction, with some returns corrupted: what
//! the property tests comparing the search with a brute force share. Each operation is a
//! [`Spec`]; a test executes the specs in [`linearization_order`] on its model, then
//! [`record`]s the history.

use plumb_lincheck::kv::KvRet;
use plumb_lincheck::{History, Model};
use proptest::prelude::*;
use std::fmt::Debug;
use std::ops::Range;

/// One generated operation: its interval, whether (and where) it takes effect, and an
/// optional wrong return value to record instead of the true one.
#[derive(Clone, Debug)]
pub struct Spec<O, R> {
    pub client: u64,
    pub op: O,
    pub start: u64,
    pub len: u64,
    /// Position of the linearization point inside the interval, in percent.
    pub point: u64,
    pub answered: bool,
    /// For an unanswered operation: whether it takes effect at all.
    pub takes_effect: bool,
    pub wrong_ret: Option<R>,
}

/// Specs of `op` by three clients, starting before 20 and lasting `len`, answered with
/// probability `answered` and recording a wrong return drawn from `ret` with probability
/// `wrong`.
pub fn spec<O: Clone + Debug, R: Clone + Debug>(
    op: impl Strategy<Value = O>,
    ret: impl Strategy<Value = R>,
    len: Range<u64>,
    answered: f64,
    wrong: f64,
) -> impl Strategy<Value = Spec<O, R>> {
    (
        0u64..3,
        op,
        0u64..20,
        len,
        0u64..=100,
        prop::bool::weighted(answered),
        any::<bool>(),
        prop::option::weighted(wrong, ret),
    )
        .prop_map(
            |(client, op, start, len, point, answered, takes_effect, wrong_ret)| Spec {
                client,
                op,
                start,
                len,
                point,
                answered,
                takes_effect,
                wrong_ret,
            },
        )
}

/// The specs that take effect (every answered one, and the unanswered ones that do), by their
/// linearization points; ties in the order given.
pub fn linearization_order<O, R>(specs: &[Spec<O, R>]) -> Vec<usize> {
    let point = |s: &Spec<O, R>| s.start * 100 + s.len * s.point;
    let mut order: Vec<usize> = (0..specs.len())
        .filter(|&i| specs[i].answered || specs[i].takes_effect)
        .collect();
    order.sort_by_key(|&i| (point(&specs[i]), i));
    order
}

/// The history of the specs whose true returns (from executing them in
/// [`linearization_order`]) are `rets`: each invoked at its start and, if answered, completed
/// at its end with its wrong return if it has one. Also whether any recorded return differs
/// from the true one.
pub fn record<M: Model>(
    specs: &[Spec<M::Op, M::Ret>],
    rets: Vec<Option<M::Ret>>,
) -> (History<M>, bool)
where
    M::Op: Clone,
    M::Ret: Clone,
{
    let mut h = History::new();
    let mut corrupted = false;
    for (s, ret) in specs.iter().zip(rets) {
        let id = h.invoke(s.client, s.op.clone(), s.start);
        if let (true, Some(ret)) = (s.answered, ret) {
            let recorded = s.wrong_ret.clone().unwrap_or_else(|| ret.clone());
            corrupted |= recorded != ret;
            h.complete(id, recorded, s.start + s.len).unwrap();
        }
    }
    (h, corrupted)
}

/// The values of the string key-value histories: few, so that operations collide.
pub fn kv_value() -> impl Strategy<Value = String> {
    prop_oneof![Just("0"), Just("1"), Just("x")].prop_map(String::from)
}

/// A return of the string key-value model, as a corruption.
pub fn kv_ret() -> impl Strategy<Value = KvRet<String>> {
    prop_oneof![
        prop::option::of(kv_value()).prop_map(KvRet::Value),
        any::<bool>().prop_map(KvRet::Bool),
        (0i64..3).prop_map(KvRet::Int),
    ]
}
