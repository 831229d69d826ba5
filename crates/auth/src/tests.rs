//! Authentication replica tests, named after the property they check (seed 004 §5.4.2,
//! §6.4.3). The replica under test is `Auth(0)` of a u = r = 1 cluster (4 auth, 4 order,
//! 3 exec); clients, order and execution replicas are played by the test, each sealing frames
//! with its own key ring.

use super::*;
use plumb_config::{Faults, ProtocolConfig, Quorums};
use plumb_core::{run, Action, DropReason, Event, KeyRing, Recovered, Stage, StoreOp};
use plumb_crypto::{Digest, Identity, Mac, PublicIdentity};
use plumb_wire::{AuthId, Body, Executed, Message, Principal, ReqCore, ReqNo, Seq};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const ME: Principal = Principal::Auth(AuthId(0));
const CLIENTS: u32 = 4;
/// Not in the directory: no replica shares a key with it.
const STRANGER: Principal = Principal::Client(99);
const CP: u64 = 4;

fn identity_of(p: Principal) -> Identity {
    Identity::from_seed(Digest::of(&p.label().to_le_bytes()).0)
}

struct Net {
    cfg: Arc<ProtocolConfig>,
    rings: HashMap<Principal, KeyRing>,
}

impl Net {
    fn new() -> Net {
        let q = Quorums::minimal(Faults::new(1, 1));
        let mut cfg = ProtocolConfig::new(q);
        cfg.checkpoint_interval = CP;
        let mut all: Vec<Principal> = Vec::new();
        all.extend(AuthId::all(q.auth).map(Principal::Auth));
        all.extend(OrderId::all(q.order).map(Principal::Order));
        all.extend(ExecId::all(q.exec).map(Principal::Exec));
        all.extend((0..CLIENTS).map(Principal::Client));
        let directory: Arc<HashMap<Principal, PublicIdentity>> =
            Arc::new(all.iter().map(|p| (*p, identity_of(*p).public())).collect());
        let mut rings: HashMap<Principal, KeyRing> = all
            .iter()
            .map(|p| {
                (
                    *p,
                    KeyRing::new(*p, Arc::new(identity_of(*p)), directory.clone()),
                )
            })
            .collect();
        // The stranger knows the replica's public key, but the replica does not know it.
        let mut its_view = (*directory).clone();
        its_view.insert(STRANGER, identity_of(STRANGER).public());
        rings.insert(
            STRANGER,
            KeyRing::new(
                STRANGER,
                Arc::new(identity_of(STRANGER)),
                Arc::new(its_view),
            ),
        );
        Net {
            cfg: Arc::new(cfg),
            rings,
        }
    }

    fn ring(&self, p: Principal) -> &KeyRing {
        &self.rings[&p]
    }

    fn replica(&self, recovered: Recovered) -> AuthReplica {
        let ctx = StageContext {
            config: self.cfg.clone(),
            keys: self.ring(ME).clone(),
            seed: 7,
        };
        AuthReplica::new(ctx, recovered)
    }

    fn deliver(
        &self,
        r: &mut AuthReplica,
        now: u64,
        from: Principal,
        msg: &Message,
    ) -> Vec<Action> {
        let frame = self
            .ring(from)
            .seal(ME, msg)
            .expect("sender knows the replica");
        run(r, now, Event::Receive(frame))
    }

    fn request(&self, r: &mut AuthReplica, now: u64, c: u32, nc: ReqNo, op: &[u8]) -> Vec<Action> {
        self.deliver(
            r,
            now,
            Principal::Client(c),
            &Message::Request {
                life: plumb_wire::Life::default(),
                nc,
                op: op.to_vec(),
            },
        )
    }

    /// BATCH-COMPLETE `(seq, executed)` from each of `from`.
    fn complete(
        &self,
        r: &mut AuthReplica,
        from: &[u16],
        seq: u64,
        executed: &[(u32, ReqNo)],
    ) -> Vec<Action> {
        let seq = Seq(seq);
        let executed: Vec<Executed> = executed
            .iter()
            .map(|&(client, nc)| Executed { client, nc })
            .collect();
        let msg = Message::BatchComplete { seq, executed };
        from.iter()
            .flat_map(|e| self.deliver(r, 0, Principal::Exec(ExecId(*e)), &msg))
            .collect()
    }

    /// Every AUTH-REQ in `actions`, alone or in an AUTH-REQS, opened by the order replica it
    /// is addressed to.
    fn auth_reqs(&self, actions: &[Action]) -> Vec<(OrderId, ReqCore, Vec<Mac>)> {
        self.opened(actions)
            .into_iter()
            .flat_map(|(to, msg)| match (to, msg) {
                (Principal::Order(o), Message::AuthReq { core, macs }) => {
                    vec![(o, core, macs)]
                }
                (Principal::Order(o), Message::AuthReqs { reqs }) => {
                    reqs.into_iter().map(|v| (o, v.core, v.macs)).collect()
                }
                _ => vec![],
            })
            .collect()
    }

    fn opened(&self, actions: &[Action]) -> Vec<(Principal, Message)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send { to, frame } => {
                    let (from, msg) = self
                        .ring(*to)
                        .open(frame)
                        .expect("frames of the replica open");
                    assert_eq!(from, ME);
                    Some((*to, msg))
                }
                _ => None,
            })
            .collect()
    }
}

fn sends(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Send { .. }))
        .count()
}

fn stores(actions: &[Action]) -> Vec<&StoreOp> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Store(op) => Some(op),
            _ => None,
        })
        .collect()
}

/// A disk that keeps every write (crash-consistent enough for these tests: each test's
/// restart happens after its writes were synced or did not matter).
#[derive(Default)]
struct Disk(BTreeMap<String, Vec<u8>>);

