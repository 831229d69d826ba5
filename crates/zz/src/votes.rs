//! Who asked a sleeper to wake, or a woken replica to sleep again. Either happens once `r + 1`
//! distinct order replicas have asked: at least one of them is correct. A correct order replica
//! asks a sleeper to wake only when an active execution replica's report, token or reply
//! differed or came late, and a woken replica to sleep only when every active and woken
//! replica sent the agreed token of one checkpoint (docs/zz.md). The requests need not name
//! the same batch: correct order replicas see a fault, or its end, at different batches, and
//! what the rule guards is only that faulty ones alone cannot wake or stop a replica.

use plumb_core::BrokenInvariant;
use plumb_wire::OrderId;
use std::collections::BTreeSet;

#[derive(Debug)]
pub struct Votes {
    /// Distinct order replicas needed: `r + 1`.
    quorum: usize,
    /// Order replicas in the cluster: a request names one of them.
    order: usize,
    asked: BTreeSet<OrderId>,
}

/// What one request did.
#[derive(Debug, PartialEq, Eq)]
pub enum Vote {
    /// Not an order replica of this cluster.
    Unknown,
    /// This replica had asked already.
    Repeated,
    /// Counted; fewer than the quorum have asked.
    Counted,
    /// The quorum has asked.
    Reached,
}

impl Votes {
    /// Votes to wake a sleeper.
    pub fn to_wake(quorum: usize, order: usize) -> Votes {
        let one = plumb_core::sabotaged!(WakeOnOne);
        Votes::new(if one { 1 } else { quorum }, order)
    }

    /// Votes to put a woken replica back to sleep.
    pub fn to_sleep(quorum: usize, order: usize) -> Votes {
        let one = plumb_core::sabotaged!(SleepOnOne);
        Votes::new(if one { 1 } else { quorum }, order)
    }

    fn new(quorum: usize, order: usize) -> Votes {
        Votes {
            quorum,
            order,
            asked: BTreeSet::new(),
        }
    }

    pub fn ask(&mut self, o: OrderId) -> Vote {
        if o.index() >= self.order {
            return Vote::Unknown;
        }
        if !self.asked.insert(o) {
            return Vote::Repeated;
        }
        if self.asked.len() >= self.quorum {
            Vote::Reached
        } else {
            Vote::Counted
        }
    }

    /// The order replicas that asked, in id order.
    pub fn asked(&self) -> Vec<OrderId> {
        self.asked.iter().copied().collect()
    }

    /// While the votes are open: fewer than the quorum have asked, every one an order replica
    /// of this cluster. `what` names the state they would end (`asleep`, `awake`).
    pub fn check_open(&self, what: &'static str) -> Result<(), BrokenInvariant> {
        BrokenInvariant::check(
            self.asked.len() < self.quorum,
            "INV-zz-below-quorum",
            || format!("{what} although {:?} asked", self.asked),
        )?;
        let stranger = self.asked.iter().find(|o| o.index() >= self.order);
        BrokenInvariant::check(stranger.is_none(), "INV-zz-votes-known", || {
            format!("a request counted from {stranger:?}, not an order replica")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_plus_one_distinct_order_replicas_reach_the_quorum() {
        let mut v = Votes::to_wake(2, 4);
        assert_eq!(v.ask(OrderId(3)), Vote::Counted);
        assert_eq!(v.ask(OrderId(3)), Vote::Repeated);
        assert_eq!(v.ask(OrderId(9)), Vote::Unknown);
        v.check_open("asleep").unwrap();
        assert_eq!(v.ask(OrderId(0)), Vote::Reached);
        assert_eq!(v.asked(), vec![OrderId(0), OrderId(3)]);
        assert!(v.check_open("asleep").is_err());
        let mut v = Votes::to_sleep(2, 4);
        assert_eq!(v.ask(OrderId(1)), Vote::Counted);
        v.check_open("awake").unwrap();
    }
}
