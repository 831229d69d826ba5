//! The key-value store as the checkers' unit tests see it: the least adapter that lets them
//! judge key-value histories. The simulator depends on no application, and the store's own
//! adapter (`plumb_kv::sim::Kv`, feature `sim`) depends on this crate, so a test of this crate
//! cannot use it (its `SimApp` would be another copy's); plumb-kv is a dev-dependency without
//! that feature. Its model mapping is the store's own (`plumb_kv::model`, feature `model`).

use crate::app::SimApp;
use crate::rng::SimRng;
use plumb_kv::{KvOp, KvResult, KvStore};
use plumb_lincheck::kv::{BytesKv, KvOp as LinOp, KvRet};

/// Gets, sets without expiry, deletes, compare-and-sets and increments of the store.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kv;

fn get_k0() -> Vec<u8> {
    KvOp::Get {
        key: b"k0".to_vec(),
    }
    .encode()
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

    fn random_op(&self, _rng: &mut SimRng, _objects: &[Vec<u8>]) -> Vec<u8> {
        get_k0()
    }

    fn random_read(&self, _rng: &mut SimRng, _objects: &[Vec<u8>]) -> Vec<u8> {
        get_k0()
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        matches!(KvOp::decode(op), Ok(KvOp::Get { .. }))
    }

    fn harmless_op(&self, _rng: &mut SimRng, _objects: &[Vec<u8>]) -> Vec<u8> {
        get_k0()
    }

    fn injected_op(&self, _rng: &mut SimRng, _objects: &[Vec<u8>]) -> Vec<u8> {
        get_k0()
    }

    fn mutating_op(&self) -> Vec<u8> {
        KvOp::Delete {
            key: b"k0".to_vec(),
        }
        .encode()
    }

    fn op_text(&self, op: &[u8]) -> String {
        format!("{:?}", KvOp::decode(op))
    }

    fn result_text(&self, result: &[u8]) -> String {
        format!("{:?}", KvResult::decode(result))
    }

    fn model(&self) -> BytesKv {
        BytesKv::new()
    }

    fn model_op(&self, op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
        plumb_kv::model::model_op(op)
    }

    fn model_ret(&self, _op: &LinOp<Vec<u8>, Vec<u8>>, result: &[u8]) -> Option<KvRet<Vec<u8>>> {
        plumb_kv::model::model_ret(result)
    }
}
