//! The client state machine driven directly with sealed frames, in a `u = r = 1` cluster
//! (4 authentication, 4 order, 3 execution replicas).

use super::*;
use crate::push::{DELIVERED_WINDOW, OPEN_PER_REPLICA};
use crate::record::{OutRecord, OUT_KEY};
use plumb_config::Faults;
use plumb_core::storage::decode;
use plumb_core::{run, DropReason, KeyRing};
use plumb_crypto::{Identity, PublicIdentity};
use plumb_wire::{OrderId, Seq};
use std::collections::BTreeSet;

const C: u32 = 7;
const ME: Principal = Principal::Client(C);

/// The life of a client built with stage seed 1, as every test's client is unless it says
/// otherwise: a test restart with seed 1 is the same life again.
fn life() -> Life {
    Life(plumb_core::Rng::new(1).next_u64())
}

fn identity(p: Principal) -> Identity {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&p.label().to_le_bytes());
    Identity::from_seed(seed)
}

struct World {
    cfg: Arc<ProtocolConfig>,
    rings: HashMap<Principal, KeyRing>,
}

impl World {
    fn new() -> World {
        World::with(ProtocolConfig::new(Quorums::minimal(Faults::new(1, 1))))
    }

    /// The same cluster in ZZ mode: e0 and e1 are active, e2 sleeps (docs/zz.md).
    fn zz() -> World {
        let mut cfg = ProtocolConfig::new(Quorums::minimal(Faults::new(1, 1)));
        cfg.zz = true;
        World::with(cfg)
    }

    fn with(cfg: ProtocolConfig) -> World {
        let q = cfg.quorums;
        assert_eq!((q.auth, q.order, q.exec), (4, 4, 3));
        let mut principals = vec![ME];
        principals.extend(AuthId::all(4).map(Principal::Auth));
        principals.extend(OrderId::all(4).map(Principal::Order));
        principals.extend(ExecId::all(3).map(Principal::Exec));
        let ids: HashMap<Principal, Arc<Identity>> = principals
            .iter()
            .map(|p| (*p, Arc::new(identity(*p))))
            .collect();
        let dir: Arc<HashMap<Principal, PublicIdentity>> =
            Arc::new(ids.iter().map(|(p, id)| (*p, id.public())).collect());
        let rings = ids
            .iter()
            .map(|(p, id)| (*p, KeyRing::new(*p, id.clone(), dir.clone())))
            .collect();
        World {
            cfg: Arc::new(cfg),
            rings,
        }
    }

    fn ring(&self, p: Principal) -> &KeyRing {
        &self.rings[&p]
    }

    /// A started client. One that starts without a trustworthy record learns its number
    /// first; here every execution replica answers that it executed nothing for it.
    fn client(&self, recovered: Recovered) -> Client {
        let (mut c, _) = self.starting_client(recovered);
        if c.learning() {
            for e in 0..3 {
                run(&mut c, 0, self.last_request(e, ReqNo(0)));
            }
            assert!(!c.learning());
        }
        c
    }

    /// A client and what it did on `Start`.
    fn starting_client(&self, recovered: Recovered) -> (Client, Vec<Action>) {
        self.starting_life(recovered, 1)
    }

    /// A client started with stage seed `seed` (its life is drawn from it), and what it did on
    /// `Start`.
    fn starting_life(&self, recovered: Recovered, seed: u64) -> (Client, Vec<Action>) {
        let ctx = StageContext {
            config: self.cfg.clone(),
            keys: self.ring(ME).clone(),
            seed,
        };
        let mut c = Client::new(ctx, recovered);
        let out = run(&mut c, 0, Event::Start);
        assert!(out.is_empty() || c.outstanding() || c.learning());
        (c, out)
    }

    fn last_request(&self, exec: u16, nc: ReqNo) -> Event {
        self.from(Principal::Exec(ExecId(exec)), Message::LastRequest { nc })
    }

    fn frame(&self, from: Principal, msg: &Message) -> Vec<u8> {
        self.ring(from)
            .seal(ME, msg)
            .expect("test principals share keys")
    }

    fn from(&self, from: Principal, msg: Message) -> Event {
        Event::Receive(self.frame(from, &msg))
    }

    /// A reply for `nc` naming the request `(C, life(), nc, op)`.
    fn reply_for(&self, exec: u16, nc: ReqNo, op: &[u8], result: &[u8]) -> Event {
        self.reply_in(life(), exec, nc, op, result)
    }

    /// A reply for `nc` naming the request `(C, life, nc, op)`.
    fn reply_in(&self, life: Life, exec: u16, nc: ReqNo, op: &[u8], result: &[u8]) -> Event {
        self.from(
            Principal::Exec(ExecId(exec)),
            Message::Reply {
                nc,
                req: request_id(C, life, nc, Digest::of(op)),
                result: result.to_vec(),
                at: plumb_wire::Position {
                    seq: Seq(nc.0),
                    index: 0,
                },
            },
        )
    }

    /// A reply for `nc` naming the operation `c` has outstanding under `nc` (any other
    /// operation if it has none there).
    fn reply(&self, c: &Client, exec: u16, nc: ReqNo, result: &[u8]) -> Event {
        let op = match &c.outstanding {
            Some(Outstanding::Ordered(o)) if o.nc == nc => o.op.clone(),
            _ => b"some other operation".to_vec(),
        };
        self.reply_for(exec, nc, &op, result)
    }

    /// `exec`'s digest-only reply (ODRC) for `nc`, vouching for `result` at `at_seq`, naming the
    /// operation `c` has outstanding under `nc`.
    fn reply_digest(&self, c: &Client, exec: u16, nc: ReqNo, result: &[u8], at_seq: u64) -> Event {
        let op = match &c.outstanding {
            Some(Outstanding::Ordered(o)) if o.nc == nc => o.op.clone(),
            _ => b"some other operation".to_vec(),
        };
        self.from(
            Principal::Exec(ExecId(exec)),
            Message::ReplyDigest {
                nc,
                req: request_id(C, life(), nc, Digest::of(&op)),
                result: Digest::of(result),
                at: plumb_wire::Position {
                    seq: Seq(at_seq),
                    index: 0,
                },
            },
        )
    }

    /// A read-only reply naming the read `(C, nc, "get")`, the only read these tests issue.
    fn ro_reply(&self, exec: u16, nc: ReqNo, result: &[u8], executed: u64) -> Event {
        let msg = Message::ReadOnlyReply {
            nc,
            req: request_id(C, life(), nc, Digest::of(b"get")),
            result: result.to_vec(),
            executed: Seq(executed),
        };
        self.from(Principal::Exec(ExecId(exec)), msg)
    }

    fn push(&self, exec: u16, event: u64, payload: &[u8]) -> Event {
        self.from(
            Principal::Exec(ExecId(exec)),
            Message::Push {
                event,
                payload: payload.to_vec(),
            },
        )
    }

    /// Open every sent frame as its receiver would.
    fn sent(&self, actions: &[Action]) -> Vec<(Principal, Message)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send { to, frame } | Action::SendUnsynced { to, frame } => {
                    let (from, msg) = self.ring(*to).open(frame).expect("client frames open");
                    assert_eq!(from, ME);
                    Some((*to, msg))
                }
                _ => None,
            })
            .collect()
    }
}

fn submit(c: &mut Client, now: Micros, op: &[u8], read_only: bool) -> Vec<Action> {
    let mut out = Vec::new();
    c.submit(
        now,
        op.to_vec(),
        crate::Route::read_only_if(read_only),
        &mut out,
    )
    .expect("client idle");
    out
}

/// The request numbers (bare, to compare with literals) and results of the completions.
fn completes(actions: &[Action]) -> Vec<(u64, Vec<u8>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Complete { nc, result, .. } => Some((nc.0, result.clone())),
            _ => None,
        })
        .collect()
}

fn timer_set(actions: &[Action], id: TimerId) -> Option<Micros> {
    actions.iter().find_map(|a| match a {
        Action::SetTimer { id: i, after } if *i == id => Some(*after),
        _ => None,
    })
}

fn receivers(sent: &[(Principal, Message)]) -> BTreeSet<Principal> {
    sent.iter().map(|(to, _)| *to).collect()
}

fn auths(ids: &[u16]) -> BTreeSet<Principal> {
    ids.iter().map(|i| Principal::Auth(AuthId(*i))).collect()
}

/// Every sent message is `Request{nc, op}`; returns `nc`.
fn request_number(sent: &[(Principal, Message)], op: &[u8]) -> ReqNo {
    let ncs: BTreeSet<ReqNo> = sent
        .iter()
        .map(|(_, m)| match m {
            Message::Request { nc, op: o, .. } if o == op => *nc,
            other => panic!("expected a request for {op:?}, got {other:?}"),
        })
        .collect();
    assert_eq!(ncs.len(), 1, "one request number per transmission");
    ncs.into_iter().next().unwrap_or(ReqNo(0))
}

