//! The plumb client: call a replicated service from Rust.
//!
//! **To call a cluster, use [`net::Client`]** (async) or [`net::BlockingClient`] (module
//! [`net`], feature `net`, on by default); docs/client.md walks through it. The rest of this
//! crate is the client's pure protocol core, which those drive over TCP and the simulator
//! drives over its simulated network (it builds this crate without `net`, so without tokio).
//!
//! # The protocol core
//!
//! Seed 004 §5.3.4, §5.4.1, §5.5, §5.7.1, §6.4.2; see docs/protocol.md.
//!
//! A correct client numbers its ordered requests 1, 2, 3, ... (CS1), has at most one
//! outstanding (CS2), persists each before sending it (CS3) and resends it until it is answered
//! (CL1). The first transmission goes to the client's preferred quorum of authentication
//! replicas, retransmissions to all of them, with a timeout that doubles up to a cap and adapts
//! to the latency last observed (§5.7.1). Once a request needed a retransmission, the next
//! `ALL_AUTH_AFTER_RETRANSMIT` requests go to every authentication replica at once: a silent
//! replica in the preferred quorum would otherwise cost every request a timeout. A first
//! transmission unanswered after four times the usual latency is widened to the replicas
//! outside the preferred quorum, and the next requests go to all as after a retransmission,
//! so the first request to meet such a replica does not wait the whole timeout either. A
//! reply is accepted once `r + 1` execution replicas sent the same bytes *for the same
//! operation*: a reply names the request it answers (its identity digest
//! `H(client, life, nc, H(op))`, where the [`Life`] is drawn afresh at every start), so a
//! client that lost its record and reused a number never takes the answer to its previous
//! life's operation for the answer to its new one, even when both lives sent the same bytes.
//!
//! A client without a trustworthy record first learns the last number it used from the
//! execution replicas (`learn.rs`); `submit` waits for that.
//!
//! Read-only operations go straight to every execution replica and are accepted only when all of
//! them answer alike; otherwise they are reissued as ordered requests (`read_only.rs`). In ZZ
//! mode they are ordered at once (`ProtocolConfig::unanimous_reads_ordered` says why), and
//! the replicas a caller names for a fast read or an early reply are the actives. Push
//! events are delivered once `r + 1` execution replicas agree on them (`push.rs`). What the
//! client keeps on disk is in `record.rs`.

// Without `net` the crate documentation still names the network client it lacks.
#![cfg_attr(not(feature = "net"), allow(rustdoc::broken_intra_doc_links))]

mod learn;
#[cfg(feature = "net")]
#[warn(missing_docs)]
pub mod net;
mod push;
mod read_only;
mod record;
#[cfg(test)]
mod tests;

use learn::Learning;
use plumb_config::{ProtocolConfig, Quorums};
use plumb_core::{
    Action, Answered, Counters, DropReason, Event, Micros, Observation, Recovered, SlowRequest,
    Stage, StageContext, StallStage, StoreOp, TimerId, WaitReason,
};
use plumb_crypto::Digest;
use plumb_wire::{
    request_id, AuthId, ClientId, ExecId, Life, Message, OrderId, Position, Principal, ReqNo, View,
};
use push::{PushVote, PushVotes};
pub use read_only::Route;
use read_only::{ReadMode, ReadOnly, ReadOnlyPause};
use record::OutRecord;
use std::collections::HashMap;
use std::sync::Arc;

/// Fires when an ordered request has waited its current timeout: retransmit to everyone.
const RETRANSMIT: TimerId = TimerId(1);
/// Fires when a read-only request was not answered unanimously in time: order it instead.
const READ_ONLY_DEADLINE: TimerId = TimerId(2);
/// Fires when the last-request query has not been answered by enough replicas: ask again.
const LEARN: TimerId = TimerId(3);
/// Fires when an ordered request sent to the preferred quorum only has waited several times
/// the usual latency: send it to the other authentication replicas too.
const WIDEN: TimerId = TimerId(4);

/// The shortest wait before a first transmission is widened to every authentication replica.
const WIDEN_MIN_US: Micros = 20_000;

/// Returned by [`Client::submit`] while a request is outstanding, or one submitted while the
/// client learns its request number waits (CS2: closed loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientBusy;

