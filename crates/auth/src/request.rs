//! CLIENT-REQ processing (seed 004 Figure 5.7 lines 16-23, §5.3.3 rate limiting).
//!
//! The filter pipeline runs cheapest checks first (seed 004 Figure 3.4):
//! 0. blacklist check on the header's sender label (`AuthReplica::on_frame`);
//! 1. MAC check and sender lookup, in `KeyRing::open` (see `AuthReplica::on_frame`): a forged
//!    frame or an unknown client costs one keyed hash and no parsing;
//! 2. sequence check: `nc` against `lastSent[c]`, a table lookup (AS3);
//! 3. redundancy and pending checks: a retransmission is answered by resending `lastSent[c]`,
//!    a new request while one is pending is dropped (AS4);
//! 4. only then the expensive work: digest, one MAC per order replica, a synced write.

use crate::cache::Pending;
use crate::last_sent::authenticate_core;
use crate::recovery::{request_key, superseded_key, StoredRequest, SupersededRecord};
use crate::AuthReplica;
use plumb_core::{storage, Action, DropReason, StoreOp};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Life, ReqNo};

/// How many stranded requests of one client number a replica keeps after superseding them.
pub(crate) const MAX_SUPERSEDED: usize = 8;

impl AuthReplica {
    /// A CLIENT-REQ whose envelope `open` has already authenticated (filter step 1).
    pub(crate) fn on_request(
        &mut self,
        client: ClientId,
        life: Life,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        if nc == ReqNo::NONE {
            // Request numbers start at 1 (CS1): no correct client sends 0.
            self.blacklist_client(client, "blacklisted-bad-number");
            return;
        }
        // Step 2: sequence check against lastSent[c].
        match self.last_sent.get(&client) {
            Some(last) if nc <= last.core.nc => {
                // Step 3a: redundancy. Same number, another request (another operation, or
                // the same bytes from another life of the client): the client lost its record
                // or is faulty (AS3 forbids authenticating both). Otherwise a retransmission of
                // this or an older request: answer with lastSent[c] (AL1 turns old requests
                // into the latest one).
                if nc == last.core.nc
                    && (life != last.core.life || Digest::of(&op) != last.core.op_digest())
                {
                    self.on_reused_number(client, life, nc, op, out);
                    return;
                }
                self.counters.add("retransmission");
                self.resend_last(client, out);
                return;
            }
            _ => {}
        }
        // Step 3b: at most one pending request per client (AS4). Resending lastSent[c] makes
        // the order stage ask execution to re-report it (RETRANSMIT -> BATCH-COMPLETE), which
        // clears a stale pending entry (AL1b).
        if let Some(p) = self.pending.get(&client) {
            let retransmitted = self.deferred.get(&client).is_some_and(|d| d.1 == nc);
            if nc == p.nc.next() && !retransmitted {
                // A correct client sends its next request only once the previous one was
                // executed (CS2), so its BATCH-COMPLETE is on its way here too; frames of
                // different senders may be served in either order. Hold the request (one per
                // client, AS4 still holds) until that clears the pending one. If the client
                // has to send it again, the BATCH-COMPLETE was lost: resend below.
                self.counters.add("deferred");
                self.deferred.insert(client, (life, nc, op));
                return;
            }
            self.counters.add("pending");
            self.resend_last(client, out);
            return;
        }
        // Step 4: authenticate.
        self.authenticate(client, life, nc, op, out);
    }

