//! What runs the pure clients for real: the stage thread's host (a queue of callers' operations
//! handed to free identities, completions and push events handed back) and the TCP links to
//! the nodes. The stage itself runs on `plumb_runtime::Runner`, the same runner the nodes use,
//! so a client gets the same group commit: one `fdatasync` covers the records of every request
//! issued in a group.

use crate::net::group::ClientGroup;
use crate::net::PushEvent;
use plumb_cluster::Cluster;
use plumb_core::{Action, KeyRing, Micros};
use plumb_runtime::{Greeting, Host, Item, Link, LinkDelay, Mailbox, OnFrame, Outbox, QueueKey};
use plumb_wire::{Envelope, Message, Principal};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{broadcast, oneshot};

/// Frames waiting from one node.
pub(crate) const FRAME_QUEUE: usize = 1 << 16;
/// Frames waiting for one node's link while it is down.
const LINK_QUEUE: usize = 1 << 16;

/// An operation waiting for a client identity.
pub(crate) struct Job {
    pub(crate) op: Vec<u8>,
    pub(crate) route: crate::Route,
    pub(crate) reply: oneshot::Sender<crate::net::Answer>,
    /// Speculative operations only: told the identity and number the operation was ordered
    /// under, and its early reply.
    pub(crate) speculation: Option<SpeculationTap>,
}

/// Where a speculative operation's progress goes before its answer.
pub(crate) struct SpeculationTap {
    pub(crate) assigned: oneshot::Sender<(u32, plumb_wire::ReqNo, plumb_crypto::Digest)>,
    pub(crate) early: oneshot::Sender<Vec<u8>>,
}

/// One link per node, shared by every identity of the group: replies find their identity by
/// the envelope's receiver.
pub(crate) struct Links {
    links: HashMap<u16, Link>,
    node_of: HashMap<Principal, u16>,
}

impl Links {
    /// Dial every node of `cluster`; frames that arrive go to `mailbox`, queued per sender.
    /// Must be called inside a tokio runtime.
    pub(crate) fn dial(
        cluster: &Cluster,
        rings: Vec<KeyRing>,
        mailbox: Arc<Mailbox<Job>>,
    ) -> Links {
        let rings = Arc::new(rings);
        let on_frame: OnFrame = Arc::new(move |frame: Vec<u8>| {
            if let Ok(env) = Envelope::parse(&frame) {
                mailbox.push(QueueKey::Peer(env.sender), Item::Frame(frame));
            }
        });
        let mut links = HashMap::new();
        let mut node_of = HashMap::new();
        for n in &cluster.nodes {
            // Greet one principal of the node for every identity, on every (re)connection and
            // over that connection's nonce, so the node sends each identity's replies back
            // over this link (and a greeting recorded here claims no other connection).
            let greeting: Option<Greeting> = n.principals.first().map(|&to| {
                let rings = rings.clone();
                Arc::new(move |nonce: &[u8; 32]| {
                    rings
                        .iter()
                        .filter_map(|r| r.seal(to, &Message::Hello { nonce: *nonce }))
                        .collect()
                }) as Greeting
            });
            // Under an emulated wide-area network the client delays both directions itself:
            // a node does not know which site a client is at (docs/wan-emulation.md).
            let delay = LinkDelay::both(cluster.client_delay(n.id));
            links.insert(
                n.id,
                Link::dial_delayed(n.address, LINK_QUEUE, on_frame.clone(), greeting, delay),
            );
            for p in &n.principals {
                node_of.insert(*p, n.id);
            }
        }
        Links { links, node_of }
    }

    /// Whether a connection to node `id` is up.
    pub(crate) fn connected(&self, id: u16) -> bool {
        self.links
            .get(&id)
            .is_some_and(|l| l.stats().connected.load(Ordering::Relaxed))
    }
}

