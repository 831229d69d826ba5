//! The view ledger of one order replica: the view it is in and whether it has entered it, the
//! VIEW-CHANGEs it holds, the NEW-VIEW of the view it entered, the views peers were seen
//! working in, and the clock of a change in progress. A sub-machine: it owns this state,
//! decides from it and says what it decided; the replica (`view_change.rs`) verifies, stores,
//! sends and counts.
//!
//! [`Views::check_invariants`] states what the rest of the stage relies on.

use plumb_core::{BrokenInvariant, Micros};
use plumb_crypto::{Digest, Signature};
use plumb_wire::{new_view_signing_bytes, OrderId, SignedViewChange, View};
use std::collections::HashMap;

#[derive(Debug, Default)]
pub(crate) struct Views {
    current: View,
    /// False while changing to `current`.
    active: bool,
    /// View changes since ordering last made progress: the new primary's deadline doubles with
    /// each (PBFT).
    consecutive: u32,
    /// When `n - u` VIEW-CHANGEs for `current` or later were in hand: only from then does the
    /// new primary get a deadline (PBFT), so no replica races ahead alone.
    quorum_at: Option<Micros>,
    /// The NEW-VIEW of the entered view, with its primary's signature (forwardable).
    new_view: Option<(Vec<SignedViewChange>, Signature)>,
    /// Each replica's highest-view VIEW-CHANGE (its newest incarnation's).
    changes: HashMap<OrderId, SignedViewChange>,
    /// When each peer was last handed our NEW-VIEW (rate limit).
    forwarded: HashMap<OrderId, Micros>,
    /// The highest view each peer's agreement messages or suspicions carried.
    peer_views: HashMap<OrderId, View>,
}

impl Views {
    /// View 0, entered: where a replica fresh from `plumb init` starts.
    pub fn new() -> Views {
        Views {
            active: true,
            ..Views::default()
        }
    }

    pub fn current(&self) -> View {
        self.current
    }

    /// Whether `current` has been entered (false while changing to it).
    pub fn active(&self) -> bool {
        self.active
    }

    /// The primary of `current` among `order` replicas.
    pub fn primary(&self, order: usize) -> OrderId {
        self.current.primary(order)
    }

    /// The new primary's deadline: `base` doubled with each consecutive view change, capped at
    /// 8x so that a run of faulty primaries cannot push recovery out by minutes.
    pub fn timeout(&self, base: Micros) -> Micros {
        base << self.consecutive.min(3)
    }

    /// Ordering made progress: the next view change starts from the base deadline.
    pub fn progressed(&mut self) {
        self.consecutive = 0;
    }

    /// Leave `current` for the later view `to`; false (and nothing changed) if `to` is not
    /// later.
    pub fn begin(&mut self, to: View) -> bool {
        if to <= self.current {
            return false;
        }
        self.current = to;
        self.active = false;
        self.quorum_at = None;
        self.consecutive = self.consecutive.saturating_add(1);
        true
    }

    /// Enter `view` with the NEW-VIEW that decided it. VIEW-CHANGEs for it and older views are
    /// spent.
    pub fn enter(&mut self, view: View, proofs: Vec<SignedViewChange>, signature: Signature) {
        debug_assert!(
            view >= self.current,
            "entering view {view} below {}",
            self.current
        );
        self.current = view;
        self.active = true;
        self.quorum_at = None;
        self.new_view = Some((proofs, signature));
        if !plumb_core::sabotaged!(ViewKeepsSpentChanges) {
            self.changes.retain(|_, s| s.vc.new_view > view);
        }
    }

    /// Restart from durable records: the view and whether it was entered, and the NEW-VIEW
    /// stored with it (ignored unless it is the NEW-VIEW of that view).
    pub fn restore(
        &mut self,
        view: View,
        active: bool,
        new_view: Option<(View, Vec<SignedViewChange>, Signature)>,
    ) {
        self.current = view;
        self.active = active;
        if let Some((v, proofs, signature)) = new_view {
            if v == view && view > View::ZERO {
                self.new_view = Some((proofs, signature));
            }
        }
    }

