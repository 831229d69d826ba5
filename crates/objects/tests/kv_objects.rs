//! The key-value store as objects: dirty tracking matches a full recomputation, object-level
//! transfer rebuilds the same store, and hostile bucket bytes are errors.

use plumb_app::{Application, ObjectId, ObjectState};
use plumb_kv::{bucket_of, random_op_with_expiry, KvOp, KvStore, BUCKET_BITS};
use plumb_objects::{serve_children, ObjectTree, TreeSync};
use std::collections::BTreeSet;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The tree of `store` computed from scratch: every bucket that holds a key.
fn full_tree(store: &KvStore) -> ObjectTree {
    let ids: BTreeSet<ObjectId> = store.entries().map(|(k, _)| bucket_of(k)).collect();
    let mut t = ObjectTree::new(BUCKET_BITS).unwrap();
    t.apply_vecs(ids.into_iter().map(|id| (id, store.bucket_bytes(id))))
        .unwrap();
    t
}

/// Bring `store` (whose tree is `local`) to `target` by object-level transfer from `server`.
fn sync_store(store: &mut KvStore, local: &ObjectTree, server: &ObjectTree) -> u64 {
    let mut sync = TreeSync::new(local, server.root());
    while !sync.is_done() {
        for (pos, l, r) in serve_children(server, &sync.wanted_nodes(64)) {
            sync.on_children(local, pos, l, r).unwrap();
        }
        for id in sync.wanted_objects(64) {
            let bytes = server.get(id).map(|b| b.to_vec());
            sync.on_object(id, bytes.as_deref()).unwrap();
        }
    }
    let fetched = sync.stats().objects_fetched;
    for (id, bytes) in sync.take_writes() {
        store.load_object(id, bytes.as_deref()).unwrap();
    }
    fetched
}

#[test]
fn incremental_object_checkpoints_match_a_full_recomputation() {
    let keys: Vec<Vec<u8>> = (0..40).map(|i| format!("key{i}").into_bytes()).collect();
    let key_refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    for seed in 0..30u64 {
        let mut rng = seed;
        let mut next = || splitmix(&mut rng);
        let mut a = KvStore::new();
        let mut tree = ObjectTree::new(BUCKET_BITS).unwrap();
        let mut b = KvStore::new();
        let mut b_tree = ObjectTree::new(BUCKET_BITS).unwrap();
        let mut now = 1;
        for round in 0..12 {
            for _ in 0..15 {
                now += next() % 50;
                let op = random_op_with_expiry(&mut next, &key_refs, 400);
                a.apply_seeded(&op, now, next());
            }
            let changed = a.take_changed_objects();
            assert!(a.dirty_buckets() == 0);
            tree.apply_vecs(changed).unwrap();
            assert_eq!(
                tree.root(),
                full_tree(&a).root(),
                "seed {seed} round {round}"
            );
            // Another store catches up by objects only every third round.
            if round % 3 == 2 {
                sync_store(&mut b, &b_tree, &tree);
                b.load_object_metadata(&[]).unwrap();
                b_tree = tree.clone();
                assert_eq!(b, a, "seed {seed} round {round}");
                assert_eq!(b.state_digest(), a.state_digest());
                assert!(b.take_changed_objects().is_empty(), "loads are not changes");
            }
        }
    }
}

#[test]
fn flushall_and_deletes_empty_their_buckets() {
    let mut a = KvStore::new();
    for i in 0..100 {
        a.apply(
            &KvOp::Set {
                key: format!("k{i}").into_bytes(),
                value: b"v".to_vec(),
                expire: None,
            },
            1,
        );
    }
    let mut tree = ObjectTree::new(BUCKET_BITS).unwrap();
    tree.apply_vecs(a.take_changed_objects()).unwrap();
    assert_eq!(tree.len(), full_tree(&a).len());
    a.apply(&KvOp::FlushAll, 2);
    let changed = a.take_changed_objects();
    assert!(changed.iter().all(|(_, b)| b.is_none()));
    tree.apply_vecs(changed).unwrap();
    assert!(tree.is_empty());
    assert_eq!(tree.root(), ObjectTree::new(BUCKET_BITS).unwrap().root());
}

#[test]
fn hostile_bucket_bytes_are_errors() {
    let mut a = KvStore::new();
    a.apply(
        &KvOp::Set {
            key: b"alpha".to_vec(),
            value: b"1".to_vec(),
            expire: None,
        },
        1,
    );
    let id = bucket_of(b"alpha");
    let good = a.bucket_bytes(id).unwrap();
    let mut b = KvStore::new();
    // The right bytes under another id: the key is in the wrong bucket.
    let other = ObjectId((id.0 + 1) % (1 << BUCKET_BITS));
    assert!(b.load_object(other, Some(&good)).is_err());
    assert!(b
        .load_object(ObjectId(1 << BUCKET_BITS), Some(&good))
        .is_err());
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(b.load_object(id, Some(&trailing)).is_err());
    for cut in 1..good.len() {
        assert!(b.load_object(id, Some(&good[..cut])).is_err());
    }
    let mut rng = 7u64;
    for _ in 0..500 {
        let len = (splitmix(&mut rng) % 40) as usize;
        let junk: Vec<u8> = (0..len).map(|_| splitmix(&mut rng) as u8).collect();
        let _ = b.load_object(id, Some(&junk));
    }
    let mut c = KvStore::new();
    c.load_object(id, Some(&good)).unwrap();
    assert_eq!(c, a);
}
