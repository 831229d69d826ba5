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
//!
//! *Partial*: a subtree may be held as its digest alone, its objects *missing* (docs/objects.md
//! "Partial state"). A replica that starts from a checkpoint's root ([`ObjectTree::pruned`])
//! holds nothing, and holds an object once [`ObjectTree::fill`] has checked its proof against
//! the digest of the missing subtree it lies in. Writes and roots work as on a whole tree, as
//! long as every written object is held; reads tell a missing object from an empty one
//! ([`ObjectTree::lookup`]). A missing subtree's digest is trusted because the nodes above it
//! are: they hash to the agreed root, and nothing under it can change while it is missing.

use crate::digest::{empty_subtree, node_digest, object_digest, EMPTY_OBJECT};
use crate::position::NodePos;
use crate::proof::Proof;
use crate::{FillError, TreeError, MAX_BITS};
use plumb_app::ObjectId;
use plumb_crypto::Digest;
use std::sync::Arc;

/// Object bytes as a tree holds them: shared, never empty.
pub type ObjectBytes = Arc<[u8]>;

/// A stored node. An absent child (`None`) is an empty subtree, known to be empty; a
/// [`Node::Missing`] one is a subtree whose objects this tree does not hold.
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
        /// Missing subtrees below: a search for them skips a whole subtree with none, so the
        /// background fill's next request costs the missing part, not the whole tree.
        missing: u64,
    },
    /// A subtree (of any height, a leaf included) held as its digest alone; never the digest
    /// of an empty subtree (that is `None`).
    Missing {
        digest: Digest,
    },
}

impl Node {
    fn digest(&self) -> Digest {
        match self {
            Node::Leaf { digest, .. } | Node::Inner { digest, .. } | Node::Missing { digest } => {
                *digest
            }
        }
    }

    fn children(&self) -> (Option<&Arc<Node>>, Option<&Arc<Node>>) {
        match self {
            Node::Inner { left, right, .. } => (left.as_ref(), right.as_ref()),
            Node::Leaf { .. } | Node::Missing { .. } => (None, None),
        }
    }

    fn is_missing(&self) -> bool {
        matches!(self, Node::Missing { .. })
    }

    /// The missing subtrees in this one (itself, if it is missing).
    fn missing_count(&self) -> u64 {
        match self {
            Node::Leaf { .. } => 0,
            Node::Missing { .. } => 1,
            Node::Inner { missing, .. } => *missing,
        }
    }
}

/// The inner node with `digest` over `left` and `right` (the digest computed or known).
fn inner_node(digest: Digest, left: Option<Arc<Node>>, right: Option<Arc<Node>>) -> Arc<Node> {
    let missing = [&left, &right]
        .into_iter()
        .flatten()
        .map(|c| c.missing_count())
        .sum();
    Arc::new(Node::Inner {
        digest,
        left,
        right,
        missing,
    })
}

/// The node for a subtree of `height` with `digest` whose contents are not held: `None` if
/// the digest says it is empty.
fn missing(digest: Digest, height: u8) -> Option<Arc<Node>> {
    (digest != empty_subtree(height)).then(|| Arc::new(Node::Missing { digest }))
}

/// The inner node over `left` and `right` (subtrees of height `height`), or none if both are
/// empty.
fn inner(left: Option<Arc<Node>>, right: Option<Arc<Node>>, height: u8) -> Option<Arc<Node>> {
    if left.is_none() && right.is_none() {
        return None;
    }
    let digest = node_digest(
        &digest_or_empty(left.as_ref(), height),
        &digest_or_empty(right.as_ref(), height),
    );
    Some(inner_node(digest, left, right))
}