/// Deliver `exec`'s reply for `nc` naming the operation the client has outstanding there.
fn reply_run(
    w: &World,
    c: &mut Client,
    now: Micros,
    exec: u16,
    nc: ReqNo,
    result: &[u8],
) -> Vec<Action> {
    let reply = w.reply(c, exec, nc, result);
    run(c, now, reply)
}

/// Deliver replies from execution replicas `0..votes` and return all actions.
fn answer(w: &World, c: &mut Client, now: Micros, nc: ReqNo, result: &[u8]) -> Vec<Action> {
    let mut out = Vec::new();
    for e in 0..c.q.reply() as u16 {
        let reply = w.reply(c, e, nc, result);
        c.handle(now, reply, &mut out);
    }
    out
}

/// A disk after the given actions: later puts win, syncs are implied.
fn disk(actions: &[Action]) -> Recovered {
    let mut recovered = Recovered::default();
    for a in actions {
        if let Action::Store(StoreOp::Put { key, value }) = a {
            recovered.records.insert(key.clone(), value.clone());
        }
    }
    recovered
}

// ---- CS1, CS2

#[test]
fn cs1_cs2_numbers_start_at_one_and_submit_is_refused_while_outstanding() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit(&mut c, 0, b"a", false);
    assert_eq!(request_number(&w.sent(&out), b"a"), ReqNo(1));
    assert!(c.outstanding());
    assert_eq!(
        c.submit(1, b"b".to_vec(), crate::Route::Ordered, &mut Vec::new()),
        Err(ClientBusy)
    );
    assert_eq!(
        c.submit(1, b"b".to_vec(), crate::Route::ReadOnly, &mut Vec::new()),
        Err(ClientBusy)
    );

    let out = answer(&w, &mut c, 10, ReqNo(1), b"ra");
    assert_eq!(completes(&out), vec![(1, b"ra".to_vec())]);
    assert!(out.iter().any(|a| matches!(
        a,
        Action::Observe(Observation::ClientAccepted {
            client: C,
            nc: ReqNo(1),
            ..
        })
    )));
    assert!(!c.outstanding());

    for (nc, op) in [(2, b"b"), (3, b"c")] {
        let out = submit(&mut c, 20, op, false);
        assert_eq!(request_number(&w.sent(&out), op), ReqNo(nc));
        assert_eq!(
            completes(&answer(&w, &mut c, 30, ReqNo(nc), op)),
            vec![(nc, op.to_vec())]
        );
    }
}

// ---- transmission and retransmission (§6.4.2, §5.7.1)

#[test]
fn first_transmission_goes_to_preferred_quorum_retransmissions_to_all() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit(&mut c, 0, b"op", false);
    // n_auth - u = 3 replicas starting at 7 mod 4 = 3, wrapping.
    assert_eq!(receivers(&w.sent(&out)), auths(&[3, 0, 1]));
    assert_eq!(w.sent(&out).len(), 3);

    let out = run(&mut c, 500_000, Event::Timer(RETRANSMIT));
    let sent = w.sent(&out);
    assert_eq!(receivers(&sent), auths(&[0, 1, 2, 3]));
    assert_eq!(request_number(&sent, b"op"), ReqNo(1));
    assert_eq!(c.counters().get("retransmit"), 1);
}

/// A silent replica in the preferred quorum costs one retransmission, not one per request:
/// after a retransmission the next requests go to every authentication replica at once, and
/// only after `ALL_AUTH_AFTER_RETRANSMIT` of them to the preferred quorum again.
#[test]
fn after_a_retransmission_requests_go_to_every_auth_replica_for_a_while() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"op", false);
    run(&mut c, 500_000, Event::Timer(RETRANSMIT));
    let mut t = 600_000;
    for nc in 1..=crate::ALL_AUTH_AFTER_RETRANSMIT + 1 {
        answer(&w, &mut c, t, ReqNo(nc), b"ok");
        t += 1_000;
        let out = submit(&mut c, t, b"next", false);
        let expected = if nc < crate::ALL_AUTH_AFTER_RETRANSMIT + 1 {
            4
        } else {
            3
        };
        assert_eq!(w.sent(&out).len(), expected, "request {}", nc + 1);
    }
}

/// A first transmission still unanswered after four times the usual latency goes to the
/// authentication replicas outside the preferred quorum too, once, without touching the
/// retransmission timeout: a crashed replica in the quorum (which the primary needs whole)
/// costs a short wait, not the 500 ms timeout. As after a retransmission, the next requests go
/// to every replica at once (else, with a node down, each would wait to be widened), and the
/// widened request's wait does not count as usual latency (else the wait would grow with
/// itself). An answered request cancels its timer.
#[test]
fn an_unanswered_first_transmission_is_widened_after_four_times_the_usual_latency() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    // Before any request completed: a quarter of the first timeout.
    let out = submit(&mut c, 0, b"a", false);
    assert_eq!(timer_set(&out, WIDEN), Some(125_000));
    let out = answer(&w, &mut c, 8_000, ReqNo(1), b"r");
    assert!(out.contains(&Action::CancelTimer { id: WIDEN }));
    // Usual latency 8 ms: widened after 32 ms.
    let out = submit(&mut c, 10_000, b"b", false);
    assert_eq!(receivers(&w.sent(&out)), auths(&[3, 0, 1]));
    assert_eq!(timer_set(&out, WIDEN), Some(32_000));
    let out = run(&mut c, 42_000, Event::Timer(WIDEN));
    let sent = w.sent(&out);
    assert_eq!(receivers(&sent), auths(&[2]), "only the replica left out");
    assert_eq!(request_number(&sent, b"b"), ReqNo(2));
    assert_eq!(c.counters().get("request-widened"), 1);
    assert_eq!(
        timer_set(&out, RETRANSMIT),
        None,
        "the timeout is not touched"
    );
    assert!(run(&mut c, 43_000, Event::Timer(WIDEN)).is_empty(), "once");
    answer(&w, &mut c, 50_000, ReqNo(2), b"r");
    assert_eq!(
        c.usual_latency,
        Some(8_000),
        "a widened request's wait is not usual"
    );
    // The next requests go to every replica at once: nothing to widen, and their latency
    // is usual again.
    let out = submit(&mut c, 60_000, b"c", false);
    assert_eq!(w.sent(&out).len(), 4);
    assert_eq!(timer_set(&out, WIDEN), None);
    assert!(out.contains(&Action::CancelTimer { id: WIDEN }));
    assert!(run(&mut c, 100_000, Event::Timer(WIDEN)).is_empty());
    answer(&w, &mut c, 76_000, ReqNo(3), b"r");
    assert_eq!(c.usual_latency, Some(9_000));
    // Nor is a retransmitted request's.
    submit(&mut c, 80_000, b"d", false);
    run(&mut c, 580_000, Event::Timer(RETRANSMIT));
    answer(&w, &mut c, 590_000, ReqNo(4), b"r");
    assert_eq!(c.usual_latency, Some(9_000));
}

/// A speculative lane keeps to its authentication replicas (so its session's requests are
/// vouched for in the order sent): never widened.
#[test]
fn a_speculative_lanes_request_is_not_widened() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit_on(&mut c, 0, b"a", Route::Speculative { early: ExecId(2) });
    assert_eq!(timer_set(&out, WIDEN), None);
    assert!(run(&mut c, 200_000, Event::Timer(WIDEN)).is_empty());
    assert_eq!(c.counters().get("request-widened"), 0);
}

#[test]
fn cl1_retransmission_timeout_doubles_up_to_the_cap() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit(&mut c, 0, b"op", false);
    assert_eq!(timer_set(&out, RETRANSMIT), Some(500_000));
    let mut seen = Vec::new();
    for _ in 0..5 {
        let out = run(&mut c, 0, Event::Timer(RETRANSMIT));
        seen.push(timer_set(&out, RETRANSMIT).unwrap_or(0));
    }
    assert_eq!(
        seen,
        vec![1_000_000, 2_000_000, 4_000_000, 4_000_000, 4_000_000]
    );
}

#[test]
fn base_timeout_follows_observed_latency_within_bounds() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    // Slow: 1.7 s from first send to acceptance.
    submit(&mut c, 1_000_000, b"a", false);
    run(&mut c, 1_500_000, Event::Timer(RETRANSMIT));
    answer(&w, &mut c, 2_700_000, ReqNo(1), b"r");
    assert_eq!(c.base_timeout(), 1_700_000);
    let out = submit(&mut c, 3_000_000, b"b", false);
    assert_eq!(timer_set(&out, RETRANSMIT), Some(1_700_000));
    // Fast: back to the initial timeout, never below it.
    answer(&w, &mut c, 3_000_100, ReqNo(2), b"r");
    assert_eq!(c.base_timeout(), 500_000);
    // Very slow: capped.
    submit(&mut c, 4_000_000, b"c", false);
    answer(&w, &mut c, 20_000_000, ReqNo(3), b"r");
    assert_eq!(c.base_timeout(), 4_000_000);
}