    /// Lost records: back to view 0, not entered, until the cluster lets us in (rejoin.rs).
    pub fn forget_for_rejoin(&mut self) {
        self.current = View::ZERO;
        self.active = false;
    }

    /// Rejoined into `view`: view 0 has no NEW-VIEW and is entered at once; a later view waits
    /// for its NEW-VIEW. Returns whether it is entered.
    pub fn rejoin_into(&mut self, view: View) -> bool {
        self.current = view;
        self.active = view == View::ZERO;
        if self.active {
            // What peers sent for view 0 while we could not vote is spent, as on entering.
            self.changes.retain(|_, s| s.vc.new_view > view);
        }
        self.active
    }

    /// Our own VIEW-CHANGE for `current`, sent (and resent) to peers.
    pub fn keep_own(&mut self, me: OrderId, vc: SignedViewChange) {
        debug_assert!(!self.active && vc.vc.new_view == self.current);
        self.changes.insert(me, vc);
    }

    pub fn own(&self, me: OrderId) -> Option<&SignedViewChange> {
        self.changes.get(&me)
    }

    /// A peer's authenticated VIEW-CHANGE for `current` or later (not yet entered): kept if it
    /// is for a later view or a newer incarnation than the one held.
    pub fn record(&mut self, j: OrderId, vc: SignedViewChange) {
        let newer = self.changes.get(&j).is_none_or(|old| {
            old.vc.new_view < vc.vc.new_view || old.vc.incarnation < vc.vc.incarnation
        });
        if newer {
            self.changes.insert(j, vc);
        }
    }

    /// Peer `j` lost its records and is now in `incarnation`: what it said in an older life is
    /// void.
    pub fn forget_older_life(&mut self, j: OrderId, incarnation: u64) {
        if self
            .changes
            .get(&j)
            .is_some_and(|vc| vc.vc.incarnation < incarnation)
        {
            self.changes.remove(&j);
        }
    }

    /// The view to join because `join` replicas want one above ours (`min(u,r) + 1`: one of
    /// them correct, or ours can no longer gather `n - u` votes).
    pub fn join_target_of_changes(&self, join: usize) -> Option<View> {
        self.join_target(self.changes.values().map(|s| s.vc.new_view), join)
    }

    /// Peer `j` works in `view`: the view to join if `join` peers work above ours.
    pub fn peer_works_in(&mut self, j: OrderId, view: View, join: usize) -> Option<View> {
        if view <= self.current {
            return None;
        }
        let e = self.peer_views.entry(j).or_insert(View::ZERO);
        *e = (*e).max(view);
        self.join_target(self.peer_views.values().copied(), join)
    }

    /// The highest view that `join` of `views` reach above ours, if any.
    fn join_target(&self, views: impl Iterator<Item = View>, join: usize) -> Option<View> {
        let mut above: Vec<View> = views.filter(|v| *v > self.current).collect();
        if above.len() < join {
            return None;
        }
        above.sort_unstable();
        Some(above[above.len() - join])
    }

