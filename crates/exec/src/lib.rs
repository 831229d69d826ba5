//! The execution stage (seed 004 §5.3.2, §5.7.4 Figure 5.9, §6.3 Figure 6.6). See
//! docs/protocol.md.
//!
//! An execution replica learns each batch from `r + 1` matching committed NEXT-BATCH messages
//! (one correct order replica among them), fetches the bodies of large requests from the
//! authentication stage, delivers batches to the application strictly in sequence order with
//! the agreed time and seed, caches and sends the last reply per client, checkpoints every
//! `CP_interval` batches (persisted before its token leaves), and loads a checkpoint named by
//! `r + 1` matching LOAD-CPs, from its disk or from a peer, verified against the token.
//!
//! One file per concern: `learn.rs` (NEXT-BATCH votes, bodies), `execute.rs` (delivery,
//! replies, checkpoints taken), `transfer.rs` (LOAD-CP, state transfer, serving peers),
//! `checkpoint.rs` (the execution checkpoint and its encoding), `recovery.rs` (restart),
//! `gate.rs` (no read-only answers after a start until caught up with the order stage),
//! `objects.rs` (incremental object checkpoints on disk, for an application with objects),
//! `report.rs` (what it reports of each batch: replies, write set, write history),
//! `object_transfer.rs` (object-level state transfer: fetch only what differs, serve peers),
//! `partial.rs` (holding part of the objects: fetch a batch's objects before executing it).

mod checkpoint;
mod divergence;
mod execute;
mod executed;
mod gate;
mod learn;
mod object_transfer;
mod objects;
mod partial;
mod pause;
mod recovery;
mod report;
mod serving;
mod sketches;
mod transfer;

#[cfg(test)]
mod tests;

pub use checkpoint::{checkpoint_key, CachedReply, ExecCheckpoint, ObjectsRoot, CHECKPOINT_PREFIX};
pub use objects::{DELTA_PREFIX, OBJECT_PREFIX};

use learn::VoteKind;
use plumb_app::{Application, Command};
use plumb_config::{ProtocolConfig, Quorums};
use plumb_core::{
    Action, Counters, DropReason, Event, Micros, Observation, Recovered, Rng, Stage, StageContext,
    StoreOp, TimerId,
};
use plumb_crypto::Digest;
use plumb_wire::{
    request_id, AuthId, ClientId, ExecId, Life, Message, OrderId, Principal, ReqNo, Seq,
};

/// Periodic catch-up: ask the order stage for missed batches, re-ask peers during a transfer.
const CATCH_UP: TimerId = TimerId(1);
/// Re-fetch missing request bodies from every authentication replica.
const FETCH: TimerId = TimerId(2);

/// A checkpoint this replica holds (on disk and in memory), to load or to serve to peers.
#[derive(Debug, Clone)]
struct Held {
    token: Digest,
    bytes: Vec<u8>,
    /// The checkpoint's object tree (objects and their digests), for an application with
    /// objects: shared with later trees except where objects changed (copy-on-write).
    tree: Option<plumb_objects::ObjectTree>,
}

/// State-transfer requests held per peer while busy; more are dropped (the peer asks again).
const DEFERRED_TRANSFER_MAX: usize = 64;

pub struct ExecReplica<A: Application> {
    ctx: StageContext,
    me: ExecId,
    app: A,
    counters: Counters,
    now: Micros,

    /// What execution has done: the next batch, agreed time, the last reply and next push id
    /// per client; with the application's state, what a checkpoint captures (executed.rs).
    executed: executed::Executed,

    /// Votes for batches, batches learned and their bodies being fetched (learn.rs).
    learning: learn::Learning,

    /// Checkpoints held, LOAD-CP votes and a load in progress (transfer.rs).
    transfer: transfer::Transfer,
    /// Divergence from the agreed checkpoints: what was executed, a roll-back in progress.
    divergence: divergence::Divergence,

    /// What was served to clients and lagging peers, and when: rate limits (serving.rs).
    serving: serving::Serving,

    // --- objects (objects.rs): `Some` if the application implements them
    objects: Option<objects::ObjectsState>,

    /// What recovery found on the disk, reported on Start (recovery.rs).
    found: recovery::Found,

    // --- read-only gate (gate.rs): closed from construction (every start) until caught up
    gate: Option<gate::Gate>,
    /// Probe nonces.
    rng: Rng,

