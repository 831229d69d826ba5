//! The coordination application (`plumb-coord`, ZooKeeper's data model) under simulation:
//! `plumb sim --app coord`.
//!
//! Workload: every correct client opens a session and works through it. Its first session (and
//! every other one after it) is short-lived: a 4 s timeout, and after a few operations the
//! client stops using it and opens another, so the abandoned session expires in agreed time.
//! The other sessions have a 40 s timeout and are kept (they still expire if a fault cuts
//! their client off for that long). [`SimApp::bind`] puts the client's live session, learned
//! from its own earlier replies, into each operation, and acknowledges the events its replies
//! announced.
//!
//! Operations: under `/kI` (one per seed object), creates of `/kI`, `/kI/a`, `/kI/b`, `/kI/q`
//! and sequential `/kI/q/s-`, deletes and setData with versions, checks, multis of them, and
//! reads that set watches half the time; under `/e-kI`, ephemeral and ephemeral-sequential
//! nodes and reads with watches on them.
//!
//! Checks, besides the library's properties:
//! - linearizability of the `/kI` operations against plumb-lincheck's coordination model
//!   (partitioned by top-level node). The `/e-kI` subtrees are left out whole: their ephemeral
//!   nodes vanish at expiry, at an agreed time clients do not see. Leaving out every operation
//!   on objects that no modelled operation touches keeps the check sound (linearizability is
//!   local). A reply `SessionExpired` (a session that expired under a fault) has no effect;
//!   it is recorded as unanswered.
//! - `COORD-ephemeral` on every replayed state: every ephemeral node's owner is a live session
//!   (an expired or closed session's ephemerals are gone), and every node's `numChildren` is
//!   its number of children.
//! - `COORD-sequence` on the agreed history: sequential names under one parent rise strictly.
//! - `COORD-watch` on the pushes correct clients received: one event per number per session;
//!   each data or child event consumes a one-shot registration of that session on that path
//!   made strictly before the change (registration zxid < event zxid), so a watch fires at most
//!   once per registration and never for a change it had already seen; and an event's zxid is
//!   that of a change of the agreed history to that path of that kind (deletions by expiry,
//!   whose zxid no request took, excepted).

use crate::tree::NodeKind;
use crate::{
    acl, is_read_only, CoordApp, CoordOp, CreateMode, ErrorCode, EventType, MultiOp, MultiResult,
    Push, Reply, Request, Response, SessionId, Stat,
};
use plumb_sim::app::{AppViolation, Executed, Lease, LeaseKind, LeaseOp, OpRecord, SimApp};
use plumb_sim::lincheck::coord::{CoordModel, StatLite, ZErr, ZOp, ZRet};
use plumb_sim::SimRng;
use plumb_wire::ClientId;
use std::collections::{BTreeMap, BTreeSet};

/// The coordination application under simulation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coord;

/// A short-lived session's timeout, and how many operations its client makes before it stops
/// using it.
const SHORT_TIMEOUT_MS: i32 = 4_000;
const SHORT_LIFE_OPS: usize = 6;
const LONG_TIMEOUT_MS: i32 = 40_000;
/// The session id operations carry until [`SimApp::bind`] replaces it (no session has it).
const UNBOUND: SessionId = SessionId(0);

fn object(rng: &mut SimRng, objects: &[Vec<u8>]) -> String {
    let k = rng.pick(objects).map_or(b"k0".as_slice(), |k| k.as_slice());
    String::from_utf8_lossy(k).into_owned()
}

fn data(rng: &mut SimRng) -> Vec<u8> {
    format!("{}", rng.index(4)).into_bytes()
}

fn version(rng: &mut SimRng) -> i32 {
    rng.index(4) as i32 - 1
}

fn session_op(request: Request) -> Vec<u8> {
    CoordOp::Session {
        session: UNBOUND,
        acked_events: 0,
        request,
    }
    .encode()
}

/// A modelled path under `/k`.
fn kpath(rng: &mut SimRng, k: &str) -> String {
    match rng.index(4) {
        0 => format!("/{k}"),
        1 => format!("/{k}/a"),
        2 => format!("/{k}/b"),
        _ => format!("/{k}/q"),
    }
}

