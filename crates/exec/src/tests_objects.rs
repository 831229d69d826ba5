//! Object checkpoints and object-level state transfer (docs/objects.md), with the register
//! machine in object mode: 16 buckets of registers.

use super::*;
use plumb_app::{ObjectId, ObjectState, ObjectWrite};
use plumb_core::DivergenceReport;
use plumb_core::DropReason;
use plumb_wire::ReqNo;
use std::collections::BTreeSet;

pub(super) fn bucket(key: &str) -> u64 {
    u64::from(Digest::of(key.as_bytes()).0[0] % 16)
}

impl Registers {
    fn with_objects() -> Registers {
        Registers {
            dirty: Some(BTreeSet::new()),
            ..Registers::default()
        }
    }

    fn bucket_bytes(&self, b: u64) -> Option<Vec<u8>> {
        let part: BTreeMap<&String, &String> =
            self.map.iter().filter(|(k, _)| bucket(k) == b).collect();
        (!part.is_empty()).then(|| postcard::to_stdvec(&part).unwrap())
    }
}

impl ObjectState for Registers {
    fn object_id_bits(&self) -> u8 {
        4
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        let dirty = std::mem::take(self.dirty.as_mut().unwrap());
        dirty
            .into_iter()
            .map(|b| (ObjectId(b), self.bucket_bytes(b)))
            .collect()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.bucket_bytes(id.0)
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        self.map.retain(|k, _| bucket(k) != id.0);
        if let Some(bytes) = bytes {
            let part: BTreeMap<String, String> =
                postcard::from_bytes(bytes).map_err(|e| LoadError::Corrupt(e.to_string()))?;
            self.map.extend(part);
        }
        self.dirty.as_mut().unwrap().remove(&id.0);
        Ok(())
    }

    /// The bucket of the key an operation names.
    fn access_set(&self, op: &[u8]) -> plumb_app::AccessSet {
        let text = String::from_utf8_lossy(op).to_string();
        match text.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["put", k, _] | ["get", k] => plumb_app::AccessSet::objects([ObjectId(bucket(k))]),
            _ => plumb_app::AccessSet::Objects(Vec::new()),
        }
    }
}

fn object_leader(net: &Net, count: u64) -> (Replica, Vec<Action>) {
    leader(net, Registers::with_objects(), count)
}

/// Buckets written by `puts(first, count)`.
fn buckets_of_puts(first: Seq, count: u64) -> BTreeSet<u64> {
    (first.0..first.0 + count)
        .map(|s| bucket(&format!("k{s}")))
        .collect()
}

/// The object tree `r` holds for its checkpoint `seq` (the test took that checkpoint).
fn held_tree(r: &mut Replica, seq: Seq) -> &mut plumb_objects::ObjectTree {
    r.transfer
        .held
        .get_mut(&seq)
        .and_then(|h| h.tree.as_mut())
        .expect("the test's replica holds this checkpoint's tree")
}

/// A catch-up period passes without an answer from the peer asked.
fn silent_peer_period(b: &mut Replica) -> Vec<Action> {
    plumb_core::run(b, NOW, Event::Timer(CATCH_UP))
}

/// Move exec-to-exec messages between `a` (Exec 0) and `b` (Exec 1) until none is left.
fn pump(net: &Net, a: &mut Replica, b: &mut Replica, from_b: Vec<Action>) -> usize {
    pump_seen(net, a, b, from_b).0
}

/// `pump`, returning the rounds and everything `b` did meanwhile.
fn pump_seen(
    net: &Net,
    a: &mut Replica,
    b: &mut Replica,
    mut from_b: Vec<Action>,
) -> (usize, Vec<Action>) {
    let mut rounds = 0;
    let mut seen = Vec::new();
    loop {
        let to_a: Vec<Message> = net.sent_to(&from_b, Principal::Exec(ExecId(0)));
        if to_a.is_empty() {
            return (rounds, seen);
        }
        rounds += 1;
        assert!(rounds < 100, "transfer does not converge");
        let mut next = Vec::new();
        for m in to_a {
            let served = net.deliver(a, Principal::Exec(ExecId(1)), &m);
            for reply in net.sent_to(&served, Principal::Exec(ExecId(1))) {
                next.extend(net.deliver(b, Principal::Exec(ExecId(0)), &reply));
            }
        }
        seen.extend(next.iter().cloned());
        from_b = next;
    }
}

