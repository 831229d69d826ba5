//! The on-disk format: file header, record framing, scanning with resynchronisation, and the
//! replay rules that turn a scanned log into live records. Pure functions over byte slices, so
//! every rule is testable without a file system. See the crate documentation for the layout.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// First eight bytes of every log file.
pub(crate) const FILE_MAGIC: &[u8; 8] = b"PLUMBLOG";
/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Length of the file header: magic, version, salt, header checksum.
pub(crate) const FILE_HEADER_LEN: usize = 20;

/// First four bytes of every record.
pub(crate) const REC_MAGIC: [u8; 4] = [0xB7, b'p', b'l', b'R'];
/// Length of the fixed record header.
pub(crate) const REC_HEADER_LEN: usize = 28;

/// Longest key (or prefix) a record may carry.
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// Largest record (header + key + value) the store writes or believes when reading.
pub const MAX_RECORD_LEN: u64 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Put = 1,
    Delete = 2,
    DeletePrefix = 3,
    /// Sync point: every record before it was durable when the writer went on.
    Sync = 4,
    /// Written by compaction for a key whose record was corrupt and not yet overwritten, so
    /// the corruption is still reported after the damaged record is gone.
    Corrupt = 5,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Put,
            2 => Kind::Delete,
            3 => Kind::DeletePrefix,
            4 => Kind::Sync,
            5 => Kind::Corrupt,
            _ => return None,
        })
    }
}

/// CRC32C seeded with the file's salt.
pub(crate) fn crc(salt: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(salt, data)
}

fn u32_at(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(b)
}

pub(crate) fn encode_file_header(salt: u32) -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[0..8].copy_from_slice(FILE_MAGIC);
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&salt.to_le_bytes());
    let c = crc32c::crc32c(&h[0..16]);
    h[16..20].copy_from_slice(&c.to_le_bytes());
    h
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FileHeaderError {
    /// Too short or wrong magic: not a plumb log.
    NotALog,
    /// Magic right, checksum wrong.
    Damaged,
    /// Checksum right, version unknown.
    Version(u32),
}

/// Check the file header; on success returns the file's salt.
pub(crate) fn decode_file_header(buf: &[u8]) -> Result<u32, FileHeaderError> {
    if buf.len() < FILE_HEADER_LEN || &buf[0..8] != FILE_MAGIC {
        return Err(FileHeaderError::NotALog);
    }
    if crc32c::crc32c(&buf[0..16]) != u32_at(buf, 16) {
        return Err(FileHeaderError::Damaged);
    }
    let version = u32_at(buf, 8);
    if version != FORMAT_VERSION {
        return Err(FileHeaderError::Version(version));
    }
    Ok(u32_at(buf, 12))
}

/// Size on disk of a record with this key and value.
pub(crate) fn record_len(key_len: usize, value_len: usize) -> u64 {
    (REC_HEADER_LEN + key_len) as u64 + value_len as u64
}

/// Append a record header and its key to `out`; the caller appends the `value` bytes right
/// after (they are only needed here for their length and checksum).
pub(crate) fn encode_head(out: &mut Vec<u8>, salt: u32, kind: Kind, key: &[u8], value: &[u8]) {
    debug_assert!(key.len() <= MAX_KEY_LEN);
    debug_assert!(record_len(key.len(), value.len()) <= MAX_RECORD_LEN);
    let start = out.len();
    out.extend_from_slice(&REC_MAGIC);
    out.extend_from_slice(&[kind as u8, 0, 0, 0]);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc(salt, key).to_le_bytes());
    out.extend_from_slice(&crc(salt, value).to_le_bytes());
    let head_crc = crc(salt, &out[start..start + 24]);
    out.extend_from_slice(&head_crc.to_le_bytes());
    out.extend_from_slice(key);
}

/// A record header whose checksum and key checksum verified and whose lengths fit the file.
struct Head<'a> {
    kind: Kind,
    key: &'a str,
    value_start: usize,
    end: usize,
    value_crc: u32,
}