#[test]
fn accepted_request_cancels_its_timer_and_a_late_timer_does_nothing() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    let out = answer(&w, &mut c, 5, ReqNo(1), b"r");
    assert!(out.contains(&Action::CancelTimer { id: RETRANSMIT }));
    assert!(run(&mut c, 500_000, Event::Timer(RETRANSMIT)).is_empty());
}

// ---- reply voting

#[test]
fn reply_needs_r_plus_1_matching_results() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    assert!(completes(&reply_run(&w, &mut c, 1, 0, ReqNo(1), b"x")).is_empty());
    assert!(completes(&reply_run(&w, &mut c, 2, 1, ReqNo(1), b"y")).is_empty());
    assert_eq!(
        completes(&reply_run(&w, &mut c, 3, 2, ReqNo(1), b"x")),
        vec![(1, b"x".to_vec())]
    );
}

#[test]
fn one_faulty_replica_repeating_a_result_counts_once() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    assert!(completes(&reply_run(&w, &mut c, 1, 0, ReqNo(1), b"evil")).is_empty());
    assert!(completes(&reply_run(&w, &mut c, 2, 0, ReqNo(1), b"evil")).is_empty());
    assert!(completes(&reply_run(&w, &mut c, 3, 1, ReqNo(1), b"good")).is_empty());
    assert_eq!(
        completes(&reply_run(&w, &mut c, 4, 2, ReqNo(1), b"good")),
        vec![(1, b"good".to_vec())]
    );
}

#[test]
fn a_later_reply_replaces_the_replicas_earlier_vote() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    reply_run(&w, &mut c, 1, 0, ReqNo(1), b"good");
    reply_run(&w, &mut c, 2, 0, ReqNo(1), b"evil");
    // Replica 0 no longer votes "good": one vote is not r + 1.
    assert!(completes(&reply_run(&w, &mut c, 3, 1, ReqNo(1), b"good")).is_empty());
    assert_eq!(
        completes(&reply_run(&w, &mut c, 4, 2, ReqNo(1), b"good")),
        vec![(1, b"good".to_vec())]
    );
}

// ---- digest-only replies (ODRC, docs/odrc.md "The reply cache")

/// A digest vouches as a vote but carries no result: `r + 1` digests alone complete nothing;
/// a full reply whose result hashes to them does, at the same position.
#[test]
fn digest_replies_count_towards_r_plus_1_once_a_full_reply_matches() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    let d0 = w.reply_digest(&c, 0, ReqNo(1), b"good", 1);
    let d1 = w.reply_digest(&c, 1, ReqNo(1), b"good", 1);
    assert!(completes(&run(&mut c, 1, d0)).is_empty());
    assert!(completes(&run(&mut c, 2, d1)).is_empty());
    assert_eq!(c.counters().get("reply-digests-wait-for-bytes"), 1);
    // A full reply for another result, then one at another position: neither matches.
    assert!(completes(&reply_run(&w, &mut c, 3, 2, ReqNo(1), b"evil")).is_empty());
    let elsewhere = w.from(
        Principal::Exec(ExecId(2)),
        Message::Reply {
            nc: ReqNo(1),
            req: request_id(C, life(), ReqNo(1), Digest::of(b"a")),
            result: b"good".to_vec(),
            at: plumb_wire::Position {
                seq: Seq(9),
                index: 0,
            },
        },
    );
    assert!(completes(&run(&mut c, 4, elsewhere)).is_empty());
    assert_eq!(
        completes(&reply_run(&w, &mut c, 5, 2, ReqNo(1), b"good")),
        vec![(1, b"good".to_vec())]
    );
    assert_eq!(c.counters().get("reply-divergent"), 0);
}

/// A faulty replica's digest, for a result nobody else sent, is one vote: with one correct
/// full reply it is not `r + 1`; and a faulty replica that sends the bytes of its lie cannot
/// make a correct replica's digest vouch for them.
#[test]
fn a_faulty_digest_or_full_reply_is_one_vote() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    let lie = w.reply_digest(&c, 0, ReqNo(1), b"evil", 1);
    assert!(completes(&run(&mut c, 1, lie)).is_empty());
    assert!(completes(&reply_run(&w, &mut c, 2, 1, ReqNo(1), b"good")).is_empty());
    let vouch = w.reply_digest(&c, 2, ReqNo(1), b"good", 1);
    assert_eq!(
        completes(&run(&mut c, 3, vouch)),
        vec![(1, b"good".to_vec())]
    );
    assert_eq!(c.counters().get("reply-divergent"), 1);
    // A late digest for another result is divergent too; one for the accepted result is not.
    let late = w.from(
        Principal::Exec(ExecId(0)),
        Message::ReplyDigest {
            nc: ReqNo(1),
            req: request_id(C, life(), ReqNo(1), Digest::of(b"a")),
            result: Digest::of(b"good"),
            at: plumb_wire::Position::default(),
        },
    );
    run(&mut c, 4, late);
    assert_eq!(c.counters().get("reply-divergent"), 1);
}

/// A replica that sent the result in full and later only its digest keeps its bytes: the
/// digest repeats its vote, it does not take the result back.
#[test]
fn a_digest_after_a_full_reply_from_the_same_replica_keeps_the_bytes() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    reply_run(&w, &mut c, 1, 0, ReqNo(1), b"good");
    let again = w.reply_digest(&c, 0, ReqNo(1), b"good", 1);
    run(&mut c, 2, again);
    let vouch = w.reply_digest(&c, 1, ReqNo(1), b"good", 1);
    assert_eq!(
        completes(&run(&mut c, 3, vouch)),
        vec![(1, b"good".to_vec())]
    );
}

/// docs/divergence.md: a replica that answered an accepted request with another result is
/// counted, whether its reply came before the acceptance or after it.
#[test]
fn replies_that_differ_from_the_accepted_result_are_counted_as_divergent() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);
    reply_run(&w, &mut c, 1, 0, ReqNo(1), b"drifted");
    reply_run(&w, &mut c, 2, 1, ReqNo(1), b"good");
    assert_eq!(
        completes(&reply_run(&w, &mut c, 3, 2, ReqNo(1), b"good")),
        vec![(1, b"good".to_vec())]
    );
    assert_eq!(c.counters().get("reply-divergent"), 1);
    // Late replies: one agrees, one does not.
    run(&mut c, 4, w.reply_for(1, ReqNo(1), b"a", b"good"));
    run(&mut c, 5, w.reply_for(0, ReqNo(1), b"a", b"drifted again"));
    assert_eq!(c.counters().get("reply-divergent"), 2);
    assert_eq!(c.counters().get("stale-reply"), 0);
}

#[test]
fn stale_and_non_exec_replies_are_dropped_and_counted() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    assert!(reply_run(&w, &mut c, 0, 0, ReqNo(1), b"r").is_empty());
    assert_eq!(c.counters().get("stale-reply"), 1);

    submit(&mut c, 0, b"a", false);
    answer(&w, &mut c, 1, ReqNo(1), b"r");
    submit(&mut c, 2, b"b", false);
    let mut out = Vec::new();
    for e in 0..3 {
        let reply = w.reply(&c, e, ReqNo(1), b"r");
        c.handle(3, reply, &mut out);
    }
    for p in [Principal::Auth(AuthId(0)), Principal::Order(OrderId(1))] {
        c.handle(
            3,
            w.from(
                p,
                Message::Reply {
                    nc: ReqNo(2),
                    req: request_id(C, life(), ReqNo(2), Digest::of(b"b")),
                    result: b"r".to_vec(),
                    at: plumb_wire::Position::default(),
                },
            ),
            &mut out,
        );
    }
    c.handle(
        3,
        w.from(
            Principal::Exec(ExecId(0)),
            Message::LastExec { next: Seq(4) },
        ),
        &mut out,
    );
    assert!(completes(&out).is_empty());
    assert_eq!(c.counters().get("stale-reply"), 4);
    assert_eq!(c.counters().drops(DropReason::ReplyNotExec), 2);
    assert_eq!(c.counters().drops(DropReason::Unexpected), 1);
    assert!(c.outstanding());
}

// ---- CS3 and recovery

#[test]
fn cs3_request_is_persisted_and_synced_before_it_is_sent() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit(&mut c, 0, b"op", false);
    let put = out
        .iter()
        .position(|a| matches!(a, Action::Store(StoreOp::Put { key, .. }) if key == OUT_KEY));
    let sync = out.iter().position(|a| *a == Action::Store(StoreOp::Sync));
    let first_send = out.iter().position(|a| matches!(a, Action::Send { .. }));
    assert!(put.is_some() && sync.is_some() && first_send.is_some());
    assert!(
        put < sync && sync < first_send,
        "put, sync, then send: {out:?}"
    );
    let record = disk(&out)
        .records
        .get(OUT_KEY)
        .and_then(|v| decode::<OutRecord>(v));
    assert_eq!(
        record,
        Some(OutRecord::Outstanding {
            life: life(),
            nc: ReqNo(1),
            op: b"op".to_vec()
        })
    );
}

