//! View change: triggers, signed VIEW-CHANGE messages, the deterministic NEW-VIEW decision, and
//! installing a new view. The safety argument is in docs/protocol.md ("View change").

use crate::slot::{slot_key, Slot};
use crate::OrderReplica;
use plumb_config::Quorums;
use plumb_core::{Action, DropReason, Evidence, Micros, Observation, ViewChangeCause};
use plumb_crypto::{Digest, Signature};
use plumb_wire::{
    new_view_signing_bytes, Batch, Message, OrderId, PrePreparedEntry, PreparedEntry, Principal,
    Seq, SignedViewChange, View, ViewChange,
};
use std::collections::{BTreeMap, BTreeSet};

/// What a NEW-VIEW establishes: the start checkpoint and a batch (or null) for every sequence
/// number after it that may have committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub checkpoint_seq: Seq,
    pub checkpoint_digest: Digest,
    /// Consecutive from `checkpoint_seq + 1`; `None` is a null batch.
    pub slots: Vec<(Seq, Option<Batch>)>,
}

pub(crate) const VIEW_KEY: &str = "order/view";
/// The NEW-VIEW of the current view, kept so that a restarted replica can still forward it to
/// peers that missed it (a rejoining replica among them).
pub(crate) const NEW_VIEW_KEY: &str = "order/new-view";

/// The NEW-VIEW decision over a set of view-change messages for one view (distinct replicas,
/// already authenticated). `None`: not enough information yet, wait for more messages.
pub fn decide(vcs: &[&ViewChange], q: &Quorums, checkpoint_interval: u64) -> Option<Decision> {
    let medium = q.order_medium();
    let small = q.small();
    if vcs.len() < medium {
        return None;
    }
    // 1. Start checkpoint: the highest one that r+1 replicas hold with the same digest (one is
    //    correct, so the digest is right and the state fetchable) and that is at or above the
    //    low water mark of n-u replicas (so nothing after it was garbage-collected by them).
    let holds = |m: &ViewChange, s: Seq, d: Digest| {
        (m.stable_seq == s && m.stable_digest == d) || m.checkpoints.contains(&(s, d))
    };
    let (h, h_digest) = vcs
        .iter()
        .flat_map(|m| {
            std::iter::once((m.stable_seq, m.stable_digest)).chain(m.checkpoints.iter().copied())
        })
        .filter(|(s, d)| {
            vcs.iter().filter(|m| holds(m, *s, *d)).count() >= small
                && vcs.iter().filter(|m| m.stable_seq <= *s).count() >= medium
        })
        .max_by_key(|(s, d)| (*s, *d))?;
    let top = h + 2 * checkpoint_interval;
    let max_s = vcs
        .iter()
        .flat_map(|m| m.prepared.iter().map(|p| p.seq))
        .filter(|s| *s > h && *s <= top)
        .max()
        .unwrap_or(h);
    let mut slots = Vec::new();
    for s in (h + 1).through(max_s) {
        slots.push((s, choose(vcs, s, medium, small)?));
    }
    while matches!(slots.last(), Some((_, None))) {
        slots.pop();
    }
    Some(Decision {
        checkpoint_seq: h,
        checkpoint_digest: h_digest,
        slots,
    })
}

/// The choice for one sequence number: `Some(Some(batch))`, `Some(None)` for null, `None` when
/// undecidable with these messages.
fn choose(vcs: &[&ViewChange], s: Seq, medium: usize, small: usize) -> Option<Option<Batch>> {
    let prepared_at = |m: &ViewChange| {
        m.prepared
            .iter()
            .find(|p| p.seq == s)
            .map(|p| (p.view, p.batch.digest(s)))
    };
    let mut candidates: Vec<&PreparedEntry> = vcs
        .iter()
        .flat_map(|m| m.prepared.iter().filter(|p| p.seq == s))
        .collect();
    // Highest view first, then by digest, so every replica tries candidates in the same order.
    candidates.sort_by_key(|p| (std::cmp::Reverse(p.view), p.batch.digest(s)));
    for cand in candidates {
        let (v, d) = (cand.view, cand.batch.digest(s));
        let a1 = vcs
            .iter()
            .filter(|m| m.stable_seq < s)
            .filter(|m| match prepared_at(m) {
                None => true,
                Some((pv, pd)) => pv < v || (pv == v && pd == d),
            })
            .count()
            >= medium;
        let a2 = vcs
            .iter()
            .filter(|m| {
                m.pre_prepared
                    .iter()
                    .any(|q| q.seq == s && q.digest == d && q.view >= v)
            })
            .count()
            >= small;
        if a1 && a2 {
            return Some(Some(cand.batch.clone()));
        }
    }
    let null_ok = vcs
        .iter()
        .filter(|m| m.stable_seq < s && prepared_at(m).is_none())
        .count()
        >= medium;
    if null_ok {
        Some(None)
    } else {
        None
    }
}

