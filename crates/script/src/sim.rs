//! The key-value store as Redis clients drive it through the gateway: besides the key-value
//! workload's single commands, transactions (`MULTI`/`EXEC`, some under `WATCH`) and pipelines
//! of several commands in one request. Checked against the key-value model, whose
//! transactions run all their ops at one point or, if a guard fails, none; a history with a
//! transaction is checked whole, not key by key.
//!
//! A `WATCH` guard is the fingerprint of a value the generator chose (or of absence), so a
//! guard holds or fails by chance, and the model knows which value it stands for.
//!
//! Queues: pushes of unique elements onto two lists (`q0`, `q1`, never touched by the string
//! workload), and the pops and moves under `BLPOP`, `BRPOPLPUSH` and the like. They are left
//! out of the linearizability model (the lists are objects of their own, which no modelled op
//! reads, so dropping them keeps the rest sound). Instead the agreed history is replayed on
//! plain queues (`REDIS-queue`): every element popped or moved was pushed and is still in its
//! list, at the end it says, so no element is popped twice or made up.
//!
//! Expiry: `SET tK v PX ttl` and `GET tK` on two keys of their own (`t0`, `t1`), left out of
//! the model like the queues (expiry follows agreed time, which clients do not see). Each value
//! names its ttl, so the reference replay knows every key's lease: a key must not expire
//! sooner than `ttl - 2X` of real time after its SET was invoked (`KV-ttl`, check/leases.rs).
//!
//! Pub/sub: subscriptions of the first three client identities to two channels and two
//! patterns, and `PUBLISH`es of unique messages. Left out of the model like the queues (no
//! modelled op reads subscriptions; the reference replay still judges every `PUBLISH` count).
//! Every message a correct client's library delivered must come from a `PUBLISH` in the agreed
//! history, on a channel it names, and reach that client once (`REDIS-pubsub`).
//! `plumb sim --app redis`.

use plumb_kv::pubsub::Message;
use plumb_kv::sim::{kv_op_text, Kv};
use plumb_kv::{fingerprint, End, Entry, KvOp, KvResult, KvStore, Value, Watched};
use plumb_sim::app::{AppViolation, Executed, Lease, LeaseKind, LeaseOp, SimApp};
use plumb_sim::lincheck::kv::{BytesKv, KvOp as LinOp, KvRet};
use plumb_sim::AppForgery;
use plumb_sim::SimRng;
use plumb_wire::{ClientId, Micros};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Redis transactions and pipelines over the key-value store.
#[derive(Clone, Copy, Debug, Default)]
pub struct Redis;

/// Pub/sub: the channels published on and subscribed to, and the patterns.
const CHANNELS: &[&[u8]] = &[b"ch0", b"ch1"];
const PATTERNS: &[&[u8]] = &[b"ch*", b"*1"];
/// Identities subscribed for: the first three clients (a seed runs at least three).
const SUBSCRIBERS: usize = 3;

/// A subscription change of one of the first clients, or a publish of a unique message.
fn pubsub_op(rng: &mut SimRng) -> KvOp {
    let names = |rng: &mut SimRng, from: &[&[u8]]| -> Vec<Vec<u8>> {
        rng.subset(from, 0.5)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect()
    };
    match rng.index(5) {
        0..=2 => {
            let subscriber = rng.index(SUBSCRIBERS) as ClientId;
            let (channels, patterns) = (names(rng, CHANNELS), names(rng, PATTERNS));
            KvOp::subscription(rng.chance(0.7), subscriber, channels, patterns)
        }
        _ => KvOp::Publish {
            channel: rng.pick(CHANNELS).map_or(Vec::new(), |c| c.to_vec()),
            message: format!("m{:016x}", rng.next_u64()).into_bytes(),
        },
    }
}

