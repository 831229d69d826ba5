//! plumb as a system under test: a fresh local cluster of `plumb node` processes in the shape
//! asked for, driven by the client library in this process (the same pool the gateway uses),
//! so the numbers are plumb's own and not a front end's.

use crate::app::BenchApp;
use crate::target::{BatchStats, BoxFuture, Op, ServerProcess, Session, Target};
use plumb_cluster::{init, Cluster, InitOptions};
use plumb_gateway::Pool;
use plumb_wire::Principal;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `faulty` behaviour of `Plumb::start` that leaves the node down.
pub const DOWN: &str = "down";

/// The label suffix of a shape with tentative agreement on.
pub const TENTATIVE: &str = "-tentative";

#[derive(Clone, Debug)]
pub struct PlumbShape {
    pub u: u16,
    pub r: u16,
    /// Each stage replica in its own process instead of one process per node.
    pub split: bool,
    /// Tentative agreement on (`tentative_agreement = true`, docs/protocol.md).
    pub tentative: bool,
    /// Execution replicas (`plumb init --exec`); `None`: the minimum, `u + max(u, r) + 1`.
    pub exec: Option<usize>,
}

impl PlumbShape {
    pub fn label(&self) -> String {
        format!(
            "u{}r{}{}{}{}",
            self.u,
            self.r,
            match self.exec {
                Some(n) => format!("-e{n}"),
                None => String::new(),
            },
            if self.split { "-split" } else { "" },
            if self.tentative { TENTATIVE } else { "" }
        )
    }
}

/// Where a bench cluster's nodes run.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// One address per node (empty: every node on 127.0.0.1, ports apart).
    pub hosts: Vec<String>,
    /// The cluster file's `[wan]` section, if any.
    pub wan: Option<plumb_cluster::WanEntry>,
    /// Protocol parameters other than the defaults.
    pub protocol: plumb_cluster::ProtocolOverrides,
}

pub struct Plumb {
    app: Arc<dyn BenchApp>,
    shape: PlumbShape,
    cluster: Cluster,
    /// Dropped after the last session: the pool stops its thread when dropped.
    pool: Arc<Pool>,
    nodes: Vec<ServerProcess>,
    /// The node binary and the cluster file: what a restarted node runs with.
    exe: PathBuf,
    config: PathBuf,
}

