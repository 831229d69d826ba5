//! COORD-session-live: a session whose client was heard of in time never expires. With agreed
//! time within `X` of real time (TIME-bound, docs/protocol.md "Agreed time"), a session last
//! heard of in batch `H` expires in batch `B` only if `agreed(B) - agreed(H) > timeout`, and
//! `agreed(B) <= delivered(B) + X`, `agreed(H) >= invoked(op in H) - X`; so it expires only
//! if its first delivery comes more than `timeout - 2X` of real time after the client invoked
//! the operation that last renewed it. This checks that promise end to end, through the
//! application's own use of agreed time (its clock, its deadline arithmetic), for every lease
//! the reference replay saw expire.

use super::Checker;
use crate::faults::secs;
use crate::workload::Workload;
use plumb_wire::Micros;
use std::collections::HashMap;

pub fn check_leases(checker: &mut Checker, workload: &Workload, bound: Micros) {
    if checker.expired.is_empty() {
        return;
    }
    // The earliest invocation of each (client, number): the weaker bound, never a false alarm
    // (a number may carry another operation after a lost record).
    let mut invoked: HashMap<(u32, u64), Micros> = HashMap::new();
    for (c, load) in workload.clients.iter().enumerate() {
        if !load.correct {
            continue;
        }
        for op in &load.history {
            for nc in &op.ncs {
                let e = invoked.entry((c as u32, *nc)).or_insert(op.invoke);
                *e = (*e).min(op.invoke);
            }
        }
    }
    // Agreed time increases strictly, so a lease's `heard` names the batch that renewed it.
    let by_time: HashMap<Micros, u64> = checker
        .agreed
        .iter()
        .map(|(seq, b)| (b.agreed_time, *seq))
        .collect();
    let mut found = Vec::new();
    for (seq, lease) in &checker.expired {
        let (Some(expired), Some(renewed)) = (
            checker.agreed.get(seq),
            by_time.get(&lease.heard).and_then(|h| checker.agreed.get(h)),
        ) else {
            continue;
        };
        // The owner's requests in the renewing batch; none (opened or touched by a client
        // that is not correct) leaves nothing to judge.
        let Some(invoke) = renewed
            .requests
            .iter()
            .filter(|(c, _, _)| *c == lease.owner)
            .filter_map(|(c, nc, _)| invoked.get(&(*c, *nc)).copied())
            .min()
        else {
            continue;
        };
        let lived = expired.at.saturating_sub(invoke);
        let promised = lease.timeout.saturating_sub(2 * bound);
        if lived <= promised {
            found.push(format!(
                "session {:#x} of c{} expired in batch {seq}, first delivered at {}, only {} after c{} invoked the operation that last renewed it at {} (timeout {}, agreed time within {} of real time: it must live at least {})",
                lease.id,
                lease.owner,
                secs(expired.at),
                secs(lived),
                lease.owner,
                secs(invoke),
                secs(lease.timeout),
                secs(bound),
                secs(promised),
            ));
        }
    }
    for detail in found {
        checker.violate("COORD-session-live", detail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Lease;
    use crate::check::Agreed;
    use crate::config::WorkloadConfig;
    use crate::rng::SimRng;
    use plumb_crypto::Digest;
    use plumb_wire::Principal;

    fn batch(agreed_time: Micros, at: Micros, requests: Vec<(u32, u64, Digest)>) -> Agreed {
        Agreed {
            digest: Digest::of(b"b"),
            agreed_time,
            requests,
            null: false,
            seed: 0,
            by: Principal::Exec(0),
            at,
        }
    }

    /// c0 renews its 4 s session with an operation invoked at 10 s, ordered in batch 1 (agreed
    /// 10.1 s); the session expires in batch 2. With X = 0.375 s it must live at least
    /// 3.25 s of real time: batch 2 first delivered at 13.2 s is too early, at 13.3 s is not.
    fn run(expired_at: Micros) -> Vec<&'static str> {
        let cfg = WorkloadConfig {
            keys: vec![],
            think_min_us: 1,
            think_max_us: 2,
            read_only_gets: 0.0,
            extra_gets: 0.0,
            stop_at: 0,
        };
        let mut w = Workload::new(cfg, SimRng::new(0, "t"), 1, None);
        w.invoked(0, b"op".to_vec(), false, 10_000_000);
        w.sent_request(0, 1, b"op");
        let mut c = Checker::default();
        let op = Digest::of(b"op");
        c.agreed
            .insert(1, batch(10_100_000, 10_050_000, vec![(0, 1, op)]));
        c.agreed.insert(2, batch(14_200_000, expired_at, vec![]));
        c.expired.push((
            2,
            Lease {
                id: 7,
                owner: 0,
                heard: 10_100_000,
                timeout: 4_000_000,
            },
        ));
        check_leases(&mut c, &w, 375_000);
        c.violations().iter().map(|v| v.property).collect()
    }

    #[test]
    fn a_session_expiring_sooner_than_its_timeout_less_twice_the_bound_is_caught() {
        assert_eq!(run(13_200_000), vec!["COORD-session-live"]);
        assert!(run(13_300_000).is_empty());
    }
}
