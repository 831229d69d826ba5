//! Where frames go: to a stage of this node (its mailbox), to another node (a [`Link`]), or
//! back to a client on the connection it opened.
//!
//! Incoming frames are routed before any MAC is checked (the stage checks it), so what this
//! layer trusts about a frame's sender is only what the connection it came on proved
//! ([`Origin`]): a peer connection is bound to a node by the handshake (`plumb_runtime::
//! handshake`), anything else is a client connection. The header's sender label must agree
//! with that binding or the frame is dropped; the flood guard and the mailbox queues are keyed
//! by the binding. The only MAC this layer checks is the one that lets a client claim a reply
//! route: a `Hello` carrying the nonce its connection was given (`plumb_runtime::handshake`),
//! so nobody can divert another client's replies, not even by replaying a frame the client
//! sent on another connection.

use crate::traffic::Dest;
use bytes::Bytes;
use plumb_core::KeyRing;
use plumb_runtime::handshake::{Nonce, Refused};
use plumb_runtime::source_limit::OverLimit;
use plumb_runtime::{Item, Link, Mailbox, Outbox, QueueKey};
use plumb_wire::{Envelope, Message, Principal};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Who sent a frame, as proven by the connection it came on; never read from the frame.
#[derive(Clone, Copy)]
pub enum Origin<'a> {
    /// A connection whose dialer proved it is this peer node.
    Peer(u16),
    /// A connection that made no peer handshake: only client principals may speak on it.
    Client(&'a ClientRoute),
}

/// A client connection's writer, a number telling connections apart, and the nonce the
/// connection was given (none: the client did not ask, and no route can be claimed over it).
#[derive(Clone)]
pub struct ClientRoute {
    pub conn: u64,
    pub nonce: Option<Nonce>,
    pub tx: mpsc::Sender<Bytes>,
}

pub struct Router {
    pub local: HashMap<Principal, Arc<Mailbox<()>>>,
    pub rings: HashMap<Principal, KeyRing>,
    /// Node id of every remote replica principal.
    pub remote: HashMap<Principal, u16>,
    pub links: BTreeMap<u16, Link>,
    pub clients: Mutex<HashMap<u32, ClientRoute>>,
    pub drops: Drops,
    /// Frames routed, for the per-operation cost table.
    pub traffic: crate::traffic::Traffic,
    pub flood: crate::flood::FloodGuard,
    /// Test builds: principals of this node whose adversary refuses some incoming frames.
    #[cfg(feature = "adversary")]
    pub ignoring: HashMap<Principal, plumb_adversary::Adversary>,
}

/// Frames this layer dropped, by reason.
#[derive(Default)]
pub struct Drops {
    pub not_hosted: AtomicU64,
    pub no_client_route: AtomicU64,
    pub client_queue_full: AtomicU64,
    pub bad_header: AtomicU64,
    pub bad_route_claim: AtomicU64,
    pub flooding_peer: AtomicU64,
    /// Drops this layer added for peer authentication, by reason.
    pub spoofed: [AtomicU64; Spoofed::ALL.len()],
    /// Peer handshakes refused on accepted connections, by reason.
    pub refused: [AtomicU64; Refused::ALL.len()],
    /// Connections closed unserved because their source held too many open
    /// (`source_open`) or opened them too fast (`source_rate`).
    pub source_open: AtomicU64,
    pub source_rate: AtomicU64,
}

/// A frame whose header names a sender its connection did not prove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spoofed {
    /// A replica sender on a client connection (no peer handshake).
    ReplicaOnClientConnection,
    /// A sender the node the connection is bound to does not host.
    NotThePeersPrincipal,
    /// Anything read on a link this node dialed: peers answer nothing there.
    OnDialedLink,
}

impl Spoofed {
    pub const ALL: [Spoofed; 3] = [
        Spoofed::ReplicaOnClientConnection,
        Spoofed::NotThePeersPrincipal,
        Spoofed::OnDialedLink,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Spoofed::ReplicaOnClientConnection => "replica-on-client-connection",
            Spoofed::NotThePeersPrincipal => "not-the-peers-principal",
            Spoofed::OnDialedLink => "on-dialed-link",
        }
    }
}

