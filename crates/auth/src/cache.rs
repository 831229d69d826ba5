//! The bodies an authentication replica holds (seed 004 §5.3.3): the pending table (at most
//! one authenticated, not-yet-ordered request per client) and the command cache (bodies of
//! ordered requests, by checkpoint interval of the batch that ordered them).

use plumb_core::Micros;
use plumb_crypto::Digest;
use plumb_wire::{ClientId, ReqNo, Seq};
use std::collections::BTreeMap;

/// An authenticated request body not yet known to be ordered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    pub nc: ReqNo,
    pub op: Vec<u8>,
    /// `H(op)`, kept so that FETCH costs a lookup, not a hash of a possibly large body.
    pub digest: Digest,
    /// When it was authenticated (local time): a request pending for long is stranded.
    pub since: Micros,
}

/// A body of an ordered request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cached {
    pub op: Vec<u8>,
    pub digest: Digest,
    /// The batch it was reported ordered in (no earlier than the one that ordered it).
    pub seq: Seq,
}

/// `commandCache{0,1,2}` as one map from checkpoint interval (`seq / CP_interval`) to bodies.
/// The figure's `i mod 3` ring becomes explicit interval numbers, so garbage collection can
/// say exactly which intervals it drops even when batches jump several intervals at once.
///
/// A number usually has one body; it has more when its client superseded a stranded request
/// (`request.rs`): any of them may be the one ordered, so all are kept.
#[derive(Debug, Default)]
pub(crate) struct CommandCache {
    intervals: BTreeMap<u64, BTreeMap<(ClientId, ReqNo), Vec<Cached>>>,
}

impl CommandCache {
    pub fn insert(&mut self, interval: u64, client: ClientId, nc: ReqNo, body: Cached) {
        let bodies = self
            .intervals
            .entry(interval)
            .or_default()
            .entry((client, nc))
            .or_default();
        bodies.retain(|b| b.digest != body.digest);
        bodies.push(body);
    }

    /// The body of `(client, nc)` with `digest`, newest interval first.
    pub fn get(&self, client: ClientId, nc: ReqNo, digest: Digest) -> Option<&Cached> {
        self.intervals.values().rev().find_map(|bodies| {
            bodies
                .get(&(client, nc))?
                .iter()
                .find(|b| b.digest == digest)
        })
    }

    /// The highest request number held for `client`.
    pub fn highest_nc(&self, client: ClientId) -> Option<ReqNo> {
        self.intervals
            .values()
            .filter_map(|bodies| {
                bodies
                    .range((client, ReqNo::NONE)..=(client, ReqNo::MAX))
                    .next_back()
            })
            .map(|((_, nc), _)| *nc)
            .max()
    }

    /// Drop every interval below `keep_from`; returns the dropped interval numbers.
    pub fn drop_below(&mut self, keep_from: u64) -> Vec<u64> {
        let kept = self.intervals.split_off(&keep_from);
        let dropped = std::mem::replace(&mut self.intervals, kept);
        dropped.into_keys().collect()
    }

    pub fn len(&self) -> usize {
        self.intervals
            .values()
            .flat_map(BTreeMap::values)
            .map(Vec::len)
            .sum()
    }

    #[cfg(test)]
    pub fn intervals(&self) -> Vec<u64> {
        self.intervals.keys().copied().collect()
    }
}
