//! The coordination application's gateway (feature `gateway`): unmodified ZooKeeper clients
//! speak ZooKeeper's wire protocol to it ([`server`], with the pure translation of requests
//! and replies in [`translate`]), and it runs their requests through a pool of library
//! clients. [`serve`] is what `plumb gateway` runs for a coordination cluster, on the gateway
//! core's start-up (`plumb_gateway::start`).

pub mod server;
pub mod translate;

pub use server::{ZkServer, ZkStats};

use plumb_cluster::Cluster;
use plumb_gateway::start::{admin_response, clients_line, listen_and_pool, serve_until_terminated};
use plumb_runtime::admin;
use std::sync::Arc;

/// The gateway of a coordination cluster: ZooKeeper clients on `[gateway] resp`, until the
/// process is told to stop. An error says why it could not start.
pub async fn serve(cluster: Cluster) -> Result<(), String> {
    let (gw, listener, pool) =
        listen_and_pool(&cluster, "the ZooKeeper port", "a ZooKeeper server").await?;
    let stats = Arc::new(ZkStats::default());
    let server = ZkServer::new(pool.clone(), stats.clone(), gw.fast_reads);
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
