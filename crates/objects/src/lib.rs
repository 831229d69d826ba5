//! Application state as objects (seed 002 §4, seed 003 §4; docs/objects.md), and the
//! checkpoint/delta helper for applications whose own snapshots are coarse (seed 004 §7.2).
//!
//! - [`ObjectTree`]: a sparse, persistent Merkle tree over object digests. Its root commits
//!   to every object; [`Proof`]s of one object are `bits` digests long; updates rehash only
//!   the written paths (incremental checkpoints); clones are O(1) (copy-on-write snapshots).
//! - [`TreeSync`]: object-level state transfer: fetch only the objects whose digests differ
//!   from what the replica holds, each verified against an agreed root.
//! - [`StateUpdate`]: object writes reported by another replica, applied instead of
//!   re-executing, accepted only if they prove against an agreed root.
//! - [`CheckpointDelta`]: frequent checkpoints from rare coarse snapshots plus a log of the
//!   batches since.
//!
//! Everything here is pure and deterministic; nothing panics on remote input.

#![warn(missing_docs)]

mod delta;
mod digest;
mod position;
mod proof;
mod sync;
mod tree;
mod update;

#[cfg(test)]
mod tests;

pub use delta::{CheckpointDelta, DeltaCheckpoint, LoggedBatch, LoggedCommand};
pub use digest::{empty_subtree, node_digest, object_digest, EMPTY_OBJECT};
pub use plumb_app::{ObjectId, ObjectState, ObjectWrite, OBJECT_ID_BITS_MAX};
pub use position::NodePos;
pub use proof::{Proof, ProofError};
pub use sync::{serve_children, SyncReject, SyncStats, TreeSync};
pub use tree::{Held, ObjectBytes, ObjectTree, Retired};
pub use update::{ProvenWrite, StateUpdate, UpdateError};

/// The deepest tree supported (the application contract's limit).
pub const MAX_BITS: u8 = OBJECT_ID_BITS_MAX;

/// Misuse of a tree by its owner (never caused by remote input, which is checked first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// A tree deeper than [`MAX_BITS`] was asked for.
    #[error("{0} id bits is more than the supported {max}", max = MAX_BITS)]
    TooManyBits(u8),
    /// A write names an id of more bits than the tree has.
    #[error("object id {0:?} is outside the tree")]
    IdOutOfRange(ObjectId),
    /// Two trees of different depths were compared.
    #[error("trees of {0} and {1} bits cannot be compared")]
    BitsMismatch(u8, u8),
    /// A write names an object the tree does not hold (it lies in a missing subtree): fetch
    /// and fill it first.
    #[error("object id {0:?} is missing from this partial tree")]
    Missing(ObjectId),
    /// Two trees differ under a subtree one of them holds only the digest of.
    #[error("the trees differ under {0:?}, which one of them holds only the digest of")]
    MissingSubtree(NodePos),
    /// A node was named that this tree has no place for (deeper than the tree, or an index
    /// past its depth), or that lies inside a subtree it holds only the digest of.
    #[error("no node {0:?} to set in this tree")]
    NoSuchNode(NodePos),
}

/// Why [`ObjectTree::fill`] refused an object (remote input: the tree is left as it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FillError {
    /// The id has more bits than the tree.
    #[error("object id {0:?} is outside the tree")]
    IdOutOfRange(ObjectId),
    /// The proof does not hold one sibling per level.
    #[error("proof has {got} siblings, the tree needs {want}")]
    ProofLength {
        /// Siblings in the proof.
        got: usize,
        /// Levels of the tree.
        want: usize,
    },
    /// The object and proof do not lead to the digest of the missing subtree it lies in.
    #[error("object {0:?} does not prove against the digest this tree holds")]
    ProofMismatch(ObjectId),
    /// The children digests of a missing subtree do not hash to its digest.
    #[error("the children sent for {0:?} do not hash to the digest this tree holds")]
    ChildrenMismatch(NodePos),
    /// The object is held already, with other bytes.
    #[error("object {0:?} is held already, with other bytes")]
    HeldOtherwise(ObjectId),
}
