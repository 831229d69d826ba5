//! Batch reports (docs/objects.md "Batch reports"): after every batch, the digest of its
//! replies, of the objects it changed, and the write history chained from the token of the
//! last checkpoint taken or loaded. Every correct replica that executed the same batches
//! computes the same report; sleeping replicas (ZZ) and replicas holding part of the state
//! (ODRC) will check what others did against them. They go to the order stage in EXEC-REPORTs,
//! a few batches at a time, which records those `r + 1` replicas agree on.

use crate::ExecReplica;
use plumb_app::Application;
use plumb_core::Action;
use plumb_crypto::Digest;
use plumb_wire::{BatchReport, Message, Seq, EXEC_REPORTS_MAX};

#[derive(Debug, Default)]
pub(crate) struct Reports {
    /// The write history after the last batch executed: the last checkpoint's token, then one
    /// step per batch since. Zero before the first checkpoint.
    history: Digest,
    /// The report of the last batch executed.
    pub(crate) last: Option<BatchReport>,
    /// Reports not yet sent to the order stage, oldest first.
    unsent: Vec<BatchReport>,
}

/// Reports go to the order stage once this many wait, or on the catch-up tick: one message
/// per few batches rather than one per batch.
const REPORTS_PER_MESSAGE: usize = 8;

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
        self.unsent.push(report);
        report
    }
}

impl<A: Application> ExecReplica<A> {
    /// EXEC-REPORT: send the reports that wait, if `all` or once enough wait.
    pub(crate) fn send_reports(&mut self, all: bool, out: &mut Vec<Action>) {
        let waiting = self.reports.unsent.len();
        if waiting == 0 || (!all && waiting < REPORTS_PER_MESSAGE) {
            return;
        }
        let reports = std::mem::take(&mut self.reports.unsent);
        for chunk in reports.chunks(EXEC_REPORTS_MAX) {
            let msg = Message::ExecReport {
                reports: chunk.to_vec(),
            };
            self.send_to_order(&msg, out);
        }
    }
}