impl Disk {
    fn apply(&mut self, actions: &[Action]) {
        for op in stores(actions) {
            match op {
                StoreOp::Put { key, value } => {
                    self.0.insert(key.clone(), value.clone());
                }
                StoreOp::Delete { key } => {
                    self.0.remove(key);
                }
                StoreOp::DeletePrefix { prefix } => {
                    self.0.retain(|k, _| !k.starts_with(prefix.as_str()))
                }
                StoreOp::Sync => {}
            }
        }
    }

    fn recovered(&self) -> Recovered {
        Recovered {
            records: self.0.clone(),
            corrupt: Vec::new(),
        }
    }
}

fn big_op(tag: u8) -> Vec<u8> {
    vec![tag; 500]
}

#[test]
fn as1_unknown_client_is_dropped() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let actions = net.deliver(
        &mut r,
        0,
        STRANGER,
        &Message::Request {
            life: plumb_wire::Life::default(),
            nc: ReqNo(1),
            op: b"put a 1".to_vec(),
        },
    );
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(r.counters().drops(DropReason::UnknownSender), 1);
    assert_eq!(r.pending_count(), 0);
}

#[test]
fn as1_tampered_frame_is_dropped_before_parsing() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let mut frame = net
        .ring(Principal::Client(1))
        .seal(
            ME,
            &Message::Request {
                life: plumb_wire::Life::default(),
                nc: ReqNo(1),
                op: b"x".to_vec(),
            },
        )
        .unwrap();
    let n = frame.len();
    frame[n - 20] ^= 1;
    assert!(run(&mut r, 0, Event::Receive(frame)).is_empty());
    assert_eq!(r.counters().drops(DropReason::BadMac), 1);
}

#[test]
fn only_clients_send_requests_and_only_exec_replicas_report() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let req = Message::Request {
        life: plumb_wire::Life::default(),
        nc: ReqNo(1),
        op: b"x".to_vec(),
    };
    assert!(net
        .deliver(&mut r, 0, Principal::Order(OrderId(1)), &req)
        .is_empty());
    let done = Message::BatchComplete {
        seq: Seq(1),
        executed: vec![],
    };
    assert!(net
        .deliver(&mut r, 0, Principal::Client(0), &done)
        .is_empty());
    assert!(net
        .deliver(&mut r, 0, Principal::Exec(ExecId(0)), &req)
        .is_empty());
    assert_eq!(r.counters().drops(DropReason::Unexpected), 3);
    assert_eq!(
        r.blacklisted(),
        1,
        "the client that sent a replica's message"
    );
    assert_eq!(r.pending_count(), 0);
}

#[test]
fn as1_authenticator_verifies_at_each_order_replica_and_only_there() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let actions = net.request(&mut r, 0, 1, ReqNo(1), b"put a 1");
    let reqs = net.auth_reqs(&actions);
    let order = net.cfg.quorums.order;
    assert_eq!(
        reqs.iter().map(|(o, ..)| *o).collect::<Vec<_>>(),
        OrderId::all(order).collect::<Vec<_>>()
    );
    for (o, core, macs) in &reqs {
        assert_eq!(macs.len(), order);
        let id = core.id_digest();
        let ring = net.ring(Principal::Order(*o));
        for (i, mac) in macs.iter().enumerate() {
            // Each entry verifies for its own order replica only: pairwise keys differ.
            assert_eq!(
                ring.verify_from(ME, &id.0, mac),
                i == o.index(),
                "order {o}, entry {i}"
            );
        }
        // Another auth replica cannot claim this row.
        assert!(!ring.verify_from(Principal::Auth(AuthId(1)), &id.0, &macs[o.index()]));
    }
}

#[test]
fn persist_and_sync_precede_the_auth_req() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let actions = net.request(&mut r, 0, 2, ReqNo(1), b"put b 2");
    let put = actions
        .iter()
        .position(
            |a| matches!(a, Action::Store(StoreOp::Put { key, .. }) if *key == request_key(2)),
        )
        .expect("request persisted");
    let sync = actions
        .iter()
        .position(|a| matches!(a, Action::Store(StoreOp::Sync)))
        .expect("synced");
    let first_send = actions
        .iter()
        .position(|a| matches!(a, Action::Send { .. }))
        .expect("sent");
    assert!(put < sync && sync < first_send, "{actions:?}");
}

/// The AUTH-REQs of one group leave together, one AUTH-REQS per order replica, behind the
/// group's sync: requests handled while a sync is in flight wait for the next one.
#[test]
fn a_groups_auth_reqs_leave_in_one_message_per_order_replica_behind_its_sync() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let mut group = Vec::new();
    for c in 1..=3u32 {
        let frame = net
            .ring(Principal::Client(c))
            .seal(
                ME,
                &Message::Request {
                    life: plumb_wire::Life::default(),
                    nc: ReqNo(1),
                    op: format!("put k{c} v").into_bytes(),
                },
            )
            .unwrap();
        r.handle(0, Event::Receive(frame), &mut group);
    }
    assert_eq!(
        sends(&group),
        0,
        "nothing leaves before the group's sync: {group:?}"
    );
    assert_eq!(
        stores(&group)
            .iter()
            .filter(|op| matches!(op, StoreOp::Sync))
            .count(),
        3
    );
    let mut flushed = Vec::new();
    r.before_sync(0, &mut flushed);
    let opened = net.opened(&flushed);
    assert_eq!(
        opened.len(),
        net.cfg.quorums.order,
        "one frame per order replica"
    );
    for (to, msg) in &opened {
        let Message::AuthReqs { reqs } = msg else {
            panic!("{to}: {msg:?}");
        };
        let clients: Vec<u32> = reqs.iter().map(|v| v.core.client).collect();
        assert_eq!(clients, [1, 2, 3], "in the order they were authenticated");
    }
    // Each request's row of the matrix verifies at each order replica, as alone.
    let vouched = net.auth_reqs(&flushed);
    assert_eq!(vouched.len(), 3 * net.cfg.quorums.order);
    for (o, core, macs) in vouched {
        let ring = net.ring(Principal::Order(o));
        assert!(ring.verify_from(ME, &core.id_digest().0, &macs[o.index()]));
    }
    assert_eq!(r.counters().get("auth-reqs-bundled"), 3);
    // Nothing is left for the next sync; one request alone goes as an AUTH-REQ.
    let mut again = Vec::new();
    r.before_sync(0, &mut again);
    assert!(again.is_empty());
    let one = net.request(&mut r, 0, 0, ReqNo(1), b"put k0 v");
    assert!(net
        .opened(&one)
        .iter()
        .all(|(_, m)| matches!(m, Message::AuthReq { .. })));
}

