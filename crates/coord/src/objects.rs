//! The coordination service as objects (docs/objects.md "The coordination service"): znodes
//! fall into [`BUCKET_BITS`]-bit hash buckets of their paths, each bucket one object, and each
//! node's children's names into chunks (256 and more as they grow, crate::tree), hashed into
//! as many objects again; the sessions, watches, the last zxid and the indexes
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
//! create may pick after the creates before it in the batch. Which chunk a child's name is in
//! depends on its parent's chunk count, which the metadata holds for any node that has more
//! than the minimum or is near doubling it ([`crate::tree::Indexes::wide`]): a create that may
//! double them names every chunk of the parent, and so does any later operation of the batch on
//! the parent's children.

use crate::app::CoordApp;
use crate::names::Names;
use crate::op::{CoordOp, MultiOp, Request, SessionId};
use crate::path;
use crate::session::Session;
use crate::tree::{
    bucket_of, chunk_bits_for, chunk_object, chunk_of, is_chunk_object, may_be_in_chunk,
    node_error, ChunkKey, Indexes, Znode, BUCKET_BITS, MAX_CHUNK_BITS, MIN_CHUNK_BITS, WIDE_FROM,
};
use crate::watch::Watches;
use plumb_app::{AccessSet, LoadError, ObjectId, ObjectState, ObjectWrite};
use plumb_wire::Micros;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Version byte of a bucket's encoding (2: chunk bits per node, chunk numbers up to 16 bits).
pub const BUCKET_VERSION: u8 = 2;
/// Version byte of the metadata's encoding (2: the wide nodes' index).
pub const METADATA_VERSION: u8 = 2;

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
        use plumb_app::codec::encode_versioned_sized;
        // Each string costs its bytes and a length of one or two bytes; a chunk's number and a
        // node's stat a few dozen more. Sizing the buffer up front halves the cost of encoding
        // a chunk of short names, the object every create and delete writes.
        if is_chunk_object(id) {
            let chunks = self.tree.chunk_bucket(id.0);
            let size: usize = chunks
                .iter()
                .map(|((parent, _), names)| parent.len() + 8 + names.encoded_len_hint())
                .sum();
            return (!chunks.is_empty())
                .then(|| encode_versioned_sized(BUCKET_VERSION, &chunks, size + 4));
        }
        let nodes = self.tree.bucket(id.0);
        let size: usize = nodes
            .iter()
            .map(|(path, node)| path.len() + node.data.len() + 96)
            .sum();
        (!nodes.is_empty()).then(|| encode_versioned_sized(BUCKET_VERSION, &nodes, size))
    }

    /// The chunks object `id`'s bytes hold, if they are exactly a canonical encoding of that
    /// object: each chunk in it, no empty one, each name a valid child name in its chunk.
    fn decode_chunks(id: ObjectId, bytes: &[u8]) -> Result<Vec<(ChunkKey, Names)>, LoadError> {
        let chunks: Vec<(ChunkKey, Names)> =
            plumb_app::codec::decode_versioned(BUCKET_VERSION, bytes)
                .map_err(|e| corrupt(format!("children: {e}")))?;
        if chunks.is_empty() {
            return Err(corrupt("empty chunk object encoded"));
        }
        if chunks.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(corrupt("chunks out of order"));
        }
        for ((parent, chunk), names) in &chunks {
            if u32::from(*chunk) >= 1 << MAX_CHUNK_BITS || chunk_object(parent, *chunk) != id {
                return Err(corrupt(format!(
                    "chunk {chunk} of {parent} in the wrong object"
                )));
            }
            if !path::is_valid(parent, false) || names.is_empty() {
                return Err(corrupt(format!("chunk {chunk} of {parent:?}")));
            }
            if let Some(n) = names.iter().find(|n| {
                !may_be_in_chunk(n, *chunk) || !path::is_valid(&path::join(parent, n), false)
            }) {
                return Err(corrupt(format!("child {n:?} of {parent} in chunk {chunk}")));
            }
        }
        let pairs: Vec<(&ChunkKey, &Names)> = chunks.iter().map(|(k, n)| (k, n)).collect();
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
    fn ephemerals_touched(
        &self,
        session: SessionId,
        earlier: &mut Earlier,
        ids: &mut Vec<ObjectId>,
    ) {
        let ephemerals = self.tree.indexes().ephemerals.get(&session);
        for p in ephemerals.into_iter().flatten() {
            self.deleted(p, earlier, ids);
        }
    }

    /// The buckets `op` may use, from its bytes and the metadata and what the operations
    /// `earlier` in the batch may have done.
    fn op_objects(
        &self,
        op: &CoordOp,
        earlier: &mut Earlier,
        ids: &mut Vec<ObjectId>,
    ) -> Result<(), ()> {
        match op {
            CoordOp::OpenSession { .. } | CoordOp::ResumeSession { .. } | CoordOp::Touch { .. } => {
            }
            CoordOp::CloseSession { session } => self.ephemerals_touched(*session, earlier, ids),
            CoordOp::Session { request, .. } => self.request_objects(request, earlier, ids)?,
        }
        Ok(())
    }

    fn request_objects(
        &self,
        request: &Request,
        earlier: &mut Earlier,
        ids: &mut Vec<ObjectId>,
    ) -> Result<(), ()> {
        match request {
            Request::Create { .. } | Request::Delete { .. } | Request::SetData { .. } => {
                if let Some(op) = request.as_write() {
                    self.multi_op_objects(&op, earlier, ids);
                }
            }
            Request::GetChildren { path, .. } => self.children_read(path, earlier, ids),
            Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. }
            | Request::Check { path, .. } => ids.push(bucket_of(path)),
            Request::Multi(ops) | Request::MultiRead(ops) => {
                for op in ops {
                    self.multi_op_objects(op, earlier, ids);
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

    fn multi_op_objects(&self, op: &MultiOp, earlier: &mut Earlier, ids: &mut Vec<ObjectId>) {
        match op {
            MultiOp::Create { path, mode, .. } => {
                let parent = path::parent(path);
                let under = earlier.under(parent);
                let before = under.creates;
                under.creates += 1;
                if mode.is_sequential() {
                    // The creates before it under the same parent may each have taken a number.
                    let first = self.tree.indexes().sequence_of(parent);
                    for n in first..=first.saturating_add(before) {
                        self.node_and_chunks(&format!("{path}{n:010}"), earlier, ids);
                    }
                } else {
                    self.node_and_chunks(path, earlier, ids);
                }
            }
            MultiOp::Delete { path, .. } => self.deleted(path, earlier, ids),
            MultiOp::GetChildren { path } => self.children_read(path, earlier, ids),
            MultiOp::SetData { path, .. }
            | MultiOp::Check { path, .. }
            | MultiOp::GetData { path } => ids.push(bucket_of(path)),
        }
    }

    /// The buckets the start of a batch at agreed time `now` changes: the ephemerals of the
    /// sessions that expire and their parents, the containers and TTL nodes that are due and
    /// their parents, and the grandparent of an expired ephemeral whose parent is a container
    /// or TTL node (deleting the ephemeral may make it due in the same batch).
    fn batch_start_objects(&self, now: Micros, earlier: &mut Earlier, ids: &mut Vec<ObjectId>) {
        let indexes = self.tree.indexes();
        for (id, s) in &self.sessions {
            if !s.expired_at(now) {
                continue;
            }
            for p in indexes.ephemerals.get(id).into_iter().flatten() {
                self.deleted(p, earlier, ids);
                let parent = path::parent(p);
                if indexes.is_timed(parent) {
                    self.deleted(parent, earlier, ids);
                }
            }
        }
        for p in indexes.due_at(crate::app::ms(now)) {
            self.deleted(p, earlier, ids);
        }
    }

    /// What deleting the node at `path` touches ([`CoordApp::node_and_chunks`]); the deletes
    /// after it count it.
    fn deleted(&self, path: &str, earlier: &mut Earlier, ids: &mut Vec<ObjectId>) {
        self.node_and_chunks(path, earlier, ids);
        earlier.under(path::parent(path)).deletes += 1;
    }

    /// What creating or deleting the node at `path` touches: its bucket, its parent's, and the
    /// chunk of the parent's children its name is in, or every chunk of the parent if it may
    /// have another number of chunks by then ([`CoordApp::parent_chunk_bits`]).
    fn node_and_chunks(&self, path: &str, earlier: &Earlier, ids: &mut Vec<ObjectId>) {
        let parent = path::parent(path);
        ids.push(bucket_of(path));
        ids.push(bucket_of(parent));
        let (lowest, highest) = self.parent_chunk_bits(parent, earlier);
        if lowest == highest {
            ids.push(chunk_object(parent, chunk_of(path::name(path), lowest)));
        } else {
            every_chunk(parent, highest, ids);
        }
    }

    /// What reading the children of `path` touches: its bucket and every chunk of its
    /// children.
    fn children_read(&self, path: &str, earlier: &Earlier, ids: &mut Vec<ObjectId>) {
        ids.push(bucket_of(path));
        every_chunk(path, self.parent_chunk_bits(path, earlier).1, ids);
    }

    /// The fewest and most chunk bits `parent` may have once the operations `earlier` in the
    /// batch ran (the creates counted include the one asking): it doubles when a create takes
    /// its children past a threshold, which the metadata's count tells for a wide node and
    /// cannot be nearer than [`WIDE_FROM`] creates for another; it drops to the minimum when
    /// its last child goes, which takes at least as many deletes as it has children.
    fn parent_chunk_bits(&self, parent: &str, earlier: &Earlier) -> (u8, u8) {
        let (bits, wide) = self.tree.indexes().chunks_of(parent);
        let under = earlier.counts.get(parent).copied().unwrap_or_default();
        let children = i64::from(wide.unwrap_or(WIDE_FROM - 1));
        let most = children
            .saturating_add(under.creates)
            .min(i64::from(i32::MAX)) as i32;
        let highest = chunk_bits_for(most, bits);
        let lowest = match wide {
            Some(n) if under.deletes >= i64::from(n) => MIN_CHUNK_BITS,
            _ => bits,
        };
        (lowest, highest)
    }

    /// The access set of a batch of decoded operations (bytes that are no operation get an
    /// error reply and touch nothing).
    fn access_set_of<'a>(
        &self,
        ops: impl IntoIterator<Item = &'a [u8]>,
        now: Option<Micros>,
    ) -> AccessSet {
        let mut ids = Vec::new();
        let mut earlier = Earlier::default();
        if let Some(now) = now {
            self.batch_start_objects(now, &mut earlier, &mut ids);
        }
        for op in ops {
            if let Ok(op) = CoordOp::decode(op) {
                if self.op_objects(&op, &mut earlier, &mut ids).is_err() {
                    return AccessSet::All;
                }
            }
        }
        AccessSet::objects(ids)
    }
}

/// Creates and deletes under each parent before an operation in its batch (each may have
/// failed): what moves a parent's sequence counter and chunk count on.
#[derive(Default)]
struct Earlier {
    counts: BTreeMap<String, Under>,
}

#[derive(Clone, Copy, Default)]
struct Under {
    creates: i64,
    deletes: i64,
}

impl Earlier {
    fn under(&mut self, parent: &str) -> &mut Under {
        self.counts.entry(parent.to_string()).or_default()
    }
}

/// Every chunk object of `parent`'s children when it has `2^bits` chunks (those of fewer bits
/// among them).
fn every_chunk(parent: &str, bits: u8, ids: &mut Vec<ObjectId>) {
    ids.extend((0..1u32 << bits).map(|c| chunk_object(parent, c as u16)));
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
        if let Some((p, w)) = m.indexes.wide.iter().find(|(_, w)| {
            !(MIN_CHUNK_BITS..=MAX_CHUNK_BITS).contains(&w.chunk_bits)
                || w.children < 0
                || (w.children < WIDE_FROM && w.chunk_bits == MIN_CHUNK_BITS)
        }) {
            return Err(corrupt(format!("wide node {p} in the index: {w:?}")));
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
