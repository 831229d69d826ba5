//! The object tree: a sparse, persistent binary Merkle tree of fixed depth over object
//! digests, holding the objects' bytes at its leaves.
//!
//! *Sparse*: a subtree without objects is not stored; its digest is
//! [`empty_subtree`](crate::empty_subtree) of its height. So a tree costs memory in
//! proportion to its objects, and a new tree is free.
//!
//! *Persistent*: nodes are shared (`Arc`) and never changed in place; an update copies the
//! path from each written leaf to the root. Cloning a tree is O(1), so the execution stage
//! keeps the tree of every checkpoint it holds (to serve peers) at the cost of the objects
//! written between them: copy-on-write at object granularity.
//!
//! *Incremental*: [`ObjectTree::apply`] rehashes only the paths of the written objects, each
//! inner node once, so a checkpoint costs `O(written * bits)` hashes whatever the state size.

use crate::digest::{empty_subtree, node_digest, object_digest, EMPTY_OBJECT};
use crate::position::NodePos;
use crate::proof::Proof;
use crate::{TreeError, MAX_BITS};
use plumb_app::ObjectId;
use plumb_crypto::Digest;
use std::sync::Arc;

/// Object bytes as a tree holds them: shared, never empty.
pub type ObjectBytes = Arc<[u8]>;

#[derive(Debug)]
enum Node {
    Leaf {
        digest: Digest,
        bytes: ObjectBytes,
    },
    Inner {
        digest: Digest,
        left: Option<Arc<Node>>,
        right: Option<Arc<Node>>,
    },
}

impl Node {
    fn digest(&self) -> Digest {
        match self {
            Node::Leaf { digest, .. } | Node::Inner { digest, .. } => *digest,
        }
    }

    fn children(&self) -> (Option<&Arc<Node>>, Option<&Arc<Node>>) {
        match self {
            Node::Inner { left, right, .. } => (left.as_ref(), right.as_ref()),
            Node::Leaf { .. } => (None, None),
        }
    }
}

fn digest_or_empty(node: Option<&Arc<Node>>, height: u8) -> Digest {
    node.map_or_else(|| empty_subtree(height), |n| n.digest())
}

/// One pending leaf write inside [`ObjectTree::apply`].
struct Write {
    id: u64,
    bytes: Option<ObjectBytes>,
    digest: Digest,
}

/// A Merkle tree over `2^bits` object slots. Cloning is O(1).
#[derive(Clone, Debug)]
pub struct ObjectTree {
    bits: u8,
    root: Option<Arc<Node>>,
    /// Non-empty objects.
    len: u64,
}

impl ObjectTree {
    /// An empty tree for ids of `bits` bits.
    pub fn new(bits: u8) -> Result<ObjectTree, TreeError> {
        if bits > MAX_BITS {
            return Err(TreeError::TooManyBits(bits));
        }
        Ok(ObjectTree {
            bits,
            root: None,
            len: 0,
        })
    }

    /// Bits of the object ids (the tree's depth).
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// The root digest: commits to every object.
    pub fn root(&self) -> Digest {
        digest_or_empty(self.root.as_ref(), self.bits)
    }

    /// Number of non-empty objects.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether every object is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` has a slot in this tree.
    pub fn contains_id(&self, id: ObjectId) -> bool {
        id.0 >> self.bits == 0
    }

    /// Write objects (`None` or empty bytes: make it empty); a later write of the same id in
    /// `writes` wins. Costs `O(writes * bits)` hashes plus hashing the written bytes.
    pub fn apply<I>(&mut self, writes: I) -> Result<(), TreeError>
    where
        I: IntoIterator<Item = (ObjectId, Option<ObjectBytes>)>,
    {
        let mut ws: Vec<Write> = Vec::new();
        for (id, bytes) in writes {
            if !self.contains_id(id) {
                return Err(TreeError::IdOutOfRange(id));
            }
            let bytes = bytes.filter(|b| !b.is_empty());
            let digest = object_digest(bytes.as_deref());
            ws.push(Write {
                id: id.0,
                bytes,
                digest,
            });
        }
        // Stable sort then keep the last of each id: "a later write wins".
        ws.sort_by_key(|w| w.id);
        let mut deduped: Vec<Write> = Vec::with_capacity(ws.len());
        for w in ws {
            match deduped.last_mut() {
                Some(last) if last.id == w.id => *last = w,
                _ => deduped.push(w),
            }
        }
        let mut len = i128::from(self.len);
        self.root = update(self.root.as_ref(), self.bits, &deduped, &mut len);
        self.len = u64::try_from(len).unwrap_or(0);
        debug_assert_eq!(self.len, self.count_slow_if_small());
        Ok(())
    }