#[test]
fn as3_one_request_per_identifier() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let first = net.request(&mut r, 0, 1, ReqNo(1), b"put a 1");
    let again = net.request(&mut r, 10, 1, ReqNo(1), b"put a 1");
    // The repeat is answered with the same AUTH-REQ, not a second authentication.
    assert_eq!(net.auth_reqs(&first), net.auth_reqs(&again));
    assert!(stores(&again).is_empty());
    assert_eq!(r.counters().get("authenticated"), 1);

    // Another operation under the number is not authenticated: the replica answers with the
    // AUTH-REQ it already built (here the retransmission above used up the resend allowance).
    let other = net.request(&mut r, 20, 1, ReqNo(1), b"put a 666");
    assert!(net.auth_reqs(&other).is_empty(), "{other:?}");
    assert_eq!(r.counters().get("reused-number"), 1);
    assert_eq!(r.counters().get("authenticated"), 1);
    assert_eq!(r.last_sent_nc(1), Some(ReqNo(1)));
    // A correct client that lost its record does this: it is not blacklisted.
    assert_eq!(r.blacklisted(), 0);
}

/// The same bytes under the same number from another life of the client (it lost its record)
/// are another request, not a retransmission: the replica does not answer with the earlier
/// life's AUTH-REQ as if it were this one's, and does not blacklist.
#[test]
fn as3_the_same_bytes_from_another_life_are_another_request() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    net.request(&mut r, 0, 1, ReqNo(1), b"incr k");
    let later_life = Message::Request {
        life: plumb_wire::Life(77),
        nc: ReqNo(1),
        op: b"incr k".to_vec(),
    };
    net.deliver(&mut r, 10, Principal::Client(1), &later_life);
    assert_eq!(r.counters().get("retransmission"), 0);
    assert_eq!(r.counters().get("reused-number"), 1);
    assert_eq!(r.counters().get("authenticated"), 1);
    assert_eq!(r.blacklisted(), 0);
}

/// A client that lost its record reuses a number whose request its previous life sent to too
/// few replicas to be ordered (issue 10: the stranded request). The replicas holding the old
/// request refuse the new one until the old one has waited `auth_resend_us`; then the new one
/// is authenticated, and the old body stays fetchable as long as the batch that ordered the
/// number may need it (AS2).
#[test]
fn a_stranded_pending_request_is_superseded_after_auth_resend_us() {
    let net = Net::new();
    let wait = net.cfg.auth_resend_us;
    let mut r = net.replica(Recovered::default());
    let old = big_op(1);
    net.request(&mut r, 0, 1, ReqNo(1), &old);
    let early = net.request(&mut r, wait - 1, 1, ReqNo(1), b"new life");
    assert!(net
        .auth_reqs(&early)
        .iter()
        .all(|(_, core, _)| core.op_digest() == Digest::of(&old)));
    assert_eq!(r.counters().get("superseded-stranded"), 0);

    let late = net.request(&mut r, wait, 1, ReqNo(1), b"new life");
    let sent = net.auth_reqs(&late);
    assert_eq!(sent.len(), net.cfg.quorums.order, "{late:?}");
    assert!(sent
        .iter()
        .all(|(_, core, _)| core.op_digest() == Digest::of(b"new life")));
    assert_eq!(r.counters().get("superseded-stranded"), 1);
    assert_eq!(r.blacklisted(), 0);

    let fetch = |nc, op: &[u8]| Message::Fetch {
        seq: Seq(3),
        client: 1,
        nc,
        digest: Digest::of(op),
    };
    let served = net.deliver(
        &mut r,
        wait,
        Principal::Exec(ExecId(0)),
        &fetch(ReqNo(1), &old),
    );
    assert_eq!(
        net.opened(&served).len(),
        1,
        "the superseded body is still served"
    );
    // Number 1 ordered (either body): both bodies go to the command cache with the batch...
    net.complete(&mut r, &[0, 1], 3, &[(1, ReqNo(1))]);
    let served = net.deliver(
        &mut r,
        wait,
        Principal::Exec(ExecId(0)),
        &fetch(ReqNo(1), &old),
    );
    assert_eq!(net.opened(&served).len(), 1);
    assert_eq!(r.cached_bodies(), 2);
    // ...and stay there when a later request is ordered (an execution replica that loads an
    // earlier checkpoint fetches them again)...
    net.request(&mut r, wait + 1, 1, ReqNo(2), b"next");
    net.complete(&mut r, &[0, 1], 4, &[(1, ReqNo(2))]);
    let served = net.deliver(
        &mut r,
        wait + 2,
        Principal::Exec(ExecId(0)),
        &fetch(ReqNo(1), &old),
    );
    assert_eq!(net.opened(&served).len(), 1);
    // ...until their interval is collected.
    let cp = net.cfg.checkpoint_interval;
    net.request(&mut r, wait + 3, 1, ReqNo(3), b"much later");
    net.complete(&mut r, &[0, 1], 4 * cp, &[(1, ReqNo(3))]);
    let served = net.deliver(
        &mut r,
        wait + 4,
        Principal::Exec(ExecId(0)),
        &fetch(ReqNo(1), &old),
    );
    assert!(net.opened(&served).is_empty());
}

