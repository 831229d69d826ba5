//! The `plumb` command: the key-value store's binary. `up`, `init`, `node` and `status` come
//! from the library's command line ([`plumb::cli`]) with the store registered as application
//! `kv`; `gateway` and `kv` speak the store's operations; `sim` runs the deterministic
//! simulator (crates/sim) and `bench` measures clusters.

/// `out!`: `println!` that ignores a closed stdout (`plumb sim ... | head`) instead of panicking.
#[macro_use]
extern crate plumb_runtime;

/// Every allocation counted, for the per-operation cost table (`plumb bench`,
/// docs/performance.md "The cost model"): a relaxed add on a per-thread stripe each.
#[global_allocator]
static ALLOCATOR: plumb_cost::CountingAllocator = plumb_cost::CountingAllocator;

mod bench_cmd;
mod gateway_cmd;
mod kv_app;
mod kv_cmd;
mod sim;

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
    /// `up`, `init`, `node`, `status`: what every application's binary has.
    #[command(flatten)]
    Cluster(plumb::cli::Command),
    /// Serve unmodified Redis clients (redis-cli, redis-benchmark) through the replicated store.
    Gateway(gateway_cmd::GatewayArgs),
    /// Read and write the replicated key-value store.
    Kv(kv_cmd::KvArgs),
    /// Measure throughput and latency on a fresh local cluster; `compare` also measures etcd,
    /// ZooKeeper and Redis in the same run, `matrix` every (u, r) shape.
    Bench(Box<bench_cmd::BenchArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim::run(args),
        Command::Cluster(command) => kv_app::cli().execute(command),
        Command::Gateway(args) => gateway_cmd::gateway_cmd(args),
        Command::Kv(args) => kv_cmd::kv_cmd(args),
        Command::Bench(args) => bench_cmd::bench_cmd(*args),
    }
}
