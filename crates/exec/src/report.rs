//! Batch reports (docs/objects.md "Batch reports"): after every batch, the digest of its
//! replies, of the objects it changed, and the write history chained from the token of the
//! last checkpoint taken or loaded. Every correct replica that executed the same batches
//! computes the same report; sleeping replicas (ZZ) and replicas holding part of the state
//! (ODRC) will check what others did against them.

use plumb_crypto::Digest;
use plumb_wire::{BatchReport, Seq};

#[derive(Debug, Default)]
pub(crate) struct Reports {
    /// The write history after the last batch executed: the last checkpoint's token, then one
    /// step per batch since. Zero before the first checkpoint.
    history: Digest,
    /// The report of the last batch executed.
    pub(crate) last: Option<BatchReport>,
}

impl Reports {
    /// A checkpoint with `token` was taken or loaded: the history starts again from it.
    pub(crate) fn anchor(&mut self, token: Digest) {
        self.history = token;
    }

    /// The report of batch `seq`, whose replies and (with objects) write set have these
    /// digests.
    pub(crate) fn batch(
        &mut self,
        seq: Seq,
        replies: Digest,
        writes: Option<Digest>,
    ) -> BatchReport {
        let history = writes.map(|w| {
            self.history = BatchReport::next_history(self.history, seq, w);
            self.history
        });
        let report = BatchReport {
            seq,
            replies,
            writes,
            history,
        };
        self.last = Some(report);
        report
    }
}
