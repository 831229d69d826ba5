//! The async client: one or more client identities of a cluster, their pure protocol cores on
//! one thread (`plumb_runtime::Runner`, with its group commit), one TCP link per node, and a
//! queue of callers' operations.
//!
//! The protocol numbers each identity's requests in one sequence and lets it have one request
//! outstanding (CS1, CS2). So a `Client` is a cheap, cloneable handle to a queue: operations
//! from any number of tasks wait in arrival order and each goes to the next free identity. A
//! client with one identity runs them one after another; to run several at once, connect with
//! several identities ([`Client::connect_with`]), which is what the Redis gateway does.

use crate::net::driver::{GroupHost, Job, Links, SpeculationTap, FRAME_QUEUE};
use crate::net::events::{PushEvents, EVENT_BACKLOG};
use crate::net::group::ClientGroup;
use crate::net::reach::Reachability;
use crate::net::{Answer, ClientError, ClientOptions, Identity, PushEvent};
use crate::Route;
use plumb_cluster::Cluster;
use plumb_core::{Counters, Recovered, StageContext};
use plumb_runtime::{Item, Mailbox, QueueKey, Runner, StageShared};
use plumb_storage::{Store, StoreError};
use plumb_wire::{ExecId, Principal};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, oneshot};

pub use crate::MAX_OPERATION_BYTES;

/// How often `connect` looks at its links while it waits for them.
const CONNECT_POLL: Duration = Duration::from_millis(10);

/// A connection to a plumb cluster: invoke operations, read, and receive push events.
///
/// Operations are bytes in, bytes out: what they mean is the application's business (for the
/// key-value store, `plumb_kv::KvOp::encode` and its reply types). An answer is returned once
/// `r + 1` execution replicas sent the same bytes for it, so up to `r` of them may lie and up to
/// `u` may be down or slow.
///
/// It runs inside a tokio runtime with its I/O and time drivers enabled (`#[tokio::main]`
/// does that). Cloning a `Client` gives another handle to the same identities: operations from
/// any number of tasks queue in arrival order, and one identity has one operation outstanding
/// at a time (connect with several identities to run several at once). Dropping the last handle shuts
/// the client down (waiting briefly for its thread); [`Client::shutdown`] does it without
/// blocking the async runtime.
///
/// ```no_run
/// use plumb_client::net::{Client, Identity};
///
/// # async fn run() -> Result<(), plumb_client::net::ClientError> {
/// // The cluster `plumb up` runs, and a client identity `plumb init` issued for it.
/// let me = Identity::from_key_file(8, "plumb-local/keys/client-8.key")?;
/// let client = Client::connect("plumb-local/cluster.toml", me).await?;
/// let answer = client.invoke(b"an operation of the application").await?;
/// println!("{} bytes back", answer.len());
/// client.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

struct Shared {
    /// Cleared (under the lock) at shutdown, so that no operation is queued after the thread
    /// took its last look at the queue: it would wait forever.
    open: Mutex<bool>,
    mailbox: Arc<Mailbox<Job>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    links: Arc<Links>,
    reach: Reachability,
    /// Taken at shutdown so that subscriptions see the end.
    events: Mutex<Option<broadcast::Sender<PushEvent>>>,
    backlog: Arc<AtomicUsize>,
    /// The stage runner's view: counters.
    stage: Arc<StageShared>,
    ids: Vec<u32>,
    /// The cluster's protocol configuration: which execution replicas sleep (ZZ).
    protocol: Arc<plumb_config::ProtocolConfig>,
    op_timeout: Option<Duration>,
    record_dir: PathBuf,
    /// Removed after the thread has closed the store in it.
    _temporary: Option<tempfile::TempDir>,
}

