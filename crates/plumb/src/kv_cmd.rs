//! `plumb kv`: read and write the replicated key-value store without the gateway.

use crate::kv_app::refuse_other_apps;
use clap::{Args, Subcommand};
use plumb::cli::{runtime, ConfigArg};
use plumb_kv::{KvOp, KvResult};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct KvArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Give up after this many seconds without an answer.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    #[command(subcommand)]
    op: KvCommand,
}

#[derive(Subcommand, Debug)]
pub enum KvCommand {
    /// Print the value of KEY (linearizable: ordered like a write).
    Get { key: String },
    /// Set KEY to VALUE.
    Set { key: String, value: String },
    /// Delete KEY.
    Del { key: String },
    /// Add DELTA (default 1) to the integer at KEY.
    Incr {
        key: String,
        #[arg(default_value_t = 1)]
        delta: i64,
    },
}

pub fn kv_cmd(a: KvArgs) -> ExitCode {
    let cluster = match a.config.load().and_then(refuse_other_apps) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plumb kv: {e}");
            return ExitCode::from(2);
        }
    };
    let op = match a.op {
        KvCommand::Get { key } => KvOp::Get {
            key: key.into_bytes(),
        },
        KvCommand::Set { key, value } => KvOp::Set {
            key: key.into_bytes(),
            value: value.into_bytes(),
            expire: None,
        },
        KvCommand::Del { key } => KvOp::Delete {
            key: key.into_bytes(),
        },
        KvCommand::Incr { key, delta } => KvOp::Increment {
            key: key.into_bytes(),
            delta,
        },
    };
    let rt = runtime();
    let dir = cluster.dir().join("clients");
    rt.block_on(async {
        let pool = match plumb_gateway::Pool::start(&cluster, &cluster.cli_clients, &dir, false) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("plumb kv: {e}");
                return ExitCode::from(2);
            }
        };
        let answer = tokio::time::timeout(Duration::from_secs(a.timeout), pool.call(op.encode(), false)).await;
        tokio::task::block_in_place(|| pool.stop());
        let bytes = match answer {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                eprintln!("plumb kv: {e}");
                return ExitCode::from(1);
            }
            Err(_) => {
                eprintln!(
                    "plumb kv: no answer from the cluster in {} s; is it running? (`plumb status` shows which nodes answer)",
                    a.timeout
                );
                return ExitCode::from(1);
            }
        };
        match KvResult::decode(&bytes) {
            Ok(KvResult::Value(Some(v))) => out!("{}", String::from_utf8_lossy(&v)),
            Ok(KvResult::Value(None)) => out!("(nil)"),
            Ok(KvResult::Ok) => out!("OK"),
            Ok(KvResult::Bool(b)) => out!("{}", if b { 1 } else { 0 }),
            Ok(KvResult::Int(i)) => out!("{i}"),
            Ok(KvResult::Error(e)) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
            Ok(other) => out!("{other:?}"),
            Err(e) => {
                eprintln!("plumb kv: the cluster's answer does not decode: {e}");
                return ExitCode::from(1);
            }
        }
        ExitCode::SUCCESS
    })
}