    /// Convenience for [`ObjectTree::apply`] with owned vectors.
    pub fn apply_vecs<I>(&mut self, writes: I) -> Result<(), TreeError>
    where
        I: IntoIterator<Item = (ObjectId, Option<Vec<u8>>)>,
    {
        self.apply(
            writes
                .into_iter()
                .map(|(id, b)| (id, b.map(ObjectBytes::from))),
        )
    }

    fn node(&self, pos: NodePos) -> Option<&Arc<Node>> {
        if !pos.is_valid(self.bits) {
            return None;
        }
        let mut node = self.root.as_ref()?;
        for level in (0..pos.depth).rev() {
            let right = (pos.index >> level) & 1 == 1;
            let (l, r) = node.children();
            node = if right { r } else { l }?;
        }
        Some(node)
    }

    /// The bytes of object `id` (`None`: empty, or outside the id range).
    pub fn get(&self, id: ObjectId) -> Option<&ObjectBytes> {
        match self.node(NodePos::leaf(self.bits, id))?.as_ref() {
            Node::Leaf { bytes, .. } => Some(bytes),
            Node::Inner { .. } => None,
        }
    }

    /// The digest of object `id` ([`EMPTY_OBJECT`] if empty or outside the id range).
    pub fn object_digest(&self, id: ObjectId) -> Digest {
        if !self.contains_id(id) {
            return EMPTY_OBJECT;
        }
        self.node_digest(NodePos::leaf(self.bits, id))
            .unwrap_or(EMPTY_OBJECT)
    }

    /// The digest of the node at `pos`; `None` if `pos` is not a position of this tree.
    pub fn node_digest(&self, pos: NodePos) -> Option<Digest> {
        if !pos.is_valid(self.bits) {
            return None;
        }
        Some(digest_or_empty(self.node(pos), pos.height(self.bits)))
    }

    /// The digests of the two children of the inner node at `pos`; `None` if `pos` is a leaf
    /// or not a position of this tree.
    pub fn children(&self, pos: NodePos) -> Option<(Digest, Digest)> {
        if !pos.is_valid(self.bits) || pos.depth >= self.bits {
            return None;
        }
        let h = pos.height(self.bits) - 1;
        let (l, r) = self.node(pos).map_or((None, None), |n| n.children());
        Some((digest_or_empty(l, h), digest_or_empty(r, h)))
    }

    /// The ids of the non-empty objects under `pos`, in order.
    pub fn objects_under(&self, pos: NodePos) -> Vec<ObjectId> {
        let mut out = Vec::new();
        if let Some(node) = self.node(pos) {
            let height = pos.height(self.bits);
            collect_ids(node, pos.index << height, height, &mut out);
        }
        out
    }

