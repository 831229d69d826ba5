//! A plumb node process: the stages of the roles the configuration gives this node, each on its
//! own thread with its own durable store, connected to the other nodes and to clients over TCP.
//!
//! The node does not know any application: its execution replica runs the one the cluster
//! file names (`app = "..."`), looked up in the [`Apps`] the binary registered. A binary
//! without that application refuses to start and says which it has.
//!
//! Data directory layout: one store per role principal, `<data>/<principal>/` (for example
//! `a0/`, `o0/`, `e0/`), each a checksummed log (crate `plumb-storage`).

#[cfg(feature = "adversary")]
mod adversary;
mod apps;
mod cost_metrics;
mod flood;
mod mirror;
mod peers;
mod router;
mod status;
mod traffic;

pub use apps::Apps;
pub use status::Status;

use futures_util::{SinkExt, StreamExt};
use plumb_auth::AuthReplica;
use plumb_cluster::Cluster;
use plumb_core::StageContext;
use plumb_order::OrderReplica;
use plumb_runtime::source_limit::SourceLimit;
use plumb_runtime::{admin, handshake, link, Link, Mailbox, OnFrame, StageShared};
use plumb_storage::Store;
use plumb_wire::{OrderId, Principal, Seq};
use router::{ClientRoute, Drops, Origin, Router, Spoofed};
use status::{Metrics, Observed, ReplicaHost};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use tokio::net::TcpListener;

/// Frames waiting per peer, and for all clients together, in a stage's mailbox.
const PEER_QUEUE: usize = 4096;
// A view change's re-votes with a full window must fit a peer's queue with room to spare
// (plumb_config::MAX_CHECKPOINT_INTERVAL says why).
const _: () = assert!(PEER_QUEUE >= 2 * plumb_config::VIEW_CHANGE_BURST_FRAMES);
const CLIENT_QUEUE: usize = 8192;
/// Frames waiting for an outgoing link or a client connection.
const LINK_QUEUE: usize = 8192;

