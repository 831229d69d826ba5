//! What correct order replicas *send*, read off the wire as it leaves them, across restarts and
//! lost disks (a replica is one principal whatever happened to its records):
//!
//! - **OS-vote-equivocation**: a correct replica never sends two different PRE-PREPAREs,
//!   PREPAREs or COMMITs for one `(view, sequence)`, in any incarnation.
//! - **OS-view-change-coverage**: a VIEW-CHANGE covers every slot its sender sent a COMMIT for
//!   above the VIEW-CHANGE's stable checkpoint, with that batch or one prepared in a later view
//!   (PBFT's invariant on the P set: what the decision's safety argument rests on).
//! - **OS-recovering-vote**: a replica recovering from lost records casts no vote of any kind.
//! - **OS-new-view-agreement**: correct replicas entering a view whose primary is correct
//!   install the same NEW-VIEW.

use super::Checker;
use plumb_crypto::Digest;
use plumb_wire::{Message, OrderId, Principal, Seq, View};
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Default)]
pub struct VoteLog {
    /// (replica, kind, view, seq) -> digest sent.
    votes: HashMap<(OrderId, u8, View, Seq), Digest>,
    /// Replica -> slots it sent a COMMIT for: seq -> (highest view, digest).
    commits: HashMap<OrderId, BTreeMap<Seq, (View, Digest)>>,
    /// Replicas between `Recovering` and `Rejoined`.
    pub(super) rejoining: HashSet<OrderId>,
    /// View -> (first NEW-VIEW digest installed by a correct replica, who).
    pub(super) new_views: BTreeMap<View, (Digest, Principal)>,
}

/// Messages that vouch for something: none may leave a replica while it recovers.
fn is_vote(msg: &Message) -> bool {
    matches!(
        msg,
        Message::PrePrepare { .. }
            | Message::Prepare { .. }
            | Message::Commit { .. }
            | Message::Checkpoint { .. }
            | Message::ViewChange(_)
            | Message::NewView { .. }
            | Message::Committed { .. }
            | Message::OrderState { .. }
            | Message::NextBatch { .. }
            | Message::TentativeBatch { .. }
            | Message::LoadCp { .. }
            | Message::RecoveryReply { .. }
    )
}

impl Checker {
    /// Correct order replica `o` sent `msg`.
    pub fn order_sent(&mut self, o: OrderId, msg: &Message) {
        if self.votes.rejoining.contains(&o) && is_vote(msg) {
            let detail = format!("o{o} sent {} while recovering lost records", msg.kind());
            self.violate("OS-recovering-vote", detail);
        }
        let (kind, view, seq, digest) = match msg {
            Message::PrePrepare {
                view,
                seq,
                requests,
                time,
                seed,
            } => {
                let batch = plumb_wire::Batch::proposed(requests, *time, *seed);
                (0, *view, *seq, batch.digest(*seq))
            }
            Message::Prepare { view, seq, digest } => (1, *view, *seq, *digest),
            Message::Commit { view, seq, digest } => {
                let mine = self.votes.commits.entry(o).or_default();
                let e = mine.entry(*seq).or_insert((*view, *digest));
                if *view >= e.0 {
                    *e = (*view, *digest);
                }
                (2, *view, *seq, *digest)
            }
            Message::ViewChange(signed) => {
                self.view_change_covers(o, &signed.vc);
                return;
            }
            _ => return,
        };
        match self.votes.votes.get(&(o, kind, view, seq)) {
            None => {
                self.votes.votes.insert((o, kind, view, seq), digest);
            }
            Some(first) if *first != digest => {
                let name = ["pre-prepare", "prepare", "commit"][kind as usize];
                let detail = format!(
                    "o{o} sent {name}s for view {view} seq {seq} with digests {first:?} and {digest:?}"
                );
                self.violate("OS-vote-equivocation", detail);
            }
            Some(_) => {}
        }
    }