fn write(rng: &mut SimRng, k: &str) -> MultiOp {
    let path = kpath(rng, k);
    match rng.index(5) {
        0 if rng.chance(0.5) => MultiOp::Create {
            path: format!("/{k}/q/s-"),
            data: data(rng),
            acl: acl::open_acl(),
            mode: CreateMode::PersistentSequential,
            ttl_ms: 0,
        },
        0 | 1 => MultiOp::Create {
            path,
            data: data(rng),
            acl: acl::open_acl(),
            mode: CreateMode::Persistent,
            ttl_ms: 0,
        },
        2 => MultiOp::Delete {
            path,
            version: version(rng),
        },
        3 => MultiOp::SetData {
            path,
            data: data(rng),
            version: version(rng),
        },
        _ => MultiOp::Check {
            path,
            version: version(rng),
        },
    }
}

fn read(rng: &mut SimRng, path: String) -> Request {
    let watch = rng.chance(0.5);
    match rng.index(3) {
        0 => Request::GetData { path, watch },
        1 => Request::Exists { path, watch },
        _ => Request::GetChildren { path, watch },
    }
}

/// An operation on the ephemeral subtree `/e-k`.
fn ephemeral_op(rng: &mut SimRng, k: &str) -> Request {
    let dir = format!("/e-{k}");
    let create = |path: String, mode| Request::Create {
        path,
        data: Vec::new(),
        acl: acl::open_acl(),
        mode,
        ttl_ms: 0,
    };
    match rng.index(6) {
        0 => create(dir, CreateMode::Persistent),
        1 => create(format!("{dir}/lock"), CreateMode::Ephemeral),
        2 => create(format!("{dir}/n-"), CreateMode::EphemeralSequential),
        3 => Request::Delete {
            path: format!("{dir}/lock"),
            version: -1,
        },
        4 => read(rng, format!("{dir}/lock")),
        _ => read(rng, dir),
    }
}

