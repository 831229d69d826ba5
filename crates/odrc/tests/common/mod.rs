//! What the selective execution tests share: random key-value batches and the store that
//! executes everything.

#![allow(dead_code)]

use plumb_app::{Application, Command, NonDeterminism, ObjectState};
use plumb_kv::{bucket_of, random_op_with_expiry, ExpireCondition, KvOp, KvStore, BUCKET_BITS};
use plumb_objects::ObjectTree;
use plumb_odrc::{AgreedCommand, Position};
use plumb_wire::{Life, ReqNo, Seq};
use std::collections::{BTreeMap, HashMap};

pub const KEYS: usize = 12;
/// Expiries up to a few batches ahead, so keys expire between a command and its replay.
pub const MAX_EXPIRE: u64 = 4_000;
pub const BATCH_TIME: u64 = 1_000;

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random operation: the store's own generator (expiries included) most of the time, and
/// the ones that stress selective execution: writes of two keys (mostly across partitions),
/// time-relative reads and writes, seeded random pops, publishing (no object: runs
/// everywhere).
fn op(rng: &mut u64) -> KvOp {
    let names: Vec<Vec<u8>> = (0..KEYS).map(|k| format!("k{k}").into_bytes()).collect();
    let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    let mut next = || splitmix(rng);
    let key = |r: u64| names[r as usize % KEYS].clone();
    match next() % 10 {
        0 => KvOp::MSet {
            pairs: vec![(key(next()), b"1".to_vec()), (key(next()), b"2".to_vec())],
        },
        1 => KvOp::Ttl { key: key(next()) },
        2 => KvOp::Expire {
            key: key(next()),
            after: (next() % MAX_EXPIRE) as i64,
            condition: ExpireCondition::default(),
        },
        3 => match next() % 2 {
            0 => KvOp::SAdd {
                key: key(next()),
                members: vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()],
            },
            _ => KvOp::SPop {
                key: key(next()),
                count: None,
            },
        },
        4 => KvOp::Publish {
            channel: b"c".to_vec(),
            message: b"m".to_vec(),
        },
        _ => random_op_with_expiry(&mut next, &keys, MAX_EXPIRE),
    }
}

pub struct Batch {
    pub seq: Seq,
    pub nd: NonDeterminism,
    pub commands: Vec<AgreedCommand>,
}

pub fn batches(seeds: &[(u64, u8)]) -> Vec<Batch> {
    seeds
        .iter()
        .enumerate()
        .map(|(b, &(seed, len))| {
            let mut rng = seed;
            let commands = (0..len)
                .map(|i| {
                    let bytes = op(&mut rng).encode();
                    let client = u32::from(i % 3);
                    AgreedCommand::of(&Command::new(client, Life(0), ReqNo(b as u64), &bytes))
                })
                .collect();
            Batch {
                seq: Seq(b as u64 + 1),
                nd: NonDeterminism {
                    time: (b as u64 + 1) * BATCH_TIME + seed % 500,
                    seed,
                },
                commands,
            }
        })
        .collect()
}

/// The store that executes everything, after each batch (batch 0: the empty store), with its
/// object tree, and its reply to every command.
pub struct Full {
    pub snapshots: BTreeMap<Seq, KvStore>,
    pub trees: BTreeMap<Seq, ObjectTree>,
    pub replies: HashMap<Position, Vec<u8>>,
}

pub fn full(batches: &[Batch]) -> Full {
    let mut store = KvStore::default();
    let mut tree = ObjectTree::new(BUCKET_BITS).expect("the store's bits");
    let mut snapshots = BTreeMap::from([(Seq(0), store.clone())]);
    let mut trees = BTreeMap::from([(Seq(0), tree.clone())]);
    let mut replies = HashMap::new();
    for b in batches {
        let commands: Vec<Command<'_>> = b.commands.iter().map(command).collect();
        let out = store.execute(b.seq, &commands, b.nd);
        for (i, reply) in out.replies.into_iter().enumerate() {
            replies.insert(
                Position {
                    seq: b.seq,
                    index: i as u32,
                },
                reply,
            );
        }
        tree.apply_vecs(store.take_changed_objects())
            .expect("ids in range");
        snapshots.insert(b.seq, store.clone());
        trees.insert(b.seq, tree.clone());
    }
    Full {
        snapshots,
        trees,
        replies,
    }
}

/// The keys the batches use, with their buckets.
pub fn bucket_keys() -> Vec<(String, plumb_app::ObjectId)> {
    (0..KEYS)
        .map(|k| {
            let key = format!("k{k}");
            let id = bucket_of(key.as_bytes());
            (key, id)
        })
        .collect()
}

pub fn command(c: &AgreedCommand) -> Command<'_> {
    Command {
        client: c.client,
        nc: c.nc,
        op: &c.op,
        request: c.request,
    }
}