/// Issue 34, finding 3: a superseded body is on disk before the superseding request leaves,
/// so a replica restarted after the supersession still serves it, before its number is
/// ordered (from `auth/sup/{c}`) and after (from its own cache record).
#[test]
fn a_superseded_body_survives_restarts_before_and_after_its_number_is_ordered() {
    let net = Net::new();
    let wait = net.cfg.auth_resend_us;
    let mut disk = Disk::default();
    let mut r = net.replica(Recovered::default());
    let old = big_op(1);
    disk.apply(&net.request(&mut r, 0, 1, ReqNo(1), &old));
    let superseding = net.request(&mut r, wait, 1, ReqNo(1), b"new life");
    assert_eq!(r.counters().get("superseded-stranded"), 1);
    // The superseded body is put before the sync that precedes the AUTH-REQ.
    let ops = stores(&superseding);
    let put = ops
        .iter()
        .position(|o| matches!(o, StoreOp::Put { key, .. } if *key == recovery::superseded_key(1)));
    let sync = ops.iter().position(|o| matches!(o, StoreOp::Sync));
    assert!(put.is_some() && put < sync, "{ops:?}");
    disk.apply(&superseding);
    let fetch = Message::Fetch {
        seq: Seq(3),
        client: 1,
        nc: ReqNo(1),
        digest: Digest::of(&old),
    };
    let mut r = net.replica(disk.recovered());
    let served = net.deliver(&mut r, wait + 1, Principal::Exec(ExecId(0)), &fetch);
    assert_eq!(net.opened(&served).len(), 1, "served after a restart");
    disk.apply(&net.complete(&mut r, &[0, 1], 3, &[(1, ReqNo(1))]));
    assert!(!disk.0.contains_key(&recovery::superseded_key(1)));
    let mut r = net.replica(disk.recovered());
    let served = net.deliver(&mut r, wait + 2, Principal::Exec(ExecId(0)), &fetch);
    assert_eq!(
        net.opened(&served).len(),
        1,
        "served from the cache after a restart"
    );
    assert_eq!(r.cached_bodies(), 2);
    assert_eq!(r.counters().get("recovered-corrupt"), 0);
}

/// Every body a replica vouched for under a number stays fetchable, not only the newest
/// superseded one: any of them may be the one ordered (sim seed 737, u1r1). A client that
/// supersedes one number more than `MAX_SUPERSEDED` times is blacklisted instead.
#[test]
fn every_superseded_body_stays_fetchable_and_endless_superseding_is_blacklisted() {
    let net = Net::new();
    let wait = net.cfg.auth_resend_us;
    let mut r = net.replica(Recovered::default());
    let ops: Vec<Vec<u8>> = (0..=crate::request::MAX_SUPERSEDED)
        .map(|i| format!("op {i}").into_bytes())
        .collect();
    for (i, op) in ops.iter().enumerate() {
        let sent = net.request(&mut r, i as u64 * wait, 1, ReqNo(1), op);
        assert_eq!(net.auth_reqs(&sent).len(), net.cfg.quorums.order, "op {i}");
    }
    assert_eq!(
        r.counters().get("superseded-stranded"),
        crate::request::MAX_SUPERSEDED as u64
    );
    for op in &ops {
        let fetch = Message::Fetch {
            seq: Seq(3),
            client: 1,
            nc: ReqNo(1),
            digest: Digest::of(op),
        };
        let served = net.deliver(
            &mut r,
            ops.len() as u64 * wait,
            Principal::Exec(ExecId(0)),
            &fetch,
        );
        assert_eq!(
            net.opened(&served).len(),
            1,
            "{:?} is served",
            String::from_utf8_lossy(op)
        );
    }
    assert_eq!(r.blacklisted(), 0);
    let once_more = net.request(&mut r, ops.len() as u64 * wait, 1, ReqNo(1), b"one more");
    assert!(net.auth_reqs(&once_more).is_empty());
    assert_eq!(r.counters().get("blacklisted-superseding"), 1);
    assert_eq!(r.blacklisted(), 1);
}

/// Seed 004 §3.4.1: a client caught sending what no correct client sends is refused, even its
/// later valid requests, until `blacklist_us` has passed; then it is served like any other.
#[test]
fn a_blacklisted_client_is_refused_until_the_entry_expires_then_served() {
    let net = Net::new();
    let ttl = net.cfg.blacklist_us;
    let mut r = net.replica(Recovered::default());
    net.request(&mut r, 0, 1, ReqNo(1), b"put a 1");
    net.complete(&mut r, &[0, 1], 1, &[(1, ReqNo(1))]);
    // Request number 0, which no correct client sends: blacklisted at t = 10.
    assert!(net
        .request(&mut r, 10, 1, ReqNo(0), b"put a 666")
        .is_empty());
    assert_eq!(r.blacklisted(), 1);
    // Its next, valid request is dropped unread, however often it comes...
    for t in [11, 1_000, ttl / 2, ttl + 9] {
        assert!(
            net.request(&mut r, t, 1, ReqNo(2), b"put a 2").is_empty(),
            "served at {t}"
        );
    }
    assert_eq!(r.counters().drops(DropReason::Blacklisted), 4);
    assert_eq!(r.counters().get("authenticated"), 1);
    // ...while other clients are served meanwhile.
    assert_eq!(
        net.auth_reqs(&net.request(&mut r, 20, 2, ReqNo(1), b"get b"))
            .len(),
        4
    );
    // Once the entry expires the client is served again.
    let later = net.request(&mut r, ttl + 10, 1, ReqNo(2), b"put a 2");
    let sent = net.auth_reqs(&later);
    assert_eq!(sent.len(), 4, "{later:?}");
    assert_eq!(sent[0].1.nc, ReqNo(2));
    assert_eq!(r.counters().drops(DropReason::Blacklisted), 4);
}

