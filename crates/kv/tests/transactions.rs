//! Pipelines and transactions: several commands in one request, run in order with nothing
//! between them; a transaction only if its watched keys are unchanged.

use plumb_app::{Application, Command, NonDeterminism};
use plumb_kv::*;
use plumb_wire::{Life, ReqNo, Seq};

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn set(key: &str, v: &str) -> KvOp {
    KvOp::Set {
        key: b(key),
        value: b(v),
        expire: None,
    }
}

fn get(key: &str) -> KvOp {
    KvOp::Get { key: b(key) }
}

fn incr(key: &str) -> KvOp {
    KvOp::Increment {
        key: b(key),
        delta: 1,
    }
}

fn encoded(ops: &[KvOp]) -> Vec<Vec<u8>> {
    ops.iter().map(KvOp::encode).collect()
}

/// Run `op` as one request of one batch at `time`.
fn run(store: &mut KvStore, op: &KvOp, time: u64) -> KvResult {
    let bytes = op.encode();
    let cmd = Command::new(1, Life(0), ReqNo(1), &bytes);
    let out = store.execute(Seq(1), &[cmd], NonDeterminism { time, seed: 7 });
    KvResult::decode(&out.replies[0]).unwrap()
}

fn results(result: KvResult) -> Vec<KvResult> {
    match result {
        KvResult::Each(rs) => rs.iter().map(|r| KvResult::decode(r).unwrap()).collect(),
        other => panic!("not Each: {other:?}"),
    }
}

fn watch(store: &mut KvStore, keys: &[&str]) -> Vec<Watched> {
    let op = KvOp::Fingerprints {
        keys: keys.iter().map(|k| b(k)).collect(),
    };
    let KvResult::Items(prints) = run(store, &op, 1) else {
        panic!("fingerprints")
    };
    keys.iter()
        .zip(prints)
        .map(|(k, p)| Watched {
            key: b(k),
            fingerprint: p.try_into().unwrap(),
        })
        .collect()
}

#[test]
fn a_pipeline_runs_its_commands_in_order_and_errors_stay_local() {
    let mut store = KvStore::new();
    let ops = vec![set("a", "x"), incr("a"), set("n", "1"), incr("n"), get("n")];
    let op = KvOp::Pipeline { ops: encoded(&ops) };
    assert!(op.is_mutating());
    assert_eq!(
        results(run(&mut store, &op, 1)),
        vec![
            KvResult::Ok,
            KvResult::error(ERR_NOT_INTEGER),
            KvResult::Ok,
            KvResult::Int(2),
            KvResult::Value(Some(b("2"))),
        ]
    );
}

#[test]
fn a_pipeline_stops_once_its_replies_pass_the_budget_and_runs_at_least_one() {
    let mut store = KvStore::new();
    let big = "v".repeat(3 << 20);
    run(&mut store, &set("big", &big), 1);
    let op = KvOp::Pipeline {
        ops: encoded(&[get("big"), get("big"), incr("c"), get("big")]),
    };
    // Two 3 MiB replies pass the 4 MiB budget: the rest is left for the next request, and
    // did not run (the counter is untouched).
    let ran = results(run(&mut store, &op, 1));
    assert_eq!(ran.len(), 2);
    assert_eq!(run(&mut store, &get("c"), 1), KvResult::Value(None));
    let lone = KvOp::Pipeline {
        ops: encoded(&[get("big")]),
    };
    assert_eq!(results(run(&mut store, &lone, 1)).len(), 1);
}

#[test]
fn nested_pipelines_and_transactions_are_refused_one_level_down() {
    let mut store = KvStore::new();
    let inner = KvOp::Pipeline {
        ops: encoded(&[set("a", "1")]),
    };
    let op = KvOp::Transaction {
        watched: Vec::new(),
        ops: vec![
            inner.encode(),
            b"\x01garbage".to_vec(),
            set("b", "1").encode(),
        ],
    };
    assert_eq!(
        results(run(&mut store, &op, 1)),
        vec![
            KvResult::error(ERR_NESTED),
            KvResult::error(ERR_MALFORMED),
            KvResult::Ok
        ]
    );
    assert_eq!(run(&mut store, &get("a"), 1), KvResult::Value(None));
}

#[test]
fn deep_nesting_in_hostile_bytes_cannot_exhaust_the_stack() {
    // A transaction whose one op is a transaction whose one op is ... a thousand levels, built
    // as bytes: decoding reads one level, the next is opaque bytes.
    let mut op = set("k", "v").encode();
    for _ in 0..1000 {
        op = KvOp::Transaction {
            watched: Vec::new(),
            ops: vec![op],
        }
        .encode();
    }
    let mut store = KvStore::new();
    let decoded = KvOp::decode(&op).unwrap();
    assert_eq!(
        results(run(&mut store, &decoded, 1)),
        vec![KvResult::error(ERR_NESTED)]
    );
}

