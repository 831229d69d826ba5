//! A key-value model with plumb's KV application semantics (`plumb-kv`), for the single-key
//! operations `Get`, `Set` (without expiry), `Delete`, `CompareAndSet` and `Increment`, and
//! for transactions of them under guards (Redis' `MULTI`/`EXEC` under `WATCH`).
//!
//! A single-key operation touches one key and keys are independent, so the model partitions
//! by key; a history with a transaction in it is checked whole.
//!
//! Feeding it from `plumb_kv` results: `Value`, `Ok`, `Bool` and `Int` map one to one;
//! `Error(ERR_NOT_INTEGER)` is [`KvError::NotInteger`] and `Error(ERR_OVERFLOW)` is
//! [`KvError::Overflow`]. `Keys` and `DbSize` are not modelled: they are read-only, so leaving
//! them out of a history is sound (removing read-only operations from a linearizable history
//! leaves it linearizable, so a violation in what remains is a real one). A `Set` with an expiry
//! is not modelled either (expiry follows agreed time, which clients do not see).

use crate::Model;
use std::collections::BTreeMap;
use std::fmt::{self, Debug};
use std::hash::Hash;
use std::marker::PhantomData;

/// A key type: anything ordered and hashable; override `fmt_key` for readable explanations.
pub trait KvKey: Clone + Ord + Hash + Debug {
    fn fmt_key(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Debug::fmt(self, f)
    }
}

/// A value type that can hold decimal integers, for `Increment`.
pub trait KvValue: Clone + Eq + Hash + Debug {
    /// The integer this value denotes, if any. `plumb-kv` accepts only the canonical decimal
    /// form of an `i64` (optional `-`, no `+`, no leading zeros, no `-0`).
    fn to_integer(&self) -> Option<i64>;
    fn from_integer(n: i64) -> Self;
    fn fmt_value(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Debug::fmt(self, f)
    }
}

/// `b"text"` with non-printable bytes escaped.
fn fmt_bytes(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "b\"{}\"", bytes.escape_ascii())
}

/// The canonical decimal `i64` that `bytes` spells, as `plumb_kv::parse_integer` reads it.
fn canonical_integer(bytes: &[u8]) -> Option<i64> {
    if bytes.len() > 20 {
        return None;
    }
    let n: i64 = std::str::from_utf8(bytes).ok()?.parse().ok()?;
    (n.to_string().as_bytes() == bytes).then_some(n)
}

impl KvKey for Vec<u8> {
    fn fmt_key(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_bytes(self, f)
    }
}

impl KvKey for String {}
impl KvKey for u8 {}
impl KvKey for u32 {}
impl KvKey for u64 {}

impl KvValue for Vec<u8> {
    fn to_integer(&self) -> Option<i64> {
        canonical_integer(self)
    }
    fn from_integer(n: i64) -> Self {
        n.to_string().into_bytes()
    }
    fn fmt_value(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_bytes(self, f)
    }
}

impl KvValue for String {
    fn to_integer(&self) -> Option<i64> {
        canonical_integer(self.as_bytes())
    }
    fn from_integer(n: i64) -> Self {
        n.to_string()
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub enum KvOp<K, V> {
    /// Returns `Value(Some(v))` or `Value(None)` if absent.
    Get { key: K },
    /// Returns `Ok`.
    Set { key: K, value: V },
    /// Returns `Bool(existed)`.
    Delete { key: K },
    /// If the value equals `expected` (`None`: absent), store `new`; returns `Bool(swapped)`.
    CompareAndSet { key: K, expected: Option<V>, new: V },
    /// Add `delta` to the integer at `key` (absent counts as 0); returns `Int(new)`, or
    /// `Error` with no change if the value is not an integer or the sum overflows.
    Increment { key: K, delta: i64 },
    /// If every guard's key holds its value (`None`: absent), run `ops` one after another
    /// with nothing in between and return `Each` of their returns; otherwise change nothing
    /// and return `Aborted`. A Redis `MULTI`/`EXEC` under `WATCH` (and, with no guards, a
    /// pipeline, which plumb also runs as one step). Touches several keys: a history with one
    /// is checked whole.
    Transaction {
        guards: Vec<(K, Option<V>)>,
        ops: Vec<KvOp<K, V>>,
    },
}

impl<K, V> KvOp<K, V> {
    /// The one key the operation touches; `None` for a transaction.
    pub fn key(&self) -> Option<&K> {
        match self {
            KvOp::Get { key }
            | KvOp::Set { key, .. }
            | KvOp::Delete { key }
            | KvOp::CompareAndSet { key, .. }
            | KvOp::Increment { key, .. } => Some(key),
            KvOp::Transaction { .. } => None,
        }
    }

    pub fn get(key: impl Into<K>) -> Self {
        KvOp::Get { key: key.into() }
    }

    pub fn set(key: impl Into<K>, value: impl Into<V>) -> Self {
        KvOp::Set {
            key: key.into(),
            value: value.into(),
        }
    }

    pub fn delete(key: impl Into<K>) -> Self {
        KvOp::Delete { key: key.into() }
    }

    pub fn compare_and_set(key: impl Into<K>, expected: Option<V>, new: impl Into<V>) -> Self {
        KvOp::CompareAndSet {
            key: key.into(),
            expected,
            new: new.into(),
        }
    }

    pub fn increment(key: impl Into<K>, delta: i64) -> Self {
        KvOp::Increment {
            key: key.into(),
            delta,
        }
    }
}

/// Displays a key through [`KvKey::fmt_key`].
struct ShowKey<'a, K>(&'a K);
/// Displays a value through [`KvValue::fmt_value`].
struct ShowValue<'a, V>(&'a V);

