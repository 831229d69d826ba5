//! A deterministic in-memory file system that loses power like a real disk, for the simulator
//! and for crash tests of [`Store`](crate::Store).
//!
//! The model:
//!
//! * A file's bytes are what reads see (the page cache). [`FsFile::sync_data`] makes them and
//!   the file's length durable. Until then the durable contents of every rewritten 512-byte
//!   sector ([`SECTOR`]) are kept aside.
//! * Directory entries (creations, renames, removals, new directories) take effect at once
//!   for a running process but are durable only after [`Fs::sync_dir`] of their directory.
//! * [`SimFs::power_loss`] is a crash: a random prefix of the pending directory changes
//!   reaches the disk (journals commit in order), the rest is lost; every file with unsynced
//!   writes gets a length between its durable and its written length, and each of its
//!   unsynced sectors independently either reached the platter or did not (a record can be
//!   half there, a later sector can survive an earlier one, a lost extension reads as zeros).
//!   Handles and locks from before the crash are dead.
//! * [`SimFs::crash_after`] makes the power fail at a chosen later mutating operation (a
//!   write, sync, create, rename, ...): that operation and every later one fail with an I/O
//!   error until [`SimFs::power_loss`], so a crash can land anywhere, e.g. inside a compaction
//!   between writing the new log, renaming it and syncing the directory.
//! * [`SimFs::damage`] flips bits of durable bytes (media corruption) and
//!   [`SimFs::remove_dir_all`] loses a whole directory (a lost disk).
//!
//! All randomness comes from the seed given to [`SimFs::new`] (salts of new logs) and to
//! [`SimFs::power_loss`] (what a crash keeps), so runs are reproducible.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::fs::{Fs, FsFile};
use plumb_core::Rng;

/// The unit a crash keeps or loses.
pub const SECTOR: usize = 512;

/// Uniform in `0..=n`, from the project's seeded generator: what a crash keeps replays
/// exactly.
fn upto(rng: &mut Rng, n: u64) -> u64 {
    rng.below(n + 1)
}

#[derive(Default)]
struct Inode {
    /// What reads see.
    data: Vec<u8>,
    /// Length at the last sync.
    durable_len: usize,
    /// Durable contents (clipped to `durable_len`) of each sector changed since the last sync.
    undo: BTreeMap<usize, Vec<u8>>,
}

impl Inode {
    fn dirty(&self) -> bool {
        self.data.len() != self.durable_len || !self.undo.is_empty()
    }

    /// Keep aside the durable contents of the sectors overlapping `from..to` before they
    /// change. A sector not yet kept aside still holds its durable bytes in `data`.
    fn save(&mut self, from: usize, to: usize) {
        let end = to.min(self.durable_len);
        if from >= end {
            return;
        }
        let data = &self.data;
        let durable_len = self.durable_len;
        for s in from / SECTOR..=(end - 1) / SECTOR {
            self.undo
                .entry(s)
                .or_insert_with(|| data[s * SECTOR..((s + 1) * SECTOR).min(durable_len)].to_vec());
        }
    }

    fn write(&mut self, pos: usize, bytes: &[u8]) {
        let end = pos + bytes.len();
        self.save(pos, end);
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[pos..end].copy_from_slice(bytes);
    }

    fn set_len(&mut self, len: usize) {
        if len < self.data.len() {
            self.save(len, self.data.len());
        }
        self.data.resize(len, 0);
    }

    fn sync(&mut self) {
        self.undo.clear();
        self.durable_len = self.data.len();
    }

    /// What is on the platter.
    fn durable(&self) -> Vec<u8> {
        let mut v = self.data[..self.data.len().min(self.durable_len)].to_vec();
        v.resize(self.durable_len, 0);
        for (&s, old) in &self.undo {
            v[s * SECTOR..s * SECTOR + old.len()].copy_from_slice(old);
        }
        v
    }

