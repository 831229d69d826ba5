//! The order stage (seed 004 §5.7.3, §6.2): PBFT-style three-phase agreement with quorums from
//! `u` and `r`, order checkpoints that carry the learned execution checkpoint token, catch-up of
//! lagging replicas, and a view change with Ed25519-signed VIEW-CHANGE messages and the PBFT
//! selection rule for MAC-authenticated prepare certificates. docs/protocol.md has the argument.
//!
//! One file per concern: `agreement.rs` (requests, proposals, PRE-PREPARE/PREPARE/COMMIT),
//! `pending.rs` (requests waiting to be ordered, a sub-machine owning its state: AUTH-REQs
//! collected per client, the vouched order, what the primary may propose, and its invariants),
//! `proposer.rs` (the primary's next sequence number, batch times and batch timer),
//! `incarnations.rs` (ours and the highest each peer has shown),
//! `checkpoints.rs` (the checkpoint ledger, a sub-machine owning its state: execution tokens,
//! order checkpoints and votes, the stable checkpoint, the state being fetched, and its
//! invariants), `checkpoint.rs` (the replica's side of it: storing, sending, garbage
//! collection, catch-up, state transfer, the execution-stage link), `views.rs` (the view ledger, a
//! sub-machine owning its state: the view and whether it is entered, VIEW-CHANGEs held, the
//! NEW-VIEW entered, peers' views, the new primary's clock, and its invariants),
//! `view_change.rs` (triggers, verifying VIEW-CHANGE and NEW-VIEW, the decision, installing),
//! `monitor.rs` (heartbeat, throughput and fairness watch on the primary), `catch_up.rs`
//! (the catch-up ledger, a sub-machine: evidence of being behind, COMMITTED answers, asks of
//! lagging peers waiting for idle time), `recovery.rs` (restart from durable
//! records), `rejoin.rs` (a replica whose records are missing or damaged: new incarnation,
//! fence, no vote until a stable checkpoint above the fence), and for ZZ mode (docs/zz.md)
//! `sleepers.rs` (the watch over the active execution replicas, a sub-machine), `relay.rs`
//! (replies relayed for a client that cannot get `r + 1` alike, a sub-machine) and `wake.rs`
//! (the replica's side of both: WAKEs and RELAYED-REPLYs).

mod agreement;
mod agreement_log;
mod ahead;
mod catch_up;
mod checkpoint;
mod checkpoints;
mod divergence;
mod exec_reports;
mod incarnations;
mod monitor;
mod pending;
mod probe;
mod proposer;
mod recovery;
mod rejoin;
mod relay;
mod skip;
mod sleepers;
mod slot;
mod state;
mod suspicion;
mod view_change;
mod views;
mod wake;
mod watch;

pub use rejoin::{genesis, store_is_intact, GENESIS_KEY};
pub use slot::slot_key;
pub use state::OrderState;
pub use view_change::{decide, Decision};

use plumb_config::{ProtocolConfig, Quorums};
use plumb_core::{
    Action, BrokenInvariant, Counters, DropReason, Event, Micros, Observation, Recovered, Rng,
    Stage, StageContext, StoreOp, TimerId,
};
use plumb_wire::{ExecId, Message, OrderId, Principal, Seq, View};

const TICK: TimerId = TimerId(1);
const BATCH: TimerId = TimerId(2);

pub struct OrderReplica {
    /// Keys, the configuration (quorums from `u` and `r`) and the PRNG seed.
    ctx: StageContext,
    me: OrderId,
    rng: Rng,
    counters: Counters,

    /// The view, VIEW-CHANGEs, NEW-VIEW and views peers work in (views.rs).
    views: views::Views,

    // --- agreement
    /// Slots, how far pre-prepares are accepted, pre-prepares that wait (agreement_log.rs).
    log: agreement_log::AgreementLog,
    /// Applied state: every committed batch through `state.seq`.
    state: OrderState,
    /// The primary's next sequence number, batch time and batch timer (proposer.rs).
    proposer: proposer::Proposer,
    /// Requests vouched for by auth replicas, waiting to be ordered (pending.rs).
    pending: pending::Pending,

