//! `init`: write a cluster file and key files for an application, for several hosts.

use super::{Cli, DEFAULT_DIR};
use clap::Args;
use plumb_cluster::{init, Cluster, InitOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// Pool identities a front end gets when `--gateway-clients` is not given.
pub(crate) const GATEWAY_CLIENTS: u32 = 32;

/// Arguments of `init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// Directory to write cluster.toml and keys/ into.
    #[arg(long, default_value = DEFAULT_DIR)]
    dir: PathBuf,
    /// The application the cluster replicates [default: the binary's first; for plumb, kv].
    #[arg(long)]
    app: Option<String>,
    /// Failures of any kind tolerated while the service stays up.
    #[arg(long, default_value_t = 1)]
    u: u16,
    /// Commission failures tolerated while every answer stays right.
    #[arg(long, default_value_t = 1)]
    r: u16,
    /// Execution replicas [default: the minimum, u + max(u, r) + 1]. More give selective
    /// execution room to spread work; those beyond the other stages' count get nodes of their
    /// own. Quorums stay what u and r make them.
    #[arg(long)]
    exec: Option<usize>,
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
    /// Client identities for the gateway's pool [default: 32 if the application's front end
    /// uses a gateway, as the key-value store's does; else 0].
    #[arg(long)]
    gateway_clients: Option<u32>,
    /// Client identities for command-line tools (`plumb kv`) and applications' own clients.
    #[arg(long, default_value_t = 8)]
    cli_clients: u32,
    /// Give each stage replica a node of its own instead of one replica of each stage per node.
    #[arg(long)]
    split: bool,
    /// Sleeping execution replicas (ZZ, docs/zz.md): only max(u, r) + 1 execution replicas
    /// execute, the other u sleep until r + 1 order replicas wake them. Needs u of at least 1.
    #[arg(long)]
    zz: bool,
}

pub(crate) fn init_cmd(cli: &Cli, a: InitArgs) -> ExitCode {
    let app = match cli.chosen_app(a.app.as_deref()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("{} init: {e}", cli.bin);
            return ExitCode::from(2);
        }
    };
    let gateway_clients = a
        .gateway_clients
        .unwrap_or_else(|| cli.default_gateway_clients(&app));
    let fast_reads = cli.default_fast_reads(&app);
    let o = InitOptions {
        app,
        u: a.u,
        r: a.r,
        exec: a.exec,
        hosts: a.hosts,
        base_port: a.base_port,
        gateway_host: a.gateway_host,
        resp_port: a.resp_port,
        gateway_clients,
        fast_reads,
        cli_clients: a.cli_clients,
        split: a.split,
        wan: None,
        protocol: plumb_cluster::ProtocolOverrides {
            zz: a.zz.then_some(true),
            ..Default::default()
        },
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
            eprintln!("{} init: {e}", cli.bin);
            ExitCode::from(2)
        }
    }
}