fn null_batch() -> Batch {
    Batch {
        requests: Vec::new(),
        time: 0,
        seed: 0,
    }
}

impl OrderReplica {
    pub(crate) fn view_change_timeout(&self) -> Micros {
        self.views.timeout(self.cfg().view_change_timeout_us)
    }

    /// Suspect the primary when nothing has committed for the progress timeout and there was
    /// work: a pending request (vouched for by `n_auth - u` auth replicas) waited that long, or
    /// a batch accepted in this view did.
    ///
    /// The second is not implied by the first. Clients number requests without gaps, so a
    /// request is pending only when its predecessor is ordered *here*: behind a batch that
    /// cannot commit, clients' next requests are not pending, and with no other load the
    /// heartbeat and this timeout stayed silent for good (simulator seed 2192 at u=1 r=1 with
    /// ZZ: view 3's primary died after its last two batches committed at one replica and were
    /// accepted, not committed, at one other; the fourth had restarted without them; only the
    /// first suspected, one short of `min(u,r) + 1`). A faulty replica cannot use it against a
    /// correct primary: with at most `u` faulty, `n - u` correct replicas commit what it
    /// proposes.
    pub(crate) fn maybe_suspect_primary(&mut self, now: Micros, out: &mut Vec<Action>) {
        let timeout = self.view_change_timeout();
        if now < self.watch.last_progress + timeout {
            return;
        }
        let waiting = self.pending.waiting_longer_than(now, timeout);
        // A rejoining peer asked for null batches and the primary orders none.
        let unfilled = self.rejoins.helping.fill_until() > self.state.seq && !self.is_primary();
        if waiting {
            self.suspect(now, ViewChangeCause::ProgressTimeout, out);
        } else if let Some(evidence) = self.uncommitted_for(now, timeout) {
            self.suspect_on(now, ViewChangeCause::Uncommitted, evidence, out);
        } else if unfilled {
            self.suspect(now, ViewChangeCause::Unfilled, out);
        }
    }

    /// The oldest batch accepted in the current view that has waited `timeout` without
    /// committing, as evidence.
    fn uncommitted_for(&self, now: Micros, timeout: Micros) -> Option<Evidence> {
        let view = self.views.current();
        let (first, slot) = self
            .log
            .accepted_unapplied(self.state.seq)
            .find(|(_, slot)| slot.record.committed.is_none())?;
        let (v, digest) = slot.accepted_digest(*first)?;
        if v != view || now < slot.accepted_at + timeout {
            return None;
        }
        Some(Evidence::Uncommitted {
            first: *first,
            accepted: self.log.accepted_upto(),
            waited: now.saturating_sub(slot.accepted_at.max(self.monitor_view_since())),
            commits: Slot::count(&slot.commits, &digest),
            needed: self.medium(),
        })
    }

    pub(crate) fn start_view_change(
        &mut self,
        now: Micros,
        new_view: View,
        cause: ViewChangeCause,
        out: &mut Vec<Action>,
    ) {
        if new_view <= self.views.current() || self.rejoins.own.is_some() {
            return;
        }
        self.counters.add(cause.counter());
        out.push(Action::Observe(Observation::ViewChangeStarted {
            view: new_view,
            cause,
        }));
        self.close_view(now);
        let began = self.views.begin(new_view);
        debug_assert!(began, "view change to {new_view} from a later view");
        self.forget_suspicions();
        self.log.forget_waiting();
        self.proposer.view_left();
        self.put(
            VIEW_KEY.to_string(),
            plumb_core::storage::encode(&(self.views.current(), false)),
            out,
        );
        self.sync(out);
        let vc = self.own_view_change();
        self.views.keep_own(self.me, vc.clone());
        self.send_to_peers(&Message::ViewChange(vc), out);
        self.try_new_view(now, out);
    }

