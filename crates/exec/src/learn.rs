//! Learning batches (execution consensus, seed 004 §6.3.1) and fetching their bodies (EL1a).
//!
//! A batch is learned when `r + 1` distinct order replicas sent the same digest for its
//! sequence number in a committed NEXT-BATCH: at least one of them is correct, so the batch is
//! the committed one (ES2). Or, with tentative agreement (seed 004 §6.2.3), when `n - u` sent it
//! in a TENTATIVE-BATCH of one view: each says it holds the batch's prepared certificate on its
//! disk, which is what a commit certificate says, so the batch is the one every correct order
//! replica commits (docs/protocol.md, "Tentative agreement").
//! Each order replica has at most one vote per sequence number; a later one for another batch
//! replaces it, and a committed and a tentative one for the same batch are one vote of both.

use crate::{ExecReplica, FETCH};
use plumb_app::Application;
use plumb_core::{Action, BrokenInvariant, DropReason, Micros};
use plumb_crypto::Digest;
use plumb_wire::{
    AuthId, Batch, Body, ClientId, Executed, Message, OrderId, Principal, ReqNo, Seq, View,
};
use std::collections::BTreeMap;

/// Fixed per-request cost counted against a sender's vote budget (identity, digest, framing).
const REQUEST_OVERHEAD: usize = 96;

/// What an execution replica knows of the batches it has not executed yet.
#[derive(Debug, Default)]
pub(crate) struct Learning {
    /// Order replicas' NEXT-BATCH votes for sequence numbers not learned yet.
    pub votes: BTreeMap<Seq, SeqVotes>,
    /// Bytes of batches each order replica's current votes hold: bounds what a faulty one can pin.
    pub vote_bytes: BTreeMap<OrderId, usize>,
    /// Batches learned (`r + 1` matching votes), with the request bodies gathered so far.
    pub learned: BTreeMap<Seq, Learned>,
    /// Batches learned so far, and at the last tick: no change means no progress.
    pub learned_total: u64,
    pub learned_at_last_tick: u64,
    /// The next batch to execute at the last tick: the same now, with that batch learned,
    /// means execution waits on something (objects, for a replica holding part of the state).
    pub next_at_last_tick: Seq,
    /// When the fetch timer is set to fire, if it is.
    pub fetch_timer_at: Option<Micros>,
    /// How long a body takes to come back from the replica first asked for it, a moving
    /// average (1/8 weight to the newest): how long to wait before asking every replica.
    pub usual_fetch: Option<Micros>,
    /// Authentication replicas that left a FETCH unanswered for the fetch wait, and until
    /// when first asks go to another replica instead (a silent one would otherwise stall every
    /// batch holding a request of its clients by a timeout).
    pub unanswering_auth: BTreeMap<AuthId, Micros>,
}

impl Learning {
    /// - `INV-vote-bytes-are-votes`: each order replica's vote budget in use is the weight of
    ///   the votes it holds (so a faulty one cannot pin more than its budget, and a replaced
    ///   or dropped vote frees its bytes);
    /// - `INV-vote-batches-voted`: a batch is kept for a sequence number only while a vote
    ///   names it, and every vote's batch is kept;
    /// - `INV-learned-not-voted`: a learned sequence number holds no votes;
    /// - `INV-learning-not-executed`: nothing is kept for a batch already executed.
    pub fn check_invariants(&self, next_seq: Seq) -> Result<(), BrokenInvariant> {
        let mut held: BTreeMap<OrderId, usize> = BTreeMap::new();
        for (seq, v) in &self.votes {
            for (o, vote) in &v.by_replica {
                *held.entry(*o).or_insert(0) += vote.weight;
                BrokenInvariant::check(
                    v.batches.contains_key(&vote.digest),
                    "INV-vote-batches-voted",
                    || format!("o{o}'s vote at {seq} names a batch not kept"),
                )?;
            }
            for d in v.batches.keys() {
                BrokenInvariant::check(v.naming(d) > 0, "INV-vote-batches-voted", || {
                    format!("a batch kept at {seq} that no vote names")
                })?;
            }
            BrokenInvariant::check(
                !self.learned.contains_key(seq),
                "INV-learned-not-voted",
                || format!("votes kept for {seq}, which is learned"),
            )?;
        }
        held.retain(|_, b| *b > 0);
        BrokenInvariant::check(held == self.vote_bytes, "INV-vote-bytes-are-votes", || {
            format!("budget in use {:?}, votes held {held:?}", self.vote_bytes)
        })?;
        let lowest = [self.votes.keys().next(), self.learned.keys().next()]
            .into_iter()
            .flatten()
            .min()
            .copied();
        BrokenInvariant::check(
            lowest.is_none_or(|s| s >= next_seq),
            "INV-learning-not-executed",
            || format!("votes or a learned batch kept for {lowest:?}, below {next_seq}"),
        )
    }
}

