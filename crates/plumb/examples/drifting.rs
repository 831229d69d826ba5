//! A deliberately non-deterministic application: what plumb does when an application breaks
//! the determinism rules (section "Determinism" of the `plumb-app` crate documentation,
//! `crates/app/src/guide.md`), shown by `crates/plumb/tests/divergence.rs`.
//!
//! It is a register file — `set <key> <value>` stores, `get <key>` reads — kept as 64
//! objects (hash buckets of keys). Its bug is a classic one: it reads replica-local
//! configuration. A process started with `DRIFTING_SUFFIX` set appends that suffix to the
//! first value it stores, so that replica's state and reply differ from every other's, once.
//! plumb reports the divergence (log, `/metrics`, `/status`), rolls the replica back to the
//! agreed checkpoint by fetching only the objects that differ, and the replica agrees again.
//!
//! ```sh
//! cargo run -p plumb --example drifting -- init --app drifting --dir drifting-local
//! DRIFTING_SUFFIX=! cargo run -p plumb --example drifting -- node --config drifting-local/cluster.toml --id 0
//! ```

use plumb::app::{ObjectId, ObjectState, ObjectWrite};
use plumb::{Application, BatchOutput, ClientId, Command, Digest, LoadError, NonDeterminism, Seq};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

const BUCKET_BITS: u8 = 6;

fn bucket(key: &str) -> u64 {
    u64::from(Digest::of(key.as_bytes()).0[0]) % (1 << BUCKET_BITS)
}

#[derive(Default)]
struct Registers {
    map: BTreeMap<String, String>,
    dirty: BTreeSet<u64>,
    /// The bug: replica-local configuration, read once at start.
    suffix: Option<String>,
}

impl Registers {
    fn new() -> Registers {
        Registers {
            suffix: std::env::var("DRIFTING_SUFFIX").ok(),
            ..Registers::default()
        }
    }

    fn bucket_bytes(&self, b: u64) -> Option<Vec<u8>> {
        let part: Vec<(&String, &String)> =
            self.map.iter().filter(|(k, _)| bucket(k) == b).collect();
        (!part.is_empty()).then(|| postcard::to_stdvec(&part).unwrap_or_default())
    }
}

impl Application for Registers {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|c| {
                let text = String::from_utf8_lossy(c.op);
                match text.split_whitespace().collect::<Vec<_>>()[..] {
                    ["set", key, value] => {
                        let mut value = value.to_string();
                        if let Some(suffix) = self.suffix.take() {
                            value.push_str(&suffix);
                        }
                        self.map.insert(key.to_string(), value.clone());
                        self.dirty.insert(bucket(key));
                        value.into_bytes()
                    }
                    ["get", key] => self.map.get(key).cloned().unwrap_or_default().into_bytes(),
                    _ => b"?".to_vec(),
                }
            })
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(op);
        match text.split_whitespace().collect::<Vec<_>>()[..] {
            ["get", key] => self.map.get(key).cloned().unwrap_or_default().into_bytes(),
            _ => b"?".to_vec(),
        }
    }

    // All state is in objects: these serve only applications without them.
    fn take_checkpoint(&mut self) -> Vec<u8> {
        Vec::new()
    }

    fn load_checkpoint(&mut self, _checkpoint: &[u8]) -> Result<(), LoadError> {
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&postcard::to_stdvec(&self.map).unwrap_or_default())
    }

    fn objects(&mut self) -> Option<&mut dyn ObjectState> {
        Some(self)
    }
}

impl ObjectState for Registers {
    fn object_id_bits(&self) -> u8 {
        BUCKET_BITS
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        std::mem::take(&mut self.dirty)
            .into_iter()
            .map(|b| (ObjectId(b), self.bucket_bytes(b)))
            .collect()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.bucket_bytes(id.0)
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        self.map.retain(|k, _| bucket(k) != id.0);
        if let Some(bytes) = bytes {
            let part: Vec<(String, String)> =
                postcard::from_bytes(bytes).map_err(|e| LoadError::Corrupt(e.to_string()))?;
            self.map.extend(part);
        }
        self.dirty.remove(&id.0);
        Ok(())
    }
}

fn main() -> ExitCode {
    plumb::cli::Cli::new("drifting")
        .app("drifting", Registers::new)
        .run()
}