impl Plumb {
    /// Make a new cluster of `app` in `dir` (which must not hold one) with `clients` client
    /// identities, start its nodes with `exe` (a binary that registers `app`: `plumb` for the
    /// key-value store), and wait until it orders a request.
    ///
    /// The first `reserved` client identities are kept out of the pool (for callers that drive
    /// them themselves); node `faulty.0` acts out the adversary behaviour `faulty.1` (`exe`
    /// must then be a build with the `adversary` feature); the nodes are placed as `placement`
    /// says: each on its own address, and under an emulated wide-area network
    /// (docs/wan-emulation.md). `0, None, &Placement::default()`: none of these.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        app: Arc<dyn BenchApp>,
        exe: &Path,
        dir: &Path,
        shape: &PlumbShape,
        base_port: u16,
        clients: u32,
        reserved: u32,
        faulty: Option<(u16, &str)>,
        placement: &Placement,
    ) -> Result<Plumb, String> {
        let o = InitOptions {
            app: app.name().to_string(),
            u: shape.u,
            r: shape.r,
            exec: shape.exec,
            base_port,
            gateway_clients: 0,
            cli_clients: clients.max(1) + reserved,
            split: shape.split,
            hosts: placement.hosts.clone(),
            wan: placement.wan.clone(),
            protocol: plumb_cluster::ProtocolOverrides {
                tentative_agreement: shape
                    .tentative
                    .then_some(true)
                    .or(placement.protocol.tentative_agreement),
                ..placement.protocol.clone()
            },
            ..InitOptions::default()
        };
        let path = init(dir, &o).map_err(|e| e.to_string())?;
        let cluster = Cluster::load(&path).map_err(|e| e.to_string())?;
        plumb_node::init_stores(&cluster)?;
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs)
            .map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
        let mut nodes = Vec::new();
        let mut running = Vec::new();
        for n in &cluster.nodes {
            let adversary = faulty.filter(|(id, _)| *id == n.id).map(|(_, b)| b);
            // `down`: the node is never started, a crashed replica to compare the others with.
            if adversary == Some(DOWN) {
                continue;
            }
            nodes.push(spawn_node(exe, &path, n.id, &logs, adversary)?);
            running.push(n);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for (n, p) in running.into_iter().zip(nodes.iter_mut()) {
            loop {
                if let Some(status) = p.exited() {
                    let log = logs.join(format!("node-{}.log", n.id));
                    return Err(format!(
                        "plumb node {} exited ({status}) while starting: {}; its log: {}",
                        n.id,
                        last_line(&log),
                        log.display()
                    ));
                }
                if matches!(
                    plumb_runtime::admin::get(n.admin, "/status").await,
                    Ok((200, _))
                ) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("plumb node {} did not come up in 30 s", n.id));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let pooled = cluster
            .cli_clients
            .get(reserved as usize..)
            .unwrap_or_default()
            .to_vec();
        let pool = Pool::start(&cluster, &pooled, &dir.join("clients"), true)?;
        let plumb = Plumb {
            app,
            shape: shape.clone(),
            cluster,
            pool: Arc::new(pool),
            nodes,
            exe: exe.to_path_buf(),
            config: path.clone(),
        };
        let probe = plumb.app.write("bench:probe", b"");
        tokio::time::timeout(Duration::from_secs(30), plumb.pool.call(probe, false))
            .await
            .map_err(|_| "the new plumb cluster did not order a request in 30 s".to_string())?
            .map_err(|e| e.to_string())?;
        Ok(plumb)
    }

    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    pub fn app(&self) -> &Arc<dyn BenchApp> {
        &self.app
    }

    /// The pool of the cluster's client identities this process drives.
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// The node processes' ids.
    pub fn node_pids(&self) -> Vec<u32> {
        self.nodes.iter().map(ServerProcess::pid).collect()
    }

    /// Node `id` loses power and its disk: killed (SIGKILL), its data directory deleted, then
    /// started again with nothing (its order replica rejoins, its execution replica loads the
    /// stable checkpoint). Every node of the cluster must be running.
    pub fn restart_wiped(&mut self, id: u16) -> Result<(), String> {
        let index = usize::from(id);
        let old = self
            .nodes
            .get_mut(index)
            .ok_or_else(|| format!("no running node {id}"))?;
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(old.pid() as i32, libc::SIGKILL);
        }
        let _ = old.child.wait();
        let data = plumb_node::default_data_dir(&self.cluster, id);
        std::fs::remove_dir_all(&data)
            .map_err(|e| format!("cannot delete {}: {e}", data.display()))?;
        let logs = self.cluster.dir().join("logs");
        self.nodes[index] = spawn_node(&self.exe, &self.config, id, &logs, None)?;
        Ok(())
    }

    /// Node `id`, killed before ([`Plumb::kill`]), starts again with what its disk holds.
    pub fn restart(&mut self, id: u16) -> Result<(), String> {
        let index = usize::from(id);
        if index >= self.nodes.len() {
            return Err(format!("no node {id}"));
        }
        let logs = self.cluster.dir().join("logs");
        self.nodes[index] = spawn_node(&self.exe, &self.config, id, &logs, None)?;
        Ok(())
    }

    /// Node `id` crashes: killed (SIGKILL), not restarted.
    pub fn kill(&mut self, id: u16) -> Result<(), String> {
        let node = self
            .nodes
            .get_mut(usize::from(id))
            .ok_or_else(|| format!("no running node {id}"))?;
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(node.pid() as i32, libc::SIGKILL);
        }
        let _ = node.child.wait();
        Ok(())
    }

    /// Node `id`'s `/status`, parsed.
    pub async fn status(&self, id: u16) -> Option<serde_json::Value> {
        let n = self.cluster.nodes.iter().find(|n| n.id == id)?;
        let (code, body) = plumb_runtime::admin::get(n.admin, "/status").await.ok()?;
        (code == 200)
            .then(|| serde_json::from_slice(&body).ok())
            .flatten()
    }

    /// Node `id`'s stage counters (`plumb_stage_events_total`), `principal/event` -> count.
    pub async fn stage_events(&self, id: u16) -> Vec<(String, u64)> {
        let Some(n) = self.cluster.nodes.iter().find(|n| n.id == id) else {
            return Vec::new();
        };
        metrics(n.admin)
            .await
            .map(|t| labelled(&t, "plumb_stage_events_total"))
            .unwrap_or_default()
    }
}

