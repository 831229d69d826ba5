//! Pre-prepares ahead of the disk. The primary writes each batch it proposes before voting for
//! it, as every replica does, but its PRE-PREPARE does not wait for that write to be synced
//! ([`Action::SendUnsynced`]). Waiting made every `fdatasync` stall of the primary's disk a
//! stall of the whole cluster: on the shared development disk, syncs of 40-140 ms stopped
//! PRE-PREPAREs for as long, and backups suspected a primary that was only waiting for its
//! disk (7 heartbeat suspicions in a fault-free 5-minute run).
//!
//! What the barrier gave, and what replaces it (docs/protocol.md, "Pre-prepares ahead of the
//! disk"):
//! - **No second proposal for a slot.** A primary that crashes after an unsynced PRE-PREPARE
//!   may restart without the batch and must never propose another one for that `(view, seq)`.
//!   So a replica that restarts as the *active primary of its view* proposes nothing more in
//!   that view; it asks for the next one ([`ViewChangeCause::Restarted`]). It knows it was
//!   active because the view record is written, and synced, before it may send an unsynced
//!   PRE-PREPARE: a fresh store writes `(0, active)` at its first start, and a later view's
//!   record is written when it is installed, before any PRE-PREPARE of it (a NEW-VIEW may
//!   leave before that record, so it is not what proves it). PRE-PREPAREs go unsynced only
//!   once one sent behind
//!   the barrier in the same view has prepared here: the `n - u - 1 >= r + 1` backups whose
//!   PREPAREs prepared it include a correct one that received it, so it left, so every record
//!   written before it, the view record included, is durable. (With `u = 0` they may all be
//!   faulty, but then no correct backup exists to accept a second proposal.) Until then,
//!   PRE-PREPAREs wait like any other message, which also keeps the first ones of a view from
//!   overtaking its NEW-VIEW.
//! - **Votes that stand.** The PRE-PREPARE is not the primary's prepare vote: it votes with a
//!   PREPARE, which waits for the batch's record like every vote, and its COMMIT follows the
//!   sync of its prepared record. So every vote a prepared or commit certificate counts comes
//!   from a replica that holds the batch on disk, which is what the view change's choice needs
//!   to stay live. A primary that lost the batch in a crash reports nothing for it in its
//!   VIEW-CHANGE, and that is true of its votes: it cast none.

use crate::OrderReplica;
use plumb_core::{Action, Micros, ViewChangeCause};
use plumb_wire::{Seq, View};

#[derive(Debug, Default)]
pub(crate) struct Ahead {
    /// Restarted as the active primary of this view: propose nothing more in it.
    abstain: Option<View>,
    /// The first sequence number this replica proposed behind the barrier in a view.
    first_held: Option<(View, Seq)>,
    /// The view whose record is known durable: PRE-PREPAREs in it go unsynced.
    unsynced: Option<View>,
}

impl OrderReplica {
    /// At a restart (the store recovered, not rejoining): a primary that was active in its view
    /// may have sent PRE-PREPAREs it no longer remembers. A fresh store gets its view record,
    /// so that a restart can tell.
    pub(crate) fn resume_proposing(&mut self, had_view_record: bool, out: &mut Vec<Action>) {
        if !had_view_record {
            self.put(
                crate::view_change::VIEW_KEY.to_string(),
                plumb_core::storage::encode(&(self.views.current(), self.views.active())),
                out,
            );
            self.sync(out);
        } else if self.views.active()
            && self.primary() == self.me
            && !plumb_core::sabotaged!(ReproposeAfterRestart)
        {
            self.ahead.abstain = Some(self.views.current());
        }
    }

    /// Whether this replica may propose in the current view at all.
    pub(crate) fn abstaining(&self) -> bool {
        self.ahead.abstain == Some(self.views.current())
    }

    /// While abstaining, keep asking for the next view (suspicions expire).
    pub(crate) fn abdicate(&mut self, now: Micros, out: &mut Vec<Action>) {
        if self.abstaining() && self.views.active() {
            self.suspect(now, ViewChangeCause::Restarted, out);
        }
    }

    /// Whether the PRE-PREPARE for `seq`, proposed now in the current view, may leave before
    /// its record is synced. Remembers the first one that may not.
    pub(crate) fn pre_prepare_unsynced(&mut self, seq: Seq) -> bool {
        let view = self.views.current();
        if self.ahead.unsynced == Some(view) {
            return true;
        }
        if self.ahead.first_held.is_none_or(|(v, _)| v != view) {
            self.ahead.first_held = Some((view, seq));
        }
        false
    }

    /// Slot `seq` prepared here in the current view: if this replica proposed it behind the
    /// barrier, the view's record is durable.
    pub(crate) fn note_prepared(&mut self, seq: Seq) {
        let view = self.views.current();
        if self.primary() == self.me
            && self
                .ahead
                .first_held
                .is_some_and(|(v, first)| v == view && seq >= first)
        {
            self.ahead.unsynced = Some(view);
        }
    }
}
