//! `readwork`: the application `plumb bench prophecy` measures (seed 000 §7.3: reads whose
//! execution costs a settable amount of CPU time at the replica).
//!
//! State: a map of keys (`u32`) to small values; the first [`INITIAL_KEYS`] keys start with a
//! value derived from the key, so reads need no preload. Operations:
//!
//! - write `[0, key: u32 LE, value...]`: sets the key, answers nothing;
//! - read `[1, key: u32 LE, iterations: u32 LE]`: hashes the key's value `iterations` times
//!   with BLAKE3 (deterministic CPU work, the same on every replica; `plumb bench prophecy`
//!   calibrates iterations per microsecond on the machine) and answers the value.
//!
//! Reads are reads ([`Application::is_read`]), so D-Prophecy can vouch for them, and the
//! read-only path executes them. Checkpoints are the whole map; it is small.

use crate::app::BenchApp;
use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Seq};
use std::collections::BTreeMap;
use std::time::Instant;

/// The application's name in cluster files; the `plumb` binary registers it.
pub const READWORK_APP: &str = "readwork";
/// Keys that hold a value from the start.
pub const INITIAL_KEYS: u32 = 4096;

const WRITE: u8 = 0;
const READ: u8 = 1;

/// A write op: set `key` to `value`.
pub fn write_op(key: u32, value: &[u8]) -> Vec<u8> {
    let mut op = Vec::with_capacity(5 + value.len());
    op.push(WRITE);
    op.extend_from_slice(&key.to_le_bytes());
    op.extend_from_slice(value);
    op
}

/// A read op: `key`'s value, after `iterations` rounds of hashing.
pub fn read_op(key: u32, iterations: u32) -> Vec<u8> {
    let mut op = Vec::with_capacity(9);
    op.push(READ);
    op.extend_from_slice(&key.to_le_bytes());
    op.extend_from_slice(&iterations.to_le_bytes());
    op
}

fn initial_value(key: u32) -> Vec<u8> {
    Digest::of(&key.to_le_bytes()).0[..16].to_vec()
}

/// The CPU work of a read: `iterations` rounds of BLAKE3 starting from `value`.
pub fn work(value: &[u8], iterations: u32) -> Digest {
    let mut d = Digest::of(value);
    for _ in 0..iterations {
        d = Digest::of(&d.0);
    }
    std::hint::black_box(d)
}

/// Rounds of [`work`] per microsecond on this machine: the best of a few short timings (the
/// machine is shared; the best is the least disturbed).
pub fn calibrate() -> f64 {
    let mut best = 0.0f64;
    for _ in 0..5 {
        let rounds = 20_000u32;
        let t0 = Instant::now();
        work(b"calibration", rounds);
        let us = t0.elapsed().as_secs_f64() * 1e6;
        best = best.max(f64::from(rounds) / us.max(1e-3));
    }
    best
}

/// The replicated map.
#[derive(Debug)]
pub struct ReadWork {
    map: BTreeMap<u32, Vec<u8>>,
}

impl Default for ReadWork {
    fn default() -> Self {
        ReadWork {
            map: (0..INITIAL_KEYS).map(|k| (k, initial_value(k))).collect(),
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

impl ReadWork {
    fn read(&self, op: &[u8]) -> Vec<u8> {
        let (Some(key), Some(iterations)) = (u32_at(op, 1), u32_at(op, 5)) else {
            return Vec::new();
        };
        let value = self.map.get(&key).cloned().unwrap_or_default();
        work(&value, iterations);
        value
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.map.len() * 28);
        for (k, v) in &self.map {
            out.extend_from_slice(&k.to_le_bytes());
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        out
    }
}

impl Application for ReadWork {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|c| match c.op.first() {
                Some(&WRITE) => {
                    if let Some(key) = u32_at(c.op, 1) {
                        self.map.insert(key, c.op[5..].to_vec());
                    }
                    Vec::new()
                }
                Some(&READ) => self.read(c.op),
                // Bytes that are no operation change nothing; every replica treats them alike.
                _ => Vec::new(),
            })
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    fn execute_read_only(&self, _client: ClientId, op: &[u8]) -> Vec<u8> {
        if self.is_read(op) {
            self.read(op)
        } else {
            Vec::new()
        }
    }

    fn is_read(&self, op: &[u8]) -> bool {
        op.first() == Some(&READ)
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.encode()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        let mut map = BTreeMap::new();
        let mut at = 0;
        while at < checkpoint.len() {
            let corrupt = || LoadError::Corrupt(format!("truncated entry at byte {at}"));
            let key = u32_at(checkpoint, at).ok_or_else(corrupt)?;
            let len = u32_at(checkpoint, at + 4).ok_or_else(corrupt)? as usize;
            let value = checkpoint
                .get(at + 8..at + 8 + len)
                .ok_or_else(corrupt)?
                .to_vec();
            map.insert(key, value);
            at += 8 + len;
        }
        self.map = map;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.encode())
    }
}

/// `readwork` for the bench's cluster start-up (its probe write); the prophecy bench builds
/// its reads itself, with their work.
#[derive(Debug)]
pub struct ReadWorkBench;

impl BenchApp for ReadWorkBench {
    fn name(&self) -> &str {
        READWORK_APP
    }

    fn write(&self, key: &str, value: &[u8]) -> Vec<u8> {
        let k = u32::from_le_bytes(
            Digest::of(key.as_bytes()).0[..4]
                .try_into()
                .unwrap_or([0; 4]),
        );
        write_op(k, value)
    }

    fn read(&self, key: &str) -> Vec<u8> {
        let k = u32::from_le_bytes(
            Digest::of(key.as_bytes()).0[..4]
                .try_into()
                .unwrap_or([0; 4]),
        );
        read_op(k, 0)
    }

    fn reply_bytes(&self, reply: &[u8]) -> Result<usize, String> {
        Ok(reply.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::ReqNo;

    fn cmd(op: &[u8]) -> Command<'_> {
        Command::new(1, plumb_wire::Life(0), ReqNo(1), op)
    }

    #[test]
    fn reads_see_writes_and_checkpoints_round_trip() {
        let nd = NonDeterminism { time: 0, seed: 0 };
        let mut a = ReadWork::default();
        let r0 = a.execute_read_only(1, &read_op(7, 10));
        assert_eq!(r0, initial_value(7));
        let w = write_op(7, b"new");
        let r = read_op(7, 3);
        let out = a.execute(Seq::default(), &[cmd(&w), cmd(&r)], nd);
        assert_eq!(out.replies, vec![Vec::new(), b"new".to_vec()]);
        assert!(a.is_read(&r) && !a.is_read(&w));
        let cp = a.take_checkpoint();
        let mut b = ReadWork {
            map: BTreeMap::new(),
        };
        b.load_checkpoint(&cp).unwrap();
        assert_eq!(a.state_digest(), b.state_digest());
        assert_eq!(b.execute_read_only(2, &read_op(7, 0)), b"new");
        assert!(b.load_checkpoint(&cp[..cp.len() - 1]).is_err());
        assert!(calibrate() > 0.0);
    }
}
