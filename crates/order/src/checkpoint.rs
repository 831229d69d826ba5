//! Execution checkpoint tokens, order checkpoints and garbage collection, catch-up of lagging
//! order replicas, order-state transfer, and the LAST-EXEC / LOAD-CP link to execution.

pub(crate) use crate::checkpoints::StateFetch;
use crate::checkpoints::{PeerVote, TokenVote, Verdict};
use crate::exec_reports::ReportVote;
use crate::slot::slot_key;
use crate::state::OrderState;
use crate::OrderReplica;
use plumb_core::{Action, DropReason, Micros, Observation, StoreOp};
use plumb_crypto::Digest;
use plumb_wire::{
    Batch, BatchReport, ExecId, Message, OrderId, Principal, ReqNo, Seq, EXEC_REPORTS_MAX,
};
use serde::{Deserialize, Serialize};

/// Durable record of the stable checkpoint.
#[derive(Serialize, Deserialize)]
pub(crate) struct StableRecord {
    pub seq: Seq,
    pub state: Vec<u8>,
}

pub(crate) const STABLE_KEY: &str = "order/stable";

pub(crate) fn checkpoint_key(seq: Seq) -> String {
    format!("order/cp/{seq:020}")
}

pub(crate) fn token_key(seq: Seq) -> String {
    format!("order/token/{seq:020}")
}

/// Catch-up ticks a stalled replica asks for committed batches before it fetches a checkpoint
/// that is vouched for but not stable here (`catch_up_tick`).
const FETCH_BATCHES_FOR: u64 = 4;

impl OrderReplica {
    // ---------------------------------------------------------------- execution tokens

    pub(crate) fn on_cp_token(
        &mut self,
        now: Micros,
        e: ExecId,
        seq: Seq,
        token: Digest,
        out: &mut Vec<Action>,
    ) {
        if !seq.is_multiple_of(self.cfg().checkpoint_interval) {
            return;
        }
        let (stable, interval) = (
            self.checkpoints.stable().seq,
            self.cfg().checkpoint_interval,
        );
        if let Some(z) = self.sleepers.as_mut() {
            z.token(e, seq, token, (stable, interval));
            self.wake_sleepers(now, out);
        }
        // Learned already (kept from the stable checkpoint on): a late token that differs
        // is a divergent replica.
        if let Some(agreed) = self.checkpoints.learned_token(seq) {
            self.check_exec_token(now, e, seq, agreed, token, out);
            return;
        }
        // Indirect learning (seed 004 §6.1): max(u,r)+1 matching tokens mean the checkpoint is
        // right (one correct replica made it) and fetchable (one correct replica holds it).
        let quorum = self.q().exec_checkpoint();
        let TokenVote::Learned(others) = self.checkpoints.vote_exec_token(seq, e, token, quorum)
        else {
            return;
        };
        // In replica order: what a stage sends must not depend on a hash map's iteration.
        for (other, reported) in others {
            self.check_exec_token(now, other, seq, token, reported, out);
        }
        self.put(token_key(seq), token.0.to_vec(), out);
        self.sync(out);
        self.finish_checkpoint(now, seq, out);
    }

    /// EXEC-REPORT: record each report (exec_reports.rs); `r + 1` matching ones make a batch's
    /// report agreed, and a report that differs from it names a faulty execution replica.
    pub(crate) fn on_exec_report(
        &mut self,
        now: Micros,
        e: ExecId,
        reports: Vec<BatchReport>,
        out: &mut Vec<Action>,
    ) {
        if reports.len() > EXEC_REPORTS_MAX {
            self.counters.dropped(DropReason::ExecReportTooMany);
            return;
        }
        let stable = self.checkpoints.stable().seq;
        let interval = self.cfg().checkpoint_interval;
        // One correct replica among those agreeing: `r + 1`.
        let quorum = if plumb_core::sabotaged!(ReportQuorumOne) {
            1
        } else {
            self.q().small()
        };
        for report in reports {
            if let Some(z) = self.sleepers.as_mut() {
                z.reported(now, e, report, (stable, interval));
            }
            match self
                .checkpoints
                .reports
                .record(e, report, stable, interval, quorum)
            {
                ReportVote::Ignored => self.counters.add("exec-report-outside-window"),
                ReportVote::Counted | ReportVote::Matches => {}
                ReportVote::Agreed(report, dissent) => {
                    self.counters.add("exec-report-agreed");
                    self.counters
                        .add_n("exec-report-differs", dissent.len() as u64);
                    out.push(Action::Observe(Observation::ExecReportAgreed(report)));
                    for d in dissent {
                        self.exec_found_faulty(d, out);
                    }
                }
                ReportVote::Differs => {
                    self.counters.add("exec-report-differs");
                    self.exec_found_faulty(e, out);
                }
            }
        }
        self.wake_sleepers(now, out);
    }

