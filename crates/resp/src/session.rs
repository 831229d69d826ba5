//! A connection's state across commands: its open transaction (`MULTI` ... `EXEC`), the keys
//! it watches (`WATCH`), and the commands it pipelined that go to the cluster together.
//!
//! A transaction is queued here and sent, at `EXEC`, as one [`KvOp::Transaction`]: every
//! replica runs its commands back to back, so it is atomic and totally ordered with every
//! other operation, and a retry after a lost reply cannot apply half of it (the client's
//! request number makes the whole request exactly-once). `WATCH` reads each key's
//! fingerprint (its value and expiry) through the cluster; `EXEC` carries them and the store
//! runs the transaction only if every watched key still has its fingerprint. That is Redis'
//! optimistic lock with one difference: a key changed and changed back to exactly what it
//! held does not abort the transaction (the state the transaction saw is the state it runs
//! on, which is what the lock is for).

use crate::commands::{each, render};
use crate::{Plan, Render, Resp};
use plumb_kv::{KvOp, KvResult, Watched};

/// `EXEC` after a command was refused while queued (unknown, wrong number of arguments).
pub const ERR_EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// A pipeline batch stops taking commands at this many.
pub const PIPELINE_MAX_OPS: usize = 1024;
/// ... or at this many bytes of encoded ops (a larger command goes alone).
pub const PIPELINE_MAX_BYTES: usize = 1 << 20;

/// One reply of a transaction or pipeline batch, in command order: known already, or the
/// next op's result rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    Local(Resp),
    Op(Render),
}

/// What the gateway does for one command, given [`Session::step`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Carry out the plan as outside any transaction.
    Plan(Plan),
    /// `WATCH`: send `op` (a [`KvOp::Fingerprints`]) and hand its result to
    /// [`Session::watched`] with `keys`, which gives the reply.
    Watch { op: KvOp, keys: Vec<Vec<u8>> },
    /// `EXEC`: send `op` (a [`KvOp::Transaction`]) and reply with [`exec_reply`] of `slots`
    /// and its result.
    Exec {
        op: KvOp,
        read_only: bool,
        slots: Vec<Slot>,
    },
}

#[derive(Debug, Default)]
struct Queue {
    slots: Vec<Slot>,
    ops: Vec<Vec<u8>>,
    /// A command was refused while queued: `EXEC` fails with [`ERR_EXECABORT`].
    dirty: bool,
}

/// A connection's transaction state.
#[derive(Debug, Default)]
pub struct Session {
    queue: Option<Queue>,
    watched: Vec<Watched>,
}

fn reply(r: Resp) -> Step {
    Step::Plan(Plan::Reply(r))
}

fn error(text: &str) -> Step {
    reply(Resp::Error(text.to_string()))
}

fn queued() -> Step {
    reply(Resp::Simple("QUEUED".into()))
}

impl Session {
    /// The step for one command's plan, in Redis' terms: inside `MULTI` every command but
    /// `EXEC`, `DISCARD`, `MULTI`, `WATCH` and `QUIT` is queued (`+QUEUED`), and one refused
    /// before it could run fails the whole transaction.
    /// Commands queued in the open `MULTI`, if one is open.
    pub fn queued(&self) -> Option<usize> {
        self.queue.as_ref().map(|q| q.slots.len())
    }

