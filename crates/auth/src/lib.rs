//! The authentication stage (seed 004 §5.7.2 Figure 5.7, §5.3.3, §6.4). See docs/protocol.md.
//!
//! An authentication replica filters client requests, authenticates each accepted one to every
//! order replica with a MAC authenticator over its id digest (one row of the matrix signature,
//! AS1), persists the body before the AUTH-REQ leaves, and keeps bodies fetchable for the
//! execution stage until three checkpoint intervals of batches have passed (AS2, AL2). It keeps
//! at most one request per client identifier (AS3) and at most one pending request per client
//! (AS4). Replicas do not talk to each other: their states may diverge (§6.4.1).
//!
//! One file per concern: `blacklist.rs` (clients refused for a while), `request.rs` (the
//! client-request filter pipeline and authentication),
//! `ordered.rs` (BATCH-COMPLETE votes, the command cache's garbage collection, FETCH),
//! `cache.rs` (the pending table and the command cache), `recovery.rs` (records and restart).

mod blacklist;
mod cache;
mod last_sent;
mod ordered;
mod recovery;
mod request;

#[cfg(test)]
mod tests;

use cache::{CommandCache, Pending};
use last_sent::LastSent;
use ordered::CompletionVotes;
use plumb_config::{ProtocolConfig, Quorums};
use plumb_core::{
    Action, Counters, DropReason, Event, Micros, Recovered, Stage, StageContext, StoreOp,
};
use plumb_wire::{ClientId, ExecId, Message, OrderId, Principal, ReqNo, Seq, WireError};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use recovery::{cached_key, cached_prefix, request_key, CACHE_PREFIX, REQUEST_PREFIX};

pub struct AuthReplica {
    ctx: StageContext,
    cfg: Arc<ProtocolConfig>,
    q: Quorums,
    counters: Counters,
    now: Micros,

    /// `lastSent[c]`: the last AUTH-REQ built for each client, resent on retransmissions.
    last_sent: BTreeMap<ClientId, LastSent>,
    /// `pending[c]`: the body of the request authenticated but not known to be ordered.
    pending: BTreeMap<ClientId, Pending>,
    /// Bodies of ordered requests, by checkpoint interval of the batch that ordered them.
    cache: CommandCache,
    /// The highest batch number this replica acted on a BATCH-COMPLETE for.
    highest_ordered: Option<Seq>,
    votes: CompletionVotes,
    /// Per client: execution replicas that reported its pending request (or a later one)
    /// executed, whatever batch they attached it to.
    executed_votes: std::collections::BTreeMap<
        plumb_wire::ClientId,
        (plumb_wire::ReqNo, std::collections::BTreeSet<ExecId>),
    >,
    /// Cache intervals found on disk at recovery that are already outside the kept window:
    /// deleted on `Event::Start` (the constructor cannot emit actions).
    stale_on_disk: Vec<u64>,
    /// FETCHes for requests this replica has not received yet, answered when they arrive.
    parked: ordered::ParkedFetches,
    /// Per client, the request after its pending one, received before the pending one was
    /// known to be ordered: handled when it is.
    deferred: BTreeMap<ClientId, (plumb_wire::Life, plumb_wire::ReqNo, Vec<u8>)>,
    /// Per client, the stranded pending requests superseded by other operations under their
    /// number (`request.rs`), at most [`request::MAX_SUPERSEDED`], durable in `auth/sup/{c}`:
    /// once their number is ordered they move to the command cache, and go with its interval.
    superseded: BTreeMap<ClientId, Vec<Pending>>,
    /// Clients caught sending what no correct client sends: refused until their entry expires.
    blacklist: blacklist::Blacklist,
    /// AUTH-REQs built since the last sync began: they go to the order replicas together, in
    /// one AUTH-REQS behind the sync that makes their bodies durable ([`Stage::before_sync`]).
    unsent: Vec<plumb_wire::Vouched>,
}

impl AuthReplica {
    pub fn new(ctx: StageContext, recovered: Recovered) -> AuthReplica {
        let cfg = ctx.config.clone();
        let q = cfg.quorums;
        let mut replica = AuthReplica {
            ctx,
            cfg,
            q,
            counters: Counters::default(),
            now: 0,
            last_sent: BTreeMap::new(),
            pending: BTreeMap::new(),
            cache: CommandCache::default(),
            highest_ordered: None,
            votes: CompletionVotes::default(),
            executed_votes: Default::default(),
            stale_on_disk: Vec::new(),
            parked: Default::default(),
            deferred: BTreeMap::new(),
            superseded: BTreeMap::new(),
            blacklist: Default::default(),
            unsent: Vec::new(),
        };
        replica.recover(recovered);
        replica
    }

    /// Clients with a request authenticated but not yet known to be ordered.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    /// FETCHes waiting for their request.
    pub fn parked_fetches(&self) -> usize {
        self.parked.len()
    }

    /// Bodies of ordered requests held for the execution stage.
    pub fn cached_bodies(&self) -> usize {
        self.cache.len()
    }

    /// Clients currently blacklisted (some entries may have expired unasked).
    pub fn blacklisted(&self) -> usize {
        self.blacklist.len()
    }

    /// The request number of the last request authenticated for `client`, if any.
    pub fn last_sent_nc(&self, client: ClientId) -> Option<ReqNo> {
        self.last_sent.get(&client).map(|l| l.core.nc)
    }

