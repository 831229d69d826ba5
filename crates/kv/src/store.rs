//! The store's state and the [`Application`] implementation.
//!
//! State is a `BTreeMap` from key to [`Entry`], so iteration order, and with it the
//! checkpoint encoding, is a function of the contents alone (APPS3). Keys are independent
//! objects: splitting the key space into objects or ranges (ZZ, ODRC) needs no change here.
//!
//! Expiry uses agreed time only, and is per object (docs/objects.md "Access sets"): before
//! an operation runs, every key it names whose expiry is at or before the batch's time is
//! removed; an operation of the whole key space (`KEYS`, `SCAN`, `DBSIZE`, `FLUSHALL`, a
//! script) first removes every such key (`KEYS prefix*` those under its prefix), found
//! through an index ordered by expiry time. A
//! write whose expiry is not in the future removes the key. So an operation touches only the
//! buckets of the keys it names (its access set), and a replica holding only those buckets
//! executes it as one holding everything. An expired key nothing has named since stays stored,
//! *due*, until something does: ordered operations never see it, since they remove it first,
//! and the read-only path leaves it out by the clock (`read_live`). Equal histories give equal
//! bytes, so checkpoints still agree.
//!
//! `Ttl` and the read-only path need a time: on the ordered path it is the batch's agreed
//! time. On the read-only path it is the agreed time of the last batch this store executed,
//! kept in memory only (every replica at the same batch has the same one). Right after a
//! checkpoint load that time is unknown until the next batch, and a read-only read of a key
//! with an expiry (or of the whole key space, while any key has one) gets
//! [`ERR_TTL_NEEDS_ORDER`](crate::ERR_TTL_NEEDS_ORDER): the client's other replicas answer, or
//! it orders the read.
//!
//! Randomness (`SPop`) comes from the batch's seed mixed with the request's position in the
//! batch, never from an entropy source.

use crate::buckets::Buckets;
use crate::glob::glob_match;
use crate::op::{
    parse_integer, Aggregate, CollectionKind, End, ExpireCondition, KvOp, KvResult, SetCondition,
    SetExpiry, SetOp, Watched, ZAddOptions, ZRangeBy, ERR_HASH_NOT_INTEGER, ERR_INDEX_RANGE,
    ERR_MALFORMED, ERR_NESTED, ERR_NOT_INTEGER, ERR_NOT_READ_ONLY, ERR_NO_SUCH_KEY, ERR_OVERFLOW,
    ERR_SCORE_NAN, ERR_TTL_NEEDS_ORDER, ERR_WRONG_TYPE, ERR_ZADD_GT_LT_NX, ERR_ZADD_INCR_PAIRS,
    ERR_ZADD_NX_XX, PIPELINE_REPLY_BUDGET,
};
use crate::op::{OwnKeys, ERR_NO_SCRIPTING, ERR_STRING_TOO_LONG, MAX_STRING};
use crate::pubsub::Subscriptions;
use crate::zset::{Score, ZSet};
use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, Seq};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

mod bits;
mod copies;
mod floats;
mod lcs;
mod picks;
mod pops;

pub use floats::{format_float, ERR_FLOAT_OVERFLOW, ERR_HASH_NOT_FLOAT};

/// Version byte of checkpoint encodings.
pub const CHECKPOINT_VERSION: u8 = 1;

/// What a key holds. A collection is never stored empty (Redis removes the key instead).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    /// `serde_bytes`: the same bytes as a sequence of `u8` in postcard, encoded in one copy.
    Str(#[serde(with = "serde_bytes")] Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    /// Appended: the variant indexes above keep their meaning in checkpoints.
    ZSet(ZSet),
}

impl Value {
    pub(crate) fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }

    /// The name Redis' `TYPE` gives this kind.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }
}

/// A stored value and its absolute expiry time in agreed micros, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub value: Value,
    pub expires_at: Option<Micros>,
}

/// The in-memory key-value application. Two stores are equal when their states (entries)
/// are; the clock is not state.
#[derive(Clone, Debug, Default)]
pub struct KvStore {
    entries: BTreeMap<Vec<u8>, Entry>,
    /// `(expires_at, key)` for every entry with an expiry; derived from `entries`, not
    /// part of the checkpoint.
    expiries: BTreeSet<(Micros, Vec<u8>)>,
    /// The latest agreed time the store ran at; `None` before the first batch and after a
    /// checkpoint load until the next batch. Not state; the read-only path reads it.
    clock: Option<Micros>,
    /// Keys per hash bucket and the buckets written since the last object checkpoint
    /// (objects.rs); derived from `entries`, not state.
    pub(crate) buckets: Buckets,
    /// Pub/sub subscriptions (pubsub.rs): state, in the checkpoint after the entries.
    pubsub: Subscriptions,
    /// What the operations of the batch under way pushed; handed to the library at its end.
    /// Not state.
    pushes: Vec<(ClientId, Vec<u8>)>,
    /// What runs `Eval`: code, not state (left out of equality, checkpoints and digests, and
    /// kept across a checkpoint load).
    scripting: ScriptEngine,
}

/// The fields of a [`KvOp::Eval`], for a [`Scripting`] engine.
#[derive(Clone, Copy, Debug)]
pub struct EvalRequest<'a> {
    pub script: &'a [u8],
    pub keys: &'a [Vec<u8>],
    pub args: &'a [Vec<u8>],
    pub read_only: bool,
}

/// A script engine for [`KvOp::Eval`]. It must be deterministic: the same request, store
/// state, `now` and `seed` give the same result and the same state on every replica. Its
/// commands change `store` through [`KvStore::apply_seeded`] (writes stay applied when the
/// script fails later, as in Redis).
pub trait Scripting: Send + Sync {
    fn eval(&self, store: &mut KvStore, eval: &EvalRequest<'_>, now: Micros, seed: u64)
        -> KvResult;
}

/// The store's engine, if any; a newtype so that `KvStore` keeps deriving `Debug`.
#[derive(Clone, Default)]
struct ScriptEngine(Option<Arc<dyn Scripting>>);

impl std::fmt::Debug for ScriptEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Scripting"
        } else {
            "NoScripting"
        })
    }
}

impl PartialEq for KvStore {
    fn eq(&self, other: &KvStore) -> bool {
        self.entries == other.entries && self.pubsub == other.pubsub
    }
}

impl Eq for KvStore {}

/// The keys a read names, with those of the ops inside a pipeline or transaction; `None` for
/// a read of the whole key space.
fn read_keys(op: &KvOp) -> Option<Vec<Vec<u8>>> {
    let mut keys: Vec<Vec<u8>> = match op.own_keys() {
        OwnKeys::Keys(keys) => keys.into_iter().map(<[u8]>::to_vec).collect(),
        OwnKeys::Prefix(_) => return None,
    };
    if let KvOp::Pipeline { ops } | KvOp::Transaction { ops, .. } = op {
        for inner in ops.iter().filter_map(|o| KvOp::decode(o).ok()) {
            match inner.own_keys() {
                OwnKeys::Keys(more) => keys.extend(more.into_iter().map(<[u8]>::to_vec)),
                OwnKeys::Prefix(_) => return None,
            }
        }
    }
    Some(keys)
}

/// The `splitmix64` step: a bijective mixer, here the store's only source of randomness.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random seed of request `index` of a batch with seed `batch_seed`.
pub fn request_seed(batch_seed: u64, index: usize) -> u64 {
    let mut state = u64::try_from(index).unwrap_or(u64::MAX);
    let mixed = splitmix(&mut state);
    let mut state = batch_seed ^ mixed;
    splitmix(&mut state)
}

