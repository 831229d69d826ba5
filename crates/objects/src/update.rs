//! State updates (seed 002 §4.8.2): the object writes that took a state from one checkpoint
//! to a later one, as another replica reports them, applied instead of re-executing the
//! requests that made them.
//!
//! A replica accepts an update only against a root it already trusts (the later checkpoint's,
//! agreed by `r + 1` LOAD-CPs naming its token): each write carries a proof against that
//! root, and after applying them all the local tree must have exactly that root, which also
//! catches a reporter that left writes out. See docs/objects.md.

use crate::proof::{Proof, ProofError};
use crate::tree::{ObjectBytes, ObjectTree};
use crate::TreeError;
use plumb_app::ObjectId;
use plumb_crypto::Digest;

/// One object write with its proof against the update's target root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvenWrite {
    /// The object written.
    pub id: ObjectId,
    /// Its bytes in the target state (`None`: empty).
    pub bytes: Option<Vec<u8>>,
    /// The object's path to the target root.
    pub proof: Proof,
}

/// The writes between two states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateUpdate {
    /// One write per changed object, in id order.
    pub writes: Vec<ProvenWrite>,
}

/// Why an update was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// A write's proof does not lead to the root.
    #[error("write of object {0:?} does not prove against the root: {1}")]
    BadProof(ObjectId, ProofError),
    /// Every write proves, but together they do not give the root: some are missing.
    #[error("the update is incomplete: applied, it does not give the root")]
    Incomplete,
    /// The base tree refused a write.
    #[error("tree: {0}")]
    Tree(TreeError),
}

impl StateUpdate {
    /// The update taking `from` to `to` (trees of the same bits), with proofs against
    /// `to`'s root. Costs in proportion to the objects that differ.
    pub fn between(from: &ObjectTree, to: &ObjectTree) -> Result<StateUpdate, TreeError> {
        let mut writes = Vec::new();
        for id in from.diff(to)? {
            let proof = to.proof(id).ok_or(TreeError::IdOutOfRange(id))?;
            writes.push(ProvenWrite {
                id,
                bytes: to.get(id).map(|b| b.to_vec()),
                proof,
            });
        }
        Ok(StateUpdate { writes })
    }

    /// `base` with the update applied, if every write proves against `root` and the result
    /// has that root.
    pub fn apply_to(&self, base: &ObjectTree, root: Digest) -> Result<ObjectTree, UpdateError> {
        for w in &self.writes {
            w.proof
                .verify(root, base.bits(), w.id, w.bytes.as_deref())
                .map_err(|e| UpdateError::BadProof(w.id, e))?;
        }
        let mut tree = base.clone();
        tree.apply(
            self.writes
                .iter()
                .map(|w| (w.id, w.bytes.as_deref().map(ObjectBytes::from))),
        )
        .map_err(UpdateError::Tree)?;
        if tree.root() != root {
            return Err(UpdateError::Incomplete);
        }
        Ok(tree)
    }
}
