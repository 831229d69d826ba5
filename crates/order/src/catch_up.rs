//! Catching up, and helping peers catch up. The [`CatchUp`] ledger owns what this replica knows
//! of being behind (the highest sequence number peers mentioned, COMMITTED answers, whether the
//! last tick applied anything) and what it owes lagging peers.
//!
//! Catch-up requests wait for idle time (seed 004 §3.4.2, "idle check"). Answering a lagging
//! peer costs up to two checkpoint intervals of batches, or a stable checkpoint's state, and a
//! faulty peer may ask again and again. So a replica answers at once only when no request
//! waits here for ordering, or when nothing was ordered for half a heartbeat: then bringing
//! peers up to date may be what unblocks ordering, and the rule tunes itself. Otherwise each
//! peer's latest request of each kind waits, and is looked at again every half heartbeat. Half
//! a heartbeat, so that a stall caused by a lagging replica is served before the heartbeat
//! blames the primary (the simulator found the cascade: seed 859, u=1 r=1).

use crate::OrderReplica;
use plumb_core::{Action, BrokenInvariant, Micros, TimerId};
use plumb_crypto::Digest;
use plumb_wire::{Batch, ExecId, OrderId, Seq};
use std::collections::{BTreeMap, HashMap};

pub(crate) const CATCH_UP_IDLE: TimerId = TimerId(4);

/// What a lagging order replica asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    /// FETCH-COMMITTED: committed batches from this sequence number.
    Committed(Seq),
    /// FETCH-ORDER-STATE: the order state of this stable checkpoint.
    OrderState(Seq),
}

impl Ask {
    /// Requests of one kind from one peer replace each other; of different kinds they do not
    /// (a lagging replica may need both, and asks for each on its own schedule).
    pub(crate) fn kind(self) -> u8 {
        match self {
            Ask::Committed(_) => 0,
            Ask::OrderState(_) => 1,
        }
    }
}

/// Catching up and helping others catch up: a sub-machine owning what this replica knows of
/// being behind (the highest sequence number peers mentioned, COMMITTED answers, whether the
/// last tick applied anything) and what it owes lagging peers (deferred asks, the execution
/// replicas' resend rate limit). The replica sends, stores and applies.
#[derive(Debug, Default)]
pub(crate) struct CatchUp {
    /// Highest sequence number any peer's message mentioned: evidence of being behind.
    heard: Seq,
    /// COMMITTED answers per sequence number above the last applied batch: peer -> (digest,
    /// batch).
    answers: BTreeMap<Seq, HashMap<OrderId, (Digest, Batch)>>,
    /// The last applied batch at the last tick: none since is a stall.
    applied_at_last_tick: Seq,
    /// When this replica last took committed batches or order state from peers instead of
    /// committing them itself: a request slow across it waited for catch-up.
    caught_up_at: Micros,
    /// When this replica last found ordering stalled for a whole tick and said its votes
    /// again: a request slow across it waited for a lost frame's resend.
    resent_at: Micros,
    /// Each peer's latest ask of each kind, waiting for idle time.
    deferred: BTreeMap<(OrderId, u8), Ask>,
    /// When each execution replica's LAST-EXEC was last answered, and the checkpoint that
    /// answer told it to load, if it did (rate limit).
    exec_served: HashMap<ExecId, (Micros, Option<Seq>)>,
}

impl CatchUp {
    /// A peer's message mentioned `seq`.
    pub fn heard(&mut self, seq: Seq) {
        self.heard = self.heard.max(seq);
    }

    /// Whether a peer mentioned a sequence number above `applied`.
    pub fn heard_beyond(&self, applied: Seq) -> bool {
        self.heard > applied
    }

    /// Peer `j` says `batch` committed at `seq`: the batch once `small` (`r + 1`) peers say
    /// the same (one of them is correct).
    pub fn committed_answer(
        &mut self,
        j: OrderId,
        seq: Seq,
        batch: Batch,
        small: usize,
    ) -> Option<Batch> {
        let d = batch.digest(seq);
        let votes = self.answers.entry(seq).or_default();
        votes.insert(j, (d, batch));
        if votes.values().filter(|(x, _)| *x == d).count() < small {
            return None;
        }
        votes
            .values()
            .find(|(x, _)| *x == d)
            .map(|(_, b)| b.clone())
    }

    /// Batches through `seq` are applied: their answers are spent.
    pub fn applied_through(&mut self, seq: Seq) {
        self.answers = self.answers.split_off(&(seq + 1));
    }

    /// A tick: whether nothing was applied since the last one (`applied` is the last applied
    /// batch now).
    pub fn stalled_since_last_tick(&mut self, applied: Seq) -> bool {
        let stalled = applied == self.applied_at_last_tick;
        self.applied_at_last_tick = applied;
        stalled
    }

    /// Batches or order state were taken from peers at `now`.
    pub fn caught_up(&mut self, now: Micros) {
        self.caught_up_at = now;
    }

    /// Votes were said again at `now` after a stalled tick.
    pub fn resent(&mut self, now: Micros) {
        self.resent_at = now;
    }

    /// Whether this replica caught up from peers after `t`.
    pub fn caught_up_after(&self, t: Micros) -> bool {
        self.caught_up_at > t
    }

    /// Whether this replica resent its votes after `t`.
    pub fn resent_after(&self, t: Micros) -> bool {
        self.resent_at > t
    }

    /// Keep peer `j`'s ask for idle time (replacing its earlier one of the same kind); true if
    /// nothing waited before (set the timer).
    pub fn defer(&mut self, j: OrderId, ask: Ask) -> bool {
        let first = self.deferred.is_empty();
        self.deferred.insert((j, ask.kind()), ask);
        first
    }

