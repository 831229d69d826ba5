//! Property tests of the tree, proofs, transfer sessions, state updates and the delta helper.

use crate::*;
use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Seq};
use plumb_wire::{Life, ReqNo};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

mod partial;

/// The root computed the slow way: every slot of a full tree.
fn naive_root(bits: u8, objects: &BTreeMap<u64, Vec<u8>>) -> Digest {
    let mut level: Vec<Digest> = (0..1u64 << bits)
        .map(|i| object_digest(objects.get(&i).map(|v| v.as_slice())))
        .collect();
    while level.len() > 1 {
        level = level.chunks(2).map(|p| node_digest(&p[0], &p[1])).collect();
    }
    level[0]
}

fn tree_of(bits: u8, objects: &BTreeMap<u64, Vec<u8>>) -> ObjectTree {
    let mut t = ObjectTree::new(bits).unwrap();
    t.apply_vecs(objects.iter().map(|(k, v)| (ObjectId(*k), Some(v.clone()))))
        .unwrap();
    t
}

fn objects(bits: u8) -> impl Strategy<Value = BTreeMap<u64, Vec<u8>>> {
    let max = (1u64 << bits) - 1;
    prop::collection::btree_map(0..=max, prop::collection::vec(any::<u8>(), 0..6), 0..24)
        .prop_map(|m| m.into_iter().filter(|(_, v)| !v.is_empty()).collect())
}

type Writes = Vec<(u64, Option<Vec<u8>>)>;

fn writes(bits: u8) -> impl Strategy<Value = Writes> {
    let max = (1u64 << bits) - 1;
    prop::collection::vec(
        (
            0..=max,
            prop::option::of(prop::collection::vec(any::<u8>(), 0..4)),
        ),
        0..24,
    )
}

/// Drive a session against a server tree until done; returns the synced tree.
fn run_sync(local: &ObjectTree, server: &ObjectTree) -> (ObjectTree, SyncStats) {
    let mut sync = TreeSync::new(local, server.root());
    let mut rounds = 0;
    while !sync.is_done() {
        rounds += 1;
        assert!(rounds < 200, "sync does not converge");
        for (pos, l, r) in serve_children(server, &sync.wanted_nodes(7)) {
            sync.on_children(local, pos, l, r).unwrap();
        }
        for id in sync.wanted_objects(5) {
            let bytes = server.get(id).map(|b| b.to_vec());
            sync.on_object(id, bytes.as_deref()).unwrap();
        }
    }
    let mut out = local.clone();
    out.apply(sync.take_writes()).unwrap();
    (out, sync.stats())
}