fn int(n: usize) -> KvResult {
    KvResult::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

fn wrong_type() -> KvResult {
    KvResult::error(ERR_WRONG_TYPE)
}

impl KvStore {
    pub fn new() -> KvStore {
        KvStore::default()
    }

    /// An empty store whose `Eval` runs on `engine`.
    pub fn with_scripting(engine: Arc<dyn Scripting>) -> KvStore {
        let mut store = KvStore::default();
        store.set_scripting(Some(engine));
        store
    }

    /// Run `Eval` on `engine` from now on (`None`: answer it with [`ERR_NO_SCRIPTING`]).
    pub fn set_scripting(&mut self, engine: Option<Arc<dyn Scripting>>) {
        self.scripting = ScriptEngine(engine);
    }

    /// Whether `Eval` has an engine to run on.
    pub fn has_scripting(&self) -> bool {
        self.scripting.0.is_some()
    }

    /// Forget the agreed time (after a checkpoint load: unknown until the next batch).
    pub(crate) fn forget_clock(&mut self) {
        self.clock = None;
    }

    /// Number of stored keys, due ones included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The stored entry of `key`, due or not.
    pub fn entry(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The entry of `key` if it is live by the clock (an expired key stays stored until an
    /// operation names it: see the module documentation).
    pub fn live_entry(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key).filter(|e| self.live(e))
    }

    /// Every stored entry, in key order, due ones included.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.entries.iter().map(|(k, e)| (k.as_slice(), e))
    }

    /// The latest agreed time the store ran at; `None` before the first batch and after a
    /// checkpoint load until the next batch.
    pub fn clock(&self) -> Option<Micros> {
        self.clock
    }

    /// Apply one operation at agreed time `now` (the batch's time) with random seed 0.
    pub fn apply(&mut self, op: &KvOp, now: Micros) -> KvResult {
        self.apply_seeded(op, now, 0)
    }

    /// Apply one operation at agreed time `now`; `seed` is the request's random seed
    /// ([`request_seed`]), used by `SPop` only.
    pub fn apply_seeded(&mut self, op: &KvOp, now: Micros, seed: u64) -> KvResult {
        self.advance(now);
        let expired = self.expire_due(op, now);
        match op {
            KvOp::PurgeExpired => int(expired),
            KvOp::Set { key, value, expire } => {
                self.set(key, value, *expire, now);
                KvResult::Ok
            }
            KvOp::Delete { key } => KvResult::Bool(self.remove(key).is_some()),
            KvOp::CompareAndSet { key, expected, new } => {
                self.compare_and_set(key, expected.as_deref(), new)
            }
            KvOp::Increment { key, delta } => self.increment(key, *delta),
            KvOp::SetExtended {
                key,
                value,
                expire,
                condition,
                get,
            } => self.set_extended(key, value, *expire, *condition, *get, now),
            KvOp::DeleteMany { keys } => {
                int(keys.iter().filter(|k| self.remove(k).is_some()).count())
            }
            KvOp::Append { key, value } => self.append(key, value),
            KvOp::MSet { pairs } => {
                for (key, value) in pairs {
                    self.set(key, value, None, now);
                }
                KvResult::Ok
            }
            KvOp::Expire {
                key,
                after,
                condition,
            } => self.expire(key, *after, *condition, now),
            KvOp::HSet { key, fields } => self.hset(key, fields),
            KvOp::HDel { key, fields } => self.hdel(key, fields),
            KvOp::HIncrBy { key, field, delta } => self.hincrby(key, field, *delta),
            KvOp::Push { key, end, values } => self.push(key, *end, values),
            KvOp::PushExisting { key, end, values } => {
                if self.entries.contains_key(key.as_slice()) {
                    self.push(key, *end, values)
                } else {
                    KvResult::Int(0)
                }
            }
            KvOp::Pop { key, end, count } => self.pop(key, *end, *count),
            KvOp::SAdd { key, members } => self.sadd(key, members),
            KvOp::SRem { key, members } => self.srem(key, members),
            KvOp::SPop { key, count } => self.spop(key, *count, seed),
            KvOp::FlushAll => {
                self.entries.clear();
                self.expiries.clear();
                self.buckets.clear_all();
                KvResult::Ok
            }
            KvOp::Persist { key } => self.persist(key),
            KvOp::Ttl { key } => ttl(self.entries.get(key.as_slice()), Some(now)),
            KvOp::ZAdd {
                key,
                members,
                options,
            } => self.zadd(key, members, *options),
            KvOp::ZRem { key, members } => self.zrem(key, members),
            KvOp::ZPop { key, max, count } => self.zpop(key, *max, *count),
            KvOp::Pipeline { ops } => pipeline(ops, |i, op| {
                self.apply_inner(op, now, request_seed(seed, i))
            }),
            KvOp::HSetNx { key, field, value } => {
                self.with_collection(key, KvStore::hash_mut, |h| {
                    if h.contains_key(field.as_slice()) {
                        return KvResult::Bool(false);
                    }
                    h.insert(field.clone(), value.clone());
                    KvResult::Bool(true)
                })
            }
            KvOp::LSet { key, index, value } => self.lset(key, *index, value),
            KvOp::LTrim { key, start, stop } => self.ltrim(key, *start, *stop),
            KvOp::GetDel { key } => self.getdel(key),
            KvOp::Rename { from, to, nx } => self.rename(from, to, *nx),
            KvOp::PopFirst { keys, end } => self.pop_first(keys, *end),
            KvOp::LRem {
                key,
                count,
                element,
            } => self.lrem(key, *count, element),
            KvOp::LInsert {
                key,
                before,
                pivot,
                element,
            } => self.linsert(key, *before, pivot, element),
            KvOp::SMove { from, to, member } => self.smove(from, to, member),
            KvOp::GetEx { key, expire } => self.getex(key, *expire, now),
            KvOp::ZRemRangeByLex { key, min, max } => self.zremrange(key, |z| {
                z.iter()
                    .filter(|(m, _)| min.below(m) && max.above(m))
                    .map(|(m, _)| m.to_vec())
                    .collect()
            }),
            KvOp::ZSetAlgebra {
                op,
                keys,
                weights,
                aggregate,
                store: Some(dest),
                ..
            } => match self.zset_algebra(*op, keys, weights, *aggregate) {
                Ok(z) => {
                    let size = int(z.len());
                    self.remove(dest);
                    if !z.is_empty() {
                        let entry = Entry {
                            value: Value::ZSet(z),
                            expires_at: None,
                        };
                        self.put(dest, entry);
                    }
                    size
                }
                Err(e) => e,
            },
            KvOp::SRandMember { key, count } => self.srandmember(key, *count, seed),
            KvOp::MSetNx { pairs } => {
                if pairs
                    .iter()
                    .any(|(k, _)| self.entries.contains_key(k.as_slice()))
                {
                    return KvResult::Bool(false);
                }
                for (key, value) in pairs {
                    self.set(key, value, None, now);
                }
                KvResult::Bool(true)
            }
            KvOp::SetRange { key, offset, value } => self.setrange(key, *offset, value, now),
            KvOp::ZRemRangeByScore { key, min, max } => self.zremrange(key, |z| {
                z.range_by_score(*min, *max, false)
                    .map(|(m, _)| m.to_vec())
                    .collect()
            }),
            KvOp::ZRemRangeByRank { key, start, stop } => {
                self.zremrange(key, |z| match index_range(z.len(), *start, *stop) {
                    Some((from, n)) => z
                        .iter()
                        .skip(from)
                        .take(n)
                        .map(|(m, _)| m.to_vec())
                        .collect(),
                    None => Vec::new(),
                })
            }
            KvOp::ExpireAt { key, at, condition } => {
                let after = i128::from(*at) - i128::from(now);
                let after =
                    i64::try_from(after).unwrap_or(if after < 0 { i64::MIN } else { i64::MAX });
                self.expire(key, after, *condition, now)
            }
            KvOp::Move {
                from,
                to,
                from_end,
                to_end,
            } => self.move_element(from, to, *from_end, *to_end),
            KvOp::SetAlgebra {
                op,
                keys,
                store: Some(dest),
            } => match self.set_algebra(*op, keys) {
                Ok(members) => {
                    let size = int(members.len());
                    self.remove(dest);
                    if !members.is_empty() {
                        let entry = Entry {
                            value: Value::Set(members),
                            expires_at: None,
                        };
                        self.put(dest, entry);
                    }
                    size
                }
                Err(e) => e,
            },
            KvOp::ListMPop { keys, end, count } => self.list_mpop(keys, *end, *count),
            KvOp::ZMPop { keys, max, count } => self.zmpop(keys, *max, *count),
            KvOp::IncrByFloat { key, delta } => self.incr_by_float(key, *delta),
            KvOp::HIncrByFloat { key, field, delta } => self.hincr_by_float(key, field, *delta),
            KvOp::HRandField {
                key,
                count,
                with_values,
            } => self.hrandfield(key, *count, *with_values, seed),
            KvOp::ZRandMember {
                key,
                count,
                with_scores,
            } => self.zrandmember(key, *count, *with_scores, seed),
            KvOp::RandomKey => self.random_key(seed),
            KvOp::Copy { from, to, replace } => self.copy(from, to, *replace),
            KvOp::ZRangeStore {
                dest,
                src,
                range,
                rev,
            } => self.zrangestore(dest, src, range, *rev),
            KvOp::SetBit { key, offset, bit } => self.setbit(key, *offset, *bit),
            KvOp::Eval {
                script,
                keys,
                args,
                read_only,
            } => {
                // The engine is cloned out first: it gets the store itself to run commands on.
                let Some(engine) = self.scripting.0.clone() else {
                    return KvResult::error(ERR_NO_SCRIPTING);
                };
                let eval = EvalRequest {
                    script,
                    keys,
                    args,
                    read_only: *read_only,
                };
                engine.eval(self, &eval, now, seed)
            }
            KvOp::Transaction { watched, ops } => {
                if !self.unchanged(watched) {
                    return KvResult::Aborted;
                }
                let results = ops
                    .iter()
                    .enumerate()
                    .map(|(i, op)| self.apply_inner(op, now, request_seed(seed, i)).encode())
                    .collect();
                KvResult::Each(results)
            }
            KvOp::Subscribe {
                subscriber,
                channels,
                patterns,
            } => {
                self.pubsub.subscribe(*subscriber, channels, patterns);
                KvResult::Ok
            }
            KvOp::Unsubscribe {
                subscriber,
                channels,
                patterns,
            } => {
                self.pubsub.unsubscribe(*subscriber, channels, patterns);
                KvResult::Ok
            }
            KvOp::ResetSubscriptions { subscriber } => int(self.pubsub.reset(*subscriber)),
            KvOp::Publish { channel, message } => {
                let (receivers, pushes) = self.pubsub.publish(channel, message);
                #[cfg(feature = "sabotage")]
                let pushes =
                    if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::PublishPushesTwice)
                    {
                        pushes.iter().chain(&pushes).cloned().collect()
                    } else {
                        pushes
                    };
                self.pushes.extend(pushes);
                KvResult::Int(i64::try_from(receivers).unwrap_or(i64::MAX))
            }
            // Every other op reads: `KvOp::is_mutating` is the one list of which ops do
            // (the TTL arm above answers at the batch's time instead of the last batch's).
            read => {
                debug_assert!(!read.is_mutating(), "{read:?} changes state but has no arm");
                self.read(read)
            }
        }
    }

    /// One op of a pipeline or transaction: a single command, never another of those.
    fn apply_inner(&mut self, op: &[u8], now: Micros, seed: u64) -> KvResult {
        match KvOp::decode(op) {
            Ok(KvOp::Pipeline { .. } | KvOp::Transaction { .. }) => KvResult::error(ERR_NESTED),
            Ok(op) => self.apply_seeded(&op, now, seed),
            Err(_) => KvResult::error(ERR_MALFORMED),
        }
    }

    /// [`KvStore::read`] for one op of a pipeline or transaction.
    fn read_inner(&self, op: &[u8]) -> KvResult {
        match KvOp::decode(op) {
            Ok(KvOp::Pipeline { .. } | KvOp::Transaction { .. }) => KvResult::error(ERR_NESTED),
            Ok(op) => self.read(&op),
            Err(_) => KvResult::error(ERR_MALFORMED),
        }
    }

    /// The fingerprint of what `key` holds ([`fingerprint`]).
    pub fn fingerprint(&self, key: &[u8]) -> [u8; 32] {
        fingerprint(self.entries.get(key))
    }

    /// Whether every watched key still holds what it held when it was watched.
    fn unchanged(&self, watched: &[Watched]) -> bool {
        #[cfg(feature = "sabotage")]
        if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::TransactionIgnoresWatch) {
            return true;
        }
        watched
            .iter()
            .all(|w| self.fingerprint(&w.key) == w.fingerprint)
    }

    /// Run a read-only operation against the state as of the last executed batch. A mutating
    /// operation gets an error and changes nothing.
    pub fn read(&self, op: &KvOp) -> KvResult {
        match op {
            KvOp::Get { key } => self.get(key),
            KvOp::Keys { prefix } => KvResult::Keys(self.keys_with_prefix(prefix)),
            KvOp::DbSize => int(self.entries.len() - self.due_count()),
            KvOp::Exists { keys } => int(keys
                .iter()
                .filter(|k| self.entries.contains_key(k.as_slice()))
                .count()),
            KvOp::StrLen { key } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::Str(v)) => int(v.len()),
                Some(_) => wrong_type(),
            },
            KvOp::MGet { keys } => KvResult::Values(
                keys.iter()
                    .map(|k| match self.value(k) {
                        Some(Value::Str(v)) => Some(v.clone()),
                        _ => None,
                    })
                    .collect(),
            ),
            KvOp::Ttl { key } => ttl(self.entries.get(key.as_slice()), self.clock),
            KvOp::KeysMatching { pattern } => KvResult::Keys(self.keys_matching(pattern)),
            KvOp::HGet { key, field } => match self.value(key) {
                None => KvResult::Value(None),
                Some(Value::Hash(h)) => KvResult::Value(h.get(field.as_slice()).cloned()),
                Some(_) => wrong_type(),
            },
            KvOp::HGetAll { key } => match self.value(key) {
                None => KvResult::Pairs(Vec::new()),
                Some(Value::Hash(h)) => {
                    KvResult::Pairs(h.iter().map(|(f, v)| (f.clone(), v.clone())).collect())
                }
                Some(_) => wrong_type(),
            },
            KvOp::LRange { key, start, stop } => match self.value(key) {
                None => KvResult::Items(Vec::new()),
                Some(Value::List(l)) => KvResult::Items(lrange(l, *start, *stop)),
                Some(_) => wrong_type(),
            },
            KvOp::LLen { key } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::List(l)) => int(l.len()),
                Some(_) => wrong_type(),
            },
            KvOp::SMembers { key } => match self.value(key) {
                None => KvResult::Items(Vec::new()),
                Some(Value::Set(s)) => KvResult::Items(s.iter().cloned().collect()),
                Some(_) => wrong_type(),
            },
            KvOp::SIsMember { key, member } => match self.value(key) {
                None => KvResult::Bool(false),
                Some(Value::Set(s)) => KvResult::Bool(s.contains(member.as_slice())),
                Some(_) => wrong_type(),
            },
            KvOp::Type { key } => {
                let name = self.value(key).map_or("none", Value::type_name);
                KvResult::Value(Some(name.as_bytes().to_vec()))
            }
            KvOp::ZScore { key, member } => match self.value(key) {
                None => KvResult::Score(None),
                Some(Value::ZSet(z)) => KvResult::Score(z.score(member)),
                Some(_) => wrong_type(),
            },
            KvOp::ZCard { key } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::ZSet(z)) => int(z.len()),
                Some(_) => wrong_type(),
            },
            KvOp::ZRank { key, member, rev } => match self.value(key) {
                None => KvResult::Value(None),
                Some(Value::ZSet(z)) => match z.rank(member) {
                    None => KvResult::Value(None),
                    Some(rank) if *rev => int(z.len() - 1 - rank),
                    Some(rank) => int(rank),
                },
                Some(_) => wrong_type(),
            },
            KvOp::ZRange {
                key,
                range,
                rev,
                with_scores,
            } => match self.value(key) {
                None if *with_scores => KvResult::Scored(Vec::new()),
                None => KvResult::Items(Vec::new()),
                Some(Value::ZSet(z)) => {
                    let found = zrange(z, range.clone(), *rev);
                    if *with_scores {
                        KvResult::Scored(found.map(|(m, s)| (m.to_vec(), s)).collect())
                    } else {
                        KvResult::Items(found.map(|(m, _)| m.to_vec()).collect())
                    }
                }
                Some(_) => wrong_type(),
            },
            KvOp::ZCount { key, min, max } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::ZSet(z)) => int(z.range_by_score(*min, *max, false).count()),
                Some(_) => wrong_type(),
            },
            KvOp::Fingerprints { keys } => {
                KvResult::Items(keys.iter().map(|k| self.fingerprint(k).to_vec()).collect())
            }
            KvOp::HMGet { key, fields } => match self.value(key) {
                None => KvResult::Values(vec![None; fields.len()]),
                Some(Value::Hash(h)) => KvResult::Values(
                    fields
                        .iter()
                        .map(|f| h.get(f.as_slice()).cloned())
                        .collect(),
                ),
                Some(_) => wrong_type(),
            },
            KvOp::HExists { key, field } => match self.value(key) {
                None => KvResult::Bool(false),
                Some(Value::Hash(h)) => KvResult::Bool(h.contains_key(field.as_slice())),
                Some(_) => wrong_type(),
            },
            KvOp::HLen { key } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::Hash(h)) => int(h.len()),
                Some(_) => wrong_type(),
            },
            KvOp::HKeys { key, values } => match self.value(key) {
                None => KvResult::Items(Vec::new()),
                Some(Value::Hash(h)) if *values => KvResult::Items(h.values().cloned().collect()),
                Some(Value::Hash(h)) => KvResult::Items(h.keys().cloned().collect()),
                Some(_) => wrong_type(),
            },
            KvOp::HStrLen { key, field } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::Hash(h)) => int(h.get(field.as_slice()).map_or(0, Vec::len)),
                Some(_) => wrong_type(),
            },
            KvOp::SCard { key } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::Set(s)) => int(s.len()),
                Some(_) => wrong_type(),
            },
            KvOp::SMIsMember { key, members } => match self.value(key) {
                None => KvResult::Ints(vec![0; members.len()]),
                Some(Value::Set(s)) => KvResult::Ints(
                    members
                        .iter()
                        .map(|m| i64::from(s.contains(m.as_slice())))
                        .collect(),
                ),
                Some(_) => wrong_type(),
            },
            KvOp::LIndex { key, index } => match self.value(key) {
                None => KvResult::Value(None),
                Some(Value::List(l)) => {
                    KvResult::Value(list_position(l.len(), *index).and_then(|i| l.get(i).cloned()))
                }
                Some(_) => wrong_type(),
            },
            KvOp::SetAlgebra {
                op,
                keys,
                store: None,
            } => match self.set_algebra(*op, keys) {
                Ok(members) => KvResult::Items(members.into_iter().collect()),
                Err(e) => e,
            },
            KvOp::LPos {
                key,
                element,
                rank,
                count,
                maxlen,
            } => match self.value(key) {
                None if count.is_some() => KvResult::Ints(Vec::new()),
                None => KvResult::Value(None),
                Some(Value::List(l)) => lpos(l, element, *rank, *count, *maxlen),
                Some(_) => wrong_type(),
            },
            KvOp::GetRange { key, start, end } => match self.value(key) {
                None => KvResult::Value(Some(Vec::new())),
                Some(Value::Str(v)) => KvResult::Value(Some(getrange(v, *start, *end).to_vec())),
                Some(_) => wrong_type(),
            },
            KvOp::ZMScore { key, members } => match self.value(key) {
                None => KvResult::Values(vec![None; members.len()]),
                Some(Value::ZSet(z)) => KvResult::Values(
                    members
                        .iter()
                        .map(|m| z.score(m).map(|s| s.to_string().into_bytes()))
                        .collect(),
                ),
                Some(_) => wrong_type(),
            },
            KvOp::ZSetAlgebra {
                op,
                keys,
                weights,
                aggregate,
                store: None,
                with_scores,
            } => match self.zset_algebra(*op, keys, weights, *aggregate) {
                Ok(z) if *with_scores => {
                    KvResult::Scored(z.iter().map(|(m, s)| (m.to_vec(), s)).collect())
                }
                Ok(z) => KvResult::Items(z.iter().map(|(m, _)| m.to_vec()).collect()),
                Err(e) => e,
            },
            KvOp::ZLexCount { key, min, max } => match self.value(key) {
                None => KvResult::Int(0),
                Some(Value::ZSet(z)) => int(z
                    .iter()
                    .filter(|(m, _)| min.below(m) && max.above(m))
                    .count()),
                Some(_) => wrong_type(),
            },
            KvOp::PubSubChannels { pattern } => {
                KvResult::Items(self.pubsub.channels(pattern.as_deref()))
            }
            KvOp::PubSubNumSub { channels } => KvResult::Counts(
                channels
                    .iter()
                    .cloned()
                    .zip(self.pubsub.numsub(channels))
                    .collect(),
            ),
            KvOp::PubSubNumPat => int(self.pubsub.numpat()),
            KvOp::KeyspaceStats => KvResult::Ints(vec![
                i64::try_from(self.entries.len() - self.due_count()).unwrap_or(i64::MAX),
                i64::try_from(self.expiries.len() - self.due_count()).unwrap_or(i64::MAX),
            ]),
            KvOp::ExpireTime { key } => match self.entries.get(key.as_slice()) {
                None => KvResult::Int(-2),
                Some(Entry {
                    expires_at: None, ..
                }) => KvResult::Int(-1),
                Some(Entry {
                    expires_at: Some(at),
                    ..
                }) => KvResult::Int(i64::try_from(*at).unwrap_or(i64::MAX)),
            },
            KvOp::Scan {
                cursor,
                count,
                pattern,
                kind,
            } => {
                let count = usize::try_from(*count).unwrap_or(usize::MAX).max(1);
                let live = |k: &[u8]| self.entries.get(k).is_some_and(|e| self.live(e));
                let (keys, next) = self.buckets.scan(*cursor, count, live);
                let keys = keys
                    .into_iter()
                    .filter(|k| pattern.as_ref().is_none_or(|p| glob_match(p, k)))
                    .filter(|k| {
                        kind.as_ref().is_none_or(|t| {
                            self.value(k)
                                .is_some_and(|v| v.type_name().as_bytes().eq_ignore_ascii_case(t))
                        })
                    })
                    .map(<[u8]>::to_vec)
                    .collect();
                KvResult::Cursor(next.unwrap_or(0), keys)
            }
            KvOp::ScanCollection { key, of, pattern } => {
                let wanted = |m: &[u8]| pattern.as_ref().is_none_or(|p| glob_match(p, m));
                let items = match (self.value(key), of) {
                    (None, _) => Vec::new(),
                    (Some(Value::Hash(h)), CollectionKind::Hash) => h
                        .iter()
                        .filter(|(f, _)| wanted(f))
                        .flat_map(|(f, v)| [f.clone(), v.clone()])
                        .collect(),
                    (Some(Value::Set(s)), CollectionKind::Set) => {
                        s.iter().filter(|m| wanted(m)).cloned().collect()
                    }
                    (Some(Value::ZSet(z)), CollectionKind::ZSet) => z
                        .iter()
                        .filter(|(m, _)| wanted(m))
                        .flat_map(|(m, s)| [m.to_vec(), s.to_string().into_bytes()])
                        .collect(),
                    (Some(_), _) => return wrong_type(),
                };
                KvResult::Cursor(0, items)
            }
            // On the read-only path a mutating op of a pipeline or transaction gets an error.
            KvOp::Pipeline { ops } => pipeline(ops, |_, op| self.read_inner(op)),
            KvOp::Transaction { watched, ops } => {
                if !self.unchanged(watched) {
                    return KvResult::Aborted;
                }
                KvResult::Each(ops.iter().map(|op| self.read_inner(op).encode()).collect())
            }
            KvOp::InterCard {
                keys,
                limit,
                sorted,
            } => self.inter_card(keys, *limit, *sorted),
            KvOp::GetBit { key, offset } => self.getbit(key, *offset),
            KvOp::Lcs {
                a,
                b,
                len_only,
                idx,
                min_match_len,
                with_match_len,
            } => self.lcs(a, b, *len_only, *idx, *min_match_len, *with_match_len),
            KvOp::MemoryUsage { key } => match self.entries.get(key.as_slice()) {
                // The key, the entry's canonical encoding, and the two indexes' share: an
                // estimate, as Redis' is.
                Some(entry) => int(key.len() + encoded_len(entry) + 48),
                None => KvResult::Value(None),
            },
            // Every other op changes state or draws from the batch's seed
            // (`KvOp::is_mutating`): it is ordered, never answered here. A client may send one
            // on the read-only path: an error, not an assertion.
            _ => KvResult::error(ERR_NOT_READ_ONLY),
        }
    }

    /// The canonical encoding of the whole state: version byte, then postcard of the map,
    /// then the subscriptions if there are any (so a state without them has the bytes it had
    /// before pub/sub existed, and older checkpoints load unchanged).
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = plumb_wire::encode::append(vec![CHECKPOINT_VERSION], &self.entries);
        if !self.pubsub.is_empty() {
            out.extend_from_slice(&self.pubsub.to_bytes());
        }
        out
    }

    /// The pub/sub subscriptions.
    pub fn subscriptions(&self) -> &Subscriptions {
        &self.pubsub
    }

    /// What the operations applied since the last call pushed, as `(identity, payload)`.
    pub fn take_pushes(&mut self) -> Vec<(ClientId, Vec<u8>)> {
        std::mem::take(&mut self.pushes)
    }

    /// The subscriptions' bytes for the object metadata (empty when there are none).
    pub(crate) fn subscription_bytes(&self) -> Vec<u8> {
        if self.pubsub.is_empty() {
            Vec::new()
        } else {
            self.pubsub.to_bytes()
        }
    }

    /// Adopt the subscriptions of [`KvStore::subscription_bytes`].
    pub(crate) fn load_subscription_bytes(&mut self, bytes: &[u8]) -> Result<(), LoadError> {
        self.pubsub = if bytes.is_empty() {
            Subscriptions::default()
        } else {
            Subscriptions::from_bytes(bytes)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| corrupt("subscriptions do not decode"))?
        };
        Ok(())
    }

    /// The state `bytes` encodes, if they are exactly a canonical encoding. Non-canonical
    /// bytes are refused, so a loaded state re-encodes to the very bytes it came from.
    pub fn from_canonical_bytes(bytes: &[u8]) -> Result<KvStore, LoadError> {
        let (&version, body) = bytes
            .split_first()
            .ok_or_else(|| corrupt("empty checkpoint"))?;
        if version != CHECKPOINT_VERSION {
            return Err(corrupt("unknown checkpoint version"));
        }
        let (entries, rest): (BTreeMap<Vec<u8>, Entry>, &[u8]) =
            postcard::take_from_bytes(body).map_err(|e| LoadError::Corrupt(e.to_string()))?;
        if entries.values().any(|e| e.value.is_empty_collection()) {
            return Err(corrupt("empty collection"));
        }
        let mut store = KvStore::with_entries(entries);
        store.load_subscription_bytes(rest)?;
        if store.canonical_bytes() != bytes {
            return Err(corrupt("non-canonical encoding"));
        }
        Ok(store)
    }

    fn with_entries(entries: BTreeMap<Vec<u8>, Entry>) -> KvStore {
        let expiries = entries
            .iter()
            .filter_map(|(k, e)| e.expires_at.map(|t| (t, k.clone())))
            .collect();
        let mut buckets = Buckets::default();
        for key in entries.keys() {
            buckets.inserted(key);
        }
        KvStore {
            entries,
            expiries,
            clock: None,
            buckets,
            pubsub: Subscriptions::default(),
            pushes: Vec::new(),
            scripting: ScriptEngine::default(),
        }
    }

    /// Move the clock to `now` (if later).
    fn advance(&mut self, now: Micros) {
        self.clock = Some(self.clock.map_or(now, |c| c.max(now)));
    }

    /// Remove the keys `op` names whose expiry is at or before `now`; every such key under
    /// its prefix for an operation of a range of the key space (the whole of it for most).
    /// The keys inside a pipeline or transaction are removed as each op inside runs. Returns
    /// how many were removed.
    fn expire_due(&mut self, op: &KvOp, now: Micros) -> usize {
        match op.own_keys() {
            OwnKeys::Keys(keys) => {
                let mut removed = 0;
                for key in keys {
                    let due = self.entries.get(key).and_then(|e| e.expires_at);
                    if due.is_some_and(|at| at <= now) {
                        self.remove(key);
                        removed += 1;
                    }
                }
                removed
            }
            OwnKeys::Prefix([]) => self.remove_due(now),
            OwnKeys::Prefix(prefix) => {
                let due: Vec<Vec<u8>> = self
                    .expiries
                    .iter()
                    .take_while(|(at, _)| *at <= now)
                    .filter(|(_, key)| key.starts_with(prefix))
                    .map(|(_, key)| key.clone())
                    .collect();
                for key in &due {
                    self.remove(key);
                }
                due.len()
            }
        }
    }

    /// Remove every key whose expiry is at or before `now`; how many.
    fn remove_due(&mut self, now: Micros) -> usize {
        let mut removed = 0;
        while let Some((at, key)) = self.expiries.first().cloned() {
            if at > now {
                break;
            }
            self.remove(&key);
            removed += 1;
        }
        removed
    }

    /// Whether `entry` is live by the clock: it has no expiry, or one after the clock. With
    /// the clock unknown, an entry with an expiry counts as live (`read_live` refuses first).
    fn live(&self, entry: &Entry) -> bool {
        match (entry.expires_at, self.clock) {
            (Some(at), Some(clock)) => at > clock,
            _ => true,
        }
    }

    /// Stored keys whose expiry the clock has passed (none with the clock unknown).
    fn due_count(&self) -> usize {
        match self.clock {
            Some(clock) => self
                .expiries
                .range(..(clock.saturating_add(1), Vec::new()))
                .count(),
            None => 0,
        }
    }

    /// Whether any stored key may be due: one whose expiry the clock has passed, or, with the
    /// clock unknown, any key with an expiry.
    fn may_hold_due(&self) -> bool {
        match (self.expiries.first(), self.clock) {
            (None, _) => false,
            (Some((at, _)), Some(clock)) => *at <= clock,
            (Some(_), None) => true,
        }
    }

    /// Answer a read between batches (the read-only path): [`KvStore::read`] of the store as
    /// clients see it, without the due keys it still holds (expiry is per object: the module
    /// documentation says why). A write gets an error and changes nothing.
    pub fn read_live(&self, op: &KvOp) -> KvResult {
        if !self.may_hold_due() {
            return self.read(op);
        }
        let Some(keys) = read_keys(op) else {
            // The whole key space: `read` leaves due keys out by the clock, if it is known.
            let Some(clock) = self.clock else {
                return KvResult::error(ERR_TTL_NEEDS_ORDER);
            };
            if let KvOp::Pipeline { .. } | KvOp::Transaction { .. } = op {
                // Its single-key reads would see due keys: rare enough (a pipeline that also
                // reads the whole key space, while a key is due) to answer from a copy.
                let mut copy = self.clone();
                copy.remove_due(clock);
                return copy.read(op);
            }
            return self.read(op);
        };
        let stored = |k: &Vec<u8>| self.entries.get(k.as_slice());
        if !keys
            .iter()
            .filter_map(stored)
            .any(|e| !self.live(e) || (self.clock.is_none() && e.expires_at.is_some()))
        {
            return self.read(op);
        }
        if self.clock.is_none() {
            return KvResult::error(ERR_TTL_NEEDS_ORDER);
        }
        // Rare (a read of a key that expired and that no operation named since): answer from
        // a store of the live entries of the keys it reads.
        let mut view = KvStore {
            clock: self.clock,
            pubsub: self.pubsub.clone(),
            ..KvStore::default()
        };
        for key in &keys {
            if let Some(entry) = stored(key).filter(|e| self.live(e)) {
                view.put(key, entry.clone());
            }
        }
        view.read(op)
    }

    fn value(&self, key: &[u8]) -> Option<&Value> {
        self.entries.get(key).map(|e| &e.value)
    }

    pub(crate) fn put(&mut self, key: &[u8], entry: Entry) {
        self.remove(key);
        if let Some(at) = entry.expires_at {
            self.expiries.insert((at, key.to_vec()));
        }
        self.insert_entry(key, entry);
    }

    /// Every insertion goes through here, so the bucket index and dirty set stay in step.
    pub(crate) fn insert_entry(&mut self, key: &[u8], entry: Entry) {
        self.buckets.inserted(key);
        self.entries.insert(key.to_vec(), entry);
    }

    /// Every in-place change goes through here: it marks the key's bucket written.
    fn entry_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let entry = self.entries.get_mut(key)?;
        self.buckets.touched(key);
        Some(entry)
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let old = self.entries.remove(key)?;
        self.buckets.removed(key);
        if let Some(at) = old.expires_at {
            self.expiries.remove(&(at, key.to_vec()));
        }
        Some(old)
    }

    /// Set the expiry of an existing key, keeping the index in step.
    fn set_expiry(&mut self, key: &[u8], expires_at: Option<Micros>) {
        self.buckets.touched(key);
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        if let Some(old) = entry.expires_at {
            self.expiries.remove(&(old, key.to_vec()));
        }
        entry.expires_at = expires_at;
        if let Some(at) = expires_at {
            self.expiries.insert((at, key.to_vec()));
        }
    }

    /// Remove the key if it holds an emptied collection.
    fn drop_if_empty(&mut self, key: &[u8]) {
        if self
            .entries
            .get(key)
            .is_some_and(|e| e.value.is_empty_collection())
        {
            self.remove(key);
        }
    }

    fn get(&self, key: &[u8]) -> KvResult {
        match self.value(key) {
            None => KvResult::Value(None),
            Some(Value::Str(v)) => KvResult::Value(Some(v.clone())),
            Some(_) => wrong_type(),
        }
    }

    fn keys_with_prefix(&self, prefix: &[u8]) -> Vec<Vec<u8>> {
        self.entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, e)| self.live(e))
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn keys_matching(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        let prefix = crate::glob::literal_prefix(pattern);
        self.entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            // Redis' `KEYS *` shortcut: every key, the empty one included.
            .filter(|(k, _)| pattern == b"*" || glob_match(pattern, k))
            .filter(|(_, e)| self.live(e))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Store a string with an expiry `expire` micros after `now`; an expiry not in the future
    /// removes the key.
    fn set(&mut self, key: &[u8], value: &[u8], expire: Option<Micros>, now: Micros) {
        #[cfg(feature = "sabotage")]
        let expire = if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::ExpiryRoundsDown) {
            expire.map(|rel| rel / 1_000_000 * 1_000_000)
        } else {
            expire
        };
        self.put_string(key, value, expire.map(|rel| now.saturating_add(rel)), now);
    }

    fn put_string(&mut self, key: &[u8], value: &[u8], expires_at: Option<Micros>, now: Micros) {
        if expires_at.is_some_and(|at| at <= now) {
            // Expired on arrival: the key is absent from this batch on.
            self.remove(key);
        } else {
            let value = Value::Str(value.to_vec());
            self.put(key, Entry { value, expires_at });
        }
    }

    fn set_extended(
        &mut self,
        key: &[u8],
        value: &[u8],
        expire: SetExpiry,
        condition: SetCondition,
        get: bool,
        now: Micros,
    ) -> KvResult {
        let current = self.entries.get(key);
        let old = match current.map(|e| &e.value) {
            Some(Value::Str(v)) if get => Some(v.clone()),
            Some(_) if get => return wrong_type(),
            _ => None,
        };
        let write = match condition {
            SetCondition::Always => true,
            SetCondition::IfAbsent => current.is_none(),
            SetCondition::IfPresent => current.is_some(),
        };
        if write {
            let expires_at = match expire {
                SetExpiry::Clear => None,
                SetExpiry::After(rel) => Some(now.saturating_add(rel)),
                SetExpiry::Keep => current.and_then(|e| e.expires_at),
                SetExpiry::At(at) => Some(at),
            };
            self.put_string(key, value, expires_at, now);
        }
        if get {
            KvResult::Value(old)
        } else {
            KvResult::Bool(write)
        }
    }

    fn compare_and_set(&mut self, key: &[u8], expected: Option<&[u8]>, new: &[u8]) -> KvResult {
        let current = self.value(key);
        let matches = match (current, expected) {
            (None, None) => true,
            (Some(_), None) | (None, Some(_)) => false,
            (Some(Value::Str(v)), Some(want)) => v.as_slice() == want,
            (Some(_), Some(_)) => return wrong_type(),
        };
        if matches {
            let value = Value::Str(new.to_vec());
            self.put(
                key,
                Entry {
                    value,
                    expires_at: None,
                },
            );
        }
        KvResult::Bool(matches)
    }

    fn increment(&mut self, key: &[u8], delta: i64) -> KvResult {
        let current = match self.value(key) {
            None => 0,
            Some(Value::Str(v)) => match parse_integer(v) {
                Some(n) => n,
                None => return KvResult::error(ERR_NOT_INTEGER),
            },
            Some(_) => return wrong_type(),
        };
        let Some(new) = current.checked_add(delta) else {
            return KvResult::error(ERR_OVERFLOW);
        };
        self.replace_string(key, new.to_string().into_bytes());
        KvResult::Int(new)
    }

    /// Store a string at `key`, keeping the key's expiry if it exists.
    fn replace_string(&mut self, key: &[u8], bytes: Vec<u8>) {
        match self.entry_mut(key) {
            Some(entry) => entry.value = Value::Str(bytes),
            None => {
                let entry = Entry {
                    value: Value::Str(bytes),
                    expires_at: None,
                };
                self.insert_entry(key, entry);
            }
        }
    }

    fn append(&mut self, key: &[u8], value: &[u8]) -> KvResult {
        match self.entry_mut(key).map(|e| &mut e.value) {
            None => {
                self.replace_string(key, value.to_vec());
                int(value.len())
            }
            Some(Value::Str(v)) => {
                v.extend_from_slice(value);
                int(v.len())
            }
            Some(_) => wrong_type(),
        }
    }

    fn expire(&mut self, key: &[u8], after: i64, cond: ExpireCondition, now: Micros) -> KvResult {
        let Some(entry) = self.entries.get(key) else {
            return KvResult::Bool(false);
        };
        // Absolute times as i128: `after` may point before time 0.
        let when = i128::from(now) + i128::from(after);
        let current = entry.expires_at.map(i128::from);
        let refused = (cond.nx && current.is_some())
            || (cond.xx && current.is_none())
            || (cond.gt && current.is_none_or(|c| when <= c))
            || (cond.lt && current.is_some_and(|c| when >= c));
        if refused {
            return KvResult::Bool(false);
        }
        if when <= i128::from(now) {
            self.remove(key);
        } else {
            let at = Micros::try_from(when).unwrap_or(Micros::MAX);
            self.set_expiry(key, Some(at));
        }
        KvResult::Bool(true)
    }

    fn persist(&mut self, key: &[u8]) -> KvResult {
        match self.entries.get(key) {
            Some(Entry {
                expires_at: Some(_),
                ..
            }) => {
                self.set_expiry(key, None);
                KvResult::Bool(true)
            }
            _ => KvResult::Bool(false),
        }
    }

    /// The collection at `key` for writing, created from `empty` if absent (the caller must
    /// leave it non-empty or call [`KvStore::drop_if_empty`]). `Err` if another kind.
    fn collection_mut(
        &mut self,
        key: &[u8],
        empty: fn() -> Value,
        same_kind: fn(&Value) -> bool,
    ) -> Result<&mut Value, KvResult> {
        if !self.entries.contains_key(key) {
            let entry = Entry {
                value: empty(),
                expires_at: None,
            };
            self.insert_entry(key, entry);
        }
        match self.entry_mut(key) {
            Some(entry) if same_kind(&entry.value) => Ok(&mut entry.value),
            _ => Err(wrong_type()),
        }
    }

    fn hash_mut(&mut self, key: &[u8]) -> Result<&mut BTreeMap<Vec<u8>, Vec<u8>>, KvResult> {
        match self.collection_mut(
            key,
            || Value::Hash(BTreeMap::new()),
            |v| matches!(v, Value::Hash(_)),
        )? {
            Value::Hash(h) => Ok(h),
            _ => Err(wrong_type()),
        }
    }

    fn list_mut(&mut self, key: &[u8]) -> Result<&mut VecDeque<Vec<u8>>, KvResult> {
        match self.collection_mut(
            key,
            || Value::List(VecDeque::new()),
            |v| matches!(v, Value::List(_)),
        )? {
            Value::List(l) => Ok(l),
            _ => Err(wrong_type()),
        }
    }

    fn set_mut(&mut self, key: &[u8]) -> Result<&mut BTreeSet<Vec<u8>>, KvResult> {
        match self.collection_mut(
            key,
            || Value::Set(BTreeSet::new()),
            |v| matches!(v, Value::Set(_)),
        )? {
            Value::Set(s) => Ok(s),
            _ => Err(wrong_type()),
        }
    }

    fn zset_mut(&mut self, key: &[u8]) -> Result<&mut ZSet, KvResult> {
        match self.collection_mut(
            key,
            || Value::ZSet(ZSet::new()),
            |v| matches!(v, Value::ZSet(_)),
        )? {
            Value::ZSet(z) => Ok(z),
            _ => Err(wrong_type()),
        }
    }

    /// Run `f` on the collection at `key` (created empty if absent), then drop it if empty.
    fn with_collection<C>(
        &mut self,
        key: &[u8],
        get: for<'a> fn(&'a mut KvStore, &[u8]) -> Result<&'a mut C, KvResult>,
        f: impl FnOnce(&mut C) -> KvResult,
    ) -> KvResult {
        let result = match get(self, key) {
            Ok(c) => f(c),
            Err(e) => e,
        };
        self.drop_if_empty(key);
        result
    }

    fn hset(&mut self, key: &[u8], fields: &[(Vec<u8>, Vec<u8>)]) -> KvResult {
        self.with_collection(key, KvStore::hash_mut, |h| {
            let added = fields
                .iter()
                .filter(|(f, v)| h.insert(f.clone(), v.clone()).is_none())
                .count();
            int(added)
        })
    }

    fn hdel(&mut self, key: &[u8], fields: &[Vec<u8>]) -> KvResult {
        if !self.entries.contains_key(key) {
            return KvResult::Int(0);
        }
        self.with_collection(key, KvStore::hash_mut, |h| {
            int(fields
                .iter()
                .filter(|f| h.remove(f.as_slice()).is_some())
                .count())
        })
    }

    fn hincrby(&mut self, key: &[u8], field: &[u8], delta: i64) -> KvResult {
        self.with_collection(key, KvStore::hash_mut, |h| {
            let current = match h.get(field) {
                None => 0,
                Some(v) => match parse_integer(v) {
                    Some(n) => n,
                    None => return KvResult::error(ERR_HASH_NOT_INTEGER),
                },
            };
            let Some(new) = current.checked_add(delta) else {
                return KvResult::error(ERR_OVERFLOW);
            };
            h.insert(field.to_vec(), new.to_string().into_bytes());
            KvResult::Int(new)
        })
    }

    fn push(&mut self, key: &[u8], end: End, values: &[Vec<u8>]) -> KvResult {
        self.with_collection(key, KvStore::list_mut, |l| {
            for v in values {
                match end {
                    End::Left => l.push_front(v.clone()),
                    End::Right => l.push_back(v.clone()),
                }
            }
            int(l.len())
        })
    }

    fn pop(&mut self, key: &[u8], end: End, count: Option<u64>) -> KvResult {
        if !self.entries.contains_key(key) {
            return match count {
                None => KvResult::Value(None),
                Some(_) => KvResult::Nil,
            };
        }
        self.with_collection(key, KvStore::list_mut, |l| {
            let mut pop = || match end {
                End::Left => l.pop_front(),
                End::Right => l.pop_back(),
            };
            match count {
                None => KvResult::Value(pop()),
                Some(n) => KvResult::Items(
                    std::iter::from_fn(pop)
                        .take(usize::try_from(n).unwrap_or(usize::MAX))
                        .collect(),
                ),
            }
        })
    }

    /// The sorted set [`KvOp::ZSetAlgebra`] computes, or a `WRONGTYPE` error if a key holds
    /// neither a set nor a sorted set.
    fn zset_algebra(
        &self,
        op: SetOp,
        keys: &[Vec<u8>],
        weights: &[Score],
        aggregate: Aggregate,
    ) -> Result<ZSet, KvResult> {
        let mut inputs: Vec<BTreeMap<&[u8], f64>> = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let weight = weights.get(i).map_or(1.0, |w| w.get());
            let scaled = |s: f64| {
                let x = s * weight;
                if x.is_nan() {
                    0.0
                } else {
                    x
                }
            };
            inputs.push(match self.value(key) {
                None => BTreeMap::new(),
                Some(Value::Set(s)) => s.iter().map(|m| (m.as_slice(), scaled(1.0))).collect(),
                Some(Value::ZSet(z)) => z.iter().map(|(m, s)| (m, scaled(s.get()))).collect(),
                Some(_) => return Err(wrong_type()),
            });
        }
        let combine = |a: f64, b: f64| match aggregate {
            Aggregate::Sum => {
                let x = a + b;
                if x.is_nan() {
                    0.0
                } else {
                    x
                }
            }
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        };
        let mut out: BTreeMap<&[u8], f64> = BTreeMap::new();
        match op {
            SetOp::Union => {
                for input in &inputs {
                    for (m, s) in input {
                        out.entry(m)
                            .and_modify(|t| *t = combine(*t, *s))
                            .or_insert(*s);
                    }
                }
            }
            SetOp::Inter => {
                if let Some((first, rest)) = inputs.split_first() {
                    for (m, s) in first {
                        let mut total = *s;
                        if rest.iter().all(|other| match other.get(m) {
                            Some(t) => {
                                total = combine(total, *t);
                                true
                            }
                            None => false,
                        }) {
                            out.insert(m, total);
                        }
                    }
                }
            }
            SetOp::Diff => {
                if let Some((first, rest)) = inputs.split_first() {
                    for (m, s) in first {
                        if !rest.iter().any(|other| other.contains_key(m)) {
                            out.insert(m, *s);
                        }
                    }
                }
            }
        }
        let mut z = ZSet::new();
        for (m, s) in out {
            if let Some(score) = Score::new(s) {
                z.insert(m, score.normalized());
            }
        }
        Ok(z)
    }

    fn getex(&mut self, key: &[u8], expire: Option<SetExpiry>, now: Micros) -> KvResult {
        let value = match self.value(key) {
            None => return KvResult::Value(None),
            Some(Value::Str(v)) => v.clone(),
            Some(_) => return wrong_type(),
        };
        let at = match expire {
            None | Some(SetExpiry::Keep) => return KvResult::Value(Some(value)),
            Some(SetExpiry::Clear) => None,
            Some(SetExpiry::After(rel)) => Some(now.saturating_add(rel)),
            Some(SetExpiry::At(at)) => Some(at),
        };
        if at.is_some_and(|at| at <= now) {
            self.remove(key);
        } else {
            self.set_expiry(key, at);
        }
        KvResult::Value(Some(value))
    }

    fn lrem(&mut self, key: &[u8], count: i64, element: &[u8]) -> KvResult {
        match self.value(key) {
            None => return KvResult::Int(0),
            Some(Value::List(_)) => {}
            Some(_) => return wrong_type(),
        }
        self.with_collection(key, KvStore::list_mut, |l| {
            let before = l.len();
            if count == 0 {
                l.retain(|e| e != element);
                return int(before - l.len());
            }
            let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
            let mut removed = 0;
            if count > 0 {
                let mut i = 0;
                while i < l.len() && removed < limit {
                    if l[i] == element {
                        l.remove(i);
                        removed += 1;
                    } else {
                        i += 1;
                    }
                }
            } else {
                let mut i = l.len();
                while i > 0 && removed < limit {
                    i -= 1;
                    if l[i] == element {
                        l.remove(i);
                        removed += 1;
                    }
                }
            }
            int(removed)
        })
    }

    fn linsert(&mut self, key: &[u8], before: bool, pivot: &[u8], element: &[u8]) -> KvResult {
        match self.value(key) {
            None => return KvResult::Int(0),
            Some(Value::List(_)) => {}
            Some(_) => return wrong_type(),
        }
        self.with_collection(key, KvStore::list_mut, |l| {
            match l.iter().position(|e| e == pivot) {
                None => KvResult::Int(-1),
                Some(i) => {
                    l.insert(if before { i } else { i + 1 }, element.to_vec());
                    int(l.len())
                }
            }
        })
    }

    fn smove(&mut self, from: &[u8], to: &[u8], member: &[u8]) -> KvResult {
        // Redis' order: an absent source is 0 before any type is checked.
        let source_has = match self.value(from) {
            None => return KvResult::Bool(false),
            Some(Value::Set(s)) => Some(s.contains(member)),
            Some(_) => return wrong_type(),
        };
        if !matches!(self.value(to), None | Some(Value::Set(_))) {
            return wrong_type();
        }
        match source_has {
            None | Some(false) => KvResult::Bool(false),
            Some(true) if from == to => KvResult::Bool(true),
            Some(true) => {
                self.srem(from, &[member.to_vec()]);
                self.sadd(to, &[member.to_vec()]);
                KvResult::Bool(true)
            }
        }
    }

    fn srandmember(&self, key: &[u8], count: Option<i64>, seed: u64) -> KvResult {
        let members: Vec<&Vec<u8>> = match self.value(key) {
            None => Vec::new(),
            Some(Value::Set(s)) => s.iter().collect(),
            Some(_) => return wrong_type(),
        };
        let mut rng = seed;
        let len = members.len();
        match count {
            None => KvResult::Value(random_index(&mut rng, len).map(|i| members[i].clone())),
            Some(n) if n >= 0 => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                if n >= len {
                    return KvResult::Items(members.into_iter().cloned().collect());
                }
                let mut members = members;
                for i in 0..n {
                    let j = i + random_index(&mut rng, len - i).unwrap_or(0);
                    members.swap(i, j);
                }
                KvResult::Items(members.into_iter().take(n).cloned().collect())
            }
            Some(n) => KvResult::Items(
                (0..n.unsigned_abs())
                    .map_while(|_| random_index(&mut rng, len).map(|i| members[i].clone()))
                    .collect(),
            ),
        }
    }

    fn setrange(&mut self, key: &[u8], offset: u64, value: &[u8], now: Micros) -> KvResult {
        let current = match self.value(key) {
            None if value.is_empty() => return KvResult::Int(0),
            None => None,
            Some(Value::Str(v)) if value.is_empty() => return int(v.len()),
            Some(Value::Str(v)) => Some(v.clone()),
            Some(_) => return wrong_type(),
        };
        let len = u64::try_from(value.len()).unwrap_or(u64::MAX);
        if offset.saturating_add(len) > MAX_STRING {
            return KvResult::error(ERR_STRING_TOO_LONG);
        }
        // Both fit in MAX_STRING, so in usize.
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        let mut bytes = current.clone().unwrap_or_default();
        if bytes.len() < offset + value.len() {
            bytes.resize(offset + value.len(), 0);
        }
        bytes[offset..offset + value.len()].copy_from_slice(value);
        let new_len = bytes.len();
        if current.is_some() {
            self.replace_string(key, bytes);
        } else {
            self.put_string(key, &bytes, None, now);
        }
        int(new_len)
    }

    /// Remove the members `pick` chooses from the sorted set at `key`: `Int(removed)`.
    fn zremrange(&mut self, key: &[u8], pick: impl FnOnce(&ZSet) -> Vec<Vec<u8>>) -> KvResult {
        match self.value(key) {
            None => return KvResult::Int(0),
            Some(Value::ZSet(_)) => {}
            Some(_) => return wrong_type(),
        }
        self.with_collection(key, KvStore::zset_mut, |z| {
            let members = pick(z);
            for m in &members {
                z.remove(m);
            }
            int(members.len())
        })
    }

    fn pop_first(&mut self, keys: &[Vec<u8>], end: End) -> KvResult {
        for key in keys {
            match self.value(key) {
                None => continue,
                #[cfg(feature = "sabotage")]
                Some(Value::List(l))
                    if plumb_core::sabotage::on(
                        plumb_core::sabotage::Sabotage::PopKeepsElement,
                    ) =>
                {
                    let v = match end {
                        End::Left => l.front(),
                        End::Right => l.back(),
                    };
                    if let Some(v) = v {
                        return KvResult::Pairs(vec![(key.clone(), v.clone())]);
                    }
                }
                Some(Value::List(_)) => {
                    if let KvResult::Value(Some(v)) = self.pop(key, end, None) {
                        return KvResult::Pairs(vec![(key.clone(), v)]);
                    }
                }
                Some(_) => return wrong_type(),
            }
        }
        KvResult::Nil
    }

    fn move_element(&mut self, from: &[u8], to: &[u8], from_end: End, to_end: End) -> KvResult {
        match self.value(from) {
            None => return KvResult::Value(None),
            Some(Value::List(_)) => {}
            Some(_) => return wrong_type(),
        }
        if !matches!(self.value(to), None | Some(Value::List(_))) {
            return wrong_type();
        }
        let KvResult::Value(Some(v)) = self.pop(from, from_end, None) else {
            return KvResult::Value(None);
        };
        self.push(to, to_end, std::slice::from_ref(&v));
        KvResult::Value(Some(v))
    }

    fn sadd(&mut self, key: &[u8], members: &[Vec<u8>]) -> KvResult {
        self.with_collection(key, KvStore::set_mut, |s| {
            int(members.iter().filter(|m| s.insert(m.to_vec())).count())
        })
    }

    fn srem(&mut self, key: &[u8], members: &[Vec<u8>]) -> KvResult {
        if !self.entries.contains_key(key) {
            return KvResult::Int(0);
        }
        self.with_collection(key, KvStore::set_mut, |s| {
            int(members.iter().filter(|m| s.remove(m.as_slice())).count())
        })
    }

    fn spop(&mut self, key: &[u8], count: Option<u64>, seed: u64) -> KvResult {
        if !self.entries.contains_key(key) {
            return match count {
                None => KvResult::Value(None),
                Some(_) => KvResult::Items(Vec::new()),
            };
        }
        self.with_collection(key, KvStore::set_mut, |s| {
            let mut rng = seed;
            match count {
                None => {
                    let picked: Option<Vec<u8>> = random_index(&mut rng, s.len())
                        .and_then(|i| s.iter().nth(i))
                        .cloned();
                    if let Some(m) = &picked {
                        s.remove(m);
                    }
                    KvResult::Value(picked)
                }
                Some(n) => {
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    if n >= s.len() {
                        return KvResult::Items(std::mem::take(s).into_iter().collect());
                    }
                    // A partial Fisher-Yates shuffle of the members picks `n` of them.
                    let mut members: Vec<Vec<u8>> = s.iter().cloned().collect();
                    for i in 0..n {
                        let j = i + random_index(&mut rng, members.len() - i).unwrap_or(0);
                        members.swap(i, j);
                    }
                    members.truncate(n);
                    for m in &members {
                        s.remove(m);
                    }
                    KvResult::Items(members)
                }
            }
        })
    }
}

