//! The coordination service as objects (docs/objects.md "The coordination service"): znodes
//! fall into [`BUCKET_BITS`]-bit hash buckets of their paths, each bucket one object, and each
//! node's children's names into [`crate::tree::CHILD_CHUNKS`] chunks, hashed into as many
//! objects again; the sessions, watches, the last zxid and the indexes
//! ([`crate::tree::Indexes`]) are the metadata, which every replica holds whole.
//!
//! Why sessions and watches are metadata and not objects: a change fires the watches of any
//! session, and an event is numbered and queued in the watching session's state; an
//! operation cannot know from its bytes which sessions watch what it changes, so if sessions
//! were objects every write would have to name them all. They are small and bounded (events
//! and watches per session are capped), while the nodes' data, which is what grows, is in
//! objects. The zxid is in the metadata too: every reply carries it, so as an object it would
//! be in every access set.
//!
//! Access sets may read the metadata (it is the same on every replica that executed the same
//! batches): a session's end deletes the ephemerals the index names, and a sequential create
//! writes the bucket of the name its parent's counter gives. A batch's set
//! ([`ObjectState::batch_access_set`]) adds what the batch's start changes (expired sessions'
//! ephemerals, due containers and TTL nodes, and their parents) and the names a sequential
//! create may pick after the creates before it in the batch.

use crate::app::CoordApp;
use crate::op::{CoordOp, MultiOp, Request, SessionId};
use crate::path;
use crate::session::Session;
use crate::tree::{
    bucket_of, chunk_object, chunk_of, is_chunk_object, node_error, ChunkKey, Indexes, Znode,
    BUCKET_BITS, CHILD_CHUNKS,
};
use crate::watch::Watches;
use plumb_app::{AccessSet, LoadError, ObjectId, ObjectState, ObjectWrite};
use plumb_wire::Micros;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Version byte of a bucket's encoding.
pub const BUCKET_VERSION: u8 = 1;
/// Version byte of the metadata's encoding.
pub const METADATA_VERSION: u8 = 1;

fn corrupt(why: impl Into<String>) -> LoadError {
    LoadError::Corrupt(why.into())
}

#[derive(Serialize)]
struct MetadataRef<'a> {
    zxid: i64,
    opened: u64,
    sessions: &'a BTreeMap<SessionId, Session>,
    watches: &'a Watches,
    indexes: &'a Indexes,
}

#[derive(Deserialize)]
struct Metadata {
    zxid: i64,
    opened: u64,
    sessions: BTreeMap<SessionId, Session>,
    watches: Watches,
    indexes: Indexes,
}

