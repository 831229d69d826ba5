//! Requests in, batches proposed, PRE-PREPARE / PREPARE / COMMIT, committed batches applied and
//! handed to the execution stage.

use crate::agreement_log::{EarlyPrePrepare, HeldForTime};
use crate::pending::{Collect, Thresholds};
use crate::proposer::Step;
use crate::slot::{slot_key, Slot};
use crate::{OrderReplica, BATCH};
use plumb_core::{
    Action, DropReason, Micros, Observation, SlowRequest, StallStage, ViewChangeCause, WaitReason,
};
use plumb_crypto::{Digest, Mac};
use plumb_wire::{
    AuthId, Batch, ClientId, Message, OrderId, Principal, ReqCore, ReqNo, Seq, SignedRequest, View,
    Vouched, AUTH_REQS_MAX,
};
use std::collections::{BTreeMap, BTreeSet};

impl OrderReplica {
    // ---------------------------------------------------------------- requests

    /// AUTH-REQ: authentication replica `f` vouches for `core`; the primary proposes what is
    /// ready.
    pub(crate) fn on_auth_req(
        &mut self,
        now: Micros,
        f: AuthId,
        core: ReqCore,
        macs: Vec<Mac>,
        out: &mut Vec<Action>,
    ) {
        self.on_vouched(now, f, core, macs, out);
        if self.is_primary() {
            self.try_propose(now, out);
        }
    }

    /// AUTH-REQS: every request of one group commit of `f`'s, judged each as an AUTH-REQ;
    /// the primary proposes once they are all in.
    pub(crate) fn on_auth_reqs(
        &mut self,
        now: Micros,
        f: AuthId,
        reqs: Vec<Vouched>,
        out: &mut Vec<Action>,
    ) {
        if reqs.len() > AUTH_REQS_MAX {
            self.counters.dropped(DropReason::AuthReqsTooMany);
            return;
        }
        for v in reqs {
            self.on_vouched(now, f, v.core, v.macs, out);
        }
        if self.is_primary() {
            self.try_propose(now, out);
        }
    }

    /// Authentication replica `f` vouches for `core` with `macs`: collected if authentic.
    fn on_vouched(
        &mut self,
        now: Micros,
        f: AuthId,
        core: ReqCore,
        macs: Vec<Mac>,
        out: &mut Vec<Action>,
    ) {
        if macs.len() != self.q().order || f.index() >= self.q().auth {
            self.counters.dropped(DropReason::BadAuthenticator);
            return;
        }
        let id = self
            .pending
            .known_id(&core)
            .unwrap_or_else(|| core.id_digest());
        let mine = macs.get(self.me.index()).copied().unwrap_or_default();
        if !self.ctx.keys.verify_from(Principal::Auth(f), &id.0, &mine) {
            // The envelope is authentic, so auth replica f itself sent a bad authenticator.
            self.counters.dropped(DropReason::BadAuthenticator);
            return;
        }
        let c = core.client;
        if core.nc <= self.last_ordered(c) && !plumb_core::sabotaged!(SkipRequestSequenceCheck) {
            self.on_already_ordered(now, c, out);
            return;
        }
        let needed = self.last_ordered(c).next();
        let thresholds = Thresholds {
            gather: self.q().auth_gather(),
            held: self.held_evidence(),
        };
        let nc = core.nc;
        let Collect::Kept {
            new_number,
            newly_pending,
        } = self
            .pending
            .collect(now, f, core, id, macs, needed, thresholds)
        else {
            return;
        };
        if new_number {
            self.watch.monitor.note_arrival(c, nc, now);
        }
        if newly_pending {
            self.arm_heartbeat(out);
            self.note_busy(now);
        }
    }