    pub(crate) fn own_view_change(&self) -> SignedViewChange {
        let mut prepared = Vec::new();
        let mut pre_prepared = Vec::new();
        for (seq, slot) in self.log.range(self.checkpoints.stable().seq + 1..) {
            if let Some((v, b)) = &slot.record.prepared {
                prepared.push(PreparedEntry {
                    seq: *seq,
                    view: *v,
                    batch: b.clone(),
                });
            }
            for (d, v) in &slot.record.pre_prepared {
                pre_prepared.push(PrePreparedEntry {
                    seq: *seq,
                    view: *v,
                    digest: *d,
                });
            }
        }
        let vc = ViewChange {
            new_view: self.views.current(),
            replica: self.me,
            stable_seq: self.checkpoints.stable().seq,
            stable_digest: self.checkpoints.stable().digest,
            checkpoints: self.checkpoints.own_digests().collect(),
            prepared,
            pre_prepared,
            incarnation: self.rejoins.incarnations.own(),
        };
        let signature = self.ctx.keys.sign(&vc.signing_bytes());
        SignedViewChange { vc, signature }
    }

    fn valid_signature(&self, s: &SignedViewChange) -> bool {
        s.vc.replica.index() < self.q().order
            && self.ctx.keys.verify_signature(
                Principal::Order(s.vc.replica),
                &s.vc.signing_bytes(),
                &s.signature,
            )
    }

    pub(crate) fn on_view_change(
        &mut self,
        now: Micros,
        j: OrderId,
        vc: SignedViewChange,
        out: &mut Vec<Action>,
    ) {
        if vc.vc.replica != j || !self.valid_signature(&vc) {
            self.counters.dropped(DropReason::BadViewChange);
            return;
        }
        if !self.current_incarnation(&vc) {
            self.counters.dropped(DropReason::ViewChangeOldIncarnation);
            return;
        }
        self.rejoins
            .incarnations
            .note_view_change(j, vc.vc.incarnation);
        let v = vc.vc.new_view;
        if v < self.views.current() || (v == self.views.current() && self.views.active()) {
            self.help_stale_peer(now, j, out);
            return;
        }
        self.views.record(j, vc);
        if let Some(target) = self
            .views
            .join_target_of_changes(self.q().view_change_join())
        {
            self.start_view_change(now, target, ViewChangeCause::Joined, out);
        }
        // One suspicion of our view and one VIEW-CHANGE past it make two voices too.
        self.count_suspicions(now, out);
        self.views.note_quorum(now, self.q().order_medium());
        if !self.views.active() && v == self.views.current() {
            self.try_new_view(now, out);
        }
    }

    /// min(u,r)+1 peers work in a view above ours (we missed the view change, e.g. behind a
    /// partition): ask to change to it; peers already there answer with their NEW-VIEW.
    pub(crate) fn note_peer_view(
        &mut self,
        now: Micros,
        j: OrderId,
        view: View,
        out: &mut Vec<Action>,
    ) {
        if let Some(target) = self
            .views
            .peer_works_in(j, view, self.q().view_change_join())
        {
            self.start_view_change(now, target, ViewChangeCause::Joined, out);
        }
    }

    /// A peer is still changing to a view we have already entered: hand it our NEW-VIEW.
    fn help_stale_peer(&mut self, now: Micros, j: OrderId, out: &mut Vec<Action>) {
        let Some((proofs, signature)) = self.views.forward_to(j, now, self.cfg().catch_up_us)
        else {
            return;
        };
        let msg = Message::NewView {
            view: self.views.current(),
            proofs,
            signature,
        };
        self.send(Principal::Order(j), &msg, out);
    }