    // --- D-Prophecy (sketches.rs): digests of the last ordered answers to reads
    sketches: sketches::SketchHistory,

    /// What this replica reports of each batch it executes (report.rs).
    reports: report::Reports,

    /// ZZ: order replicas that sent SLEEP, for the sleeper stage to count (pause.rs).
    sleep_asks: Vec<(OrderId, Seq)>,
}

impl<A: Application> ExecReplica<A> {
    /// The protocol configuration, shared by every stage of the node.
    fn cfg(&self) -> &ProtocolConfig {
        &self.ctx.config
    }

    /// Quorum sizes, from `u` and `r`.
    fn q(&self) -> &Quorums {
        &self.ctx.config.quorums
    }

    pub fn new(ctx: StageContext, app: A, recovered: Recovered) -> ExecReplica<A> {
        let me = match ctx.keys.me() {
            Principal::Exec(i) => i,
            _ => ExecId(u16::MAX),
        };
        let mut replica = ExecReplica {
            me,
            app,
            counters: Counters::default(),
            now: 0,
            executed: executed::Executed::default(),
            learning: learn::Learning::default(),
            transfer: transfer::Transfer::default(),
            divergence: Default::default(),
            serving: serving::Serving::default(),
            objects: None,
            found: recovery::Found::default(),
            gate: Some(gate::Gate::default()),
            rng: Rng::new(ctx.seed),
            sketches: sketches::SketchHistory::default(),
            reports: report::Reports::default(),
            sleep_asks: Vec::new(),
            ctx,
        };
        let bits = replica.app.objects().map(|o| o.object_id_bits());
        if let Some(bits) = bits {
            replica.objects = objects::ObjectsState::new(bits);
            if replica.objects.is_none() {
                replica.counters.add("app-object-bits-unsupported");
            }
            // Objects the application starts with (its initial state) belong to every tree.
            replica.flush_objects();
        }
        if !recovered.is_empty() {
            replica.recover(recovered);
        }
        replica
    }

    pub fn app(&self) -> &A {
        &self.app
    }

    /// The next batch this replica will execute.
    pub fn next_seq(&self) -> Seq {
        self.executed.next_seq
    }

    /// Agreed time of the last executed non-null batch (0 before any).
    pub fn agreed_time(&self) -> Micros {
        self.executed.agreed_time
    }

    /// Sequence numbers of the checkpoints this replica holds.
    pub fn held_checkpoints(&self) -> Vec<Seq> {
        self.transfer.held.keys().copied().collect()
    }

    fn interval(&self) -> u64 {
        self.cfg().checkpoint_interval.max(1)
    }

    /// Every message but a checkpoint token leaves at once, ahead of a checkpoint still being
    /// synced: replies, reports, fetches and the rest say what ordered batches did, which a
    /// replica says again after a crash (it executes them again from the checkpoint it
    /// recovers; the order stage keeps every batch above the stable checkpoint, which needs
    /// durable tokens). Holding them behind the sync stalled every reply, body fetch and
    /// report of a replica for as long as its checkpoint took to sync (docs/protocol.md).
    fn send(&mut self, to: Principal, msg: &Message, out: &mut Vec<Action>) {
        let frame = self.ctx.keys.seal(to, msg);
        self.push_sent(to, frame, out);
    }

    /// `msg` to each of `to`, encoded once.
    fn send_each(
        &mut self,
        to: impl IntoIterator<Item = Principal>,
        msg: &Message,
        out: &mut Vec<Action>,
    ) {
        for (to, frame) in self.ctx.keys.seal_each(to, msg) {
            self.push_sent(to, frame, out);
        }
    }

    /// A sealed frame leaves; `None` (no key for `to`) is dropped and counted.
    fn push_sent(&mut self, to: Principal, frame: Option<Vec<u8>>, out: &mut Vec<Action>) {
        match frame {
            Some(frame) => out.push(Action::SendUnsynced { to, frame }),
            None => self.counters.dropped(DropReason::SendUnknownPeer),
        }
    }

    fn send_to_order(&mut self, msg: &Message, out: &mut Vec<Action>) {
        let to = OrderId::all(self.q().order).map(Principal::Order);
        self.send_each(to, msg, out);
    }

