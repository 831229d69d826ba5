//! What execution has done so far, beside the application's own state: the next batch to
//! execute, the agreed time reached, the last reply per client and the next push id per
//! client. A checkpoint captures exactly this with the application's state
//! (`checkpoint.rs`); executing a batch (`execute.rs`), loading a checkpoint (`transfer.rs`)
//! and recovery (`recovery.rs`) change it.

use crate::checkpoint::CachedReply;
use plumb_core::{BrokenInvariant, Micros};
use plumb_wire::{ClientId, Seq};
use std::collections::BTreeMap;

#[derive(Debug)]
pub(crate) struct Executed {
    /// The next batch to execute, from 1.
    pub(crate) next_seq: Seq,
    /// Agreed time of the last executed non-null batch.
    pub(crate) agreed_time: Micros,
    /// Last reply per client.
    pub(crate) replies: BTreeMap<ClientId, CachedReply>,
    /// Next push event id per client.
    pub(crate) next_push: BTreeMap<ClientId, u64>,
}

impl Default for Executed {
    fn default() -> Executed {
        Executed {
            next_seq: Seq(1),
            agreed_time: 0,
            replies: BTreeMap::new(),
            next_push: BTreeMap::new(),
        }
    }
}

impl Executed {
    /// - INV-replies-executed: every cached reply was produced by a batch already executed
    ///   (its position's batch is below `next_seq`), so a retransmitted request is never
    ///   answered from a batch this replica has not run.
    pub(crate) fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        match self.replies.iter().find(|(_, r)| r.at.seq >= self.next_seq) {
            None => Ok(()),
            Some((client, r)) => Err(BrokenInvariant {
                name: "INV-replies-executed",
                detail: format!(
                    "c{client}'s cached reply to {} is from batch {}, but the next batch to execute is {}",
                    r.nc, r.at.seq, self.next_seq
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{Position, ReqNo};

    #[test]
    fn a_reply_from_a_batch_not_executed_is_named() {
        let mut e = Executed::default();
        let mut reply = CachedReply::test(ReqNo(1), b"r");
        reply.at = Position {
            seq: Seq(3),
            index: 0,
        };
        e.replies.insert(7, reply);
        assert_eq!(
            e.check_invariants().unwrap_err().name,
            "INV-replies-executed"
        );
        e.next_seq = Seq(4);
        assert_eq!(e.check_invariants(), Ok(()));
    }
}