impl<K: KvKey> Debug for ShowKey<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_key(f)
    }
}

impl<V: KvValue> Debug for ShowValue<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_value(f)
    }
}

/// `Set(b"k", b"1")`, `CompareAndSet(b"k", None, b"2")`, `Increment(b"k", -3)`.
impl<K: KvKey, V: KvValue> Debug for KvOp<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvOp::Get { key } => f.debug_tuple("Get").field(&ShowKey(key)).finish(),
            KvOp::Set { key, value } => f
                .debug_tuple("Set")
                .field(&ShowKey(key))
                .field(&ShowValue(value))
                .finish(),
            KvOp::Delete { key } => f.debug_tuple("Delete").field(&ShowKey(key)).finish(),
            KvOp::CompareAndSet { key, expected, new } => f
                .debug_tuple("CompareAndSet")
                .field(&ShowKey(key))
                .field(&expected.as_ref().map(ShowValue))
                .field(&ShowValue(new))
                .finish(),
            KvOp::Increment { key, delta } => f
                .debug_tuple("Increment")
                .field(&ShowKey(key))
                .field(delta)
                .finish(),
            KvOp::Transaction { guards, ops } => {
                let mut t = f.debug_tuple("Transaction");
                for (key, value) in guards {
                    t.field(&(ShowKey(key), value.as_ref().map(ShowValue)));
                }
                t.field(ops).finish()
            }
        }
    }
}

/// Why an `Increment` failed (state unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KvError {
    /// The stored value is not a canonical decimal `i64`.
    NotInteger,
    /// The sum does not fit an `i64`.
    Overflow,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub enum KvRet<V> {
    Value(Option<V>),
    Ok,
    Bool(bool),
    Int(i64),
    Error(KvError),
    /// A transaction's returns, one per op.
    Each(Vec<KvRet<V>>),
    /// A transaction whose guard failed: nothing ran.
    Aborted,
}

impl<V: KvValue> Debug for KvRet<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvRet::Value(v) => f
                .debug_tuple("Value")
                .field(&v.as_ref().map(ShowValue))
                .finish(),
            KvRet::Ok => f.write_str("Ok"),
            KvRet::Bool(b) => f.debug_tuple("Bool").field(b).finish(),
            KvRet::Int(n) => f.debug_tuple("Int").field(n).finish(),
            KvRet::Error(e) => f.debug_tuple("Error").field(e).finish(),
            KvRet::Each(rets) => f.debug_tuple("Each").field(rets).finish(),
            KvRet::Aborted => f.write_str("Aborted"),
        }
    }
}

/// The key-value model. Its state is the whole map, so it is also correct on an unpartitioned
/// history; partitioned, each search sees a map of at most one key.
pub struct Kv<K, V>(PhantomData<fn() -> (K, V)>);

/// The model for `plumb-kv`'s byte-string keys and values.
pub type BytesKv = Kv<Vec<u8>, Vec<u8>>;

impl<K, V> Kv<K, V> {
    pub fn new() -> Self {
        Kv(PhantomData)
    }
}

impl<K, V> Default for Kv<K, V> {
    fn default() -> Self {
        Kv::new()
    }
}

impl<K: KvKey, V: KvValue> Model for Kv<K, V> {
    type State = BTreeMap<K, V>;
    type Op = KvOp<K, V>;
    type Ret = KvRet<V>;
    type PartitionKey = K;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(&self, state: &Self::State, op: &Self::Op) -> (Self::State, Self::Ret) {
        let mut next = state.clone();
        let ret = apply(&mut next, op);
        (next, ret)
    }

    fn partition(&self, op: &Self::Op) -> Option<K> {
        op.key().cloned()
    }