/// A validly MACed frame whose body does not decode, a request numbered 0, and a message only
/// replicas send: each is something no correct client sends, so each blacklists its sender.
#[test]
fn a_valid_mac_over_an_invalid_body_blacklists_the_client() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let c = Principal::Client(0);
    let mut frame = net
        .ring(c)
        .seal(
            ME,
            &Message::Request {
                life: plumb_wire::Life::default(),
                nc: ReqNo(1),
                op: b"xxxx".to_vec(),
            },
        )
        .unwrap();
    let mac_at = frame.len() - plumb_crypto::Mac::default().0.len();
    for b in &mut frame[plumb_wire::envelope::HEADER..mac_at] {
        *b = 0xff;
    }
    let mac = net.ring(c).mac_for(ME, &frame[..mac_at]).unwrap();
    frame[mac_at..].copy_from_slice(&mac.0);
    assert!(run(&mut r, 0, Event::Receive(frame)).is_empty());
    assert_eq!(r.counters().drops(DropReason::Malformed), 1);
    assert_eq!(r.counters().get("blacklisted-malformed"), 1);
    assert!(net.request(&mut r, 1, 0, ReqNo(1), b"get a").is_empty());
    assert_eq!(r.counters().drops(DropReason::Blacklisted), 1);

    assert!(net.request(&mut r, 2, 1, ReqNo(0), b"get a").is_empty());
    assert_eq!(r.counters().get("blacklisted-bad-number"), 1);
    let done = Message::BatchComplete {
        seq: Seq(1),
        executed: vec![],
    };
    assert!(net
        .deliver(&mut r, 3, Principal::Client(2), &done)
        .is_empty());
    assert_eq!(r.counters().get("blacklisted-unexpected"), 1);
    assert_eq!(r.blacklisted(), 3);
    // A frame that fails its MAC blacklists no one: anybody can forge a sender label.
    let mut forged = net
        .ring(Principal::Client(3))
        .seal(
            ME,
            &Message::Request {
                life: plumb_wire::Life::default(),
                nc: ReqNo(0),
                op: vec![],
            },
        )
        .unwrap();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    assert!(run(&mut r, 4, Event::Receive(forged)).is_empty());
    assert_eq!(r.blacklisted(), 3);
}

#[test]
fn al1_older_request_is_answered_with_the_latest() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    net.request(&mut r, 0, 1, ReqNo(1), b"one");
    net.complete(&mut r, &[0, 1], 1, &[(1, ReqNo(1))]);
    let second = net.request(&mut r, 1, 1, ReqNo(2), b"two");
    let old = net.request(&mut r, 2, 1, ReqNo(1), b"one");
    assert_eq!(net.auth_reqs(&old), net.auth_reqs(&second));
    assert_eq!(net.auth_reqs(&old)[0].1.nc, ReqNo(2));
}

#[test]
fn as4_no_second_pending_request() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let first = net.request(&mut r, 0, 0, ReqNo(1), b"one");
    // The next request may overtake the BATCH-COMPLETE of the pending one: held, not sent.
    let held = net.request(&mut r, 1, 0, ReqNo(2), b"two");
    assert!(held.is_empty(), "{held:?}");
    assert_eq!(r.counters().get("deferred"), 1);
    // Sent again, it means the BATCH-COMPLETE was lost.
    let second = net.request(&mut r, 2, 0, ReqNo(2), b"two");
    assert_eq!(r.counters().get("pending"), 1);
    assert!(
        stores(&second).is_empty(),
        "nothing authenticated: {second:?}"
    );
    // It resends the pending request's AUTH-REQ so that a stale entry gets re-reported.
    assert_eq!(net.auth_reqs(&second), net.auth_reqs(&first));
    assert_eq!((r.pending_count(), r.last_sent_nc(0)), (1, Some(ReqNo(1))));
    // A request further ahead is not held.
    net.request(&mut r, 3, 0, ReqNo(5), b"five");
    assert_eq!(r.counters().get("deferred"), 1);
}

#[test]
fn a_request_held_behind_its_pending_one_is_authenticated_once_that_is_ordered() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    net.request(&mut r, 0, 1, ReqNo(1), &big_op(1));
    assert!(net.request(&mut r, 1, 1, ReqNo(2), b"two").is_empty());
    let out = net.complete(&mut r, &[0, 1], 4, &[(1, ReqNo(1))]);
    let auth_reqs = net.auth_reqs(&out);
    assert_eq!(auth_reqs.len(), net.cfg.quorums.order, "{out:?}");
    assert!(auth_reqs.iter().all(|(_, core, _)| core.nc == ReqNo(2)));
    assert_eq!((r.pending_count(), r.last_sent_nc(1)), (1, Some(ReqNo(2))));
}

#[test]
fn retransmission_is_rate_limited_per_client() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let period = net.cfg.auth_resend_us;
    let order = net.cfg.quorums.order;
    net.request(&mut r, 0, 1, ReqNo(1), b"x");
    net.request(&mut r, 0, 2, ReqNo(1), b"y");
    assert_eq!(sends(&net.request(&mut r, 100, 1, ReqNo(1), b"x")), order);
    assert_eq!(sends(&net.request(&mut r, 200, 1, ReqNo(1), b"x")), 0);
    assert_eq!(
        sends(&net.request(&mut r, 99 + period, 1, ReqNo(2), b"x2")),
        0,
        "held"
    );
    assert_eq!(
        sends(&net.request(&mut r, 99 + period, 1, ReqNo(2), b"x2")),
        0,
        "the pending path shares the limit"
    );
    assert_eq!(r.counters().get("resend-limited"), 2);
    // Another client has its own budget.
    assert_eq!(sends(&net.request(&mut r, 200, 2, ReqNo(1), b"y")), order);
    assert_eq!(
        sends(&net.request(&mut r, 100 + period, 1, ReqNo(1), b"x")),
        order
    );
}

#[test]
fn small_ops_travel_inline_large_ones_as_digests() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let small = vec![7u8; net.cfg.inline_max_bytes];
    let large = vec![7u8; net.cfg.inline_max_bytes + 1];
    let a = net.auth_reqs(&net.request(&mut r, 0, 0, ReqNo(1), &small));
    let b = net.auth_reqs(&net.request(&mut r, 0, 1, ReqNo(1), &large));
    assert_eq!(a[0].1.body, Body::Inline(small));
    assert_eq!(b[0].1.body, Body::Digest(Digest::of(&large)));
}