    // --- checkpoints and catch-up
    /// Execution tokens, order checkpoints, votes, the stable checkpoint (checkpoints.rs).
    checkpoints: checkpoints::Checkpoints,
    /// Being behind and helping peers that are (catch_up.rs).
    catch_up: catch_up::CatchUp,

    /// The primary's heartbeat, rate and fairness; suspicions; who is alive (watch.rs).
    watch: watch::Watch,
    /// Whether PRE-PREPAREs may leave before their records are synced (ahead.rs).
    ahead: ahead::Ahead,

    recovered: Option<Recovered>,

    /// Incarnations, our own rejoin after lost records, help for peers that rejoin (rejoin.rs).
    rejoins: rejoin::Rejoins,

    /// In ZZ mode, the watch over the active execution replicas (sleepers.rs), and the
    /// replies relayed for clients that cannot get them (relay.rs).
    sleepers: Option<sleepers::Sleepers>,
    relays: Option<relay::Relays>,
}

impl OrderReplica {
    pub fn new(ctx: StageContext, recovered: Recovered) -> OrderReplica {
        let me = match ctx.keys.me() {
            Principal::Order(i) => i,
            _ => OrderId(u16::MAX),
        };
        let interval = ctx.config.checkpoint_interval;
        let q = ctx.config.quorums;
        let sleepers = ctx.config.zz.then(|| {
            sleepers::Sleepers::new(
                q.active_exec(),
                q.exec,
                ctx.config.catch_up_us,
                ctx.config.zz_report_timeout_max_us,
            )
        });
        let genesis = OrderState::default();
        let genesis_bytes = genesis.encode();
        let mut replica = OrderReplica {
            rng: Rng::new(ctx.seed),
            me,
            counters: Counters::default(),
            views: views::Views::new(),
            log: Default::default(),
            state: genesis,
            proposer: proposer::Proposer::default(),
            pending: pending::Pending::default(),
            checkpoints: checkpoints::Checkpoints::new(interval, genesis_bytes),
            catch_up: Default::default(),
            watch: Default::default(),
            ahead: Default::default(),
            recovered: None,
            rejoins: Default::default(),
            sleepers,
            relays: ctx.config.zz.then(|| relay::Relays::new(q.active_exec())),
            ctx,
        };
        replica.recovered = Some(recovered);
        replica
    }

    fn cfg(&self) -> &ProtocolConfig {
        &self.ctx.config
    }

    /// Quorum sizes, from `u` and `r`.
    fn q(&self) -> &Quorums {
        &self.ctx.config.quorums
    }

    pub fn view(&self) -> View {
        self.views.current()
    }

    pub fn primary(&self) -> OrderId {
        self.views.primary(self.q().order)
    }

    /// Last batch applied (committed in order).
    pub fn last_committed(&self) -> Seq {
        self.state.seq
    }

    pub fn stable_checkpoint(&self) -> Seq {
        self.checkpoints.stable().seq
    }

    pub fn is_view_active(&self) -> bool {
        self.views.active()
    }

    /// Recovering from lost records (casting no vote), and the fence once known.
    pub fn rejoining(&self) -> Option<Option<Seq>> {
        self.rejoins.own.as_ref().map(|r| r.fence())
    }

    pub fn incarnation(&self) -> u64 {
        self.rejoins.incarnations.own()
    }

    /// The order checkpoints this replica holds above its stable one (it vouches for them in
    /// view changes).
    pub fn held_checkpoints(&self) -> Vec<Seq> {
        self.checkpoints.own_seqs()
    }

    /// Whether this replica proposes now: the active primary, caught up, and not restarted in
    /// this view (ahead.rs).
    fn is_primary(&self) -> bool {
        self.views.active()
            && self.primary() == self.me
            && !self.behind_checkpoint()
            && !self.abstaining()
    }

    /// Waiting for the state of a stable checkpoint beyond what this replica has applied.
    fn behind_checkpoint(&self) -> bool {
        self.checkpoints
            .awaiting()
            .is_some_and(|(s, _, _)| s > self.state.seq)
    }

    fn window_top(&self) -> Seq {
        self.checkpoints.window_top()
    }

