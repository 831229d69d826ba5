//! The file-system operations [`Store`](crate::Store) needs, as a trait, so the same store
//! code runs on real files in production ([`RealFs`]) and on the simulator's faulty in-memory
//! disk ([`SimFs`](crate::SimFs)). The trait is deliberately small: exactly what the log,
//! compaction and the directory lock use, with POSIX meaning.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// A file system holding store directories. Paths are absolute or relative to the process's
/// working directory, as with `std::fs`.
pub trait Fs {
    type File: FsFile;
    /// Held while a store is open; dropping it releases the lock.
    type Lock;

    fn is_dir(&self, path: &Path) -> bool;
    /// Create one directory (its parent must exist); `AlreadyExists` if it does.
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Make the directory's entries (creations, renames, removals in it) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Take an exclusive lock named by `path` (created if missing); `Ok(None)` if another
    /// holder has it.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Self::Lock>>;
    /// Open an existing file for reading and writing, positioned at its start.
    fn open(&self, path: &Path) -> io::Result<Self::File>;
    /// Create a file, or truncate an existing one, for reading and writing.
    fn create(&self, path: &Path) -> io::Result<Self::File>;
    /// Atomically replace `to` with `from` (same directory).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// A fresh salt for a new log file (see the crate docs): random in production, drawn from
    /// the seed in the simulator so runs are reproducible.
    fn new_salt(&self) -> u32;
    /// Close a file that is no longer needed. By default it is simply dropped.
    fn retire(&self, file: Self::File) {
        drop(file);
    }
}

/// An open file with a position.
pub trait FsFile {
    /// The whole file from its start; leaves the position unspecified.
    fn read_all(&mut self) -> io::Result<Vec<u8>>;
    fn seek_to(&mut self, pos: u64) -> io::Result<()>;
    /// Write at the position and advance it.
    fn write_all(&mut self, data: &[u8]) -> io::Result<()>;
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// `fdatasync`: the file's bytes and length are on stable storage when it returns.
    fn sync_data(&mut self) -> io::Result<()>;
    /// Start writing the file's written bytes to the device without waiting for it, so a
    /// later `sync_data` has less to do. Promises nothing; by default it does nothing.
    fn start_writeback(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The real file system (`std::fs`); what production uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl Fs for RealFs {
    type File = File;
    type Lock = File;

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir).and_then(|d| d.sync_all())
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<File>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(path)
    }

    fn create(&self, path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn new_salt(&self) -> u32 {
        use std::hash::{BuildHasher, RandomState};
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let h = RandomState::new().hash_one((nanos, std::process::id()));
        (h ^ (h >> 32)) as u32
    }

    /// Closing the last handle of a large unlinked file (the log a compaction replaced) makes
    /// the kernel free its blocks and drop its page cache there and then: 20-30 ms for a
    /// 64 MiB log on the development machine, a stall the store's caller would feel. A short-
    /// lived thread closes it instead. If no thread can be started, the refused closure is
    /// dropped here, which closes the file inline.
    fn retire(&self, file: File) {
        let _ = std::thread::Builder::new()
            .name("plumb-close".into())
            .spawn(move || drop(file));
    }
}

impl FsFile for File {
    fn read_all(&mut self) -> io::Result<Vec<u8>> {
        self.seek(SeekFrom::Start(0))?;
        let mut bytes = Vec::new();
        self.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        self.seek(SeekFrom::Start(pos)).map(|_| ())
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        Write::write_all(self, data)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&mut self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor is open for as long as `self`; offset 0 and length 0 name
        // the whole file; SYNC_FILE_RANGE_WRITE only queues write-back of dirty pages.
        let rc =
            unsafe { libc::sync_file_range(self.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}
