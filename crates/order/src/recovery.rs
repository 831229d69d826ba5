//! Restart from durable records (seed 004 §5.3.1): the view, the stable checkpoint, the slots
//! above it and learned execution tokens. Committed slots are re-applied; the rest of what was
//! in memory is re-learned from peers through the normal resend and catch-up paths.

use crate::checkpoint::{checkpoint_key, StableRecord, STABLE_KEY};
use crate::checkpoints::Stable;
use crate::rejoin::INCARNATION_KEY;
use crate::slot::{Slot, SlotRecord};
use crate::state::OrderState;
use crate::view_change::{NEW_VIEW_KEY, VIEW_KEY};
use crate::OrderReplica;
use plumb_core::{storage, Action, Micros, Observation, Recovered, StoreOp};
use plumb_crypto::Digest;
use plumb_wire::{Message, Seq, View};

impl OrderReplica {
    pub(crate) fn recover(&mut self, now: Micros, rec: Recovered, out: &mut Vec<Action>) {
        for _ in &rec.corrupt {
            self.counters.add("recovered-corrupt");
        }
        if let Some(r) = rec
            .records
            .get(STABLE_KEY)
            .and_then(|b| storage::decode::<StableRecord>(b))
        {
            if let Some(state) = OrderState::decode(&r.state) {
                self.checkpoints.recover_stable(Stable {
                    seq: r.seq,
                    digest: Digest::of(&r.state),
                    state: r.state,
                    exec_token: state.exec_token,
                });
                self.state = state;
            }
        }
        self.rejoins.incarnations.restore(
            rec.records
                .get(INCARNATION_KEY)
                .and_then(|b| storage::decode::<u64>(b))
                .unwrap_or(0),
        );
        // Our own checkpoints above the stable one: we vouch for them in view changes again.
        // Older ones were left behind by a crash between a checkpoint becoming stable and the
        // deletes that follow: delete them now, or they would stay on disk for good.
        for (key, value) in rec.records.range("order/cp/".to_string()..) {
            let Some(seq) = key
                .strip_prefix("order/cp/")
                .and_then(|s| s.parse::<Seq>().ok())
            else {
                break;
            };
            if seq > self.checkpoints.stable().seq && OrderState::decode(value).is_some() {
                self.checkpoints.recover_own(seq, value.clone());
            } else if seq < self.checkpoints.stable().seq {
                out.push(Action::Store(StoreOp::Delete {
                    key: checkpoint_key(seq),
                }));
            }
        }
        for (key, value) in rec.records.range("order/slot/".to_string()..) {
            let Some(seq) = key
                .strip_prefix("order/slot/")
                .and_then(|s| s.parse::<Seq>().ok())
            else {
                break;
            };
            if seq <= self.checkpoints.stable().seq {
                continue;
            }
            match storage::decode::<SlotRecord>(value) {
                Some(record) => {
                    self.log.restore(seq, Slot::restored(seq, record));
                }
                None => self.counters.add("recovered-corrupt"),
            }
        }
        for (key, value) in rec.records.range("order/token/".to_string()..) {
            let Some(seq) = key
                .strip_prefix("order/token/")
                .and_then(|s| s.parse::<Seq>().ok())
            else {
                break;
            };
            if let Ok(bytes) = <[u8; 32]>::try_from(value.as_slice()) {
                if seq > self.checkpoints.stable().seq {
                    self.checkpoints.recover_token(seq, Digest(bytes));
                }
            }
        }
        if let Some((view, active)) = rec
            .records
            .get(VIEW_KEY)
            .and_then(|b| storage::decode::<(View, bool)>(b))
        {
            let new_view = rec.records.get(NEW_VIEW_KEY).and_then(|b| {
                storage::decode::<(
                    View,
                    Vec<plumb_wire::SignedViewChange>,
                    plumb_crypto::Signature,
                )>(b)
            });
            self.views.restore(view, active, new_view);
        }
        // Contiguous accepted pre-prepares of the current view continue where they left off.
        let mut accepted_upto = self.state.seq;
        while let Some(slot) = self.log.get(accepted_upto + 1) {
            match slot.record.accepted() {
                Some((v, _)) if *v == self.views.current() => accepted_upto += 1,
                _ => break,
            }
        }
        self.log.restart_accepted_at(accepted_upto);
        let last_time = self
            .log
            .range(..=accepted_upto)
            .next_back()
            .and_then(|(_, slot)| slot.record.accepted())
            .map(|(_, b)| b.time);
        self.proposer.resume_after(accepted_upto, last_time);
        // Our own prepares and commits stand: re-count them so resends carry them.
        let (view, me) = (self.views.current(), self.me);
        for (seq, slot) in self.log.slots_mut() {
            if let Some((v, d)) = slot.accepted_digest(*seq) {
                if v == view {
                    slot.votes_view = view;
                    slot.prepares.insert(me, d);
                    if slot
                        .record
                        .prepared
                        .as_ref()
                        .is_some_and(|(pv, _)| *pv == view)
                    {
                        slot.commits.insert(me, d);
                        slot.sent_commit = true;
                    }
                }
            }
        }
        // Present but unreadable counts as present: then the replica cannot tell what it
        // proposed, and abstaining is the safe side.
        self.resume_proposing(rec.records.contains_key(VIEW_KEY), out);
        self.apply_committed(now, out);
        // Tell metrics and status where this replica resumed (its view: at Start).
        if self.checkpoints.stable().seq > Seq::ZERO {
            out.push(Action::Observe(Observation::StableCheckpoint {
                seq: self.checkpoints.stable().seq,
            }));
        }
        if !self.views.active() {
            let vc = self.own_view_change();
            self.views.keep_own(self.me, vc.clone());
            self.send_to_peers(&Message::ViewChange(vc), out);
        }
    }
}
