//! Checkpoints of states that legitimately differ (docs/odrc.md), end to end on the real
//! key-value store: selective replicas, each keeping an object tree of what it wrote or
//! loaded, report the roots of the partitions they hold current at each checkpoint (bringing
//! forced partitions up to date first); once a checkpoint is certified, each holds the
//! partitions it did not report as their certified roots, and its tree's root is then the
//! root of the store that executed everything. Objects a catch-up loads verify, with the
//! proofs the full store's tree gives, against that root. One replica may be faulty: silent,
//! or lying about every root, while executing correctly.

mod common;

use common::{batches, full, Full};
use plumb_app::{ObjectState, ObjectWrite};
use plumb_crypto::Digest;
use plumb_kv::{KvStore, BUCKET_BITS};
use plumb_objects::{NodePos, ObjectTree};
use plumb_odrc::{Certifier, Execution, Job, Maintenance, Partition, Position, Selector};
use plumb_wire::{ExecId, Seq};
use proptest::prelude::*;
use std::collections::BTreeMap;

const INTERVAL: u64 = 4;
const TIMEOUT: u64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Silent,
    Lies,
}

struct Replica {
    store: KvStore,
    execution: Execution,
    certifier: Certifier,
    /// Every object as this replica last wrote or loaded it.
    tree: ObjectTree,
    /// The tree at each checkpoint not yet certified, with the partitions reported there.
    taken: BTreeMap<Seq, (ObjectTree, Vec<Partition>)>,
    /// The root of the last certified checkpoint, as this replica holds it.
    certified_root: Digest,
    fault: Option<Fault>,
}

fn partition_root(tree: &ObjectTree, depth: u8, p: Partition) -> Digest {
    let pos = NodePos {
        depth,
        index: u64::from(p.0),
    };
    tree.node_digest(pos).expect("a whole tree has every node")
}

