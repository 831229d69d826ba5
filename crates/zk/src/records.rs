//! ZooKeeper's records (`zookeeper.jute`), field for field: the handshake, the headers, every
//! request a client sends and every response a server returns.

use crate::jute::{len_i32, JuteError, Reader, Result, Writer};

/// Operation codes (`ZooDefs.OpCode`).
pub mod op {
    pub const NOTIFICATION: i32 = 0;
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const GET_ACL: i32 = 6;
    pub const SET_ACL: i32 = 7;
    pub const GET_CHILDREN: i32 = 8;
    pub const SYNC: i32 = 9;
    pub const PING: i32 = 11;
    pub const GET_CHILDREN2: i32 = 12;
    pub const CHECK: i32 = 13;
    pub const MULTI: i32 = 14;
    pub const CREATE2: i32 = 15;
    pub const RECONFIG: i32 = 16;
    pub const CHECK_WATCHES: i32 = 17;
    pub const REMOVE_WATCHES: i32 = 18;
    pub const CREATE_CONTAINER: i32 = 19;
    pub const DELETE_CONTAINER: i32 = 20;
    pub const CREATE_TTL: i32 = 21;
    pub const MULTI_READ: i32 = 22;
    pub const AUTH: i32 = 100;
    pub const SET_WATCHES: i32 = 101;
    pub const SASL: i32 = 102;
    pub const GET_EPHEMERALS: i32 = 103;
    pub const GET_ALL_CHILDREN_NUMBER: i32 = 104;
    pub const SET_WATCHES2: i32 = 105;
    pub const ADD_WATCH: i32 = 106;
    pub const WHO_AM_I: i32 = 107;
    pub const CREATE_SESSION: i32 = -10;
    pub const CLOSE_SESSION: i32 = -11;
    /// A multi's result that failed (`OpCode.error`), and the type of its closing header.
    pub const ERROR: i32 = -1;
}

/// The xids a client uses for requests that are not numbered.
pub mod xid {
    /// A watch notification (server to client).
    pub const NOTIFICATION: i32 = -1;
    pub const PING: i32 = -2;
    pub const AUTH: i32 = -4;
    pub const SET_WATCHES: i32 = -8;
}

/// Error codes (`KeeperException.Code`) a server puts in reply headers.
pub mod err {
    pub const OK: i32 = 0;
    pub const SYSTEM_ERROR: i32 = -1;
    pub const RUNTIME_INCONSISTENCY: i32 = -2;
    pub const CONNECTION_LOSS: i32 = -4;
    pub const MARSHALLING_ERROR: i32 = -5;
    pub const UNIMPLEMENTED: i32 = -6;
    pub const OPERATION_TIMEOUT: i32 = -7;
    pub const BAD_ARGUMENTS: i32 = -8;
    pub const API_ERROR: i32 = -100;
    pub const NO_NODE: i32 = -101;
    pub const NO_AUTH: i32 = -102;
    pub const SESSION_EXPIRED: i32 = -112;
    pub const AUTH_FAILED: i32 = -115;
    pub const NO_WATCHER: i32 = -121;
}

/// Session states in a [`WatcherEvent`] (`Watcher.Event.KeeperState`).
pub mod state {
    pub const DISCONNECTED: i32 = 0;
    pub const SYNC_CONNECTED: i32 = 3;
    pub const AUTH_FAILED: i32 = 4;
    pub const EXPIRED: i32 = -112;
    pub const CLOSED: i32 = 7;
}

/// Event types in a [`WatcherEvent`] (`Watcher.Event.EventType`); `NONE` is a state change.
pub mod event {
    pub const NONE: i32 = -1;
}

/// A znode's metadata (`Stat`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
    pub data_length: i32,
    pub num_children: i32,
    pub pzxid: i64,
}

/// Encoded size of a [`Stat`].
pub const STAT_LEN: usize = 68;

impl Stat {
    pub fn read(r: &mut Reader) -> Result<Stat> {
        Ok(Stat {
            czxid: r.long()?,
            mzxid: r.long()?,
            ctime: r.long()?,
            mtime: r.long()?,
            version: r.int()?,
            cversion: r.int()?,
            aversion: r.int()?,
            ephemeral_owner: r.long()?,
            data_length: r.int()?,
            num_children: r.int()?,
            pzxid: r.long()?,
        })
    }
    pub fn write(&self, w: &mut Vec<u8>) {
        w.long(self.czxid);
        w.long(self.mzxid);
        w.long(self.ctime);
        w.long(self.mtime);
        w.int(self.version);
        w.int(self.cversion);
        w.int(self.aversion);
        w.long(self.ephemeral_owner);
        w.int(self.data_length);
        w.int(self.num_children);
        w.long(self.pzxid);
    }
}

