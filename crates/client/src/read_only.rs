//! Read-only requests (seed 004 §5.5, docs/protocol.md "Read-only requests"): sent straight to
//! every execution replica and accepted only if *all* of them return the same bytes. A write is
//! acknowledged once `r + 1` replicas executed it, so any smaller read quorum could consist of
//! replicas that have not; a unanimous answer includes a correct replica that has. On a mismatch
//! or timeout the operation is reissued on the ordered path.

use crate::record::{self, RO_LEASE};
use crate::{Client, Outstanding, READ_ONLY_DEADLINE};
use plumb_core::{Action, Micros, StoreOp};
use plumb_crypto::Digest;
use plumb_wire::{request_id, Message, Principal, ReqNo};
use std::collections::HashMap;

/// The outstanding read-only request.
#[derive(Debug)]
pub(crate) struct ReadOnly {
    pub(crate) ro: ReqNo,
    pub(crate) op: Vec<u8>,
    /// `H(client, ro, H(op))`: only replies naming it answer this read (a read-only number
    /// reused after a lost record must not take the answer to another read).
    pub(crate) req: Digest,
    /// Execution replica -> its result.
    pub(crate) votes: HashMap<u16, Vec<u8>>,
}

impl Client {
    pub(crate) fn start_read_only(&mut self, op: Vec<u8>, out: &mut Vec<Action>) {
        let ro = self.next_ro;
        self.next_ro = ro.saturating_add(1);
        if ro >= self.ro_reserved {
            self.ro_reserved = ro.saturating_add(RO_LEASE);
            out.push(Action::Store(record::put_ro_reserved(self.ro_reserved)));
            out.push(Action::Store(StoreOp::Sync));
        }
        let msg = Message::ReadOnly {
            nc: ro,
            op: op.clone(),
        };
        for i in 0..self.q.exec {
            if let Ok(i) = u16::try_from(i) {
                self.send(Principal::Exec(i), &msg, out);
            }
        }
        out.push(Action::SetTimer {
            id: READ_ONLY_DEADLINE,
            after: self.cfg.client_retry_us,
        });
        self.outstanding = Some(Outstanding::ReadOnly(ReadOnly {
            ro,
            req: request_id(self.me, ro, Digest::of(&op)),
            op,
            votes: HashMap::new(),
        }));
    }

    pub(crate) fn on_read_only_reply(
        &mut self,
        now: Micros,
        exec: u16,
        ro: ReqNo,
        req: Digest,
        result: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let unanimity = self.q.read_only();
        let Some(Outstanding::ReadOnly(pending)) = &mut self.outstanding else {
            self.counters.add("stale-read-only-reply");
            return;
        };
        if ro != pending.ro || req != pending.req {
            self.counters.add("stale-read-only-reply");
            return;
        }
        // Any two different answers (even from one replica) make unanimity impossible.
        if pending.votes.values().any(|v| *v != result) {
            self.counters.add("read-only-mismatch");
            self.fall_back_to_ordered(now, out);
            return;
        }
        pending.votes.insert(exec, result);
        if pending.votes.len() >= unanimity {
            self.accept_read_only(exec, out);
        }
    }

    fn accept_read_only(&mut self, exec: u16, out: &mut Vec<Action>) {
        let Some(Outstanding::ReadOnly(mut pending)) = self.outstanding.take() else {
            return;
        };
        out.push(Action::CancelTimer {
            id: READ_ONLY_DEADLINE,
        });
        let result = pending.votes.remove(&exec).unwrap_or_default();
        out.push(Action::Complete { nc: 0, result });
    }

    pub(crate) fn on_read_only_deadline(&mut self, now: Micros, out: &mut Vec<Action>) {
        if matches!(self.outstanding, Some(Outstanding::ReadOnly(_))) {
            self.counters.add("read-only-timeout");
            self.fall_back_to_ordered(now, out);
        }
    }

    /// Reissue the outstanding read-only operation as the next ordered request.
    fn fall_back_to_ordered(&mut self, now: Micros, out: &mut Vec<Action>) {
        let Some(Outstanding::ReadOnly(pending)) = self.outstanding.take() else {
            return;
        };
        out.push(Action::CancelTimer {
            id: READ_ONLY_DEADLINE,
        });
        self.start_ordered(now, pending.op, out);
    }
}
