//! Who asked a sleeper to wake. A sleeper wakes once `r + 1` distinct order replicas have
//! sent it a WAKE: at least one of them is correct, so at least one correct order replica saw
//! an active execution replica's report differ from the agreed one or come late (docs/zz.md).
//! The WAKEs need not name the same batch: correct order replicas see a fault at different
//! batches, and what the rule guards is only that faulty ones alone cannot wake a sleeper.

use plumb_core::BrokenInvariant;
use plumb_wire::OrderId;
use std::collections::BTreeSet;

#[derive(Debug)]
pub struct WakeVotes {
    /// Distinct order replicas needed: `r + 1`.
    quorum: usize,
    /// Order replicas in the cluster: a WAKE names one of them.
    order: usize,
    asked: BTreeSet<OrderId>,
}

/// What one WAKE did.
#[derive(Debug, PartialEq, Eq)]
pub enum WakeVote {
    /// Not an order replica of this cluster.
    Unknown,
    /// This replica had asked already.
    Repeated,
    /// Counted; fewer than the quorum have asked.
    Counted,
    /// The quorum has asked: wake.
    Wake,
}

impl WakeVotes {
    pub fn new(quorum: usize, order: usize) -> WakeVotes {
        let quorum = if plumb_core::sabotaged!(WakeOnOne) {
            1
        } else {
            quorum
        };
        WakeVotes {
            quorum,
            order,
            asked: BTreeSet::new(),
        }
    }

    pub fn ask(&mut self, o: OrderId) -> WakeVote {
        if o.index() >= self.order {
            return WakeVote::Unknown;
        }
        if !self.asked.insert(o) {
            return WakeVote::Repeated;
        }
        if self.asked.len() >= self.quorum {
            WakeVote::Wake
        } else {
            WakeVote::Counted
        }
    }

    /// The order replicas that asked, in id order.
    pub fn asked(&self) -> Vec<OrderId> {
        self.asked.iter().copied().collect()
    }

    /// While asleep: fewer than the quorum have asked, every one an order replica of this
    /// cluster.
    pub fn check_asleep(&self) -> Result<(), BrokenInvariant> {
        BrokenInvariant::check(
            self.asked.len() < self.quorum,
            "INV-asleep-below-wake-quorum",
            || format!("asleep although {:?} asked", self.asked),
        )?;
        let stranger = self.asked.iter().find(|o| o.index() >= self.order);
        BrokenInvariant::check(stranger.is_none(), "INV-wake-votes-known", || {
            format!("a WAKE counted from {stranger:?}, not an order replica")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_plus_one_distinct_order_replicas_wake_a_sleeper() {
        let mut v = WakeVotes::new(2, 4);
        assert_eq!(v.ask(OrderId(3)), WakeVote::Counted);
        assert_eq!(v.ask(OrderId(3)), WakeVote::Repeated);
        assert_eq!(v.ask(OrderId(9)), WakeVote::Unknown);
        v.check_asleep().unwrap();
        assert_eq!(v.ask(OrderId(0)), WakeVote::Wake);
        assert_eq!(v.asked(), vec![OrderId(0), OrderId(3)]);
        assert!(v.check_asleep().is_err());
    }
}
