//! The Prophecy sketcher (Sen, Lloyd and Freedman, "Prophecy: Using History for
//! High-Throughput Fault Tolerance", NSDI 2010, §3.3, Algorithm 1 and §5) as a pure,
//! deterministic library: no I/O, no clocks, no threads, no randomness. Time comes in as
//! `now` (microseconds, the caller's clock), replicas are picked by the caller, and every
//! collection is ordered, so the same inputs give the same decisions in the gateway and in
//! the simulator.
//!
//! # The algorithm
//!
//! The sketcher sits in front of the replica group and keeps a history table from the
//! sketch of a read request, s(q), to the sketch of the response of the latest replicated
//! read of it, s(r), and the order position that response reflects. A read with an entry is
//! first sent as a *fast* read to a single replica; if the sketch of that reply equals the
//! entry's, the reply is returned to the client. Otherwise (no entry, a mismatch, no answer,
//! or a blacklisted request) the read goes through the replica group's ordered protocol as a
//! *replicated* read, whose reply is returned and, if it is newer than the entry, becomes the
//! entry. Writes are always replicated and never touch the table: their effects show up in
//! the next replicated read, and the external write channel of §3.3 is no problem for the
//! same reason.
//!
//! # Why this is delay-once
//!
//! A fast reply is accepted only if it equals the response of the newest replicated read of
//! the same request that the sketcher knows of, so an accepted fast read tells the client
//! nothing that a replicated read did not already return: it may be stale with respect to
//! later writes, but by exactly one step, never older than the latest read (a faulty or
//! lagging replica cannot make the sketcher accept a state that was not the latest one
//! observed through the protocol). The check is made against the entry as it is when the
//! reply arrives, not as it was when the read was planned, because a newer replicated read
//! may have moved the entry on meanwhile; accepting the older expectation would go back in
//! time.
//!
//! That argument needs the entry to be the *newest* replicated reply, not the last to come
//! back: concurrent replicated reads return in any order, so a reply updates the entry only
//! if its position is newer than the entry's (Algorithm 1's `σ' > σ`). Taking an older reply
//! would make the entry, and then accepted fast reads, step back behind a state some client
//! has already seen. [`Position`] is `(batch sequence number, index in batch)` because two
//! reads in one batch can straddle a write. For the same reason a table that forgets an
//! entry (LRU eviction at its bound, an operator listing, a hand-over) raises a *floor*:
//! no entry is created again from a reply at or below it, since the forgotten entry may have
//! been newer than a straggling reply.
//!
//! Entries that transition often (dynamic content) make fast reads fail and cost an extra
//! round; the sketcher keeps, per entry, which of its recent reads were transitions (a
//! mismatched fast reply, or a replicated reply that changed the sketch) and blacklists the
//! entry for a cool-down when more than a threshold were, then tries fast again. This is a
//! performance heuristic only; safety never depends on it.
//!
//! # Several sketchers
//!
//! For scale (§5) the table is partitioned by s(q) over sketcher shards with consistent
//! hashing ([`Ring`]); delay-once holds per request because a single shard holds the entry
//! for it. When the membership changes, a region that changes owner could for a while be
//! served by both the old owner (reached by a router that has not yet seen the change, or
//! finishing reads it started) and the new one, and the two tables could disagree: one could
//! accept a fast reply older than what the other has already returned. So every moving
//! region is blacklisted at both owners (all its reads replicated, which is always safe)
//! until the hand-over settles; the old owner drops its entries, the new owner starts with
//! none and with a floor at the newest position any shard has seen, and only then serves
//! the region fast again. At no time do two shards serve fast reads for the same region.
//!
//! # Use
//!
//! ```
//! use plumb_prophecy::{Plan, Position, Sketch, Sketcher, SketcherConfig, Verdict};
//! let mut sk = Sketcher::new(SketcherConfig::default()).expect("valid config");
//! let q = Sketch::of(b"GET /index.html");
//! let r = Sketch::of(b"<html>v1</html>");
//! assert_eq!(sk.plan(q, 0), Plan::Replicated); // first read: no entry
//! sk.on_replicated(q, r, Position::new(7, 0), 1);
//! assert_eq!(sk.plan(q, 2), Plan::Fast { expected: Some(r) });
//! assert_eq!(sk.on_fast_reply(q, r, 3), Verdict::Accept);
//! ```

mod config;
mod counters;
mod membership;
mod ring;
mod sharded;
mod shared;
mod sketch;
mod sketcher;
mod table;
mod window;

#[cfg(test)]
mod tests;

pub use config::{ConfigError, ShardingConfig, SketcherConfig, MAX_VNODES};
pub use counters::Counters;
pub use membership::ShardingError;
pub use ring::{Move, Ring, RingError, ShardId, Span};
pub use sharded::ShardedSketcher;
pub use shared::SharedSketchers;
pub use sketch::{Listing, Position, Sketch};
pub use sketcher::{Plan, Sketcher, Standing, Update, Verdict};
pub use table::{Entry, HistoryTable, Lookup};
pub use window::TransitionWindow;
