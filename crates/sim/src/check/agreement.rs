//! Checks made as correct replicas report what they did: the execution replicas agree on every
//! delivered batch and checkpoint token, the order replicas agree on every committed batch, and
//! each execution replica delivers batches one after another (LS2, LS3).

use super::{Agreed, Checker};
use plumb_core::Observation;
use plumb_wire::{Micros, Principal, Seq, View};

impl Checker {
    /// ES-report-agreement: correct execution replicas report the same replies, write set and
    /// write history of every batch (docs/objects.md "Batch reports"), a restarted one too.
    fn batch_reported(&mut self, p: Principal, report: plumb_wire::BatchReport) {
        match self.reports.get(&report.seq) {
            None => {
                self.reports.insert(report.seq, (report, p));
            }
            Some((first, by)) if *first != report => {
                let detail = format!(
                    "batch {}: {p} reported {report:?}, {by} {first:?}",
                    report.seq
                );
                self.violate("ES-report-agreement", detail);
            }
            Some(_) => {}
        }
    }

    /// OS-report-quorum: what a correct order replica records as a batch's agreed report
    /// (`r + 1` matching EXEC-REPORTs) is what correct execution replicas reported of it, so
    /// faulty ones cannot make it record another.
    fn report_agreed(&mut self, p: Principal, report: plumb_wire::BatchReport) {
        let detail = match self.reports.get(&report.seq) {
            Some((first, _)) if *first == report => return,
            Some((first, by)) => format!(
                "batch {}: {p} agreed on {report:?}, but {by} reported {first:?}",
                report.seq
            ),
            None => format!(
                "batch {}: {p} agreed on {report:?}, which no correct execution replica reported",
                report.seq
            ),
        };
        self.violate("OS-report-quorum", detail);
    }

    /// A correct execution replica (re)started: a fresh incarnation delivers from batch 1 unless
    /// it loads a checkpoint first.
    pub fn exec_started(&mut self, p: Principal) {
        self.exec_next.insert(p, Seq(1));
    }

    /// Something a correct principal reported at global time `now`.
    pub fn observe(&mut self, now: Micros, p: Principal, obs: &Observation) {
        match obs {
            Observation::Delivered {
                seq,
                digest,
                agreed_time,
                requests,
                null,
                seed,
            } => {
                self.delivered(
                    p,
                    *seq,
                    Agreed {
                        digest: *digest,
                        agreed_time: *agreed_time,
                        requests: requests.clone(),
                        null: *null,
                        seed: *seed,
                        by: p,
                        at: now,
                    },
                );
            }
            Observation::BatchReported(report) => self.batch_reported(p, *report),
            Observation::ExecReportAgreed(report) => self.report_agreed(p, *report),
            Observation::ObjectFetched { before, id, digest } => {
                self.fetched
                    .entry(*before)
                    .or_default()
                    .push((p, *id, *digest));
            }
            Observation::CheckpointTaken { seq, token } => self.checkpoint_taken(p, *seq, *token),
            Observation::CheckpointLoaded { seq, .. } => {
                self.exec_next.insert(p, *seq + 1);
            }
            Observation::Committed {
                seq,
                view,
                digest,
                carried,
            } => {
                // A batch taken by catch-up says nothing of the view it was committed in (a
                // replica rejoining after a wiped disk reported view 0 for batches committed in
                // views 10 and 11, seed 399, u=2 r=1).
                if let Some(view) = view {
                    let v = self.committed_view.entry(*seq).or_insert(*view);
                    *v = (*v).min(*view);
                }
                if *carried {
                    self.carried.insert(*seq);
                }
                self.committed_batch(p, *seq, *digest)
            }
            Observation::ViewEntered { view, new_view } => self.view_entered(p, *view, *new_view),
            Observation::Recovering { .. } => {
                if let Principal::Order(o) = p {
                    self.votes.rejoining.insert(o);
                }
            }
            Observation::Rejoined { .. } => {
                if let Principal::Order(o) = p {
                    self.votes.rejoining.remove(&o);
                }
            }
            // A correct replica of a deterministic application never diverges: if one does,
            // ES-checkpoint-agreement has flagged its checkpoint already. The roll-back ends
            // with a CheckpointLoaded like any load.
            Observation::Fenced { .. }
            | Observation::StableCheckpoint { .. }
            | Observation::ClientAccepted { .. }
            | Observation::ExecCheckpointDiffers { .. }
            | Observation::Diverged(_)
            | Observation::ViewChangeStarted { .. }
            | Observation::Suspected { .. }
            | Observation::SlowRequest(_) => {}
            // The world checks a sleeper's waking and sleeping against the WAKEs and SLEEPs it
            // saw (ZZ-wake-quorum, ZZ-sleep-quorum).
            Observation::Woken { .. }
            | Observation::Slept { .. }
            | Observation::ActiveSuspected { .. }
            | Observation::ExecFoundFaulty { .. } => {}
        }
    }

