//! Commands that write one key from what others hold (`COPY`, `ZRANGESTORE`), and the
//! intersection counts (`SINTERCARD`, `ZINTERCARD`).

use super::{int, wrong_type, zrange, Entry, KvStore, Value};
use crate::op::{Aggregate, KvResult, SetOp, ZRangeBy};
use crate::zset::ZSet;

impl KvStore {
    pub(super) fn copy(&mut self, from: &[u8], to: &[u8], replace: bool) -> KvResult {
        let Some(entry) = self.entries.get(from).cloned() else {
            return KvResult::Bool(false);
        };
        if from == to || (!replace && self.entries.contains_key(to)) {
            // Redis refuses a copy onto itself, and onto a present key without REPLACE.
            return KvResult::Bool(false);
        }
        self.put(to, entry);
        KvResult::Bool(true)
    }

    pub(super) fn zrangestore(
        &mut self,
        dest: &[u8],
        src: &[u8],
        range: &ZRangeBy,
        rev: bool,
    ) -> KvResult {
        let mut found = ZSet::new();
        match self.value(src) {
            None => {}
            Some(Value::ZSet(z)) => {
                for (member, score) in zrange(z, range.clone(), rev) {
                    found.insert(member, score);
                }
            }
            Some(_) => return wrong_type(),
        }
        self.remove(dest);
        let size = found.len();
        if size > 0 {
            let entry = Entry {
                value: Value::ZSet(found),
                expires_at: None,
            };
            self.put(dest, entry);
        }
        int(size)
    }

    pub(super) fn inter_card(&self, keys: &[Vec<u8>], limit: u64, sorted: bool) -> KvResult {
        let size = if sorted {
            self.zset_algebra(SetOp::Inter, keys, &[], Aggregate::Sum)
                .map(|z| z.len())
        } else {
            self.set_algebra(SetOp::Inter, keys).map(|s| s.len())
        };
        match size {
            Ok(n) if limit > 0 => int(n.min(usize::try_from(limit).unwrap_or(usize::MAX))),
            Ok(n) => int(n),
            Err(e) => e,
        }
    }
}