    /// Once batch `seq` is applied and its execution token learned, the order checkpoint at
    /// `seq` exists: persist it, then announce its digest.
    pub(crate) fn finish_checkpoint(&mut self, now: Micros, seq: Seq, out: &mut Vec<Action>) {
        let Some((digest, bytes)) = self.checkpoints.finish(seq) else {
            return;
        };
        self.put(checkpoint_key(seq), bytes, out);
        self.sync(out);
        if self.rejoins.own.is_some() {
            // A rejoining replica casts no checkpoint vote, not even for itself: the fence is
            // passed on n - u votes of others.
            self.check_stable(now, seq, out);
            return;
        }
        self.send_to_peers(&Message::Checkpoint { seq, digest }, out);
        self.checkpoints.vote(self.me, seq, digest);
        self.check_stable(now, seq, out);
    }

    // ---------------------------------------------------------------- order checkpoints

    pub(crate) fn on_checkpoint(
        &mut self,
        now: Micros,
        j: OrderId,
        seq: Seq,
        digest: Digest,
        out: &mut Vec<Action>,
    ) {
        match self.checkpoints.peer_vote(j, seq, digest) {
            PeerVote::Ignored => {}
            PeerVote::FarStale => self.counters.dropped(DropReason::CheckpointFarStale),
            PeerVote::Counted => self.check_stable(now, seq, out),
        }
    }

    /// A checkpoint is stable once n-u replicas report the same digest. If it is ahead of what
    /// this replica has applied, fetch the state it describes from a peer.
    pub(crate) fn check_stable(&mut self, now: Micros, seq: Seq, out: &mut Vec<Action>) {
        match self.checkpoints.verdict(seq, self.q().order_medium()) {
            Verdict::NotYet => {}
            Verdict::Ours(digest, bytes) => self.make_stable(now, seq, digest, bytes, out),
            Verdict::Diverged => self.counters.add("checkpoint-diverged"),
            // Behind it, or our own execution token never arrived: take the state from a peer.
            // Always chase the newest stable checkpoint: peers discard older ones, so a fetch
            // for one they moved past would never be answered.
            Verdict::Missing(digest) => {
                if self.checkpoints.chase(seq, digest, StateFetch::Stable) {
                    self.send_to_peers(&Message::FetchOrderState { seq }, out);
                }
            }
        }
    }

    /// Garbage-collect everything the stable checkpoint at `seq` makes obsolete.
    pub(crate) fn make_stable(
        &mut self,
        now: Micros,
        seq: Seq,
        digest: Digest,
        bytes: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let Some(state) = OrderState::decode(&bytes) else {
            self.counters.add("checkpoint-undecodable");
            return;
        };
        let record = plumb_core::storage::encode(&StableRecord {
            seq,
            state: bytes.clone(),
        });
        self.put(STABLE_KEY.to_string(), record, out);
        self.sync(out);
        if self.log.accepted_upto() >= self.window_top() {
            // The primary could propose nothing until now: its heartbeat starts here.
            self.monitor_window_reopened(now);
        }
        for s in self.log.forget_through(seq) {
            out.push(Action::Store(StoreOp::Delete { key: slot_key(s) }));
        }
        let exec_token = state.exec_token;
        let obsolete = self.checkpoints.advance(seq, digest, bytes, exec_token);
        for s in obsolete.checkpoints {
            out.push(Action::Store(StoreOp::Delete {
                key: checkpoint_key(s),
            }));
        }
        for s in obsolete.tokens {
            out.push(Action::Store(StoreOp::Delete { key: token_key(s) }));
        }
        if let Some(old) = obsolete.previous {
            out.push(Action::Store(StoreOp::Delete {
                key: checkpoint_key(old),
            }));
        }
        self.adopt_state(seq, state);
        self.proposer.note_window_moved();
        out.push(Action::Observe(Observation::StableCheckpoint { seq }));
    }

