//! What the execution stage tells and asks an authentication replica (seed 004 Figure 5.7
//! lines 25-46, §5.3.3): BATCH-COMPLETE (requests ordered: clear pending entries, move their
//! bodies to the command cache, garbage-collect old intervals) and FETCH (serve a body, AL2).
//!
//! A BATCH-COMPLETE value `(seq, executed)` is acted on only once `r + 1` distinct execution
//! replicas reported the identical value, so at least one correct replica vouches for it: a
//! faulty execution replica alone can neither clear pending entries (which would let a client
//! get a second request pending, against AS4) nor push garbage collection ahead (which would
//! drop bodies still needed, against AS2).

use crate::cache::Cached;
use crate::recovery::{
    cached_key, cached_prefix, cached_superseded_key, superseded_key, CachedRecord,
};
use crate::AuthReplica;
use plumb_core::{storage, Action, DropReason, StoreOp};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, ExecId, Executed, Message, Principal, ReqNo, Seq};
use std::collections::{BTreeMap, BTreeSet};

/// Values already acted on remembered per batch number, so late votes for them are ignored
/// cheaply. Forgetting one only means a late vote may be acted on again, which is idempotent.
const ACTED_MEMORY: usize = 8;

/// Votes of execution replicas on BATCH-COMPLETE values, bounded: one outstanding vote per
/// replica per batch number (a newer report replaces an older one), at most
/// `per_replica_cap` outstanding batch numbers per replica (its oldest vote goes first), and
/// nothing for batches whose bodies are already garbage-collected.
#[derive(Debug, Default)]
pub(crate) struct CompletionVotes {
    by_seq: BTreeMap<Seq, SeqVotes>,
    /// The batch numbers each execution replica has an outstanding vote for.
    outstanding: BTreeMap<ExecId, BTreeSet<Seq>>,
}

#[derive(Debug, Default)]
struct SeqVotes {
    votes: BTreeMap<ExecId, Vec<Executed>>,
    acted: Vec<Digest>,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Vote {
    /// The value reached its quorum now: act on it.
    Quorum,
    Waiting,
    AlreadyActed,
}

fn value_digest(executed: &[Executed]) -> Digest {
    Digest::of(&storage::encode(&executed))
}

impl CompletionVotes {
    pub fn vote(
        &mut self,
        replica: ExecId,
        seq: Seq,
        executed: &[Executed],
        quorum: usize,
        per_replica_cap: usize,
    ) -> Vote {
        let digest = value_digest(executed);
        let entry = self.by_seq.entry(seq).or_default();
        if entry.acted.contains(&digest) {
            return Vote::AlreadyActed;
        }
        entry.votes.insert(replica, executed.to_vec());
        let matching: Vec<ExecId> = entry
            .votes
            .iter()
            .filter(|(_, v)| v.as_slice() == executed)
            .map(|(r, _)| *r)
            .collect();
        if matching.len() >= quorum {
            for r in &matching {
                entry.votes.remove(r);
                if let Some(seqs) = self.outstanding.get_mut(r) {
                    seqs.remove(&seq);
                }
            }
            entry.acted.push(digest);
            if entry.acted.len() > ACTED_MEMORY {
                entry.acted.remove(0);
            }
            return Vote::Quorum;
        }
        let mine = self.outstanding.entry(replica).or_default();
        mine.insert(seq);
        if mine.len() > per_replica_cap {
            if let Some(oldest) = mine.pop_first() {
                self.remove_vote(replica, oldest);
            }
        }
        Vote::Waiting
    }

    fn remove_vote(&mut self, replica: ExecId, seq: Seq) {
        if let Some(entry) = self.by_seq.get_mut(&seq) {
            entry.votes.remove(&replica);
            if entry.votes.is_empty() && entry.acted.is_empty() {
                self.by_seq.remove(&seq);
            }
        }
    }

    /// Forget everything about batches below `floor`.
    pub fn forget_below(&mut self, floor: Seq) {
        self.by_seq = self.by_seq.split_off(&floor);
        for seqs in self.outstanding.values_mut() {
            *seqs = seqs.split_off(&floor);
        }
        self.outstanding.retain(|_, seqs| !seqs.is_empty());
    }