    fn try_new_view(&mut self, now: Micros, out: &mut Vec<Action>) {
        if self.views.active() || self.primary() != self.me {
            return;
        }
        let proofs = self.views.proofs();
        let refs: Vec<&ViewChange> = proofs.iter().map(|s| &s.vc).collect();
        let Some(decision) = decide(&refs, self.q(), self.cfg().checkpoint_interval) else {
            return;
        };
        let signature = self
            .ctx
            .keys
            .sign(&new_view_signing_bytes(self.views.current(), &proofs));
        self.send_to_peers(
            &Message::NewView {
                view: self.views.current(),
                proofs: proofs.clone(),
                signature,
            },
            out,
        );
        self.install(now, self.views.current(), decision, proofs, signature, out);
    }

    pub(crate) fn on_new_view(
        &mut self,
        now: Micros,
        from: OrderId,
        view: View,
        proofs: Vec<SignedViewChange>,
        signature: Signature,
        out: &mut Vec<Action>,
    ) {
        if view < self.views.current() || (view == self.views.current() && self.views.active()) {
            return;
        }
        // Only the new view's primary makes a NEW-VIEW (anyone may forward it): otherwise a
        // faulty backup could install its own valid subset of proofs and make the view fail.
        let maker = if plumb_core::sabotaged!(AnyNewView) {
            from
        } else {
            view.primary(self.q().order)
        };
        if !self.ctx.keys.verify_signature(
            Principal::Order(maker),
            &new_view_signing_bytes(view, &proofs),
            &signature,
        ) {
            self.counters.dropped(DropReason::NewViewNotFromPrimary);
            return;
        }
        let mut seen = BTreeSet::new();
        for p in &proofs {
            if p.vc.new_view != view || !seen.insert(p.vc.replica) || !self.valid_signature(p) {
                self.counters.dropped(DropReason::BadNewView);
                return;
            }
            if !self.current_incarnation(p) {
                self.counters.dropped(DropReason::NewViewOldIncarnation);
                return;
            }
        }
        let refs: Vec<&ViewChange> = proofs.iter().map(|s| &s.vc).collect();
        let Some(decision) = decide(&refs, self.q(), self.cfg().checkpoint_interval) else {
            self.counters.dropped(DropReason::BadNewView);
            return;
        };
        self.install(now, view, decision, proofs, signature, out);
    }

    /// A VIEW-CHANGE from an incarnation of its sender older than one we have seen speaks for a
    /// life whose records are gone: refused (rejoin.rs).
    fn current_incarnation(&self, s: &SignedViewChange) -> bool {
        self.rejoins
            .incarnations
            .is_current(s.vc.replica, s.vc.incarnation)
    }

