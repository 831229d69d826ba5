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
use plumb_wire::{Message, Principal, Seq};
use std::collections::HashMap;

/// The newest divergent checkpoint each execution replica was told about, and when: one
/// report per replica per checkpoint, and a LOAD-CP again at most once a catch-up period (a
/// lost one would leave the replica diverged), whatever it sends.
#[derive(Debug, Default)]
pub(crate) struct ExecDivergence {
    told: HashMap<u16, (Seq, Micros)>,
}

impl OrderReplica {
    /// Execution replica `e` reported `reported` for checkpoint `seq`, whose agreed token is
    /// `agreed`.
    pub(crate) fn check_exec_token(
        &mut self,
        now: Micros,
        e: u16,
        seq: Seq,
        agreed: Digest,
        reported: Digest,
        out: &mut Vec<Action>,
    ) {
        if reported == agreed {
            return;
        }
        let again_after = self.cfg.catch_up_us;
        match self.divergence.told.get(&e).copied() {
            Some((s, _)) if s > seq => return,
            Some((s, at)) if s == seq => {
                if now < at.saturating_add(again_after) {
                    return;
                }
            }
            _ => {
                self.counters.add("exec-checkpoint-differs");
                out.push(Action::Observe(Observation::ExecCheckpointDiffers {
                    exec: e,
                    seq,
                    agreed,
                    reported,
                }));
            }
        }
        self.divergence.told.insert(e, (seq, now));
        self.send(
            Principal::Exec(e),
            &Message::LoadCp { seq, token: agreed },
            out,
        );
    }
}
