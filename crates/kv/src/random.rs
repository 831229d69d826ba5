//! Random operations for tests, fuzzing and the simulator, from any `u64` source.

use crate::op::KvOp;
use plumb_wire::Micros;

/// Short values: integers (some at the `i64` edges, so increments overflow), a non-canonical
/// integer and plain text, so every branch of `Increment` and `CompareAndSet` is reached.
const VALUES: &[&[u8]] = &[
    b"0",
    b"1",
    b"7",
    b"-3",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"007",
    b"a",
    b"bc",
    b"",
];

const DELTAS: &[i64] = &[1, -1, 2, 5, -7, 0, i64::MAX, i64::MIN];

/// Used when the caller passes no keys, so the function stays total.
const FALLBACK_KEY: &[u8] = b"k";

/// A random operation on `keys`: every kind, mostly single-key ones, with short values.
/// Never sets an expiry, so a checker that does not model agreed time can judge the history;
/// use [`random_op_with_expiry`] to exercise expiry.
pub fn random_op(rng_u64: &mut impl FnMut() -> u64, keys: &[&[u8]]) -> KvOp {
    let key = pick(rng_u64, keys)
        .copied()
        .unwrap_or(FALLBACK_KEY)
        .to_vec();
    match rng_u64() % 20 {
        0..=4 => KvOp::Get { key },
        5..=8 => KvOp::Set {
            key,
            value: random_value(rng_u64),
            expire: None,
        },
        9..=10 => KvOp::Delete { key },
        11..=13 => KvOp::CompareAndSet {
            key,
            expected: match rng_u64() % 3 {
                0 => None,
                _ => Some(random_value(rng_u64)),
            },
            new: random_value(rng_u64),
        },
        14..=17 => KvOp::Increment {
            key,
            delta: pick(rng_u64, DELTAS).copied().unwrap_or(1),
        },
        18 => KvOp::Keys {
            prefix: random_prefix(rng_u64, &key),
        },
        _ => KvOp::DbSize,
    }
}

/// Like [`random_op`], but a third of the `Set`s expire after `0..max_expire` micros.
pub fn random_op_with_expiry(
    rng_u64: &mut impl FnMut() -> u64,
    keys: &[&[u8]],
    max_expire: Micros,
) -> KvOp {
    let op = random_op(rng_u64, keys);
    match (op, rng_u64() % 3) {
        (KvOp::Set { key, value, .. }, 0) => KvOp::Set {
            key,
            value,
            expire: Some(rng_u64() % max_expire.max(1)),
        },
        (other, _) => other,
    }
}

fn pick<'a, T>(rng_u64: &mut impl FnMut() -> u64, items: &'a [T]) -> Option<&'a T> {
    let len = u64::try_from(items.len()).ok().filter(|&n| n > 0)?;
    let index = usize::try_from(rng_u64() % len).ok()?;
    items.get(index)
}

fn random_value(rng_u64: &mut impl FnMut() -> u64) -> Vec<u8> {
    pick(rng_u64, VALUES).copied().unwrap_or(b"").to_vec()
}

/// Empty (every key) or a prefix of `key`.
fn random_prefix(rng_u64: &mut impl FnMut() -> u64, key: &[u8]) -> Vec<u8> {
    let bound = u64::try_from(key.len()).unwrap_or(0) + 1;
    let len = usize::try_from(rng_u64() % bound).unwrap_or(0);
    key.get(..len).unwrap_or(&[]).to_vec()
}