/// What kind of NEXT-BATCH an order replica sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VoteKind {
    /// A committed NEXT-BATCH: `r + 1` matching teach the batch.
    Committed,
    /// A TENTATIVE-BATCH of this view: `n - u` matching in one view teach it.
    Tentative(View),
}

/// One order replica's vote at one sequence number.
#[derive(Debug)]
struct Vote {
    digest: Digest,
    /// Bytes its batch weighs against the sender's budget.
    weight: usize,
    /// It sent the batch committed.
    committed: bool,
    /// It sent the batch tentatively, in this view (the latest it said so in).
    tentative_in: Option<View>,
}

impl Vote {
    fn new(digest: Digest, weight: usize, kind: VoteKind) -> Vote {
        let mut vote = Vote {
            digest,
            weight,
            committed: false,
            tentative_in: None,
        };
        vote.add(kind);
        vote
    }

    /// Whether this vote stands against a vote of `kind` for another batch from the same
    /// replica: a committed batch is final, and a tentative one of a later view is newer.
    fn outranks(&self, kind: VoteKind) -> bool {
        match kind {
            VoteKind::Committed => false,
            VoteKind::Tentative(view) => {
                self.committed || self.tentative_in.is_some_and(|v| v > view)
            }
        }
    }

    fn add(&mut self, kind: VoteKind) {
        match kind {
            VoteKind::Committed => self.committed = true,
            VoteKind::Tentative(view) => {
                self.tentative_in = Some(self.tentative_in.map_or(view, |v| v.max(view)));
            }
        }
    }
}

/// Votes for one not-yet-learned sequence number.
#[derive(Debug, Default)]
pub(crate) struct SeqVotes {
    /// Order replica -> its vote.
    by_replica: BTreeMap<OrderId, Vote>,
    /// One copy of each proposed batch.
    batches: BTreeMap<Digest, Batch>,
}

impl SeqVotes {
    /// The digest of the kept batch equal to `batch`, if one is kept.
    fn digest_of_kept(&self, seq: Seq, batch: &Batch) -> Option<Digest> {
        let (d, kept) = self.batches.iter().find(|(_, kept)| *kept == batch)?;
        debug_assert_eq!(*d, kept.digest(seq), "a kept batch is keyed by its digest");
        Some(*d)
    }

    /// Votes of either kind naming `digest`.
    fn naming(&self, digest: &Digest) -> usize {
        self.by_replica
            .values()
            .filter(|v| v.digest == *digest)
            .count()
    }

    /// Votes of `kind` for `digest`: committed ones, or tentative ones of the view.
    fn count(&self, digest: &Digest, kind: VoteKind) -> usize {
        self.by_replica
            .values()
            .filter(|v| v.digest == *digest)
            .filter(|v| match kind {
                VoteKind::Committed => v.committed,
                VoteKind::Tentative(view) => v.tentative_in == Some(view),
            })
            .count()
    }
}

/// A learned batch and the request bodies gathered so far (inline ones at once).
/// How long an authentication replica that left a FETCH unanswered is skipped for first asks.
const UNANSWERING_SKIP_US: Micros = 10_000_000;

/// The shortest wait before a body asked of one authentication replica is asked of all.
const FETCH_WIDEN_MIN_US: Micros = 20_000;

#[derive(Debug)]
pub(crate) struct Learned {
    pub(crate) batch: Batch,
    pub(crate) digest: Digest,
    pub(crate) bodies: Vec<Option<Vec<u8>>>,
    /// When its missing bodies were last asked for.
    pub(crate) asked_at: Micros,
    /// Per request, the one authentication replica its body was first asked from (at
    /// `learned_at`): its answer, however late, tells how long bodies take.
    pub(crate) first_asked: Vec<Option<AuthId>>,
    /// When the batch was learned (and its missing bodies first asked for), and whether the
    /// fetch timer had to ask every authentication replica for them: what a slow request
    /// waited for.
    pub(crate) learned_at: Micros,
    pub(crate) fetch_timer_fired: bool,
}

impl Learned {
    pub(crate) fn complete(&self) -> bool {
        self.bodies.iter().all(Option::is_some)
    }