/// An access control entry (`ACL`: perms, then `Id` scheme and id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    pub perms: i32,
    pub scheme: String,
    pub id: String,
}

impl Acl {
    fn read(r: &mut Reader) -> Result<Acl> {
        Ok(Acl {
            perms: r.int()?,
            scheme: r.ustring()?,
            id: r.ustring()?,
        })
    }
    fn write(&self, w: &mut Vec<u8>) {
        w.int(self.perms);
        w.ustring(&self.scheme);
        w.ustring(&self.id);
    }
}

fn read_acls(r: &mut Reader) -> Result<Vec<Acl>> {
    r.vector(12, Acl::read)
}

fn write_acls(w: &mut Vec<u8>, acls: &[Acl]) {
    w.int(len_i32(acls.len()));
    for a in acls {
        a.write(w);
    }
}

/// The handshake's last field, `read_only`, which clients older than 3.4 leave out: absent
/// when no bytes are left.
fn read_trailing_read_only(r: &mut Reader) -> Result<Option<bool>> {
    if r.remaining() > 0 {
        Ok(Some(r.boolean()?))
    } else {
        Ok(None)
    }
}

fn write_trailing_read_only(w: &mut Vec<u8>, read_only: Option<bool>) {
    if let Some(ro) = read_only {
        w.boolean(ro);
    }
}

/// The client's first frame (`ConnectRequest`). `read_only` is absent from clients older than
/// 3.4; the reply then leaves it out too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectRequest {
    pub protocol_version: i32,
    pub last_zxid_seen: i64,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub password: Vec<u8>,
    pub read_only: Option<bool>,
}

impl ConnectRequest {
    pub fn decode(bytes: &[u8]) -> Result<ConnectRequest> {
        let mut r = Reader::new(bytes);
        Ok(ConnectRequest {
            protocol_version: r.int()?,
            last_zxid_seen: r.long()?,
            timeout_ms: r.int()?,
            session_id: r.long()?,
            password: r.buffer()?,
            read_only: read_trailing_read_only(&mut r)?,
        })
    }
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Vec::new();
        w.int(self.protocol_version);
        w.long(self.last_zxid_seen);
        w.int(self.timeout_ms);
        w.long(self.session_id);
        w.buffer(&self.password);
        write_trailing_read_only(&mut w, self.read_only);
        w
    }
}

/// The server's answer to the handshake (`ConnectResponse`). A refused session (expired, or a
/// wrong password) is timeout 0 and session 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub password: Vec<u8>,
    pub read_only: Option<bool>,
}

impl ConnectResponse {
    pub fn decode(bytes: &[u8]) -> Result<ConnectResponse> {
        let mut r = Reader::new(bytes);
        Ok(ConnectResponse {
            protocol_version: r.int()?,
            timeout_ms: r.int()?,
            session_id: r.long()?,
            password: r.buffer()?,
            read_only: read_trailing_read_only(&mut r)?,
        })
    }
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Vec::new();
        w.int(self.protocol_version);
        w.int(self.timeout_ms);
        w.long(self.session_id);
        w.buffer(&self.password);
        write_trailing_read_only(&mut w, self.read_only);
        w
    }
}

/// What starts every request after the handshake (`RequestHeader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub xid: i32,
    pub op: i32,
}

impl RequestHeader {
    pub fn read(r: &mut Reader) -> Result<RequestHeader> {
        Ok(RequestHeader {
            xid: r.int()?,
            op: r.int()?,
        })
    }
    pub fn write(&self, w: &mut Vec<u8>) {
        w.int(self.xid);
        w.int(self.op);
    }
}

/// What starts every reply and notification (`ReplyHeader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyHeader {
    pub xid: i32,
    pub zxid: i64,
    pub err: i32,
}

