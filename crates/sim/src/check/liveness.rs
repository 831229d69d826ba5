//! LL1 / LL2 once faults stop: at the end of the liveness window every correct client has no
//! outstanding request and completed at least one after the network healed. An outstanding
//! request that a correct execution replica delivered breaks LL2 (the response did not reach the
//! client); one that was never delivered breaks LL1.

use super::Checker;
use crate::faults::secs;
use crate::workload::Workload;
use plumb_wire::{Micros, ReqNo, Seq};

/// A client at the end of the run.
pub struct ClientEnd {
    pub id: u32,
    /// What the client stage itself says.
    pub outstanding: bool,
}

pub fn check_liveness(
    checker: &mut Checker,
    workload: &Workload,
    clients: &[ClientEnd],
    heal_at: Micros,
    end_at: Micros,
) {
    for end in clients {
        let Some(load) = workload.clients.get(end.id as usize) else {
            continue;
        };
        if !load.correct {
            continue;
        }
        let c = end.id;
        if let Some(i) = load.pending {
            let invoked = load.history.get(i).map_or(0, |r| r.invoke);
            let nc = load.history.get(i).and_then(|r| r.ncs.last().copied());
            match nc.and_then(|nc| delivered_in(checker, c, nc).map(|s| (nc, s))) {
                Some((nc, seq)) => {
                    let detail = format!(
                        "c{c} request {nc} (invoked at {}) was delivered in batch {seq} but no reply was accepted by {}",
                        secs(invoked),
                        secs(end_at)
                    );
                    checker.violate("LL2", detail);
                }
                _ => {
                    let detail = format!(
                        "c{c}'s operation invoked at {} (request number {}) not completed by {}",
                        secs(invoked),
                        nc.map_or("none".to_string(), |n| n.to_string()),
                        secs(end_at)
                    );
                    checker.violate("LL1", detail);
                }
            }
        } else if workload.completed_since(c, heal_at) == 0 {
            checker.violate(
                "LL1",
                format!(
                    "c{c} completed no operation after faults stopped at {}",
                    secs(heal_at)
                ),
            );
        }
        if end.outstanding != (load.pending.is_some() || load.replaying.is_some()) {
            let detail = format!(
                "c{c} says outstanding={}, the workload has {:?} pending",
                end.outstanding, load.pending
            );
            checker.violate("CS2", detail);
        }
    }
}

fn delivered_in(checker: &Checker, c: u32, nc: ReqNo) -> Option<Seq> {
    checker
        .agreed
        .iter()
        .find(|(_, b)| b.requests.iter().any(|r| r.client == c && r.nc == nc))
        .map(|(s, _)| *s)
}

/// The latency bound (LB): once faults other than Byzantine principals have stopped and the
/// cluster has had `settle` to recover, every operation a correct client invokes completes
/// within `bound`, while Byzantine replicas and clients keep acting (seed 004 ch. 3: an uncivil
/// execution must still make timely progress). Returns the slowest such operation's latency.
pub fn check_latency_bound(
    checker: &mut Checker,
    workload: &Workload,
    from: Micros,
    end_at: Micros,
    bound: Micros,
) -> Micros {
    let mut slowest = 0;
    for (c, load) in workload.clients.iter().enumerate() {
        if !load.correct {
            continue;
        }
        // An operation its client abandoned in a crash is never answered, by design.
        for op in load
            .history
            .iter()
            .filter(|op| op.invoke >= from && !op.abandoned)
        {
            let done = op.response.as_ref().map_or(end_at, |r| r.at);
            let latency = done.saturating_sub(op.invoke);
            slowest = slowest.max(latency);
            if latency > bound {
                let detail = format!(
                    "c{c}'s operation invoked at {} took {} (bound {})",
                    secs(op.invoke),
                    secs(latency),
                    secs(bound)
                );
                checker.violate("LB", detail);
            }
        }
    }
    slowest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::test_support;
    use plumb_crypto::Digest;
    use plumb_kv::KvOp;

    fn workload() -> Workload {
        test_support::workload(3, None)
    }

    fn get() -> Vec<u8> {
        KvOp::Get {
            key: b"k0".to_vec(),
        }
        .encode()
    }

    #[test]
    fn ll1_ll2_and_no_progress_after_heal() {
        let mut w = workload();
        // c0: request 1 delivered but never answered (LL2).
        w.invoked(0, get(), false, 10);
        w.sent_request(0, ReqNo(1), &get());
        // c1: request 1 never delivered (LL1).
        w.invoked(1, get(), false, 10);
        w.sent_request(1, ReqNo(1), &get());
        // c2: idle, but its last completion was before the heal (LL1).
        w.invoked(2, get(), false, 10);
        w.completed(2, ReqNo(1), b"r".to_vec(), 20).unwrap();
        let mut c = Checker::default();
        let op = Digest::of(&get());
        let requests = vec![plumb_core::DeliveredRequest::new(
            0,
            plumb_wire::Life(0),
            ReqNo(1),
            op,
        )];
        let batch = test_support::agreed(op, 1, requests, 0);
        c.agreed.insert(Seq(1), batch);
        let ends: Vec<ClientEnd> = (0..3)
            .map(|id| ClientEnd {
                id,
                outstanding: id < 2,
            })
            .collect();
        check_liveness(&mut c, &w, &ends, 100, 1_000);
        let got: Vec<(&str, bool)> = c
            .violations()
            .iter()
            .map(|v| (v.property, v.detail.starts_with("c0")))
            .collect();
        assert_eq!(got, vec![("LL2", true), ("LL1", false), ("LL1", false)]);
    }

    /// Operations invoked before `from` are not judged; after it, one answered too late and one
    /// never answered both break LB, and the slowest judged latency is returned.
    #[test]
    fn lb_judges_operations_invoked_once_settled() {
        let mut w = workload();
        w.invoked(0, get(), false, 10);
        w.completed(0, ReqNo(1), b"r".to_vec(), 5_000).unwrap();
        w.invoked(0, get(), false, 200);
        w.completed(0, ReqNo(2), b"r".to_vec(), 300).unwrap();
        w.invoked(1, get(), false, 300);
        w.completed(1, ReqNo(1), b"r".to_vec(), 2_000).unwrap();
        w.invoked(2, get(), false, 400);
        let mut c = Checker::default();
        let slowest = check_latency_bound(&mut c, &w, 100, 3_000, 1_000);
        assert_eq!(slowest, 2_600);
        let got: Vec<(&str, bool)> = c
            .violations()
            .iter()
            .map(|v| (v.property, v.detail.starts_with("c1")))
            .collect();
        assert_eq!(got, vec![("LB", true), ("LB", false)]);
    }
}
