//! Durable stage records: the production driver's implementation of [`StoreOp`].
//!
//! A stage's durable state is a small key-value space written through
//! `Action::Store(Put | Delete | DeletePrefix | Sync)`. [`Store`] keeps it in one append-only,
//! checksummed log per directory, makes it durable on [`StoreOp::Sync`], compacts it when it
//! is mostly dead records, and on [`Store::open`] rebuilds [`Recovered`]: the records whose
//! checksums verified and the keys whose records did not.
//!
//! # File systems
//!
//! A store does all its I/O through the [`Fs`] trait. Production uses [`RealFs`] (`std::fs`,
//! the default type parameter: `Store::open(dir)`); the simulator and the crash tests use
//! [`SimFs`], an in-memory disk that tears unsynced writes and loses unsynced directory
//! changes at a simulated power loss. The format and the rules below are the same on both.
//!
//! # Files
//!
//! In the store directory: `LOCK` (held with an exclusive file lock while a [`Store`] is
//! open, so two processes never write one store), `log` (the log), and transiently
//! `log.compact` (a compaction or creation in progress; deleted by `open`).
//!
//! # On-disk format (version 1)
//!
//! All integers little-endian. `crc(x)` is CRC32C of `x` seeded with the file's salt.
//!
//! ```text
//! file header, 20 bytes: "PLUMBLOG" | version u32 (= 1) | salt u32 | CRC32C(bytes 0..16)
//! then records, back to back, each a 28-byte header, the key, the value:
//!   0..4   magic B7 70 6C 52
//!   4      kind: 1 Put, 2 Delete, 3 DeletePrefix (key = prefix), 4 Sync, 5 Corrupt
//!   5..8   zero
//!   8..12  key length (at most 64 KiB; UTF-8; empty for Sync)
//!   12..16 value length (0 unless Put; a whole record is at most 1 GiB)
//!   16..20 crc(key)
//!   20..24 crc(value)
//!   24..28 crc(bytes 0..24)
//! ```
//!
//! The header and key are checked apart from the value, so a damaged value still names its key.
//! The salt is random per file: bytes inside a stored value (which may come from a hostile
//! client) cannot pose as a record when recovery resynchronises after damage, and records of
//! an older file generation never verify in a newer one. `Sync` records mark sync points.
//! `Corrupt` records are written only by compaction, to keep reporting a key whose record was
//! corrupt and has not been overwritten since.
//!
//! # Recovery rules (`open`)
//!
//! * A file header with the wrong magic, a failing checksum or an unknown version is an error
//!   naming the file — never an empty store: a replica must not silently restart from nothing.
//! * The log is split into records (header, header checksum and key checksum valid, lengths
//!   within the file and the limits) and damaged spans (from a byte where no valid record
//!   starts up to the next valid record header, found by scanning for the magic and checking
//!   the header checksum). Lengths are only believed after the header checksum passes and
//!   never beyond the file, so damage cannot cause a large allocation or a panic.
//! * Up to the **last valid Sync record**, writes were durable. There a record whose value fails
//!   its checksum puts its key in [`Recovered::corrupt`] (and drops any earlier value of it),
//!   and replay continues. A damaged span there is first tried as *one record with one flipped
//!   bit* in its header or (short) key: if flipping a single bit makes header and key verify and
//!   the record end exactly where the span ends, its key is reported corrupt (for a
//!   DeletePrefix, every key it would have deleted; a Sync record needs nothing). Otherwise the
//!   span is reported as the key `"?corrupt@<file offset>"` (stages ignore keys they do not
//!   know). Either way replay continues after it.
//! * After the last Sync record nothing was promised: the first failure there is a **torn
//!   tail**; it and everything after it are truncated away (counted in
//!   [`StoreStats::torn_tail_bytes`]). What survives is therefore always a prefix of the writes.
//! * Records replay in order: a later valid Put or Delete of a key, or a DeletePrefix covering
//!   it, replaces an earlier value and clears an earlier corruption of it.
//! * A leftover `log.compact` is deleted.
//!
//! Limitation: an unidentifiable damaged span hides which keys it wrote. If it held an
//! overwrite or a deletion, the key's *previous* value is recovered as if valid; only the
//! `?corrupt@` entry tells that something was lost.
//!
//! Limitation: damage that spans the last sync record and the record before it looks exactly
//! like a Sync that a crash cut short (both torn), so it is truncated as a torn tail and that
//! last synced write is lost without a report. One flipped bit is always caught; this needs
//! damage to both of the last two records of the log.
//!
//! `?corrupt@` reports come from the damaged bytes themselves, so they repeat at every open
//! until a compaction rewrites the log without them; corrupt *keys* are carried across
//! compactions until the stage overwrites or deletes them.
//!
//! # Durability contract
//!
//! * `Put`, `Delete`, `DeletePrefix` are applied to the in-memory state at once and appended to
//!   a write buffer, written to the file when it fills; none is durable yet.
//! * `Sync` appends a Sync record, writes the buffer and calls `fdatasync`
//!   ([`FsFile::sync_data`]); when it returns, every earlier op is on stable storage. A Sync with
//!   no write since the previous one does nothing.
//! * A crash loses at most the writes after the last completed Sync, and always a suffix of
//!   them. `open` syncs the log before returning, so everything it recovers is durable even if
//!   it was only in the page cache after a process crash. A process crash (kill -9) loses only the unwritten buffer; dropping a [`Store`]
//!   writes the buffer (without syncing).
//! * A store directory `open` creates is fsynced into its parent.
//! * New files (creation and compaction) are written under a temporary name, `fdatasync`ed,
//!   renamed over `log`, and the directory is fsynced before the store goes on, so a crash at
//!   any point leaves either the complete old log or the complete new one.
//! * Compaction starts, after a write, when the log is at least
//!   [`StoreOptions::compact_threshold`] bytes and more than twice the live bytes, and runs a
//!   step at a time beside the store (see `compaction.rs` for why its new log replays to the
//!   live state): each later op copies twice its own size of live state, each `Sync` copies
//!   [`StoreOptions::compact_step`] bytes. The first `Sync` after the copy is complete syncs
//!   and renames the new log instead of syncing the old one, so it makes every earlier op
//!   durable as any `Sync` does. The replaced log is closed through [`Fs::retire`].
//! * After any I/O error the store is poisoned and refuses every later op: after a failed
//!   `fdatasync` the kernel may have dropped the dirty pages, so the only safe way on is to
//!   reopen, which re-reads what really is on disk.
//! * If a crash interrupts a Sync (before `fdatasync` returned) and the device persisted pages
//!   out of order, an unsynced record may read as damaged in front of the now-valid Sync
//!   record; it is then reported as corrupt, which makes the stage recover it from peers.

