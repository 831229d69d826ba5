//! The agreement log: a slot per sequence number this replica still keeps, how far the current
//! view's pre-prepares are accepted without a gap, and the pre-prepares that wait: one that came
//! before its predecessor (early) and one whose batch time our clock could not vouch for
//! (held). It decides nothing and sends nothing: agreement.rs, view_change.rs and checkpoint.rs
//! drive it.

use crate::slot::Slot;
use plumb_core::BrokenInvariant;
use plumb_wire::{Micros, OrderId, Seq, SignedRequest, View};
use std::collections::BTreeMap;
use std::ops::RangeBounds;

/// A pre-prepare that came before its predecessor was accepted, kept until it is next.
pub(crate) struct EarlyPrePrepare {
    pub requests: Vec<SignedRequest>,
    pub time: Micros,
    pub seed: u64,
}

/// A pre-prepare held for its time (`OrderReplica::check_time_vouched`).
#[derive(Debug)]
pub(crate) struct HeldForTime {
    pub from: OrderId,
    pub view: View,
    pub seq: Seq,
    pub requests: Vec<SignedRequest>,
    pub time: Micros,
    pub seed: u64,
}

#[derive(Default)]
pub(crate) struct AgreementLog {
    slots: BTreeMap<Seq, Slot>,
    /// Highest sequence with a contiguous accepted pre-prepare in the current view (or
    /// applied, or decided by the NEW-VIEW entered).
    accepted_upto: Seq,
    early: BTreeMap<Seq, EarlyPrePrepare>,
    /// The next pre-prepare, well formed but with a time outside `max_clock_skew_us` of our
    /// clock: taken once `r + 1` peers vouch for it.
    held_for_time: Option<HeldForTime>,
}

impl AgreementLog {
    // ------------------------------------------------------------ slots

    pub fn get(&self, seq: Seq) -> Option<&Slot> {
        self.slots.get(&seq)
    }

    pub fn get_mut(&mut self, seq: Seq) -> Option<&mut Slot> {
        self.slots.get_mut(&seq)
    }

    /// The slot at `seq`, made empty if there is none yet.
    pub fn entry(&mut self, seq: Seq) -> &mut Slot {
        self.slots.entry(seq).or_default()
    }

    /// A slot read back from the disk at start-up.
    pub fn restore(&mut self, seq: Seq, slot: Slot) {
        self.slots.insert(seq, slot);
    }

    pub fn range(
        &self,
        seqs: impl RangeBounds<Seq>,
    ) -> impl DoubleEndedIterator<Item = (&Seq, &Slot)> {
        self.slots.range(seqs)
    }

    pub fn slots_mut(&mut self) -> impl Iterator<Item = (&Seq, &mut Slot)> {
        self.slots.iter_mut()
    }

    pub fn lowest(&self) -> Option<Seq> {
        self.slots.keys().next().copied()
    }

    pub fn highest(&self) -> Option<Seq> {
        self.slots.keys().next_back().copied()
    }

    /// The slots accepted in this view but not applied yet: above `applied`, through
    /// `accepted_upto`.
    pub fn accepted_unapplied(&self, applied: Seq) -> impl Iterator<Item = (&Seq, &Slot)> {
        self.slots
            .range(applied + 1..self.accepted_upto.max(applied) + 1)
    }

    /// A checkpoint at `seq` became stable: slots through it are no longer needed (returned,
    /// so their records are deleted), and neither are early pre-prepares through it.
    pub fn forget_through(&mut self, seq: Seq) -> Vec<Seq> {
        let kept = self.slots.split_off(&(seq + 1));
        let gone = std::mem::replace(&mut self.slots, kept);
        self.early = self.early.split_off(&(seq + 1));
        gone.into_keys().collect()
    }

    // ------------------------------------------------------------ accepted without a gap

    pub fn accepted_upto(&self) -> Seq {
        self.accepted_upto
    }

    /// Everything through `seq` is accepted, applied or decided. Early pre-prepares through it
    /// are obsolete: the slots were filled otherwise (by catch-up, or a checkpoint).
    pub fn accepted_through(&mut self, seq: Seq) {
        if seq <= self.accepted_upto {
            return;
        }
        self.accepted_upto = seq;
        let obsolete = self.early.keys().next().is_some_and(|s| *s <= seq);
        if obsolete && !plumb_core::sabotaged!(LogKeepsObsoleteEarly) {
            self.early = self.early.split_off(&(seq + 1));
        }
    }