    /// CP-TOKEN of checkpoint `seq` to every order replica, once the syncs asked for before it
    /// are done (ES4): the order stage must never learn a token that no correct replica can
    /// produce after a power loss.
    fn send_token(&mut self, seq: Seq, token: Digest, out: &mut Vec<Action>) {
        let msg = Message::CpToken { seq, token };
        for o in OrderId::all(self.q().order) {
            let to = Principal::Order(o);
            match self.ctx.keys.seal(to, &msg) {
                #[cfg(feature = "sabotage")]
                Some(frame)
                    if plumb_core::sabotage::on(
                        plumb_core::sabotage::Sabotage::TokenBeforeSync,
                    ) =>
                {
                    out.push(Action::SendUnsynced { to, frame })
                }
                Some(frame) => out.push(Action::Send { to, frame }),
                None => self.counters.dropped(DropReason::SendUnknownPeer),
            }
        }
    }

    fn send_to_auth(&mut self, msg: &Message, out: &mut Vec<Action>) {
        let to = AuthId::all(self.q().auth).map(Principal::Auth);
        self.send_each(to, msg, out);
    }

    fn send_to_exec_peers(&mut self, msg: &Message, out: &mut Vec<Action>) {
        let me = self.me;
        let to = ExecId::all(self.q().exec).filter(|e| *e != me);
        self.send_each(to.map(Principal::Exec), msg, out);
    }

    fn persist(&mut self, key: String, value: Vec<u8>, out: &mut Vec<Action>) {
        out.push(Action::Store(StoreOp::Put { key, value }));
        out.push(Action::Store(StoreOp::Sync));
    }

    /// LAST-EXEC: tell every order replica which batch we need next (EL4, OL3/OL4).
    fn send_last_exec(&mut self, out: &mut Vec<Action>) {
        let msg = Message::LastExec {
            next: self.executed.next_seq,
        };
        self.counters.add("last-exec-sent");
        self.send_to_order(&msg, out);
    }

    fn on_start(&mut self, out: &mut Vec<Action>) {
        for key in std::mem::take(&mut self.found.unusable_keys) {
            out.push(Action::Store(StoreOp::Delete { key }));
        }
        for prefix in std::mem::take(&mut self.found.unusable_prefixes) {
            out.push(Action::Store(StoreOp::DeletePrefix { prefix }));
        }
        if let Some((seq, token)) = self.found.checkpoint.take() {
            out.push(Action::Observe(Observation::CheckpointLoaded {
                seq,
                token,
            }));
        }
        // Replay from the checkpoint (ES5) happens through the normal catch-up path.
        self.send_last_exec(out);
        self.probe(out);
        out.push(Action::SetTimer {
            id: CATCH_UP,
            after: self.cfg().catch_up_us,
        });
    }

    /// Ask again for whatever we are missing: batches (a gap, or votes that never reach a
    /// quorum), and checkpoint state during a transfer.
    fn on_catch_up_tick(&mut self, out: &mut Vec<Action>) {
        out.push(Action::SetTimer {
            id: CATCH_UP,
            after: self.cfg().catch_up_us,
        });
        if self.transfer.loading.is_some() {
            self.object_transfer_tick();
            self.request_transfer(out);
        }
        if self.holds_part() {
            self.on_demand_tick(out);
        }
        self.send_reports(true, out);
        self.serve_deferred_transfer(out);
        self.probe_tick(out);
        // The application's own totals, for the metrics: here, a few times a second, rather
        // than after every batch on the request path.
        for (name, total) in self.app.counters() {
            self.counters.set(name, total);
        }
        let idle = self.learning.learned_total == self.learning.learned_at_last_tick;
        let stalled = !self.learning.votes.is_empty() && idle;
        self.learning.learned_at_last_tick = self.learning.learned_total;
        // Holding part of the state, not executing for a whole period while learning on: the
        // next batch waits for objects, which the replica cannot get once its peers no longer
        // hold the checkpoint it asks them for (they keep two intervals). LAST-EXEC lets the
        // order stage tell it to load the stable checkpoint if it fell that far behind (OL4);
        // before, such a replica stopped for good (`plumb bench recovery --sizes 400M`: stuck
        // at batch 9605 while the others went on past 19 000).
        let next = self.executed.next_seq;
        let stuck = self.holds_part()
            && next == self.learning.next_at_last_tick
            && self.learning.learned.contains_key(&next);
        self.learning.next_at_last_tick = next;
        // Idle too: batches sent while this replica was cut off leave no trace here, and the
        // order stage answers a LAST-EXEC only with what we lack.
        if self.has_gap() || stalled || idle || stuck {
            self.send_last_exec(out);
        }
        if idle {
            // A lost CP-TOKEN can hold the order stage's window shut: repeat the newest one
            // while nothing moves. Order replicas ignore tokens they already learned.
            let newest = self.transfer.held.iter().next_back();
            // Never a token of a checkpoint held in part (partial.rs).
            if let Some((seq, held)) =
                newest.filter(|(_, h)| h.tree.as_ref().is_none_or(|t| t.is_complete()))
            {
                let (seq, token) = (*seq, held.token);
                self.send_token(seq, token, out);
            }
        }
    }