impl CoordApp {
    /// The canonical bytes of object `id` (`None` if it holds nothing): version byte, then
    /// postcard of its `(path, node)` pairs in path order, or for an object of children's
    /// names its `((parent, chunk), names)` pairs in order.
    pub fn bucket_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        if is_chunk_object(id) {
            let chunks = self.tree.chunk_bucket(id.0);
            return (!chunks.is_empty())
                .then(|| plumb_app::codec::encode_versioned(BUCKET_VERSION, &chunks));
        }
        let nodes = self.tree.bucket(id.0);
        (!nodes.is_empty()).then(|| plumb_app::codec::encode_versioned(BUCKET_VERSION, &nodes))
    }

    /// The chunks object `id`'s bytes hold, if they are exactly a canonical encoding of that
    /// object: each chunk in it, no empty one, each name a valid child name in its chunk.
    fn decode_chunks(
        id: ObjectId,
        bytes: &[u8],
    ) -> Result<Vec<(ChunkKey, BTreeSet<String>)>, LoadError> {
        let chunks: Vec<(ChunkKey, BTreeSet<String>)> =
            plumb_app::codec::decode_versioned(BUCKET_VERSION, bytes)
                .map_err(|e| corrupt(format!("children: {e}")))?;
        if chunks.is_empty() {
            return Err(corrupt("empty chunk object encoded"));
        }
        if chunks.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(corrupt("chunks out of order"));
        }
        for ((parent, chunk), names) in &chunks {
            if u16::from(*chunk) >= CHILD_CHUNKS || chunk_object(parent, *chunk) != id {
                return Err(corrupt(format!(
                    "chunk {chunk} of {parent} in the wrong object"
                )));
            }
            if !path::is_valid(parent, false) || names.is_empty() {
                return Err(corrupt(format!("chunk {chunk} of {parent:?}")));
            }
            if let Some(n) = names
                .iter()
                .find(|n| chunk_of(n) != *chunk || !path::is_valid(&path::join(parent, n), false))
            {
                return Err(corrupt(format!("child {n:?} of {parent} in chunk {chunk}")));
            }
        }
        let pairs: Vec<(&ChunkKey, &BTreeSet<String>)> =
            chunks.iter().map(|(k, n)| (k, n)).collect();
        if plumb_app::codec::encode_versioned(BUCKET_VERSION, &pairs) != bytes {
            return Err(corrupt("non-canonical chunk object"));
        }
        Ok(chunks)
    }

    /// The nodes bucket `id`'s bytes hold, if they are exactly a canonical encoding of a
    /// bucket with that id, each node valid on its own.
    fn decode_bucket(id: ObjectId, bytes: &[u8]) -> Result<Vec<(String, Znode)>, LoadError> {
        let nodes: Vec<(String, Znode)> = plumb_app::codec::decode_versioned(BUCKET_VERSION, bytes)
            .map_err(|e| corrupt(format!("bucket: {e}")))?;
        if nodes.is_empty() {
            return Err(corrupt("empty bucket encoded"));
        }
        if nodes.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(corrupt("bucket paths out of order"));
        }
        for (p, n) in &nodes {
            if bucket_of(p) != id {
                return Err(corrupt(format!("{p} in the wrong bucket")));
            }
            if let Some(e) = node_error(p, n) {
                return Err(corrupt(e));
            }
        }
        let pairs: Vec<(&String, &Znode)> = nodes.iter().map(|(p, n)| (p, n)).collect();
        if plumb_app::codec::encode_versioned(BUCKET_VERSION, &pairs) != bytes {
            return Err(corrupt("non-canonical bucket"));
        }
        Ok(nodes)
    }

    fn metadata_bytes(&self) -> Vec<u8> {
        let metadata = MetadataRef {
            zxid: self.zxid,
            opened: self.opened,
            sessions: &self.sessions,
            watches: &self.watches,
            indexes: self.tree.indexes(),
        };
        plumb_app::codec::encode_versioned(METADATA_VERSION, &metadata)
    }

    /// The objects a session's end touches: each of its ephemerals is deleted.
    fn ephemerals_touched(&self, session: SessionId, ids: &mut Vec<ObjectId>) {
        let ephemerals = self.tree.indexes().ephemerals.get(&session);
        for p in ephemerals.into_iter().flatten() {
            created_or_deleted(p, ids);
        }
    }

    /// The buckets `op` may use, from its bytes and the metadata; `creates` counts the creates
    /// under each parent earlier in the batch (each moves the parent's sequence counter on).
    fn op_objects(
        &self,
        op: &CoordOp,
        creates: &mut BTreeMap<String, i64>,
        ids: &mut Vec<ObjectId>,
    ) -> Result<(), ()> {
        match op {
            CoordOp::OpenSession { .. } | CoordOp::ResumeSession { .. } | CoordOp::Touch { .. } => {
            }
            CoordOp::CloseSession { session } => self.ephemerals_touched(*session, ids),
            CoordOp::Session { request, .. } => self.request_objects(request, creates, ids)?,
        }
        Ok(())
    }

    fn request_objects(
        &self,
        request: &Request,
        creates: &mut BTreeMap<String, i64>,
        ids: &mut Vec<ObjectId>,
    ) -> Result<(), ()> {
        match request {
            Request::Create { .. } | Request::Delete { .. } | Request::SetData { .. } => {
                if let Some(op) = request.as_write() {
                    self.multi_op_objects(&op, creates, ids);
                }
            }
            Request::GetChildren { path, .. } => children_read(path, ids),
            Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. }
            | Request::Check { path, .. } => ids.push(bucket_of(path)),
            Request::Multi(ops) | Request::MultiRead(ops) => {
                for op in ops {
                    self.multi_op_objects(op, creates, ids);
                }
            }
            Request::SetWatches {
                data, exist, child, ..
            } => ids.extend(data.iter().chain(exist).chain(child).map(|p| bucket_of(p))),
            Request::GetAllChildrenNumber { .. } => return Err(()),
            Request::Sync { .. }
            | Request::AddWatch { .. }
            | Request::RemoveWatches { .. }
            | Request::AddAuth { .. }
            | Request::PendingEvents => {}
        }
        Ok(())
    }

    fn multi_op_objects(
        &self,
        op: &MultiOp,
        creates: &mut BTreeMap<String, i64>,
        ids: &mut Vec<ObjectId>,
    ) {
        match op {
            MultiOp::Create { path, mode, .. } => {
                let parent = path::parent(path);
                let before = creates.entry(parent.to_string()).or_insert(0);
                if mode.is_sequential() {
                    // The creates before it under the same parent may each have taken a number.
                    let first = self.tree.indexes().sequence_of(parent);
                    for n in first..=first.saturating_add(*before) {
                        created_or_deleted(&format!("{path}{n:010}"), ids);
                    }
                } else {
                    created_or_deleted(path, ids);
                }
                *before += 1;
            }
            MultiOp::Delete { path, .. } => created_or_deleted(path, ids),
            MultiOp::GetChildren { path } => children_read(path, ids),
            MultiOp::SetData { path, .. }
            | MultiOp::Check { path, .. }
            | MultiOp::GetData { path } => ids.push(bucket_of(path)),
        }
    }

    /// The buckets the start of a batch at agreed time `now` changes: the ephemerals of the
    /// sessions that expire and their parents, the containers and TTL nodes that are due and
    /// their parents, and the grandparent of an expired ephemeral whose parent is a container
    /// or TTL node (deleting the ephemeral may make it due in the same batch).
    fn batch_start_objects(&self, now: Micros, ids: &mut Vec<ObjectId>) {
        let indexes = self.tree.indexes();
        for (id, s) in &self.sessions {
            if !s.expired_at(now) {
                continue;
            }
            for p in indexes.ephemerals.get(id).into_iter().flatten() {
                created_or_deleted(p, ids);
                let parent = path::parent(p);
                if indexes.is_timed(parent) {
                    created_or_deleted(parent, ids);
                }
            }
        }
        for p in indexes.due_at(crate::app::ms(now)) {
            created_or_deleted(p, ids);
        }
    }

    /// The access set of a batch of decoded operations (bytes that are no operation get an
    /// error reply and touch nothing).
    fn access_set_of<'a>(
        &self,
        ops: impl IntoIterator<Item = &'a [u8]>,
        now: Option<Micros>,
    ) -> AccessSet {
        let mut ids = Vec::new();
        if let Some(now) = now {
            self.batch_start_objects(now, &mut ids);
        }
        let mut creates = BTreeMap::new();
        for op in ops {
            if let Ok(op) = CoordOp::decode(op) {
                if self.op_objects(&op, &mut creates, &mut ids).is_err() {
                    return AccessSet::All;
                }
            }
        }
        AccessSet::objects(ids)
    }
}

