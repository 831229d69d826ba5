//! Object checkpoints (docs/objects.md) for an application that implements
//! [`plumb_app::ObjectState`]: the execution stage keeps the Merkle tree of its objects, takes
//! incremental checkpoints that commit to the tree's root, and keeps them on disk
//! incrementally.
//!
//! On disk, besides the checkpoint records (`exec/cp/<seq>`, whose `objects` field names the
//! root):
//!
//! - `exec/obj/<id, 16 hex digits>`: an object's bytes as of some earlier checkpoint (the
//!   *base*);
//! - `exec/objd/<seq, 20 digits>/<chunk, 6 digits>`: the objects that changed in the
//!   checkpoint at `seq` (its *delta*), in chunks that bound the record size.
//!
//! Taking a checkpoint writes its delta, then the checkpoint record, then syncs: the cost
//! follows the objects written since the last one. The base stays at the oldest checkpoint
//! still kept (`latest - 2 * CP_interval`, as in memory): only deltas of checkpoints older
//! than that are folded into it (their objects rewritten as of the newest of them, then the
//! delta records deleted), which costs in proportion to what they changed. So after a
//! restart every checkpoint kept can be rebuilt, base plus the deltas up to it, and served to
//! a peer that lags behind (a restarted replica that kept only its newest checkpoint could
//! leave a lagging peer with nobody to fetch the order stage's stable checkpoint from).
//!
//! The store keeps writes in order, so after a crash the disk holds a prefix of these writes,
//! and the base plus every delta up to the newest checkpoint record gives exactly that
//! checkpoint's objects (a half-done fold is repeated by re-applying its deltas; a delta
//! without its checkpoint record is ignored). An older checkpoint is exact unless a fold was
//! cut short; recovery checks each against its root and keeps only those that match.

use crate::checkpoint::{checkpoint_key, ExecCheckpoint};
use crate::ExecReplica;
use plumb_app::{Application, ObjectId};
use plumb_core::{Action, StoreOp};
use plumb_crypto::Digest;
use plumb_objects::{Held, ObjectBytes, ObjectTree, TreeError};
use plumb_wire::Seq;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Storage key prefix of base object records.
pub const OBJECT_PREFIX: &str = "exec/obj/";
/// Storage key prefix of checkpoint delta records.
pub const DELTA_PREFIX: &str = "exec/objd/";
/// A delta record holds objects up to about this many bytes (a record is at most 1 GiB).
const DELTA_CHUNK_BYTES: usize = 32 << 20;

pub(crate) fn object_key(id: ObjectId) -> String {
    format!("{OBJECT_PREFIX}{:016x}", id.0)
}

pub(crate) fn parse_object_key(key: &str) -> Option<ObjectId> {
    let hex = key.strip_prefix(OBJECT_PREFIX)?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(ObjectId)
}

fn delta_prefix(seq: Seq) -> String {
    format!("{DELTA_PREFIX}{seq:020}/")
}

fn delta_key(seq: Seq, chunk: usize) -> String {
    format!("{}{chunk:06}", delta_prefix(seq))
}

/// `(seq, chunk)` of a delta record key.
pub(crate) fn parse_delta_key(key: &str) -> Option<(Seq, u32)> {
    let rest = key.strip_prefix(DELTA_PREFIX)?;
    let (seq, chunk) = rest.split_once('/')?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(seq, 20) || !digits(chunk, 6) {
        return None;
    }
    Some((seq.parse().ok()?, chunk.parse().ok()?))
}

/// One object of a delta record, as decoded ([`DeltaObjectRef`] encodes).
#[derive(Deserialize)]
pub(crate) struct DeltaObject {
    pub id: u64,
    #[serde(with = "serde_bytes")]
    pub bytes: Option<Vec<u8>>,
}

/// A [`DeltaObject`] to encode, borrowing the tree's bytes: the same encoding without a copy.
#[derive(Serialize)]
struct DeltaObjectRef<'a> {
    id: u64,
    #[serde(with = "serde_bytes")]
    bytes: Option<&'a [u8]>,
}