/// Check a 28-byte record header on its own: magic, reserved bytes, header checksum, kind, and
/// lengths within the limits. Returns the kind, key length and value length.
fn check_fields(h: &[u8], salt: u32) -> Option<(Kind, usize, usize)> {
    if h.len() != REC_HEADER_LEN || h[0..4] != REC_MAGIC || h[5..8] != [0, 0, 0] {
        return None;
    }
    if crc(salt, &h[0..24]) != u32_at(h, 24) {
        return None;
    }
    let kind = Kind::from_u8(h[4])?;
    let key_len = u32_at(h, 8) as usize;
    let value_len = u32_at(h, 12) as usize;
    if key_len > MAX_KEY_LEN || record_len(key_len, value_len) > MAX_RECORD_LEN {
        return None;
    }
    if (kind == Kind::Sync && key_len != 0) || (kind != Kind::Put && value_len != 0) {
        return None;
    }
    Some((kind, key_len, value_len))
}

/// Parse the record header at `pos`. `None` unless the magic, the header checksum, the lengths
/// (against `buf` and the limits), the kind, the key checksum and the key's UTF-8 all check
/// out. Costs O(header) before the header checksum passes, so scanning garbage is linear.
fn parse_head(buf: &[u8], pos: usize, salt: u32) -> Option<Head<'_>> {
    let h = buf.get(pos..pos.checked_add(REC_HEADER_LEN)?)?;
    let (kind, key_len, value_len) = check_fields(h, salt)?;
    let key_start = pos + REC_HEADER_LEN;
    let value_start = key_start + key_len;
    let end = value_start.checked_add(value_len)?;
    if end > buf.len() {
        return None;
    }
    let key = &buf[key_start..value_start];
    if crc(salt, key) != u32_at(h, 16) {
        return None;
    }
    let key = std::str::from_utf8(key).ok()?;
    Some(Head {
        kind,
        key,
        value_start,
        end,
        value_crc: u32_at(h, 20),
    })
}

/// Longest key whose single-bit damage [`repair`] tries to undo.
const MAX_REPAIR_KEY: usize = 1024;

/// A damaged span in the durable part of the log may be exactly one record with one flipped
/// bit in its header or in its key. Find which record it was: flip each bit of the header (or,
/// if the header verifies, of a short key) until header and key verify and the record ends
/// exactly where the span ends. Returns the record's kind and key; its value is not trusted.
fn repair(span: &[u8], salt: u32) -> Option<(Kind, String)> {
    let mut head = [0u8; REC_HEADER_LEN];
    head.copy_from_slice(span.get(..REC_HEADER_LEN)?);
    let fits = |h: &[u8]| {
        let (kind, key_len, value_len) = check_fields(h, salt)?;
        (record_len(key_len, value_len) == span.len() as u64).then_some((kind, key_len))
    };
    let mut found = fits(&head);
    let head_repaired = found.is_none();
    if head_repaired {
        'search: for byte in 0..REC_HEADER_LEN {
            for bit in 0..8 {
                head[byte] ^= 1 << bit;
                found = fits(&head);
                if found.is_some() {
                    break 'search;
                }
                head[byte] ^= 1 << bit;
            }
        }
    }
    let (kind, key_len) = found?;
    let key_crc = u32_at(&head, 16);
    let mut key = span[REC_HEADER_LEN..REC_HEADER_LEN + key_len].to_vec();
    if crc(salt, &key) != key_crc {
        // One flipped bit is all that is undone: not the header and the key both.
        if head_repaired || key_len > MAX_REPAIR_KEY {
            return None;
        }
        let mut ok = false;
        'key: for byte in 0..key_len {
            for bit in 0..8 {
                key[byte] ^= 1 << bit;
                if crc(salt, &key) == key_crc {
                    ok = true;
                    break 'key;
                }
                key[byte] ^= 1 << bit;
            }
        }
        if !ok {
            return None;
        }
    }
    Some((kind, String::from_utf8(key).ok()?))
}

/// One element of a scanned log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// A record whose header and key verified; `value_ok` says whether the value did.
    Rec {
        off: usize,
        kind: Kind,
        key: &'a str,
        value: &'a [u8],
        value_ok: bool,
    },
    /// Bytes in which no valid record header starts, up to the next one (or the end).
    Damaged { start: usize, end: usize },
}