#[test]
fn object_checkpoint_commits_to_the_root_and_persists_only_what_changed() {
    let net = Net::new(2);
    let (a, out) = object_leader(&net, 4);
    let cp = ExecCheckpoint::decode(&a.transfer.held[&Seq(4)].bytes).unwrap();
    let tree = a.transfer.held[&Seq(4)].tree.clone().unwrap();
    assert_eq!(
        cp.objects,
        Some(ObjectsRoot {
            bits: 4,
            root: tree.root()
        })
    );
    assert!(cp.app.is_empty(), "all state is in objects");
    // Checkpoint 4's delta holds the buckets batches 3 and 4 wrote, nothing else.
    let puts = puts_of(&out);
    let delta4: Vec<&(String, Vec<u8>)> = puts
        .iter()
        .filter(|(k, _)| k.starts_with(&format!("{DELTA_PREFIX}{:020}/", 4)))
        .collect();
    assert_eq!(delta4.len(), 1);
    let objs = crate::objects::decode_delta(&delta4[0].1).unwrap();
    let ids: BTreeSet<u64> = objs.iter().map(|o| o.id).collect();
    assert_eq!(ids, buckets_of_puts(Seq(3), 2));
    // The base stays at the oldest checkpoint kept (4 - 2 * interval = 0: empty), so
    // checkpoint 2's delta is still on disk.
    let base_keys = |puts: &[(String, Vec<u8>)]| -> BTreeSet<String> {
        puts.iter()
            .filter(|(k, _)| k.starts_with(OBJECT_PREFIX))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let delete_delta = |seq: Seq| {
        Action::Store(StoreOp::DeletePrefix {
            prefix: format!("{DELTA_PREFIX}{seq:020}/"),
        })
    };
    assert!(base_keys(&puts).is_empty());
    assert!(!out.contains(&delete_delta(Seq(2))));
    // At checkpoint 6 the oldest kept is 2: its delta is folded into the base, then deleted;
    // checkpoint 4's stays.
    let (_, out6) = object_leader(&net, 6);
    assert_eq!(
        base_keys(&puts_of(&out6)).len(),
        buckets_of_puts(Seq(1), 2).len()
    );
    assert!(out6.contains(&delete_delta(Seq(2))));
    assert!(!out6.contains(&delete_delta(Seq(4))));
    // The checkpoint record follows its delta, and a sync follows the record.
    let at = out
        .iter()
        .position(
            |x| matches!(x, Action::Store(StoreOp::Put { key, .. }) if *key == checkpoint_key(Seq(4))),
        )
        .unwrap();
    assert_eq!(out.get(at + 1), Some(&Action::Store(StoreOp::Sync)));
    // Object replicas agree on tokens like whole-checkpoint ones do.
    let (_, out2) = object_leader(&net, 4);
    assert_eq!(checkpoint_taken(&out), checkpoint_taken(&out2));
}

#[test]
fn object_transfer_fetches_only_the_objects_that_differ_and_verifies_them() {
    let net = Net::new(2);
    let (mut a, out) = object_leader(&net, 12);
    let (seq, token) = *checkpoint_taken(&out).last().unwrap();
    assert_eq!(seq, Seq(12));
    // b executed up to 10 and missed 11 and 12.
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 10));
    let out = load_cp(&net, &mut b, Seq(12), token, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(12) };
    assert_eq!(net.receivers(&out, |m| *m == fetch).len(), 2);
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    let out = net.deliver(&mut b, Principal::Exec(ExecId(0)), &cp[0]);
    // b holds checkpoint 10: it asks one peer (the next after it) for the state update.
    let asks = net.sent(&out);
    assert_eq!(
        asks,
        vec![(
            Principal::Exec(ExecId(2)),
            Message::FetchStateUpdate {
                from: Seq(10),
                to: Seq(12)
            }
        )]
    );
    // It stays silent for a catch-up period: the next peer is asked, by tree walk.
    let out = silent_peer_period(&mut b);
    assert_eq!(b.counters().get("object-transfer-peer-changed"), 1);
    assert_eq!(b.counters().get("state-update-not-received"), 1);
    let to_peers: Vec<(Principal, Message)> = net
        .sent(&out)
        .into_iter()
        .filter(|(p, _)| matches!(p, Principal::Exec(_)))
        .collect();
    assert!(matches!(
        to_peers[..],
        [(Principal::Exec(ExecId(0)), Message::FetchObjectNodes { .. })]
    ));
    // A faulty peer's children that do not hash to the root are dropped.
    let forged = Message::ObjectNodes {
        seq: Seq(12),
        nodes: vec![plumb_wire::ObjectChildren {
            node: plumb_wire::ObjectNode { depth: 0, index: 0 },
            left: Digest::of(b"l"),
            right: Digest::of(b"r"),
        }],
    };
    net.deliver(&mut b, Principal::Exec(ExecId(2)), &forged);
    assert_eq!(b.counters().drops(DropReason::ObjectNodesBadDigest), 1);
    // The real peer completes the transfer.
    pump(&net, &mut a, &mut b, out);
    assert_eq!(b.next_seq(), Seq(13));
    assert_eq!(b.app().state_digest(), a.app().state_digest());
    let differing = buckets_of_puts(Seq(11), 2).len() as u64;
    assert_eq!(b.counters().get("object-transfer-objects"), differing);
    // b serves checkpoint 12 now, and its next checkpoint agrees with a's.
    let more = puts(Seq(13), 2);
    let out_a = net.learn_all(&mut a, Seq(13), &more);
    let out_b = net.learn_all(&mut b, Seq(13), &more);
    assert_eq!(checkpoint_taken(&out_a), checkpoint_taken(&out_b));
}

#[test]
fn a_forged_object_is_rejected() {
    let net = Net::new(2);
    let (mut a, out) = object_leader(&net, 2);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    load_cp(&net, &mut b, Seq(2), token, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(2) };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    net.deliver(
        &mut b,
        Principal::Exec(ExecId(0)),
        &net.sent_to(&served, Principal::Exec(ExecId(1)))[0],
    );
    let mut out = silent_peer_period(&mut b);
    // Walk the tree down with a's answers until objects are asked for.
    for _ in 0..50 {
        let asks = net.sent_to(&out, Principal::Exec(ExecId(0)));
        if let Some(Message::FetchObjects { ids, .. }) = asks
            .iter()
            .find(|m| matches!(m, Message::FetchObjects { .. }))
        {
            let lie = Message::Objects {
                seq: Seq(2),
                objects: vec![plumb_wire::ObjectPayload {
                    id: ids[0],
                    bytes: Some(b"forged".to_vec()),
                    proof: vec![],
                }],
            };
            net.deliver(&mut b, Principal::Exec(ExecId(2)), &lie);
            assert_eq!(b.counters().drops(DropReason::ObjectBadDigest), 1);
            assert_eq!(b.next_seq(), Seq(1));
            return;
        }
        let mut next = Vec::new();
        for m in asks {
            let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &m);
            for reply in net.sent_to(&served, Principal::Exec(ExecId(1))) {
                next.extend(net.deliver(&mut b, Principal::Exec(ExecId(0)), &reply));
            }
        }
        out = next;
    }
    panic!("no object was asked for");
}

