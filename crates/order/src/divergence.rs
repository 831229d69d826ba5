//! Telling an execution replica that its state diverged (docs/divergence.md).
//!
//! Execution replicas send their checkpoint tokens to every order replica, which learns a
//! checkpoint once `max(u,r) + 1` of them match. An execution replica whose token for that
//! checkpoint differs holds a state no correct replica holds: a faulty replica, or a correct
//! one whose application is not deterministic. Either way the order replica reports it and
//! sends it a LOAD-CP naming the agreed checkpoint; a replica that gets `r + 1` of those rolls
//! back to it (the execution stage's `divergence.rs`). A correct replica of a deterministic
//! application never gets them: its token is the agreed one.

use crate::OrderReplica;
use plumb_core::{Action, Micros, Observation};
use plumb_crypto::Digest;
use plumb_wire::{ExecId, Message, Principal, Seq};
use std::collections::HashMap;

/// What to do about an execution replica whose token differs from the agreed one.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Tell {
    /// Nothing: it was told of a later checkpoint, or of this one less than a period ago.
    Nothing,
    /// Report the divergence and send LOAD-CP: the first time for this checkpoint.
    ReportAndLoad,
    /// Send LOAD-CP again (the last one may be lost), without a second report.
    LoadAgain,
}

/// The newest divergent checkpoint each execution replica was told about, and when: one
/// report per replica per checkpoint, and a LOAD-CP again at most once a catch-up period (a
/// lost one would leave the replica diverged), whatever it sends.
#[derive(Debug, Default)]
pub(crate) struct ExecDivergence {
    told: HashMap<ExecId, (Seq, Micros)>,
}

impl ExecDivergence {
    /// Execution replica `e` holds a differing token for checkpoint `seq`, seen at `now`.
    pub(crate) fn tell(&mut self, e: ExecId, seq: Seq, now: Micros, again_after: Micros) -> Tell {
        let tell = match self.told.get(&e).copied() {
            Some((s, _)) if s > seq => return Tell::Nothing,
            Some((s, at)) if s == seq => {
                if now < at.saturating_add(again_after) {
                    return Tell::Nothing;
                }
                Tell::LoadAgain
            }
            _ => Tell::ReportAndLoad,
        };
        self.told.insert(e, (seq, now));
        tell
    }
}

impl OrderReplica {
    /// Execution replica `e` reported `reported` for checkpoint `seq`, whose agreed token is
    /// `agreed`.
    pub(crate) fn check_exec_token(
        &mut self,
        now: Micros,
        e: ExecId,
        seq: Seq,
        agreed: Digest,
        reported: Digest,
        out: &mut Vec<Action>,
    ) {
        if reported == agreed {
            self.exec_healthy(now, e, seq, out);
            return;
        }
        self.exec_found_faulty(e, out);
        let again_after = self.cfg().catch_up_us;
        match self.checkpoints.diverged(e, seq, now, again_after) {
            Tell::Nothing => return,
            Tell::LoadAgain => {}
            Tell::ReportAndLoad => {
                self.counters.add("exec-checkpoint-differs");
                out.push(Action::Observe(Observation::ExecCheckpointDiffers {
                    exec: e,
                    seq,
                    agreed,
                    reported,
                }));
            }
        }
        self.send(
            Principal::Exec(e),
            &Message::LoadCp { seq, token: agreed },
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_divergence_is_reported_once_per_checkpoint_and_load_cp_repeated_once_per_period() {
        let mut d = ExecDivergence::default();
        assert_eq!(d.tell(ExecId(2), Seq(100), 1_000, 500), Tell::ReportAndLoad);
        assert_eq!(
            d.tell(ExecId(2), Seq(100), 1_200, 500),
            Tell::Nothing,
            "within the period"
        );
        assert_eq!(
            d.tell(ExecId(2), Seq(100), 1_500, 500),
            Tell::LoadAgain,
            "a lost LOAD-CP is resent"
        );
        assert_eq!(
            d.tell(ExecId(2), Seq(50), 9_000, 500),
            Tell::Nothing,
            "an older checkpoint"
        );
        assert_eq!(
            d.tell(ExecId(2), Seq(200), 1_600, 500),
            Tell::ReportAndLoad,
            "a newer one"
        );
        assert_eq!(
            d.tell(ExecId(3), Seq(100), 1_600, 500),
            Tell::ReportAndLoad,
            "per replica"
        );
    }
}
