//! Selective execution of the real key-value store against a store that executes everything
//! (docs/odrc.md): whatever the assignment, the operations (expiries, random pops, two-key
//! writes across partitions, operations on the whole key space, pub/sub), the checkpoints
//! certified, the commands forced and the partitions brought up to date, every command a
//! selective replica answers gets the full store's reply, a partition brought up to date
//! holds the full store's keys, each command is answered as it comes on at least `m`
//! replicas, and a replica that catches up on everything holds the full store's state.
//!
//! It is the application side of the contract: [`Application::execute_selected`] running a
//! command after later batches, at its own batch's time and seed, must give what the whole
//! batch gave it in order.

use plumb_app::{Application, Command, NonDeterminism, ObjectState, ObjectWrite};
use plumb_kv::{bucket_of, random_op_with_expiry, ExpireCondition, KvOp, KvStore, BUCKET_BITS};
use plumb_odrc::{AgreedCommand, Execution, Job, Maintenance, Partition, Position, Selector};
use plumb_wire::{ExecId, Life, ReqNo, Seq};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

const KEYS: usize = 12;
/// Expiries up to a few batches ahead, so keys expire between a command and its replay.
const MAX_EXPIRE: u64 = 4_000;
const BATCH_TIME: u64 = 1_000;

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

struct Batch {
    seq: Seq,
    nd: NonDeterminism,
    commands: Vec<AgreedCommand>,
}

fn batches(seeds: &[(u64, u8)]) -> Vec<Batch> {
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

/// One selective replica: its store and what decides what the store runs.
struct Replica {
    store: KvStore,
    execution: Execution,
}

impl Replica {
    /// Run `job`, loading its objects from `snapshots` (the full store after each batch, as
    /// a certified checkpoint's verified objects would be).
    fn run(&mut self, job: Job, snapshots: &BTreeMap<Seq, KvStore>) -> Vec<(Position, Vec<u8>)> {
        let at = &snapshots[&job.as_of];
        let loaded: Vec<ObjectWrite> = job
            .load
            .iter()
            .map(|&id| (id, at.object_bytes(id)))
            .collect();
        self.execution
            .run(&mut self.store, job, loaded)
            .expect("the key-value store executes selected commands")
            .replies
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_selective_key_value_store_replies_as_a_full_one(
        replicas in 3usize..=5,
        maintainers in 1usize..=2,
        partition_bits in 3u8..=4,
        seeds in prop::collection::vec((any::<u64>(), 1u8..=5), 1..40),
        certify in prop::collection::vec(any::<u8>(), 40),
        force in prop::collection::vec(any::<u16>(), 40),
    ) {
        let batches = batches(&seeds);

        // The full store, and its state after every batch.
        let mut full = KvStore::default();
        let mut snapshots = BTreeMap::from([(Seq(0), full.clone())]);
        let mut replies: HashMap<Position, Vec<u8>> = HashMap::new();
        for b in &batches {
            let commands: Vec<Command<'_>> = b.commands.iter().map(command).collect();
            let out = full.execute(b.seq, &commands, b.nd);
            for (i, reply) in out.replies.into_iter().enumerate() {
                replies.insert(Position { seq: b.seq, index: i as u32 }, reply);
            }
            snapshots.insert(b.seq, full.clone());
        }

        let maintenance = Maintenance::new(replicas, maintainers, partition_bits, BUCKET_BITS)
            .expect("a valid assignment");
        let mut group: Vec<Replica> = ExecId::all(replicas)
            .map(|me| Replica {
                store: KvStore::default(),
                execution: Execution::new(Selector::new(me, maintenance)),
            })
            .collect();
        let mut answered: HashMap<Position, usize> = HashMap::new();
        let mut certified = Seq(0);
        for (k, b) in batches.iter().enumerate() {
            for replica in &mut group {
                let access = b
                    .commands
                    .iter()
                    .map(|c| (c.clone(), replica.store.access_set(&c.op)))
                    .collect();
                let job = replica.execution.admit(b.seq, access, b.nd);
                for (pos, reply) in replica.run(job, &snapshots) {
                    prop_assert_eq!(&reply, &replies[&pos], "{:?} on a selective replica", pos);
                    *answered.entry(pos).or_default() += 1;
                }
                replica.execution.selector().check_invariants();
            }
            // A client whose vote came up short forces a command held somewhere.
            // A partition forced here is brought up to date at a checkpoint: its keys then hold
            // what the full store's do.
            let f = usize::from(force[k % force.len()]);
            let p = Partition((f / 3) as u32 % maintenance.partitions());
            let replica = &mut group[(f / 5) % replicas];
            let job = replica.execution.catch_up_partition(p);
            prop_assert_eq!(replica.run(job, &snapshots).len(), 0, "nothing answered");
            for key in (0..KEYS).map(|k| format!("k{k}")) {
                let id = bucket_of(key.as_bytes());
                if maintenance.partition_of(id) == p {
                    prop_assert_eq!(
                        replica.store.object_bytes(id),
                        snapshots[&b.seq].object_bytes(id),
                        "{} in {} after its catch-up", key, p
                    );
                }
            }
            let replica = &mut group[f % replicas];
            let held: Vec<Position> = replica.execution.held().collect();
            if !held.is_empty() {
                let pos = held[f % held.len()];
                let job = replica.execution.force(pos).expect("a held command can be forced");
                let answers = replica.run(job, &snapshots);
                prop_assert_eq!(answers.len(), 1);
                prop_assert_eq!(answers[0].0, pos);
                prop_assert_eq!(&answers[0].1, &replies[&pos], "forced {:?}", pos);
            }
            // A checkpoint of a batch admitted everywhere becomes certified.
            let c = certify[k % certify.len()];
            if c % 4 == 0 && b.seq > certified {
                certified = Seq(certified.0 + 1 + u64::from(c / 4) % (b.seq.0 - certified.0));
                for replica in &mut group {
                    replica.execution.on_certified(certified);
                }
            }
        }
        for (pos, _) in replies.iter() {
            let n = answered.get(pos).copied().unwrap_or(0);
            prop_assert!(n >= maintainers, "{:?} answered on {} replicas as it came", pos, n);
        }
        for replica in &mut group {
            let job = replica.execution.catch_up_all();
            prop_assert_eq!(job.answers().count(), 0);
            replica.run(job, &snapshots);
            prop_assert!(replica.store == full, "a selective replica caught up on everything");
        }
    }
}

fn command(c: &AgreedCommand) -> Command<'_> {
    Command {
        client: c.client,
        nc: c.nc,
        op: &c.op,
        request: c.request,
    }
}
