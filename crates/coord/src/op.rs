//! Operations, replies and pushes of the coordination application, and their encoding.
//!
//! The model is ZooKeeper's (seed 004 §7.4 replicated ZooKeeper itself; here the data model is
//! an application of plumb's): a tree of znodes, sessions that own ephemeral nodes and watches,
//! and one-shot or persistent watches whose events are pushed to the gateway that serves the
//! session. The numbers (error codes, create modes, event types, permission bits) are
//! ZooKeeper's own, so a gateway speaking ZooKeeper's wire protocol passes them through.
//!
//! Every encoding is one version byte followed by postcard; variants are only ever appended.
//! Decoding is total and never recurses: a [`Request::Multi`] holds [`MultiOp`]s, which cannot
//! hold another multi.
//!
//! ## Sessions, time and expiry
//! A session is replicated state: [`CoordOp::OpenSession`] creates it (the application picks
//! the id and password from the batch's seed), [`CoordOp::ResumeSession`] lets a client that
//! reconnects, to the same gateway or another, keep it, and [`CoordOp::CloseSession`] ends it.
//! Every operation of a session, and [`CoordOp::Touch`] (a gateway's periodic "these sessions
//! are still connected to me", which stands for ZooKeeper's pings), sets the session's last
//! heard time to the batch's agreed time. At the start of every batch the application expires
//! the sessions not heard of for longer than their timeout: an expiry happens at one point of
//! the order on every replica, deleting the same ephemeral nodes and firing the same watches.
//!
//! ## Watch events and their order
//! ZooKeeper promises that a client sees a watch's notification before it sees the data that
//! changed. Events are numbered per session ([`WatchEvent::number`], from 1), pushed to the
//! identity that last spoke for the session, and kept by the application until the session
//! acknowledges them ([`CoordOp::Session::acked_events`]). Every reply says how many events the
//! session had when it executed ([`Reply::events`]); a gateway holds a reply back until it has
//! delivered that many, fetching any that the (unreliable) push channel lost with
//! [`Request::PendingEvents`].

use serde::{Deserialize, Serialize};

/// Version byte of [`CoordOp`] encodings.
pub const OP_VERSION: u8 = 1;
/// Version byte of [`Reply`] encodings.
pub const REPLY_VERSION: u8 = 1;
/// Version byte of [`Push`] encodings.
pub const PUSH_VERSION: u8 = 1;

/// The most bytes a znode's data may hold (ZooKeeper's default `jute.maxbuffer`, 1 MiB).
pub const MAX_DATA: usize = 1 << 20;
/// Session timeouts are clamped into this range, in milliseconds (ZooKeeper's defaults for a
/// 2 s tick: 2 and 20 ticks).
pub const MIN_SESSION_TIMEOUT_MS: i32 = 4_000;
pub const MAX_SESSION_TIMEOUT_MS: i32 = 40_000;
/// Watch events a session may have unacknowledged; older ones are dropped, and the session's
/// next reply says so ([`Reply::events`] jumps), as a disconnected ZooKeeper client loses
/// events it was not there to see.
pub const MAX_PENDING_EVENTS: usize = 4096;

/// A session's id, chosen by the application (nonzero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionId(pub i64);

/// ZooKeeper's transaction id: the application's count of state changes, which orders every
/// change (czxid, mzxid, pzxid; the zxid of every reply).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Zxid(pub i64);

/// A znode's metadata, field for field ZooKeeper's `Stat`. Times are milliseconds since the
/// epoch, taken from the batch's agreed time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stat {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    /// The owning session of an ephemeral node, 0 for any other.
    pub ephemeral_owner: i64,
    pub data_length: i32,
    pub num_children: i32,
    pub pzxid: i64,
}

/// One access control entry: `perms` (bits of [`perms`]) for `scheme:id`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Acl {
    pub perms: i32,
    pub scheme: String,
    pub id: String,
}

