//! Loading checkpoints (EL5) and state transfer between execution replicas (seed 004 §6.3.2,
//! Figure 6.6, Table 6.3).
//!
//! A LOAD-CP is acted on once `r + 1` order replicas name the same (seq, token): one of them
//! is correct, so the token is that of a checkpoint the order stage learned from
//! `max(u,r) + 1` execution replicas, at least one correct one of which holds it. Whatever a
//! peer sends is checked against that token before it is loaded.

use crate::checkpoint::ExecCheckpoint;
use crate::{ExecReplica, Held};
use plumb_app::{Application, LoadError};
use plumb_core::{Action, BrokenInvariant, DropReason, Micros, Observation};
use plumb_crypto::Digest;
use plumb_wire::{ExecId, Message, OrderId, Principal, Seq};
use std::collections::{BTreeMap, BTreeSet};

/// The checkpoints an execution replica holds and the loading of one: LOAD-CP votes, the load
/// in progress and when the last one finished. [`Transfer::check_invariants`] states what the
/// rest of the stage relies on.
#[derive(Debug, Default)]
pub(crate) struct Transfer {
    /// Checkpoints held (on disk and in memory), to load or to serve to peers.
    pub(crate) held: BTreeMap<Seq, Held>,
    /// Trees of checkpoints no longer held, freed a few nodes after each batch
    /// ([`RETIRED_FREED_PER_BATCH`]) instead of all at once inside the next checkpoint's step.
    pub(crate) retired: plumb_objects::Retired,
    /// Each order replica's latest LOAD-CP.
    pub(crate) load_votes: BTreeMap<OrderId, (Seq, Digest)>,
    pub(crate) loading: Option<Loading>,
    /// When this replica last finished loading a checkpoint (state transfer): a batch slow
    /// across it waited for the load.
    pub(crate) loaded_at: Micros,
}

impl Transfer {
    /// With `next_seq` the next batch to execute:
    /// - INV-held-checkpoints-executed: every checkpoint held is of a batch already executed
    ///   (`seq < next_seq`): a checkpoint is taken after its batch, loaded or recovered with
    ///   `next_seq` set past it, and a roll-back drops the checkpoints it passes back over.
    /// - INV-load-votes-of-order-replicas: at most one LOAD-CP is kept per order replica, from
    ///   an order replica index (`order` replicas).
    pub(crate) fn check_invariants(
        &self,
        next_seq: Seq,
        order: usize,
    ) -> Result<(), BrokenInvariant> {
        let ahead = self.held.range(next_seq..).next().map(|(seq, _)| *seq);
        BrokenInvariant::check(ahead.is_none(), "INV-held-checkpoints-executed", || {
            format!("holds a checkpoint at {ahead:?} but the next batch to execute is {next_seq}")
        })?;
        let stranger = self.load_votes.keys().find(|o| o.index() >= order);
        BrokenInvariant::check(
            stranger.is_none(),
            "INV-load-votes-of-order-replicas",
            || format!("keeps a LOAD-CP of order replica {stranger:?} among {order}"),
        )
    }
}

/// A checkpoint load in progress.
#[derive(Debug)]
pub(crate) struct Loading {
    pub(crate) seq: Seq,
    pub(crate) token: Digest,
    /// The verified checkpoint, once we have it (bytes kept to persist after the load).
    pub(crate) fetched: Option<(ExecCheckpoint, Vec<u8>)>,
    /// Application state the checkpoint needs that we are fetching from peers.
    missing: BTreeSet<Digest>,
    /// For an application with objects: the object-level transfer (object_transfer.rs).
    pub(crate) objects: Option<crate::object_transfer::ObjectLoad>,
    /// The peer whose copy of the checkpoint verified: alive a moment ago, so the first one
    /// asked for its objects (the next peer in turn may be the replica whose crash woke this
    /// one, and cost a catch-up period without an answer).
    pub(crate) from: Option<ExecId>,
}

impl Loading {
    pub(crate) fn new(seq: Seq, token: Digest) -> Loading {
        Loading {
            seq,
            token,
            fetched: None,
            missing: BTreeSet::new(),
            objects: None,
            from: None,
        }
    }
}

impl<A: Application> ExecReplica<A> {
    pub(crate) fn on_load_cp(
        &mut self,
        o: OrderId,
        seq: Seq,
        token: Digest,
        out: &mut Vec<Action>,
    ) {
        self.counters.add("load-cp-received");
        self.transfer.load_votes.insert(o, (seq, token));
        let votes = self
            .transfer
            .load_votes
            .values()
            .filter(|v| **v == (seq, token))
            .count();
        if seq < self.executed.next_seq {
            // Passed already: unless our own checkpoint there differs (divergence.rs).
            if votes < self.q().exec_learn() || !self.roll_back_if_diverged(seq, token, out) {
                self.counters.add("load-cp-not-behind");
            }
            return;
        }
        if votes < self.q().exec_learn() {
            return;
        }
        if self.transfer.loading.as_ref().is_some_and(|l| l.seq >= seq) {
            return;
        }
        self.transfer.loading = Some(Loading::new(seq, token));
        let local = self
            .transfer
            .held
            .get(&seq)
            .filter(|h| h.token == token)
            .cloned();
        match local.and_then(|h| ExecCheckpoint::decode(&h.bytes).map(|cp| (cp, h.bytes))) {
            Some((cp, bytes)) if cp.seq == seq => self.accept_checkpoint(cp, bytes, out),
            _ => self.request_transfer(out),
        }
    }