    /// Idle: nothing learned waits to be executed, or nothing was learned since the last tick.
    fn idle(&self) -> bool {
        self.learning.learned.is_empty()
            || self.learning.learned_total == self.learning.learned_at_last_tick
    }

    /// Answer the state-transfer requests that waited, if idle now.
    fn serve_deferred_transfer(&mut self, out: &mut Vec<Action>) {
        if self.serving.deferred_transfer.is_empty() || !self.idle() {
            return;
        }
        for (e, asks) in std::mem::take(&mut self.serving.deferred_transfer) {
            for msg in asks {
                match msg {
                    Message::FetchExecCp { seq } => self.on_fetch_exec_cp(e, seq, out),
                    Message::FetchState { token } => self.on_fetch_state(e, token, out),
                    Message::FetchObjectNodes { seq, nodes } => {
                        self.on_fetch_object_nodes(e, seq, nodes, out)
                    }
                    Message::FetchObjects { seq, ids, proofs } => {
                        self.on_fetch_objects(e, seq, ids, proofs, out)
                    }
                    Message::FetchStateUpdate { from, to } => {
                        self.on_fetch_state_update(e, from, to, out)
                    }
                    _ => {}
                }
            }
        }
    }

    /// Something above `next_seq` is known while `next_seq` itself is not learned.
    fn has_gap(&self) -> bool {
        let next = self.executed.next_seq;
        !self.learning.learned.contains_key(&next)
            && (self.learning.votes.range(next + 1..).next().is_some()
                || self.learning.learned.range(next + 1..).next().is_some())
    }

    fn on_frame(&mut self, frame: &[u8], out: &mut Vec<Action>) {
        match self.ctx.keys.open(frame) {
            Ok((from, msg)) => self.on_message(from, msg, out),
            Err(e) => self.counters.dropped(DropReason::from(&e)),
        }
    }

    fn on_message(&mut self, from: Principal, msg: Message, out: &mut Vec<Action>) {
        let q = *self.q();
        match (from, msg) {
            (Principal::Order(o), msg) if o.index() < q.order => self.on_order_message(o, msg, out),
            (_, Message::ExecProbeReply { .. }) => {
                self.counters.dropped(DropReason::ProbeReplyNotOrder)
            }
            (
                Principal::Auth(a),
                Message::Command {
                    seq,
                    client,
                    nc,
                    op,
                },
            ) if a.index() < q.auth => self.on_command(a, seq, client, nc, op, out),
            (Principal::Exec(e), msg) if e.index() < q.exec && e != self.me => {
                self.on_peer_message(e, msg, out)
            }
            (Principal::Client(c), Message::ReadOnly { life, nc, op }) => {
                self.on_read_only(c, life, nc, op, out)
            }
            (
                Principal::Client(c),
                Message::FastRead {
                    life,
                    nc,
                    executor,
                    op,
                },
            ) => self.on_fast_read(c, life, nc, executor, op, out),
            (Principal::Client(c), Message::EarlyRequest { life, nc, op }) => {
                self.on_early_request(c, life, nc, op, out)
            }
            (Principal::Client(c), Message::LastRequestQuery) => self.on_last_request_query(c, out),
            _ => self.counters.dropped(DropReason::Unexpected),
        }
    }

    fn on_order_message(&mut self, o: OrderId, msg: Message, out: &mut Vec<Action>) {
        match msg {
            Message::NextBatch { seq, batch, .. } => {
                self.on_next_batch(o, seq, batch, VoteKind::Committed, out)
            }
            Message::TentativeBatch { view, seq, batch } => {
                self.on_next_batch(o, seq, batch, VoteKind::Tentative(view), out)
            }
            Message::Retransmit { client, next_seq } => self.on_retransmit(client, next_seq, out),
            Message::LoadCp { seq, token } => self.on_load_cp(o, seq, token, out),
            Message::ExecProbeReply { nonce, seq } => self.on_probe_reply(o, nonce, seq),
            Message::Sleep { seq } => self.on_sleep(o, seq),
            _ => self.counters.dropped(DropReason::Unexpected),
        }
    }