#[test]
fn a_transaction_runs_whole_unless_a_watched_key_changed() {
    let mut store = KvStore::new();
    run(&mut store, &set("balance", "10"), 1);
    let watched = watch(&mut store, &["balance", "absent"]);
    let tx = KvOp::Transaction {
        watched: watched.clone(),
        ops: encoded(&[incr("balance"), incr("log")]),
    };
    assert_eq!(
        results(run(&mut store, &tx, 2)),
        vec![KvResult::Int(11), KvResult::Int(1)]
    );
    // The same watch is now stale (balance changed): nothing runs.
    assert_eq!(run(&mut store, &tx, 3), KvResult::Aborted);
    assert_eq!(
        run(&mut store, &get("log"), 3),
        KvResult::Value(Some(b("1")))
    );
    // Creating a watched absent key also aborts.
    let watched = watch(&mut store, &["absent"]);
    run(&mut store, &set("absent", "now"), 4);
    let tx = KvOp::Transaction {
        watched,
        ops: encoded(&[incr("log")]),
    };
    assert_eq!(run(&mut store, &tx, 5), KvResult::Aborted);
}

#[test]
fn an_expiry_counts_as_a_change_and_an_equal_rewrite_does_not() {
    let mut store = KvStore::new();
    run(
        &mut store,
        &KvOp::Set {
            key: b("lease"),
            value: b("me"),
            expire: Some(1_000),
        },
        1,
    );
    let watched = watch(&mut store, &["lease"]);
    let tx = KvOp::Transaction {
        watched,
        ops: encoded(&[incr("n")]),
    };
    assert_eq!(run(&mut store, &tx, 5_000), KvResult::Aborted);
    // The documented difference from Redis: a key rewritten with exactly what it held does
    // not abort (the transaction runs on the state its watcher saw).
    run(&mut store, &set("k", "same"), 1);
    let watched = watch(&mut store, &["k"]);
    run(&mut store, &set("k", "same"), 2);
    let tx = KvOp::Transaction {
        watched,
        ops: encoded(&[incr("n")]),
    };
    assert_eq!(results(run(&mut store, &tx, 3)), vec![KvResult::Int(1)]);
}

#[test]
fn the_read_only_path_runs_read_pipelines_and_refuses_writes_inside() {
    let mut store = KvStore::new();
    run(&mut store, &set("a", "1"), 1);
    let reads = KvOp::Pipeline {
        ops: encoded(&[get("a"), get("b")]),
    };
    assert!(!reads.is_mutating());
    let out = store.execute_read_only(1, &reads.encode());
    assert_eq!(
        results(KvResult::decode(&out).unwrap()),
        vec![KvResult::Value(Some(b("1"))), KvResult::Value(None)]
    );
    let mixed = KvOp::Pipeline {
        ops: encoded(&[get("a"), incr("a")]),
    };
    assert!(mixed.is_mutating());
    let out = store.execute_read_only(1, &mixed.encode());
    assert_eq!(
        results(KvResult::decode(&out).unwrap()),
        vec![
            KvResult::Value(Some(b("1"))),
            KvResult::error(ERR_NOT_READ_ONLY)
        ]
    );
    // An undecodable op inside counts as mutating: it never takes the read-only path.
    let odd = KvOp::Pipeline {
        ops: vec![b"junk".to_vec()],
    };
    assert!(odd.is_mutating());
}

#[test]
fn replicas_agree_on_a_transaction_with_random_choices() {
    // SPOP inside a transaction draws from the request's seed and the op's position: two
    // stores running the same batch pick the same members.
    let mut a = KvStore::new();
    let members: Vec<Vec<u8>> = (0..50).map(|i| format!("m{i}").into_bytes()).collect();
    run(
        &mut a,
        &KvOp::SAdd {
            key: b("s"),
            members,
        },
        1,
    );
    let mut b2 = a.clone();
    let tx = KvOp::Transaction {
        watched: Vec::new(),
        ops: encoded(&[
            KvOp::SPop {
                key: b("s"),
                count: Some(3),
            },
            KvOp::SPop {
                key: b("s"),
                count: Some(3),
            },
        ]),
    };
    let ra = run(&mut a, &tx, 2);
    assert_eq!(ra, run(&mut b2, &tx, 2));
    assert_eq!(a, b2);
    let picked = results(ra);
    assert_ne!(picked[0], picked[1]);
}

proptest::proptest! {
    /// Hostile bytes inside a pipeline or transaction are each op's error, never a panic,
    /// and two replicas running the same request end equal.
    #[test]
    fn ops_inside_are_total_on_arbitrary_bytes(
        ops in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24), 0..8),
        transaction in proptest::prelude::any::<bool>(),
    ) {
        let op = if transaction {
            KvOp::Transaction { watched: Vec::new(), ops }
        } else {
            KvOp::Pipeline { ops }
        };
        let mut a = KvStore::new();
        let mut b2 = KvStore::new();
        let ra = run(&mut a, &op, 1);
        proptest::prop_assert_eq!(&ra, &run(&mut b2, &op, 1));
        proptest::prop_assert!(matches!(ra, KvResult::Each(_)));
        proptest::prop_assert_eq!(a, b2);
        let read = KvResult::decode(&KvStore::new().execute_read_only(1, &op.encode()));
        proptest::prop_assert!(read.is_ok());
    }
}