impl ReplyHeader {
    pub fn read(r: &mut Reader) -> Result<ReplyHeader> {
        Ok(ReplyHeader {
            xid: r.int()?,
            zxid: r.long()?,
            err: r.int()?,
        })
    }
    pub fn write(&self, w: &mut Vec<u8>) {
        w.int(self.xid);
        w.long(self.zxid);
        w.int(self.err);
    }
}

/// A watch notification's body (`WatcherEvent`), after a [`ReplyHeader`] with xid -1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatcherEvent {
    pub kind: i32,
    pub state: i32,
    pub path: String,
}

impl WatcherEvent {
    pub fn read(r: &mut Reader) -> Result<WatcherEvent> {
        Ok(WatcherEvent {
            kind: r.int()?,
            state: r.int()?,
            path: r.ustring()?,
        })
    }
    pub fn write(&self, w: &mut Vec<u8>) {
        w.int(self.kind);
        w.int(self.state);
        w.ustring(&self.path);
    }
}

/// Precedes each operation of a multi and each of its results (`MultiHeader`); a header with
/// `done` set (type -1, err -1) ends the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiHeader {
    pub op: i32,
    pub done: bool,
    pub err: i32,
}

impl MultiHeader {
    pub const END: MultiHeader = MultiHeader {
        op: -1,
        done: true,
        err: -1,
    };
    fn read(r: &mut Reader) -> Result<MultiHeader> {
        Ok(MultiHeader {
            op: r.int()?,
            done: r.boolean()?,
            err: r.int()?,
        })
    }
    fn write(&self, w: &mut Vec<u8>) {
        w.int(self.op);
        w.boolean(self.done);
        w.int(self.err);
    }

    /// A multi's items up to the closing header, each read by `each` from the header before
    /// it. A list that ends without the closing header is [`JuteError::Unterminated`].
    fn read_list<'a, T>(
        r: &mut Reader<'a>,
        mut each: impl FnMut(MultiHeader, &mut Reader<'a>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        loop {
            let h = MultiHeader::read(r).map_err(|_| JuteError::Unterminated)?;
            if h.done {
                return Ok(items);
            }
            items.push(each(h, r)?);
        }
    }

    /// `items`, each after the header `header` gives it and written by `body`, then the
    /// closing header.
    fn write_list<T>(
        w: &mut Vec<u8>,
        items: &[T],
        header: impl Fn(&T) -> MultiHeader,
        body: impl Fn(&T, &mut Vec<u8>),
    ) {
        for item in items {
            header(item).write(w);
            body(item, w);
        }
        MultiHeader::END.write(w);
    }
}

/// A request's body, by its operation code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// create (1), create2 (15), createContainer (19) and createTTL (21, the only one with
    /// `ttl` on the wire): `op` says which, and so which response the client reads.
    Create {
        op: i32,
        path: String,
        data: Vec<u8>,
        acl: Vec<Acl>,
        flags: i32,
        ttl: i64,
    },
    Delete {
        path: String,
        version: i32,
    },
    Exists {
        path: String,
        watch: bool,
    },
    GetData {
        path: String,
        watch: bool,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: i32,
    },
    GetAcl {
        path: String,
    },
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: i32,
    },
    /// getChildren (8) or getChildren2 (12, whose response adds the parent's stat).
    GetChildren {
        op: i32,
        path: String,
        watch: bool,
    },
    Sync {
        path: String,
    },
    Ping,
    Check {
        path: String,
        version: i32,
    },
    /// multi (14) or multiRead (22): operations that are not themselves multis.
    Multi {
        op: i32,
        ops: Vec<Request>,
    },
    RemoveWatches {
        path: String,
        kind: i32,
    },
    Auth {
        kind: i32,
        scheme: String,
        auth: Vec<u8>,
    },
    /// setWatches (101; `persistent` and `persistent_recursive` empty) or setWatches2 (105).
    SetWatches {
        op: i32,
        relative_zxid: i64,
        data: Vec<String>,
        exist: Vec<String>,
        child: Vec<String>,
        persistent: Vec<String>,
        persistent_recursive: Vec<String>,
    },
    GetEphemerals {
        prefix: String,
    },
    GetAllChildrenNumber {
        path: String,
    },
    AddWatch {
        path: String,
        mode: i32,
    },
    WhoAmI,
    CloseSession,
}

