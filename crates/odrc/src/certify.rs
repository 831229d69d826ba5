//! Certified partition roots (seed 003 §3.4 and §4.2.2, at plumb's checkpoints): how replicas
//! whose states legitimately differ agree on a checkpoint.
//!
//! Under selective execution a replica keeps only the partitions it maintains current, so
//! its object tree's root is no checkpoint anyone else shares. Instead, at each checkpoint
//! every replica reports the roots of the partitions it holds current there (the nodes of its
//! object tree at the partition depth); a partition's root at that checkpoint is *certified*
//! by `r + 1` matching reports from distinct replicas, so by at least one correct one. Once
//! every partition's root is certified the checkpoint is: a replica then holds each partition
//! it does not maintain as its certified digest, and its tree's root (the checkpoint token)
//! is the same as every correct replica's.
//!
//! When a partition's maintainers do not agree in time (one is faulty, crashed or slow), the
//! replica cannot tell which of them is at fault, so it *suspects* them all, and every
//! partition a suspect maintains is *forced* here (seed 003 Figure 5): from the next
//! checkpoint on, this replica brings those partitions up to date at each checkpoint and
//! reports their roots too. Every correct replica does the same, so a forced partition is
//! reported by every correct replica and certifies whatever its faulty maintainers say. A
//! suspect is cleared after [`WINDOW`] certified checkpoints in a row, after the one it was
//! suspected at, for which it reported every partition it maintains, matching the certified
//! roots. A certified checkpoint still takes late reports, and is judged when the next one
//! certifies, so a correct replica that is slower than the quorum is cleared too. So each faulty
//! replica can hold up at most one checkpoint in `WINDOW + 2`, one that always lies only the
//! first, and with up to `u` of them a checkpoint certifies at least every `u + 1`. Suspecting
//! by partition instead would let one faulty replica hold up a checkpoint per partition it
//! maintains, one after the other.
//!
//! Reports come from other replicas, who may be faulty: a report is dropped, with its
//! [`Refusal`], unless it is for a checkpoint (a multiple of the interval) above the
//! certified one and at most [`WINDOW`] checkpoints ahead of it, and a replica's first root
//! for a partition at a checkpoint is the only one counted. Memory is bounded by the window,
//! the partitions and the replicas.

use crate::maintenance::{Maintenance, Partition};
use plumb_crypto::Digest;
use plumb_wire::{ExecId, Micros, Seq};
use std::collections::{BTreeMap, BTreeSet};

/// Checkpoints above the certified one that reports are kept for. The order stage orders at
/// most two checkpoint intervals past its stable checkpoint, which under selective execution
/// is at most the certified one, so a correct replica's reports are never too far ahead.
pub const WINDOW: u64 = 4;

/// Most partition bits: every report carries up to `2^b` roots of 32 bytes.
pub const PARTITION_BITS_MAX: u8 = 12;

/// Why a report was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Its sequence number is not a checkpoint's.
    NotACheckpoint,
    /// The checkpoint is certified already, or older.
    Certified,
    /// More than [`WINDOW`] checkpoints ahead of the certified one.
    TooFarAhead,
    /// A partition that does not exist.
    NoSuchPartition,
    /// The replica reported another root for this partition at this checkpoint before.
    Equivocation,
    /// A replica that does not exist.
    NoSuchReplica,
}

/// Why a certifier cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CertifierError {
    #[error("{quorum} matching reports needed but only {replicas} execution replicas")]
    Quorum { quorum: usize, replicas: usize },
    #[error("replica {0:?} is not one of the {1} execution replicas")]
    NoSuchReplica(ExecId, usize),
    #[error("{0} partition bits: at most {PARTITION_BITS_MAX} (every report carries a root per partition)")]
    PartitionBits(u8),
    #[error("checkpoint interval 0")]
    Interval,
}

/// One checkpoint's reports.
#[derive(Clone, Debug, Default)]
struct Round {
    /// When it times out: set when this replica reaches the checkpoint.
    deadline: Option<Micros>,
    /// Each replica's root for each partition.
    votes: BTreeMap<Partition, BTreeMap<ExecId, Digest>>,
    /// The partitions certified, with their roots.
    roots: BTreeMap<Partition, Digest>,
}

impl Round {
    /// Count `from`'s roots (its first for each partition) and certify the partitions that
    /// reach `quorum` matching ones. Returns why a root was dropped, if one was.
    fn count(
        &mut self,
        from: ExecId,
        roots: &[(Partition, Digest)],
        partitions: u32,
        quorum: usize,
    ) -> Option<Refusal> {
        let mut refused = None;
        for &(p, root) in roots {
            if p.0 >= partitions {
                refused = Some(Refusal::NoSuchPartition);
                continue;
            }
            let votes = self.votes.entry(p).or_default();
            match votes.get(&from) {
                Some(earlier) if *earlier != root => refused = Some(Refusal::Equivocation),
                Some(_) => {}
                None => {
                    votes.insert(from, root);
                }
            }
            if let std::collections::btree_map::Entry::Vacant(uncertified) = self.roots.entry(p) {
                if votes.values().filter(|&&d| d == root).count() >= quorum {
                    uncertified.insert(root);
                }
            }
        }
        refused
    }
}

