//! ZZ mode, the replica's side (docs/zz.md): WAKEs to the sleepers when the watch over the
//! actives says so (sleepers.rs), SLEEPs once the group is whole again, replicas found faulty
//! reported, and replies relayed for clients that cannot get them (relay.rs).

use crate::relay::{Copied, Copy};
use crate::OrderReplica;
use plumb_core::{Action, DropReason, Micros, Observation, TimerId};
use plumb_wire::{ClientId, ExecId, Message, Principal, Seq};

/// ZZ mode: fires when an open batch's missing reports become late (sleepers.rs).
pub(crate) const ZZ_WATCH: TimerId = TimerId(5);

impl OrderReplica {
    /// ZZ mode: an active's copy of the reply it cached for `client` (relay.rs): relay it once
    /// every active's is alike; two that differ wake a sleeper.
    pub(crate) fn on_reply_copy(
        &mut self,
        now: Micros,
        e: ExecId,
        client: ClientId,
        copy: Copy,
        out: &mut Vec<Action>,
    ) {
        // Only a request this replica ordered: a faulty replica cannot grow the table with
        // clients that never sent one.
        if self.relays.is_none() || copy.nc > self.last_ordered(client) {
            self.counters.dropped(DropReason::Unexpected);
            return;
        }
        let keep = self.cfg().catch_up_us.saturating_mul(10);
        let Some(relays) = self.relays.as_mut() else {
            return;
        };
        match relays.copy((now, keep), e, client, copy) {
            Copied::NotActive => self.counters.dropped(DropReason::Unexpected),
            Copied::Waiting => {}
            Copied::Alike(c) => {
                self.counters.add("zz-reply-relayed");
                let msg = Message::RelayedReply {
                    nc: c.nc,
                    req: c.req,
                    result: c.result,
                    at: c.at,
                };
                self.send(Principal::Client(client), &msg, out);
            }
            Copied::Differ => {
                if let Some(z) = self.sleepers.as_mut() {
                    z.disagree("zz-reply-copies-differ", || {
                        format!("actives' copies of c{client}'s reply differ")
                    });
                }
                self.wake_sleepers(now, out);
            }
        }
    }

    /// ZZ mode: execution replica `e` said something other than the agreed report or token of
    /// a batch or checkpoint: faulty. Reported once, and stopped (sleepers.rs).
    pub(crate) fn exec_found_faulty(&mut self, e: ExecId, out: &mut Vec<Action>) {
        if self.sleepers.as_mut().is_some_and(|z| z.faulty(e)) {
            self.counters.add("zz-found-faulty");
            out.push(Action::Observe(Observation::ExecFoundFaulty { exec: e }));
        }
    }

    /// ZZ mode: execution replica `e` sent the agreed token of checkpoint `seq`. Once every
    /// active and woken replica has, and no active was found faulty, the woken ones are
    /// asked to sleep again (docs/zz.md "Back to sleep").
    pub(crate) fn exec_healthy(&mut self, now: Micros, e: ExecId, seq: Seq, out: &mut Vec<Action>) {
        let Some(z) = self.sleepers.as_mut() else {
            return;
        };
        for sleeper in z.healthy(now, e, seq) {
            self.counters.add("zz-sleep-sent");
            self.send(Principal::Exec(sleeper), &Message::Sleep { seq }, out);
        }
    }

    /// ZZ mode: send a WAKE to each sleeper the watch says is due one (sleepers.rs).
    pub(crate) fn wake_sleepers(&mut self, now: Micros, out: &mut Vec<Action>) {
        let stable = self.checkpoints.stable().seq;
        // An idle execution replica sends LAST-EXEC every catch-up period: three without a
        // word (and no less than a late report's timeout) is silence.
        let cfg = self.cfg();
        let floor = cfg.zz_report_timeout_us;
        let times = (
            floor,
            cfg.catch_up_us.saturating_mul(3).max(floor),
            cfg.catch_up_us,
        );
        let Some(z) = self.sleepers.as_mut() else {
            return;
        };
        let due = z.due(now, stable, times);
        if let Some(after) = z.watch_timer(now, floor) {
            out.push(Action::SetTimer {
                id: ZZ_WATCH,
                after,
            });
        }
        for (cause, evidence) in z.take_causes() {
            self.counters.add(cause);
            out.push(Action::Observe(Observation::ActiveSuspected {
                cause,
                evidence,
            }));
        }
        let seq = self.state.seq;
        for sleeper in due {
            self.counters.add("zz-wake-sent");
            self.send(Principal::Exec(sleeper), &Message::Wake { seq }, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::OrderReplica;
    use plumb_config::{Faults, ProtocolConfig, Quorums};
    use plumb_core::{run, Action, Event, KeyRing, Recovered, Stage, StageContext};
    use plumb_crypto::{Digest, Identity, PublicIdentity};
    use plumb_wire::{ExecId, Message, OrderId, Principal, Seq};
    use std::collections::{BTreeSet, HashMap};
    use std::sync::Arc;

    fn ring(q: &Quorums, p: Principal) -> KeyRing {
        let identity =
            |p: Principal| Arc::new(Identity::from_seed(Digest::of(&p.label().to_le_bytes()).0));
        let dir: HashMap<Principal, PublicIdentity> = OrderId::all(q.order)
            .map(Principal::Order)
            .chain(ExecId::all(q.exec).map(Principal::Exec))
            .map(|p| (p, identity(p).public()))
            .collect();
        KeyRing::new(p, identity(p), Arc::new(dir))
    }

    /// Per-batch traffic (here RETRANSMIT; NEXT-BATCH leaves by the same door) goes to the
    /// actives and to no sleeper until it is heard from; a woken one that asks where things
    /// stand (LAST-EXEC) gets it from then on.
    #[test]
    fn per_batch_traffic_skips_a_sleeper_until_it_is_heard_from() {
        let q = Quorums::minimal(Faults::new(1, 1));
        let mut config = ProtocolConfig::new(q);
        config.zz = true;
        let me = Principal::Order(OrderId(1));
        let mut fresh = Recovered::default();
        for op in crate::genesis() {
            if let plumb_core::StoreOp::Put { key, value } = op {
                fresh.records.insert(key, value);
            }
        }
        let ctx = StageContext {
            config: Arc::new(config),
            keys: ring(&q, me),
            seed: 7,
        };
        let mut o = OrderReplica::new(ctx, fresh);
        run(&mut o, 0, Event::Start);
        let receivers = |o: &mut OrderReplica| {
            let mut out = Vec::new();
            let msg = Message::Retransmit {
                client: 3,
                next_seq: Seq(1),
            };
            o.send_to_exec(&msg, &mut out);
            out.into_iter()
                .filter_map(|a| match a {
                    Action::Send { to, .. } => Some(to),
                    _ => None,
                })
                .collect::<BTreeSet<_>>()
        };
        let actives: BTreeSet<Principal> = ExecId::all(2).map(Principal::Exec).collect();
        assert_eq!(receivers(&mut o), actives);
        assert_eq!(o.counters().get("zz-not-sent-asleep"), 1);

        let woken = ring(&q, Principal::Exec(ExecId(2)));
        let frame = woken
            .seal(me, &Message::LastExec { next: Seq(1) })
            .expect("order 1 is known");
        run(&mut o, 1_000, Event::Receive(frame));
        let all: BTreeSet<Principal> = ExecId::all(3).map(Principal::Exec).collect();
        assert_eq!(receivers(&mut o), all);
        assert_eq!(o.counters().get("zz-not-sent-asleep"), 1);
    }
}