mod compaction;
mod format;
mod fs;
pub mod inspect;
mod sim_fs;
mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use compaction::Compaction;
use format::{record_len, Kind};
pub use format::{FORMAT_VERSION, MAX_KEY_LEN, MAX_RECORD_LEN};
pub use fs::{Fs, FsFile, RealFs};
pub use plumb_core::{Recovered, StoreOp};
pub use sim_fs::{SimFile, SimFs, SimLock, SECTOR};
use writer::LogWriter;

/// Name of the log file inside the store directory.
pub const LOG_FILE: &str = "log";
/// Name of a log being written by creation or compaction.
pub const TEMP_FILE: &str = "log.compact";
/// Name of the lock file.
pub const LOCK_FILE: &str = "LOCK";

/// Tuning knobs; [`Default`] is what production uses.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Compact once the log is at least this many bytes and more than twice the live bytes.
    pub compact_threshold: u64,
    /// Bytes of live state a compaction copies at each `Sync` (it also copies twice what each
    /// other op appends).
    pub compact_step: u64,
    /// Write the append buffer to the file once it holds this many bytes.
    pub write_buffer: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            compact_threshold: 64 << 20,
            compact_step: 1 << 20,
            write_buffer: 256 << 10,
        }
    }
}

/// Counters for operators and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// `fdatasync`s done for `Sync` ops (Syncs with nothing to sync are not counted), and by
    /// `open` when the log it found did not end at a sync point.
    pub syncs: u64,
    /// Total time spent writing and syncing in `Sync`.
    pub sync_time: Duration,
    /// Duration of the latest sync.
    pub last_sync: Duration,
    /// Longest sync.
    pub max_sync: Duration,
    /// Current log length, buffered bytes included.
    pub log_bytes: u64,
    /// Log length known to be on stable storage.
    pub synced_bytes: u64,
    /// Live records in memory.
    pub live_records: u64,
    /// What the live records (and corrupt-key markers) take in the log.
    pub live_bytes: u64,
    /// Keys currently known corrupt.
    pub corrupt_keys: u64,
    /// Bytes appended since open (compaction output not included).
    pub bytes_appended: u64,
    /// Compactions finished since open.
    pub compactions: u64,
    /// Total time spent compacting.
    pub compaction_time: Duration,
    /// Longest time one op spent on compaction (its share of the copy, or the finish).
    pub max_compaction_step: Duration,
    /// Length of the new log of a compaction under way (0 if none).
    pub compacting_bytes: u64,
    /// Records recovered at open.
    pub recovered_records: u64,
    /// Entries of [`Recovered::corrupt`] at open (keys and damaged spans).
    pub recovered_corrupt: u64,
    /// Damaged spans (unreadable record headers) found at open.
    pub corrupt_spans: u64,
    /// Damaged spans found at open that were one record with one flipped bit in its header or
    /// key: reported by key (as corrupt), not as a span.
    pub repaired_records: u64,
    /// Bytes of torn tail truncated at open.
    pub torn_tail_bytes: u64,
}