impl Outbox for Links {
    fn send(&self, _from: Principal, to: Principal, frame: Vec<u8>) {
        if let Some(link) = self.node_of.get(&to).and_then(|n| self.links.get(n)) {
            link.send(frame);
        }
    }
}

/// Callers' operations in, answers and push events out, on the stage thread.
pub(crate) struct GroupHost {
    /// Per member: the caller waiting for its outstanding operation.
    waiting: Vec<Option<oneshot::Sender<crate::net::Answer>>>,
    /// Per member: where its outstanding speculative operation's early reply goes.
    early: Vec<Option<oneshot::Sender<Vec<u8>>>>,
    /// Members that may be free (checked again when taken).
    free: Vec<usize>,
    /// Operations waiting for a free member, oldest first.
    jobs: VecDeque<Job>,
    backlog: Arc<AtomicUsize>,
    ids: Vec<u32>,
    events: broadcast::Sender<PushEvent>,
}

impl GroupHost {
    pub(crate) fn new(
        ids: Vec<u32>,
        backlog: Arc<AtomicUsize>,
        events: broadcast::Sender<PushEvent>,
    ) -> GroupHost {
        GroupHost {
            waiting: ids.iter().map(|_| None).collect(),
            early: ids.iter().map(|_| None).collect(),
            free: (0..ids.len()).rev().collect(),
            jobs: VecDeque::new(),
            backlog,
            ids,
            events,
        }
    }

    /// Give waiting operations to free members, oldest first.
    fn dispatch(&mut self, group: &mut ClientGroup, now: Micros, out: &mut Vec<Action>) {
        while let Some(job) = self.jobs.pop_front() {
            if job.reply.is_closed() {
                continue; // the caller went away (timed out, or its connection closed) first
            }
            let member = loop {
                match self.free.pop() {
                    // A member whose request recovered from disk is still outstanding is not
                    // free; it comes back when that request completes.
                    Some(i) if self.waiting[i].is_none() && group.is_free(i) => break Some(i),
                    Some(_) => continue,
                    None => break None,
                }
            };
            let Some(i) = member else {
                self.jobs.push_front(job);
                break;
            };
            if group.submit(i, now, job.op, job.route, out).is_ok() {
                self.waiting[i] = Some(job.reply);
                if let Some(tap) = job.speculation {
                    // A member that is still learning its number has none yet: the caller
                    // then learns it never (its `assigned` closes), and cannot name this
                    // operation in a predicate.
                    if let Some(assigned) = group.outstanding_request(i) {
                        let _ = tap.assigned.send(assigned);
                    }
                    self.early[i] = Some(tap.early);
                }
            } else {
                self.free.push(i);
            }
        }
        self.backlog.store(self.jobs.len(), Ordering::Relaxed);
    }
}

impl Host<ClientGroup> for GroupHost {
    type Job = Job;

    fn job(&mut self, group: &mut ClientGroup, now: Micros, job: Job, out: &mut Vec<Action>) {
        self.jobs.push_back(job);
        self.dispatch(group, now, out);
    }

    fn after(&mut self, group: &mut ClientGroup, now: Micros, out: &mut Vec<Action>) {
        for (i, event, payload) in std::mem::take(&mut group.pushed) {
            // No subscriber, or one that lags: the push channel is unreliable by design
            // (seed 004 §5.5), so an event nobody takes is dropped.
            let _ = self.events.send(PushEvent {
                client: self.ids[i],
                event,
                payload,
            });
        }
        for (i, result) in std::mem::take(&mut group.early) {
            if let Some(tx) = self.early[i].take() {
                let _ = tx.send(result);
            }
        }
        if group.completed.is_empty() && self.jobs.is_empty() {
            return;
        }
        for (i, result) in std::mem::take(&mut group.completed) {
            // No early reply came first: the caller's early channel closes.
            self.early[i] = None;
            if let Some(tx) = self.waiting[i].take() {
                let _ = tx.send(result);
            }
            self.free.push(i);
        }
        self.dispatch(group, now, out);
    }
}
