//! Keys fall into [`BUCKET_BITS`]-bit hash buckets (docs/objects.md; objects.rs says why):
//! which keys each bucket holds, and which buckets were written since the last object
//! checkpoint.

use plumb_app::ObjectId;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Bits of a bucket id: the store has `2^BUCKET_BITS` buckets.
pub const BUCKET_BITS: u8 = 22;

/// The bucket (object) holding `key`: the top [`BUCKET_BITS`] bits of its BLAKE3 digest.
pub fn bucket_of(key: &[u8]) -> ObjectId {
    ObjectId::hashed(key, BUCKET_BITS)
}

/// The keys of each non-empty bucket and the buckets written since the last object checkpoint.
/// Ordered by bucket, so `SCAN` walks the buckets in order from a cursor.
#[derive(Clone, Debug, Default)]
pub(crate) struct Buckets {
    keys: BTreeMap<u64, BTreeSet<Vec<u8>>>,
    dirty: HashSet<u64>,
}

impl Buckets {
    pub(crate) fn inserted(&mut self, key: &[u8]) {
        let b = bucket_of(key).0;
        self.keys.entry(b).or_default().insert(key.to_vec());
        self.dirty.insert(b);
    }

    pub(crate) fn touched(&mut self, key: &[u8]) {
        self.dirty.insert(bucket_of(key).0);
    }

    pub(crate) fn removed(&mut self, key: &[u8]) {
        let b = bucket_of(key).0;
        if let Some(set) = self.keys.get_mut(&b) {
            set.remove(key);
            if set.is_empty() {
                self.keys.remove(&b);
            }
        }
        self.dirty.insert(b);
    }

    /// Whole buckets from bucket `from` on, in bucket order, until they hold at least `count`
    /// keys that are `live`: those keys, and the next bucket holding a live key to go on from
    /// (`None`: none left). Buckets of keys that are not live (due, but still stored) are
    /// passed over as if empty.
    pub(crate) fn scan(
        &self,
        from: u64,
        count: usize,
        live: impl Fn(&[u8]) -> bool,
    ) -> (Vec<&[u8]>, Option<u64>) {
        let mut found = Vec::new();
        let mut buckets = self.keys.range(from..);
        for (_, keys) in buckets.by_ref() {
            found.extend(keys.iter().map(Vec::as_slice).filter(|k| live(k)));
            if found.len() >= count {
                break;
            }
        }
        let next = buckets
            .find(|(_, keys)| keys.iter().any(|k| live(k)))
            .map(|(b, _)| *b);
        (found, next)
    }

    /// The keys in bucket `b`, if it holds any.
    pub(crate) fn keys_in(&self, b: u64) -> Option<&BTreeSet<Vec<u8>>> {
        self.keys.get(&b)
    }

    /// Buckets written since the last object checkpoint.
    pub(crate) fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// The buckets written since the last object checkpoint, in order; none are after.
    pub(crate) fn take_dirty(&mut self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.dirty.drain().collect();
        ids.sort_unstable();
        ids
    }

    /// Bucket `b` is as the last object checkpoint has it (it was just loaded from it).
    pub(crate) fn clean(&mut self, b: u64) {
        self.dirty.remove(&b);
    }

    /// Every key removed at once (FLUSHALL).
    pub(crate) fn clear_all(&mut self) {
        self.dirty.extend(self.keys.keys().copied());
        self.keys.clear();
    }
}