    /// Normal execution got past the checkpoint being loaded: loading it would go backwards.
    pub(crate) fn drop_overtaken_load(&mut self) {
        if self.rolling_back() {
            // Going backwards is the point of a roll-back (and execution waits for it).
            return;
        }
        if self
            .transfer
            .loading
            .as_ref()
            .is_some_and(|l| l.seq < self.executed.next_seq)
        {
            self.transfer.loading = None;
            self.counters.add("load-cp-overtaken");
        }
    }

    /// Ask peers for what the load in progress still lacks: the checkpoint itself, or pieces
    /// of application state. Re-sent on the catch-up timer.
    pub(crate) fn request_transfer(&mut self, out: &mut Vec<Action>) {
        let Some(loading) = &self.transfer.loading else {
            return;
        };
        if loading.fetched.is_some() && loading.objects.is_some() {
            self.request_object_transfer(out);
            return;
        }
        let msgs: Vec<Message> = if loading.fetched.is_none() {
            vec![Message::FetchExecCp { seq: loading.seq }]
        } else {
            loading
                .missing
                .iter()
                .map(|token| Message::FetchState { token: *token })
                .collect()
        };
        for msg in &msgs {
            self.send_to_exec_peers(msg, out);
        }
    }

    fn token_matches(&self, bytes: &[u8], token: Digest) -> bool {
        #[cfg(feature = "sabotage")]
        if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::UncheckedCheckpoint) {
            return true;
        }
        ExecCheckpoint::token(bytes) == token
    }

    /// EXEC-CP-STATE: the checkpoint we asked for, loaded only if it matches the token.
    pub(crate) fn on_exec_cp_state(
        &mut self,
        e: ExecId,
        seq: Seq,
        state: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let Some(loading) = &self.transfer.loading else {
            self.counters.dropped(DropReason::ExecCpUnrequested);
            return;
        };
        if loading.seq != seq || loading.fetched.is_some() {
            self.counters.dropped(DropReason::ExecCpUnrequested);
            return;
        }
        if !self.token_matches(&state, loading.token) {
            self.counters.dropped(DropReason::ExecCpBadToken);
            return;
        }
        match ExecCheckpoint::decode(&state) {
            Some(cp) if cp.seq == seq => {
                if let Some(loading) = self.transfer.loading.as_mut() {
                    loading.from = Some(e);
                }
                self.accept_checkpoint(cp, state, out)
            }
            _ => self.counters.dropped(DropReason::ExecCpMalformed),
        }
    }

    fn accept_checkpoint(&mut self, cp: ExecCheckpoint, bytes: Vec<u8>, out: &mut Vec<Action>) {
        if let Some(loading) = self.transfer.loading.as_mut() {
            loading.fetched = Some((cp, bytes));
            self.try_load(out);
        }
    }

    /// Hand the application its checkpoint; fetch the state it reports missing, or finish.
    fn try_load(&mut self, out: &mut Vec<Action>) {
        let Some(loading) = self.transfer.loading.as_mut() else {
            return;
        };
        let Some((cp, _)) = &loading.fetched else {
            return;
        };
        match (cp.objects, self.objects.is_some()) {
            (Some(root), true) => return self.start_object_load(root, out),
            (None, false) => {}
            _ => {
                // Whole checkpoints and object checkpoints do not mix: correct replicas run
                // the same application, so this one cannot be loaded here.
                self.counters.add("load-cp-mode-mismatch");
                loading.fetched = None;
                return;
            }
        }
        match self.app.load_checkpoint(&cp.app) {
            Ok(()) => {
                if let Some(Loading {
                    seq,
                    token,
                    fetched: Some((cp, bytes)),
                    ..
                }) = self.transfer.loading.take()
                {
                    self.finish_load(seq, token, cp, bytes, None, out);
                }
            }
            Err(LoadError::MissingState(tokens)) if !tokens.is_empty() => {
                loading.missing = tokens.into_iter().collect();
                self.request_transfer(out);
            }
            Err(_) => {
                // The bytes match the token, so every correct replica holds the same ones: the
                // application cannot load its own checkpoint. Wait for a later LOAD-CP.
                self.counters.add("load-cp-app-rejected");
                loading.fetched = None;
            }
        }
    }

    /// STATE: a piece of application state, accepted only if it hashes to its token.
    pub(crate) fn on_state(&mut self, token: Digest, data: Vec<u8>, out: &mut Vec<Action>) {
        let Some(loading) = self.transfer.loading.as_mut() else {
            self.counters.dropped(DropReason::StateUnrequested);
            return;
        };
        if !loading.missing.contains(&token) {
            self.counters.dropped(DropReason::StateUnrequested);
            return;
        }
        if Digest::of(&data) != token {
            self.counters.dropped(DropReason::StateBadDigest);
            return;
        }
        self.app.load_state(&token, &data);
        loading.missing.remove(&token);
        if loading.missing.is_empty() {
            self.try_load(out);
        }
    }

    /// The application holds the checkpoint's state: adopt the rest of the execution state,
    /// make the checkpoint durable here too, and carry on from `seq + 1`.
    pub(crate) fn finish_load(
        &mut self,
        seq: Seq,
        token: Digest,
        cp: ExecCheckpoint,
        bytes: Vec<u8>,
        tree: Option<plumb_objects::ObjectTree>,
        out: &mut Vec<Action>,
    ) {
        self.finish_rollback(seq, tree.as_ref(), out);
        self.executed.replies = cp.replies;
        self.executed.agreed_time = cp.agreed_time;
        self.executed.next_push = cp.next_push;
        self.executed.next_seq = seq + 1;
        self.reports.anchor(token);
        self.transfer.loaded_at = self.now;
        // The history described the state this load replaced: vouching from it would only
        // make D-Prophecy reads fall back.
        self.sketches.clear();
        self.persist_checkpoint(seq, bytes.clone(), tree.as_ref(), out);
        self.transfer.held.insert(seq, Held { token, bytes, tree });
        self.collect_checkpoints(seq, out);
        self.transfer.load_votes.clear();
        self.forget_below(self.executed.next_seq);
        out.push(Action::Observe(Observation::CheckpointLoaded {
            seq,
            token,
        }));
        self.execute_ready(out);
        if !self.learning.learned.contains_key(&self.executed.next_seq) {
            self.send_last_exec(out);
        }
    }

    /// The first peer to ask for the objects of `loading` on demand: the one whose copy of
    /// the checkpoint verified, else the next in turn. (The eager transfer
    /// still starts with the next in turn: it is not what a woken sleeper waits on.)
    pub(crate) fn first_load_peer(&self, loading: &Loading) -> ExecId {
        loading
            .from
            .filter(|e| *e != self.me && e.index() < self.q().exec)
            .unwrap_or_else(|| self.next_exec_peer(self.me))
    }

    /// FETCH-EXEC-CP from a peer: send the checkpoint if we hold it. The same request from the
    /// same peer is served at most once per half catch-up period: checkpoints can be large.
    pub(crate) fn on_fetch_exec_cp(&mut self, e: ExecId, seq: Seq, out: &mut Vec<Action>) {
        let Some(held) = self.transfer.held.get(&seq) else {
            self.counters.add("fetch-exec-cp-not-held");
            return;
        };
        let now = self.now;
        let period = self.cfg().catch_up_us / 2;
        if self
            .serving
            .checkpoints
            .get(&e)
            .is_some_and(|(s, t)| *s == seq && now < t.saturating_add(period))
        {
            self.counters.add("fetch-exec-cp-rate-limited");
            return;
        }
        let msg = Message::ExecCpState {
            seq,
            state: held.bytes.clone(),
        };
        self.serving.checkpoints.insert(e, (seq, now));
        self.send(Principal::Exec(e), &msg, out);
    }

    /// FETCH-STATE from a peer: a piece of application state, if the application has it.
    pub(crate) fn on_fetch_state(&mut self, e: ExecId, token: Digest, out: &mut Vec<Action>) {
        match self.app.fetch_state(&token) {
            Some(data) => self.send(Principal::Exec(e), &Message::State { token, data }, out),
            None => self.counters.add("fetch-state-not-held"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> Held {
        Held {
            token: Digest::ZERO,
            bytes: Vec::new(),
            tree: None,
        }
    }

    #[test]
    fn invariants_name_a_checkpoint_ahead_of_execution_and_a_stranger_vote() {
        let mut t = Transfer::default();
        t.held.insert(Seq(4), held());
        t.load_votes.insert(OrderId(3), (Seq(4), Digest::ZERO));
        assert_eq!(t.check_invariants(Seq(5), 4), Ok(()));
        let ahead = t.check_invariants(Seq(4), 4).unwrap_err();
        assert_eq!(ahead.name, "INV-held-checkpoints-executed");
        let stranger = t.check_invariants(Seq(5), 3).unwrap_err();
        assert_eq!(stranger.name, "INV-load-votes-of-order-replicas");
    }
}