    fn delivered(&mut self, p: Principal, seq: Seq, got: Agreed) {
        // LS3 (ES1): batch n only after batch n - 1, per incarnation.
        let expected = self.exec_next.get(&p).copied().unwrap_or(Seq(1));
        if seq != expected {
            self.violate(
                "LS3",
                format!("{p} delivered {seq} after {}", expected.minus(1)),
            );
        }
        self.exec_next.insert(p, seq + 1);
        // LS2: the application only sees non-empty batches; a null batch is not given to it.
        if !got.null && got.requests.is_empty() {
            self.violate(
                "LS2",
                format!("{p} delivered an empty non-null batch {seq}"),
            );
        }
        if got.null && !got.requests.is_empty() {
            self.violate(
                "LS2",
                format!(
                    "{p} delivered null batch {seq} with {} requests",
                    got.requests.len()
                ),
            );
        }
        if let Some((committed, by)) = self.committed.get(&seq) {
            if *committed != got.digest {
                let detail = format!(
                    "batch {seq}: {p} executed {:?}, {by} committed {committed:?}",
                    got.digest
                );
                self.violate("ES-committed", detail);
            }
        }
        match self.agreed.get(&seq) {
            None => {
                self.agreed.insert(seq, got);
            }
            Some(first) => {
                if (first.digest, first.agreed_time, first.null)
                    != (got.digest, got.agreed_time, got.null)
                {
                    let detail = format!(
                        "batch {seq}: {} delivered {:?} at time {}{}, {p} delivered {:?} at time {}{}",
                        first.by,
                        first.digest,
                        first.agreed_time,
                        if first.null { " (null)" } else { "" },
                        got.digest,
                        got.agreed_time,
                        if got.null { " (null)" } else { "" },
                    );
                    self.violate("ES-agreement", detail);
                }
            }
        }
    }

    fn checkpoint_taken(&mut self, p: Principal, seq: Seq, token: plumb_crypto::Digest) {
        match self.tokens.get(&seq) {
            None => {
                self.tokens.insert(seq, (token, p));
            }
            Some((first, by)) if *first != token => {
                let detail = format!("checkpoint {seq}: {by} took {first:?}, {p} took {token:?}");
                self.violate("ES-checkpoint-agreement", detail);
            }
            Some(_) => {}
        }
    }

    /// OS-new-view-agreement: one NEW-VIEW per view whose primary is correct.
    fn view_entered(&mut self, p: Principal, view: View, new_view: plumb_crypto::Digest) {
        // Zero: view 0, or a view re-entered after a restart (the NEW-VIEW is not kept).
        if new_view == plumb_crypto::Digest::ZERO || self.order_replicas == 0 {
            return;
        }
        let primary = Principal::Order(view.primary(self.order_replicas as usize));
        if self.byzantine.contains(&primary) {
            return;
        }
        match self.votes.new_views.get(&view) {
            None => {
                self.votes.new_views.insert(view, (new_view, p));
            }
            Some((first, by)) if *first != new_view => {
                let detail = format!(
                    "view {view} (primary {primary} correct): {by} installed NEW-VIEW {first:?}, {p} installed {new_view:?}"
                );
                self.violate("OS-new-view-agreement", detail);
            }
            Some(_) => {}
        }
    }