#[test]
fn al2_fetch_serves_matching_bodies_only() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let op = big_op(3);
    net.request(&mut r, 0, 1, ReqNo(1), &op);
    let fetch = Message::Fetch {
        seq: Seq(5),
        client: 1,
        nc: ReqNo(1),
        digest: Digest::of(&op),
    };
    let served = net.opened(&net.deliver(&mut r, 0, Principal::Exec(ExecId(2)), &fetch));
    assert_eq!(
        served,
        vec![(
            Principal::Exec(ExecId(2)),
            Message::Command {
                seq: Seq(5),
                client: 1,
                nc: ReqNo(1),
                op: op.clone()
            }
        )]
    );

    let wrong = Message::Fetch {
        seq: Seq(5),
        client: 1,
        nc: ReqNo(1),
        digest: Digest::of(b"other"),
    };
    assert!(net
        .deliver(&mut r, 0, Principal::Exec(ExecId(2)), &wrong)
        .is_empty());
    let unknown = Message::Fetch {
        seq: Seq(5),
        client: 1,
        nc: ReqNo(2),
        digest: Digest::of(&op),
    };
    assert!(net
        .deliver(&mut r, 0, Principal::Exec(ExecId(2)), &unknown)
        .is_empty());
    // A wrong digest for a known request is a miss; a request not seen yet is parked.
    assert_eq!(r.counters().get("fetch-miss"), 1);
    assert_eq!(r.counters().get("fetch-parked"), 1);

    // Once ordered, the body is served from the command cache.
    net.complete(&mut r, &[0, 1], 5, &[(1, ReqNo(1))]);
    assert_eq!((r.pending_count(), r.cached_bodies()), (0, 1));
    assert_eq!(
        net.opened(&net.deliver(&mut r, 0, Principal::Exec(ExecId(2)), &fetch))
            .len(),
        1
    );
}

#[test]
fn a_fetch_that_overtakes_its_request_is_answered_when_the_request_arrives() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let op = big_op(7);
    let fetch = |nc, op: &[u8]| Message::Fetch {
        seq: Seq(9),
        client: 1,
        nc,
        digest: Digest::of(op),
    };
    // The batch was ordered on other replicas' vouchers; the request has not reached us.
    assert!(net
        .deliver(&mut r, 0, Principal::Exec(ExecId(1)), &fetch(ReqNo(1), &op))
        .is_empty());
    // A FETCH for the same request with another body, and one for a later request.
    net.deliver(
        &mut r,
        0,
        Principal::Exec(ExecId(2)),
        &fetch(ReqNo(1), b"forged"),
    );
    net.deliver(&mut r, 0, Principal::Exec(ExecId(2)), &fetch(ReqNo(2), &op));
    assert_eq!(r.counters().get("fetch-parked"), 3);

    let out = net.opened(&net.request(&mut r, 1, 1, ReqNo(1), &op));
    let commands: Vec<&(Principal, Message)> = out
        .iter()
        .filter(|(_, m)| matches!(m, Message::Command { .. }))
        .collect();
    assert_eq!(
        commands,
        vec![&(
            Principal::Exec(ExecId(1)),
            Message::Command {
                seq: Seq(9),
                client: 1,
                nc: ReqNo(1),
                op: op.clone()
            }
        )]
    );
    // The later request's FETCH stays parked; the answered and the forged one are gone.
    assert_eq!(r.parked_fetches(), 1);
    // Parked FETCHes are bounded.
    for nc in 10..10 + ordered::PARKED_MAX as u64 {
        net.deliver(
            &mut r,
            2,
            Principal::Exec(ExecId(2)),
            &fetch(ReqNo(nc), &op),
        );
    }
    assert_eq!(r.parked_fetches(), ordered::PARKED_MAX);
    assert!(r.counters().get("fetch-miss") >= 1);
}

#[test]
fn batch_complete_needs_r_plus_one_matching_exec_replicas() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    net.request(&mut r, 0, 1, ReqNo(1), &big_op(1));
    // One faulty execution replica, however often it repeats itself, changes nothing.
    assert!(net
        .complete(&mut r, &[0, 0, 0], 1, &[(1, ReqNo(1))])
        .is_empty());
    // A value that names other requests does not count for this one.
    assert!(net.complete(&mut r, &[2], 1, &[(0, ReqNo(1))]).is_empty());
    assert_eq!((r.pending_count(), r.cached_bodies()), (1, 0));
    // A second replica reporting the request executed, even under another batch number (the
    // retransmission path reports whatever batch it is at): r+1 replicas, one correct.
    let acted = net.complete(&mut r, &[1], 2, &[(1, ReqNo(1))]);
    assert_eq!((r.pending_count(), r.cached_bodies()), (0, 1));
    assert!(stores(&acted)
        .iter()
        .any(|op| matches!(op, StoreOp::Put { key, .. } if key.starts_with("auth/cmd/"))));
    // A new request of the client is authenticated now.
    assert_eq!(
        net.auth_reqs(&net.request(&mut r, 0, 1, ReqNo(2), b"next"))
            .len(),
        net.cfg.quorums.order
    );
}

#[test]
fn pending_clears_on_a_later_executed_request_and_stays_fetchable() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let op = big_op(4);
    net.request(&mut r, 0, 1, ReqNo(3), &op);
    // This replica missed batch 3 (which ordered 3); batch 6 ordered the client's 4.
    net.complete(&mut r, &[0, 2], 6, &[(1, ReqNo(4))]);
    assert_eq!(r.pending_count(), 0);
    let fetch = Message::Fetch {
        seq: Seq(3),
        client: 1,
        nc: ReqNo(3),
        digest: Digest::of(&op),
    };
    assert_eq!(
        net.opened(&net.deliver(&mut r, 0, Principal::Exec(ExecId(1)), &fetch))
            .len(),
        1
    );
}

