//! Certified partition roots: a root is certified only if `r + 1` replicas report it, so a
//! certified root is a correct replica's; and with up to `u` replicas faulty (up to `r` of
//! them lying, the others silent), forcing makes a checkpoint certify at least every `u + 1`.

use crate::{Certifier, CertifierError, Maintenance, Partition, Refusal, WINDOW};
use plumb_crypto::Digest;
use plumb_wire::{ExecId, Seq};
use proptest::prelude::*;
use std::collections::BTreeSet;

const INTERVAL: u64 = 8;
const TIMEOUT: u64 = 100;

/// The true root of partition `p` at checkpoint `seq`.
fn truth(seq: Seq, p: Partition) -> Digest {
    Digest::of(format!("{}/{}", seq.0, p.0).as_bytes())
}

fn roots(c: &Certifier, seq: Seq) -> Vec<(Partition, Digest)> {
    c.to_report()
        .into_iter()
        .map(|p| (p, truth(seq, p)))
        .collect()
}

/// u=1 r=1: three replicas, two maintainers a partition, four partitions, quorum 2.
fn group() -> Vec<Certifier> {
    let maintenance = Maintenance::new(3, 2, 2, 8).expect("valid");
    ExecId::all(3)
        .map(|e| Certifier::new(e, maintenance, 2, INTERVAL, TIMEOUT).expect("valid"))
        .collect()
}

#[test]
fn a_checkpoint_certifies_once_every_partition_has_r_plus_1_matching_roots() {
    let mut g = group();
    let seq = Seq(INTERVAL);
    let reports: Vec<_> = g.iter().map(|c| roots(c, seq)).collect();
    for (i, c) in g.iter_mut().enumerate() {
        assert_eq!(
            c.on_checkpoint(seq, 0, &reports[i]),
            None,
            "its own report alone"
        );
        for (j, r) in reports.iter().enumerate().filter(|(j, _)| *j != i) {
            let certified = c.on_report(ExecId(j as u16), seq, r).expect("accepted");
            // Each partition has two maintainers: the third report completes every pair.
            assert_eq!(certified.is_some(), j == 2 || (i == 2 && j == 1));
        }
        assert_eq!(c.certified(), seq);
        for p in (0..4).map(Partition) {
            assert_eq!(c.certified_root(p), Some(truth(seq, p)));
        }
        c.check_invariants();
    }
}

/// Checkpoint `k` among the group: every replica reports what it holds current (replica
/// `liar`, if any, a wrong root for each); every report reaches the correct replicas, and then
/// the deadline passes. Returns what the tick newly forced at each replica.
fn play(g: &mut [Certifier], k: u64, liar: Option<usize>) -> Vec<Vec<Partition>> {
    let seq = Seq(k * INTERVAL);
    let now = k * 1000;
    let reports: Vec<Vec<(Partition, Digest)>> = g
        .iter()
        .enumerate()
        .map(|(i, c)| match liar {
            Some(l) if l == i => c
                .to_report()
                .into_iter()
                .map(|p| (p, Digest::of(b"lie")))
                .collect(),
            _ => roots(c, seq),
        })
        .collect();
    let mut forced = Vec::new();
    for (i, c) in g.iter_mut().enumerate() {
        c.on_checkpoint(seq, now, &reports[i]);
        for (j, r) in reports.iter().enumerate().filter(|(j, _)| *j != i) {
            c.on_report(ExecId(j as u16), seq, r).expect("accepted");
        }
        forced.push(c.on_tick(now + TIMEOUT));
        c.check_invariants();
    }
    forced
}

