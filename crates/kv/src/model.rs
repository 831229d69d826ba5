//! The store's operations and results in the terms of the linearizability checker's
//! key-value model (`plumb_lincheck::kv`), for the simulator: its adapter (`sim.rs`) and the
//! simulator's own checker tests, which cannot use that adapter (it depends on the simulator)
//! and call these instead of keeping a copy.

use crate::{KvOp, KvResult, ERR_NOT_INTEGER, ERR_OVERFLOW};
use plumb_lincheck::kv::{KvError, KvOp as LinOp, KvRet};

/// `op` as a model operation; `None` for what the model does not cover: `Keys`, `DbSize`,
/// `Set` with an expiry (expiry follows agreed time, which clients do not see) and the Redis
/// commands.
pub fn model_op(op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
    Some(match KvOp::decode(op).ok()? {
        KvOp::Get { key } => LinOp::Get { key },
        KvOp::Set {
            key,
            value,
            expire: None,
        } => LinOp::Set { key, value },
        KvOp::Delete { key } => LinOp::Delete { key },
        KvOp::CompareAndSet { key, expected, new } => LinOp::CompareAndSet { key, expected, new },
        KvOp::Increment { key, delta } => LinOp::Increment { key, delta },
        _ => return None,
    })
}

/// `result` as a model return; `None` for an error other than not-an-integer or overflow and
/// for results of what the model does not cover (sorted sets and the rest).
pub fn model_ret(result: &[u8]) -> Option<KvRet<Vec<u8>>> {
    Some(match KvResult::decode(result).ok()? {
        KvResult::Value(v) => KvRet::Value(v),
        KvResult::Ok => KvRet::Ok,
        KvResult::Bool(b) => KvRet::Bool(b),
        KvResult::Int(n) => KvRet::Int(n),
        KvResult::Error(e) if e == ERR_NOT_INTEGER => KvRet::Error(KvError::NotInteger),
        KvResult::Error(e) if e == ERR_OVERFLOW => KvRet::Error(KvError::Overflow),
        _ => return None,
    })
}
