//! The store as objects (docs/objects.md): keys fall into [`BUCKET_BITS`]-bit hash buckets,
//! and each bucket is one object whose bytes are the canonical encoding of its entries.
//!
//! Why fixed hash buckets and not one object per key: an object id must be a stable, small
//! number the Merkle tree can be indexed by, the same on every replica; a key is an arbitrary
//! byte string. Hashing the key to a bucket gives a stable id with no directory to agree on,
//! and keeps the tree at a fixed depth (proofs of `BUCKET_BITS` digests). 2^22 buckets keep
//! a bucket near one key up to a few million keys (the bucket of an updated key holds that key
//! plus `keys / buckets` others on average), so state transfer after missing 1% of the updates
//! moves about 1% of the keys; a larger store has proportionally fuller buckets.
//!
//! Dirty tracking: every insertion, in-place change and removal of a key marks its bucket
//! ([`crate::buckets::Buckets`]), so an object checkpoint encodes only the buckets written
//! since the last one: its cost follows the keys written, not the size of the store.

use crate::buckets::{bucket_of, BUCKET_BITS};
use crate::op::KvOp;
use crate::store::{Entry, KvStore};
use plumb_app::{AccessSet, LoadError, ObjectId, ObjectState, ObjectWrite};

/// Version byte of a bucket's encoding.
pub const BUCKET_VERSION: u8 = 1;

fn corrupt(reason: &str) -> LoadError {
    LoadError::Corrupt(reason.to_string())
}

impl KvStore {
    /// The canonical bytes of bucket `id` (`None` if it holds no key): version byte, then
    /// postcard of its `(key, entry)` pairs in key order.
    pub fn bucket_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        let keys = self.buckets.keys_in(id.0)?;
        let pairs: Vec<(&Vec<u8>, &Entry)> = keys
            .iter()
            .filter_map(|k| self.entry(k).map(|e| (k, e)))
            .collect();
        debug_assert_eq!(pairs.len(), keys.len(), "bucket index in step with entries");
        Some(plumb_wire::encode::append(vec![BUCKET_VERSION], &pairs))
    }

    /// The entries bucket `id`'s bytes hold, if they are exactly a canonical encoding of a
    /// bucket with that id.
    fn decode_bucket(id: ObjectId, bytes: &[u8]) -> Result<Vec<(Vec<u8>, Entry)>, LoadError> {
        let (&version, body) = bytes.split_first().ok_or_else(|| corrupt("empty bucket"))?;
        if version != BUCKET_VERSION {
            return Err(corrupt("unknown bucket version"));
        }
        let pairs: Vec<(Vec<u8>, Entry)> = match postcard::take_from_bytes(body) {
            Ok((pairs, [])) => pairs,
            Ok(_) => return Err(corrupt("trailing bytes in bucket")),
            Err(e) => return Err(LoadError::Corrupt(e.to_string())),
        };
        if pairs.is_empty() {
            return Err(corrupt("empty bucket encoded"));
        }
        for w in pairs.windows(2) {
            if w[0].0 >= w[1].0 {
                return Err(corrupt("bucket keys out of order"));
            }
        }
        for (key, entry) in &pairs {
            if bucket_of(key) != id {
                return Err(corrupt("key in the wrong bucket"));
            }
            if entry.value.is_empty_collection() {
                return Err(corrupt("empty collection"));
            }
        }
        Ok(pairs)
    }

    /// Number of buckets written since the last object checkpoint.
    pub fn dirty_buckets(&self) -> usize {
        self.buckets.dirty_count()
    }
}

impl ObjectState for KvStore {
    fn object_id_bits(&self) -> u8 {
        BUCKET_BITS
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        self.buckets
            .take_dirty()
            .into_iter()
            .map(|b| (ObjectId(b), self.bucket_bytes(ObjectId(b))))
            .collect()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.bucket_bytes(id)
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        if id.0 >> BUCKET_BITS != 0 {
            return Err(corrupt("bucket id out of range"));
        }
        let pairs = match bytes {
            None | Some([]) => Vec::new(),
            Some(b) => KvStore::decode_bucket(id, b)?,
        };
        let old: Vec<Vec<u8>> = self
            .buckets
            .keys_in(id.0)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for key in old {
            self.remove(&key);
        }
        for (key, entry) in pairs {
            self.put(&key, entry);
        }
        // The library's tree already holds these bytes: not a change to report.
        self.buckets.clean(id.0);
        Ok(())
    }

    /// The pub/sub subscriptions belong to no key: they are the metadata, which the
    /// checkpoint's token commits to and state transfer carries.
    fn object_metadata(&self) -> Vec<u8> {
        self.subscription_bytes()
    }

    fn load_object_metadata(&mut self, metadata: &[u8]) -> Result<(), LoadError> {
        // As after a whole-checkpoint load, the time is unknown until the next batch.
        self.forget_clock();
        self.load_subscription_bytes(metadata)
    }

    /// The buckets of the keys the operation names ([`KvOp::access_set`]); bytes that are no
    /// operation get an error reply and touch nothing.
    fn access_set(&self, op: &[u8]) -> AccessSet {
        KvOp::decode(op).map_or(AccessSet::Objects(Vec::new()), |op| op.access_set())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::Value;

    #[test]
    fn string_values_encode_as_before_serde_bytes() {
        // Variant 0, length 4, then the bytes: what a sequence of `u8` gave, so checkpoints
        // written before `serde_bytes` decode unchanged.
        let v = Value::Str(vec![1, 2, 3, 200]);
        assert_eq!(postcard::to_stdvec(&v).unwrap(), vec![0, 4, 1, 2, 3, 200]);
        let old: (u8, Vec<u8>) = (0, vec![1, 2, 3, 200]);
        assert_eq!(postcard::to_stdvec(&old).unwrap(), vec![0, 4, 1, 2, 3, 200]);
    }
}