#[test]
fn a_lying_maintainer_is_outvoted_by_forcing_and_cleared_once_it_mends() {
    // Partitions 0 and 3 are maintained by replicas 0 and 1, 1 by 1 and 2, 2 by 2 and 0.
    let mut g = group();
    let forced = play(&mut g, 1, Some(1));
    assert_eq!(
        g[0].certified(),
        Seq::ZERO,
        "the liar's partitions stay uncertified"
    );
    // Replica 0 cannot tell whether 1 or 2 lied about partition 1: it suspects both, and
    // forces partition 1, the one it does not maintain; replica 2 forces 0 and 3.
    assert_eq!(
        g[0].suspects().collect::<Vec<_>>(),
        vec![ExecId(1), ExecId(2)]
    );
    assert_eq!(forced[0], vec![Partition(1)]);
    assert_eq!(forced[2], vec![Partition(0), Partition(3)]);
    assert!(g[0].to_report().contains(&Partition(1)));

    // The liar goes on lying, and is outvoted: every partition now has two true reports.
    play(&mut g, 2, Some(1));
    let second = Seq(2 * INTERVAL);
    assert_eq!(g[0].certified(), second);
    for p in (0..4).map(Partition) {
        assert_eq!(g[0].certified_root(p), Some(truth(second, p)));
    }
    // Each certified checkpoint is judged when the next one certifies: replica 2, true since
    // it was suspected, is cleared after four; the liar, which lied at 2, after four more.
    for k in 3..=6 {
        play(&mut g, k, None);
    }
    assert_eq!(
        g[0].suspects().collect::<Vec<_>>(),
        vec![ExecId(1)],
        "2 cleared"
    );
    assert_eq!(
        g[0].forced().collect::<Vec<_>>(),
        vec![Partition(1)],
        "the liar's, still"
    );
    play(&mut g, 7, None);
    assert_eq!(
        g[0].suspects().count(),
        0,
        "the liar cleared after four true reports"
    );
    assert_eq!(
        g[0].to_report(),
        vec![Partition(0), Partition(2), Partition(3)]
    );
    assert_eq!(g[0].certified(), Seq(7 * INTERVAL));
}

#[test]
fn a_replica_that_always_lies_holds_up_one_checkpoint_only() {
    let mut g = group();
    for k in 1..=12 {
        play(&mut g, k, Some(1));
        assert_eq!(
            g[0].certified() == Seq(k * INTERVAL),
            k > 1,
            "checkpoint {k}"
        );
    }
    assert!(g[0].suspects().any(|e| e == ExecId(1)), "still suspected");
}

#[test]
fn a_suspect_is_cleared_after_window_true_reports_in_a_row() {
    let mut g = group();
    for k in 1..=10 {
        // Lies at 1, which holds it up, and at 5, while suspected, which does not.
        play(&mut g, k, [1, 5].contains(&k).then_some(1));
        let suspected = g[0].suspects().any(|e| e == ExecId(1));
        // Checkpoint 5 is judged when 6 certifies: four more (6 to 9), cleared as 10 certifies.
        assert_eq!(suspected, k < 10, "after checkpoint {k}");
        assert_eq!(
            g[0].certified() == Seq(k * INTERVAL),
            k > 1,
            "checkpoint {k}"
        );
    }
}

#[test]
fn a_certifier_that_cannot_work_is_refused_saying_why() {
    let maintenance = Maintenance::new(3, 2, 2, 8).expect("valid");
    let new = |me, quorum, interval| Certifier::new(ExecId(me), maintenance, quorum, interval, 1);
    assert_eq!(
        new(3, 2, 8).err(),
        Some(CertifierError::NoSuchReplica(ExecId(3), 3))
    );
    assert_eq!(
        new(0, 4, 8).err(),
        Some(CertifierError::Quorum {
            quorum: 4,
            replicas: 3
        })
    );
    assert_eq!(
        new(0, 0, 8).err(),
        Some(CertifierError::Quorum {
            quorum: 0,
            replicas: 3
        })
    );
    assert_eq!(new(0, 2, 0).err(), Some(CertifierError::Interval));
    let wide = Maintenance::new(3, 2, 13, 16).expect("valid");
    assert_eq!(
        Certifier::new(ExecId(0), wide, 2, 8, 1).err(),
        Some(CertifierError::PartitionBits(13))
    );
}