    /// Start counting again from `seq`: after a restart, a rejoin, or the NEW-VIEW entered
    /// (pre-prepares of the old view above its decision are void in the new one).
    pub fn restart_accepted_at(&mut self, seq: Seq) {
        self.accepted_upto = seq;
    }

    // ------------------------------------------------------------ pre-prepares that wait

    pub fn keep_early(&mut self, seq: Seq, early: EarlyPrePrepare) {
        self.early.insert(seq, early);
    }

    pub fn take_early(&mut self, seq: Seq) -> Option<EarlyPrePrepare> {
        self.early.remove(&seq)
    }

    pub fn hold_for_time(&mut self, held: HeldForTime) {
        self.held_for_time = Some(held);
    }

    pub fn held_for_time(&self) -> Option<&HeldForTime> {
        self.held_for_time.as_ref()
    }

    pub fn take_held_for_time(&mut self) -> Option<HeldForTime> {
        self.held_for_time.take()
    }

    /// The view changes: waiting pre-prepares were the old primary's.
    pub fn forget_waiting(&mut self) {
        self.early.clear();
        self.held_for_time = None;
    }

    /// - `INV-early-beyond-accepted`: a pre-prepare kept as early is above `accepted_upto`:
    ///   one at or below it is obsolete (it came after its slot, or its slot was filled
    ///   otherwise), and kept it would be taken should `accepted_upto` be counted again lower.
    pub fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        let lowest_early = self.early.keys().next().copied();
        BrokenInvariant::check(
            lowest_early.is_none_or(|s| s > self.accepted_upto),
            "INV-early-beyond-accepted",
            || {
                format!(
                    "an early pre-prepare at {lowest_early:?} kept at or below accepted_upto {}",
                    self.accepted_upto
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn early() -> EarlyPrePrepare {
        EarlyPrePrepare {
            requests: Vec::new(),
            time: 0,
            seed: 0,
        }
    }

    #[test]
    fn early_pre_prepares_are_dropped_once_their_slots_are_filled_otherwise() {
        let mut log = AgreementLog::default();
        log.accepted_through(Seq(3));
        log.keep_early(Seq(5), early());
        log.keep_early(Seq(7), early());
        // Catch-up applied through 5: the early PRE-PREPARE for 5 is obsolete, 7's still waits.
        log.accepted_through(Seq(5));
        assert!(log.take_early(Seq(5)).is_none());
        assert!(log.check_invariants().is_ok());
        assert!(log.take_early(Seq(7)).is_some());
        // Accepted never moves back by `accepted_through`.
        log.accepted_through(Seq(4));
        assert_eq!(log.accepted_upto(), Seq(5));
    }

    #[test]
    fn a_stable_checkpoint_forgets_slots_and_early_pre_prepares_through_it() {
        let mut log = AgreementLog::default();
        for s in [2, 4, 6] {
            log.entry(Seq(s));
        }
        log.keep_early(Seq(3), early());
        log.keep_early(Seq(5), early());
        assert_eq!(
            log.forget_through(Seq(4)),
            vec![Seq(2), Seq(4)],
            "the records to delete"
        );
        assert_eq!((log.lowest(), log.highest()), (Some(Seq(6)), Some(Seq(6))));
        assert!(log.take_early(Seq(3)).is_none());
        assert!(log.take_early(Seq(5)).is_some());
    }

    #[test]
    fn a_view_change_forgets_what_waits_and_the_invariant_names_a_stale_early_one() {
        let mut log = AgreementLog::default();
        log.keep_early(Seq(3), early());
        log.hold_for_time(HeldForTime {
            from: OrderId(0),
            view: View::ZERO,
            seq: Seq(1),
            requests: Vec::new(),
            time: 0,
            seed: 0,
        });
        log.forget_waiting();
        assert!(log.held_for_time().is_none() && log.take_early(Seq(3)).is_none());

        // Raising accepted_upto without pruning (what the sabotage does) breaks the invariant.
        log.keep_early(Seq(2), early());
        log.accepted_upto = Seq(2);
        let broken = log.check_invariants().unwrap_err();
        assert!(format!("{broken:?}").contains("INV-early-beyond-accepted"));
    }
}
