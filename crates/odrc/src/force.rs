//! When to run a stored request after all because its client could not collect `r + 1`
//! matching replies (seed 003 §4.2.2, Figure 4's `force_request`; the selector's
//! [`crate::Selector::force`] does the rest).
//!
//! A client that gets too few matching replies retransmits; each order replica that sees the
//! retransmission tells the execution replicas (RETRANSMIT). A replica forces the client's
//! request once `r + 1` order replicas asked within one period, so that a correct one among
//! them saw the client retransmit: `r` faulty order replicas alone force nothing. And it
//! forces at most once per client per period, so that a Byzantine client that retransmits at
//! will makes replicas do work, but not unbounded work.
//!
//! What a faulty order replica names cannot crowd out the others: each order replica's asks
//! are kept apart, at most [`ASKS_PER_REPLICA`] of them, and one that names more clients only
//! evicts its own oldest asks.

use plumb_wire::{ClientId, OrderId};
use std::collections::HashMap;

/// Pending asks kept per order replica; a faulty one naming more clients evicts its own.
pub const ASKS_PER_REPLICA: usize = 1024;

/// What one RETRANSMIT leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForceVerdict {
    /// `r + 1` order replicas asked within the period: force the client's stored request now.
    Force,
    /// Fewer have asked so far.
    Waiting,
    /// The client's request was forced here less than a period ago.
    RateLimited,
    /// The sender is not an order replica of this configuration.
    NoSuchReplica,
}

/// RETRANSMIT votes and forced executions, per client, of one execution replica.
#[derive(Clone, Debug)]
pub struct Forcing {
    /// `r + 1`.
    quorum: usize,
    /// How long an ask counts, and how long after forcing a client's request another force of
    /// it waits, in microseconds.
    period: u64,
    /// Per order replica: the clients it asked for, and when it last did.
    asks: Vec<HashMap<ClientId, u64>>,
    /// When each client's request was last forced here. Every entry took a correct order
    /// replica's ask, so the clients in it retransmitted; those older than a period are
    /// dropped when it reaches `prune_at`, which then doubles its size after pruning.
    forced: HashMap<ClientId, u64>,
    prune_at: usize,
}

/// The smallest table of forced clients that is pruned.
const FORCED_PRUNE_MIN: usize = 1024;

impl Forcing {
    /// `quorum` is `r + 1`; `order_replicas` the number of order replicas; `period` in
    /// microseconds (the execution stage's catch-up period).
    ///
    /// # Panics
    /// If `quorum` is 0 or above `order_replicas`: no set of order replicas could then make a
    /// force safe and live at once, and a configuration that asks for it is a bug.
    pub fn new(quorum: usize, order_replicas: usize, period: u64) -> Forcing {
        assert!(
            quorum >= 1 && quorum <= order_replicas,
            "a force quorum of {quorum} among {order_replicas} order replicas"
        );
        Forcing {
            quorum,
            period,
            asks: vec![HashMap::new(); order_replicas],
            forced: HashMap::new(),
            prune_at: FORCED_PRUNE_MIN,
        }
    }

    /// Order replica `from` relayed a retransmission of `client`'s request at `now`.
    pub fn on_retransmit(&mut self, now: u64, from: OrderId, client: ClientId) -> ForceVerdict {
        let period = self.period;
        let fresh = move |t: u64| now < t.saturating_add(period);
        if from.index() >= self.asks.len() {
            return ForceVerdict::NoSuchReplica;
        }
        if self.forced.get(&client).is_some_and(|&t| fresh(t)) {
            return ForceVerdict::RateLimited;
        }
        let mine = &mut self.asks[from.index()];
        if mine.len() >= ASKS_PER_REPLICA && !mine.contains_key(&client) {
            mine.retain(|_, t| fresh(*t));
            if mine.len() >= ASKS_PER_REPLICA {
                let oldest = mine.iter().min_by_key(|(c, t)| (**t, **c)).map(|(c, _)| *c);
                if let Some(c) = oldest {
                    mine.remove(&c);
                }
            }
        }
        mine.insert(client, now);
        let asked = self
            .asks
            .iter()
            .filter(|a| a.get(&client).is_some_and(|&t| fresh(t)))
            .count();
        if asked < self.quorum {
            return ForceVerdict::Waiting;
        }
        for a in &mut self.asks {
            a.remove(&client);
        }
        if self.forced.len() >= self.prune_at {
            self.forced.retain(|_, t| fresh(*t));
            self.prune_at = FORCED_PRUNE_MIN.max(2 * self.forced.len());
        }
        self.forced.insert(client, now);
        ForceVerdict::Force
    }

    /// The invariants; a broken one panics, naming it.
    pub fn check_invariants(&self) {
        for (o, a) in self.asks.iter().enumerate() {
            assert!(
                a.len() <= ASKS_PER_REPLICA,
                "o{o} holds {} asks, more than {ASKS_PER_REPLICA}",
                a.len()
            );
        }
        assert!(
            self.forced.len() <= self.prune_at,
            "{} forced clients remembered, pruned at {}",
            self.forced.len(),
            self.prune_at
        );
    }
}