    /// Power loss: keep a random length between the durable and the written one, and each
    /// unsynced sector with probability `keep` (in 1/4s, drawn per crash by the caller).
    fn power_loss(&mut self, rng: &mut Rng, keep: u64) {
        if !self.dirty() {
            return;
        }
        let (lo, hi) = (
            self.durable_len.min(self.data.len()),
            self.durable_len.max(self.data.len()),
        );
        let new_len = match upto(rng, 2) {
            0 => self.durable_len,
            1 => self.data.len(),
            _ => lo + upto(rng, (hi - lo) as u64) as usize,
        };
        let mut out = self.durable();
        out.resize(new_len, 0);
        let changed = self
            .undo
            .keys()
            .copied()
            .chain(self.durable_len / SECTOR..new_len.div_ceil(SECTOR))
            .collect::<BTreeSet<usize>>();
        for s in changed {
            if s * SECTOR >= new_len || upto(rng, 3) >= keep {
                continue;
            }
            for (i, b) in out
                .iter_mut()
                .enumerate()
                .take(((s + 1) * SECTOR).min(new_len))
                .skip(s * SECTOR)
            {
                *b = self.data.get(i).copied().unwrap_or(0);
            }
        }
        self.data = out;
        self.durable_len = new_len;
        self.undo.clear();
    }
}

/// A directory change not yet made durable by a directory fsync.
enum NsOp {
    Mkdir(PathBuf),
    Link(PathBuf, u64),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf, u64),
}

impl NsOp {
    /// The directory whose fsync makes this change durable.
    fn dir(&self) -> &Path {
        let p = match self {
            NsOp::Mkdir(p) | NsOp::Link(p, _) | NsOp::Unlink(p) | NsOp::Rename(_, p, _) => p,
        };
        p.parent().unwrap_or(Path::new(""))
    }

    fn apply(&self, files: &mut BTreeMap<PathBuf, u64>, dirs: &mut BTreeSet<PathBuf>) {
        match self {
            NsOp::Mkdir(p) => {
                dirs.insert(p.clone());
            }
            NsOp::Link(p, ino) => {
                files.insert(p.clone(), *ino);
            }
            NsOp::Unlink(p) => {
                files.remove(p);
            }
            NsOp::Rename(from, to, ino) => {
                files.remove(from);
                files.insert(to.clone(), *ino);
            }
        }
    }

    fn under(&self, dir: &Path) -> bool {
        match self {
            NsOp::Mkdir(p) | NsOp::Link(p, _) | NsOp::Unlink(p) => p.starts_with(dir),
            NsOp::Rename(a, b, _) => a.starts_with(dir) || b.starts_with(dir),
        }
    }
}

struct State {
    rng: Rng,
    inodes: BTreeMap<u64, Inode>,
    next_ino: u64,
    /// The namespace a running process sees.
    files: BTreeMap<PathBuf, u64>,
    dirs: BTreeSet<PathBuf>,
    /// The namespace that survives power loss.
    durable_files: BTreeMap<PathBuf, u64>,
    durable_dirs: BTreeSet<PathBuf>,
    pending: Vec<NsOp>,
    locks: BTreeSet<PathBuf>,
    /// Power cycles so far: handles and locks of an earlier boot are dead.
    boot: u64,
    /// Mutating operations that may still succeed before the power fails.
    fail_after: Option<u64>,
    powered_off: bool,
    ops: u64,
}

fn power_lost() -> io::Error {
    io::Error::other("simulated power loss")
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", p.display()),
    )
}

impl State {
    fn alive(&self) -> io::Result<()> {
        if self.powered_off {
            Err(power_lost())
        } else {
            Ok(())
        }
    }

    /// Account for one mutating operation; fails if the power is (now) off.
    fn tick(&mut self) -> io::Result<()> {
        self.alive()?;
        match self.fail_after {
            Some(0) => {
                self.powered_off = true;
                return Err(power_lost());
            }
            Some(n) => self.fail_after = Some(n - 1),
            None => {}
        }
        self.ops += 1;
        Ok(())
    }

    fn is_dir(&self, p: &Path) -> bool {
        p.as_os_str().is_empty() || p == Path::new("/") || self.dirs.contains(p)
    }

    fn parent_exists(&self, p: &Path) -> io::Result<()> {
        match p.parent() {
            Some(d) if !self.is_dir(d) => Err(not_found(d)),
            _ => Ok(()),
        }
    }

    /// Drop inodes no name (live, durable or pending) refers to.
    fn collect_garbage(&mut self) {
        let mut live: BTreeSet<u64> = self.files.values().copied().collect();
        live.extend(self.durable_files.values().copied());
        for op in &self.pending {
            if let NsOp::Link(_, ino) | NsOp::Rename(_, _, ino) = op {
                live.insert(*ino);
            }
        }
        self.inodes.retain(|ino, _| live.contains(ino));
    }
}

/// The faulty in-memory file system; clones share one disk.
#[derive(Clone)]
pub struct SimFs(Rc<RefCell<State>>);