/// A delta record's bytes, `size` about their length.
fn encode_delta(objects: &[DeltaObjectRef<'_>], size: usize) -> Vec<u8> {
    postcard::to_extend(objects, Vec::with_capacity(size)).unwrap_or_default()
}

pub(crate) fn decode_delta(bytes: &[u8]) -> Option<Vec<DeltaObject>> {
    match postcard::take_from_bytes::<Vec<DeltaObject>>(bytes) {
        Ok((objs, [])) => Some(objs),
        _ => None,
    }
}

/// The execution stage's view of the application's objects.
#[derive(Debug)]
pub(crate) struct ObjectsState {
    /// The tree of the application's objects, up to the writes in `unsettled` ([`Self::live`]
    /// brings it up to date).
    live: ObjectTree,
    /// Objects written since `live` was last brought up to date: the newest bytes of each,
    /// with their digest. A batch costs a hash of each object it wrote; the tree's paths are
    /// rehashed when a checkpoint, a transfer or the fill needs the tree, once for all the
    /// writes since (an object written in many batches, and the upper nodes many writes
    /// share, once). Never an object this replica lacks (checked as they are recorded).
    unsettled: BTreeMap<ObjectId, (Option<Vec<u8>>, Digest)>,
    /// The tree of the newest checkpoint on disk.
    pub persisted: ObjectTree,
    /// The deltas on disk not yet folded into the base, oldest first.
    pub unfolded: Vec<UnfoldedDelta>,
    /// While `live` holds only part of the objects: what is being fetched (partial.rs).
    pub on_demand: Option<crate::partial::OnDemand>,
    /// Objects used although their proofs failed (the `unverified-object` sabotage).
    #[cfg(feature = "sabotage")]
    pub unverified: std::collections::BTreeSet<ObjectId>,
}

/// A checkpoint's delta on disk.
#[derive(Debug)]
pub(crate) struct UnfoldedDelta {
    pub seq: Seq,
    /// The objects it holds, by id, with their bytes as of its checkpoint (`None`: empty):
    /// what folding it writes into the base, unless a newer folded delta holds them too.
    pub objects: Vec<(ObjectId, Option<ObjectBytes>)>,
}

impl ObjectsState {
    pub fn new(bits: u8) -> Option<ObjectsState> {
        let tree = ObjectTree::new(bits).ok()?;
        Some(ObjectsState {
            live: tree.clone(),
            unsettled: BTreeMap::new(),
            persisted: tree,
            unfolded: Vec::new(),
            on_demand: None,
            #[cfg(feature = "sabotage")]
            unverified: std::collections::BTreeSet::new(),
        })
    }
}

impl ObjectsState {
    /// The tree of the application's objects, brought up to date.
    pub fn live(&mut self) -> &mut ObjectTree {
        self.settle();
        &mut self.live
    }

    /// The tree brought up to date, and what is being fetched into it, while this replica
    /// holds part of the state.
    pub fn fetching(&mut self) -> Option<(&mut ObjectTree, &mut crate::partial::OnDemand)> {
        self.on_demand.as_ref()?;
        self.settle();
        Some((&mut self.live, self.on_demand.as_mut()?))
    }

    /// Which objects this replica holds and which subtrees it lacks: what writes never
    /// change, so no need to bring the tree up to date.
    pub fn holding(&self) -> Holding<'_> {
        Holding(&self.live)
    }

    /// Replace the tree (a checkpoint loaded, a recovery). Returns the old one, up to date.
    pub fn replace_live(&mut self, tree: ObjectTree) -> ObjectTree {
        self.settle();
        std::mem::replace(&mut self.live, tree)
    }

    fn settle(&mut self) {
        if self.unsettled.is_empty() {
            return;
        }
        let writes = std::mem::take(&mut self.unsettled)
            .into_iter()
            .map(|(id, (bytes, digest))| (id, bytes.map(ObjectBytes::from), digest));
        // Every id was checked in range and held when recorded, and nothing since made an
        // object missing: subtrees go missing only when the tree is replaced, which settles
        // first (`replace_live`).
        let applied = self.live.apply_digested(writes);
        assert!(applied.is_ok(), "settling recorded writes: {applied:?}");
    }

    /// Record the application's writes `changed` (by id, one each). Returns those whose bytes
    /// changed, with their new digests, by id; and whether they were recorded: not if an id is
    /// out of range or lies in a subtree this replica lacks (then none is).
    fn record(
        &mut self,
        changed: Vec<(ObjectId, Option<Vec<u8>>)>,
    ) -> (Vec<(u64, Digest)>, Result<(), TreeError>) {
        let whole = self.live.is_complete();
        let refused = changed.iter().find_map(|(id, _)| {
            if !self.live.contains_id(*id) {
                Some(TreeError::IdOutOfRange(*id))
            } else if !whole && self.live.lookup(*id) == Held::Missing {
                // Only a tree with missing subtrees needs the walk.
                Some(TreeError::Missing(*id))
            } else {
                None
            }
        });
        let mut written = Vec::new();
        let mut digested = Vec::with_capacity(changed.len());
        for (id, bytes) in changed {
            let bytes = bytes.filter(|b| !b.is_empty());
            let digest = plumb_objects::object_digest(bytes.as_deref());
            let before = match self.unsettled.get(&id) {
                Some((_, d)) => *d,
                None => self.live.object_digest(id),
            };
            if before != digest {
                written.push((id.0, digest));
            }
            digested.push((id, (bytes, digest)));
        }
        if let Some(e) = refused {
            return (written, Err(e));
        }
        self.unsettled.extend(digested);
        (written, Ok(()))
    }
}

