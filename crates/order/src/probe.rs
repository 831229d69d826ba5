//! The order stage's side of the read-only gate (docs/protocol.md "Read-only requests"): an
//! execution replica that (re)started asks every order replica how far the order stage may have
//! committed, and answers no read-only request until it has executed that far.
//!
//! The answer must bound from above every batch this replica knows *may* be committed, not only
//! what it committed: a write acknowledged to a client was executed by `r + 1` execution
//! replicas, so `n - u` order replicas sent a COMMIT for it, and the `n - u` replicas that
//! answer a probe overlap those in `n - 2u >= r + 1`, one of them correct. That one answers with
//! at least the write's sequence number only if a sent COMMIT counts, since it may not have
//! applied the batch yet. A slot's `record.prepared` is persisted before its COMMIT leaves, so it
//! survives a restart of this replica where `sent_commit` does not.

use crate::OrderReplica;
use plumb_core::Action;
use plumb_core::DropReason;
use plumb_wire::{ExecId, Message, Principal, Seq};

impl OrderReplica {
    /// EXEC-PROBE from execution replica `e`: echo the nonce with our upper bound. Stateless
    /// and one small message per probe, so a faulty execution replica gains no amplification.
    pub(crate) fn on_exec_probe(&mut self, e: ExecId, nonce: u64, out: &mut Vec<Action>) {
        if e.index() >= self.q().exec {
            self.counters.dropped(DropReason::ProbeUnknownExec);
            return;
        }
        let msg = Message::ExecProbeReply {
            nonce,
            seq: self.may_be_committed_upto(),
        };
        self.send(Principal::Exec(e), &msg, out);
    }

    /// The highest sequence number this replica sent a COMMIT for (now or before a restart),
    /// knows committed, or applied (a stable checkpoint it still waits to fetch counts too).
    pub(crate) fn may_be_committed_upto(&self) -> Seq {
        let voted = self
            .log
            .range(..)
            .rev()
            .find(|(_, s)| {
                s.sent_commit || s.record.prepared.is_some() || s.record.committed.is_some()
            })
            .map_or(Seq::ZERO, |(seq, _)| *seq);
        voted.max(self.state.seq).max(self.checkpoints.stable().seq)
    }
}

#[cfg(test)]
mod tests {
    use crate::slot::Slot;
    use crate::OrderReplica;
    use plumb_config::{Faults, ProtocolConfig, Quorums};
    use plumb_core::{run, Action, DropReason, Event, KeyRing, Recovered, Stage, StageContext};
    use plumb_crypto::{Digest, Identity, PublicIdentity};
    use plumb_wire::{Batch, ExecId, Message, OrderId, Principal, Seq, View};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn identity(p: Principal) -> Arc<Identity> {
        Arc::new(Identity::from_seed(Digest::of(&p.label().to_le_bytes()).0))
    }

    /// `p`'s key ring in a cluster of `q` (identities derived from the principal's label).
    fn ring(q: &Quorums, p: Principal) -> KeyRing {
        let all = OrderId::all(q.order)
            .map(Principal::Order)
            .chain(ExecId::all(q.exec).map(Principal::Exec));
        let dir: HashMap<Principal, PublicIdentity> =
            all.map(|p| (p, identity(p).public())).collect();
        KeyRing::new(p, identity(p), Arc::new(dir))
    }

    fn replica(q: Quorums) -> OrderReplica {
        let ctx = StageContext {
            config: Arc::new(ProtocolConfig::new(q)),
            keys: ring(&q, Principal::Order(OrderId(1))),
            seed: 7,
        };
        // A fresh replica's store, as `plumb init` makes it (without it the replica rejoins
        // and answers no probe).
        let mut fresh = Recovered::default();
        for op in crate::genesis() {
            if let plumb_core::StoreOp::Put { key, value } = op {
                fresh.records.insert(key, value);
            }
        }
        OrderReplica::new(ctx, fresh)
    }

    /// The answer to a probe from `exec`, opened by `exec`.
    fn probe(o: &mut OrderReplica, q: &Quorums, exec: ExecId, nonce: u64) -> Vec<Message> {
        let e = ring(q, Principal::Exec(exec));
        let frame = e
            .seal(Principal::Order(OrderId(1)), &Message::ExecProbe { nonce })
            .expect("order 1 is known");
        run(o, 1_000, Event::Receive(frame))
            .into_iter()
            .filter_map(|a| match a {
                Action::Send { to, frame } if to == Principal::Exec(exec) => {
                    e.open(&frame).ok().map(|(_, m)| m)
                }
                _ => None,
            })
            .collect()
    }

    fn batch() -> Batch {
        Batch {
            requests: Vec::new(),
            time: 1,
            seed: 0,
        }
    }

    /// Read-only after restart: the probe answer bounds every batch that may be committed, so
    /// it counts a slot this replica only sent a COMMIT for (or prepared, which survives a
    /// restart), above what it applied; and it echoes the nonce that proves it fresh.
    #[test]
    fn probe_answer_counts_sent_commits_above_what_was_applied() {
        let q = Quorums::minimal(Faults::new(1, 0));
        let mut o = replica(q);
        run(&mut o, 0, Event::Start);
        assert_eq!(
            probe(&mut o, &q, ExecId(0), 11),
            vec![Message::ExecProbeReply {
                nonce: 11,
                seq: Seq(0)
            }]
        );

        let mut commit_sent = Slot::default();
        commit_sent.accept(Seq(3), View(0), batch());
        commit_sent.sent_commit = true;
        o.log.restore(Seq(3), commit_sent);
        assert_eq!(
            probe(&mut o, &q, ExecId(1), 12),
            vec![Message::ExecProbeReply {
                nonce: 12,
                seq: Seq(3)
            }]
        );

        // After a restart `sent_commit` is gone but the durable prepared mark is not.
        let mut prepared = Slot::default();
        prepared.accept(Seq(5), View(0), batch());
        prepared.record.prepared = Some((View(0), batch()));
        o.log.restore(Seq(5), prepared);
        // Merely accepted (no COMMIT sent): not counted. The argument needs only the slots
        // this replica voted to commit.
        let mut accepted = Slot::default();
        accepted.accept(Seq(9), View(0), batch());
        o.log.restore(Seq(9), accepted);
        assert_eq!(
            probe(&mut o, &q, ExecId(0), 13),
            vec![Message::ExecProbeReply {
                nonce: 13,
                seq: Seq(5)
            }]
        );
        assert_eq!(o.counters().drops(DropReason::ProbeUnknownExec), 0);
    }
}
