//! `plumb gateway`: serve Redis clients (a key-value cluster) or ZooKeeper clients (a
//! coordination cluster) through a pool of library clients.

use crate::kv_app::{refuse_other_apps, COORD_APP, WEB_APP};
use clap::Args;
use plumb::cli::{runtime, terminated, ConfigArg};
use plumb_gateway::{GatewayStats, Pool, RespServer};
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
    if let Ok(cluster) = a.config.load() {
        if cluster.app == COORD_APP {
            return run(zk_gateway(cluster));
        }
        if cluster.app == WEB_APP {
            return run(web_gateway(cluster, a.sketchers));
        }
    }
    let cluster = match a.config.load().and_then(refuse_other_apps) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plumb gateway: {e}");
            return ExitCode::from(2);
        }
    };
    run(redis_gateway(cluster, a.sketchers))
}

/// Runs a gateway until the process is told to stop. A failure to start was printed, and is
/// the exit code.
fn run(gateway: impl std::future::Future<Output = Result<(), ExitCode>>) -> ExitCode {
    match runtime().block_on(gateway) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// The gateway of a key-value cluster: Redis clients on `[gateway] resp`.
async fn redis_gateway(
    cluster: plumb_cluster::Cluster,
    sketchers: Option<u32>,
) -> Result<(), ExitCode> {
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

/// What every front end does once its server is built: start its admin endpoint, say where
/// its clients connect (`gateway: <clients>, admin http://…/status`), then serve until the
/// process is told to stop.
async fn serve_until_terminated(
    gw: &plumb_cluster::Gateway,
    handler: admin::Handler,
    clients: String,
    serving: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ExitCode> {
    if let Err(e) = admin::serve(gw.admin, handler).await {
        eprintln!(
            "plumb gateway: cannot listen on {} (the gateway's admin HTTP port): {e}",
            gw.admin
        );
        return Err(ExitCode::from(2));
    }
    out!("gateway: {clients}, admin http://{}/status", gw.admin);
    tokio::spawn(serving);
    terminated().await;
    out!("gateway: stopping");
    Ok(())
}

/// The start-up line's account of the clients: where they connect (`clients_at`), then the
/// pool, the cluster's u and r, and the sketchers if there are any.
fn clients_line(
    clients_at: String,
    pool: &Pool,
    cluster: &plumb_cluster::Cluster,
    sketchers: u32,
) -> String {
    let f = cluster.faults();
    format!(
        "{clients_at} ({} pool clients, u={} r={}{})",
        pool.clients.len(),
        f.u,
        f.r,
        sketcher_note(sketchers)
    )
}

/// `, reads through N Prophecy sketcher(s)` when there are any, for the start-up line.
fn sketcher_note(sketchers: u32) -> String {
    match sketchers {
        0 => String::new(),
        n => format!(", reads through {n} Prophecy sketcher(s)"),
    }
}

/// The Prophecy sketchers in front of a gateway's reads, if `n > 0`. They share the gateway's
/// pool: the table is partitioned between them (one lock each), the replica clients are not.
/// A failure is printed and becomes the exit code.
pub(crate) fn sketched_reads(
    cluster: &plumb_cluster::Cluster,
    pool: &Arc<Pool>,
    n: u32,
) -> Result<Option<Arc<plumb_gateway::sketching::SketchedReads>>, ExitCode> {
    if n == 0 {
        return Ok(None);
    }
    let pools = vec![pool.clone(); n as usize];
    plumb_gateway::sketching::SketchedReads::new(
        pools,
        cluster.protocol.quorums.exec,
        plumb_gateway::sketching::SketcherConfig::default(),
    )
    .map(|s| Some(Arc::new(s)))
    .map_err(|e| {
        eprintln!("plumb gateway: {e}");
        ExitCode::from(2)
    })
}

/// The admin endpoint of a front end that reports named counters: `/status` as one JSON
/// object, `/metrics` as Prometheus lines under `prefix`, with the pool clients' events and
/// `extra` lines (the sketchers').
fn admin_response(
    path: &str,
    prefix: &str,
    fields: &[(&str, u64)],
    pool: &Pool,
    extra: &str,
) -> admin::Response {
    match path {
        "/status" | "/" => {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            admin::Response::ok(
                "application/json",
                format!(
                    "{{\"pool_clients\":{},{}}}\n",
                    pool.clients.len(),
                    body.join(",")
                ),
            )
        }
        "/metrics" => {
            let mut text = String::new();
            for (k, v) in fields {
                text.push_str(&format!("{prefix}_{k} {v}\n"));
            }
            text.push_str(&client_events_text(&pool.counters()));
            text.push_str(extra);
            admin::Response::ok("text/plain; version=0.0.4", text)
        }
        _ => admin::Response::not_found(),
    }
}

/// The pool clients' protocol counters as one Prometheus family (for example
/// `event="reply-divergent"`: a replica answered with another result than the accepted one).
fn client_events_text(counters: &plumb::client::Counters) -> String {
    let mut text = String::from(
        "# HELP plumb_gateway_client_events_total Protocol events of the gateway's pool clients, by name\n# TYPE plumb_gateway_client_events_total counter\n",
    );
    for (name, n) in counters.iter() {
        text.push_str(&format!(
            "plumb_gateway_client_events_total{{event=\"{name}\"}} {n}\n"
        ));
    }
    text
}

/// What both front ends start from: the cluster's `[gateway]` section, its client port bound
/// (`port` names it, `occupant` says what else may hold it) and the pool of library clients.
/// A failure is printed and becomes the exit code.
async fn listen_and_pool(
    cluster: &plumb_cluster::Cluster,
    port: &str,
    occupant: &str,
) -> Result<(plumb_cluster::Gateway, tokio::net::TcpListener, Arc<Pool>), ExitCode> {
    let Some(gw) = cluster.gateway.clone() else {
        eprintln!(
            "plumb gateway: {}: no [gateway] section",
            cluster.path.display()
        );
        return Err(ExitCode::from(2));
    };
    let listener = tokio::net::TcpListener::bind(gw.resp).await.map_err(|e| {
        eprintln!(
            "plumb gateway: cannot listen on {} ({port}): {e}; is {occupant} or another gateway using it?",
            gw.resp
        );
        ExitCode::from(2)
    })?;
    let dir = cluster.dir().join("gateway");
    let pool = Pool::start(cluster, &gw.clients, &dir, true).map_err(|e| {
        eprintln!("plumb gateway: {e}");
        ExitCode::from(2)
    })?;
    Ok((gw, listener, Arc::new(pool)))
}

/// The gateway of a coordination cluster: ZooKeeper clients on `[gateway] resp`.
async fn zk_gateway(cluster: plumb_cluster::Cluster) -> Result<(), ExitCode> {
    let (gw, listener, pool) =
        listen_and_pool(&cluster, "the ZooKeeper port", "a ZooKeeper server").await?;
    let stats = Arc::new(plumb_gateway::ZkStats::default());
    let server = plumb_gateway::ZkServer::new(pool.clone(), stats.clone(), gw.fast_reads);
    let handler: admin::Handler = {
        let stats = stats.clone();
        let pool = pool.clone();
        Arc::new(move |path: &str| {
            let mut fields = stats.fields();
            fields.push(("backlog", pool.backlog() as u64));
            let extra = String::new();
            admin_response(path, "plumb_zk_gateway", &fields, &pool, &extra)
        })
    };
    // No sketchers: nothing after u and r.
    let clients_at = format!("ZooKeeper clients on {}", gw.resp);
    let clients = clients_line(clients_at, &pool, &cluster, 0);
    serve_until_terminated(&gw, handler, clients, server.serve(listener)).await
}

/// The gateway of a web cluster: HTTP clients (browsers, curl) on `[gateway] resp`.
async fn web_gateway(
    cluster: plumb_cluster::Cluster,
    sketchers: Option<u32>,
) -> Result<(), ExitCode> {
    let (gw, listener, pool) = listen_and_pool(&cluster, "the HTTP port", "a web server").await?;
    let stats = Arc::new(plumb_gateway::HttpStats::default());
    let sketchers = sketchers.unwrap_or(gw.sketchers);
    let sketcher = sketched_reads(&cluster, &pool, sketchers)?;
    let server = plumb_gateway::HttpServer::with_sketcher(
        pool.clone(),
        stats.clone(),
        gw.fast_reads,
        sketcher.clone(),
    );
    let handler: admin::Handler = {
        let stats = stats.clone();
        let pool = pool.clone();
        let sketcher = sketcher.clone();
        Arc::new(move |path: &str| {
            let mut fields = stats.fields();
            fields.push(("backlog", pool.backlog() as u64));
            let extra = sketcher.as_ref().map(|k| k.metrics()).unwrap_or_default();
            admin_response(path, "plumb_http_gateway", &fields, &pool, &extra)
        })
    };
    let clients_at = format!("HTTP clients on http://{}/", gw.resp);
    let clients = clients_line(clients_at, &pool, &cluster, sketchers);
    serve_until_terminated(&gw, handler, clients, server.serve(listener)).await
}
