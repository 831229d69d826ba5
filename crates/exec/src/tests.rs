//! Execution replica tests, named after the property they check (seed 004 §5.4.4, §6.3.4).
//! Order, authentication and client principals are played by the test.

use super::*;
use plumb_app::{BatchOutput, Command, LoadError, NonDeterminism};
use plumb_config::{Faults, ProtocolConfig, Quorums};
use plumb_core::{Action, DropReason, Event, KeyRing, Observation, Recovered, Stage, StoreOp};
use plumb_crypto::{Digest, Identity, PublicIdentity};
use plumb_wire::{Batch, Body, Executed, Message, Principal, ReqCore, Seq, View};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A register map. Operations (text): `put k v` -> "ok", `get k` -> value, `push c text` ->
/// a push event for client `c`.
#[derive(Default)]
struct Registers {
    map: BTreeMap<String, String>,
    /// Instrumentation, not state: every `execute` call.
    calls: Vec<(Seq, NonDeterminism, usize)>,
    /// Token mode: the checkpoint is the digest of the map, kept in `blobs` and moved by
    /// `fetch_state` / `load_state`.
    by_token: bool,
    blobs: BTreeMap<Digest, Vec<u8>>,
    released: Vec<Vec<u8>>,
    /// Object mode (tests_objects.rs): registers in 16 hash buckets; the buckets written
    /// since the last object checkpoint.
    dirty: Option<std::collections::BTreeSet<u64>>,
}

impl Registers {
    fn by_token() -> Registers {
        Registers {
            by_token: true,
            ..Registers::default()
        }
    }

    fn map_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(&self.map).unwrap()
    }

    fn set_map(&mut self, bytes: &[u8]) -> Result<(), LoadError> {
        self.map = postcard::from_bytes(bytes).map_err(|e| LoadError::Corrupt(e.to_string()))?;
        Ok(())
    }
}

impl Application for Registers {
    fn execute(&mut self, seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        self.calls.push((seq, nd, batch.len()));
        let mut out = BatchOutput::default();
        for c in batch {
            let text = String::from_utf8_lossy(c.op).to_string();
            let words: Vec<&str> = text.split_whitespace().collect();
            let reply = match words.as_slice() {
                ["put", k, v] => {
                    self.map.insert(k.to_string(), v.to_string());
                    if let Some(dirty) = self.dirty.as_mut() {
                        dirty.insert(objects::bucket(k));
                    }
                    "ok".to_string()
                }
                ["get", k] => self.map.get(*k).cloned().unwrap_or_default(),
                ["push", to, payload] => {
                    out.pushes
                        .push((to.parse().unwrap(), payload.as_bytes().to_vec()));
                    "pushed".to_string()
                }
                _ => "?".to_string(),
            };
            out.replies.push(reply.into_bytes());
        }
        out
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(op).to_string();
        match text.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["get", k] => self.map.get(*k).cloned().unwrap_or_default().into_bytes(),
            _ => b"?".to_vec(),
        }
    }

    /// Speculates on `get`s only, answering what the ordered `get` would, marked "early".
    fn execute_early(&mut self, command: Command<'_>) -> Option<Vec<u8>> {
        let text = String::from_utf8_lossy(command.op).to_string();
        match text.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["get", k] => Some(
                format!("early {}", self.map.get(*k).cloned().unwrap_or_default()).into_bytes(),
            ),
            _ => None,
        }
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        let bytes = self.map_bytes();
        if !self.by_token {
            return bytes;
        }
        let token = Digest::of(&bytes);
        self.blobs.insert(token, bytes);
        token.0.to_vec()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        if !self.by_token {
            return self.set_map(checkpoint);
        }
        let token = Digest(
            checkpoint
                .try_into()
                .map_err(|_| LoadError::Corrupt("token size".into()))?,
        );
        match self.blobs.get(&token).cloned() {
            Some(bytes) => self.set_map(&bytes),
            None => Err(LoadError::MissingState(vec![token])),
        }
    }

    fn release_checkpoint(&mut self, checkpoint: &[u8]) {
        self.released.push(checkpoint.to_vec());
    }

    fn fetch_state(&self, token: &Digest) -> Option<Vec<u8>> {
        self.blobs.get(token).cloned()
    }

    fn load_state(&mut self, token: &Digest, data: &[u8]) {
        self.blobs.insert(*token, data.to_vec());
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.map_bytes())
    }

    fn objects(&mut self) -> Option<&mut dyn plumb_app::ObjectState> {
        match self.dirty {
            Some(_) => Some(self),
            None => None,
        }
    }
}

#[path = "tests_objects.rs"]
mod objects;

type Replica = ExecReplica<Registers>;

const NOW: Micros = 1_000_000;

struct Net {
    cfg: Arc<ProtocolConfig>,
    rings: HashMap<Principal, KeyRing>,
}

impl Net {
    /// u = r = 1: 4 auth, 4 order, 3 exec replicas; r + 1 = 2.
    fn new(checkpoint_interval: u64) -> Net {
        let q = Quorums::minimal(Faults::new(1, 1));
        let mut cfg = ProtocolConfig::new(q);
        cfg.checkpoint_interval = checkpoint_interval;
        cfg.catch_up_us = 10_000;
        let mut all: Vec<Principal> = Vec::new();
        all.extend(AuthId::all(q.auth).map(Principal::Auth));
        all.extend(OrderId::all(q.order).map(Principal::Order));
        all.extend(ExecId::all(q.exec).map(Principal::Exec));
        all.extend((0..4u32).map(Principal::Client));
        let ids: HashMap<Principal, Arc<Identity>> = all
            .iter()
            .map(|p| {
                (
                    *p,
                    Arc::new(Identity::from_seed(Digest::of(&p.label().to_le_bytes()).0)),
                )
            })
            .collect();
        let dir: Arc<HashMap<Principal, PublicIdentity>> =
            Arc::new(ids.iter().map(|(p, i)| (*p, i.public())).collect());
        let rings = ids
            .iter()
            .map(|(p, i)| (*p, KeyRing::new(*p, i.clone(), dir.clone())))
            .collect();
        Net {
            cfg: Arc::new(cfg),
            rings,
        }
    }

    fn q(&self) -> Quorums {
        self.cfg.quorums
    }

    fn replica(&self, i: u16, app: Registers, recovered: Recovered) -> Replica {
        let ctx = StageContext {
            config: self.cfg.clone(),
            keys: self.rings[&Principal::Exec(ExecId(i))].clone(),
            seed: i as u64,
        };
        ExecReplica::new(ctx, app, recovered)
    }

    fn deliver_at(
        &self,
        r: &mut Replica,
        now: Micros,
        from: Principal,
        msg: &Message,
    ) -> Vec<Action> {
        let frame = self.rings[&from].seal(r.principal(), msg).unwrap();
        plumb_core::run(r, now, Event::Receive(frame))
    }

    fn deliver(&self, r: &mut Replica, from: Principal, msg: &Message) -> Vec<Action> {
        self.deliver_at(r, NOW, from, msg)
    }

    /// NEXT-BATCH for `seq` from each of `orders`.
    fn next_batch(&self, r: &mut Replica, seq: Seq, batch: &Batch, orders: &[u16]) -> Vec<Action> {
        let msg = Message::NextBatch {
            view: View::ZERO,
            seq,
            batch: batch.clone(),
        };
        orders
            .iter()
            .flat_map(|o| self.deliver(r, Principal::Order(OrderId(*o)), &msg))
            .collect()
    }

    /// TENTATIVE-BATCH for `seq` in `view` from each of `orders`.
    fn tentative(
        &self,
        r: &mut Replica,
        view: u64,
        seq: Seq,
        batch: &Batch,
        orders: &[u16],
    ) -> Vec<Action> {
        let msg = Message::TentativeBatch {
            view: View(view),
            seq,
            batch: batch.clone(),
        };
        orders
            .iter()
            .flat_map(|o| self.deliver(r, Principal::Order(OrderId(*o)), &msg))
            .collect()
    }

    /// Learn batches `seq, seq+1, ...` from r + 1 order replicas.
    fn learn_all(&self, r: &mut Replica, first: Seq, batches: &[Batch]) -> Vec<Action> {
        let quorum: Vec<u16> = (0..self.q().exec_learn() as u16).collect();
        let mut out = Vec::new();
        for (i, b) in batches.iter().enumerate() {
            out.extend(self.next_batch(r, first + i as u64, b, &quorum));
        }
        out
    }

    /// Every message in `actions`, opened by its receiver.
    fn sent(&self, actions: &[Action]) -> Vec<(Principal, Message)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send { to, frame } | Action::SendUnsynced { to, frame } => {
                    Some((*to, self.rings[to].open(frame).unwrap().1))
                }
                _ => None,
            })
            .collect()
    }

    fn sent_to(&self, actions: &[Action], to: Principal) -> Vec<Message> {
        self.sent(actions)
            .into_iter()
            .filter(|(p, _)| *p == to)
            .map(|(_, m)| m)
            .collect()
    }

    /// Receivers of every message matching `pred`.
    fn receivers(&self, actions: &[Action], pred: impl Fn(&Message) -> bool) -> Vec<Principal> {
        self.sent(actions)
            .into_iter()
            .filter(|(_, m)| pred(m))
            .map(|(p, _)| p)
            .collect()
    }

    fn orders(&self) -> Vec<Principal> {
        OrderId::all(self.q().order).map(Principal::Order).collect()
    }

    fn auths(&self) -> Vec<Principal> {
        AuthId::all(self.q().auth).map(Principal::Auth).collect()
    }
}