impl Request {
    /// The operation code it goes under.
    pub fn op(&self) -> i32 {
        match self {
            Request::Create { op, .. }
            | Request::GetChildren { op, .. }
            | Request::Multi { op, .. }
            | Request::SetWatches { op, .. } => *op,
            Request::Delete { .. } => op::DELETE,
            Request::Exists { .. } => op::EXISTS,
            Request::GetData { .. } => op::GET_DATA,
            Request::SetData { .. } => op::SET_DATA,
            Request::GetAcl { .. } => op::GET_ACL,
            Request::SetAcl { .. } => op::SET_ACL,
            Request::Sync { .. } => op::SYNC,
            Request::Ping => op::PING,
            Request::Check { .. } => op::CHECK,
            Request::RemoveWatches { .. } => op::REMOVE_WATCHES,
            Request::Auth { .. } => op::AUTH,
            Request::GetEphemerals { .. } => op::GET_EPHEMERALS,
            Request::GetAllChildrenNumber { .. } => op::GET_ALL_CHILDREN_NUMBER,
            Request::AddWatch { .. } => op::ADD_WATCH,
            Request::WhoAmI => op::WHO_AM_I,
            Request::CloseSession => op::CLOSE_SESSION,
        }
    }

    /// The body of a request of type `op`. Bytes after the record are ignored, as ZooKeeper's
    /// server does.
    pub fn decode(op: i32, body: &[u8]) -> Result<Request> {
        let mut r = Reader::new(body);
        Request::read(op, &mut r, true)
    }

    fn read(code: i32, r: &mut Reader, top: bool) -> Result<Request> {
        Ok(match code {
            op::CREATE | op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => Request::Create {
                op: code,
                path: r.ustring()?,
                data: r.buffer()?,
                acl: read_acls(r)?,
                flags: r.int()?,
                ttl: if code == op::CREATE_TTL { r.long()? } else { 0 },
            },
            op::DELETE => Request::Delete {
                path: r.ustring()?,
                version: r.int()?,
            },
            op::EXISTS => Request::Exists {
                path: r.ustring()?,
                watch: r.boolean()?,
            },
            op::GET_DATA => Request::GetData {
                path: r.ustring()?,
                watch: r.boolean()?,
            },
            op::SET_DATA => Request::SetData {
                path: r.ustring()?,
                data: r.buffer()?,
                version: r.int()?,
            },
            op::GET_ACL => Request::GetAcl { path: r.ustring()? },
            op::SET_ACL => Request::SetAcl {
                path: r.ustring()?,
                acl: read_acls(r)?,
                version: r.int()?,
            },
            op::GET_CHILDREN | op::GET_CHILDREN2 => Request::GetChildren {
                op: code,
                path: r.ustring()?,
                watch: r.boolean()?,
            },
            op::SYNC if top => Request::Sync { path: r.ustring()? },
            op::PING if top => Request::Ping,
            op::CHECK => Request::Check {
                path: r.ustring()?,
                version: r.int()?,
            },
            op::MULTI | op::MULTI_READ if top => Request::Multi {
                op: code,
                ops: MultiHeader::read_list(r, |h, r| Request::read(h.op, r, false))?,
            },
            op::REMOVE_WATCHES if top => Request::RemoveWatches {
                path: r.ustring()?,
                kind: r.int()?,
            },
            op::AUTH if top => Request::Auth {
                kind: r.int()?,
                scheme: r.ustring()?,
                auth: r.buffer()?,
            },
            op::SET_WATCHES | op::SET_WATCHES2 if top => {
                let relative_zxid = r.long()?;
                let data = r.strings()?;
                let exist = r.strings()?;
                let child = r.strings()?;
                let (persistent, persistent_recursive) = if code == op::SET_WATCHES2 {
                    (r.strings()?, r.strings()?)
                } else {
                    (Vec::new(), Vec::new())
                };
                Request::SetWatches {
                    op: code,
                    relative_zxid,
                    data,
                    exist,
                    child,
                    persistent,
                    persistent_recursive,
                }
            }
            op::GET_EPHEMERALS if top => Request::GetEphemerals {
                prefix: r.ustring()?,
            },
            op::GET_ALL_CHILDREN_NUMBER if top => {
                Request::GetAllChildrenNumber { path: r.ustring()? }
            }
            op::ADD_WATCH if top => Request::AddWatch {
                path: r.ustring()?,
                mode: r.int()?,
            },
            op::WHO_AM_I if top => Request::WhoAmI,
            op::CLOSE_SESSION if top => Request::CloseSession,
            other => return Err(JuteError::UnknownOp(other)),
        })
    }

