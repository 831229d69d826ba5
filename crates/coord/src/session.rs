//! Sessions: replicated state that owns ephemeral nodes, watches and undelivered events.

use crate::acl::Identity;
use crate::op::{WatchEvent, MAX_PENDING_EVENTS, MAX_SESSION_TIMEOUT_MS, MIN_SESSION_TIMEOUT_MS};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// One session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub password: [u8; 16],
    /// Clamped into the allowed range.
    pub timeout_ms: i32,
    /// Agreed time (micros) of the last batch that heard of the session.
    pub last_heard: Micros,
    /// The identity that last spoke for the session: where its events are pushed.
    pub owner: ClientId,
    /// Identities added with `addauth`.
    pub auth: BTreeSet<Identity>,
    /// Events not yet acknowledged, oldest first (at most [`MAX_PENDING_EVENTS`]).
    pub events: VecDeque<WatchEvent>,
    /// Events the session has had, acknowledged or not.
    pub event_count: u64,
}

/// A timeout clamped into ZooKeeper's default range.
pub fn clamp_timeout(timeout_ms: i32) -> i32 {
    timeout_ms.clamp(MIN_SESSION_TIMEOUT_MS, MAX_SESSION_TIMEOUT_MS)
}

/// The id and password of the `counter`-th session opened, in a batch with seed `seed`
/// (`attempt` > 0 only if the id is taken).
pub fn derive(seed: u64, counter: u64, attempt: u64) -> (i64, [u8; 16]) {
    let d = Digest::of_parts(&[
        b"plumb-coord session",
        &seed.to_le_bytes(),
        &counter.to_le_bytes(),
        &attempt.to_le_bytes(),
    ]);
    let mut id = [0u8; 8];
    id.copy_from_slice(&d.0[..8]);
    let mut password = [0u8; 16];
    password.copy_from_slice(&d.0[8..24]);
    (
        i64::from_le_bytes(id) & crate::tree::SESSION_ID_MASK,
        password,
    )
}

impl Session {
    pub fn new(password: [u8; 16], timeout_ms: i32, now: Micros, owner: ClientId) -> Session {
        Session {
            password,
            timeout_ms: clamp_timeout(timeout_ms),
            last_heard: now,
            owner,
            auth: BTreeSet::new(),
            events: VecDeque::new(),
            event_count: 0,
        }
    }

    /// The session's client was heard of in the batch at agreed time `now`.
    pub fn renew(&mut self, now: Micros) {
        #[cfg(feature = "sabotage")]
        if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::SessionNotRenewed) {
            return;
        }
        self.last_heard = now;
    }

    /// Whether the session has not been heard of for longer than its timeout at `now`.
    pub fn expired_at(&self, now: Micros) -> bool {
        now.saturating_sub(self.last_heard) > self.timeout_us()
    }

    fn timeout_us(&self) -> Micros {
        u64::try_from(self.timeout_ms).unwrap_or(0) * 1000
    }

    /// The time after which the session has expired if it is not heard of again: it has
    /// expired at `now` exactly when `now` is past this.
    pub fn deadline(&self) -> Micros {
        self.last_heard.saturating_add(self.timeout_us())
    }

    /// The client has seen the events up to `acked`: forget them.
    pub fn ack(&mut self, acked: u64) {
        while self.events.front().is_some_and(|e| e.number <= acked) {
            self.events.pop_front();
        }
    }

    /// Record a new event (numbered here) and return it.
    pub fn record(&mut self, mut event: WatchEvent) -> WatchEvent {
        self.event_count += 1;
        event.number = self.event_count;
        self.events.push_back(event.clone());
        while self.events.len() > MAX_PENDING_EVENTS {
            self.events.pop_front();
        }
        event
    }

    /// The events after `acked` still held.
    pub fn pending(&self, acked: u64) -> Vec<WatchEvent> {
        self.events
            .iter()
            .filter(|e| e.number > acked)
            .cloned()
            .collect()
    }
}
