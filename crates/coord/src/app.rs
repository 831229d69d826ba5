//! [`CoordApp`]: the coordination application's state and its [`Application`] implementation.
//!
//! State is the znode tree ([`Tree`]), the sessions, the watches, the last zxid and the count
//! of sessions opened, all in `BTreeMap`s, so execution and checkpoints depend on the contents
//! alone. Time is the batch's agreed time (`ctime`/`mtime` are its milliseconds); session ids
//! and passwords come from the batch seed. A zxid is taken by every change of state that
//! ZooKeeper logs as a transaction and that succeeds: create, delete, setData, setACL, a
//! multi (one zxid for all its operations), opening and closing (or expiring) a session, and
//! the deletion of a container or TTL node. A refused write takes none.
//!
//! At the start of every batch, before its first request, the application expires the
//! sessions not heard of for longer than their timeout (deleting their ephemeral nodes and
//! telling their owners in [`Push::expired`]), then deletes the empty containers that once had
//! a child and the childless TTL nodes not modified for longer than their TTL (ZooKeeper's
//! container manager). Finding the expired sessions looks at every session only when the
//! batch's time has passed a lower bound of their deadlines ([`ExpiryBound`], derived, not
//! state), so a batch costs what its requests cost, not what the number of sessions does.

use crate::acl::{self, Identity};
use crate::op::*;
use crate::path;
use crate::session::{self, Session};
use crate::tree::{
    sequence_number, NodeKind, Tree, Znode, CONTAINER_OWNER, MAX_TTL_MS, MIN_CHUNK_BITS, TTL_BITS,
};
use crate::watch::{Class, Watches};
use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, Seq};
use std::collections::{BTreeMap, BTreeSet};

/// The coordination application.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoordApp {
    pub(crate) zxid: i64,
    pub(crate) tree: Tree,
    pub(crate) sessions: BTreeMap<SessionId, Session>,
    pub(crate) watches: Watches,
    /// Sessions opened so far (makes every derived session id distinct).
    pub(crate) opened: u64,
    /// No session expires before this time. Not state.
    pub(crate) expiry: ExpiryBound,
    /// What the batch under way pushes, by identity. Not state.
    pub(crate) pushes: BTreeMap<ClientId, Push>,
}

/// A lower bound of the sessions' deadlines (the agreed time after which each expires): no
/// session expires at a time up to it. Hearing of a session only moves its deadline later,
/// except a resume that shortens its timeout, and opening a session adds one, so those two
/// lower the bound; looking at every session sets it exactly. Derived: it is not in the
/// checkpoint (a loaded state starts at 0, which looks at every session at the next batch)
/// and two states that differ only in it are equal.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ExpiryBound(Micros);

impl PartialEq for ExpiryBound {
    fn eq(&self, _: &ExpiryBound) -> bool {
        true
    }
}

impl Eq for ExpiryBound {}

impl ExpiryBound {
    fn lower_to(&mut self, deadline: Micros) {
        self.0 = self.0.min(deadline);
    }
}

/// A change whose watches fire once its operation has committed.
#[derive(Clone, Debug)]
enum Change {
    Created(String),
    Deleted(String),
    DataChanged(String),
}

type Outcome<T> = Result<T, ErrorCode>;

pub(crate) fn ms(now: Micros) -> i64 {
    i64::try_from(now / 1000).unwrap_or(i64::MAX)
}

fn check_version(expected: i32, current: i32) -> Outcome<()> {
    if expected == -1 || expected == current {
        Ok(())
    } else {
        Err(ErrorCode::BadVersion)
    }
}

fn valid(p: &str) -> Outcome<()> {
    if path::is_valid(p, false) {
        Ok(())
    } else {
        Err(ErrorCode::BadArguments)
    }
}

/// Whether a request may go down the read-only path ([`Application::execute_read_only`]):
/// a read that sets no watch.
pub fn is_read_only(request: &Request) -> bool {
    match request {
        Request::Exists { watch, .. }
        | Request::GetData { watch, .. }
        | Request::GetChildren { watch, .. } => !watch,
        Request::GetAllChildrenNumber { .. }
        | Request::GetAcl { .. }
        | Request::MultiRead(_)
        | Request::PendingEvents => true,
        _ => false,
    }
}

impl CoordApp {
    pub fn new() -> CoordApp {
        CoordApp::default()
    }