    fn send(&self, to: Principal, msg: &Message, out: &mut Vec<Action>) {
        self.send_as(to, msg, false, out);
    }

    /// `unsynced`: the message may overtake pending syncs (ahead.rs).
    fn send_as(&self, to: Principal, msg: &Message, unsynced: bool, out: &mut Vec<Action>) {
        if !self.may_send(msg) {
            return;
        }
        if let Some(frame) = self.ctx.keys.seal(to, msg) {
            out.push(sent(to, frame, unsynced));
        }
    }

    /// `msg` to each of `to`, encoded once.
    fn send_each_as(
        &self,
        to: impl IntoIterator<Item = Principal>,
        msg: &Message,
        unsynced: bool,
        out: &mut Vec<Action>,
    ) {
        if !self.may_send(msg) {
            return;
        }
        for (to, frame) in self.ctx.keys.seal_each(to, msg) {
            if let Some(frame) = frame {
                out.push(sent(to, frame, unsynced));
            }
        }
    }

    /// A replica recovering from lost records casts no vote of any kind and vouches for
    /// nothing (rejoin.rs): it only asks. Both ways out (`send_as`, `send_each_as`) ask here.
    fn may_send(&self, msg: &Message) -> bool {
        self.rejoins.own.is_none() || rejoin::may_send_while_rejoining(msg)
    }

    fn send_to_peers(&self, msg: &Message, out: &mut Vec<Action>) {
        self.send_to_peers_as(msg, false, out);
    }

    fn send_to_peers_as(&self, msg: &Message, unsynced: bool, out: &mut Vec<Action>) {
        let peers = OrderId::all(self.q().order).filter(|j| *j != self.me);
        self.send_each_as(peers.map(Principal::Order), msg, unsynced, out);
    }

    /// Per-batch traffic to the execution stage (NEXT-BATCH, RETRANSMIT). In ZZ mode not to a
    /// sleeper this replica has not heard from: it drops everything but WAKEs. A woken one
    /// sends LAST-EXEC at its start, answered directly (`on_last_exec`), then its reports, and
    /// LAST-EXEC again every catch-up period while idle or behind: it catches up without what
    /// was not sent to it here, and is heard from again after this replica restarts.
    fn send_to_exec(&mut self, msg: &Message, out: &mut Vec<Action>) {
        let mut to = Vec::new();
        for e in ExecId::all(self.q().exec) {
            if self.sleepers.as_ref().is_some_and(|z| z.asleep(e)) {
                self.counters.add("zz-not-sent-asleep");
                continue;
            }
            to.push(Principal::Exec(e));
        }
        self.send_each_as(to, msg, false, out);
    }

    fn put(&self, key: String, value: Vec<u8>, out: &mut Vec<Action>) {
        out.push(Action::Store(StoreOp::Put { key, value }));
    }

    fn sync(&self, out: &mut Vec<Action>) {
        out.push(Action::Store(StoreOp::Sync));
    }