proptest! {
    #[test]
    fn root_matches_the_naive_tree(bits in 0u8..6, objs in objects(5)) {
        let objs: BTreeMap<u64, Vec<u8>> =
            objs.into_iter().filter(|(k, _)| k >> bits == 0).collect();
        let t = tree_of(bits, &objs);
        prop_assert_eq!(t.root(), naive_root(bits, &objs));
        prop_assert_eq!(t.len(), objs.len() as u64);
        let listed: Vec<(u64, Vec<u8>)> = t.iter().map(|(id, b)| (id.0, b.to_vec())).collect();
        let expected: Vec<(u64, Vec<u8>)> = objs.into_iter().collect();
        prop_assert_eq!(listed, expected);
    }

    #[test]
    fn incremental_writes_equal_a_fresh_build(base in objects(6), ws in writes(6)) {
        let mut t = tree_of(6, &base);
        let before = t.clone();
        t.apply_vecs(ws.iter().map(|(k, v)| (ObjectId(*k), v.clone()))).unwrap();
        let mut model = base.clone();
        for (k, v) in &ws {
            match v {
                Some(b) if !b.is_empty() => { model.insert(*k, b.clone()); }
                _ => { model.remove(k); }
            }
        }
        prop_assert_eq!(t.root(), tree_of(6, &model).root());
        prop_assert_eq!(t.root(), naive_root(6, &model));
        // The old version is untouched (copy-on-write).
        prop_assert_eq!(before.root(), naive_root(6, &base));
        // diff names exactly the slots whose bytes differ.
        let expect: Vec<ObjectId> = (0..64u64)
            .filter(|i| base.get(i) != model.get(i))
            .map(ObjectId)
            .collect();
        prop_assert_eq!(before.diff(&t).unwrap(), expect.clone());
        prop_assert_eq!(t.diff(&before).unwrap(), expect);
        // ... and diff_objects gives their bytes on the other side.
        for (from, to) in [(&before, &t), (&t, &before)] {
            for (id, bytes) in from.diff_objects(to).unwrap() {
                prop_assert_eq!(bytes.as_deref(), to.get(id).map(|b| &b[..]));
            }
        }
    }

    #[test]
    fn every_slot_proves_and_tampering_fails(objs in objects(5), flip in any::<u8>()) {
        let t = tree_of(5, &objs);
        for i in 0..32u64 {
            let id = ObjectId(i);
            let bytes = t.get(id).map(|b| b.to_vec());
            let proof = t.proof(id).unwrap();
            prop_assert_eq!(proof.verify(t.root(), 5, id, bytes.as_deref()), Ok(()));
            let mut other = bytes.clone().unwrap_or_default();
            other.push(flip);
            prop_assert!(proof.verify(t.root(), 5, id, Some(&other)).is_err());
            let mut bad = proof.clone();
            bad.siblings[usize::from(flip % 5)].0[0] ^= 1;
            prop_assert!(bad.verify(t.root(), 5, id, bytes.as_deref()).is_err());
        }
    }

    #[test]
    fn hostile_proofs_are_rejected_not_panics(
        bits in any::<u8>(),
        id in any::<u64>(),
        sibs in prop::collection::vec(any::<[u8; 32]>(), 0..40),
        root in any::<[u8; 32]>(),
    ) {
        let proof = Proof { siblings: sibs.into_iter().map(Digest).collect() };
        prop_assert!(proof.verify(Digest(root), bits, ObjectId(id), Some(b"x")).is_err());
    }

    #[test]
    fn sync_fetches_exactly_the_differing_objects(local in objects(6), remote in objects(6)) {
        let l = tree_of(6, &local);
        let r = tree_of(6, &remote);
        let (synced, stats) = run_sync(&l, &r);
        prop_assert_eq!(synced.root(), r.root());
        let differing = l.diff(&r).unwrap();
        let fetched_or_cleared = stats.objects_fetched + stats.objects_cleared;
        prop_assert!(fetched_or_cleared <= differing.len() as u64);
        let needed = differing.iter().filter(|id| r.get(**id).is_some()).count() as u64;
        prop_assert_eq!(stats.objects_fetched, needed);
    }

    #[test]
    fn sync_rejects_a_lying_server(
        local in objects(5),
        remote in objects(5),
        junk in any::<[u8; 32]>(),
        junk_bytes in prop::collection::vec(any::<u8>(), 1..5),
    ) {
        let l = tree_of(5, &local);
        let r = tree_of(5, &remote);
        let mut sync = TreeSync::new(&l, r.root());
        for pos in sync.wanted_nodes(4) {
            if let Some((a, b)) = r.children(pos) {
                prop_assert_eq!(sync.on_children(&l, pos, Digest(junk), b), Err(SyncReject::BadChildren));
                prop_assert_eq!(sync.on_children(&l, pos, a, b), Ok(()));
                prop_assert_eq!(sync.on_children(&l, pos, a, b), Err(SyncReject::Unrequested));
            }
        }
        for id in sync.wanted_objects(4) {
            if r.get(id).map(|b| b.to_vec()) != Some(junk_bytes.clone()) {
                prop_assert_eq!(sync.on_object(id, Some(&junk_bytes)), Err(SyncReject::BadObject));
            }
        }
        prop_assert_eq!(
            sync.on_children(&l, NodePos { depth: 200, index: u64::MAX }, Digest(junk), Digest(junk)),
            Err(SyncReject::Unrequested)
        );
    }

    #[test]
    fn state_updates_apply_only_against_their_root(base in objects(6), ws in writes(6)) {
        let from = tree_of(6, &base);
        let mut to = from.clone();
        to.apply_vecs(ws.iter().map(|(k, v)| (ObjectId(*k), v.clone()))).unwrap();
        let update = StateUpdate::between(&from, &to).unwrap();
        prop_assert_eq!(update.apply_to(&from, to.root()).unwrap().root(), to.root());
        if let Some(first) = update.writes.first() {
            // Leaving a write out is caught by the final root.
            let mut short = update.clone();
            short.writes.remove(0);
            prop_assert_eq!(short.apply_to(&from, to.root()).err(), Some(UpdateError::Incomplete));
            // A forged write is caught by its proof.
            let mut forged = update.clone();
            forged.writes[0].bytes = Some(b"forged".to_vec());
            prop_assert_eq!(
                forged.apply_to(&from, to.root()).err(),
                Some(UpdateError::BadProof(first.id, ProofError::RootMismatch))
            );
        }
    }
}