impl Client {
    /// Connect to the cluster described by `cluster_file` (the `cluster.toml` `plumb init`
    /// wrote) as client `identity`, with the default [`ClientOptions`]: the client record
    /// beside the cluster file, up to 10 s to reach enough replicas, 30 s per operation.
    ///
    /// Fails at once with a typed error if the file is not a valid cluster configuration, if
    /// the cluster does not list the identity or lists another key for it, or if another
    /// process runs the same identity; and with [`ClientError::Unreachable`] if too few
    /// replicas can be reached.
    ///
    /// ```no_run
    /// use plumb_client::net::{Client, ClientError, Identity};
    ///
    /// # async fn run() -> Result<(), ClientError> {
    /// let me = Identity::from_key_file(8, "plumb-local/keys/client-8.key")?;
    /// match Client::connect("plumb-local/cluster.toml", me).await {
    ///     Ok(client) => { /* use it */ }
    ///     Err(e @ ClientError::Unreachable { .. }) => eprintln!("is the cluster up? {e}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn connect(
        cluster_file: impl AsRef<Path>,
        identity: Identity,
    ) -> Result<Client, ClientError> {
        let cluster = Cluster::load(cluster_file.as_ref()).map_err(ClientError::Config)?;
        Client::connect_with(&cluster, vec![identity], ClientOptions::default()).await
    }

    /// Connect to `cluster` with one or more identities (operations run concurrently, one per
    /// identity) and chosen [`ClientOptions`].
    ///
    /// ```no_run
    /// use plumb_client::net::{Client, ClientOptions, Cluster, Identity, RecordLocation};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let cluster = Cluster::load("plumb-local/cluster.toml".as_ref())?;
    /// let identities = (8..10)
    ///     .map(|id| Identity::issued(&cluster, id))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// let options = ClientOptions {
    ///     record: RecordLocation::Dir("my-service-state/plumb".into()),
    ///     ..ClientOptions::default()
    /// };
    /// let client = Client::connect_with(&cluster, identities, options).await?;
    /// let (a, b) = tokio::join!(client.invoke(b"one"), client.invoke(b"two"));
    /// # let _ = (a?, b?);
    /// # Ok(()) }
    /// ```
    pub async fn connect_with(
        cluster: &Cluster,
        identities: Vec<Identity>,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        // Identity errors first: they say more than a record error would.
        check_identities(cluster, &identities)?;
        let ids: Vec<u32> = identities.iter().map(Identity::id).collect();
        let (temporary, dir) = match options.record.dir(cluster, &ids) {
            Some(dir) => (None, dir),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("plumb-client-")
                    .tempdir()
                    .map_err(|e| ClientError::Record {
                        dir: std::env::temp_dir(),
                        reason: e.to_string(),
                    })?;
                let dir = temp.path().to_path_buf();
                (Some(temp), dir)
            }
        };
        let (store, recovered) = open_record(&dir)?;
        let client = Client::start(cluster, &identities, store, recovered, &options, temporary)?;
        if let Some(limit) = options.connect_timeout {
            client.wait_reachable(limit).await?;
        }
        Ok(client)
    }

    /// Start a client on a record store the caller opened: for drivers that choose and prepare
    /// the store themselves (the gateway's pool picks a free identity by trying their stores'
    /// locks). `options.record` is not used; nothing waits for the links.
    ///
    /// Must be called inside a tokio runtime.
    pub fn start_with_store(
        cluster: &Cluster,
        identities: &[Identity],
        store: Store,
        recovered: Recovered,
        options: &ClientOptions,
    ) -> Result<Client, ClientError> {
        check_identities(cluster, identities)?;
        Client::start(cluster, identities, store, recovered, options, None)
    }

    fn start(
        cluster: &Cluster,
        identities: &[Identity],
        store: Store,
        recovered: Recovered,
        options: &ClientOptions,
        temporary: Option<tempfile::TempDir>,
    ) -> Result<Client, ClientError> {
        tokio::runtime::Handle::try_current().map_err(|_| ClientError::NoRuntime)?;
        let mut members = Vec::new();
        let mut rings = Vec::new();
        for identity in identities {
            use rand::RngCore;
            let keys = identity.key_ring(cluster)?;
            rings.push(keys.clone());
            members.push((
                identity.id(),
                StageContext {
                    config: cluster.protocol.clone(),
                    keys,
                    seed: rand::rngs::OsRng.next_u64(),
                },
            ));
        }
        let ids: Vec<u32> = identities.iter().map(Identity::id).collect();
        let record_dir = store.dir().to_path_buf();
        let stage = ClientGroup::new(members, &recovered);
        let mailbox: Arc<Mailbox<Job>> = Arc::new(Mailbox::new(FRAME_QUEUE, FRAME_QUEUE));
        let links = Arc::new(Links::dial(cluster, rings, mailbox.clone()));
        let backlog = Arc::new(AtomicUsize::new(0));
        let (events, _) = broadcast::channel(EVENT_BACKLOG);
        let host = GroupHost::new(ids.clone(), backlog.clone(), events.clone());
        let first = Principal::Client(ids[0]);
        let stage_shared = StageShared::new(first);
        let runner = Runner::new(
            stage,
            store,
            mailbox.clone(),
            links.clone(),
            host,
            stage_shared.clone(),
        )
        .map_err(ClientError::Thread)?;
        let thread = runner
            .spawn(format!("plumb-clients-{first}"))
            .map_err(ClientError::Thread)?;
        Ok(Client {
            shared: Arc::new(Shared {
                open: Mutex::new(true),
                mailbox,
                thread: Mutex::new(Some(thread)),
                links,
                reach: Reachability::of(cluster),
                events: Mutex::new(Some(events)),
                backlog,
                stage: stage_shared,
                ids,
                protocol: cluster.protocol.clone(),
                op_timeout: options.op_timeout,
                record_dir,
                _temporary: temporary,
            }),
        })
    }

    /// Wait until the links are up to enough replicas for a request to complete.
    async fn wait_reachable(&self, limit: Duration) -> Result<(), ClientError> {
        let started = Instant::now();
        let links = &self.shared.links;
        let reach = &self.shared.reach;
        while !reach.enough(|n| links.connected(n)) {
            if started.elapsed() >= limit {
                let (connected, down) = reach.split(|n| links.connected(n));
                return Err(ClientError::Unreachable {
                    after: limit,
                    connected,
                    down,
                    auth_needed: reach.auth_needed,
                    exec_needed: reach.exec_needed,
                });
            }
            tokio::time::sleep(CONNECT_POLL).await;
        }
        Ok(())
    }

    /// Run `op` on the ordered path and return the answer `r + 1` execution replicas agree on.
    ///
    /// The operation is executed exactly once, in one total order with every other client's
    /// operations, even across retransmissions and crashes of this process (the request waits
    /// in the client record and is resent on restart). On [`ClientError::TimedOut`] it may
    /// still be executed.
    ///
    /// ```no_run
    /// # async fn run(client: plumb_client::net::Client) -> Result<(), plumb_client::net::ClientError> {
    /// let answer: Vec<u8> = client.invoke(b"increment counter".to_vec()).await?;
    /// # let _ = answer; Ok(()) }
    /// ```
    pub async fn invoke(&self, op: impl Into<Vec<u8>>) -> Result<Vec<u8>, ClientError> {
        Ok(self.invoke_on(op.into(), Route::Ordered).await?.result)
    }

    /// Run `op`, which must not change the application's state, on the read-only path: sent
    /// straight to every execution replica and accepted only if all of them answer alike (no
    /// ordering, so usually one round trip). If they do not, or one is slow, it is ordered
    /// like [`Client::invoke`] instead, so the answer is always linearizable.
    ///
    /// The application decides what is read-only (`Application::execute_read_only`); an
    /// operation it does not treat as one falls back to the ordered path.
    ///
    /// In a ZZ cluster (docs/zz.md) it is ordered at once: the sleepers answer nothing, and
    /// the active replicas alone can agree on an answer that misses a write.
    pub async fn invoke_read_only(&self, op: impl Into<Vec<u8>>) -> Result<Vec<u8>, ClientError> {
        Ok(self.invoke_on(op.into(), Route::ReadOnly).await?.result)
    }

    /// Run `op` by `route` and say how it was answered: for [`Route::Ordered`] the position it
    /// was executed at (Prophecy's `replicated(q)`, seed 000 §3.1), for [`Route::Fast`] one
    /// replica's unverified answer or none (Prophecy's `fast(q)`), for [`Route::Sketched`] a
    /// D-Prophecy read ([`Answered`] says which path it took in the end; a read that falls
    /// back is ordered).
    pub async fn invoke_on(&self, op: Vec<u8>, route: Route) -> Result<Answer, ClientError> {
        let answer = self.queue(op, route, None)?;
        wait_answer(answer, self.shared.op_timeout).await
    }

    /// Client speculation (seed 001, docs/speculation.md): run `op` on the ordered path and
    /// also ask execution replica `early` (the one nearest this client, or the one beside the
    /// primary) to execute it at once on its speculative copy of the state. The returned call
    /// gives the request's number as soon as it has one, the early (unverified) result as soon
    /// as that replica answers, and later the agreed answer, which alone is linearizable.
    ///
    /// Returns at once, without waiting for anything: issue the next operation while this one
    /// is unconfirmed (with several identities they run concurrently).
    ///
    /// In a ZZ cluster `early` must be an active execution replica
    /// ([`Client::executing_replicas`]); a sleeper is refused ([`ClientError::Asleep`]), as it
    /// is for [`Route::Fast`].
    pub fn invoke_speculative(
        &self,
        op: Vec<u8>,
        early: ExecId,
    ) -> Result<SpeculativeCall, ClientError> {
        let (assigned_tx, assigned) = oneshot::channel();
        let (early_tx, early_rx) = oneshot::channel();
        let tap = SpeculationTap {
            assigned: assigned_tx,
            early: early_tx,
        };
        let answer = self.queue(op, Route::Speculative { early }, Some(tap))?;
        Ok(SpeculativeCall {
            assigned,
            early: early_rx,
            answer,
            op_timeout: self.shared.op_timeout,
        })
    }

    /// Queue `op` for the next free identity.
    fn queue(
        &self,
        op: Vec<u8>,
        route: Route,
        speculation: Option<SpeculationTap>,
    ) -> Result<oneshot::Receiver<Answer>, ClientError> {
        if op.len() > MAX_OPERATION_BYTES {
            return Err(ClientError::OperationTooLarge {
                len: op.len(),
                max: MAX_OPERATION_BYTES,
            });
        }
        // A sleeper answers nothing (ZZ). A D-Prophecy read is ordered in ZZ mode whatever
        // its executor, so only these name a replica that must answer.
        if let Route::Fast { exec: e } | Route::Speculative { early: e } = route {
            if self.shared.protocol.is_sleeper(e.0) {
                return Err(ClientError::Asleep {
                    exec: e.0,
                    actives: self.shared.protocol.executing_replicas(),
                });
            }
        }
        let (reply, answer) = oneshot::channel();
        let open = self.shared.open.lock().unwrap_or_else(|p| p.into_inner());
        if !*open {
            return Err(ClientError::Closed);
        }
        let job = Job {
            op,
            route,
            reply,
            speculation,
        };
        self.shared.mailbox.push(QueueKey::Local, Item::Job(job));
        Ok(answer)
    }

    /// How many execution replicas execute, `0..n`: every one, or in a ZZ cluster the
    /// actives (docs/zz.md). A fast read or an early reply may be asked of these only.
    pub fn executing_replicas(&self) -> usize {
        self.shared.protocol.executing_replicas()
    }

    /// Whether execution replica `exec` sleeps until woken (ZZ mode, docs/zz.md): it answers
    /// no read or early request.
    pub fn is_sleeper(&self, exec: ExecId) -> bool {
        self.shared.protocol.is_sleeper(exec.0)
    }

    /// Subscribe to the push events sent to this client's identities (from now on).
    pub fn push_events(&self) -> PushEvents {
        let events = self.shared.events.lock().unwrap_or_else(|p| p.into_inner());
        match events.as_ref() {
            Some(tx) => PushEvents::new(tx.subscribe()),
            // Shut down: a subscription that ends at once.
            None => PushEvents::new(broadcast::channel(1).1),
        }
    }

    /// The client ids this client runs.
    pub fn identities(&self) -> &[u32] {
        &self.shared.ids
    }

    /// Where the client record is kept.
    pub fn record_dir(&self) -> &Path {
        &self.shared.record_dir
    }

    /// Operations waiting for a free identity (not counting those under way).
    pub fn backlog(&self) -> usize {
        self.shared.backlog.load(Ordering::Relaxed)
    }

    /// The protocol's counters, summed over the client's identities and refreshed a few times
    /// a second: retransmissions, replies dropped and why, and `reply-divergent` (a replica
    /// answered an operation with another result than the accepted one: its state diverged,
    /// see docs/divergence.md).
    pub fn counters(&self) -> Counters {
        self.shared
            .stage
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Nodes a connection is up to.
    pub fn connected_nodes(&self) -> Vec<u16> {
        let links = &self.shared.links;
        self.shared.reach.split(|n| links.connected(n)).0
    }

    /// Stop the client, for every handle: operations not yet answered fail with
    /// [`ClientError::Closed`], push subscriptions end, and the record is made durable before
    /// this returns.
    pub async fn shutdown(self) {
        let shared = self.shared.clone();
        drop(self);
        let _ = tokio::task::spawn_blocking(move || shared.stop()).await;
    }
}