    /// Take the order state at `seq` if it is ahead of ours: a state we did not compute
    /// ourselves, checked against a digest `r + 1` replicas vouched for.
    fn adopt_state(&mut self, seq: Seq, state: OrderState) {
        if state.seq <= self.state.seq {
            return;
        }
        debug_assert_eq!(
            state.seq, seq,
            "a checkpoint's state is the state at its seq"
        );
        self.state = state;
        self.log.accepted_through(seq);
        self.proposer.applied_through(seq);
        self.catch_up.applied_through(seq);
        let last_ordered = &self.state.last_ordered;
        self.pending
            .drop_ordered(|c| last_ordered.get(&c).copied().unwrap_or(ReqNo::NONE));
    }

    /// Take a checkpoint that `r + 1` peers vouch for but that is not stable here, and hold it
    /// as our own: it is right (one of them is correct), and our vote for it may be the one
    /// that makes it stable (`n - u` replicas now hold it). Without this a replica that came
    /// back behind a checkpoint whose third voter then died could never catch up, and a cluster
    /// that needed its votes stalled for ever (sim seed 2796, u=1 r=1, at ce99fcf).
    fn adopt_checkpoint(
        &mut self,
        now: Micros,
        seq: Seq,
        digest: Digest,
        bytes: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let Some(state) = OrderState::decode(&bytes) else {
            self.counters.add("checkpoint-undecodable");
            return;
        };
        self.counters.add("checkpoint-adopted");
        self.put(checkpoint_key(seq), bytes.clone(), out);
        self.sync(out);
        let exec_token = state.exec_token;
        self.adopt_state(seq, state);
        self.checkpoints.adopt(seq, digest, bytes, exec_token);
        self.send_to_peers(&Message::Checkpoint { seq, digest }, out);
        self.checkpoints.vote(self.me, seq, digest);
        self.check_stable(now, seq, out);
    }

    /// The newest checkpoint ahead of what we applied that `r + 1` peers vouch for with one
    /// digest (their votes, not ours).
    fn vouched_checkpoint_ahead(&self) -> Option<(Seq, Digest)> {
        self.checkpoints
            .vouched_ahead(self.state.seq, self.me, self.q().small())
    }

    // ---------------------------------------------------------------- state transfer

    pub(crate) fn on_fetch_order_state(&mut self, j: OrderId, seq: Seq, out: &mut Vec<Action>) {
        if let Some(state) = self.checkpoints.state_bytes(seq) {
            self.send(
                Principal::Order(j),
                &Message::OrderState { seq, state },
                out,
            );
        }
    }

    pub(crate) fn on_order_state(
        &mut self,
        now: Micros,
        seq: Seq,
        state: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let (digest, why) = match self.checkpoints.arrived(seq, &state) {
            None => return,
            Some(Err(())) => {
                self.counters.dropped(DropReason::OrderStateMismatch);
                return;
            }
            Some(Ok(awaited)) => awaited,
        };
        self.catch_up.caught_up(now);
        if seq > self.checkpoints.stable().seq {
            match why {
                StateFetch::Stable => self.make_stable(now, seq, digest, state, out),
                StateFetch::Vouched => self.adopt_checkpoint(now, seq, digest, state, out),
            }
        }
        self.apply_committed(now, out);
        if self.views.active() {
            self.check_all_prepared(now, out);
        }
    }

    pub(crate) fn check_all_prepared(&mut self, now: Micros, out: &mut Vec<Action>) {
        let seqs: Vec<Seq> = self
            .log
            .range(self.state.seq + 1..)
            .map(|(s, _)| *s)
            .collect();
        for s in seqs {
            self.check_prepared(now, s, out);
            self.check_committed(now, s, out);
        }
    }

    // ---------------------------------------------------------------- catch-up among order replicas

