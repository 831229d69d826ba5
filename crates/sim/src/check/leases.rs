//! COORD-session-live and KV-ttl: a lease renewed in time never ends early. A coordination
//! session lives while its client is heard of; a key set to expire lives `ttl` after its SET.
//! With agreed time within `X` of real time (TIME-bound, docs/protocol.md "Agreed time"), a
//! lease renewed in batch `H` ends by agreed time in batch `B` only if
//! `agreed(B) - agreed(H) >= timeout`, and `agreed(B) <= delivered(B) + X`,
//! `agreed(H) >= invoked(op in H) - X`; so it ends only once its first delivery comes at least
//! `timeout - 2X` of real time after the client invoked the request that renewed it.
//!
//! The reference replay follows every lease ([`LeaseWatch`]): the batch that last renewed it,
//! read from the requests the agreed history holds (the application says only what a request
//! does to leases, not when it last renewed one: that bookkeeping is what is judged), and the
//! batch it vanished in with no request of that batch naming it. This checks the promise end
//! to end, through the application's own use of agreed time.

use super::Checker;
use crate::app::{Lease, LeaseOp};
use crate::faults::secs;
use crate::workload::Workload;
use plumb_wire::{ClientId, Micros, ReqNo, Seq};
use std::collections::{BTreeSet, HashMap};

/// The batch that last renewed a lease and the requests in it that did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renewal {
    pub seq: Seq,
    pub by: Vec<(ClientId, ReqNo)>,
}

/// A lease that ended by agreed time in batch `seq`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired {
    pub seq: Seq,
    pub lease: Lease,
    pub renewal: Renewal,
}

/// The reference replay's record of when each live lease was last renewed.
#[derive(Default)]
pub struct LeaseWatch {
    renewed: HashMap<i64, Renewal>,
}

impl LeaseWatch {
    /// One replayed batch: the leases before and after it, its requests (copies skipped) and
    /// what each does to leases ([`crate::app::SimApp::lease_ops`]). Returns the leases it
    /// ended by agreed time.
    pub fn batch(
        &mut self,
        seq: Seq,
        before: &[Lease],
        after: &[Lease],
        requests: &[(ClientId, ReqNo, &[u8])],
        lease_ops: impl Fn(&[u8]) -> Vec<LeaseOp>,
    ) -> Vec<Expired> {
        let mut named = BTreeSet::new();
        let mut renewals: HashMap<i64, Vec<(ClientId, ReqNo)>> = HashMap::new();
        let mut openers = Vec::new();
        for (c, nc, op) in requests {
            for lease_op in lease_ops(op) {
                match lease_op {
                    LeaseOp::Opens => openers.push((*c, *nc)),
                    LeaseOp::Renews(id) => {
                        named.insert(id);
                        renewals.entry(id).or_default().push((*c, *nc));
                    }
                    LeaseOp::Ends(id) => {
                        named.insert(id);
                    }
                }
            }
        }
        let still: BTreeSet<i64> = after.iter().map(|l| l.id).collect();
        let mut expired = Vec::new();
        for lease in before.iter().filter(|l| !still.contains(&l.id)) {
            let renewal = self.renewed.remove(&lease.id);
            // Gone although no request named it: ended by agreed time. (Gone where one did
            // is not judged: the request may have ended it, or it may have expired first.)
            if let (false, Some(renewal)) = (named.contains(&lease.id), renewal) {
                expired.push(Expired {
                    seq,
                    lease: *lease,
                    renewal,
                });
            }
        }
        let was: BTreeSet<i64> = before.iter().map(|l| l.id).collect();
        for lease in after {
            if let Some(by) = renewals.remove(&lease.id) {
                self.renewed.insert(lease.id, Renewal { seq, by });
            } else if !was.contains(&lease.id) {
                let by = openers.clone();
                self.renewed.insert(lease.id, Renewal { seq, by });
            }
        }
        debug_assert!(
            after.iter().all(|l| self.renewed.contains_key(&l.id)),
            "every live lease has a renewal on record"
        );
        expired
    }
}