/// ZooKeeper's permission bits.
pub mod perms {
    pub const READ: i32 = 1;
    pub const WRITE: i32 = 2;
    pub const CREATE: i32 = 4;
    pub const DELETE: i32 = 8;
    pub const ADMIN: i32 = 16;
    pub const ALL: i32 = 31;
}

/// How a node is created; the discriminants are ZooKeeper's `CreateMode` flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CreateMode {
    Persistent = 0,
    Ephemeral = 1,
    PersistentSequential = 2,
    EphemeralSequential = 3,
    Container = 4,
    PersistentWithTtl = 5,
    PersistentSequentialWithTtl = 6,
}

impl CreateMode {
    pub fn from_flag(flag: i32) -> Option<CreateMode> {
        Some(match flag {
            0 => CreateMode::Persistent,
            1 => CreateMode::Ephemeral,
            2 => CreateMode::PersistentSequential,
            3 => CreateMode::EphemeralSequential,
            4 => CreateMode::Container,
            5 => CreateMode::PersistentWithTtl,
            6 => CreateMode::PersistentSequentialWithTtl,
            _ => return None,
        })
    }
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }
    pub fn has_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }
}

/// ZooKeeper's error codes (`KeeperException.Code`), the ones this application returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// In a failed multi: this operation was fine but rolled back (`Code.OK` in an error result).
    RolledBack,
    /// In a failed multi: after the failing operation, not tried.
    RuntimeInconsistency,
    DataInconsistency,
    Marshalling,
    Unimplemented,
    BadArguments,
    NoNode,
    NoAuth,
    BadVersion,
    NoChildrenForEphemerals,
    NodeExists,
    NotEmpty,
    SessionExpired,
    InvalidAcl,
    AuthFailed,
    SessionMoved,
    NoWatcher,
}

impl ErrorCode {
    /// The code on ZooKeeper's wire.
    pub fn code(self) -> i32 {
        match self {
            ErrorCode::RolledBack => 0,
            ErrorCode::RuntimeInconsistency => -2,
            ErrorCode::DataInconsistency => -3,
            ErrorCode::Marshalling => -5,
            ErrorCode::Unimplemented => -6,
            ErrorCode::BadArguments => -8,
            ErrorCode::NoNode => -101,
            ErrorCode::NoAuth => -102,
            ErrorCode::BadVersion => -103,
            ErrorCode::NoChildrenForEphemerals => -108,
            ErrorCode::NodeExists => -110,
            ErrorCode::NotEmpty => -111,
            ErrorCode::SessionExpired => -112,
            ErrorCode::InvalidAcl => -114,
            ErrorCode::AuthFailed => -115,
            ErrorCode::SessionMoved => -118,
            ErrorCode::NoWatcher => -121,
        }
    }
}

/// What a watch waits for; the discriminants are ZooKeeper's `WatcherType` (removeWatches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WatchKind {
    Children = 1,
    Data = 2,
    Any = 3,
    Persistent = 4,
    PersistentRecursive = 5,
}

/// A persistent watch's mode (ZooKeeper 3.6 `addWatch`); the discriminants are `AddWatchMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AddWatchMode {
    Persistent = 0,
    PersistentRecursive = 1,
}

/// What happened to a watched node; the discriminants are ZooKeeper's `EventType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventType {
    NodeCreated = 1,
    NodeDeleted = 2,
    NodeDataChanged = 3,
    NodeChildrenChanged = 4,
    DataWatchRemoved = 5,
    ChildWatchRemoved = 6,
    PersistentWatchRemoved = 7,
}

/// One watch notification of one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchEvent {
    /// The session's event count after this event (1 for its first).
    pub number: u64,
    pub kind: EventType,
    pub path: String,
    /// The change that fired it, so a client can order it against replies.
    pub zxid: Zxid,
}

