//! Operations, results and their wire encoding.
//!
//! Every encoding is one version byte followed by postcard. Postcard encodes an enum variant
//! as its index, so new variants are appended at the end of [`KvOp`] / [`KvResult`] and old
//! bytes keep their meaning; an incompatible change bumps the version byte instead.
//! Decoding is total: any byte string yields either a value or a [`DecodeError`].

use plumb_wire::Micros;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::fmt;

/// Version byte of [`KvOp`] encodings.
pub const OP_VERSION: u8 = 1;
/// Version byte of [`KvResult`] encodings.
pub const RESULT_VERSION: u8 = 1;

/// Error text for a value that is not a canonical decimal `i64` (Redis wording, so a RESP
/// gateway can send it as `-<text>`).
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Error text for an increment whose result does not fit an `i64`.
pub const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
/// Error text for an operation on a key that holds a value of another kind.
pub const ERR_WRONG_TYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
/// Error text for request bytes that do not decode as a [`KvOp`].
pub const ERR_MALFORMED: &str = "ERR malformed operation";
/// Error text for a mutating operation sent down the read-only path.
pub const ERR_NOT_READ_ONLY: &str = "ERR operation is not read-only";

/// An operation on the store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvOp {
    /// `Value(Some(v))` if `key` holds the string `v`, `Value(None)` if absent.
    Get { key: Vec<u8> },
    /// Store the string `value`, replacing any value and expiry. `expire` is relative to the
    /// batch's agreed time; `None` means no expiry. Replies `Ok`.
    Set {
        key: Vec<u8>,
        value: Vec<u8>,
        expire: Option<Micros>,
    },
    /// Remove `key`. Replies `Bool(existed)`.
    Delete { key: Vec<u8> },
    /// If the key's current value equals `expected` (`None`: the key is absent), store `new`
    /// (without expiry) and reply `Bool(true)`; otherwise `Bool(false)` and no change.
    CompareAndSet {
        key: Vec<u8>,
        expected: Option<Vec<u8>>,
        new: Vec<u8>,
    },
    /// Add `delta` to the decimal integer at `key` (absent counts as 0), keeping its expiry.
    /// Replies `Int(new)`, or `Error` (state unchanged) if the value is not a canonical
    /// decimal `i64` or the sum overflows.
    Increment { key: Vec<u8>, delta: i64 },
    /// Every live key starting with `prefix`, in ascending byte order. Replies `Keys`.
    Keys { prefix: Vec<u8> },
    /// Number of live keys. Replies `Int`.
    DbSize,
}

/// The reply to a [`KvOp`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvResult {
    Value(Option<Vec<u8>>),
    Ok,
    Bool(bool),
    Int(i64),
    /// A Redis-style error text, starting with its code (`ERR`, `WRONGTYPE`).
    Error(String),
    Keys(Vec<Vec<u8>>),
}

/// Why bytes did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    Empty,
    UnknownVersion(u8),
    /// The body is not a postcard encoding of the expected type.
    Malformed,
    /// A valid encoding followed by extra bytes.
    TrailingBytes,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Empty => f.write_str("empty input"),
            DecodeError::UnknownVersion(v) => write!(f, "unknown encoding version {v}"),
            DecodeError::Malformed => f.write_str("malformed body"),
            DecodeError::TrailingBytes => f.write_str("trailing bytes after the body"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Which keys an operation may touch: the request analysis an object-level execution
/// (ZZ, ODRC) needs, with one object per key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Footprint<'a> {
    Keys(Vec<&'a [u8]>),
    /// Every key whose name starts with this prefix (empty: the whole key space).
    Prefix(&'a [u8]),
}

impl KvOp {
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(OP_VERSION, self)
    }

    pub fn decode(bytes: &[u8]) -> Result<KvOp, DecodeError> {
        decode_versioned(OP_VERSION, bytes)
    }

    /// True if the operation can change state, so it must not run on the read-only path.
    pub fn is_mutating(&self) -> bool {
        match self {
            KvOp::Get { .. } | KvOp::Keys { .. } | KvOp::DbSize => false,
            KvOp::Set { .. }
            | KvOp::Delete { .. }
            | KvOp::CompareAndSet { .. }
            | KvOp::Increment { .. } => true,
        }
    }

    pub fn footprint(&self) -> Footprint<'_> {
        match self {
            KvOp::Get { key }
            | KvOp::Set { key, .. }
            | KvOp::Delete { key }
            | KvOp::CompareAndSet { key, .. }
            | KvOp::Increment { key, .. } => Footprint::Keys(vec![key.as_slice()]),
            KvOp::Keys { prefix } => Footprint::Prefix(prefix),
            KvOp::DbSize => Footprint::Prefix(&[]),
        }
    }
}

impl KvResult {
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(RESULT_VERSION, self)
    }

    pub fn decode(bytes: &[u8]) -> Result<KvResult, DecodeError> {
        decode_versioned(RESULT_VERSION, bytes)
    }

    pub fn error(text: &str) -> KvResult {
        KvResult::Error(text.to_string())
    }
}

/// The integer a string value denotes, if it is the canonical decimal form of an `i64`
/// (optional `-`, no `+`, no leading zeros, no `-0`, no spaces), as Redis' `INCR` accepts.
/// Canonical only, so every value has at most one reading and `Increment` round-trips.
pub fn parse_integer(value: &[u8]) -> Option<i64> {
    if value.len() > 20 {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    let n: i64 = text.parse().ok()?;
    (n.to_string().as_bytes() == value).then_some(n)
}

fn encode_versioned<T: Serialize>(version: u8, value: &T) -> Vec<u8> {
    let mut out = vec![version];
    // Serializing these in-memory types cannot fail: every sequence has a known length.
    out.extend_from_slice(&postcard::to_stdvec(value).unwrap_or_default());
    out
}

fn decode_versioned<T: DeserializeOwned>(version: u8, bytes: &[u8]) -> Result<T, DecodeError> {
    let (&found, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
    if found != version {
        return Err(DecodeError::UnknownVersion(found));
    }
    let (value, rest) = postcard::take_from_bytes(body).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok(value)
}