/// The outstanding ordered request.
#[derive(Debug)]
struct Ordered {
    /// The life it was issued in: this one's, or the previous life's for a request resumed
    /// from the record (its retransmissions must be the same request).
    life: Life,
    nc: ReqNo,
    op: Vec<u8>,
    /// `H(client, life, nc, H(op))`: only replies naming it answer this request.
    req: Digest,
    /// When it was first sent: its latency sets the next request's base timeout.
    first_sent: Micros,
    /// Current retransmission timeout.
    timeout: Micros,
    /// Whether the retransmission timer fired for it: a slow request's reason.
    retransmitted: bool,
    /// Whether the widening timer sent it to the authentication replicas outside the
    /// preferred quorum.
    widened: bool,
    /// Execution replica -> its vote: what it last answered for `nc`.
    votes: HashMap<ExecId, Vote>,
    /// Execution replica -> the highest number it says is used by another request of this
    /// client (it answered a later number, or `nc` for another operation): evidence that `nc`
    /// is already used (see [`Client::on_number_used`]).
    used: HashMap<ExecId, ReqNo>,
    /// ZZ (docs/zz.md): order replica -> the reply it relayed, every active execution
    /// replica's copy alike; `r + 1` alike are accepted as the ordered answer.
    relayed: HashMap<OrderId, (Vec<u8>, Position)>,
    /// The execution replica asked for an early reply ([`Route::Speculative`]); cleared once
    /// its early reply arrived, so it is passed on at most once.
    early: Option<ExecId>,
    /// ZZ: every executing replica answered and no `r + 1` agree, so the request was resent at
    /// once for the order replicas to relay (at most once per request).
    relay_asked: bool,
}

/// One execution replica's vote for the outstanding request: the digest of the result it
/// answered and where it executed the request (correct replicas agree on both), with the
/// result's bytes if it sent them. A [`Message::ReplyDigest`] vouches for the digest only
/// (ODRC: the replica did not run the request).
#[derive(Debug)]
struct Vote {
    result: Digest,
    at: Position,
    bytes: Option<Vec<u8>>,
}

/// What a reply to an ordered request carries: the result, or only its digest.
#[derive(Debug)]
enum Answer {
    Full(Vec<u8>),
    Digest(Digest),
}

impl Answer {
    fn digest(&self) -> Digest {
        match self {
            Answer::Full(bytes) => Digest::of(bytes),
            Answer::Digest(d) => *d,
        }
    }
}

#[derive(Debug)]
enum Outstanding {
    Ordered(Ordered),
    ReadOnly(ReadOnly),
}

/// After a retransmission, this many requests go to every authentication replica at once
/// before the client tries its preferred quorum again.
pub const ALL_AUTH_AFTER_RETRANSMIT: u64 = 1000;

/// The largest operation a request carries: a frame is at most
/// [`plumb_wire::MAX_FRAME_BYTES`], and the envelope's header, encoding and MAC need room.
pub const MAX_OPERATION_BYTES: usize = plumb_wire::MAX_FRAME_BYTES - 64 * 1024;

/// One client identity's protocol core: a [`Stage`] that turns submitted operations, frames and
/// timer firings into sends, timers, record writes and completions. It does no I/O; a driver
/// ([`net::Client`] over TCP, or the simulator) carries out its actions.
pub struct Client {
    ctx: StageContext,
    cfg: Arc<ProtocolConfig>,
    q: Quorums,
    me: ClientId,
    /// This start's life, drawn from the stage seed (the operating system's randomness in
    /// production): part of the identity of every request and read it issues.
    life: Life,
    counters: Counters,
    /// Number of the next ordered request (CS1).
    next_nc: ReqNo,
    /// Number of the next read-only request; separate from `next_nc` because read-only
    /// requests bypass the authentication and order stages. It starts at 1 in every life:
    /// a read's identity includes the life, so a late answer to a read of an earlier life
    /// never counts for one of this life, and nothing needs to be kept on disk.
    next_ro: ReqNo,
    /// Reads that need every execution replica are ordered at once while this says so (a
    /// recent timeout: `read_only.rs`).
    read_only_pause: ReadOnlyPause,
    /// Timeout of a new request's first transmission (§5.7.1).
    base_timeout: Micros,
    /// Ordered requests' latency, a moving average (1/8 weight to the newest): how long to
    /// wait before widening a first transmission.
    usual_latency: Option<Micros>,
    /// Requests numbered up to this go to every authentication replica at once.
    all_auth_through: ReqNo,
    outstanding: Option<Outstanding>,
    /// Set while the client learns its last request number (no trustworthy record).
    learning: Option<Learning>,
    push: PushVotes,
    /// The last ordered request accepted: its number, identity and result digest. A reply to
    /// it that arrives later with another result is a divergent replica (docs/divergence.md).
    last_accepted: Option<(ReqNo, Digest, Digest)>,
}