impl SimFs {
    /// An empty disk; `seed` drives the salts of the logs written on it.
    pub fn new(seed: u64) -> SimFs {
        SimFs(Rc::new(RefCell::new(State {
            rng: Rng::new(seed),
            inodes: BTreeMap::new(),
            next_ino: 1,
            files: BTreeMap::new(),
            dirs: BTreeSet::new(),
            durable_files: BTreeMap::new(),
            durable_dirs: BTreeSet::new(),
            pending: Vec::new(),
            locks: BTreeSet::new(),
            boot: 0,
            fail_after: None,
            powered_off: false,
            ops: 0,
        })))
    }

    /// Let `ops` more mutating operations succeed, then fail the power: the next one and
    /// everything after it fail until [`SimFs::power_loss`].
    pub fn crash_after(&self, ops: u64) {
        self.0.borrow_mut().fail_after = Some(ops);
    }

    /// The power failed (by [`SimFs::crash_after`]) and the disk awaits [`SimFs::power_loss`].
    pub fn powered_off(&self) -> bool {
        self.0.borrow().powered_off
    }

    /// Mutating operations done so far.
    pub fn ops(&self) -> u64 {
        self.0.borrow().ops
    }

    /// Power loss (see the module docs); `seed` decides what survives. The disk then runs
    /// again, as after a reboot.
    pub fn power_loss(&self, seed: u64) {
        let mut st = self.0.borrow_mut();
        let st = &mut *st;
        let mut rng = Rng::new(seed);
        let pending = std::mem::take(&mut st.pending);
        let kept = upto(&mut rng, pending.len() as u64) as usize;
        for op in &pending[..kept] {
            op.apply(&mut st.durable_files, &mut st.durable_dirs);
        }
        let dirs = &st.durable_dirs;
        let reachable = |p: &Path| {
            p.parent()
                .is_none_or(|d| d.as_os_str().is_empty() || d == Path::new("/") || dirs.contains(d))
        };
        st.durable_files.retain(|p, _| reachable(p));
        st.files = st.durable_files.clone();
        st.dirs = st.durable_dirs.clone();
        st.collect_garbage();
        let keep = upto(&mut rng, 4);
        for inode in st.inodes.values_mut() {
            inode.power_loss(&mut rng, keep);
        }
        st.locks.clear();
        st.boot += 1;
        st.fail_after = None;
        st.powered_off = false;
    }

    /// The durable contents of the file at `path` in the durable namespace, as a crash now
    /// would leave them if every unsynced write were lost.
    pub fn durable_file(&self, path: &Path) -> Option<Vec<u8>> {
        let st = self.0.borrow();
        let ino = st.durable_files.get(path)?;
        st.inodes.get(ino).map(Inode::durable)
    }

    /// Flip the bits `mask` of durable byte `off` of the file at `path` (media damage).
    /// Returns false if there is no such durable byte.
    pub fn damage(&self, path: &Path, off: u64, mask: u8) -> bool {
        let mut st = self.0.borrow_mut();
        let Some(&ino) = st.durable_files.get(path) else {
            return false;
        };
        let Some(inode) = st.inodes.get_mut(&ino) else {
            return false;
        };
        let off = off as usize;
        if off >= inode.durable_len {
            return false;
        }
        let s = off / SECTOR;
        match inode.undo.get_mut(&s) {
            // The page cache holds newer bytes; the damage is to what is on the platter.
            Some(old) => old[off - s * SECTOR] ^= mask,
            None => inode.data[off] ^= mask,
        }
        true
    }

    /// Lose the directory `dir` and everything under it, durably (a lost or replaced disk).
    pub fn remove_dir_all(&self, dir: &Path) {
        let mut st = self.0.borrow_mut();
        st.files.retain(|p, _| !p.starts_with(dir));
        st.durable_files.retain(|p, _| !p.starts_with(dir));
        st.dirs.retain(|p| !p.starts_with(dir));
        st.durable_dirs.retain(|p| !p.starts_with(dir));
        st.pending.retain(|op| !op.under(dir));
        st.locks.retain(|p| !p.starts_with(dir));
        st.collect_garbage();
    }
}

/// An open file of a [`SimFs`].
pub struct SimFile {
    fs: SimFs,
    ino: u64,
    pos: usize,
    boot: u64,
}

