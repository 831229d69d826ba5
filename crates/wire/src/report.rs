//! Batch reports (docs/objects.md "Batch reports"; seed 002 §4.8.2): what an execution replica
//! says of each batch it executed, so that replicas which did not execute it (a sleeping
//! replica woken up, one that holds part of the state) can check what others did. Correct
//! replicas that executed the same batches give equal reports.

use crate::Seq;
use plumb_crypto::Digest;
use serde::{Deserialize, Serialize};

/// One execution replica's account of batch `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchReport {
    pub seq: Seq,
    /// [`BatchReport::replies_digest`] of the replies the batch produced, in order.
    pub replies: Digest,
    /// For an application with objects: [`BatchReport::writes_digest`] of the objects the
    /// batch changed. `None` for one without.
    pub writes: Option<Digest>,
    /// For an application with objects: the write history `H_seq`, chained from the token of
    /// the last checkpoint before `seq` ([`BatchReport::next_history`]). A replica that
    /// applies the write sets since that checkpoint checks them against it.
    pub history: Option<Digest>,
}

impl BatchReport {
    /// The digest of a batch's replies, in order (none for a batch the application did not
    /// see).
    pub fn replies_digest<'a>(replies: impl IntoIterator<Item = &'a [u8]>) -> Digest {
        let digests: Vec<u8> = replies.into_iter().flat_map(|r| Digest::of(r).0).collect();
        Digest::of_parts(&[b"plumb replies v1", &digests])
    }

    /// The digest of a batch's write set: each object it changed (its bytes differ from
    /// before the batch), by id, with the digest of its new bytes, in increasing id order.
    pub fn writes_digest(writes: impl IntoIterator<Item = (u64, Digest)>) -> Digest {
        let mut entries: Vec<u8> = Vec::new();
        let mut last: Option<u64> = None;
        for (id, object) in writes {
            debug_assert!(
                last.is_none_or(|l| l < id),
                "write set ids in increasing order"
            );
            last = Some(id);
            entries.extend_from_slice(&id.to_le_bytes());
            entries.extend_from_slice(&object.0);
        }
        Digest::of_parts(&[b"plumb write set v1", &entries])
    }

    /// The write history after batch `seq` with write set `writes`, from the one before it.
    pub fn next_history(previous: Digest, seq: Seq, writes: Digest) -> Digest {
        Digest::of_parts(&[
            b"plumb write history v1",
            previous.0.as_slice(),
            &seq.0.to_le_bytes(),
            writes.0.as_slice(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_name_their_inputs() {
        let a = BatchReport::replies_digest([b"x".as_slice(), b"y"]);
        assert_ne!(a, BatchReport::replies_digest([b"xy".as_slice()]));
        assert_ne!(a, BatchReport::replies_digest([b"y".as_slice(), b"x"]));
        let d = Digest::of(b"o");
        let w = BatchReport::writes_digest([(1, d), (2, d)]);
        assert_ne!(w, BatchReport::writes_digest([(1, d)]));
        assert_ne!(w, BatchReport::writes_digest([(1, d), (3, d)]));
        let h = BatchReport::next_history(Digest::ZERO, Seq(1), w);
        assert_ne!(h, BatchReport::next_history(Digest::ZERO, Seq(2), w));
        assert_ne!(h, BatchReport::next_history(h, Seq(1), w));
    }
}
