//! plumb: state machine replication that stays **up** despite `u` failures of any kind and
//! **right** despite `r` of them lying.
//!
//! This crate is what an application developer depends on. Implement [`Application`] for your
//! state machine, register it under a name, and your binary gets the cluster commands (`up`,
//! `init`, `node`, `status`) from [`cli`]; a cluster file's `app = "name"` picks the
//! application its nodes run. `docs/application-guide.md` in the repository walks through it.
//!
//! # A replicated counter
//!
//! The state machine: every request adds a signed 64-bit number to a counter and is answered
//! with the new value. It must be deterministic: the same batches in the same order give the
//! same replies and the same checkpoints on every replica (use [`NonDeterminism`] for time and
//! randomness, never the system's).
//!
//! ```
//! use plumb::{Application, BatchOutput, ClientId, Command, Digest, LoadError, NonDeterminism, Seq};
//!
//! #[derive(Default)]
//! pub struct Counter {
//!     value: i64,
//! }
//!
//! impl Application for Counter {
//!     fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
//!         let replies = batch
//!             .iter()
//!             .map(|c| {
//!                 // A request that is not 8 bytes adds nothing: input is never trusted.
//!                 let delta = c.op.try_into().map(i64::from_le_bytes).unwrap_or(0);
//!                 self.value = self.value.wrapping_add(delta);
//!                 self.value.to_le_bytes().to_vec()
//!             })
//!             .collect();
//!         BatchOutput { replies, pushes: Vec::new() }
//!     }
//!
//!     fn execute_read_only(&self, _client: ClientId, _op: &[u8]) -> Vec<u8> {
//!         self.value.to_le_bytes().to_vec()
//!     }
//!
//!     fn take_checkpoint(&mut self) -> Vec<u8> {
//!         self.value.to_le_bytes().to_vec()
//!     }
//!
//!     fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
//!         let bytes = checkpoint
//!             .try_into()
//!             .map_err(|_| LoadError::Corrupt(format!("{} bytes, not 8", checkpoint.len())))?;
//!         self.value = i64::from_le_bytes(bytes);
//!         Ok(())
//!     }
//!
//!     fn state_digest(&self) -> Digest {
//!         Digest::of(&self.value.to_le_bytes())
//!     }
//! }
//!
//! // The library calls it like this on every execution replica:
//! let mut counter = Counter::default();
//! let add = 5i64.to_le_bytes();
//! let batch = [Command::new(0, plumb_wire::Life(0), plumb_wire::ReqNo(1), &add)];
//! let out = counter.execute(Seq(1), &batch, NonDeterminism { time: 1, seed: 7 });
//! assert_eq!(out.replies, [5i64.to_le_bytes().to_vec()]);
//!
//! // Its binary's `main` is one statement (named otherwise here, so the test does not run it):
//! fn counter_main() -> std::process::ExitCode {
//!     plumb::cli::Cli::new("counter").app("counter", Counter::default).run()
//! }
//! ```
//!
//! `counter up` starts four local node processes replicating it (u=1, r=1), `counter init
//! --app counter --hosts ...` writes a cluster file for real hosts, `counter node --id N` runs
//! one node and `counter status` shows them. `crates/plumb/examples/counter.rs` is this
//! program. To run a node inside a program of your own instead, see [`node`].

#![warn(missing_docs)]

/// `out!`: `println!` that ignores a closed stdout (`... | head`) instead of panicking.
#[macro_use]
extern crate plumb_runtime;

pub mod cli;
pub mod node;

/// The application contract in full (seed 004 appendix B), for what the items re-exported at
/// the crate root leave out.
pub use plumb_app as app;
pub use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
/// Calling a plumb service from Rust: the async [`client::Client`], the
/// [`client::BlockingClient`] and their typed errors (`docs/client.md`).
pub use plumb_client::net as client;
pub use plumb_cluster::Cluster;
pub use plumb_crypto::Digest;
pub use plumb_node::Apps;
pub use plumb_wire::{ClientId, Micros, ReqNo, Seq};
