//! An in-memory key-value application for plumb.
//!
//! [`KvStore`] implements [`plumb_app::Application`]: requests are encoded [`KvOp`]s, replies
//! encoded [`KvResult`]s. Execution is deterministic (APPS2), expiry runs on the batch's agreed
//! time, checkpoints are the canonical encoding of the whole state (APPS3) and load back to
//! an equal state (APPS4). Request bytes that do not decode get an error reply, never a panic.
//!
//! Besides strings the store holds Redis' hashes, lists, sets and sorted sets, with one
//! [`KvOp`] per Redis command a gateway needs (multi-key commands are one atomic operation).
//! A [`KvOp::Pipeline`] carries several commands of one connection in one request, and a
//! [`KvOp::Transaction`] a Redis `MULTI`/`EXEC` block, run atomically under its `WATCH`es.
//! A [`KvOp::Eval`] is a Redis Lua script, run by an engine the store is given ([`Scripting`],
//! implemented by the `plumb-script` crate, which this one cannot depend on).

mod buckets;
mod glob;
#[cfg(feature = "model")]
pub mod model;
mod objects;
mod op;
pub mod pubsub;
mod random;
/// The store under the simulator (feature `sim`).
#[cfg(feature = "sim")]
pub mod sim;
mod store;
mod zset;

pub use buckets::{bucket_of, BUCKET_BITS};
pub use glob::{glob_match, literal_prefix};
pub use objects::BUCKET_VERSION;
pub use op::{
    parse_integer, Aggregate, CollectionKind, DecodeError, End, ExpireCondition, Footprint, KvOp,
    KvResult, LexBound, SetCondition, SetExpiry, SetOp, Watched, ZAddOptions, ZRangeBy,
    ERR_HASH_NOT_INTEGER, ERR_INDEX_RANGE, ERR_MALFORMED, ERR_MIN_MAX_NOT_FLOAT, ERR_NESTED,
    ERR_NOT_FLOAT, ERR_NOT_INTEGER, ERR_NOT_READ_ONLY, ERR_NO_SCRIPTING, ERR_NO_SUCH_KEY,
    ERR_OVERFLOW, ERR_SCORE_NAN, ERR_STRING_TOO_LONG, ERR_TTL_NEEDS_ORDER, ERR_WRONG_TYPE,
    ERR_ZADD_GT_LT_NX, ERR_ZADD_INCR_PAIRS, ERR_ZADD_NX_XX, MAX_STRING, OP_VERSION,
    PIPELINE_REPLY_BUDGET, RESULT_VERSION,
};
pub use random::{random_op, random_op_with_expiry};
pub use store::{
    fingerprint, format_float, request_seed, Entry, EvalRequest, KvStore, Scripting, Value,
    CHECKPOINT_VERSION, ERR_FLOAT_OVERFLOW, ERR_HASH_NOT_FLOAT,
};
pub use zset::{Score, ScoreBound, ZSet};