    /// OL2: a request that is already ordered came again: the client missed its reply, an auth
    /// replica missed that it was ordered (its pending entry is stale), or the execution stage
    /// missed batches. One authenticated AUTH-REQ is enough (a stale auth replica may be alone
    /// in resending the old number); RETRANSMIT only makes execution replicas resend cached
    /// replies, and it is rate-limited per client, so a faulty auth replica gains little.
    fn on_already_ordered(&mut self, now: Micros, c: ClientId, out: &mut Vec<Action>) {
        if !self.pending.retransmit_due(c, now, self.cfg().catch_up_us) {
            return;
        }
        let msg = Message::Retransmit {
            client: c,
            next_seq: self.state.seq + 1,
        };
        self.send_to_exec(&msg, out);
    }

    pub(crate) fn last_ordered(&self, c: ClientId) -> ReqNo {
        self.state
            .last_ordered
            .get(&c)
            .copied()
            .unwrap_or(ReqNo::NONE)
    }

    /// Last request number per client counting batches accepted but not yet committed.
    pub(crate) fn tentative_last_ordered(&self) -> Tentative<'_> {
        let mut in_flight = BTreeMap::new();
        for (_, slot) in self.log.accepted_unapplied(self.state.seq) {
            if let Some((_, b)) = slot.record.accepted() {
                for r in &b.requests {
                    let e = in_flight.entry(r.client).or_insert(ReqNo::NONE);
                    *e = (*e).max(r.nc);
                }
            }
        }
        Tentative {
            ordered: &self.state.last_ordered,
            in_flight,
        }
    }

    // ---------------------------------------------------------------- proposing

    pub(crate) fn try_propose(&mut self, now: Micros, out: &mut Vec<Action>) {
        while self.is_primary() && self.proposer.next() <= self.window_top() {
            let ready = self.ready_requests();
            // A rejoining peer waits for a stable checkpoint above its fence: fill idle time
            // with null batches so it gets there without client load.
            let fill =
                ready.is_empty() && self.proposer.next() <= self.rejoins.helping.fill_until();
            let in_flight = self.proposer.next() > self.state.seq + 1;
            match self
                .proposer
                .step(ready.len(), fill, in_flight, self.cfg().batch_max)
            {
                Step::Idle | Step::Wait { arm: false } => return,
                Step::Wait { arm: true } => {
                    out.push(Action::SetTimer {
                        id: BATCH,
                        after: self.cfg().batch_timeout_us,
                    });
                    return;
                }
                Step::Propose => {}
            }
            let candidates: Vec<SignedRequest> = ready
                .iter()
                .filter_map(|(c, id)| self.pending.signed(*c, id))
                .collect();
            let (seq, time) = self.proposer.take(now);
            let seed = self.rng.next_u64();
            let batch = Batch {
                requests: candidates.iter().map(|r| r.core.clone()).collect(),
                time,
                seed,
            };
            let view = self.views.current();
            self.accept_and_prepare(now, seq, view, batch, out);
            let pp = Message::PrePrepare {
                view,
                seq,
                requests: candidates,
                time,
                seed,
            };
            // Ahead of the batch's sync once the view's record is durable (ahead.rs).
            let unsynced = self.pre_prepare_unsynced(seq);
            self.send_to_peers_as(&pp, unsynced, out);
            self.check_prepared(now, seq, out);
        }
    }

    /// Requests the primary can propose now, oldest first, at most a batch: vouched for by
    /// `n_auth - u` auth replicas and next in their client's sequence. Only their keys: the
    /// primary looks on every AUTH-REQ, and building every candidate's body and matrix each
    /// time made proposing quadratic in the number of waiting requests.
    fn ready_requests(&self) -> Vec<(ClientId, Digest)> {
        let tentative = self.tentative_last_ordered();
        self.pending.ready(
            |c| tentative.get(c),
            self.q().auth_gather(),
            self.cfg().batch_max,
            plumb_core::sabotaged!(SkipRequestSequenceCheck),
        )
    }

    // ---------------------------------------------------------------- pre-prepare

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_pre_prepare(
        &mut self,
        now: Micros,
        from: OrderId,
        view: View,
        seq: Seq,
        requests: Vec<SignedRequest>,
        time: Micros,
        seed: u64,
        out: &mut Vec<Action>,
    ) {
        if view != self.views.current()
            || !self.views.active()
            || from != self.primary()
            || from == self.me
        {
            self.counters.dropped(DropReason::PrePrepareView);
            return;
        }
        if seq <= self.state.seq {
            return;
        }
        if self.behind_checkpoint() {
            self.counters
                .dropped(DropReason::PrePrepareBehindCheckpoint);
            return;
        }
        if seq > self.window_top() {
            self.counters.dropped(DropReason::BeyondWindow);
            return;
        }
        let batch = Batch::proposed(&requests, time, seed);
        if seq <= self.log.accepted_upto() {
            let same = self
                .log
                .get(seq)
                .and_then(|s| s.accepted_digest(seq))
                .is_some_and(|(v, d)| v == view && d == batch.digest(seq));
            if !same {
                // Two different pre-prepares for one (view, seq): a provable commission failure.
                self.counters.add("primary-equivocated");
                self.suspect(now, ViewChangeCause::Commission, out);
            }
            return;
        }
        if seq > self.log.accepted_upto() + 1 {
            let early = EarlyPrePrepare {
                requests,
                time,
                seed,
            };
            self.log.keep_early(seq, early);
            return;
        }
        if let Err(reason) = self.validate(seq, &requests) {
            self.counters.add(reason);
            self.suspect(now, ViewChangeCause::Commission, out);
            return;
        }
        if !self.time_in_bound(now, time) {
            // Either the primary bends time or our own clock (or a pre-prepare that waited
            // for its predecessor) is off: only peers can tell. No suspicion here: if the
            // primary is at fault every correct backup holds its batch, nothing is ordered,
            // and the progress monitor replaces it.
            self.counters.add("batch-time-out-of-bound");
            self.log.hold_for_time(HeldForTime {
                from,
                view,
                seq,
                requests,
                time,
                seed,
            });
            self.check_time_vouched(now, out);
            return;
        }
        self.take_pre_prepare(now, from, view, seq, batch, out);
    }

    /// Accept the next pre-prepare, found valid: PREPARE it, then go on to the next one if it
    /// came early.
    fn take_pre_prepare(
        &mut self,
        now: Micros,
        from: OrderId,
        view: View,
        seq: Seq,
        batch: Batch,
        out: &mut Vec<Action>,
    ) {
        debug_assert_eq!(seq, self.log.accepted_upto() + 1);
        let clients: Vec<(ClientId, ReqNo)> =
            batch.requests.iter().map(|r| (r.client, r.nc)).collect();
        self.accept_and_prepare(now, seq, view, batch, out);
        self.check_prepared(now, seq, out);
        self.on_valid_pre_prepare(now, &clients, out);
        if !self.views.active() || self.views.current() != view {
            return;
        }
        if let Some(e) = self.log.take_early(seq + 1) {
            self.on_pre_prepare(now, from, view, seq + 1, e.requests, e.time, e.seed, out);
        }
    }

    /// Whether a proposed batch time is within `max_clock_skew_us` of our clock, either side.
    /// Both sides matter: an upper bound alone let a faulty primary hold agreed time still
    /// while real time ran, then jump it ahead, expiring every session in one batch.
    fn time_in_bound(&self, now: Micros, time: Micros) -> bool {
        let skew = self.cfg().max_clock_skew_us;
        let above = time > now.saturating_add(skew);
        let below = time < now.saturating_sub(skew) && !plumb_core::sabotaged!(TimeUnboundedBelow);
        !above && !below
    }

    /// Take the held pre-prepare once `r + 1` peers PREPARE its digest in its view: at least
    /// one of them is correct and found its time within the bound of its own clock, so agreed
    /// time stays within `max_clock_skew_us` of a correct clock. Our clock is then what is off
    /// (counted, so an operator sees it), or the pre-prepare reached us late; either way we
    /// must not withhold our vote and wedge a cluster that is one vote short.
    pub(crate) fn check_time_vouched(&mut self, now: Micros, out: &mut Vec<Action>) {
        let accepted_upto = self.log.accepted_upto();
        let Some(h) = self.log.held_for_time() else {
            return;
        };
        if h.view != self.views.current() || h.seq <= accepted_upto {
            self.log.take_held_for_time();
            return;
        }
        if h.seq != accepted_upto + 1 {
            return;
        }
        let batch = Batch::proposed(&h.requests, h.time, h.seed);
        let d = batch.digest(h.seq);
        let vouched = self.log.get(h.seq).map_or(0, |slot| {
            if slot.votes_view != h.view {
                return 0;
            }
            let me = self.me;
            slot.prepares
                .iter()
                .filter(|(j, x)| **j != me && **x == d)
                .count()
        });
        if vouched < self.q().small() {
            return;
        }
        let Some(h) = self.log.take_held_for_time() else {
            return;
        };
        self.counters.add("batch-time-vouched-by-peers");
        self.take_pre_prepare(now, h.from, h.view, h.seq, batch, out);
    }

    /// Well-formedness of a proposed batch (seed 004 §6.2.1): a failure is the primary's fault.
    /// The batch time is judged apart (`time_in_bound`): our clock may be what is wrong.
    fn validate(&self, seq: Seq, requests: &[SignedRequest]) -> Result<(), &'static str> {
        let _ = seq;
        // An empty batch is a null batch: primaries fill idle time with them while a peer
        // rejoins (rejoin.rs). It costs a sequence number and changes no state.
        if requests.len() > self.cfg().batch_max {
            return Err("bad-batch-size");
        }
        let tentative = self.tentative_last_ordered();
        let mut clients = BTreeSet::new();
        for r in requests {
            let c = r.core.client;
            if !clients.insert(c) {
                return Err("bad-batch-duplicate-client");
            }
            if r.core.nc != tentative.get(c).next()
                && !plumb_core::sabotaged!(SkipRequestSequenceCheck)
            {
                return Err("bad-batch-sequence");
            }
            if !self.matrix_valid(r) {
                return Err("bad-batch-matrix");
            }
        }
        Ok(())
    }

    /// At least r+1 rows from distinct auth replicas carry a valid MAC for this replica.
    fn matrix_valid(&self, r: &SignedRequest) -> bool {
        let id = self
            .pending
            .known_id(&r.core)
            .unwrap_or_else(|| r.core.id_digest());
        let mut valid = BTreeSet::new();
        for row in &r.matrix {
            if row.auth.index() >= self.q().auth || row.macs.len() != self.q().order {
                continue;
            }
            let Some(mac) = row.macs.get(self.me.index()) else {
                continue;
            };
            if self
                .ctx
                .keys
                .verify_from(Principal::Auth(row.auth), &id.0, mac)
            {
                valid.insert(row.auth);
            }
        }
        valid.len() >= self.q().matrix_valid()
    }

    /// Accept `batch` at `(view, seq)`: persist, then PREPARE. The primary votes with a
    /// PREPARE too, not with its PRE-PREPARE: that may leave before the batch is on its disk
    /// (ahead.rs), and a vote a prepared certificate counts must come from a replica that
    /// still holds the batch after a restart, or the view change can lose sight of a prepared
    /// batch (docs/protocol.md, "Pre-prepares ahead of the disk").
    pub(crate) fn accept_and_prepare(
        &mut self,
        now: Micros,
        seq: Seq,
        view: View,
        batch: Batch,
        out: &mut Vec<Action>,
    ) {
        let me = self.me;
        let slot = self.log.entry(seq);
        let d = slot.accept(seq, view, batch);
        slot.accepted_at = now;
        slot.prepares.insert(me, d);
        let record = plumb_core::storage::encode(&slot.record);
        self.log.accepted_through(seq);
        self.put(slot_key(seq), record, out);
        self.sync(out);
        self.send_to_peers(
            &Message::Prepare {
                view,
                seq,
                digest: d,
            },
            out,
        );
    }

    // ---------------------------------------------------------------- votes

    pub(crate) fn on_prepare(
        &mut self,
        now: Micros,
        j: OrderId,
        view: View,
        seq: Seq,
        d: Digest,
        out: &mut Vec<Action>,
    ) {
        if !self.vote_in_range(view, seq) {
            return;
        }
        self.log.entry(seq).prepare_vote(view, j, d);
        self.check_time_vouched(now, out);
        self.check_prepared(now, seq, out);
    }

    pub(crate) fn on_commit(
        &mut self,
        now: Micros,
        j: OrderId,
        view: View,
        seq: Seq,
        d: Digest,
        out: &mut Vec<Action>,
    ) {
        if !self.vote_in_range(view, seq) {
            return;
        }
        self.log.entry(seq).commit_vote(view, j, d);
        // The COMMIT counts as its sender's PREPARE too (`Slot::commit_vote`).
        self.check_time_vouched(now, out);
        self.check_prepared(now, seq, out);
        self.check_committed(now, seq, out);
    }

    fn vote_in_range(&mut self, view: View, seq: Seq) -> bool {
        if view != self.views.current() || !self.views.active() {
            self.counters.dropped(DropReason::VoteView);
            return false;
        }
        // Above the stable checkpoint, not above what we committed: after a view change we vote
        // again on slots we committed before, for peers that did not.
        if seq <= self.checkpoints.stable().seq {
            return false;
        }
        if seq > self.window_top() {
            // The voter's checkpoint is stable and ours is not yet: its vote is lost to us
            // until it says it again.
            self.counters.dropped(DropReason::VoteBeyondWindow);
            return false;
        }
        true
    }

    /// Our COMMIT for a slot we committed in the current view, for a peer that lost some: once
    /// committed we would never say it again otherwise.
    pub(crate) fn repeat_commit(&self, j: OrderId, seq: Seq, out: &mut Vec<Action>) {
        let view = self.views.current();
        let Some(slot) = self.log.get(seq) else {
            return;
        };
        let Some((v, d)) = slot.accepted_digest(seq) else {
            return;
        };
        if self.views.active() && v == view && slot.sent_commit {
            self.send(
                Principal::Order(j),
                &Message::Commit {
                    view,
                    seq,
                    digest: d,
                },
                out,
            );
        }
    }

    pub(crate) fn medium(&self) -> usize {
        let m = self.q().order_medium();
        if plumb_core::sabotaged!(CommitQuorumMinusOne) {
            m.saturating_sub(1).max(1)
        } else {
            m
        }
    }

    pub(crate) fn check_prepared(&mut self, now: Micros, seq: Seq, out: &mut Vec<Action>) {
        let medium = self.medium();
        let view = self.views.current();
        let tentative_agreement = self.cfg().tentative_agreement;
        let Some(slot) = self.log.get_mut(seq) else {
            return;
        };
        let Some((v, d)) = slot.accepted_digest(seq) else {
            return;
        };
        if v != view || slot.sent_commit || Slot::count(&slot.prepares, &d) < medium {
            return;
        }
        slot.sent_commit = true;
        slot.record.prepared = slot.record.accepted().cloned();
        slot.commits.insert(self.me, d);
        let record = plumb_core::storage::encode(&slot.record);
        // Tentative agreement: the prepared certificate is on the disk once the sync below
        // completes, and the TENTATIVE-BATCH waits behind it like the COMMIT.
        let tentative = slot
            .record
            .prepared
            .as_ref()
            .filter(|_| tentative_agreement)
            .map(|(_, b)| b.clone());
        if tentative.is_some() {
            slot.tentative_sent_in = Some(view);
        }
        self.note_prepared(seq);
        self.put(slot_key(seq), record, out);
        self.sync(out);
        self.send_to_peers(
            &Message::Commit {
                view,
                seq,
                digest: d,
            },
            out,
        );
        if let Some(batch) = tentative {
            self.send_to_exec(&Message::TentativeBatch { view, seq, batch }, out);
        }
        self.check_committed(now, seq, out);
    }

    pub(crate) fn check_committed(&mut self, now: Micros, seq: Seq, out: &mut Vec<Action>) {
        let medium = self.medium();
        let Some(slot) = self.log.get_mut(seq) else {
            return;
        };
        if slot.record.committed.is_some() {
            return;
        }
        let Some((v, d)) = slot.accepted_digest(seq) else {
            return;
        };
        if Slot::count(&slot.commits, &d) < medium {
            return;
        }
        slot.committed_in = Some(v);
        slot.record.committed = slot.record.accepted().map(|(_, b)| b.clone());
        let record = plumb_core::storage::encode(&slot.record);
        self.put(slot_key(seq), record, out);
        self.apply_committed(now, out);
    }

    /// Apply committed batches in sequence order and hand each to the execution stage.
    pub(crate) fn apply_committed(&mut self, now: Micros, out: &mut Vec<Action>) {
        if self.behind_checkpoint() {
            return;
        }
        let mut progressed = false;
        let mut applied_requests = 0;
        loop {
            let seq = self.state.seq + 1;
            let Some(slot) = self.log.get(seq) else {
                break;
            };
            let Some(batch) = slot.record.committed.clone() else {
                break;
            };
            // Committed here from the accepted pre-prepare (the usual way), the batch is the
            // accepted one, whose digest the slot keeps; from peers or the disk, it may not be.
            let digest = match slot.accepted_digest(seq) {
                Some((_, d)) if slot.record.accepted().is_some_and(|(_, a)| *a == batch) => d,
                _ => batch.digest(seq),
            };
            self.report_slow(now, seq, &batch, out);
            self.state.apply(seq, &batch, digest);
            progressed = true;
            applied_requests += batch.requests.len();
            let slot = self.log.get(seq);
            let carried = slot.is_some_and(|s| s.carried);
            // Sent tentatively in the view it committed in: every execution replica has it
            // from us already, and one that cannot gather the tentative quorum (a peer caught
            // up without preparing it) asks with LAST-EXEC, answered with committed ones.
            let sent_tentatively = slot
                .is_some_and(|s| s.committed_in.is_some() && s.tentative_sent_in == s.committed_in);
            out.push(Action::Observe(Observation::Committed {
                seq,
                view: slot.and_then(|s| s.committed_in),
                digest,
                carried,
            }));
            if sent_tentatively {
                self.counters.add("next-batch-sent-tentatively");
            } else {
                self.send_to_exec(
                    &Message::NextBatch {
                        view: self.views.current(),
                        seq,
                        batch,
                    },
                    out,
                );
            }
            if seq.is_multiple_of(self.cfg().checkpoint_interval) {
                self.checkpoints.snapshot(seq, self.state.clone());
                self.finish_checkpoint(now, seq, out);
            }
        }
        if progressed {
            self.watch.last_progress = now;
            self.views.progressed();
            self.log.accepted_through(self.state.seq);
            self.proposer.applied_through(self.state.seq);
            let last_ordered = &self.state.last_ordered;
            self.pending
                .drop_ordered(|c| last_ordered.get(&c).copied().unwrap_or(ReqNo::NONE));
            self.catch_up.applied_through(self.state.seq);
            self.try_propose(now, out);
            self.on_applied(now, applied_requests, out);
        }
    }

    /// Requests of a committed batch that waited here longer than `slow_request_us` since they
    /// became pending, with the reason: a view change began meanwhile, this replica caught up
    /// from peers, or else whichever took most of the wait: the primary's PRE-PREPARE, or the
    /// PREPARE and COMMIT votes after it.
    fn report_slow(&self, now: Micros, seq: Seq, batch: &Batch, out: &mut Vec<Action>) {
        let accepted_at = self.log.get(seq).map(|s| s.accepted_at);
        for r in &batch.requests {
            let Some(since) = self.pending.pending_since(r.client, r.nc) else {
                continue;
            };
            let waited = now.saturating_sub(since);
            if waited <= self.cfg().slow_request_us {
                continue;
            }
            let reason = if self.monitor_view_since() > since {
                WaitReason::ViewChange
            } else if self.catch_up.caught_up_after(since) {
                WaitReason::CatchUp
            } else if self.catch_up.resent_after(since) {
                WaitReason::Resend
            } else if accepted_at.is_some_and(|a| a.saturating_sub(since) > waited / 2) {
                WaitReason::Proposal
            } else {
                WaitReason::Votes
            };
            out.push(Action::Observe(Observation::SlowRequest(SlowRequest {
                stage: StallStage::Order,
                client: r.client,
                nc: r.nc,
                waited,
                reason,
                view: self.views.current(),
            })));
        }
    }

    /// A tick found no progress: count what the next slot waits for (`stall-*` events), so
    /// an operator can tell a lost vote from a primary held back by its window.
    pub(crate) fn count_stall(&mut self) {
        let next = self.state.seq + 1;
        let medium = self.medium();
        let what = if self.behind_checkpoint() {
            "stall-behind-checkpoint"
        } else {
            match self.log.get(next) {
                Some(slot) if slot.record.committed.is_some() => "stall-committed-unapplied",
                Some(slot) => match slot.accepted_digest(next) {
                    Some((v, _)) if v != self.views.current() => "stall-old-view",
                    Some((_, d))
                        if Slot::count(&slot.prepares, &d) < medium && !slot.sent_commit =>
                    {
                        "stall-prepares"
                    }
                    Some(_) => "stall-commits",
                    None => "stall-pre-prepare",
                },
                None if self.primary() == self.me && self.proposer.next() > self.window_top() => {
                    "stall-window-full"
                }
                None if self.oldest_pending().is_some() => "stall-pre-prepare",
                None => return,
            }
        };
        self.counters.add(what);
    }

    /// Messages get lost: while stalled, say again what we said about unfinished slots.
    pub(crate) fn resend_agreement(&mut self, out: &mut Vec<Action>) {
        let view = self.views.current();
        let primary = self.primary();
        let mut msgs = Vec::new();
        for (seq, slot) in self.log.accepted_unapplied(self.state.seq) {
            if slot.record.committed.is_some() {
                continue;
            }
            let (Some((v, b)), Some((_, d))) = (slot.record.accepted(), slot.accepted_digest(*seq))
            else {
                continue;
            };
            if *v != view {
                continue;
            }
            if primary == self.me {
                // Backups need the matrix rows again; rebuild them from collected AUTH-REQs
                // where we still have them, else resend the commit-path votes only.
                if let Some(requests) = self.pending.signed_for(b) {
                    msgs.push(Message::PrePrepare {
                        view,
                        seq: *seq,
                        requests,
                        time: b.time,
                        seed: b.seed,
                    });
                }
            }
            msgs.push(Message::Prepare {
                view,
                seq: *seq,
                digest: d,
            });
            if slot.sent_commit {
                msgs.push(Message::Commit {
                    view,
                    seq: *seq,
                    digest: d,
                });
            }
        }
        for m in msgs {
            self.send_to_peers(&m, out);
        }
    }
}

/// The last request number ordered per client, counting batches accepted but not yet
/// committed: what the next request of each client must follow.
pub(crate) struct Tentative<'a> {
    ordered: &'a BTreeMap<ClientId, ReqNo>,
    in_flight: BTreeMap<ClientId, ReqNo>,
}

impl Tentative<'_> {
    pub(crate) fn get(&self, c: ClientId) -> ReqNo {
        let ordered = self.ordered.get(&c).copied().unwrap_or(ReqNo::NONE);
        self.in_flight.get(&c).map_or(ordered, |&n| n.max(ordered))
    }
}
