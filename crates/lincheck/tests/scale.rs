//! Histories of a few hundred operations over several keys and clients, shaped like the
//! simulator's: closed-loop clients, overlapping operations, a few left unanswered.

use plumb_lincheck::kv::{BytesKv, KvOp, KvRet};
use plumb_lincheck::{Checker, History, Model, OpId, Outcome, Partition};
use std::time::Instant;

type Op = KvOp<Vec<u8>, Vec<u8>>;

/// splitmix64: a small deterministic generator, so the test needs no dependency.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_op(g: &mut Gen, keys: u64) -> Op {
    let key = format!("key{}", g.below(keys)).into_bytes();
    let value = [&b"0"[..], b"1", b"2", b"x"][g.below(4) as usize].to_vec();
    match g.below(10) {
        0..=3 => Op::Get { key },
        4..=5 => Op::Set { key, value },
        6 => Op::Delete { key },
        7 => Op::CompareAndSet {
            key,
            expected: (g.below(2) == 0).then_some(b"1".to_vec()),
            new: value,
        },
        _ => Op::Increment {
            key,
            delta: g.below(3) as i64 - 1,
        },
    }
}

/// `clients` closed-loop clients issue `ops` operations in total; each takes effect at a
/// random point of its interval, so the history is linearizable. The last operation of every
/// third client gets no response (half of those take effect).
fn executed_history(seed: u64, ops: usize, clients: u64, keys: u64) -> History<BytesKv> {
    let mut g = Gen(seed);
    let model = BytesKv::new();
    // (invoke, response, effect point, client, op, answered, takes effect)
    let mut planned = Vec::new();
    let per_client = ops / clients as usize;
    for c in 0..clients {
        let mut t = g.below(20);
        for n in 0..per_client {
            let len = 1 + g.below(60);
            let point = t + g.below(len + 1);
            let answered = !(n + 1 == per_client && c % 3 == 0);
            let takes_effect = answered || g.below(2) == 0;
            planned.push((
                t,
                t + len,
                point,
                c,
                random_op(&mut g, keys),
                answered,
                takes_effect,
            ));
            t += len + g.below(15);
        }
    }
    let mut by_point: Vec<usize> = (0..planned.len()).filter(|&i| planned[i].6).collect();
    by_point.sort_by_key(|&i| (planned[i].2, i));
    let mut rets: Vec<Option<KvRet<Vec<u8>>>> = vec![None; planned.len()];
    let mut state = model.init();
    for i in by_point {
        let (next, ret) = model.step(&state, &planned[i].4);
        state = next;
        rets[i] = Some(ret);
    }
    let mut order: Vec<usize> = (0..planned.len()).collect();
    order.sort_by_key(|&i| (planned[i].0, i));
    let mut h = History::new();
    for i in order {
        let (invoke, response, _, client, op, answered, _) = planned[i].clone();
        let id = h.invoke(client, op, invoke);
        if let (true, Some(ret)) = (answered, rets[i].clone()) {
            h.complete(id, ret, response).unwrap();
        }
    }
    h
}

/// Rebuild `h` with operation `target`'s return replaced.
fn with_return(h: &History<BytesKv>, target: OpId, ret: KvRet<Vec<u8>>) -> History<BytesKv> {
    let mut out = History::new();
    for (i, o) in h.ops().iter().enumerate() {
        let id = out.invoke(o.client, o.op.clone(), o.invoke);
        if let Some(r) = &o.response {
            let ret = if i == target.0 {
                ret.clone()
            } else {
                r.ret.clone()
            };
            out.complete(id, ret, r.time).unwrap();
        }
    }
    out
}

/// A budget far below the default: passing within it shows the search stays near-linear.
const TIGHT_BUDGET: u64 = 50_000;