    pub fn step(&mut self, plan: Plan) -> Step {
        let Some(queue) = self.queue.as_mut() else {
            return match plan {
                Plan::Multi => {
                    self.queue = Some(Queue::default());
                    reply(Resp::ok())
                }
                Plan::Exec => error("ERR EXEC without MULTI"),
                Plan::Discard => error("ERR DISCARD without MULTI"),
                Plan::Watch { keys } => Step::Watch {
                    op: KvOp::Fingerprints { keys: keys.clone() },
                    keys,
                },
                Plan::Unwatch => {
                    self.watched.clear();
                    reply(Resp::ok())
                }
                Plan::Reject(r) => reply(r),
                other => Step::Plan(other),
            };
        };
        match plan {
            Plan::Multi => error("ERR MULTI calls can not be nested"),
            Plan::Watch { .. } => error("ERR WATCH inside MULTI is not allowed"),
            Plan::Close(r) => Step::Plan(Plan::Close(r)),
            Plan::Reject(r) => {
                queue.dirty = true;
                reply(r)
            }
            Plan::Reply(r) => {
                queue.slots.push(Slot::Local(r));
                queued()
            }
            // Inside a transaction `INFO` answers without the keyspace figures.
            Plan::Info { text, .. } => {
                queue.slots.push(Slot::Local(Resp::Verbatim("txt", text)));
                queued()
            }
            Plan::Unwatch => {
                queue.slots.push(Slot::Local(Resp::ok()));
                queued()
            }
            // As `CLIENT SETNAME` is: the switch is made now, the reply given at `EXEC`.
            Plan::Hello {
                protocol,
                name,
                reply,
            } => {
                queue.slots.push(Slot::Local(reply));
                Step::Plan(Plan::Hello {
                    protocol,
                    name,
                    reply: Resp::Simple("QUEUED".into()),
                })
            }
            Plan::SetName { name, reply } => {
                queue.slots.push(Slot::Local(reply));
                Step::Plan(Plan::SetName {
                    name,
                    reply: Resp::Simple("QUEUED".into()),
                })
            }
            // Inside a transaction a blocking command does not block (as in Redis): it runs
            // once, and finding nothing is its reply.
            Plan::Submit { op, render, .. } | Plan::Block { op, render, .. } => {
                queue.ops.push(op.encode());
                queue.slots.push(Slot::Op(render));
                queued()
            }
            // The gateway's script cache resolves these before a session sees them; one that
            // was not is an error in its place, as an unknown script is in Redis.
            Plan::EvalSha { .. }
            | Plan::ScriptLoad { .. }
            | Plan::ScriptExists { .. }
            | Plan::ScriptFlush => {
                queue.slots.push(Slot::Local(Resp::error(
                    "ERR script commands need the gateway's script cache",
                )));
                queued()
            }
            // Redis queues these and subscribes at EXEC; here a transaction is one request
            // to the store, and subscriptions belong to the connection: refused.
            Plan::Subscribe { .. } | Plan::Unsubscribe { .. } => {
                queue.dirty = true;
                error("ERR (P)SUBSCRIBE and (P)UNSUBSCRIBE are not supported inside MULTI")
            }
            // They act on other connections, which a request to the store cannot.
            Plan::Client(_) => {
                queue.dirty = true;
                error("ERR CLIENT LIST, INFO, KILL and UNBLOCK are not supported inside MULTI")
            }
            Plan::Discard => {
                self.queue = None;
                self.watched.clear();
                reply(Resp::ok())
            }
            Plan::Exec => {
                let queue = self.queue.take().unwrap_or_default();
                let watched = std::mem::take(&mut self.watched);
                if queue.dirty {
                    return error(ERR_EXECABORT);
                }
                if queue.ops.is_empty() && watched.is_empty() {
                    return reply(exec_reply(&queue.slots, KvResult::Each(Vec::new())));
                }
                let op = KvOp::Transaction {
                    watched,
                    ops: queue.ops,
                };
                Step::Exec {
                    read_only: !op.is_mutating(),
                    op,
                    slots: queue.slots,
                }
            }
        }
    }

    /// `WATCH`'s reply, given the cluster's fingerprints of `keys`; on success the keys are
    /// watched until the next `EXEC`, `DISCARD` or `UNWATCH`.
    pub fn watched(&mut self, keys: Vec<Vec<u8>>, result: KvResult) -> Resp {
        match result {
            KvResult::Items(prints) if prints.len() == keys.len() => {
                let mut watched = Vec::with_capacity(keys.len());
                for (key, print) in keys.into_iter().zip(prints) {
                    let Ok(fingerprint) = <[u8; 32]>::try_from(print.as_slice()) else {
                        return Resp::Error("ERR the cluster's fingerprint is malformed".into());
                    };
                    watched.push(Watched { key, fingerprint });
                }
                self.watched.extend(watched);
                Resp::ok()
            }
            KvResult::Error(text) => Resp::Error(text),
            _ => Resp::Error("ERR the cluster's answer to WATCH has the wrong shape".into()),
        }
    }
}