/// What a batch pushes to one identity: events of the sessions it speaks for, in order per
/// session, and the sessions that expired (the gateway tells their connections).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Push {
    pub events: Vec<(SessionId, WatchEvent)>,
    pub expired: Vec<SessionId>,
}

/// An operation of a multi (`multi` holds writes and checks; `multiRead` reads).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MultiOp {
    Create {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        acl: Vec<Acl>,
        mode: CreateMode,
        /// Milliseconds, for the TTL modes (else ignored).
        ttl_ms: i64,
    },
    Delete {
        path: String,
        /// -1: any version.
        version: i32,
    },
    SetData {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    GetData {
        path: String,
    },
    GetChildren {
        path: String,
    },
}

/// One request of a session. Reads that set a watch are ordered like writes, so the watch is
/// registered at one point of the order on every replica.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    Create {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        acl: Vec<Acl>,
        mode: CreateMode,
        ttl_ms: i64,
    },
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        version: i32,
    },
    /// Replies [`Response::Stat`]; a missing node is [`ErrorCode::NoNode`], and with `watch`
    /// registers a watch for its creation, as ZooKeeper does.
    Exists {
        path: String,
        watch: bool,
    },
    GetData {
        path: String,
        watch: bool,
    },
    /// Replies [`Response::Children`] (names sorted by byte order; with the parent's stat, so
    /// a gateway can answer both getChildren and getChildren2).
    GetChildren {
        path: String,
        watch: bool,
    },
    GetAllChildrenNumber {
        path: String,
    },
    GetAcl {
        path: String,
    },
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    /// Atomic: either every operation applies, or none does and the reply gives, per
    /// operation, [`ErrorCode::RolledBack`] before the first failure, its error, and
    /// [`ErrorCode::RuntimeInconsistency`] after it (ZooKeeper's shape).
    Multi(Vec<MultiOp>),
    /// Reads only; each operation succeeds or fails on its own.
    MultiRead(Vec<MultiOp>),
    /// A barrier: replies when every earlier operation has executed.
    Sync {
        path: String,
    },
    AddWatch {
        path: String,
        mode: AddWatchMode,
    },
    RemoveWatches {
        path: String,
        kind: WatchKind,
    },
    /// Re-register the watches of a client that reconnected: for each path, an event fires at
    /// once if the node changed after `relative_zxid` (ZooKeeper's `SetWatches2`).
    SetWatches {
        relative_zxid: Zxid,
        data: Vec<String>,
        exist: Vec<String>,
        child: Vec<String>,
        persistent: Vec<String>,
        persistent_recursive: Vec<String>,
    },
    /// `addauth`: add an identity to the session (`digest` scheme: `user:password`).
    AddAuth {
        scheme: String,
        #[serde(with = "serde_bytes")]
        auth: Vec<u8>,
    },
    /// The session's events after `acked_events` that the application still holds
    /// ([`Response::Events`]): what the push channel lost.
    PendingEvents,
}

/// An operation as the gateway submits it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CoordOp {
    /// A new session; the timeout is clamped to the allowed range. Replies [`Response::Session`].
    OpenSession {
        timeout_ms: i32,
    },
    /// Keep a session after a reconnect; fails with [`ErrorCode::SessionExpired`] if it is gone
    /// or the password is wrong. Replies [`Response::Session`].
    ResumeSession {
        session: SessionId,
        password: [u8; 16],
        timeout_ms: i32,
    },
    CloseSession {
        session: SessionId,
    },
    /// These sessions' clients are connected: reset their expiry. Replies
    /// [`Response::Expired`] with those of them that no longer exist.
    Touch {
        sessions: Vec<SessionId>,
    },
    /// A request on behalf of `session`, which has seen its events up to `acked_events`.
    Session {
        session: SessionId,
        acked_events: u64,
        request: Request,
    },
}

