//! The read-only gate (docs/protocol.md "Read-only requests"): linearizable read-only answers
//! after a (re)start.
//!
//! A replica that restarts resumes from its last checkpoint, behind what it executed (and
//! perhaps acknowledged) before the crash. Clients accept a read-only result when *all*
//! execution replicas return the same bytes; if the others lag too, they would all return the
//! old value. So after every start a replica answers no read-only request until it has
//! executed every batch that `n - u` order replicas, answering a probe with a fresh nonce,
//! report as possibly committed: their *maximum* bounds every write acknowledged before this
//! replica restarted (the quorum argument is in `plumb_order`'s `probe.rs` and the doc).
//!
//! Read-only requests that arrive while the gate is closed are dropped and counted, not
//! answered with a "not ready" reply: clients accept unanimous bytes, and if every replica
//! were not ready a unanimous "not ready" would be taken for a result. The client falls back to
//! the ordered path at its read-only deadline.
//!
//! A faulty order replica can only report too high a number: that keeps the gate closed longer
//! (clients use the ordered path meanwhile), never opens it early.

use crate::ExecReplica;
use plumb_app::Application;
use plumb_core::Action;
use plumb_core::DropReason;
use plumb_wire::{Message, OrderId, Seq};
use std::collections::BTreeMap;

/// Probe nonces of this incarnation kept for matching answers: answers to any of them are
/// fresh (sent after this start), and a slow answer to an earlier probe still counts.
const NONCES_KEPT: usize = 16;

/// The closed gate: what the probes of this incarnation have gathered.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    nonces: Vec<u64>,
    /// Each order replica's highest answer.
    answers: BTreeMap<OrderId, Seq>,
}

impl<A: Application> ExecReplica<A> {
    /// EXEC-PROBE to every order replica, with a new nonce (on start, then on each catch-up
    /// tick while too few order replicas answered).
    pub(crate) fn probe(&mut self, out: &mut Vec<Action>) {
        let nonce = self.rng.next_u64();
        let Some(gate) = self.gate.as_mut() else {
            return;
        };
        if gate.nonces.len() >= NONCES_KEPT {
            gate.nonces.remove(0);
        }
        gate.nonces.push(nonce);
        self.send_to_order(&Message::ExecProbe { nonce }, out);
    }

    /// Still short of `n - u` answers: probe again.
    pub(crate) fn probe_tick(&mut self, out: &mut Vec<Action>) {
        if self
            .gate
            .as_ref()
            .is_some_and(|g| g.answers.len() < self.q().order_medium())
        {
            self.probe(out);
        }
    }

    pub(crate) fn on_probe_reply(&mut self, o: OrderId, nonce: u64, seq: Seq) {
        let Some(gate) = self.gate.as_mut() else {
            self.counters.add("probe-reply-gate-open");
            return;
        };
        if !gate.nonces.contains(&nonce) {
            self.counters.dropped(DropReason::ProbeReplyBadNonce);
            return;
        }
        let best = gate.answers.entry(o).or_insert(seq);
        *best = (*best).max(seq);
    }

    /// May a read-only request be answered from the current state? Opens the gate for good
    /// (until the next start) once `n - u` order replicas answered and this replica executed
    /// through the highest answer.
    pub(crate) fn read_only_ready(&mut self) -> bool {
        #[cfg(feature = "sabotage")]
        if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::StaleReadOnly) {
            return true;
        }
        let Some(gate) = &self.gate else {
            return true;
        };
        if gate.answers.len() < self.q().order_medium() {
            return false;
        }
        let max = gate.answers.values().copied().max().unwrap_or(Seq::ZERO);
        if self.executed.next_seq <= max {
            return false;
        }
        self.gate = None;
        self.counters.add("read-only-gate-opened");
        true
    }
}
