//! The Redis gateway (feature `gateway`): unmodified Redis clients speak RESP to it
//! ([`server`]), and it turns their commands into operations of the key-value store with
//! scripting, run through a pool of library clients. Beside the server: callers blocked on
//! keys ([`blocking`]), pub/sub fanned out to connections ([`pubsub`]), the connections as
//! `CLIENT` sees them ([`clients`]) and the periodic purge of expired keys ([`expiry`]). [`serve`] is what `plumb gateway` runs for a key-value
//! cluster, on the gateway core's start-up (`plumb_gateway::start`).

pub mod blocking;
pub mod clients;
pub mod expiry;
pub mod pubsub;
pub mod server;

pub use server::{GatewayStats, RespServer};

use plumb_cluster::Cluster;
use plumb_gateway::start::{
    client_events_text, clients_line, listen_and_pool, serve_until_terminated, sketched_reads,
};
use plumb_resp::ServerInfo;
use plumb_runtime::admin;
use pubsub::PubSubHub;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// The gateway of a key-value cluster: Redis clients on `[gateway] resp`, reads through
/// `sketchers` Prophecy sketchers if given (else the cluster file's), until the process is
/// told to stop. An error says why it could not start.
pub async fn serve(cluster: Cluster, sketchers: Option<u32>) -> Result<(), String> {
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
        pubsub: PubSubHub::new(pool.clone()),
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
                        "# TYPE plumb_gateway_connections gauge\nplumb_gateway_connections {}\n# TYPE plumb_gateway_commands_total counter\nplumb_gateway_commands_total {}\n# TYPE plumb_gateway_submitted_total counter\nplumb_gateway_submitted_total {}\n# TYPE plumb_gateway_protocol_errors_total counter\nplumb_gateway_protocol_errors_total {}\n# TYPE plumb_gateway_backlog gauge\nplumb_gateway_backlog {}\n# TYPE plumb_gateway_accept_failures_total counter\nplumb_gateway_accept_failures_total {}\n# TYPE plumb_gateway_expired_purged_total counter\nplumb_gateway_expired_purged_total {}\n# TYPE plumb_gateway_purge_failures_total counter\nplumb_gateway_purge_failures_total {}\n{}",
                        get(&s.connections.open),
                        get(&s.commands),
                        get(&s.submitted),
                        get(&s.protocol_errors),
                        pool.backlog(),
                        get(&s.connections.accept_failures),
                        get(&s.expired_purged),
                        get(&s.purge_failures),
                        client_events_text(&pool.counters()) + &sketcher_text
                    ),
                ),
                _ => admin::Response::not_found(),
            }
        })
    };
    tokio::spawn(expiry::purge_expired(pool.clone(), stats.clone()));
    let clients_at = format!("Redis clients on {}", gw.resp);
    let clients = clients_line(clients_at, &pool, &cluster, sketchers);
    serve_until_terminated(&gw, handler, clients, server.serve(listener)).await
}
