//! The checkpoint ledger of one order replica (seed 004 §6.1): what it has learned of execution
//! checkpoint tokens, the order checkpoints it made, the votes peers cast for theirs, the stable
//! checkpoint, and the state it is fetching. A sub-machine: it owns this state, decides from it,
//! and returns its decisions; the replica (`checkpoint.rs`) stores, sends and counts.
//!
//! Everything it keeps is above the stable checkpoint, on the checkpoint interval; what the
//! stable checkpoint makes obsolete goes in [`Checkpoints::advance`], which says what to delete
//! from the store. [`Checkpoints::check_invariants`] states this and the rest it relies on.

use crate::divergence::{ExecDivergence, Tell};
use crate::exec_reports::ExecReports;
use crate::state::OrderState;
use plumb_core::BrokenInvariant;
use plumb_crypto::Digest;
use plumb_wire::{ExecId, Micros, OrderId, Seq};
use std::collections::{BTreeMap, HashMap};

/// The last stable order checkpoint.
#[derive(Debug, Clone)]
pub(crate) struct Stable {
    pub seq: Seq,
    pub digest: Digest,
    /// The encoded order state at `seq`, whose digest is `digest`.
    pub state: Vec<u8>,
    pub exec_token: Digest,
}

/// Why an order state is being fetched, which says what to do with it when it comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StateFetch {
    /// `n - u` replicas voted for it, or a NEW-VIEW starts from it: it is stable.
    Stable,
    /// `r + 1` peers vouch for it and we are stalled behind it: hold it as our own and vote,
    /// which may make it stable (`adopt_checkpoint`).
    Vouched,
}

/// What an execution checkpoint token did to the ledger.
pub(crate) enum TokenVote {
    /// Outside the window of checkpoints it takes tokens for.
    Ignored,
    /// Counted; not yet `max(u,r) + 1` matching.
    Counted,
    /// Learned now. The other replicas' tokens for it, in replica order, to be judged.
    Learned(BTreeMap<ExecId, Digest>),
}

/// What a peer's CHECKPOINT vote did.
pub(crate) enum PeerVote {
    /// Not a checkpoint sequence number, or at or below the stable checkpoint.
    Ignored,
    /// Far ahead, and the peer already claims one at least as new there.
    FarStale,
    Counted,
}

/// Whether a checkpoint is stable here, and what that asks of the replica.
pub(crate) enum Verdict {
    /// Fewer than the quorum agree.
    NotYet,
    /// Stable, and ours matches: its digest and bytes, to make stable.
    Ours(Digest, Vec<u8>),
    /// Stable, but ours differs.
    Diverged,
    /// Stable, and we do not hold it: fetch the state with this digest.
    Missing(Digest),
}

/// What [`Checkpoints::advance`] made obsolete on disk, in the order to delete it.
pub(crate) struct Obsolete {
    /// Own checkpoints below the new stable one.
    pub checkpoints: Vec<Seq>,
    /// Learned execution tokens below it.
    pub tokens: Vec<Seq>,
    /// The previous stable checkpoint, if it is not the new one.
    pub previous: Option<Seq>,
}

/// A replica keeps one vote per peer per checkpoint within this many intervals above its stable
/// checkpoint; beyond that, only each peer's newest claim (how a replica that was down for long
/// learns which checkpoint to fetch).
const VOTE_HORIZON: u64 = 64;
/// Execution tokens are taken this many intervals ahead of the stable checkpoint.
const TOKEN_WINDOW: u64 = 4;

pub(crate) struct Checkpoints {
    interval: u64,
    stable: Stable,
    /// Order state right after applying each checkpoint sequence, waiting for its exec token.
    snapshots: BTreeMap<Seq, OrderState>,
    /// Own finished checkpoints not yet stable: seq -> (digest, bytes).
    own: BTreeMap<Seq, (Digest, Vec<u8>)>,
    /// CHECKPOINT votes, ours among them: seq -> replica -> digest.
    votes: BTreeMap<Seq, HashMap<OrderId, Digest>>,
    /// Execution replicas' tokens for checkpoints not yet learned.
    exec_votes: BTreeMap<Seq, HashMap<ExecId, Digest>>,
    /// Learned execution tokens, from the stable checkpoint on.
    exec_tokens: BTreeMap<Seq, Digest>,
    /// The order state being fetched: (seq, digest, why).
    awaiting: Option<(Seq, Digest, StateFetch)>,
    /// Execution replicas told that their token differs (divergence.rs).
    diverged: ExecDivergence,
    /// Execution replicas' reports of the batches above the stable checkpoint
    /// (exec_reports.rs).
    pub reports: ExecReports,
}