/// A request too large for any frame, recorded by an older version that did not refuse it, is
/// not resent (it never could be sent): the client is free at once and reuses its number.
#[test]
fn a_recovered_request_too_large_to_send_is_dropped() {
    let w = World::new();
    let mut before = w.client(Recovered::default());
    let mut actions = submit(&mut before, 0, b"x", false);
    actions.extend(answer(&w, &mut before, 1, ReqNo(1), b"r"));
    let big = vec![b'v'; crate::MAX_OPERATION_BYTES + 1];
    actions.push(Action::Store(
        OutRecord::Outstanding {
            life: life(),
            nc: ReqNo(2),
            op: big,
        }
        .put(),
    ));
    let ctx = StageContext {
        config: w.cfg.clone(),
        keys: w.ring(ME).clone(),
        seed: 1,
    };
    let mut after = Client::new(ctx, disk(&actions));
    assert!(!after.outstanding());
    assert_eq!(after.counters().get("recovered-oversized-dropped"), 1);
    let out = run(&mut after, 100, Event::Start);
    assert!(w.sent(&out).is_empty(), "nothing resent");
    let out = submit(&mut after, 300, b"next", false);
    assert_eq!(request_number(&w.sent(&out), b"next"), ReqNo(2));
}

#[test]
fn cs3_recovered_client_resends_its_outstanding_request_on_start() {
    let w = World::new();
    let mut before = w.client(Recovered::default());
    let mut actions = submit(&mut before, 0, b"x", false);
    actions.extend(answer(&w, &mut before, 1, ReqNo(1), b"r"));
    actions.extend(submit(&mut before, 2, b"op", false));

    let ctx = StageContext {
        config: w.cfg.clone(),
        keys: w.ring(ME).clone(),
        seed: 1,
    };
    let mut after = Client::new(ctx, disk(&actions));
    assert!(after.outstanding());
    assert_eq!(
        after.submit(0, b"new".to_vec(), crate::Route::Ordered, &mut Vec::new()),
        Err(ClientBusy)
    );
    let out = run(&mut after, 100, Event::Start);
    let sent = w.sent(&out);
    assert_eq!(receivers(&sent), auths(&[0, 1, 2, 3]));
    assert_eq!(request_number(&sent, b"op"), ReqNo(2));
    assert_eq!(timer_set(&out, RETRANSMIT), Some(500_000));

    assert_eq!(
        completes(&answer(&w, &mut after, 200, ReqNo(2), b"done")),
        vec![(2, b"done".to_vec())]
    );
    let out = submit(&mut after, 300, b"next", false);
    assert_eq!(request_number(&w.sent(&out), b"next"), ReqNo(3));
}

#[test]
fn cs3_recovered_after_completion_continues_numbering_without_resending() {
    let w = World::new();
    let mut before = w.client(Recovered::default());
    let mut actions = submit(&mut before, 0, b"x", false);
    actions.extend(answer(&w, &mut before, 1, ReqNo(1), b"r"));

    let mut after = w.client(disk(&actions));
    assert!(!after.outstanding());
    assert!(run(&mut after, 5, Event::Start).is_empty());
    let out = submit(&mut after, 10, b"y", false);
    assert_eq!(request_number(&w.sent(&out), b"y"), ReqNo(2));
}

/// A damaged span the store could not attribute may hide a newer `client/out` behind an older
/// one that reads as valid: the client neither resends that request nor numbers from it, it
/// learns its number (issue 10, lost client records).
#[test]
fn a_record_beside_a_damaged_span_is_not_trusted() {
    let w = World::new();
    let before = submit(&mut w.client(Recovered::default()), 0, b"x", false);
    let mut rolled_back = disk(&before);
    rolled_back.corrupt.push("?corrupt@4096".to_string());
    let (c, out) = w.starting_client(rolled_back);
    assert!(c.learning());
    assert!(!c.outstanding(), "the outstanding request is not resent");
    assert_eq!(c.counters().get("recovered-damaged-span"), 1);
    let sent = w.sent(&out);
    assert!(!sent.is_empty());
    assert!(sent
        .iter()
        .all(|(_, m)| matches!(m, Message::LastRequestQuery)));
    // Request 1 never reached a quorum: the replicas report nothing executed, and the next
    // request is 1 again, not 2 as the record would have it (no gap: OS3).
    let mut c = c;
    run(&mut c, 1, w.last_request(0, ReqNo(0)));
    run(&mut c, 1, w.last_request(1, ReqNo(0)));
    assert!(!c.learning());
    assert_eq!(c.next_request_number(), ReqNo(1));
}

#[test]
fn corrupt_record_starts_at_one_and_is_counted() {
    let w = World::new();
    let corrupt = Recovered {
        corrupt: vec![OUT_KEY.to_string()],
        ..Recovered::default()
    };
    let mut c = w.client(corrupt);
    assert_eq!(c.counters().get("recovered-corrupt"), 1);
    assert_eq!(c.next_request_number(), ReqNo(1));

    let mut garbage = Recovered::default();
    garbage.records.insert(OUT_KEY.to_string(), vec![0xff; 3]);
    let c2 = w.client(garbage);
    assert_eq!(c2.counters().get("recovered-corrupt"), 1);
    assert!(!c2.outstanding());
    let out = submit(&mut c, 0, b"op", false);
    assert_eq!(request_number(&w.sent(&out), b"op"), ReqNo(1));
}

#[test]
fn lost_record_client_renumbers_above_what_r_plus_1_replicas_report() {
    let w = World::new();
    let mut c = w.client(Recovered {
        corrupt: vec![OUT_KEY.to_string()],
        ..Recovered::default()
    });
    submit(&mut c, 0, b"new", false);
    // One (possibly faulty) replica claiming a high number changes nothing, however often.
    for _ in 0..3 {
        assert!(w
            .sent(&reply_run(&w, &mut c, 1, 0, ReqNo(100), b"old"))
            .is_empty());
    }
    // A second replica vouches for 5: one of the two is correct, so 1..=5 are used.
    let out = reply_run(&w, &mut c, 2, 1, ReqNo(5), b"old");
    let sync = out.iter().position(|a| *a == Action::Store(StoreOp::Sync));
    let first_send = out.iter().position(|a| matches!(a, Action::Send { .. }));
    assert!(sync.is_some() && sync < first_send);
    assert_eq!(request_number(&w.sent(&out), b"new"), ReqNo(6));
    assert_eq!(c.counters().get("renumbered"), 1);
    assert_eq!(
        completes(&answer(&w, &mut c, 3, ReqNo(6), b"ok")),
        vec![(6, b"ok".to_vec())]
    );
    assert_eq!(c.next_request_number(), ReqNo(7));
}

// ---- a client that lost its record (docs/protocol.md "Clients after a crash")

fn lost_record() -> Recovered {
    Recovered {
        corrupt: vec![OUT_KEY.to_string()],
        ..Recovered::default()
    }
}

fn queried(sent: &[(Principal, Message)]) -> BTreeSet<Principal> {
    sent.iter()
        .filter(|(_, m)| *m == Message::LastRequestQuery)
        .map(|(to, _)| *to)
        .collect()
}

fn execs(ids: &[u16]) -> BTreeSet<Principal> {
    ids.iter().map(|i| Principal::Exec(ExecId(*i))).collect()
}

/// Regression, "reply names its operation" (LS1: a client only accepts its own operation's
/// result). The client lost its record; its previous life executed 1..=4 and left request 5
/// (operation A) authenticated but not executed. The new life learns 4, issues operation B as 5,
/// and then A is executed as 5. On the original code (replies named only the number) the client
/// returned A's result as B's answer; now it moves past 5 and B is answered as 6.
#[test]
fn lost_record_reused_number_never_returns_the_old_operations_result() {
    let w = World::new();
    let (mut c, out) = w.starting_client(lost_record());
    assert_eq!(queried(&w.sent(&out)), execs(&[0, 1, 2]));
    run(&mut c, 1, w.last_request(0, ReqNo(4)));
    run(&mut c, 1, w.last_request(1, ReqNo(4)));
    assert!(!c.learning());
    let out = submit(&mut c, 2, b"B", false);
    assert_eq!(request_number(&w.sent(&out), b"B"), ReqNo(5));

    // Every execution replica executed the previous life's A as 5 and says so.
    let mut out = Vec::new();
    for e in 0..3 {
        c.handle(3, w.reply_for(e, ReqNo(5), b"A", b"result of A"), &mut out);
    }
    assert!(completes(&out).is_empty(), "A's result is not B's answer");
    // `r + 1` of them moved the client on; the third is stale by then.
    assert_eq!(c.counters().get("reply-other-operation"), 2);
    assert_eq!(c.counters().get("stale-reply"), 1);
    assert_eq!(c.counters().get("renumbered"), 1);
    let sent = w.sent(&out);
    assert_eq!(request_number(&sent, b"B"), ReqNo(6));
    assert_eq!(
        receivers(&sent),
        auths(&[0, 1, 3]),
        "a new request: preferred quorum"
    );
    // The renumbered request is durable before it leaves (CS3).
    assert_eq!(
        disk(&out)
            .records
            .get(OUT_KEY)
            .map(|v| decode::<OutRecord>(v)),
        Some(Some(OutRecord::Outstanding {
            life: life(),
            nc: ReqNo(6),
            op: b"B".to_vec()
        }))
    );
    assert_eq!(
        completes(&answer(&w, &mut c, 4, ReqNo(6), b"result of B")),
        vec![(6, b"result of B".to_vec())]
    );
}