impl Shared {
    /// Idempotent: close the queue, let the thread sync and end, fail what still waits.
    fn stop(&self) {
        {
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            *open = false;
            self.mailbox.close();
        }
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        // Operations queued after the thread's last look: dropping them tells their callers.
        while self.mailbox.pop(Duration::ZERO).is_some() {}
        self.events.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop();
    }
}

/// At least one identity, each once, each listed by the cluster with its key.
fn check_identities(cluster: &Cluster, identities: &[Identity]) -> Result<(), ClientError> {
    if identities.is_empty() {
        return Err(ClientError::Identities("none given".into()));
    }
    let mut seen = BTreeSet::new();
    for identity in identities {
        if !seen.insert(identity.id()) {
            return Err(ClientError::Identities(format!(
                "client {} given twice",
                identity.id()
            )));
        }
        identity.key_ring(cluster)?;
    }
    Ok(())
}

/// Open (creating if needed) the client record store in `dir`.
fn open_record(dir: &Path) -> Result<(Store, Recovered), ClientError> {
    Store::open(dir).map_err(|e| match e {
        StoreError::Locked { dir } => ClientError::RecordInUse { dir },
        other => ClientError::Record {
            dir: dir.to_path_buf(),
            reason: other.to_string(),
        },
    })
}

/// Wait for an operation's answer, up to the client's operation timeout.
async fn wait_answer(
    answer: oneshot::Receiver<Answer>,
    op_timeout: Option<Duration>,
) -> Result<Answer, ClientError> {
    match op_timeout {
        None => answer.await.map_err(|_| ClientError::Closed),
        Some(after) => match tokio::time::timeout(after, answer).await {
            Ok(answered) => answered.map_err(|_| ClientError::Closed),
            Err(_) => Err(ClientError::TimedOut { after }),
        },
    }
}