    /// The replicas whose VIEW-CHANGE wants a view later than `current`.
    pub fn wanting_later(&self) -> impl Iterator<Item = OrderId> + '_ {
        self.changes
            .iter()
            .filter(|(_, s)| s.vc.new_view > self.current)
            .map(|(j, _)| *j)
    }

    /// Start the new primary's clock once `medium` (`n - u`) replicas want `current` or a later
    /// view: a VIEW-CHANGE for a later view abandons this one's predecessor just the same.
    pub fn note_quorum(&mut self, now: Micros, medium: usize) {
        let wanting = self
            .changes
            .values()
            .filter(|s| s.vc.new_view >= self.current)
            .count();
        if !self.active && wanting >= medium && self.quorum_at.is_none() {
            self.quorum_at = Some(now);
        }
    }

    /// When the new primary's clock started, if it has.
    pub fn quorum_at(&self) -> Option<Micros> {
        self.quorum_at
    }

    /// The VIEW-CHANGEs for `current`, in replica order (replay must be exact: no HashMap order
    /// may reach the wire).
    pub fn proofs(&self) -> Vec<SignedViewChange> {
        let mut proofs: Vec<SignedViewChange> = self
            .changes
            .values()
            .filter(|s| s.vc.new_view == self.current)
            .cloned()
            .collect();
        proofs.sort_by_key(|s| s.vc.replica);
        proofs
    }

    /// Our NEW-VIEW for peer `j`, still changing to a view we entered, unless it was handed one
    /// less than `wait` ago.
    pub fn forward_to(
        &mut self,
        j: OrderId,
        now: Micros,
        wait: Micros,
    ) -> Option<(Vec<SignedViewChange>, Signature)> {
        let msg = self.new_view.as_ref()?;
        if self.forwarded.get(&j).is_some_and(|t| now < t + wait) {
            return None;
        }
        self.forwarded.insert(j, now);
        Some(msg.clone())
    }

    /// Digest of the entered NEW-VIEW's proofs (zero in view 0): what the simulator compares
    /// across replicas.
    pub fn new_view_digest(&self) -> Digest {
        match &self.new_view {
            Some((proofs, _)) if self.current > View::ZERO => {
                Digest::of(&new_view_signing_bytes(self.current, proofs))
            }
            _ => Digest::ZERO,
        }
    }

    /// What the stage relies on:
    /// - `INV-view-clock-only-while-changing`: the new primary's clock runs only while a view
    ///   is not yet entered;
    /// - `INV-entered-new-view-is-current`: in an entered view, the NEW-VIEW held is that
    ///   view's (what is forwarded and compared is what was installed);
    /// - `INV-own-view-change-not-ahead`: our own VIEW-CHANGE is for no view later than ours;
    /// - `INV-entered-holds-only-later-view-changes`: in an entered view, every VIEW-CHANGE
    ///   held wants a later one (older ones were spent on entering).
    pub fn check_invariants(&self, me: OrderId) -> Result<(), BrokenInvariant> {
        BrokenInvariant::check(
            self.quorum_at.is_none() || !self.active,
            "INV-view-clock-only-while-changing",
            || {
                format!(
                    "view {} entered with its clock at {:?}",
                    self.current, self.quorum_at
                )
            },
        )?;
        if self.active && self.current > View::ZERO {
            let proofs = self.new_view.iter().flat_map(|(proofs, _)| proofs);
            if let Some(stray) = proofs.into_iter().find(|p| p.vc.new_view != self.current) {
                return Err(BrokenInvariant {
                    name: "INV-entered-new-view-is-current",
                    detail: format!(
                        "in view {} the NEW-VIEW holds replica {}'s VIEW-CHANGE for view {}",
                        self.current, stray.vc.replica, stray.vc.new_view
                    ),
                });
            }
        }
        let own = self.changes.get(&me).map(|s| s.vc.new_view);
        BrokenInvariant::check(
            own.is_none_or(|v| v <= self.current),
            "INV-own-view-change-not-ahead",
            || format!("own VIEW-CHANGE for {own:?} in view {}", self.current),
        )?;
        if self.active {
            let spent = self
                .changes
                .iter()
                .find(|(_, s)| s.vc.new_view <= self.current);
            if let Some((j, s)) = spent {
                return Err(BrokenInvariant {
                    name: "INV-entered-holds-only-later-view-changes",
                    detail: format!(
                        "in entered view {} replica {j}'s VIEW-CHANGE for view {} is kept",
                        self.current, s.vc.new_view
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: Signature = Signature([0; 64]);

    #[test]
    fn the_new_primarys_clock_runs_only_while_changing() {
        let mut v = Views::new();
        assert!(!v.begin(View(0)), "not a later view");
        assert!(v.begin(View(1)));
        assert_eq!(v.timeout(100), 200, "doubled per consecutive change");
        v.note_quorum(7, 0);
        assert_eq!(v.quorum_at(), Some(7));
        v.enter(View(1), Vec::new(), SIG);
        assert_eq!(v.quorum_at(), None);
        v.check_invariants(OrderId(0)).unwrap();
        v.progressed();
        assert_eq!(v.timeout(100), 100);
        assert!(v.forward_to(OrderId(1), 0, 10).is_some());
        assert!(
            v.forward_to(OrderId(1), 5, 10).is_none(),
            "at most once per wait"
        );
    }
}