    /// Forget the lower bound of the sessions' deadlines (a loaded state): the next batch
    /// looks at every session.
    pub(crate) fn forget_expiry_bound(&mut self) {
        self.expiry = ExpiryBound::default();
    }

    /// The last zxid.
    pub fn zxid(&self) -> Zxid {
        Zxid(self.zxid)
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The live sessions and their state.
    pub fn sessions(&self) -> &BTreeMap<SessionId, Session> {
        &self.sessions
    }

    pub(crate) fn watches(&self) -> &Watches {
        &self.watches
    }

    fn identities(&self, session: SessionId) -> BTreeSet<Identity> {
        self.sessions
            .get(&session)
            .map(|s| s.auth.clone())
            .unwrap_or_default()
    }

    fn reply(&self, session: Option<SessionId>, result: Outcome<Response>) -> Reply {
        let events = session
            .and_then(|s| self.sessions.get(&s))
            .map_or(0, |s| s.event_count);
        Reply {
            zxid: Zxid(self.zxid),
            events,
            result,
        }
    }

    // ---------------------------------------------------------------- events and pushes

    fn deliver(&mut self, session: SessionId, kind: EventType, path: &str, zxid: i64) {
        let Some(s) = self.sessions.get_mut(&session) else {
            return;
        };
        let event = s.record(WatchEvent {
            number: 0,
            kind,
            path: path.to_string(),
            zxid: Zxid(zxid),
        });
        self.pushes
            .entry(s.owner)
            .or_default()
            .events
            .push((session, event));
    }

    /// A node was created or deleted: its parent's children changed, whichever it was.
    fn fire_parent(&mut self, p: &str, zxid: i64) {
        let parent = path::parent(p);
        for s in self.watches.children_event(parent) {
            self.deliver(s, EventType::NodeChildrenChanged, parent, zxid);
        }
    }

    fn fire(&mut self, changes: &[Change], zxid: i64) {
        for change in changes {
            match change {
                Change::Created(p) => {
                    for s in self.watches.data_event(p) {
                        self.deliver(s, EventType::NodeCreated, p, zxid);
                    }
                    self.fire_parent(p, zxid);
                }
                Change::Deleted(p) => {
                    for s in self.watches.deleted_event(p) {
                        self.deliver(s, EventType::NodeDeleted, p, zxid);
                    }
                    self.fire_parent(p, zxid);
                }
                Change::DataChanged(p) => {
                    for s in self.watches.data_event(p) {
                        self.deliver(s, EventType::NodeDataChanged, p, zxid);
                    }
                }
            }
        }
    }

    /// What the operations applied since the last call pushed, encoded, by identity.
    pub fn take_pushes(&mut self) -> Vec<(ClientId, Vec<u8>)> {
        std::mem::take(&mut self.pushes)
            .into_iter()
            .map(|(client, push)| (client, push.encode()))
            .collect()
    }

    // ---------------------------------------------------------------- time-driven changes

    /// End `session`: its watches go, its ephemeral nodes are deleted (one zxid for all).
    fn end_session(&mut self, session: SessionId, delete_ephemerals: bool) {
        self.zxid += 1;
        let zxid = self.zxid;
        self.sessions.remove(&session);
        self.watches.remove_session(session);
        if !delete_ephemerals {
            return;
        }
        let mut changes = Vec::new();
        for p in self.tree.ephemerals_of(session) {
            self.tree.remove(&p, zxid);
            changes.push(Change::Deleted(p));
        }
        self.fire(&changes, zxid);
    }

    /// Expire the sessions not heard of for longer than their timeout at `now`.
    pub fn expire_sessions(&mut self, now: Micros) {
        if now <= self.expiry.0 {
            return;
        }
        let mut expired: Vec<(SessionId, ClientId)> = Vec::new();
        let mut earliest = Micros::MAX;
        for (id, s) in &self.sessions {
            if s.expired_at(now) {
                expired.push((*id, s.owner));
            } else {
                earliest = earliest.min(s.deadline());
            }
        }
        self.expiry = ExpiryBound(earliest);
        for (id, owner) in expired {
            #[cfg(feature = "sabotage")]
            let keep =
                plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::CoordExpiryKeepsEphemeral);
            #[cfg(not(feature = "sabotage"))]
            let keep = false;
            self.end_session(id, !keep);
            self.pushes.entry(owner).or_default().expired.push(id);
        }
    }