    /// While stalled with evidence of being behind, ask peers for committed batches (and, through
    /// their Checkpoint answers, for a stable checkpoint to transfer).
    pub(crate) fn catch_up_tick(&mut self, now: Micros, out: &mut Vec<Action>) {
        // Stalled behind a checkpoint that r+1 peers vouch for, for longer than fetching the
        // batches takes: fetch the checkpoint, whether or not it is stable here (the voter that
        // would make it so may be down; ours may be the vote missing). Batches first, because
        // a replica that has them also forwards them to execution; peers hold none below their
        // stable checkpoint, though. A rejoining replica waits for n - u votes of others.
        let fetching_batches_failed =
            now >= self.watch.last_progress + FETCH_BATCHES_FOR * self.cfg().catch_up_us;
        if self.rejoins.own.is_none() && fetching_batches_failed {
            if let Some((seq, digest)) = self.vouched_checkpoint_ahead() {
                self.checkpoints.chase(seq, digest, StateFetch::Vouched);
            }
        }
        if let Some((seq, _, _)) = self.checkpoints.awaiting() {
            self.send_to_peers(&Message::FetchOrderState { seq }, out);
            return;
        }
        let ahead_votes = self
            .log
            .range(self.state.seq + 1..)
            .any(|(_, s)| !s.commits.is_empty() || s.record.committed.is_some());
        let ahead_checkpoints = self.checkpoints.votes_above(self.state.seq);
        if ahead_votes
            || ahead_checkpoints
            || !self.views.active()
            || self.catch_up.heard_beyond(self.state.seq)
        {
            self.send_to_peers(
                &Message::FetchCommitted {
                    from: self.state.seq + 1,
                },
                out,
            );
        }
    }

    pub(crate) fn on_fetch_committed(&mut self, j: OrderId, from: Seq, out: &mut Vec<Action>) {
        let to = Principal::Order(j);
        let stable = self.checkpoints.stable();
        let (stable, digest) = (stable.seq, stable.digest);
        if from <= stable && stable > Seq::ZERO {
            self.send(
                to,
                &Message::Checkpoint {
                    seq: stable,
                    digest,
                },
                out,
            );
        }
        let start = from.max(stable + 1);
        let end = self
            .state
            .seq
            .min(start + 2 * self.cfg().checkpoint_interval);
        for s in start.through(end) {
            if let Some(batch) = self.log.get(s).and_then(|x| x.record.committed.clone()) {
                self.send(to, &Message::Committed { seq: s, batch }, out);
                // r+1 Committed answers may not exist (faulty or lagging peers), but our votes
                // in this view let the peer finish the agreement itself.
                self.repeat_commit(j, s, out);
            }
        }
    }

    pub(crate) fn on_committed(
        &mut self,
        now: Micros,
        j: OrderId,
        seq: Seq,
        batch: Batch,
        out: &mut Vec<Action>,
    ) {
        if seq <= self.state.seq || seq > self.window_top() {
            return;
        }
        // r+1 replicas saying "committed" include a correct one: the batch is the committed one.
        let Some(b) = self
            .catch_up
            .committed_answer(j, seq, batch, self.q().small())
        else {
            return;
        };
        let slot = self.log.entry(seq);
        if slot.record.committed.is_none() {
            slot.record.committed = Some(b);
            let record = plumb_core::storage::encode(&slot.record);
            self.put(slot_key(seq), record, out);
            self.catch_up.caught_up(now);
        }
        self.apply_committed(now, out);
    }

    // ---------------------------------------------------------------- execution stage link

    /// LAST-EXEC: resend committed batches from `next` (OL3), or tell the replica to load the
    /// stable checkpoint when we no longer hold them (OL4).
    pub(crate) fn on_last_exec(
        &mut self,
        now: Micros,
        e: ExecId,
        next: Seq,
        out: &mut Vec<Action>,
    ) {
        if !self
            .catch_up
            .exec_due(e, now, self.cfg().catch_up_us / 2, next)
        {
            return;
        }
        let to = Principal::Exec(e);
        let stable = self.checkpoints.stable();
        if next <= stable.seq && stable.seq > Seq::ZERO {
            self.catch_up.exec_answered(e, now, Some(stable.seq));
            let msg = Message::LoadCp {
                seq: stable.seq,
                token: stable.exec_token,
            };
            self.counters.add("load-cp-sent");
            self.send(to, &msg, out);
            return;
        }
        let end = self
            .state
            .seq
            .min(next + 2 * self.cfg().checkpoint_interval);
        self.catch_up.exec_answered(e, now, None);
        for s in next.through(end) {
            if let Some(batch) = self.log.get(s).and_then(|x| x.record.committed.clone()) {
                self.send(
                    to,
                    &Message::NextBatch {
                        view: self.views.current(),
                        seq: s,
                        batch,
                    },
                    out,
                );
            }
        }
    }
}