    /// Enter `view` with the slots the decision fixes: each is pre-prepared in the new view (the
    /// NEW-VIEW stands for the primary's pre-prepares) and backups prepare it.
    fn install(
        &mut self,
        now: Micros,
        view: View,
        d: Decision,
        proofs: Vec<SignedViewChange>,
        signature: Signature,
        out: &mut Vec<Action>,
    ) {
        let record = plumb_core::storage::encode(&(view, &proofs, signature));
        self.views.enter(view, proofs, signature);
        self.watch.last_progress = now;
        self.forget_suspicions();
        self.put(NEW_VIEW_KEY.to_string(), record, out);
        self.log.forget_waiting();
        self.put(
            VIEW_KEY.to_string(),
            plumb_core::storage::encode(&(view, true)),
            out,
        );
        self.sync(out);
        out.push(Action::Observe(Observation::ViewEntered {
            view,
            new_view: self.views.new_view_digest(),
        }));
        for (_, slot) in self.log.slots_mut() {
            slot.enter_votes_view(view);
        }
        if d.checkpoint_seq > self.checkpoints.stable().seq {
            let own = self
                .checkpoints
                .own(d.checkpoint_seq)
                .filter(|(dg, _)| *dg == d.checkpoint_digest);
            if let Some((dg, bytes)) = own.cloned() {
                self.make_stable(now, d.checkpoint_seq, dg, bytes, out);
            } else {
                self.checkpoints.fetch(
                    d.checkpoint_seq,
                    d.checkpoint_digest,
                    crate::checkpoint::StateFetch::Stable,
                );
                self.send_to_peers(
                    &Message::FetchOrderState {
                        seq: d.checkpoint_seq,
                    },
                    out,
                );
            }
        }
        let mut top = self.state.seq.max(d.checkpoint_seq);
        for (seq, choice) in d.slots {
            top = top.max(seq);
            // Slots we already committed are voted on again: peers that did not commit them
            // need our votes in this view.
            if seq <= self.checkpoints.stable().seq {
                continue;
            }
            let carried = choice.is_some();
            let batch = choice.unwrap_or_else(null_batch);
            self.accept_and_prepare(now, seq, view, batch, out);
            if let Some(slot) = self.log.get_mut(seq) {
                slot.carried = carried;
            }
        }
        // Pre-prepares of the old view above the decision are void in this view.
        self.log.restart_accepted_at(top);
        self.proposer.view_entered(top);
        for seq in self
            .log
            .range(self.checkpoints.stable().seq + 1..top.max(self.checkpoints.stable().seq) + 1)
            .map(|(s, _)| *s)
            .collect::<Vec<_>>()
        {
            self.check_prepared(now, seq, out);
        }
        let void: Vec<Seq> = self.log.range(top + 1..).map(|(s, _)| *s).collect();
        for s in void {
            if let Some(slot) = self.log.get_mut(s) {
                if slot.void_accepted() {
                    let record = plumb_core::storage::encode(&slot.record);
                    self.put(slot_key(s), record, out);
                }
            }
        }
        self.open_view(now, out);
        self.try_propose(now, out);
    }

    /// While a view change is in progress: resend our VIEW-CHANGE (messages get lost) and give
    /// up on the new primary after a timeout.
    pub(crate) fn view_change_tick(&mut self, now: Micros, out: &mut Vec<Action>) {
        self.views.note_quorum(now, self.q().order_medium());
        let quorum_at = self.views.quorum_at();
        let timed_out = quorum_at.is_some_and(|t| now >= t + self.view_change_timeout());
        let primary_dead = quorum_at.is_some() && self.awaited_primary_dead();
        if primary_dead && !timed_out {
            self.counters.add("view-change-primary-dead");
        }
        if timed_out || primary_dead {
            let target = self.next_live_view(self.views.current().next());
            self.start_view_change(now, target, ViewChangeCause::Incomplete, out);
            return;
        }
        if let Some(vc) = self.views.own(self.me).cloned() {
            self.send_to_peers(&Message::ViewChange(vc), out);
        }
        self.try_new_view(now, out);
    }
}