    /// The body's bytes (without the request header).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Vec::new();
        self.write(&mut w);
        w
    }

    fn write(&self, w: &mut Vec<u8>) {
        match self {
            Request::Create {
                op,
                path,
                data,
                acl,
                flags,
                ttl,
            } => {
                w.ustring(path);
                w.buffer(data);
                write_acls(w, acl);
                w.int(*flags);
                if *op == op::CREATE_TTL {
                    w.long(*ttl);
                }
            }
            Request::Delete { path, version } | Request::Check { path, version } => {
                w.ustring(path);
                w.int(*version);
            }
            Request::Exists { path, watch }
            | Request::GetData { path, watch }
            | Request::GetChildren { path, watch, .. } => {
                w.ustring(path);
                w.boolean(*watch);
            }
            Request::SetData {
                path,
                data,
                version,
            } => {
                w.ustring(path);
                w.buffer(data);
                w.int(*version);
            }
            Request::GetAcl { path }
            | Request::Sync { path }
            | Request::GetAllChildrenNumber { path }
            | Request::GetEphemerals { prefix: path } => w.ustring(path),
            Request::SetAcl { path, acl, version } => {
                w.ustring(path);
                write_acls(w, acl);
                w.int(*version);
            }
            Request::Ping | Request::WhoAmI | Request::CloseSession => {}
            Request::Multi { ops, .. } => MultiHeader::write_list(
                w,
                ops,
                |o| MultiHeader {
                    op: o.op(),
                    done: false,
                    err: -1,
                },
                |o, w| o.write(w),
            ),
            Request::RemoveWatches { path, kind: mode } | Request::AddWatch { path, mode } => {
                w.ustring(path);
                w.int(*mode);
            }
            Request::Auth { kind, scheme, auth } => {
                w.int(*kind);
                w.ustring(scheme);
                w.buffer(auth);
            }
            Request::SetWatches {
                op,
                relative_zxid,
                data,
                exist,
                child,
                persistent,
                persistent_recursive,
            } => {
                w.long(*relative_zxid);
                w.strings(data);
                w.strings(exist);
                w.strings(child);
                if *op == op::SET_WATCHES2 {
                    w.strings(persistent);
                    w.strings(persistent_recursive);
                }
            }
        }
    }
}

/// One result of a multi or multiRead (`OpResult`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiResult {
    /// A create under `create` (1): the path only.
    Create {
        path: String,
    },
    /// A create under create2, createContainer or createTTL (`op`): path and stat.
    Create2 {
        op: i32,
        path: String,
        stat: Stat,
    },
    Delete,
    SetData {
        stat: Stat,
    },
    Check,
    GetData {
        data: Vec<u8>,
        stat: Stat,
    },
    GetChildren {
        children: Vec<String>,
    },
    /// A failed operation, or (with 0) one rolled back because another failed.
    Error {
        err: i32,
    },
}

impl MultiResult {
    fn op(&self) -> i32 {
        match self {
            MultiResult::Create { .. } => op::CREATE,
            MultiResult::Create2 { op, .. } => *op,
            MultiResult::Delete => op::DELETE,
            MultiResult::SetData { .. } => op::SET_DATA,
            MultiResult::Check => op::CHECK,
            MultiResult::GetData { .. } => op::GET_DATA,
            MultiResult::GetChildren { .. } => op::GET_CHILDREN,
            MultiResult::Error { .. } => op::ERROR,
        }
    }
}

/// A successful reply's body, by the request it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// delete, setACL's absence of one, check, ping, auth, setWatches, removeWatches,
    /// addWatch, closeSession, and every error reply.
    Empty,
    /// create (1) and sync.
    Path(String),
    /// create2, createContainer, createTTL.
    PathStat {
        path: String,
        stat: Stat,
    },
    /// exists, setData, setACL.
    Stat(Stat),
    Data {
        data: Vec<u8>,
        stat: Stat,
    },
    Acl {
        acl: Vec<Acl>,
        stat: Stat,
    },
    /// getChildren, getEphemerals.
    Children(Vec<String>),
    Children2 {
        children: Vec<String>,
        stat: Stat,
    },
    Count(i32),
    Multi(Vec<MultiResult>),
    /// whoAmI: (scheme, user) per identity.
    WhoAmI(Vec<(String, String)>),
}

