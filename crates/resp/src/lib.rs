//! The Redis protocol (RESP2 and RESP3) for plumb's gateway: pure code, no I/O.
//!
//! - [`Resp`] and [`encode_as`]: reply values and their bytes in the connection's
//!   [`Protocol`] (RESP2, or RESP3 after `HELLO 3`).
//! - [`Parser`]: an incremental request parser (multibulk and inline commands) with size
//!   [`Limits`] checked before allocating, and Redis' [`ProtocolError`] texts.
//! - [`plan`]: what to do with a command: answer it locally ([`Plan::Reply`]), send one
//!   [`plumb_kv::KvOp`] to the replicated store ([`Plan::Submit`]), close the connection
//!   ([`Plan::Close`]) or rename it ([`Plan::SetName`]).
//! - [`render`]: the store's [`plumb_kv::KvResult`] as the command's reply.
//! - [`Session`]: a connection's transaction (`MULTI`, `EXEC`, `DISCARD`, `WATCH`), and
//!   [`Pipeline`]: the commands it sent back to back, gathered into one request.
//!
//! Every Redis command maps to at most one operation, so multi-key commands (`MSET`, `DEL`,
//! `MGET`) are atomic, and so is a transaction (one [`plumb_kv::KvOp::Transaction`]).
//! Replies and error texts follow Redis 7.0, in RESP2 and in RESP3.
//!
//! ```
//! use plumb_resp::{plan, render, Limits, Parser, Plan, Resp, ServerInfo};
//! let mut parser = Parser::new(Limits::default());
//! parser.feed(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
//! let args = parser.next_command().unwrap().unwrap();
//! let Plan::Submit { op, read_only, render: how } = plan(&args, &ServerInfo::default()) else {
//!     panic!()
//! };
//! assert!(read_only);
//! assert_eq!(op, plumb_kv::KvOp::Get { key: b"k".to_vec() });
//! let reply = render(&how, plumb_kv::KvResult::Value(None));
//! assert_eq!(reply.to_bytes(), b"$-1\r\n");
//! ```

mod client_admin;
mod commands;
mod parser;
pub mod pubsub;
mod session;
mod value;

pub use client_admin::{ClientAdmin, ClientFilter, ClientKind, ERR_UNBLOCKED};
pub use commands::{
    command_info, each, info_text, keyspace_section, lookup, plan, render, CommandSpec, Plan,
    Render, ServerInfo, COMMANDS, CONFIG, ERR_NOSCRIPT, ERR_NOT_INTEGER, ERR_NOT_POSITIVE,
    ERR_SYNTAX, REDIS_VERSION,
};
pub use parser::{split_args, Limits, Parser, ProtocolError};
pub use session::{
    exec_reply, replies, Pipeline, Session, Slot, Step, ERR_EXECABORT, PIPELINE_MAX_BYTES,
    PIPELINE_MAX_OPS,
};
pub use value::{encode, encode_as, Protocol, Resp, MAX_DEPTH};