    /// Steps 0 and 1 of the filter pipeline (seed 004 Figure 3.4: cheapest checks first). The
    /// blacklist reads only the header. Then `open` checks the receiver, looks up the sender's
    /// key (an unknown client fails here, LS6), checks the MAC, and only then decodes the body.
    /// Then dispatch on who sent what: each stage sends this replica exactly one kind of
    /// message per role.
    fn on_frame(&mut self, frame: &[u8], out: &mut Vec<Action>) {
        if let Ok(Principal::Client(c)) = plumb_wire::Envelope::parse(frame).map(|e| e.sender) {
            if self.blacklist.refuses(c, self.now) {
                self.counters.dropped(DropReason::Blacklisted);
                return;
            }
        }
        let (from, msg) = match self.ctx.keys.open(frame) {
            Ok(opened) => opened,
            Err(e) => {
                self.counters.dropped(DropReason::from(&e));
                // A valid MAC over a body that does not decode: the client itself sent it.
                if let WireError::Malformed(Principal::Client(c), _) = e {
                    self.blacklist_client(c, "blacklisted-malformed");
                }
                return;
            }
        };
        match (from, msg) {
            (Principal::Client(c), Message::Request { life, nc, op }) => {
                self.on_request(c, life, nc, op, out)
            }
            (Principal::Client(c), _) => {
                self.counters.dropped(DropReason::Unexpected);
                self.blacklist_client(c, "blacklisted-unexpected");
            }
            (Principal::Exec(e), Message::BatchComplete { seq, executed }) => {
                self.on_batch_complete(e, seq, executed, out)
            }
            (
                Principal::Exec(e),
                Message::Fetch {
                    seq,
                    client,
                    nc,
                    digest,
                },
            ) => self.on_fetch(e, seq, client, nc, digest, out),
            _ => self.counters.dropped(DropReason::Unexpected),
        }
    }

    /// Refuse `client` for `blacklist_us`: it sent, under its own key, what no correct client
    /// sends. `reason` is the counter, `blacklisted-<why>`.
    fn blacklist_client(&mut self, client: ClientId, reason: &'static str) {
        self.counters.add(reason);
        self.blacklist.add(client, self.now, self.cfg.blacklist_us);
        // Its held next request goes too: nothing more from it is acted on.
        self.deferred.remove(&client);
    }

    fn send(&mut self, to: Principal, msg: &Message, out: &mut Vec<Action>) {
        match self.ctx.keys.seal(to, msg) {
            Some(frame) => out.push(Action::Send { to, frame }),
            None => self.counters.add("send-no-key"),
        }
    }

    fn send_to_order(&mut self, msg: &Message, out: &mut Vec<Action>) {
        let to = OrderId::all(self.q.order).map(Principal::Order);
        for (to, frame) in self.ctx.keys.seal_each(to, msg) {
            match frame {
                Some(frame) => out.push(Action::Send { to, frame }),
                None => self.counters.add("send-no-key"),
            }
        }
    }

    /// Send the AUTH-REQs built since the last sync began: one alone as an AUTH-REQ, more in
    /// AUTH-REQS of at most [`plumb_wire::AUTH_REQS_MAX`] requests and about a megabyte each.
    fn send_unsent(&mut self, out: &mut Vec<Action>) {
        const BUNDLE_BYTES: usize = 1 << 20;
        let mut unsent = std::mem::take(&mut self.unsent).into_iter().peekable();
        while let Some(first) = unsent.next() {
            if unsent.peek().is_none() {
                let msg = Message::AuthReq {
                    core: first.core,
                    macs: first.macs,
                };
                self.send_to_order(&msg, out);
                break;
            }
            let mut bytes = vouched_bytes(&first);
            let mut reqs = vec![first];
            while let Some(next) = unsent.next_if(|v| {
                reqs.len() < plumb_wire::AUTH_REQS_MAX && bytes + vouched_bytes(v) <= BUNDLE_BYTES
            }) {
                bytes += vouched_bytes(&next);
                reqs.push(next);
            }
            self.counters.add_n("auth-reqs-bundled", reqs.len() as u64);
            self.send_to_order(&Message::AuthReqs { reqs }, out);
        }
    }

    /// Delete cache intervals recovery found already outside the kept window.
    fn on_start(&mut self, out: &mut Vec<Action>) {
        // Requests recovered as pending wait anew for their stranded time from now.
        for p in self.pending.values_mut() {
            p.since = self.now;
        }
        for interval in std::mem::take(&mut self.stale_on_disk) {
            out.push(Action::Store(StoreOp::DeletePrefix {
                prefix: cached_prefix(interval),
            }));
        }
    }
}

impl Stage for AuthReplica {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        self.now = now;
        match event {
            Event::Start => self.on_start(out),
            Event::Receive(frame) => self.on_frame(&frame, out),
            // The stage sets no timers: retransmissions are driven by clients (§5.7.2).
            Event::Timer(_) => self.counters.add("unexpected-timer"),
        }
    }

    fn before_sync(&mut self, now: Micros, out: &mut Vec<Action>) {
        self.now = now;
        self.send_unsent(out);
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

/// About how many bytes `v` adds to an AUTH-REQS.
fn vouched_bytes(v: &plumb_wire::Vouched) -> usize {
    let body = match &v.core.body {
        plumb_wire::Body::Inline(op) => op.len(),
        plumb_wire::Body::Digest(_) => 32,
    };
    body + 16 * v.macs.len() + 64
}