    /// Delete the containers and TTL nodes that qualify at `now` (known from the indexes:
    /// a replica holding part of the tree finds them without holding every timed node).
    pub fn reap_timed(&mut self, now: Micros) {
        let doomed: Vec<String> = self.tree.indexes().due_at(ms(now)).cloned().collect();
        for p in doomed {
            self.zxid += 1;
            let zxid = self.zxid;
            self.tree.remove(&p, zxid);
            self.fire(&[Change::Deleted(p)], zxid);
        }
    }

    // ---------------------------------------------------------------- writes

    /// Apply one write of `session` at `zxid` (not yet committed), or refuse it with no change.
    fn write(
        &mut self,
        session: SessionId,
        op: &MultiOp,
        zxid: i64,
        now: Micros,
        changes: &mut Vec<Change>,
    ) -> Outcome<MultiResult> {
        match op {
            MultiOp::Create {
                path,
                data,
                acl,
                mode,
                ttl_ms,
            } => {
                let (path, stat) =
                    self.create(session, path, data, acl, *mode, *ttl_ms, zxid, now)?;
                changes.push(Change::Created(path.clone()));
                Ok(MultiResult::Created { path, stat })
            }
            MultiOp::Delete { path, version } => {
                self.delete(session, path, *version, zxid)?;
                changes.push(Change::Deleted(path.clone()));
                Ok(MultiResult::Deleted)
            }
            MultiOp::SetData {
                path,
                data,
                version,
            } => {
                let stat = self.set_data(session, path, data, *version, zxid, now)?;
                changes.push(Change::DataChanged(path.clone()));
                Ok(MultiResult::Stat(stat))
            }
            MultiOp::Check { path, version } => {
                self.check(session, path, *version)?;
                Ok(MultiResult::Checked)
            }
            MultiOp::GetData { .. } | MultiOp::GetChildren { .. } => Err(ErrorCode::BadArguments),
        }
    }

