//! What a sketcher counts, for `/metrics`.

/// Plain counters (monotonic, except `entries`, which is the table size when read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Reads planned (`plan` calls).
    pub reads: u64,
    /// Reads planned as fast reads.
    pub fast_planned: u64,
    /// Fast replies accepted.
    pub fast_hits: u64,
    /// Fast replies rejected because their sketch differed from the entry's.
    pub mismatches: u64,
    /// Replicated reads issued for reads: planned replicated, or after a rejected or failed
    /// fast read.
    pub fallbacks: u64,
    /// Reads planned replicated because the table had no entry (first reads).
    pub no_entry: u64,
    /// Reads planned replicated because the request was blacklisted (by the operator or
    /// automatically).
    pub blacklisted_replicated: u64,
    /// Reads planned replicated (or fast replies rejected) because the request's region is
    /// being handed over or is not this shard's.
    pub handover_replicated: u64,
    /// Fast reads that failed (timeout, no answer).
    pub fast_failed: u64,
    /// Replicated replies ignored because the entry was as new or newer.
    pub stale_replies: u64,
    /// Replicated replies that could not create an entry because they were at or below the
    /// floor (older than something forgotten).
    pub below_floor: u64,
    /// Entries evicted at the bound.
    pub evictions: u64,
    /// Entries blacklisted automatically for transitioning often.
    pub auto_blacklisted: u64,
    /// Entries in the history table now.
    pub entries: u64,
}

impl Counters {
    /// Add another shard's counters (for a total over a sketching core).
    pub fn add(&mut self, o: &Counters) {
        self.reads += o.reads;
        self.fast_planned += o.fast_planned;
        self.fast_hits += o.fast_hits;
        self.mismatches += o.mismatches;
        self.fallbacks += o.fallbacks;
        self.no_entry += o.no_entry;
        self.blacklisted_replicated += o.blacklisted_replicated;
        self.handover_replicated += o.handover_replicated;
        self.fast_failed += o.fast_failed;
        self.stale_replies += o.stale_replies;
        self.below_floor += o.below_floor;
        self.evictions += o.evictions;
        self.auto_blacklisted += o.auto_blacklisted;
        self.entries += o.entries;
    }
}
