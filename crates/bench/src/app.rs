//! The application plumb is measured with. The workloads are keyed writes and reads (so that
//! etcd, ZooKeeper and Redis run the same ones side by side); an application takes part by
//! saying how such a write and read look in its operations and how long a reply's payload is.
//! `plumb bench` measures the key-value store ([`KvBench`]); another application's own binary
//! can measure itself with an implementation of its own.

use plumb_kv::{KvOp, KvResult};

pub trait BenchApp: Send + Sync + std::fmt::Debug + 'static {
    /// The application's name in the cluster file (`app`): the nodes must run it.
    fn name(&self) -> &str;
    /// An operation that stores `value` under `key`.
    fn write(&self, key: &str, value: &[u8]) -> Vec<u8>;
    /// A read-only operation that returns what is stored under `key`.
    fn read(&self, key: &str) -> Vec<u8>;
    /// The payload bytes a reply carries (for the bytes-per-second figures), or why the reply
    /// is not one the operation can have.
    fn reply_bytes(&self, reply: &[u8]) -> Result<usize, String>;
}

/// The key-value store: SET and GET.
#[derive(Debug)]
pub struct KvBench;

impl BenchApp for KvBench {
    fn name(&self) -> &str {
        plumb_cluster::DEFAULT_APP
    }

    fn write(&self, key: &str, value: &[u8]) -> Vec<u8> {
        KvOp::Set {
            key: key.as_bytes().to_vec(),
            value: value.to_vec(),
            expire: None,
        }
        .encode()
    }

    fn read(&self, key: &str) -> Vec<u8> {
        KvOp::Get {
            key: key.as_bytes().to_vec(),
        }
        .encode()
    }

    fn reply_bytes(&self, reply: &[u8]) -> Result<usize, String> {
        match KvResult::decode(reply).map_err(|e| format!("undecodable result: {e}"))? {
            KvResult::Ok => Ok(0),
            KvResult::Value(v) => Ok(v.map_or(0, |v| v.len())),
            other => Err(format!("unexpected result {other:?}")),
        }
    }
}

/// `specbench` behind the predicated-request shim (`plumb bench speculation`): a write creates
/// the file `/key` (the value is not stored: the bench's probe only needs an ordered write), a
/// read reads it back, both as the shim's plain envelope.
#[derive(Debug)]
pub struct SpecBenchApp;

impl BenchApp for SpecBenchApp {
    fn name(&self) -> &str {
        plumb_speculation::app::SPECBENCH_APP
    }

    fn write(&self, key: &str, _value: &[u8]) -> Vec<u8> {
        let op = plumb_speculation::app::create_op(&format!("/{}", key.replace('/', "-")));
        plumb_speculation::SpecOp::plain(op).encode()
    }

    fn read(&self, key: &str) -> Vec<u8> {
        let op = plumb_speculation::app::read_op(&format!("/{}", key.replace('/', "-")));
        plumb_speculation::SpecOp::plain(op).encode()
    }

    fn reply_bytes(&self, reply: &[u8]) -> Result<usize, String> {
        match plumb_speculation::SpecReply::decode(reply) {
            Ok(plumb_speculation::SpecReply::Executed(b)) => Ok(b.len()),
            other => Err(format!("unexpected reply {other:?}")),
        }
    }
}
