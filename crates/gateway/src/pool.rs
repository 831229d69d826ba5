//! A pool of library clients over TCP: the client side of plumb for a process that serves many
//! callers (the gateway) or one (`plumb kv`).
//!
//! Each client identity runs the pure client core on its own thread, with its own durable
//! store (it persists each outstanding request before sending it, CS3). Callers queue
//! operations; an idle client takes the oldest, so callers are served in arrival order and
//! every client keeps one request outstanding at most (CS2). All clients share one TCP link
//! per node; replies are routed to the right client by the envelope's receiver.

use plumb_client::Client;
use plumb_cluster::Cluster;
use plumb_core::{Action, KeyRing, Micros, StageContext};
use plumb_runtime::{
    Greeting, Host, Item, Link, Mailbox, OnFrame, Outbox, QueueKey, Runner, StageShared,
};
use plumb_storage::Store;
use plumb_wire::{Envelope, Message, Principal};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Frames and jobs waiting in one client's mailbox.
const QUEUE: usize = 4096;
const LINK_QUEUE: usize = 16384;

/// An operation waiting for a client.
pub struct Job {
    op: Vec<u8>,
    read_only: bool,
    reply: oneshot::Sender<Vec<u8>>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    idle: Vec<usize>,
}

struct Shared {
    queue: Mutex<Queue>,
    mailboxes: Vec<Arc<Mailbox<Job>>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct Pool {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
    pub clients: Vec<u32>,
}

#[derive(Debug)]
pub struct PoolClosed;

impl std::fmt::Display for PoolClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the client pool stopped before the operation completed")
    }
}

