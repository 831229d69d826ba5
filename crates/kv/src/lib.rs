//! An in-memory key-value application for plumb.
//!
//! [`KvStore`] implements [`plumb_app::Application`]: requests are encoded [`KvOp`]s, replies
//! encoded [`KvResult`]s. Execution is deterministic (APPS2), expiry runs on the batch's agreed
//! time, checkpoints are the canonical encoding of the whole state (APPS3) and load back to
//! an equal state (APPS4). Request bytes that do not decode get an error reply, never a panic.

mod op;
mod random;
mod store;

pub use op::{
    parse_integer, DecodeError, Footprint, KvOp, KvResult, ERR_MALFORMED, ERR_NOT_INTEGER,
    ERR_NOT_READ_ONLY, ERR_OVERFLOW, ERR_WRONG_TYPE, OP_VERSION, RESULT_VERSION,
};
pub use random::{random_op, random_op_with_expiry};
pub use store::{Entry, KvStore, Value, CHECKPOINT_VERSION};