fn inline(client: ClientId, nc: u64, op: &str) -> ReqCore {
    ReqCore {
        client,
        life: plumb_wire::Life::default(),
        nc: ReqNo(nc),
        body: Body::Inline(op.as_bytes().to_vec()),
    }
}

fn by_digest(client: ClientId, nc: u64, op: &str) -> ReqCore {
    ReqCore {
        client,
        life: plumb_wire::Life::default(),
        nc: ReqNo(nc),
        body: Body::Digest(Digest::of(op.as_bytes())),
    }
}

fn batch(requests: Vec<ReqCore>, time: Micros) -> Batch {
    Batch {
        requests,
        time,
        seed: 7,
    }
}

/// `put k<seq> v<seq>` from client `seq % 4`, one batch per seq, times 100 apart.
fn puts(first: Seq, count: u64) -> Vec<Batch> {
    (first.0..first.0 + count)
        .map(|s| {
            batch(
                vec![inline((s % 4) as u32, s, &format!("put k{s} v{s}"))],
                100 * s,
            )
        })
        .collect()
}

/// The batches delivered: (bare batch number, agreed time, null).
fn delivered(actions: &[Action]) -> Vec<(u64, Micros, bool)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Observe(Observation::Delivered {
                seq,
                agreed_time,
                null,
                ..
            }) => Some((seq.0, *agreed_time, *null)),
            _ => None,
        })
        .collect()
}

fn checkpoint_taken(actions: &[Action]) -> Vec<(Seq, Digest)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Observe(Observation::CheckpointTaken { seq, token }) => Some((*seq, *token)),
            _ => None,
        })
        .collect()
}

fn puts_of(actions: &[Action]) -> Vec<(String, Vec<u8>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Store(StoreOp::Put { key, value }) => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

fn fresh(net: &Net, i: u16) -> Replica {
    net.replica(i, Registers::default(), Recovered::default())
}

#[test]
fn es2_executes_only_after_r_plus_1_matching_next_batches() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let b = batch(vec![inline(1, 1, "put x 1")], 10);
    let out = net.next_batch(&mut r, Seq(1), &b, &[0]);
    assert!(delivered(&out).is_empty());
    // The same order replica again does not count twice.
    let out = net.next_batch(&mut r, Seq(1), &b, &[0]);
    assert!(delivered(&out).is_empty());
    assert!(r.app().calls.is_empty());
    assert_eq!(r.next_seq(), Seq(1));
    let out = net.next_batch(&mut r, Seq(1), &b, &[1]);
    assert_eq!(delivered(&out), vec![(1, 10, false)]);
    assert_eq!(r.app().calls.len(), 1);
    assert_eq!(r.next_seq(), Seq(2));
}

#[test]
fn es2_single_faulty_order_replica_cannot_make_it_execute_its_batch() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let bad = batch(vec![inline(1, 1, "put x evil")], 10);
    let good = batch(vec![inline(1, 1, "put x good")], 10);
    // Faulty order replica 3 pushes its batch repeatedly; one correct replica sends the truth.
    for _ in 0..5 {
        assert!(delivered(&net.next_batch(&mut r, Seq(1), &bad, &[3])).is_empty());
    }
    assert!(delivered(&net.next_batch(&mut r, Seq(1), &good, &[0])).is_empty());
    assert!(r.app().calls.is_empty());
    // A second correct replica completes the quorum for the true batch.
    let out = net.next_batch(&mut r, Seq(1), &good, &[1]);
    assert_eq!(delivered(&out).len(), 1);
    assert_eq!(r.app().map.get("x").map(String::as_str), Some("good"));
}

#[test]
fn tentative_batches_teach_a_batch_from_n_minus_u_of_one_view() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let b = batch(vec![inline(1, 1, "put x 1")], 10);
    // u = 1, r = 1: 4 order replicas, n - u = 3. Two of view 0 are not enough, however often.
    assert!(delivered(&net.tentative(&mut r, 0, Seq(1), &b, &[0, 1, 0])).is_empty());
    // A third replica prepared the batch in another view: not the same certificate.
    assert!(delivered(&net.tentative(&mut r, 1, Seq(1), &b, &[2])).is_empty());
    // A committed NEXT-BATCH is one vote; the committed quorum is r + 1 committed ones.
    assert!(delivered(&net.next_batch(&mut r, Seq(1), &b, &[0])).is_empty());
    let out = net.tentative(&mut r, 0, Seq(1), &b, &[3]);
    assert_eq!(delivered(&out), vec![(1, 10, false)]);
    assert_eq!(r.counters().get("learned-tentative"), 1);
    // The committed ones that follow find it learned.
    net.next_batch(&mut r, Seq(1), &b, &[1, 2]);
    assert_eq!(r.app().calls.len(), 1);
}

#[test]
fn a_committed_and_a_tentative_vote_of_one_replica_for_one_batch_are_one_vote_of_both() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let b = batch(vec![inline(1, 1, "put x 1")], 10);
    net.tentative(&mut r, 0, Seq(1), &b, &[0]);
    assert!(delivered(&net.next_batch(&mut r, Seq(1), &b, &[0])).is_empty());
    // Replica 0's tentative vote still counts with two more of view 0...
    let out = net.tentative(&mut r, 0, Seq(1), &b, &[1, 2]);
    assert_eq!(delivered(&out).len(), 1);
    // ...and on another replica, its committed one with one more committed.
    let mut r = fresh(&net, 1);
    net.tentative(&mut r, 0, Seq(1), &b, &[0]);
    net.next_batch(&mut r, Seq(1), &b, &[0]);
    let out = net.next_batch(&mut r, Seq(1), &b, &[3]);
    assert_eq!(delivered(&out).len(), 1);
    assert_eq!(r.counters().get("learned-committed"), 1);
}

#[test]
fn a_late_tentative_vote_for_another_batch_takes_back_nothing() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let a = batch(vec![inline(1, 1, "put x a")], 10);
    let b = batch(vec![inline(1, 1, "put x b")], 10);
    // Replica 0 committed b; its TENTATIVE-BATCH of a, from an earlier view, arrives after.
    net.next_batch(&mut r, Seq(1), &b, &[0]);
    net.tentative(&mut r, 0, Seq(1), &a, &[0]);
    // Replica 1 prepared a in view 1, then b in view 2: the view-1 one arriving late is kept out.
    net.tentative(&mut r, 2, Seq(1), &b, &[1]);
    net.tentative(&mut r, 1, Seq(1), &a, &[1]);
    let out = net.next_batch(&mut r, Seq(1), &b, &[2]);
    assert_eq!(delivered(&out).len(), 1);
    assert_eq!(r.app().map.get("x").map(String::as_str), Some("b"));
}

#[test]
fn later_next_batch_from_a_replica_replaces_its_earlier_vote() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let a = batch(vec![inline(1, 1, "put x a")], 10);
    let b = batch(vec![inline(1, 1, "put x b")], 10);
    net.next_batch(&mut r, Seq(1), &a, &[0]);
    net.next_batch(&mut r, Seq(1), &b, &[1]);
    // Replica 0 switches to b: b now has two votes, a none.
    let out = net.next_batch(&mut r, Seq(1), &b, &[0]);
    assert_eq!(delivered(&out).len(), 1);
    assert_eq!(r.app().map.get("x").map(String::as_str), Some("b"));
}

#[test]
fn es1_batches_are_delivered_in_sequence_order_only() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let bs = puts(Seq(1), 3);
    let out = net.learn_all(&mut r, Seq(2), &bs[1..]);
    assert!(
        delivered(&out).is_empty(),
        "batches 2 and 3 must wait for 1"
    );
    assert_eq!(r.next_seq(), Seq(1));
    let out = net.learn_all(&mut r, Seq(1), &bs[..1]);
    let seqs: Vec<u64> = delivered(&out).iter().map(|d| d.0).collect();
    assert_eq!(seqs, vec![1, 2, 3]);
    let called: Vec<u64> = r.app().calls.iter().map(|c| c.0 .0).collect();
    assert_eq!(called, vec![1, 2, 3]);
}

#[test]
fn already_executed_and_far_future_batches_are_dropped() {
    let net = Net::new(4);
    let mut r = fresh(&net, 0);
    net.learn_all(&mut r, Seq(1), &puts(Seq(1), 1));
    let out = net.learn_all(&mut r, Seq(1), &puts(Seq(1), 1));
    assert!(delivered(&out).is_empty());
    assert_eq!(r.counters().get("next-batch-already-executed"), 2);
    // Window: next_seq + 3 intervals.
    net.next_batch(&mut r, Seq(2) + 12 + 1, &puts(Seq(1), 1)[0], &[0]);
    assert_eq!(r.counters().drops(DropReason::NextBatchBeyondWindow), 1);
}