/// First offset at or after `from` where a valid record header starts.
fn find_next(buf: &[u8], from: usize, salt: u32) -> Option<usize> {
    let mut i = from;
    while i + REC_HEADER_LEN <= buf.len() {
        i += buf[i..].iter().position(|&b| b == REC_MAGIC[0])?;
        if parse_head(buf, i, salt).is_some() {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Split the records part of a log (everything after the file header) into records and
/// damaged spans.
pub(crate) fn scan(buf: &[u8], salt: u32) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut pos = FILE_HEADER_LEN.min(buf.len());
    while pos < buf.len() {
        match parse_head(buf, pos, salt) {
            Some(h) => {
                let value = &buf[h.value_start..h.end];
                items.push(Item::Rec {
                    off: pos,
                    kind: h.kind,
                    key: h.key,
                    value,
                    value_ok: crc(salt, value) == h.value_crc,
                });
                pos = h.end;
            }
            None => {
                let next = find_next(buf, pos + 1, salt).unwrap_or(buf.len());
                items.push(Item::Damaged {
                    start: pos,
                    end: next,
                });
                pos = next;
            }
        }
    }
    items
}

/// The live state a log describes.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    pub records: BTreeMap<String, Vec<u8>>,
    /// Keys whose latest record is corrupt.
    pub corrupt: BTreeSet<String>,
    /// File offsets of damaged spans before the last sync point.
    pub damaged_spans: Vec<u64>,
    /// Length of the log that is kept; everything after it is a torn tail.
    pub valid_len: u64,
    /// The log is kept whole and ends with a sync record: nothing in it follows the last
    /// sync point.
    pub ends_synced: bool,
    /// Damaged spans identified as one record with one flipped bit (its key is reported
    /// corrupt instead of the span).
    pub repaired: u64,
    /// Offsets, inside damaged spans that are kept, of record headers that verify but whose
    /// record would end beyond `valid_len`. Only the file's end makes them damage: once
    /// anything is appended they may become records that swallow what follows them, and a
    /// later replay would disagree with this one. See [`neutralize`].
    pub unstable_heads: Vec<usize>,
}

/// Remove every key starting with `prefix` from `map`; returns the removed entries.
pub(crate) fn remove_prefix<V>(map: &mut BTreeMap<String, V>, prefix: &str) -> Vec<(String, V)> {
    let keys: Vec<String> = map
        .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, _)| k.clone())
        .collect();
    keys.into_iter()
        .filter_map(|k| map.remove_entry(&k))
        .collect()
}

pub(crate) fn remove_prefix_keys(set: &mut BTreeSet<String>, prefix: &str) -> Vec<String> {
    let keys: Vec<String> = set
        .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .take_while(|k| k.starts_with(prefix))
        .cloned()
        .collect();
    for k in &keys {
        set.remove(k);
    }
    keys
}