/// A reply for the outstanding number that names another operation, from at most `r` (lying)
/// replicas, neither counts as an answer nor moves the client past its number.
#[test]
fn r_replies_naming_another_operation_change_nothing() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"mine", false);
    for t in 1..4 {
        let out = run(&mut c, t, w.reply_for(0, ReqNo(1), b"theirs", b"x"));
        assert!(out.is_empty());
    }
    assert_eq!(c.counters().get("renumbered"), 0);
    // The liar's own vote for the right operation and result would count once, not more.
    assert!(completes(&reply_run(&w, &mut c, 5, 1, ReqNo(1), b"ok")).is_empty());
    assert_eq!(
        completes(&reply_run(&w, &mut c, 6, 2, ReqNo(1), b"ok")),
        vec![(1, b"ok".to_vec())]
    );
}

/// CS1/CS2 while learning: `submit` is accepted but waits until the number is known, a second
/// one is refused, and the request leaves with the learned number. `exec - u` answers suffice.
#[test]
fn submit_waits_while_the_client_learns_its_number() {
    let w = World::new();
    let (mut c, _) = w.starting_client(Recovered::default());
    assert!(c.learning() && !c.outstanding());
    let out = submit(&mut c, 1, b"op", false);
    assert!(out.is_empty(), "nothing leaves before the number is known");
    assert!(c.outstanding());
    assert_eq!(
        c.submit(1, b"other".to_vec(), crate::Route::Ordered, &mut Vec::new()),
        Err(ClientBusy)
    );
    // One answer is not enough: it may be the liar.
    assert!(run(&mut c, 2, w.last_request(2, ReqNo(9))).is_empty());
    let out = run(&mut c, 3, w.last_request(0, ReqNo(9)));
    assert!(out.contains(&Action::CancelTimer { id: LEARN }));
    assert_eq!(request_number(&w.sent(&out), b"op"), ReqNo(10));
    assert!(!c.learning());
    // A late answer is stale.
    assert!(run(&mut c, 4, w.last_request(1, ReqNo(9))).is_empty());
    assert_eq!(c.counters().get("stale-last-request"), 1);
    // A read-only operation submitted while learning waits the same way.
    let (mut c, _) = w.starting_client(lost_record());
    assert!(submit(&mut c, 1, b"get", true).is_empty());
    run(&mut c, 2, w.last_request(0, ReqNo(0)));
    let out = run(&mut c, 2, w.last_request(1, ReqNo(0)));
    assert_eq!(
        read_only_numbers(&w.sent(&out), b"get"),
        BTreeSet::from([1])
    );
}

/// At most `r` lying execution replicas: one claiming a huge number cannot open a gap the order
/// stage would refuse (OS3), and one claiming nothing only makes the client reuse a number,
/// which the replies to the retransmission move it past (CS1: no number skipped, none answered
/// twice).
#[test]
fn a_lying_replica_cannot_make_the_learned_number_skip_ahead() {
    let w = World::new();
    for lie in [u64::MAX, 1000] {
        let (mut c, _) = w.starting_client(lost_record());
        run(&mut c, 1, w.last_request(0, ReqNo(lie)));
        run(&mut c, 1, w.last_request(1, ReqNo(4)));
        assert_eq!(c.next_request_number(), ReqNo(5));
    }
    let (mut c, _) = w.starting_client(lost_record());
    run(&mut c, 1, w.last_request(0, ReqNo(0)));
    run(&mut c, 1, w.last_request(1, ReqNo(4)));
    let out = submit(&mut c, 2, b"op", false);
    assert_eq!(request_number(&w.sent(&out), b"op"), ReqNo(1));
    // The auth stage treats 1 as a retransmission; execution replicas resend their cached
    // reply for 4, and `r + 1` of them move the client to 5.
    assert!(w
        .sent(&reply_run(&w, &mut c, 3, 1, ReqNo(4), b"old"))
        .is_empty());
    let out = reply_run(&w, &mut c, 3, 2, ReqNo(4), b"old");
    assert_eq!(request_number(&w.sent(&out), b"op"), ReqNo(5));
}

/// Liveness with a silent replica: the query is retransmitted with back-off, only to replicas
/// that have not answered, and `exec - u` answers end the learning.
#[test]
fn learning_retransmits_to_silent_replicas_and_ends_at_exec_minus_u_answers() {
    let w = World::new();
    let (mut c, out) = w.starting_client(lost_record());
    let first = timer_set(&out, LEARN).expect("learning timer");
    run(&mut c, 1, w.last_request(0, ReqNo(2)));
    let out = run(&mut c, first, Event::Timer(LEARN));
    assert_eq!(queried(&w.sent(&out)), execs(&[1, 2]));
    assert_eq!(timer_set(&out, LEARN), Some(2 * first));
    let out = run(&mut c, 3 * first, Event::Timer(LEARN));
    assert_eq!(timer_set(&out, LEARN), Some(4 * first));
    // A replica's later answer replaces its earlier one: still one voice.
    run(&mut c, 3 * first, w.last_request(0, ReqNo(3)));
    assert!(c.learning());
    run(&mut c, 3 * first, w.last_request(2, ReqNo(3)));
    assert!(!c.learning());
    assert_eq!(c.next_request_number(), ReqNo(4));
    // After learning, the timer does nothing.
    assert!(run(&mut c, 8 * first, Event::Timer(LEARN)).is_empty());
}

// ---- read-only requests

fn read_only_numbers(sent: &[(Principal, Message)], op: &[u8]) -> BTreeSet<u64> {
    sent.iter()
        .map(|(_, m)| match m {
            Message::ReadOnly { nc, op: o, .. } if o == op => nc.0,
            other => panic!("expected a read-only request, got {other:?}"),
        })
        .collect()
}

#[test]
fn read_only_is_accepted_only_when_every_exec_replica_agrees() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit(&mut c, 0, b"get", true);
    let sent = w.sent(&out);
    let execs: BTreeSet<Principal> = ExecId::all(3).map(Principal::Exec).collect();
    assert_eq!(receivers(&sent), execs);
    assert_eq!(read_only_numbers(&sent, b"get"), BTreeSet::from([1]));
    assert_eq!(timer_set(&out, READ_ONLY_DEADLINE), Some(500_000));
    assert!(
        !disk(&out).records.contains_key(OUT_KEY),
        "read-only uses no ordered number"
    );

    // r + 1 matching answers would do for an ordered request, not here.
    assert!(completes(&run(&mut c, 1, w.ro_reply(0, ReqNo(1), b"v", 5))).is_empty());
    assert!(completes(&run(&mut c, 2, w.ro_reply(1, ReqNo(1), b"v", 6))).is_empty());
    let out = run(&mut c, 3, w.ro_reply(2, ReqNo(1), b"v", 7));
    assert_eq!(completes(&out), vec![(0, b"v".to_vec())]);
    assert!(out.contains(&Action::CancelTimer {
        id: READ_ONLY_DEADLINE
    }));
    assert!(!c.outstanding());

    // The ordered numbering is untouched, the read-only one moves on.
    let out = submit(&mut c, 4, b"get", true);
    assert_eq!(
        read_only_numbers(&w.sent(&out), b"get"),
        BTreeSet::from([2])
    );
    assert!(
        !out.iter().any(|a| matches!(a, Action::Store(_))),
        "still within the lease"
    );
    answer_read_only(&w, &mut c, ReqNo(2));
    let out = submit(&mut c, 5, b"set", false);
    assert_eq!(request_number(&w.sent(&out), b"set"), ReqNo(1));
}

fn answer_read_only(w: &World, c: &mut Client, ro: ReqNo) {
    for e in 0..3 {
        run(c, 0, w.ro_reply(e, ro, b"v", 1));
    }
}

