//! Object-level state transfer, the fetching side: bring a local tree to a target root by
//! fetching only what differs.
//!
//! The session walks the target tree top-down from its root, which the caller has from an
//! agreed checkpoint. For each inner node whose digest differs from the local one it asks a
//! peer for the node's two children digests, and checks that they hash to the digest it
//! expects; for each differing leaf it asks for the object and checks its bytes against the
//! leaf digest. Everything accepted is thereby verified against the root, so any peer, even
//! a faulty one, may serve. A subtree that is empty in the target is cleared locally without
//! asking. Subtrees equal to the local ones are never visited, so a replica that holds all
//! but 1% of the objects fetches about 1% of them plus the digests on their paths.
//!
//! The session is pure: the caller moves requests and replies, and applies the verified
//! writes ([`TreeSync::take_writes`]) to its tree and application.

use crate::digest::{empty_subtree, node_digest, object_digest};
use crate::position::NodePos;
use crate::tree::{ObjectBytes, ObjectTree};
use plumb_app::ObjectId;
use plumb_crypto::Digest;
use std::collections::BTreeMap;

/// Why a reply was not accepted (counted by the caller, never fatal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SyncReject {
    /// Not a node or object the session waits for (late, duplicate or never asked).
    #[error("node or object not awaited")]
    Unrequested,
    /// The children digests do not hash to the node: the sender is faulty.
    #[error("children do not hash to the node's digest")]
    BadChildren,
    /// The object bytes do not match the leaf: the sender is faulty.
    #[error("object bytes do not match the leaf digest")]
    BadObject,
}

/// A state transfer towards one target root.
#[derive(Debug, Clone)]
pub struct TreeSync {
    bits: u8,
    target: Digest,
    /// Inner nodes whose children are still needed, with the digest they must hash to.
    nodes: BTreeMap<NodePos, Digest>,
    /// Objects still needed, with the digest they must have.
    objects: BTreeMap<ObjectId, Digest>,
    /// Verified writes not yet taken.
    writes: Vec<(ObjectId, Option<ObjectBytes>)>,
    stats: SyncStats,
}

/// What a session moved (for metrics and the benchmark).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Inner nodes whose children were fetched.
    pub nodes_fetched: u64,
    /// Objects fetched.
    pub objects_fetched: u64,
    /// Bytes of fetched objects.
    pub object_bytes: u64,
    /// Objects cleared because their subtree is empty in the target.
    pub objects_cleared: u64,
}

impl TreeSync {
    /// A session bringing `local` to `target`. `local` must stay the same tree (or be
    /// passed unchanged) for the whole session.
    pub fn new(local: &ObjectTree, target: Digest) -> TreeSync {
        let mut s = TreeSync {
            bits: local.bits(),
            target,
            nodes: BTreeMap::new(),
            objects: BTreeMap::new(),
            writes: Vec::new(),
            stats: SyncStats::default(),
        };
        s.visit(local, NodePos::ROOT, target);
        s
    }

    /// The target root.
    pub fn target(&self) -> Digest {
        self.target
    }

    /// Nothing left to fetch (the writes may still wait to be taken).
    pub fn is_done(&self) -> bool {
        self.nodes.is_empty() && self.objects.is_empty()
    }

    /// Counts so far.
    pub fn stats(&self) -> SyncStats {
        self.stats
    }

    /// Inner nodes still needed, in order (the first `max`).
    pub fn wanted_nodes(&self, max: usize) -> Vec<NodePos> {
        self.nodes.keys().take(max).copied().collect()
    }

    /// Objects still needed, in order (the first `max`).
    pub fn wanted_objects(&self, max: usize) -> Vec<ObjectId> {
        self.objects.keys().take(max).copied().collect()
    }

    /// Number of inner nodes and objects still needed.
    pub fn pending(&self) -> (usize, usize) {
        (self.nodes.len(), self.objects.len())
    }

    /// A node of the target with digest `digest`: skip it if the local one is equal, clear
    /// it if it is empty, otherwise remember to fetch it.
    fn visit(&mut self, local: &ObjectTree, pos: NodePos, digest: Digest) {
        if local.node_digest(pos) == Some(digest) {
            return;
        }
        if digest == empty_subtree(pos.height(self.bits)) {
            for id in local.objects_under(pos) {
                self.writes.push((id, None));
                self.stats.objects_cleared += 1;
            }
            return;
        }
        if pos.depth >= self.bits {
            self.objects.insert(pos.object(), digest);
        } else {
            self.nodes.insert(pos, digest);
        }
    }

    /// A peer's children digests for `pos`; accepted only if they hash to the awaited digest.
    pub fn on_children(
        &mut self,
        local: &ObjectTree,
        pos: NodePos,
        left: Digest,
        right: Digest,
    ) -> Result<(), SyncReject> {
        let Some(expected) = self.nodes.get(&pos) else {
            return Err(SyncReject::Unrequested);
        };
        if node_digest(&left, &right) != *expected {
            return Err(SyncReject::BadChildren);
        }
        self.nodes.remove(&pos);
        self.stats.nodes_fetched += 1;
        self.visit(local, pos.child(false), left);
        self.visit(local, pos.child(true), right);
        Ok(())
    }

    /// A peer's bytes for object `id`; accepted only if they match the awaited digest.
    pub fn on_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), SyncReject> {
        let Some(expected) = self.objects.get(&id) else {
            return Err(SyncReject::Unrequested);
        };
        if object_digest(bytes) != *expected {
            return Err(SyncReject::BadObject);
        }
        self.objects.remove(&id);
        self.stats.objects_fetched += 1;
        self.stats.object_bytes += bytes.map_or(0, |b| b.len() as u64);
        self.writes
            .push((id, bytes.filter(|b| !b.is_empty()).map(ObjectBytes::from)));
        Ok(())
    }

    /// The verified writes so far. Applied to the local tree once the session is done, they
    /// give the target root.
    pub fn take_writes(&mut self) -> Vec<(ObjectId, Option<ObjectBytes>)> {
        std::mem::take(&mut self.writes)
    }
}

/// Serve one session's requests from `tree` (what a peer does): children of inner nodes.
/// Positions that are not inner nodes of `tree` are skipped.
pub fn serve_children(tree: &ObjectTree, nodes: &[NodePos]) -> Vec<(NodePos, Digest, Digest)> {
    nodes
        .iter()
        .filter_map(|p| tree.children(*p).map(|(l, r)| (*p, l, r)))
        .collect()
}