/// Used by tests and the recovery path.
#[allow(dead_code)]
pub(crate) fn prepared_map(vc: &ViewChange) -> BTreeMap<Seq, (View, Digest)> {
    vc.prepared
        .iter()
        .map(|p| (p.seq, (p.view, p.batch.digest(p.seq))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_config::Faults;
    use plumb_wire::{Body, ReqCore, ReqNo};

    fn batch(tag: u8) -> Batch {
        Batch {
            requests: vec![ReqCore {
                client: 1,
                life: plumb_wire::Life::default(),
                nc: ReqNo(1),
                body: Body::Inline(vec![tag]),
            }],
            time: 10,
            seed: 0,
        }
    }

    fn vc(replica: OrderId, prepared: &[(Seq, u64, u8)], pre: &[(Seq, u64, u8)]) -> ViewChange {
        ViewChange {
            new_view: View(1),
            replica,
            stable_seq: Seq(0),
            stable_digest: Digest::ZERO,
            checkpoints: Vec::new(),
            incarnation: 0,
            prepared: prepared
                .iter()
                .map(|(s, v, t)| PreparedEntry {
                    seq: *s,
                    view: View(*v),
                    batch: batch(*t),
                })
                .collect(),
            pre_prepared: pre
                .iter()
                .map(|(s, v, t)| PrePreparedEntry {
                    seq: *s,
                    view: View(*v),
                    digest: batch(*t).digest(*s),
                })
                .collect(),
        }
    }

    fn q() -> Quorums {
        Quorums::minimal(Faults::new(1, 1))
    }

    #[test]
    fn committed_batch_is_chosen() {
        // A, B prepared batch 7 at seq 1 in view 0 (with the primary, a commit quorum); C did not.
        let a = vc(OrderId(0), &[(Seq(1), 0, 7)], &[(Seq(1), 0, 7)]);
        let b = vc(OrderId(1), &[(Seq(1), 0, 7)], &[(Seq(1), 0, 7)]);
        let c = vc(OrderId(2), &[], &[]);
        let d = decide(&[&a, &b, &c], &q(), 8).unwrap();
        assert_eq!(d.slots, vec![(Seq(1), Some(batch(7)))]);
    }

    #[test]
    fn a_lying_replica_cannot_replace_a_committed_batch() {
        // The liar claims it prepared batch 9 at seq 1 in a higher view; only it pre-prepared 9.
        let liar = vc(OrderId(3), &[(Seq(1), 5, 9)], &[(Seq(1), 5, 9)]);
        let a = vc(OrderId(0), &[(Seq(1), 0, 7)], &[(Seq(1), 0, 7)]);
        let b = vc(OrderId(1), &[(Seq(1), 0, 7)], &[(Seq(1), 0, 7)]);
        // With only three messages the decision must wait rather than pick 9 or null.
        assert_eq!(decide(&[&liar, &a, &b], &q(), 8), None);
        // A fourth (honest) message settles it, for batch 7.
        let c = vc(OrderId(2), &[], &[]);
        let d = decide(&[&liar, &a, &b, &c], &q(), 8).unwrap();
        assert_eq!(d.slots, vec![(Seq(1), Some(batch(7)))]);
    }

    #[test]
    fn nothing_prepared_gives_nulls_and_trailing_nulls_are_dropped() {
        let a = vc(OrderId(0), &[(Seq(2), 0, 7)], &[(Seq(2), 0, 7)]);
        let b = vc(OrderId(1), &[(Seq(2), 0, 7)], &[(Seq(2), 0, 7)]);
        let c = vc(OrderId(2), &[], &[]);
        let d = decide(&[&a, &b, &c], &q(), 8).unwrap();
        assert_eq!(d.slots, vec![(Seq(1), None), (Seq(2), Some(batch(7)))]);
        let empty = decide(
            &[&c, &vc(OrderId(0), &[], &[]), &vc(OrderId(1), &[], &[])],
            &q(),
            8,
        )
        .unwrap();
        assert!(empty.slots.is_empty());
    }

    #[test]
    fn too_few_messages_decide_nothing() {
        assert_eq!(
            decide(
                &[&vc(OrderId(0), &[], &[]), &vc(OrderId(1), &[], &[])],
                &q(),
                8
            ),
            None
        );
    }

    #[test]
    fn start_checkpoint_needs_r_plus_1_vouchers() {
        let cp8 = Digest::of(b"cp8");
        let mut a = vc(OrderId(0), &[], &[]);
        let mut b = vc(OrderId(1), &[], &[]);
        let c = vc(OrderId(2), &[], &[]);
        // Only replica a (possibly lying) claims checkpoint 8, and it is past the low water mark
        // of too few replicas for 0 to be a safe start either: wait.
        a.stable_seq = Seq(8);
        a.stable_digest = cp8;
        assert_eq!(decide(&[&a, &b, &c], &q(), 8), None);
        // b holds checkpoint 8 too (not yet stable there): r+1 vouch, start from 8.
        b.checkpoints.push((Seq(8), cp8));
        let d = decide(&[&a, &b, &c], &q(), 8).unwrap();
        assert_eq!((d.checkpoint_seq, d.checkpoint_digest), (Seq(8), cp8));
        // A lone liar claiming an unstable checkpoint 16 does not move the start.
        let mut liar = vc(OrderId(3), &[], &[]);
        liar.checkpoints.push((Seq(16), Digest::of(b"forged")));
        let d = decide(&[&a, &b, &c, &liar], &q(), 8).unwrap();
        assert_eq!(d.checkpoint_seq, Seq(8));
    }
}
