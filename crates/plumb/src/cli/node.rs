//! `node`: run one node of a cluster, with the application its file names.

use super::config::runtime_with_workers;
use super::{terminated, Cli, ConfigArg};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `node`.
// The field comments are the command's help text, where `<id>` is a placeholder, not HTML.
#[allow(rustdoc::invalid_html_tags)]
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

pub(crate) fn node_cmd(cli: &Cli, a: NodeArgs) -> ExitCode {
    let bin = cli.bin;
    // Refuse a cluster of another application before touching its data.
    let cluster = match a.config.load().and_then(|c| cli.apps.check(&c).map(|()| c)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{bin} node: {e}");
            return ExitCode::from(2);
        }
    };
    let data = a
        .data
        .unwrap_or_else(|| plumb_node::default_data_dir(&cluster, a.id));
    if a.fresh {
        if let Err(e) = plumb_node::write_genesis(&cluster, a.id, &data) {
            eprintln!("{bin} node: {e}");
            return ExitCode::from(2);
        }
    }
    // A node's async side only moves frames between sockets and stage mailboxes (the stages
    // run on threads of their own): one worker saves the cross-thread wake-ups of two
    // (plumb bench u1r0 write-1k, 128 clients: +7%).
    #[cfg(feature = "adversary")]
    let attack = match a.adversary.as_deref().map(plumb_node::Attack::parse) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => {
            eprintln!("{bin} node: --adversary: {e}");
            return ExitCode::from(2);
        }
    };
    #[cfg(not(feature = "adversary"))]
    let attack = None;
    let rt = runtime_with_workers(1);
    rt.block_on(async {
        let node = match plumb_node::start_faulty(&cluster, a.id, &data, &cli.apps, attack).await {
            Ok(n) => n,
            Err(e) => {
                eprintln!("{bin} node: {e}");
                return ExitCode::from(2);
            }
        };
        out!(
            "node {}: serving {:?} on {}, admin http://{}/status and /metrics, data in {}",
            a.id,
            cluster.app,
            node.address,
            node.admin,
            data.display()
        );
        if let Some(wan) = &cluster.wan {
            out!("node {}: emulated WAN: {}", a.id, wan.describe(a.id));
        }
        terminated().await;
        out!("node {}: stopping", a.id);
        tokio::task::block_in_place(|| node.stop());
        ExitCode::SUCCESS
    })
}
