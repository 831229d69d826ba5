//! `SpecBench`: the application speculation is measured and simulated with (seed 001 §5–6
//! used a counter service and NFS). Two small services in one state:
//!
//! - **counters** (`u32` id → value and token): `incr(counter, token)` succeeds only if
//!   `token` is the token the previous successful increment of that counter answered (0 for a
//!   counter never incremented); it answers the new value and a new token. So each increment
//!   needs the previous one's *reply*: a client can pipeline increments only by speculating
//!   on replies, which is exactly what the paper's counter benchmark exercises. The new token
//!   is derived from the old token and the value only (not from agreed time or seed), so an
//!   early execution predicts it.
//! - **files**: `create(path)`, `write(path, offset, bytes)`, `read(path)`, `list(dir)` over
//!   absolute paths (`/a/b`), directories implicit in the paths, files at most
//!   [`MAX_FILE`] bytes. `read` and `list` are reads ([`Application::is_read`]).
//!
//! Ops and replies are fixed little-endian byte layouts (constructors and decoders below);
//! any bytes are an op (unknown or malformed ones answer [`FsStatus::BadOp`] or a failed
//! increment and change nothing).
//!
//! # Objects
//!
//! Counters and files each fall into `2^16` objects by a hash of the counter's id or the
//! file's path; every file's path is the metadata, so `create` (no file under a file, no file
//! where a directory is) and `list` read no file. An operation's access set is the one object
//! of the counter or file it names. The speculation shim's fork copies just those objects
//! from the committed state (shim module docs).

use plumb_app::{
    AccessSet, Application, BatchOutput, Command, LoadError, NonDeterminism, ObjectId, ObjectState,
    ObjectWrite,
};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Seq};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The name the `plumb` binary may register it under.
pub const SPECBENCH_APP: &str = "specbench";
/// Largest file, so a write cannot make replicas allocate without bound.
pub const MAX_FILE: u64 = 1 << 20;
/// Longest path, in bytes.
pub const MAX_PATH: usize = 255;

const INCR: u8 = 0;
const CREATE: u8 = 1;
const WRITE: u8 = 2;
const READ: u8 = 3;
const LIST: u8 = 4;

/// `incr(counter, token)`.
pub fn incr_op(counter: u32, token: u64) -> Vec<u8> {
    let mut op = vec![INCR];
    op.extend_from_slice(&counter.to_le_bytes());
    op.extend_from_slice(&token.to_le_bytes());
    op
}

/// `create(path)`: an empty file.
pub fn create_op(path: &str) -> Vec<u8> {
    let mut op = vec![CREATE];
    op.extend_from_slice(path.as_bytes());
    op
}

/// `write(path, offset, bytes)`: a file grows (with zeros) to hold what is written.
pub fn write_op(path: &str, offset: u64, bytes: &[u8]) -> Vec<u8> {
    let mut op = vec![WRITE];
    op.extend_from_slice(&(path.len() as u16).to_le_bytes());
    op.extend_from_slice(path.as_bytes());
    op.extend_from_slice(&offset.to_le_bytes());
    op.extend_from_slice(bytes);
    op
}

/// `read(path)`: the whole file.
pub fn read_op(path: &str) -> Vec<u8> {
    let mut op = vec![READ];
    op.extend_from_slice(path.as_bytes());
    op
}

/// `list(dir)`: the names directly under `dir` (`/` for the root), subdirectories with a
/// trailing `/`, sorted.
pub fn list_op(dir: &str) -> Vec<u8> {
    let mut op = vec![LIST];
    op.extend_from_slice(dir.as_bytes());
    op
}

/// What an increment answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncrReply {
    /// The counter's new value and the token the next increment must carry.
    Done { value: u64, token: u64 },
    /// Wrong token: the counter's current value, and no token.
    WrongToken { value: u64 },
}