    /// Outstanding votes held (for tests: memory stays bounded).
    #[cfg(test)]
    pub fn outstanding(&self) -> usize {
        self.by_seq.values().map(|e| e.votes.len()).sum()
    }
}

impl AuthReplica {
    /// The first batch number whose bodies are still kept: the start of interval `k - 2`, where
    /// `k` is the interval of the highest batch acted on. Three intervals are kept (§5.3.3).
    pub(crate) fn kept_floor(&self) -> Seq {
        let cp = self.cfg.checkpoint_interval.max(1);
        self.highest_ordered
            .map_or(Seq::ZERO, |h| Seq(h.interval(cp).saturating_sub(2) * cp))
    }

    /// Outstanding BATCH-COMPLETE votes an execution replica may have: enough for the three
    /// kept intervals, so a correct replica's votes are not pushed out in normal operation.
    fn vote_cap(&self) -> usize {
        usize::try_from(self.cfg.checkpoint_interval.saturating_mul(3))
            .unwrap_or(usize::MAX)
            .max(1)
    }

    pub(crate) fn on_batch_complete(
        &mut self,
        e: ExecId,
        seq: Seq,
        executed: Vec<Executed>,
        out: &mut Vec<Action>,
    ) {
        if e.index() >= self.q.exec {
            self.counters.dropped(DropReason::Unexpected);
            return;
        }
        // A correct replica reports at most one batch's requests (or one client on the
        // retransmission path); anything larger is a faulty replica trying to pin memory.
        if executed.len() > self.cfg.batch_max {
            self.counters.dropped(DropReason::OversizedBatchComplete);
            return;
        }
        if seq < self.kept_floor() {
            // Its bodies would land in an interval already collected; a stale pending entry
            // it might clear is cleared by the retransmission path instead.
            self.counters.add("batch-complete-stale");
            return;
        }
        let quorum = self.q.exec_learn();
        let cap = self.vote_cap();
        if self.votes.vote(e, seq, &executed, quorum, cap) == Vote::Quorum {
            self.act_on_ordered(seq, &executed, out);
        }
        self.count_executed(e, &executed, quorum, out);
    }

    /// Execution replicas at different points report retransmission-path completions with
    /// different batch numbers, so whole values may never match. For clearing a pending entry
    /// only "(c, nc) executed" matters: r+1 distinct replicas saying so include a correct one.
    /// Garbage collection still waits for matching whole values.
    fn count_executed(
        &mut self,
        e: ExecId,
        executed: &[Executed],
        quorum: usize,
        out: &mut Vec<Action>,
    ) {
        for &Executed { client, nc } in executed {
            let Some(pending_nc) = self.pending.get(&client).map(|p| p.nc) else {
                continue;
            };
            if nc < pending_nc {
                continue;
            }
            let votes = self.executed_votes.entry(client).or_default();
            if votes.0 != pending_nc {
                *votes = (pending_nc, BTreeSet::new());
            }
            votes.1.insert(e);
            if votes.1.len() >= quorum {
                self.executed_votes.remove(&client);
                // File the body under the newest interval acted on: kept at least as long as
                // the batch it was really ordered in needs it.
                let seq = self.highest_ordered.unwrap_or(Seq::ZERO);
                self.clear_pending(seq, &[Executed { client, nc }], out);
            }
        }
    }

    /// Requests `executed` are ordered no later than batch `seq`: clear their pending entries,
    /// moving each body into the cache under the interval of `seq`, then garbage-collect.
    ///
    /// A pending entry is cleared when the executed number is at least the pending one (Figure
    /// 5.7 line 37). Unlike line 38, the body moves to the cache even when the executed number
    /// is *higher*: the order stage orders a client's requests in sequence (OS3), so the pending
    /// request was ordered in some batch before `seq` whose BATCH-COMPLETE this replica missed,
    /// and that batch may still need the body fetched (AS2). Filing it under `seq`'s interval
    /// keeps it at least as long as its real batch needs it.
    fn act_on_ordered(&mut self, seq: Seq, executed: &[Executed], out: &mut Vec<Action>) {
        self.clear_pending(seq, executed, out);
        self.advance_highest(seq, out);
    }