#[test]
fn read_only_mismatch_falls_back_to_an_ordered_request() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"get", true);
    run(&mut c, 1, w.ro_reply(0, ReqNo(1), b"v", 5));
    let out = run(&mut c, 2, w.ro_reply(1, ReqNo(1), b"w", 5));
    assert!(out.contains(&Action::CancelTimer {
        id: READ_ONLY_DEADLINE
    }));
    let put = out
        .iter()
        .position(|a| matches!(a, Action::Store(StoreOp::Put { key, .. }) if key == OUT_KEY));
    let first_send = out.iter().position(|a| matches!(a, Action::Send { .. }));
    assert!(
        put.is_some() && put < first_send,
        "CS3 holds on the fallback path too"
    );
    let sent = w.sent(&out);
    assert_eq!(receivers(&sent), auths(&[3, 0, 1]));
    assert_eq!(request_number(&sent, b"get"), ReqNo(1));
    assert_eq!(c.counters().get("read-only-mismatch"), 1);

    assert!(completes(&run(&mut c, 3, w.ro_reply(2, ReqNo(1), b"v", 5))).is_empty());
    assert_eq!(c.counters().get("stale-read-only-reply"), 1);
    assert_eq!(
        completes(&answer(&w, &mut c, 4, ReqNo(1), b"v")),
        vec![(1, b"v".to_vec())]
    );
}

#[test]
fn read_only_timeout_falls_back_to_an_ordered_request() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"get", true);
    run(&mut c, 1, w.ro_reply(0, ReqNo(1), b"v", 5));
    run(&mut c, 2, w.ro_reply(1, ReqNo(1), b"v", 5));
    let out = run(&mut c, 500_000, Event::Timer(READ_ONLY_DEADLINE));
    assert_eq!(request_number(&w.sent(&out), b"get"), ReqNo(1));
    assert_eq!(timer_set(&out, RETRANSMIT), Some(500_000));
    assert_eq!(c.counters().get("read-only-timeout"), 1);
    // A late read-only deadline on the ordered request is ignored.
    assert!(run(&mut c, 600_000, Event::Timer(READ_ONLY_DEADLINE)).is_empty());
    assert_eq!(
        completes(&answer(&w, &mut c, 700_000, ReqNo(1), b"v")),
        vec![(1, b"v".to_vec())]
    );
}

/// One execution replica down: after a read times out, reads are ordered at once for a pause
/// that doubles with each timeout in a row, rather than each waiting out the deadline; a
/// unanimous answer ends the streak.
#[test]
fn after_a_read_only_timeout_reads_are_ordered_for_a_pause_that_doubles() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let is_read_only = |sent: &[(Principal, Message)]| {
        !sent.is_empty()
            && sent
                .iter()
                .all(|(to, m)| matches!((to, m), (Principal::Exec(_), Message::ReadOnly { .. })))
    };
    // Read 1 (read-only number 1): replica 2 never answers; ordered as request 1.
    let t = 0;
    assert!(is_read_only(&w.sent(&submit(&mut c, t, b"get", true))));
    run(&mut c, t + 1, w.ro_reply(0, ReqNo(1), b"v", 5));
    run(&mut c, t + 2, w.ro_reply(1, ReqNo(1), b"v", 5));
    run(&mut c, t + 500_000, Event::Timer(READ_ONLY_DEADLINE));
    assert_eq!(
        completes(&answer(&w, &mut c, t + 510_000, ReqNo(1), b"v")).len(),
        1
    );
    // Paused for one deadline from the timeout: the next read is ordered at once.
    let out = submit(&mut c, 990_000, b"get", true);
    assert_eq!(request_number(&w.sent(&out), b"get"), ReqNo(2));
    assert_eq!(c.counters().get("read-only-paused"), 1);
    assert_eq!(
        completes(&answer(&w, &mut c, 995_000, ReqNo(2), b"v")).len(),
        1
    );
    // The pause is over: a probe (read-only number 2) times out again, and the pause doubles.
    let t = 1_000_000;
    assert!(is_read_only(&w.sent(&submit(&mut c, t, b"get", true))));
    run(&mut c, t + 500_000, Event::Timer(READ_ONLY_DEADLINE));
    assert_eq!(
        completes(&answer(&w, &mut c, t + 510_000, ReqNo(3), b"v")).len(),
        1
    );
    let out = submit(&mut c, t + 1_490_000, b"get", true);
    assert_eq!(request_number(&w.sent(&out), b"get"), ReqNo(4));
    assert_eq!(
        completes(&answer(&w, &mut c, t + 1_495_000, ReqNo(4), b"v")).len(),
        1
    );
    assert_eq!(c.counters().get("read-only-paused"), 2);
    // Replica 2 is back: the next probe (read-only number 3) is answered by all three.
    let t = 2_500_000;
    assert!(is_read_only(&w.sent(&submit(&mut c, t, b"get", true))));
    let mut done = Vec::new();
    for e in 0..3 {
        done.extend(completes(&run(
            &mut c,
            t + 1,
            w.ro_reply(e, ReqNo(3), b"v", 9),
        )));
    }
    assert_eq!(done, vec![(0, b"v".to_vec())]);
    // The streak is over: the next timeout pauses for one deadline again, not four.
    let t = 3_000_000;
    assert!(is_read_only(&w.sent(&submit(&mut c, t, b"get", true))));
    run(&mut c, t + 500_000, Event::Timer(READ_ONLY_DEADLINE));
    assert_eq!(
        completes(&answer(&w, &mut c, t + 510_000, ReqNo(5), b"v")).len(),
        1
    );
    assert!(!is_read_only(&w.sent(&submit(
        &mut c,
        t + 990_000,
        b"get",
        true
    ))));
    assert_eq!(
        completes(&answer(&w, &mut c, t + 995_000, ReqNo(6), b"v")).len(),
        1
    );
    assert!(is_read_only(&w.sent(&submit(
        &mut c,
        t + 1_000_000,
        b"get",
        true
    ))));
    assert_eq!(c.counters().get("read-only-timeout"), 3);
}

/// "Reply names its operation" for reads: a reply for the right read-only number that names
/// another read (one issued before a lost record, say) never counts.
#[test]
fn read_only_reply_naming_another_read_does_not_count() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"get", true);
    for e in 0..3 {
        let msg = Message::ReadOnlyReply {
            nc: ReqNo(1),
            req: request_id(C, life(), ReqNo(1), Digest::of(b"get other")),
            result: b"other".to_vec(),
            executed: Seq(1),
        };
        assert!(completes(&run(&mut c, 1, w.from(Principal::Exec(ExecId(e)), msg))).is_empty());
    }
    assert_eq!(c.counters().get("stale-read-only-reply"), 3);
    for e in 0..2 {
        run(&mut c, 2, w.ro_reply(e, ReqNo(1), b"v", 1));
    }
    assert_eq!(
        completes(&run(&mut c, 3, w.ro_reply(2, ReqNo(1), b"v", 1))),
        vec![(0, b"v".to_vec())]
    );
}

/// Read-only numbers start at 1 in every life and touch no disk; a late reply to the
/// previous life's read of the very same bytes under the same number does not count.
#[test]
fn a_late_read_only_reply_from_an_earlier_life_does_not_count() {
    let w = World::new();
    let mut before = w.client(Recovered::default());
    let out = submit(&mut before, 0, b"get", true);
    assert!(
        !out.iter().any(|a| matches!(a, Action::Store(_))),
        "reads write nothing: {out:?}"
    );
    assert_eq!(
        read_only_numbers(&w.sent(&out), b"get"),
        BTreeSet::from([1])
    );

    let (mut after, _) = w.starting_life(disk(&out), 2);
    assert_ne!(after.life(), before.life());
    for e in 0..3 {
        run(&mut after, 1, w.last_request(e, ReqNo(0)));
    }
    let out = submit(&mut after, 10, b"get", true);
    assert_eq!(
        read_only_numbers(&w.sent(&out), b"get"),
        BTreeSet::from([1])
    );
    // All three replicas' answers to the earlier life's read arrive late: none counts.
    for e in 0..3 {
        assert!(completes(&run(&mut after, 11, w.ro_reply(e, ReqNo(1), b"old", 1))).is_empty());
    }
    assert_eq!(after.counters().get("stale-read-only-reply"), 3);
}