#[test]
fn positions_outside_the_tree_are_refused() {
    let t = tree_of(4, &BTreeMap::from([(3, b"a".to_vec())]));
    assert_eq!(t.children(NodePos { depth: 4, index: 3 }), None);
    assert_eq!(t.children(NodePos { depth: 2, index: 4 }), None);
    assert_eq!(
        t.node_digest(NodePos {
            depth: 63,
            index: 0
        }),
        None
    );
    assert!(t.proof(ObjectId(16)).is_none());
    assert_eq!(t.object_digest(ObjectId(99)), EMPTY_OBJECT);
    let mut t2 = t.clone();
    assert_eq!(
        t2.apply_vecs([(ObjectId(16), Some(vec![1]))]),
        Err(TreeError::IdOutOfRange(ObjectId(16)))
    );
    assert!(ObjectTree::new(MAX_BITS + 1).is_err());
    assert!(t.diff(&ObjectTree::new(3).unwrap()).is_err());
}

#[test]
fn deleting_every_object_gives_the_empty_root() {
    let mut t = tree_of(
        8,
        &BTreeMap::from([(1, b"a".to_vec()), (200, b"b".to_vec())]),
    );
    t.apply_vecs([(ObjectId(1), None), (ObjectId(200), Some(Vec::new()))])
        .unwrap();
    assert_eq!(t.root(), empty_subtree(8));
    assert!(t.is_empty());
}

#[test]
fn a_later_write_of_the_same_id_wins() {
    let mut t = ObjectTree::new(3).unwrap();
    t.apply_vecs([
        (ObjectId(2), Some(b"first".to_vec())),
        (ObjectId(2), Some(b"second".to_vec())),
    ])
    .unwrap();
    assert_eq!(
        t.get(ObjectId(2)).map(|b| b.to_vec()),
        Some(b"second".to_vec())
    );
}

// ---- the checkpoint/delta helper

/// A register machine whose snapshot counts how often it was taken.
#[derive(Default, Debug)]
struct Registers {
    values: BTreeMap<u8, u64>,
}

impl Application for Registers {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        let mut replies = Vec::new();
        for c in batch {
            let reg = c.op.first().copied().unwrap_or(0);
            let v = self.values.entry(reg).or_default();
            *v = v
                .wrapping_mul(31)
                .wrapping_add(nd.seed ^ u64::from(c.op.len() as u8));
            replies.push(v.to_le_bytes().to_vec());
        }
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }
    fn execute_read_only(&self, _client: ClientId, _op: &[u8]) -> Vec<u8> {
        Vec::new()
    }
    fn take_checkpoint(&mut self) -> Vec<u8> {
        postcard::to_stdvec(&self.values).unwrap()
    }
    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        self.values =
            postcard::from_bytes(checkpoint).map_err(|e| LoadError::Corrupt(e.to_string()))?;
        Ok(())
    }
    fn state_digest(&self) -> Digest {
        Digest::of(&postcard::to_stdvec(&self.values).unwrap())
    }
}

/// Run batch number `seq` (bare, so that tests can count with it).
fn run_batch<A: Application>(app: &mut A, seq: u64) {
    let op = [(seq % 5) as u8, 7];
    let cmd = Command::new(1, Life(0), ReqNo(seq), &op);
    app.execute(
        Seq(seq),
        &[cmd],
        NonDeterminism {
            time: seq,
            seed: seq * 3,
        },
    );
}

