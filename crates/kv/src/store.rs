//! The store's state and the [`Application`] implementation.
//!
//! State is a `BTreeMap` from key to [`Entry`], so iteration order, and with it the
//! checkpoint encoding, is a function of the contents alone (APPS3). Keys are independent
//! objects: splitting the key space into objects or ranges (ZZ, ODRC) needs no change here.
//!
//! Expiry uses agreed time only. Before each operation, every key whose expiry is at or
//! before the batch's time is removed, found through an index ordered by expiry time, and a
//! `Set` whose expiry is not in the future removes the key. So every stored entry is live at
//! the time of the last executed batch: reads, `Keys`, `DbSize` and checkpoints need no clock,
//! and equal logical states have equal bytes whatever order keys were removed in.

use crate::op::{
    parse_integer, KvOp, KvResult, ERR_MALFORMED, ERR_NOT_INTEGER, ERR_NOT_READ_ONLY, ERR_OVERFLOW,
    ERR_WRONG_TYPE,
};
use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, Seq};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

/// Version byte of checkpoint encodings.
pub const CHECKPOINT_VERSION: u8 = 1;

/// What a key holds. Only `Str` is created by the operations implemented so far; the other
/// kinds are here so the Redis gateway's hashes, lists and sets fit without a new format.
/// A collection is never stored empty (Redis removes the key instead).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
}

impl Value {
    fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
        }
    }
}

/// A stored value and its absolute expiry time in agreed micros, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub value: Value,
    pub expires_at: Option<Micros>,
}

/// The in-memory key-value application.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvStore {
    entries: BTreeMap<Vec<u8>, Entry>,
    /// `(expires_at, key)` for every entry with an expiry; derived from `entries`, not
    /// part of the checkpoint.
    expiries: BTreeSet<(Micros, Vec<u8>)>,
}

impl KvStore {
    pub fn new() -> KvStore {
        KvStore::default()
    }

    /// Number of live keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn entry(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Every live entry, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.entries.iter().map(|(k, e)| (k.as_slice(), e))
    }

    /// Apply one operation at agreed time `now` (the batch's time).
    pub fn apply(&mut self, op: &KvOp, now: Micros) -> KvResult {
        self.expire_until(now);
        match op {
            KvOp::Set { key, value, expire } => self.set(key, value, *expire, now),
            KvOp::Delete { key } => KvResult::Bool(self.remove(key).is_some()),
            KvOp::CompareAndSet { key, expected, new } => {
                self.compare_and_set(key, expected.as_deref(), new)
            }
            KvOp::Increment { key, delta } => self.increment(key, *delta),
            KvOp::Get { .. } | KvOp::Keys { .. } | KvOp::DbSize => self.read(op),
        }
    }

    /// Run a read-only operation against the state as of the last executed batch. A mutating
    /// operation gets an error and changes nothing.
    pub fn read(&self, op: &KvOp) -> KvResult {
        match op {
            KvOp::Get { key } => self.get(key),
            KvOp::Keys { prefix } => KvResult::Keys(self.keys_with_prefix(prefix)),
            KvOp::DbSize => KvResult::Int(i64::try_from(self.entries.len()).unwrap_or(i64::MAX)),
            KvOp::Set { .. }
            | KvOp::Delete { .. }
            | KvOp::CompareAndSet { .. }
            | KvOp::Increment { .. } => KvResult::error(ERR_NOT_READ_ONLY),
        }
    }

    /// The canonical encoding of the whole state: version byte, then postcard of the map.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = vec![CHECKPOINT_VERSION];
        // Serializing a map of plain data cannot fail.
        out.extend_from_slice(&postcard::to_stdvec(&self.entries).unwrap_or_default());
        out
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
        let entries: BTreeMap<Vec<u8>, Entry> =
            postcard::from_bytes(body).map_err(|e| LoadError::Corrupt(e.to_string()))?;
        if entries.values().any(|e| e.value.is_empty_collection()) {
            return Err(corrupt("empty collection"));
        }
        let store = KvStore::with_entries(entries);
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
        KvStore { entries, expiries }
    }

    /// Remove every key whose expiry is at or before `now`.
    fn expire_until(&mut self, now: Micros) {
        while let Some((at, key)) = self.expiries.first().cloned() {
            if at > now {
                break;
            }
            self.remove(&key);
        }
    }

    fn put(&mut self, key: &[u8], entry: Entry) {
        self.remove(key);
        if let Some(at) = entry.expires_at {
            self.expiries.insert((at, key.to_vec()));
        }
        self.entries.insert(key.to_vec(), entry);
    }

    fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let old = self.entries.remove(key)?;
        if let Some(at) = old.expires_at {
            self.expiries.remove(&(at, key.to_vec()));
        }
        Some(old)
    }

    fn get(&self, key: &[u8]) -> KvResult {
        match self.entries.get(key).map(|e| &e.value) {
            None => KvResult::Value(None),
            Some(Value::Str(v)) => KvResult::Value(Some(v.clone())),
            Some(_) => KvResult::error(ERR_WRONG_TYPE),
        }
    }

    fn keys_with_prefix(&self, prefix: &[u8]) -> Vec<Vec<u8>> {
        self.entries
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn set(&mut self, key: &[u8], value: &[u8], expire: Option<Micros>, now: Micros) -> KvResult {
        let expires_at = expire.map(|rel| now.saturating_add(rel));
        if expires_at.is_some_and(|at| at <= now) {
            // Expired on arrival: the key is absent from this batch on.
            self.remove(key);
        } else {
            let value = Value::Str(value.to_vec());
            self.put(key, Entry { value, expires_at });
        }
        KvResult::Ok
    }

    fn compare_and_set(&mut self, key: &[u8], expected: Option<&[u8]>, new: &[u8]) -> KvResult {
        let current = self.entries.get(key).map(|e| &e.value);
        let matches = match (current, expected) {
            (None, None) => true,
            (Some(_), None) | (None, Some(_)) => false,
            (Some(Value::Str(v)), Some(want)) => v.as_slice() == want,
            (Some(_), Some(_)) => return KvResult::error(ERR_WRONG_TYPE),
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
        let (current, expires_at) = match self.entries.get(key) {
            None => (0, None),
            Some(Entry {
                value: Value::Str(v),
                expires_at,
            }) => match parse_integer(v) {
                Some(n) => (n, *expires_at),
                None => return KvResult::error(ERR_NOT_INTEGER),
            },
            Some(_) => return KvResult::error(ERR_WRONG_TYPE),
        };
        let Some(new) = current.checked_add(delta) else {
            return KvResult::error(ERR_OVERFLOW);
        };
        let value = Value::Str(new.to_string().into_bytes());
        self.put(key, Entry { value, expires_at });
        KvResult::Int(new)
    }
}

fn corrupt(reason: &str) -> LoadError {
    LoadError::Corrupt(reason.to_string())
}

/// The reply to one request's bytes at agreed time `now`.
fn execute_one(store: &mut KvStore, op: &[u8], now: Micros) -> Vec<u8> {
    let result = match KvOp::decode(op) {
        Ok(op) => store.apply(&op, now),
        Err(_) => KvResult::error(ERR_MALFORMED),
    };
    result.encode()
}

impl Application for KvStore {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|cmd| execute_one(self, cmd.op, nd.time))
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        let result = match KvOp::decode(op) {
            Ok(op) => self.read(&op),
            Err(_) => KvResult::error(ERR_MALFORMED),
        };
        result.encode()
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.canonical_bytes()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        *self = KvStore::from_canonical_bytes(checkpoint)?;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.canonical_bytes())
    }
}
