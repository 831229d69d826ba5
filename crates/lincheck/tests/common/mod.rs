//! What the hand-written key-value histories share: their types and the recording of one
//! completed operation.

use plumb_lincheck::kv::{BytesKv, KvOp, KvRet};
use plumb_lincheck::{History, OpId};

pub type Op = KvOp<Vec<u8>, Vec<u8>>;
pub type Ret = KvRet<Vec<u8>>;
pub type H = History<BytesKv>;

pub fn value(v: &[u8]) -> Ret {
    KvRet::Value(Some(v.to_vec()))
}

pub fn absent() -> Ret {
    KvRet::Value(None)
}

/// Record a completed operation; panics only on a malformed test history.
pub fn rec(h: &mut H, client: u64, op: Op, at: (u64, u64), ret: Ret) -> OpId {
    h.record(client, op, at.0, ret, at.1).unwrap()
}