impl KvStore {
    /// Redis' `zaddGenericCommand` and `zsetAdd`: options checked first, then the key's kind;
    /// `XX` on an absent key changes nothing.
    fn zadd(&mut self, key: &[u8], members: &[(Score, Vec<u8>)], o: ZAddOptions) -> KvResult {
        if o.nx && o.xx {
            return KvResult::error(ERR_ZADD_NX_XX);
        }
        if (o.nx && (o.gt || o.lt)) || (o.gt && o.lt) {
            return KvResult::error(ERR_ZADD_GT_LT_NX);
        }
        if o.incr && members.len() != 1 {
            return KvResult::error(ERR_ZADD_INCR_PAIRS);
        }
        self.with_collection(key, KvStore::zset_mut, |z| {
            let (mut added, mut updated) = (0, 0);
            // The score of the last member written, the reply of `INCR`.
            let mut last = None;
            for (score, member) in members {
                match z.score(member) {
                    Some(current) => {
                        if o.nx {
                            continue;
                        }
                        let (cur, mut new) = (current.get(), score.get());
                        if o.incr {
                            new += cur;
                        }
                        let Some(new_score) = Score::new(new) else {
                            return KvResult::error(ERR_SCORE_NAN);
                        };
                        if (o.lt && new >= cur) || (o.gt && new <= cur) {
                            continue;
                        }
                        last = Some(new_score);
                        // Numeric comparison, as Redis: `-0` does not replace `0`.
                        if new != cur {
                            z.insert(member, new_score);
                            updated += 1;
                        }
                    }
                    None if !o.xx => {
                        z.insert(member, *score);
                        added += 1;
                        last = Some(*score);
                    }
                    None => {}
                }
            }
            if o.incr {
                KvResult::Score(last)
            } else if o.ch {
                int(added + updated)
            } else {
                int(added)
            }
        })
    }