/// [`ObjectsState::holding`]: the questions about which objects are held that the tree answers
/// right whether or not it is up to date with the latest writes.
pub(crate) struct Holding<'a>(&'a ObjectTree);

impl Holding<'_> {
    pub fn bits(&self) -> u8 {
        self.0.bits()
    }

    pub fn is_complete(&self) -> bool {
        self.0.is_complete()
    }

    pub fn missing_of(&self, ids: &[ObjectId]) -> Vec<ObjectId> {
        self.0.missing_of(ids)
    }

    pub fn missing_positions(&self, limit: usize) -> Vec<plumb_objects::NodePos> {
        self.0.missing_positions(limit)
    }
}

impl<A: Application> ExecReplica<A> {
    /// Bring the live tree up to date with every object the application wrote.
    pub(crate) fn flush_objects(&mut self) {
        self.flush_batch_writes();
        if let Some(state) = self.objects.as_mut() {
            state.settle();
        }
    }

    /// After a batch: record the objects the application wrote, and return the digest of the
    /// batch's write set (`None` without objects): the objects whose bytes changed, each with
    /// the digest of its new bytes. An object the application reports unchanged is left out,
    /// so replicas agree whatever they report beyond what changed.
    pub(crate) fn flush_batch_writes(&mut self) -> Option<Digest> {
        let (Some(state), Some(app)) = (self.objects.as_mut(), self.app.objects()) else {
            return None;
        };
        let mut changed: Vec<(ObjectId, Option<Vec<u8>>)> = app.take_changed_objects();
        // By id; an id reported twice (the contract says once) counts with its last bytes.
        changed.reverse();
        changed.sort_by_key(|(id, _)| *id);
        changed.dedup_by_key(|(id, _)| *id);
        // A load in progress compares against our objects as they were when it started.
        if let Some(load) = self
            .transfer
            .loading
            .as_mut()
            .and_then(|l| l.objects.as_mut())
        {
            load.written_since.extend(changed.iter().map(|(id, _)| *id));
        }
        #[cfg_attr(not(feature = "sabotage"), allow(unused_mut))]
        let (mut written, recorded) = state.record(changed);
        if recorded.is_err() {
            // The application broke its own id range, or wrote an object it lacks: its
            // checkpoints will disagree with correct replicas' and the divergence is caught
            // there.
            self.counters.add("app-object-id-out-of-range");
        }
        #[cfg(feature = "sabotage")]
        if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::ReportSkipsWrite) {
            written.pop();
        }
        Some(plumb_wire::BatchReport::writes_digest(written))
    }

    /// Make checkpoint `seq` (encoded as `bytes`, whose objects are `tree`) durable: fold the
    /// deltas of checkpoints no longer kept into the base, write this checkpoint's delta, then
    /// its record, then sync.
    pub(crate) fn persist_object_checkpoint(
        &mut self,
        seq: Seq,
        bytes: Vec<u8>,
        tree: &ObjectTree,
        out: &mut Vec<Action>,
    ) {
        let keep_from = seq.minus(2 * self.interval());
        let Some(state) = self.objects.as_mut() else {
            return;
        };
        // After a roll-back (divergence.rs) deltas at or after `seq` describe the divergent
        // state: fold everything, so the base plus the new delta gives `tree` exactly.
        let rolled_back = state.unfolded.iter().any(|d| d.seq >= seq);
        let fold = if rolled_back {
            state.unfolded.len()
        } else {
            state.unfolded.iter().filter(|d| d.seq <= keep_from).count()
        };
        let folded: Vec<UnfoldedDelta> = state.unfolded.drain(..fold).collect();
        if !folded.is_empty() {
            // Oldest first, so each object ends as of the newest folded delta that holds it,
            // which is what it is in the newest folded checkpoint.
            let newest: BTreeMap<ObjectId, &Option<ObjectBytes>> = folded
                .iter()
                .flat_map(|d| d.objects.iter().map(|(id, b)| (*id, b)))
                .collect();
            for (id, bytes) in newest {
                let key = object_key(id);
                out.push(Action::Store(match bytes {
                    Some(b) => StoreOp::Put {
                        key,
                        value: b.to_vec(),
                    },
                    None => StoreOp::Delete { key },
                }));
            }
            for old in &folded {
                out.push(Action::Store(StoreOp::DeletePrefix {
                    prefix: delta_prefix(old.seq),
                }));
            }
        }
        let changed = state.persisted.diff_objects(tree).unwrap_or_default();
        let mut chunk: Vec<DeltaObjectRef<'_>> = Vec::new();
        let mut chunk_bytes = 0usize;
        let mut chunk_no = 0usize;
        for (id, bytes) in &changed {
            let bytes = bytes.as_deref();
            chunk_bytes += bytes.map_or(0, <[u8]>::len) + 16;
            chunk.push(DeltaObjectRef { id: id.0, bytes });
            if chunk_bytes >= DELTA_CHUNK_BYTES {
                out.push(Action::Store(StoreOp::Put {
                    key: delta_key(seq, chunk_no),
                    value: encode_delta(&chunk, chunk_bytes),
                }));
                chunk.clear();
                chunk_bytes = 0;
                chunk_no += 1;
            }
        }
        if !chunk.is_empty() {
            out.push(Action::Store(StoreOp::Put {
                key: delta_key(seq, chunk_no),
                value: encode_delta(&chunk, chunk_bytes),
            }));
        }
        out.push(Action::Store(StoreOp::Put {
            key: checkpoint_key(seq),
            value: bytes,
        }));
        out.push(Action::Store(StoreOp::Sync));
        state.persisted = tree.clone();
        state.unfolded.push(UnfoldedDelta {
            seq,
            objects: changed,
        });
    }

    /// Restart of a replica whose application has objects: rebuild each checkpoint's objects
    /// from the base and the deltas up to it, keeping those that give the checkpoint's root.
    /// The newest must be among them, or the objects are unusable and the replica starts
    /// empty (state transfer then fetches what differs). Returns the usable checkpoints' trees.
    pub(crate) fn recover_objects(
        &mut self,
        records: &mut BTreeMap<String, Vec<u8>>,
        checkpoints: &BTreeMap<Seq, (ExecCheckpoint, Vec<u8>)>,
    ) -> BTreeMap<Seq, ObjectTree> {
        let Some(bits) = self.objects.as_ref().map(|o| o.holding().bits()) else {
            return BTreeMap::new();
        };
        let mut base: Vec<(ObjectId, Option<ObjectBytes>)> = Vec::new();
        let mut deltas: BTreeMap<Seq, Vec<Vec<u8>>> = BTreeMap::new();
        let keys: Vec<String> = records
            .keys()
            .filter(|k| k.starts_with(OBJECT_PREFIX) || k.starts_with(DELTA_PREFIX))
            .cloned()
            .collect();
        for key in keys {
            let Some(value) = records.remove(&key) else {
                continue;
            };
            if let Some(id) = parse_object_key(&key) {
                base.push((id, Some(ObjectBytes::from(value))));
            } else if let Some((seq, _chunk)) = parse_delta_key(&key) {
                // Keys come in order, so chunks do too.
                deltas.entry(seq).or_default().push(value);
            } else {
                self.counters.add("recovery-unknown-record");
            }
        }
        let newest = checkpoints.keys().next_back().copied();
        let mut tree = match ObjectTree::new(bits) {
            Ok(t) => t,
            Err(_) => return BTreeMap::new(),
        };
        let mut ok = tree.apply(base).is_ok();
        let mut unfolded: Vec<UnfoldedDelta> = Vec::new();
        let mut usable: BTreeMap<Seq, ObjectTree> = BTreeMap::new();
        let mut pending = deltas.range(..=newest.unwrap_or(Seq::ZERO)).peekable();
        for (cp_seq, (cp, _)) in checkpoints {
            while let Some((seq, chunks)) = pending.next_if(|(s, _)| *s <= cp_seq) {
                let mut ids = Vec::new();
                for chunk in chunks {
                    let Some(objs) = decode_delta(chunk) else {
                        ok = false;
                        break;
                    };
                    ids.extend(objs.iter().map(|o| ObjectId(o.id)));
                    ok &= tree
                        .apply(
                            objs.into_iter()
                                .map(|o| (ObjectId(o.id), o.bytes.map(ObjectBytes::from))),
                        )
                        .is_ok();
                }
                ids.sort_unstable();
                ids.dedup();
                unfolded.push(UnfoldedDelta {
                    seq: *seq,
                    objects: ids
                        .into_iter()
                        .map(|id| (id, tree.get(id).cloned()))
                        .collect(),
                });
            }
            let matches = cp
                .objects
                .is_some_and(|o| o.bits == bits && o.root == tree.root());
            if ok && matches {
                usable.insert(*cp_seq, tree.clone());
            }
        }
        let nothing_on_disk = deltas.is_empty() && newest.is_none() && tree.is_empty();
        let Some(newest) = newest.filter(|s| usable.contains_key(s)) else {
            if !nothing_on_disk {
                self.counters.add("recovery-objects-unusable");
            }
            self.found.unusable_prefixes.push(OBJECT_PREFIX.to_string());
            self.found.unusable_prefixes.push(DELTA_PREFIX.to_string());
            return BTreeMap::new();
        };
        // Deltas of checkpoints that never got their record are garbage.
        for s in deltas.keys().filter(|s| **s > newest) {
            self.found.unusable_prefixes.push(delta_prefix(*s));
        }
        if let Some(state) = self.objects.as_mut() {
            state.replace_live(tree.clone());
            state.persisted = tree;
            state.unfolded = unfolded;
        }
        usable
    }

    /// Give the application every object of `tree` (after a recovery).
    pub(crate) fn load_all_objects(&mut self, tree: &ObjectTree) -> bool {
        let Some(app) = self.app.objects() else {
            return false;
        };
        for (id, bytes) in tree.iter() {
            if app.load_object(id, Some(bytes)).is_err() {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod delta_tests {
    use super::*;

    #[test]
    fn a_delta_encoded_from_borrowed_bytes_decodes_as_owned() {
        let a = vec![1u8; 300];
        let refs = [
            DeltaObjectRef {
                id: 7,
                bytes: Some(&a),
            },
            DeltaObjectRef { id: 9, bytes: None },
        ];
        for size in [0, 10, 1000] {
            let objs = decode_delta(&encode_delta(&refs, size)).expect("decodes");
            assert_eq!(objs.len(), 2);
            assert_eq!((objs[0].id, objs[0].bytes.as_deref()), (7, Some(&a[..])));
            assert_eq!((objs[1].id, objs[1].bytes.as_deref()), (9, None));
        }
    }
}
