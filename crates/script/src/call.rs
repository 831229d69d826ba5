//! `redis.call` / `redis.pcall`: one Redis command from a script, planned as the gateway
//! plans it ([`plumb_resp::plan`]), run on the same store at the request's agreed time, and
//! rendered as the gateway renders it. Errors are error replies here; whether one is raised
//! (`redis.call`) or returned (`redis.pcall`) is the Lua side's business.

use plumb_kv::{request_seed, KvOp, KvStore};
use plumb_resp::{keyspace_section, lookup, plan, render, Plan, Resp, ServerInfo};
use plumb_wire::Micros;

/// Redis 7.0's texts for commands a script may not run.
pub const ERR_UNKNOWN: &str = "ERR Unknown Redis command called from script";
pub const ERR_ARITY: &str = "ERR Wrong number of args calling Redis command from script";
pub const ERR_NOT_ALLOWED: &str = "ERR This Redis command is not allowed from script";
pub const ERR_WRITE_IN_READ_ONLY: &str =
    "ERR Write commands are not allowed from read-only scripts.";
pub const ERR_NO_ARGS: &str = "ERR Please specify at least one argument for this redis lib call";
pub const ERR_ARG_TYPE: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// What the commands of one script run on.
pub struct Calls<'a> {
    pub store: &'a mut KvStore,
    /// The batch's agreed time: the clock of every command (expiry, `SET ... EX`).
    pub now: Micros,
    /// The request's seed; the `n`th command gets [`request_seed`]`(seed, n)`, as the ops of a
    /// transaction do, so `SPOP` in a script picks the same member on every replica.
    pub seed: u64,
    /// Commands run so far.
    pub count: usize,
    /// `EVAL_RO`: write commands are refused.
    pub read_only: bool,
}

impl Calls<'_> {
    /// The reply to one command (name first), as the script sees it.
    pub fn call(&mut self, args: &[Vec<u8>]) -> Resp {
        let Some(name) = args.first() else {
            return Resp::error(ERR_NO_ARGS);
        };
        let Some(spec) = lookup(name) else {
            return Resp::error(ERR_UNKNOWN);
        };
        let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
        if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
            return Resp::error(ERR_ARITY);
        }
        // As Redis 7.0: connection, transaction, script and blocking commands are refused
        // (a script runs at once, in one step, for no connection). SELECT of database 0 is
        // harmless and Redis allows it.
        let refused = spec.flags.contains(&"noscript") || spec.flags.contains(&"blocking");
        if refused && spec.name != "select" {
            return Resp::error(ERR_NOT_ALLOWED);
        }
        if self.read_only && spec.flags.contains(&"write") {
            return Resp::error(ERR_WRITE_IN_READ_ONLY);
        }
        let now_ms = i64::try_from(self.now / 1_000).unwrap_or(i64::MAX);
        // Only the agreed time: anything else a plan reads from `ServerInfo` would differ
        // between replicas.
        let info = ServerInfo {
            now_ms,
            ..ServerInfo::default()
        };
        match plan(args, &info) {
            Plan::Reply(r) | Plan::Reject(r) => r,
            Plan::Submit {
                op, render: how, ..
            } => {
                let seed = request_seed(self.seed, self.count);
                self.count += 1;
                let result = self.store.apply_seeded(&op, self.now, seed);
                #[cfg(feature = "sabotage")]
                if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::ScriptCallAppliesTwice)
                    && op.is_mutating()
                {
                    let _ = self.store.apply_seeded(&op, self.now, seed);
                }
                render(&how, result)
            }
            Plan::Info { text, keyspace } => {
                let text = if keyspace {
                    keyspace_section(&text, &self.store.read(&KvOp::KeyspaceStats))
                } else {
                    text
                };
                Resp::bulk(text)
            }
            // Every other plan belongs to a command with the `noscript` flag.
            _ => Resp::error(ERR_NOT_ALLOWED),
        }
    }
}
