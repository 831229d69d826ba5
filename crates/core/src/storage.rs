//! Durable storage as stages see it: a small key-value space per stage, written through
//! actions. Drivers keep it durable (checksummed records, fsync on [`StoreOp::Sync`]); the
//! simulator keeps unsynced writes in a volatile buffer that a crash throws away.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp {
    Put {
        key: String,
        value: Vec<u8>,
    },
    Delete {
        key: String,
    },
    /// Delete every key starting with `prefix`.
    DeletePrefix {
        prefix: String,
    },
    /// Make every earlier write durable before any later action is carried out.
    Sync,
}

/// What a stage finds on disk when it restarts.
#[derive(Debug, Clone, Default)]
pub struct Recovered {
    /// Records that passed their checksum.
    pub records: BTreeMap<String, Vec<u8>>,
    /// Keys whose record failed its checksum: the stage must not trust them and must recover
    /// that state from peers.
    pub corrupt: Vec<String>,
}

impl Recovered {
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.corrupt.is_empty()
    }
}

/// Encode a stored value (postcard); decoding failures are treated like checksum failures.
pub fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    plumb_wire::encode::to_vec(v)
}

pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    postcard::from_bytes(bytes).ok()
}
