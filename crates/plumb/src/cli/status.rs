//! `status`: every node's view, primary, progress and checkpoint, from its admin endpoint.

use super::{runtime, Cli, ConfigArg};
use clap::Args;
use std::process::ExitCode;

/// Arguments of `status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Print each node's status as JSON lines.
    #[arg(long)]
    json: bool,
}

/// A node's `/status` (JSON) from its admin endpoint, or `None` if it does not answer.
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

pub(crate) fn status_cmd(cli: &Cli, a: StatusArgs) -> ExitCode {
    let cluster = match a.config.load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{} status: {e}", cli.bin);
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
        if let Some(wan) = &cluster.wan {
            out!(
                "emulated WAN ([wan] in {}): {} ms one-way between different sites, 0 within one; clients at site {}",
                cluster.path.display(),
                wan.delay_us as f64 / 1000.0,
                wan.client_site
            );
            for n in &cluster.nodes {
                out!("  node {}: site {}", n.id, wan.site(n.id).unwrap_or("?"));
            }
        }
    }
    if down > q.faults.u as usize {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
