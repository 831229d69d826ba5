//! The `plumb` command. `plumb sim` runs the deterministic simulator (crates/sim).

/// `println!` that ignores a closed stdout (`plumb sim ... | head`) instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(args) => sim::run(args),
    }
}