impl IncrReply {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(17);
        match *self {
            IncrReply::Done { value, token } => {
                out.push(0);
                out.extend_from_slice(&value.to_le_bytes());
                out.extend_from_slice(&token.to_le_bytes());
            }
            IncrReply::WrongToken { value } => {
                out.push(1);
                out.extend_from_slice(&value.to_le_bytes());
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<IncrReply> {
        match (bytes.first()?, bytes.len()) {
            (0, 17) => Some(IncrReply::Done {
                value: u64_at(bytes, 1)?,
                token: u64_at(bytes, 9)?,
            }),
            (1, 9) => Some(IncrReply::WrongToken {
                value: u64_at(bytes, 1)?,
            }),
            _ => None,
        }
    }
}

/// The outcome of a file operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsStatus {
    Ok = 0,
    NotFound = 1,
    Exists = 2,
    BadPath = 3,
    TooLarge = 4,
    BadOp = 5,
}

impl FsStatus {
    fn from_byte(b: u8) -> Option<FsStatus> {
        Some(match b {
            0 => FsStatus::Ok,
            1 => FsStatus::NotFound,
            2 => FsStatus::Exists,
            3 => FsStatus::BadPath,
            4 => FsStatus::TooLarge,
            5 => FsStatus::BadOp,
            _ => return None,
        })
    }
}

/// A file operation's reply: a status byte, then for `read` the file's bytes and for `list`
/// the names (`u16` LE length, bytes, each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsReply {
    Status(FsStatus),
    Data(Vec<u8>),
    Names(Vec<String>),
}

impl FsReply {
    /// Decode a reply to `op` (the shape depends on the op: read, list or other).
    pub fn decode(op: &[u8], bytes: &[u8]) -> Option<FsReply> {
        let (&status, body) = bytes.split_first()?;
        let status = FsStatus::from_byte(status)?;
        if status != FsStatus::Ok {
            return body.is_empty().then_some(FsReply::Status(status));
        }
        match op.first() {
            Some(&READ) => Some(FsReply::Data(body.to_vec())),
            Some(&LIST) => {
                let mut names = Vec::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let len = usize::from(u16::from_le_bytes(rest.get(..2)?.try_into().ok()?));
                    let name = rest.get(2..2 + len)?;
                    names.push(String::from_utf8(name.to_vec()).ok()?);
                    rest = &rest[2 + len..];
                }
                Some(FsReply::Names(names))
            }
            _ => body.is_empty().then_some(FsReply::Status(FsStatus::Ok)),
        }
    }
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// The token that follows `token` when a counter reaches `value`.
pub fn next_token(token: u64, value: u64) -> u64 {
    let d = Digest::of_parts(&[
        b"specbench token",
        &token.to_le_bytes(),
        &value.to_le_bytes(),
    ]);
    u64::from_le_bytes(d.0[..8].try_into().expect("8 bytes"))
}

/// A valid absolute path: `/` then non-empty segments without `/`, no trailing `/`, UTF-8, at
/// most [`MAX_PATH`] bytes. The root `/` itself is a directory, not a file path.
fn path(bytes: &[u8]) -> Option<&str> {
    let p = std::str::from_utf8(bytes).ok()?;
    let ok = p.len() > 1
        && p.len() <= MAX_PATH
        && p.starts_with('/')
        && p[1..].split('/').all(|seg| !seg.is_empty());
    ok.then_some(p)
}

/// Counters fall into `2^COUNTER_BITS` objects by a hash of their id; files into as many
/// objects again (ids from `2^COUNTER_BITS` up) by a hash of their path.
const COUNTER_BITS: u8 = 16;

/// The object a counter lives in.
pub(crate) fn counter_object(id: u32) -> ObjectId {
    ObjectId::hashed(&id.to_le_bytes(), COUNTER_BITS)
}

/// The object a file's bytes live in.
pub(crate) fn file_object(path: &str) -> ObjectId {
    ObjectId((1 << COUNTER_BITS) + ObjectId::hashed(path.as_bytes(), COUNTER_BITS).0)
}

/// The state, kept as its objects (module docs, "Objects"). Empty maps are removed, so equal
/// states are equal structures (the simulator's model compares them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct State {
    /// Counter object → counter id → (value, token the next increment must carry).
    counters: BTreeMap<u64, BTreeMap<u32, (u64, u64)>>,
    /// File object → path → bytes.
    files: BTreeMap<u64, BTreeMap<String, Vec<u8>>>,
    /// Every file's path: the metadata, so that `create` and `list` read no file.
    paths: BTreeSet<String>,
}

/// The counter and file service (module docs). `Eq` and `Hash` (of the state alone): the
/// simulator's linearizability model runs the service itself as its sequential specification.
#[derive(Clone, Debug, Default)]
pub struct SpecBench {
    state: State,
    /// Objects written since [`ObjectState::take_changed_objects`] last ran: bookkeeping, not
    /// state.
    dirty: BTreeSet<ObjectId>,
}

impl PartialEq for SpecBench {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
    }
}

impl Eq for SpecBench {}

impl std::hash::Hash for SpecBench {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.state.hash(h)
    }
}

impl SpecBench {
    pub fn new() -> Self {
        Self::default()
    }

