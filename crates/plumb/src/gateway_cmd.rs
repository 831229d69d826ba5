//! `plumb gateway`: serve Redis clients (a key-value cluster) or ZooKeeper clients (a
//! coordination cluster) through a pool of library clients.

use clap::Args;
use plumb::cli::{runtime, Cli, ConfigArg};
use plumb_cluster::Cluster;
use plumb_gateway::start::{
    client_events_text, clients_line, listen_and_pool, serve_until_terminated, sketched_reads,
};
use plumb_gateway::{GatewayStats, RespServer};
use plumb_resp::ServerInfo;
use plumb_runtime::admin;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct GatewayArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Serve reads through this many Prophecy sketchers (0: none), overriding the cluster
    /// file's `[gateway] sketchers` (docs/prophecy.md).
    #[arg(long)]
    sketchers: Option<u32>,
}

pub fn gateway_cmd(a: GatewayArgs) -> ExitCode {
    let cli = crate::kv_app::cli();
    let served = a.config.load().and_then(|cluster| {
        let Some(front_end) = cli.front_end_of(&cluster.app) else {
            return Err(no_gateway(&cli, &cluster));
        };
        runtime().block_on((front_end.serve)(cluster, a.sketchers))
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plumb gateway: {e}");
            ExitCode::from(2)
        }
    }
}

/// Why there is no gateway for `cluster`: its application registers no front end.
fn no_gateway(cli: &Cli, cluster: &Cluster) -> String {
    let names: Vec<String> = cli
        .apps_with_front_ends()
        .map(|n| format!("{n:?}"))
        .collect();
    format!(
        "{}: the cluster replicates the application {:?}, which has no gateway; the applications with one are {}",
        cluster.path.display(),
        cluster.app,
        names.join(", ")
    )
}

/// The gateway of a key-value cluster: Redis clients on `[gateway] resp`.
pub(crate) async fn redis_gateway(
    cluster: plumb_cluster::Cluster,
    sketchers: Option<u32>,
) -> Result<(), String> {
    let (gw, listener, pool) =
        listen_and_pool(&cluster, "the Redis port", "a redis-server").await?;
    let f = cluster.faults();
    let stats = Arc::new(GatewayStats::default());
    let sketchers = sketchers.unwrap_or(gw.sketchers);
    let sketcher = sketched_reads(&cluster, &pool, sketchers)?;
    let server = Arc::new(RespServer {
        pool: pool.clone(),
        waiters: Default::default(),
        fast_reads: gw.fast_reads,
        sketcher: sketcher.clone(),
        info: ServerInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            os: std::env::consts::OS.to_string(),
            process_id: std::process::id(),
            tcp_port: gw.resp.port(),
            u: f.u as u32,
            r: f.r as u32,
            ..ServerInfo::default()
        },
        stats: stats.clone(),
        started: Instant::now(),
        pubsub: plumb_gateway::pubsub::PubSubHub::new(pool.clone()),
        scripts: Default::default(),
        clients: Default::default(),
    });
    let handler: admin::Handler = {
        let stats = stats.clone();
        let pool = pool.clone();
        let sketcher = sketcher.clone();
        Arc::new(move |path: &str| {
            let s = &stats;
            let get = |x: &std::sync::atomic::AtomicU64| x.load(Ordering::Relaxed);
            let sketcher_text = sketcher.as_ref().map(|k| k.metrics()).unwrap_or_default();
            match path {
                "/status" | "/" => admin::Response::ok(
                    "application/json",
                    format!(
                        "{{\"pool_clients\":{},\"backlog\":{},\"connections\":{},\"commands\":{},\"submitted\":{}}}\n",
                        pool.clients.len(),
                        pool.backlog(),
                        get(&s.connections.open),
                        get(&s.commands),
                        get(&s.submitted)
                    ),
                ),
                "/metrics" => admin::Response::ok(
                    "text/plain; version=0.0.4",
                    format!(
                        "# TYPE plumb_gateway_connections gauge\nplumb_gateway_connections {}\n# TYPE plumb_gateway_commands_total counter\nplumb_gateway_commands_total {}\n# TYPE plumb_gateway_submitted_total counter\nplumb_gateway_submitted_total {}\n# TYPE plumb_gateway_protocol_errors_total counter\nplumb_gateway_protocol_errors_total {}\n# TYPE plumb_gateway_backlog gauge\nplumb_gateway_backlog {}\n# TYPE plumb_gateway_accept_failures_total counter\nplumb_gateway_accept_failures_total {}\n{}",
                        get(&s.connections.open),
                        get(&s.commands),
                        get(&s.submitted),
                        get(&s.protocol_errors),
                        pool.backlog(),
                        get(&s.connections.accept_failures),
                        client_events_text(&pool.counters()) + &sketcher_text
                    ),
                ),
                _ => admin::Response::not_found(),
            }
        })
    };
    let clients_at = format!("Redis clients on {}", gw.resp);
    let clients = clients_line(clients_at, &pool, &cluster, sketchers);
    serve_until_terminated(&gw, handler, clients, server.serve(listener)).await
}
