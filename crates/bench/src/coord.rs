//! plumb's coordination service as a system under test: a fresh local cluster of `plumb node`
//! processes running the coordination application (`app = "coord"`) and a `plumb gateway`
//! process serving ZooKeeper's wire protocol in front of it, driven like the ZooKeeper
//! ensemble through the `zookeeper-client` crate ([`ZkSession`]). Every operation goes client
//! library -> ZooKeeper wire -> gateway -> cluster, as a ZooKeeper user's would; nothing goes
//! through plumb's own client library in this process.
//!
//! The gateway runs as `plumb up` starts it for a coordination cluster: reads go through the
//! ordered path (`fast_reads` off), so a `getData` is linearizable where ZooKeeper's is served
//! from the connected server's own state. The `-fast-reads` systems (config `u1r0-fast-reads`)
//! turn the gateway's `fast_reads` on: reads that set no watch take the read-only path, which
//! answers from what every execution replica has executed, as ZooKeeper answers from one
//! server's state.

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
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running coordination cluster and its ZooKeeper gateway, stopped when dropped.
pub struct PlumbCoord {
    shape: PlumbShape,
    fast_reads: bool,
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
    /// per benchmark session and a few more for its session keep-alives; `fast_reads` is the
    /// gateway's setting of that name.
    pub async fn start(
        exe: &Path,
        dir: &Path,
        shape: &PlumbShape,
        fast_reads: bool,
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
            ..InitOptions::default()
        };
        let path = init(dir, &o).map_err(|e| e.to_string())?;
        if fast_reads {
            set_fast_reads(&path)?;
        }
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
            fast_reads,
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
        if self.fast_reads {
            format!("{}-fast-reads", self.shape.label())
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

/// Turn the gateway's `fast_reads` on in the cluster file `init` wrote at `path`.
fn set_fast_reads(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let off = "fast_reads = false";
    if text.matches(off).count() != 1 {
        return Err(format!(
            "{}: expected one `{off}` line to turn on",
            path.display()
        ));
    }
    std::fs::write(path, text.replace(off, "fast_reads = true"))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}
