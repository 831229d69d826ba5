//! The clients' side of the world: closed-loop operations, completions, and the Byzantine
//! client's injected attacks.

use super::{Ev, StageBox, World};
use crate::app::SimApp;
use crate::trace;
use plumb_wire::{AuthId, ExecId, Message, Principal, ReqNo};

impl<A: SimApp> World<'_, A> {
    /// A client's think time is over: issue its next operation.
    pub(super) fn wake(&mut self, i: usize) {
        if self.now >= self.workload.stop_at() {
            return;
        }
        let Principal::Client(c) = self.nodes[i].p else {
            return;
        };
        if self.is_lane(c) {
            return self.lane_wake(i, c);
        }
        let local = self.nodes[i].clock.local(self.now);
        let (op, mut read_only) = self.workload.next_op(self.app, c);
        // Under a sketcher every read of a correct client goes through it: delay-once holds
        // among the reads one sketcher accepts (seed 000 §4.2), not for a read that bypassed
        // it and saw newer state.
        if self.sketcher.is_some() && self.nodes[i].correct && self.app.read_only_eligible(&op) {
            read_only = true;
        }
        if !matches!(self.nodes[i].stage, Some(StageBox::Client(_))) {
            return;
        }
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        let route = if read_only && self.sketcher.is_some() && self.nodes[i].correct {
            self.sketched_route(&op)
        } else {
            plumb_client::Route::read_only_if(read_only)
        };
        let Some(StageBox::Client(client)) = self.nodes[i].stage.as_mut() else {
            self.actions = actions;
            return;
        };
        match client.submit(local, op.clone(), route, &mut actions) {
            Ok(()) => {
                self.trace.fold(&[self.now, 5, i as u64]);
                self.trace.line(
                    self.now,
                    format_args!(
                        "c{c} invokes {}{}",
                        self.app.op_text(&op),
                        match route {
                            plumb_client::Route::Ordered => "",
                            plumb_client::Route::ReadOnly => " (read-only)",
                            plumb_client::Route::Fast { .. } => " (fast)",
                            plumb_client::Route::Sketched { .. } => " (d-prophecy)",
                            plumb_client::Route::Speculative { .. } => " (speculative)",
                        }
                    ),
                );
                self.workload.invoked(c, op, read_only, self.now);
                self.carry_out(i, &mut actions);
            }
            Err(_) => {
                self.schedule_wake(i);
            }
        }
        self.actions = actions;
    }

    pub(super) fn complete(
        &mut self,
        i: usize,
        nc: ReqNo,
        result: Vec<u8>,
        answered: plumb_core::Answered,
    ) {
        let Principal::Client(c) = self.nodes[i].p else {
            return;
        };
        if self.sketcher.is_some() {
            let sketched = self.workload.pending_read(c).map(<[u8]>::to_vec);
            if let Some(op) = sketched {
                if let super::sketching::Next::Reissue =
                    self.sketched_completion(&op, &result, answered)
                {
                    self.reissue_ordered(i, op);
                    return;
                }
            }
        }
        self.stats.completed += 1;
        self.trace.fold(&[self.now, 6, i as u64, nc.0]);
        self.trace.line(
            self.now,
            format_args!("c{c} completes nc={nc}: {}", self.app.result_text(&result)),
        );
        // A lane's session hears of it after the history has it: it may send on the lane at once.
        let lane = self.is_lane(c).then(|| result.clone());
        if let Err(e) = self.workload.completed(c, nc, result, self.now) {
            if self.nodes[i].correct {
                self.checker.violate("CS2", e);
            }
        }
        if let Some(result) = lane {
            self.lane_complete(c, nc, &result);
        }
        self.schedule_wake(i);
    }

    /// A sketched read whose fast answer was refused (or never came) is ordered now: the same
    /// operation, still outstanding in the client's history.
    fn reissue_ordered(&mut self, i: usize, op: Vec<u8>) {
        let local = self.nodes[i].clock.local(self.now);
        let Some(StageBox::Client(client)) = self.nodes[i].stage.as_mut() else {
            return;
        };
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        match client.submit(local, op, plumb_client::Route::Ordered, &mut actions) {
            Ok(()) => {
                self.trace.line(
                    self.now,
                    format_args!("{} reissues ordered", self.nodes[i].p),
                );
                self.carry_out(i, &mut actions);
            }
            // Cannot happen (the client just completed), but never leave the loop stuck.
            Err(_) => self.schedule_wake(i),
        }
        self.actions = actions;
    }

    /// The Byzantine client's own attacks, besides its (correct) client code: reuse its last
    /// request number with another operation, skip request numbers, send a mutating operation
    /// down the read-only path, send garbage, badly MACed frames and validly MACed frames with
    /// a body that does not decode, and flood the authentication stage with requests. It keeps
    /// on after the network heals: the liveness bound must hold while it acts.
    pub(super) fn byzantine_client_tick(&mut self, i: usize) {
        let Principal::Client(c) = self.nodes[i].p else {
            return;
        };
        let q = self.cfg.protocol.quorums;
        let other = self
            .app
            .injected_op(&mut self.fault_rng, &self.cfg.workload.keys);
        let last = self
            .workload
            .clients
            .get(c as usize)
            .and_then(|l| l.last_request.clone());
        let mut msgs: Vec<(Principal, Message)> = Vec::new();
        // Request numbers sent with `other` to every authentication replica.
        let mut to_auth: Vec<ReqNo> = Vec::new();
        match self.fault_rng.index(7) {
            0 => {
                if let Some((nc, op)) = last {
                    if op != other {
                        self.workload.injected_body(&other);
                        to_auth.push(nc);
                    }
                }
            }
            1 => {
                self.workload.injected_body(&other);
                to_auth.push(last.map_or(ReqNo(1), |(nc, _)| nc).plus(2));
            }
            2 => {
                let write = self.app.mutating_op();
                for e in ExecId::all(q.exec) {
                    msgs.push((
                        Principal::Exec(e),
                        Message::ReadOnly {
                            life: plumb_adversary::client::ATTACK_LIFE,
                            nc: ReqNo(1 << 40),
                            op: write.clone(),
                        },
                    ));
                }
            }
            3 => self.send_garbage(i, false),
            4 => self.send_malformed(i),
            5 => {
                // A flood: a burst of fresh request numbers.
                let first = last.map_or(ReqNo(1), |(nc, _)| nc.next());
                self.workload.injected_body(&other);
                to_auth.extend((first.0..first.0 + 16).map(ReqNo));
            }
            _ => self.send_garbage(i, true),
        }
        for nc in to_auth {
            for a in AuthId::all(q.auth) {
                msgs.push((
                    Principal::Auth(a),
                    Message::Request {
                        life: plumb_adversary::client::ATTACK_LIFE,
                        nc,
                        op: other.clone(),
                    },
                ));
            }
        }
        let me = self.nodes[i].p;
        for (to, msg) in msgs {
            let frame = self.keys.ring(me).and_then(|r| r.seal(to, &msg));
            if let (Some(frame), Some(to_index)) = (frame, self.index(to)) {
                self.trace.line(
                    self.now,
                    format_args!(
                        "{me} (byzantine) -> {to}: {}",
                        trace::describe(self.app, &msg)
                    ),
                );
                self.transmit(i, to_index, frame);
            }
        }
        let at = self.now + self.fault_rng.range(100_000, 300_000);
        self.push(at, Ev::ByzantineClientTick { node: i });
    }

    /// A frame with a valid MAC whose body does not decode, to a random auth replica: only the
    /// client itself can have sent it.
    fn send_malformed(&mut self, i: usize) {
        let q = self.cfg.protocol.quorums;
        let to = Principal::Auth(AuthId(self.fault_rng.index(q.auth) as u16));
        let frame = self
            .keys
            .ring(self.nodes[i].p)
            .and_then(|r| plumb_adversary::client::malformed(r, to));
        if let (Some(frame), Some(to_index)) = (frame, self.index(to)) {
            self.transmit(i, to_index, frame);
        }
    }

    /// Random bytes, or a well-formed request frame with a broken MAC, to a random replica.
    fn send_garbage(&mut self, i: usize, bad_mac: bool) {
        let replicas = self
            .nodes
            .iter()
            .filter(|n| !matches!(n.p, Principal::Client(_)))
            .count();
        let to = self.fault_rng.index(replicas);
        let me = self.nodes[i].p;
        let frame = if bad_mac {
            let Some(f) = self.keys.ring(me).and_then(|r| {
                plumb_adversary::client::bad_mac(r, self.nodes[to].p, ReqNo(1), b"garbage")
            }) else {
                return;
            };
            f
        } else {
            let len = self.fault_rng.index(80);
            (0..len).map(|_| self.fault_rng.next_u64() as u8).collect()
        };
        self.transmit(i, to, frame);
    }
}