    fn is_read_only(&self, op: &Self::Op) -> bool {
        matches!(op, KvOp::Get { .. })
    }

    fn describe_key(&self, key: &K) -> String {
        format!("{:?}", ShowKey(key))
    }
}

/// `plumb-kv`'s semantics on a plain map.
fn apply<K: KvKey, V: KvValue>(map: &mut BTreeMap<K, V>, op: &KvOp<K, V>) -> KvRet<V> {
    match op {
        KvOp::Get { key } => KvRet::Value(map.get(key).cloned()),
        KvOp::Set { key, value } => {
            map.insert(key.clone(), value.clone());
            KvRet::Ok
        }
        KvOp::Delete { key } => KvRet::Bool(map.remove(key).is_some()),
        KvOp::CompareAndSet { key, expected, new } => {
            let swapped = map.get(key) == expected.as_ref();
            if swapped {
                map.insert(key.clone(), new.clone());
            }
            KvRet::Bool(swapped)
        }
        KvOp::Transaction { guards, ops } => {
            if guards
                .iter()
                .any(|(key, value)| map.get(key) != value.as_ref())
            {
                return KvRet::Aborted;
            }
            KvRet::Each(ops.iter().map(|op| apply(map, op)).collect())
        }
        KvOp::Increment { key, delta } => {
            let current = match map.get(key) {
                None => 0,
                Some(v) => match v.to_integer() {
                    Some(n) => n,
                    None => return KvRet::Error(KvError::NotInteger),
                },
            };
            match current.checked_add(*delta) {
                Some(n) => {
                    map.insert(key.clone(), V::from_integer(n));
                    KvRet::Int(n)
                }
                None => KvRet::Error(KvError::Overflow),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Op = KvOp<Vec<u8>, Vec<u8>>;

    fn run(ops: &[Op]) -> Vec<KvRet<Vec<u8>>> {
        let model = BytesKv::new();
        let mut state = model.init();
        ops.iter()
            .map(|op| {
                let (next, ret) = model.step(&state, op);
                state = next;
                ret
            })
            .collect()
    }

    fn value(v: &[u8]) -> KvRet<Vec<u8>> {
        KvRet::Value(Some(v.to_vec()))
    }

    #[test]
    fn increment_treats_a_missing_key_as_zero() {
        let rets = run(&[Op::increment(b"k", 5), Op::get(b"k")]);
        assert_eq!(rets, vec![KvRet::Int(5), value(b"5")]);
    }

    #[test]
    fn increment_of_a_non_canonical_integer_fails_and_changes_nothing() {
        for bad in [&b"007"[..], b"-0", b"+1", b"a", b"", b" 1"] {
            let rets = run(&[Op::set(b"k", bad), Op::increment(b"k", 1), Op::get(b"k")]);
            assert_eq!(rets[1], KvRet::Error(KvError::NotInteger), "{bad:?}");
            assert_eq!(rets[2], value(bad));
        }
    }

    #[test]
    fn increment_overflow_fails_and_changes_nothing() {
        let rets = run(&[
            Op::set(b"k", b"9223372036854775807"),
            Op::increment(b"k", 1),
            Op::increment(b"k", -7),
        ]);
        assert_eq!(rets[1], KvRet::Error(KvError::Overflow));
        assert_eq!(rets[2], KvRet::Int(i64::MAX - 7));
    }

    #[test]
    fn compare_and_set_swaps_only_on_a_match() {
        let rets = run(&[
            Op::compare_and_set(b"k", Some(b"1".to_vec()), b"2"),
            Op::compare_and_set(b"k", None, b"1"),
            Op::compare_and_set(b"k", None, b"3"),
            Op::compare_and_set(b"k", Some(b"1".to_vec()), b"2"),
            Op::get(b"k"),
        ]);
        let [a, b, c, d, e] = &rets[..] else {
            panic!("{rets:?}")
        };
        assert_eq!(
            (a, b, c, d),
            (
                &KvRet::Bool(false),
                &KvRet::Bool(true),
                &KvRet::Bool(false),
                &KvRet::Bool(true)
            )
        );
        assert_eq!(e, &value(b"2"));
    }

    #[test]
    fn delete_reports_whether_the_key_existed() {
        let rets = run(&[Op::delete(b"k"), Op::set(b"k", b"x"), Op::delete(b"k")]);
        assert_eq!(rets, vec![KvRet::Bool(false), KvRet::Ok, KvRet::Bool(true)]);
    }

    #[test]
    fn byte_strings_are_shown_readably() {
        let op = Op::compare_and_set(b"k\x01", Some(b"1".to_vec()), b"2");
        assert_eq!(
            format!("{op:?}"),
            r#"CompareAndSet(b"k\x01", Some(b"1"), b"2")"#
        );
    }
}
