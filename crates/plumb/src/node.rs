//! Running a node inside your own program, from a cluster file, instead of through
//! [`cli`](crate::cli)'s `node` command.
//!
//! ```no_run
//! # use plumb::{Application, BatchOutput, ClientId, Command, Digest, LoadError, NonDeterminism, Seq};
//! # #[derive(Default)]
//! # struct Counter;
//! # impl Application for Counter {
//! #     fn execute(&mut self, _: Seq, b: &[Command<'_>], _: NonDeterminism) -> BatchOutput {
//! #         BatchOutput { replies: vec![Vec::new(); b.len()], pushes: Vec::new() }
//! #     }
//! #     fn execute_read_only(&self, _: ClientId, _: &[u8]) -> Vec<u8> { Vec::new() }
//! #     fn take_checkpoint(&mut self) -> Vec<u8> { Vec::new() }
//! #     fn load_checkpoint(&mut self, _: &[u8]) -> Result<(), LoadError> { Ok(()) }
//! #     fn state_digest(&self) -> Digest { Digest::ZERO }
//! # }
//! # async fn run() -> Result<(), String> {
//! use plumb::{node, Apps, Cluster};
//! use std::path::Path;
//!
//! // A file `counter init --app counter` (or `plumb::node::init_stores`) wrote.
//! let cluster = Cluster::load(Path::new("cluster/cluster.toml")).map_err(|e| e.to_string())?;
//! let apps = Apps::new().with("counter", Counter::default);
//! // Refused, naming the application, if the file's `app` is not one of `apps`.
//! let running = node::start(&cluster, 0, &node::default_data_dir(&cluster, 0), &apps).await?;
//! println!("node 0 serves on {}, /status on {}", running.address, running.admin);
//! plumb::cli::terminated().await; // Ctrl-C or SIGTERM
//! running.stop(); // each stage syncs its store on the way out
//! # Ok(())
//! # }
//! ```
//!
//! [`start`] must run inside a tokio runtime; the stages run on threads of their own.

pub use plumb_node::{
    default_data_dir, init_stores, start, write_genesis, Apps, RunningNode, Status,
};