#[test]
fn a_peer_proves_a_single_object_against_the_checkpoint_root() {
    let net = Net::new(2);
    let (mut a, _) = object_leader(&net, 2);
    let id = bucket("k1");
    let ask = Message::FetchObjects {
        seq: Seq(2),
        ids: vec![id],
        proofs: true,
    };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &ask);
    let Message::Objects { objects, .. } = &net.sent_to(&served, Principal::Exec(ExecId(1)))[0]
    else {
        panic!("expected OBJECTS")
    };
    let root = a.transfer.held[&Seq(2)].tree.as_ref().unwrap().root();
    let proof = plumb_objects::Proof {
        siblings: objects[0].proof.clone(),
    };
    assert_eq!(
        proof.verify(root, 4, ObjectId(id), objects[0].bytes.as_deref()),
        Ok(())
    );
    assert!(proof
        .verify(root, 4, ObjectId(id), Some(b"something else"))
        .is_err());
    // Oversized and unknown requests are dropped, not served.
    let too_many = Message::FetchObjects {
        seq: Seq(2),
        ids: vec![0; crate::object_transfer::OBJECTS_PER_FETCH + 1],
        proofs: false,
    };
    assert!(net
        .deliver(&mut a, Principal::Exec(ExecId(1)), &too_many)
        .is_empty());
    let unknown = Message::FetchObjectNodes {
        seq: Seq(99),
        nodes: vec![],
    };
    assert!(net
        .deliver(&mut a, Principal::Exec(ExecId(1)), &unknown)
        .is_empty());
    assert_eq!(a.counters().get("fetch-objects-not-held"), 1);
}

/// Objects fetched with proofs are what a replica holding part of the state needs before it
/// executes (docs/objects.md "Partial state"): a busy replica serves them at once, within the
/// per-peer byte budget, where a tree walk waits for its idle time; and it never serves an
/// object it does not hold as empty.
#[test]
fn a_busy_replica_serves_proven_objects_at_once_and_only_those_it_holds() {
    let net = Net::new(2);
    let (mut a, _) = object_leader(&net, 2);
    // Batch 3 is learned but its body is missing: the replica is busy.
    net.next_batch(
        &mut a,
        Seq(3),
        &batch(vec![by_digest(2, 9, "put big value")], 30),
        &[0, 1],
    );
    let walk = Message::FetchObjectNodes {
        seq: Seq(2),
        nodes: vec![plumb_wire::ObjectNode { depth: 0, index: 0 }],
    };
    assert!(net
        .sent_to(
            &net.deliver(&mut a, Principal::Exec(ExecId(1)), &walk),
            Principal::Exec(ExecId(1))
        )
        .is_empty());
    assert_eq!(a.counters().get("state-transfer-deferred"), 1);
    let (held, other) = (bucket("k1"), (0..16).find(|b| *b != bucket("k1")).unwrap());
    let ask = Message::FetchObjects {
        seq: Seq(2),
        ids: vec![held, other],
        proofs: true,
    };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &ask);
    let Message::Objects { objects, .. } = &net.sent_to(&served, Principal::Exec(ExecId(1)))[0]
    else {
        panic!("expected OBJECTS at once")
    };
    assert_eq!(objects.len(), 2);
    assert_eq!(a.counters().get("state-transfer-deferred"), 1);
    // The same checkpoint's tree held as its root alone: nothing is served, not even as empty.
    let tree = held_tree(&mut a, Seq(2));
    tree.prune(plumb_objects::NodePos::ROOT);
    assert_eq!(tree.lookup(ObjectId(held)), plumb_objects::Held::Missing);
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &ask);
    let Message::Objects { objects, .. } = &net.sent_to(&served, Principal::Exec(ExecId(1)))[0]
    else {
        panic!("expected OBJECTS")
    };
    assert!(objects.is_empty(), "{objects:?}");
}

/// What a store holds after `ops` (in order).
fn disk_after(ops: &[StoreOp]) -> BTreeMap<String, Vec<u8>> {
    let mut disk = BTreeMap::new();
    for op in ops {
        match op {
            StoreOp::Put { key, value } => {
                disk.insert(key.clone(), value.clone());
            }
            StoreOp::Delete { key } => {
                disk.remove(key);
            }
            StoreOp::DeletePrefix { prefix } => {
                disk.retain(|k: &String, _| !k.starts_with(prefix.as_str()))
            }
            StoreOp::Sync => {}
        }
    }
    disk
}

fn store_ops(actions: &[Action]) -> Vec<StoreOp> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Store(op) => Some(op.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn es5_recovery_rebuilds_objects_from_base_and_deltas_after_any_crash_point() {
    let net = Net::new(2);
    let (_, out) = object_leader(&net, 10);
    let ops = store_ops(&out);
    let syncs: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| **o == StoreOp::Sync)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(syncs.len(), 5, "checkpoints 2, 4, 6, 8, 10");
    let roots: BTreeMap<Seq, Digest> = (1..=5)
        .map(|i| {
            let (reference, _) = object_leader(&net, 2 * i);
            let tree = reference.transfer.held[&Seq(2 * i)].tree.clone().unwrap();
            (Seq(2 * i), tree.root())
        })
        .collect();
    // Crash after every prefix of the writes: the replica recovers the newest checkpoint
    // whose record made it, with exactly its state, and every older checkpoint it holds has
    // exactly its objects.
    for cut in syncs[0] + 1..=ops.len() {
        let disk = disk_after(&ops[..cut]);
        let newest = disk
            .keys()
            .filter_map(|k| crate::checkpoint::parse_checkpoint_key(k))
            .max()
            .unwrap();
        let r = net.replica(
            0,
            Registers::with_objects(),
            Recovered {
                records: disk,
                corrupt: vec![],
            },
        );
        assert_eq!(r.next_seq(), newest + 1, "cut {cut}");
        let (reference, _) = object_leader(&net, newest.0);
        assert_eq!(
            r.app().state_digest(),
            reference.app().state_digest(),
            "cut {cut}"
        );
        assert_eq!(r.counters().get("recovery-objects-unusable"), 0);
        for (seq, held) in &r.transfer.held {
            assert_eq!(
                held.tree.as_ref().map(|t| t.root()),
                roots.get(seq).copied()
            );
        }
    }
    // After a clean stop every checkpoint kept (10 - 2 * interval = 6 and on) is held again
    // and served to a peer that lags behind.
    let mut r = net.replica(
        0,
        Registers::with_objects(),
        Recovered {
            records: disk_after(&ops),
            corrupt: vec![],
        },
    );
    assert_eq!(
        r.transfer.held.keys().copied().collect::<Vec<_>>(),
        [Seq(6), Seq(8), Seq(10)]
    );
    plumb_core::run(&mut r, NOW, Event::Start);
    let served = net.deliver(
        &mut r,
        Principal::Exec(ExecId(1)),
        &Message::FetchExecCp { seq: Seq(6) },
    );
    assert!(net
        .sent_to(&served, Principal::Exec(ExecId(1)))
        .iter()
        .any(|m| matches!(m, Message::ExecCpState { seq: Seq(6), .. })));
    // A damaged object record makes the objects unusable: the replica starts empty and
    // clears them (state transfer brings back what differs).
    let mut disk = disk_after(&ops);
    let key = disk
        .keys()
        .find(|k| k.starts_with(OBJECT_PREFIX))
        .unwrap()
        .clone();
    disk.insert(key, b"bit rot".to_vec());
    let mut r = net.replica(
        0,
        Registers::with_objects(),
        Recovered {
            records: disk,
            corrupt: vec![],
        },
    );
    assert_eq!(r.next_seq(), Seq(1));
    assert_eq!(r.counters().get("recovery-objects-unusable"), 1);
    let out = plumb_core::run(&mut r, NOW, Event::Start);
    assert!(out.contains(&Action::Store(StoreOp::DeletePrefix {
        prefix: OBJECT_PREFIX.to_string()
    })));
}