    /// Requests whose bodies are still missing: (client, nc, digest).
    fn missing(&self) -> impl Iterator<Item = (ClientId, ReqNo, Digest)> + '_ {
        self.batch
            .requests
            .iter()
            .zip(&self.bodies)
            .filter_map(|(r, b)| match (&r.body, b) {
                (Body::Digest(d), None) => Some((r.client, r.nc, *d)),
                _ => None,
            })
    }
}

fn batch_weight(batch: &Batch) -> usize {
    batch
        .requests
        .iter()
        .map(|r| match &r.body {
            Body::Inline(op) => op.len() + REQUEST_OVERHEAD,
            Body::Digest(_) => REQUEST_OVERHEAD,
        })
        .sum::<usize>()
        + REQUEST_OVERHEAD
}

impl<A: Application> ExecReplica<A> {
    /// Highest sequence number we keep votes for: the order stage runs at most two intervals
    /// ahead of its stable checkpoint; one more interval absorbs messages in flight while that
    /// checkpoint moves. A replica further behind is told to load a checkpoint instead.
    fn vote_horizon(&self) -> Seq {
        self.executed.next_seq.plus(3 * self.interval())
    }

    /// Bytes of unlearned batches one order replica may pin: twice what full batches of
    /// inline requests over the whole window weigh.
    fn vote_budget(&self) -> usize {
        let per_batch = self
            .cfg()
            .batch_max
            .saturating_mul(self.cfg().inline_max_bytes + REQUEST_OVERHEAD)
            + REQUEST_OVERHEAD;
        (3 * self.interval() as usize + 1)
            .saturating_mul(per_batch)
            .saturating_mul(2)
    }