#[test]
fn el4_gap_or_stall_sends_last_exec_on_catch_up_timer() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let out = plumb_core::run(&mut r, NOW, Event::Start);
    assert_eq!(
        net.receivers(&out, |m| *m == Message::LastExec { next: Seq(1) }),
        net.orders()
    );
    assert!(out.contains(&Action::SetTimer {
        id: CATCH_UP,
        after: net.cfg.catch_up_us
    }));
    // Nothing learned since the last tick: ask anyway, batches sent while this replica was cut
    // off leave no trace here.
    let out = plumb_core::run(&mut r, NOW, Event::Timer(CATCH_UP));
    assert_eq!(
        net.receivers(&out, |m| *m == Message::LastExec { next: Seq(1) }),
        net.orders()
    );
    assert!(out.contains(&Action::SetTimer {
        id: CATCH_UP,
        after: net.cfg.catch_up_us
    }));
    // Batch 3 learned, 1 missing: a gap.
    net.learn_all(&mut r, Seq(3), &puts(Seq(3), 1));
    let out = plumb_core::run(&mut r, NOW, Event::Timer(CATCH_UP));
    assert_eq!(
        net.receivers(&out, |m| *m == Message::LastExec { next: Seq(1) }),
        net.orders()
    );
}

#[test]
fn el4_votes_that_never_reach_a_quorum_send_last_exec() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    net.next_batch(&mut r, Seq(1), &puts(Seq(1), 1)[0], &[2]);
    let out = plumb_core::run(&mut r, NOW, Event::Timer(CATCH_UP));
    assert_eq!(
        net.receivers(&out, |m| *m == Message::LastExec { next: Seq(1) }),
        net.orders()
    );
}

#[test]
fn el1a_batch_complete_and_fetch_then_bodies_checked_against_digest() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let op = "put big value";
    let b = batch(vec![by_digest(2, 1, op)], 10);
    let out = net.next_batch(&mut r, Seq(1), &b, &[0, 1]);
    let complete = Message::BatchComplete {
        seq: Seq(1),
        executed: vec![Executed {
            client: 2,
            nc: ReqNo(1),
        }],
    };
    assert_eq!(net.receivers(&out, |m| *m == complete), net.auths());
    let fetch = Message::Fetch {
        seq: Seq(1),
        client: 2,
        nc: ReqNo(1),
        digest: Digest::of(op.as_bytes()),
    };
    // First to the preferred replica, client mod n_auth.
    assert_eq!(
        net.receivers(&out, |m| *m == fetch),
        vec![Principal::Auth(AuthId(2))]
    );
    assert!(out.contains(&Action::SetTimer {
        id: FETCH,
        after: net.cfg.catch_up_us
    }));
    assert!(delivered(&out).is_empty());
    // A tick before the body has been awaited a whole timeout (the timer was armed for an
    // earlier batch) asks nobody again: the answer is most likely on its way.
    // The timer is set again for when it will have been, not a whole period from now (the
    // body would wait up to two).
    let out = plumb_core::run(&mut r, NOW + 1, Event::Timer(FETCH));
    assert!(net.receivers(&out, |m| *m == fetch).is_empty());
    assert!(out.contains(&Action::SetTimer {
        id: FETCH,
        after: net.cfg.catch_up_us - 1
    }));
    // Timeout: ask all.
    let later = NOW + net.cfg.catch_up_us;
    let out = plumb_core::run(&mut r, later, Event::Timer(FETCH));
    assert_eq!(net.receivers(&out, |m| *m == fetch), net.auths());
    // A faulty auth replica sends a different body: rejected.
    let wrong = Message::Command {
        seq: Seq(1),
        client: 2,
        nc: ReqNo(1),
        op: b"put big evil".to_vec(),
    };
    let out = net.deliver(&mut r, Principal::Auth(AuthId(1)), &wrong);
    assert!(delivered(&out).is_empty());
    assert_eq!(r.counters().drops(DropReason::CommandBadDigest), 1);
    assert!(r.app().calls.is_empty());
    let right = Message::Command {
        seq: Seq(1),
        client: 2,
        nc: ReqNo(1),
        op: op.as_bytes().to_vec(),
    };
    let out = net.deliver(&mut r, Principal::Auth(AuthId(3)), &right);
    assert_eq!(delivered(&out).len(), 1);
    assert_eq!(r.app().map.get("big").map(String::as_str), Some("value"));
    assert_eq!(
        net.sent_to(&out, Principal::Client(2)),
        vec![Message::Reply {
            nc: ReqNo(1),
            req: by_digest(2, 1, op).id_digest(),
            result: b"ok".to_vec(),
            at: plumb_wire::Position {
                seq: Seq(1),
                index: 0
            },
        }]
    );
    // Nothing left to fetch: the timer is not re-armed.
    let out = plumb_core::run(&mut r, later + net.cfg.catch_up_us, Event::Timer(FETCH));
    assert!(out.is_empty());
}

/// A body asked of one authentication replica is asked of all after four times the usual
/// round trip (a quarter of the fetch period before any came back), not the whole period: a
/// crashed replica first in some clients' quorum held each of their bodies 200 ms (a woken ZZ
/// replica re-executing the batches since the checkpoint waited it out). Only answers from
/// the replica first asked tell the round trip, and later asks of all wait the period.
#[test]
fn a_body_is_asked_of_every_replica_after_four_usual_round_trips() {
    let mut net = Net::new(8);
    Arc::make_mut(&mut net.cfg).catch_up_us = 200_000;
    let mut r = fresh(&net, 0);
    let fetch_of = |seq, client, nc, op: &str| Message::Fetch {
        seq,
        client,
        nc,
        digest: Digest::of(op.as_bytes()),
    };
    let command = |seq, client, nc, op: &str| Message::Command {
        seq,
        client,
        nc,
        op: op.as_bytes().to_vec(),
    };
    // No body came back yet: a quarter of the period.
    let out = net.next_batch(
        &mut r,
        Seq(1),
        &batch(vec![by_digest(2, 1, "put a 1")], 10),
        &[0, 1],
    );
    assert!(out.contains(&Action::SetTimer {
        id: FETCH,
        after: 50_000
    }));
    // Answered by the replica asked (client 2's first, a2) 4 ms later: a usual 4 ms, so the
    // next body waits the 20 ms floor.
    let out = net.deliver_at(
        &mut r,
        NOW + 4_000,
        Principal::Auth(AuthId(2)),
        &command(Seq(1), 2, ReqNo(1), "put a 1"),
    );
    assert_eq!(delivered(&out).len(), 1);
    assert_eq!(r.learning.usual_fetch, Some(4_000));
    let later = NOW + 10_000;
    let out = plumb_core::run(&mut r, later, Event::Timer(FETCH));
    assert!(out.is_empty(), "nothing left to fetch");
    let b2 = batch(vec![by_digest(3, 1, "put b 1")], 11);
    let msg = Message::NextBatch {
        view: View::ZERO,
        seq: Seq(2),
        batch: b2,
    };
    let mut out = net.deliver_at(&mut r, later, Principal::Order(OrderId(0)), &msg);
    out.extend(net.deliver_at(&mut r, later, Principal::Order(OrderId(1)), &msg));
    assert_eq!(
        net.receivers(&out, |m| *m == fetch_of(Seq(2), 3, ReqNo(1), "put b 1")),
        vec![Principal::Auth(AuthId(3))]
    );
    assert!(out.contains(&Action::SetTimer {
        id: FETCH,
        after: 20_000
    }));
    // a3 is silent: every replica is asked 20 ms later, and a3 is no longer asked first.
    let out = plumb_core::run(&mut r, later + 20_000, Event::Timer(FETCH));
    assert_eq!(
        net.receivers(&out, |m| *m == fetch_of(Seq(2), 3, ReqNo(1), "put b 1")),
        net.auths()
    );
    assert!(
        out.contains(&Action::SetTimer {
            id: FETCH,
            after: 200_000
        }),
        "then every period"
    );
    // Another replica's answer is not a round trip of the one asked first.
    net.deliver_at(
        &mut r,
        later + 21_000,
        Principal::Auth(AuthId(0)),
        &command(Seq(2), 3, ReqNo(1), "put b 1"),
    );
    assert_eq!(r.learning.usual_fetch, Some(4_000));
}

