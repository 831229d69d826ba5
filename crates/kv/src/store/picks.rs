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

/// `HRANDFIELD`'s and `ZRANDMEMBER`'s reply from the collection's entries, drawn as [`sample`]
/// does: without a count the one picked entry's `name`, with one the picked names, or, where
/// the command asked for values too, what `whole` makes of the picked entries.
fn picks<E>(
    entries: &[E],
    count: Option<i64>,
    seed: u64,
    name: impl Fn(&E) -> Vec<u8>,
    whole: Option<impl FnOnce(Vec<&E>) -> KvResult>,
) -> KvResult {
    let picked = sample(entries.len(), count, seed);
    match (count, whole) {
        (None, _) => KvResult::Value(picked.first().map(|&i| name(&entries[i]))),
        (Some(_), None) => KvResult::Items(picked.iter().map(|&i| name(&entries[i])).collect()),
        (Some(_), Some(whole)) => whole(picked.iter().map(|&i| &entries[i]).collect()),
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
        let pairs = |picked: Vec<&(&Vec<u8>, &Vec<u8>)>| {
            KvResult::Pairs(
                picked
                    .iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            )
        };
        picks(
            &fields,
            count,
            seed,
            |(f, _)| f.to_vec(),
            with_values.then_some(pairs),
        )
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
        let scored = |picked: Vec<&(&[u8], crate::Score)>| {
            KvResult::Scored(picked.iter().map(|(m, s)| (m.to_vec(), *s)).collect())
        };
        picks(
            &members,
            count,
            seed,
            |(m, _)| m.to_vec(),
            with_scores.then_some(scored),
        )
    }

    pub(super) fn random_key(&self, seed: u64) -> KvResult {
        let mut rng = seed;
        let key = random_index(&mut rng, self.entries.len())
            .and_then(|i| self.entries.keys().nth(i))
            .cloned();
        KvResult::Value(key)
    }
}