impl Pool {
    /// Start clients `ids` of `cluster`, keeping their state under `dir/c<id>/`. Must run
    /// inside a tokio runtime. A client whose store another process holds is skipped; with
    /// `need_all`, that is an error instead.
    pub fn start(
        cluster: &Cluster,
        ids: &[u32],
        dir: &Path,
        need_all: bool,
    ) -> Result<Pool, String> {
        let mut chosen = Vec::new();
        for &c in ids {
            let p = Principal::Client(c);
            let ring = cluster
                .key_ring(p, &cluster.client_secret_path(c))
                .map_err(|e| e.to_string())?;
            let store_dir = dir.join(p.to_string());
            match Store::open(&store_dir) {
                Ok((store, recovered)) => chosen.push((c, ring, store, recovered)),
                Err(e) if need_all => {
                    return Err(format!(
                        "client {c}: cannot open its store in {}: {e}",
                        store_dir.display()
                    ))
                }
                Err(_) => continue,
            }
        }
        if chosen.is_empty() {
            return Err(format!(
                "every client identity ({:?}) is in use by another process (their stores under {} are locked); stop one or add client identities to the configuration",
                ids,
                dir.display()
            ));
        }
        let mailboxes: Vec<Arc<Mailbox<Job>>> = chosen
            .iter()
            .map(|_| Arc::new(Mailbox::new(QUEUE, QUEUE)))
            .collect();
        let by_client: Arc<HashMap<u32, Arc<Mailbox<Job>>>> = Arc::new(
            chosen
                .iter()
                .zip(&mailboxes)
                .map(|((c, ..), m)| (*c, m.clone()))
                .collect(),
        );
        let on_frame: OnFrame = Arc::new(move |frame: Vec<u8>| {
            let Ok(env) = Envelope::parse(&frame) else {
                return;
            };
            let (Principal::Client(c), sender) = (env.receiver, env.sender) else {
                return;
            };
            if let Some(m) = by_client.get(&c) {
                m.push(QueueKey::Peer(sender), Item::Frame(frame));
            }
        });
        let rings: Arc<Vec<KeyRing>> =
            Arc::new(chosen.iter().map(|(_, ring, ..)| ring.clone()).collect());
        let mut links = HashMap::new();
        let mut node_of = HashMap::new();
        for n in &cluster.nodes {
            // Greet one principal of the node for every client, on every (re)connection, so
            // the node sends each client's replies back over this link.
            let greeting: Option<Greeting> = n.principals.first().map(|&to| {
                let rings = rings.clone();
                Arc::new(move || {
                    rings
                        .iter()
                        .filter_map(|r| r.seal(to, &Message::Hello))
                        .collect()
                }) as Greeting
            });
            links.insert(
                n.id,
                Link::dial(n.address, LINK_QUEUE, on_frame.clone(), greeting),
            );
            for p in &n.principals {
                node_of.insert(*p, n.id);
            }
        }
        let outbox = Arc::new(Links { links, node_of });
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            mailboxes: mailboxes.clone(),
        });
        let mut threads = Vec::new();
        let mut clients = Vec::new();
        for (i, (c, ring, store, recovered)) in chosen.into_iter().enumerate() {
            use rand::RngCore;
            let ctx = StageContext {
                config: cluster.protocol.clone(),
                keys: ring,
                seed: rand::rngs::OsRng.next_u64(),
            };
            let host = PoolHost {
                index: i,
                shared: shared.clone(),
                waiting: None,
                idle: false,
            };
            let runner = Runner::new(
                Client::new(ctx, recovered),
                store,
                mailboxes[i].clone(),
                outbox.clone(),
                host,
                StageShared::new(Principal::Client(c)),
            );
            threads.push(
                runner
                    .spawn(format!("plumb-c{c}"))
                    .map_err(|e| format!("cannot start a client thread: {e}"))?,
            );
            clients.push(c);
        }
        Ok(Pool {
            shared,
            threads,
            clients,
        })
    }

    /// Run `op` (a key-value operation's bytes) and wait for the result the cluster agreed on.
    pub async fn call(&self, op: Vec<u8>, read_only: bool) -> Result<Vec<u8>, PoolClosed> {
        let (tx, rx) = oneshot::channel();
        let job = Job {
            op,
            read_only,
            reply: tx,
        };
        {
            let mut q = self.shared.lock();
            match q.idle.pop() {
                Some(i) => {
                    self.shared.mailboxes[i].push(QueueKey::Local, Item::Job(job));
                }
                None => q.jobs.push_back(job),
            }
        }
        rx.await.map_err(|_| PoolClosed)
    }

    /// Operations waiting for a free client.
    pub fn backlog(&self) -> usize {
        self.shared.lock().jobs.len()
    }

    pub fn stop(self) {
        for m in &self.shared.mailboxes {
            m.close();
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

struct Links {
    links: HashMap<u16, Link>,
    node_of: HashMap<Principal, u16>,
}

impl Outbox for Links {
    fn send(&self, _from: Principal, to: Principal, frame: Vec<u8>) {
        if let Some(link) = self.node_of.get(&to).and_then(|n| self.links.get(n)) {
            link.send(frame);
        }
    }
}

struct PoolHost {
    index: usize,
    shared: Arc<Shared>,
    /// The caller waiting for the outstanding operation.
    waiting: Option<oneshot::Sender<Vec<u8>>>,
    /// Listed in the pool's idle list.
    idle: bool,
}

impl PoolHost {
    fn submit(&mut self, client: &mut Client, now: Micros, job: Job, out: &mut Vec<Action>) {
        if job.reply.is_closed() {
            return; // the caller went away (its connection closed) before a client was free
        }
        if client.outstanding() {
            // A request recovered from disk is still outstanding: the job waits for another.
            self.shared.lock().jobs.push_front(job);
            return;
        }
        if client.submit(now, job.op, job.read_only, out).is_ok() {
            self.waiting = Some(job.reply);
        }
    }
}

impl Host<Client> for PoolHost {
    type Job = Job;

    fn job(&mut self, client: &mut Client, now: Micros, job: Job, out: &mut Vec<Action>) {
        self.idle = false;
        self.submit(client, now, job, out);
    }

    fn after(&mut self, client: &mut Client, now: Micros, out: &mut Vec<Action>) {
        if client.outstanding() || self.waiting.is_some() {
            return;
        }
        let mut q = self.shared.lock();
        if let Some(job) = q.jobs.pop_front() {
            drop(q);
            self.idle = false;
            self.submit(client, now, job, out);
        } else if !self.idle {
            self.idle = true;
            q.idle.push(self.index);
        }
    }

    fn complete(&mut self, _nc: u64, result: Vec<u8>) {
        if let Some(tx) = self.waiting.take() {
            let _ = tx.send(result);
        }
    }
}
