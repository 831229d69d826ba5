//! The web application's gateway (feature `gateway`): browsers, curl and wrk speak HTTP/1.1
//! to it ([`server`]), and it runs their requests through a pool of library clients. [`serve`]
//! is what `plumb gateway` runs for a web cluster, on the gateway core's start-up
//! (`plumb_gateway::start`).

pub mod server;

pub use server::{HttpServer, HttpStats};

use plumb_cluster::Cluster;
use plumb_gateway::start::{
    admin_response, clients_line, listen_and_pool, serve_until_terminated, sketched_reads,
};
use plumb_runtime::admin;
use std::sync::Arc;

/// The gateway of a web cluster: HTTP clients (browsers, curl) on `[gateway] resp`, reads
/// through `sketchers` Prophecy sketchers if given (else the cluster file's), until the
/// process is told to stop. An error says why it could not start.
pub async fn serve(cluster: Cluster, sketchers: Option<u32>) -> Result<(), String> {
    let (gw, listener, pool) = listen_and_pool(&cluster, "the HTTP port", "a web server").await?;
    let stats = Arc::new(HttpStats::default());
    let sketchers = sketchers.unwrap_or(gw.sketchers);
    let sketcher = sketched_reads(&cluster, &pool, sketchers)?;
    let server =
        HttpServer::with_sketcher(pool.clone(), stats.clone(), gw.fast_reads, sketcher.clone());
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