impl Checkpoints {
    /// At genesis: the stable checkpoint is sequence 0, the state `genesis`.
    pub(crate) fn new(interval: u64, genesis: Vec<u8>) -> Checkpoints {
        Checkpoints {
            interval,
            stable: Stable {
                seq: Seq::ZERO,
                digest: Digest::of(&genesis),
                state: genesis,
                exec_token: Digest::ZERO,
            },
            snapshots: BTreeMap::new(),
            own: BTreeMap::new(),
            votes: BTreeMap::new(),
            exec_votes: BTreeMap::new(),
            exec_tokens: BTreeMap::new(),
            awaiting: None,
            diverged: ExecDivergence::default(),
            reports: ExecReports::default(),
        }
    }

    /// Execution replica `e`'s token for checkpoint `seq` differs from the learned one.
    pub(crate) fn diverged(
        &mut self,
        e: ExecId,
        seq: Seq,
        now: Micros,
        again_after: Micros,
    ) -> Tell {
        self.diverged.tell(e, seq, now, again_after)
    }

    pub(crate) fn stable(&self) -> &Stable {
        &self.stable
    }

    /// The highest sequence number agreement may use: two intervals above the stable checkpoint.
    pub(crate) fn window_top(&self) -> Seq {
        self.stable.seq + 2 * self.interval
    }

    // ------------------------------------------------------------ execution tokens

    /// The token learned for checkpoint `seq`, if any.
    pub(crate) fn learned_token(&self, seq: Seq) -> Option<Digest> {
        self.exec_tokens.get(&seq).copied()
    }

    /// Execution replica `e` reports `token` for checkpoint `seq` (not yet learned). Learned on
    /// `quorum` matching tokens (`max(u,r) + 1`: one correct replica made it and holds it).
    pub(crate) fn vote_exec_token(
        &mut self,
        seq: Seq,
        e: ExecId,
        token: Digest,
        quorum: usize,
    ) -> TokenVote {
        debug_assert!(self.learned_token(seq).is_none());
        if !self.is_checkpoint(seq)
            || seq <= self.stable.seq
            || seq > self.stable.seq + TOKEN_WINDOW * self.interval
        {
            return TokenVote::Ignored;
        }
        let votes = self.exec_votes.entry(seq).or_default();
        votes.insert(e, token);
        if votes.values().filter(|t| **t == token).count() < quorum {
            return TokenVote::Counted;
        }
        self.exec_tokens.insert(seq, token);
        let others = self.exec_votes.remove(&seq).unwrap_or_default();
        TokenVote::Learned(others.into_iter().collect())
    }

    // ------------------------------------------------------------ own checkpoints

    /// The order state right after applying checkpoint sequence `seq`.
    pub(crate) fn snapshot(&mut self, seq: Seq, state: OrderState) {
        debug_assert!(self.is_checkpoint(seq) && state.seq == seq);
        self.snapshots.insert(seq, state);
    }

    /// Once batch `seq` is applied and its execution token learned, the order checkpoint at
    /// `seq` exists: it is kept as our own, and its digest and bytes returned to persist and
    /// announce. `None` while either is missing.
    pub(crate) fn finish(&mut self, seq: Seq) -> Option<(Digest, Vec<u8>)> {
        let token = self.learned_token(seq)?;
        let mut snapshot = self.snapshots.remove(&seq)?;
        snapshot.exec_token = token;
        let bytes = snapshot.encode();
        let digest = Digest::of(&bytes);
        self.own.insert(seq, (digest, bytes.clone()));
        Some((digest, bytes))
    }