    fn zrem(&mut self, key: &[u8], members: &[Vec<u8>]) -> KvResult {
        if !self.entries.contains_key(key) {
            return KvResult::Int(0);
        }
        self.with_collection(key, KvStore::zset_mut, |z| {
            int(members.iter().filter(|m| z.remove(m).is_some()).count())
        })
    }

    fn zpop(&mut self, key: &[u8], max: bool, count: u64) -> KvResult {
        if !self.entries.contains_key(key) {
            return KvResult::Scored(Vec::new());
        }
        self.with_collection(key, KvStore::zset_mut, |z| {
            let n = usize::try_from(count).unwrap_or(usize::MAX);
            KvResult::Scored(std::iter::from_fn(|| z.pop(max)).take(n).collect())
        })
    }

    fn lset(&mut self, key: &[u8], index: i64, value: &[u8]) -> KvResult {
        match self.value(key) {
            None => return KvResult::error(ERR_NO_SUCH_KEY),
            Some(Value::List(_)) => {}
            Some(_) => return wrong_type(),
        }
        self.with_collection(key, KvStore::list_mut, |l| {
            match list_position(l.len(), index).and_then(|i| l.get_mut(i)) {
                Some(slot) => {
                    *slot = value.to_vec();
                    KvResult::Ok
                }
                None => KvResult::error(ERR_INDEX_RANGE),
            }
        })
    }