    /// Another request under the number of `lastSent[c]`. A correct client does this only
    /// after it lost its record (docs/protocol.md "Clients after a crash"): it learned a number
    /// that was too low, so it is not blacklisted for it.
    ///
    /// - The earlier request was ordered: the number is used. Resending lastSent[c] makes the
    ///   order stage ask execution to re-send its reply, which names the earlier operation, and
    ///   `r + 1` such replies move the client past the number.
    /// - The earlier request is pending: it may still be ordered; resend it. But if it has
    ///   waited `auth_resend_us` (already resent once) it is *stranded*: the previous life sent
    ///   it to too few replicas for the primary to gather `n_auth - u` AUTH-REQs, and the
    ///   replicas that hold it refuse the new operation, so neither could ever be ordered. It
    ///   is then superseded: the new operation is authenticated under the number. This is no
    ///   new situation for the order stage, which already meets two fully vouched operations
    ///   under one number when Byzantine authentication replicas vouch for both; it orders one
    ///   request per client number (OS3). The old body stays fetchable (AS2), whichever
    ///   supersession it lost to: any body this replica vouched for may be the one ordered,
    ///   however long after (a client that sent `dbsize`, `get k2` and `get k0` under one
    ///   number had `dbsize` ordered 1.35 s later, when only the newest superseded body was
    ///   kept, and no replica could serve it: sim seed 737, u1r1). A correct client reuses a
    ///   number once per lost record; one that supersedes it more than [`MAX_SUPERSEDED`]
    ///   times is blacklisted rather than let pin more bodies.
    fn on_reused_number(
        &mut self,
        client: ClientId,
        life: Life,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let stranded = self.pending.get(&client).is_some_and(|p| {
            p.nc == nc && self.now >= p.since.saturating_add(self.cfg.auth_resend_us)
        });
        #[cfg(feature = "sabotage")]
        let stranded =
            stranded && !plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::KeepStranded);
        if !stranded {
            self.counters.add("reused-number");
            self.resend_last(client, out);
            return;
        }
        let kept = self.superseded.get(&client).map_or(0, Vec::len);
        if kept >= MAX_SUPERSEDED {
            self.blacklist_client(client, "blacklisted-superseding");
            return;
        }
        if let Some(old) = self.pending.remove(&client) {
            self.superseded.entry(client).or_default().push(old);
        }
        // Durable with the new request's record (`authenticate` syncs both): a crash must not
        // take the only copies of a body that may yet be ordered (sim seed 737's stall, after
        // every replica holding it restarted).
        let record = SupersededRecord {
            client,
            bodies: self.superseded.get(&client).map_or_else(Vec::new, |kept| {
                kept.iter().map(|p| (p.nc, p.op.clone())).collect()
            }),
        };
        out.push(Action::Store(StoreOp::Put {
            key: superseded_key(client),
            value: storage::encode(&record),
        }));
        self.counters.add("superseded-stranded");
        self.authenticate(client, life, nc, op, out);
    }

    /// Persist `(c, life, nc, op)` (put + sync) before the AUTH-REQ leaves: after a crash this
    /// replica still holds every body it vouched for (AS2) and remembers `lastSent[c]` (AS3).
    fn authenticate(
        &mut self,
        client: ClientId,
        life: Life,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let digest = Digest::of(&op);
        let keys = &self.ctx.keys;
        let Some(last) = authenticate_core(keys, &self.cfg, client, life, nc, &op, digest) else {
            self.counters.dropped(DropReason::MissingOrderKey);
            return;
        };
        let record = StoredRequest {
            client,
            life,
            nc,
            op,
        };
        out.push(Action::Store(StoreOp::Put {
            key: request_key(client),
            value: storage::encode(&record),
        }));
        // The AUTH-REQ leaves with the others of this group, behind the sync (lib.rs).
        out.push(Action::Store(StoreOp::Sync));
        self.unsent.push(plumb_wire::Vouched {
            core: last.core.clone(),
            macs: last.macs.clone(),
        });
        self.counters.add("authenticated");
        self.last_sent.insert(client, last);
        self.serve_parked(client, nc, digest, &record.op, out);
        self.pending.insert(
            client,
            Pending {
                nc,
                op: record.op,
                digest,
                since: self.now,
            },
        );
    }

    /// Resend lastSent[c] to every order replica, at most once per `auth_resend_us`.
    pub(crate) fn resend_last(&mut self, client: ClientId, out: &mut Vec<Action>) {
        let now = self.now;
        let period = self.cfg.auth_resend_us;
        let Some(last) = self.last_sent.get_mut(&client) else {
            return;
        };
        if last
            .resent_at
            .is_some_and(|t| now < t.saturating_add(period))
        {
            self.counters.add("resend-limited");
            return;
        }
        last.resent_at = Some(now);
        let msg = last.message();
        self.send_to_order(&msg, out);
        self.counters.add("resend");
    }
}
