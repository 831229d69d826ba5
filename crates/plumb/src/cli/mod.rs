//! The command line of a plumb application's binary: `up`, `init`, `node` and `status`, for
//! whichever applications the binary registers.
//!
//! An application's `main` registers its application under a name and hands over to
//! [`Cli::run`]:
//!
//! ```no_run
//! # use plumb::{Application, BatchOutput, Command, LoadError, NonDeterminism, ClientId, Digest, Seq};
//! # #[derive(Default)]
//! # struct Counter(u64);
//! # impl Application for Counter {
//! #     fn execute(&mut self, _: Seq, b: &[Command<'_>], _: NonDeterminism) -> BatchOutput {
//! #         BatchOutput { replies: vec![Vec::new(); b.len()], pushes: Vec::new() }
//! #     }
//! #     fn execute_read_only(&self, _: ClientId, _: &[u8]) -> Vec<u8> { Vec::new() }
//! #     fn take_checkpoint(&mut self) -> Vec<u8> { Vec::new() }
//! #     fn load_checkpoint(&mut self, _: &[u8]) -> Result<(), LoadError> { Ok(()) }
//! #     fn state_digest(&self) -> Digest { Digest::ZERO }
//! # }
//! fn main() -> std::process::ExitCode {
//!     plumb::cli::Cli::new("counter")
//!         .app("counter", Counter::default)
//!         .run()
//! }
//! ```
//!
//! `counter up` then starts a local cluster replicating it, `counter init --app counter`
//! writes a cluster file for several hosts, `counter node --id N` runs one node of it and
//! `counter status` shows them all. A binary with commands of its own flattens [`Command`]
//! into its own clap subcommands and passes the parsed value to [`Cli::execute`], as the
//! `plumb` binary does.

mod config;
mod front_end;
mod init;
mod node;
mod status;
mod up;

pub use config::{runtime, terminated, ConfigArg, DEFAULT_DIR};
pub use front_end::{FrontEnd, Serving};
pub use init::InitArgs;
pub use node::NodeArgs;
pub use status::{fetch_status, StatusArgs};
pub use up::UpArgs;

use clap::{FromArgMatches, Parser, Subcommand};
use plumb_app::Application;
use plumb_node::Apps;
use std::collections::BTreeMap;
use std::process::ExitCode;

/// The commands every application's binary gets.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Start a local cluster (u=1, r=1 by default: four nodes) and the application's front
    /// end (for the key-value store, the Redis gateway); Ctrl-C stops it.
    Up(UpArgs),
    /// Write a cluster configuration and key files for an application, given u, r and hosts.
    Init(InitArgs),
    /// Run one node of a cluster (the roles the configuration gives it).
    Node(NodeArgs),
    /// Show every node's view, primary, last committed and executed batch, stable checkpoint.
    Status(StatusArgs),
}

/// A binary's command line: its name, the applications it can run, and the front ends `up`
/// starts beside the nodes.
#[derive(Debug)]
pub struct Cli {
    bin: &'static str,
    apps: Apps,
    /// The application `init` and `up` choose when not told: the first one registered.
    default_app: Option<String>,
    front_ends: BTreeMap<String, FrontEnd>,
}

/// The top level of [`Cli::run`]'s command line: just the shared commands.
#[derive(Parser)]
#[command(
    version,
    about = "A replicated service: up despite u failures, right despite r"
)]
struct Shared {
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// The command line of the binary `bin` (the name it shows in help and messages), with no
    /// application yet.
    pub fn new(bin: &'static str) -> Cli {
        Cli {
            bin,
            apps: Apps::new(),
            default_app: None,
            front_ends: BTreeMap::new(),
        }
    }

    /// Register the application `name`, built by `make`; a cluster file selects it with
    /// `app = "name"`. The first application registered is the one `init` and `up` write
    /// into a new cluster file unless `--app` says otherwise.
    ///
    /// # Panics
    ///
    /// As [`Apps::with`]: a name registered twice, or one a cluster file cannot hold.
    pub fn app<A, F>(mut self, name: &str, make: F) -> Cli
    where
        A: Application + Send + 'static,
        F: Fn() -> A + Send + Sync + 'static,
    {
        self.apps = self.apps.with(name, make);
        self.default_app.get_or_insert_with(|| name.to_string());
        self
    }

    /// Have `up` start `front_end` beside the nodes of a cluster replicating `app`.
    ///
    /// # Panics
    ///
    /// If `app` is not registered (register it with [`Cli::app`] first).
    pub fn front_end(mut self, app: &str, front_end: FrontEnd) -> Cli {
        assert!(
            self.apps.has(app),
            "a front end for {app:?}, which is not registered: call .app({app:?}, ...) first"
        );
        self.front_ends.insert(app.to_string(), front_end);
        self
    }

    /// The front end of a cluster replicating `app`, if it has one.
    pub fn front_end_of(&self, app: &str) -> Option<&FrontEnd> {
        self.front_ends.get(app)
    }

    /// The applications that have a front end, in name order.
    pub fn apps_with_front_ends(&self) -> impl Iterator<Item = &str> {
        self.front_ends.keys().map(String::as_str)
    }

    /// The applications this binary runs.
    pub fn apps(&self) -> &Apps {
        &self.apps
    }

    /// The name the binary goes by in messages.
    pub fn bin(&self) -> &'static str {
        self.bin
    }

    /// Parse the process's arguments as one of the shared [`Command`]s and run it.
    pub fn run(&self) -> ExitCode {
        let shared = <Shared as clap::CommandFactory>::command()
            .name(self.bin)
            .bin_name(self.bin);
        let parsed = shared
            .try_get_matches()
            .and_then(|m| Shared::from_arg_matches(&m));
        match parsed {
            Ok(shared) => self.execute(shared.command),
            Err(e) => e.exit(),
        }
    }

    /// Run one parsed command.
    pub fn execute(&self, command: Command) -> ExitCode {
        match command {
            Command::Up(a) => up::up_cmd(self, a),
            Command::Init(a) => init::init_cmd(self, a),
            Command::Node(a) => node::node_cmd(self, a),
            Command::Status(a) => status::status_cmd(self, a),
        }
    }

    /// How many gateway identities a new cluster of `app` gets unless told.
    fn default_gateway_clients(&self, app: &str) -> u32 {
        match self.front_ends.get(app) {
            Some(f) if f.needs_gateway_section => init::GATEWAY_CLIENTS,
            _ => 0,
        }
    }

    /// Whether a new cluster of `app` has the gateway's `fast_reads` on (its front end says).
    fn default_fast_reads(&self, app: &str) -> bool {
        self.front_ends.get(app).is_some_and(|f| f.fast_reads)
    }

    /// The application `--app` names, or the default; an error if this binary lacks it.
    fn chosen_app(&self, asked: Option<&str>) -> Result<String, String> {
        let Some(name) = asked.or(self.default_app.as_deref()) else {
            return Err(format!(
                "{} registers no application; an application's main registers one with Cli::app",
                self.bin
            ));
        };
        if !self.apps.has(name) {
            let names: Vec<String> = self.apps.names().map(|n| format!("{n:?}")).collect();
            return Err(format!(
                "--app {name:?}: {} has no application of that name (it has {})",
                self.bin,
                names.join(", ")
            ));
        }
        Ok(name.to_string())
    }
}