/// b executed to 10 and holds checkpoint 10; a is at checkpoint 12. Returns a, b and the
/// STATE-UPDATE a serves for 10..12.
fn state_update_setup(net: &Net) -> (Replica, Replica, Message) {
    let (mut a, out) = object_leader(net, 12);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 10));
    load_cp(net, &mut b, Seq(12), token, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(12) };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    net.deliver(
        &mut b,
        Principal::Exec(ExecId(0)),
        &net.sent_to(&served, Principal::Exec(ExecId(1)))[0],
    );
    let ask = Message::FetchStateUpdate {
        from: Seq(10),
        to: Seq(12),
    };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &ask);
    let update = net.sent_to(&served, Principal::Exec(ExecId(1))).remove(0);
    (a, b, update)
}

#[test]
fn a_state_update_is_applied_instead_of_re_executing_once_it_proves_against_the_root() {
    let net = Net::new(2);
    let (a, mut b, update) = state_update_setup(&net);
    let Message::StateUpdate { writes, .. } = &update else {
        panic!("expected STATE-UPDATE, got {update:?}")
    };
    assert_eq!(writes.len(), buckets_of_puts(Seq(11), 2).len());
    let calls_before = b.app().calls.len();
    let out = net.deliver(&mut b, Principal::Exec(ExecId(0)), &update);
    assert_eq!(b.counters().get("state-update-applied"), 1);
    assert_eq!(b.next_seq(), Seq(13));
    assert_eq!(b.app().state_digest(), a.app().state_digest());
    // Batches 11 and 12 were not executed, and nothing else was fetched.
    assert_eq!(b.app().calls.len(), calls_before);
    assert!(net
        .receivers(&out, |m| matches!(
            m,
            Message::FetchObjectNodes { .. } | Message::FetchObjects { .. }
        ))
        .is_empty());
}

#[test]
fn a_forged_or_incomplete_state_update_falls_back_to_the_tree_walk() {
    let net = Net::new(2);
    for forge in [true, false] {
        let (_, mut b, update) = state_update_setup(&net);
        let Message::StateUpdate {
            from,
            to,
            mut writes,
        } = update
        else {
            panic!("expected STATE-UPDATE")
        };
        if forge {
            writes[0].bytes = Some(b"forged".to_vec());
        } else {
            writes.pop();
        }
        let lie = Message::StateUpdate { from, to, writes };
        let out = net.deliver(&mut b, Principal::Exec(ExecId(2)), &lie);
        assert_eq!(b.counters().drops(DropReason::StateUpdateBad), 1);
        assert_eq!(b.next_seq(), Seq(1) + 10, "nothing applied");
        // Exec 2 was the peer asked: it is left, and the next one walks the tree.
        assert!(matches!(
            net.sent(&out)[..],
            [(Principal::Exec(ExecId(0)), Message::FetchObjectNodes { .. })]
        ));
    }
}