    /// OS-agreement; and ES-committed: what correct execution replicas execute at a sequence
    /// number is what correct order replicas commit there, whichever the checker sees first
    /// (with tentative agreement an execution replica may execute a batch before any order
    /// replica commits it).
    fn committed_batch(&mut self, p: Principal, seq: Seq, digest: plumb_crypto::Digest) {
        if let Some(executed) = self.agreed.get(&seq) {
            if executed.digest != digest {
                let detail = format!(
                    "batch {seq}: {} executed {:?}, {p} committed {digest:?}",
                    executed.by, executed.digest
                );
                self.violate("ES-committed", detail);
            }
        }
        match self.committed.get(&seq) {
            None => {
                self.committed.insert(seq, (digest, p));
            }
            Some((first, by)) if *first != digest => {
                let detail =
                    format!("batch {seq}: {by} committed {first:?}, {p} committed {digest:?}");
                self.violate("OS-agreement", detail);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_crypto::Digest;
    use plumb_wire::{ExecId, OrderId, ReqNo};

    fn delivered(seq: u64, d: &[u8], t: u64) -> Observation {
        Observation::Delivered {
            seq: Seq(seq),
            digest: Digest::of(d),
            agreed_time: t,
            requests: vec![plumb_core::DeliveredRequest::new(
                1,
                plumb_wire::Life(0),
                ReqNo(seq),
                Digest::of(d),
            )],
            null: false,
            seed: 0,
        }
    }

    #[test]
    fn ls3_gap_after_restart_is_caught_and_checkpoint_load_resets() {
        let mut c = Checker::default();
        let e = Principal::Exec(ExecId(0));
        c.exec_started(e);
        c.observe(0, e, &delivered(1, b"a", 1));
        c.observe(0, e, &delivered(2, b"b", 2));
        assert!(c.violations().is_empty());
        c.exec_started(e);
        c.observe(
            0,
            e,
            &Observation::CheckpointLoaded {
                seq: Seq(2),
                token: Digest::ZERO,
            },
        );
        c.observe(0, e, &delivered(3, b"c", 3));
        assert!(c.violations().is_empty());
        c.observe(0, e, &delivered(5, b"e", 5));
        assert_eq!(c.violations()[0].property, "LS3");
        assert_eq!(c.violations()[0].detail, "e0 delivered 5 after 3");
    }

    #[test]
    fn es_agreement_two_replicas_different_batches() {
        let mut c = Checker::default();
        c.exec_started(Principal::Exec(ExecId(0)));
        c.exec_started(Principal::Exec(ExecId(1)));
        c.observe(0, Principal::Exec(ExecId(0)), &delivered(1, b"a", 1));
        c.observe(0, Principal::Exec(ExecId(1)), &delivered(1, b"b", 1));
        assert_eq!(c.violations()[0].property, "ES-agreement");
    }

    #[test]
    fn order_agreement_and_checkpoint_agreement() {
        let mut c = Checker::default();
        let commit = |d: &[u8]| Observation::Committed {
            seq: Seq(4),
            view: Some(View(0)),
            digest: Digest::of(d),
            carried: false,
        };
        c.observe(0, Principal::Order(OrderId(0)), &commit(b"x"));
        c.observe(0, Principal::Order(OrderId(1)), &commit(b"x"));
        assert!(c.violations().is_empty());
        c.observe(0, Principal::Order(OrderId(2)), &commit(b"y"));
        let cp = |d: &[u8]| Observation::CheckpointTaken {
            seq: Seq(8),
            token: Digest::of(d),
        };
        c.observe(0, Principal::Exec(ExecId(0)), &cp(b"s"));
        c.observe(0, Principal::Exec(ExecId(1)), &cp(b"t"));
        let names: Vec<&str> = c.violations().iter().map(|v| v.property).collect();
        assert_eq!(names, vec!["OS-agreement", "ES-checkpoint-agreement"]);
    }
}
