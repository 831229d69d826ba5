//! Push events (seed 004 §5.5): an unreliable channel from the execution stage. An event is
//! delivered once `r + 1` distinct execution replicas sent the same payload for its id, so at
//! least one correct replica vouches for it; each id is delivered at most once.

use plumb_wire::ExecId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Undelivered events one replica may hold votes for. A faulty replica that invents ids only
/// evicts its own oldest votes.
pub(crate) const OPEN_PER_REPLICA: usize = 64;
/// Delivered ids are remembered this far below the highest delivered id; events older than
/// that are refused as stale (they may have been delivered and forgotten).
pub(crate) const DELIVERED_WINDOW: u64 = 1024;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PushVote {
    Deliver(Vec<u8>),
    Pending,
    Duplicate,
    Stale,
}

#[derive(Debug, Default)]
pub(crate) struct PushVotes {
    /// Event id -> replica -> payload it sent.
    ballots: BTreeMap<u64, HashMap<ExecId, Vec<u8>>>,
    /// Replica -> undelivered event ids it voted for.
    open: HashMap<ExecId, BTreeSet<u64>>,
    delivered: BTreeSet<u64>,
    highest: Option<u64>,
}

impl PushVotes {
    /// Record `replica`'s payload for `event`; a later payload from the same replica replaces
    /// its earlier one.
    pub(crate) fn vote(
        &mut self,
        replica: ExecId,
        event: u64,
        payload: Vec<u8>,
        quorum: usize,
    ) -> PushVote {
        if self.delivered.contains(&event) {
            return PushVote::Duplicate;
        }
        if self.forgotten(event) {
            return PushVote::Stale;
        }
        let ballot = self.ballots.entry(event).or_default();
        ballot.insert(replica, payload);
        let agreeing = ballot
            .get(&replica)
            .map_or(0, |p| ballot.values().filter(|q| *q == p).count());
        let open = self.open.entry(replica).or_default();
        open.insert(event);
        if agreeing >= quorum {
            return PushVote::Deliver(self.settle(event, replica));
        }
        if open.len() > OPEN_PER_REPLICA {
            if let Some(oldest) = open.pop_first() {
                self.drop_vote(replica, oldest);
            }
        }
        PushVote::Pending
    }

    fn forgotten(&self, event: u64) -> bool {
        self.highest
            .is_some_and(|h| event < h.saturating_sub(DELIVERED_WINDOW))
    }

    fn drop_vote(&mut self, replica: ExecId, event: u64) {
        if let Some(ballot) = self.ballots.get_mut(&event) {
            ballot.remove(&replica);
            if ballot.is_empty() {
                self.ballots.remove(&event);
            }
        }
    }

    /// Deliver `event` and return the payload `winner` voted for.
    fn settle(&mut self, event: u64, winner: ExecId) -> Vec<u8> {
        let mut ballot = self.ballots.remove(&event).unwrap_or_default();
        for replica in ballot.keys() {
            if let Some(open) = self.open.get_mut(replica) {
                open.remove(&event);
            }
        }
        self.delivered.insert(event);
        let highest = self.highest.map_or(event, |h| h.max(event));
        self.highest = Some(highest);
        self.forget_below(highest.saturating_sub(DELIVERED_WINDOW));
        ballot.remove(&winner).unwrap_or_default()
    }

    fn forget_below(&mut self, floor: u64) {
        self.delivered = self.delivered.split_off(&floor);
        self.ballots = self.ballots.split_off(&floor);
        for open in self.open.values_mut() {
            *open = open.split_off(&floor);
        }
        self.open.retain(|_, open| !open.is_empty());
    }

    /// Votes and delivered ids held (for bounds checks in tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.ballots.values().map(|b| b.len()).sum::<usize>() + self.delivered.len()
    }
}