impl Response {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Vec::new();
        self.write(&mut w);
        w
    }

    pub fn write(&self, w: &mut Vec<u8>) {
        match self {
            Response::Empty => {}
            Response::Path(p) => w.ustring(p),
            Response::PathStat { path, stat } => {
                w.ustring(path);
                stat.write(w);
            }
            Response::Stat(s) => s.write(w),
            Response::Data { data, stat } => {
                w.buffer(data);
                stat.write(w);
            }
            Response::Acl { acl, stat } => {
                write_acls(w, acl);
                stat.write(w);
            }
            Response::Children(c) => w.strings(c),
            Response::Children2 { children, stat } => {
                w.strings(children);
                stat.write(w);
            }
            Response::Count(n) => w.int(*n),
            Response::Multi(results) => MultiHeader::write_list(
                w,
                results,
                |res| MultiHeader {
                    op: res.op(),
                    done: false,
                    err: match res {
                        MultiResult::Error { err } => *err,
                        _ => 0,
                    },
                },
                |res, w| match res {
                    MultiResult::Create { path } => w.ustring(path),
                    MultiResult::Create2 { path, stat, .. } => {
                        w.ustring(path);
                        stat.write(w);
                    }
                    MultiResult::Delete | MultiResult::Check => {}
                    MultiResult::SetData { stat } => stat.write(w),
                    MultiResult::GetData { data, stat } => {
                        w.buffer(data);
                        stat.write(w);
                    }
                    MultiResult::GetChildren { children } => w.strings(children),
                    MultiResult::Error { err } => w.int(*err),
                },
            ),
            Response::WhoAmI(ids) => {
                w.int(len_i32(ids.len()));
                for (scheme, user) in ids {
                    w.ustring(scheme);
                    w.ustring(user);
                }
            }
        }
    }

    /// The body of a successful reply to a request of type `op` (what a client reads).
    pub fn decode(code: i32, body: &[u8]) -> Result<Response> {
        let mut r = Reader::new(body);
        Ok(match code {
            op::CREATE | op::SYNC => Response::Path(r.ustring()?),
            op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => Response::PathStat {
                path: r.ustring()?,
                stat: Stat::read(&mut r)?,
            },
            op::EXISTS | op::SET_DATA | op::SET_ACL => Response::Stat(Stat::read(&mut r)?),
            op::GET_DATA => Response::Data {
                data: r.buffer()?,
                stat: Stat::read(&mut r)?,
            },
            op::GET_ACL => Response::Acl {
                acl: read_acls(&mut r)?,
                stat: Stat::read(&mut r)?,
            },
            op::GET_CHILDREN | op::GET_EPHEMERALS => Response::Children(r.strings()?),
            op::GET_CHILDREN2 => Response::Children2 {
                children: r.strings()?,
                stat: Stat::read(&mut r)?,
            },
            op::GET_ALL_CHILDREN_NUMBER => Response::Count(r.int()?),
            op::MULTI | op::MULTI_READ => {
                let results = MultiHeader::read_list(&mut r, |h, r| {
                    Ok(match h.op {
                        op::CREATE => MultiResult::Create { path: r.ustring()? },
                        op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL => {
                            MultiResult::Create2 {
                                op: h.op,
                                path: r.ustring()?,
                                stat: Stat::read(r)?,
                            }
                        }
                        op::DELETE => MultiResult::Delete,
                        op::SET_DATA => MultiResult::SetData {
                            stat: Stat::read(r)?,
                        },
                        op::CHECK => MultiResult::Check,
                        op::GET_DATA => MultiResult::GetData {
                            data: r.buffer()?,
                            stat: Stat::read(r)?,
                        },
                        op::GET_CHILDREN => MultiResult::GetChildren {
                            children: r.strings()?,
                        },
                        op::ERROR => MultiResult::Error { err: r.int()? },
                        other => return Err(JuteError::UnknownOp(other)),
                    })
                })?;
                Response::Multi(results)
            }
            op::WHO_AM_I => Response::WhoAmI(r.vector(8, |r| Ok((r.ustring()?, r.ustring()?)))?),
            _ => Response::Empty,
        })
    }
}
