//! The key-value store (`plumb-kv`) under simulation: its workload, its trace text, its
//! linearizability model (plumb-lincheck's KV model) and its lies for Byzantine replicas.
//!
//! Every draw here is the one the simulator made before it became application-generic, in the
//! same order, so a key-value seed replays exactly as it always did.

use crate::{KvOp, KvResult, KvStore};
use plumb_sim::lincheck::kv::{BytesKv, KvOp as LinOp, KvRet};
use plumb_sim::SimRng;
use plumb_sim::{AppForgery, SimApp};
use std::sync::Arc;

/// The key-value store, the simulator's default application.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kv;

fn get_of(rng: &mut SimRng, keys: &[Vec<u8>]) -> Vec<u8> {
    let key = rng.pick(keys).cloned().unwrap_or_default();
    KvOp::Get { key }.encode()
}

impl SimApp for Kv {
    type App = KvStore;
    type Model = BytesKv;

    fn name(&self) -> &'static str {
        "kv"
    }

    fn new_app(&self) -> KvStore {
        KvStore::new()
    }

    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        let keys: Vec<&[u8]> = objects.iter().map(|k| k.as_slice()).collect();
        crate::random_op(&mut || rng.next_u64(), &keys).encode()
    }

    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        get_of(rng, objects)
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        matches!(KvOp::decode(op), Ok(KvOp::Get { .. }))
    }

    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        get_of(rng, objects)
    }

    fn injected_op(&self, rng: &mut SimRng, _objects: &[Vec<u8>]) -> Vec<u8> {
        // `k0`..`k2` exist in every seed (at least three keys).
        let key = format!("k{}", rng.index(3)).into_bytes();
        if rng.chance(0.5) {
            KvOp::Get { key }
        } else {
            KvOp::DbSize
        }
        .encode()
    }

    fn mutating_op(&self) -> Vec<u8> {
        KvOp::Set {
            key: b"k0".to_vec(),
            value: b"read-only write".to_vec(),
            expire: None,
        }
        .encode()
    }

    fn forgery(&self) -> Arc<dyn AppForgery> {
        Arc::new(KvForgery)
    }

    fn op_text(&self, op: &[u8]) -> String {
        match KvOp::decode(op) {
            Ok(op) => kv_op_text(&op),
            Err(_) => format!("<{} bytes>", op.len()),
        }
    }

    fn result_text(&self, result: &[u8]) -> String {
        match KvResult::decode(result) {
            Ok(r) => format!("{r:?}"),
            Err(_) => format!("<{} bytes>", result.len()),
        }
    }

    fn model(&self) -> BytesKv {
        BytesKv::new()
    }

    fn model_op(&self, op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
        crate::model::model_op(op)
    }

    fn model_ret(&self, _op: &LinOp<Vec<u8>, Vec<u8>>, result: &[u8]) -> Option<KvRet<Vec<u8>>> {
        crate::model::model_ret(result)
    }
}

/// `set k1=7`, `cas k0 None->"a"`: keys and values as text.
pub fn kv_op_text(op: &KvOp) -> String {
    let t = |b: &[u8]| b.escape_ascii().to_string();
    match op {
        KvOp::Get { key } => format!("get {}", t(key)),
        KvOp::Set { key, value, expire } => {
            let exp = expire.map_or(String::new(), |e| format!(" expire {e}"));
            format!("set {}={}{exp}", t(key), t(value))
        }
        KvOp::Delete { key } => format!("del {}", t(key)),
        KvOp::CompareAndSet { key, expected, new } => {
            let exp = expected
                .as_ref()
                .map_or("absent".to_string(), |e| format!("\"{}\"", t(e)));
            format!("cas {} {exp}->\"{}\"", t(key), t(new))
        }
        KvOp::Increment { key, delta } => format!("incr {} {delta}", t(key)),
        KvOp::Keys { prefix } => format!("keys {}*", t(prefix)),
        KvOp::DbSize => "dbsize".to_string(),
        // The Redis commands; the simulated workload does not issue them.
        other => format!("{other:?}"),
    }
}

/// The key-value store's lies: a forged `SET k0`, plausible results of every kind, and a
/// checkpoint with one key overwritten.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvForgery;

impl AppForgery for KvForgery {
    fn forged_op(&self, nc: u64) -> Vec<u8> {
        KvOp::Set {
            key: b"k0".to_vec(),
            value: format!("forged-{nc}").into_bytes(),
            expire: None,
        }
        .encode()
    }

    fn plausible_results(&self) -> Vec<Vec<u8>> {
        [
            KvResult::Value(Some(b"evil".to_vec())),
            KvResult::Ok,
            KvResult::Bool(true),
            KvResult::Int(666),
            KvResult::Value(None),
        ]
        .iter()
        .map(KvResult::encode)
        .collect()
    }

    fn wrong_checkpoint(&self, app_checkpoint: &[u8], agreed_time: u64) -> Option<Vec<u8>> {
        let mut store = KvStore::from_canonical_bytes(app_checkpoint).ok()?;
        let lie = KvOp::Set {
            key: b"k0".to_vec(),
            value: b"wrong-checkpoint".to_vec(),
            expire: None,
        };
        store.apply(&lie, agreed_time);
        Some(store.canonical_bytes())
    }
}