/// docs/divergence.md: a replica whose application broke determinism (a write no request
/// made) takes a checkpoint that differs from the agreed one; `r + 1` LOAD-CPs naming the
/// agreed one make it stop executing, fetch only the objects that differ, re-execute from
/// there, and report the batches, the requests and the objects.
#[test]
fn a_replica_whose_state_diverged_rolls_back_to_the_agreed_checkpoint_and_reports_it() {
    let net = Net::new(2);
    let (mut a, out_a) = object_leader(&net, 4);
    let agreed = checkpoint_taken(&out_a);
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 1));
    b.app.map.insert("k1".into(), "drifted".into());
    b.app.dirty.as_mut().unwrap().insert(bucket("k1"));
    let out_b = net.learn_all(&mut b, Seq(2), &puts(Seq(2), 3));
    let ours = checkpoint_taken(&out_b);
    assert_eq!(ours.len(), 2);
    assert!(ours[0] != agreed[0] && ours[1] != agreed[1]);
    assert_eq!(b.next_seq(), Seq(5));

    // One order replica proves nothing (it may be faulty); r + 1 do.
    let (_, t2) = agreed[0];
    load_cp(&net, &mut b, Seq(2), t2, &[0]);
    assert_eq!(b.counters().get("diverged"), 0);
    let out = load_cp(&net, &mut b, Seq(2), t2, &[1]);
    assert_eq!(b.counters().get("diverged"), 1);
    let fetch = Message::FetchExecCp { seq: Seq(2) };
    assert!(net
        .sent_to(&out, Principal::Exec(ExecId(0)))
        .contains(&fetch));
    // Execution waits for the roll-back: a batch learned meanwhile is not executed.
    let out = net.learn_all(&mut b, Seq(5), &puts(Seq(5), 1));
    assert!(delivered(&out).is_empty());

    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    let mut seen = net.deliver(&mut b, Principal::Exec(ExecId(0)), &cp[0]);
    // The first peer asked (exec 2) is silent: the next one, a, is walked.
    let out = silent_peer_period(&mut b);
    seen.extend(out.iter().cloned());
    seen.extend(pump_seen(&net, &mut a, &mut b, out).1);

    let reports: Vec<&DivergenceReport> = seen
        .iter()
        .filter_map(|x| match x {
            Action::Observe(Observation::Diverged(r)) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(reports.len(), 1, "one report");
    let report = reports[0];
    assert_eq!((report.seq, report.first), (Seq(2), Seq(1)));
    assert_eq!((report.ours, report.agreed), (ours[0].1, t2));
    assert_eq!(
        report.requests,
        vec![(Seq(1), 1, ReqNo(1)), (Seq(2), 2, ReqNo(2))]
    );
    assert_eq!(report.objects, Some(vec![bucket("k1")]));
    assert_eq!(report.rolled_back_from, Seq(4));
    // Only what differs from the state it stopped at moves: k1's bucket. Buckets that
    // batches 3 and 4 alone wrote are deleted without a transfer.
    assert_eq!(b.counters().get("object-transfer-objects"), 1);
    // The checkpoint made on the divergent state is gone, from memory and disk.
    assert_eq!(b.held_checkpoints(), vec![Seq(2)]);
    assert!(seen.contains(&Action::Store(StoreOp::Delete {
        key: checkpoint_key(Seq(4))
    })));
    assert_eq!(b.next_seq(), Seq(3));

    // Re-executed from the agreed state, its checkpoint agrees and batch 5 follows.
    let out = net.learn_all(&mut b, Seq(3), &puts(Seq(3), 2));
    assert_eq!(checkpoint_taken(&out), vec![agreed[1]]);
    assert_eq!(b.next_seq(), Seq(6));
    net.learn_all(&mut a, Seq(5), &puts(Seq(5), 1));
    assert_eq!(b.app().state_digest(), a.app().state_digest());
}

/// The proof must name a checkpoint this replica holds with another token: LOAD-CPs for one
/// it holds with the agreed token change nothing.
#[test]
fn a_replica_that_agrees_is_never_rolled_back() {
    let net = Net::new(2);
    let (_, out_a) = object_leader(&net, 4);
    let (_, t2) = checkpoint_taken(&out_a)[0];
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 4));
    let out = load_cp(&net, &mut b, Seq(2), t2, &[0, 1, 2]);
    assert!(net.sent(&out).is_empty());
    assert_eq!(b.counters().get("diverged"), 0);
    assert_eq!(b.next_seq(), Seq(5));
}

fn reports_of(actions: &[Action]) -> Vec<plumb_wire::BatchReport> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Observe(Observation::BatchReported(r)) => Some(*r),
            _ => None,
        })
        .collect()
}

fn token_of(actions: &[Action], seq: Seq) -> Digest {
    actions
        .iter()
        .find_map(|a| match a {
            Action::Observe(Observation::CheckpointTaken { seq: s, token }) if *s == seq => {
                Some(*token)
            }
            _ => None,
        })
        .expect("checkpoint taken")
}