/// Replay a whole log file (header included; its salt is `salt`).
///
/// Items up to the last valid sync record were durable: a record with a bad value there marks
/// its key corrupt, a damaged span is reported by offset, and replay goes on. After the last
/// sync record the writes were never promised: the first failure there is a torn tail and
/// replay stops at it, so what survives is always a prefix of the writes.
pub(crate) fn replay(buf: &[u8], salt: u32) -> Replay {
    let items = scan(buf, salt);
    let last_sync = items.iter().rposition(|it| {
        matches!(
            it,
            Item::Rec {
                kind: Kind::Sync,
                ..
            }
        )
    });
    let mut r = Replay {
        valid_len: buf.len() as u64,
        ..Replay::default()
    };
    let mut kept_spans = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let synced = last_sync.is_some_and(|s| i < s);
        match *item {
            Item::Rec {
                off,
                kind,
                key,
                value,
                value_ok,
            } => {
                if !value_ok {
                    if !synced {
                        r.valid_len = off as u64;
                        break;
                    }
                    r.records.remove(key);
                    r.corrupt.insert(key.to_owned());
                    continue;
                }
                match kind {
                    Kind::Put => {
                        r.corrupt.remove(key);
                        r.records.insert(key.to_owned(), value.to_vec());
                    }
                    Kind::Delete => {
                        r.corrupt.remove(key);
                        r.records.remove(key);
                    }
                    Kind::DeletePrefix => {
                        remove_prefix_keys(&mut r.corrupt, key);
                        remove_prefix(&mut r.records, key);
                    }
                    Kind::Corrupt => {
                        r.records.remove(key);
                        r.corrupt.insert(key.to_owned());
                    }
                    Kind::Sync => {}
                }
            }
            Item::Damaged { start, end } => {
                if !synced {
                    r.valid_len = start as u64;
                    break;
                }
                kept_spans.push((start, end));
                match repair(&buf[start..end], salt) {
                    // A lost sync point changes nothing.
                    Some((Kind::Sync, _)) => r.repaired += 1,
                    // A lost deletion would bring old values back: distrust them all.
                    Some((Kind::DeletePrefix, prefix)) => {
                        r.repaired += 1;
                        for (k, _) in remove_prefix(&mut r.records, &prefix) {
                            r.corrupt.insert(k);
                        }
                    }
                    Some((_, key)) => {
                        r.repaired += 1;
                        r.records.remove(&key);
                        r.corrupt.insert(key);
                    }
                    None => r.damaged_spans.push(start as u64),
                }
            }
        }
    }
    r.unstable_heads = unstable_heads(buf, salt, &kept_spans, r.valid_len);
    r.ends_synced = r.valid_len == buf.len() as u64
        && matches!(
            items.last(),
            Some(Item::Rec {
                kind: Kind::Sync,
                ..
            })
        );
    r
}

/// Record headers in the damaged spans `spans` that verify on their own but whose record
/// would end beyond `valid_len` (see [`Replay::unstable_heads`]). Every other position in a
/// damaged span failed to parse for reasons that appending to the file cannot change.
fn unstable_heads(buf: &[u8], salt: u32, spans: &[(usize, usize)], valid_len: u64) -> Vec<usize> {
    let mut out = Vec::new();
    for &(start, end) in spans {
        let mut i = start;
        while i < end {
            let Some(step) = buf[i..end].iter().position(|&b| b == REC_MAGIC[0]) else {
                break;
            };
            i += step;
            if let Some((_, key_len, value_len)) = buf
                .get(i..i + REC_HEADER_LEN)
                .and_then(|h| check_fields(h, salt))
            {
                if i as u64 + record_len(key_len, value_len) > valid_len {
                    out.push(i);
                }
            }
            i += 1;
        }
    }
    out
}