/// The client's live session (with its timeout and the operations made through it since it
/// was opened), if it has one it still uses; and how many sessions it opened.
fn live_session(past: &[OpRecord]) -> (Option<(SessionId, i32, usize)>, usize) {
    let mut opened = 0;
    let mut live: Option<(SessionId, i32, usize)> = None;
    for rec in past {
        let Ok(op) = CoordOp::decode(&rec.op) else {
            continue;
        };
        let reply = rec
            .response
            .as_ref()
            .and_then(|r| Reply::decode(&r.result).ok());
        match op {
            CoordOp::OpenSession { .. } => {
                opened += 1;
                if let Some(Reply {
                    result:
                        Ok(Response::Session {
                            session,
                            timeout_ms,
                            ..
                        }),
                    ..
                }) = reply
                {
                    live = Some((session, timeout_ms, 0));
                }
            }
            CoordOp::Session { session, .. } => {
                if let Some((id, _, uses)) = &mut live {
                    if *id == session {
                        *uses += 1;
                        if matches!(
                            reply,
                            Some(Reply {
                                result: Err(ErrorCode::SessionExpired),
                                ..
                            })
                        ) {
                            live = None;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // A short session is abandoned after a few operations: it will expire.
    let live =
        live.filter(|(_, timeout, uses)| *timeout > SHORT_TIMEOUT_MS || *uses < SHORT_LIFE_OPS);
    (live, opened)
}

/// The events the client's replies on `session` announced: what it acknowledges.
fn announced(past: &[OpRecord], session: SessionId) -> u64 {
    past.iter()
        .filter(|rec| {
            matches!(CoordOp::decode(&rec.op), Ok(CoordOp::Session { session: s, .. }) if s == session)
        })
        .filter_map(|rec| Reply::decode(&rec.response.as_ref()?.result).ok())
        .map(|r| r.events)
        .max()
        .unwrap_or(0)
}

fn lite(s: &Stat) -> StatLite {
    StatLite {
        version: s.version,
        cversion: s.cversion,
        num_children: s.num_children,
        data_length: s.data_length,
    }
}

fn zerr(e: ErrorCode) -> ZErr {
    match e {
        ErrorCode::NoNode => ZErr::NoNode,
        ErrorCode::NodeExists => ZErr::NodeExists,
        ErrorCode::NotEmpty => ZErr::NotEmpty,
        ErrorCode::BadVersion => ZErr::BadVersion,
        ErrorCode::RolledBack => ZErr::RolledBack,
        ErrorCode::RuntimeInconsistency => ZErr::RuntimeInconsistency,
        other => ZErr::Other(other.code()),
    }
}

fn modelled(path: &str) -> bool {
    !path.starts_with("/e-")
}

fn model_write(op: &MultiOp) -> Option<ZOp> {
    Some(match op {
        MultiOp::Create {
            path, data, mode, ..
        } => match mode {
            CreateMode::Persistent | CreateMode::PersistentSequential => ZOp::Create {
                path: path.clone(),
                data: data.clone(),
                sequential: *mode == CreateMode::PersistentSequential,
            },
            _ => return None,
        },
        MultiOp::Delete { path, version } => ZOp::Delete {
            path: path.clone(),
            version: *version,
        },
        MultiOp::SetData {
            path,
            data,
            version,
        } => ZOp::SetData {
            path: path.clone(),
            data: data.clone(),
            version: *version,
        },
        MultiOp::Check { path, version } => ZOp::Check {
            path: path.clone(),
            version: *version,
        },
        MultiOp::GetData { .. } | MultiOp::GetChildren { .. } => return None,
    })
}

fn multi_ret(op: &ZOp, r: &Result<MultiResult, ErrorCode>) -> ZRet {
    match (op, r) {
        (_, Err(e)) => ZRet::Err(zerr(*e)),
        (_, Ok(MultiResult::Created { path, .. })) => ZRet::Created(path.clone()),
        (_, Ok(MultiResult::Deleted)) => ZRet::Deleted,
        (_, Ok(MultiResult::Checked)) => ZRet::Checked,
        (_, Ok(MultiResult::Stat(s))) => ZRet::Stat(lite(s)),
        (_, Ok(MultiResult::Data { data, stat })) => ZRet::Data(data.clone(), lite(stat)),
        (_, Ok(MultiResult::Children { children, stat })) => {
            ZRet::Children(children.clone(), lite(stat))
        }
    }
}

impl SimApp for Coord {
    type App = CoordApp;
    type Model = CoordModel;

    fn name(&self) -> &'static str {
        "coord"
    }

    fn new_app(&self) -> CoordApp {
        CoordApp::new()
    }

    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        let k = object(rng, objects);
        let request = match rng.index(20) {
            0..=8 => write(rng, &k).into_request(),
            9..=13 => {
                let path = kpath(rng, &k);
                read(rng, path)
            }
            14 | 15 => Request::Multi((0..1 + rng.index(3)).map(|_| write(rng, &k)).collect()),
            _ => ephemeral_op(rng, &k),
        };
        session_op(request)
    }

    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        let k = object(rng, objects);
        let path = kpath(rng, &k);
        session_op(Request::GetData { path, watch: false })
    }

    fn bind(&self, op: Vec<u8>, past: &[OpRecord]) -> Vec<u8> {
        let Ok(CoordOp::Session { request, .. }) = CoordOp::decode(&op) else {
            return op;
        };
        match live_session(past) {
            (Some((session, _, _)), _) => CoordOp::Session {
                session,
                acked_events: announced(past, session),
                request,
            }
            .encode(),
            (None, opened) => CoordOp::OpenSession {
                timeout_ms: if opened % 2 == 0 {
                    SHORT_TIMEOUT_MS
                } else {
                    LONG_TIMEOUT_MS
                },
            }
            .encode(),
        }
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        matches!(CoordOp::decode(op), Ok(CoordOp::Session { session, request, .. }) if session != UNBOUND && is_read_only(&request))
    }

    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        // No session has id 0: the reply is SessionExpired, and nothing changes.
        let k = object(rng, objects);
        session_op(Request::GetData {
            path: format!("/{k}"),
            watch: false,
        })
    }

    fn injected_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        if rng.chance(0.5) {
            self.harmless_op(rng, objects)
        } else {
            CoordOp::Touch { sessions: vec![] }.encode()
        }
    }

    fn mutating_op(&self) -> Vec<u8> {
        CoordOp::OpenSession { timeout_ms: 4_000 }.encode()
    }

    fn op_text(&self, op: &[u8]) -> String {
        match CoordOp::decode(op) {
            Ok(CoordOp::Session {
                session,
                acked_events,
                request,
            }) => format!("s{:x}@{acked_events} {request:?}", session.0),
            Ok(op) => format!("{op:?}"),
            Err(_) => format!("<{} bytes>", op.len()),
        }
    }

    fn result_text(&self, result: &[u8]) -> String {
        match Reply::decode(result) {
            Ok(r) => format!("z{} e{} {:?}", r.zxid.0, r.events, r.result),
            Err(_) => format!("<{} bytes>", result.len()),
        }
    }

    fn model(&self) -> CoordModel {
        CoordModel
    }

    fn model_op(&self, op: &[u8]) -> Option<ZOp> {
        let CoordOp::Session { request, .. } = CoordOp::decode(op).ok()? else {
            return None;
        };
        let zop = match request {
            Request::Check { path, version } => ZOp::Check { path, version },
            Request::GetData { path, .. } => ZOp::GetData { path },
            Request::Exists { path, .. } => ZOp::Exists { path },
            Request::GetChildren { path, .. } => ZOp::GetChildren { path },
            Request::Multi(ops) => ZOp::Multi(ops.iter().map(model_write).collect::<Option<_>>()?),
            // Creates, deletes and setDatas, as in a multi; no other request is modelled.
            other => model_write(&other.as_write()?)?,
        };
        zop.paths().iter().all(|p| modelled(p)).then_some(zop)
    }

    fn model_ret(&self, op: &ZOp, result: &[u8]) -> Option<ZRet> {
        let reply = Reply::decode(result).ok()?;
        Some(match (op, reply.result) {
            (_, Err(ErrorCode::SessionExpired)) => return None,
            (_, Err(e)) => ZRet::Err(zerr(e)),
            (_, Ok(Response::Created { path, .. })) => ZRet::Created(path),
            (ZOp::Delete { .. }, Ok(Response::Empty)) => ZRet::Deleted,
            (ZOp::Check { .. }, Ok(Response::Empty)) => ZRet::Checked,
            (_, Ok(Response::Stat(s))) => ZRet::Stat(lite(&s)),
            (_, Ok(Response::Data { data, stat })) => ZRet::Data(data, lite(&stat)),
            (_, Ok(Response::Children { children, stat })) => ZRet::Children(children, lite(&stat)),
            (ZOp::Multi(ops), Ok(Response::Multi(results))) if ops.len() == results.len() => {
                ZRet::Multi(
                    ops.iter()
                        .zip(&results)
                        .map(|(o, r)| multi_ret(o, r))
                        .collect(),
                )
            }
            _ => return None,
        })
    }

    fn leases(&self, app: &CoordApp) -> Vec<Lease> {
        app.sessions()
            .iter()
            .map(|(id, s)| Lease {
                id: id.0,
                kind: LeaseKind::Session,
                timeout: u64::try_from(s.timeout_ms).unwrap_or(0) * 1000,
            })
            .collect()
    }

    /// A session is renewed by every request that names it (its client's operations, a
    /// resume, a gateway's Touch) and ended by its close.
    fn lease_ops(&self, op: &[u8]) -> Vec<LeaseOp> {
        match CoordOp::decode(op) {
            Ok(CoordOp::OpenSession { .. }) => vec![LeaseOp::Opens],
            Ok(CoordOp::ResumeSession { session, .. } | CoordOp::Session { session, .. }) => {
                vec![LeaseOp::Renews(session.0)]
            }
            Ok(CoordOp::Touch { sessions }) => {
                sessions.iter().map(|s| LeaseOp::Renews(s.0)).collect()
            }
            Ok(CoordOp::CloseSession { session }) => vec![LeaseOp::Ends(session.0)],
            Err(_) => Vec::new(),
        }
    }

    fn check_state(&self, app: &CoordApp) -> Vec<AppViolation> {
        let mut out = Vec::new();
        for (path, node) in app.tree().nodes() {
            if let NodeKind::Ephemeral(owner) = node.kind() {
                if !app.sessions().contains_key(&owner) {
                    out.push(AppViolation {
                        property: "COORD-ephemeral",
                        detail: format!(
                            "{path} is an ephemeral of session {:x}, which has ended",
                            owner.0
                        ),
                    });
                    break;
                }
            }
        }
        out
    }

    fn check_history(&self, executed: &[Executed<'_>], _end: &CoordApp) -> Vec<AppViolation> {
        let mut last: BTreeMap<String, String> = BTreeMap::new();
        for e in executed {
            let Ok(reply) = Reply::decode(e.result) else {
                continue;
            };
            let created: Vec<String> = match reply.result {
                Ok(Response::Created { path, .. }) => vec![path],
                Ok(Response::Multi(rs)) => rs
                    .into_iter()
                    .filter_map(|r| match r {
                        Ok(MultiResult::Created { path, .. }) => Some(path),
                        _ => None,
                    })
                    .collect(),
                _ => continue,
            };
            for path in created {
                let (dir, name) = path.rsplit_once('/').unwrap_or(("", &path));
                let Some(prefix) = ["s-", "n-"].iter().find(|p| name.starts_with(**p)) else {
                    continue;
                };
                let number = name[prefix.len()..].to_string();
                let key = format!("{dir}/{prefix}");
                if let Some(prev) = last.get(&key) {
                    if number.len() != 10 || *prev >= number {
                        return vec![AppViolation {
                            property: "COORD-sequence",
                            detail: format!("batch {}: {path} created after number {prev}", e.seq),
                        }];
                    }
                }
                last.insert(key, number);
            }
        }
        Vec::new()
    }

    fn check_pushes(
        &self,
        pushes: &[(ClientId, u64, Vec<u8>)],
        executed: &[Executed<'_>],
    ) -> Vec<AppViolation> {
        AppViolation::from_check("COORD-watch", check_watches(pushes, executed))
    }
}

/// A watch registry's two classes: data (and exist) watches, child watches.
const DATA: u8 = 1;
const CHILD: u8 = 2;

fn classes(kind: EventType) -> u8 {
    match kind {
        EventType::NodeCreated | EventType::NodeDataChanged => DATA,
        EventType::NodeChildrenChanged => CHILD,
        EventType::NodeDeleted => DATA | CHILD,
        _ => 0,
    }
}

/// The changes of the agreed history by zxid: `(path, event)` pairs, or `None` for a change
/// whose nodes the history does not name (a session closed: its ephemerals were deleted).
type Changes = BTreeMap<i64, Option<BTreeSet<(String, EventType)>>>;

/// One-shot registrations of the agreed history: `(zxid, class)` per session and path.
type Registrations = BTreeMap<(SessionId, String), Vec<(i64, u8)>>;

/// Per session and path: `(zxid, 0 event / 1 registration, classes, event number)`.
type Timeline = BTreeMap<(SessionId, String), Vec<(i64, u8, u8, Option<u64>)>>;

fn parent(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].into(),
    }
}

fn changes_of(executed: &[Executed<'_>]) -> (Changes, Registrations) {
    let mut changes: Changes = BTreeMap::new();
    let mut registrations: Registrations = BTreeMap::new();
    for e in executed {
        let (Ok(op), Ok(reply)) = (CoordOp::decode(e.op), Reply::decode(e.result)) else {
            continue;
        };
        let zxid = reply.zxid.0;
        let add = |set: &mut BTreeSet<(String, EventType)>, op: &MultiOp, r: &MultiResult| match (
            op, r,
        ) {
            (_, MultiResult::Created { path, .. }) => {
                set.insert((path.clone(), EventType::NodeCreated));
                set.insert((parent(path), EventType::NodeChildrenChanged));
            }
            (MultiOp::Delete { path, .. }, MultiResult::Deleted) => {
                set.insert((path.clone(), EventType::NodeDeleted));
                set.insert((parent(path), EventType::NodeChildrenChanged));
            }
            (MultiOp::SetData { path, .. }, MultiResult::Stat(_)) => {
                set.insert((path.clone(), EventType::NodeDataChanged));
            }
            _ => {}
        };
        match (op, reply.result) {
            (CoordOp::CloseSession { .. }, Ok(_)) => {
                changes.insert(zxid, None);
            }
            (
                CoordOp::Session {
                    session, request, ..
                },
                result,
            ) => {
                let mut set = BTreeSet::new();
                // A lone create, delete or setData is a multi of one.
                match (request.as_write(), &result) {
                    (Some(op @ MultiOp::Create { .. }), Ok(Response::Created { path, stat })) => {
                        let created = MultiResult::Created {
                            path: path.clone(),
                            stat: *stat,
                        };
                        add(&mut set, &op, &created);
                    }
                    (Some(op @ MultiOp::Delete { .. }), Ok(_)) => {
                        add(&mut set, &op, &MultiResult::Deleted)
                    }
                    (Some(op @ MultiOp::SetData { .. }), Ok(Response::Stat(s))) => {
                        add(&mut set, &op, &MultiResult::Stat(*s))
                    }
                    _ => {}
                }
                match (&request, &result) {
                    (Request::Multi(ops), Ok(Response::Multi(rs))) => {
                        for (op, r) in ops.iter().zip(rs) {
                            if let Ok(r) = r {
                                add(&mut set, op, r);
                            }
                        }
                    }
                    (Request::Exists { path, watch: true }, Ok(_) | Err(ErrorCode::NoNode))
                    | (Request::GetData { path, watch: true }, Ok(_)) => {
                        registrations
                            .entry((session, path.clone()))
                            .or_default()
                            .push((zxid, DATA));
                    }
                    (Request::GetChildren { path, watch: true }, Ok(_)) => {
                        registrations
                            .entry((session, path.clone()))
                            .or_default()
                            .push((zxid, CHILD));
                    }
                    _ => {}
                }
                if !set.is_empty() {
                    changes.insert(zxid, Some(set));
                }
            }
            _ => {}
        }
    }
    (changes, registrations)
}

/// `COORD-watch` (see the module documentation).
fn check_watches(
    pushes: &[(ClientId, u64, Vec<u8>)],
    executed: &[Executed<'_>],
) -> Result<(), String> {
    let (changes, registrations) = changes_of(executed);
    // (session, number) -> event, each once.
    let mut events: BTreeMap<(SessionId, u64), crate::WatchEvent> = BTreeMap::new();
    for (client, id, payload) in pushes {
        let push = Push::decode(payload)
            .map_err(|e| format!("c{client} push {id} does not decode: {e}"))?;
        for (session, event) in push.events {
            if let Some(prev) = events.get(&(session, event.number)) {
                if *prev != event {
                    return Err(format!(
                        "session {:x} got two events numbered {}: {prev:?} and {event:?}",
                        session.0, event.number
                    ));
                }
            }
            events.insert((session, event.number), event);
        }
    }
    // Per session and path: registrations and events in zxid order (an event before a
    // registration of the same zxid: that read already saw the change).
    let mut timeline: Timeline = BTreeMap::new();
    for ((session, path), regs) in &registrations {
        for (zxid, class) in regs {
            timeline
                .entry((*session, path.clone()))
                .or_default()
                .push((*zxid, 1, *class, None));
        }
    }
    for ((session, number), event) in &events {
        let z = event.zxid.0;
        match changes.get(&z) {
            Some(Some(set)) if !set.contains(&(event.path.clone(), event.kind)) => {
                return Err(format!(
                    "session {:x} event {number}: {:?} {} at zxid {z}, which changed {set:?}",
                    session.0, event.kind, event.path
                ));
            }
            None if matches!(
                event.kind,
                EventType::NodeCreated | EventType::NodeDataChanged
            ) =>
            {
                return Err(format!("session {:x} event {number}: {:?} {} at zxid {z}, which no request of the agreed history made", session.0, event.kind, event.path));
            }
            _ => {}
        }
        timeline
            .entry((*session, event.path.clone()))
            .or_default()
            .push((z, 0, classes(event.kind), Some(*number)));
    }
    for ((session, path), mut steps) in timeline {
        steps.sort();
        let mut active = 0u8;
        for (zxid, _, class, number) in steps {
            match number {
                None => active |= class,
                Some(n) => {
                    if active & class == 0 {
                        return Err(format!("session {:x} event {n} on {path} (zxid {zxid}) matches no watch it registered before that change, or fired twice for one registration", session.0));
                    }
                    active &= !class;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{WatchEvent, Zxid};
    use plumb_wire::{ReqNo, Seq};

    fn reply(zxid: i64, result: Result<Response, ErrorCode>) -> Vec<u8> {
        Reply {
            zxid: Zxid(zxid),
            events: 0,
            result,
        }
        .encode()
    }

    fn op(session: i64, request: Request) -> Vec<u8> {
        CoordOp::Session {
            session: SessionId(session),
            acked_events: 0,
            request,
        }
        .encode()
    }

    #[test]
    fn the_watch_check_catches_a_second_firing_and_a_made_up_event() {
        let get = op(
            1,
            Request::GetData {
                path: "/a".into(),
                watch: true,
            },
        );
        let set = op(
            2,
            Request::SetData {
                path: "/a".into(),
                data: vec![],
                version: -1,
            },
        );
        let ok_get = reply(
            5,
            Ok(Response::Data {
                data: vec![],
                stat: Stat::default(),
            }),
        );
        let ok_set6 = reply(6, Ok(Response::Stat(Stat::default())));
        let ok_set7 = reply(7, Ok(Response::Stat(Stat::default())));
        let ex = |op: &'static [u8], result: &'static [u8]| Executed {
            seq: Seq(1),
            client: 0,
            nc: ReqNo(1),
            request: plumb_crypto::Digest::ZERO,
            op,
            result,
        };
        let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
        let executed = [
            ex(leak(get), leak(ok_get)),
            ex(leak(set.clone()), leak(ok_set6)),
            ex(leak(set), leak(ok_set7)),
        ];
        let push = |n: u64, zxid: i64| {
            Push {
                events: vec![(
                    SessionId(1),
                    WatchEvent {
                        number: n,
                        kind: EventType::NodeDataChanged,
                        path: "/a".into(),
                        zxid: Zxid(zxid),
                    },
                )],
                expired: vec![],
            }
            .encode()
        };
        assert!(check_watches(&[(0, 1, push(1, 6))], &executed).is_ok());
        assert!(check_watches(&[(0, 1, push(1, 6)), (0, 1, push(1, 6))], &executed).is_ok());
        let twice = check_watches(&[(0, 1, push(1, 6)), (0, 2, push(2, 7))], &executed);
        assert!(twice.is_err(), "{twice:?}");
        // A change the registration had already seen.
        assert!(check_watches(&[(0, 1, push(1, 5))], &executed).is_err());
    }

    #[test]
    fn bind_opens_then_uses_then_abandons_a_short_session() {
        let mut rng = SimRng::new(1, "t");
        let objects = vec![b"k0".to_vec()];
        let raw = Coord.random_op(&mut rng, &objects);
        let first = Coord.bind(raw.clone(), &[]);
        assert_eq!(
            CoordOp::decode(&first).unwrap(),
            CoordOp::OpenSession {
                timeout_ms: SHORT_TIMEOUT_MS
            }
        );
        let opened = reply(
            1,
            Ok(Response::Session {
                session: SessionId(9),
                password: [0; 16],
                timeout_ms: SHORT_TIMEOUT_MS,
            }),
        );
        let rec = |op: Vec<u8>, result: Vec<u8>| OpRecord {
            op,
            read_only: false,
            invoke: 0,
            response: Some(plumb_sim::app::OpResponse {
                at: 1,
                nc: ReqNo(1),
                result,
                request: None,
            }),
            ncs: vec![ReqNo(1)],
            abandoned: false,
        };
        let mut past = vec![rec(first, opened)];
        for _ in 0..SHORT_LIFE_OPS {
            let bound = Coord.bind(raw.clone(), &past);
            assert!(matches!(
                CoordOp::decode(&bound).unwrap(),
                CoordOp::Session {
                    session: SessionId(9),
                    ..
                }
            ));
            past.push(rec(bound, reply(1, Ok(Response::Empty))));
        }
        assert_eq!(
            CoordOp::decode(&Coord.bind(raw, &past)).unwrap(),
            CoordOp::OpenSession {
                timeout_ms: LONG_TIMEOUT_MS
            }
        );
    }
}