    fn on_message(&mut self, now: Micros, from: Principal, msg: Message, out: &mut Vec<Action>) {
        if let Principal::Order(j) = from {
            self.watch.liveness.heard(j, now);
        }
        if let (Principal::Exec(e), Some(z)) = (from, self.sleepers.as_mut()) {
            z.heard(now, e);
        }
        if self.ignored_while_rejoining(&msg) {
            return;
        }
        if let (
            Principal::Order(_),
            Message::PrePrepare { seq, .. }
            | Message::Prepare { seq, .. }
            | Message::Commit { seq, .. }
            | Message::Checkpoint { seq, .. }
            | Message::Committed { seq, .. },
        ) = (from, &msg)
        {
            self.catch_up.heard(*seq);
        }
        if let (
            Principal::Order(j),
            Message::PrePrepare { view, .. }
            | Message::Prepare { view, .. }
            | Message::Commit { view, .. },
        ) = (from, &msg)
        {
            self.note_peer_view(now, j, *view, out);
        }
        match (from, msg) {
            (Principal::Auth(f), Message::AuthReq { core, macs }) => {
                self.on_auth_req(now, f, core, macs, out)
            }
            (Principal::Auth(f), Message::AuthReqs { reqs }) => {
                self.on_auth_reqs(now, f, reqs, out)
            }
            (
                Principal::Order(j),
                Message::PrePrepare {
                    view,
                    seq,
                    requests,
                    time,
                    seed,
                },
            ) => self.on_pre_prepare(now, j, view, seq, requests, time, seed, out),
            (Principal::Order(j), Message::Prepare { view, seq, digest }) => {
                self.on_prepare(now, j, view, seq, digest, out)
            }
            (Principal::Order(j), Message::Commit { view, seq, digest }) => {
                self.on_commit(now, j, view, seq, digest, out)
            }
            (Principal::Order(j), Message::Checkpoint { seq, digest }) => {
                self.on_checkpoint(now, j, seq, digest, out)
            }
            (Principal::Order(j), Message::ViewChange(vc)) => self.on_view_change(now, j, vc, out),
            (Principal::Order(j), Message::Suspect { view }) => self.on_suspect(now, j, view, out),
            (
                Principal::Order(j),
                Message::NewView {
                    view,
                    proofs,
                    signature,
                },
            ) => self.on_new_view(now, j, view, proofs, signature, out),
            (
                Principal::Order(j),
                Message::RecoveryQuery {
                    nonce,
                    incarnation,
                    fence,
                },
            ) => self.on_recovery_query(now, j, nonce, incarnation, fence, out),
            (
                Principal::Order(j),
                Message::RecoveryReply {
                    nonce,
                    highest,
                    incarnation,
                    view,
                },
            ) => self.on_recovery_reply(now, j, nonce, highest, incarnation, view, out),
            (Principal::Order(j), Message::FetchCommitted { from }) => {
                self.on_catch_up(now, j, catch_up::Ask::Committed(from), out)
            }
            (Principal::Order(j), Message::Committed { seq, batch }) => {
                self.on_committed(now, j, seq, batch, out)
            }
            (Principal::Order(j), Message::FetchOrderState { seq }) => {
                self.on_catch_up(now, j, catch_up::Ask::OrderState(seq), out)
            }
            (Principal::Order(_), Message::OrderState { seq, state }) => {
                self.on_order_state(now, seq, state, out)
            }
            (Principal::Exec(e), Message::CpToken { seq, token }) => {
                self.on_cp_token(now, e, seq, token, out)
            }
            (Principal::Exec(e), Message::ExecReport { reports }) => {
                self.on_exec_report(now, e, reports, out)
            }
            (Principal::Exec(e), Message::LastExec { next }) => {
                self.on_last_exec(now, e, next, out)
            }
            (Principal::Exec(e), Message::ExecProbe { nonce }) => self.on_exec_probe(e, nonce, out),
            (
                Principal::Exec(e),
                Message::ReplyCopy {
                    client,
                    nc,
                    req,
                    result,
                    at,
                },
            ) => self.on_reply_copy(
                now,
                e,
                client,
                relay::Copy {
                    nc,
                    req,
                    result,
                    at,
                },
                out,
            ),
            _ => self.counters.dropped(DropReason::Unexpected),
        }
    }

    fn on_tick(&mut self, now: Micros, out: &mut Vec<Action>) {
        out.push(Action::SetTimer {
            id: TICK,
            after: self.cfg().catch_up_us,
        });
        if self.rejoins.own.is_some() {
            self.rejoin_tick(out);
            self.catch_up_tick(now, out);
            return;
        }
        let stalled = self.catch_up.stalled_since_last_tick(self.state.seq);
        if self.views.active() {
            if stalled {
                self.count_stall();
                self.resend_agreement(out);
                self.catch_up.resent(now);
            }
            self.maybe_suspect_primary(now, out);
            self.abdicate(now, out);
            if self.is_primary() {
                self.proposer.tick();
                self.try_propose(now, out);
            }
        } else {
            self.view_change_tick(now, out);
        }
        self.wake_sleepers(now, out);
        if stalled {
            self.catch_up_tick(now, out);
            // Checkpoint messages get lost too, and the window cannot move without them.
            for (seq, digest) in self.checkpoints.own_above_stable() {
                self.send_to_peers(&Message::Checkpoint { seq, digest }, out);
            }
        }
    }
}