    /// ZooKeeper's create, checks in its order: arguments, path, ACL, parent, permission,
    /// sequence number, node exists, ephemeral parent.
    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        session: SessionId,
        path: &str,
        data: &[u8],
        acl: &[Acl],
        mode: CreateMode,
        ttl_ms: i64,
        zxid: i64,
        now: Micros,
    ) -> Outcome<(String, Stat)> {
        if data.len() > MAX_DATA || (mode.has_ttl() && !(1..=MAX_TTL_MS).contains(&ttl_ms)) {
            return Err(ErrorCode::BadArguments);
        }
        if !path::is_valid(path, mode.is_sequential()) {
            return Err(ErrorCode::BadArguments);
        }
        if path == "/" && !mode.is_sequential() {
            return Err(ErrorCode::NodeExists);
        }
        let identities = self.identities(session);
        let acl = acl::fixup(acl, &identities)?;
        let parent_path = path::parent(path).to_string();
        let parent = self.tree.get(&parent_path).ok_or(ErrorCode::NoNode)?;
        if !acl::allowed(&parent.acl, &identities, perms::CREATE) {
            return Err(ErrorCode::NoAuth);
        }
        let path = if mode.is_sequential() {
            format!("{path}{:010}", sequence_number(&parent.stat))
        } else {
            path.to_string()
        };
        if !path::is_valid(&path, false) {
            return Err(ErrorCode::BadArguments);
        }
        if self.tree.get(&path).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(parent.kind(), NodeKind::Ephemeral(_)) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let owner = match mode {
            CreateMode::Ephemeral | CreateMode::EphemeralSequential => session.0,
            CreateMode::Container => CONTAINER_OWNER,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl => {
                TTL_BITS | ttl_ms
            }
            CreateMode::Persistent | CreateMode::PersistentSequential => 0,
        };
        let now_ms = ms(now);
        let stat = Stat {
            czxid: zxid,
            mzxid: zxid,
            ctime: now_ms,
            mtime: now_ms,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: owner,
            data_length: data.len() as i32,
            num_children: 0,
            pzxid: zxid,
        };
        let node = Znode {
            data: data.to_vec(),
            acl,
            stat,
            chunk_bits: MIN_CHUNK_BITS,
        };
        self.tree.insert(&path, node, zxid);
        Ok((path, stat))
    }

    fn delete(&mut self, session: SessionId, path: &str, version: i32, zxid: i64) -> Outcome<()> {
        valid(path)?;
        if path::SPECIAL_PATHS.contains(&path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        let parent = self.tree.get(path::parent(path)).ok_or(ErrorCode::NoNode)?;
        if !acl::allowed(&parent.acl, &self.identities(session), perms::DELETE) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.stat.version)?;
        if node.stat.num_children > 0 {
            return Err(ErrorCode::NotEmpty);
        }
        self.tree.remove(path, zxid);
        Ok(())
    }

    fn set_data(
        &mut self,
        session: SessionId,
        path: &str,
        data: &[u8],
        version: i32,
        zxid: i64,
        now: Micros,
    ) -> Outcome<Stat> {
        valid(path)?;
        if data.len() > MAX_DATA {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        if !acl::allowed(&node.acl, &self.identities(session), perms::WRITE) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.stat.version)?;
        self.tree
            .update(path, |node| {
                node.data = data.to_vec();
                node.stat.version = node.stat.version.wrapping_add(1);
                node.stat.mzxid = zxid;
                node.stat.mtime = ms(now);
                node.stat.data_length = data.len() as i32;
            })
            .ok_or(ErrorCode::NoNode)
    }

    fn check(&self, session: SessionId, path: &str, version: i32) -> Outcome<()> {
        valid(path)?;
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        if !acl::allowed(&node.acl, &self.identities(session), perms::READ) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.stat.version)
    }

    fn set_acl(
        &mut self,
        session: SessionId,
        path: &str,
        acl: &[Acl],
        version: i32,
    ) -> Outcome<Stat> {
        valid(path)?;
        let identities = self.identities(session);
        let acl = acl::fixup(acl, &identities)?;
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        if !acl::allowed(&node.acl, &identities, perms::ADMIN) {
            return Err(ErrorCode::NoAuth);
        }
        check_version(version, node.stat.aversion)?;
        self.tree
            .update(path, |node| {
                node.acl = acl;
                node.stat.aversion = node.stat.aversion.wrapping_add(1);
            })
            .ok_or(ErrorCode::NoNode)
    }

    /// One write as a transaction of its own: committed (a zxid taken, watches fired) if it
    /// succeeds.
    fn single_write(
        &mut self,
        session: SessionId,
        op: &MultiOp,
        now: Micros,
    ) -> Outcome<MultiResult> {
        let zxid = self.zxid + 1;
        let mut changes = Vec::new();
        let result = self.write(session, op, zxid, now, &mut changes)?;
        if !matches!(result, MultiResult::Checked) {
            self.zxid = zxid;
            self.fire(&changes, zxid);
        }
        Ok(result)
    }

    fn multi(&mut self, session: SessionId, ops: &[MultiOp], now: Micros) -> Response {
        let zxid = self.zxid + 1;
        let mut changes = Vec::new();
        let mut results = Vec::with_capacity(ops.len());
        self.tree.begin();
        for (i, op) in ops.iter().enumerate() {
            match self.write(session, op, zxid, now, &mut changes) {
                Ok(r) => results.push(Ok(r)),
                Err(e) => {
                    self.tree.rollback();
                    let shaped = (0..ops.len())
                        .map(|j| {
                            Err(match j.cmp(&i) {
                                std::cmp::Ordering::Less => ErrorCode::RolledBack,
                                std::cmp::Ordering::Equal => e,
                                std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency,
                            })
                        })
                        .collect();
                    return Response::Multi(shaped);
                }
            }
        }
        self.tree.commit();
        if !changes.is_empty() {
            self.zxid = zxid;
            self.fire(&changes, zxid);
        }
        Response::Multi(results)
    }

    // ---------------------------------------------------------------- reads

    fn node_for_read(&self, session: SessionId, path: &str) -> Outcome<&Znode> {
        valid(path)?;
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        if !acl::allowed(&node.acl, &self.identities(session), perms::READ) {
            return Err(ErrorCode::NoAuth);
        }
        Ok(node)
    }

    fn read_one(&self, session: SessionId, op: &MultiOp) -> Outcome<MultiResult> {
        match op {
            MultiOp::GetData { path } => {
                let n = self.node_for_read(session, path)?;
                Ok(MultiResult::Data {
                    data: n.data.clone(),
                    stat: n.stat,
                })
            }
            MultiOp::GetChildren { path } => {
                let n = self.node_for_read(session, path)?;
                Ok(MultiResult::Children {
                    children: self.tree.children_of(path),
                    stat: n.stat,
                })
            }
            _ => Err(ErrorCode::BadArguments),
        }
    }

    /// A read, without watches, against the current state.
    fn read(&self, session: SessionId, acked: u64, request: &Request) -> Outcome<Response> {
        match request {
            Request::Exists { path, .. } => {
                valid(path)?;
                self.tree
                    .get(path)
                    .map(|n| Response::Stat(n.stat))
                    .ok_or(ErrorCode::NoNode)
            }
            Request::GetData { path, .. } => {
                let n = self.node_for_read(session, path)?;
                Ok(Response::Data {
                    data: n.data.clone(),
                    stat: n.stat,
                })
            }
            Request::GetChildren { path, .. } => {
                let n = self.node_for_read(session, path)?;
                Ok(Response::Children {
                    children: self.tree.children_of(path),
                    stat: n.stat,
                })
            }
            Request::GetAllChildrenNumber { path } => {
                self.node_for_read(session, path)?;
                Ok(Response::Count(
                    i32::try_from(self.tree.descendants(path)).unwrap_or(i32::MAX),
                ))
            }
            Request::GetAcl { path } => {
                valid(path)?;
                let n = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
                let ids = self.identities(session);
                if !acl::allowed(&n.acl, &ids, perms::READ | perms::ADMIN) {
                    return Err(ErrorCode::NoAuth);
                }
                let acl = if acl::allowed(&n.acl, &ids, perms::ADMIN) {
                    n.acl.clone()
                } else {
                    acl::masked(&n.acl)
                };
                Ok(Response::Acl { acl, stat: n.stat })
            }
            Request::MultiRead(ops) => Ok(Response::Multi(
                ops.iter().map(|op| self.read_one(session, op)).collect(),
            )),
            Request::PendingEvents => Ok(Response::Events(
                self.sessions
                    .get(&session)
                    .map(|s| s.pending(acked))
                    .unwrap_or_default(),
            )),
            _ => Err(ErrorCode::Unimplemented),
        }
    }

    fn watch(&mut self, class: Class, path: &str, session: SessionId) {
        if self.watches.room_for(class, session) {
            self.watches.add(class, path, session);
        }
    }

    /// A request of a live session, ordered.
    fn request(
        &mut self,
        session: SessionId,
        acked: u64,
        request: &Request,
        now: Micros,
    ) -> Outcome<Response> {
        let as_multi = |r: MultiResult| match r {
            MultiResult::Created { path, stat } => Response::Created { path, stat },
            MultiResult::Stat(stat) => Response::Stat(stat),
            _ => Response::Empty,
        };
        match request {
            Request::Create { .. } | Request::Delete { .. } | Request::SetData { .. } => {
                let op = request
                    .as_write()
                    .expect("creates, deletes and setDatas are writes");
                self.single_write(session, &op, now).map(as_multi)
            }
            Request::Check { path, version } => {
                self.check(session, path, *version)?;
                Ok(Response::Empty)
            }
            Request::SetAcl { path, acl, version } => {
                // A transaction of ZooKeeper's that changes only the ACL and `aversion`.
                let stat = self.set_acl(session, path, acl, *version)?;
                self.zxid += 1;
                Ok(Response::Stat(stat))
            }
            Request::Multi(ops) => Ok(self.multi(session, ops, now)),
            Request::Exists { path, watch } => {
                let result = self.read(session, acked, request);
                if *watch && matches!(result, Ok(_) | Err(ErrorCode::NoNode)) {
                    self.watch(Class::Data, path, session);
                }
                result
            }
            Request::GetData { path, watch } => {
                let result = self.read(session, acked, request);
                if *watch && result.is_ok() {
                    self.watch(Class::Data, path, session);
                }
                result
            }
            Request::GetChildren { path, watch } => {
                let result = self.read(session, acked, request);
                if *watch && result.is_ok() {
                    self.watch(Class::Child, path, session);
                }
                result
            }
            Request::Sync { path } => {
                valid(path)?;
                Ok(Response::Path(path.clone()))
            }
            Request::AddWatch { path, mode } => {
                valid(path)?;
                let class = match mode {
                    AddWatchMode::Persistent => Class::Persistent,
                    AddWatchMode::PersistentRecursive => Class::Recursive,
                };
                self.watch(class, path, session);
                Ok(Response::Empty)
            }
            Request::RemoveWatches { path, kind } => {
                valid(path)?;
                if self.watches.remove(path, *kind, session) {
                    Ok(Response::Empty)
                } else {
                    Err(ErrorCode::NoWatcher)
                }
            }
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
                child,
                persistent,
                persistent_recursive,
            } => {
                self.set_watches(
                    session,
                    relative_zxid.0,
                    [data, exist, child, persistent, persistent_recursive],
                );
                Ok(Response::Empty)
            }
            Request::AddAuth { scheme, auth } => {
                let identity = acl::authenticate(scheme, auth)?;
                let s = self
                    .sessions
                    .get_mut(&session)
                    .ok_or(ErrorCode::SessionExpired)?;
                if !s.auth.contains(&identity) && s.auth.len() >= acl::MAX_IDENTITIES {
                    return Err(ErrorCode::AuthFailed);
                }
                s.auth.insert(identity);
                Ok(Response::Empty)
            }
            Request::GetAllChildrenNumber { .. }
            | Request::GetAcl { .. }
            | Request::MultiRead(_)
            | Request::PendingEvents => self.read(session, acked, request),
        }
    }

    /// ZooKeeper's `DataTree.setWatches`: a watch whose node changed after `relative` fires at
    /// once (with the zxid of the change it reports, or the current zxid for a deletion);
    /// the others are registered. Invalid paths are skipped.
    fn set_watches(&mut self, session: SessionId, relative: i64, lists: [&Vec<String>; 5]) {
        let [data, exist, child, persistent, recursive] = lists;
        let mut fired = self.fire_or_watch(
            session,
            data,
            Class::Data,
            relative,
            EventType::NodeDataChanged,
            |s| s.mzxid,
        );
        for p in exist.iter().filter(|p| path::is_valid(p, false)) {
            match self.tree.get(p) {
                Some(n) => fired.push((EventType::NodeCreated, p.clone(), n.stat.czxid)),
                None => self.watch(Class::Data, p, session),
            }
        }
        fired.extend(self.fire_or_watch(
            session,
            child,
            Class::Child,
            relative,
            EventType::NodeChildrenChanged,
            |s| s.pzxid,
        ));
        for p in persistent.iter().filter(|p| path::is_valid(p, false)) {
            self.watch(Class::Persistent, p, session);
        }
        for p in recursive.iter().filter(|p| path::is_valid(p, false)) {
            self.watch(Class::Recursive, p, session);
        }
        for (kind, p, zxid) in fired {
            self.deliver(session, kind, &p, zxid);
        }
    }

    /// `set_watches` for the data or the child watches of `paths` (the valid ones): the events
    /// they fire at once, in order. A node that is gone fires NodeDeleted at the current zxid,
    /// one whose `changed_at` is after `relative` fires `changed` with that zxid, and the
    /// others get a watch of `class`.
    fn fire_or_watch(
        &mut self,
        session: SessionId,
        paths: &[String],
        class: Class,
        relative: i64,
        changed: EventType,
        changed_at: fn(&Stat) -> i64,
    ) -> Vec<(EventType, String, i64)> {
        let mut fired = Vec::new();
        for p in paths.iter().filter(|p| path::is_valid(p, false)) {
            match self.tree.get(p) {
                None => fired.push((EventType::NodeDeleted, p.clone(), self.zxid)),
                Some(n) if changed_at(&n.stat) > relative => {
                    fired.push((changed, p.clone(), changed_at(&n.stat)))
                }
                Some(_) => self.watch(class, p, session),
            }
        }
        fired
    }

    // ---------------------------------------------------------------- operations

    fn open_session(&mut self, client: ClientId, timeout_ms: i32, now: Micros, seed: u64) -> Reply {
        self.opened += 1;
        let mut attempt = 0;
        let (id, password) = loop {
            let (id, password) = session::derive(seed, self.opened, attempt);
            if id != 0 && !self.sessions.contains_key(&SessionId(id)) {
                break (SessionId(id), password);
            }
            attempt += 1;
        };
        let s = Session::new(password, timeout_ms, now, client);
        let timeout_ms = s.timeout_ms;
        self.expiry.lower_to(s.deadline());
        self.sessions.insert(id, s);
        self.zxid += 1;
        self.reply(
            Some(id),
            Ok(Response::Session {
                session: id,
                password,
                timeout_ms,
            }),
        )
    }

    /// Execute one operation of identity `client` at agreed time `now` (the batch's, whose
    /// seed is `seed`). [`Application::execute`] calls this for every request after expiring
    /// sessions at the batch's start.
    pub fn apply(&mut self, client: ClientId, op: &CoordOp, now: Micros, seed: u64) -> Reply {
        match op {
            CoordOp::OpenSession { timeout_ms } => {
                self.open_session(client, *timeout_ms, now, seed)
            }
            CoordOp::ResumeSession {
                session,
                password,
                timeout_ms,
            } => match self.sessions.get_mut(session) {
                Some(s) if s.password == *password => {
                    s.owner = client;
                    s.renew(now);
                    s.timeout_ms = session::clamp_timeout(*timeout_ms);
                    self.expiry.lower_to(s.deadline());
                    let result = Ok(Response::Session {
                        session: *session,
                        password: s.password,
                        timeout_ms: s.timeout_ms,
                    });
                    self.reply(Some(*session), result)
                }
                _ => self.reply(None, Err(ErrorCode::SessionExpired)),
            },
            CoordOp::CloseSession { session } => {
                if self.sessions.contains_key(session) {
                    self.end_session(*session, true);
                    self.reply(None, Ok(Response::Empty))
                } else {
                    self.reply(None, Err(ErrorCode::SessionExpired))
                }
            }
            CoordOp::Touch { sessions } => {
                let mut gone = Vec::new();
                for id in sessions {
                    match self.sessions.get_mut(id) {
                        Some(s) => s.renew(now),
                        None => gone.push(*id),
                    }
                }
                self.reply(None, Ok(Response::Expired(gone)))
            }
            CoordOp::Session {
                session,
                acked_events,
                request,
            } => {
                let Some(s) = self.sessions.get_mut(session) else {
                    return self.reply(None, Err(ErrorCode::SessionExpired));
                };
                s.renew(now);
                s.owner = client;
                s.ack(*acked_events);
                let result = self.request(*session, *acked_events, request, now);
                self.reply(Some(*session), result)
            }
        }
    }

    /// A read-only operation's reply: a read without watches of a live session
    /// ([`is_read_only`]); anything else is [`ErrorCode::Unimplemented`] (order it instead).
    pub fn read_only(&self, op: &CoordOp) -> Reply {
        match op {
            CoordOp::Session {
                session,
                acked_events,
                request,
            } if is_read_only(request) => {
                if !self.sessions.contains_key(session) {
                    return self.reply(None, Err(ErrorCode::SessionExpired));
                }
                let reply = self.reply(Some(*session), self.read(*session, *acked_events, request));
                // No zxid: it is the whole tree's, so replicas a write apart would answer a read
                // of an untouched node differently and every read under writes would be
                // ordered after all. The gateway keeps its connection's highest zxid for the
                // header. What is read (a node's stat has its own zxids) and the session's
                // event count still have to agree.
                Reply {
                    zxid: Zxid(0),
                    ..reply
                }
            }
            _ => self.reply(None, Err(ErrorCode::Unimplemented)),
        }
    }
}

impl Application for CoordApp {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        self.pushes.clear();
        self.expire_sessions(nd.time);
        self.reap_timed(nd.time);
        let replies = batch
            .iter()
            .map(|cmd| {
                let reply = match CoordOp::decode(cmd.op) {
                    Ok(op) => self.apply(cmd.client, &op, nd.time, nd.seed),
                    Err(_) => self.reply(None, Err(ErrorCode::Marshalling)),
                };
                reply.encode()
            })
            .collect();
        BatchOutput {
            replies,
            pushes: self.take_pushes(),
        }
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        match CoordOp::decode(op) {
            Ok(op) => self.read_only(&op),
            Err(_) => self.reply(None, Err(ErrorCode::Marshalling)),
        }
        .encode()
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.canonical_bytes()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        *self = CoordApp::from_canonical_bytes(checkpoint)?;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.canonical_bytes())
    }

    fn objects(&mut self) -> Option<&mut dyn plumb_app::ObjectState> {
        Some(self)
    }
}