/// Why a store operation failed. Every message names the file or directory concerned.
#[derive(Debug)]
pub enum StoreError {
    /// An I/O operation (`op`, e.g. "fdatasync") on `path` failed.
    Io {
        path: PathBuf,
        op: &'static str,
        source: io::Error,
    },
    /// Another [`Store`] (in this or another process) holds the directory's lock.
    Locked { dir: PathBuf },
    /// The file does not start with a plumb log header.
    NotALog { path: PathBuf },
    /// The file header's checksum fails.
    DamagedHeader { path: PathBuf },
    /// The file was written in a format version this build does not know.
    UnknownVersion { path: PathBuf, version: u32 },
    /// A key or record is over the limits ([`MAX_KEY_LEN`], [`MAX_RECORD_LEN`]); nothing was
    /// written.
    TooLarge { key: String, len: u64 },
    /// An earlier I/O error left the store unusable; reopen it.
    Poisoned { path: PathBuf },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Io { path, op, source } => {
                write!(f, "storage: {op} {} failed: {source}", path.display())
            }
            StoreError::Locked { dir } => write!(
                f,
                "storage: directory {} is locked by another open store (is another node running on it?)",
                dir.display()
            ),
            StoreError::NotALog { path } => write!(
                f,
                "storage: {} is not a plumb storage log (too short or wrong magic)",
                path.display()
            ),
            StoreError::DamagedHeader { path } => write!(
                f,
                "storage: the file header of {} fails its checksum; refusing to guess its format",
                path.display()
            ),
            StoreError::UnknownVersion { path, version } => write!(
                f,
                "storage: {} has format version {version}, this build reads version {FORMAT_VERSION}",
                path.display()
            ),
            StoreError::TooLarge { key, len } => {
                let shown: String = key.chars().take(64).collect();
                write!(
                    f,
                    "storage: record for key {shown:?} is too large ({len} bytes; keys at most {MAX_KEY_LEN} bytes, records at most {MAX_RECORD_LEN})"
                )
            }
            StoreError::Poisoned { path } => write!(
                f,
                "storage: an earlier write or sync of {} failed; the store must be reopened",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

fn sync_dir<F: Fs>(fs: &F, dir: &Path) -> Result<(), StoreError> {
    fs.sync_dir(dir).map_err(io_err(dir, "fsync directory"))
}

/// Create `dir` and its missing ancestors, fsyncing the parent of each one created so the new
/// directory entries survive power loss.
fn create_dir_durable<F: Fs>(fs: &F, dir: &Path) -> Result<(), StoreError> {
    if fs.is_dir(dir) {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        create_dir_durable(fs, parent)?;
    }
    match fs.create_dir(dir) {
        Ok(()) => sync_dir(fs, parent.unwrap_or(Path::new("."))),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_err(dir, "create directory")(e)),
    }
}

/// Replace the log by a file holding exactly `bytes` (same salt): written under
/// [`TEMP_FILE`], `fdatasync`ed, renamed over the log, directory fsynced, so a crash leaves
/// the old log or the new one. Returns the new log, positioned at its end.
fn rewrite_log<F: Fs>(fs: &F, dir: &Path, bytes: &[u8]) -> Result<F::File, StoreError> {
    let tmp = dir.join(TEMP_FILE);
    let mut file = fs.create(&tmp).map_err(io_err(&tmp, "create"))?;
    file.write_all(bytes).map_err(io_err(&tmp, "write"))?;
    file.sync_data().map_err(io_err(&tmp, "fdatasync"))?;
    fs.rename(&tmp, &dir.join(LOG_FILE))
        .map_err(io_err(&tmp, "rename to log"))?;
    sync_dir(fs, dir)?;
    Ok(file)
}

/// Log bytes a live record takes.
fn live_len(key: &str, value: &[u8]) -> u64 {
    record_len(key.len(), value.len())
}

/// A stage's durable key-value space in one directory. See the crate docs for the format, the
/// recovery rules and the durability contract.
///
/// `F` is the file system it lives on: real files ([`RealFs`], the default and what
/// production uses) or the simulator's faulty disk ([`SimFs`]).
pub struct Store<F: Fs = RealFs> {
    fs: F,
    dir: PathBuf,
    log_path: PathBuf,
    _lock: F::Lock,
    log: LogWriter<F::File>,
    /// The new log being written beside `log`, if a compaction is under way.
    compaction: Option<Compaction<F::File>>,
    opts: StoreOptions,
    /// Bytes of the log known to be on stable storage.
    synced: u64,
    /// Ops appended since the last sync point.
    dirty: bool,
    poisoned: bool,
    records: BTreeMap<String, Vec<u8>>,
    corrupt: BTreeSet<String>,
    live_bytes: u64,
    stats: StoreStats,
}

/// Where [`Store::seal`] left a `Sync`.
#[derive(Debug, PartialEq, Eq)]
enum Sealed {
    /// Every op is durable already (nothing to sync, or a compaction finished and synced).
    Durable,
    /// The sync point is written to the file; an `fdatasync` makes it durable.
    NeedsSync,
}

impl<F: Fs> fmt::Debug for Store<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Open or create the store in `dir` (created if missing) with default options.
    pub fn open(dir: &Path) -> Result<(Store, Recovered), StoreError> {
        Store::open_with(dir, StoreOptions::default())
    }