#[test]
fn batch_complete_for_an_older_request_keeps_the_pending_one() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    net.request(&mut r, 0, 1, ReqNo(5), b"five");
    net.complete(&mut r, &[0, 1], 2, &[(1, ReqNo(4))]);
    assert_eq!(r.pending_count(), 1);
}

#[test]
fn garbage_collection_keeps_three_intervals() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    let mut deleted = Vec::new();
    for interval in 0..6u64 {
        let nc = interval + 1;
        net.request(&mut r, 0, 0, ReqNo(nc), &big_op(nc as u8));
        let actions = net.complete(&mut r, &[0, 1], interval * CP + 1, &[(0, ReqNo(nc))]);
        deleted.extend(stores(&actions).into_iter().filter_map(|op| match op {
            StoreOp::DeletePrefix { prefix } => Some(prefix.clone()),
            _ => None,
        }));
        let lowest = interval.saturating_sub(2);
        assert_eq!(r.cache.intervals(), (lowest..=interval).collect::<Vec<_>>());
    }
    assert_eq!(deleted, (0..3).map(cached_prefix).collect::<Vec<_>>());
    assert_eq!(r.cached_bodies(), 3);
    let fetch = |nc: u64| Message::Fetch {
        seq: Seq(0),
        client: 0,
        nc: ReqNo(nc),
        digest: Digest::of(&big_op(nc as u8)),
    };
    assert!(
        net.deliver(&mut r, 0, Principal::Exec(ExecId(0)), &fetch(3))
            .is_empty(),
        "collected"
    );
    assert_eq!(
        net.opened(&net.deliver(&mut r, 0, Principal::Exec(ExecId(0)), &fetch(4)))
            .len(),
        1
    );
    // Reports about collected batches are ignored.
    assert!(net
        .complete(&mut r, &[0, 1], 2, &[(0, ReqNo(1))])
        .is_empty());
    assert_eq!(r.counters().get("batch-complete-stale"), 2);
}

#[test]
fn garbage_collection_after_a_jump_drops_every_old_interval() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    for (nc, seq) in [(1, 1), (2, CP + 1)] {
        net.request(&mut r, 0, 0, ReqNo(nc), b"op");
        net.complete(&mut r, &[0, 1], seq, &[(0, ReqNo(nc))]);
    }
    let actions = net.complete(&mut r, &[0, 1], 20 * CP, &[]);
    let prefixes: Vec<&StoreOp> = stores(&actions);
    assert_eq!(
        prefixes,
        vec![
            &StoreOp::DeletePrefix {
                prefix: cached_prefix(0)
            },
            &StoreOp::DeletePrefix {
                prefix: cached_prefix(1)
            }
        ]
    );
    assert_eq!(r.cached_bodies(), 0);
}

#[test]
fn vote_memory_is_bounded_against_a_faulty_exec_replica() {
    let net = Net::new();
    let mut r = net.replica(Recovered::default());
    for seq in 0..2_000 {
        net.complete(&mut r, &[2], seq, &[(0, ReqNo(seq))]);
    }
    assert!(
        r.votes.outstanding() <= 3 * CP as usize,
        "{}",
        r.votes.outstanding()
    );
    let huge: Vec<Executed> = (0..net.cfg.batch_max as u32 + 1)
        .map(|client| Executed {
            client,
            nc: ReqNo(1),
        })
        .collect();
    net.deliver(
        &mut r,
        0,
        Principal::Exec(ExecId(2)),
        &Message::BatchComplete {
            seq: Seq(1),
            executed: huge,
        },
    );
    assert_eq!(r.counters().drops(DropReason::OversizedBatchComplete), 1);
}

#[test]
fn recovery_restores_pending_last_sent_and_cache() {
    let net = Net::new();
    let mut disk = Disk::default();
    let mut r = net.replica(Recovered::default());
    let op0 = big_op(10);
    let op1 = big_op(11);
    let first = net.request(&mut r, 0, 0, ReqNo(1), &op0);
    disk.apply(&first);
    disk.apply(&net.request(&mut r, 0, 1, ReqNo(1), &op1));
    disk.apply(&net.complete(&mut r, &[0, 1], 3, &[(1, ReqNo(1))]));

    let mut r = net.replica(disk.recovered());
    let start = run(&mut r, 0, Event::Start);
    assert_eq!(sends(&start), 0);
    assert_eq!((r.pending_count(), r.cached_bodies()), (1, 1));
    assert_eq!(
        (r.last_sent_nc(0), r.last_sent_nc(1)),
        (Some(ReqNo(1)), Some(ReqNo(1)))
    );

    // lastSent is the same AUTH-REQ as before the crash; the pending one still blocks.
    assert_eq!(
        net.auth_reqs(&net.request(&mut r, 0, 0, ReqNo(1), &op0)),
        net.auth_reqs(&first)
    );
    net.request(&mut r, 2, 0, ReqNo(2), b"two");
    net.request(&mut r, 2, 0, ReqNo(2), b"two");
    assert_eq!(r.counters().get("pending"), 1);
    // lastSent survived: another operation under number 1 is not authenticated.
    assert!(net
        .auth_reqs(&net.request(&mut r, 2, 0, ReqNo(1), b"different"))
        .is_empty());
    assert_eq!(r.counters().get("reused-number"), 1);
    // Client 1's request was ordered: its next one is authenticated.
    assert_eq!(
        net.auth_reqs(&net.request(&mut r, 3, 1, ReqNo(2), b"next"))
            .len(),
        net.cfg.quorums.order
    );

    for (client, op) in [(0, &op0), (1, &op1)] {
        let fetch = Message::Fetch {
            seq: Seq(3),
            client,
            nc: ReqNo(1),
            digest: Digest::of(op),
        };
        let served = net.opened(&net.deliver(&mut r, 0, Principal::Exec(ExecId(1)), &fetch));
        assert_eq!(
            served,
            vec![(
                Principal::Exec(ExecId(1)),
                Message::Command {
                    seq: Seq(3),
                    client,
                    nc: ReqNo(1),
                    op: op.clone()
                }
            )]
        );
    }
}