    pub fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// What waited, in peer order, to be answered now.
    pub fn take_deferred(&mut self) -> Vec<(OrderId, Ask)> {
        std::mem::take(&mut self.deferred)
            .into_iter()
            .map(|((j, _), ask)| (j, ask))
            .collect()
    }

    /// `INV-catch-up-answers-above-applied`: COMMITTED answers are kept only above `applied`,
    /// the last applied batch (below it they are spent).
    pub fn check_invariants(&self, applied: Seq) -> Result<(), BrokenInvariant> {
        let lowest = self.answers.keys().next().copied();
        BrokenInvariant::check(
            lowest.is_none_or(|s| s > applied),
            "INV-catch-up-answers-above-applied",
            || {
                format!(
                    "COMMITTED answers kept for {lowest:?}, at or below the last applied {applied}"
                )
            },
        )
    }

    /// Whether execution replica `e`'s LAST-EXEC asking from `next` is answered now: at most
    /// once per `wait`, except right after a LOAD-CP: a replica that loaded the checkpoint it
    /// was told to load asks for the batches after it, and should not wait a catch-up period
    /// for them (a woken sleeper did, docs/zz.md). That exception is taken once per LOAD-CP,
    /// and a LOAD-CP is sent at most once per `wait`, so a faulty replica gets at most two
    /// answers per `wait`. Call [`CatchUp::exec_answered`] after answering.
    pub fn exec_due(&mut self, e: ExecId, now: Micros, wait: Micros, next: Seq) -> bool {
        match self.exec_served.get(&e) {
            Some((at, told_to_load)) => {
                told_to_load.is_some_and(|cp| next > cp) || now >= at.saturating_add(wait)
            }
            None => true,
        }
    }

    /// Execution replica `e`'s LAST-EXEC was answered at `now`: with a LOAD-CP of checkpoint
    /// `Some(cp)`, or with batches.
    pub fn exec_answered(&mut self, e: ExecId, now: Micros, told_to_load: Option<Seq>) {
        self.exec_served.insert(e, (now, told_to_load));
    }
}

impl OrderReplica {
    pub(crate) fn on_catch_up(&mut self, now: Micros, j: OrderId, ask: Ask, out: &mut Vec<Action>) {
        if self.idle_for_catch_up(now) {
            self.serve_catch_up(j, ask, out);
        } else {
            self.counters.add("catch-up-deferred");
            if self.catch_up.defer(j, ask) {
                out.push(Action::SetTimer {
                    id: CATCH_UP_IDLE,
                    after: self.idle_after(),
                });
            }
        }
    }

    /// Answer what waited if the replica is idle now; otherwise look again later.
    pub(crate) fn serve_deferred_catch_up(&mut self, now: Micros, out: &mut Vec<Action>) {
        if !self.catch_up.has_deferred() {
            return;
        }
        if !self.idle_for_catch_up(now) {
            out.push(Action::SetTimer {
                id: CATCH_UP_IDLE,
                after: self.idle_after(),
            });
            return;
        }
        for (j, ask) in self.catch_up.take_deferred() {
            self.serve_catch_up(j, ask, out);
        }
    }

    fn idle_after(&self) -> Micros {
        (self.cfg().heartbeat_us / 2).max(1)
    }

    fn idle_for_catch_up(&self, now: Micros) -> bool {
        now >= self.watch.last_progress + self.idle_after() || self.oldest_pending().is_none()
    }

    fn serve_catch_up(&mut self, j: OrderId, ask: Ask, out: &mut Vec<Action>) {
        match ask {
            Ask::Committed(from) => self.on_fetch_committed(j, from, out),
            Ask::OrderState(seq) => self.on_fetch_order_state(j, seq, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(seed: u64) -> Batch {
        Batch {
            requests: Vec::new(),
            time: 1,
            seed,
        }
    }

    #[test]
    fn a_committed_batch_is_taken_only_when_r_plus_1_peers_agree() {
        let mut c = CatchUp::default();
        assert_eq!(c.committed_answer(OrderId(0), Seq(5), batch(1), 2), None);
        assert_eq!(
            c.committed_answer(OrderId(1), Seq(5), batch(2), 2),
            None,
            "a different batch"
        );
        assert_eq!(
            c.committed_answer(OrderId(0), Seq(5), batch(1), 2),
            None,
            "the same peer twice"
        );
        assert_eq!(
            c.committed_answer(OrderId(2), Seq(5), batch(1), 2),
            Some(batch(1))
        );
        c.check_invariants(Seq(4)).unwrap();
        assert!(
            c.check_invariants(Seq(5)).is_err(),
            "answers at the applied batch are spent"
        );
        c.applied_through(Seq(5));
        c.check_invariants(Seq(5)).unwrap();
    }

    #[test]
    fn one_deferred_ask_per_peer_and_kind() {
        let mut c = CatchUp::default();
        assert!(
            c.defer(OrderId(1), Ask::Committed(Seq(3))),
            "the first sets the timer"
        );
        assert!(!c.defer(OrderId(1), Ask::Committed(Seq(4))));
        assert!(!c.defer(OrderId(1), Ask::OrderState(Seq(8))));
        assert_eq!(
            c.take_deferred(),
            [
                (OrderId(1), Ask::Committed(Seq(4))),
                (OrderId(1), Ask::OrderState(Seq(8)))
            ]
        );
        assert!(!c.has_deferred());
    }
}
