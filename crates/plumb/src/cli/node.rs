//! `plumb init`, `plumb node`, `plumb status`, `plumb kv`: running and using a cluster.

use clap::{Args, Subcommand};
use plumb_cluster::{init, Cluster, InitOptions};
use plumb_kv::{KvOp, KvResult};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The directory `plumb up` and the other commands use when none is given.
pub const DEFAULT_DIR: &str = "plumb-local";

#[derive(Args, Debug, Clone)]
pub struct ConfigArg {
    /// The cluster configuration file [default: plumb-local/cluster.toml].
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl ConfigArg {
    pub fn path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("cluster.toml"))
    }

    pub fn load(&self) -> Result<Cluster, String> {
        let path = self.path();
        if !path.exists() {
            return Err(format!(
                "{}: no cluster configuration here; start a local cluster with `plumb up` or write one with `plumb init`",
                path.display()
            ));
        }
        Cluster::load(&path).map_err(|e| e.to_string())
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    runtime_with_workers(2)
}

fn runtime_with_workers(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Resolves on SIGINT or SIGTERM.
pub async fn terminated() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Directory to write cluster.toml and keys/ into.
    #[arg(long, default_value = DEFAULT_DIR)]
    dir: PathBuf,
    #[arg(long, default_value_t = 1)]
    u: u16,
    #[arg(long, default_value_t = 1)]
    r: u16,
    /// One host per node, comma-separated [default: every node on 127.0.0.1].
    #[arg(long, value_delimiter = ',')]
    hosts: Vec<String>,
    /// Node i listens on base+2i and serves admin HTTP on base+2i+1.
    #[arg(long, default_value_t = 7400)]
    base_port: u16,
    /// Host where the gateway listens.
    #[arg(long, default_value = "127.0.0.1")]
    gateway_host: String,
    /// The gateway's Redis port.
    #[arg(long, default_value_t = 7379)]
    resp_port: u16,
    /// Client identities for the gateway's pool.
    #[arg(long, default_value_t = 32)]
    gateway_clients: u32,
    /// Client identities for command-line tools (`plumb kv`).
    #[arg(long, default_value_t = 8)]
    cli_clients: u32,
    /// Give each stage replica a node of its own instead of one replica of each stage per node.
    #[arg(long)]
    split: bool,
}

pub fn init_cmd(a: InitArgs) -> ExitCode {
    let o = InitOptions {
        u: a.u,
        r: a.r,
        hosts: a.hosts,
        base_port: a.base_port,
        gateway_host: a.gateway_host,
        resp_port: a.resp_port,
        gateway_clients: a.gateway_clients,
        cli_clients: a.cli_clients,
        split: a.split,
    };
    match init(&a.dir, &o)
        .map_err(|e| e.to_string())
        .and_then(|path| {
            let cluster = Cluster::load(&path).map_err(|e| e.to_string())?;
            plumb_node::init_stores(&cluster)?;
            Ok(path)
        }) {
        Ok(path) => {
            out!(
                "wrote {} and keys in {}",
                path.display(),
                a.dir.join("keys").display()
            );
            out!("copy the configuration to every host, and each node's keys/node-<id>.key to that node only");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("plumb init: {e}");
            ExitCode::from(2)
        }
    }
}

#[derive(Args, Debug)]
pub struct NodeArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Which node of the configuration this process is.
    #[arg(long)]
    id: u16,
    /// Data directory [default: data/node-<id> beside the configuration].
    #[arg(long)]
    data: Option<PathBuf>,
    /// This node has never run (a new cluster whose data lives outside the default directory):
    /// give its order replica a fresh store. Refused if the store holds any record. Never use
    /// it on a node that lost its disk: that one must rejoin (docs/operations.md).
    #[arg(long)]
    fresh: bool,
    /// TEST BUILD ONLY: act out a Byzantine behaviour (slow-primary-10ms, starve, flood, ...).
    #[cfg(feature = "adversary")]
    #[arg(long)]
    adversary: Option<String>,
}

pub fn node_cmd(a: NodeArgs) -> ExitCode {
    let cluster = match a.config.load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plumb node: {e}");
            return ExitCode::from(2);
        }
    };
    let data = a
        .data
        .unwrap_or_else(|| plumb_node::default_data_dir(&cluster, a.id));
    if a.fresh {
        if let Err(e) = plumb_node::write_genesis(&cluster, a.id, &data) {
            eprintln!("plumb node: {e}");
            return ExitCode::from(2);
        }
    }
    // A node's async side only moves frames between sockets and stage mailboxes (the stages
    // run on threads of their own): one worker saves the cross-thread wake-ups of two
    // (plumb bench u1r0 write-1k, 128 clients: +7%).
    #[cfg(feature = "adversary")]
    let attack = match a
        .adversary
        .as_deref()
        .map(plumb_adversary::Behaviour::parse)
    {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => {
            eprintln!("plumb node: --adversary: {e}");
            return ExitCode::from(2);
        }
    };
    #[cfg(not(feature = "adversary"))]
    let attack = None;
    let rt = runtime_with_workers(1);
    rt.block_on(async {
        let node = match plumb_node::start_faulty(&cluster, a.id, &data, attack).await {
            Ok(n) => n,
            Err(e) => {
                eprintln!("plumb node: {e}");
                return ExitCode::from(2);
            }
        };
        out!(
            "node {}: serving on {}, admin http://{}/status and /metrics, data in {}",
            a.id,
            node.address,
            node.admin,
            data.display()
        );
        terminated().await;
        out!("node {}: stopping", a.id);
        tokio::task::block_in_place(|| node.stop());
        ExitCode::SUCCESS
    })
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Print each node's status as JSON lines.
    #[arg(long)]
    json: bool,
}

