//! Order replicas in a tiny deterministic network, with auth and execution replicas played by
//! the test. Shared by the order stage's integration tests.
#![allow(dead_code)]

pub mod scenarios;

use plumb_config::{Faults, ProtocolConfig, Quorums};
use plumb_core::{Action, Event, KeyRing, Observation, Stage, StageContext, StoreOp};
use plumb_crypto::{Digest, Identity, PublicIdentity};
use plumb_order::OrderReplica;
use plumb_wire::{AuthId, Body, ExecId, Message, OrderId, Principal, ReqCore, ReqNo, Seq};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

pub struct Harness {
    pub cfg: Arc<ProtocolConfig>,
    pub rings: HashMap<Principal, KeyRing>,
    pub replicas: Vec<Option<OrderReplica>>,
    pub disks: Vec<BTreeMap<String, Vec<u8>>>,
    /// Keys each replica's store reports corrupt at its next start.
    pub corrupt: Vec<Vec<String>>,
    pub queue: VecDeque<(Principal, Vec<u8>)>,
    pub now: u64,
    pub timers: Vec<BTreeMap<u32, u64>>,
    /// (replica, seq) -> digest of committed NextBatch
    pub next_batches: BTreeMap<(OrderId, Seq), Digest>,
    /// TENTATIVE-BATCHes execution replicas received: (sender, seq) -> (view, digest).
    pub tentatives: BTreeMap<(OrderId, Seq), (plumb_wire::View, Digest)>,
    pub committed: BTreeMap<Seq, Digest>,
    /// Frames each replica sent ahead of its pending syncs (`Action::SendUnsynced`).
    pub unsynced: Vec<usize>,
    pub down: Vec<bool>,
    /// Drop every message to or from these replicas.
    pub cut: Vec<bool>,
    pub exec_seen: BTreeMap<Seq, plumb_wire::Batch>,
    /// LOAD-CPs execution replicas received: (exec, order replica, seq, token).
    pub load_cps: Vec<(ExecId, OrderId, Seq, Digest)>,
    /// Drop every message of these kinds (`Message::kind`).
    pub drop_kinds: Vec<&'static str>,
    /// Messages of these kinds to this order replica are lost.
    pub drop_to: Vec<(OrderId, &'static str)>,
    /// Messages of these kinds from this order replica are lost.
    pub drop_from: Vec<(OrderId, &'static str)>,
    /// Messages of these kinds to this order replica are held back (in `held`) until
    /// `release_held`: they arrive after everything else.
    pub hold_to: Vec<(OrderId, &'static str)>,
    pub held: Vec<(Principal, Vec<u8>)>,
    /// How far each replica's clock is from `now` (its stage sees `now + offset`).
    pub clock_offset: Vec<i64>,
}

/// What `plumb init` leaves in a fresh order replica's store.
pub fn genesis_disk() -> BTreeMap<String, Vec<u8>> {
    let mut disk = BTreeMap::new();
    for op in plumb_order::genesis() {
        if let StoreOp::Put { key, value } = op {
            disk.insert(key, value);
        }
    }
    disk
}

pub fn principals(q: &Quorums) -> Vec<Principal> {
    let mut v = Vec::new();
    v.extend(AuthId::all(q.auth).map(Principal::Auth));
    v.extend(OrderId::all(q.order).map(Principal::Order));
    v.extend(ExecId::all(q.exec).map(Principal::Exec));
    v.extend((0..8u32).map(Principal::Client));
    v
}

impl Harness {
    pub fn new(u: u16, r: u16, cp: u64) -> Harness {
        Harness::with_config(u, r, cp, |_| {})
    }

    /// `new`, with `adjust` applied to the protocol configuration first.
    pub fn with_config(
        u: u16,
        r: u16,
        cp: u64,
        adjust: impl FnOnce(&mut ProtocolConfig),
    ) -> Harness {
        let q = Quorums::minimal(Faults::new(u, r));
        let mut cfg = ProtocolConfig::new(q);
        cfg.checkpoint_interval = cp;
        cfg.batch_max = 4;
        cfg.view_change_timeout_us = 200_000;
        cfg.catch_up_us = 20_000;
        adjust(&mut cfg);
        let cfg = Arc::new(cfg);
        let ids: HashMap<Principal, Arc<Identity>> = principals(&q)
            .into_iter()
            .map(|p| {
                (
                    p,
                    Arc::new(Identity::from_seed(
                        *Digest::of(&p.label().to_le_bytes())
                            .0
                            .first_chunk::<32>()
                            .unwrap(),
                    )),
                )
            })
            .collect();
        let dir: Arc<HashMap<Principal, PublicIdentity>> =
            Arc::new(ids.iter().map(|(p, i)| (*p, i.public())).collect());
        let rings: HashMap<Principal, KeyRing> = ids
            .iter()
            .map(|(p, i)| (*p, KeyRing::new(*p, i.clone(), dir.clone())))
            .collect();
        let mut h = Harness {
            cfg,
            rings,
            replicas: Vec::new(),
            disks: vec![genesis_disk(); q.order],
            corrupt: vec![Vec::new(); q.order],
            queue: VecDeque::new(),
            now: 1_000,
            timers: vec![BTreeMap::new(); q.order],
            next_batches: BTreeMap::new(),
            tentatives: BTreeMap::new(),
            committed: BTreeMap::new(),
            unsynced: vec![0; q.order],
            down: vec![false; q.order],
            cut: vec![false; q.order],
            exec_seen: BTreeMap::new(),
            load_cps: Vec::new(),
            drop_kinds: Vec::new(),
            drop_to: Vec::new(),
            drop_from: Vec::new(),
            hold_to: Vec::new(),
            held: Vec::new(),
            clock_offset: vec![0; q.order],
        };
        for i in OrderId::all(q.order) {
            let r = h.build(i);
            h.replicas.push(Some(r));
            h.step(i, Event::Start);
        }
        h
    }

    pub fn build(&self, i: OrderId) -> OrderReplica {
        let ctx = StageContext {
            config: self.cfg.clone(),
            keys: self.rings[&Principal::Order(i)].clone(),
            seed: u64::from(i.0),
        };
        let rec = plumb_core::Recovered {
            records: self.disks[i.index()].clone(),
            corrupt: self.corrupt[i.index()].clone(),
        };
        OrderReplica::new(ctx, rec)
    }

    pub fn q(&self) -> Quorums {
        self.cfg.quorums
    }

    pub fn step(&mut self, i: OrderId, ev: Event) {
        let Some(r) = self.replicas[i.index()].as_mut() else {
            return;
        };
        let mut out = Vec::new();
        let local = self.now.saturating_add_signed(self.clock_offset[i.index()]);
        r.handle(local, ev, &mut out);
        self.check_tentatives_follow_their_sync(i, &out);
        for a in out {
            match a {
                Action::SendUnsynced { to, frame } if !self.cut[i.index()] => {
                    self.unsynced[i.index()] += 1;
                    self.queue.push_back((to, frame));
                }
                Action::Send { to, frame } if !self.cut[i.index()] => {
                    self.queue.push_back((to, frame));
                }
                Action::SetTimer { id, after } => {
                    self.timers[i.index()].insert(id.0, self.now + after);
                }
                Action::CancelTimer { id } => {
                    self.timers[i.index()].remove(&id.0);
                }
                Action::Store(StoreOp::Put { key, value }) => {
                    self.disks[i.index()].insert(key, value);
                }
                Action::Store(StoreOp::Delete { key }) => {
                    self.disks[i.index()].remove(&key);
                    self.corrupt[i.index()].retain(|k| *k != key);
                }
                Action::Store(StoreOp::DeletePrefix { prefix }) => {
                    self.disks[i.index()].retain(|k, _| !k.starts_with(&prefix));
                    self.corrupt[i.index()].retain(|k| !k.starts_with(&prefix));
                }
                Action::Store(_) => {}
                Action::Observe(Observation::Committed { seq, digest, .. }) => {
                    let prev = self.committed.insert(seq, digest);
                    assert!(
                        prev.is_none_or(|p| p == digest),
                        "OS-agreement: two digests committed at {seq}"
                    );
                }
                _ => {}
            }
        }
    }

    pub fn deliver_all(&mut self) {
        let mut budget = 200_000;
        while let Some((to, frame)) = self.queue.pop_front() {
            budget -= 1;
            assert!(budget > 0, "message storm");
            if !self.drop_kinds.is_empty()
                || !self.drop_to.is_empty()
                || !self.drop_from.is_empty()
                || !self.hold_to.is_empty()
            {
                let opened = self.rings[&to].open(&frame).ok();
                let from = opened.as_ref().map(|(p, _)| *p);
                let kind = opened.map(|(_, m)| m.kind());
                let lost = kind.is_some_and(|k| {
                    self.drop_kinds.contains(&k)
                        || matches!(to, Principal::Order(i) if self.drop_to.contains(&(i, k)))
                        || matches!(from, Some(Principal::Order(i)) if self.drop_from.contains(&(i, k)))
                });
                if lost {
                    continue;
                }
                let held = kind.is_some_and(
                    |k| matches!(to, Principal::Order(i) if self.hold_to.contains(&(i, k))),
                );
                if held {
                    self.held.push((to, frame));
                    continue;
                }
            }
            match to {
                Principal::Order(i) if !self.down[i.index()] && !self.cut[i.index()] => {
                    self.step(i, Event::Receive(frame));
                }
                Principal::Exec(e) => self.exec_receive(e, frame),
                _ => {}
            }
        }
    }

    /// Execution replicas: record NextBatch; the test sends CP-TOKENs itself.
    pub fn exec_receive(&mut self, e: ExecId, frame: Vec<u8>) {
        let ring = &self.rings[&Principal::Exec(e)];
        let Ok((Principal::Order(o), msg)) = ring.open(&frame) else {
            return;
        };
        match msg {
            Message::NextBatch { seq, batch, .. } => {
                let d = batch.digest(seq);
                self.next_batches.insert((o, seq), d);
                self.exec_seen.insert(seq, batch);
            }
            Message::TentativeBatch { view, seq, batch } => {
                self.tentatives.insert((o, seq), (view, batch.digest(seq)));
            }
            Message::LoadCp { seq, token } => self.load_cps.push((e, o, seq, token)),
            _ => {}
        }
    }

    /// A TENTATIVE-BATCH vouches for a prepared certificate on the disk: in the actions of one
    /// step, it comes after a sync that follows the last write of its slot.
    fn check_tentatives_follow_their_sync(&self, i: OrderId, out: &[Action]) {
        let mut last_sync = None;
        let mut last_put: HashMap<&str, usize> = HashMap::new();
        for (k, a) in out.iter().enumerate() {
            match a {
                Action::Store(StoreOp::Sync) => last_sync = Some(k),
                Action::Store(StoreOp::Put { key, .. }) => {
                    last_put.insert(key.as_str(), k);
                }
                Action::Send {
                    to: to @ Principal::Exec(_),
                    frame,
                } => {
                    let Ok((_, Message::TentativeBatch { seq, .. })) = self.rings[to].open(frame)
                    else {
                        continue;
                    };
                    let key = plumb_order::slot_key(seq);
                    let put_at = last_put.get(key.as_str()).copied().unwrap_or_else(|| {
                        panic!("o{i} sent a TENTATIVE-BATCH for {seq} without writing its slot")
                    });
                    assert!(
                        last_sync.is_some_and(|s| s > put_at),
                        "o{i} sent a TENTATIVE-BATCH for {seq} before its slot was synced"
                    );
                }
                _ => {}
            }
        }
    }

    pub fn advance(&mut self, dt: u64) {
        let end = self.now + dt;
        loop {
            self.deliver_all();
            let next = self
                .timers
                .iter()
                .enumerate()
                .flat_map(|(i, t)| t.iter().map(move |(id, at)| (*at, i, *id)))
                .filter(|(at, i, _)| *at <= end && !self.down[*i])
                .min();
            let Some((at, i, id)) = next else { break };
            self.now = self.now.max(at);
            self.timers[i].remove(&id);
            self.step(OrderId(i as u16), Event::Timer(plumb_core::TimerId(id)));
        }
        self.now = end;
    }

    /// Every auth replica authenticates client c's request nc and sends AUTH-REQ to every order replica.
    pub fn request(&mut self, c: u32, nc: u64, op: &[u8]) {
        let q = self.q();
        let core = ReqCore {
            client: c,
            life: plumb_wire::Life::default(),
            nc: ReqNo(nc),
            body: Body::Inline(op.to_vec()),
        };
        for a in 0..q.auth as u16 {
            let ring = &self.rings[&Principal::Auth(AuthId(a))];
            let macs = (0..q.order as u16)
                .map(|o| {
                    ring.mac_for(Principal::Order(OrderId(o)), &core.id_digest().0)
                        .unwrap()
                })
                .collect();
            let msg = Message::AuthReq {
                core: core.clone(),
                macs,
            };
            for o in 0..q.order as u16 {
                let frame = ring.seal(Principal::Order(OrderId(o)), &msg).unwrap();
                self.queue.push_back((Principal::Order(OrderId(o)), frame));
            }
        }
    }

    /// Every auth replica vouches for `requests` (client, number, operation) in one AUTH-REQS
    /// to every order replica, with a wrong MAC on the entry at `bad_mac` if asked.
    pub fn requests_bundled(&mut self, requests: &[(u32, u64, &[u8])], bad_mac: Option<usize>) {
        let q = self.q();
        for a in 0..q.auth as u16 {
            let ring = &self.rings[&Principal::Auth(AuthId(a))];
            let reqs = requests
                .iter()
                .enumerate()
                .map(|(i, (c, nc, op))| {
                    let core = ReqCore {
                        client: *c,
                        life: plumb_wire::Life::default(),
                        nc: ReqNo(*nc),
                        body: Body::Inline(op.to_vec()),
                    };
                    let macs = (0..q.order as u16)
                        .map(|o| {
                            let mut mac = ring
                                .mac_for(Principal::Order(OrderId(o)), &core.id_digest().0)
                                .unwrap();
                            if bad_mac == Some(i) {
                                mac.0[0] ^= 1;
                            }
                            mac
                        })
                        .collect();
                    plumb_wire::Vouched { core, macs }
                })
                .collect();
            let msg = Message::AuthReqs { reqs };
            for o in 0..q.order as u16 {
                let frame = ring.seal(Principal::Order(OrderId(o)), &msg).unwrap();
                self.queue.push_back((Principal::Order(OrderId(o)), frame));
            }
        }
    }

    pub fn cp_tokens(&mut self, seq: Seq) {
        for e in 0..self.q().exec as u16 {
            self.cp_token_from(ExecId(e), seq, Digest::of(&seq.to_le_bytes()));
        }
    }

    /// Execution replica `e` sends `token` for checkpoint `seq` to every order replica.
    pub fn cp_token_from(&mut self, e: ExecId, seq: Seq, token: Digest) {
        self.exec_sends(e, &Message::CpToken { seq, token });
    }

    /// Execution replica `e` sends `msg` to every order replica.
    pub fn exec_sends(&mut self, e: ExecId, msg: &Message) {
        let ring = &self.rings[&Principal::Exec(e)];
        for o in 0..self.q().order as u16 {
            self.queue.push_back((
                Principal::Order(OrderId(o)),
                ring.seal(Principal::Order(OrderId(o)), msg).unwrap(),
            ));
        }
    }

    /// Deliver what `hold_to` held back (and stop holding).
    pub fn release_held(&mut self) {
        self.hold_to.clear();
        self.queue.extend(self.held.drain(..));
        self.deliver_all();
    }

    pub fn crash(&mut self, i: OrderId) {
        self.down[i.index()] = true;
        self.replicas[i.index()] = None;
        self.timers[i.index()].clear();
    }

    pub fn restart(&mut self, i: OrderId) {
        self.down[i.index()] = false;
        let r = self.build(i);
        self.replicas[i.index()] = Some(r);
        self.step(i, Event::Start);
    }

    /// A validly signed VIEW-CHANGE of order replica `replica` for `new_view`, from the genesis
    /// state, as incarnation `incarnation`.
    pub fn signed_view_change(
        &self,
        replica: OrderId,
        new_view: plumb_wire::View,
        incarnation: u64,
    ) -> plumb_wire::SignedViewChange {
        let vc = plumb_wire::ViewChange {
            new_view,
            replica,
            stable_seq: Seq(0),
            stable_digest: plumb_order::OrderState::default().digest(),
            checkpoints: vec![],
            prepared: vec![],
            pre_prepared: vec![],
            incarnation,
        };
        let signature = self.rings[&Principal::Order(replica)].sign(&vc.signing_bytes());
        plumb_wire::SignedViewChange { vc, signature }
    }

    /// A NEW-VIEW for `view` with the VIEW-CHANGEs of `from`, signed by order replica `signer`.
    pub fn new_view(&self, view: plumb_wire::View, from: &[OrderId], signer: OrderId) -> Message {
        let proofs: Vec<_> = from
            .iter()
            .map(|j| self.signed_view_change(*j, view, 0))
            .collect();
        let signature = self.rings[&Principal::Order(signer)]
            .sign(&plumb_wire::new_view_signing_bytes(view, &proofs));
        Message::NewView {
            view,
            proofs,
            signature,
        }
    }

    /// Order replica `from` sends `msg` to order replica `to`, delivered at once.
    pub fn deliver_to(&mut self, to: OrderId, msg: &Message, from: OrderId) {
        let frame = self.rings[&Principal::Order(from)]
            .seal(Principal::Order(to), msg)
            .unwrap();
        self.step(to, Event::Receive(frame));
    }

    /// Lose replica `i`'s disk, whole.
    pub fn wipe(&mut self, i: OrderId) {
        self.disks[i.index()].clear();
        self.corrupt[i.index()].clear();
    }

    /// Send the CP-TOKENs of every checkpoint up to what any replica committed.
    pub fn tokens_through_committed(&mut self) {
        let cp = self.cfg.checkpoint_interval;
        let last = (0..self.q().order as u16)
            .filter_map(|i| self.replicas[i as usize].as_ref())
            .map(|r| r.last_committed())
            .max()
            .unwrap_or(Seq(0));
        for s in (cp..=last.0).step_by(cp as usize) {
            self.cp_tokens(Seq(s));
        }
    }

    /// `advance` in steps, playing execution replicas that take every checkpoint.
    pub fn run_with_tokens(&mut self, dt: u64) {
        let step = 20_000;
        let mut done = 0;
        while done < dt {
            self.advance(step);
            self.tokens_through_committed();
            done += step;
        }
    }

    pub fn replica(&self, i: OrderId) -> &OrderReplica {
        self.replicas[i.index()].as_ref().unwrap()
    }

    /// Execution learns seq once r+1 replicas sent the same NextBatch digest.
    pub fn exec_learned(&self, seq: Seq) -> Option<Digest> {
        let mut counts: HashMap<Digest, usize> = HashMap::new();
        for ((_, s), d) in &self.next_batches {
            if *s == seq {
                *counts.entry(*d).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .find(|(_, n)| *n >= self.q().small())
            .map(|(d, _)| d)
    }
}