/// One speculative operation in flight ([`Client::invoke_speculative`]).
pub struct SpeculativeCall {
    assigned: oneshot::Receiver<(u32, plumb_wire::ReqNo, plumb_crypto::Digest)>,
    early: oneshot::Receiver<Vec<u8>>,
    answer: oneshot::Receiver<Answer>,
    op_timeout: Option<Duration>,
}

impl SpeculativeCall {
    /// The client id, request number and request identity (`H(client, life, nc, H(op))`) the
    /// operation is ordered under, once an id took it: what a later operation's predicate
    /// names (seed 001 §3.1). `None` if it was never numbered (the client closed, or the id was
    /// still learning its number).
    pub async fn request(&mut self) -> Option<(u32, plumb_wire::ReqNo, plumb_crypto::Digest)> {
        (&mut self.assigned).await.ok()
    }

    /// The early result: one execution replica's unverified answer. `None` if the agreed
    /// answer came first (or the replica does not speculate); then use [`SpeculativeCall::confirmed`].
    pub async fn early(&mut self) -> Option<Vec<u8>> {
        (&mut self.early).await.ok()
    }

    /// The agreed answer, `r + 1` execution replicas' matching replies: linearizable.
    pub async fn confirmed(self) -> Result<Answer, ClientError> {
        wait_answer(self.answer, self.op_timeout).await
    }
}