    fn ltrim(&mut self, key: &[u8], start: i64, stop: i64) -> KvResult {
        match self.value(key) {
            None => return KvResult::Ok,
            Some(Value::List(_)) => {}
            Some(_) => return wrong_type(),
        }
        self.with_collection(key, KvStore::list_mut, |l| {
            match index_range(l.len(), start, stop) {
                Some((from, len)) => {
                    l.truncate(from + len);
                    l.drain(..from);
                }
                None => l.clear(),
            }
            KvResult::Ok
        })
    }

    fn getdel(&mut self, key: &[u8]) -> KvResult {
        match self.value(key) {
            None => return KvResult::Value(None),
            Some(Value::Str(_)) => {}
            Some(_) => return wrong_type(),
        }
        match self.remove(key).map(|e| e.value) {
            Some(Value::Str(v)) => KvResult::Value(Some(v)),
            _ => KvResult::Value(None),
        }
    }

    fn rename(&mut self, from: &[u8], to: &[u8], nx: bool) -> KvResult {
        if !self.entries.contains_key(from) {
            return KvResult::error(ERR_NO_SUCH_KEY);
        }
        if from == to {
            return if nx {
                KvResult::Bool(false)
            } else {
                KvResult::Ok
            };
        }
        if nx && self.entries.contains_key(to) {
            return KvResult::Bool(false);
        }
        if let Some(entry) = self.remove(from) {
            self.put(to, entry);
        }
        if nx {
            KvResult::Bool(true)
        } else {
            KvResult::Ok
        }
    }