impl Client {
    /// Build a client, resuming from its records if it ran before (CS3).
    pub fn new(ctx: StageContext, recovered: Recovered) -> Client {
        let cfg = ctx.config.clone();
        let me = match ctx.keys.me() {
            Principal::Client(c) => c,
            _ => 0,
        };
        let life = Life(plumb_core::Rng::new(ctx.seed).next_u64());
        #[cfg(feature = "sabotage")]
        let life =
            if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::SameBytesRetransmission) {
                Life(0)
            } else {
                life
            };
        let mut counters = Counters::default();
        let resumed = record::resume(&recovered, &mut counters);
        let base_timeout = cfg.client_retry_us;
        let outstanding = resumed.outstanding.map(|(life, nc, op)| {
            Outstanding::Ordered(Ordered {
                life,
                nc,
                req: request_id(me, life, nc, Digest::of(&op)),
                op,
                first_sent: 0,
                timeout: base_timeout,
                // Resent to everyone at start, like a retransmission.
                retransmitted: true,
                widened: false,
                votes: HashMap::new(),
                used: HashMap::new(),
                relayed: HashMap::new(),
                // Its early reply, if any, went to the previous life.
                early: None,
                relay_asked: false,
            })
        });
        let learning = (!resumed.trusted).then(|| Learning::new(base_timeout));
        Client {
            ctx,
            q: cfg.quorums,
            cfg,
            me,
            life,
            counters,
            next_nc: resumed.next_nc,
            next_ro: ReqNo(1),
            read_only_pause: ReadOnlyPause::default(),
            base_timeout,
            usual_latency: None,
            all_auth_through: ReqNo::NONE,
            outstanding,
            learning,
            push: PushVotes::default(),
            last_accepted: None,
        }
    }

    /// Issue an operation. Closed loop (CS2): refused while a request is outstanding.
    ///
    /// While the client still learns its request number (it started without a trustworthy
    /// record), the operation waits and is sent once the number is known; it counts as
    /// outstanding meanwhile.
    ///
    /// The answer arrives as [`Action::Complete`]. Its `nc` is the request number the operation
    /// was ordered under, or `0` when a read-only operation was answered unanimously without
    /// being ordered (request numbers start at 1, so 0 is never an ordered number). A read-only
    /// operation that falls back to the ordered path completes with its ordered number. Only
    /// one operation is ever outstanding, so the caller always knows which one completed.
    pub fn submit(
        &mut self,
        now: Micros,
        op: Vec<u8>,
        route: Route,
        out: &mut Vec<Action>,
    ) -> Result<(), ClientBusy> {
        if self.outstanding() {
            return Err(ClientBusy);
        }
        if let Some(learning) = &mut self.learning {
            learning.deferred = Some((op, route));
            return Ok(());
        }
        self.issue(now, op, route, out);
        Ok(())
    }

    fn issue(&mut self, now: Micros, op: Vec<u8>, route: Route, out: &mut Vec<Action>) {
        // Reads that need every execution replica's answer are ordered where that answer
        // cannot be had safely (ZZ mode: `ProtocolConfig::unanimous_reads_ordered` says why).
        if let Route::ReadOnly | Route::Sketched { .. } = route {
            if self.cfg.unanimous_reads_ordered().is_some() {
                self.counters.add("read-only-ordered-zz");
                self.start_ordered(now, op, None, out);
                return;
            }
            if self.read_only_pause.paused(now) {
                self.counters.add("read-only-paused");
                self.start_ordered(now, op, None, out);
                return;
            }
        }
        match route {
            Route::Ordered => self.start_ordered(now, op, None, out),
            Route::Speculative { early } => {
                let early = self.executing(early);
                self.start_ordered(now, op, Some(early), out)
            }
            Route::ReadOnly => self.start_read_only(op, ReadMode::Unanimous, out),
            Route::Fast { exec: e } => {
                let exec = self.executing(e);
                self.start_read_only(op, ReadMode::Fast { exec }, out)
            }
            Route::Sketched { executor } => {
                let executor = self.executing(executor);
                self.start_read_only(op, ReadMode::Sketched { executor }, out)
            }
        }
    }

    /// The execution replica a read or early reply named by the caller goes to: one that
    /// executes (`ProtocolConfig::executing_replicas`; in ZZ mode an active, since a sleeper
    /// answers nothing and a woken one is not known here). An index beyond those is a caller's
    /// mistake (`net::Client` refuses a sleeper); wrap it rather than ask one that never answers.
    fn executing(&mut self, e: ExecId) -> ExecId {
        let n = self.cfg.executing_replicas().max(1);
        if e.index() < n {
            return e;
        }
        if self.cfg.is_sleeper(e.0) {
            self.counters.add("read-target-asleep");
        }
        ExecId(e.0 % u16::try_from(n).unwrap_or(u16::MAX))
    }

    /// An operation is outstanding, or waits for the client to learn its request number.
    pub fn outstanding(&self) -> bool {
        self.outstanding.is_some() || self.learning.as_ref().is_some_and(|l| l.deferred.is_some())
    }

    /// The number of the outstanding ordered request, if one is outstanding: after a restart,
    /// the request resumed from the client's record (CS3).
    pub fn outstanding_request(&self) -> Option<ReqNo> {
        match &self.outstanding {
            Some(Outstanding::Ordered(o)) => Some(o.nc),
            _ => None,
        }
    }

    /// The number and identity (`H(client, life, nc, H(op))`) of the outstanding ordered
    /// request: what a speculative predicate on it names. Both change if the client renumbers
    /// the request (`on_number_used`).
    pub fn outstanding_identity(&self) -> Option<(ReqNo, Digest)> {
        match &self.outstanding {
            Some(Outstanding::Ordered(o)) => Some((o.nc, o.req)),
            _ => None,
        }
    }

    /// This start's life: part of the identity of every request and read it issues.
    pub fn life(&self) -> Life {
        self.life
    }

    /// The client is still learning its last request number (see `learn.rs`).
    pub fn learning(&self) -> bool {
        self.learning.is_some()
    }

    /// The number the next ordered request will carry (provisional while [`Client::learning`]).
    pub fn next_request_number(&self) -> ReqNo {
        self.next_nc
    }

    /// The timeout a new ordered request's first transmission waits before retransmitting.
    pub fn base_timeout(&self) -> Micros {
        self.base_timeout
    }

    // ---- ordered path

    /// Persist (CS3), then send to the preferred quorum and arm the retransmission timer; for
    /// a speculative request, first send its copy to execution replica `early` at once, ahead
    /// of the record's sync.
    ///
    /// The copy may leave before the record is durable because nothing it causes is ever
    /// committed or counted: the early replica executes it on its fork only, and the client
    /// takes the early reply only for the request identity `H(client, life, nc, H(op))` it is
    /// waiting for. If the client crashes before the sync and later reuses `nc` for another
    /// operation, the early replica refuses to answer the new copy early (same number, other
    /// operation) and the committed order drops the stale one from its fork. Waiting for the
    /// disk would put an `fdatasync` on the critical path of every speculative step, which is
    /// the one thing speculation exists to take off it.
    fn start_ordered(
        &mut self,
        now: Micros,
        op: Vec<u8>,
        early: Option<ExecId>,
        out: &mut Vec<Action>,
    ) {
        let (life, nc) = (self.life, self.next_nc);
        self.next_nc = nc.next();
        if let Some(e) = early {
            let msg = Message::EarlyRequest {
                life,
                nc,
                op: op.clone(),
            };
            let to = Principal::Exec(e);
            match self.ctx.keys.seal(to, &msg) {
                Some(frame) => out.push(Action::SendUnsynced { to, frame }),
                None => self.counters.add("send-no-key"),
            }
        }
        out.push(Action::Store(
            OutRecord::Outstanding {
                life,
                nc,
                op: op.clone(),
            }
            .put(),
        ));
        out.push(Action::Store(StoreOp::Sync));
        let msg = Message::Request {
            life,
            nc,
            op: op.clone(),
        };
        let widen = early.is_none() && nc > self.all_auth_through;
        let receivers = if let Some(e) = early {
            // Every identity of a speculative session sends through the same authentication
            // replicas (from the early replica's index on): each forwards requests in the order
            // it got them over one link, so the primary sees a session's requests vouched for
            // in the order they were sent, and a request is not ordered before the one its
            // predicate names (which would make replicas abort it). Even after a
            // retransmission: an identity sending to every replica would get its requests
            // vouched for sooner than its session's other lanes and overtake them.
            self.preferred_auth_from(e.index())
        } else if nc <= self.all_auth_through {
            self.all_auth()
        } else {
            self.preferred_auth()
        };
        for to in receivers {
            self.send(to, &msg, out);
        }
        out.push(Action::SetTimer {
            id: RETRANSMIT,
            after: self.base_timeout,
        });
        if widen {
            out.push(Action::SetTimer {
                id: WIDEN,
                after: self.widen_after(),
            });
        } else {
            out.push(Action::CancelTimer { id: WIDEN });
        }
        self.outstanding = Some(Outstanding::Ordered(Ordered {
            life,
            nc,
            req: request_id(self.me, life, nc, Digest::of(&op)),
            op,
            first_sent: now,
            timeout: self.base_timeout,
            retransmitted: false,
            widened: false,
            votes: HashMap::new(),
            used: HashMap::new(),
            relayed: HashMap::new(),
            early,
            relay_asked: false,
        }));
    }

    /// The preferred quorum (§6.4.2): `auth_preferred()` replicas from `c mod n_auth` on.
    fn preferred_auth(&self) -> Vec<Principal> {
        self.preferred_auth_from(self.me as usize)
    }

    /// `auth_preferred()` authentication replicas from `first mod n_auth` on.
    fn preferred_auth_from(&self, first: usize) -> Vec<Principal> {
        let n = self.q.auth;
        if n == 0 {
            return Vec::new();
        }
        let first = first % n;
        (0..self.q.auth_preferred().min(n))
            .filter_map(|i| AuthId::from_index((first + i) % n))
            .map(Principal::Auth)
            .collect()
    }

    fn all_auth(&self) -> Vec<Principal> {
        AuthId::all(self.q.auth).map(Principal::Auth).collect()
    }

    /// After a restart: resend the recovered request to everyone (it may have reached only
    /// some authentication replicas before the crash); without a trustworthy record, learn the
    /// last request number first.
    fn on_start(&mut self, now: Micros, out: &mut Vec<Action>) {
        if self.learning.is_some() {
            self.send_last_request_query(out);
            return;
        }
        let base = self.base_timeout;
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            return;
        };
        o.first_sent = now;
        o.timeout = base;
        let msg = Message::Request {
            life: o.life,
            nc: o.nc,
            op: o.op.clone(),
        };
        self.send_to_all_auth(&msg, out);
        out.push(Action::SetTimer {
            id: RETRANSMIT,
            after: base,
        });
    }

    /// How long a first transmission to the preferred quorum waits before it is widened: four
    /// times the usual latency, at least [`WIDEN_MIN_US`], at most half the first timeout
    /// (a quarter of it before any request completed).
    fn widen_after(&self) -> Micros {
        let first = self.cfg.client_retry_us;
        self.usual_latency
            .map_or(first / 4, |l| l.saturating_mul(4))
            .max(WIDEN_MIN_US)
            .min(first / 2)
            .max(1)
    }

    /// The outstanding request went to the preferred quorum only and is still unanswered
    /// after several times the usual latency: send it to the other authentication replicas
    /// too. The primary orders a request once `n_auth - u` replicas vouch for it, which is
    /// the whole preferred quorum: one crashed or cut-off replica in it held every request
    /// until the retransmission timeout (500 ms; a woken ZZ sleeper's client waited it
    /// out, docs/zz.md). As after a retransmission, the next `ALL_AUTH_AFTER_RETRANSMIT`
    /// requests go to every replica at once: with a node down, each would otherwise wait
    /// to be widened in turn. The timeout and its back-off are unchanged. A speculative
    /// lane's requests keep to their replicas (`submit`).
    fn on_widen_timer(&mut self, out: &mut Vec<Action>) {
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            return;
        };
        if o.widened || o.retransmitted || o.early.is_some() || o.nc <= self.all_auth_through {
            return;
        }
        o.widened = true;
        self.all_auth_through = o.nc.plus(ALL_AUTH_AFTER_RETRANSMIT);
        let msg = Message::Request {
            life: o.life,
            nc: o.nc,
            op: o.op.clone(),
        };
        let preferred = self.preferred_auth();
        self.counters.add("request-widened");
        for to in self.all_auth() {
            if !preferred.contains(&to) {
                self.send(to, &msg, out);
            }
        }
    }

    /// CL1 with exponential back-off capped at `client_retry_max_us` (§5.7.1).
    fn on_retransmit_timer(&mut self, out: &mut Vec<Action>) {
        let cap = self.cfg.client_retry_max_us;
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            return;
        };
        o.timeout = o.timeout.saturating_mul(2).min(cap).max(1);
        o.retransmitted = true;
        let timeout = o.timeout;
        self.all_auth_through = o.nc.plus(ALL_AUTH_AFTER_RETRANSMIT);
        let msg = Message::Request {
            life: o.life,
            nc: o.nc,
            op: o.op.clone(),
        };
        self.counters.add("retransmit");
        self.send_to_all_auth(&msg, out);
        out.push(Action::SetTimer {
            id: RETRANSMIT,
            after: timeout,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn on_reply(
        &mut self,
        now: Micros,
        exec: ExecId,
        nc: ReqNo,
        req: Digest,
        answer: Answer,
        at: Position,
        out: &mut Vec<Action>,
    ) {
        let quorum = self.q.reply();
        let result = answer.digest();
        let late = self
            .last_accepted
            .filter(|(n, r, _)| *n == nc && *r == req)
            .map(|(_, _, d)| d);
        if let Some(accepted) = late {
            // A reply after acceptance: it agrees, or its replica's state diverged.
            if result != accepted {
                self.counters.add("reply-divergent");
            }
            return;
        }
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            self.counters.add("stale-reply");
            return;
        };
        if nc < o.nc {
            self.counters.add("stale-reply");
            return;
        }
        if nc > o.nc {
            self.counters.add("reply-ahead");
            self.on_number_used(now, exec, nc, out);
            return;
        }
        if req != o.req {
            // The right number for another operation: an earlier life of this client used
            // `nc` (its record was lost), or the replica lies. Never a vote for our answer.
            self.counters.add("reply-other-operation");
            o.votes.remove(&exec);
            self.on_number_used(now, exec, nc, out);
            return;
        }
        // A later reply from the same replica replaces its earlier vote: one replica, one vote.
        // A digest of what it already sent in full keeps the bytes.
        let bytes = match answer {
            Answer::Full(bytes) => Some(bytes),
            Answer::Digest(_) => o
                .votes
                .remove(&exec)
                .filter(|v| v.result == result && v.at == at)
                .and_then(|v| v.bytes),
        };
        o.votes.insert(exec, Vote { result, at, bytes });
        // `r + 1` replicas vouch for the result, so one correct replica does; the bytes may
        // come from any of them that sent a full reply, since they hash to the digest. Digests
        // alone complete nothing: someone must send the bytes.
        let agreeing = o
            .votes
            .values()
            .filter(|v| v.result == result && v.at == at);
        if agreeing.clone().count() >= quorum {
            if let Some(bytes) = agreeing.filter_map(|v| v.bytes.clone()).next() {
                self.accept_ordered(now, bytes, at, out);
                return;
            }
            self.counters.add("reply-digests-wait-for-bytes");
        }
        // ZZ: every active answered and they disagree (one lies to this client while its
        // reports are right, and the sleeper sleeps): no reply that could still come from
        // them completes the request, but a relay does (docs/zz.md "A reply a client cannot
        // get"). Ask for it now rather than after the back-off.
        if self.cfg.zz && !o.relay_asked && o.votes.len() >= self.cfg.executing_replicas() {
            o.relay_asked = true;
            self.counters.add("zz-relay-asked");
            self.on_retransmit_timer(out);
        }
    }

    /// ZZ: order replica `from` relays a reply every active execution replica sent it alike
    /// (one correct among them): `r + 1` order replicas relaying the same, one of them
    /// correct, make it the answer.
    fn on_relayed_reply(
        &mut self,
        now: Micros,
        from: OrderId,
        (nc, req, result, at): (ReqNo, Digest, Vec<u8>, Position),
        out: &mut Vec<Action>,
    ) {
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            self.counters.add("stale-relayed-reply");
            return;
        };
        if nc != o.nc || req != o.req {
            self.counters.add("stale-relayed-reply");
            return;
        }
        o.relayed.insert(from, (result, at));
        let Some(mine) = o.relayed.get(&from) else {
            return;
        };
        let alike = o.relayed.values().filter(|v| *v == mine).count();
        if alike >= self.q.small() {
            let (result, at) = mine.clone();
            self.counters.add("relayed-reply-accepted");
            if let Some(Outstanding::Ordered(o)) = self.outstanding.take() {
                self.complete_ordered(now, o, result, at, out);
            }
        }
    }

    /// Complete the outstanding request with `result`, executed at `at`, that `r + 1`
    /// replicas voted for.
    fn accept_ordered(
        &mut self,
        now: Micros,
        result: Vec<u8>,
        at: Position,
        out: &mut Vec<Action>,
    ) {
        let Some(Outstanding::Ordered(o)) = self.outstanding.take() else {
            return;
        };
        self.complete_ordered(now, o, result, at, out);
    }

    /// Complete ordered request `o` with `result`, executed at `at`.
    fn complete_ordered(
        &mut self,
        now: Micros,
        o: Ordered,
        result: Vec<u8>,
        at: Position,
        out: &mut Vec<Action>,
    ) {
        // Replicas that answered something else: divergent (counted; the result stands on
        // r + 1 matching replies, one of them from a correct replica).
        let digest = Digest::of(&result);
        let divergent = o
            .votes
            .values()
            .filter(|v| v.result != digest || v.at != at)
            .count();
        self.counters.add_n("reply-divergent", divergent as u64);
        self.last_accepted = Some((o.nc, o.req, digest));
        let latency = now.saturating_sub(o.first_sent);
        if latency > self.cfg.slow_request_us {
            let reason = if o.retransmitted {
                WaitReason::Retransmission
            } else {
                WaitReason::Replies
            };
            self.counters.add(match reason {
                WaitReason::Retransmission => "slow-retransmission",
                _ => "slow-replies",
            });
            out.push(Action::Observe(Observation::SlowRequest(SlowRequest {
                stage: StallStage::Client,
                client: self.me,
                nc: o.nc,
                waited: latency,
                reason,
                view: View::ZERO,
            })));
        }
        // Only a request answered from its first transmission tells the usual latency: a
        // widened or retransmitted one's wait would raise the widening wait it is a multiple
        // of.
        if !o.widened && !o.retransmitted {
            self.usual_latency = Some(
                self.usual_latency
                    .map_or(latency, |l| l - l / 8 + latency / 8),
            );
        }
        out.push(Action::CancelTimer { id: WIDEN });
        // §5.7.1: max(initial timeout, observed latency); capped like every timeout.
        self.base_timeout = latency
            .max(self.cfg.client_retry_us)
            .min(self.cfg.client_retry_max_us);
        out.push(Action::CancelTimer { id: RETRANSMIT });
        out.push(Action::Store(OutRecord::Completed { nc: o.nc }.put()));
        out.push(Action::Observe(Observation::ClientAccepted {
            client: self.me,
            nc: o.nc,
            request: o.req,
        }));
        out.push(Action::Complete {
            nc: o.nc,
            result,
            answered: Answered::Ordered { at },
        });
    }

    /// An execution replica says number `used` (at least the outstanding one) belongs to
    /// another request of this client: it answered a higher number, or the outstanding number
    /// for another operation. A correct client only sees that after losing its record (a
    /// corrupt or lost disk, see `learn.rs`) and learning too low a number: the outstanding
    /// number is then already used, and the authentication stage would treat the request as a
    /// retransmission forever. Once `r + 1` replicas report numbers at least `y`, one of them is
    /// correct, so every number up to `y` is used (numbers are ordered consecutively, OS3):
    /// reissue the operation as `y + 1`. Our operation was not executed under any number up to
    /// `y`: a correct replica executed another one at our number, or executed numbers above it
    /// that the previous life issued before ours existed. Fewer reports (at most `r` faulty
    /// replicas) change nothing.
    fn on_number_used(&mut self, now: Micros, exec: ExecId, used: ReqNo, out: &mut Vec<Action>) {
        let quorum = self.q.reply();
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            return;
        };
        debug_assert!(used >= o.nc, "only numbers at or above the outstanding one");
        let seen = o.used.entry(exec).or_insert(used);
        *seen = (*seen).max(used);
        let mut reported: Vec<ReqNo> = o.used.values().copied().collect();
        reported.sort_unstable_by(|a, b| b.cmp(a));
        let Some(&used_upto) = reported.get(quorum.saturating_sub(1)) else {
            return;
        };
        let op = std::mem::take(&mut o.op);
        self.outstanding = None;
        self.next_nc = self.next_nc.max(used_upto.next());
        self.counters.add("renumbered");
        // Renumbered: the early reply asked for was for the old number.
        self.start_ordered(now, op, None, out);
    }

    /// An early reply from the replica the outstanding request asked (seed 001): passed on
    /// once, unverified, for the caller to speculate on. Anything else is dropped: an early
    /// reply never counts as a vote.
    fn on_early_reply(
        &mut self,
        exec: ExecId,
        nc: ReqNo,
        req: Digest,
        result: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let Some(Outstanding::Ordered(o)) = &mut self.outstanding else {
            self.counters.add("stale-early-reply");
            return;
        };
        if nc != o.nc || req != o.req || o.early != Some(exec) {
            self.counters.add("stale-early-reply");
            return;
        }
        o.early = None;
        self.counters.add("early-reply");
        out.push(Action::Early { nc, exec, result });
    }

    // ---- receiving

    fn on_receive(&mut self, now: Micros, frame: &[u8], out: &mut Vec<Action>) {
        let (from, msg) = match self.ctx.keys.open(frame) {
            Ok(opened) => opened,
            Err(e) => {
                self.counters.dropped(DropReason::from(&e));
                return;
            }
        };
        let exec = self.exec_index(from);
        match (msg, exec) {
            (
                Message::Reply {
                    nc,
                    req,
                    result,
                    at,
                },
                Some(e),
            ) => self.on_reply(now, e, nc, req, Answer::Full(result), at, out),
            (
                Message::ReplyDigest {
                    nc,
                    req,
                    result,
                    at,
                },
                Some(e),
            ) => self.on_reply(now, e, nc, req, Answer::Digest(result), at, out),
            (
                Message::ReadOnlyReply {
                    nc,
                    req,
                    result,
                    executed,
                },
                Some(e),
            ) => self.on_read_only_reply(now, e, nc, req, result, executed, out),
            (Message::SketchReply { nc, req, sketch }, Some(e)) => {
                self.on_sketch_reply(now, e, nc, req, sketch, out)
            }
            (Message::EarlyReply { nc, req, result }, Some(e)) => {
                self.on_early_reply(e, nc, req, result, out)
            }
            (Message::Push { event, payload }, Some(e)) => self.on_push(e, event, payload, out),
            (Message::LastRequest { nc }, Some(e)) => self.on_last_request(now, e, nc, out),
            (
                Message::RelayedReply {
                    nc,
                    req,
                    result,
                    at,
                },
                None,
            ) => match from {
                Principal::Order(o) if o.index() < self.q.order => {
                    self.on_relayed_reply(now, o, (nc, req, result, at), out)
                }
                _ => self.counters.dropped(DropReason::ReplyNotExec),
            },
            (
                Message::Reply { .. }
                | Message::ReplyDigest { .. }
                | Message::ReadOnlyReply { .. }
                | Message::SketchReply { .. }
                | Message::EarlyReply { .. }
                | Message::LastRequest { .. },
                None,
            ) => self.counters.dropped(DropReason::ReplyNotExec),
            (Message::Push { .. }, None) => self.counters.dropped(DropReason::PushNotExec),
            _ => self.counters.dropped(DropReason::Unexpected),
        }
    }

    /// The index of an execution replica of this cluster, if `p` is one.
    fn exec_index(&self, p: Principal) -> Option<ExecId> {
        match p {
            Principal::Exec(i) if i.index() < self.q.exec => Some(i),
            _ => None,
        }
    }

    fn on_push(&mut self, exec: ExecId, event: u64, payload: Vec<u8>, out: &mut Vec<Action>) {
        match self.push.vote(exec, event, payload, self.q.reply()) {
            PushVote::Deliver(payload) => out.push(Action::Pushed { event, payload }),
            PushVote::Pending => {}
            PushVote::Duplicate => self.counters.add("push-duplicate"),
            PushVote::Stale => self.counters.add("stale-push"),
        }
    }

    // ---- sending

    fn send(&mut self, to: Principal, msg: &Message, out: &mut Vec<Action>) {
        match self.ctx.keys.seal(to, msg) {
            Some(frame) => out.push(Action::Send { to, frame }),
            None => self.counters.add("send-no-key"),
        }
    }

    fn send_to_all_auth(&mut self, msg: &Message, out: &mut Vec<Action>) {
        for to in self.all_auth() {
            self.send(to, msg, out);
        }
    }
}

impl Stage for Client {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        match event {
            Event::Start => self.on_start(now, out),
            Event::Receive(frame) => self.on_receive(now, &frame, out),
            Event::Timer(RETRANSMIT) => self.on_retransmit_timer(out),
            Event::Timer(READ_ONLY_DEADLINE) => self.on_read_only_deadline(now, out),
            Event::Timer(LEARN) => self.on_learn_timer(out),
            Event::Timer(WIDEN) => self.on_widen_timer(out),
            Event::Timer(_) => self.counters.add("unknown-timer"),
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
