//! Proofs that one object has a given digest under a root: the sibling digests on the path
//! from its leaf to the root, `bits` of them (logarithmic in the number of object slots).
//!
//! Verification takes remote input: every length and id is checked, and a bad proof is an
//! error, never a panic.

use crate::digest::{node_digest, object_digest};
use crate::MAX_BITS;
use plumb_app::ObjectId;
use plumb_crypto::Digest;
use serde::{Deserialize, Serialize};

/// Sibling digests from the leaf up to the root's children.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// `siblings[h]` is the sibling of the path's node at height `h` (0: the leaf's sibling).
    pub siblings: Vec<Digest>,
}

/// Why a proof was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The tree would be deeper than supported.
    #[error("tree of {0} bits is deeper than supported")]
    TooManyBits(u8),
    /// The id has more bits than the tree.
    #[error("object id {0} is outside the tree")]
    IdOutOfRange(u64),
    #[error("proof has {got} siblings, the tree needs {want}")]
    /// The proof does not hold one sibling per level.
    WrongLength {
        /// Siblings in the proof.
        got: usize,
        /// Levels of the tree.
        want: usize,
    },
    /// The proof is well formed but yields another root.
    #[error("proof does not lead to the root")]
    RootMismatch,
}

impl Proof {
    /// The root this proof yields for object `id` with digest `leaf` in a tree of `bits`.
    pub fn root_for(&self, bits: u8, id: ObjectId, leaf: Digest) -> Result<Digest, ProofError> {
        if bits > MAX_BITS {
            return Err(ProofError::TooManyBits(bits));
        }
        if id.0 >> bits != 0 {
            return Err(ProofError::IdOutOfRange(id.0));
        }
        if self.siblings.len() != usize::from(bits) {
            return Err(ProofError::WrongLength {
                got: self.siblings.len(),
                want: usize::from(bits),
            });
        }
        let mut acc = leaf;
        for (h, sibling) in self.siblings.iter().enumerate() {
            acc = if (id.0 >> h) & 1 == 0 {
                node_digest(&acc, sibling)
            } else {
                node_digest(sibling, &acc)
            };
        }
        Ok(acc)
    }

    /// Check that object `id` holds `bytes` (`None`: empty) under `root`.
    pub fn verify(
        &self,
        root: Digest,
        bits: u8,
        id: ObjectId,
        bytes: Option<&[u8]>,
    ) -> Result<(), ProofError> {
        if self.root_for(bits, id, object_digest(bytes))? == root {
            Ok(())
        } else {
            Err(ProofError::RootMismatch)
        }
    }
}
