//! Appending records to one log file through a write buffer: the live log and the new log a
//! compaction builds are written the same way.

use std::path::{Path, PathBuf};

use crate::format::{self, encode_head, record_len, Kind};
use crate::fs::{Fs, FsFile};
use crate::{io_err, StoreError};

/// One log file being appended to.
pub(crate) struct LogWriter<File> {
    path: PathBuf,
    file: File,
    /// The file's salt (see the crate docs): every record is checksummed with it.
    salt: u32,
    /// Appended bytes not yet written to `file`.
    buf: Vec<u8>,
    /// Bytes written to `file`.
    written: u64,
    /// Write `buf` out once it holds this many bytes; a value this large bypasses it.
    buffer_limit: usize,
}

impl<File: FsFile> LogWriter<File> {
    /// Create (or truncate) the file at `path` with a fresh salt; its file header is buffered.
    pub(crate) fn create<F: Fs<File = File>>(
        fs: &F,
        path: &Path,
        buffer_limit: usize,
    ) -> Result<Self, StoreError> {
        let file = fs.create(path).map_err(io_err(path, "create"))?;
        let salt = fs.new_salt();
        let mut buf = Vec::with_capacity(buffer_limit.min(1 << 20));
        buf.extend_from_slice(&format::encode_file_header(salt));
        Ok(LogWriter {
            path: path.to_path_buf(),
            file,
            salt,
            buf,
            written: 0,
            buffer_limit,
        })
    }

    /// Go on appending to an existing log positioned at its end, `len` bytes long.
    pub(crate) fn resume(
        path: PathBuf,
        file: File,
        salt: u32,
        len: u64,
        buffer_limit: usize,
    ) -> Self {
        LogWriter {
            path,
            file,
            salt,
            buf: Vec::new(),
            written: len,
            buffer_limit,
        }
    }

    /// Append one record; returns the bytes it takes in the log. Nothing is durable yet.
    pub(crate) fn append(
        &mut self,
        kind: Kind,
        key: &str,
        value: &[u8],
    ) -> Result<u64, StoreError> {
        encode_head(&mut self.buf, self.salt, kind, key.as_bytes(), value);
        if value.len() >= self.buffer_limit {
            self.flush()?;
            self.file
                .write_all(value)
                .map_err(io_err(&self.path, "write"))?;
            self.written += value.len() as u64;
        } else {
            self.buf.extend_from_slice(value);
        }
        if self.buf.len() >= self.buffer_limit {
            self.flush()?;
        }
        Ok(record_len(key.len(), value.len()))
    }

    /// Write the buffer to the file (into the page cache; not durable).
    pub(crate) fn flush(&mut self) -> Result<(), StoreError> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(io_err(&self.path, "write"))?;
            self.written += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    /// Write the buffer and `fdatasync`: every record appended so far is durable.
    pub(crate) fn sync(&mut self) -> Result<(), StoreError> {
        self.flush()?;
        self.file
            .sync_data()
            .map_err(io_err(&self.path, "fdatasync"))
    }

    /// Ask the device to start writing what was written so far, without waiting.
    pub(crate) fn start_writeback(&mut self) -> Result<(), StoreError> {
        self.file
            .start_writeback()
            .map_err(io_err(&self.path, "start writeback of"))
    }

    /// The log's length, buffered bytes included.
    pub(crate) fn len(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    /// Bytes written to the file (the buffer excluded).
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The file, without writing the buffer.
    pub(crate) fn into_file(self) -> File {
        self.file
    }

    /// The same file under a new name (after a rename).
    pub(crate) fn renamed(mut self, path: PathBuf) -> Self {
        self.path = path;
        self
    }
}