/// Batch reports (docs/objects.md "Batch reports"): every batch is reported with the digest
/// of its replies and of the objects it changed; the write history is chained from the last
/// checkpoint's token, so a replica that loaded that checkpoint reports the batches after it
/// exactly as one that executed everything.
#[test]
fn batch_reports_chain_from_the_last_checkpoint_and_agree_after_a_load() {
    let net = Net::new(2);
    let (_, out) = object_leader(&net, 4);
    let reports = reports_of(&out);
    assert_eq!(
        reports.iter().map(|r| r.seq.0).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    // Batch 1 put k1 into its bucket: that object, with its new bytes, is the write set.
    let mut one = Registers::with_objects();
    one.map.insert("k1".into(), "v1".into());
    let bucket1 = bucket("k1");
    let digest1 = plumb_objects::object_digest(one.bucket_bytes(bucket1).as_deref());
    assert_eq!(
        reports[0].writes,
        Some(plumb_wire::BatchReport::writes_digest([(bucket1, digest1)]))
    );
    assert_eq!(
        reports[0].history,
        Some(plumb_wire::BatchReport::next_history(
            Digest::ZERO,
            Seq(1),
            reports[0].writes.unwrap()
        ))
    );
    // Batch 3 chains from checkpoint 2's token, not from batch 2's history.
    let token2 = token_of(&out, Seq(2));
    assert_eq!(
        reports[2].history,
        Some(plumb_wire::BatchReport::next_history(
            token2,
            Seq(3),
            reports[2].writes.unwrap()
        ))
    );
    // A replica that loads checkpoint 2 and executes 3 and 4 reports them alike.
    let (mut a, _) = object_leader(&net, 2);
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    load_cp(&net, &mut b, Seq(2), token2, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(2) };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    net.deliver(&mut b, Principal::Exec(ExecId(0)), &cp[0]);
    // b asks the peer after it first (absent here), then a, who serves the objects.
    let from_b = silent_peer_period(&mut b);
    pump(&net, &mut a, &mut b, from_b);
    assert_eq!(b.next_seq(), Seq(3));
    let later = net.learn_all(&mut b, Seq(3), &puts(Seq(3), 2));
    assert_eq!(reports_of(&later), reports[2..].to_vec());
}

/// Replica 1 with `load_objects_on_demand`, having loaded checkpoint 12 of a's (replica 0's)
/// state on demand: it holds none of the objects.
fn loaded_on_demand() -> (Net, Replica, Replica) {
    loaded_on_demand_from(ExecId(2))
}

/// Replica 1 loads checkpoint 12 on demand, its copy of the checkpoint coming from `sender`
/// (the bytes are replica 0's).
fn loaded_on_demand_from(sender: ExecId) -> (Net, Replica, Replica) {
    let mut net = Net::new(2);
    Arc::make_mut(&mut net.cfg).load_objects_on_demand = true;
    let (mut a, out) = object_leader(&net, 12);
    let (seq, token) = *checkpoint_taken(&out).last().unwrap();
    assert_eq!(seq, Seq(12));
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    load_cp(&net, &mut b, Seq(12), token, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(12) };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    let out = net.deliver(&mut b, Principal::Exec(sender), &cp[0]);
    // Adopted at once, holding nothing: neither persisted nor vouched for with a token.
    assert_eq!(b.next_seq(), Seq(13));
    assert_eq!(b.counters().get("load-cp-on-demand"), 1);
    assert!(b.app().map.is_empty());
    assert_eq!(b.counters().get("checkpoint-not-persisted-partial"), 1);
    assert!(
        store_ops(&out).is_empty(),
        "nothing of a partial state is written"
    );
    (net, a, b)
}

#[test]
fn a_replica_loading_on_demand_executes_a_batch_once_its_objects_proved_against_the_root() {
    let (net, mut a, mut b) = loaded_on_demand();
    // A batch reading k3: b asks the peer whose copy of the checkpoint verified (2) for k3's
    // bucket, with its proof, and waits.
    let get = vec![batch(vec![inline(1, 13, "get k3")], 1_300)];
    let out = net.learn_all(&mut b, Seq(13), &get);
    assert_eq!(b.next_seq(), Seq(13));
    let want = bucket("k3");
    let asked: Vec<Message> = net.sent_to(&out, Principal::Exec(ExecId(2)));
    assert!(asked.iter().any(|m| matches!(m,
        Message::FetchObjects { seq: Seq(12), ids, proofs: true } if ids.contains(&want))));
    // Replica 2 is faulty: the bucket it sends does not prove, so b asks replica 0 at once.
    let lie = Message::Objects {
        seq: Seq(12),
        objects: vec![plumb_wire::ObjectPayload {
            id: want,
            bytes: Some(b"forged".to_vec()),
            proof: vec![Digest::of(b"x"); 4],
        }],
    };
    let out = net.deliver(&mut b, Principal::Exec(ExecId(2)), &lie);
    assert_eq!(b.counters().drops(DropReason::ObjectBadProof), 1);
    assert_eq!(b.counters().get("on-demand-peer-changed"), 1);
    assert_eq!(b.next_seq(), Seq(13));
    assert!(
        b.app().map.is_empty(),
        "nothing unverified reaches the application"
    );
    // Replica 0 answers: the batch executes on the verified bucket, then the background fill
    // brings in every other object and b holds all of them again.
    let (_, seen) = pump_seen(&net, &mut a, &mut b, out);
    assert_eq!(b.next_seq(), Seq(14));
    let replies: Vec<Message> = net.sent_to(&seen, Principal::Client(1));
    assert!(
        replies
            .iter()
            .any(|m| matches!(m, Message::Reply { result, .. } if result == b"v3")),
        "{replies:?}"
    );
    assert_eq!(b.counters().get("on-demand-fill-complete"), 1);
    net.learn_all(&mut a, Seq(13), &get);
    assert_eq!(b.app().state_digest(), a.app().state_digest());
    // Holding everything again, its next checkpoint is written and its token sent, equal to
    // the replica that never lost anything.
    let more = puts(Seq(14), 2);
    let out_a = net.learn_all(&mut a, Seq(14), &more);
    let out_b = net.learn_all(&mut b, Seq(14), &more);
    assert_eq!(checkpoint_taken(&out_a), checkpoint_taken(&out_b));
    let token_sent = |out: &[Action]| {
        net.receivers(out, |m| matches!(m, Message::CpToken { seq: Seq(14), .. }))
            .len()
    };
    assert_eq!(token_sent(&out_b), token_sent(&out_a));
    assert!(token_sent(&out_b) > 0);
    assert!(!store_ops(&out_b).is_empty());
}

/// The first peer asked for a load's objects is the one whose copy of the checkpoint just
/// verified, not the next in turn, which may be the crashed replica whose silence woke a ZZ
/// sleeper (it waited a catch-up period for an answer that never came).
#[test]
fn objects_are_first_asked_of_the_peer_whose_checkpoint_verified() {
    let (net, _a, mut b) = loaded_on_demand_from(ExecId(0));
    let get = vec![batch(vec![inline(1, 13, "get k3")], 1_300)];
    let out = net.learn_all(&mut b, Seq(13), &get);
    let fetches_to = |e: u16| {
        net.sent_to(&out, Principal::Exec(ExecId(e)))
            .iter()
            .filter(|m| matches!(m, Message::FetchObjects { proofs: true, .. }))
            .count()
    };
    assert!(fetches_to(0) > 0);
    assert_eq!(fetches_to(2), 0, "the next peer in turn is not asked");
}

#[test]
fn a_replica_holding_part_of_the_state_answers_no_read_it_cannot_and_no_token() {
    let (net, _a, mut b) = loaded_on_demand();
    start_and_answer_probe(&net, &mut b, Seq(12));
    let read = Message::ReadOnly {
        life: plumb_wire::Life::default(),
        nc: ReqNo(1),
        op: b"get k3".to_vec(),
    };
    let out = net.deliver(&mut b, Principal::Client(1), &read);
    assert!(net.sent_to(&out, Principal::Client(1)).is_empty());
    assert_eq!(b.counters().get("read-only-objects-missing"), 1);
    // Its checkpoint 14 (two puts, both objects fetched first) is taken but neither written
    // nor vouched for: it still lacks the rest.
    let out = net.learn_all(&mut b, Seq(13), &puts(Seq(13), 2));
    assert!(net
        .receivers(&out, |m| matches!(m, Message::CpToken { .. }))
        .is_empty());
    assert!(store_ops(&out).is_empty());
}

#[test]
fn reports_go_to_every_order_replica_eight_batches_at_a_time_and_the_rest_on_the_tick() {
    let net = Net::new(2);
    let (mut a, out) = object_leader(&net, 11);
    let sent = |out: &[Action]| -> Vec<(Principal, Vec<u64>)> {
        net.sent(out)
            .into_iter()
            .filter_map(|(p, m)| match m {
                Message::ExecReport { reports } => {
                    Some((p, reports.iter().map(|r| r.seq.0).collect()))
                }
                _ => None,
            })
            .collect()
    };
    let first = sent(&out);
    let orders = net.q().order;
    assert_eq!(first.len(), orders, "{first:?}");
    assert!(first
        .iter()
        .all(|(p, seqs)| matches!(p, Principal::Order(_)) && *seqs == (1..=8).collect::<Vec<_>>()));
    // The three left go on the catch-up tick, and nothing more after them.
    let tick = silent_peer_period(&mut a);
    let rest = sent(&tick);
    assert_eq!(rest.len(), orders);
    assert!(rest.iter().all(|(_, seqs)| *seqs == vec![9, 10, 11]));
    // What they carry is what the replica observed of each batch.
    let observed: Vec<u64> = reports_of(&out).iter().map(|r| r.seq.0).collect();
    assert_eq!(observed, (1..=11).collect::<Vec<_>>());
    assert!(sent(&silent_peer_period(&mut a)).is_empty());
}

#[test]
fn loading_on_demand_keeps_what_did_not_change_and_fetches_only_the_rest() {
    let mut net = Net::new(2);
    Arc::make_mut(&mut net.cfg).load_objects_on_demand = true;
    let (mut a, out) = object_leader(&net, 12);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    // b executed up to 10 and missed 11 and 12, as in the tree-walk test.
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 10));
    load_cp(&net, &mut b, Seq(12), token, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(12) };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    let out = net.deliver(&mut b, Principal::Exec(ExecId(0)), &cp[0]);
    assert_eq!(b.next_seq(), Seq(13));
    // Replica 0, whose copy of the checkpoint verified, is asked first and serves the walk.
    pump(&net, &mut a, &mut b, out);
    assert_eq!(b.counters().get("on-demand-fill-complete"), 1);
    assert_eq!(b.app().state_digest(), a.app().state_digest());
    // Only the buckets batches 11 and 12 wrote were fetched; the others were kept.
    let differing = buckets_of_puts(Seq(11), 2).len() as u64;
    assert_eq!(b.counters().get("on-demand-objects"), differing);
    let held = a
        .app()
        .map
        .keys()
        .map(|k| bucket(k))
        .collect::<BTreeSet<_>>()
        .len() as u64;
    assert_eq!(b.counters().get("on-demand-objects-kept"), held - differing);
}

