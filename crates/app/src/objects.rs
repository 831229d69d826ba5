//! The optional object interface of the application contract (seed 002 §4.6, seed 003 §2.3):
//! state as a set of objects with stable ids. See docs/objects.md.
//!
//! The application names its objects and says which ones changed; the library hashes them,
//! keeps the Merkle tree over their digests, persists them, serves them to peers and verifies
//! what peers send. An object's bytes must be a function of its contents alone (canonical), so
//! that correct replicas in the same state report equal bytes for every object.

use crate::{AccessSet, LoadError};
use plumb_wire::Micros;

/// Largest number of id bits an application may use: the Merkle tree is that many levels deep,
/// and a proof holds one sibling digest per level.
pub const OBJECT_ID_BITS_MAX: u8 = 32;

/// A stable object id: the same object has the same id on every replica and across
/// checkpoints. Ids are below `2^object_id_bits()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectId(pub u64);

impl ObjectId {
    /// The object a name falls in when names are hashed into `2^bits` buckets: the top `bits`
    /// bits of the name's BLAKE3 digest. A stable id with no directory to agree on.
    pub fn hashed(name: &[u8], bits: u8) -> ObjectId {
        debug_assert!((1..=OBJECT_ID_BITS_MAX).contains(&bits));
        let d = plumb_crypto::Digest::of(name);
        let top = u32::from_be_bytes([d.0[0], d.0[1], d.0[2], d.0[3]]);
        ObjectId(u64::from(top >> (32 - u32::from(bits))))
    }
}

/// One object's new contents: its canonical bytes, or `None` for an empty (or deleted) object.
/// An empty object and an object that never existed are the same thing.
pub type ObjectWrite = (ObjectId, Option<Vec<u8>>);

/// State kept as objects. Every method is deterministic.
pub trait ObjectState {
    /// How many bits object ids use (at most [`OBJECT_ID_BITS_MAX`]). Fixed for the life of
    /// the application's state format: replicas must agree on it.
    fn object_id_bits(&self) -> u8;

    /// Every object written since the previous call (since creation for the first call),
    /// each once, with its current bytes. It must cost in proportion to the objects written,
    /// not to the size of the state: keep a dirty set. Reporting an unchanged object is
    /// allowed (it costs a hash); omitting a changed one breaks agreement on checkpoints.
    fn take_changed_objects(&mut self) -> Vec<ObjectWrite>;

    /// The current bytes of object `id` (`None`: empty), as
    /// [`ObjectState::take_changed_objects`] reports them. Used to copy single objects out of
    /// the state (client speculation's fork copies only the objects its requests use); it must
    /// cost in proportion to the object, not to the state.
    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>>;

    /// Replace object `id` with `bytes` (`None`: make it empty). The library has verified
    /// the bytes against an agreed digest, so an error means the application cannot read
    /// its own format. The write is not reported again by
    /// [`ObjectState::take_changed_objects`].
    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError>;

    /// State that belongs to no object (small, or empty: the default), taken with each
    /// checkpoint and committed to by its digest.
    fn object_metadata(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Adopt the metadata of a checkpoint, after all its objects were loaded.
    fn load_object_metadata(&mut self, _metadata: &[u8]) -> Result<(), LoadError> {
        Ok(())
    }

    /// The objects executing `op` may read or write ([`AccessSet`], docs/objects.md "Access
    /// sets"), known before it runs.
    ///
    /// Must: depend on `op` and the metadata alone (never on objects, the time or the
    /// client), and cover every object that [`crate::Application::execute`] reads or changes
    /// for `op` in any state with that metadata, so that executing a batch on only its access
    /// sets' objects (with the metadata) gives the same replies, pushes and writes as on the
    /// whole state. Metadata is not an object: every replica holds it whole, and every replica
    /// that executed the same batches holds the same. The simulator checks this after every
    /// batch (`access-set`). Default: [`AccessSet::All`], always right, and no replica can then
    /// execute the operation without the whole state.
    fn access_set(&self, _op: &[u8]) -> AccessSet {
        AccessSet::All
    }

    /// The objects executing a whole batch of `ops` at agreed time `time` may read or write,
    /// computed from the metadata as it is before the batch. It must cover what the
    /// application changes at the batch's start, driven by the time (sessions that expire, say),
    /// and each operation as it runs after the ones before it: an operation whose objects
    /// depend on metadata that an earlier operation of the batch changes (the name a
    /// sequential create picks) must have them here. Default: the union of the operations'
    /// [`ObjectState::access_set`]s, right for an application with no time-driven changes
    /// whose access sets depend on the operation alone.
    fn batch_access_set(&self, ops: &[&[u8]], _time: Micros) -> AccessSet {
        let mut set = AccessSet::Objects(Vec::new());
        for op in ops {
            if set == AccessSet::All {
                break;
            }
            set = set.union(self.access_set(op));
        }
        set
    }
}