/// A silent authentication replica is asked first once: after it leaves a FETCH unanswered for
/// a whole timeout, first asks for its clients go to the next replica of their preferred
/// quorum, so it no longer stalls every batch holding one of their requests.
#[test]
fn an_auth_replica_that_leaves_a_fetch_unanswered_is_not_asked_first_again() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let fetch_of = |seq, nc, op: &str| Message::Fetch {
        seq,
        client: 2,
        nc,
        digest: Digest::of(op.as_bytes()),
    };
    let out = net.next_batch(
        &mut r,
        Seq(1),
        &batch(vec![by_digest(2, 1, "put a 1")], 10),
        &[0, 1],
    );
    assert_eq!(
        net.receivers(&out, |m| *m == fetch_of(Seq(1), ReqNo(1), "put a 1")),
        vec![Principal::Auth(AuthId(2))]
    );
    let later = NOW + net.cfg.catch_up_us;
    plumb_core::run(&mut r, later, Event::Timer(FETCH));
    let out = net.next_batch(
        &mut r,
        Seq(2),
        &batch(vec![by_digest(2, 2, "put a 2")], 11),
        &[0, 1],
    );
    assert_eq!(
        net.receivers(&out, |m| *m == fetch_of(Seq(2), ReqNo(2), "put a 2")),
        vec![Principal::Auth(AuthId(3))],
        "the next replica of client 2's preferred quorum"
    );
}

#[test]
fn command_for_an_unlearned_batch_is_dropped() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let msg = Message::Command {
        seq: Seq(1),
        client: 2,
        nc: ReqNo(1),
        op: b"x".to_vec(),
    };
    net.deliver(&mut r, Principal::Auth(AuthId(0)), &msg);
    assert_eq!(r.counters().drops(DropReason::CommandUnknownBatch), 1);
}

#[test]
fn el2_reply_sent_and_cached_then_el3_retransmit_resends_it() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let out = net.learn_all(&mut r, Seq(1), &[batch(vec![inline(1, 1, "put x 1")], 10)]);
    let reply = Message::Reply {
        nc: ReqNo(1),
        req: inline(1, 1, "put x 1").id_digest(),
        result: b"ok".to_vec(),
        at: plumb_wire::Position {
            seq: Seq(1),
            index: 0,
        },
    };
    assert_eq!(net.sent_to(&out, Principal::Client(1)), vec![reply.clone()]);

    let rt = Message::Retransmit {
        client: 1,
        next_seq: Seq(2),
    };
    let out = net.deliver(&mut r, Principal::Order(OrderId(2)), &rt);
    assert_eq!(net.sent_to(&out, Principal::Client(1)), vec![reply.clone()]);
    let complete = Message::BatchComplete {
        seq: Seq(1),
        executed: vec![Executed {
            client: 1,
            nc: ReqNo(1),
        }],
    };
    assert_eq!(net.receivers(&out, |m| *m == complete), net.auths());
    assert!(net
        .receivers(&out, |m| matches!(m, Message::LastExec { .. }))
        .is_empty());
    // Rate limited per client.
    let out = net.deliver(&mut r, Principal::Order(OrderId(3)), &rt);
    assert!(out.is_empty());
    let out = net.deliver_at(
        &mut r,
        NOW + net.cfg.catch_up_us,
        Principal::Order(OrderId(3)),
        &rt,
    );
    assert_eq!(net.sent_to(&out, Principal::Client(1)), vec![reply]);
}

/// "Reply names its operation": client 1 lost its record and reused number 1 for operation B
/// while its previous life's operation A at number 1 was executed. Every reply for number 1,
/// the first one and the one resent from the cache, and the cache inside the checkpoint, names
/// A, so the client can never take A's result for B's answer.
#[test]
fn reply_names_its_operation_also_when_resent_from_the_cache_and_the_checkpoint() {
    let net = Net::new(2);
    let mut r = fresh(&net, 0);
    let old = inline(1, 1, "put x A");
    let new = inline(1, 1, "put x B");
    assert_ne!(old.id_digest(), new.id_digest());
    let out = net.learn_all(
        &mut r,
        Seq(1),
        &[
            batch(vec![old.clone()], 10),
            batch(vec![inline(2, 1, "put y 1")], 20),
        ],
    );
    let named = |msgs: Vec<Message>| -> Vec<(u64, Digest)> {
        msgs.into_iter()
            .filter_map(|m| match m {
                Message::Reply { nc, req, .. } => Some((nc.0, req)),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        named(net.sent_to(&out, Principal::Client(1))),
        vec![(1, old.id_digest())]
    );
    let cp = ExecCheckpoint::decode(&puts_of(&out)[0].1).expect("checkpoint at 2");
    assert_eq!(cp.replies[&1].req, old.id_digest());

    let rt = Message::Retransmit {
        client: 1,
        next_seq: Seq(3),
    };
    let out = net.deliver(&mut r, Principal::Order(OrderId(0)), &rt);
    assert_eq!(
        named(net.sent_to(&out, Principal::Client(1))),
        vec![(1, old.id_digest())]
    );
}

/// A client that lost its record learns the last number it used: each execution replica
/// answers with the number in its reply table, 0 for a client it never answered.
#[test]
fn last_request_query_answers_the_last_executed_number() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let ask = |r: &mut Replica, c| {
        let out = net.deliver(r, Principal::Client(c), &Message::LastRequestQuery);
        net.sent_to(&out, Principal::Client(c))
    };
    assert_eq!(ask(&mut r, 3), vec![Message::LastRequest { nc: ReqNo(0) }]);
    net.learn_all(&mut r, Seq(1), &[batch(vec![inline(3, 3, "put z 1")], 10)]);
    assert_eq!(ask(&mut r, 3), vec![Message::LastRequest { nc: ReqNo(3) }]);
    assert_eq!(ask(&mut r, 2), vec![Message::LastRequest { nc: ReqNo(0) }]);
    // Only clients ask; from anyone else the query is dropped.
    let out = net.deliver(
        &mut r,
        Principal::Order(OrderId(0)),
        &Message::LastRequestQuery,
    );
    assert!(net.sent(&out).is_empty());
}

#[test]
fn el4_retransmit_from_an_order_stage_ahead_sends_last_exec() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let out = net.deliver(
        &mut r,
        Principal::Order(OrderId(0)),
        &Message::Retransmit {
            client: 3,
            next_seq: Seq(5),
        },
    );
    assert_eq!(
        net.receivers(&out, |m| *m == Message::LastExec { next: Seq(1) }),
        net.orders()
    );
    // No reply cached for client 3: nothing to resend.
    assert!(net.sent_to(&out, Principal::Client(3)).is_empty());
}

#[test]
fn es4_checkpoint_persisted_and_synced_before_cp_token() {
    let net = Net::new(2);
    let mut r = fresh(&net, 0);
    let out = net.learn_all(&mut r, Seq(1), &puts(Seq(1), 1));
    assert!(checkpoint_taken(&out).is_empty());
    let out = net.learn_all(&mut r, Seq(2), &puts(Seq(2), 1));
    let key = checkpoint_key(Seq(2));
    let put_at = out
        .iter()
        .position(|a| matches!(a, Action::Store(StoreOp::Put { key: k, .. }) if *k == key))
        .expect("checkpoint put");
    let sync_at = out
        .iter()
        .position(|a| *a == Action::Store(StoreOp::Sync))
        .expect("sync");
    let sent = net.sent(&out);
    let token_at = out
        .iter()
        .position(|a| {
            matches!(
                a,
                Action::Send {
                    to: Principal::Order(_),
                    ..
                }
            )
        })
        .expect("cp-token sent");
    assert!(
        put_at < sync_at && sync_at < token_at,
        "put {put_at}, sync {sync_at}, token {token_at}"
    );
    let value = &puts_of(&out)[0].1;
    let token = Digest::of(value);
    let cp_token = Message::CpToken { seq: Seq(2), token };
    assert_eq!(
        sent.iter()
            .filter(|(_, m)| *m == cp_token)
            .map(|(p, _)| *p)
            .collect::<Vec<_>>(),
        net.orders()
    );
    assert_eq!(checkpoint_taken(&out), vec![(Seq(2), token)]);
    let cp = ExecCheckpoint::decode(value).unwrap();
    assert_eq!(cp.seq, Seq(2));
    assert_eq!(cp.agreed_time, 200);
    assert_eq!(cp.replies.len(), 2);
}

/// Only the token waits for its checkpoint's sync: the replies, reports and fetches of the
/// batches after it leave at once (a crash before the sync re-executes them alike).
#[test]
fn only_the_checkpoint_token_waits_for_the_checkpoints_sync() {
    let net = Net::new(2);
    let mut r = fresh(&net, 0);
    let out = net.learn_all(&mut r, Seq(1), &puts(Seq(1), 3));
    let sync_at = out
        .iter()
        .position(|a| *a == Action::Store(StoreOp::Sync))
        .expect("the checkpoint of batch 2 is synced");
    let (mut held, mut unsynced) = (Vec::new(), Vec::new());
    for a in &out[sync_at + 1..] {
        match a {
            Action::Send { .. } => held.extend(net.sent(std::slice::from_ref(a))),
            Action::SendUnsynced { .. } => unsynced.extend(net.sent(std::slice::from_ref(a))),
            _ => {}
        }
    }
    assert!(!held.is_empty());
    assert!(
        held.iter()
            .all(|(p, m)| matches!((p, m), (Principal::Order(_), Message::CpToken { .. }))),
        "held behind the sync: {held:?}"
    );
    assert!(
        unsynced
            .iter()
            .any(|(p, m)| matches!((p, m), (Principal::Client(3), Message::Reply { .. }))),
        "batch 3's reply leaves at once: {unsynced:?}"
    );
}