impl Drops {
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        [
            ("not-hosted", self.not_hosted.load(Ordering::Relaxed)),
            (
                "no-client-route",
                self.no_client_route.load(Ordering::Relaxed),
            ),
            (
                "client-queue-full",
                self.client_queue_full.load(Ordering::Relaxed),
            ),
            ("bad-header", self.bad_header.load(Ordering::Relaxed)),
            (
                "bad-route-claim",
                self.bad_route_claim.load(Ordering::Relaxed),
            ),
            ("flooding-peer", self.flooding_peer.load(Ordering::Relaxed)),
            (
                "connection-source-open-limit",
                self.source_open.load(Ordering::Relaxed),
            ),
            (
                "connection-source-rate-limit",
                self.source_rate.load(Ordering::Relaxed),
            ),
        ]
        .into_iter()
        .chain(
            Spoofed::ALL
                .iter()
                .map(|r| (r.name(), self.spoofed[*r as usize].load(Ordering::Relaxed))),
        )
        .collect()
    }

    pub fn spoofed(&self, reason: Spoofed) {
        self.spoofed[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn over_source_limit(&self, over: OverLimit) {
        match over {
            OverLimit::Open => &self.source_open,
            OverLimit::Rate => &self.source_rate,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self, reason: Refused) {
        if let Some(i) = Refused::ALL.iter().position(|r| *r == reason) {
            self.refused[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Refused peer handshakes by reason.
    pub fn refused_snapshot(&self) -> Vec<(&'static str, u64)> {
        Refused::ALL
            .iter()
            .zip(&self.refused)
            .map(|(r, n)| (r.name(), n.load(Ordering::Relaxed)))
            .collect()
    }
}

impl Router {
    /// Hand a frame read from the network to the stage it is addressed to. `from` is what the
    /// connection it came on proved about its sender. False: the frame came from a peer node
    /// that is cut off for flooding; close the connection it came on.
    pub fn deliver(&self, frame: Vec<u8>, from: Origin<'_>) -> bool {
        let envelope = Envelope::parse(&frame).map(|e| (e.sender, e.receiver));
        // The bound node pays for every byte it sends, whatever its frames claim, except the
        // state transfer between its execution replica and ours: that traffic is asked for
        // (objects, nodes, checkpoints, a bounded number in flight; what was not asked for is
        // dropped by the stage), comes from one peer at a time, and a recovering replica
        // fetching a large state at full speed had its peers cut off for flooding (`plumb
        // bench recovery --sizes 400M`: both cut for 10 minutes, the replica stuck). An
        // execution replica flooding with such frames still queues only its own mailbox share.
        if let Origin::Peer(node) = from {
            let now = std::time::Instant::now();
            let transfer = matches!(envelope, Ok((sender @ Principal::Exec(_), Principal::Exec(_)))
                if self.remote.get(&sender) == Some(&node));
            let admitted = if transfer {
                !self.flood.is_cut(node, now)
            } else {
                self.flood.admit(node, frame.len(), now)
            };
            if !admitted {
                self.drops.flooding_peer.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        let (sender, receiver) = match envelope {
            Ok(pair) => pair,
            Err(_) => {
                self.drops.bad_header.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        };
        let queue = match (from, sender) {
            (Origin::Peer(node), _) if self.remote.get(&sender) == Some(&node) => {
                QueueKey::Peer(sender)
            }
            (Origin::Peer(_), _) => {
                self.drops.spoofed(Spoofed::NotThePeersPrincipal);
                return true;
            }
            (Origin::Client(_), Principal::Client(_)) => QueueKey::Clients,
            (Origin::Client(_), _) => {
                self.drops.spoofed(Spoofed::ReplicaOnClientConnection);
                return true;
            }
        };
        let Some(mailbox) = self.local.get(&receiver) else {
            self.drops.not_hosted.fetch_add(1, Ordering::Relaxed);
            return true;
        };
        #[cfg(feature = "adversary")]
        let frame = match (self.ignoring.get(&receiver), self.rings.get(&receiver)) {
            (Some(adv), Some(ring)) => match adv.accepts(ring, frame) {
                Some(frame) => frame,
                None => return true,
            },
            _ => frame,
        };
        if let (Principal::Client(c), Origin::Client(route)) = (sender, from) {
            if self.take_greeting(c, receiver, &frame, route) {
                return true;
            }
        }
        if let Principal::Client(_) = sender {
            self.traffic.sent(sender, Dest::Local, frame.len());
        }
        mailbox.push(queue, Item::Frame(frame));
        true
    }

    /// A client's greeting, consumed here (true): client `c` is reachable over `route` from now
    /// on if the greeting carries the nonce `route`'s connection was given under a MAC that
    /// verifies; otherwise it is counted (`bad-route-claim`). No other frame claims a route: one
    /// recorded on another connection and replayed here would otherwise divert `c`'s replies.
    fn take_greeting(
        &self,
        c: u32,
        receiver: Principal,
        frame: &[u8],
        route: &ClientRoute,
    ) -> bool {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        // A client already answered over this connection: nothing to check (its stage checks
        // the MAC of whatever it sends next).
        if clients.get(&c).is_some_and(|r| r.conn == route.conn) {
            return false;
        }
        match self.rings.get(&receiver).map(|ring| ring.open(frame)) {
            Some(Ok((_, Message::Hello { nonce }))) => {
                if route.nonce == Some(nonce) {
                    clients.insert(c, route.clone());
                } else {
                    self.drops.bad_route_claim.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            // Any other frame goes on to its stage, which checks it; it claims nothing.
            _ => false,
        }
    }

    /// Forget routes over a closed connection.
    pub fn connection_closed(&self, conn: u64) {
        self.clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, r| r.conn != conn);
    }
}

impl Outbox for Router {
    fn send(&self, from: Principal, to: Principal, frame: Vec<u8>) {
        if let Some(mailbox) = self.local.get(&to) {
            self.traffic.sent(from, Dest::Local, frame.len());
            mailbox.push(QueueKey::of_sender(from), Item::Frame(frame));
            return;
        }
        if let Principal::Client(c) = to {
            self.traffic.sent(from, Dest::Client, frame.len());
            let route = self
                .clients
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&c)
                .cloned();
            match route {
                Some(r) => {
                    if r.tx.try_send(Bytes::from(frame)).is_err() {
                        self.drops.client_queue_full.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None => {
                    self.drops.no_client_route.fetch_add(1, Ordering::Relaxed);
                }
            }
            return;
        }
        if let Some(link) = self.remote.get(&to).and_then(|n| self.links.get(n)) {
            self.traffic.sent(from, Dest::Peer, frame.len());
            link.send(frame);
        } else {
            self.drops.not_hosted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{AuthId, ExecId, OrderId};

    /// Node 0 hosting o0; node 1 hosts a1 and o1, node 2 hosts o2.
    fn router() -> Router {
        let mut local = HashMap::new();
        local.insert(Principal::Order(OrderId(0)), Arc::new(Mailbox::new(2, 2)));
        Router {
            local,
            rings: HashMap::new(),
            remote: [
                (Principal::Auth(AuthId(1)), 1),
                (Principal::Order(OrderId(1)), 1),
                (Principal::Order(OrderId(2)), 2),
            ]
            .into_iter()
            .collect(),
            links: BTreeMap::new(),
            clients: Mutex::new(HashMap::new()),
            drops: Drops::default(),
            traffic: Default::default(),
            flood: crate::flood::FloodGuard::new(20, 1 << 30, std::time::Duration::from_secs(1)),
            #[cfg(feature = "adversary")]
            ignoring: HashMap::new(),
        }
    }

    /// A well-formed header from `from` to `to`, an empty body and a MAC that does not verify
    /// (this layer never checks it).
    fn frame(from: Principal, to: Principal) -> Vec<u8> {
        let mut f = plumb_wire::envelope::MAGIC.to_vec();
        f.push(plumb_wire::envelope::VERSION);
        f.extend_from_slice(&from.label().to_le_bytes());
        f.extend_from_slice(&to.label().to_le_bytes());
        f.extend_from_slice(&0u32.to_le_bytes());
        f.extend_from_slice(&[0; 16]);
        f
    }

    fn count(r: &Router, reason: Spoofed) -> u64 {
        r.drops.spoofed[reason as usize].load(Ordering::Relaxed)
    }

    fn waiting(r: &Router) -> usize {
        r.local[&Principal::Order(OrderId(0))].depth()
    }

    #[test]
    fn a_connection_without_a_handshake_cannot_speak_for_any_replica() {
        let r = router();
        let (route, _rx) = connection(7, None);
        for p in [
            Principal::Order(OrderId(1)),
            Principal::Auth(AuthId(1)),
            Principal::Order(OrderId(2)),
        ] {
            assert!(r.deliver(
                frame(p, Principal::Order(OrderId(0))),
                Origin::Client(&route)
            ));
        }
        assert_eq!(count(&r, Spoofed::ReplicaOnClientConnection), 3);
        assert_eq!(waiting(&r), 0, "nothing reached a peer's queue");
    }

    #[test]
    fn a_peer_connection_speaks_only_for_the_principals_of_its_proven_node() {
        let r = router();
        // Node 2 claiming node 1's principals, or a client's: dropped.
        assert!(r.deliver(
            frame(Principal::Order(OrderId(1)), Principal::Order(OrderId(0))),
            Origin::Peer(2)
        ));
        assert!(r.deliver(
            frame(Principal::Client(3), Principal::Order(OrderId(0))),
            Origin::Peer(2)
        ));
        assert_eq!(count(&r, Spoofed::NotThePeersPrincipal), 2);
        assert_eq!(waiting(&r), 0);
        // Its own principal: queued.
        assert!(r.deliver(
            frame(Principal::Order(OrderId(2)), Principal::Order(OrderId(0))),
            Origin::Peer(2)
        ));
        assert_eq!(waiting(&r), 1);
    }

    #[test]
    fn client_frames_wait_in_the_client_queue_whatever_they_claim() {
        let r = router();
        let (route, _rx) = connection(7, None);
        // The client queue holds 2: a third client frame is dropped there...
        for _ in 0..3 {
            r.deliver(
                frame(Principal::Client(1), Principal::Order(OrderId(0))),
                Origin::Client(&route),
            );
        }
        assert_eq!(r.local[&Principal::Order(OrderId(0))].dropped(), 1);
        // ...and node 1's queue still has room for node 1's own frames.
        assert!(r.deliver(
            frame(Principal::Order(OrderId(1)), Principal::Order(OrderId(0))),
            Origin::Peer(1)
        ));
        assert_eq!(waiting(&r), 3);
    }

    /// Keys of client 5 and of o0, the principal node 0 hosts; and the router of
    /// [`router`] holding o0's ring.
    fn keyed() -> (KeyRing, Router) {
        use plumb_crypto::Identity;
        let client = Arc::new(Identity::from_seed([5; 32]));
        let order = Arc::new(Identity::from_seed([9; 32]));
        let directory: Arc<HashMap<_, _>> = Arc::new(
            [
                (Principal::Client(5), client.public()),
                (Principal::Order(OrderId(0)), order.public()),
            ]
            .into_iter()
            .collect(),
        );
        let mut r = router();
        r.rings.insert(
            Principal::Order(OrderId(0)),
            KeyRing::new(Principal::Order(OrderId(0)), order, directory.clone()),
        );
        (KeyRing::new(Principal::Client(5), client, directory), r)
    }

    /// Client connection `conn`'s route, given the nonce `[nonce; 32]` if it asked for one,
    /// and the receiver of what is sent over it.
    fn connection(conn: u64, nonce: Option<u8>) -> (ClientRoute, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(4);
        let route = ClientRoute {
            conn,
            nonce: nonce.map(|n| [n; 32]),
            tx,
        };
        (route, rx)
    }

    fn routed_to(r: &Router, c: u32) -> Option<u64> {
        r.clients.lock().unwrap().get(&c).map(|route| route.conn)
    }

    #[test]
    fn a_greeting_over_the_connections_nonce_claims_the_route_and_is_consumed() {
        let (client, r) = keyed();
        let (a, _rx) = connection(1, Some(0xA1));
        let hello = client
            .seal(
                Principal::Order(OrderId(0)),
                &Message::Hello { nonce: [0xA1; 32] },
            )
            .unwrap();
        assert!(r.deliver(hello, Origin::Client(&a)));
        assert_eq!(routed_to(&r, 5), Some(1));
        assert_eq!(waiting(&r), 0, "a greeting reaches no stage");
    }

    #[test]
    fn a_frame_replayed_on_another_connection_diverts_no_replies() {
        let (client, r) = keyed();
        let (a, _rx_a) = connection(1, Some(0xA1));
        let (b, _rx_b) = connection(2, Some(0xB2));
        let hello_a = client
            .seal(
                Principal::Order(OrderId(0)),
                &Message::Hello { nonce: [0xA1; 32] },
            )
            .unwrap();
        let request = client
            .seal(Principal::Order(OrderId(0)), &Message::LastRequestQuery)
            .unwrap();
        assert!(r.deliver(hello_a.clone(), Origin::Client(&a)));
        // The attacker on connection b replays what it recorded on a: the greeting (another
        // connection's nonce) and a frame that is no greeting at all.
        assert!(r.deliver(hello_a, Origin::Client(&b)));
        assert!(r.deliver(request, Origin::Client(&b)));
        assert_eq!(
            routed_to(&r, 5),
            Some(1),
            "the route moved to the replaying connection"
        );
        assert_eq!(r.drops.bad_route_claim.load(Ordering::Relaxed), 1);
        // The replayed request still reaches its stage, which judges it (as a retransmission).
        assert_eq!(waiting(&r), 1);
    }

    #[test]
    fn a_connection_that_asked_for_no_nonce_can_claim_no_route() {
        let (client, r) = keyed();
        let (raw, _rx) = connection(3, None);
        let hello = client
            .seal(
                Principal::Order(OrderId(0)),
                &Message::Hello { nonce: [0; 32] },
            )
            .unwrap();
        assert!(r.deliver(hello, Origin::Client(&raw)));
        assert_eq!(routed_to(&r, 5), None);
    }
    #[test]
    fn state_transfer_between_execution_replicas_never_gets_a_peer_cut_off() {
        // A floor of 1 000 bytes a second; node 1 hosts e1 and o1 and sends 8 000 bytes a
        // window, node 2 nothing.
        let mut r = router();
        r.flood = crate::flood::FloodGuard::new(20, 1_000, std::time::Duration::from_secs(60));
        r.local
            .insert(Principal::Exec(ExecId(0)), Arc::new(Mailbox::new(64, 64)));
        r.remote.insert(Principal::Exec(ExecId(1)), 1);
        let big = |from: Principal, to: Principal| {
            let mut f = plumb_wire::envelope::MAGIC.to_vec();
            f.push(plumb_wire::envelope::VERSION);
            f.extend_from_slice(&from.label().to_le_bytes());
            f.extend_from_slice(&to.label().to_le_bytes());
            f.extend_from_slice(&1_000u32.to_le_bytes());
            f.extend_from_slice(&[0; 1_000 + 16]);
            f
        };
        let (e1, e0) = (Principal::Exec(ExecId(1)), Principal::Exec(ExecId(0)));
        let (o1, o0) = (Principal::Order(OrderId(1)), Principal::Order(OrderId(0)));
        for _window in 0..2 {
            for _ in 0..8 {
                assert!(r.deliver(big(e1, e0), Origin::Peer(1)));
            }
            std::thread::sleep(std::time::Duration::from_millis(1_050));
        }
        assert!(
            r.deliver(big(e1, e0), Origin::Peer(1)),
            "solicited bytes are not charged"
        );
        assert!(!r.flood.is_cut(1, std::time::Instant::now()));
        assert_eq!(r.drops.flooding_peer.load(Ordering::Relaxed), 0);
        // The same bytes as agreement traffic: cut once a window closes over them.
        for _ in 0..8 {
            r.deliver(big(o1, o0), Origin::Peer(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(1_050));
        assert!(!r.deliver(big(o1, o0), Origin::Peer(1)));
        assert!(r.flood.is_cut(1, std::time::Instant::now()));
        // Cut off, its transfer frames are dropped too.
        let dropped = r.drops.flooding_peer.load(Ordering::Relaxed);
        assert!(!r.deliver(big(e1, e0), Origin::Peer(1)));
        assert_eq!(r.drops.flooding_peer.load(Ordering::Relaxed), dropped + 1);
    }
}