    /// The members [`KvOp::SetAlgebra`] computes, or a `WRONGTYPE` error if a key holds
    /// another kind.
    fn set_algebra(&self, op: SetOp, keys: &[Vec<u8>]) -> Result<BTreeSet<Vec<u8>>, KvResult> {
        let empty = BTreeSet::new();
        let mut sets = Vec::with_capacity(keys.len());
        for key in keys {
            match self.value(key) {
                None => sets.push(&empty),
                Some(Value::Set(s)) => sets.push(s),
                Some(_) => return Err(wrong_type()),
            }
        }
        let Some((first, rest)) = sets.split_first() else {
            return Ok(BTreeSet::new());
        };
        Ok(match op {
            SetOp::Union => sets.iter().flat_map(|s| s.iter().cloned()).collect(),
            SetOp::Inter => first
                .iter()
                .filter(|m| rest.iter().all(|s| s.contains(*m)))
                .cloned()
                .collect(),
            SetOp::Diff => first
                .iter()
                .filter(|m| !rest.iter().any(|s| s.contains(*m)))
                .cloned()
                .collect(),
        })
    }
}

/// The members `ZRANGE` selects, in its direction.
/// Redis' `LPOS` on `list`.
fn lpos(
    list: &VecDeque<Vec<u8>>,
    element: &[u8],
    rank: i64,
    count: Option<u64>,
    maxlen: u64,
) -> KvResult {
    let len = list.len();
    let look = match usize::try_from(maxlen) {
        Ok(0) | Err(_) => len,
        Ok(m) => m.min(len),
    };
    let positions: Box<dyn Iterator<Item = usize>> = if rank >= 0 {
        Box::new(0..look)
    } else {
        Box::new((len - look..len).rev())
    };
    let mut skip = rank.unsigned_abs().saturating_sub(1);
    let want = match count {
        None => 1,
        Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let mut found = Vec::new();
    for i in positions {
        if list[i] != element {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        found.push(i64::try_from(i).unwrap_or(i64::MAX));
        if found.len() >= want {
            break;
        }
    }
    match count {
        None => found
            .first()
            .map_or(KvResult::Value(None), |&i| KvResult::Int(i)),
        Some(_) => KvResult::Ints(found),
    }
}

/// Redis' `GETRANGE` arithmetic on a string.
fn getrange(v: &[u8], start: i64, end: i64) -> &[u8] {
    let len = i64::try_from(v.len()).unwrap_or(i64::MAX);
    if start < 0 && end < 0 && start > end {
        return &[];
    }
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    if start > end || len == 0 {
        return &[];
    }
    let (s, e) = (
        usize::try_from(start).unwrap_or(0),
        usize::try_from(end).unwrap_or(0),
    );
    &v[s..=e]
}

/// The position `index` names in a list of `len` (negative: from the end), if inside it.
fn list_position(len: usize, index: i64) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 {
        len.checked_add(index)?
    } else {
        index
    };
    (0..len)
        .contains(&i)
        .then(|| usize::try_from(i).ok())
        .flatten()
}

fn zrange(z: &ZSet, range: ZRangeBy, rev: bool) -> Box<dyn Iterator<Item = (&[u8], Score)> + '_> {
    match range {
        ZRangeBy::Index { start, stop } => {
            let Some((start, len)) = index_range(z.len(), start, stop) else {
                return Box::new(std::iter::empty());
            };
            if rev {
                Box::new(z.iter().rev().skip(start).take(len))
            } else {
                Box::new(z.iter().skip(start).take(len))
            }
        }
        ZRangeBy::Score { min, max, limit } => with_limit(z.range_by_score(min, max, rev), limit),
        ZRangeBy::Lex { min, max, limit } => {
            let all: Box<dyn Iterator<Item = (&[u8], Score)>> = if rev {
                Box::new(z.iter().rev())
            } else {
                Box::new(z.iter())
            };
            let found = all.filter(move |(m, _)| min.below(m) && max.above(m));
            with_limit(Box::new(found), limit)
        }
    }
}

