//! What every gateway does to start and to serve, whichever front end it runs: bind the
//! cluster's `[gateway] resp` and start the pool of library clients ([`listen_and_pool`]), put
//! Prophecy sketchers in front of reads if asked ([`sketched_reads`]), answer on the admin
//! endpoint ([`admin_response`]), print the start-up line and serve until the process is told
//! to stop ([`serve_until_terminated`]). The applications' front ends build their servers
//! between these steps; a failure to start is an error the `plumb gateway` command prints
//! after `plumb gateway: ` (and exits with 2).

use crate::pool::Pool;
use crate::sketching::{SketchedReads, SketcherConfig};
use plumb_cluster::{Cluster, Gateway};
use plumb_runtime::{admin, out};
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// What every front end starts from: the cluster's `[gateway]` section, its client port bound
/// (`port` names it, `occupant` says what else may hold it) and the pool of library clients.
pub async fn listen_and_pool(
    cluster: &Cluster,
    port: &str,
    occupant: &str,
) -> Result<(Gateway, TcpListener, Arc<Pool>), String> {
    let Some(gw) = cluster.gateway.clone() else {
        return Err(format!("{}: no [gateway] section", cluster.path.display()));
    };
    let listener = TcpListener::bind(gw.resp).await.map_err(|e| {
        format!(
            "cannot listen on {} ({port}): {e}; is {occupant} or another gateway using it?",
            gw.resp
        )
    })?;
    if gw.fast_reads {
        if let Some(why) = cluster.protocol.unanimous_reads_ordered() {
            // The pool's clients order them (plumb_client); say so once, not per read.
            out!("gateway: fast_reads is on, but {why}");
        }
    }
    let dir = cluster.dir().join("gateway");
    let pool = Pool::start(cluster, &gw.clients, &dir, true).map_err(|e| e.to_string())?;
    Ok((gw, listener, Arc::new(pool)))
}

/// The Prophecy sketchers in front of a gateway's reads, if `n > 0`. They share the gateway's
/// pool: the table is partitioned between them (one lock each), the replica clients are not.
pub fn sketched_reads(
    cluster: &Cluster,
    pool: &Arc<Pool>,
    n: u32,
) -> Result<Option<Arc<SketchedReads>>, String> {
    if n == 0 {
        return Ok(None);
    }
    let pools = vec![pool.clone(); n as usize];
    // Fast reads go to replicas that execute: in ZZ mode the actives (docs/zz.md).
    SketchedReads::new(
        pools,
        cluster.protocol.executing_replicas(),
        SketcherConfig::default(),
    )
    .map(|s| Some(Arc::new(s)))
    .map_err(|e| e.to_string())
}

/// What every front end does once its server is built: start its admin endpoint, say where
/// its clients connect (`gateway: <clients>, admin http://…/status`), then serve until the
/// process is told to stop.
pub async fn serve_until_terminated(
    gw: &Gateway,
    handler: admin::Handler,
    clients: String,
    serving: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    if let Err(e) = admin::serve(gw.admin, handler).await {
        return Err(format!(
            "cannot listen on {} (the gateway's admin HTTP port): {e}",
            gw.admin
        ));
    }
    out!("gateway: {clients}, admin http://{}/status", gw.admin);
    tokio::spawn(serving);
    plumb_runtime::terminated().await;
    out!("gateway: stopping");
    Ok(())
}

/// The start-up line's account of the clients: where they connect (`clients_at`), then the
/// pool, the cluster's u and r, and the sketchers if there are any.
pub fn clients_line(clients_at: String, pool: &Pool, cluster: &Cluster, sketchers: u32) -> String {
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

/// The admin endpoint of a front end that reports named counters: `/status` as one JSON
/// object, `/metrics` as Prometheus lines under `prefix`, with the pool clients' events and
/// `extra` lines (the sketchers').
pub fn admin_response(
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
            text.push_str(&plumb_cost::metrics_text());
            admin::Response::ok("text/plain; version=0.0.4", text)
        }
        _ => admin::Response::not_found(),
    }
}

/// The pool clients' protocol counters as one Prometheus family (for example
/// `event="reply-divergent"`: a replica answered with another result than the accepted one).
pub fn client_events_text(counters: &plumb_core::Counters) -> String {
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
