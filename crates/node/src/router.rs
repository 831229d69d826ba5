//! Where frames go: to a stage of this node (its mailbox), to another node (a [`Link`]), or
//! back to a client on the connection it opened.
//!
//! Incoming frames are routed by the envelope header before any MAC is checked (the stage
//! checks it); the only MAC this layer checks is the one that lets a client claim a reply
//! route, so nobody can divert another client's replies.

use bytes::Bytes;
use plumb_core::KeyRing;
use plumb_runtime::{Item, Link, Mailbox, Outbox, QueueKey};
use plumb_wire::{Envelope, Message, Principal};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// A client connection's writer, and a number telling connections apart.
#[derive(Clone)]
pub struct ClientRoute {
    pub conn: u64,
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
}

impl Drops {
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        vec![
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
        ]
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Claim {
    Known,
    Proven,
    /// A greeting, consumed here: it only claims the route.
    Hello,
    Refused,
}

impl Router {
    /// Hand a frame read from the network to the stage it is addressed to. `conn` is the
    /// client connection it came on, if it came on one we accepted. False: the frame claims a
    /// peer node that is cut off for flooding; close the connection it came on.
    pub fn deliver(&self, frame: Vec<u8>, conn: Option<&ClientRoute>) -> bool {
        let (sender, receiver) = match Envelope::parse(&frame) {
            Ok(e) => (e.sender, e.receiver),
            Err(_) => {
                self.drops.bad_header.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        };
        if let Some(&peer) = self.remote.get(&sender) {
            if !self
                .flood
                .admit(peer, frame.len(), std::time::Instant::now())
            {
                self.drops.flooding_peer.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        let Some(mailbox) = self.local.get(&receiver) else {
            self.drops.not_hosted.fetch_add(1, Ordering::Relaxed);
            return true;
        };
        #[cfg(feature = "adversary")]
        if let (Some(adv), Some(ring)) = (self.ignoring.get(&receiver), self.rings.get(&receiver)) {
            if !adv.accepts(ring, &frame) {
                return true;
            }
        }
        if let (Principal::Client(c), Some(route)) = (sender, conn) {
            if self.claim_route(c, receiver, &frame, route) == Claim::Hello {
                return true;
            }
        }
        mailbox.push(QueueKey::of_sender(sender), Item::Frame(frame));
        true
    }

    /// Remember that client `c` is reachable over `route`, if the frame proves it is `c`.
    fn claim_route(&self, c: u32, receiver: Principal, frame: &[u8], route: &ClientRoute) -> Claim {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if clients.get(&c).is_some_and(|r| r.conn == route.conn) {
            return Claim::Known;
        }
        match self.rings.get(&receiver).map(|ring| ring.open(frame)) {
            Some(Ok((_, msg))) => {
                clients.insert(c, route.clone());
                if msg == Message::Hello {
                    Claim::Hello
                } else {
                    Claim::Proven
                }
            }
            _ => {
                self.drops.bad_route_claim.fetch_add(1, Ordering::Relaxed);
                Claim::Refused
            }
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
            mailbox.push(QueueKey::of_sender(from), Item::Frame(frame));
            return;
        }
        if let Principal::Client(c) = to {
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
            link.send(frame);
        } else {
            self.drops.not_hosted.fetch_add(1, Ordering::Relaxed);
        }
    }
}