/// A node started by [`start`]: its stage threads run until [`RunningNode::stop`].
pub struct RunningNode {
    mailboxes: Vec<Arc<Mailbox<()>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Where peers and clients connect (the configured address, with the port the OS chose
    /// if the file gave port 0).
    pub address: SocketAddr,
    /// Where the admin HTTP endpoint (`/status`, `/metrics`) listens.
    pub admin: SocketAddr,
}

impl RunningNode {
    /// Stop the stages (each syncs its store on the way out).
    pub fn stop(self) {
        for m in &self.mailboxes {
            m.close();
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// A Byzantine behaviour the node acts out: only test builds (feature `adversary`) have any.
#[cfg(feature = "adversary")]
pub type Attack = plumb_adversary::Behaviour;
#[cfg(not(feature = "adversary"))]
pub type Attack = std::convert::Infallible;

/// Where node `id` keeps its stores unless told otherwise: `data/node-<id>` beside the
/// configuration.
pub fn default_data_dir(cluster: &Cluster, id: u16) -> std::path::PathBuf {
    cluster.dir().join("data").join(format!("node-{id}"))
}

/// Make node `id`'s order store that of a fresh replica (what `plumb init` does for every
/// node): only a store with the genesis record is trusted at start-up; any other, an empty
/// directory included, is taken for one that lost its records (docs/protocol.md, "Order
/// replicas that lost their records"). Refuses a store that already holds records.
pub fn write_genesis(cluster: &Cluster, id: u16, data: &Path) -> Result<(), String> {
    let node = cluster
        .node(id)
        .ok_or_else(|| format!("node {id} is not in {}", cluster.path.display()))?;
    for &p in node
        .principals
        .iter()
        .filter(|p| matches!(p, Principal::Order(_)))
    {
        let dir = data.join(p.to_string());
        let (mut store, recovered) = Store::open(&dir).map_err(|e| {
            format!(
                "node {id}: cannot create the {p} store in {}: {e}",
                dir.display()
            )
        })?;
        if !recovered.is_empty() {
            return Err(format!(
                "node {id}: the {p} store in {} already holds records; a fresh replica's store must be new (remove it only if this node never ran)",
                dir.display()
            ));
        }
        for op in plumb_order::genesis() {
            store.apply(op).map_err(|e| {
                format!(
                    "node {id}: cannot write the {p} store in {}: {e}",
                    dir.display()
                )
            })?;
        }
    }
    Ok(())
}

/// `write_genesis` for every node of a new cluster, in the default data directories.
pub fn init_stores(cluster: &Cluster) -> Result<(), String> {
    for n in &cluster.nodes {
        write_genesis(cluster, n.id, &default_data_dir(cluster, n.id))?;
    }
    Ok(())
}

/// Start node `id` of `cluster` with its stores under `data`, its execution replica (if it
/// has one) running the application the cluster file names, taken from `apps`. Must run
/// inside a tokio runtime. Errors say what was wrong and what to do; a cluster whose
/// application `apps` lacks is refused before anything is opened.
pub async fn start(
    cluster: &Cluster,
    id: u16,
    data: &Path,
    apps: &Apps,
) -> Result<RunningNode, String> {
    start_faulty(cluster, id, data, apps, None).await
}

/// `start`, acting out `attack` if given (test builds only).
pub async fn start_faulty(
    cluster: &Cluster,
    id: u16,
    data: &Path,
    apps: &Apps,
    attack: Option<Attack>,
) -> Result<RunningNode, String> {
    let app = apps
        .launcher(cluster)
        .map_err(|e| format!("node {id}: {e}"))?;
    let node = cluster.node(id).ok_or_else(|| {
        let ids: Vec<String> = cluster.nodes.iter().map(|n| n.id.to_string()).collect();
        format!(
            "node {id} is not in {} (its nodes are {})",
            cluster.path.display(),
            ids.join(", ")
        )
    })?;
    let secret = cluster.node_secret_path(id);
    let mut rings = HashMap::new();
    let mut stores = Vec::new();
    for &p in &node.principals {
        rings.insert(p, cluster.key_ring(p, &secret).map_err(|e| e.to_string())?);
        let dir = data.join(p.to_string());
        let (store, recovered) = open_store(id, p, &dir)?;
        if matches!(p, Principal::Order(_)) && !plumb_order::store_is_intact(&recovered) {
            if cluster.faults().u == 0 {
                return Err(format!(
                    "node {id}: the {p} store in {} is missing its records or damaged ({} corrupt record(s) or damaged span(s)), and with u = 0 no quorum of other order replicas can vouch for what it voted: it cannot rejoin safely. Restore the directory from a backup of this node, or reconfigure the cluster (plumb init a new one and move the data over)",
                    dir.display(),
                    recovered.corrupt.len()
                ));
            }
            eprintln!(
                "node {id}: the {p} store in {} is missing its records or damaged: it rejoins by the recovery protocol (new incarnation, a fence learned from its peers, no vote until a checkpoint above the fence is stable)",
                dir.display()
            );
        }
        let st = store.stats();
        if st.recovered_corrupt > 0 || st.corrupt_spans > 0 || st.torn_tail_bytes > 0 {
            eprintln!(
                "node {id}: {p} store: {} corrupt record(s) and {} damaged span(s) refused (their state is recovered from peers), {} bytes of an unfinished last write cut off",
                st.recovered_corrupt, st.corrupt_spans, st.torn_tail_bytes
            );
        }
        stores.push((p, store, recovered));
    }
    let mailboxes: HashMap<Principal, Arc<Mailbox<()>>> = node
        .principals
        .iter()
        .map(|p| (*p, Arc::new(Mailbox::new(PEER_QUEUE, CLIENT_QUEUE))))
        .collect();
    let mut remote = HashMap::new();
    for n in &cluster.nodes {
        if n.id != id {
            for p in &n.principals {
                remote.insert(*p, n.id);
            }
        }
    }
    let peer_keys = peers::PeerKeys::new(cluster, id, &rings).map(Arc::new);
    let cell: Arc<OnceLock<Arc<Router>>> = Arc::new(OnceLock::new());
    let mut links = BTreeMap::new();
    for n in cluster.nodes.iter().filter(|n| n.id != id) {
        let cell = cell.clone();
        // A peer sends us its frames on the link it dials, never on ours: whatever arrives
        // here is unproven.
        let on_frame: OnFrame = Arc::new(move |_frame| {
            if let Some(r) = cell.get() {
                r.drops.spoofed(Spoofed::OnDialedLink);
            }
        });
        let link = match &peer_keys {
            Some(keys) => Link::dial_peer(
                n.address,
                LINK_QUEUE,
                on_frame,
                keys.clone(),
                n.id,
                node.address,
                // Nodes delay what they send: the sender knows the peer (and so its site)
                // before the first frame, the receiver only once the handshake proved it.
                plumb_runtime::LinkDelay::sending(cluster.node_delay(id, n.id)),
            ),
            // A node hosting no principal has nothing to send; its links stay unproven.
            None => Link::dial(n.address, LINK_QUEUE, on_frame, None),
        };
        links.insert(n.id, link);
    }
    #[cfg(feature = "adversary")]
    let medium = cluster.quorums().order_medium();
    let router = Arc::new(Router {
        local: mailboxes.clone(),
        rings: rings.clone(),
        remote,
        links,
        clients: Mutex::new(HashMap::new()),
        drops: Drops::default(),
        traffic: Default::default(),
        flood: flood::FloodGuard::new(
            cluster.protocol.flood_factor,
            cluster.protocol.flood_floor_bytes,
            std::time::Duration::from_micros(cluster.protocol.flood_cut_us),
        ),
        #[cfg(feature = "adversary")]
        ignoring: attack
            .map(|b| adversary::adversaries(b, &rings, medium))
            .unwrap_or_default(),
    });
    let _ = cell.set(router.clone());
    let outbox: Arc<dyn plumb_runtime::Outbox> = match attack {
        None => router.clone(),
        #[cfg(feature = "adversary")]
        Some(b) => {
            if b == plumb_adversary::Behaviour::Flood {
                if let Some(me) = node.principals.first() {
                    tokio::spawn(adversary::flood(router.clone(), *me));
                }
            }
            eprintln!("node {id}: TEST BUILD acting out the Byzantine behaviour {b}");
            Arc::new(adversary::FaultyOutbox {
                inner: router.clone(),
                rings: rings.clone(),
                acting: adversary::adversaries(b, &rings, medium)
                    .into_iter()
                    .map(|(p, a)| (p, Mutex::new(a)))
                    .collect(),
                runtime: tokio::runtime::Handle::current(),
            })
        }
        #[cfg(not(feature = "adversary"))]
        Some(never) => match never {},
    };

    let listener = TcpListener::bind(node.address).await.map_err(|e| {
        format!(
            "node {id}: cannot listen on {} (the port peers and clients connect to): {e}; is another node or process using it?",
            node.address
        )
    })?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let accept_keys: Option<Arc<dyn plumb_runtime::NodeKeys>> = peer_keys
        .clone()
        .map(|k| k as Arc<dyn plumb_runtime::NodeKeys>);
    tokio::spawn(accept_loop(listener, router.clone(), accept_keys));

    let shared: Vec<Arc<StageShared>> = node
        .principals
        .iter()
        .map(|p| StageShared::new(*p))
        .collect();
    let order_nodes: Vec<u16> = OrderId::all(cluster.quorums().order)
        .filter_map(|i| cluster.node_of(Principal::Order(i)).map(|n| n.id))
        .collect();
    let orders = node
        .principals
        .iter()
        .any(|p| matches!(p, Principal::Order(_)));
    let observed = Arc::new(Observed {
        status: Mutex::new(Status {
            node: id,
            app: cluster.app.clone(),
            principals: node.principals.iter().map(|p| p.to_string()).collect(),
            u: cluster.faults().u,
            r: cluster.faults().r,
            // Where a fresh order replica starts; a restarted one reports what it resumed.
            last_committed: orders.then_some(Seq::ZERO),
            wan: cluster.wan.as_ref().map(|w| w.describe(id)),
            stable_checkpoint: orders.then_some(Seq::ZERO),
            ..Status::default()
        }),
        metrics: Metrics::new(&shared),
        started: Instant::now(),
        stages: shared.clone(),
        mailboxes: node
            .principals
            .iter()
            .map(|p| (p.to_string(), mailboxes[p].clone()))
            .collect(),
        order_replicas: cluster.quorums().order as u64,
        order_nodes,
        slow_logged: Mutex::default(),
    });
    let admin_handler: admin::Handler = {
        let observed = observed.clone();
        let router = router.clone();
        Arc::new(move |path: &str| match path {
            "/metrics" => admin::Response::ok(
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                observed.metrics_text(&router),
            ),
            "/status" | "/" => {
                admin::Response::ok("application/json", observed.status_json(&router))
            }
            _ => admin::Response::not_found(),
        })
    };
    let admin = admin::serve(node.admin, admin_handler).await.map_err(|e| {
        format!(
            "node {id}: cannot listen on {} (the admin HTTP port for /metrics and /status): {e}",
            node.admin
        )
    })?;

    let mut threads = Vec::new();
    for ((p, store, recovered), shared) in stores.into_iter().zip(shared) {
        use rand::RngCore;
        let ctx = StageContext {
            config: cluster.protocol.clone(),
            keys: rings[&p].clone(),
            seed: rand::rngs::OsRng.next_u64(),
        };
        let thread = apps::StageThread {
            store,
            mailbox: mailboxes[&p].clone(),
            outbox: outbox.clone(),
            host: ReplicaHost(observed.clone()),
            shared,
            name: format!("plumb-{p}"),
        };
        let spawned = match p {
            Principal::Auth(_) => thread.spawn(AuthReplica::new(ctx, recovered)),
            Principal::Order(_) => {
                // It reports its view and stable checkpoint when it has read its records.
                thread.spawn(OrderReplica::new(ctx, recovered))
            }
            Principal::Exec(_) => app.launch(ctx, recovered, thread, &observed),
            Principal::Client(_) => continue,
        };
        threads.push(spawned.map_err(|e| format!("node {id}: cannot start a thread: {e}"))?);
    }
    Ok(RunningNode {
        mailboxes: mailboxes.into_values().collect(),
        threads,
        address,
        admin,
    })
}

/// Open a role's store. A log whose file header is damaged (or that is not a plumb log at all)
/// holds nothing this node can trust: it is moved aside and the role starts empty, recovering
/// its state from peers like a replica whose disk was replaced. A log from a newer format
/// version, or any I/O error, stops the node instead: that data may be fine.
fn open_store(id: u16, p: Principal, dir: &Path) -> Result<(Store, plumb_core::Recovered), String> {
    use plumb_storage::StoreError;
    match Store::open(dir) {
        Ok(opened) => Ok(opened),
        Err(e @ (StoreError::DamagedHeader { .. } | StoreError::NotALog { .. })) => {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let aside = dir.with_extension(format!("damaged-{stamp}"));
            std::fs::rename(dir, &aside).map_err(|re| {
                format!(
                    "node {id}: {e}; moving {} aside failed too: {re}",
                    dir.display()
                )
            })?;
            eprintln!(
                "node {id}: {e}; moved the {p} store to {} and starting it empty: it recovers its state from its peers",
                aside.display()
            );
            Store::open(dir).map_err(|e| {
                format!(
                    "node {id}: cannot open the {p} store in {}: {e}",
                    dir.display()
                )
            })
        }
        Err(e) => Err(format!(
            "node {id}: cannot open the {p} store in {}: {e}",
            dir.display()
        )),
    }
}

async fn accept_loop(
    listener: TcpListener,
    router: Arc<Router>,
    keys: Option<Arc<dyn plumb_runtime::NodeKeys>>,
) {
    static CONNECTIONS: AtomicU64 = AtomicU64::new(1);
    let failures = AtomicU64::new(0);
    let sources = SourceLimit::new();
    loop {
        let stream = plumb_runtime::accept::accept(&listener, &failures, "node").await;
        // A source over its limits is closed before anything is spawned for it
        // (docs/robustness.md, "Connections per source").
        let admitted = match stream.peer_addr() {
            Ok(addr) => match sources.admit(addr.ip(), std::time::Instant::now()) {
                Ok(admitted) => admitted,
                Err(over) => {
                    router.drops.over_source_limit(over);
                    continue;
                }
            },
            Err(_) => continue, // already gone
        };
        let conn = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        let router = router.clone();
        let keys = keys.clone();
        tokio::spawn(async move {
            let _admitted = admitted;
            let mut framed = link::framed(stream);
            let Some(Ok(first)) = framed.next().await else {
                return;
            };
            if handshake::is_hello(&first) {
                let Some(keys) = keys else {
                    router.drops.refused(handshake::Refused::UnknownNode);
                    return;
                };
                match handshake::accept(&mut framed, &*keys, &first, handshake::TIMEOUT).await {
                    Ok(node) => serve_peer(framed, node, &router).await,
                    Err(reason) => router.drops.refused(reason),
                }
            } else if handshake::is_client_hello(&first) {
                // A client asking for this connection's nonce: its reply routes are claimed
                // over it (router.rs).
                match handshake::challenge_client(&mut framed, handshake::TIMEOUT).await {
                    Ok(nonce) => serve_client(framed, None, conn, Some(nonce), &router).await,
                    Err(reason) => router.drops.refused(reason),
                }
            } else {
                // No nonce asked for: its frames reach the stages (which check their MACs),
                // but no client can claim a reply route over it.
                serve_client(framed, Some(first.to_vec()), conn, None, &router).await;
            }
        });
    }
}

/// Read a connection bound to peer node `node` until it closes or the node is cut off. A node
/// answers its peers on its own links, so nothing is written here.
async fn serve_peer(mut framed: link::Framed, node: u16, router: &Router) {
    while let Some(Ok(frame)) = framed.next().await {
        if !router.deliver(frame.to_vec(), Origin::Peer(node)) {
            break;
        }
    }
}

/// Serve a client connection: its frames in (`first`, if already read, then the rest),
/// replies to the clients that claimed it over `nonce` out.
async fn serve_client(
    framed: link::Framed,
    first: Option<Vec<u8>>,
    conn: u64,
    nonce: Option<handshake::Nonce>,
    router: &Router,
) {
    let (mut sink, mut frames) = framed.split();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(LINK_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if sink.feed(frame).await.is_err() {
                return;
            }
            while let Ok(more) = rx.try_recv() {
                if sink.feed(more).await.is_err() {
                    return;
                }
            }
            if sink.flush().await.is_err() {
                return;
            }
        }
    });
    let route = ClientRoute { conn, nonce, tx };
    if first.is_none_or(|f| router.deliver(f, Origin::Client(&route))) {
        while let Some(Ok(frame)) = frames.next().await {
            if !router.deliver(frame.to_vec(), Origin::Client(&route)) {
                break;
            }
        }
    }
    router.connection_closed(conn);
    drop(route);
    writer.abort();
}