    /// A counter's value and the token its next increment must carry.
    pub fn counter(&self, id: u32) -> (u64, u64) {
        self.state
            .counters
            .get(&counter_object(id).0)
            .and_then(|c| c.get(&id))
            .copied()
            .unwrap_or((0, 0))
    }

    fn file(&self, path: &str) -> Option<&Vec<u8>> {
        self.state.files.get(&file_object(path).0)?.get(path)
    }

    fn incr(&mut self, op: &[u8]) -> Vec<u8> {
        let (Some(id), Some(token)) = (u32_at(op, 1), u64_at(op, 5)) else {
            return IncrReply::WrongToken { value: 0 }.encode();
        };
        let (value, expected) = self.counter(id);
        if op.len() != 13 || token != expected {
            return IncrReply::WrongToken { value }.encode();
        }
        let value = value + 1;
        let token = next_token(token, value);
        let object = counter_object(id);
        self.state
            .counters
            .entry(object.0)
            .or_default()
            .insert(id, (value, token));
        self.dirty.insert(object);
        IncrReply::Done { value, token }.encode()
    }

    fn create(&mut self, op: &[u8]) -> FsStatus {
        let Some(p) = path(&op[1..]) else {
            return FsStatus::BadPath;
        };
        let paths = &self.state.paths;
        // A file cannot be under a file: every proper prefix must not be one.
        if p.match_indices('/')
            .skip(1)
            .any(|(i, _)| paths.contains(&p[..i]))
        {
            return FsStatus::BadPath;
        }
        // A directory is implicit in a file under it; a file may not share its path.
        let as_dir = format!("{p}/");
        if paths.contains(p)
            || paths
                .range(as_dir.clone()..)
                .next()
                .is_some_and(|k| k.starts_with(&as_dir))
        {
            return FsStatus::Exists;
        }
        self.state.paths.insert(p.to_string());
        let object = file_object(p);
        self.state
            .files
            .entry(object.0)
            .or_default()
            .insert(p.to_string(), Vec::new());
        self.dirty.insert(object);
        FsStatus::Ok
    }

    fn write(&mut self, op: &[u8]) -> FsStatus {
        let Some((p, offset, data)) = write_parts(op) else {
            return FsStatus::BadOp;
        };
        let Some(p) = path(p) else {
            return FsStatus::BadPath;
        };
        let object = file_object(p);
        let Some(file) = self
            .state
            .files
            .get_mut(&object.0)
            .and_then(|f| f.get_mut(p))
        else {
            return FsStatus::NotFound;
        };
        let end = offset.saturating_add(data.len() as u64);
        if end > MAX_FILE {
            return FsStatus::TooLarge;
        }
        // Both at most MAX_FILE, so they fit in usize.
        let (offset, end) = (offset as usize, end as usize);
        if file.len() < end {
            file.resize(end, 0);
        }
        file[offset..end].copy_from_slice(data);
        self.dirty.insert(object);
        FsStatus::Ok
    }

    fn read(&self, op: &[u8]) -> Vec<u8> {
        match path(&op[1..]) {
            None => vec![FsStatus::BadPath as u8],
            Some(p) => match self.file(p) {
                None => vec![FsStatus::NotFound as u8],
                Some(data) => {
                    let mut out = Vec::with_capacity(1 + data.len());
                    out.push(FsStatus::Ok as u8);
                    out.extend_from_slice(data);
                    out
                }
            },
        }
    }

    fn list(&self, op: &[u8]) -> Vec<u8> {
        let prefix = match &op[1..] {
            b"/" => "/".to_string(),
            d => match path(d) {
                Some(p) => format!("{p}/"),
                None => return vec![FsStatus::BadPath as u8],
            },
        };
        let mut names: Vec<String> = Vec::new();
        for k in self.state.paths.range(prefix.clone()..) {
            let Some(rest) = k.strip_prefix(&prefix) else {
                break;
            };
            let name = match rest.find('/') {
                Some(i) => format!("{}/", &rest[..i]),
                None => rest.to_string(),
            };
            if names.last() != Some(&name) {
                names.push(name);
            }
        }
        if names.is_empty() && prefix != "/" {
            return vec![FsStatus::NotFound as u8];
        }
        let mut out = vec![FsStatus::Ok as u8];
        for n in names {
            out.extend_from_slice(&(n.len() as u16).to_le_bytes());
            out.extend_from_slice(n.as_bytes());
        }
        out
    }

    fn encode(&self) -> Vec<u8> {
        postcard::to_stdvec(&self.state).expect("state encodes")
    }
}