/// The partition roots of one execution replica's checkpoints.
#[derive(Clone, Debug)]
pub struct Certifier {
    me: ExecId,
    maintenance: Maintenance,
    /// Matching reports that certify a root: `r + 1`.
    quorum: usize,
    interval: u64,
    timeout: Micros,
    /// The last checkpoint whose every partition is certified.
    certified: Seq,
    /// Its round, taking late reports until the next checkpoint certifies and it is judged.
    last: Round,
    /// The rounds above it.
    rounds: BTreeMap<Seq, Round>,
    suspects: BTreeMap<ExecId, Suspicion>,
}

/// Why and for how long a replica is suspected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Suspicion {
    /// The checkpoint it was last suspected at: only later ones clear it.
    at: Seq,
    /// Clean certified checkpoints it still needs.
    needed: u64,
}

impl Certifier {
    /// The certifier of replica `me` under `maintenance`, certifying with `quorum` (`r + 1`)
    /// matching reports, at checkpoints every `interval` batches; a checkpoint not certified
    /// `timeout` after this replica reached it gets its maintainers suspected.
    pub fn new(
        me: ExecId,
        maintenance: Maintenance,
        quorum: usize,
        interval: u64,
        timeout: Micros,
    ) -> Result<Certifier, CertifierError> {
        let replicas = maintenance.replicas();
        if me.index() >= replicas {
            return Err(CertifierError::NoSuchReplica(me, replicas));
        }
        if quorum == 0 || quorum > replicas {
            return Err(CertifierError::Quorum { quorum, replicas });
        }
        if maintenance.partition_depth() > PARTITION_BITS_MAX {
            return Err(CertifierError::PartitionBits(maintenance.partition_depth()));
        }
        if interval == 0 {
            return Err(CertifierError::Interval);
        }
        Ok(Certifier {
            me,
            maintenance,
            quorum,
            interval,
            timeout,
            certified: Seq::ZERO,
            last: Round::default(),
            rounds: BTreeMap::new(),
            suspects: BTreeMap::new(),
        })
    }

    /// The last certified checkpoint.
    pub fn certified(&self) -> Seq {
        self.certified
    }

    /// Partition `p`'s root at the last certified checkpoint (`None` before the first).
    pub fn certified_root(&self, p: Partition) -> Option<Digest> {
        self.last.roots.get(&p).copied()
    }

    /// The partitions this replica brings up to date and reports at its next checkpoint: those
    /// it maintains and those forced here, in order.
    pub fn to_report(&self) -> Vec<Partition> {
        (0..self.maintenance.partitions())
            .map(Partition)
            .filter(|&p| self.maintenance.maintains(self.me, p) || self.is_forced(p))
            .collect()
    }