    /// Matching votes of `kind` that teach a batch.
    fn learn_quorum(&self, kind: VoteKind) -> usize {
        match kind {
            VoteKind::Committed => {
                #[cfg(feature = "sabotage")]
                if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::ExecLearnBelowQuorum) {
                    return 1;
                }
                self.q().exec_learn()
            }
            VoteKind::Tentative(_) => {
                if plumb_core::sabotaged!(TentativeBelowQuorum) {
                    return 1;
                }
                self.q().exec_learn_tentative()
            }
        }
    }

    /// A committed NEXT-BATCH or a TENTATIVE-BATCH (`kind`) from order replica `o`.
    pub(crate) fn on_next_batch(
        &mut self,
        o: OrderId,
        seq: Seq,
        batch: Batch,
        kind: VoteKind,
        out: &mut Vec<Action>,
    ) {
        if seq < self.executed.next_seq {
            self.counters.add("next-batch-already-executed");
            return;
        }
        if seq > self.vote_horizon() {
            self.counters.dropped(DropReason::NextBatchBeyondWindow);
            return;
        }
        if self.learning.learned.contains_key(&seq) {
            self.counters.add("next-batch-already-learned");
            return;
        }
        if batch.requests.len() > self.cfg().batch_max {
            // The order stage never commits such a batch: only a faulty replica sends it.
            self.counters.dropped(DropReason::NextBatchOversized);
            return;
        }
        // The same batch from another order replica is the common case: compared with the
        // copy kept for this sequence number, it costs a comparison instead of hashing every
        // request's identity again (one hash per request and one per inline body). Equal
        // batches have equal digests, so the vote is the same.
        let known = self
            .learning
            .votes
            .get(&seq)
            .and_then(|v| v.digest_of_kept(seq, &batch));
        let digest = known.unwrap_or_else(|| batch.digest(seq));
        if !self.record_vote(o, seq, digest, batch, kind) {
            self.counters.dropped(DropReason::NextBatchOverBudget);
            return;
        }
        let votes = self
            .learning
            .votes
            .get(&seq)
            .map_or(0, |v| v.count(&digest, kind));
        if votes >= self.learn_quorum(kind) {
            self.counters.add(match kind {
                VoteKind::Committed => "learned-committed",
                VoteKind::Tentative(_) => "learned-tentative",
            });
            self.learn(seq, digest, out);
            self.execute_ready(out);
        }
    }

    /// Record `o`'s vote of `kind` for `digest` at `seq`: added to its vote for the same batch,
    /// else replacing its earlier one. False if it would push `o` over its budget (its earlier
    /// vote is then gone too).
    fn record_vote(
        &mut self,
        o: OrderId,
        seq: Seq,
        digest: Digest,
        batch: Batch,
        kind: VoteKind,
    ) -> bool {
        let budget = self.vote_budget();
        let weight = batch_weight(&batch);
        let entry = self.learning.votes.entry(seq).or_default();
        if let Some(vote) = entry.by_replica.get_mut(&o) {
            if vote.digest == digest {
                vote.add(kind);
                return true;
            }
            if vote.outranks(kind) {
                // A tentative vote that overtook its sender's later word: kept out, or a late
                // one would take back the sender's committed vote.
                return true;
            }
        }
        if let Some(old) = entry.by_replica.remove(&o) {
            if !plumb_core::sabotaged!(VoteBytesKeptOnReplace) {
                sub_weight(&mut self.learning.vote_bytes, o, old.weight);
            }
            if entry.naming(&old.digest) == 0 {
                entry.batches.remove(&old.digest);
            }
        }
        let used = self.learning.vote_bytes.get(&o).copied().unwrap_or(0);
        if used.saturating_add(weight) > budget {
            if entry.by_replica.is_empty() {
                self.learning.votes.remove(&seq);
            }
            return false;
        }
        entry.by_replica.insert(o, Vote::new(digest, weight, kind));
        entry.batches.entry(digest).or_insert(batch);
        *self.learning.vote_bytes.entry(o).or_insert(0) += weight;
        true
    }

    /// Forget the votes for `seq`, returning the batch with `digest` if one was proposed.
    fn take_votes(&mut self, seq: Seq, digest: Option<Digest>) -> Option<Batch> {
        let mut entry = self.learning.votes.remove(&seq)?;
        for (o, vote) in &entry.by_replica {
            sub_weight(&mut self.learning.vote_bytes, *o, vote.weight);
        }
        digest.and_then(|d| entry.batches.remove(&d))
    }

    /// Drop votes and learned batches that can no longer be executed.
    pub(crate) fn forget_below(&mut self, next: Seq) {
        let stale: Vec<Seq> = self.learning.votes.range(..next).map(|(s, _)| *s).collect();
        for s in stale {
            self.take_votes(s, None);
        }
        self.learning.learned = self.learning.learned.split_off(&next);
    }

    /// Batch `seq` is learned: tell the authentication stage its requests are ordered and
    /// fetch the bodies we lack (EL1a).
    fn learn(&mut self, seq: Seq, digest: Digest, out: &mut Vec<Action>) {
        let Some(batch) = self.take_votes(seq, Some(digest)) else {
            return;
        };
        self.learning.learned_total += 1;
        let executed = batch
            .requests
            .iter()
            .map(|r| Executed {
                client: r.client,
                nc: r.nc,
            })
            .collect();
        self.send_to_auth(&Message::BatchComplete { seq, executed }, out);
        let bodies = batch
            .requests
            .iter()
            .map(|r| match &r.body {
                Body::Inline(op) => Some(op.clone()),
                Body::Digest(_) => None,
            })
            .collect();
        let mut learned = Learned {
            first_asked: vec![None; batch.requests.len()],
            batch,
            digest,
            bodies,
            asked_at: self.now,
            learned_at: self.now,
            fetch_timer_fired: false,
        };
        let mut fetches = Vec::new();
        for (i, r) in learned.batch.requests.iter().enumerate() {
            if let (Body::Digest(d), None) = (&r.body, &learned.bodies[i]) {
                let to = self.first_ask(r.client);
                learned.first_asked[i] = Some(to);
                fetches.push((r.client, r.nc, *d, to));
            }
        }
        self.learning.learned.insert(seq, learned);
        if fetches.is_empty() {
            return;
        }
        for (client, nc, digest, to) in fetches {
            // First ask one replica, chosen by client to spread load; all of them on the timer.
            let to = Principal::Auth(to);
            self.send(
                to,
                &Message::Fetch {
                    seq,
                    client,
                    nc,
                    digest,
                },
                out,
            );
        }
        self.arm_fetch_timer(out);
    }

    /// The replica to ask first for a body of `client`'s: from `client mod n_auth` on, the
    /// first of the client's preferred quorum (the replicas its first transmission reached)
    /// that has not recently left a FETCH unanswered.
    fn first_ask(&self, client: ClientId) -> AuthId {
        let n = self.q().auth.max(1);
        let start = client as usize % n;
        let now = self.now;
        (0..self.q().auth_preferred().clamp(1, n))
            .map(|k| AuthId(((start + k) % n) as u16))
            .find(|a| {
                self.learning
                    .unanswering_auth
                    .get(a)
                    .is_none_or(|until| now >= *until)
            })
            .unwrap_or(AuthId(start as u16))
    }

    /// How long a body asked of one replica is awaited before every replica is asked: four
    /// times the usual round trip, at least [`FETCH_WIDEN_MIN_US`], at most the fetch period
    /// (a quarter of it before any body came back). A crashed replica first in the quorum of
    /// some clients held each of their bodies the whole period (200 ms; a woken ZZ replica
    /// re-executing the batches since the checkpoint, or an active after a node's crash,
    /// waited it out, docs/zz.md).
    fn fetch_wait(&self) -> Micros {
        let period = self.cfg().catch_up_us.max(1);
        self.learning
            .usual_fetch
            .map_or(period / 4, |l| l.saturating_mul(4))
            .max(FETCH_WIDEN_MIN_US)
            .min(period)
    }

    /// Make the fetch timer fire by `now + after`, unless it already fires sooner.
    fn set_fetch_timer(&mut self, after: Micros, out: &mut Vec<Action>) {
        let at = self.now.saturating_add(after.max(1));
        if self.learning.fetch_timer_at.is_none_or(|t| at < t) {
            self.learning.fetch_timer_at = Some(at);
            out.push(Action::SetTimer {
                id: FETCH,
                after: after.max(1),
            });
        }
    }

    pub(crate) fn arm_fetch_timer(&mut self, out: &mut Vec<Action>) {
        self.set_fetch_timer(self.fetch_wait(), out);
    }

    /// Bodies still missing a while after they were last asked for: ask every authentication
    /// replica. The first time, after [`Self::fetch_wait`] (the replica asked first may have
    /// crashed); then every period. Bodies asked for more recently are most likely on their
    /// way; asking again for them would only bring `n_auth` copies of each. The timer is set
    /// again for the batch due soonest, so a body waits its due time, not up to two (a batch
    /// learned just after the timer was set would otherwise wait for the one after).
    pub(crate) fn on_fetch_tick(&mut self, out: &mut Vec<Action>) {
        self.learning.fetch_timer_at = None;
        let (now, period, wait) = (self.now, self.cfg().catch_up_us, self.fetch_wait());
        let mut fetches = Vec::new();
        let mut next_due: Option<Micros> = None;
        for (seq, l) in self.learning.learned.iter_mut() {
            if l.complete() {
                continue;
            }
            let due = l
                .asked_at
                .saturating_add(if l.fetch_timer_fired { period } else { wait });
            if now < due {
                next_due = Some(next_due.map_or(due, |d| d.min(due)));
                continue;
            }
            if !l.fetch_timer_fired {
                for (asked, body) in l.first_asked.iter().zip(&l.bodies) {
                    if let (Some(a), None) = (asked, body) {
                        self.learning
                            .unanswering_auth
                            .insert(*a, now.saturating_add(UNANSWERING_SKIP_US));
                    }
                }
            }
            l.asked_at = now;
            l.fetch_timer_fired = true;
            next_due = Some(next_due.map_or(now + period, |d| d.min(now + period)));
            fetches.extend(l.missing().map(|(client, nc, digest)| Message::Fetch {
                seq: *seq,
                client,
                nc,
                digest,
            }));
        }
        for msg in &fetches {
            self.send_to_auth(msg, out);
        }
        if let Some(due) = next_due {
            self.set_fetch_timer(due.saturating_sub(now), out);
        }
    }

    /// COMMAND: a body for a learned batch, accepted only if it hashes to the digest the batch
    /// carries (a faulty authentication replica cannot substitute an operation).
    pub(crate) fn on_command(
        &mut self,
        from: AuthId,
        seq: Seq,
        client: ClientId,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let Some(learned) = self.learning.learned.get_mut(&seq) else {
            self.counters.dropped(DropReason::CommandUnknownBatch);
            return;
        };
        let got = Digest::of(&op);
        let slot = learned
            .batch
            .requests
            .iter()
            .zip(learned.bodies.iter_mut())
            .zip(&learned.first_asked)
            .find(|((r, b), _)| r.client == client && r.nc == nc && b.is_none());
        match slot {
            Some(((r, body), asked)) if matches!(r.body, Body::Digest(d) if d == got) => {
                *body = Some(op);
                if *asked == Some(from) {
                    let took = self.now.saturating_sub(learned.learned_at);
                    self.learning.usual_fetch = Some(
                        self.learning
                            .usual_fetch
                            .map_or(took, |l| l - l / 8 + took / 8),
                    );
                }
            }
            Some(_) => {
                self.counters.dropped(DropReason::CommandBadDigest);
                return;
            }
            None => {
                self.counters.add("command-not-needed");
                return;
            }
        }
        self.execute_ready(out);
    }
}

fn sub_weight(bytes: &mut BTreeMap<OrderId, usize>, o: OrderId, weight: usize) {
    if let Some(b) = bytes.get_mut(&o) {
        *b = b.saturating_sub(weight);
        if *b == 0 {
            bytes.remove(&o);
        }
    }
}