#[test]
fn correct_replicas_produce_identical_checkpoint_tokens() {
    let net = Net::new(2);
    let mut a = fresh(&net, 0);
    let mut b = fresh(&net, 1);
    let ta = checkpoint_taken(&net.learn_all(&mut a, Seq(1), &puts(Seq(1), 4)));
    let tb = checkpoint_taken(&net.learn_all(&mut b, Seq(1), &puts(Seq(1), 4)));
    assert_eq!(ta.len(), 2);
    assert_eq!(ta, tb);
}

#[test]
fn checkpoints_older_than_two_intervals_are_deleted_and_released() {
    let net = Net::new(2);
    let mut r = fresh(&net, 0);
    let out = net.learn_all(&mut r, Seq(1), &puts(Seq(1), 8));
    assert_eq!(r.held_checkpoints(), vec![Seq(4), Seq(6), Seq(8)]);
    assert!(out.contains(&Action::Store(StoreOp::Delete {
        key: checkpoint_key(Seq(2))
    })));
    assert!(!out.contains(&Action::Store(StoreOp::Delete {
        key: checkpoint_key(Seq(4))
    })));
    assert_eq!(r.app().released.len(), 1);
}

/// Replica 0 executes `count` put batches and reports its checkpoint tokens.
fn leader(net: &Net, app: Registers, count: u64) -> (Replica, Vec<Action>) {
    let mut a = net.replica(0, app, Recovered::default());
    let out = net.learn_all(&mut a, Seq(1), &puts(Seq(1), count));
    (a, out)
}

fn load_cp(net: &Net, r: &mut Replica, seq: Seq, token: Digest, orders: &[u16]) -> Vec<Action> {
    let msg = Message::LoadCp { seq, token };
    orders
        .iter()
        .flat_map(|o| net.deliver(r, Principal::Order(OrderId(*o)), &msg))
        .collect()
}

#[test]
fn el5_load_cp_needs_r_plus_1_and_transferred_checkpoint_is_verified() {
    let net = Net::new(2);
    let (mut a, out) = leader(&net, Registers::default(), 4);
    let (seq, token) = *checkpoint_taken(&out).last().unwrap();
    assert_eq!(seq, Seq(4));
    let mut b = net.replica(1, Registers::default(), Recovered::default());
    let fetch = Message::FetchExecCp { seq: Seq(4) };
    // One order replica is not enough: it may be the faulty one.
    let out = load_cp(&net, &mut b, Seq(4), token, &[3]);
    assert!(net.receivers(&out, |m| *m == fetch).is_empty());
    let out = load_cp(&net, &mut b, Seq(4), token, &[0]);
    assert_eq!(
        net.receivers(&out, |m| *m == fetch),
        vec![Principal::Exec(ExecId(0)), Principal::Exec(ExecId(2))]
    );

    // A faulty peer sends a checkpoint that does not match the token.
    let mut forged = ExecCheckpoint::decode(&a.transfer.held[&Seq(4)].bytes).unwrap();
    forged
        .replies
        .insert(1, CachedReply::test(ReqNo(99), b"forged"));
    let forged = Message::ExecCpState {
        seq: Seq(4),
        state: forged.encode(),
    };
    let out = net.deliver(&mut b, Principal::Exec(ExecId(2)), &forged);
    assert_eq!(b.counters().drops(DropReason::ExecCpBadToken), 1);
    assert_eq!(b.next_seq(), Seq(1));
    assert!(out.is_empty());

    // A correct peer answers the fetch.
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let state = net.sent_to(&served, Principal::Exec(ExecId(1)));
    assert_eq!(state.len(), 1);
    let out = net.deliver(&mut b, Principal::Exec(ExecId(0)), &state[0]);
    assert_eq!(b.next_seq(), Seq(5));
    assert!(
        out.contains(&Action::Observe(Observation::CheckpointLoaded {
            seq: Seq(4),
            token
        }))
    );
    let put_at = out
        .iter()
        .position(
            |x| matches!(x, Action::Store(StoreOp::Put { key, .. }) if *key == checkpoint_key(Seq(4))),
        )
        .expect("loaded checkpoint persisted");
    assert_eq!(out.get(put_at + 1), Some(&Action::Store(StoreOp::Sync)));
    assert_eq!(b.app().state_digest(), a.app().state_digest());
    assert_eq!(b.agreed_time(), a.agreed_time());
    // The reply cache came along: a retransmission is answered like the leader would.
    let rt = Message::Retransmit {
        client: 3,
        next_seq: Seq(5),
    };
    let from_a = net.sent_to(
        &net.deliver(&mut a, Principal::Order(OrderId(0)), &rt),
        Principal::Client(3),
    );
    let from_b = net.sent_to(
        &net.deliver(&mut b, Principal::Order(OrderId(0)), &rt),
        Principal::Client(3),
    );
    assert_eq!(from_a, from_b);
    assert_eq!(from_b.len(), 1);
    // Execution continues from 5 with a strictly later agreed time.
    let out = net.learn_all(&mut b, Seq(5), &[batch(vec![inline(1, 5, "put y 1")], 1)]);
    assert_eq!(delivered(&out), vec![(5, 401, false)]);
}

#[test]
fn load_cp_for_a_checkpoint_not_ahead_is_ignored() {
    let net = Net::new(2);
    let (_, out) = leader(&net, Registers::default(), 4);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    let mut b = net.replica(1, Registers::default(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 4));
    let out = load_cp(&net, &mut b, Seq(4), token, &[0, 1]);
    assert!(net
        .receivers(&out, |m| matches!(m, Message::FetchExecCp { .. }))
        .is_empty());
    assert_eq!(b.counters().get("load-cp-not-behind"), 2);
}

#[test]
fn state_transfer_fetches_missing_application_state_by_token() {
    let net = Net::new(2);
    let (mut a, out) = leader(&net, Registers::by_token(), 2);
    let (seq, token) = *checkpoint_taken(&out).last().unwrap();
    assert_eq!(seq, Seq(2));
    let mut b = net.replica(1, Registers::by_token(), Recovered::default());
    load_cp(&net, &mut b, Seq(2), token, &[1, 2]);
    let served = net.deliver(
        &mut a,
        Principal::Exec(ExecId(1)),
        &Message::FetchExecCp { seq: Seq(2) },
    );
    let out = net.deliver(
        &mut b,
        Principal::Exec(ExecId(0)),
        &net.sent_to(&served, Principal::Exec(ExecId(1)))[0],
    );
    // The application reports the state it lacks; the replica asks its peers.
    let asks = net.sent(&out);
    assert_eq!(asks.len(), 2);
    let Message::FetchState { token: piece } = asks[0].1.clone() else {
        panic!("expected FETCH-STATE, got {asks:?}")
    };
    assert_eq!(b.next_seq(), Seq(1));
    // A faulty peer sends the wrong bytes: rejected.
    net.deliver(
        &mut b,
        Principal::Exec(ExecId(2)),
        &Message::State {
            token: piece,
            data: b"junk".to_vec(),
        },
    );
    assert_eq!(b.counters().drops(DropReason::StateBadDigest), 1);
    assert_eq!(b.next_seq(), Seq(1));
    // The catch-up timer re-asks while waiting.
    let out = plumb_core::run(&mut b, NOW, Event::Timer(CATCH_UP));
    assert_eq!(
        net.receivers(&out, |m| *m == Message::FetchState { token: piece }),
        vec![Principal::Exec(ExecId(0)), Principal::Exec(ExecId(2))]
    );
    let served = net.deliver(
        &mut a,
        Principal::Exec(ExecId(1)),
        &Message::FetchState { token: piece },
    );
    let out = net.deliver(
        &mut b,
        Principal::Exec(ExecId(0)),
        &net.sent_to(&served, Principal::Exec(ExecId(1)))[0],
    );
    assert!(
        out.contains(&Action::Observe(Observation::CheckpointLoaded {
            seq: Seq(2),
            token
        }))
    );
    assert_eq!(b.next_seq(), Seq(3));
    assert_eq!(b.app().state_digest(), a.app().state_digest());
}

#[test]
fn load_cp_uses_a_local_checkpoint_when_it_holds_one() {
    let net = Net::new(2);
    let (a, out) = leader(&net, Registers::default(), 4);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    // Replica holding checkpoint 4 on disk but (artificially) behind it.
    let records: BTreeMap<String, Vec<u8>> = [(
        checkpoint_key(Seq(4)),
        a.transfer.held[&Seq(4)].bytes.clone(),
    )]
    .into();
    let mut b = net.replica(
        1,
        Registers::default(),
        Recovered {
            records,
            corrupt: vec![],
        },
    );
    b.executed.next_seq = Seq(1);
    let out = load_cp(&net, &mut b, Seq(4), token, &[0, 1]);
    assert!(net
        .receivers(&out, |m| matches!(m, Message::FetchExecCp { .. }))
        .is_empty());
    assert!(
        out.contains(&Action::Observe(Observation::CheckpointLoaded {
            seq: Seq(4),
            token
        }))
    );
    assert_eq!(b.next_seq(), Seq(5));
}