#[test]
fn recovery_drops_intervals_outside_the_window_on_start() {
    let net = Net::new();
    let mut disk = Disk::default();
    let mut r = net.replica(Recovered::default());
    for (nc, seq) in [(1, 1), (2, 3 * CP + 1)] {
        disk.apply(&net.request(&mut r, 0, 0, ReqNo(nc), b"op"));
        disk.apply(&net.complete(&mut r, &[0, 1], seq, &[(0, ReqNo(nc))]));
    }
    // Simulate a crash before the deletion reached the disk.
    let stale = StoredRecordForTest::cached(0, 0, 1, 1, b"op");
    disk.0.insert(stale.0, stale.1);
    let mut r = net.replica(disk.recovered());
    assert_eq!(r.cached_bodies(), 1);
    let start = run(&mut r, 0, Event::Start);
    assert_eq!(
        stores(&start),
        vec![&StoreOp::DeletePrefix {
            prefix: cached_prefix(0)
        }]
    );
}

struct StoredRecordForTest;

impl StoredRecordForTest {
    fn cached(interval: u64, client: u32, nc: u64, seq: u64, op: &[u8]) -> (String, Vec<u8>) {
        let record = recovery::CachedRecord {
            client,
            nc: ReqNo(nc),
            seq: Seq(seq),
            op: op.to_vec(),
        };
        (
            cached_key(interval, client, ReqNo(nc)),
            plumb_core::storage::encode(&record),
        )
    }

    fn request(client: u32, nc: u64, op: &[u8]) -> (String, Vec<u8>) {
        let record = recovery::StoredRequest {
            client,
            life: plumb_wire::Life::default(),
            nc: ReqNo(nc),
            op: op.to_vec(),
        };
        (request_key(client), plumb_core::storage::encode(&record))
    }
}

#[test]
fn corrupt_records_are_ignored_and_counted() {
    let net = Net::new();
    let mut records = BTreeMap::new();
    let good = StoredRecordForTest::request(0, 4, b"good");
    records.insert(good.0, good.1);
    // Does not decode.
    records.insert(request_key(1), vec![0xff; 3]);
    // Decodes, but under another client's key.
    records.insert(
        request_key(2),
        StoredRecordForTest::request(1, 1, b"moved").1,
    );
    // A cache record filed under the wrong interval.
    let misfiled = StoredRecordForTest::cached(0, 1, 1, 9 * CP, b"x");
    records.insert(misfiled.0, misfiled.1);
    let corrupt = vec![cached_key(0, 2, ReqNo(1))];
    let r = net.replica(Recovered { records, corrupt });
    assert_eq!(r.counters().get("recovered-corrupt"), 4);
    assert_eq!((r.pending_count(), r.cached_bodies()), (1, 0));
    assert_eq!(
        (r.last_sent_nc(0), r.last_sent_nc(1), r.last_sent_nc(2)),
        (Some(ReqNo(4)), None, None)
    );
}

proptest! {
    #[test]
    fn arbitrary_frames_never_panic(frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..120), 1..20)) {
        let net = Net::new();
        let mut r = net.replica(Recovered::default());
        for f in frames {
            prop_assert!(run(&mut r, 0, Event::Receive(f)).is_empty());
        }
    }

    #[test]
    fn arbitrary_records_never_panic(entries in proptest::collection::vec((0u8..3, any::<u32>(), proptest::collection::vec(any::<u8>(), 0..40)), 0..10)) {
        let net = Net::new();
        let records = entries
            .into_iter()
            .map(|(kind, n, bytes)| {
                let key = match kind {
                    0 => request_key(n % 4),
                    1 => cached_key(u64::from(n % 3), n % 4, ReqNo(1)),
                    _ => format!("auth/other/{n}"),
                };
                (key, bytes)
            })
            .collect();
        let mut r = net.replica(Recovered { records, corrupt: Vec::new() });
        let _ = run(&mut r, 0, Event::Start);
    }

    /// AS3 and AS4 under any interleaving of requests (repeats, conflicts, gaps) and
    /// BATCH-COMPLETE quorums: one authenticated core per (client, nc), and a request is
    /// authenticated only when the client has none pending and none with a higher number.
    #[test]
    fn as3_as4_hold_for_any_request_stream(
        steps in proptest::collection::vec((0u32..CLIENTS, 1u64..6, 0u8..2, any::<bool>()), 1..60)
    ) {
        let net = Net::new();
        let mut r = net.replica(Recovered::default());
        let mut cores: BTreeMap<(u32, ReqNo), ReqCore> = BTreeMap::new();
        let mut seq = 0;
        for (i, (c, nc, variant, ordered)) in steps.into_iter().enumerate() {
            if ordered {
                // The execution stage reports the client's latest authenticated request.
                if let Some(last) = r.last_sent_nc(c) {
                    seq += 1;
                    net.complete(&mut r, &[0, 1], seq, &[(c, last)]);
                }
                continue;
            }
            let had_pending = r.pending.contains_key(&c);
            let last_before = r.last_sent_nc(c);
            let op = vec![variant; 1 + nc as usize];
            let actions = net.request(&mut r, i as u64, c, ReqNo(nc), &op);
            let authenticated = !stores(&actions).is_empty();
            if authenticated {
                prop_assert!(!had_pending, "AS4: authenticated while pending");
                prop_assert!(last_before.unwrap_or(ReqNo(0)) < ReqNo(nc), "AS4: a higher one was authenticated");
            }
            for (_, core, _) in net.auth_reqs(&actions) {
                let seen = cores.entry((core.client, core.nc)).or_insert_with(|| core.clone());
                prop_assert_eq!(&*seen, &core, "AS3: two cores for one identifier");
            }
            prop_assert!(r.pending_count() <= CLIENTS as usize);
        }
    }
}
