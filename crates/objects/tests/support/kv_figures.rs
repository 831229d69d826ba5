//! The checkpoint and state-transfer figures of docs/performance.md ("State as objects"),
//! shared by the benchmark (`examples/checkpoint_bench.rs`, full size) and its CI-sized test
//! (`tests/kv_figures.rs`). Everything runs in one process: the "network" is the encoded
//! wire messages, counted in bytes with their envelope.

use plumb_app::{Application, ObjectState};
use plumb_crypto::Digest;
use plumb_kv::{KvOp, KvStore, BUCKET_BITS};
use plumb_objects::{NodePos, ObjectId, ObjectTree, TreeSync};
use plumb_wire::{Message, ObjectChildren, ObjectNode, ObjectPayload, Seq};
use std::time::Duration;

/// CPU time of this thread: the machine is shared, so wall time would measure the neighbours.
#[derive(Clone, Copy)]
pub struct Instant(Duration);

impl Instant {
    pub fn now() -> Instant {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the call only fills it in.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Instant(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }

    pub fn elapsed(&self) -> Duration {
        Instant::now().0.saturating_sub(self.0)
    }
}

/// Envelope bytes around every message body (header and MAC).
const ENVELOPE_BYTES: u64 = plumb_wire::envelope::HEADER as u64 + 16;
/// The execution stage's request sizes (crates/exec/src/object_transfer.rs).
const NODES_PER_FETCH: usize = 2048;
const OBJECTS_PER_FETCH: usize = 512;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn key(i: u64) -> Vec<u8> {
    format!("key:{i:010}").into_bytes()
}

fn value(rng: &mut u64, bytes: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(bytes + 8);
    while v.len() < bytes {
        v.extend_from_slice(&splitmix(rng).to_le_bytes());
    }
    v.truncate(bytes);
    v
}

fn set(store: &mut KvStore, i: u64, rng: &mut u64, value_bytes: usize) {
    let op = KvOp::Set {
        key: key(i),
        value: value(rng, value_bytes),
        expire: None,
    };
    store.apply(&op, 1);
}

/// A store of `keys` keys of `value_bytes` bytes, its object tree (the first checkpoint),
/// and the time that first, full, checkpoint took.
pub fn build_store(keys: u64, value_bytes: usize, seed: u64) -> (KvStore, ObjectTree, Duration) {
    let mut rng = seed;
    let mut store = KvStore::new();
    for i in 0..keys {
        set(&mut store, i, &mut rng, value_bytes);
    }
    let mut tree = ObjectTree::new(BUCKET_BITS).expect("bits");
    let t = Instant::now();
    tree.apply_vecs(store.take_changed_objects()).expect("ids");
    (store, tree, t.elapsed())
}

/// (a): one checkpoint after changing `changed` keys.
#[derive(Clone, Debug)]
pub struct CheckpointFigures {
    pub keys: u64,
    pub state_bytes: u64,
    pub changed: u64,
    /// Buckets (objects) rehashed by the object checkpoint.
    pub objects_written: u64,
    /// Object checkpoint: collect the written buckets, hash them, update the tree (median).
    pub object_checkpoint: Duration,
    /// Bytes of the delta the execution stage persists for it.
    pub delta_bytes: u64,
    /// Whole checkpoint (today, and for applications without objects): encode and hash
    /// the whole state (median).
    pub whole_checkpoint: Duration,
    pub whole_bytes: u64,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn checkpoint_figures(
    store: &mut KvStore,
    tree: &mut ObjectTree,
    changed: u64,
    value_bytes: usize,
    rounds: usize,
) -> CheckpointFigures {
    let keys = store.len() as u64;
    let mut rng = 99 + keys;
    let mut object_times = Vec::new();
    let mut whole_times = Vec::new();
    let mut objects_written = 0;
    let mut delta_bytes = 0;
    let mut whole_bytes = 0;
    for _ in 0..rounds {
        for _ in 0..changed {
            let i = splitmix(&mut rng) % keys.max(1);
            set(store, i, &mut rng, value_bytes);
        }
        let t = Instant::now();
        let writes = store.take_changed_objects();
        objects_written = writes.len() as u64;
        tree.apply_vecs(writes).expect("ids");
        let root = tree.root();
        object_times.push(t.elapsed());
        std::hint::black_box(root);
        delta_bytes = tree_delta_bytes(tree, objects_written);
        let t = Instant::now();
        let bytes = store.canonical_bytes();
        let token = Digest::of(&bytes);
        whole_times.push(t.elapsed());
        std::hint::black_box(token);
        whole_bytes = bytes.len() as u64;
    }
    CheckpointFigures {
        keys,
        state_bytes: whole_bytes,
        changed,
        objects_written,
        object_checkpoint: median(object_times),
        delta_bytes,
        whole_checkpoint: median(whole_times),
        whole_bytes,
    }
}

/// About what a delta of `n` objects of this tree costs on disk (objects average size).
fn tree_delta_bytes(tree: &ObjectTree, n: u64) -> u64 {
    let sample: Vec<u64> = tree
        .iter()
        .take(256)
        .map(|(_, b)| b.len() as u64 + 12)
        .collect();
    let avg = sample.iter().sum::<u64>() / sample.len().max(1) as u64;
    avg * n
}

/// (b): a replica that missed `missed` of the key updates catches up.
#[derive(Clone, Debug, Default)]
pub struct TransferFigures {
    pub keys: u64,
    pub keys_missed: u64,
    pub state_bytes: u64,
    /// Object-level transfer: messages both ways, their bytes with envelopes, the objects
    /// and tree nodes fetched, and the time to serve, verify and load them (one process).
    pub object_messages: u64,
    pub object_wire_bytes: u64,
    pub objects_fetched: u64,
    pub nodes_fetched: u64,
    pub object_time: Duration,
    /// Whole-checkpoint transfer: the bytes of the one EXEC-CP-STATE it takes, and the time
    /// to encode, hash (token check) and load it.
    pub whole_wire_bytes: u64,
    pub whole_time: Duration,
}

fn wire_bytes(msg: &Message) -> u64 {
    postcard::to_stdvec(msg).map_or(0, |b| b.len() as u64) + ENVELOPE_BYTES
}

pub fn transfer_figures(keys: u64, value_bytes: usize, missed_keys: u64) -> TransferFigures {
    let (mut server, mut server_tree, _) = build_store(keys, value_bytes, 1);
    let mut replica = server.clone();
    let replica_tree = server_tree.clone();
    let mut rng = 4242;
    for _ in 0..missed_keys {
        let i = splitmix(&mut rng) % keys.max(1);
        set(&mut server, i, &mut rng, value_bytes);
    }
    server_tree
        .apply_vecs(server.take_changed_objects())
        .expect("ids");
    let seq = Seq(1);
    let mut f = TransferFigures {
        keys,
        keys_missed: missed_keys,
        ..TransferFigures::default()
    };

    // Object-level: the session the execution stage runs, over encoded messages.
    let t = Instant::now();
    let mut sync = TreeSync::new(&replica_tree, server_tree.root());
    while !sync.is_done() {
        let nodes = sync.wanted_nodes(NODES_PER_FETCH);
        if !nodes.is_empty() {
            let ask = Message::FetchObjectNodes {
                seq,
                nodes: nodes
                    .iter()
                    .map(|p| ObjectNode {
                        depth: p.depth,
                        index: p.index,
                    })
                    .collect(),
            };
            f.object_wire_bytes += wire_bytes(&ask);
            let answer = Message::ObjectNodes {
                seq,
                nodes: nodes
                    .iter()
                    .filter_map(|p| {
                        server_tree
                            .children(*p)
                            .map(|(left, right)| ObjectChildren {
                                node: ObjectNode {
                                    depth: p.depth,
                                    index: p.index,
                                },
                                left,
                                right,
                            })
                    })
                    .collect(),
            };
            f.object_wire_bytes += wire_bytes(&answer);
            f.object_messages += 2;
            if let Message::ObjectNodes { nodes, .. } = answer {
                for c in nodes {
                    let pos = NodePos {
                        depth: c.node.depth,
                        index: c.node.index,
                    };
                    sync.on_children(&replica_tree, pos, c.left, c.right)
                        .expect("verified");
                }
            }
        }
        let ids = sync.wanted_objects(OBJECTS_PER_FETCH);
        if !ids.is_empty() {
            let ask = Message::FetchObjects {
                seq,
                ids: ids.iter().map(|id| id.0).collect(),
                proofs: false,
            };
            f.object_wire_bytes += wire_bytes(&ask);
            let answer = Message::Objects {
                seq,
                objects: ids
                    .iter()
                    .map(|id| ObjectPayload {
                        id: id.0,
                        bytes: server_tree.get(*id).map(|b| b.to_vec()),
                        proof: Vec::new(),
                    })
                    .collect(),
            };
            f.object_wire_bytes += wire_bytes(&answer);
            f.object_messages += 2;
            if let Message::Objects { objects, .. } = answer {
                for p in objects {
                    sync.on_object(ObjectId(p.id), p.bytes.as_deref())
                        .expect("verified");
                }
            }
        }
    }
    let stats = sync.stats();
    let writes = sync.take_writes();
    let mut synced = replica_tree.clone();
    synced.apply(writes.iter().cloned()).expect("ids");
    for (id, bytes) in &writes {
        replica
            .load_object(*id, bytes.as_deref())
            .expect("own format");
    }
    f.object_time = t.elapsed();
    assert_eq!(
        synced.root(),
        server_tree.root(),
        "object transfer reaches the root"
    );
    assert!(replica == server, "object transfer reaches the state");
    f.objects_fetched = stats.objects_fetched;
    f.nodes_fetched = stats.nodes_fetched;

    // Whole checkpoint: the sender encodes its state, the receiver checks the token and
    // loads it.
    let t = Instant::now();
    let state = server.canonical_bytes();
    let msg = Message::ExecCpState { seq, state };
    f.whole_wire_bytes = wire_bytes(&msg);
    let Message::ExecCpState { state, .. } = msg else {
        unreachable!()
    };
    std::hint::black_box(Digest::of(&state));
    let mut loaded = KvStore::new();
    loaded.load_checkpoint(&state).expect("own format");
    f.whole_time = t.elapsed();
    f.state_bytes = state.len() as u64;
    assert!(loaded == server);
    f
}