#[test]
fn es5_recovery_loads_newest_checkpoint_that_decodes() {
    let net = Net::new(2);
    let (a, out) = leader(&net, Registers::default(), 5);
    let mut records: BTreeMap<String, Vec<u8>> = puts_of(&out).into_iter().collect();
    assert_eq!(records.len(), 2);
    // A newer record that does not decode, and one whose checksum failed.
    records.insert(checkpoint_key(Seq(6)), b"torn write".to_vec());
    let corrupt = vec![checkpoint_key(Seq(8))];
    let mut r = net.replica(0, Registers::default(), Recovered { records, corrupt });
    assert_eq!(r.next_seq(), Seq(5));
    assert_eq!(r.held_checkpoints(), vec![Seq(2), Seq(4)]);
    assert_eq!(r.counters().get("recovery-undecodable-checkpoint"), 1);
    assert_eq!(r.counters().get("recovery-corrupt-record"), 1);
    let token4 = a.transfer.held[&Seq(4)].token;
    let out = plumb_core::run(&mut r, NOW, Event::Start);
    assert!(
        out.contains(&Action::Observe(Observation::CheckpointLoaded {
            seq: Seq(4),
            token: token4
        }))
    );
    assert!(out.contains(&Action::Store(StoreOp::Delete {
        key: checkpoint_key(Seq(6))
    })));
    assert!(out.contains(&Action::Store(StoreOp::Delete {
        key: checkpoint_key(Seq(8))
    })));
    assert_eq!(
        net.receivers(&out, |m| *m == Message::LastExec { next: Seq(5) }),
        net.orders()
    );
    // State at 4 differs from the leader's at 5; replaying 5 brings them together.
    assert_ne!(r.app().state_digest(), a.app().state_digest());
    net.learn_all(&mut r, Seq(5), &puts(Seq(5), 1));
    assert_eq!(r.app().state_digest(), a.app().state_digest());
    assert_eq!(r.agreed_time(), a.agreed_time());
}

#[test]
fn fresh_start_emits_no_checkpoint_loaded() {
    let net = Net::new(2);
    let mut r = fresh(&net, 0);
    let out = plumb_core::run(&mut r, NOW, Event::Start);
    assert!(!out.iter().any(|a| matches!(a, Action::Observe(_))));
    assert_eq!(r.next_seq(), Seq(1));
}

/// The nonces of the EXEC-PROBEs in `actions` (one per probe round, sent to every order replica).
fn probe_nonces(net: &Net, actions: &[Action]) -> Vec<u64> {
    let mut nonces: Vec<u64> = net
        .sent(actions)
        .into_iter()
        .filter_map(|(_, m)| match m {
            Message::ExecProbe { nonce } => Some(nonce),
            _ => None,
        })
        .collect();
    nonces.dedup();
    nonces
}

/// Start `r` and answer its probe from `n - u` order replicas with `seq`.
fn start_and_answer_probe(net: &Net, r: &mut Replica, seq: Seq) {
    let out = plumb_core::run(r, NOW, Event::Start);
    let nonce = probe_nonces(net, &out)[0];
    for o in 0..net.q().order_medium() as u16 {
        net.deliver(
            r,
            Principal::Order(OrderId(o)),
            &Message::ExecProbeReply { nonce, seq },
        );
    }
}

fn read_only(net: &Net, r: &mut Replica, nc: ReqNo, key: &str) -> Vec<Message> {
    let out = net.deliver(
        r,
        Principal::Client(3),
        &Message::ReadOnly {
            life: plumb_wire::Life::default(),
            nc,
            op: format!("get {key}").into_bytes(),
        },
    );
    net.sent_to(&out, Principal::Client(3))
}

/// Linearizability of read-only requests, read-only after restart: a replica that restarts
/// from an old checkpoint must not answer a READ-ONLY from that state (the write it executed
/// after the checkpoint may have been acknowledged, and lagging peers may agree with the old
/// value). It answers once `n - u` order replicas answered a fresh probe and it executed
/// through the highest answer. Fails on the code before the gate (it answered at once).
#[test]
fn read_only_after_restart_waits_until_caught_up_with_the_order_stage() {
    let net = Net::new(2);
    let (a, _) = leader(&net, Registers::default(), 5);
    assert_eq!(a.app().map.get("k5").map(String::as_str), Some("v5"));
    // Restart with checkpoint 4 on disk: batch 5 (`put k5 v5`) is forgotten.
    let records: BTreeMap<String, Vec<u8>> = [(
        checkpoint_key(Seq(4)),
        a.transfer.held[&Seq(4)].bytes.clone(),
    )]
    .into();
    let mut r = net.replica(
        0,
        Registers::default(),
        Recovered {
            records,
            corrupt: vec![],
        },
    );
    assert_eq!(r.next_seq(), Seq(5));
    let out = plumb_core::run(&mut r, NOW, Event::Start);
    let nonces = probe_nonces(&net, &out);
    assert_eq!(nonces.len(), 1);
    assert_eq!(
        net.receivers(&out, |m| matches!(m, Message::ExecProbe { .. })),
        net.orders()
    );
    assert!(
        read_only(&net, &mut r, ReqNo(1), "k5").is_empty(),
        "old state"
    );
    assert_eq!(r.counters().get("read-only-not-ready"), 1);

    // Answers with a wrong nonce or from a non-order principal do not count.
    net.deliver(
        &mut r,
        Principal::Order(OrderId(0)),
        &Message::ExecProbeReply {
            nonce: nonces[0] ^ 1,
            seq: Seq(0),
        },
    );
    net.deliver(
        &mut r,
        Principal::Exec(ExecId(1)),
        &Message::ExecProbeReply {
            nonce: nonces[0],
            seq: Seq(0),
        },
    );
    assert_eq!(r.counters().drops(DropReason::ProbeReplyBadNonce), 1);
    assert_eq!(r.counters().drops(DropReason::ProbeReplyNotOrder), 1);

    // n - u = 3 order replicas answer; the maximum (5) counts, not the lower answers.
    let answers = [(0u16, Seq(4)), (1, Seq(5)), (2, Seq(3))];
    for (i, (o, seq)) in answers.iter().enumerate() {
        if i == 1 {
            // Still short of n - u answers on the catch-up tick: probe again, new nonce;
            // answers to the earlier probe still count.
            let tick = plumb_core::run(&mut r, NOW, Event::Timer(CATCH_UP));
            let again = probe_nonces(&net, &tick);
            assert_eq!(again.len(), 1);
            assert_ne!(again[0], nonces[0]);
        }
        net.deliver(
            &mut r,
            Principal::Order(OrderId(*o)),
            &Message::ExecProbeReply {
                nonce: nonces[0],
                seq: *seq,
            },
        );
    }
    assert!(
        read_only(&net, &mut r, ReqNo(2), "k5").is_empty(),
        "not through 5"
    );
    let tick = plumb_core::run(&mut r, NOW, Event::Timer(CATCH_UP));
    assert!(probe_nonces(&net, &tick).is_empty(), "n - u answered");

    net.learn_all(&mut r, Seq(5), &puts(Seq(5), 1));
    assert_eq!(
        read_only(&net, &mut r, ReqNo(3), "k5"),
        vec![Message::ReadOnlyReply {
            nc: ReqNo(3),
            req: plumb_wire::request_id(
                3,
                plumb_wire::Life::default(),
                ReqNo(3),
                Digest::of(b"get k5")
            ),
            result: b"v5".to_vec(),
            executed: Seq(5)
        }]
    );
    assert_eq!(r.counters().get("read-only-not-ready"), 2);
}

#[test]
fn read_only_reply_reports_the_last_executed_batch() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    start_and_answer_probe(&net, &mut r, Seq(0));
    net.learn_all(&mut r, Seq(1), &[batch(vec![inline(1, 1, "put x 42")], 10)]);
    let out = net.deliver(
        &mut r,
        Principal::Client(3),
        &Message::ReadOnly {
            life: plumb_wire::Life::default(),
            nc: ReqNo(9),
            op: b"get x".to_vec(),
        },
    );
    assert_eq!(
        net.sent_to(&out, Principal::Client(3)),
        vec![Message::ReadOnlyReply {
            nc: ReqNo(9),
            req: plumb_wire::request_id(
                3,
                plumb_wire::Life::default(),
                ReqNo(9),
                Digest::of(b"get x")
            ),
            result: b"42".to_vec(),
            executed: Seq(1)
        }]
    );
    assert_eq!(
        r.app().calls.len(),
        1,
        "read-only requests are not executed as batches"
    );
}

#[test]
fn null_batch_advances_without_calling_the_application() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let out = net.learn_all(&mut r, Seq(1), &[batch(vec![], 500)]);
    assert_eq!(delivered(&out), vec![(1, 0, true)]);
    assert!(r.app().calls.is_empty());
    assert_eq!(r.next_seq(), Seq(2));
    net.learn_all(&mut r, Seq(2), &[batch(vec![inline(1, 1, "put x 1")], 10)]);
    assert_eq!(
        r.app().calls.iter().map(|c| c.0).collect::<Vec<_>>(),
        vec![Seq(2)]
    );
}