pub fn check_leases(checker: &mut Checker, workload: &Workload, bound: Micros) {
    if checker.expired.is_empty() {
        return;
    }
    // The earliest invocation of each (client, number): the weaker bound, never a false alarm
    // (a number may carry another operation after a lost record).
    let mut invoked: HashMap<(ClientId, ReqNo), Micros> = HashMap::new();
    for (c, load) in workload.clients.iter().enumerate() {
        if !load.correct {
            continue;
        }
        for op in &load.history {
            for nc in &op.ncs {
                let e = invoked.entry((c as ClientId, *nc)).or_insert(op.invoke);
                *e = (*e).min(op.invoke);
            }
        }
    }
    let mut found = Vec::new();
    for Expired {
        seq,
        lease,
        renewal,
    } in &checker.expired
    {
        let Some(expired) = checker.agreed.get(seq) else {
            continue;
        };
        // The earliest invocation among the requests that renewed it: none by a correct
        // client leaves nothing to judge.
        let Some((invoke, client)) = renewal
            .by
            .iter()
            .filter_map(|(c, nc)| Some((*invoked.get(&(*c, *nc))?, *c)))
            .min()
        else {
            continue;
        };
        let lived = expired.at.saturating_sub(invoke);
        let promised = lease.timeout.saturating_sub(2 * bound);
        if lived < promised {
            found.push((
                lease.kind.property(),
                format!(
                    "{} {:#x} renewed by c{client} in batch {} expired in batch {seq}, first delivered at {}, only {} after c{client} invoked that request at {} (timeout {}, agreed time within {} of real time: it must live at least {})",
                    lease.kind.noun(),
                    lease.id,
                    renewal.seq,
                    secs(expired.at),
                    secs(lived),
                    secs(invoke),
                    secs(lease.timeout),
                    secs(bound),
                    secs(promised),
                ),
            ));
        }
    }
    for (property, detail) in found {
        checker.violate(property, detail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::LeaseKind;
    use crate::check::test_support::{agreed, workload};
    use crate::check::Agreed;
    use plumb_crypto::Digest;

    fn batch(agreed_time: Micros, at: Micros) -> Agreed {
        agreed(Digest::of(b"b"), agreed_time, Vec::new(), at)
    }

    /// A 4 s lease renewed in batch 1 by c0's request 1, invoked at 10 s, expires in batch 2.
    /// With X = 0.375 s it must live at least 3.25 s of real time: batch 2 first delivered at
    /// 13.2 s is too early, at 13.25 s is not.
    fn run(kind: LeaseKind, by: (ClientId, ReqNo), expired_at: Micros) -> Vec<&'static str> {
        let mut w = workload(1, None);
        w.invoked(0, b"op".to_vec(), false, 10_000_000);
        w.sent_request(0, ReqNo(1), b"op");
        let mut c = Checker::default();
        c.agreed.insert(Seq(1), batch(10_100_000, 10_050_000));
        c.agreed.insert(Seq(2), batch(14_200_000, expired_at));
        c.expired.push(Expired {
            seq: Seq(2),
            lease: Lease {
                id: 7,
                kind,
                timeout: 4_000_000,
            },
            renewal: Renewal {
                seq: Seq(1),
                by: vec![by],
            },
        });
        check_leases(&mut c, &w, 375_000);
        c.violations().iter().map(|v| v.property).collect()
    }

    #[test]
    fn a_lease_ending_sooner_than_its_timeout_less_twice_the_bound_is_caught() {
        assert_eq!(
            run(LeaseKind::Session, (0, ReqNo(1)), 13_200_000),
            vec!["COORD-session-live"]
        );
        assert!(run(LeaseKind::Session, (0, ReqNo(1)), 13_250_000).is_empty());
        assert_eq!(
            run(LeaseKind::Key, (0, ReqNo(1)), 13_200_000),
            vec!["KV-ttl"]
        );
        // Renewed only by a request no correct client invoked: nothing to judge.
        assert!(run(LeaseKind::Key, (0, ReqNo(2)), 13_200_000).is_empty());
    }

    fn lease(id: i64) -> Lease {
        Lease {
            id,
            kind: LeaseKind::Session,
            timeout: 4_000_000,
        }
    }

    /// Requests: `o` opens, `rN` renews N, `eN` ends N.
    fn ops(op: &[u8]) -> Vec<LeaseOp> {
        let id = || i64::from(op[1] - b'0');
        match op[0] {
            b'o' => vec![LeaseOp::Opens],
            b'r' => vec![LeaseOp::Renews(id())],
            b'e' => vec![LeaseOp::Ends(id())],
            _ => vec![],
        }
    }

    #[test]
    fn the_watch_dates_each_lease_from_the_history_not_from_the_application() {
        let mut watch = LeaseWatch::default();
        let (l1, l2) = (lease(1), lease(2));
        // Batch 1: c0 opens lease 1.
        assert!(watch
            .batch(Seq(1), &[], &[l1], &[(0, ReqNo(1), b"o")], ops)
            .is_empty());
        // Batch 2: c1 opens lease 2, c0 renews lease 1.
        assert!(watch
            .batch(
                Seq(2),
                &[l1],
                &[l1, l2],
                &[(1, ReqNo(1), b"o"), (0, ReqNo(2), b"r1")],
                ops
            )
            .is_empty());
        // Batch 3: lease 2 is ended by its request; lease 1 vanishes unnamed: expired, and
        // dated from c0's renewal in batch 2, whatever the application thought.
        let expired = watch.batch(
            Seq(3),
            &[l1, l2],
            &[],
            &[(1, ReqNo(2), b"e2"), (2, ReqNo(1), b"x")],
            ops,
        );
        assert_eq!(
            expired,
            vec![Expired {
                seq: Seq(3),
                lease: l1,
                renewal: Renewal {
                    seq: Seq(2),
                    by: vec![(0, ReqNo(2))],
                },
            }]
        );
        // Gone from the record too: a lease 1 that comes back later is a new one.
        assert!(watch
            .batch(Seq(4), &[], &[l1], &[(3, ReqNo(1), b"r1")], ops)
            .is_empty());
        let again = watch.batch(Seq(5), &[l1], &[], &[], ops);
        assert_eq!(
            again[0].renewal,
            Renewal {
                seq: Seq(4),
                by: vec![(3, ReqNo(1))]
            }
        );
    }
}