    /// Partitions forced here: not maintained here, and a suspect maintains them.
    pub fn forced(&self) -> impl Iterator<Item = Partition> + '_ {
        (0..self.maintenance.partitions())
            .map(Partition)
            .filter(|&p| self.is_forced(p))
    }

    fn is_forced(&self, p: Partition) -> bool {
        !self.maintenance.maintains(self.me, p)
            && self
                .maintenance
                .maintainers(p)
                .any(|e| self.suspects.contains_key(&e))
    }

    /// Replicas suspected here.
    pub fn suspects(&self) -> impl Iterator<Item = ExecId> + '_ {
        self.suspects.keys().copied()
    }

    /// This replica reached checkpoint `seq` at `now` with these roots (those of
    /// [`Certifier::to_report`]): counted as its report, and the checkpoint times out
    /// `timeout` from now. Returns the checkpoint if that certified it.
    pub fn on_checkpoint(
        &mut self,
        seq: Seq,
        now: Micros,
        roots: &[(Partition, Digest)],
    ) -> Option<Seq> {
        if self.refusal(self.me, seq).is_some() {
            // A checkpoint certified before this replica reached it: nothing to add.
            return None;
        }
        self.rounds.entry(seq).or_default().deadline = Some(now.saturating_add(self.timeout));
        self.on_report(self.me, seq, roots).ok().flatten()
    }

    /// Replica `from`'s roots at checkpoint `seq`. Returns the checkpoint if that certified
    /// it, or why the report was dropped (roots for partitions that do not exist, or that
    /// contradict what `from` reported before, are dropped one by one; the rest count).
    pub fn on_report(
        &mut self,
        from: ExecId,
        seq: Seq,
        roots: &[(Partition, Digest)],
    ) -> Result<Option<Seq>, Refusal> {
        let partitions = self.maintenance.partitions();
        let round = if seq == self.certified
            && seq > Seq::ZERO
            && from.index() < self.maintenance.replicas()
        {
            // Late: kept to judge suspects by, and certifying nothing more.
            &mut self.last
        } else if let Some(refusal) = self.refusal(from, seq) {
            return Err(refusal);
        } else {
            self.rounds.entry(seq).or_default()
        };
        let refused = round.count(from, roots, partitions, self.quorum);
        if seq > self.certified && round.roots.len() == partitions as usize {
            self.certify(seq);
            return Ok(Some(seq));
        }
        match refused {
            Some(refusal) => Err(refusal),
            None => Ok(None),
        }
    }

    /// The time is `now`: the other maintainers of every partition not certified at a
    /// checkpoint past its deadline are suspected (again: their count starts over). Returns
    /// the partitions newly forced here.
    pub fn on_tick(&mut self, now: Micros) -> Vec<Partition> {
        let before: BTreeSet<Partition> = self.forced().collect();
        let mut late = BTreeSet::new();
        for round in self.rounds.values() {
            if round.deadline.is_none_or(|d| now < d) {
                continue;
            }
            late.extend(
                (0..self.maintenance.partitions())
                    .map(Partition)
                    .filter(|p| !round.roots.contains_key(p)),
            );
        }
        // Suspected at the newest checkpoint seen: only later ones can clear them.
        let at = self
            .rounds
            .keys()
            .next_back()
            .copied()
            .unwrap_or(self.certified);
        for p in late {
            for e in self.maintenance.maintainers(p).filter(|&e| e != self.me) {
                self.suspects.insert(e, Suspicion { at, needed: WINDOW });
            }
        }
        self.forced().filter(|p| !before.contains(p)).collect()
    }

    fn refusal(&self, from: ExecId, seq: Seq) -> Option<Refusal> {
        if from.index() >= self.maintenance.replicas() {
            Some(Refusal::NoSuchReplica)
        } else if !seq.0.is_multiple_of(self.interval) || seq == Seq::ZERO {
            Some(Refusal::NotACheckpoint)
        } else if seq <= self.certified {
            Some(Refusal::Certified)
        } else if seq.0 > self.certified.0.saturating_add(WINDOW * self.interval) {
            Some(Refusal::TooFarAhead)
        } else {
            None
        }
    }

    /// Every partition of checkpoint `seq` is certified: it becomes the certified checkpoint,
    /// older rounds go, and the previous certified checkpoint, with its late reports, is
    /// judged: each suspect suspected before it that reported every partition it maintains,
    /// matching the certified roots, is a checkpoint closer to being cleared, and the others
    /// suspected before it start over.
    fn certify(&mut self, seq: Seq) {
        let later = self.rounds.split_off(&seq.next());
        let round = self.rounds.remove(&seq).expect("the round being certified");
        self.rounds = later;
        let judged = std::mem::replace(&mut self.last, round);
        let maintenance = self.maintenance;
        let clean = |e: ExecId| {
            (0..maintenance.partitions())
                .map(Partition)
                .filter(|&p| maintenance.maintains(e, p))
                .all(|p| judged.votes.get(&p).and_then(|v| v.get(&e)) == judged.roots.get(&p))
        };
        let previous = self.certified;
        self.suspects.retain(|&e, s| {
            if s.at < previous {
                s.needed = if clean(e) { s.needed - 1 } else { WINDOW };
            }
            s.needed > 0
        });
        self.certified = seq;
        self.check_invariants();
    }

    /// The certifier's invariants; a broken one panics, naming it.
    pub fn check_invariants(&self) {
        assert!(
            self.certified == Seq::ZERO
                || self.last.roots.len() == self.maintenance.partitions() as usize,
            "a certified checkpoint has a root for every partition"
        );
        if let Some((&first, _)) = self.rounds.first_key_value() {
            assert!(
                first > self.certified,
                "no round at or below the certified checkpoint"
            );
        }
        if let Some((&last, _)) = self.rounds.last_key_value() {
            assert!(
                last.0 <= self.certified.0 + WINDOW * self.interval,
                "rounds within the window"
            );
        }
        for round in self.rounds.values().chain([&self.last]) {
            for (p, root) in &round.roots {
                let matching = round.votes[p].values().filter(|&d| d == root).count();
                assert!(
                    matching >= self.quorum,
                    "{p} certified by {matching} reports"
                );
            }
        }
        assert!(
            !self.suspects.contains_key(&self.me),
            "a replica never suspects itself"
        );
        assert!(
            self.suspects
                .values()
                .all(|s| (1..=WINDOW).contains(&s.needed)),
            "a suspect needs 1 to WINDOW clean checkpoints"
        );
    }
}
