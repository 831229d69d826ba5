//! One sequence number's agreement state, and what of it is persisted.

use plumb_crypto::Digest;
use plumb_wire::{Batch, OrderId, Seq, View};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// The durable part of a slot: enough to never contradict what this replica said before a
/// crash (no second PREPARE in a view, honest P and Q sets in VIEW-CHANGE).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotRecord {
    /// The pre-prepare accepted in the latest view: (view, batch). Set and cleared only
    /// through [`Slot`], which keeps its digest.
    accepted: Option<(View, Batch)>,
    /// The batch prepared in the highest view (PBFT's P set entry).
    pub prepared: Option<(View, Batch)>,
    /// Every digest this replica accepted a pre-prepare for, with the latest view (Q set).
    pub pre_prepared: BTreeMap<Digest, View>,
    /// Committed batch, once known (by agreement or r+1 catch-up answers).
    pub committed: Option<Batch>,
}

#[derive(Clone, Debug, Default)]
pub struct Slot {
    pub record: SlotRecord,
    /// Votes of view `votes_view`: replica -> digest. A vote may arrive before the
    /// pre-prepare it agrees with (it is small and comes on another connection); it is kept,
    /// and counts once the slot accepts a batch of that digest in that view.
    pub prepares: HashMap<OrderId, Digest>,
    pub commits: HashMap<OrderId, Digest>,
    /// The view in which this replica's agreement committed the slot (not set when the batch
    /// came from peers by catch-up, or from the disk).
    pub committed_in: Option<View>,
    /// We sent COMMIT in `votes_view`.
    pub sent_commit: bool,
    /// The view we last sent the slot's prepared batch to the execution stage in, tentatively
    /// (tentative agreement): committed in that view, the batch is not sent again.
    pub tentative_sent_in: Option<View>,
    pub votes_view: View,
    /// The accepted batch came from a NEW-VIEW decision, not a fresh PRE-PREPARE (reported to
    /// the simulator, which allows a request in two batches only for such carried-over ones).
    pub carried: bool,
    /// When this replica accepted the slot's pre-prepare (or proposed it): a slow request's
    /// wait splits into before (the primary) and after (the votes).
    pub accepted_at: plumb_wire::Micros,
    /// The digest of `record.accepted`'s batch, computed once when it is accepted: every
    /// PREPARE and COMMIT that arrives asks for it, and hashing the batch again each time was
    /// half of the simulator's batch hashing.
    accepted_digest: Option<Digest>,
}

impl SlotRecord {
    /// The pre-prepare accepted in the latest view: (view, batch).
    pub fn accepted(&self) -> Option<&(View, Batch)> {
        self.accepted.as_ref()
    }
}

impl Slot {
    /// A slot as a restart finds it on the disk.
    pub fn restored(seq: Seq, record: SlotRecord) -> Slot {
        let accepted_digest = record.accepted.as_ref().map(|(_, b)| b.digest(seq));
        Slot {
            record,
            accepted_digest,
            ..Slot::default()
        }
    }

    /// The view and digest of the accepted pre-prepare.
    pub fn accepted_digest(&self, seq: Seq) -> Option<(View, Digest)> {
        let (view, batch) = self.record.accepted.as_ref()?;
        let digest = self
            .accepted_digest
            .expect("an accepted batch's digest is kept with it");
        debug_assert_eq!(digest, batch.digest(seq), "the kept digest is the batch's");
        Some((*view, digest))
    }

    /// Forget the accepted pre-prepare (a NEW-VIEW that ends below it); whether there was one.
    pub fn void_accepted(&mut self) -> bool {
        self.accepted_digest = None;
        self.record.accepted.take().is_some()
    }

    /// Accept a pre-prepare (or a NEW-VIEW choice) for `view`: votes of other views are void,
    /// votes of `view` that came early stand.
    ///
    /// Until this kept early votes only if the slot had accepted in `view` already, so a
    /// PREPARE that overtook its PRE-PREPARE (a few bytes against a batch of requests) was
    /// wiped when the PRE-PREPARE came, and with one replica down (every live vote needed)
    /// the slot waited for the 200 ms resend: a 300 ms stall every few seconds.
    /// Returns the batch's digest.
    pub fn accept(&mut self, seq: Seq, view: View, batch: Batch) -> Digest {
        let d = batch.digest(seq);
        let prior = self
            .record
            .pre_prepared
            .get(&d)
            .copied()
            .unwrap_or_default();
        self.record.pre_prepared.insert(d, prior.max(view));
        self.enter_votes_view(view);
        self.carried = false;
        self.record.accepted = Some((view, batch));
        self.accepted_digest = Some(d);
        d
    }

    /// Votes from now on are of `view`: forget those of any other.
    pub fn enter_votes_view(&mut self, view: View) {
        if self.votes_view != view {
            self.prepares.clear();
            self.commits.clear();
            self.sent_commit = false;
            self.votes_view = view;
        }
    }

    /// Replica `j`'s PREPARE in `view`.
    pub fn prepare_vote(&mut self, view: View, j: OrderId, d: Digest) {
        self.enter_votes_view(view);
        self.prepares.insert(j, d);
    }

    /// Replica `j`'s COMMIT in `view`, which also stands for its PREPARE if that did not come.
    ///
    /// A replica sends its COMMIT only once prepared, after its PREPARE for the same digest,
    /// with the batch durably accepted: the COMMIT says everything the PREPARE did. The
    /// PREPARE may have been dropped here (it came before this replica entered the view), and
    /// a replica that committed the slot never says it again, while it does repeat its COMMIT.
    /// Without this, a replica one PREPARE short stayed unprepared for the whole view (spec
    /// simulator seed 346, u=1 r=1, a silent faulty replica: two view changes, 2 s). A faulty
    /// replica gains nothing: it could have sent the PREPARE.
    pub fn commit_vote(&mut self, view: View, j: OrderId, d: Digest) {
        self.enter_votes_view(view);
        self.commits.insert(j, d);
        self.prepares.entry(j).or_insert(d);
    }

    pub fn count(votes: &HashMap<OrderId, Digest>, d: &Digest) -> usize {
        votes.values().filter(|x| *x == d).count()
    }
}

pub fn slot_key(seq: Seq) -> String {
    format!("order/slot/{seq:020}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_stands_for_its_senders_missing_prepare_only() {
        let (d, other) = (Digest::of(b"batch"), Digest::of(b"other"));
        let mut slot = Slot::default();
        slot.prepare_vote(View(3), OrderId(1), other);
        slot.commit_vote(View(3), OrderId(1), d);
        slot.commit_vote(View(3), OrderId(2), d);
        // Replica 2's PREPARE never came: its COMMIT says as much. Replica 1's stands as sent.
        assert_eq!(slot.prepares.get(&OrderId(2)), Some(&d));
        assert_eq!(slot.prepares.get(&OrderId(1)), Some(&other));
        assert_eq!(Slot::count(&slot.prepares, &d), 1);
        // Votes of another view are void, the implied ones too.
        slot.commit_vote(View(4), OrderId(3), d);
        assert_eq!(slot.prepares.len(), 1);
        assert_eq!(slot.prepares.get(&OrderId(3)), Some(&d));
    }
}