    fn view_change_covers(&mut self, o: OrderId, vc: &plumb_wire::ViewChange) {
        let Some(mine) = self.votes.commits.get(&o) else {
            return;
        };
        let mut missing = Vec::new();
        for (seq, (view, digest)) in mine.range(vc.stable_seq + 1..) {
            if *view >= vc.new_view {
                continue;
            }
            let covered = vc.prepared.iter().any(|p| {
                p.seq == *seq
                    && (p.view > *view || (p.view == *view && p.batch.digest(*seq) == *digest))
            });
            if !covered {
                missing.push(format!("{seq} (committed in view {view})"));
            }
        }
        if !missing.is_empty() {
            let detail = format!(
                "o{o}'s VIEW-CHANGE for view {} (stable {}) leaves out slots it sent COMMIT for: {}",
                vc.new_view,
                vc.stable_seq,
                missing.join(", ")
            );
            self.violate("OS-view-change-coverage", detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{Batch, OrderId, PreparedEntry, ViewChange};

    fn vc(new_view: View, stable_seq: Seq, prepared: Vec<PreparedEntry>) -> ViewChange {
        ViewChange {
            new_view,
            replica: OrderId(1),
            stable_seq,
            stable_digest: Digest::ZERO,
            checkpoints: vec![],
            prepared,
            pre_prepared: vec![],
            incarnation: 0,
        }
    }

    fn batch() -> Batch {
        Batch {
            requests: vec![],
            time: 3,
            seed: 4,
        }
    }

    #[test]
    fn equivocation_across_restarts_and_view_change_coverage() {
        let mut c = Checker::default();
        let d = batch().digest(Seq(5));
        c.order_sent(
            OrderId(1),
            &Message::Commit {
                view: View(0),
                seq: Seq(5),
                digest: d,
            },
        );
        c.order_sent(
            OrderId(1),
            &Message::Commit {
                view: View(0),
                seq: Seq(5),
                digest: d,
            },
        );
        assert!(c.violations().is_empty());
        // Covered: prepared at 5 in view 0 with the same batch, or in a later view.
        let entry = |view| PreparedEntry {
            seq: Seq(5),
            view,
            batch: batch(),
        };
        c.order_sent(
            OrderId(1),
            &Message::ViewChange(signed(vc(View(1), Seq(0), vec![entry(View(0))]))),
        );
        c.order_sent(
            OrderId(1),
            &Message::ViewChange(signed(vc(View(2), Seq(4), vec![entry(View(1))]))),
        );
        // Below the stable checkpoint: nothing to cover.
        c.order_sent(
            OrderId(1),
            &Message::ViewChange(signed(vc(View(3), Seq(5), vec![]))),
        );
        assert!(c.violations().is_empty());
        // Amnesia: the slot is gone from the P set.
        c.order_sent(
            OrderId(1),
            &Message::ViewChange(signed(vc(View(4), Seq(0), vec![]))),
        );
        // And a second, different COMMIT for the same (view, seq).
        c.order_sent(
            OrderId(1),
            &Message::Commit {
                view: View(0),
                seq: Seq(5),
                digest: Digest::of(b"other"),
            },
        );
        let names: Vec<&str> = c.violations().iter().map(|v| v.property).collect();
        assert_eq!(
            names,
            vec!["OS-view-change-coverage", "OS-vote-equivocation"]
        );
    }

    #[test]
    fn a_recovering_replica_that_votes_is_caught() {
        let mut c = Checker::default();
        c.votes.rejoining.insert(OrderId(2));
        c.order_sent(OrderId(2), &Message::FetchCommitted { from: Seq(1) });
        assert!(c.violations().is_empty());
        c.order_sent(
            OrderId(2),
            &Message::Checkpoint {
                seq: Seq(8),
                digest: Digest::ZERO,
            },
        );
        assert_eq!(c.violations()[0].property, "OS-recovering-vote");
    }

    fn signed(vc: ViewChange) -> plumb_wire::SignedViewChange {
        plumb_wire::SignedViewChange {
            vc,
            signature: plumb_crypto::Signature([0; 64]),
        }
    }
}
