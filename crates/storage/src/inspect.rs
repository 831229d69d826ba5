//! A read-only view of a log's layout: where each valid record lies. For tools and for the
//! simulator, which damages chosen records on purpose to test what recovery reports. Recovery
//! itself does not use this.

use crate::format::{self, Item, Kind};

/// What a record does (see the crate docs' format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    Put,
    Delete,
    DeletePrefix,
    Sync,
    Corrupt,
}

/// One record whose header and key verify, at `off..off + len` of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    pub off: u64,
    pub len: u64,
    pub kind: RecordKind,
    pub key: String,
    /// File offset of the value and its length.
    pub value_off: u64,
    pub value_len: u64,
    /// The value verifies against its checksum.
    pub value_ok: bool,
}

/// The file header's length: records start after it.
pub const FILE_HEADER_LEN: u64 = format::FILE_HEADER_LEN as u64;
/// A record header's length: the key starts after it.
pub const RECORD_HEADER_LEN: u64 = format::REC_HEADER_LEN as u64;

/// The valid records of a whole log file, in file order (damaged spans are skipped), or
/// `None` if its file header does not verify.
pub fn records(log: &[u8]) -> Option<Vec<RecordInfo>> {
    let salt = format::decode_file_header(log).ok()?;
    let out = format::scan(log, salt)
        .into_iter()
        .filter_map(|item| match item {
            Item::Rec {
                off,
                kind,
                key,
                value,
                value_ok,
            } => {
                let value_off = off + format::REC_HEADER_LEN + key.len();
                Some(RecordInfo {
                    off: off as u64,
                    len: (value_off + value.len() - off) as u64,
                    kind: match kind {
                        Kind::Put => RecordKind::Put,
                        Kind::Delete => RecordKind::Delete,
                        Kind::DeletePrefix => RecordKind::DeletePrefix,
                        Kind::Sync => RecordKind::Sync,
                        Kind::Corrupt => RecordKind::Corrupt,
                    },
                    key: key.to_owned(),
                    value_off: value_off as u64,
                    value_len: value.len() as u64,
                    value_ok,
                })
            }
            Item::Damaged { .. } => None,
        })
        .collect();
    Some(out)
}

/// End of the durable part of a log: the end of its last valid Sync record (the file header's
/// end if it has none). Damage before it is reported at recovery; damage after it is a torn
/// tail.
pub fn durable_end(records: &[RecordInfo]) -> u64 {
    records
        .iter()
        .rev()
        .find(|r| r.kind == RecordKind::Sync)
        .map_or(FILE_HEADER_LEN, |r| r.off + r.len)
}
