//! The gateway's script cache: `sha1 -> body`, filled by `SCRIPT LOAD` and `EVAL`, read by
//! `EVALSHA` and `SCRIPT EXISTS`, emptied by `SCRIPT FLUSH`.
//!
//! It is the gateway's, not the replicated state's: `EVALSHA` is sent to the cluster as the
//! `EVAL` of the whole body, so replicas keep no cache that could differ between them or
//! grow without bound. A script loaded through another gateway (or before this one
//! restarted) is unknown here and gets `NOSCRIPT`, on which client libraries send `EVAL`.

use crate::engine::{check_compiles, sha1_hex};
use plumb_kv::KvOp;
use plumb_resp::{Plan, Render, Resp, ERR_NOSCRIPT};
use std::collections::HashMap;

/// Bytes of script bodies the cache holds before it starts over (a client sending endless
/// distinct `EVAL`s must not grow the gateway without bound; Redis 7.0 has no such limit).
pub const MAX_CACHE_BYTES: usize = 64 << 20;

#[derive(Debug, Default)]
pub struct ScriptCache {
    scripts: HashMap<String, Vec<u8>>,
    bytes: usize,
}

impl ScriptCache {
    /// Remember `body`; its sha1.
    pub fn insert(&mut self, body: &[u8]) -> String {
        let sha = sha1_hex(body);
        if !self.scripts.contains_key(&sha) {
            if self.bytes + body.len() > MAX_CACHE_BYTES {
                self.flush();
            }
            self.bytes += body.len();
            self.scripts.insert(sha.clone(), body.to_vec());
        }
        debug_assert!(self.bytes == self.scripts.values().map(Vec::len).sum::<usize>());
        sha
    }

    pub fn get(&self, sha: &[u8]) -> Option<&[u8]> {
        let sha = std::str::from_utf8(sha).ok()?;
        self.scripts.get(sha).map(Vec::as_slice)
    }

    pub fn contains(&self, sha: &[u8]) -> bool {
        self.get(sha).is_some()
    }

    pub fn flush(&mut self) {
        self.scripts.clear();
        self.bytes = 0;
    }

    /// A plan with every script command resolved against the cache: `EVALSHA` becomes the
    /// `EVAL` of the body (or `NOSCRIPT`), `SCRIPT LOAD|EXISTS|FLUSH` their replies; an
    /// `EVAL` is remembered. Other plans pass unchanged.
    pub fn resolve(&mut self, plan: Plan) -> Plan {
        match plan {
            Plan::EvalSha {
                sha,
                keys,
                args,
                read_only,
            } => match self.get(&sha) {
                None => Plan::Reply(Resp::error(ERR_NOSCRIPT)),
                Some(body) => Plan::Submit {
                    op: KvOp::Eval {
                        script: body.to_vec(),
                        keys,
                        args,
                        read_only,
                    },
                    read_only: false,
                    render: Render::Plain,
                },
            },
            Plan::ScriptLoad { body } => match check_compiles(&body) {
                Ok(()) => Plan::Reply(Resp::bulk(self.insert(&body))),
                Err(text) => Plan::Reply(Resp::Error(text)),
            },
            Plan::ScriptExists { shas } => Plan::Reply(Resp::array(
                shas.iter()
                    .map(|sha| Resp::Integer(i64::from(self.contains(sha))))
                    .collect(),
            )),
            Plan::ScriptFlush => {
                self.flush();
                Plan::Reply(Resp::ok())
            }
            Plan::Submit {
                op: KvOp::Eval { ref script, .. },
                ..
            } => {
                // Redis 7.0 caches what EVAL ran too, so EVALSHA of it works afterwards.
                self.insert(script);
                plan
            }
            other => other,
        }
    }
}