/// Finding 2 of the time-and-identity review (`plumb sim --seed 8575 --u 1 --r 1`): the
/// previous life's `incr k` executed as request 1 and was never answered; the record is lost,
/// the replicas the new life asks lag and say nothing was executed, so the new life numbers
/// its own `incr k` 1 as well. The replies to the earlier execution name the earlier life:
/// the new life does not accept them, and `r + 1` of them move it past the number.
#[test]
fn a_new_life_never_accepts_its_previous_lifes_result_for_the_same_bytes() {
    let w = World::new();
    let mut before = w.client(Recovered::default());
    submit(&mut before, 0, b"incr k", false);
    let old = before.life();

    let (mut after, _) = w.starting_life(Recovered::default(), 2);
    assert_ne!(after.life(), old, "every start is a new life");
    assert!(after.learning());
    for e in 0..3 {
        run(&mut after, 1, w.last_request(e, ReqNo(0)));
    }
    let out = submit(&mut after, 2, b"incr k", false);
    assert_eq!(request_number(&w.sent(&out), b"incr k"), ReqNo(1));
    let mut out = Vec::new();
    for e in 0..2 {
        out.extend(run(
            &mut after,
            3,
            w.reply_in(old, e, ReqNo(1), b"incr k", b"1"),
        ));
    }
    assert!(
        completes(&out).is_empty(),
        "the earlier life's result is not this request's"
    );
    assert_eq!(after.counters().get("renumbered"), 1);
    assert_eq!(request_number(&w.sent(&out), b"incr k"), ReqNo(2));
    let new = after.life();
    let mut out = run(&mut after, 4, w.reply_in(new, 0, ReqNo(2), b"incr k", b"3"));
    out.extend(run(
        &mut after,
        4,
        w.reply_in(new, 1, ReqNo(2), b"incr k", b"3"),
    ));
    assert_eq!(completes(&out), vec![(2, b"3".to_vec())]);
}

// ---- push events

#[test]
fn push_event_is_delivered_once_after_r_plus_1_matching() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    assert!(run(&mut c, 0, w.push(0, 1, b"p")).is_empty());
    assert!(run(&mut c, 0, w.push(1, 1, b"q")).is_empty());
    let out = run(&mut c, 0, w.push(2, 1, b"p"));
    assert_eq!(
        out,
        vec![Action::Pushed {
            event: 1,
            payload: b"p".to_vec()
        }]
    );
    assert!(run(&mut c, 0, w.push(1, 1, b"p")).is_empty());
    assert_eq!(c.counters().get("push-duplicate"), 1);
}

#[test]
fn push_from_one_faulty_replica_or_a_non_exec_principal_is_not_delivered() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    for _ in 0..3 {
        assert!(run(&mut c, 0, w.push(0, 5, b"fake")).is_empty());
    }
    let msg = Message::Push {
        event: 5,
        payload: b"fake".to_vec(),
    };
    assert!(run(&mut c, 0, w.from(Principal::Auth(AuthId(1)), msg)).is_empty());
    assert_eq!(c.counters().drops(DropReason::PushNotExec), 1);
}

#[test]
fn push_memory_stays_bounded_under_a_flood() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    for event in 0..5_000u64 {
        run(&mut c, 0, w.push(0, event * 7 + 1_000_000, b"junk"));
    }
    assert!(c.push.held() <= OPEN_PER_REPLICA);
    let mut delivered = 0;
    for event in 0..3_000u64 {
        run(&mut c, 0, w.push(1, event, b"e"));
        delivered += run(&mut c, 0, w.push(2, event, b"e")).len();
    }
    assert_eq!(delivered, 3_000);
    assert!(c.push.held() <= DELIVERED_WINDOW as usize + 1 + 3 * OPEN_PER_REPLICA);
    // An id far below what was delivered may have been delivered and forgotten: refused.
    assert!(run(&mut c, 0, w.push(1, 3, b"e")).is_empty());
    assert!(run(&mut c, 0, w.push(2, 3, b"e")).is_empty());
    assert_eq!(c.counters().get("stale-push"), 2);
}

// ---- hostile frames

#[test]
fn frames_with_bad_mac_or_from_unknown_principals_are_dropped_and_counted() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit(&mut c, 0, b"a", false);

    let mut tampered = w.frame(
        Principal::Exec(ExecId(0)),
        &Message::Reply {
            nc: ReqNo(1),
            req: request_id(C, life(), ReqNo(1), Digest::of(b"a")),
            result: b"r".to_vec(),
            at: plumb_wire::Position::default(),
        },
    );
    let n = tampered.len();
    tampered[n - 20] ^= 1;
    assert!(run(&mut c, 1, Event::Receive(tampered)).is_empty());
    assert_eq!(c.counters().drops(DropReason::BadMac), 1);

    // A principal the client shares no key with.
    let stranger = Principal::Client(99);
    let id = Arc::new(identity(stranger));
    let dir = Arc::new(HashMap::from([
        (stranger, id.public()),
        (ME, identity(ME).public()),
    ]));
    let frame = KeyRing::new(stranger, id, dir)
        .seal(
            ME,
            &Message::Reply {
                nc: ReqNo(1),
                req: request_id(C, life(), ReqNo(1), Digest::of(b"a")),
                result: b"r".to_vec(),
                at: plumb_wire::Position::default(),
            },
        )
        .expect("stranger knows the client");
    assert!(run(&mut c, 1, Event::Receive(frame)).is_empty());
    assert_eq!(c.counters().drops(DropReason::UnknownSender), 1);

    // Addressed to someone else.
    let other = w.ring(Principal::Exec(ExecId(0))).seal(
        Principal::Auth(AuthId(0)),
        &Message::LastExec { next: Seq(1) },
    );
    assert!(run(&mut c, 1, Event::Receive(other.unwrap_or_default())).is_empty());
    assert_eq!(c.counters().drops(DropReason::WrongReceiver), 1);

    assert!(run(&mut c, 1, Event::Receive(vec![1, 2, 3])).is_empty());
    assert_eq!(c.counters().drops(DropReason::Short), 1);

    // None of those counted as a vote: one genuine reply is still not enough.
    assert!(completes(&reply_run(&w, &mut c, 2, 1, ReqNo(1), b"r")).is_empty());
    assert_eq!(
        completes(&reply_run(&w, &mut c, 3, 2, ReqNo(1), b"r")),
        vec![(1, b"r".to_vec())]
    );
}

/// Key derivation is the slow part of building a world: share one across proptest cases.
fn shared_world() -> &'static World {
    static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
    WORLD.get_or_init(World::new)
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_or_act(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let w = shared_world();
        let mut c = w.client(Recovered::default());
        submit(&mut c, 0, b"a", false);
        proptest::prop_assert!(run(&mut c, 1, Event::Receive(bytes)).is_empty());
    }

    /// Hostile bytes reach a client that is still learning its number: nothing happens.
    #[test]
    fn arbitrary_bytes_while_learning_never_panic_or_act(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let w = shared_world();
        let (mut c, _) = w.starting_client(Recovered::default());
        proptest::prop_assert!(run(&mut c, 1, Event::Receive(bytes)).is_empty());
        proptest::prop_assert!(c.learning());
    }

    /// CS1 with `r` liars: whatever one replica answers, and whichever replicas answer first,
    /// the learned number is never above the truth plus one (no gap for the order stage) and
    /// never below 1.
    #[test]
    fn learned_number_never_skips_ahead_whatever_one_liar_says(
        lie in proptest::prelude::any::<u64>(),
        truth in 0u64..1_000_000,
        order in 0usize..6,
    ) {
        let w = shared_world();
        let (mut c, _) = w.starting_client(Recovered::default());
        let orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
        for e in orders[order] {
            if c.learning() {
                let nc = if e == 0 { lie } else { truth };
                run(&mut c, 1, w.last_request(e, ReqNo(nc)));
            }
        }
        proptest::prop_assert!(!c.learning());
        let next = c.next_request_number();
        proptest::prop_assert!((1..=truth + 1).contains(&next.0));
    }

    #[test]
    fn arbitrary_recovered_records_never_panic(out in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
                                               other in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12)) {
        let mut recovered = Recovered::default();
        recovered.records.insert(OUT_KEY.to_string(), out);
        // A key this version does not use (an older version's read-only lease) is ignored.
        recovered.records.insert("client/ro".to_string(), other);
        let w = shared_world();
        let mut c = Client::new(
            StageContext { config: w.cfg.clone(), keys: w.ring(ME).clone(), seed: 1 },
            recovered,
        );
        run(&mut c, 0, Event::Start);
        proptest::prop_assert!(c.next_request_number() >= ReqNo(1));
    }
}

// ---- client speculation (seed 001): early replies

fn early_replies(actions: &[Action]) -> Vec<(u64, u16, Vec<u8>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Early { nc, exec, result } => Some((nc.0, exec.0, result.clone())),
            _ => None,
        })
        .collect()
}

fn early_reply(w: &World, exec: u16, nc: ReqNo, op: &[u8], result: &[u8]) -> Event {
    w.from(
        Principal::Exec(ExecId(exec)),
        Message::EarlyReply {
            nc,
            req: request_id(C, life(), nc, Digest::of(op)),
            result: result.to_vec(),
        },
    )
}

