//! `burnkv`: the application `plumb bench zz` measures (seed 002 §5: execution that costs CPU).
//! The key-value store, each of whose operations first burns a deterministic amount of CPU:
//! an operation is `[iterations: u32 LE]` followed by an encoded [`KvOp`], and executing it
//! hashes the operation `iterations` times with BLAKE3 ([`crate::readwork::work`]; the bench
//! calibrates rounds per microsecond on the machine) before the store executes the `KvOp`.
//!
//! The state is the store's, objects and all: a replica that loads a checkpoint on demand
//! fetches the buckets an operation touches ([`ObjectState::access_set`] looks through the
//! prefix), so recovery is measured on the store's own object tree. Bytes too short to carry a
//! prefix are handed to the store as an empty operation, which it answers with an error.

use crate::app::BenchApp;
use crate::readwork::work;
use plumb_app::{
    AccessSet, Application, BatchOutput, Command, LoadError, NonDeterminism, ObjectId, ObjectState,
    ObjectWrite,
};
use plumb_crypto::Digest;
use plumb_kv::KvStore;
use plumb_wire::{ClientId, Micros, Seq};

/// The application's name in cluster files; the `plumb` binary registers it.
pub const BURNKV_APP: &str = "burnkv";

/// `op` prefixed with `iterations` rounds of work.
pub fn burn_op(iterations: u32, op: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + op.len());
    out.extend_from_slice(&iterations.to_le_bytes());
    out.extend_from_slice(op);
    out
}

/// The rounds and the store's operation of `op` (no rounds, no operation if it is too short).
fn split(op: &[u8]) -> (u32, &[u8]) {
    match op.split_first_chunk::<4>() {
        Some((n, rest)) => (u32::from_le_bytes(*n), rest),
        None => (0, &[]),
    }
}

/// `command`'s store operation, once its rounds of work are burnt.
fn burn<'a>(command: &Command<'a>) -> Command<'a> {
    let (rounds, op) = split(command.op);
    work(op, rounds);
    Command { op, ..*command }
}

/// The store behind the burn.
#[derive(Debug, Default)]
pub struct BurnKv {
    store: KvStore,
}

impl Application for BurnKv {
    fn execute(&mut self, seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        let inner: Vec<Command<'_>> = batch.iter().map(burn).collect();
        self.store.execute(seq, &inner, nd)
    }

    /// What selective execution runs (`plumb bench odrc`): the same burn, then the store's.
    fn execute_selected(
        &mut self,
        seq: Seq,
        commands: &[(usize, Command<'_>)],
        nd: NonDeterminism,
    ) -> Option<BatchOutput> {
        let inner: Vec<(usize, Command<'_>)> =
            commands.iter().map(|(i, c)| (*i, burn(c))).collect();
        self.store.execute_selected(seq, &inner, nd)
    }

    fn execute_read_only(&self, client: ClientId, op: &[u8]) -> Vec<u8> {
        let (rounds, op) = split(op);
        work(op, rounds);
        self.store.execute_read_only(client, op)
    }

    fn is_read(&self, op: &[u8]) -> bool {
        self.store.is_read(split(op).1)
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.store.take_checkpoint()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        self.store.load_checkpoint(checkpoint)
    }

    fn state_digest(&self) -> Digest {
        self.store.state_digest()
    }

    fn objects(&mut self) -> Option<&mut dyn ObjectState> {
        Some(self)
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.store.counters()
    }
}

/// The store's objects, with operations seen through their prefix.
impl ObjectState for BurnKv {
    fn object_id_bits(&self) -> u8 {
        self.store.object_id_bits()
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        self.store.take_changed_objects()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.store.object_bytes(id)
    }

    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        self.store.load_object(id, bytes)
    }

    fn object_metadata(&self) -> Vec<u8> {
        self.store.object_metadata()
    }

    fn load_object_metadata(&mut self, metadata: &[u8]) -> Result<(), LoadError> {
        self.store.load_object_metadata(metadata)
    }

    fn access_set(&self, op: &[u8]) -> AccessSet {
        self.store.access_set(split(op).1)
    }

    fn batch_access_set(&self, ops: &[&[u8]], time: Micros) -> AccessSet {
        let inner: Vec<&[u8]> = ops.iter().map(|op| split(op).1).collect();
        self.store.batch_access_set(&inner, time)
    }
}

/// `burnkv` for the bench: SET and GET of the key-value store, each after `iterations`
/// rounds of work.
#[derive(Debug)]
pub struct BurnKvBench {
    pub iterations: u32,
}

impl BenchApp for BurnKvBench {
    fn name(&self) -> &str {
        BURNKV_APP
    }

    fn write(&self, key: &str, value: &[u8]) -> Vec<u8> {
        burn_op(self.iterations, &crate::app::KvBench.write(key, value))
    }

    fn read(&self, key: &str) -> Vec<u8> {
        burn_op(self.iterations, &crate::app::KvBench.read(key))
    }

    fn reply_bytes(&self, reply: &[u8]) -> Result<usize, String> {
        crate::app::KvBench.reply_bytes(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::KvBench;
    use plumb_wire::{Life, ReqNo};

    fn cmd(op: &[u8]) -> Command<'_> {
        Command::new(1, Life(0), ReqNo(1), op)
    }

    #[test]
    fn burns_then_runs_the_store_and_sees_objects_through_the_prefix() {
        let nd = NonDeterminism { time: 1, seed: 0 };
        let (mut a, mut plain) = (BurnKv::default(), KvStore::new());
        let w = KvBench.write("k", b"v");
        let out = a.execute(Seq(1), &[cmd(&burn_op(50, &w)), cmd(b"xy")], nd);
        let reference = plain.execute(Seq(1), &[cmd(&w), cmd(b"")], nd);
        assert_eq!(
            out, reference,
            "the same replies as the store, short bytes too"
        );
        assert_eq!(a.state_digest(), plain.state_digest());
        let get = KvBench.read("k");
        assert_eq!(
            a.execute_read_only(1, &burn_op(3, &get)),
            plain.execute_read_only(1, &get)
        );
        assert!(a.is_read(&burn_op(0, &get)) && !a.is_read(&burn_op(0, &w)));
        let objects = a.access_set(&burn_op(9, &w));
        assert_eq!(objects, ObjectState::access_set(&plain, &w));
        assert!(matches!(objects, AccessSet::Objects(ref ids) if ids.len() == 1));
        assert_eq!(
            a.batch_access_set(&[&burn_op(1, &w)], 1),
            plain.batch_access_set(&[&w], 1)
        );
        assert_eq!(a.take_changed_objects(), plain.take_changed_objects());
        let selected = a.execute_selected(Seq(2), &[(3, cmd(&burn_op(7, &get)))], nd);
        let reference = plain.execute_selected(Seq(2), &[(3, cmd(&get))], nd);
        assert!(selected.is_some(), "selective execution runs the store's");
        assert_eq!(selected, reference);
    }
}
