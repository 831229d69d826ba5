//! The key-value store as Redis clients drive it through the gateway: besides the key-value
//! workload's single commands, transactions (`MULTI`/`EXEC`, some under `WATCH`) and pipelines
//! of several commands in one request. Checked against the key-value model, whose
//! transactions run all their ops at one point or, if a guard fails, none; a history with a
//! transaction is checked whole, not key by key.
//!
//! A `WATCH` guard is the fingerprint of a value the generator chose (or of absence), so a
//! guard holds or fails by chance, and the model knows which value it stands for.
//! `plumb sim --app redis`.

use crate::app::SimApp;
use crate::apps::kv::{kv_op_text, Kv};
use crate::rng::SimRng;
use plumb_adversary::AppForgery;
use plumb_kv::{fingerprint, Entry, KvOp, KvResult, KvStore, Value, Watched};
use plumb_lincheck::kv::{BytesKv, KvOp as LinOp, KvRet};
use std::sync::Arc;

/// Redis transactions and pipelines over the key-value store.
#[derive(Clone, Copy, Debug, Default)]
pub struct Redis;

/// What a guard may expect a key to hold: values the key-value workload writes often.
const GUARD_VALUES: &[&[u8]] = &[b"0", b"1", b"7", b"a"];

fn guard_fingerprint(value: Option<&[u8]>) -> [u8; 32] {
    let entry = value.map(|v| Entry {
        value: Value::Str(v.to_vec()),
        expires_at: None,
    });
    fingerprint(entry.as_ref())
}

/// The value a guard's fingerprint stands for (`Some(None)`: absent), if it is one of the
/// generator's.
fn guard_value(print: &[u8; 32]) -> Option<Option<Vec<u8>>> {
    if *print == guard_fingerprint(None) {
        return Some(None);
    }
    GUARD_VALUES
        .iter()
        .find(|v| guard_fingerprint(Some(v)) == *print)
        .map(|v| Some(v.to_vec()))
}

/// A single command the model covers: the key-value workload's, with its whole-store reads
/// (`KEYS`, `DBSIZE`) replaced by a `GET`.
fn single(rng: &mut SimRng, objects: &[Vec<u8>]) -> KvOp {
    let keys: Vec<&[u8]> = objects.iter().map(|k| k.as_slice()).collect();
    match plumb_kv::random_op(&mut || rng.next_u64(), &keys) {
        KvOp::Keys { .. } | KvOp::DbSize => KvOp::Get {
            key: rng.pick(objects).cloned().unwrap_or_default(),
        },
        op => op,
    }
}

fn singles(rng: &mut SimRng, objects: &[Vec<u8>], most: usize) -> Vec<Vec<u8>> {
    let n = 1 + rng.index(most);
    (0..n).map(|_| single(rng, objects).encode()).collect()
}

/// The model's version of one command inside a transaction or pipeline.
fn model_single(op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
    let op = Kv.model_op(op)?;
    op.key().is_some().then_some(op)
}

fn text_of(op: &[u8]) -> String {
    KvOp::decode(op).map_or_else(|_| format!("<{} bytes>", op.len()), |op| kv_op_text(&op))
}

impl SimApp for Redis {
    type App = KvStore;
    type Model = BytesKv;