pub async fn fetch_status(addr: std::net::SocketAddr) -> Option<serde_json::Value> {
    let (code, body) = plumb_runtime::admin::get(addr, "/status").await.ok()?;
    if code != 200 {
        return None;
    }
    serde_json::from_slice(&body).ok()
}

fn field(v: &serde_json::Value, name: &str) -> String {
    match v.get(name) {
        Some(serde_json::Value::Null) | None => "-".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    }
}

pub fn status_cmd(a: StatusArgs) -> ExitCode {
    let cluster = match a.config.load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plumb status: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = runtime();
    let mut down = 0;
    if !a.json {
        out!(
            "{:<5} {:<10} {:<6} {:<8} {:>6} {:>10} {:>10} {:>10}",
            "node",
            "roles",
            "state",
            "view",
            "primary",
            "committed",
            "executed",
            "stable-cp"
        );
    }
    for n in &cluster.nodes {
        let roles: Vec<String> = n.principals.iter().map(|p| p.to_string()).collect();
        match rt.block_on(fetch_status(n.admin)) {
            Some(v) if a.json => out!("{v}"),
            Some(v) => out!(
                "{:<5} {:<10} {:<6} {:<8} {:>6} {:>10} {:>10} {:>10}",
                n.id,
                roles.join(","),
                if v.get("order_recovery").is_some_and(|r| !r.is_null()) {
                    "rejoin"
                } else {
                    "up"
                },
                field(&v, "view"),
                field(&v, "primary_node"),
                field(&v, "last_committed"),
                field(&v, "last_executed"),
                field(&v, "stable_checkpoint")
            ),
            None => {
                down += 1;
                if a.json {
                    out!("{{\"node\":{},\"state\":\"down\"}}", n.id);
                } else {
                    out!(
                        "{:<5} {:<10} {:<6} (no answer from http://{})",
                        n.id,
                        roles.join(","),
                        "down",
                        n.admin
                    );
                }
            }
        }
    }
    let q = cluster.quorums();
    if !a.json {
        out!(
            "u={} r={}: {} of {} nodes up; the service stays up with at most {} down",
            q.faults.u,
            q.faults.r,
            cluster.nodes.len() - down,
            cluster.nodes.len(),
            q.faults.u
        );
    }
    if down > q.faults.u as usize {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

#[derive(Args, Debug)]
pub struct KvArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Give up after this many seconds without an answer.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    #[command(subcommand)]
    op: KvCommand,
}

#[derive(Subcommand, Debug)]
pub enum KvCommand {
    /// Print the value of KEY (linearizable: ordered like a write).
    Get { key: String },
    /// Set KEY to VALUE.
    Set { key: String, value: String },
    /// Delete KEY.
    Del { key: String },
    /// Add DELTA (default 1) to the integer at KEY.
    Incr {
        key: String,
        #[arg(default_value_t = 1)]
        delta: i64,
    },
}

pub fn kv_cmd(a: KvArgs) -> ExitCode {
    let cluster = match a.config.load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plumb kv: {e}");
            return ExitCode::from(2);
        }
    };
    let op = match a.op {
        KvCommand::Get { key } => KvOp::Get {
            key: key.into_bytes(),
        },
        KvCommand::Set { key, value } => KvOp::Set {
            key: key.into_bytes(),
            value: value.into_bytes(),
            expire: None,
        },
        KvCommand::Del { key } => KvOp::Delete {
            key: key.into_bytes(),
        },
        KvCommand::Incr { key, delta } => KvOp::Increment {
            key: key.into_bytes(),
            delta,
        },
    };
    let rt = runtime();
    let dir = cluster.dir().join("clients");
    rt.block_on(async {
        let pool = match plumb_gateway::Pool::start(&cluster, &cluster.cli_clients, &dir, false) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("plumb kv: {e}");
                return ExitCode::from(2);
            }
        };
        let answer = tokio::time::timeout(Duration::from_secs(a.timeout), pool.call(op.encode(), false)).await;
        tokio::task::block_in_place(|| pool.stop());
        let bytes = match answer {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                eprintln!("plumb kv: {e}");
                return ExitCode::from(1);
            }
            Err(_) => {
                eprintln!(
                    "plumb kv: no answer from the cluster in {} s; is it running? (`plumb status` shows which nodes answer)",
                    a.timeout
                );
                return ExitCode::from(1);
            }
        };
        match KvResult::decode(&bytes) {
            Ok(KvResult::Value(Some(v))) => out!("{}", String::from_utf8_lossy(&v)),
            Ok(KvResult::Value(None)) => out!("(nil)"),
            Ok(KvResult::Ok) => out!("OK"),
            Ok(KvResult::Bool(b)) => out!("{}", if b { 1 } else { 0 }),
            Ok(KvResult::Int(i)) => out!("{i}"),
            Ok(KvResult::Error(e)) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
            Ok(other) => out!("{other:?}"),
            Err(e) => {
                eprintln!("plumb kv: the cluster's answer does not decode: {e}");
                return ExitCode::from(1);
            }
        }
        ExitCode::SUCCESS
    })
}
