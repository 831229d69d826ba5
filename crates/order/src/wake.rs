//! ZZ mode, the replica's side (docs/zz.md): WAKEs to the sleepers when the watch over the
//! actives says so (sleepers.rs), and replies relayed for clients that cannot get them
//! (relay.rs).

use crate::relay::{Copied, Copy};
use crate::OrderReplica;
use plumb_core::{Action, DropReason, Micros};
use plumb_wire::{ClientId, ExecId, Message, Principal};

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
                    z.disagree("zz-reply-copies-differ");
                }
                self.wake_sleepers(now, out);
            }
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
        for cause in z.take_causes() {
            self.counters.add(cause);
        }
        let seq = self.state.seq;
        for sleeper in due {
            self.counters.add("zz-wake-sent");
            self.send(Principal::Exec(sleeper), &Message::Wake { seq }, out);
        }
    }
}
