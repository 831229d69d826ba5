//! `INCRBYFLOAT` and `HINCRBYFLOAT`.
//!
//! Redis adds in C's `long double` (80-bit on x86) and prints the sum with 17 decimals, then
//! trims the zeros; plumb adds in `f64` and prints the shortest decimal that reads back as
//! the same `f64`, in plain notation. Sums of short decimals print alike (`10.5 + 0.1` is
//! `10.6` in both); where `f64`'s precision shows they differ (`0.1 + 0.2` is `0.3` in Redis,
//! `0.30000000000000004` here; `12345.6 + 0.1` is `12345.69999999999999929` in Redis,
//! `12345.7` here), and a sum past `f64`'s range is an error here where `long double` still
//! holds it. Documented in docs/redis.md.

use super::{wrong_type, KvStore, Value};
use crate::op::{KvResult, ERR_NOT_FLOAT};
use crate::Score;

/// Error text for a sum that is NaN or infinite.
pub const ERR_FLOAT_OVERFLOW: &str = "ERR increment would produce NaN or Infinity";
/// Error text for `HINCRBYFLOAT` on a field that is not a float.
pub const ERR_HASH_NOT_FLOAT: &str = "ERR hash value is not a float";

/// A float as `INCRBYFLOAT` stores and replies it: plain notation (no exponent), no trailing
/// zeros, `-0` as `0`.
pub fn format_float(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    // Rust's `Display` for f64 is the shortest round-trip decimal, never in exponent form.
    format!("{x}")
}

/// `current + delta` as Redis' float increments compute it: `None` if the sum is not finite.
fn add(current: f64, delta: Score) -> Option<f64> {
    let sum = current + delta.get();
    sum.is_finite().then_some(sum)
}

impl KvStore {
    pub(super) fn incr_by_float(&mut self, key: &[u8], delta: Score) -> KvResult {
        let current = match self.value(key) {
            None => 0.0,
            Some(Value::Str(v)) => match Score::parse(v) {
                Some(s) => s.get(),
                None => return KvResult::error(ERR_NOT_FLOAT),
            },
            Some(_) => return wrong_type(),
        };
        let Some(sum) = add(current, delta) else {
            return KvResult::error(ERR_FLOAT_OVERFLOW);
        };
        let text = format_float(sum).into_bytes();
        self.replace_string(key, text.clone());
        KvResult::Value(Some(text))
    }

    pub(super) fn hincr_by_float(&mut self, key: &[u8], field: &[u8], delta: Score) -> KvResult {
        self.with_collection(key, KvStore::hash_mut, |h| {
            let current = match h.get(field) {
                None => 0.0,
                Some(v) => match Score::parse(v) {
                    Some(s) => s.get(),
                    None => return KvResult::error(ERR_HASH_NOT_FLOAT),
                },
            };
            let Some(sum) = add(current, delta) else {
                return KvResult::error(ERR_FLOAT_OVERFLOW);
            };
            let text = format_float(sum).into_bytes();
            h.insert(field.to_vec(), text.clone());
            KvResult::Value(Some(text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_in_plain_notation_without_trailing_zeros() {
        assert_eq!(format_float(10.6), "10.6");
        assert_eq!(format_float(5001.0), "5001");
        assert_eq!(format_float(1e20), "100000000000000000000");
        assert_eq!(format_float(-0.0), "0");
        assert_eq!(format_float(0.00001), "0.00001");
    }
}