    /// Hold a checkpoint we did not make (vouched for by `r + 1` peers) as our own.
    pub(crate) fn adopt(&mut self, seq: Seq, digest: Digest, bytes: Vec<u8>, exec_token: Digest) {
        self.exec_tokens.entry(seq).or_insert(exec_token);
        self.own.insert(seq, (digest, bytes));
    }

    /// Our own checkpoint at `seq`.
    pub(crate) fn own(&self, seq: Seq) -> Option<&(Digest, Vec<u8>)> {
        self.own.get(&seq)
    }

    /// Our own checkpoints above the stable one, oldest first.
    pub(crate) fn own_above_stable(&self) -> impl Iterator<Item = (Seq, Digest)> + '_ {
        self.own
            .range(self.stable.seq + 1..)
            .map(|(s, (d, _))| (*s, *d))
    }

    /// Our own checkpoints with their digests, oldest first (all above the stable one).
    pub(crate) fn own_digests(&self) -> impl Iterator<Item = (Seq, Digest)> + '_ {
        self.own.iter().map(|(s, (d, _))| (*s, *d))
    }

    /// Our newest own checkpoint.
    pub(crate) fn newest_own(&self) -> Option<Seq> {
        self.own.keys().next_back().copied()
    }

    /// The sequence numbers of our own checkpoints.
    pub(crate) fn own_seqs(&self) -> Vec<Seq> {
        self.own.keys().copied().collect()
    }

    /// The bytes of the order state at `seq`, if we hold it (stable or our own).
    pub(crate) fn state_bytes(&self, seq: Seq) -> Option<Vec<u8>> {
        if self.stable.seq == seq {
            Some(self.stable.state.clone())
        } else {
            self.own.get(&seq).map(|(_, b)| b.clone())
        }
    }

    // ------------------------------------------------------------ votes

    /// Replica `j` (ourselves included) votes `digest` for checkpoint `seq`.
    pub(crate) fn vote(&mut self, j: OrderId, seq: Seq, digest: Digest) {
        self.votes.entry(seq).or_default().insert(j, digest);
    }

    /// Peer `j`'s CHECKPOINT. Memory is bounded: one vote per peer per checkpoint within
    /// [`VOTE_HORIZON`] intervals, beyond that only each peer's newest claim.
    pub(crate) fn peer_vote(&mut self, j: OrderId, seq: Seq, digest: Digest) -> PeerVote {
        if !self.is_checkpoint(seq) || seq <= self.stable.seq {
            return PeerVote::Ignored;
        }
        let horizon = self.stable.seq + VOTE_HORIZON * self.interval;
        if seq > horizon {
            let far = self.votes.range(horizon + 1..);
            if far.clone().any(|(s, v)| *s >= seq && v.contains_key(&j)) {
                return PeerVote::FarStale;
            }
            let older: Vec<Seq> = far
                .filter(|(_, v)| v.contains_key(&j))
                .map(|(s, _)| *s)
                .collect();
            for s in older {
                if let Some(v) = self.votes.get_mut(&s) {
                    v.remove(&j);
                    if v.is_empty() {
                        self.votes.remove(&s);
                    }
                }
            }
        }
        self.vote(j, seq, digest);
        PeerVote::Counted
    }

    /// Whether checkpoint `seq` is stable on `quorum` (`n - u`) matching votes, and what follows.
    pub(crate) fn verdict(&self, seq: Seq, quorum: usize) -> Verdict {
        if seq <= self.stable.seq {
            return Verdict::NotYet;
        }
        let Some(votes) = self.votes.get(&seq) else {
            return Verdict::NotYet;
        };
        let Some(digest) = votes
            .values()
            .find(|d| votes.values().filter(|x| x == d).count() >= quorum)
            .copied()
        else {
            return Verdict::NotYet;
        };
        match self.own.get(&seq) {
            Some((mine, bytes)) if *mine == digest => Verdict::Ours(digest, bytes.clone()),
            Some(_) => Verdict::Diverged,
            None => Verdict::Missing(digest),
        }
    }

    /// The newest checkpoint above `applied` that `quorum` (`r + 1`) peers other than `me`
    /// vouch for with one digest.
    pub(crate) fn vouched_ahead(
        &self,
        applied: Seq,
        me: OrderId,
        quorum: usize,
    ) -> Option<(Seq, Digest)> {
        self.votes
            .range(applied + 1..)
            .rev()
            .find_map(|(seq, votes)| {
                let peers = || votes.iter().filter(|(j, _)| **j != me).map(|(_, d)| d);
                peers()
                    .find(|d| peers().filter(|x| x == d).count() >= quorum)
                    .map(|d| (*seq, *d))
            })
    }

    /// Whether any replica voted for a checkpoint above `seq`.
    pub(crate) fn votes_above(&self, seq: Seq) -> bool {
        self.votes.range(seq + 1..).next().is_some()
    }

    /// The newest checkpoint replica `j` voted for that we still hold its vote for.
    pub(crate) fn newest_vote_of(&self, j: OrderId) -> Option<Seq> {
        self.votes
            .iter()
            .rev()
            .find(|(_, votes)| votes.contains_key(&j))
            .map(|(seq, _)| *seq)
    }

    // ------------------------------------------------------------ state transfer

    /// The order state being fetched.
    pub(crate) fn awaiting(&self) -> Option<(Seq, Digest, StateFetch)> {
        self.awaiting
    }

    /// Fetch the state at `seq` unless a newer one is being fetched already: always chase the
    /// newest, since peers discard older ones. True if this is now the one fetched.
    pub(crate) fn chase(&mut self, seq: Seq, digest: Digest, why: StateFetch) -> bool {
        if self.awaiting.is_none_or(|(want, _, _)| want < seq) {
            self.awaiting = Some((seq, digest, why));
            return true;
        }
        false
    }

    /// Fetch the state at `seq`, whatever was fetched before (a NEW-VIEW starts from it).
    pub(crate) fn fetch(&mut self, seq: Seq, digest: Digest, why: StateFetch) {
        debug_assert!(seq > self.stable.seq);
        self.awaiting = Some((seq, digest, why));
    }

    /// A peer's ORDER-STATE: if it is the one awaited (its digest matches), it is taken off the
    /// wait and returned with why it was fetched. `None`: not awaited; `Some(Err)`: mismatch.
    pub(crate) fn arrived(
        &mut self,
        seq: Seq,
        state: &[u8],
    ) -> Option<Result<(Digest, StateFetch), ()>> {
        let (want, digest, why) = self.awaiting?;
        if want != seq || Digest::of(state) != digest {
            return Some(Err(()));
        }
        self.awaiting = None;
        Some(Ok((digest, why)))
    }

    // ------------------------------------------------------------ the stable checkpoint

    /// Checkpoint `seq` (state `bytes`, digest `digest`) is stable: forget everything it makes
    /// obsolete and say what to delete from the store.
    pub(crate) fn advance(
        &mut self,
        seq: Seq,
        digest: Digest,
        bytes: Vec<u8>,
        exec_token: Digest,
    ) -> Obsolete {
        debug_assert!(seq > self.stable.seq, "the stable checkpoint only moves up");
        debug_assert_eq!(digest, Digest::of(&bytes));
        let old = self.stable.seq;
        let obsolete = Obsolete {
            checkpoints: self.own.range(..seq).map(|(s, _)| *s).collect(),
            tokens: self.exec_tokens.range(..seq).map(|(s, _)| *s).collect(),
            previous: (old > Seq::ZERO && old != seq).then_some(old),
        };
        self.own = self.own.split_off(&(seq + 1));
        self.snapshots = self.snapshots.split_off(&(seq + 1));
        if !plumb_core::sabotaged!(CheckpointKeepsOldVotes) {
            self.votes = self.votes.split_off(&(seq + 1));
        }
        self.exec_votes = self.exec_votes.split_off(&(seq + 1));
        self.exec_tokens = self.exec_tokens.split_off(&seq);
        self.reports.advance(seq);
        self.stable = Stable {
            seq,
            digest,
            state: bytes,
            exec_token,
        };
        if self.awaiting.is_some_and(|(s, _, _)| s <= seq) {
            self.awaiting = None;
        }
        obsolete
    }

    // ------------------------------------------------------------ recovery

    /// The stable checkpoint read back from the store.
    pub(crate) fn recover_stable(&mut self, stable: Stable) {
        self.stable = stable;
    }

    /// An own checkpoint above the stable one read back from the store.
    pub(crate) fn recover_own(&mut self, seq: Seq, bytes: Vec<u8>) {
        debug_assert!(seq > self.stable.seq);
        self.own.insert(seq, (Digest::of(&bytes), bytes));
    }

    /// A learned execution token above the stable checkpoint read back from the store.
    pub(crate) fn recover_token(&mut self, seq: Seq, token: Digest) {
        debug_assert!(seq > self.stable.seq);
        self.exec_tokens.insert(seq, token);
    }

    fn is_checkpoint(&self, seq: Seq) -> bool {
        seq.is_multiple_of(self.interval)
    }

    // ------------------------------------------------------------ invariants

    /// - `checkpoints-above-stable`: every snapshot, own checkpoint, vote and unlearned token
    ///   is above the stable checkpoint, every learned token at or above it, and a state
    ///   fetched is above it: the stable checkpoint made everything below it obsolete.
    /// - `checkpoints-on-interval`: all of them are at checkpoint sequence numbers.
    /// - `checkpoint-digests`: the stable checkpoint's and our own checkpoints' digests are
    ///   those of their bytes.
    /// - `checkpoint-votes-bounded`: beyond the vote horizon a peer has at most one vote.
    pub(crate) fn check_invariants(&self, me: OrderId) -> Result<(), BrokenInvariant> {
        let stable = self.stable.seq;
        let kept = self
            .snapshots
            .keys()
            .chain(self.own.keys())
            .chain(self.votes.keys())
            .chain(self.exec_votes.keys());
        let mut lowest = None::<Seq>;
        for s in kept.clone() {
            lowest = Some(lowest.map_or(*s, |l| l.min(*s)));
        }
        BrokenInvariant::check(
            lowest.is_none_or(|l| l > stable)
                && self.exec_tokens.keys().next().is_none_or(|t| *t >= stable)
                && self.awaiting.is_none_or(|(s, _, _)| s > stable),
            "INV-checkpoints-above-stable",
            || {
                format!(
                    "stable checkpoint {stable}, but kept: lowest snapshot/own/vote {:?}, lowest token {:?}, fetching {:?}",
                    lowest,
                    self.exec_tokens.keys().next(),
                    self.awaiting.map(|(s, _, _)| s)
                )
            },
        )?;
        let off = kept
            .chain(self.exec_tokens.keys())
            .chain(std::iter::once(&stable))
            .find(|s| !self.is_checkpoint(**s));
        BrokenInvariant::check(off.is_none(), "INV-checkpoints-on-interval", || {
            format!(
                "{off:?} is not a multiple of the interval {}",
                self.interval
            )
        })?;
        let wrong = (Digest::of(&self.stable.state) != self.stable.digest)
            .then_some(stable)
            .or_else(|| {
                self.own
                    .iter()
                    .find(|(_, (d, b))| Digest::of(b) != *d)
                    .map(|(s, _)| *s)
            });
        BrokenInvariant::check(wrong.is_none(), "INV-checkpoint-digests", || {
            format!("checkpoint {wrong:?} is kept under a digest that is not its bytes'")
        })?;
        let horizon = stable + VOTE_HORIZON * self.interval;
        let mut far: HashMap<OrderId, u32> = HashMap::new();
        for votes in self.votes.range(horizon + 1..).map(|(_, v)| v) {
            for j in votes.keys().filter(|j| **j != me) {
                *far.entry(*j).or_default() += 1;
            }
        }
        let many = far.iter().find(|(_, n)| **n > 1);
        BrokenInvariant::check(many.is_none(), "INV-checkpoint-votes-bounded", || {
            format!("{many:?}: votes beyond the horizon {horizon}")
        })?;
        self.reports.check_invariants(stable, self.interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CP: u64 = 8;

    fn state(seq: Seq) -> OrderState {
        OrderState {
            seq,
            ..OrderState::default()
        }
    }

    fn ledger() -> Checkpoints {
        Checkpoints::new(CP, OrderState::default().encode())
    }

    /// Made and learned: the checkpoint at `seq` is ours, with its digest.
    fn make(l: &mut Checkpoints, seq: Seq) -> (Digest, Vec<u8>) {
        l.snapshot(seq, state(seq));
        let token = Digest::of(&seq.to_le_bytes());
        assert!(matches!(
            l.vote_exec_token(seq, ExecId(0), token, 2),
            TokenVote::Counted
        ));
        assert!(matches!(
            l.vote_exec_token(seq, ExecId(1), token, 2),
            TokenVote::Learned(_)
        ));
        l.finish(seq).expect("snapshot and token are both there")
    }

    #[test]
    fn a_checkpoint_is_stable_on_the_quorum_and_then_everything_below_goes() {
        let mut l = ledger();
        let (d8, bytes8) = make(&mut l, Seq(8));
        let (d16, _) = make(&mut l, Seq(16));
        l.vote(OrderId(0), Seq(8), d8);
        l.vote(OrderId(1), Seq(8), d8);
        assert!(matches!(l.verdict(Seq(8), 3), Verdict::NotYet));
        l.vote(OrderId(2), Seq(8), d8);
        let Verdict::Ours(d, bytes) = l.verdict(Seq(8), 3) else {
            panic!("three matching votes of three needed, and ours matches");
        };
        assert_eq!((d, &bytes), (d8, &bytes8));
        l.vote(OrderId(3), Seq(16), d16);
        let token = l.learned_token(Seq(8)).unwrap();
        let obsolete = l.advance(Seq(8), d8, bytes, token);
        assert!(obsolete.checkpoints.is_empty() && obsolete.previous.is_none());
        assert_eq!(l.stable().seq, Seq(8));
        assert_eq!(
            l.own_seqs(),
            vec![Seq(16)],
            "the newer own checkpoint stays"
        );
        assert_eq!(l.newest_vote_of(OrderId(3)), Some(Seq(16)));
        assert_eq!(
            l.newest_vote_of(OrderId(0)),
            None,
            "votes for 8 went with it"
        );
        l.check_invariants(OrderId(0)).unwrap();
    }

    #[test]
    fn a_stable_checkpoint_we_do_not_hold_is_fetched_and_a_different_one_is_divergence() {
        let mut l = ledger();
        let theirs = Digest::of(b"theirs");
        for j in 1..4 {
            l.peer_vote(OrderId(j), Seq(8), theirs);
        }
        assert!(matches!(l.verdict(Seq(8), 3), Verdict::Missing(d) if d == theirs));
        assert!(l.chase(Seq(8), theirs, StateFetch::Stable));
        assert!(
            !l.chase(Seq(8), theirs, StateFetch::Stable),
            "already fetching it"
        );
        assert!(matches!(l.arrived(Seq(8), b"other bytes"), Some(Err(()))));
        make(&mut l, Seq(8));
        assert!(matches!(l.verdict(Seq(8), 3), Verdict::Diverged));
    }

    #[test]
    fn far_votes_keep_only_each_peers_newest_claim() {
        let mut l = ledger();
        let far = Seq((VOTE_HORIZON + 1) * CP);
        let d = Digest::of(b"d");
        assert!(matches!(l.peer_vote(OrderId(1), far, d), PeerVote::Counted));
        assert!(matches!(
            l.peer_vote(OrderId(1), far + CP, d),
            PeerVote::Counted
        ));
        assert!(matches!(
            l.peer_vote(OrderId(1), far, d),
            PeerVote::FarStale
        ));
        assert_eq!(l.newest_vote_of(OrderId(1)), Some(far + CP));
        assert!(
            matches!(l.peer_vote(OrderId(1), Seq(7), d), PeerVote::Ignored),
            "not a checkpoint"
        );
        l.check_invariants(OrderId(0)).unwrap();
    }

    #[test]
    fn a_vote_left_below_the_stable_checkpoint_breaks_an_invariant() {
        let mut l = ledger();
        let (d8, bytes8) = make(&mut l, Seq(8));
        let token = l.learned_token(Seq(8)).unwrap();
        l.advance(Seq(8), d8, bytes8, token);
        l.vote(OrderId(2), Seq(8), d8);
        let broken = l.check_invariants(OrderId(0)).unwrap_err();
        assert_eq!(broken.name, "INV-checkpoints-above-stable");
    }
}
