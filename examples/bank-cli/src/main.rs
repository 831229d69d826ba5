//! `bank`: the ledger's own binary. `up`, `init`, `node` and `status` come from plumb's command
//! line with the ledger registered as application `bank`; `call` runs one ledger command
//! against a cluster with plumb's client and prints the agreed answer.

use clap::{Parser, Subcommand};
use plumb::client::{BlockingClient, ClientError, Identity};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "bank",
    about = "A replicated bank ledger that never creates or destroys money"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// `up`, `init`, `node`, `status`: what every plumb application's binary has.
    #[command(flatten)]
    Cluster(plumb::cli::Command),
    /// Run one ledger command: open NAME | deposit NAME AMOUNT | withdraw NAME AMOUNT |
    /// transfer FROM TO AMOUNT | balance NAME | audit.
    Call {
        /// The cluster file [default: bank-local/cluster.toml].
        #[arg(long, default_value = "bank-local/cluster.toml")]
        config: PathBuf,
        /// The command's words.
        #[arg(required = true, trailing_var_arg = true)]
        words: Vec<String>,
    },
}

fn main() -> ExitCode {
    match Args::parse().command {
        Command::Cluster(command) => plumb::cli::Cli::new("bank")
            .app("bank", plumb_bank::Ledger::new)
            .execute(command),
        Command::Call { config, words } => call(&config, &words.join(" ")),
    }
}

fn call(config: &std::path::Path, line: &str) -> ExitCode {
    let op = match plumb_bank::text::parse(line) {
        Ok(op) => op,
        Err(e) => {
            eprintln!("bank call: {e}");
            return ExitCode::from(2);
        }
    };
    let client = match connect(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bank call: {e}");
            return ExitCode::from(2);
        }
    };
    let answer = if op.is_read_only() {
        client.invoke_read_only(op.encode())
    } else {
        client.invoke(op.encode())
    };
    client.shutdown();
    match answer {
        Ok(bytes) => {
            println!("{}", plumb_bank::text::show_result(&bytes));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bank call: {e}");
            ExitCode::from(1)
        }
    }
}

/// A client with the first command-line identity of the cluster that no other process is using
/// (each identity's record is locked while a client runs).
fn connect(config: &std::path::Path) -> Result<BlockingClient, ClientError> {
    let cluster = plumb::Cluster::load(config).map_err(ClientError::Config)?;
    if cluster.app != "bank" {
        return Err(ClientError::Identities(format!(
            "{} replicates the application {:?}, not the bank: name the bank's cluster file with --config",
            config.display(),
            cluster.app
        )));
    }
    let mut last = None;
    for &id in &cluster.cli_clients {
        match BlockingClient::connect(config, Identity::issued(&cluster, id)?) {
            Err(e @ ClientError::RecordInUse { .. }) => last = Some(e),
            other => return other,
        }
    }
    Err(last.unwrap_or(ClientError::Identities(
        "the cluster file lists no command-line client identities (cli_clients)".into(),
    )))
}