impl Stage for OrderReplica {
    fn principal(&self) -> Principal {
        self.ctx.keys.me()
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        // The tick comes every `catch_up_us`: twice that without an event is a stall of ours.
        self.watch
            .liveness
            .awake(now, self.cfg().catch_up_us.saturating_mul(2));
        match event {
            Event::Start => {
                self.watch.last_progress = now;
                self.watch.liveness.started(self.q().order, now);
                let rec = self.recovered.take().unwrap_or_default();
                if !store_is_intact(&rec) && !plumb_core::sabotaged!(Amnesia) {
                    self.begin_rejoin(now, rec, out);
                    out.push(Action::SetTimer {
                        id: TICK,
                        after: self.cfg().catch_up_us,
                    });
                    return;
                }
                self.open_view(now, out);
                self.recover(now, rec, out);
                if self.views.active() {
                    out.push(Action::Observe(Observation::ViewEntered {
                        view: self.views.current(),
                        new_view: self.views.new_view_digest(),
                    }));
                }
                self.abdicate(now, out);
                // We may have missed anything while down: ask.
                self.send_to_peers(
                    &Message::FetchCommitted {
                        from: self.state.seq + 1,
                    },
                    out,
                );
                out.push(Action::SetTimer {
                    id: TICK,
                    after: self.cfg().catch_up_us,
                });
            }
            Event::Timer(TICK) => self.on_tick(now, out),
            Event::Timer(BATCH) => {
                self.proposer.timer_fired();
                self.try_propose(now, out);
            }
            Event::Timer(monitor::HEARTBEAT) => self.on_heartbeat(now, out),
            Event::Timer(catch_up::CATCH_UP_IDLE) => self.serve_deferred_catch_up(now, out),
            Event::Timer(wake::ZZ_WATCH) => self.wake_sleepers(now, out),
            Event::Timer(_) => {}
            Event::Receive(frame) => match self.ctx.keys.open(&frame) {
                Ok((from, msg)) => self.on_message(now, from, msg, out),
                Err(e) => self.counters.dropped(DropReason::from(&e)),
            },
        }
        if self.proposer.take_window_moved() && self.is_primary() {
            self.try_propose(now, out);
        }
        if self.rejoins.own.is_some() {
            self.maybe_rejoin(now, out);
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The checkpoint ledger's own (checkpoints.rs), and, across it and agreement:
    /// - `INV-stable-applied`: the stable checkpoint is at or below the last applied batch;
    /// - `INV-slots-above-stable`: every slot kept is above the stable checkpoint.
    fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        self.checkpoints.check_invariants(self.me)?;
        self.views.check_invariants(self.me)?;
        self.pending.check_invariants()?;
        self.rejoins.incarnations.check_invariants()?;
        self.catch_up.check_invariants(self.state.seq)?;
        self.log.check_invariants()?;
        self.watch.check_invariants(self.views.current())?;
        if let Some(z) = &self.sleepers {
            z.check_invariants()?;
        }
        if let Some(r) = &self.relays {
            r.check_invariants()?;
        }
        let stable = self.checkpoints.stable().seq;
        BrokenInvariant::check(self.state.seq >= stable, "INV-stable-applied", || {
            format!(
                "stable checkpoint {stable} above the last applied batch {}",
                self.state.seq
            )
        })?;
        let next = self.proposer.next();
        BrokenInvariant::check(next > self.state.seq, "INV-proposals-above-applied", || {
            format!(
                "the next proposal {next} is at or below the last applied batch {}",
                self.state.seq
            )
        })?;
        let lowest = self.log.lowest();
        BrokenInvariant::check(
            lowest.is_none_or(|s| s > stable),
            "INV-slots-above-stable",
            || format!("slot {lowest:?} kept at or below the stable checkpoint {stable}"),
        )
    }
}

/// The action that sends `frame` to `to`; `unsynced`: ahead of pending syncs (ahead.rs).
fn sent(to: Principal, frame: Vec<u8>, unsynced: bool) -> Action {
    match unsynced {
        false => Action::Send { to, frame },
        true => Action::SendUnsynced { to, frame },
    }
}