/// What a tree holds of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held<'a> {
    /// Its bytes (`None`: it is empty).
    Object(Option<&'a ObjectBytes>),
    /// It lies in a subtree this tree holds only the digest of.
    Missing,
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
    /// Non-empty objects held.
    len: u64,
    /// Missing subtrees ([`Node::Missing`] nodes): 0 when the tree holds every object.
    missing: u64,
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
            missing: 0,
        })
    }

    /// A tree for ids of `bits` bits that knows only its `root` (a checkpoint's): every object
    /// is missing until [`ObjectTree::fill`] holds it (all of them are empty if `root` is the
    /// empty tree's).
    pub fn pruned(bits: u8, root: Digest) -> Result<ObjectTree, TreeError> {
        let mut tree = ObjectTree::new(bits)?;
        tree.root = missing(root, bits);
        tree.missing = u64::from(tree.root.is_some());
        Ok(tree)
    }

    /// Whether the tree holds every object (no subtree is missing).
    pub fn is_complete(&self) -> bool {
        self.missing == 0
    }

    /// Number of missing subtrees (0: complete). A fill of one object turns one missing
    /// subtree into up to `height` smaller ones.
    pub fn missing_subtrees(&self) -> u64 {
        self.missing
    }

    /// Bits of the object ids (the tree's depth).
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// The root digest: commits to every object.
    pub fn root(&self) -> Digest {
        digest_or_empty(self.root.as_ref(), self.bits)
    }

    /// Number of non-empty objects held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether every object is empty (and held).
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.missing == 0
    }

    /// Whether `id` has a slot in this tree.
    pub fn contains_id(&self, id: ObjectId) -> bool {
        id.0 >> self.bits == 0
    }

    /// Write objects (`None` or empty bytes: make it empty); a later write of the same id in
    /// `writes` wins. Costs `O(writes * bits)` hashes plus hashing the written bytes. Every
    /// written object must be held: a write of a missing one is refused
    /// ([`TreeError::Missing`]) and the tree left as it was.
    pub fn apply<I>(&mut self, writes: I) -> Result<(), TreeError>
    where
        I: IntoIterator<Item = (ObjectId, Option<ObjectBytes>)>,
    {
        self.apply_digested(writes.into_iter().map(|(id, bytes)| {
            let bytes = bytes.filter(|b| !b.is_empty());
            let digest = object_digest(bytes.as_deref());
            (id, bytes, digest)
        }))
    }

    /// [`ObjectTree::apply`] for writes whose digests the caller already computed
    /// ([`object_digest`] of the bytes, empty bytes as `None`), so bytes are not hashed twice.
    pub fn apply_digested<I>(&mut self, writes: I) -> Result<(), TreeError>
    where
        I: IntoIterator<Item = (ObjectId, Option<ObjectBytes>, Digest)>,
    {
        let mut ws: Vec<Write> = Vec::new();
        for (id, bytes, digest) in writes {
            if !self.contains_id(id) {
                return Err(TreeError::IdOutOfRange(id));
            }
            // Only a tree with missing subtrees needs the walk.
            if self.missing > 0 && self.lookup(id) == Held::Missing {
                return Err(TreeError::Missing(id));
            }
            let bytes = bytes.filter(|b| !b.is_empty());
            debug_assert_eq!(digest, object_digest(bytes.as_deref()), "a write's digest");
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
        self.debug_check();
        Ok(())
    }

    /// Hold object `id` with `bytes` (`None`: empty), given a proof from a peer: its siblings
    /// below the missing subtree `id` lies in must lead from `bytes` to that subtree's digest
    /// (those above are not read: this tree's own nodes are trusted there). The missing
    /// subtree becomes the object's path, each sibling on it a smaller missing subtree.
    /// Returns whether the object was missing; one already held is left alone if `bytes`
    /// match it and refused otherwise. Takes remote input: a bad proof is an error, never a
    /// panic, and leaves the tree as it was.
    pub fn fill(
        &mut self,
        id: ObjectId,
        bytes: Option<ObjectBytes>,
        proof: &Proof,
    ) -> Result<bool, FillError> {
        if !self.contains_id(id) {
            return Err(FillError::IdOutOfRange(id));
        }
        if proof.siblings.len() != usize::from(self.bits) {
            return Err(FillError::ProofLength {
                got: proof.siblings.len(),
                want: usize::from(self.bits),
            });
        }
        let bytes = bytes.filter(|b| !b.is_empty());
        if let Held::Object(held) = self.lookup(id) {
            return if held.map(|b| &b[..]) == bytes.as_deref() {
                Ok(false)
            } else {
                Err(FillError::HeldOtherwise(id))
            };
        }
        let leaf = object_digest(bytes.as_deref());
        let mut added = 0u64;
        let root = fill_node(
            self.root.as_ref(),
            self.bits,
            id.0,
            &Fill {
                leaf,
                bytes: &bytes,
                proof,
            },
            &mut added,
        )?;
        self.root = root;
        self.missing = self.missing - 1 + added;
        self.len += u64::from(bytes.is_some());
        self.debug_check();
        Ok(true)
    }

    /// Replace the missing subtree at `pos` by its two children, given their digests from a
    /// peer (a background fill walking down to the objects): they must hash to the subtree's
    /// digest, and each becomes a smaller missing subtree (or a known-empty one). Returns
    /// whether `pos` was a missing subtree; anything else (held, empty, inside a missing
    /// subtree, a leaf, outside the tree) is left alone. Takes remote input: digests that do
    /// not hash to the subtree's are an error, never a panic, and leave the tree as it was.
    pub fn expand_missing(
        &mut self,
        pos: NodePos,
        left: Digest,
        right: Digest,
    ) -> Result<bool, FillError> {
        if !pos.is_valid(self.bits) || pos.depth >= self.bits {
            return Ok(false);
        }
        let Ok(Some(node)) = self.node(pos) else {
            return Ok(false);
        };
        let Node::Missing { digest } = node.as_ref() else {
            return Ok(false);
        };
        if node_digest(&left, &right) != *digest {
            return Err(FillError::ChildrenMismatch(pos));
        }
        let height = pos.height(self.bits) - 1;
        let (l, r) = (missing(left, height), missing(right, height));
        let added = u64::from(l.is_some()) + u64::from(r.is_some());
        let replacement = inner_node(*digest, l, r);
        self.root = replace_node(self.root.as_ref(), pos, replacement);
        self.missing = self.missing - 1 + added;
        self.debug_check();
        Ok(true)
    }

    /// Hold the missing subtree at `pos` as `from` holds it, if `from`'s subtree there has the
    /// same digest (and holds more than the digest): a replica that loads a checkpoint keeps
    /// the parts of its former state that did not change, without fetching them. Returns the
    /// ids of the non-empty objects now held there, or `None` if nothing was taken (`pos` is
    /// not missing here, or `from` differs or holds only the digest). The digest proves the
    /// contents equal, so nothing else is checked.
    pub fn graft(&mut self, pos: NodePos, from: &ObjectTree) -> Option<Vec<ObjectId>> {
        if self.bits != from.bits || !pos.is_valid(self.bits) {
            return None;
        }
        let here = self.node(pos).ok()??;
        if !here.is_missing() {
            return None;
        }
        let there = from.node(pos).ok()??;
        if there.is_missing() || there.digest() != here.digest() {
            return None;
        }
        let there = there.clone();
        let mut counts = (0u64, 0u64);
        count_node(&there, &mut counts);
        let height = pos.height(self.bits);
        let mut ids = Vec::new();
        collect_ids(&there, pos.index << height, height, &mut ids);
        self.root = replace_node(self.root.as_ref(), pos, there);
        self.len += counts.0;
        self.missing = self.missing - 1 + counts.1;
        self.debug_check();
        Some(ids)
    }

    /// This tree with each missing subtree replaced by what `from` holds there (its objects,
    /// or empty): what a replica that loads again before its fill was done still has of its
    /// former state. `None` if `from` lacks part of a subtree this tree lacks. The parts this
    /// tree holds are shared, not copied or hashed again.
    pub fn with_missing_from(&self, from: &ObjectTree) -> Option<ObjectTree> {
        if self.bits != from.bits {
            return None;
        }
        let root = overlay(self.root.as_ref(), from.root.as_ref(), self.bits).ok()?;
        let mut counts = (0u64, 0u64);
        if let Some(r) = &root {
            count_node(r, &mut counts);
        }
        let tree = ObjectTree {
            bits: self.bits,
            root,
            len: counts.0,
            missing: counts.1,
        };
        tree.debug_check();
        Some(tree)
    }

    /// The missing subtree object `id` lies in, if it lies in one.
    pub fn missing_around(&self, id: ObjectId) -> Option<NodePos> {
        if !self.contains_id(id) {
            return None;
        }
        let mut node = self.root.as_ref()?;
        for depth in 0..=self.bits {
            if node.is_missing() {
                return Some(NodePos {
                    depth,
                    index: id.0 >> (self.bits - depth),
                });
            }
            if depth == self.bits {
                return None;
            }
            let (l, r) = node.children();
            let right = (id.0 >> (self.bits - depth - 1)) & 1 == 1;
            node = if right { r } else { l }?;
        }
        None
    }

    /// Whether the subtree at `pos` is known to be empty (neither held with objects nor
    /// missing, nor inside a missing subtree).
    pub fn is_empty_at(&self, pos: NodePos) -> bool {
        pos.is_valid(self.bits) && matches!(self.node(pos), Ok(None))
    }

    /// Let go of the objects under `pos`, keeping its digest: they are missing from now on
    /// (a replica that hands state back, or a test that makes a partial tree). Nothing to do
    /// for an empty or already missing subtree, or a position outside the tree.
    pub fn prune(&mut self, pos: NodePos) {
        if !pos.is_valid(self.bits) {
            return;
        }
        // An empty subtree stays empty (and known), and one in or at a missing subtree is
        // missing already: nothing to do for either.
        let Ok(Some(node)) = self.node(pos) else {
            return;
        };
        if node.is_missing() {
            return;
        }
        let node = node.clone();
        let Some(digest_only) = missing(node.digest(), pos.height(self.bits)) else {
            return;
        };
        let mut counts = (0u64, 0u64);
        count_node(&node, &mut counts);
        self.root = replace_node(self.root.as_ref(), pos, digest_only);
        self.len -= counts.0;
        self.missing = self.missing + 1 - counts.1;
        self.debug_check();
    }

    /// Hold the subtree at `pos` as `digest` alone, whatever it held before: its objects are
    /// missing from now on (or it is empty, if `digest` is the empty subtree's), and the
    /// digests above it are recomputed. For a digest agreed elsewhere: selective execution
    /// (docs/odrc.md) holds each partition it does not keep current as the certified root of
    /// its subtree, so that its tree's root is every correct replica's.
    pub fn set_subtree_digest(&mut self, pos: NodePos, digest: Digest) -> Result<(), TreeError> {
        if !pos.is_valid(self.bits) {
            return Err(TreeError::NoSuchNode(pos));
        }
        let old = self
            .node(pos)
            .map_err(|()| TreeError::NoSuchNode(pos))?
            .cloned();
        let mut counts = (0u64, 0u64);
        if let Some(old) = &old {
            count_node(old, &mut counts);
        }
        let new = missing(digest, pos.height(self.bits));
        let added = u64::from(new.is_some());
        self.root = set_node(self.root.as_ref(), pos, new, self.bits);
        self.len -= counts.0;
        self.missing = self.missing + added - counts.1;
        self.debug_check();
        Ok(())
    }

    /// Object `id` as this tree holds it: its bytes, empty, or missing.
    pub fn lookup(&self, id: ObjectId) -> Held<'_> {
        if !self.contains_id(id) {
            return Held::Object(None);
        }
        let mut node = match &self.root {
            Some(n) => n,
            None => return Held::Object(None),
        };
        for level in (0..self.bits).rev() {
            if node.is_missing() {
                return Held::Missing;
            }
            let (l, r) = node.children();
            node = match if (id.0 >> level) & 1 == 1 { r } else { l } {
                Some(n) => n,
                None => return Held::Object(None),
            };
        }
        match node.as_ref() {
            Node::Leaf { bytes, .. } => Held::Object(Some(bytes)),
            Node::Missing { .. } => Held::Missing,
            Node::Inner { .. } => Held::Object(None),
        }
    }

    /// The ids among `ids` that this tree does not hold, in the order given: what a replica
    /// must fetch before it executes operations that use `ids`.
    pub fn missing_of(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        ids.iter()
            .copied()
            .filter(|id| self.lookup(*id) == Held::Missing)
            .collect()
    }

    /// Up to `limit` missing subtrees, leftmost first, by position: what a background fill
    /// fetches next.
    pub fn missing_positions(&self, limit: usize) -> Vec<NodePos> {
        let mut out = Vec::new();
        if let Some(root) = &self.root {
            collect_missing(root, NodePos::ROOT, limit, &mut out);
        }
        out
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

    /// The node at `pos`: `Ok(None)` if it is in an empty subtree, `Err(())` if it lies
    /// strictly inside a missing one (the missing node itself is returned).
    fn node(&self, pos: NodePos) -> Result<Option<&Arc<Node>>, ()> {
        if !pos.is_valid(self.bits) {
            return Ok(None);
        }
        let Some(mut node) = self.root.as_ref() else {
            return Ok(None);
        };
        for level in (0..pos.depth).rev() {
            if node.is_missing() {
                return Err(());
            }
            let right = (pos.index >> level) & 1 == 1;
            let (l, r) = node.children();
            node = match if right { r } else { l } {
                Some(n) => n,
                None => return Ok(None),
            };
        }
        Ok(Some(node))
    }

    /// The bytes of object `id` (`None`: empty, missing, or outside the id range;
    /// [`ObjectTree::lookup`] tells them apart).
    pub fn get(&self, id: ObjectId) -> Option<&ObjectBytes> {
        match self.lookup(id) {
            Held::Object(bytes) => bytes,
            Held::Missing => None,
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

    /// The digest of the node at `pos`; `None` if `pos` is not a position of this tree, or
    /// lies inside a missing subtree.
    pub fn node_digest(&self, pos: NodePos) -> Option<Digest> {
        if !pos.is_valid(self.bits) {
            return None;
        }
        let node = self.node(pos).ok()?;
        Some(digest_or_empty(node, pos.height(self.bits)))
    }

    /// The digests of the two children of the inner node at `pos`; `None` if `pos` is a leaf,
    /// not a position of this tree, or missing (or inside a missing subtree).
    pub fn children(&self, pos: NodePos) -> Option<(Digest, Digest)> {
        if !pos.is_valid(self.bits) || pos.depth >= self.bits {
            return None;
        }
        let h = pos.height(self.bits) - 1;
        let node = self.node(pos).ok()?;
        if node.is_some_and(|n| n.is_missing()) {
            return None;
        }
        let (l, r) = node.map_or((None, None), |n| n.children());
        Some((digest_or_empty(l, h), digest_or_empty(r, h)))
    }

    /// The ids of the non-empty objects held under `pos`, in order.
    pub fn objects_under(&self, pos: NodePos) -> Vec<ObjectId> {
        let mut out = Vec::new();
        if let Ok(Some(node)) = self.node(pos) {
            let height = pos.height(self.bits);
            collect_ids(node, pos.index << height, height, &mut out);
        }
        out
    }

    /// Every non-empty object held, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ObjectId, &ObjectBytes)> {
        let mut stack: Vec<(&Arc<Node>, u64, u8)> = Vec::new();
        if let Some(root) = &self.root {
            stack.push((root, 0, self.bits));
        }
        std::iter::from_fn(move || {
            while let Some((node, base, height)) = stack.pop() {
                match node.as_ref() {
                    Node::Leaf { bytes, .. } => return Some((ObjectId(base), bytes)),
                    Node::Missing { .. } => {}
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

    /// The proof that object `id` has its current digest under [`ObjectTree::root`]; `None`
    /// if it is outside the tree or missing.
    pub fn proof(&self, id: ObjectId) -> Option<Proof> {
        if !self.contains_id(id) || self.lookup(id) == Held::Missing {
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
    /// proportion to the objects written between them. Subtrees that differ where either
    /// tree holds only a digest cannot be listed: [`TreeError::MissingSubtree`].
    pub fn diff(&self, other: &ObjectTree) -> Result<Vec<ObjectId>, TreeError> {
        Ok(self
            .diff_objects(other)?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// [`ObjectTree::diff`] with each object's bytes in `other` (`None`: empty there): what
    /// writing a checkpoint's delta needs, without walking down to each object again.
    #[allow(clippy::type_complexity)]
    pub fn diff_objects(
        &self,
        other: &ObjectTree,
    ) -> Result<Vec<(ObjectId, Option<ObjectBytes>)>, TreeError> {
        if self.bits != other.bits {
            return Err(TreeError::BitsMismatch(self.bits, other.bits));
        }
        let mut out = Vec::new();
        diff_nodes(
            self.root.as_ref(),
            other.root.as_ref(),
            NodePos::ROOT,
            self.bits,
            &mut out,
        )?;
        Ok(out)
    }

    /// The tree's invariants, checked in full on small trees in debug builds after every
    /// change (a large tree is checked by the same code in its unit tests): every inner node's
    /// digest is its children's, no inner node has two empty children, no missing subtree has
    /// the empty digest, and `len` and `missing` count the held objects and missing subtrees.
    fn debug_check(&self) {
        if cfg!(debug_assertions) && self.len + self.missing <= 64 {
            self.check_invariants();
        }
    }

    /// [`ObjectTree::debug_check`]'s checks, whatever the size; panics on a broken invariant.
    pub fn check_invariants(&self) {
        let mut counts = (0u64, 0u64);
        if let Some(root) = &self.root {
            check_node(root, self.bits, &mut counts);
        }
        assert_eq!(counts, (self.len, self.missing), "INV-tree-counts");
    }
}

fn check_node(node: &Arc<Node>, height: u8, counts: &mut (u64, u64)) {
    match node.as_ref() {
        Node::Leaf { digest, bytes } => {
            assert_eq!(height, 0, "INV-tree-leaf-depth");
            assert_eq!(*digest, object_digest(Some(bytes)), "INV-tree-leaf-digest");
            counts.0 += 1;
        }
        Node::Missing { digest } => {
            assert_ne!(*digest, empty_subtree(height), "INV-tree-missing-not-empty");
            counts.1 += 1;
        }
        Node::Inner {
            digest,
            left,
            right,
            missing,
        } => {
            assert!(height > 0, "INV-tree-inner-depth");
            let below: u64 = [left, right]
                .into_iter()
                .flatten()
                .map(|c| c.missing_count())
                .sum();
            assert_eq!(*missing, below, "INV-tree-inner-missing-count");
            assert!(
                left.is_some() || right.is_some(),
                "INV-tree-inner-not-empty"
            );
            let h = height - 1;
            let want = node_digest(
                &digest_or_empty(left.as_ref(), h),
                &digest_or_empty(right.as_ref(), h),
            );
            assert_eq!(*digest, want, "INV-tree-inner-digest");
            for child in [left, right].into_iter().flatten() {
                check_node(child, h, counts);
            }
        }
    }
}

/// What [`ObjectTree::fill`] puts in: the object's leaf digest and bytes, and its proof.
struct Fill<'a> {
    leaf: Digest,
    bytes: &'a Option<ObjectBytes>,
    proof: &'a Proof,
}

/// The subtree at `height` with object `id` held, or an error if its proof does not lead to
/// the missing subtree on its path. `added` counts the missing subtrees the fill leaves.
fn fill_node(
    node: Option<&Arc<Node>>,
    height: u8,
    id: u64,
    fill: &Fill<'_>,
    added: &mut u64,
) -> Result<Option<Arc<Node>>, FillError> {
    let Some(node) = node else {
        // `lookup` said missing: a missing node is on the path.
        return Err(FillError::HeldOtherwise(ObjectId(id)));
    };
    if let Node::Missing { digest } = node.as_ref() {
        let mut acc = fill.leaf;
        for (h, sibling) in fill
            .proof
            .siblings
            .iter()
            .take(usize::from(height))
            .enumerate()
        {
            acc = if (id >> h) & 1 == 0 {
                node_digest(&acc, sibling)
            } else {
                node_digest(sibling, &acc)
            };
        }
        if acc != *digest {
            return Err(FillError::ProofMismatch(ObjectId(id)));
        }
        return Ok(expand(height, id, fill, added));
    }
    if height == 0 {
        return Err(FillError::HeldOtherwise(ObjectId(id)));
    }
    let bit = height - 1;
    let (l, r) = node.children();
    let (left, right) = if (id >> bit) & 1 == 0 {
        (fill_node(l, bit, id, fill, added)?, r.cloned())
    } else {
        (l.cloned(), fill_node(r, bit, id, fill, added)?)
    };
    let filled = inner(left, right, bit);
    debug_assert_eq!(
        filled.as_ref().map(|n| n.digest()),
        Some(node.digest()),
        "a fill keeps every digest above it"
    );
    Ok(filled)
}

/// The verified path of height `height` down to object `id`: its siblings from the proof as
/// missing subtrees (or empty ones), the leaf holding the bytes.
fn expand(height: u8, id: u64, fill: &Fill<'_>, added: &mut u64) -> Option<Arc<Node>> {
    if height == 0 {
        return fill.bytes.clone().map(|bytes| {
            Arc::new(Node::Leaf {
                digest: fill.leaf,
                bytes,
            })
        });
    }
    let bit = height - 1;
    let below = expand(bit, id, fill, added);
    let sibling = missing(fill.proof.siblings[usize::from(bit)], bit);
    *added += u64::from(sibling.is_some());
    let (left, right) = if (id >> bit) & 1 == 0 {
        (below, sibling)
    } else {
        (sibling, below)
    };
    inner(left, right, bit)
}

/// `node` (the subtree at relative position `pos`) with the node at `pos` replaced by
/// `with`, copying the path to it. The path exists: the caller found the node there.
fn replace_node(node: Option<&Arc<Node>>, pos: NodePos, with: Arc<Node>) -> Option<Arc<Node>> {
    if pos.depth == 0 {
        return Some(with);
    }
    let node = node?;
    let right = (pos.index >> (pos.depth - 1)) & 1 == 1;
    let below = NodePos {
        depth: pos.depth - 1,
        index: pos.index & ((1u64 << (pos.depth - 1)) - 1),
    };
    let (l, r) = node.children();
    let (left, right) = if right {
        (l.cloned(), replace_node(r, below, with))
    } else {
        (replace_node(l, below, with), r.cloned())
    };
    Some(inner_node(node.digest(), left, right))
}

/// `node` (the subtree of height `height`) with the node at `pos` under it replaced by `with`,
/// the digests on the way recomputed; an empty subtree on the way is made.
fn set_node(
    node: Option<&Arc<Node>>,
    pos: NodePos,
    with: Option<Arc<Node>>,
    height: u8,
) -> Option<Arc<Node>> {
    if pos.depth == 0 {
        return with;
    }
    let right = (pos.index >> (pos.depth - 1)) & 1 == 1;
    let below = NodePos {
        depth: pos.depth - 1,
        index: pos.index & ((1u64 << (pos.depth - 1)) - 1),
    };
    let (l, r) = node.map_or((None, None), |n| n.children());
    let (left, right) = if right {
        (l.cloned(), set_node(r, below, with, height - 1))
    } else {
        (set_node(l, below, with, height - 1), r.cloned())
    };
    inner(left, right, height - 1)
}

/// [`ObjectTree::with_missing_from`] on the subtree `node` of `height`, `from` at the same
/// place: `Err` where `from` lacks what `node` lacks.
fn overlay(
    node: Option<&Arc<Node>>,
    from: Option<&Arc<Node>>,
    height: u8,
) -> Result<Option<Arc<Node>>, ()> {
    let Some(n) = node else {
        return Ok(None);
    };
    match n.as_ref() {
        Node::Missing { .. } => match from {
            Some(f) if f.is_missing() => Err(()),
            _ => Ok(from.cloned()),
        },
        Node::Leaf { .. } => Ok(Some(n.clone())),
        Node::Inner { left, right, .. } => {
            let (fl, fr) = match from {
                Some(f) if f.is_missing() => {
                    // `from` lacks this part: fine as long as this tree lacks nothing in it.
                    if contains_missing(n) {
                        return Err(());
                    }
                    return Ok(Some(n.clone()));
                }
                Some(f) => f.children(),
                None => (None, None),
            };
            let l = overlay(left.as_ref(), fl, height - 1)?;
            let r = overlay(right.as_ref(), fr, height - 1)?;
            let same = |new: &Option<Arc<Node>>, old: &Option<Arc<Node>>| match (new, old) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if same(&l, left) && same(&r, right) {
                return Ok(Some(n.clone()));
            }
            Ok(inner(l, r, height - 1))
        }
    }
}

fn count_node(node: &Arc<Node>, counts: &mut (u64, u64)) {
    match node.as_ref() {
        Node::Leaf { .. } => counts.0 += 1,
        Node::Missing { .. } => counts.1 += 1,
        Node::Inner { left, right, .. } => {
            for child in [left, right].into_iter().flatten() {
                count_node(child, counts);
            }
        }
    }
}

fn collect_missing(node: &Arc<Node>, pos: NodePos, limit: usize, out: &mut Vec<NodePos>) {
    if out.len() >= limit {
        return;
    }
    match node.as_ref() {
        Node::Missing { .. } => out.push(pos),
        Node::Leaf { .. } | Node::Inner { missing: 0, .. } => {}
        Node::Inner { left, right, .. } => {
            if let Some(l) = left {
                collect_missing(l, pos.child(false), limit, out);
            }
            if let Some(r) = right {
                collect_missing(r, pos.child(true), limit, out);
            }
        }
    }
}

fn collect_ids(node: &Arc<Node>, base: u64, height: u8, out: &mut Vec<ObjectId>) {
    match node.as_ref() {
        Node::Leaf { .. } => out.push(ObjectId(base)),
        Node::Missing { .. } => {}
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

/// The objects of `node` (at `base`, `height` levels), with their bytes if `with_bytes`.
fn collect_objects(
    node: &Arc<Node>,
    base: u64,
    height: u8,
    with_bytes: bool,
    out: &mut Vec<(ObjectId, Option<ObjectBytes>)>,
) {
    match node.as_ref() {
        Node::Leaf { bytes, .. } => out.push((ObjectId(base), with_bytes.then(|| bytes.clone()))),
        Node::Missing { .. } => {}
        Node::Inner { left, right, .. } => {
            if let Some(l) = left {
                collect_objects(l, base, height - 1, with_bytes, out);
            }
            if let Some(r) = right {
                collect_objects(
                    r,
                    base + (1u64 << (height - 1)),
                    height - 1,
                    with_bytes,
                    out,
                );
            }
        }
    }
}

/// The objects that differ between `a` and `b`, with their bytes in `b`.
fn diff_nodes(
    a: Option<&Arc<Node>>,
    b: Option<&Arc<Node>>,
    pos: NodePos,
    height: u8,
    out: &mut Vec<(ObjectId, Option<ObjectBytes>)>,
) -> Result<(), TreeError> {
    let base = pos.index << height;
    match (a, b) {
        (None, None) => {}
        (Some(x), Some(y)) if Arc::ptr_eq(x, y) || x.digest() == y.digest() => {}
        (Some(x), Some(y)) if x.is_missing() || y.is_missing() => {
            return Err(TreeError::MissingSubtree(pos))
        }
        (Some(x), None) | (None, Some(x)) => {
            if contains_missing(x) {
                return Err(TreeError::MissingSubtree(pos));
            }
            collect_objects(x, base, height, b.is_some(), out)
        }
        (Some(x), Some(y)) => {
            if height == 0 {
                let bytes = match y.as_ref() {
                    Node::Leaf { bytes, .. } => Some(bytes.clone()),
                    Node::Inner { .. } | Node::Missing { .. } => None,
                };
                out.push((ObjectId(base), bytes));
                return Ok(());
            }
            let (xl, xr) = x.children();
            let (yl, yr) = y.children();
            diff_nodes(xl, yl, pos.child(false), height - 1, out)?;
            diff_nodes(xr, yr, pos.child(true), height - 1, out)?;
        }
    }
    Ok(())
}

fn contains_missing(node: &Arc<Node>) -> bool {
    let mut counts = (0u64, 0u64);
    count_node(node, &mut counts);
    counts.1 > 0
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
    debug_assert!(
        !node.is_some_and(|n| n.is_missing()),
        "writes of missing objects are refused before"
    );
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
    inner(left, right, bit)
}

/// Trees no longer needed, freed a few nodes at a time.
///
/// Dropping a checkpoint's tree frees every node no later tree shares: the paths of all the
/// objects written in the interval after it, tens of thousands of allocations under load. The
/// execution stage dropped it inside the step that takes the next checkpoint, on every replica
/// at the same batch: a quarter of that step's CPU (a profile of u1r0 writes at 64 clients,
/// 2026-12-04, docs/performance.md). A retired tree is taken apart instead by
/// [`Retired::free`], a bounded number of nodes per call, between batches.
#[derive(Debug, Default)]
pub struct Retired {
    /// Nodes still to free. A node is taken apart only if no other tree shares it (its
    /// children are then pushed here); a shared one is only released.
    stack: Vec<Arc<Node>>,
}

impl Retired {
    /// Retire `tree`. What an earlier tree left is freed first, so at most one tree's worth of
    /// nodes ever waits here.
    pub fn retire(&mut self, tree: ObjectTree) {
        self.free(usize::MAX);
        self.stack.extend(tree.root);
    }

    /// Free up to `budget` nodes (each step frees or releases one node). Returns whether
    /// nothing is left.
    pub fn free(&mut self, budget: usize) -> bool {
        for _ in 0..budget {
            let Some(node) = self.stack.pop() else {
                return true;
            };
            if let Ok(Node::Inner { left, right, .. }) = Arc::try_unwrap(node) {
                self.stack.extend(left);
                self.stack.extend(right);
            }
            // A leaf, a missing subtree, or a node another tree holds: dropped here, one
            // allocation at most.
        }
        self.stack.is_empty()
    }

    /// Whether nothing waits to be freed.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }
}