#[test]
fn reports_outside_the_window_or_contradicting_earlier_ones_are_refused() {
    let mut c = group().remove(0);
    let r = |p: u32| vec![(Partition(p), Digest::of(b"x"))];
    assert_eq!(
        c.on_report(ExecId(1), Seq(INTERVAL + 1), &r(0)),
        Err(Refusal::NotACheckpoint)
    );
    assert_eq!(
        c.on_report(ExecId(1), Seq(0), &r(0)),
        Err(Refusal::NotACheckpoint)
    );
    assert_eq!(
        c.on_report(ExecId(3), Seq(INTERVAL), &r(0)),
        Err(Refusal::NoSuchReplica)
    );
    let far = Seq((WINDOW + 1) * INTERVAL);
    assert_eq!(
        c.on_report(ExecId(1), far, &r(0)),
        Err(Refusal::TooFarAhead)
    );
    assert_eq!(
        c.on_report(ExecId(1), Seq(WINDOW * INTERVAL), &r(0)),
        Ok(None)
    );
    assert_eq!(
        c.on_report(ExecId(1), Seq(INTERVAL), &r(9)),
        Err(Refusal::NoSuchPartition)
    );
    assert_eq!(c.on_report(ExecId(1), Seq(INTERVAL), &r(0)), Ok(None));
    let other = vec![(Partition(0), Digest::of(b"y"))];
    assert_eq!(
        c.on_report(ExecId(1), Seq(INTERVAL), &other),
        Err(Refusal::Equivocation)
    );
    // The equivocation did not count: replica 2's "y" alone certifies nothing.
    c.on_report(ExecId(2), Seq(INTERVAL), &other)
        .expect("accepted");
    c.check_invariants();
    assert_eq!(c.certified(), Seq::ZERO);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Safety: every certified root is the truth. Liveness: with every correct replica's
    /// report delivered and the deadlines passed, each faulty replica holds up at most one
    /// checkpoint in `WINDOW + 2` (suspected at it, it is judged on the next `WINDOW`
    /// checkpoints, each when the one after certifies), and so no more than `u` in a row,
    /// whatever the faulty replicas do.
    #[test]
    fn certified_roots_are_true_and_checkpoints_keep_certifying(
        u in 1usize..=2,
        r in 0usize..=2,
        extra in 0usize..=2,
        partition_bits in 3u8..=4,
        faulty_seed in any::<u64>(),
        behaviour in prop::collection::vec((1u64..=7, 0u64..7, any::<u8>()), 2),
    ) {
        prop_assume!(r <= u);
        let m = u.max(r) + 1;
        let n = u + m + extra;
        let quorum = r + 1;
        let maintenance = Maintenance::new(n, m, partition_bits, 16).expect("valid");
        // Up to u faulty replicas, up to r of them lying (the others silent).
        let faulty: Vec<usize> = (0..n).filter(|i| (faulty_seed >> i) & 1 == 1).take(u).collect();
        let liars: Vec<usize> = faulty.iter().copied().take(r).collect();
        let mut group: Vec<Option<Certifier>> = (0..n)
            .map(|i| {
                (!faulty.contains(&i)).then(|| {
                    Certifier::new(ExecId(i as u16), maintenance, quorum, INTERVAL, TIMEOUT)
                        .expect("valid")
                })
            })
            .collect();
        let rounds = 12u64;
        let mut certified_at: Vec<BTreeSet<Seq>> = vec![BTreeSet::new(); n];
        for k in 1..=rounds {
            let seq = Seq(k * INTERVAL);
            let now = k * 1000;
            // Each correct replica reaches the checkpoint and reports what it holds current.
            let mut reports: Vec<(usize, Vec<(Partition, Digest)>)> = Vec::new();
            for (i, c) in group.iter_mut().enumerate() {
                if let Some(c) = c {
                    let mine = roots(c, seq);
                    c.on_checkpoint(seq, now, &mine);
                    reports.push((i, mine));
                }
            }
            // Each liar lies every `period` checkpoints (the sooner it may, the more it holds
            // up) about the partitions its pattern says, and tells the truth otherwise.
            for (j, &liar) in liars.iter().enumerate() {
                let (period, offset, pattern) = behaviour[j];
                let b = if (k + offset) % period == 0 { pattern | 1 } else { 0 };
                let lie = (0..maintenance.partitions())
                    .map(|p| {
                        let wrong = (b >> (p % 8)) & 1 == 1;
                        let root = if wrong { Digest::of(&[b, p as u8]) } else { truth(seq, Partition(p)) };
                        (Partition(p), root)
                    })
                    .collect();
                reports.push((liar, lie));
            }
            for (i, c) in group.iter_mut().enumerate().filter_map(|(i, c)| Some((i, c.as_mut()?))) {
                for (from, roots) in &reports {
                    let _ = c.on_report(ExecId(*from as u16), seq, roots);
                }
                c.on_tick(now + TIMEOUT);
                c.check_invariants();
                if c.certified() > Seq::ZERO {
                    let at = c.certified();
                    for p in (0..maintenance.partitions()).map(Partition) {
                        prop_assert_eq!(c.certified_root(p), Some(truth(at, p)), "{} at {:?}", p, at);
                    }
                }
                certified_at[i].insert(c.certified());
                let faults = faulty.len() as u64;
                if k > faults {
                    prop_assert!(
                        c.certified().0 >= (k - faults) * INTERVAL,
                        "checkpoint {} with {} faulty: certified at most {:?}", k, faults, c.certified()
                    );
                }
            }
        }
        let most = faulty.len() as u64 * rounds.div_ceil(WINDOW + 2);
        for (i, seqs) in certified_at.iter().enumerate().filter(|(i, _)| !faulty.contains(i)) {
            let held_up = rounds - seqs.iter().filter(|s| **s > Seq::ZERO).count() as u64;
            prop_assert!(held_up <= most, "replica {}: {} checkpoints held up, at most {}", i, held_up, most);
        }
    }
}