#[test]
fn delta_checkpoints_take_coarse_snapshots_rarely_and_load_back() {
    let mut a = CheckpointDelta::new(Registers::default(), 40);
    let mut plain = Registers::default();
    let mut checkpoints = Vec::new();
    for seq in 1..=100 {
        run_batch(&mut a, seq);
        run_batch(&mut plain, seq);
        if seq % 10 == 0 {
            checkpoints.push((seq, a.take_checkpoint()));
            assert!(
                a.log_len() < 40,
                "the log never holds a whole coarse interval"
            );
        }
    }
    // Initial snapshot plus one at 40 and one at 80: not one per checkpoint.
    assert_eq!(a.coarse_snapshots_taken(), 3);
    assert_eq!(a.state_digest(), plain.state_digest());
    // Any checkpoint loads to the state at its batch, and the replicas that loaded one go on
    // producing the same checkpoints as the one that never stopped.
    for (seq, cp) in &checkpoints {
        let mut b = CheckpointDelta::new(Registers::default(), 40);
        b.load_checkpoint(cp).unwrap();
        let mut reference = Registers::default();
        for s in 1..=*seq {
            run_batch(&mut reference, s);
        }
        assert_eq!(
            b.state_digest(),
            reference.state_digest(),
            "checkpoint {seq}"
        );
        let mut a2 = CheckpointDelta::new(Registers::default(), 40);
        a2.load_checkpoint(cp).unwrap();
        for s in seq + 1..=seq + 50 {
            run_batch(&mut a2, s);
            run_batch(&mut b, s);
        }
        assert_eq!(b.take_checkpoint(), a2.take_checkpoint());
    }
}

#[test]
fn corrupt_delta_checkpoints_are_errors() {
    let mut a = CheckpointDelta::new(Registers::default(), 4);
    run_batch(&mut a, 1);
    run_batch(&mut a, 2);
    let cp = a.take_checkpoint();
    let mut b = CheckpointDelta::new(Registers::default(), 4);
    let mut trailing = cp.clone();
    trailing.push(0);
    assert!(b.load_checkpoint(&trailing).is_err());
    for cut in 0..cp.len() {
        let _ = b.load_checkpoint(&cp[..cut]);
    }
    let mut decoded = DeltaCheckpoint::decode(&cp).unwrap();
    decoded.log.reverse();
    assert!(DeltaCheckpoint::decode(&decoded.encode()).is_err());
}

#[test]
fn a_retired_tree_frees_only_what_no_later_tree_holds() {
    let before: BTreeMap<u64, Vec<u8>> = (0..64u64).map(|i| (i, vec![i as u8; 8])).collect();
    let old = tree_of(10, &before);
    let mut new = old.clone();
    new.apply_vecs((0..8u64).map(|i| (ObjectId(i), Some(vec![0xee; 4]))))
        .unwrap();
    let root = new.root();
    // The old tree is the only holder of object 3's old bytes (besides this copy), and shares
    // object 40's leaf with the new tree.
    let bytes_of = |t: &ObjectTree, id: u64| match t.lookup(ObjectId(id)) {
        Held::Object(Some(b)) => b.clone(),
        other => panic!("object {id}: {other:?}"),
    };
    let (overwritten, shared) = (bytes_of(&old, 3), bytes_of(&old, 40));
    assert_eq!(Arc::strong_count(&overwritten), 2);
    assert_eq!(Arc::strong_count(&shared), 2);
    let mut retired = Retired::default();
    retired.retire(old);
    let mut steps = 0;
    while !retired.free(1) {
        steps += 1;
        assert!(
            steps < 10_000,
            "a retired tree is freed in finitely many steps"
        );
    }
    assert!(retired.is_empty());
    assert_eq!(
        Arc::strong_count(&overwritten),
        1,
        "its old bytes were freed"
    );
    assert_eq!(
        Arc::strong_count(&shared),
        2,
        "the new tree still holds the rest"
    );
    assert_eq!(new.root(), root);
    assert_eq!(
        new.root(),
        tree_of(10, &{
            let mut after = before.clone();
            after.extend((0..8u64).map(|i| (i, vec![0xee; 4])));
            after
        })
        .root()
    );
}