    /// Open or create the store in `dir` (created if missing) on real files; see
    /// [`Store::open_in`].
    pub fn open_with(dir: &Path, opts: StoreOptions) -> Result<(Store, Recovered), StoreError> {
        Store::open_in(RealFs, dir, opts)
    }
}

impl<F: Fs> Store<F> {
    /// Open or create the store in `dir` of `fs` (created if missing). Takes the directory's
    /// lock ([`StoreError::Locked`] if another store holds it), deletes a leftover temporary
    /// file, recovers the log (truncating a torn tail) and returns what it holds.
    pub fn open_in(fs: F, dir: &Path, opts: StoreOptions) -> Result<(Self, Recovered), StoreError> {
        create_dir_durable(&fs, dir)?;
        let dir = dir.to_path_buf();
        let lock_path = dir.join(LOCK_FILE);
        let lock = match fs.try_lock(&lock_path) {
            Ok(Some(lock)) => lock,
            Ok(None) => return Err(StoreError::Locked { dir }),
            Err(e) => return Err(io_err(&lock_path, "lock")(e)),
        };

        let tmp = dir.join(TEMP_FILE);
        match fs.remove_file(&tmp) {
            Ok(()) => sync_dir(&fs, &dir)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&tmp, "remove leftover")(e)),
        }

        let log_path = dir.join(LOG_FILE);
        let mut stats = StoreStats::default();
        let opened = fs.open(&log_path);
        let (log, replay) = match opened {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let log = compaction::write_whole(
                    &fs,
                    &dir,
                    &BTreeMap::new(),
                    &BTreeSet::new(),
                    opts.write_buffer,
                )?;
                let replay = format::Replay {
                    valid_len: log.len(),
                    ends_synced: true,
                    ..format::Replay::default()
                };
                (log, replay)
            }
            Err(e) => return Err(io_err(&log_path, "open")(e)),
            Ok(mut file) => {
                let bytes = file.read_all().map_err(io_err(&log_path, "read"))?;
                let salt = format::decode_file_header(&bytes).map_err(|e| match e {
                    format::FileHeaderError::NotALog => StoreError::NotALog {
                        path: log_path.clone(),
                    },
                    format::FileHeaderError::Damaged => StoreError::DamagedHeader {
                        path: log_path.clone(),
                    },
                    format::FileHeaderError::Version(version) => StoreError::UnknownVersion {
                        path: log_path.clone(),
                        version,
                    },
                })?;
                let replay = format::replay(&bytes, salt);
                let file_len = bytes.len() as u64;
                if !replay.unstable_heads.is_empty() {
                    // Headers in damaged spans that only fail because the file ends too soon
                    // would become records once the log grows, and a later open would replay
                    // it differently: rewrite the kept part with them broken (nothing else
                    // changes, so `?corrupt@` offsets stay), under the temporary name.
                    let mut kept = bytes[..replay.valid_len as usize].to_vec();
                    if format::neutralize(&mut kept, salt, &replay.unstable_heads, &replay) {
                        let new = rewrite_log(&fs, &dir, &kept)?;
                        fs.retire(std::mem::replace(&mut file, new));
                    }
                }
                drop(bytes);
                if replay.valid_len < file_len {
                    stats.torn_tail_bytes = file_len - replay.valid_len;
                    file.set_len(replay.valid_len)
                        .map_err(io_err(&log_path, "truncate torn tail of"))?;
                }
                file.seek_to(replay.valid_len)
                    .map_err(io_err(&log_path, "seek"))?;
                let log = LogWriter::resume(
                    log_path.clone(),
                    file,
                    salt,
                    replay.valid_len,
                    opts.write_buffer,
                );
                (log, replay)
            }
        };
        let format::Replay {
            records,
            corrupt,
            damaged_spans: spans,
            valid_len: len,
            repaired,
            ends_synced,
            unstable_heads: _,
        } = replay;
        stats.repaired_records = repaired;

        let mut reported: Vec<String> = corrupt.iter().cloned().collect();
        reported.extend(spans.iter().map(|off| format!("?corrupt@{off}")));
        stats.recovered_records = records.len() as u64;
        stats.recovered_corrupt = reported.len() as u64;
        stats.corrupt_spans = spans.len() as u64;
        let live_bytes = records.iter().map(|(k, v)| live_len(k, v)).sum::<u64>()
            + corrupt.iter().map(|k| live_len(k, &[])).sum::<u64>();
        let recovered = Recovered {
            records: records.clone(),
            corrupt: reported,
        };
        let mut store = Store {
            fs,
            dir,
            log_path,
            _lock: lock,
            log,
            compaction: None,
            opts,
            synced: len,
            dirty: !ends_synced,
            poisoned: false,
            records,
            corrupt,
            live_bytes,
            stats,
        };
        // A stage treats what it recovers as durable, but after a process crash the log's
        // tail may be only in the page cache, and a truncation is not on disk yet either: end
        // the log with a sync point now. Damage to the recovered records is then reported as
        // corruption at later opens, never mistaken for a torn tail.
        store.sync()?;
        Ok((store, recovered))
    }

    /// Carry out one op (see the crate docs for what each guarantees). On an I/O error the
    /// store is poisoned: this and every later call fail and the store must be reopened.
    pub fn apply(&mut self, op: StoreOp) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned {
                path: self.log_path.clone(),
            });
        }
        let res = self.apply_inner(op);
        if matches!(res, Err(StoreError::Io { .. })) {
            self.poisoned = true;
        }
        res
    }

    fn apply_inner(&mut self, op: StoreOp) -> Result<(), StoreError> {
        let appended = match op {
            StoreOp::Put { key, value } => {
                let len = live_len(&key, &value);
                if key.len() > MAX_KEY_LEN || len > MAX_RECORD_LEN {
                    return Err(StoreError::TooLarge { key, len });
                }
                self.append(Kind::Put, &key, &value)?;
                if self.corrupt.remove(&key) {
                    self.live_bytes -= live_len(&key, &[]);
                }
                self.live_bytes += len;
                if let Some(old) = self.records.insert(key.clone(), value) {
                    self.live_bytes -= live_len(&key, &old);
                }
                len
            }
            StoreOp::Delete { key } => {
                let in_records = self.records.contains_key(&key);
                if !in_records && !self.corrupt.contains(&key) {
                    return Ok(()); // replaying it would change nothing
                }
                self.append(Kind::Delete, &key, &[])?;
                if let Some(old) = self.records.remove(&key) {
                    self.live_bytes -= live_len(&key, &old);
                }
                if self.corrupt.remove(&key) {
                    self.live_bytes -= live_len(&key, &[]);
                }
                live_len(&key, &[])
            }
            StoreOp::DeletePrefix { prefix } => {
                let from = (Bound::Included(prefix.as_str()), Bound::Unbounded);
                let hits = |k: &String| k.starts_with(prefix.as_str());
                let any = self
                    .records
                    .range::<str, _>(from)
                    .next()
                    .is_some_and(|(k, _)| hits(k))
                    || self.corrupt.range::<str, _>(from).next().is_some_and(hits);
                if !any {
                    return Ok(()); // replaying it would change nothing
                }
                // A matching key exists, so the prefix is no longer than MAX_KEY_LEN.
                self.append(Kind::DeletePrefix, &prefix, &[])?;
                for (k, v) in format::remove_prefix(&mut self.records, &prefix) {
                    self.live_bytes -= live_len(&k, &v);
                }
                for k in format::remove_prefix_keys(&mut self.corrupt, &prefix) {
                    self.live_bytes -= live_len(&k, &[]);
                }
                live_len(&prefix, &[])
            }
            StoreOp::Sync => return self.sync(),
        };
        self.compact_along(appended)
    }

    /// Append a record to the log, and to the new log if a compaction is under way.
    fn append(&mut self, kind: Kind, key: &str, value: &[u8]) -> Result<(), StoreError> {
        let len = self.log.append(kind, key, value)?;
        self.stats.bytes_appended += len;
        self.dirty = true;
        if let Some(c) = self.compaction.as_mut() {
            c.record(kind, key, value)?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        let start = Instant::now();
        if self.seal()? == Sealed::NeedsSync {
            self.log.sync()?;
            self.synced = self.log.len();
            self.count_sync(start);
        }
        Ok(())
    }

    /// The first half of a `Sync`, on the store's thread: move a compaction along (finishing it
    /// if its copy is complete, which syncs the new log), or append a sync point and write the
    /// buffer to the file, leaving its `fdatasync` to the caller.
    fn seal(&mut self) -> Result<Sealed, StoreError> {
        if !self.dirty {
            return Ok(Sealed::Durable);
        }
        let start = Instant::now();
        if let Some(c) = self.compaction.as_mut() {
            c.copy(&self.records, &self.corrupt, self.opts.compact_step)?;
            if c.is_copied() {
                // The new log holds every op: syncing it replaces syncing the old one.
                self.finish_compaction()?;
                self.count_compaction_step(start);
                self.count_sync(start);
                return Ok(Sealed::Durable);
            }
            self.count_compaction_step(start);
        }
        self.stats.bytes_appended += self.log.append(Kind::Sync, "", &[])?;
        self.log.flush()?;
        self.dirty = false;
        Ok(Sealed::NeedsSync)
    }

    fn count_sync(&mut self, start: Instant) {
        let took = start.elapsed();
        self.stats.syncs += 1;
        self.stats.sync_time += took;
        self.stats.last_sync = took;
        self.stats.max_sync = self.stats.max_sync.max(took);
    }

    fn count_compaction_step(&mut self, start: Instant) {
        let took = start.elapsed();
        self.stats.compaction_time += took;
        self.stats.max_compaction_step = self.stats.max_compaction_step.max(took);
    }

    /// After an op that appended `appended` bytes: start a compaction when the log is mostly
    /// dead records, or move one under way along by twice what the op appended, so it ends
    /// even if no `Sync` comes. (Each `Sync` moves it by [`StoreOptions::compact_step`].)
    fn compact_along(&mut self, appended: u64) -> Result<(), StoreError> {
        let start = Instant::now();
        match self.compaction.as_mut() {
            Some(c) => c.copy(&self.records, &self.corrupt, 2 * appended)?,
            None => {
                let len = self.log.len();
                // The fixed overhead keeps a nearly empty store from compacting on every write.
                let overhead = record_len(0, 0) + format::FILE_HEADER_LEN as u64;
                if len < self.opts.compact_threshold || len <= 2 * (self.live_bytes + overhead) {
                    return Ok(());
                }
                self.compaction = Some(Compaction::start(
                    &self.fs,
                    &self.dir,
                    self.opts.write_buffer,
                )?);
            }
        }
        self.count_compaction_step(start);
        Ok(())
    }

    /// Replace the log by the compaction's fully copied new log (which makes every op
    /// durable).
    fn finish_compaction(&mut self) -> Result<(), StoreError> {
        let c = self.compaction.take();
        debug_assert!(c.as_ref().is_some_and(Compaction::is_copied));
        if let Some(c) = c {
            let old = std::mem::replace(&mut self.log, c.finish(&self.fs, &self.dir)?);
            // Closing the replaced log frees its blocks and page cache: see `Fs::retire`.
            self.fs.retire(old.into_file());
            self.synced = self.log.len();
            self.dirty = false;
            self.stats.compactions += 1;
        }
        Ok(())
    }

    /// Rewrite the log to hold only the live records (and corrupt-key markers), whatever its
    /// size, finishing a compaction under way. Makes every earlier op durable.
    pub fn compact(&mut self) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned {
                path: self.log_path.clone(),
            });
        }
        let res = self.compact_inner();
        if res.is_err() {
            self.poisoned = true;
        }
        res
    }

    fn compact_inner(&mut self) -> Result<(), StoreError> {
        let start = Instant::now();
        if self.compaction.is_none() {
            self.compaction = Some(Compaction::start(
                &self.fs,
                &self.dir,
                self.opts.write_buffer,
            )?);
        }
        if let Some(c) = self.compaction.as_mut() {
            c.copy(&self.records, &self.corrupt, u64::MAX)?;
        }
        self.finish_compaction()?;
        self.count_compaction_step(start);
        Ok(())
    }

    /// The live value of `key`, if any.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.records.get(key).map(Vec::as_slice)
    }

    /// The live records.
    pub fn records(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.records
    }

    /// Keys currently known corrupt (from open, until overwritten or deleted).
    pub fn corrupt_keys(&self) -> impl Iterator<Item = &str> {
        self.corrupt.iter().map(String::as_str)
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the log file.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    pub fn stats(&self) -> StoreStats {
        StoreStats {
            log_bytes: self.log.len(),
            compacting_bytes: self.compaction.as_ref().map_or(0, Compaction::len),
            synced_bytes: self.synced,
            live_records: self.records.len() as u64,
            live_bytes: self.live_bytes,
            corrupt_keys: self.corrupt.len() as u64,
            ..self.stats.clone()
        }
    }
}

impl<F: Fs> Drop for Store<F> {
    /// Write the buffer to the file (as a process exit would leave it in the page cache); no
    /// sync.
    fn drop(&mut self) {
        if !self.poisoned {
            let _ = self.log.flush();
        }
    }
}
