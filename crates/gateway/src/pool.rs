//! A pool of library clients over TCP: the client side of plumb for a process that serves many
//! callers (the gateway, `plumb bench`) or one (`plumb kv`).
//!
//! Every client identity of the pool runs the pure client core, all of them on one thread as
//! one stage ([`Clients`]) with one durable store, so the group commit of the stage runner
//! covers every client's outstanding request (CS3) with one `fdatasync`. Callers queue
//! operations; a free client takes the oldest, so callers are served in arrival order and
//! every client keeps one request outstanding at most (CS2). The clients share one TCP link
//! per node; replies find their client by the envelope's receiver.

use crate::clients::{key_prefix, Clients};
use plumb_cluster::Cluster;
use plumb_core::{Action, KeyRing, Micros, StageContext, StoreOp};
use plumb_runtime::{
    Greeting, Host, Item, Link, Mailbox, OnFrame, Outbox, QueueKey, Runner, StageShared,
};
use plumb_storage::{Store, StoreError};
use plumb_wire::{Envelope, Message, Principal};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;

/// Frames waiting from one node, and jobs waiting for the client thread.
const QUEUE: usize = 1 << 16;
const LINK_QUEUE: usize = 1 << 16;

/// An operation waiting for a client.
pub struct Job {
    op: Vec<u8>,
    read_only: bool,
    reply: oneshot::Sender<Vec<u8>>,
}