/// A successful reply's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    Empty,
    Session {
        session: SessionId,
        password: [u8; 16],
        timeout_ms: i32,
    },
    Expired(Vec<SessionId>),
    /// The created path (with its sequence number) and the new node's stat.
    Created {
        path: String,
        stat: Stat,
    },
    Stat(Stat),
    Data {
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        stat: Stat,
    },
    Children {
        children: Vec<String>,
        stat: Stat,
    },
    Count(i32),
    Acl {
        acl: Vec<Acl>,
        stat: Stat,
    },
    Multi(Vec<Result<MultiResult, ErrorCode>>),
    Path(String),
    Events(Vec<WatchEvent>),
}

/// One operation's result inside [`Response::Multi`] (not a [`Response`], so that decoding a
/// reply never recurses).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MultiResult {
    Created {
        path: String,
        stat: Stat,
    },
    Deleted,
    Stat(Stat),
    Checked,
    Data {
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        stat: Stat,
    },
    Children {
        children: Vec<String>,
        stat: Stat,
    },
}

/// The reply to a [`CoordOp`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The application's last zxid when the operation executed (0 in a read-only reply: see
    /// `CoordApp::read_only`).
    pub zxid: Zxid,
    /// The session's event count when the operation executed (0 for sessionless operations):
    /// deliver that many events before this reply.
    pub events: u64,
    pub result: Result<Response, ErrorCode>,
}

pub use plumb_app::codec::DecodeError;
use plumb_app::codec::{decode_versioned, encode_versioned};

impl CoordOp {
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(OP_VERSION, self)
    }
    pub fn decode(bytes: &[u8]) -> Result<CoordOp, DecodeError> {
        decode_versioned(OP_VERSION, bytes)
    }
    /// The client connection that this operation speaks for, if any.
    pub fn session(&self) -> Option<SessionId> {
        match self {
            CoordOp::ResumeSession { session, .. }
            | CoordOp::CloseSession { session }
            | CoordOp::Session { session, .. } => Some(*session),
            CoordOp::OpenSession { .. } | CoordOp::Touch { .. } => None,
        }
    }
}

impl Request {
    /// A create, delete or setData as the operation a multi holds (the application applies
    /// one alone as a multi of one); `None` for any other request.
    pub fn as_write(&self) -> Option<MultiOp> {
        Some(match self {
            Request::Create {
                path,
                data,
                acl,
                mode,
                ttl_ms,
            } => MultiOp::Create {
                path: path.clone(),
                data: data.clone(),
                acl: acl.clone(),
                mode: *mode,
                ttl_ms: *ttl_ms,
            },
            Request::Delete { path, version } => MultiOp::Delete {
                path: path.clone(),
                version: *version,
            },
            Request::SetData {
                path,
                data,
                version,
            } => MultiOp::SetData {
                path: path.clone(),
                data: data.clone(),
                version: *version,
            },
            _ => return None,
        })
    }
}

impl MultiOp {
    /// The request that does this operation alone; a read sets no watch.
    pub fn into_request(self) -> Request {
        match self {
            MultiOp::Create {
                path,
                data,
                acl,
                mode,
                ttl_ms,
            } => Request::Create {
                path,
                data,
                acl,
                mode,
                ttl_ms,
            },
            MultiOp::Delete { path, version } => Request::Delete { path, version },
            MultiOp::SetData {
                path,
                data,
                version,
            } => Request::SetData {
                path,
                data,
                version,
            },
            MultiOp::Check { path, version } => Request::Check { path, version },
            MultiOp::GetData { path } => Request::GetData { path, watch: false },
            MultiOp::GetChildren { path } => Request::GetChildren { path, watch: false },
        }
    }
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(REPLY_VERSION, self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Reply, DecodeError> {
        decode_versioned(REPLY_VERSION, bytes)
    }
}

impl Push {
    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(PUSH_VERSION, self)
    }
    pub fn decode(bytes: &[u8]) -> Result<Push, DecodeError> {
        decode_versioned(PUSH_VERSION, bytes)
    }
}
