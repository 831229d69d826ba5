//! Durable records and restart (seed 004 §5.3.3 "transient crash recovery", Figure 5.7 lines
//! 49-58).
//!
//! Two kinds of record replace the figure's three rotating log files:
//! - `auth/req/{c}`: the last request authenticated for client `c` (`(c, life, nc, op)`), written
//!   with put + sync before its AUTH-REQ leaves and overwritten by the next one. It is the
//!   durable `lastSent[c]` and, unless it is known ordered, `pending[c]`.
//! - `auth/sup/{c}`: the stranded requests of client `c` superseded under their number
//!   (`request.rs`), written with the superseding request's record, before its sync: any of
//!   them may still be the one ordered, and must be fetchable after a restart.
//! - `auth/cmd/{k}/{c}/{nc}`: the body of an ordered request in cache interval `k`, with the
//!   batch it was reported in; `auth/cmd/{k}/{c}/{nc}/{digest}` for the bodies superseded
//!   under that number, which move there from `auth/sup/{c}` once the number is ordered.
//!   Garbage collection deletes a whole interval by prefix.
//!
//! Because each cache record names its interval, a restarted replica rebuilds the cache
//! exactly and need not delay garbage collection as the figure's log rotation does.

use crate::cache::{Cached, Pending};
use crate::last_sent::authenticate_core;
use crate::AuthReplica;
use plumb_core::{storage, Recovered};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Life, ReqNo, Seq};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub const REQUEST_PREFIX: &str = "auth/req/";
pub const CACHE_PREFIX: &str = "auth/cmd/";
pub const SUPERSEDED_PREFIX: &str = "auth/sup/";

/// Key of the last request authenticated for `client`.
pub fn request_key(client: ClientId) -> String {
    format!("{REQUEST_PREFIX}{client}")
}

/// Key of the bodies superseded under `client`'s current number.
pub fn superseded_key(client: ClientId) -> String {
    format!("{SUPERSEDED_PREFIX}{client}")
}

/// Key of a superseded body of ordered number `(client, nc)` in cache interval `interval`.
pub fn cached_superseded_key(interval: u64, client: ClientId, nc: ReqNo, digest: Digest) -> String {
    format!("{}/{}", cached_key(interval, client, nc), digest.hex())
}

/// Prefix of every body of cache interval `interval` (the trailing `/` keeps interval 1 from
/// matching interval 10).
pub fn cached_prefix(interval: u64) -> String {
    format!("{CACHE_PREFIX}{interval}/")
}

/// Key of the body of ordered request `(client, nc)` in cache interval `interval`.
pub fn cached_key(interval: u64, client: ClientId, nc: ReqNo) -> String {
    format!("{}{client}/{nc}", cached_prefix(interval))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredRequest {
    pub client: ClientId,
    pub life: Life,
    pub nc: ReqNo,
    pub op: Vec<u8>,
}

/// `auth/sup/{c}`: `(nc, op)` of each superseded request, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SupersededRecord {
    pub client: ClientId,
    pub bodies: Vec<(ReqNo, Vec<u8>)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedRecord {
    pub client: ClientId,
    pub nc: ReqNo,
    pub seq: Seq,
    pub op: Vec<u8>,
}

impl AuthReplica {
    /// Rebuild the command cache, lastSent and pending from disk. Records that failed their
    /// checksum, do not decode, or do not match their key are ignored and counted: losing
    /// one costs at most fetchability of a body at this replica (other replicas hold it) or,
    /// for `auth/req/{c}`, this replica's memory of `lastSent[c]`; AS3 and AS4 are
    /// per-replica rate limits, not what the stage's safety rests on (§6.4.3).
    pub(crate) fn recover(&mut self, recovered: Recovered) {
        let corrupt: BTreeSet<&String> = recovered.corrupt.iter().collect();
        for _ in &recovered.corrupt {
            self.counters.add("recovered-corrupt");
        }
        let mut requests = Vec::new();
        let mut superseded = Vec::new();
        for (key, value) in &recovered.records {
            if corrupt.contains(key) {
                continue;
            }
            if let Some(client) = key.strip_prefix(REQUEST_PREFIX) {
                match storage::decode::<StoredRequest>(value)
                    .filter(|r| r.nc > ReqNo::NONE && client == r.client.to_string())
                {
                    Some(r) => requests.push(r),
                    None => self.counters.add("recovered-corrupt"),
                }
            } else if let Some(client) = key.strip_prefix(SUPERSEDED_PREFIX) {
                match storage::decode::<SupersededRecord>(value)
                    .filter(|r| client == r.client.to_string())
                {
                    Some(r) => superseded.push(r),
                    None => self.counters.add("recovered-corrupt"),
                }
            } else if key.starts_with(CACHE_PREFIX) {
                if !self.recover_cached(key, value) {
                    self.counters.add("recovered-corrupt");
                }
            } else {
                self.counters.add("recovered-unknown");
            }
        }
        // Keep the three intervals up to the highest recovered one; older ones go on Start.
        let cp = self.cfg.checkpoint_interval.max(1);
        self.stale_on_disk = self.cache.drop_below(self.kept_floor().interval(cp));
        for r in requests {
            self.recover_request(r);
        }
        for r in superseded {
            let bodies = r.bodies.into_iter().map(|(nc, op)| Pending {
                nc,
                digest: Digest::of(&op),
                op,
                since: 0,
            });
            self.superseded.insert(r.client, bodies.collect());
        }
    }

    fn recover_cached(&mut self, key: &str, value: &[u8]) -> bool {
        let cp = self.cfg.checkpoint_interval.max(1);
        let Some(r) = storage::decode::<CachedRecord>(value) else {
            return false;
        };
        let interval = r.seq.interval(cp);
        let digest = Digest::of(&r.op);
        if key != cached_key(interval, r.client, r.nc)
            && key != cached_superseded_key(interval, r.client, r.nc, digest)
        {
            return false;
        }
        self.highest_ordered = self.highest_ordered.max(Some(r.seq));
        self.cache.insert(
            interval,
            r.client,
            r.nc,
            Cached {
                op: r.op,
                digest,
                seq: r.seq,
            },
        );
        true
    }

    /// Recompute lastSent[c] from the stored body; it is pending unless the cache holds it (or
    /// a later request of the client) as ordered. A request ordered so long ago that its cache
    /// record was collected comes back as pending: the client's next request then resends it,
    /// the execution stage re-reports it, and the entry clears (AL1b).
    fn recover_request(&mut self, r: StoredRequest) {
        let digest = Digest::of(&r.op);
        let keys = &self.ctx.keys;
        let Some(last) = authenticate_core(keys, &self.cfg, r.client, r.life, r.nc, &r.op, digest)
        else {
            self.counters.add("recovered-no-key");
            return;
        };
        self.last_sent.insert(r.client, last);
        let ordered = self.cache.highest_nc(r.client).is_some_and(|nc| nc >= r.nc);
        if !ordered {
            self.pending.insert(
                r.client,
                Pending {
                    nc: r.nc,
                    op: r.op,
                    digest,
                    // The constructor has no clock: `on_start` sets it.
                    since: 0,
                },
            );
        }
    }
}