    fn on_peer_message(&mut self, e: ExecId, msg: Message, out: &mut Vec<Action>) {
        match msg {
            Message::FetchExecCp { .. }
            | Message::FetchState { .. }
            | Message::FetchObjectNodes { .. }
            | Message::FetchObjects { proofs: false, .. }
            | Message::FetchStateUpdate { .. }
                if !self.idle() =>
            {
                // Seed 004 §3.4.2 idle check: state transfer for a lagging peer waits while
                // this replica has batches to execute and is executing them. Objects fetched
                // with proofs are served at once (within the per-peer byte budget): they are
                // what a replica holding part of the state needs before it can execute a
                // batch (docs/objects.md "Partial state"), so making it wait for this
                // replica's idle time would stall it for as long as the load lasts.
                self.counters.add("state-transfer-deferred");
                let waiting = self.serving.deferred_transfer.entry(e).or_default();
                if waiting.len() < DEFERRED_TRANSFER_MAX {
                    waiting.push(msg);
                }
            }
            Message::FetchExecCp { seq } => self.on_fetch_exec_cp(e, seq, out),
            Message::ExecCpState { seq, state } => self.on_exec_cp_state(e, seq, state, out),
            Message::FetchState { token } => self.on_fetch_state(e, token, out),
            Message::State { token, data } => self.on_state(token, data, out),
            Message::FetchObjectNodes { seq, nodes } => {
                self.on_fetch_object_nodes(e, seq, nodes, out)
            }
            Message::ObjectNodes { seq, nodes } => self.on_object_nodes(e, seq, nodes, out),
            Message::FetchObjects { seq, ids, proofs } => {
                self.on_fetch_objects(e, seq, ids, proofs, out)
            }
            Message::Objects { seq, objects } => self.on_objects(e, seq, objects, out),
            Message::FetchStateUpdate { from, to } => self.on_fetch_state_update(e, from, to, out),
            Message::StateUpdate { from, to, writes } => {
                self.on_state_update(e, from, to, writes, out)
            }
            _ => self.counters.dropped(DropReason::Unexpected),
        }
    }

    /// Read-only optimisation (§5.5): answer from the current state, saying how far it is —
    /// unless this replica may be behind what it executed before a restart (gate.rs). The
    /// answer names the read's identity, life included.
    fn on_read_only(
        &mut self,
        c: ClientId,
        life: Life,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        if !self.read_only_ready() {
            self.counters.add("read-only-not-ready");
            return;
        }
        if !self.holds_objects_of(&op) {
            // Its other replicas answer, or the client orders the read.
            self.counters.add("read-only-objects-missing");
            return;
        }
        let result = self.app.execute_read_only(c, &op);
        let msg = Message::ReadOnlyReply {
            nc,
            req: request_id(c, life, nc, Digest::of(&op)),
            result,
            executed: self.executed.next_seq.minus(1),
        };
        self.send(Principal::Client(c), &msg, out);
    }

    /// D-Prophecy (seed 000 §3.2): the executor answers as a read-only request; every other
    /// replica answers the digest its history holds for the operation, and never executes it.
    fn on_fast_read(
        &mut self,
        c: ClientId,
        life: Life,
        nc: ReqNo,
        executor: ExecId,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        self.sketches.activate();
        if executor == self.me {
            self.on_read_only(c, life, nc, op, out);
            return;
        }
        let digest = Digest::of(&op);
        let msg = Message::SketchReply {
            nc,
            req: request_id(c, life, nc, digest),
            sketch: self.sketches.get(&digest),
        };
        self.send(Principal::Client(c), &msg, out);
    }

