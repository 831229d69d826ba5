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
//! increment and change nothing). Checkpoints are the whole state; it is small.

use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Seq};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct State {
    /// Counter id → (value, token the next increment must carry).
    counters: BTreeMap<u32, (u64, u64)>,
    files: BTreeMap<String, Vec<u8>>,
}

/// The counter and file service (module docs). `Eq` and `Hash`: the simulator's
/// linearizability model runs the service itself as its sequential specification.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpecBench {
    state: State,
}

impl SpecBench {
    pub fn new() -> Self {
        Self::default()
    }

    /// A counter's value and the token its next increment must carry.
    pub fn counter(&self, id: u32) -> (u64, u64) {
        self.state.counters.get(&id).copied().unwrap_or((0, 0))
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
        self.state.counters.insert(id, (value, token));
        IncrReply::Done { value, token }.encode()
    }

    fn create(&mut self, op: &[u8]) -> FsStatus {
        let Some(p) = path(&op[1..]) else {
            return FsStatus::BadPath;
        };
        // A file cannot be under a file: every proper prefix must not be one.
        if p.match_indices('/')
            .skip(1)
            .any(|(i, _)| self.state.files.contains_key(&p[..i]))
        {
            return FsStatus::BadPath;
        }
        // A directory is implicit in a file under it; a file may not share its path.
        let as_dir = format!("{p}/");
        if self.state.files.contains_key(p)
            || self
                .state
                .files
                .range(as_dir.clone()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&as_dir))
        {
            return FsStatus::Exists;
        }
        self.state.files.insert(p.to_string(), Vec::new());
        FsStatus::Ok
    }

    fn write(&mut self, op: &[u8]) -> FsStatus {
        let Some(len) = op.get(1..3) else {
            return FsStatus::BadOp;
        };
        let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        let (Some(p), Some(offset)) = (op.get(3..3 + len), u64_at(op, 3 + len)) else {
            return FsStatus::BadOp;
        };
        let Some(p) = path(p) else {
            return FsStatus::BadPath;
        };
        let data = &op[3 + len + 8..];
        let Some(file) = self.state.files.get_mut(p) else {
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
        FsStatus::Ok
    }

    fn read(&self, op: &[u8]) -> Vec<u8> {
        match path(&op[1..]) {
            None => vec![FsStatus::BadPath as u8],
            Some(p) => match self.state.files.get(p) {
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
        for (k, _) in self.state.files.range(prefix.clone()..) {
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
}