impl SimFile {
    fn with<T>(
        &mut self,
        mutating: bool,
        f: impl FnOnce(&mut Inode, &mut usize) -> T,
    ) -> io::Result<T> {
        let mut st = self.fs.0.borrow_mut();
        if st.boot != self.boot {
            return Err(power_lost());
        }
        if mutating {
            st.tick()?;
        } else {
            st.alive()?;
        }
        let inode = st
            .inodes
            .get_mut(&self.ino)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "file was deleted"))?;
        Ok(f(inode, &mut self.pos))
    }
}

impl FsFile for SimFile {
    fn read_all(&mut self) -> io::Result<Vec<u8>> {
        self.with(false, |inode, _| inode.data.clone())
    }

    fn seek_to(&mut self, pos: u64) -> io::Result<()> {
        let pos = usize::try_from(pos).map_err(|_| io::Error::other("seek too far"))?;
        self.with(false, |_, p| *p = pos)
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.with(true, |inode, pos| {
            inode.write(*pos, data);
            *pos += data.len();
        })
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::Error::other("file too large"))?;
        self.with(true, |inode, _| inode.set_len(len))
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.with(true, |inode, _| inode.sync())
    }
}

/// The lock on a [`SimFs`] store directory; released on drop.
pub struct SimLock {
    fs: SimFs,
    path: PathBuf,
    boot: u64,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut st = self.fs.0.borrow_mut();
        if st.boot == self.boot {
            st.locks.remove(&self.path);
        }
    }
}

impl Fs for SimFs {
    type File = SimFile;
    type Lock = SimLock;

    fn is_dir(&self, path: &Path) -> bool {
        self.0.borrow().is_dir(path)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.0.borrow_mut();
        st.tick()?;
        st.parent_exists(path)?;
        if st.is_dir(path) || st.files.contains_key(path) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        st.dirs.insert(path.to_path_buf());
        st.pending.push(NsOp::Mkdir(path.to_path_buf()));
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.0.borrow_mut();
        let st = &mut *st;
        st.tick()?;
        if !st.is_dir(dir) {
            return Err(not_found(dir));
        }
        let (now, later): (Vec<NsOp>, Vec<NsOp>) = std::mem::take(&mut st.pending)
            .into_iter()
            .partition(|op| op.dir() == dir);
        for op in &now {
            op.apply(&mut st.durable_files, &mut st.durable_dirs);
        }
        st.pending = later;
        st.collect_garbage();
        Ok(())
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<SimLock>> {
        let mut st = self.0.borrow_mut();
        st.alive()?;
        st.parent_exists(path)?;
        if !st.locks.insert(path.to_path_buf()) {
            return Ok(None);
        }
        Ok(Some(SimLock {
            fs: self.clone(),
            path: path.to_path_buf(),
            boot: st.boot,
        }))
    }

    fn open(&self, path: &Path) -> io::Result<SimFile> {
        let st = self.0.borrow();
        st.alive()?;
        let &ino = st.files.get(path).ok_or_else(|| not_found(path))?;
        Ok(SimFile {
            fs: self.clone(),
            ino,
            pos: 0,
            boot: st.boot,
        })
    }

    fn create(&self, path: &Path) -> io::Result<SimFile> {
        let mut st = self.0.borrow_mut();
        st.tick()?;
        st.parent_exists(path)?;
        let ino = match st.files.get(path) {
            Some(&ino) => {
                if let Some(inode) = st.inodes.get_mut(&ino) {
                    inode.set_len(0);
                }
                ino
            }
            None => {
                let ino = st.next_ino;
                st.next_ino += 1;
                st.inodes.insert(ino, Inode::default());
                st.files.insert(path.to_path_buf(), ino);
                st.pending.push(NsOp::Link(path.to_path_buf(), ino));
                ino
            }
        };
        Ok(SimFile {
            fs: self.clone(),
            ino,
            pos: 0,
            boot: st.boot,
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.0.borrow_mut();
        st.tick()?;
        let ino = st.files.remove(from).ok_or_else(|| not_found(from))?;
        st.files.insert(to.to_path_buf(), ino);
        st.pending
            .push(NsOp::Rename(from.to_path_buf(), to.to_path_buf(), ino));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.0.borrow_mut();
        st.tick()?;
        st.files.remove(path).ok_or_else(|| not_found(path))?;
        st.pending.push(NsOp::Unlink(path.to_path_buf()));
        Ok(())
    }

    fn new_salt(&self) -> u32 {
        self.0.borrow_mut().rng.next_u64() as u32
    }
}