    fn name(&self) -> &'static str {
        "redis"
    }

    fn new_app(&self) -> KvStore {
        KvStore::new()
    }

    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        match rng.index(10) {
            0..=2 => {
                let watched = if rng.chance(0.5) {
                    let key = rng.pick(objects).cloned().unwrap_or_default();
                    let value = if rng.chance(0.3) {
                        None
                    } else {
                        rng.pick(GUARD_VALUES).copied()
                    };
                    vec![Watched {
                        key,
                        fingerprint: guard_fingerprint(value),
                    }]
                } else {
                    Vec::new()
                };
                KvOp::Transaction {
                    watched,
                    ops: singles(rng, objects, 3),
                }
                .encode()
            }
            3 => KvOp::Pipeline {
                ops: singles(rng, objects, 4),
            }
            .encode(),
            _ => single(rng, objects).encode(),
        }
    }

    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        Kv.random_read(rng, objects)
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        Kv.read_only_eligible(op)
    }

    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        Kv.harmless_op(rng, objects)
    }

    fn injected_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        Kv.injected_op(rng, objects)
    }

    fn mutating_op(&self) -> Vec<u8> {
        Kv.mutating_op()
    }

    fn forgery(&self) -> Arc<dyn AppForgery> {
        Kv.forgery()
    }

    fn op_text(&self, op: &[u8]) -> String {
        match KvOp::decode(op) {
            Ok(KvOp::Transaction { watched, ops }) => {
                let guards: Vec<String> = watched
                    .iter()
                    .map(|w| {
                        let value = guard_value(&w.fingerprint).map_or("?".to_string(), |v| {
                            v.map_or("absent".into(), |v| v.escape_ascii().to_string())
                        });
                        format!("{}={value}", w.key.escape_ascii())
                    })
                    .collect();
                let ops: Vec<String> = ops.iter().map(|o| text_of(o)).collect();
                format!("multi [{}] watch [{}]", ops.join("; "), guards.join(" "))
            }
            Ok(KvOp::Pipeline { ops }) => {
                let ops: Vec<String> = ops.iter().map(|o| text_of(o)).collect();
                format!("pipeline [{}]", ops.join("; "))
            }
            _ => Kv.op_text(op),
        }
    }

    fn result_text(&self, result: &[u8]) -> String {
        match KvResult::decode(result) {
            Ok(KvResult::Each(results)) => {
                let each: Vec<String> = results.iter().map(|r| Kv.result_text(r)).collect();
                format!("each [{}]", each.join("; "))
            }
            _ => Kv.result_text(result),
        }
    }

    fn model(&self) -> BytesKv {
        BytesKv::new()
    }

    /// A pipeline is modelled as a transaction without guards: plumb runs its commands as one
    /// step, and the check holds it to that. `None` for a transaction only if it is not the
    /// generator's (a guard value or a command it never makes), which a correct client never
    /// sends.
    fn model_op(&self, op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
        let (watched, ops) = match KvOp::decode(op).ok()? {
            KvOp::Transaction { watched, ops } => (watched, ops),
            KvOp::Pipeline { ops } => (Vec::new(), ops),
            _ => return Kv.model_op(op),
        };
        let guards = watched
            .iter()
            .map(|w| Some((w.key.clone(), guard_value(&w.fingerprint)?)))
            .collect::<Option<Vec<_>>>()?;
        let ops = ops
            .iter()
            .map(|o| model_single(o))
            .collect::<Option<Vec<_>>>()?;
        Some(LinOp::Transaction { guards, ops })
    }

    fn model_ret(&self, op: &LinOp<Vec<u8>, Vec<u8>>, result: &[u8]) -> Option<KvRet<Vec<u8>>> {
        let LinOp::Transaction { ops, .. } = op else {
            return Kv.model_ret(op, result);
        };
        match KvResult::decode(result).ok()? {
            KvResult::Aborted => Some(KvRet::Aborted),
            KvResult::Each(results) if results.len() == ops.len() => Some(KvRet::Each(
                ops.iter()
                    .zip(&results)
                    .map(|(op, r)| Kv.model_ret(op, r))
                    .collect::<Option<Vec<_>>>()?,
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_op_is_in_the_model() {
        let mut rng = SimRng::new(7, "test");
        let objects: Vec<Vec<u8>> = (0..4).map(|i| format!("k{i}").into_bytes()).collect();
        let mut kinds = [0; 3];
        for _ in 0..2000 {
            let op = Redis.random_op(&mut rng, &objects);
            match KvOp::decode(&op).unwrap() {
                KvOp::Transaction { .. } => kinds[0] += 1,
                KvOp::Pipeline { .. } => kinds[1] += 1,
                _ => kinds[2] += 1,
            }
            let mutating = KvOp::decode(&op).unwrap().is_mutating();
            assert!(
                Redis.model_op(&op).is_some() || !mutating,
                "{}",
                Redis.op_text(&op)
            );
        }
        assert!(kinds.iter().all(|&n| n > 100), "{kinds:?}");
    }

    #[test]
    fn a_guard_stands_for_the_value_it_was_made_from() {
        for v in GUARD_VALUES {
            assert_eq!(
                guard_value(&guard_fingerprint(Some(v))),
                Some(Some(v.to_vec()))
            );
        }
        assert_eq!(guard_value(&guard_fingerprint(None)), Some(None));
        assert_eq!(guard_value(&guard_fingerprint(Some(b"other"))), None);
        // The store's fingerprint of a plain string is the guard's.
        let mut store = KvStore::new();
        store.apply(
            &KvOp::Set {
                key: b"k".to_vec(),
                value: b"7".to_vec(),
                expire: None,
            },
            1,
        );
        assert_eq!(store.fingerprint(b"k"), guard_fingerprint(Some(b"7")));
    }
}
