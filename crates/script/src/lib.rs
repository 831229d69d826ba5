//! Redis Lua scripting for plumb's key-value store (`EVAL`, `EVALSHA`, `EVAL_RO`,
//! `EVALSHA_RO`, `SCRIPT LOAD|EXISTS|FLUSH`).
//!
//! A script travels to the cluster whole, as one [`plumb_kv::KvOp::Eval`], and every
//! execution replica runs it: deterministically (see [`engine`]), on Lua 5.1 (what Redis
//! embeds, through `mlua`), its `redis.call`s planned and rendered as the gateway plans and
//! renders commands ([`call`]), within an instruction budget and a memory limit.
//!
//! - [`store`]: a key-value store with the engine installed (what nodes and the simulator
//!   run).
//! - [`ScriptCache`]: the gateway's `sha1 -> body` cache behind `EVALSHA` and `SCRIPT`.
//! - `gateway` (feature `gateway`): the Redis front end `plumb gateway` runs for a key-value
//!   cluster. It lives here, with the store that scripting completes, rather than in
//!   plumb-resp (the protocol alone) or plumb-gateway (the core every front end shares).

pub mod cache;
pub mod call;
pub mod convert;
pub mod engine;
/// The Redis front end `plumb gateway` runs for a key-value cluster (feature `gateway`).
#[cfg(feature = "gateway")]
pub mod gateway;
/// Redis clients' workload under the simulator (feature `sim`).
#[cfg(feature = "sim")]
pub mod sim;

pub use cache::ScriptCache;
pub use engine::{check_compiles, sha1_hex, Engine, Limits};

use plumb_kv::KvStore;
use std::sync::Arc;

/// An empty key-value store whose `EVAL` runs on the Lua engine with the default limits.
pub fn store() -> KvStore {
    KvStore::with_scripting(Arc::new(Engine::default()))
}