    fn clear_pending(&mut self, seq: Seq, executed: &[Executed], out: &mut Vec<Action>) {
        let interval = seq.interval(self.cfg.checkpoint_interval.max(1));
        for &Executed { client, nc } in executed {
            if !matches!(self.pending.get(&client), Some(p) if nc >= p.nc) {
                continue;
            }
            let Some(p) = self.pending.remove(&client) else {
                continue;
            };
            // No sync: the body stays in `auth/req/{c}` until a later request of the client
            // overwrites it with put + sync, and that sync makes this put durable first.
            // `auth/req/{c}` is not deleted: it is the durable lastSent[c] (AS3 across
            // restarts), and recovery tells pending from ordered by this cache record.
            let record = CachedRecord {
                client,
                nc: p.nc,
                seq,
                op: p.op,
            };
            out.push(Action::Store(StoreOp::Put {
                key: cached_key(interval, client, p.nc),
                value: storage::encode(&record),
            }));
            self.cache.insert(
                interval,
                client,
                p.nc,
                Cached {
                    op: record.op,
                    digest: p.digest,
                    seq,
                },
            );
            // The bodies it superseded under the same number go with it: which one was
            // ordered is not in a BATCH-COMPLETE, and an execution replica that loads an
            // earlier checkpoint fetches it again. Each gets a cache record of its own, in
            // the interval garbage collection drops (`auth/sup/{c}` goes: no sync, as above).
            if let Some(olds) = self.superseded.remove(&client) {
                for old in olds {
                    if old.nc != p.nc || old.digest == p.digest {
                        continue;
                    }
                    let record = CachedRecord {
                        client,
                        nc: old.nc,
                        seq,
                        op: old.op,
                    };
                    out.push(Action::Store(StoreOp::Put {
                        key: cached_superseded_key(interval, client, old.nc, old.digest),
                        value: storage::encode(&record),
                    }));
                    let body = Cached {
                        op: record.op,
                        digest: old.digest,
                        seq,
                    };
                    self.cache.insert(interval, client, old.nc, body);
                }
                out.push(Action::Store(StoreOp::Delete {
                    key: superseded_key(client),
                }));
            }
            self.counters.add("ordered");
            self.executed_votes.remove(&client);
            if let Some((life, next, op)) = self.deferred.remove(&client) {
                self.on_request(client, life, next, op, out);
            }
        }
    }

    /// The first time a batch of a new checkpoint interval `k` is acted on, drop the cache
    /// intervals below `k - 2` from memory and disk (§5.3.3).
    fn advance_highest(&mut self, seq: Seq, out: &mut Vec<Action>) {
        let previous = self.highest_ordered;
        if previous.is_some_and(|h| seq <= h) {
            return;
        }
        self.highest_ordered = Some(seq);
        let cp = self.cfg.checkpoint_interval.max(1);
        if previous.is_some_and(|h| h.interval(cp) == seq.interval(cp)) {
            return;
        }
        let floor = self.kept_floor();
        self.parked.drop_below(floor);
        for interval in self.cache.drop_below(floor.interval(cp)) {
            out.push(Action::Store(StoreOp::DeletePrefix {
                prefix: cached_prefix(interval),
            }));
            self.counters.add("gc-interval");
        }
        self.votes.forget_below(floor);
    }