/// A checkpoint of an empty state loads whole at once (no fill, so no subtree is ever found
/// empty): the replica must let go of the keys it held before, or it answers reads from them
/// (sim seed 899 `--partial`, found by a soak sweep).
#[test]
fn loading_an_empty_state_on_demand_lets_go_of_every_key_held_before() {
    let mut net = Net::new(2);
    Arc::make_mut(&mut net.cfg).load_objects_on_demand = true;
    // a's twelve batches only read: its state at checkpoint 12 is empty.
    let gets: Vec<Batch> = (1..=12)
        .map(|s| batch(vec![inline((s % 4) as u32, s, "get k1")], 100 * s))
        .collect();
    let mut a = net.replica(0, Registers::with_objects(), Recovered::default());
    let out = net.learn_all(&mut a, Seq(1), &gets);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    assert!(a.app().map.is_empty());
    // b executed ten writes of another history, then is told to load a's checkpoint.
    let mut b = net.replica(1, Registers::with_objects(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 10));
    assert!(!b.app().map.is_empty());
    load_cp(&net, &mut b, Seq(12), token, &[0, 1]);
    let fetch = Message::FetchExecCp { seq: Seq(12) };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    net.deliver(&mut b, Principal::Exec(ExecId(0)), &cp[0]);
    assert_eq!(b.next_seq(), Seq(13));
    assert_eq!(b.counters().get("load-cp-on-demand"), 1);
    assert!(b.app().map.is_empty(), "kept {:?}", b.app().map);
    assert_eq!(b.app().state_digest(), a.app().state_digest());
}

#[test]
fn a_replica_holding_part_that_stops_executing_while_batches_come_asks_the_order_stage() {
    let (net, _a, mut b) = loaded_on_demand();
    // Batch 13 reads k3, which b lacks and no peer sends (they no longer hold checkpoint 12,
    // say); later batches keep coming, so b is never idle.
    let get = vec![batch(vec![inline(1, 13, "get k3")], 1_300)];
    net.learn_all(&mut b, Seq(13), &get);
    let last_exec = |out: &[Action]| {
        net.receivers(out, |m| *m == Message::LastExec { next: Seq(13) })
            .len()
    };
    let mut asked = Vec::new();
    for period in 0..3u64 {
        net.learn_all(&mut b, Seq(14 + period), &puts(Seq(14 + period), 1));
        let out = silent_peer_period(&mut b);
        assert_eq!(b.next_seq(), Seq(13), "still waiting for k3");
        asked.push(last_exec(&out));
    }
    // The first period saw execution wait from its start only; the next ones ask every order
    // replica for batch 13 on (which answers with LOAD-CP once it has moved past).
    assert_eq!(asked, [0, net.q().order, net.q().order], "{asked:?}");
}