/// A node's `/metrics` text.
async fn metrics(admin: std::net::SocketAddr) -> Option<String> {
    let (code, body) = plumb_runtime::admin::get(admin, "/metrics").await.ok()?;
    (code == 200).then(|| String::from_utf8_lossy(&body).into_owned())
}

/// The value of the unlabelled metric `name`.
fn metric(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix(name)?.strip_prefix(' ')?.trim();
        v.parse::<f64>().ok().map(|v| v as u64)
    })
}

/// Every sample of the labelled metric `name`, keyed by its label values joined with `/`
/// (`plumb_slow_requests_total{stage="order",reason="view-change"} 3` gives
/// `order/view-change` -> 3).
fn labelled(text: &str, name: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix('{')?;
            let (labels, value) = rest.split_once("} ")?;
            let key = labels
                .split(',')
                .filter_map(|kv| Some(kv.split_once('=')?.1.trim_matches('"')))
                .collect::<Vec<_>>()
                .join("/");
            Some((key, value.trim().parse::<f64>().ok()? as u64))
        })
        .collect()
}

/// The last non-empty line of a log (a node's reason for exiting), for an error message that
/// must say why where only the message is kept (a CI log).
fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .ok()
        .and_then(|s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "its log is empty".to_string())
}

fn spawn_node(
    exe: &Path,
    config: &Path,
    id: u16,
    logs: &Path,
    adversary: Option<&str>,
) -> Result<ServerProcess, String> {
    let log_path: PathBuf = logs.join(format!("node-{id}.log"));
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut command = Command::new(exe);
    command
        .args(["node", "--config"])
        .arg(config)
        .args(["--id", &id.to_string()]);
    if let Some(b) = adversary {
        command.args(["--adversary", b]);
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {} node: {e}", exe.display()))?;
    Ok(ServerProcess {
        name: format!("plumb node {id}"),
        child,
    })
}

impl Target for Plumb {
    fn system(&self) -> &'static str {
        "plumb"
    }

    fn config(&self) -> String {
        self.shape.label()
    }

    fn server_pids(&self) -> Vec<u32> {
        self.nodes.iter().map(ServerProcess::pid).collect()
    }

    fn session(&self) -> BoxFuture<'_, Result<Box<dyn Session>, String>> {
        let pool = self.pool.clone();
        let app = self.app.clone();
        Box::pin(async move { Ok(Box::new(PlumbSession { pool, app }) as Box<dyn Session>) })
    }

    fn batch_stats(&self) -> BoxFuture<'_, Option<BatchStats>> {
        Box::pin(cluster_batch_stats(&self.cluster))
    }

    fn cost_counters(&self) -> BoxFuture<'_, BTreeMap<String, u64>> {
        Box::pin(cluster_cost_counters(&self.cluster, false))
    }
}

/// plumb's cost counters ([`crate::cost`]) summed over `cluster`'s nodes, and its gateway's
/// if `with_gateway` (a server process of its own there).
pub(crate) async fn cluster_cost_counters(
    cluster: &Cluster,
    with_gateway: bool,
) -> BTreeMap<String, u64> {
    let mut admins: Vec<std::net::SocketAddr> = cluster.nodes.iter().map(|n| n.admin).collect();
    if with_gateway {
        admins.extend(cluster.gateway.as_ref().map(|g| g.admin));
    }
    let mut counters = BTreeMap::new();
    for admin in admins {
        if let Some(text) = metrics(admin).await {
            crate::cost::add_plumb_counters(&text, &mut counters);
        }
    }
    counters
}

/// Batches, views and stalls read off the `/metrics` of `cluster`'s nodes (none if no node
/// answers).
pub(crate) async fn cluster_batch_stats(cluster: &Cluster) -> Option<BatchStats> {
    let mut stats: Option<BatchStats> = None;
    for n in &cluster.nodes {
        let Some(text) = metrics(n.admin).await else {
            continue;
        };
        let s = stats.get_or_insert_with(BatchStats::default);
        let is_exec = n.principals.iter().any(|p| matches!(p, Principal::Exec(_)));
        add_node_stats(&text, is_exec, s);
    }
    stats
}