    /// FETCH (AL2): serve the body of `(client, nc)` if this replica holds one matching
    /// `digest`, from the pending table or the command cache.
    pub(crate) fn on_fetch(
        &mut self,
        e: ExecId,
        seq: Seq,
        client: ClientId,
        nc: ReqNo,
        digest: Digest,
        out: &mut Vec<Action>,
    ) {
        let pending = self
            .pending
            .get(&client)
            .filter(|p| p.nc == nc && p.digest == digest)
            .map(|p| &p.op);
        let cached = || self.cache.get(client, nc, digest).map(|c| &c.op);
        let superseded = || {
            self.superseded
                .get(&client)?
                .iter()
                .find(|p| p.nc == nc && p.digest == digest)
                .map(|p| &p.op)
        };
        let Some(op) = pending.or_else(cached).or_else(superseded).cloned() else {
            // A request ordered on other replicas' vouchers may still be on its way here: an
            // execution replica asks one replica first, and retrying only on its timer would
            // stall the batch for that long. Park the FETCH; `serve_parked` answers it when
            // the request is authenticated.
            let known = self
                .last_sent
                .get(&client)
                .map_or(ReqNo::NONE, |l| l.core.nc);
            if nc > known
                && self.parked.park(
                    client,
                    nc,
                    ParkedFetch {
                        exec: e,
                        seq,
                        digest,
                    },
                )
            {
                self.counters.add("fetch-parked");
            } else {
                self.counters.add("fetch-miss");
            }
            return;
        };
        self.serve_fetch(e, seq, client, nc, op, out);
    }

    fn serve_fetch(
        &mut self,
        e: ExecId,
        seq: Seq,
        client: ClientId,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        self.send(
            Principal::Exec(e),
            &Message::Command {
                seq,
                client,
                nc,
                op,
            },
            out,
        );
        self.counters.add("fetch-served");
    }

    /// Request `(client, nc)` with body `op` (digest `digest`) was just authenticated: answer
    /// the FETCHes parked for it, and forget older ones of that client, which can no longer
    /// be answered from here.
    pub(crate) fn serve_parked(
        &mut self,
        client: ClientId,
        nc: ReqNo,
        digest: Digest,
        op: &[u8],
        out: &mut Vec<Action>,
    ) {
        for f in self.parked.take_upto(client, nc) {
            if f.nc == nc && f.fetch.digest == digest {
                self.serve_fetch(f.fetch.exec, f.fetch.seq, client, nc, op.to_vec(), out);
            }
        }
    }
}

/// A FETCH waiting for its request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParkedFetch {
    pub(crate) exec: ExecId,
    pub(crate) seq: Seq,
    pub(crate) digest: Digest,
}

pub(crate) struct Parked {
    pub(crate) nc: ReqNo,
    pub(crate) fetch: ParkedFetch,
}

/// FETCHes parked by client and request number, bounded: a faulty execution replica could ask
/// for requests that never come. When full, new ones are refused (the asker retries on its
/// timer, from every replica).
#[derive(Default)]
pub(crate) struct ParkedFetches {
    by_client: BTreeMap<ClientId, Vec<Parked>>,
    len: usize,
}

/// Most FETCHes parked at once.
pub(crate) const PARKED_MAX: usize = 4096;

impl ParkedFetches {
    pub(crate) fn park(&mut self, client: ClientId, nc: ReqNo, fetch: ParkedFetch) -> bool {
        if self.len >= PARKED_MAX {
            return false;
        }
        self.by_client
            .entry(client)
            .or_default()
            .push(Parked { nc, fetch });
        self.len += 1;
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Forget FETCHes for batches below `seq`: their requests were not this replica's to get.
    pub(crate) fn drop_below(&mut self, seq: Seq) {
        for list in self.by_client.values_mut() {
            list.retain(|p| p.fetch.seq >= seq);
        }
        self.by_client.retain(|_, list| !list.is_empty());
        self.len = self.by_client.values().map(Vec::len).sum();
    }

    /// Every FETCH parked for `client` at or below `nc`.
    pub(crate) fn take_upto(&mut self, client: ClientId, nc: ReqNo) -> Vec<Parked> {
        let Some(list) = self.by_client.get_mut(&client) else {
            return Vec::new();
        };
        let (taken, kept): (Vec<Parked>, Vec<Parked>) = list.drain(..).partition(|p| p.nc <= nc);
        self.len -= taken.len();
        if kept.is_empty() {
            self.by_client.remove(&client);
        } else {
            *list = kept;
        }
        taken
    }
}