/// Redis' `LIMIT offset count` on a range: a negative offset selects nothing, a negative
/// count everything after the offset.
fn with_limit<'a>(
    found: Box<dyn Iterator<Item = (&'a [u8], Score)> + 'a>,
    limit: Option<(i64, i64)>,
) -> Box<dyn Iterator<Item = (&'a [u8], Score)> + 'a> {
    match limit {
        None => found,
        Some((offset, _)) if offset < 0 => Box::new(std::iter::empty()),
        Some((offset, count)) => {
            let skip = usize::try_from(offset).unwrap_or(usize::MAX);
            let take = usize::try_from(count).unwrap_or(usize::MAX);
            Box::new(found.skip(skip).take(take))
        }
    }
}

/// Redis' `LRANGE` / `ZRANGE` index arithmetic on a collection of `len`: the first position
/// and the number of elements, `None` if the range is empty.
fn index_range(len: usize, start: i64, stop: i64) -> Option<(usize, usize)> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let start = if start < 0 {
        len.saturating_add(start)
    } else {
        start
    }
    .max(0);
    let stop = if stop < 0 {
        len.saturating_add(stop)
    } else {
        stop
    };
    if start > stop || start >= len {
        return None;
    }
    let stop = stop.min(len - 1);
    Some((
        usize::try_from(start).ok()?,
        usize::try_from(stop - start + 1).ok()?,
    ))
}

