//! Redis commands: the table (`COMMAND`), [`plan`] (arguments to a reply or a
//! [`KvOp`](plumb_kv::KvOp)) and [`render`](fn@render) (a
//! [`KvResult`](plumb_kv::KvResult) to the command's reply).
//!
//! Each entry of the table ([`COMMANDS`]) carries the handler that plans its command. The
//! handlers are grouped by what they serve (strings, keys, hashes, lists, sets, sorted sets,
//! the connection, the server, transactions, channels, scripts); the argument readers and
//! error replies they share are in `args` and `numkeys`.

mod args;
mod call;
mod channels;
mod connection;
mod hashes;
mod keys;
mod lists;
mod numkeys;
mod render;
mod scripting;
mod server;
mod sets;
mod sorted_sets;
mod strings;
mod table;
mod transactions;

pub use args::{ERR_NOT_INTEGER, ERR_NOT_POSITIVE, ERR_SYNTAX};
pub use call::{Plan, Render, ServerInfo};
pub use render::{each, render};
pub use scripting::ERR_NOSCRIPT;
pub use server::{info_text, keyspace_section, CONFIG, REDIS_VERSION};
pub use table::{command_info, lookup, CommandSpec, COMMANDS};

use args::{arity_error, unknown_command};
use call::Call;

/// Decide what to do with one command (its arguments, name first).
pub fn plan(args: &[Vec<u8>], info: &ServerInfo) -> Plan {
    let Some(spec) = args.first().and_then(|name| lookup(name)) else {
        return unknown_command(args);
    };
    let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        return arity_error(spec.name);
    }
    (spec.handler)(&Call {
        name: spec.name,
        args,
        info,
    })
}