#[test]
fn ls7_agreed_time_strictly_increases_even_if_batch_times_do_not() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let bs = vec![
        batch(vec![inline(1, 1, "put a 1")], 100),
        batch(vec![inline(1, 2, "put a 2")], 50),
        batch(vec![], 500),
        batch(vec![inline(1, 3, "put a 3")], 100),
        batch(vec![inline(1, 4, "put a 4")], 900),
    ];
    let out = net.learn_all(&mut r, Seq(1), &bs);
    let times: Vec<Micros> = delivered(&out).iter().map(|d| d.1).collect();
    assert_eq!(times, vec![100, 101, 101, 102, 900]);
    let app_times: Vec<Micros> = r.app().calls.iter().map(|c| c.1.time).collect();
    assert_eq!(app_times, vec![100, 101, 102, 900]);
    assert!(r.app().calls.iter().all(|c| c.1.seed == 7));
}

#[test]
fn push_events_get_increasing_ids_per_client() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let out = net.learn_all(
        &mut r,
        Seq(1),
        &[
            batch(vec![inline(1, 1, "push 2 a")], 1),
            batch(vec![inline(1, 2, "push 2 b")], 2),
        ],
    );
    let pushes: Vec<Message> = net
        .sent_to(&out, Principal::Client(2))
        .into_iter()
        .filter(|m| matches!(m, Message::Push { .. }))
        .collect();
    assert_eq!(
        pushes,
        vec![
            Message::Push {
                event: 1,
                payload: b"a".to_vec()
            },
            Message::Push {
                event: 2,
                payload: b"b".to_vec()
            }
        ]
    );
}

#[test]
fn serving_peers_only_what_is_held() {
    let net = Net::new(2);
    let (mut a, _) = leader(&net, Registers::by_token(), 2);
    let out = net.deliver(
        &mut a,
        Principal::Exec(ExecId(1)),
        &Message::FetchExecCp { seq: Seq(6) },
    );
    assert!(out.is_empty());
    let out = net.deliver(
        &mut a,
        Principal::Exec(ExecId(1)),
        &Message::FetchState {
            token: Digest::of(b"nothing"),
        },
    );
    assert!(out.is_empty());
    // Unrequested state and checkpoints are dropped.
    net.deliver(
        &mut a,
        Principal::Exec(ExecId(2)),
        &Message::ExecCpState {
            seq: Seq(2),
            state: vec![1, 2, 3],
        },
    );
    net.deliver(
        &mut a,
        Principal::Exec(ExecId(2)),
        &Message::State {
            token: Digest::ZERO,
            data: vec![],
        },
    );
    assert_eq!(a.counters().drops(DropReason::ExecCpUnrequested), 1);
    assert_eq!(a.counters().drops(DropReason::StateUnrequested), 1);
}

#[test]
fn unauthenticated_and_misdirected_input_is_dropped_and_counted() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    plumb_core::run(&mut r, NOW, Event::Receive(vec![1, 2, 3]));
    assert_eq!(r.counters().drops(DropReason::Short), 1);
    // A frame for another exec replica.
    let frame = net.rings[&Principal::Order(OrderId(0))]
        .seal(
            Principal::Exec(ExecId(1)),
            &Message::LastExec { next: Seq(1) },
        )
        .unwrap();
    plumb_core::run(&mut r, NOW, Event::Receive(frame));
    assert_eq!(r.counters().drops(DropReason::WrongReceiver), 1);
    // A client cannot send NEXT-BATCH, an auth replica cannot send LOAD-CP.
    net.deliver(
        &mut r,
        Principal::Client(1),
        &Message::NextBatch {
            view: View::ZERO,
            seq: Seq(1),
            batch: puts(Seq(1), 1)[0].clone(),
        },
    );
    net.deliver(
        &mut r,
        Principal::Auth(AuthId(1)),
        &Message::LoadCp {
            seq: Seq(4),
            token: Digest::ZERO,
        },
    );
    assert_eq!(r.counters().drops(DropReason::Unexpected), 2);
    assert_eq!(r.next_seq(), Seq(1));
}

#[test]
fn oversized_batches_are_dropped() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let many = (0..net.cfg.batch_max as u32 + 1)
        .map(|c| inline(c, 1, "put a 1"))
        .collect();
    net.next_batch(&mut r, Seq(1), &batch(many, 1), &[0, 1]);
    assert_eq!(r.counters().drops(DropReason::NextBatchOversized), 2);
    assert_eq!(r.next_seq(), Seq(1));
}

proptest! {
    /// ES1/ES2 under any arrival order of the r + 1 votes for each of a run of batches, with a
    /// faulty replica voting for other batches: every batch is delivered once, in order, and
    /// it is the true one.
    #[test]
    fn es1_es2_any_arrival_order_delivers_each_true_batch_once_in_order(
        order in Just((1..=6u64).flat_map(|s| [(s, 0u16), (s, 1u16), (s, 3u16)]).collect::<Vec<_>>()).prop_shuffle()
    ) {
        let net = Net::new(4);
        let mut r = fresh(&net, 0);
        let truth = puts(Seq(1), 6);
        let mut seqs = Vec::new();
        for (s, o) in order {
            let b = if o == 3 { batch(vec![inline(0, s, "put evil 1")], 1) } else { truth[(s - 1) as usize].clone() };
            let out = net.next_batch(&mut r, Seq(s), &b, &[o]);
            seqs.extend(delivered(&out).into_iter().map(|d| d.0));
        }
        prop_assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
        prop_assert!(!r.app().map.contains_key("evil"));
    }

    #[test]
    fn arbitrary_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let net = Net::new(4);
        let mut r = fresh(&net, 0);
        plumb_core::run(&mut r, NOW, Event::Receive(bytes));
    }

    /// Authenticated but arbitrary peer messages never panic and never execute anything.
    #[test]
    fn arbitrary_authenticated_peer_messages_never_panic(
        seq in 0u64..40, body in proptest::collection::vec(any::<u8>(), 0..64), token in any::<[u8; 32]>()
    ) {
        let net = Net::new(4);
        let mut r = fresh(&net, 0);
        let token = Digest(token);
        for msg in [
            Message::ExecCpState { seq: Seq(seq), state: body.clone() },
            Message::State { token, data: body.clone() },
            Message::FetchExecCp { seq: Seq(seq) },
            Message::FetchState { token },
        ] {
            net.deliver(&mut r, Principal::Exec(ExecId(1)), &msg);
        }
        net.deliver(&mut r, Principal::Auth(AuthId(0)), &Message::Command { seq: Seq(seq), client: 0, nc: ReqNo(seq), op: body.clone() });
        net.deliver(&mut r, Principal::Order(OrderId(0)), &Message::LoadCp { seq: Seq(seq), token });
        prop_assert_eq!(r.next_seq(), Seq(1));
    }
}

#[test]
fn load_overtaken_by_normal_execution_is_abandoned() {
    let net = Net::new(2);
    let (_, out) = leader(&net, Registers::default(), 2);
    let (_, token) = *checkpoint_taken(&out).last().unwrap();
    let mut b = fresh(&net, 1);
    load_cp(&net, &mut b, Seq(2), token, &[0, 1]);
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 3));
    assert_eq!(b.next_seq(), Seq(4));
    assert_eq!(b.counters().get("load-cp-overtaken"), 1);
    // The checkpoint arriving late must not move the replica backwards.
    let cp = ExecCheckpoint::decode(&b.transfer.held[&Seq(2)].bytes).unwrap();
    net.deliver(
        &mut b,
        Principal::Exec(ExecId(0)),
        &Message::ExecCpState {
            seq: Seq(2),
            state: cp.encode(),
        },
    );
    assert_eq!(b.next_seq(), Seq(4));
}

#[test]
fn a_faulty_order_replica_cannot_pin_unbounded_vote_memory() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let big = "x".repeat(100_000);
    for s in 2..=20 {
        net.next_batch(
            &mut r,
            Seq(s),
            &batch(vec![inline(0, s, &format!("put k {big}"))], 1),
            &[3],
        );
    }
    assert!(r.counters().drops(DropReason::NextBatchOverBudget) > 0);
    // Correct replicas are unaffected.
    let out = net.learn_all(&mut r, Seq(1), &puts(Seq(1), 2));
    assert_eq!(delivered(&out).len(), 2);
}

/// Seed 004 §3.4.2 idle check: a lagging peer's state-transfer request waits while this replica
/// has a learned batch to execute and keeps learning; the first catch-up tick with nothing
/// newly learned answers it.
#[test]
fn state_transfer_requests_wait_until_the_replica_is_idle() {
    let net = Net::new(2);
    let (mut a, _) = leader(&net, Registers::by_token(), 2);
    // Batch 3 is learned but its body is missing: work waits here, and learning just moved.
    net.next_batch(
        &mut a,
        Seq(3),
        &batch(vec![by_digest(2, 1, "put big value")], 30),
        &[0, 1],
    );
    let fetch = Message::FetchExecCp { seq: Seq(2) };
    let out = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    assert!(net.sent_to(&out, Principal::Exec(ExecId(1))).is_empty());
    assert_eq!(a.counters().get("state-transfer-deferred"), 1);
    // A tick that saw learning move is not idle; the one after, with nothing new, is.
    plumb_core::run(&mut a, NOW, Event::Timer(CATCH_UP));
    let out = plumb_core::run(&mut a, NOW, Event::Timer(CATCH_UP));
    assert!(
        matches!(
            net.sent_to(&out, Principal::Exec(ExecId(1))).first(),
            Some(Message::ExecCpState { seq: Seq(2), .. })
        ),
        "{out:?}"
    );
}

