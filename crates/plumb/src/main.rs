//! The `plumb` command: `sim` runs the deterministic simulator (crates/sim); `init`, `node`,
//! `status`, `kv` run and use a real cluster.

/// `println!` that ignores a closed stdout (`plumb sim ... | head`) instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod bench_cmd;
mod cluster_cmd;
mod gateway_cmd;
mod sim;
mod up;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "plumb",
    version,
    about = "State machine replication: up despite u failures, right despite r"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run seeded whole-cluster simulations under faults and check every safety and liveness
    /// property; replay a failing seed with --seed.
    Sim(sim::SimArgs),
    /// Start a local cluster (u=1, r=1 by default: four nodes) and the Redis gateway; Ctrl-C stops it.
    Up(up::UpArgs),
    /// Serve unmodified Redis clients (redis-cli, redis-benchmark) through the replicated store.
    Gateway(gateway_cmd::GatewayArgs),
    /// Write a cluster configuration and key files for given u, r and hosts.
    Init(cluster_cmd::InitArgs),
    /// Run one node of a cluster (the roles the configuration gives it).
    Node(cluster_cmd::NodeArgs),
    /// Show every node's view, primary, last committed and executed batch, stable checkpoint.
    Status(cluster_cmd::StatusArgs),
    /// Read and write the replicated key-value store.
    Kv(cluster_cmd::KvArgs),
    /// Measure throughput and latency on a fresh local cluster; `compare` also measures etcd,
    /// ZooKeeper and Redis in the same run, `matrix` every (u, r) shape.
    Bench(Box<bench_cmd::BenchArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::Up(args) => up::up_cmd(args),
        Command::Gateway(args) => gateway_cmd::gateway_cmd(args),
        Command::Init(args) => cluster_cmd::init_cmd(args),
        Command::Node(args) => cluster_cmd::node_cmd(args),
        Command::Status(args) => cluster_cmd::status_cmd(args),
        Command::Kv(args) => cluster_cmd::kv_cmd(args),
        Command::Bench(args) => bench_cmd::bench_cmd(*args),
    }
}
