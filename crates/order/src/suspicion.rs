//! Suspecting the primary is a vote, not a departure (Zyzzyva's I-HATE-THE-PRIMARY).
//!
//! A backup whose monitor fires (heartbeat, rate, fairness, progress, a bad batch) sends
//! SUSPECT(v) to its peers and keeps working in view `v`. The view changes once `min(u,r) + 1`
//! replicas suspect it, or want a higher view (the join rule of `view_change.rs`, which it
//! replaces as the way in): `r + 1` include a correct replica, and with `u + 1` suspecting, the
//! view could not gather `n - u` votes if they left it.
//!
//! Before, a backup that suspected left the view at once. Its suspicion alone changes nothing
//! when `min(u,r) + 1 > 1`, so on two shared cores a false one (a 40 ms gap in PRE-PREPAREs
//! while a checkpoint was taken) left it alone in a view change, dropping every vote of the
//! view the others stayed in: each quorum then needed every remaining replica, and in a
//! fault-free `plumb bench --u 1 --r 1 --clients 16,64,128,16,64,128` run the first 128-client
//! level made 1424 ops/s against 4738 for the second (o2 dropped 17 170 votes as `vote-view`). Now it stays, and the suspicion expires unless the
//! monitor keeps raising it.
//!
//! Safety is untouched: a suspicion is no promise (only a VIEW-CHANGE is), and a replica leaves
//! a view exactly as before. Faulty replicas gain nothing: `min(u,r) + 1` of anything is what
//! a view change took before too.

use crate::OrderReplica;
use plumb_core::{Action, BrokenInvariant, Evidence, Micros, Observation, ViewChangeCause};
use plumb_wire::{Message, OrderId, View};
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(crate) struct Suspicions {
    /// Each replica's latest suspicion (ours included): the view, and when it was raised or
    /// heard.
    by_replica: BTreeMap<OrderId, (View, Micros)>,
    /// Why we suspect the current view's primary, if we do.
    own: Option<(View, ViewChangeCause)>,
}

impl Suspicions {
    /// - `INV-suspicions-of-current-view`: every suspicion kept, ours or a peer's, is of the
    ///   current view (older ones are void, later ones are taken as a sign of a missed view
    ///   change instead).
    pub fn check_invariants(&self, view: View) -> Result<(), BrokenInvariant> {
        let stray = self.by_replica.iter().find(|(_, (v, _))| *v != view);
        BrokenInvariant::check(stray.is_none(), "INV-suspicions-of-current-view", || {
            format!("a suspicion {stray:?} kept in view {view}")
        })?;
        let own = self.own.map(|(v, _)| v);
        BrokenInvariant::check(
            own.is_none_or(|v| v == view),
            "INV-suspicions-of-current-view",
            || format!("our own suspicion of view {own:?} kept in view {view}"),
        )
    }
}

impl OrderReplica {
    /// How long a suspicion counts: the monitor raises a live one again well within this
    /// (the heartbeat, every rate window, every tick of the progress timeout).
    fn suspicion_ttl(&self) -> Micros {
        self.view_change_timeout()
    }

    /// Suspect the current primary for `cause`: tell peers (again, if we already did: a lost
    /// SUSPECT must not leave the view in place), and change view if enough replicas do.
    pub(crate) fn suspect(&mut self, now: Micros, cause: ViewChangeCause, out: &mut Vec<Action>) {
        self.suspect_on(now, cause, Evidence::None, out);
    }

    /// `suspect`, saying what the monitor saw (logged with the first suspicion of a view).
    pub(crate) fn suspect_on(
        &mut self,
        now: Micros,
        cause: ViewChangeCause,
        evidence: Evidence,
        out: &mut Vec<Action>,
    ) {
        if !self.views.active() {
            return;
        }
        let view = self.views.current();
        if self.watch.suspicions.own.is_none_or(|(v, _)| v != view) {
            self.counters.add(cause.suspicion_counter());
            self.watch.suspicions.own = Some((view, cause));
            out.push(Action::Observe(Observation::Suspected {
                view,
                cause,
                evidence,
            }));
        }
        self.watch
            .suspicions
            .by_replica
            .insert(self.me, (view, now));
        self.send_to_peers(&Message::Suspect { view }, out);
        self.count_suspicions(now, out);
    }

    /// SUSPECT from peer `j`.
    pub(crate) fn on_suspect(
        &mut self,
        now: Micros,
        j: OrderId,
        view: View,
        out: &mut Vec<Action>,
    ) {
        if view > self.views.current() {
            // It works in a later view than ours: evidence that we missed a view change.
            self.note_peer_view(now, j, view, out);
            return;
        }
        if view < self.views.current() {
            return;
        }
        self.watch.suspicions.by_replica.insert(j, (view, now));
        self.count_suspicions(now, out);
    }

    /// `min(u,r) + 1` replicas suspect the current view, or want a later one: leave it.
    pub(crate) fn count_suspicions(&mut self, now: Micros, out: &mut Vec<Action>) {
        if !self.views.active() {
            return;
        }
        let (view, ttl) = (self.views.current(), self.suspicion_ttl());
        let mut against: Vec<OrderId> = self
            .watch
            .suspicions
            .by_replica
            .iter()
            .filter(|(_, (v, at))| *v == view && now < at.saturating_add(ttl))
            .map(|(j, _)| *j)
            .collect();
        against.extend(self.views.wanting_later());
        against.sort_unstable();
        against.dedup();
        if against.len() < self.q().view_change_join() {
            return;
        }
        let cause = match self.watch.suspicions.own {
            Some((v, cause)) if v == view && against.contains(&self.me) => cause,
            _ => ViewChangeCause::Joined,
        };
        let target = self.next_live_view(view.next());
        self.start_view_change(now, target, cause, out);
    }

    /// A new view: suspicions of older ones are void.
    pub(crate) fn forget_suspicions(&mut self) {
        let view = self.views.current();
        self.watch
            .suspicions
            .by_replica
            .retain(|_, (v, _)| *v >= view);
        self.watch.suspicions.own = self.watch.suspicions.own.filter(|(v, _)| *v >= view);
    }
}