impl Replica {
    /// Run `job`, with its objects as of its checkpoint from the full store, each checked
    /// against this replica's certified root with the full tree's proof.
    fn run(&mut self, job: Job, full: &Full) -> Result<Vec<(Position, Vec<u8>)>, TestCaseError> {
        let at = &full.snapshots[&job.as_of];
        let proofs = &full.trees[&job.as_of];
        let mut loaded: Vec<ObjectWrite> = Vec::new();
        for &id in &job.load {
            let bytes = at.object_bytes(id);
            let proof = proofs.proof(id).expect("the full tree holds every object");
            prop_assert_eq!(
                proof.verify(self.certified_root, BUCKET_BITS, id, bytes.as_deref()),
                Ok(()),
                "{:?} loaded as of {:?}",
                id,
                job.as_of
            );
            loaded.push((id, bytes));
        }
        self.tree
            .apply_vecs(loaded.iter().cloned())
            .expect("ids in range");
        let answers = self
            .execution
            .run(&mut self.store, job, loaded)
            .expect("the key-value store executes selected commands");
        self.tree
            .apply_vecs(self.store.take_changed_objects())
            .expect("ids in range");
        Ok(answers.replies)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn certified_checkpoints_of_selective_replicas_are_the_full_stores(
        extra in 0usize..=2,
        partition_bits in 3u8..=4,
        seeds in prop::collection::vec((any::<u64>(), 1u8..=5), 4..36),
        fault in prop::option::of((0usize..5, any::<bool>())),
    ) {
        // u = r = 1: two maintainers a partition, two matching roots certify one.
        let replicas = 3 + extra;
        let maintenance = Maintenance::new(replicas, 2, partition_bits, BUCKET_BITS).expect("valid");
        let batches = batches(&seeds);
        let full = full(&batches);
        let empty = full.trees[&Seq(0)].root();
        let mut group: Vec<Replica> = ExecId::all(replicas)
            .map(|me| Replica {
                store: KvStore::default(),
                execution: Execution::new(Selector::new(me, maintenance)),
                certifier: Certifier::new(me, maintenance, 2, INTERVAL, TIMEOUT)
                    .expect("valid"),
                tree: ObjectTree::new(BUCKET_BITS).expect("the store's bits"),
                taken: BTreeMap::new(),
                certified_root: empty,
                fault: None,
            })
            .collect();
        if let Some((who, lies)) = fault {
            group[who % replicas].fault = Some(if lies { Fault::Lies } else { Fault::Silent });
        }
        let mut certified_somewhere = 0;
        for b in &batches {
            for replica in &mut group {
                let access = b
                    .commands
                    .iter()
                    .map(|c| (c.clone(), replica.store.access_set(&c.op)))
                    .collect();
                let job = replica.execution.admit(b.seq, access, b.nd);
                for (pos, reply) in replica.run(job, &full)? {
                    prop_assert_eq!(&reply, &full.replies[&pos], "{:?}", pos);
                }
            }
            if b.seq.0 % INTERVAL != 0 {
                continue;
            }
            // Each replica reaches the checkpoint: forced partitions brought up to date, the
            // tree taken, the roots of what it holds current reported.
            let now = b.seq.0 * 1000;
            let mut reports: Vec<(ExecId, Vec<(Partition, Digest)>)> = Vec::new();
            for (i, replica) in group.iter_mut().enumerate() {
                let me = ExecId(i as u16);
                let reported = replica.certifier.to_report();
                for &p in &reported {
                    if !maintenance.maintains(me, p) {
                        let job = replica.execution.catch_up_partition(p);
                        replica.run(job, &full)?;
                    }
                }
                let roots: Vec<(Partition, Digest)> = reported
                    .iter()
                    .map(|&p| (p, partition_root(&replica.tree, partition_bits, p)))
                    .collect();
                replica.taken.insert(b.seq, (replica.tree.clone(), reported));
                match replica.fault {
                    None => {
                        replica.certifier.on_checkpoint(b.seq, now, &roots);
                        reports.push((me, roots));
                    }
                    Some(Fault::Lies) => {
                        let lies = roots.iter().map(|(p, _)| (*p, Digest::of(b"lie"))).collect();
                        reports.push((me, lies));
                    }
                    Some(Fault::Silent) => {}
                }
            }
            for (i, replica) in group.iter_mut().enumerate() {
                if replica.fault.is_some() {
                    continue;
                }
                for (from, roots) in &reports {
                    if from.index() != i {
                        let _ = replica.certifier.on_report(*from, b.seq, roots);
                    }
                }
                replica.certifier.on_tick(now + TIMEOUT);
                let certified = replica.certifier.certified();
                let Some((tree, reported)) = replica.taken.remove(&certified) else {
                    continue;
                };
                // Certified: hold what was not reported as its certified root.
                let mut tree = tree;
                for p in (0..maintenance.partitions()).map(Partition) {
                    let root = replica.certifier.certified_root(p).expect("certified");
                    if reported.contains(&p) {
                        prop_assert_eq!(partition_root(&tree, partition_bits, p), root, "{} reported", p);
                    } else {
                        let pos = NodePos { depth: partition_bits, index: u64::from(p.0) };
                        tree.set_subtree_digest(pos, root).expect("a whole tree");
                    }
                }
                prop_assert_eq!(tree.root(), full.trees[&certified].root(), "e{} at {:?}", i, certified);
                replica.certified_root = tree.root();
                replica.taken.retain(|s, _| *s > certified);
                replica.execution.on_certified(certified);
                replica.execution.selector().check_invariants();
                certified_somewhere += 1;
            }
        }
        // A faulty replica holds up the first checkpoint at most: every later one certifies.
        let checkpoints = batches.len() as u64 / INTERVAL;
        if checkpoints >= 2 {
            prop_assert!(certified_somewhere > 0);
            for replica in group.iter().filter(|r| r.fault.is_none()) {
                prop_assert_eq!(replica.certifier.certified(), Seq(checkpoints * INTERVAL));
            }
        }
    }
}