/// Add one node's `/metrics` text to `s` (`is_exec`: the node hosts an execution replica).
fn add_node_stats(text: &str, is_exec: bool, s: &mut BatchStats) {
    // Any execution replica executes every batch; count the first that answers.
    if is_exec && s.batches == 0 {
        s.batches = metric(text, "plumb_batches_executed_total").unwrap_or(0);
        s.requests = metric(text, "plumb_requests_executed_total").unwrap_or(0);
    }
    s.view = s.view.max(metric(text, "plumb_view").unwrap_or(0));
    for (k, v) in labelled(text, "plumb_view_changes_total") {
        *s.view_changes.entry(k).or_insert(0) += v;
    }
    for (k, v) in labelled(text, "plumb_slow_requests_total") {
        *s.slow.entry(k).or_insert(0) += v;
    }
    // Keyed `principal/reason`: summed over principals.
    for (k, v) in labelled(text, "plumb_messages_dropped_total") {
        let reason = k.rsplit_once('/').map_or(k.as_str(), |(_, r)| r);
        *s.drops.entry(reason.to_string()).or_insert(0) += v;
    }
    // Keyed `principal` and `principal/le`: each stage's syncs less those within 50 ms.
    let within: BTreeMap<String, u64> = labelled(text, "plumb_fsync_seconds_bucket")
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_suffix("/0.05")?.to_string(), v)))
        .collect();
    for (principal, all) in labelled(text, "plumb_fsync_seconds_count") {
        s.slow_syncs += all.saturating_sub(within.get(&principal).copied().unwrap_or(all));
    }
}

/// The pool queues operations for its clients, so a session is just a handle on it: with as
/// many pool clients as sessions, each session has one request outstanding, as in a closed loop.
struct PlumbSession {
    pool: Arc<Pool>,
    app: Arc<dyn BenchApp>,
}

impl Session for PlumbSession {
    fn run<'a>(&'a mut self, op: &'a Op) -> BoxFuture<'a, Result<usize, String>> {
        Box::pin(async move {
            let (bytes, read_only) = match op {
                Op::Write { key, value } => (self.app.write(key, value), false),
                // Linearizable: answered by every execution replica alike, else ordered.
                Op::Read { key } => (self.app.read(key), true),
                // ZooKeeper's operations are measured through the coordination service's
                // ZooKeeper gateway (`PlumbCoord`), not the library client.
                Op::Create { .. } | Op::GetData { .. } => return Err(op.unsupported("plumb")),
            };
            let reply = self
                .pool
                .call(bytes, read_only)
                .await
                .map_err(|e| e.to_string())?;
            self.app.reply_bytes(&reply)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as a node's `/metrics` gives them (prometheus_client's text format).
    const NODE: &str = r#"plumb_view 2
plumb_batches_executed_total 40
plumb_requests_executed_total 400
plumb_view_changes_total{cause="rotation"} 1
plumb_slow_requests_total{stage="order",reason="votes"} 3
plumb_messages_dropped_total{principal="e0",reason="command-unknown-batch"} 5
plumb_messages_dropped_total{principal="o0",reason="vote-view"} 2
plumb_messages_dropped_total{principal="e1",reason="command-unknown-batch"} 1
plumb_fsync_seconds_count{principal="a0"} 100
plumb_fsync_seconds_bucket{principal="a0",le="0.025"} 96
plumb_fsync_seconds_bucket{principal="a0",le="0.05"} 97
plumb_fsync_seconds_bucket{principal="a0",le="0.1"} 100
plumb_fsync_seconds_count{principal="o0"} 10
plumb_fsync_seconds_bucket{principal="o0",le="0.05"} 10
"#;

    #[test]
    fn a_node_s_metrics_give_its_stalls_drops_and_slow_syncs() {
        let mut s = BatchStats::default();
        add_node_stats(NODE, true, &mut s);
        add_node_stats(NODE, false, &mut s);
        assert_eq!((s.batches, s.requests, s.view), (40, 400, 2));
        assert_eq!(s.view_changes.get("rotation"), Some(&2));
        assert_eq!(s.slow.get("order/votes"), Some(&6));
        assert_eq!(s.drops.get("command-unknown-batch"), Some(&12));
        assert_eq!(s.drops.get("vote-view"), Some(&4));
        assert_eq!(
            s.slow_syncs, 6,
            "three of a0's syncs over 50 ms, on each node"
        );
    }
}
