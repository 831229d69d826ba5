//! plumb's coordination service as a system under test: a fresh local cluster of `plumb node`
//! processes running the coordination application (`app = "coord"`) and a `plumb gateway`
//! process serving ZooKeeper's wire protocol in front of it, driven like the ZooKeeper
//! ensemble through the `zookeeper-client` crate ([`ZkSession`]). Every operation goes client
//! library -> ZooKeeper wire -> gateway -> cluster, as a ZooKeeper user's would; nothing goes
//! through plumb's own client library in this process.
//!
//! The gateway runs as `plumb up` starts it for a coordination cluster: `fast_reads` on, so
//! reads that set no watch take the read-only path, answered from what every execution replica
//! has executed (as ZooKeeper answers from one server's state), and ordered when the replicas
//! do not all answer alike. The `-ordered-reads` systems (config `u1r0-ordered-reads`) turn
//! `fast_reads` off: every read is ordered. (Until 2026-12-03 ordered reads were the default
//! and the read-only ones were the `-fast-reads` systems.)

use crate::plumb::PlumbShape;
use crate::systems::zookeeper::{wait_for_a_write, ZkSession};
use crate::systems::{ensure_free, launch, local, wait_for_port, Launched};
use crate::target::{BatchStats, BoxFuture, Session, Target};
use plumb_cluster::{init, Cluster, InitOptions};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The application the nodes run.
pub const COORD_APP: &str = "coord";
/// Nodes, then the gateway's admin port, take the first ports from the base; the ZooKeeper
/// port is this far above it (inside the 100 ports a suite gives each system).
const ZK_PORT_OFFSET: u16 = 90;
/// The suffix of a coordination system whose gateway has `fast_reads` off (every read ordered).
pub(crate) const ORDERED_READS: &str = "-ordered-reads";

const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running coordination cluster and its ZooKeeper gateway, stopped when dropped.
pub struct PlumbCoord {
    shape: PlumbShape,
    ordered_reads: bool,
    cluster: Cluster,
    /// The nodes, then the gateway.
    servers: Vec<Launched>,
    zk_port: u16,
    next: AtomicUsize,
}

impl PlumbCoord {
    /// Make a new coordination cluster in `dir` (which must not hold one) with nodes from
    /// `base_port` and ZooKeeper clients on `base_port + 90`, start its nodes and gateway with
    /// `exe` (the `plumb` binary, which registers the coordination application), and wait until
    /// a ZooKeeper session through the gateway stores a znode. The gateway gets a pool client
    /// per benchmark session and a few more for its session keep-alives; `ordered_reads` turns
    /// the gateway's `fast_reads` off.
    pub async fn start(
        exe: &Path,
        dir: &Path,
        shape: &PlumbShape,
        ordered_reads: bool,
        base_port: u16,
        clients: u32,
    ) -> Result<PlumbCoord, String> {
        let zk_port = crate::systems::port(base_port, ZK_PORT_OFFSET as usize)?;
        let o = InitOptions {
            app: COORD_APP.to_string(),
            u: shape.u,
            r: shape.r,
            base_port,
            resp_port: zk_port,
            gateway_clients: clients.max(1) + 4,
            cli_clients: 0,
            split: shape.split,
            // What `plumb init --app coord` writes.
            fast_reads: !ordered_reads,
            protocol: plumb_cluster::ProtocolOverrides {
                tentative_agreement: shape.tentative.then_some(true),
                ..Default::default()
            },
            ..InitOptions::default()
        };
        let path = init(dir, &o).map_err(|e| e.to_string())?;
        let cluster = Cluster::load(&path).map_err(|e| e.to_string())?;
        let mut ports: Vec<u16> = cluster
            .nodes
            .iter()
            .flat_map(|n| [n.address.port(), n.admin.port()])
            .collect();
        ports.push(zk_port);
        ensure_free(&ports)?;
        plumb_node::init_stores(&cluster)?;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs)
            .map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
        let mut servers = Vec::new();
        for n in &cluster.nodes {
            let mut command = Command::new(exe);
            command
                .args(["node", "--config"])
                .arg(&path)
                .args(["--id", &n.id.to_string()]);
            servers.push(launch(
                &format!("plumb node {}", n.id),
                command,
                logs.join(format!("node-{}.log", n.id)),
            )?);
        }
        let mut command = Command::new(exe);
        command.args(["gateway", "--config"]).arg(&path);
        servers.push(launch("plumb gateway", command, logs.join("gateway.log"))?);
        let deadline = Instant::now() + START_TIMEOUT;
        wait_for_port(&mut servers, local(zk_port), deadline).await?;
        // The gateway accepts before its pool reaches the nodes: wait until a session through
        // it commits a write.
        wait_for_a_write(
            &mut servers,
            &format!("127.0.0.1:{zk_port}"),
            "the coordination cluster's ZooKeeper gateway to commit a write",
            deadline,
        )
        .await?;
        Ok(PlumbCoord {
            shape: shape.clone(),
            ordered_reads,
            cluster,
            servers,
            zk_port,
            next: AtomicUsize::new(0),
        })
    }
}

impl Target for PlumbCoord {
    fn system(&self) -> &'static str {
        "plumb-coord"
    }

    fn config(&self) -> String {
        if self.ordered_reads {
            format!("{}{ORDERED_READS}", self.shape.label())
        } else {
            self.shape.label()
        }
    }

    fn server_pids(&self) -> Vec<u32> {
        self.servers.iter().map(|s| s.process.pid()).collect()
    }

    fn session(&self) -> BoxFuture<'_, Result<Box<dyn Session>, String>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let server = format!("127.0.0.1:{}", self.zk_port);
        Box::pin(async move { ZkSession::open("plumb ZooKeeper gateway", &server, n).await })
    }

    fn batch_stats(&self) -> BoxFuture<'_, Option<BatchStats>> {
        Box::pin(crate::plumb::cluster_batch_stats(&self.cluster))
    }

    fn cost_counters(&self) -> BoxFuture<'_, std::collections::BTreeMap<String, u64>> {
        Box::pin(crate::plumb::cluster_cost_counters(&self.cluster, true))
    }
}