#[test]
fn six_hundred_ops_over_five_keys_check_quickly() {
    for seed in 0..5 {
        let h = executed_history(seed, 600, 10, 5);
        assert_eq!(h.len(), 600);
        let started = Instant::now();
        let report = Checker::new()
            .with_max_steps(TIGHT_BUDGET)
            .run(&BytesKv::new(), &h);
        assert_eq!(
            report.outcome,
            Outcome::Linearizable,
            "seed {seed}: {}",
            report.outcome
        );
        assert_eq!(report.partitions, 5);
        eprintln!(
            "seed {seed}: {} steps, {:?}",
            report.steps,
            started.elapsed()
        );
    }
}

#[test]
fn one_corrupted_read_among_hundreds_is_found_on_its_key() {
    let h = executed_history(7, 400, 8, 4);
    // A completed read in the middle of the history now returns a value nobody wrote.
    let (target, key) = h
        .ops()
        .iter()
        .enumerate()
        .skip(h.len() / 2)
        .find_map(|(i, o)| match (&o.op, &o.response) {
            (KvOp::Get { key }, Some(_)) => Some((OpId(i), key.clone())),
            _ => None,
        })
        .unwrap();
    let bad = with_return(&h, target, KvRet::Value(Some(b"never".to_vec())));
    let outcome = Checker::new()
        .with_max_steps(TIGHT_BUDGET)
        .check(&BytesKv::new(), &bad);
    let v = outcome.violation().unwrap_or_else(|| panic!("{outcome}"));
    assert_eq!(v.partition, Partition::Key(key));
    assert!(
        v.explanation.contains(&format!("{target} ")),
        "{}",
        v.explanation
    );
}

#[test]
fn one_duplicated_increment_result_among_hundreds_is_found() {
    let h = executed_history(11, 400, 8, 4);
    // Find two completed increments of +1 on one key with consecutive results, and make the
    // later one repeat the earlier one's result (a lost update).
    let incs: Vec<(OpId, &Vec<u8>, i64)> = h
        .ops()
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match (&o.op, &o.response) {
            (KvOp::Increment { key, delta: 1 }, Some(r)) => match r.ret {
                KvRet::Int(n) => Some((OpId(i), key, n)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let (later, earlier_result) = incs
        .iter()
        .find_map(|&(id, key, n)| {
            incs.iter()
                .find(|&&(other, k, m)| other != id && k == key && m + 1 == n)
                .map(|&(_, _, m)| (id, m))
        })
        .unwrap();
    let bad = with_return(&h, later, KvRet::Int(earlier_result));
    let outcome = Checker::new()
        .with_max_steps(TIGHT_BUDGET)
        .check(&BytesKv::new(), &bad);
    assert!(outcome.is_violation(), "{outcome}");
}

#[test]
fn hot_key_with_twelve_concurrent_clients_checks_within_budget() {
    // All 300 operations on one key, about ten in flight at any time.
    let h = executed_history(3, 300, 12, 1);
    let report = Checker::new()
        .with_max_steps(TIGHT_BUDGET)
        .run(&BytesKv::new(), &h);
    assert_eq!(report.outcome, Outcome::Linearizable, "{}", report.outcome);
    assert_eq!(report.partitions, 1);
}

#[test]
fn delay_once_of_the_same_histories_checks_within_budget() {
    // Without the "reads first" shortcut (unsound for delay-once) and with every read having
    // two outcomes, the memo must still keep the search near-linear. The hot key costs about
    // five times the steps of linearizability (40k against 9k), hence twice the budget.
    for (seed, ops, clients, keys) in [(0, 600, 10, 5), (1, 600, 10, 5), (3, 300, 12, 1)] {
        let h = executed_history(seed, ops, clients, keys);
        let started = Instant::now();
        let report = Checker::new()
            .with_max_steps(2 * TIGHT_BUDGET)
            .run_delay_once(&BytesKv::new(), &h);
        assert_eq!(
            report.outcome,
            Outcome::Linearizable,
            "seed {seed}: {}",
            report.outcome
        );
        let plain = Checker::new().run(&BytesKv::new(), &h).steps;
        eprintln!(
            "delay-once seed {seed} keys {keys}: {} steps ({plain} for linearizability), {:?}",
            report.steps,
            started.elapsed()
        );
    }
}
