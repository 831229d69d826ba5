//! Pops from the first non-empty of several keys: `LMPOP`, `ZMPOP` and the blocking forms
//! the gateway builds on them (`BLMPOP`, `BZMPOP`, `BZPOPMIN`, `BZPOPMAX`).

use super::{wrong_type, KvStore, Value};
use crate::op::{End, KvResult};

impl KvStore {
    /// The first key among `keys` that holds a value, if it is of the kind `is_kind` accepts;
    /// `Err(WRONGTYPE)` if it is of another kind. Absent keys are passed over, as Redis does.
    fn first_present(
        &self,
        keys: &[Vec<u8>],
        is_kind: fn(&Value) -> bool,
    ) -> Result<Option<Vec<u8>>, KvResult> {
        for key in keys {
            match self.value(key) {
                None => continue,
                Some(v) if is_kind(v) => return Ok(Some(key.clone())),
                Some(_) => return Err(wrong_type()),
            }
        }
        Ok(None)
    }

    pub(super) fn list_mpop(&mut self, keys: &[Vec<u8>], end: End, count: u64) -> KvResult {
        let key = match self.first_present(keys, |v| matches!(v, Value::List(_))) {
            Ok(Some(key)) => key,
            Ok(None) => return KvResult::Nil,
            Err(e) => return e,
        };
        match self.pop(&key, end, Some(count)) {
            KvResult::Items(items) => KvResult::Popped(key, items),
            other => other,
        }
    }

    pub(super) fn zmpop(&mut self, keys: &[Vec<u8>], max: bool, count: u64) -> KvResult {
        let key = match self.first_present(keys, |v| matches!(v, Value::ZSet(_))) {
            Ok(Some(key)) => key,
            Ok(None) => return KvResult::Nil,
            Err(e) => return e,
        };
        match self.zpop(&key, max, count) {
            KvResult::Scored(members) => KvResult::PoppedScored(key, members),
            other => other,
        }
    }
}