/// `TTL` in micros relative to `now`: -2 if absent, -1 without expiry, else at least 1.
/// With `now` unknown (read-only path right after a checkpoint load), an expiry is an error.
fn ttl(entry: Option<&Entry>, now: Option<Micros>) -> KvResult {
    match (entry.map(|e| e.expires_at), now) {
        (None, _) => KvResult::Int(-2),
        (Some(None), _) => KvResult::Int(-1),
        (Some(Some(_)), None) => KvResult::error(ERR_TTL_NEEDS_ORDER),
        (Some(Some(at)), Some(now)) => {
            let left = at.saturating_sub(now).max(1);
            KvResult::Int(i64::try_from(left).unwrap_or(i64::MAX))
        }
    }
}

/// A pseudo-random index below `len`, if `len > 0`.
fn random_index(rng: &mut u64, len: usize) -> Option<usize> {
    let len = u64::try_from(len).ok().filter(|&n| n > 0)?;
    usize::try_from(splitmix(rng) % len).ok()
}

/// The fingerprint `WATCH` takes of a key: a digest of its entry, value and expiry, or of its
/// absence. Equal entries have equal fingerprints on every replica (the encoding is canonical).
pub fn fingerprint(entry: Option<&Entry>) -> [u8; 32] {
    Digest::of(&plumb_wire::encode::to_vec(&entry)).0
}

/// Bytes of the entry's canonical encoding.
fn encoded_len(entry: &Entry) -> usize {
    plumb_wire::encode::encoded_len(entry)
}

/// Run a pipeline's ops in order with `run` (given each op's index) until they are done or
/// their results pass [`PIPELINE_REPLY_BUDGET`] bytes, at least one op.
fn pipeline(ops: &[Vec<u8>], mut run: impl FnMut(usize, &[u8]) -> KvResult) -> KvResult {
    let mut results = Vec::with_capacity(ops.len());
    let mut bytes = 0;
    for (i, op) in ops.iter().enumerate() {
        if bytes > PIPELINE_REPLY_BUDGET {
            break;
        }
        let result = run(i, op).encode();
        bytes += result.len();
        results.push(result);
    }
    KvResult::Each(results)
}

/// Redis' `LRANGE`.
fn lrange(list: &VecDeque<Vec<u8>>, start: i64, stop: i64) -> Vec<Vec<u8>> {
    match index_range(list.len(), start, stop) {
        Some((start, len)) => list.range(start..start + len).cloned().collect(),
        None => Vec::new(),
    }
}

fn corrupt(reason: &str) -> LoadError {
    LoadError::Corrupt(reason.to_string())
}

/// The reply to one request's bytes at agreed time `now` with random seed `seed`.
fn execute_one(store: &mut KvStore, op: &[u8], now: Micros, seed: u64) -> Vec<u8> {
    let result = match KvOp::decode(op) {
        Ok(op) => store.apply_seeded(&op, now, seed),
        Err(_) => KvResult::error(ERR_MALFORMED),
    };
    result.encode()
}

impl Application for KvStore {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        self.advance(nd.time);
        // Only this batch's pushes go out (a caller of `apply` may have left some).
        self.pushes.clear();
        let replies = batch
            .iter()
            .enumerate()
            .map(|(i, cmd)| execute_one(self, cmd.op, nd.time, request_seed(nd.seed, i)))
            .collect();
        BatchOutput {
            replies,
            pushes: self.take_pushes(),
        }
    }

    /// Each command as [`Application::execute`] runs it at its index: an operation reads the
    /// batch's time `nd.time`, never the store's clock, and expires only the keys it names,
    /// so it runs alike after later batches (docs/odrc.md). The clock stays the latest time
    /// seen, for the read-only path.
    fn execute_selected(
        &mut self,
        _seq: Seq,
        commands: &[(usize, Command<'_>)],
        nd: NonDeterminism,
    ) -> Option<BatchOutput> {
        self.advance(nd.time);
        self.pushes.clear();
        let replies = commands
            .iter()
            .map(|(i, cmd)| execute_one(self, cmd.op, nd.time, request_seed(nd.seed, *i)))
            .collect();
        Some(BatchOutput {
            replies,
            pushes: self.take_pushes(),
        })
    }

    /// The single-key and multi-key reads whose answer is the state's alone: D-Prophecy's
    /// replicas remember their last ordered answers (docs/prophecy.md). Reads that depend on
    /// the caller or on time only (`TTL`, `SCAN` cursors, random picks) are left out: their
    /// answers change without a write, so a history of them would only cause fallbacks.
    fn is_read(&self, op: &[u8]) -> bool {
        matches!(
            KvOp::decode(op),
            Ok(KvOp::Get { .. }
                | KvOp::MGet { .. }
                | KvOp::StrLen { .. }
                | KvOp::Exists { .. }
                | KvOp::GetRange { .. }
                | KvOp::HGet { .. }
                | KvOp::HMGet { .. }
                | KvOp::HGetAll { .. }
                | KvOp::HExists { .. }
                | KvOp::HLen { .. }
                | KvOp::LRange { .. }
                | KvOp::LLen { .. }
                | KvOp::LIndex { .. }
                | KvOp::SMembers { .. }
                | KvOp::SIsMember { .. }
                | KvOp::SCard { .. }
                | KvOp::ZScore { .. }
                | KvOp::ZCard { .. }
                | KvOp::ZRange { .. }
                | KvOp::Type { .. })
        )
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        let result = match KvOp::decode(op) {
            Ok(op) => self.read_live(&op),
            Err(_) => KvResult::error(ERR_MALFORMED),
        };
        result.encode()
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.canonical_bytes()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        let scripting = std::mem::take(&mut self.scripting);
        *self = KvStore::from_canonical_bytes(checkpoint)?;
        // The engine is code, not state: the loaded store runs scripts as before.
        self.scripting = scripting;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.canonical_bytes())
    }

    fn objects(&mut self) -> Option<&mut dyn plumb_app::ObjectState> {
        Some(self)
    }
}