pub struct Pool {
    mailbox: Arc<Mailbox<Job>>,
    backlog: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
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
    /// Start a pool of client identities `ids` of `cluster`, keeping their state under `dir`.
    /// Must run inside a tokio runtime.
    ///
    /// With `need_all`, the pool has every identity and one store, `dir/pool`; it is an error
    /// if another process holds it. Without, the pool is one identity: the first of `ids` whose
    /// store (`dir/pool-c<id>`) no other process holds, so several short-lived processes (such
    /// as `plumb kv`) can run at once.
    pub fn start(
        cluster: &Cluster,
        ids: &[u32],
        dir: &Path,
        need_all: bool,
    ) -> Result<Pool, String> {
        let (ids, mut store, mut recovered) = if need_all {
            let store_dir = dir.join("pool");
            let (store, recovered) = Store::open(&store_dir).map_err(|e| {
                format!(
                    "cannot open the client pool's store in {}: {e}",
                    store_dir.display()
                )
            })?;
            (ids.to_vec(), store, recovered)
        } else {
            let mut found = None;
            for &c in ids {
                match Store::open(&dir.join(format!("pool-{}", Principal::Client(c)))) {
                    Ok((store, recovered)) => {
                        found = Some((vec![c], store, recovered));
                        break;
                    }
                    Err(StoreError::Locked { .. }) => continue,
                    Err(e) => return Err(format!("client {c}: cannot open its store: {e}")),
                }
            }
            found.ok_or_else(|| {
                format!(
                    "every client identity ({ids:?}) is in use by another process (their stores under {} are locked); stop one or add client identities to the configuration",
                    dir.display()
                )
            })?
        };
        if ids.is_empty() {
            return Err("a client pool needs at least one client identity".into());
        }
        adopt_per_client_stores(&ids, dir, &mut store, &mut recovered)?;
        let mut members = Vec::new();
        for &c in &ids {
            use rand::RngCore;
            let p = Principal::Client(c);
            let ring = cluster
                .key_ring(p, &cluster.client_secret_path(c))
                .map_err(|e| e.to_string())?;
            members.push((
                c,
                StageContext {
                    config: cluster.protocol.clone(),
                    keys: ring,
                    seed: rand::rngs::OsRng.next_u64(),
                },
            ));
        }
        let rings: Arc<Vec<KeyRing>> =
            Arc::new(members.iter().map(|(_, x)| x.keys.clone()).collect());
        let stage = Clients::new(members, &recovered);
        let mailbox: Arc<Mailbox<Job>> = Arc::new(Mailbox::new(QUEUE, QUEUE));
        let inbox = mailbox.clone();
        let on_frame: OnFrame = Arc::new(move |frame: Vec<u8>| {
            if let Ok(env) = Envelope::parse(&frame) {
                inbox.push(QueueKey::Peer(env.sender), Item::Frame(frame));
            }
        });
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
        let backlog = Arc::new(AtomicUsize::new(0));
        let host = PoolHost {
            waiting: (0..stage.member_count()).map(|_| None).collect(),
            free: (0..stage.member_count()).rev().collect(),
            jobs: VecDeque::new(),
            backlog: backlog.clone(),
        };
        let runner = Runner::new(
            stage,
            store,
            mailbox.clone(),
            Arc::new(Links { links, node_of }),
            host,
            StageShared::new(Principal::Client(ids[0])),
        );
        let thread = runner
            .spawn(format!("plumb-clients-{}", Principal::Client(ids[0])))
            .map_err(|e| format!("cannot start the client thread: {e}"))?;
        Ok(Pool {
            mailbox,
            backlog,
            thread: Some(thread),
            clients: ids,
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
        self.mailbox.push(QueueKey::Local, Item::Job(job));
        rx.await.map_err(|_| PoolClosed)
    }

    /// Operations waiting for a free client.
    pub fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    /// Stop the client thread once it has made everything it wrote durable (also on drop).
    pub fn stop(self) {}
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.mailbox.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Earlier versions kept each client identity in a store of its own, `dir/c<id>`. Copy what
/// such a store holds into the pool's store under the client's prefix, make it durable, and
/// only then remove the old store, so a client never forgets its last request number.
fn adopt_per_client_stores(
    ids: &[u32],
    dir: &Path,
    store: &mut Store,
    recovered: &mut plumb_core::Recovered,
) -> Result<(), String> {
    let mut adopted = Vec::new();
    for &c in ids {
        let old_dir = dir.join(Principal::Client(c).to_string());
        if !old_dir.join(plumb_storage::LOG_FILE).exists() {
            continue;
        }
        let (old, old_recovered) = Store::open(&old_dir).map_err(|e| {
            format!(
                "client {c}: cannot open its store of an earlier version in {}: {e}",
                old_dir.display()
            )
        })?;
        let prefix = key_prefix(c);
        for (key, value) in old_recovered.records {
            let key = prefix.clone() + &key;
            store
                .apply(StoreOp::Put {
                    key: key.clone(),
                    value: value.clone(),
                })
                .map_err(|e| e.to_string())?;
            recovered.records.insert(key, value);
        }
        recovered.corrupt.extend(
            old_recovered
                .corrupt
                .into_iter()
                .map(|k| prefix.clone() + &k),
        );
        adopted.push((old, old_dir));
    }
    if adopted.is_empty() {
        return Ok(());
    }
    store.apply(StoreOp::Sync).map_err(|e| e.to_string())?;
    for (old, old_dir) in adopted {
        drop(old);
        std::fs::remove_dir_all(&old_dir)
            .map_err(|e| format!("cannot remove {}: {e}", old_dir.display()))?;
    }
    Ok(())
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
    /// Per member: the caller waiting for its outstanding operation.
    waiting: Vec<Option<oneshot::Sender<Vec<u8>>>>,
    /// Members that may be free (checked again when taken).
    free: Vec<usize>,
    /// Operations waiting for a free member, oldest first.
    jobs: VecDeque<Job>,
    backlog: Arc<AtomicUsize>,
}

impl PoolHost {
    /// Give waiting operations to free members, oldest first.
    fn dispatch(&mut self, clients: &mut Clients, now: Micros, out: &mut Vec<Action>) {
        while let Some(job) = self.jobs.pop_front() {
            if job.reply.is_closed() {
                continue; // the caller went away (its connection closed) before a client was free
            }
            let member = loop {
                match self.free.pop() {
                    // A member whose request recovered from disk is still outstanding is not
                    // free; it comes back when that request completes.
                    Some(i) if self.waiting[i].is_none() && clients.is_free(i) => break Some(i),
                    Some(_) => continue,
                    None => break None,
                }
            };
            let Some(i) = member else {
                self.jobs.push_front(job);
                break;
            };
            if clients.submit(i, now, job.op, job.read_only, out).is_ok() {
                self.waiting[i] = Some(job.reply);
            } else {
                self.free.push(i);
            }
        }
        self.backlog.store(self.jobs.len(), Ordering::Relaxed);
    }
}

impl Host<Clients> for PoolHost {
    type Job = Job;

    fn job(&mut self, clients: &mut Clients, now: Micros, job: Job, out: &mut Vec<Action>) {
        self.jobs.push_back(job);
        self.dispatch(clients, now, out);
    }

    fn after(&mut self, clients: &mut Clients, now: Micros, out: &mut Vec<Action>) {
        if clients.completed.is_empty() && self.jobs.is_empty() {
            return;
        }
        for (i, result) in std::mem::take(&mut clients.completed) {
            if let Some(tx) = self.waiting[i].take() {
                let _ = tx.send(result);
            }
            self.free.push(i);
        }
        self.dispatch(clients, now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_per_client_store_of_an_earlier_version_is_adopted_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut old, _) = Store::open(&dir.path().join("c3")).unwrap();
            old.apply(StoreOp::Put {
                key: "client/out".into(),
                value: b"record".to_vec(),
            })
            .unwrap();
            old.apply(StoreOp::Sync).unwrap();
        }
        let (mut store, mut recovered) = Store::open(&dir.path().join("pool")).unwrap();
        adopt_per_client_stores(&[2, 3], dir.path(), &mut store, &mut recovered).unwrap();
        assert_eq!(recovered.records.get("c3/client/out").unwrap(), b"record");
        assert!(!dir.path().join("c3").exists());
        drop(store);
        // It is on disk, not only in what the pool was handed.
        let (_, reopened) = Store::open(&dir.path().join("pool")).unwrap();
        assert_eq!(reopened.records.get("c3/client/out").unwrap(), b"record");
    }
}
