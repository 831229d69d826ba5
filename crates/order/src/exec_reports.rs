//! The batch reports an order replica records (docs/objects.md "Batch reports"): each execution
//! replica's EXEC-REPORT of each batch above the stable checkpoint, until `r + 1` of them agree
//! (one correct replica among them: what the batch did), and the agreed reports from then on.
//! Sleeping replicas check the write sets they apply against these, and a report that differs
//! from the agreed one names a faulty replica (issues 38 and 39). A sub-machine of the
//! checkpoint ledger: it owns this state and says what a report did; the replica counts and
//! observes.
//!
//! Bounded: only batches within [`REPORT_WINDOW`] checkpoint intervals above the stable
//! checkpoint, one report per execution replica each, and nothing at or below the stable
//! checkpoint ([`ExecReports::advance`]).

use plumb_core::BrokenInvariant;
use plumb_wire::{BatchReport, ExecId, Seq};
use std::collections::BTreeMap;

/// Reports are taken for batches this many checkpoint intervals above the stable checkpoint
/// (as execution tokens are: an execution replica is never further ahead).
pub(crate) const REPORT_WINDOW: u64 = 4;

/// What one report did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReportVote {
    /// At or below the stable checkpoint, or beyond the window.
    Ignored,
    /// Recorded; fewer than `r + 1` agree yet.
    Counted,
    /// `r + 1` agree now: the agreed report, and the replicas that had reported otherwise.
    Agreed(BatchReport, Vec<ExecId>),
    /// Agreed already, and this one is the same.
    Matches,
    /// Agreed already, and this one differs: its sender is faulty.
    Differs,
}

#[derive(Debug, Default)]
pub(crate) struct ExecReports {
    /// Reports of batches not agreed yet: batch -> replica -> its report.
    pending: BTreeMap<Seq, BTreeMap<ExecId, BatchReport>>,
    /// Agreed reports, by batch.
    agreed: BTreeMap<Seq, BatchReport>,
}

impl ExecReports {
    /// Replica `e`'s report, with the stable checkpoint at `stable`, checkpoints every
    /// `interval` batches and `quorum` (`r + 1`) matching reports needed.
    pub(crate) fn record(
        &mut self,
        e: ExecId,
        report: BatchReport,
        stable: Seq,
        interval: u64,
        quorum: usize,
    ) -> ReportVote {
        let seq = report.seq;
        if seq <= stable || seq.0 > stable.0.saturating_add(REPORT_WINDOW * interval) {
            return ReportVote::Ignored;
        }
        if let Some(agreed) = self.agreed.get(&seq) {
            return if *agreed == report {
                ReportVote::Matches
            } else {
                ReportVote::Differs
            };
        }
        let reports = self.pending.entry(seq).or_default();
        // A replica's newer report of a batch replaces its older one (it re-executed it).
        reports.insert(e, report);
        if reports.values().filter(|r| **r == report).count() < quorum {
            return ReportVote::Counted;
        }
        let others = self.pending.remove(&seq).unwrap_or_default();
        self.agreed.insert(seq, report);
        let dissent = others
            .into_iter()
            .filter(|(_, r)| *r != report)
            .map(|(e, _)| e)
            .collect();
        ReportVote::Agreed(report, dissent)
    }

    /// The agreed report of batch `seq`, if any.
    #[cfg(test)]
    pub(crate) fn agreed(&self, seq: Seq) -> Option<&BatchReport> {
        self.agreed.get(&seq)
    }

    /// The stable checkpoint moved to `stable`: what is at or below it is no longer needed.
    pub(crate) fn advance(&mut self, stable: Seq) {
        self.pending = self.pending.split_off(&(stable + 1));
        self.agreed = self.agreed.split_off(&(stable + 1));
    }

    /// Everything kept is above the stable checkpoint, within the window; a batch is either
    /// pending or agreed, never both; each pending report is filed under its own batch.
    pub(crate) fn check_invariants(
        &self,
        stable: Seq,
        interval: u64,
    ) -> Result<(), BrokenInvariant> {
        let top = stable.0.saturating_add(REPORT_WINDOW * interval);
        let outside = self
            .pending
            .keys()
            .chain(self.agreed.keys())
            .find(|s| **s <= stable || s.0 > top);
        BrokenInvariant::check(outside.is_none(), "INV-reports-within-window", || {
            format!("a report of batch {outside:?} is kept with the stable checkpoint at {stable}")
        })?;
        let both = self.pending.keys().find(|s| self.agreed.contains_key(s));
        BrokenInvariant::check(both.is_none(), "INV-reports-pending-or-agreed", || {
            format!("batch {both:?} is both agreed and pending")
        })?;
        let misfiled = self
            .pending
            .iter()
            .find(|(s, rs)| rs.is_empty() || rs.values().any(|r| r.seq != **s))
            .map(|(s, _)| *s)
            .or_else(|| {
                self.agreed
                    .iter()
                    .find(|(s, r)| r.seq != **s)
                    .map(|(s, _)| *s)
            });
        BrokenInvariant::check(misfiled.is_none(), "INV-reports-filed-by-batch", || {
            format!("the reports kept under batch {misfiled:?} are empty or name another batch")
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use plumb_crypto::Digest;

    /// A report of batch `seq` whose replies digest to `replies`' (sleepers.rs's tests too).
    pub(crate) fn report(seq: u64, replies: &[u8]) -> BatchReport {
        BatchReport {
            seq: Seq(seq),
            replies: Digest::of(replies),
            writes: None,
            history: None,
        }
    }

    #[test]
    fn r_plus_one_matching_reports_agree_and_name_the_dissenters() {
        let mut l = ExecReports::default();
        let (good, bad) = (report(3, b"ok"), report(3, b"lie"));
        assert_eq!(l.record(ExecId(2), bad, Seq(0), 4, 2), ReportVote::Counted);
        assert_eq!(l.record(ExecId(0), good, Seq(0), 4, 2), ReportVote::Counted);
        assert_eq!(
            l.record(ExecId(1), good, Seq(0), 4, 2),
            ReportVote::Agreed(good, vec![ExecId(2)])
        );
        assert_eq!(l.agreed(Seq(3)), Some(&good));
        assert_eq!(l.record(ExecId(2), bad, Seq(0), 4, 2), ReportVote::Differs);
        assert_eq!(l.record(ExecId(2), good, Seq(0), 4, 2), ReportVote::Matches);
        l.check_invariants(Seq(0), 4).unwrap();
    }

    #[test]
    fn reports_outside_the_window_are_ignored_and_the_stable_checkpoint_prunes() {
        let mut l = ExecReports::default();
        assert_eq!(
            l.record(ExecId(0), report(4, b"x"), Seq(4), 4, 2),
            ReportVote::Ignored
        );
        assert_eq!(
            l.record(ExecId(0), report(21, b"x"), Seq(4), 4, 2),
            ReportVote::Ignored
        );
        assert_eq!(
            l.record(ExecId(0), report(20, b"x"), Seq(4), 4, 2),
            ReportVote::Counted
        );
        assert_eq!(
            l.record(ExecId(0), report(6, b"x"), Seq(4), 4, 1),
            ReportVote::Agreed(report(6, b"x"), vec![])
        );
        l.check_invariants(Seq(4), 4).unwrap();
        l.advance(Seq(8));
        assert_eq!(l.agreed(Seq(6)), None);
        l.check_invariants(Seq(8), 4).unwrap();
        // A broken ledger is caught: a report kept below the stable checkpoint.
        assert!(l.check_invariants(Seq(20), 4).is_err());
    }
}