    /// Every non-empty object, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ObjectId, &ObjectBytes)> {
        let mut stack: Vec<(&Arc<Node>, u64, u8)> = Vec::new();
        if let Some(root) = &self.root {
            stack.push((root, 0, self.bits));
        }
        std::iter::from_fn(move || {
            while let Some((node, base, height)) = stack.pop() {
                match node.as_ref() {
                    Node::Leaf { bytes, .. } => return Some((ObjectId(base), bytes)),
                    Node::Inner { left, right, .. } => {
                        let half = 1u64 << (height - 1);
                        if let Some(r) = right {
                            stack.push((r, base + half, height - 1));
                        }
                        if let Some(l) = left {
                            stack.push((l, base, height - 1));
                        }
                    }
                }
            }
            None
        })
    }

    /// The proof that object `id` has its current digest under [`ObjectTree::root`].
    pub fn proof(&self, id: ObjectId) -> Option<Proof> {
        if !self.contains_id(id) {
            return None;
        }
        let mut siblings = Vec::with_capacity(usize::from(self.bits));
        let mut node = self.root.as_ref();
        for level in (0..self.bits).rev() {
            let right = (id.0 >> level) & 1 == 1;
            let (l, r) = node.map_or((None, None), |n| n.children());
            let (next, sibling) = if right { (r, l) } else { (l, r) };
            siblings.push(digest_or_empty(sibling, level));
            node = next;
        }
        // Collected root-down; proofs run leaf-up.
        siblings.reverse();
        Some(Proof { siblings })
    }

    /// Ids whose objects differ between `self` and `other` (same `bits`), in order. Shared
    /// subtrees are skipped by pointer, so comparing a tree with one derived from it costs in
    /// proportion to the objects written between them.
    pub fn diff(&self, other: &ObjectTree) -> Result<Vec<ObjectId>, TreeError> {
        if self.bits != other.bits {
            return Err(TreeError::BitsMismatch(self.bits, other.bits));
        }
        let mut out = Vec::new();
        diff_nodes(
            self.root.as_ref(),
            other.root.as_ref(),
            0,
            self.bits,
            &mut out,
        );
        Ok(out)
    }

    fn count_slow_if_small(&self) -> u64 {
        if self.len > 64 {
            return self.len;
        }
        self.iter().count() as u64
    }
}

fn collect_ids(node: &Arc<Node>, base: u64, height: u8, out: &mut Vec<ObjectId>) {
    match node.as_ref() {
        Node::Leaf { .. } => out.push(ObjectId(base)),
        Node::Inner { left, right, .. } => {
            if let Some(l) = left {
                collect_ids(l, base, height - 1, out);
            }
            if let Some(r) = right {
                collect_ids(r, base + (1u64 << (height - 1)), height - 1, out);
            }
        }
    }
}

fn diff_nodes(
    a: Option<&Arc<Node>>,
    b: Option<&Arc<Node>>,
    base: u64,
    height: u8,
    out: &mut Vec<ObjectId>,
) {
    match (a, b) {
        (None, None) => {}
        (Some(x), Some(y)) if Arc::ptr_eq(x, y) || x.digest() == y.digest() => {}
        (Some(x), None) | (None, Some(x)) => collect_ids(x, base, height, out),
        (Some(x), Some(y)) => {
            if height == 0 {
                out.push(ObjectId(base));
                return;
            }
            let (xl, xr) = x.children();
            let (yl, yr) = y.children();
            diff_nodes(xl, yl, base, height - 1, out);
            diff_nodes(xr, yr, base + (1u64 << (height - 1)), height - 1, out);
        }
    }
}

/// The subtree at `height` after `writes` (sorted, one per id, all inside this subtree).
fn update(
    node: Option<&Arc<Node>>,
    height: u8,
    writes: &[Write],
    len: &mut i128,
) -> Option<Arc<Node>> {
    if writes.is_empty() {
        return node.cloned();
    }
    if height == 0 {
        debug_assert_eq!(writes.len(), 1, "one write per id after dedup");
        let w = writes.last()?;
        *len -= i128::from(node.is_some());
        *len += i128::from(w.bytes.is_some());
        return w.bytes.clone().map(|bytes| {
            Arc::new(Node::Leaf {
                digest: w.digest,
                bytes,
            })
        });
    }
    let bit = height - 1;
    let split = writes.partition_point(|w| (w.id >> bit) & 1 == 0);
    let (l, r) = node.map_or((None, None), |n| n.children());
    let left = update(l, bit, &writes[..split], len);
    let right = update(r, bit, &writes[split..], len);
    if left.is_none() && right.is_none() {
        return None;
    }
    let digest = node_digest(
        &digest_or_empty(left.as_ref(), bit),
        &digest_or_empty(right.as_ref(), bit),
    );
    Some(Arc::new(Node::Inner {
        digest,
        left,
        right,
    }))
}