    /// Client speculation (seed 001, docs/speculation.md): execute ordered request `nc` at once
    /// on the application's speculative copy of the state and answer early. Nothing here
    /// touches the replicated state or the reply cache: the request is executed for real when
    /// it is ordered. A request already executed gets no early reply (its ordered reply is in
    /// the cache, and the client's retransmission fetches it); an application that does not
    /// speculate answers none.
    fn on_early_request(
        &mut self,
        c: ClientId,
        life: Life,
        nc: ReqNo,
        op: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        if nc <= self.executed.replies.get(&c).map_or(ReqNo::NONE, |r| r.nc) {
            self.counters.add("early-request-already-executed");
            return;
        }
        if !self.holds_objects_of(&op) {
            self.counters.add("early-request-objects-missing");
            return;
        }
        let req = request_id(c, life, nc, Digest::of(&op));
        let command = Command {
            client: c,
            nc,
            op: &op,
            request: req,
        };
        let Some(result) = self.app.execute_early(command) else {
            self.counters.add("early-request-not-speculating");
            return;
        };
        self.counters.add("early-reply");
        let msg = Message::EarlyReply { nc, req, result };
        self.send(Principal::Client(c), &msg, out);
    }

    /// A client that lost its record asks which number it last used (docs/protocol.md "Clients
    /// after a crash"). The reply table is replicated state, so `r + 1` matching-or-higher
    /// answers vouch for a number. One small answer per query, like a read-only request.
    fn on_last_request_query(&mut self, c: ClientId, out: &mut Vec<Action>) {
        let nc = self.executed.replies.get(&c).map_or(ReqNo::NONE, |r| r.nc);
        self.send(Principal::Client(c), &Message::LastRequest { nc }, out);
    }

    /// RETRANSMIT: the order stage saw client `client` retransmit. Catch up if the order stage
    /// is ahead (EL4); resend the cached reply and tell the authentication stage the request is
    /// done (EL3).
    fn on_retransmit(&mut self, client: ClientId, order_next: Seq, out: &mut Vec<Action>) {
        if !self.retransmit_allowed(client) {
            self.counters.add("retransmit-rate-limited");
            return;
        }
        if order_next > self.executed.next_seq {
            self.send_last_exec(out);
        }
        let Some(CachedReply {
            nc,
            req,
            result,
            at,
        }) = self.executed.replies.get(&client).cloned()
        else {
            return;
        };
        if self.cfg().zz && self.me.index() < self.q().active_exec() {
            // ZZ: the order replicas compare the actives' copies; a client that cannot get
            // r + 1 matching replies gets them relayed, or a sleeper is woken (docs/zz.md).
            let copy = Message::ReplyCopy {
                client,
                nc,
                req,
                result: result.clone(),
                at,
            };
            self.send_to_order(&copy, out);
        }
        self.send(
            Principal::Client(client),
            &Message::Reply {
                nc,
                req,
                result,
                at,
            },
            out,
        );
        let done = Message::BatchComplete {
            seq: self.executed.next_seq.minus(1),
            executed: vec![plumb_wire::Executed { client, nc }],
        };
        self.send_to_auth(&done, out);
    }

    /// At most one RETRANSMIT per client per `catch_up_us`. The table is pruned of expired
    /// entries when it grows, so a faulty order replica naming many clients cannot grow it
    /// without bound.
    fn retransmit_allowed(&mut self, client: ClientId) -> bool {
        let now = self.now;
        let period = self.cfg().catch_up_us;
        if self
            .serving
            .retransmit
            .get(&client)
            .is_some_and(|t| now < t.saturating_add(period))
        {
            return false;
        }
        let limit = RETRANSMIT_TABLE_MIN.max(2 * self.executed.replies.len());
        if self.serving.retransmit.len() >= limit {
            self.serving
                .retransmit
                .retain(|_, t| now < t.saturating_add(period));
            if self.serving.retransmit.len() >= limit {
                return false;
            }
        }
        self.serving.retransmit.insert(client, now);
        true
    }
}

/// The retransmission rate-limit table may always hold this many clients.
const RETRANSMIT_TABLE_MIN: usize = 1024;

impl<A: Application> Stage for ExecReplica<A> {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        self.now = now;
        match event {
            Event::Start => self.on_start(out),
            Event::Timer(CATCH_UP) => self.on_catch_up_tick(out),
            Event::Timer(FETCH) => self.on_fetch_tick(out),
            Event::Timer(_) => self.counters.dropped(DropReason::UnknownTimer),
            Event::Receive(frame) => self.on_frame(&frame, out),
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The learning ledger's (learn.rs).
    fn check_invariants(&self) -> Result<(), plumb_core::BrokenInvariant> {
        self.executed.check_invariants()?;
        self.learning.check_invariants(self.executed.next_seq)?;
        self.transfer
            .check_invariants(self.executed.next_seq, self.q().order)
    }
}
