//! Compaction a step at a time: the new log is written beside the old one while the store
//! goes on, so no single op pays for rewriting the whole live state (which took 30-60 ms per
//! store on a busy two-core machine, long enough for a backup to suspect a primary).
//!
//! From its start, the new log receives two streams, interleaved in one file:
//! * the **copy**: the live records (then the corrupt-key markers) in key order, read from
//!   the store's current state a step at a time, behind a cursor;
//! * every **op** applied after the start (except sync points), as it is applied.
//!
//! Why replaying the new log gives the live state: take any key. If no op touched it since
//! the start, the copy wrote its value (or, if it was gone, nothing). If ops touched it, the
//! last of them is in the file; a copied record of the key is either older (the cursor passed
//! the key before that op) or already holds that op's outcome (the cursor reached the key
//! after it), so replay ends at the live value either way. A key deleted ahead of the cursor
//! is simply never copied. Corruption markers follow the same argument: a key leaves the
//! corrupt set only by an op, which is in the file.
//!
//! When the copy has reached the end, the next `Sync` finishes the compaction instead of
//! syncing the old log: it appends a sync point to the new log, `fdatasync`s it, renames it
//! over the old log and fsyncs the directory. Until that rename is durable the old log is
//! the log, and it holds every op up to its last sync point; after, the new log holds them
//! all. A crash in between leaves the temporary file, which `open` deletes.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;

use crate::format::Kind;
use crate::fs::{Fs, FsFile};
use crate::writer::LogWriter;
use crate::{io_err, sync_dir, StoreError, LOG_FILE, TEMP_FILE};

/// Start the device writing the new log back once this much was written since the last
/// time, so the `fdatasync` that finishes the compaction finds little left to write.
const WRITEBACK_EVERY: u64 = 1 << 20;

/// How far the copy of the live state has got.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cursor {
    /// Records with keys up to and including this one (none yet: `None`).
    Records(Option<String>),
    /// Every record, and corrupt-key markers up to and including this one.
    Corrupt(Option<String>),
    /// Everything: the new log waits for the next `Sync` to replace the old one.
    Done,
}

/// A compaction in progress.
pub(crate) struct Compaction<File> {
    out: LogWriter<File>,
    cursor: Cursor,
    /// `out.written()` when write-back was last started.
    written_back: u64,
}

impl<File: FsFile> Compaction<File> {
    /// Create the new log under [`TEMP_FILE`] in `dir`.
    pub(crate) fn start<F: Fs<File = File>>(
        fs: &F,
        dir: &Path,
        buffer_limit: usize,
    ) -> Result<Self, StoreError> {
        Ok(Compaction {
            out: LogWriter::create(fs, &dir.join(TEMP_FILE), buffer_limit)?,
            cursor: Cursor::Records(None),
            written_back: 0,
        })
    }

    /// An op applied to the store after the start (never a sync point: the new log gets one
    /// sync point, at its end).
    pub(crate) fn record(&mut self, kind: Kind, key: &str, value: &[u8]) -> Result<(), StoreError> {
        debug_assert!(kind != Kind::Sync);
        self.out.append(kind, key, value)?;
        self.maybe_start_writeback()
    }

    /// Copy live state after the cursor until at least `budget` bytes were copied or all is.
    pub(crate) fn copy(
        &mut self,
        records: &BTreeMap<String, Vec<u8>>,
        corrupt: &BTreeSet<String>,
        budget: u64,
    ) -> Result<(), StoreError> {
        let mut copied = 0u64;
        while copied < budget {
            match &self.cursor {
                Cursor::Records(after) => {
                    let mut next = None;
                    for (key, value) in records.range::<str, _>(after_bound(after)) {
                        copied += self.out.append(Kind::Put, key, value)?;
                        if copied >= budget {
                            next = Some(key.clone());
                            break;
                        }
                    }
                    self.cursor = match next {
                        Some(key) => Cursor::Records(Some(key)),
                        None => Cursor::Corrupt(None),
                    };
                }
                Cursor::Corrupt(after) => {
                    let mut next = None;
                    for key in corrupt.range::<str, _>(after_bound(after)) {
                        copied += self.out.append(Kind::Corrupt, key, &[])?;
                        if copied >= budget {
                            next = Some(key.clone());
                            break;
                        }
                    }
                    self.cursor = match next {
                        Some(key) => Cursor::Corrupt(Some(key)),
                        None => Cursor::Done,
                    };
                }
                Cursor::Done => break,
            }
        }
        self.maybe_start_writeback()
    }

    /// The copy has reached the end: [`Compaction::finish`] may run.
    pub(crate) fn is_copied(&self) -> bool {
        self.cursor == Cursor::Done
    }

    /// Make the new log durable and the log: sync point, `fdatasync`, rename over the old
    /// log, directory fsync. Returns its writer, positioned at its end.
    pub(crate) fn finish<F: Fs<File = File>>(
        mut self,
        fs: &F,
        dir: &Path,
    ) -> Result<LogWriter<File>, StoreError> {
        debug_assert!(self.is_copied());
        self.out.append(Kind::Sync, "", &[])?;
        self.out.sync()?;
        let log = dir.join(LOG_FILE);
        fs.rename(self.out.path(), &log)
            .map_err(io_err(self.out.path(), "rename to log"))?;
        sync_dir(fs, dir)?;
        Ok(self.out.renamed(log))
    }

    /// Bytes of the new log so far.
    pub(crate) fn len(&self) -> u64 {
        self.out.len()
    }

    fn maybe_start_writeback(&mut self) -> Result<(), StoreError> {
        if self.out.written() >= self.written_back + WRITEBACK_EVERY {
            self.out.start_writeback()?;
            self.written_back = self.out.written();
        }
        Ok(())
    }
}

fn after_bound(after: &Option<String>) -> (Bound<&str>, Bound<&str>) {
    match after {
        Some(key) => (Bound::Excluded(key.as_str()), Bound::Unbounded),
        None => (Bound::Unbounded, Bound::Unbounded),
    }
}

/// Write a new log holding `records` and `corrupt` in one go (creation, and an explicit
/// [`crate::Store::compact`] with no compaction under way).
pub(crate) fn write_whole<F: Fs>(
    fs: &F,
    dir: &Path,
    records: &BTreeMap<String, Vec<u8>>,
    corrupt: &BTreeSet<String>,
    buffer_limit: usize,
) -> Result<LogWriter<F::File>, StoreError> {
    let mut c = Compaction::start(fs, dir, buffer_limit)?;
    c.copy(records, corrupt, u64::MAX)?;
    c.finish(fs, dir)
}
