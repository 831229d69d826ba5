//! A replicated counter: the smallest application with a binary of its own.
//!
//! Each request is a signed 64-bit number (8 bytes, little-endian) that the counter adds to
//! itself; the reply is the new value, in the same encoding. A read-only request (any bytes)
//! is answered with the current value.
//!
//! ```sh
//! cargo run --release -p plumb --example counter -- up --u 1 --r 0 --dir counter-local
//! ```
//!
//! starts three local nodes replicating it; `counter node`, `init --app counter` and `status`
//! work as they do for `plumb`. `crates/plumb/tests/applications.rs` runs it as a real cluster.

use plumb::{Application, BatchOutput, ClientId, Command, Digest, LoadError, NonDeterminism, Seq};
use std::process::ExitCode;

/// The counter's whole state.
#[derive(Default)]
struct Counter {
    value: i64,
}

impl Application for Counter {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|c| {
                // A request that is not 8 bytes adds nothing: a client's bytes are never trusted
                // to be well formed, and every replica must treat them alike.
                let delta = c.op.try_into().map(i64::from_le_bytes).unwrap_or(0);
                self.value = self.value.wrapping_add(delta);
                self.value.to_le_bytes().to_vec()
            })
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    fn execute_read_only(&self, _client: ClientId, _op: &[u8]) -> Vec<u8> {
        self.value.to_le_bytes().to_vec()
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.value.to_le_bytes().to_vec()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        let bytes = checkpoint
            .try_into()
            .map_err(|_| LoadError::Corrupt(format!("{} bytes, not 8", checkpoint.len())))?;
        self.value = i64::from_le_bytes(bytes);
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.value.to_le_bytes())
    }
}

fn main() -> ExitCode {
    plumb::cli::Cli::new("counter")
        .app("counter", Counter::default)
        .run()
}
