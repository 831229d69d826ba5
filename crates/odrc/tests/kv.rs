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

use plumb_app::{ObjectState, ObjectWrite};
use plumb_kv::{KvStore, BUCKET_BITS};
use plumb_odrc::{Execution, Job, Maintenance, Partition, Position, Selector};
use plumb_wire::{ExecId, Seq};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

mod common;

use common::{batches, bucket_keys, full, Full};

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

        let Full { snapshots, replies, .. } = full(&batches);

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
            for (key, id) in bucket_keys() {
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
            prop_assert!(replica.store == snapshots[&batches.last().expect("a batch").seq], "a selective replica caught up on everything");
        }
    }
}
