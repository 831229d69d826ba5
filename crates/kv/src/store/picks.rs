//! Random picks that change nothing (`HRANDFIELD`, `ZRANDMEMBER`, `RANDOMKEY`). They draw
//! from the request's seed, so they run on the ordered path and every replica picks the same.

use super::{random_index, wrong_type, KvStore, Value};
use crate::op::KvResult;

/// Redis' sampling rule for `count`: `None` one element; `n >= 0` up to `n` distinct ones
/// (all of them, in order, when `n` covers the collection); `n < 0` `|n|` with repeats.
/// Returns indexes into a collection of `len` elements.
fn sample(len: usize, count: Option<i64>, seed: u64) -> Vec<usize> {
    let mut rng = seed;
    match count {
        None => random_index(&mut rng, len).into_iter().collect(),
        Some(n) if n >= 0 => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            let mut picked: Vec<usize> = (0..len).collect();
            if n >= len {
                return picked;
            }
            // A partial Fisher-Yates shuffle: the first n are a uniform sample.
            for i in 0..n {
                let j = i + random_index(&mut rng, len - i).unwrap_or(0);
                picked.swap(i, j);
            }
            picked.truncate(n);
            picked
        }
        Some(n) => (0..n.unsigned_abs())
            .map_while(|_| random_index(&mut rng, len))
            .collect(),
    }
}

impl KvStore {
    pub(super) fn hrandfield(
        &self,
        key: &[u8],
        count: Option<i64>,
        with_values: bool,
        seed: u64,
    ) -> KvResult {
        let fields: Vec<(&Vec<u8>, &Vec<u8>)> = match self.value(key) {
            None => Vec::new(),
            Some(Value::Hash(h)) => h.iter().collect(),
            Some(_) => return wrong_type(),
        };
        let picked = sample(fields.len(), count, seed);
        match (count, with_values) {
            (None, _) => KvResult::Value(picked.first().map(|&i| fields[i].0.clone())),
            (Some(_), false) => {
                KvResult::Items(picked.iter().map(|&i| fields[i].0.clone()).collect())
            }
            (Some(_), true) => KvResult::Pairs(
                picked
                    .iter()
                    .map(|&i| (fields[i].0.clone(), fields[i].1.clone()))
                    .collect(),
            ),
        }
    }

    pub(super) fn zrandmember(
        &self,
        key: &[u8],
        count: Option<i64>,
        with_scores: bool,
        seed: u64,
    ) -> KvResult {
        let members: Vec<(&[u8], crate::Score)> = match self.value(key) {
            None => Vec::new(),
            Some(Value::ZSet(z)) => z.iter().collect(),
            Some(_) => return wrong_type(),
        };
        let picked = sample(members.len(), count, seed);
        match (count, with_scores) {
            (None, _) => KvResult::Value(picked.first().map(|&i| members[i].0.to_vec())),
            (Some(_), false) => {
                KvResult::Items(picked.iter().map(|&i| members[i].0.to_vec()).collect())
            }
            (Some(_), true) => KvResult::Scored(
                picked
                    .iter()
                    .map(|&i| (members[i].0.to_vec(), members[i].1))
                    .collect(),
            ),
        }
    }

    pub(super) fn random_key(&self, seed: u64) -> KvResult {
        let mut rng = seed;
        let key = random_index(&mut rng, self.entries.len())
            .and_then(|i| self.entries.keys().nth(i))
            .cloned();
        KvResult::Value(key)
    }
}