/// A request decided at two sequence numbers (possible across view changes, as in PBFT) runs
/// once: the second copy is skipped, and a batch of nothing but copies reaches no application.
#[test]
fn a_request_decided_twice_is_executed_once() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    let once = batch(vec![inline(2, 1, "put a 1")], 10);
    let again = batch(vec![inline(2, 1, "put a 1"), inline(3, 1, "put b 1")], 20);
    let copies = batch(vec![inline(2, 1, "put a 1")], 30);
    let out = net.learn_all(&mut r, Seq(1), &[once, again, copies]);
    assert_eq!(
        r.app()
            .calls
            .iter()
            .map(|(s, _, n)| (s.0, *n))
            .collect::<Vec<_>>(),
        vec![(1, 1), (2, 1)],
        "batch 2 runs only client 3's request; batch 3 runs nothing"
    );
    assert_eq!(r.counters().get("duplicate-request-skipped"), 2);
    let nulls: Vec<bool> = out
        .iter()
        .filter_map(|a| match a {
            Action::Observe(Observation::Delivered { null, .. }) => Some(*null),
            _ => None,
        })
        .collect();
    assert_eq!(nulls, vec![false, false, false]);
}

/// docs/divergence.md, for an application without objects: the whole agreed checkpoint is
/// loaded, and the report names batches and requests (objects: none to compare).
#[test]
fn a_whole_checkpoint_replica_that_diverged_rolls_back_and_reports_it() {
    let net = Net::new(2);
    let (mut a, out_a) = leader(&net, Registers::default(), 4);
    let agreed = checkpoint_taken(&out_a);
    let mut b = net.replica(1, Registers::default(), Recovered::default());
    net.learn_all(&mut b, Seq(1), &puts(Seq(1), 3));
    b.app.map.insert("k3".into(), "drifted".into());
    net.learn_all(&mut b, Seq(4), &puts(Seq(4), 1));
    let (_, t4) = agreed[1];
    let out = load_cp(&net, &mut b, Seq(4), t4, &[0, 2]);
    assert_eq!(b.counters().get("diverged"), 1);
    let fetch = Message::FetchExecCp { seq: Seq(4) };
    assert!(net
        .sent_to(&out, Principal::Exec(ExecId(0)))
        .contains(&fetch));
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let cp = net.sent_to(&served, Principal::Exec(ExecId(1)));
    let out = net.deliver(&mut b, Principal::Exec(ExecId(0)), &cp[0]);
    let report = out
        .iter()
        .find_map(|x| match x {
            Action::Observe(Observation::Diverged(r)) => Some(r.clone()),
            _ => None,
        })
        .expect("a report");
    assert_eq!(
        (report.seq, report.first, &report.objects),
        (Seq(4), Seq(3), &None)
    );
    assert_eq!(
        report.requests,
        vec![(Seq(3), 3, ReqNo(3)), (Seq(4), 0, ReqNo(4))]
    );
    assert_eq!(b.next_seq(), Seq(5));
    assert_eq!(b.app().state_digest(), a.app().state_digest());
    assert!(report.to_string().contains("batches 3..=4"), "{report}");
}

/// Pushes of one client: (event id, payload).
fn pushes_to(net: &Net, out: &[Action], client: ClientId) -> Vec<(u64, Vec<u8>)> {
    net.sent_to(out, Principal::Client(client))
        .into_iter()
        .filter_map(|m| match m {
            Message::Push { event, payload } => Some((event, payload)),
            _ => None,
        })
        .collect()
}

/// The client accepts a push once r + 1 replicas sent the same payload under the same event id,
/// so a replica that loaded a checkpoint by state transfer must go on numbering exactly where
/// the replicas that executed every batch do: the counters travel in the checkpoint.
#[test]
fn push_numbering_survives_state_transfer() {
    let net = Net::new(2);
    let mut a = fresh(&net, 0);
    let out = net.learn_all(
        &mut a,
        Seq(1),
        &[
            batch(vec![inline(1, 1, "push 2 a")], 1),
            batch(vec![inline(1, 2, "push 2 b")], 2),
        ],
    );
    let (seq, token) = *checkpoint_taken(&out).last().unwrap();
    assert_eq!(seq, Seq(2));
    let mut b = net.replica(1, Registers::default(), Recovered::default());
    let fetch = Message::FetchExecCp { seq: Seq(2) };
    load_cp(&net, &mut b, Seq(2), token, &[0, 3]);
    let served = net.deliver(&mut a, Principal::Exec(ExecId(1)), &fetch);
    let state = net.sent_to(&served, Principal::Exec(ExecId(1)));
    assert_eq!(state.len(), 1);
    net.deliver(&mut b, Principal::Exec(ExecId(0)), &state[0]);
    assert_eq!(b.next_seq(), Seq(3));
    let next = [batch(vec![inline(1, 3, "push 2 c")], 3)];
    let from_a = pushes_to(&net, &net.learn_all(&mut a, Seq(3), &next), 2);
    let from_b = pushes_to(&net, &net.learn_all(&mut b, Seq(3), &next), 2);
    assert_eq!(from_a, vec![(3, b"c".to_vec())]);
    assert_eq!(from_b, from_a);
}

/// A replica that restarts from its checkpoint and executes the batches after it again
/// numbers their pushes as it (and every peer) did the first time.
#[test]
fn push_numbering_survives_a_restart() {
    let net = Net::new(2);
    let mut a = fresh(&net, 0);
    let batches = [
        batch(vec![inline(1, 1, "push 2 a")], 1),
        batch(vec![inline(1, 2, "push 2 b")], 2),
        batch(vec![inline(1, 3, "push 2 c")], 3),
    ];
    let first = pushes_to(&net, &net.learn_all(&mut a, Seq(1), &batches), 2);
    assert_eq!(first.last(), Some(&(3, b"c".to_vec())));
    let records: BTreeMap<String, Vec<u8>> = [(
        checkpoint_key(Seq(2)),
        a.transfer.held[&Seq(2)].bytes.clone(),
    )]
    .into();
    let mut r = net.replica(
        0,
        Registers::default(),
        Recovered {
            records,
            corrupt: vec![],
        },
    );
    assert_eq!(r.next_seq(), Seq(3));
    let again = pushes_to(&net, &net.learn_all(&mut r, Seq(3), &batches[2..]), 2);
    assert_eq!(again, vec![(3, b"c".to_vec())]);
}

/// Client speculation (seed 001): an early request is answered from the application's
/// speculative execution, touches neither the replicated state nor the reply cache, and is
/// not answered for a request already executed (its ordered reply is what the client needs).
#[test]
fn early_requests_are_answered_by_speculation_and_never_change_replicated_state() {
    let net = Net::new(8);
    let mut r = fresh(&net, 0);
    start_and_answer_probe(&net, &mut r, Seq(0));
    net.learn_all(&mut r, Seq(1), &[batch(vec![inline(3, 1, "put x 42")], 10)]);
    let digest = r.app().state_digest();
    let calls = r.app().calls.len();
    let early = |nc: ReqNo, op: &str| Message::EarlyRequest {
        life: plumb_wire::Life::default(),
        nc,
        op: op.as_bytes().to_vec(),
    };
    let out = net.deliver(&mut r, Principal::Client(3), &early(ReqNo(2), "get x"));
    assert_eq!(
        net.sent_to(&out, Principal::Client(3)),
        vec![Message::EarlyReply {
            nc: ReqNo(2),
            req: plumb_wire::request_id(
                3,
                plumb_wire::Life::default(),
                ReqNo(2),
                Digest::of(b"get x")
            ),
            result: b"early 42".to_vec(),
        }]
    );
    assert_eq!(r.app().state_digest(), digest);
    assert_eq!(r.app().calls.len(), calls, "no batch was executed");
    // Already executed: no early reply.
    let out = net.deliver(&mut r, Principal::Client(3), &early(ReqNo(1), "get x"));
    assert!(net.sent_to(&out, Principal::Client(3)).is_empty());
    assert_eq!(r.counters().get("early-request-already-executed"), 1);
    // An operation the application does not speculate on: no early reply.
    let out = net.deliver(&mut r, Principal::Client(3), &early(ReqNo(2), "put x 1"));
    assert!(net.sent_to(&out, Principal::Client(3)).is_empty());
    assert_eq!(r.counters().get("early-request-not-speculating"), 1);
    assert_eq!(r.app().map.get("x").map(String::as_str), Some("42"));
}