/// A FETCH-OBJECTS whose objects outweigh one reply is answered whole, in several OBJECTS: a
/// reply cut at its size bound left the rest asked and unanswered until the asker's next
/// catch-up period (a woken ZZ replica's batch waited up to 200 ms for it).
#[test]
fn objects_that_outweigh_one_reply_are_served_in_several() {
    let net = Net::new(2);
    let (mut a, _) = object_leader(&net, 2);
    let tree = held_tree(&mut a, Seq(2));
    tree.apply_vecs((0..12).map(|i| (ObjectId(i), Some(vec![i as u8; 1 << 20]))))
        .unwrap();
    let slots = 1u64 << tree.bits();
    let ask = Message::FetchObjects {
        seq: Seq(2),
        ids: (0..slots).collect(),
        proofs: true,
    };
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &ask);
    let replies = net.sent_to(&served, Principal::Exec(ExecId(1)));
    assert!(replies.len() >= 2, "{} replies", replies.len());
    let mut ids = Vec::new();
    for reply in &replies {
        let Message::Objects { objects, .. } = reply else {
            panic!("expected OBJECTS, got {reply:?}")
        };
        let bytes: usize = objects
            .iter()
            .map(|o| o.bytes.as_ref().map_or(0, Vec::len))
            .sum();
        assert!(bytes <= 9 << 20, "a reply of {bytes} bytes");
        ids.extend(objects.iter().map(|o| o.id));
    }
    assert_eq!(
        ids,
        (0..slots).collect::<Vec<_>>(),
        "every object, once, in order"
    );
}

/// While a batch waits for objects, the background fill asks for nothing: its answers would
/// come first and take the peer's serving budget (a woken ZZ replica re-executing after a
/// 100 MiB checkpoint fetched all of it before its batches were done). Once the batch ran,
/// the fill goes on.
#[test]
fn the_background_fill_waits_while_a_batch_waits_for_objects() {
    let (net, mut a, mut b) = loaded_on_demand();
    let get = vec![batch(vec![inline(1, 13, "get k3")], 1_300)];
    let out = net.learn_all(&mut b, Seq(13), &get);
    assert_eq!(b.next_seq(), Seq(13));
    let asked: Vec<Message> = net.sent_to(&out, Principal::Exec(ExecId(2)));
    assert_eq!(asked.len(), 1, "only the batch's objects: {asked:?}");
    assert!(matches!(&asked[0],
        Message::FetchObjects { ids, .. } if *ids == vec![bucket("k3")]));
    // The catch-up period asks again for the batch's object, and for nothing of the fill.
    let tick = silent_peer_period(&mut b);
    let fill_asks = |out: &[Action]| {
        (0..3)
            .flat_map(|e| net.sent_to(out, Principal::Exec(ExecId(e))))
            .filter(|m| match m {
                Message::FetchObjectNodes { .. } => true,
                Message::FetchObjects { ids, .. } => *ids != vec![bucket("k3")],
                _ => false,
            })
            .count()
    };
    assert_eq!(fill_asks(&tick), 0);
    assert!(b.counters().get("on-demand-fill-deferred") > 0);
    // The answer comes: the batch runs, and the fill asks for the rest.
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &asked[0]);
    let mut after = Vec::new();
    for reply in net.sent_to(&served, Principal::Exec(ExecId(1))) {
        after.extend(net.deliver(&mut b, Principal::Exec(ExecId(2)), &reply));
    }
    assert_eq!(b.next_seq(), Seq(14));
    assert!(fill_asks(&after) > 0, "the fill goes on after the batch");
}

/// A catch-up period in which the peer was asked nothing (the fill waits behind a batch that
/// waits for its bodies) does not make the replica leave it: the next in turn may be the
/// crashed replica whose silence woke a ZZ sleeper.
#[test]
fn a_peer_asked_nothing_is_not_left() {
    let (net, _a, mut b) = loaded_on_demand();
    // Batch 13's body is missing: it waits for it, and the fill waits behind it.
    net.next_batch(
        &mut b,
        Seq(13),
        &batch(vec![by_digest(2, 13, "put k3 x")], 1_300),
        &[0, 1],
    );
    // The load's fill asked peer 2 and got nothing back: left for the next at the first period.
    silent_peer_period(&mut b);
    let changed = b.counters().get("on-demand-peer-changed");
    assert_eq!(changed, 1);
    // Nothing was asked since: the next periods keep the peer.
    silent_peer_period(&mut b);
    silent_peer_period(&mut b);
    assert_eq!(b.counters().get("on-demand-peer-changed"), changed);
}

/// An object two learned batches use is asked for once.
#[test]
fn an_object_two_batches_use_is_asked_for_once() {
    let (net, _a, mut b) = loaded_on_demand();
    let gets = [
        batch(vec![inline(1, 13, "get k3")], 1_300),
        batch(vec![inline(2, 14, "get k3")], 1_400),
    ];
    let mut out = net.learn_all(&mut b, Seq(14), &gets[1..]);
    out.extend(net.learn_all(&mut b, Seq(13), &gets[..1]));
    let asked: Vec<u64> = net
        .sent_to(&out, Principal::Exec(ExecId(2)))
        .into_iter()
        .flat_map(|m| match m {
            Message::FetchObjects { ids, .. } => ids,
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(asked, vec![bucket("k3")]);
}

/// A background fill whose asks are in flight is left to its answers: batches executed
/// meanwhile do not walk the missing subtrees again (each walk looks at up to 2 560 of them).
#[test]
fn batches_executed_while_the_fill_runs_do_not_walk_it_again() {
    let (net, mut a, mut b) = loaded_on_demand();
    let get = |seq: u64| batch(vec![inline(1, seq, "get k3")], seq * 100);
    let asked = net.sent_to(
        &net.learn_all(&mut b, Seq(13), &[get(13)]),
        Principal::Exec(ExecId(2)),
    );
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &asked[0]);
    for reply in net.sent_to(&served, Principal::Exec(ExecId(1))) {
        net.deliver(&mut b, Principal::Exec(ExecId(2)), &reply);
    }
    assert_eq!(b.next_seq(), Seq(14));
    assert!(b.holds_part(), "the fill is still under way");
    let walked = b.counters().get("on-demand-fill-walked");
    assert!(walked > 0, "the fill went on after the batch");
    let later: Vec<_> = (14..19).map(get).collect();
    net.learn_all(&mut b, Seq(14), &later);
    assert_eq!(b.next_seq(), Seq(19));
    assert_eq!(b.counters().get("on-demand-fill-walked"), walked);
}