/// What creating or deleting the node at `path` touches: its bucket, its parent's, and the
/// chunk of the parent's children its name is in.
fn created_or_deleted(path: &str, ids: &mut Vec<ObjectId>) {
    let parent = path::parent(path);
    ids.push(bucket_of(path));
    ids.push(bucket_of(parent));
    ids.push(chunk_object(parent, chunk_of(path::name(path))));
}

/// What reading the children of `path` touches: its bucket and every chunk of its children.
fn children_read(path: &str, ids: &mut Vec<ObjectId>) {
    ids.push(bucket_of(path));
    ids.extend((0..CHILD_CHUNKS).map(|c| chunk_object(path, c as u8)));
}

impl ObjectState for CoordApp {
    /// One bit more than a bucket's: nodes below `2^BUCKET_BITS`, children's names above.
    fn object_id_bits(&self) -> u8 {
        BUCKET_BITS + 1
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        self.tree
            .take_dirty()
            .into_iter()
            .map(|b| (ObjectId(b), self.bucket_bytes(ObjectId(b))))
            .collect()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.bucket_bytes(id)
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        if id.0 >> (BUCKET_BITS + 1) != 0 {
            return Err(corrupt("object id out of range"));
        }
        let bytes = bytes.filter(|b| !b.is_empty());
        if is_chunk_object(id) {
            let chunks = match bytes {
                None => Vec::new(),
                Some(b) => CoordApp::decode_chunks(id, b)?,
            };
            self.tree.load_chunks(id.0, chunks);
        } else {
            let nodes = match bytes {
                None => Vec::new(),
                Some(b) => CoordApp::decode_bucket(id, b)?,
            };
            self.tree.load_bucket(id.0, nodes);
        }
        Ok(())
    }

    /// Everything but the nodes: the last zxid, the sessions opened, the sessions, the
    /// watches and the indexes.
    fn object_metadata(&self) -> Vec<u8> {
        self.metadata_bytes()
    }

    fn load_object_metadata(&mut self, metadata: &[u8]) -> Result<(), LoadError> {
        let m: Metadata = plumb_app::codec::decode_versioned(METADATA_VERSION, metadata)
            .map_err(|e| corrupt(format!("metadata: {e}")))?;
        let watching = m.watches.sessions();
        if let Some(s) = m
            .indexes
            .ephemerals
            .keys()
            .chain(&watching)
            .find(|s| !m.sessions.contains_key(s))
        {
            return Err(corrupt(format!(
                "an ephemeral or a watch of a session that does not exist: {s:?}"
            )));
        }
        if let Some(p) = m.indexes.paths().find(|p| !path::is_valid(p, false)) {
            return Err(corrupt(format!("invalid path in the indexes: {p:?}")));
        }
        let empty: BTreeSet<String> = BTreeSet::new();
        if m.indexes.ephemerals.values().any(|s| *s == empty) {
            return Err(corrupt("a session with no ephemeral in the index"));
        }
        self.zxid = m.zxid;
        self.opened = m.opened;
        self.sessions = m.sessions;
        self.watches = m.watches;
        self.tree.load_indexes(m.indexes);
        self.forget_expiry_bound();
        if self.metadata_bytes() != metadata {
            return Err(corrupt("non-canonical metadata"));
        }
        Ok(())
    }

    fn access_set(&self, op: &[u8]) -> AccessSet {
        self.access_set_of([op], None)
    }

    fn batch_access_set(&self, ops: &[&[u8]], time: Micros) -> AccessSet {
        self.access_set_of(ops.iter().copied(), Some(time))
    }
}