/// A write's path bytes, offset and data, if the op is long enough to hold them.
fn write_parts(op: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    let len = op.get(1..3)?;
    let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
    let p = op.get(3..3 + len)?;
    let offset = u64_at(op, 3 + len)?;
    Some((p, offset, &op[3 + len + 8..]))
}

/// Objects: counters and files each in `2^16` objects by a hash of their id or path, the
/// paths as the metadata. An operation's access set is the object of the counter or file it
/// names (`list` reads the paths alone); a malformed op touches nothing.
impl ObjectState for SpecBench {
    fn object_id_bits(&self) -> u8 {
        COUNTER_BITS + 1
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        std::mem::take(&mut self.dirty)
            .into_iter()
            .map(|id| (id, self.object_bytes(id)))
            .collect()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        let encoded = if id.0 >> COUNTER_BITS == 0 {
            self.state.counters.get(&id.0).map(postcard::to_stdvec)
        } else {
            self.state.files.get(&id.0).map(postcard::to_stdvec)
        };
        // Serialising maps of integers, strings and bytes into memory cannot fail.
        encoded.map(|b| b.expect("object encodes"))
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        let corrupt = |e: String| LoadError::Corrupt(format!("specbench object {}: {e}", id.0));
        if id.0 >> (COUNTER_BITS + 1) != 0 {
            return Err(corrupt("id out of range".into()));
        }
        let bytes = bytes.filter(|b| !b.is_empty());
        if id.0 >> COUNTER_BITS == 0 {
            let counters: BTreeMap<u32, (u64, u64)> = match bytes {
                Some(b) => postcard::from_bytes(b).map_err(|e| corrupt(e.to_string()))?,
                None => BTreeMap::new(),
            };
            if counters.keys().any(|&c| counter_object(c) != id) {
                return Err(corrupt("a counter of another object".into()));
            }
            set_or_remove(&mut self.state.counters, id, counters);
        } else {
            let files: BTreeMap<String, Vec<u8>> = match bytes {
                Some(b) => postcard::from_bytes(b).map_err(|e| corrupt(e.to_string()))?,
                None => BTreeMap::new(),
            };
            if files.keys().any(|p| file_object(p) != id) {
                return Err(corrupt("a file of another object".into()));
            }
            set_or_remove(&mut self.state.files, id, files);
        }
        self.dirty.remove(&id);
        Ok(())
    }

    fn object_metadata(&self) -> Vec<u8> {
        // A set of strings in memory always serialises.
        postcard::to_stdvec(&self.state.paths).expect("paths encode")
    }

    fn load_object_metadata(&mut self, metadata: &[u8]) -> Result<(), LoadError> {
        self.state.paths = postcard::from_bytes(metadata)
            .map_err(|e| LoadError::Corrupt(format!("specbench paths: {e}")))?;
        Ok(())
    }

    fn access_set(&self, op: &[u8]) -> AccessSet {
        let path_object = |p: &[u8]| path(p).map(file_object);
        let object = match op.first() {
            Some(&INCR) => u32_at(op, 1).map(counter_object),
            Some(&CREATE) | Some(&READ) => path_object(&op[1..]),
            Some(&WRITE) => write_parts(op).and_then(|(p, _, _)| path_object(p)),
            _ => None,
        };
        AccessSet::objects(object)
    }
}

/// Put `value` at `key`, or remove `key` when `value` is empty (an empty object is absent).
fn set_or_remove<K, V>(
    map: &mut BTreeMap<u64, BTreeMap<K, V>>,
    id: ObjectId,
    value: BTreeMap<K, V>,
) {
    if value.is_empty() {
        map.remove(&id.0);
    } else {
        map.insert(id.0, value);
    }
}

impl Application for SpecBench {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|c| match c.op.first() {
                Some(&INCR) => self.incr(c.op),
                Some(&CREATE) => vec![self.create(c.op) as u8],
                Some(&WRITE) => vec![self.write(c.op) as u8],
                Some(&READ) => self.read(c.op),
                Some(&LIST) => self.list(c.op),
                _ => vec![FsStatus::BadOp as u8],
            })
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        match op.first() {
            Some(&READ) => self.read(op),
            Some(&LIST) => self.list(op),
            _ => vec![FsStatus::BadOp as u8],
        }
    }

    fn is_read(&self, op: &[u8]) -> bool {
        matches!(op.first(), Some(&READ) | Some(&LIST))
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.encode()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        self.state = postcard::from_bytes(checkpoint)
            .map_err(|e| LoadError::Corrupt(format!("specbench checkpoint: {e}")))?;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.encode())
    }

    fn objects(&mut self) -> Option<&mut dyn ObjectState> {
        Some(self)
    }
}