#[test]
fn a_speculative_request_also_goes_to_its_early_replica_and_passes_its_early_reply_on_once() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    let out = submit_on(&mut c, 0, b"incr", Route::Speculative { early: ExecId(2) });
    let sent = w.sent(&out);
    let early: Vec<_> = sent
        .iter()
        .filter(|(_, m)| matches!(m, Message::EarlyRequest { .. }))
        .collect();
    assert_eq!(early.len(), 1, "one early request");
    assert_eq!(early[0].0, Principal::Exec(ExecId(2)));
    assert!(sent
        .iter()
        .any(|(to, m)| matches!(to, Principal::Auth(_)) && matches!(m, Message::Request { .. })));
    // The early copy leaves ahead of the record's sync (nothing it causes is committed); the
    // ordered request waits for the sync (CS3).
    let sync = out
        .iter()
        .position(|a| matches!(a, Action::Store(StoreOp::Sync)))
        .expect("the request is persisted");
    let unsynced: Vec<usize> = (0..out.len())
        .filter(|&i| matches!(out[i], Action::SendUnsynced { .. }))
        .collect();
    assert_eq!(
        unsynced.len(),
        1,
        "only the early copy goes ahead of the disk"
    );
    assert!(unsynced[0] < sync);
    assert!(matches!(
        &out[unsynced[0]],
        Action::SendUnsynced {
            to: Principal::Exec(ExecId(2)),
            ..
        }
    ));
    assert!(out[sync..].iter().any(|a| matches!(
        a,
        Action::Send {
            to: Principal::Auth(_),
            ..
        }
    )));

    // Another replica's early reply, or one for another operation, is not passed on.
    let out = run(&mut c, 1, early_reply(&w, 1, ReqNo(1), b"incr", b"1"));
    assert!(early_replies(&out).is_empty());
    let out = run(&mut c, 1, early_reply(&w, 2, ReqNo(1), b"decr", b"1"));
    assert!(early_replies(&out).is_empty());
    // The asked replica's is, once.
    let out = run(&mut c, 2, early_reply(&w, 2, ReqNo(1), b"incr", b"1"));
    assert_eq!(early_replies(&out), vec![(1, 2, b"1".to_vec())]);
    assert!(completes(&out).is_empty(), "an early reply never completes");
    let out = run(&mut c, 3, early_reply(&w, 2, ReqNo(1), b"incr", b"1"));
    assert!(early_replies(&out).is_empty());
    assert!(c.outstanding());
    // The agreed answer completes it, whatever the early reply said.
    let out = answer(&w, &mut c, 4, ReqNo(1), b"2");
    assert_eq!(completes(&out), vec![(1, b"2".to_vec())]);
}

#[test]
fn an_early_reply_is_never_a_vote() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    submit_on(&mut c, 0, b"incr", Route::Speculative { early: ExecId(0) });
    run(&mut c, 1, early_reply(&w, 0, ReqNo(1), b"incr", b"9"));
    // r = 1: one ordered reply matching the early one is still one vote.
    let out = reply_run(&w, &mut c, 2, 0, ReqNo(1), b"9");
    assert!(completes(&out).is_empty());
    let out = reply_run(&w, &mut c, 3, 1, ReqNo(1), b"9");
    assert_eq!(completes(&out), vec![(1, b"9".to_vec())]);
}

/// Submit a speculative request asking execution replica 1 for an early reply, at `now`;
/// the authentication replicas it went to.
fn speculative_request_receivers(w: &World, c: &mut Client, now: Micros) -> BTreeSet<Principal> {
    let out = submit_on(c, now, b"incr", Route::Speculative { early: ExecId(1) });
    w.sent(&out)
        .into_iter()
        .filter(|(_, m)| matches!(m, Message::Request { .. }))
        .map(|(to, _)| to)
        .collect()
}

#[test]
fn a_speculative_request_goes_through_the_auth_replicas_from_its_early_replica_on() {
    let w = World::new();
    let mut c = w.client(Recovered::default());
    // C = 7: its own preferred quorum starts at 7 mod 4 = 3; a session speculating on
    // execution replica 1 sends every lane's requests from auth replica 1 on instead.
    let q = c.q.auth_preferred();
    let expected: BTreeSet<Principal> = (0..q)
        .map(|i| Principal::Auth(AuthId(((1 + i) % 4) as u16)))
        .collect();
    assert_eq!(speculative_request_receivers(&w, &mut c, 0), expected);
    // After a retransmission plain requests go to every auth replica for a while; a
    // speculative one still goes to its session's replicas, or this lane's requests would be
    // vouched for sooner than its session's other lanes' and overtake them.
    let out = run(&mut c, 500_000, Event::Timer(RETRANSMIT));
    assert_eq!(receivers(&w.sent(&out)), auths(&[0, 1, 2, 3]));
    answer(&w, &mut c, 600_000, ReqNo(1), b"ok");
    assert_eq!(speculative_request_receivers(&w, &mut c, 601_000), expected);
}

// ---- ZZ mode (docs/zz.md): what a client asks of the actives only

fn submit_on(c: &mut Client, now: Micros, op: &[u8], route: Route) -> Vec<Action> {
    let mut out = Vec::new();
    c.submit(now, op.to_vec(), route, &mut out)
        .expect("client idle");
    out
}

/// In ZZ mode read-only and D-Prophecy reads are ordered at once: unanimity over every replica
/// is out of reach while e2 sleeps, and over e0 and e1 alone it is not safe
/// (`ProtocolConfig::unanimous_reads_ordered`). Nothing goes to an execution replica, no
/// read-only deadline is armed, and `r + 1` ordered replies from the actives answer it.
#[test]
fn in_zz_read_only_and_d_prophecy_reads_are_ordered_at_once() {
    let w = World::zz();
    let mut c = w.client(Recovered::default());
    let routes = [
        Route::ReadOnly,
        Route::Sketched {
            executor: ExecId(0),
        },
    ];
    for (i, route) in routes.into_iter().enumerate() {
        let nc = ReqNo(i as u64 + 1);
        let now = 1_000_000 * i as u64;
        let out = submit_on(&mut c, now, b"get", route);
        let sent = w.sent(&out);
        assert_eq!(receivers(&sent), auths(&[3, 0, 1]), "{route:?}");
        assert_eq!(request_number(&sent, b"get"), nc);
        assert_eq!(timer_set(&out, READ_ONLY_DEADLINE), None);
        assert_eq!(timer_set(&out, RETRANSMIT), Some(500_000));
        assert!(
            disk(&out).records.contains_key(OUT_KEY),
            "CS3 as for any ordered request"
        );
        assert_eq!(c.counters().get("read-only-ordered-zz"), i as u64 + 1);
        assert!(completes(&reply_run(&w, &mut c, now + 1, 0, nc, b"v")).is_empty());
        let out = reply_run(&w, &mut c, now + 2, 1, nc, b"v");
        assert_eq!(completes(&out), vec![(nc.0, b"v".to_vec())]);
    }
    assert_eq!(c.counters().get("read-only-accepted"), 0);
}

/// The replica of a fast read, a D-Prophecy executor's stand-in and an early replica are
/// actives in ZZ mode: a caller naming the sleeper e2 gets e0 (counted), one naming an active
/// gets it. Outside ZZ every replica is asked as named.
#[test]
fn in_zz_fast_reads_and_early_replies_go_to_actives_only() {
    let fast_target = |w: &World, c: &mut Client, e: u16| {
        let out = submit_on(c, 0, b"get", Route::Fast { exec: ExecId(e) });
        let to = receivers(&w.sent(&out));
        run(c, 500_000, Event::Timer(READ_ONLY_DEADLINE));
        assert!(!c.outstanding());
        to
    };
    let early_target = |w: &World, c: &mut Client, e: u16| {
        let out = submit_on(c, 0, b"incr", Route::Speculative { early: ExecId(e) });
        let to: BTreeSet<Principal> = w
            .sent(&out)
            .into_iter()
            .filter(|(_, m)| matches!(m, Message::EarlyRequest { .. }))
            .map(|(to, _)| to)
            .collect();
        to
    };
    let exec = |e: u16| BTreeSet::from([Principal::Exec(ExecId(e))]);

    let w = World::zz();
    let mut c = w.client(Recovered::default());
    assert_eq!(fast_target(&w, &mut c, 1), exec(1));
    assert_eq!(c.counters().get("read-target-asleep"), 0);
    assert_eq!(fast_target(&w, &mut c, 2), exec(0));
    assert_eq!(c.counters().get("read-target-asleep"), 1);
    assert_eq!(early_target(&w, &mut c, 2), exec(0));
    assert_eq!(c.counters().get("read-target-asleep"), 2);

    let w = World::new();
    let mut c = w.client(Recovered::default());
    assert_eq!(fast_target(&w, &mut c, 2), exec(2));
    assert_eq!(early_target(&w, &mut c, 2), exec(2));
    assert_eq!(c.counters().get("read-target-asleep"), 0);
}
