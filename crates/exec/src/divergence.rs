//! Divergence: this replica's checkpoint differs from the agreed one (docs/divergence.md).
//!
//! Order replicas learn a checkpoint from `max(u,r) + 1` matching execution tokens; one whose
//! token differs is told so with a LOAD-CP naming the agreed checkpoint, at a sequence number
//! this replica has passed (the order stage's `divergence.rs`). `r + 1` of them are proof: one
//! correct order replica sent it, so the named token is the one correct execution replicas
//! made. A correct replica of a deterministic application never sees that proof for a token
//! other than its own; when it does, its application broke the determinism rules (or its
//! memory or disk did): it stops executing, loads the agreed checkpoint like a lagging replica
//! would (with objects, fetching only the objects that differ), re-executes from there, and
//! reports what it knows — the batches since its previous checkpoint, the requests it executed
//! in them and the objects that differed.

use crate::{ExecReplica, Held};
use plumb_app::Application;
use plumb_core::{Action, DivergenceReport, Observation, StoreOp};
use plumb_crypto::Digest;
use plumb_objects::ObjectTree;
use plumb_wire::{ClientId, ReqNo, Seq};
use std::collections::BTreeMap;

/// The divergence concern's own state.
#[derive(Debug, Default)]
pub(crate) struct Divergence {
    /// The requests executed per batch, back to the oldest checkpoint held: what a report
    /// names.
    executed: BTreeMap<Seq, Vec<(ClientId, ReqNo)>>,
    /// A roll-back in progress: execution waits until the agreed checkpoint is loaded.
    rollback: Option<Rollback>,
}

#[derive(Debug)]
struct Rollback {
    seq: Seq,
    first: Seq,
    ours: Digest,
    agreed: Digest,
    /// Our tree at `seq`, to name the objects that differ once the agreed one is loaded.
    ours_tree: Option<ObjectTree>,
    rolled_back_from: Seq,
}

impl Divergence {
    pub(crate) fn record(&mut self, seq: Seq, requests: Vec<(ClientId, ReqNo)>) {
        if !requests.is_empty() {
            self.executed.insert(seq, requests);
        }
    }

    /// Forget batches before `from` (no held checkpoint precedes them any more).
    pub(crate) fn forget_before(&mut self, from: Seq) {
        self.executed = self.executed.split_off(&from);
    }

    pub(crate) fn rolling_back(&self) -> bool {
        self.rollback.is_some()
    }
}

impl<A: Application> ExecReplica<A> {
    /// Whether execution waits for a roll-back to finish. A roll-back whose load was given up
    /// (the loaded state did not give the agreed root) is abandoned: execution resumes, and
    /// the next checkpoint's token shows whether the divergence remains (the order stage then
    /// tells this replica again).
    pub(crate) fn rolling_back(&mut self) -> bool {
        if self.divergence.rolling_back() && self.transfer.loading.is_none() {
            self.divergence.rollback = None;
            self.counters.add("diverged-rollback-abandoned");
        }
        self.divergence.rolling_back()
    }

    /// `r + 1` order replicas named checkpoint `(seq, agreed)`, which this replica has passed.
    /// Returns whether a roll-back started.
    pub(crate) fn roll_back_if_diverged(
        &mut self,
        seq: Seq,
        agreed: Digest,
        out: &mut Vec<Action>,
    ) -> bool {
        if self.rolling_back() {
            return false;
        }
        let Some(held) = self.transfer.held.get(&seq) else {
            return false;
        };
        if held.token == agreed {
            return false;
        }
        let first = self
            .transfer
            .held
            .range(..seq)
            .next_back()
            .map_or(seq.minus(self.interval()), |(s, _)| *s)
            + 1;
        self.divergence.rollback = Some(Rollback {
            seq,
            first,
            ours: held.token,
            agreed,
            ours_tree: held.tree.clone(),
            rolled_back_from: self.executed.next_seq - 1,
        });
        self.counters.add("diverged");
        self.transfer.loading = Some(crate::transfer::Loading::new(seq, agreed));
        self.request_transfer(out);
        true
    }

    /// A load finished at `seq`, with `tree` for an application with objects. If it ends a
    /// roll-back: drop the checkpoints made on the divergent state (from memory and disk) and
    /// report. Called before the loaded checkpoint is persisted and held.
    pub(crate) fn finish_rollback(
        &mut self,
        seq: Seq,
        tree: Option<&ObjectTree>,
        out: &mut Vec<Action>,
    ) {
        let Some(rb) = self.divergence.rollback.take() else {
            return;
        };
        let divergent: Vec<Seq> = self
            .transfer
            .held
            .range(rb.seq..)
            .map(|(s, _)| *s)
            .collect();
        for s in divergent {
            let Some(held) = self.transfer.held.remove(&s) else {
                continue;
            };
            if s != seq {
                out.push(Action::Store(StoreOp::Delete {
                    key: crate::checkpoint_key(s),
                }));
            }
            self.release_whole_checkpoint(&held);
        }
        let objects = match (&rb.ours_tree, tree) {
            (Some(ours), Some(agreed)) if rb.seq == seq => ours
                .diff(agreed)
                .ok()
                .map(|ids| ids.into_iter().map(|id| id.0).collect()),
            _ => None,
        };
        let requests = self
            .divergence
            .executed
            .range(rb.first..=rb.seq)
            .flat_map(|(s, rs)| rs.iter().map(|(c, n)| (*s, *c, *n)))
            .collect();
        // Batches after the loaded checkpoint are executed again, and recorded again.
        self.divergence.executed.retain(|s, _| *s <= seq);
        self.counters.add("diverged-rolled-back");
        out.push(Action::Observe(Observation::Diverged(DivergenceReport {
            seq: rb.seq,
            first: rb.first,
            ours: rb.ours,
            agreed: rb.agreed,
            requests,
            objects,
            rolled_back_from: rb.rolled_back_from,
        })));
    }

    /// A whole checkpoint the application may hold resources for is let go.
    pub(crate) fn release_whole_checkpoint(&mut self, held: &Held) {
        if held.tree.is_some() {
            return;
        }
        if let Some(cp) = crate::ExecCheckpoint::decode(&held.bytes) {
            self.app.release_checkpoint(&cp.app);
        }
    }
}