/// The replies of `slots` in order, taking the op results from `results`; an op without a
/// result (the cluster's answer was short, or the request failed) gets `missing`.
pub fn replies(slots: &[Slot], results: Vec<KvResult>, missing: &Resp) -> Vec<Resp> {
    let mut results = results.into_iter();
    slots
        .iter()
        .map(|slot| match slot {
            Slot::Local(r) => r.clone(),
            Slot::Op(how) => match results.next() {
                Some(result) => render(how, result),
                None => missing.clone(),
            },
        })
        .collect()
}

/// `EXEC`'s reply: nil if a watched key changed, else one reply per queued command.
pub fn exec_reply(slots: &[Slot], result: KvResult) -> Resp {
    match result {
        KvResult::Aborted => Resp::Array(None),
        KvResult::Each(results) => {
            let ops = slots.iter().filter(|s| matches!(s, Slot::Op(_))).count();
            if results.len() != ops {
                return Resp::Error(format!(
                    "ERR the cluster answered {} of the transaction's {ops} commands",
                    results.len()
                ));
            }
            let missing = Resp::Error(String::new());
            Resp::array(replies(slots, each(results), &missing))
        }
        KvResult::Error(text) => Resp::Error(text),
        _ => Resp::Error("ERR the cluster's answer to EXEC has the wrong shape".into()),
    }
}

/// Commands a connection sent back to back, outside a transaction, gathered to go to the
/// cluster as one request ([`KvOp::Pipeline`]; a lone command goes as itself).
#[derive(Debug, Default)]
pub struct Pipeline {
    slots: Vec<Slot>,
    ops: Vec<Vec<u8>>,
    mutating: bool,
    bytes: usize,
}

impl Pipeline {
    /// Add a reply known already (it keeps its place among the others).
    pub fn local(&mut self, r: Resp) {
        self.slots.push(Slot::Local(r));
    }

    /// Whether an op of `len` encoded bytes may join; if not, send the others first (a
    /// pipeline that a lone large command would push over the request limit must not fail
    /// the small ones with it).
    pub fn has_room_for(&self, len: usize) -> bool {
        self.ops.is_empty()
            || (self.ops.len() < PIPELINE_MAX_OPS && self.bytes + len <= PIPELINE_MAX_BYTES)
    }

    /// Add a command for the cluster, `bytes` its encoded op.
    pub fn submit(&mut self, bytes: Vec<u8>, read_only: bool, render: Render) {
        self.bytes += bytes.len();
        self.mutating |= !read_only;
        self.ops.push(bytes);
        self.slots.push(Slot::Op(render));
    }

    /// Nothing gathered.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The ops gathered, encoded.
    pub fn ops(&self) -> &[Vec<u8>] {
        &self.ops
    }

    /// Whether every op gathered is read-only.
    pub fn read_only(&self) -> bool {
        !self.mutating
    }

    /// The request for the ops from `from` on: the op itself if it is the last, else a
    /// [`KvOp::Pipeline`] of them (which may run only a prefix; send the rest again).
    pub fn request(&self, from: usize) -> Vec<u8> {
        match &self.ops[from..] {
            [one] => one.clone(),
            rest => KvOp::Pipeline { ops: rest.to_vec() }.encode(),
        }
    }

    /// Every reply in order, the op results in `results` (fewer than the ops if the requests
    /// failed part way: the rest get `missing`). Empties the pipeline.
    pub fn finish(&mut self, results: Vec<KvResult>, missing: &Resp) -> Vec<Resp> {
        let out = replies(&self.slots, results, missing);
        *self = Pipeline::default();
        out
    }
}