/// `REDIS-pubsub`: every delivered message was published, in the agreed history, on the
/// channel it names, and no client got one message under two event ids.
fn check_pubsub(
    pushes: &[(ClientId, u64, Vec<u8>)],
    executed: &[Executed<'_>],
) -> Result<(), String> {
    let mut published: BTreeMap<(Vec<u8>, Vec<u8>), usize> = BTreeMap::new();
    for e in executed {
        if let Ok(KvOp::Publish { channel, message }) = KvOp::decode(e.op) {
            *published.entry((channel, message)).or_default() += 1;
        }
    }
    // (client, channel, message) -> event ids it arrived under.
    let mut seen: BTreeMap<(ClientId, Vec<u8>, Vec<u8>), BTreeSet<u64>> = BTreeMap::new();
    for (client, event, payload) in pushes {
        let m = Message::decode(payload)
            .map_err(|e| format!("c{client} event {event}: payload does not decode ({e})"))?;
        let key = (m.channel.clone(), m.message.clone());
        let Some(&times) = published.get(&key) else {
            return Err(format!(
                "c{client} event {event}: message {} on {} was never published",
                text(&m.message),
                text(&m.channel)
            ));
        };
        let ids = seen.entry((*client, key.0, key.1)).or_default();
        ids.insert(*event);
        if ids.len() > times {
            return Err(format!(
                "c{client} received message {} on {} under events {ids:?}, published {times} time(s)",
                text(&m.message),
                text(&m.channel)
            ));
        }
    }
    Ok(())
}

/// What a guard may expect a key to hold: values the key-value workload writes often.
const GUARD_VALUES: &[&[u8]] = &[b"0", b"1", b"7", b"a"];

fn guard_fingerprint(value: Option<&[u8]>) -> [u8; 32] {
    let entry = value.map(|v| Entry {
        value: Value::Str(v.to_vec()),
        expires_at: None,
    });
    fingerprint(entry.as_ref())
}

/// The value a guard's fingerprint stands for (`Some(None)`: absent), if it is one of the
/// generator's.
fn guard_value(print: &[u8; 32]) -> Option<Option<Vec<u8>>> {
    if *print == guard_fingerprint(None) {
        return Some(None);
    }
    GUARD_VALUES
        .iter()
        .find(|v| guard_fingerprint(Some(v)) == *print)
        .map(|v| Some(v.to_vec()))
}

/// A single command the model covers: the key-value workload's, with its whole-store reads
/// (`KEYS`, `DBSIZE`) replaced by a `GET`.
fn single(rng: &mut SimRng, objects: &[Vec<u8>]) -> KvOp {
    let keys: Vec<&[u8]> = objects.iter().map(|k| k.as_slice()).collect();
    match plumb_kv::random_op(&mut || rng.next_u64(), &keys) {
        KvOp::Keys { .. } | KvOp::DbSize => KvOp::Get {
            key: rng.pick(objects).cloned().unwrap_or_default(),
        },
        op => op,
    }
}

fn singles(rng: &mut SimRng, objects: &[Vec<u8>], most: usize) -> Vec<Vec<u8>> {
    let n = 1 + rng.index(most);
    (0..n).map(|_| single(rng, objects).encode()).collect()
}

/// The workload's scripts (`EVAL`): straight-line, so each stands for a known transaction
/// of the model: a `GET` of `KEYS[1]` and then a `SET` (or `INCR`) of `KEYS[2]`, replying what
/// they returned.
const SCRIPT_SET: &str =
    "local v = redis.call('get', KEYS[1])\nredis.call('set', KEYS[2], ARGV[1])\nreturn v";
/// `INCR`'s result is read back with `GET`: a Lua number is a double, which would round an
/// integer near 2^63 (as it does in Redis), and the workload writes such integers.
const SCRIPT_INCR: &str = "local v = redis.call('get', KEYS[1])
local n = redis.pcall('incr', KEYS[2])
if type(n) == 'table' then return {v, n} end
return {v, redis.call('get', KEYS[2])}";

fn script_op(rng: &mut SimRng, objects: &[Vec<u8>]) -> KvOp {
    let mut key = || rng.pick(objects).cloned().unwrap_or_default();
    let keys = vec![key(), key()];
    let (script, args) = if rng.chance(0.5) {
        let value = rng.pick(GUARD_VALUES).map_or(b"0".to_vec(), |v| v.to_vec());
        (SCRIPT_SET, vec![value])
    } else {
        (SCRIPT_INCR, Vec::new())
    };
    KvOp::Eval {
        script: script.as_bytes().to_vec(),
        keys,
        args,
        read_only: false,
    }
}

/// The commands a workload script runs, in order (`None`: not one of the workload's).
fn script_ops(op: &KvOp) -> Option<Vec<KvOp>> {
    let KvOp::Eval {
        script,
        keys,
        args,
        read_only: false,
    } = op
    else {
        return None;
    };
    let get = |key: &Vec<u8>| KvOp::Get { key: key.clone() };
    match (keys.as_slice(), args.as_slice()) {
        ([a, b], [v]) if script == SCRIPT_SET.as_bytes() => Some(vec![
            get(a),
            KvOp::Set {
                key: b.clone(),
                value: v.clone(),
                expire: None,
            },
        ]),
        ([a, b], []) if script == SCRIPT_INCR.as_bytes() => Some(vec![
            get(a),
            KvOp::Increment {
                key: b.clone(),
                delta: 1,
            },
        ]),
        _ => None,
    }
}

/// The results of a workload script's commands, from its reply (`v` for `SCRIPT_SET`,
/// `[v, n]` for `SCRIPT_INCR`, `incr`, with `n` the new value as text or INCR's error),
/// encoded as the store's results.
fn script_results(incr: bool, reply: &[u8]) -> Option<Vec<Vec<u8>>> {
    use plumb_resp::Resp;
    let value = |r: &Resp| match r {
        Resp::Bulk(v) => Some(KvResult::Value(v.clone())),
        _ => None,
    };
    let results = match (incr, Resp::parse(reply)?) {
        (false, r) => vec![value(&r)?, KvResult::Ok],
        (true, Resp::Array(Some(items))) => match items.as_slice() {
            [v, Resp::Bulk(Some(n))] => {
                vec![value(v)?, KvResult::Int(plumb_kv::parse_integer(n)?)]
            }
            [v, Resp::Error(e)] => vec![value(v)?, KvResult::Error(e.clone())],
            _ => return None,
        },
        _ => return None,
    };
    Some(results.iter().map(KvResult::encode).collect())
}

/// The lists of the queue workload.
const QUEUES: [&[u8]; 2] = [b"q0", b"q1"];

fn end(rng: &mut SimRng) -> End {
    if rng.chance(0.5) {
        End::Left
    } else {
        End::Right
    }
}

/// A queue operation: a push of a unique element, a pop from the first non-empty list, a move
/// between the lists, or a plain pop.
fn queue_op(rng: &mut SimRng) -> KvOp {
    let q = |rng: &mut SimRng| rng.pick(&QUEUES).map_or(b"q0".to_vec(), |q| q.to_vec());
    match rng.index(4) {
        0 | 1 => KvOp::Push {
            key: q(rng),
            end: end(rng),
            values: vec![format!("e{:016x}", rng.next_u64()).into_bytes()],
        },
        2 => {
            let mut keys: Vec<Vec<u8>> = QUEUES.iter().map(|q| q.to_vec()).collect();
            if rng.chance(0.5) {
                keys.reverse();
            }
            KvOp::PopFirst {
                keys,
                end: end(rng),
            }
        }
        _ if rng.chance(0.5) => KvOp::Move {
            from: q(rng),
            to: q(rng),
            from_end: end(rng),
            to_end: end(rng),
        },
        _ => KvOp::Pop {
            key: q(rng),
            end: end(rng),
            count: None,
        },
    }
}

/// The keys of the expiry workload.
const TTL_KEYS: [&[u8]; 2] = [b"t0", b"t1"];

/// A read of a key that expires, or a SET that makes it expire after 1 to 3 s (longer than
/// the `2X` of slack a key may lose, 750 ms by default, so the promise is never empty). The
/// value names its ttl and is unique: `1250000:9f..`.
fn ttl_op(rng: &mut SimRng) -> KvOp {
    let key = rng.pick(&TTL_KEYS).map_or(b"t0".to_vec(), |k| k.to_vec());
    if rng.chance(0.3) {
        return KvOp::Get { key };
    }
    let ttl = rng.range(1_000_000, 3_000_000);
    KvOp::Set {
        key,
        value: format!("{ttl}:{:016x}", rng.next_u64()).into_bytes(),
        expire: Some(ttl),
    }
}

/// The ttl a value of the expiry workload names.
fn ttl_of(value: &[u8]) -> Option<Micros> {
    let (ttl, _) = std::str::from_utf8(value).ok()?.split_once(':')?;
    ttl.parse().ok()
}

/// Whether an op touches only the expiry workload's keys.
fn on_ttl_keys(op: &KvOp) -> bool {
    match op.footprint() {
        plumb_kv::Footprint::Keys(keys) => keys.iter().all(|k| TTL_KEYS.contains(k)),
        plumb_kv::Footprint::Prefix(_) => false,
    }
}

/// The agreed history's queue operations replayed on plain lists: what each must have
/// returned. `Err` names the first one that returned something else.
fn check_queues(executed: &[Executed<'_>]) -> Result<(), String> {
    let mut lists: BTreeMap<Vec<u8>, VecDeque<Vec<u8>>> = BTreeMap::new();
    let pop = |lists: &mut BTreeMap<Vec<u8>, VecDeque<Vec<u8>>>, key: &[u8], end: End| {
        let list = lists.get_mut(key)?;
        match end {
            End::Left => list.pop_front(),
            End::Right => list.pop_back(),
        }
    };
    let push = |lists: &mut BTreeMap<Vec<u8>, VecDeque<Vec<u8>>>, key: &[u8], end: End, v| {
        let list = lists.entry(key.to_vec()).or_default();
        match end {
            End::Left => list.push_front(v),
            End::Right => list.push_back(v),
        }
    };
    for e in executed {
        let (Ok(op), Ok(result)) = (KvOp::decode(e.op), KvResult::decode(e.result)) else {
            continue;
        };
        let expected = match op {
            KvOp::Push { key, end, values } if QUEUES.contains(&key.as_slice()) => {
                for v in values {
                    push(&mut lists, &key, end, v);
                }
                KvResult::Int(lists.get(&key).map_or(0, |l| l.len() as i64))
            }
            KvOp::PopFirst { keys, end } if keys.iter().all(|k| QUEUES.contains(&k.as_slice())) => {
                let found = keys
                    .iter()
                    .find_map(|k| Some((k.clone(), pop(&mut lists, k, end)?)));
                match found {
                    Some(pair) => KvResult::Pairs(vec![pair]),
                    None => KvResult::Nil,
                }
            }
            KvOp::Move {
                from,
                to,
                from_end,
                to_end,
            } if QUEUES.contains(&from.as_slice()) => {
                let v = pop(&mut lists, &from, from_end);
                if let Some(v) = &v {
                    push(&mut lists, &to, to_end, v.clone());
                }
                KvResult::Value(v)
            }
            KvOp::Pop {
                key,
                end,
                count: None,
            } if QUEUES.contains(&key.as_slice()) => KvResult::Value(pop(&mut lists, &key, end)),
            _ => continue,
        };
        if result != expected {
            return Err(format!(
                "batch {} c{}: {} returned {result:?} where the queues held {expected:?}",
                e.seq,
                e.client,
                Redis.op_text(e.op)
            ));
        }
    }
    Ok(())
}

/// The model's version of one command inside a transaction or pipeline.
fn model_single(op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
    let op = Kv.model_op(op)?;
    op.key().is_some().then_some(op)
}

fn text(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn side(end: End) -> &'static str {
    match end {
        End::Left => "l",
        End::Right => "r",
    }
}

fn text_of(op: &[u8]) -> String {
    KvOp::decode(op).map_or_else(|_| format!("<{} bytes>", op.len()), |op| kv_op_text(&op))
}

impl SimApp for Redis {
    type App = KvStore;
    type Model = BytesKv;

    fn name(&self) -> &'static str {
        "redis"
    }

    fn new_app(&self) -> KvStore {
        crate::store()
    }

    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        match rng.index(11) {
            0..=2 => {
                let watched = if rng.chance(0.5) {
                    let key = rng.pick(objects).cloned().unwrap_or_default();
                    let value = if rng.chance(0.3) {
                        None
                    } else {
                        rng.pick(GUARD_VALUES).copied()
                    };
                    vec![Watched {
                        key,
                        fingerprint: guard_fingerprint(value),
                    }]
                } else {
                    Vec::new()
                };
                KvOp::Transaction {
                    watched,
                    ops: singles(rng, objects, 3),
                }
                .encode()
            }
            3 => KvOp::Pipeline {
                ops: singles(rng, objects, 4),
            }
            .encode(),
            4 => queue_op(rng).encode(),
            5 => script_op(rng, objects).encode(),
            6 if rng.chance(0.5) => pubsub_op(rng).encode(),
            6 => ttl_op(rng).encode(),
            _ => single(rng, objects).encode(),
        }
    }

    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        Kv.random_read(rng, objects)
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        Kv.read_only_eligible(op)
    }

    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        Kv.harmless_op(rng, objects)
    }

    fn injected_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        Kv.injected_op(rng, objects)
    }

    fn mutating_op(&self) -> Vec<u8> {
        Kv.mutating_op()
    }

    fn forgery(&self) -> Arc<dyn AppForgery> {
        Kv.forgery()
    }

    fn op_text(&self, op: &[u8]) -> String {
        match KvOp::decode(op) {
            Ok(KvOp::Transaction { watched, ops }) => {
                let guards: Vec<String> = watched
                    .iter()
                    .map(|w| {
                        let value = guard_value(&w.fingerprint).map_or("?".to_string(), |v| {
                            v.map_or("absent".into(), |v| v.escape_ascii().to_string())
                        });
                        format!("{}={value}", w.key.escape_ascii())
                    })
                    .collect();
                let ops: Vec<String> = ops.iter().map(|o| text_of(o)).collect();
                format!("multi [{}] watch [{}]", ops.join("; "), guards.join(" "))
            }
            Ok(KvOp::Pipeline { ops }) => {
                let ops: Vec<String> = ops.iter().map(|o| text_of(o)).collect();
                format!("pipeline [{}]", ops.join("; "))
            }
            Ok(eval @ KvOp::Eval { .. }) => match script_ops(&eval) {
                Some(ops) => {
                    let ops: Vec<String> = ops.iter().map(kv_op_text).collect();
                    format!("eval [{}]", ops.join("; "))
                }
                None => format!("{eval:?}"),
            },
            Ok(KvOp::Push { key, end, values }) => {
                let values: Vec<String> = values.iter().map(|v| text(v)).collect();
                format!("{}push {} {}", side(end), text(&key), values.join(" "))
            }
            Ok(KvOp::PopFirst { keys, end }) => {
                let keys: Vec<String> = keys.iter().map(|k| text(k)).collect();
                format!("b{}pop {}", side(end), keys.join(" "))
            }
            Ok(KvOp::Move {
                from,
                to,
                from_end,
                to_end,
            }) => format!(
                "lmove {} {} {:?} {:?}",
                text(&from),
                text(&to),
                from_end,
                to_end
            ),
            Ok(KvOp::Pop {
                key,
                end,
                count: None,
            }) => format!("{}pop {}", side(end), text(&key)),
            _ => Kv.op_text(op),
        }
    }

    fn result_text(&self, result: &[u8]) -> String {
        match KvResult::decode(result) {
            Ok(KvResult::Each(results)) => {
                let each: Vec<String> = results.iter().map(|r| Kv.result_text(r)).collect();
                format!("each [{}]", each.join("; "))
            }
            Ok(KvResult::Script(reply)) => format!("script {}", reply.escape_ascii()),
            _ => Kv.result_text(result),
        }
    }

    fn model(&self) -> BytesKv {
        BytesKv::new()
    }

    /// Every key of the expiry workload that holds one of its values, living the ttl the value
    /// names.
    fn leases(&self, store: &KvStore) -> Vec<Lease> {
        (0..)
            .zip(TTL_KEYS)
            .filter_map(|(id, key)| {
                let entry = store.live_entry(key)?;
                let Value::Str(value) = &entry.value else {
                    return None;
                };
                entry.expires_at?;
                Some(Lease {
                    id,
                    kind: LeaseKind::Key,
                    timeout: ttl_of(value)?,
                })
            })
            .collect()
    }

    /// A `SET` of an expiry workload key renews its lease; any other write of it ends it (the
    /// workload makes none); a read does nothing.
    fn lease_ops(&self, op: &[u8]) -> Vec<LeaseOp> {
        let Ok(op) = KvOp::decode(op) else {
            return Vec::new();
        };
        let named = (0..).zip(TTL_KEYS).filter(|(_, k)| match op.footprint() {
            plumb_kv::Footprint::Keys(keys) => keys.contains(k),
            plumb_kv::Footprint::Prefix(p) => k.starts_with(p),
        });
        match &op {
            _ if !op.is_mutating() => Vec::new(),
            KvOp::Set {
                expire: Some(_), ..
            } => named.map(|(id, _)| LeaseOp::Renews(id)).collect(),
            _ => named.map(|(id, _)| LeaseOp::Ends(id)).collect(),
        }
    }

    fn check_history(&self, executed: &[Executed<'_>], _end: &KvStore) -> Vec<AppViolation> {
        AppViolation::from_check("REDIS-queue", check_queues(executed))
    }

    fn check_pushes(
        &self,
        pushes: &[(ClientId, u64, Vec<u8>)],
        executed: &[Executed<'_>],
    ) -> Vec<AppViolation> {
        AppViolation::from_check("REDIS-pubsub", check_pubsub(pushes, executed))
    }

    /// A pipeline is modelled as a transaction without guards: plumb runs its commands as one
    /// step, and the check holds it to that. `None` for a transaction only if it is not the
    /// generator's (a guard value or a command it never makes), which a correct client never
    /// sends.
    fn model_op(&self, op: &[u8]) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
        let (watched, ops) = match KvOp::decode(op).ok()? {
            KvOp::Transaction { watched, ops } => (watched, ops),
            KvOp::Pipeline { ops } => (Vec::new(), ops),
            // A script runs its commands with nothing in between: a transaction without guards.
            eval @ KvOp::Eval { .. } => (
                Vec::new(),
                script_ops(&eval)?.iter().map(KvOp::encode).collect(),
            ),
            op if on_ttl_keys(&op) => return None,
            _ => return Kv.model_op(op),
        };
        let guards = watched
            .iter()
            .map(|w| Some((w.key.clone(), guard_value(&w.fingerprint)?)))
            .collect::<Option<Vec<_>>>()?;
        let ops = ops
            .iter()
            .map(|o| model_single(o))
            .collect::<Option<Vec<_>>>()?;
        Some(LinOp::Transaction { guards, ops })
    }

    fn model_ret(&self, op: &LinOp<Vec<u8>, Vec<u8>>, result: &[u8]) -> Option<KvRet<Vec<u8>>> {
        let LinOp::Transaction { ops, .. } = op else {
            return Kv.model_ret(op, result);
        };
        match KvResult::decode(result).ok()? {
            KvResult::Aborted => Some(KvRet::Aborted),
            KvResult::Script(reply) => Some(KvRet::Each(
                ops.iter()
                    .zip(&script_results(
                        matches!(ops.last(), Some(LinOp::Increment { .. })),
                        &reply,
                    )?)
                    .map(|(op, r)| Kv.model_ret(op, r))
                    .collect::<Option<Vec<_>>>()?,
            )),
            KvResult::Each(results) if results.len() == ops.len() => Some(KvRet::Each(
                ops.iter()
                    .zip(&results)
                    .map(|(op, r)| Kv.model_ret(op, r))
                    .collect::<Option<Vec<_>>>()?,
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{ReqNo, Seq};

    #[test]
    fn every_generated_op_is_in_the_model() {
        let mut rng = SimRng::new(7, "test");
        let objects: Vec<Vec<u8>> = (0..4).map(|i| format!("k{i}").into_bytes()).collect();
        let mut kinds = [0; 4];
        for _ in 0..2000 {
            let op = Redis.random_op(&mut rng, &objects);
            match KvOp::decode(&op).unwrap() {
                KvOp::Transaction { .. } => kinds[0] += 1,
                KvOp::Pipeline { .. } => kinds[1] += 1,
                KvOp::Eval { .. } => kinds[3] += 1,
                _ => kinds[2] += 1,
            }
            let decoded = KvOp::decode(&op).unwrap();
            let on_queues = match decoded.footprint() {
                plumb_kv::Footprint::Keys(keys) => keys.iter().all(|k| QUEUES.contains(k)),
                plumb_kv::Footprint::Prefix(_) => false,
            };
            let ttl = on_ttl_keys(&decoded);
            assert!(
                !ttl || Redis.model_op(&op).is_none(),
                "{}",
                Redis.op_text(&op)
            );
            assert!(
                Redis.model_op(&op).is_some() || !decoded.is_mutating() || on_queues || ttl,
                "{}",
                Redis.op_text(&op)
            );
        }
        assert!(kinds.iter().all(|&n| n > 100), "{kinds:?}");
    }

    #[test]
    fn a_key_set_to_expire_is_a_lease_renewed_by_its_set() {
        use plumb_app::{Application, NonDeterminism};
        let mut rng = SimRng::new(5, "test");
        let set = std::iter::repeat_with(|| ttl_op(&mut rng))
            .find(|op| matches!(op, KvOp::Set { .. }))
            .unwrap();
        let KvOp::Set {
            key,
            expire: Some(ttl),
            ..
        } = &set
        else {
            panic!("{set:?}");
        };
        let id = i64::from(key != b"t0");
        assert_eq!(Redis.lease_ops(&set.encode()), vec![LeaseOp::Renews(id)]);
        let get = KvOp::Get { key: key.clone() };
        assert!(Redis.lease_ops(&get.encode()).is_empty());
        let del = KvOp::Delete { key: key.clone() };
        assert_eq!(Redis.lease_ops(&del.encode()), vec![LeaseOp::Ends(id)]);
        let mut store = Redis.new_app();
        store.apply(&set, 10_000_000);
        let lease = Lease {
            id,
            kind: LeaseKind::Key,
            timeout: *ttl,
        };
        assert_eq!(Redis.leases(&store), vec![lease]);
        // Gone once agreed time reaches the set time plus the ttl, not before.
        let at = |time| NonDeterminism { time, seed: 0 };
        store.execute(Seq(2), &[], at(10_000_000 + ttl - 1));
        assert_eq!(Redis.leases(&store), vec![lease]);
        store.execute(Seq(3), &[], at(10_000_000 + ttl));
        assert!(Redis.leases(&store).is_empty());
    }

    #[test]
    fn the_pubsub_check_catches_an_invented_or_doubled_message() {
        let publish = KvOp::Publish {
            channel: b"ch0".to_vec(),
            message: b"m1".to_vec(),
        }
        .encode();
        let count = KvResult::Int(1).encode();
        let executed = [Executed {
            seq: Seq(1),
            client: 5,
            nc: ReqNo(1),
            request: plumb_crypto::Digest::ZERO,
            op: &publish,
            result: &count,
        }];
        let msg = |m: &[u8]| {
            Message {
                channel: b"ch0".to_vec(),
                message: m.to_vec(),
                to_channel: true,
                patterns: Vec::new(),
            }
            .encode()
        };
        assert!(check_pubsub(&[(0, 1, msg(b"m1"))], &executed).is_ok());
        // The same event twice (a restarted client) is not a second message.
        assert!(check_pubsub(&[(0, 1, msg(b"m1")), (0, 1, msg(b"m1"))], &executed).is_ok());
        assert!(check_pubsub(&[(0, 1, msg(b"m1")), (0, 2, msg(b"m1"))], &executed).is_err());
        assert!(check_pubsub(&[(0, 1, msg(b"m2"))], &executed).is_err());
        assert!(check_pubsub(&[(0, 1, b"junk".to_vec())], &executed).is_err());
    }

    #[test]
    fn a_workload_script_is_the_transaction_it_stands_for() {
        let mut rng = SimRng::new(3, "test");
        let objects: Vec<Vec<u8>> = vec![b"k0".to_vec(), b"k1".to_vec()];
        let mut store = Redis.new_app();
        store.apply(
            &KvOp::Set {
                key: b"k1".to_vec(),
                value: b"a".to_vec(),
                expire: None,
            },
            1,
        );
        for _ in 0..50 {
            let op = script_op(&mut rng, &objects);
            let result = store.apply(&op, 1).encode();
            let model = Redis.model_op(&op.encode()).expect("in the model");
            let ret = Redis.model_ret(&model, &result);
            assert!(
                ret.is_some(),
                "{} -> {}",
                Redis.op_text(&op.encode()),
                Redis.result_text(&result)
            );
        }
    }

    #[test]
    fn a_guard_stands_for_the_value_it_was_made_from() {
        for v in GUARD_VALUES {
            assert_eq!(
                guard_value(&guard_fingerprint(Some(v))),
                Some(Some(v.to_vec()))
            );
        }
        assert_eq!(guard_value(&guard_fingerprint(None)), Some(None));
        assert_eq!(guard_value(&guard_fingerprint(Some(b"other"))), None);
        // The store's fingerprint of a plain string is the guard's.
        let mut store = KvStore::new();
        store.apply(
            &KvOp::Set {
                key: b"k".to_vec(),
                value: b"7".to_vec(),
                expire: None,
            },
            1,
        );
        assert_eq!(store.fingerprint(b"k"), guard_fingerprint(Some(b"7")));
    }

    #[test]
    fn the_queue_check_catches_a_pop_of_an_element_already_popped() {
        let push = KvOp::Push {
            key: b"q0".to_vec(),
            end: End::Right,
            values: vec![b"e1".to_vec()],
        }
        .encode();
        let pop = KvOp::PopFirst {
            keys: vec![b"q1".to_vec(), b"q0".to_vec()],
            end: End::Left,
        }
        .encode();
        let one = KvResult::Int(1).encode();
        let got = KvResult::Pairs(vec![(b"q0".to_vec(), b"e1".to_vec())]).encode();
        fn step<'a>(op: &'a [u8], result: &'a [u8]) -> Executed<'a> {
            Executed {
                seq: Seq(1),
                client: 0,
                nc: ReqNo(1),
                request: plumb_crypto::Digest::ZERO,
                op,
                result,
            }
        }
        let (push, pop, one, got) = (&push[..], &pop[..], &one[..], &got[..]);
        assert!(check_queues(&[step(push, one), step(pop, got)]).is_ok());
        let err = check_queues(&[step(push, one), step(pop, got), step(pop, got)]).unwrap_err();
        assert!(err.contains("Nil"), "{err}");
    }
}
