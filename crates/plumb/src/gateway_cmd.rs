//! `plumb gateway`: serve a cluster's clients through a pool of library clients, with the
//! front end its application registers in the binary's command line (`kv_app::cli`): Redis
//! clients for the key-value store, ZooKeeper clients for the coordination application, HTTP
//! clients for the web application. The front ends live with their applications
//! (`plumb_script::gateway`, `plumb_coord::gateway`, `plumb_web::gateway`); what they share,
//! with plumb-gateway.

use clap::Args;
use plumb::cli::{runtime, Cli, ConfigArg};
use plumb_cluster::Cluster;
use std::process::ExitCode;

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
