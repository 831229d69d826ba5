//! ZZ mode (docs/zz.md "A reply a client cannot get"): replies relayed for a client that
//! retransmits a request already executed. With `max(u, r) + 1` actives, one faulty active
//! that answers a client wrongly (or not at all) while its reports are right leaves the client
//! one matching reply short, and nothing the order stage sees names a fault. So when an
//! order replica relays a client's retransmission (RETRANSMIT), each active also sends every
//! order replica a copy of its cached reply (every one: the actives act on one RETRANSMIT per
//! client per period, and the client needs `r + 1` order replicas to relay). An order replica
//! takes copies of requests it has ordered. If every active's copy of the same request is alike, the order
//! replica passes the reply on (RELAYED-REPLY; the client takes a result `r + 1` order
//! replicas relayed alike: one of them correct, which relays only what all actives, one of
//! them correct, said). If two copies of the same request differ, one active is faulty:
//! a disagreement, which wakes a sleeper. A client can make order replicas ask for copies,
//! rate limited as RETRANSMIT is, but never wake a sleeper: only the actives' own words can.
//!
//! Bounded: one entry per client with an ordered request, kept a few periods, one copy per
//! active.

use plumb_core::{BrokenInvariant, Micros};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, ExecId, Position, ReqNo};
use std::collections::BTreeMap;

/// One active's copy of a cached reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Copy {
    pub nc: ReqNo,
    pub req: Digest,
    pub result: Vec<u8>,
    pub at: Position,
}

/// What one copy did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Copied {
    /// Not from an active.
    NotActive,
    /// Kept; not every active's copy of this request is in.
    Waiting,
    /// Every active sent this copy: relay it.
    Alike(Copy),
    /// Two actives sent different copies of one request.
    Differ,
}

#[derive(Debug)]
pub(crate) struct Relays {
    active: usize,
    /// Clients with copies: when the first came, and the copies since.
    copies: BTreeMap<ClientId, (Micros, BTreeMap<ExecId, Copy>)>,
}

impl Relays {
    pub(crate) fn new(active: usize) -> Relays {
        Relays {
            active,
            copies: BTreeMap::new(),
        }
    }

    /// Active `e`'s copy, at `now`, of its cached reply to `c` (a request the caller ordered);
    /// entries older than `keep` are forgotten first.
    pub(crate) fn copy(
        &mut self,
        (now, keep): (Micros, Micros),
        e: ExecId,
        c: ClientId,
        copy: Copy,
    ) -> Copied {
        if e.index() >= self.active {
            return Copied::NotActive;
        }
        self.copies
            .retain(|_, (t, _)| now.saturating_sub(*t) < keep);
        let (_, copies) = self.copies.entry(c).or_insert((now, BTreeMap::new()));
        copies.insert(e, copy.clone());
        // Copies of another request (an active that lags, or is ahead) neither agree nor
        // disagree with this one.
        let same: Vec<&Copy> = copies
            .values()
            .filter(|x| x.nc == copy.nc && x.req == copy.req)
            .collect();
        let (differ, all) = (same.iter().any(|x| **x != copy), same.len() == self.active);
        if differ || all {
            self.copies.remove(&c);
        }
        match (differ, all) {
            (true, _) => Copied::Differ,
            (false, true) => Copied::Alike(copy),
            (false, false) => Copied::Waiting,
        }
    }

    /// Copies come from actives only, fewer than all of them per client.
    pub(crate) fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        let bad = self.copies.iter().find(|(_, (_, copies))| {
            copies.len() > self.active || copies.keys().any(|e| e.index() >= self.active)
        });
        BrokenInvariant::check(bad.is_none(), "INV-zz-relay-copies", || {
            format!(
                "client {:?} holds copies from non-actives or too many",
                bad.map(|b| b.0)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::Seq;

    fn copy(nc: u64, result: &[u8]) -> Copy {
        Copy {
            nc: ReqNo(nc),
            req: Digest::of(b"req"),
            result: result.to_vec(),
            at: Position {
                seq: Seq(3),
                index: 0,
            },
        }
    }

    #[test]
    fn alike_copies_are_relayed_and_different_ones_disagree() {
        let mut r = Relays::new(2);
        let at = |t| (t, 1_000);
        assert_eq!(
            r.copy(at(0), ExecId(2), 7, copy(1, b"a")),
            Copied::NotActive
        );
        assert_eq!(r.copy(at(0), ExecId(0), 7, copy(1, b"a")), Copied::Waiting);
        assert_eq!(
            r.copy(at(10), ExecId(1), 7, copy(1, b"a")),
            Copied::Alike(copy(1, b"a"))
        );
        assert_eq!(r.copy(at(20), ExecId(0), 7, copy(2, b"a")), Copied::Waiting);
        // A lagging active's older reply is no disagreement.
        assert_eq!(r.copy(at(30), ExecId(1), 7, copy(1, b"b")), Copied::Waiting);
        assert_eq!(r.copy(at(40), ExecId(1), 7, copy(2, b"b")), Copied::Differ);
        r.check_invariants().unwrap();
        // An entry older than `keep` is gone before the next copy counts.
        assert_eq!(
            r.copy(at(100), ExecId(0), 8, copy(1, b"a")),
            Copied::Waiting
        );
        assert_eq!(
            r.copy(at(5_000), ExecId(1), 8, copy(1, b"a")),
            Copied::Waiting
        );
    }
}