/// Break the magic of each of `heads` (see [`Replay::unstable_heads`]) in `buf`, the part of
/// a log that is kept, so that no later append can turn them into records. They lie inside
/// damaged spans and are not records now, so what `buf` replays to is unchanged; returns
/// `false` (and leaves `buf` as it may be) if it would change after all.
pub(crate) fn neutralize(buf: &mut [u8], salt: u32, heads: &[usize], before: &Replay) -> bool {
    for &h in heads {
        buf[h..h + REC_MAGIC.len()].fill(0);
    }
    let after = replay(buf, salt);
    after.unstable_heads.is_empty()
        && after.valid_len == buf.len() as u64
        && after.records == before.records
        && after.corrupt == before.corrupt
        && after.damaged_spans == before.damaged_spans
        && after.repaired == before.repaired
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALT: u32 = 0x1234_5678;

    fn rec(out: &mut Vec<u8>, kind: Kind, key: &str, value: &[u8]) -> usize {
        let off = out.len();
        encode_head(out, SALT, kind, key.as_bytes(), value);
        out.extend_from_slice(value);
        off
    }

    fn file() -> Vec<u8> {
        encode_file_header(SALT).to_vec()
    }

    #[test]
    fn header_round_trip_and_errors() {
        let h = encode_file_header(7);
        assert_eq!(decode_file_header(&h), Ok(7));
        assert_eq!(decode_file_header(&h[..10]), Err(FileHeaderError::NotALog));
        let mut bad = h;
        bad[13] ^= 1;
        assert_eq!(decode_file_header(&bad), Err(FileHeaderError::Damaged));
        let mut v2 = h;
        v2[8] = 2;
        let c = crc32c::crc32c(&v2[0..16]);
        v2[16..20].copy_from_slice(&c.to_le_bytes());
        assert_eq!(decode_file_header(&v2), Err(FileHeaderError::Version(2)));
    }

    #[test]
    fn scan_resyncs_after_damaged_header() {
        let mut f = file();
        rec(&mut f, Kind::Put, "a", b"1");
        let b = rec(&mut f, Kind::Put, "b", b"22");
        let c = rec(&mut f, Kind::Put, "c", b"333");
        rec(&mut f, Kind::Sync, "", b"");
        f[b + 9] ^= 0x10; // key length
        let items = scan(&f, SALT);
        assert_eq!(items.len(), 4);
        assert_eq!(items[1], Item::Damaged { start: b, end: c });
        // One flipped bit: the record is identified and its key reported corrupt.
        let r = replay(&f, SALT);
        assert_eq!(r.repaired, 1);
        assert!(r.damaged_spans.is_empty());
        assert_eq!(r.corrupt.iter().collect::<Vec<_>>(), ["b"]);
        assert_eq!(r.records.keys().collect::<Vec<_>>(), ["a", "c"]);
        // More damage: only the span can be reported.
        f[b + 13] ^= 0x01;
        f[b + 2] ^= 0x40;
        let r = replay(&f, SALT);
        assert_eq!(r.repaired, 0);
        assert_eq!(r.damaged_spans, vec![b as u64]);
        assert!(r.corrupt.is_empty());
        assert_eq!(r.records.keys().collect::<Vec<_>>(), ["a", "c"]);
    }

    #[test]
    fn repair_finds_flipped_key_bits_and_lost_deletions() {
        let mut f = file();
        rec(&mut f, Kind::Put, "p/a", b"1");
        rec(&mut f, Kind::Put, "p/b", b"1");
        rec(&mut f, Kind::Put, "q", b"1");
        // Damaged records are kept apart by intact ones: adjacent damage is one span.
        let del = rec(&mut f, Kind::DeletePrefix, "p/", b"");
        rec(&mut f, Kind::Put, "r", b"1");
        let d = rec(&mut f, Kind::Delete, "q", b"");
        rec(&mut f, Kind::Put, "r", b"2");
        let s = rec(&mut f, Kind::Sync, "", b"");
        rec(&mut f, Kind::Sync, "", b"");
        f[del + REC_HEADER_LEN] ^= 0x80; // in the prefix
        f[d + 4] ^= 0x02; // the kind
        f[s + 20] ^= 0x01; // a sync record's checksum field
        let r = replay(&f, SALT);
        assert_eq!(r.repaired, 3);
        assert!(r.damaged_spans.is_empty());
        assert_eq!(r.records.keys().collect::<Vec<_>>(), ["r"]);
        assert_eq!(r.corrupt.iter().collect::<Vec<_>>(), ["p/a", "p/b", "q"]);
    }

    #[test]
    fn wrong_salt_reads_nothing_as_valid() {
        let mut f = file();
        rec(&mut f, Kind::Put, "a", b"1");
        let items = scan(&f, SALT ^ 1);
        assert!(matches!(items[..], [Item::Damaged { .. }]));
    }

    #[test]
    fn failure_after_last_sync_is_a_torn_tail() {
        let mut f = file();
        rec(&mut f, Kind::Put, "a", b"1");
        rec(&mut f, Kind::Sync, "", b"");
        let b = rec(&mut f, Kind::Put, "b", b"22");
        rec(&mut f, Kind::Put, "c", b"333");
        f[b + REC_HEADER_LEN + 1] ^= 1; // b's value
        let r = replay(&f, SALT);
        assert_eq!(r.valid_len, b as u64);
        assert!(r.corrupt.is_empty());
        assert_eq!(r.records.keys().collect::<Vec<_>>(), ["a"]);
        // The same damage before a later sync point is corruption, not a tail.
        rec(&mut f, Kind::Sync, "", b"");
        let r = replay(&f, SALT);
        assert_eq!(r.valid_len, f.len() as u64);
        assert_eq!(r.corrupt.iter().collect::<Vec<_>>(), ["b"]);
        assert_eq!(r.records.keys().collect::<Vec<_>>(), ["a", "c"]);
    }

    #[test]
    fn corruption_is_cleared_by_later_writes() {
        let mut f = file();
        let a = rec(&mut f, Kind::Put, "x/a", b"old");
        let b = rec(&mut f, Kind::Put, "x/b", b"old");
        let c = rec(&mut f, Kind::Put, "y", b"old");
        rec(&mut f, Kind::Put, "x/a", b"new");
        rec(&mut f, Kind::Sync, "", b"");
        for (off, key_len) in [(a, 3), (b, 3), (c, 1)] {
            f[off + REC_HEADER_LEN + key_len + 1] ^= 4; // inside the value
        }
        let r = replay(&f, SALT);
        assert_eq!(r.records.get("x/a").map(Vec::as_slice), Some(&b"new"[..]));
        assert_eq!(r.corrupt.iter().collect::<Vec<_>>(), ["x/b", "y"]);
        rec(&mut f, Kind::DeletePrefix, "x/", b"");
        rec(&mut f, Kind::Delete, "y", b"");
        rec(&mut f, Kind::Sync, "", b"");
        let r = replay(&f, SALT);
        assert!(r.corrupt.is_empty());
        assert!(r.records.is_empty());
    }

    #[test]
    fn headers_that_only_the_file_end_breaks_are_neutralized() {
        let mut f = file();
        rec(&mut f, Kind::Put, "a", b"1");
        rec(&mut f, Kind::Sync, "", b"");
        // A verified header whose value runs past the end, then records (copied from
        // elsewhere, say) that resynchronisation finds, then a sync point.
        let mut long = file();
        let x = rec(&mut long, Kind::Put, "x", &[7; 200]);
        let x_at = f.len();
        f.extend_from_slice(&long[x..x + 60]);
        rec(&mut f, Kind::Put, "b", b"2");
        rec(&mut f, Kind::Sync, "", b"");
        let r = replay(&f, SALT);
        assert_eq!(r.unstable_heads, vec![x_at]);
        assert_eq!(r.damaged_spans, vec![x_at as u64]);
        assert_eq!(r.records.keys().collect::<Vec<_>>(), ["a", "b"]);
        // Appending lets the header's record fit: it swallows what followed it.
        let mut grown = f.clone();
        while grown.len() < x_at + 229 {
            rec(&mut grown, Kind::Sync, "", b"");
        }
        assert_eq!(
            replay(&grown, SALT).records.keys().collect::<Vec<_>>(),
            ["a"]
        );
        // Neutralized, the log replays as before, and still after growing.
        assert!(neutralize(&mut f, SALT, &r.unstable_heads, &r));
        while f.len() < x_at + 229 {
            rec(&mut f, Kind::Sync, "", b"");
        }
        let again = replay(&f, SALT);
        assert_eq!(again.records, r.records);
        assert_eq!(again.damaged_spans, r.damaged_spans);
        assert!(again.unstable_heads.is_empty());
    }

    #[test]
    fn lengths_beyond_the_file_are_not_believed() {
        let mut f = file();
        let a = rec(&mut f, Kind::Put, "a", b"1");
        // Claim a 1 GiB value with a valid header checksum: it does not fit the file.
        let mut h = Vec::new();
        encode_head(&mut h, SALT, Kind::Put, b"a", b"");
        h[12..16].copy_from_slice(&((1u32 << 30) - 64).to_le_bytes());
        let c = crc(SALT, &h[0..24]);
        h[24..28].copy_from_slice(&c.to_le_bytes());
        f.truncate(a);
        f.extend_from_slice(&h);
        let r = replay(&f, SALT);
        assert_eq!(r.valid_len, a as u64);
        assert!(r.records.is_empty());
    }
}
