//! The checkpoint/delta helper (seed 004 §7.2, Figures 7.2 and 7.3), for applications whose
//! own snapshots are coarse: expensive to generate, so taken rarely.
//!
//! [`CheckpointDelta`] wraps such an application. The library asks for a checkpoint every
//! `CP_interval` batches; the helper answers with the last coarse snapshot plus the log of
//! the batches executed since it (the *delta*), and pays for a new coarse snapshot only once
//! `coarse_every` batches have gone by. Loading restores the coarse snapshot and replays the
//! logged batches (execution is deterministic, so the replay reaches the same state).
//!
//! When a new coarse snapshot is due is decided from batch numbers that every correct replica
//! shares (the last batch delivered and the batch of the last coarse snapshot, which the
//! checkpoint carries), so all correct replicas produce byte-identical checkpoints even if
//! some loaded a checkpoint half-way through a log.
//!
//! What it saves is the cost of *generating* snapshots. The checkpoint still holds the coarse
//! snapshot's bytes (the library persists and transfers it like any checkpoint); to make
//! checkpoints small as well, implement the object interface instead (docs/objects.md).
//! The snapshot is taken synchronously, between batches ("stop and copy" in the seed's terms);
//! the helper-process variant that takes it in the background is not provided.

use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, ReqNo, Seq};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One request of a logged batch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedCommand {
    /// The requesting client.
    pub client: ClientId,
    /// Its request number.
    pub nc: ReqNo,
    /// The operation bytes.
    #[serde(with = "serde_bytes")]
    pub op: Vec<u8>,
    /// Its request's identity ([`Command::request`]): the replay must hand the application
    /// the same commands the batch did.
    pub request: Digest,
}

/// A batch as delivered to the wrapped application, kept to be replayed on load.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedBatch {
    /// Its sequence number.
    pub seq: Seq,
    /// The agreed time it ran at.
    pub time: Micros,
    /// Its PRNG seed.
    pub seed: u64,
    /// Its requests, in order.
    pub commands: Vec<LoggedCommand>,
}

/// What the helper returns to the library as a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaCheckpoint {
    /// The last batch reflected in `coarse` (0: the initial state).
    pub coarse_seq: Seq,
    /// The wrapped application's own (coarse) checkpoint.
    #[serde(with = "serde_bytes")]
    pub coarse: Vec<u8>,
    /// Every batch delivered after `coarse_seq`, in order.
    pub log: Vec<LoggedBatch>,
}

impl DeltaCheckpoint {
    /// The canonical encoding.
    pub fn encode(&self) -> Vec<u8> {
        plumb_wire::encode::to_vec(self)
    }

    /// Decode, refusing trailing bytes and logs that are not in increasing batch order after
    /// `coarse_seq`.
    pub fn decode(bytes: &[u8]) -> Result<DeltaCheckpoint, LoadError> {
        let cp = match postcard::take_from_bytes::<DeltaCheckpoint>(bytes) {
            Ok((cp, [])) => cp,
            Ok(_) => return Err(LoadError::Corrupt("trailing bytes".into())),
            Err(e) => return Err(LoadError::Corrupt(e.to_string())),
        };
        let mut last = cp.coarse_seq;
        for b in &cp.log {
            if b.seq <= last || b.commands.is_empty() {
                return Err(LoadError::Corrupt("log out of order or empty batch".into()));
            }
            last = b.seq;
        }
        Ok(cp)
    }
}

/// An application wrapped in the checkpoint/delta scheme.
#[derive(Debug)]
pub struct CheckpointDelta<A> {
    inner: A,
    /// A new coarse snapshot once this many batch numbers went by since the last one.
    coarse_every: u64,
    coarse_seq: Seq,
    coarse: Arc<Vec<u8>>,
    log: Vec<LoggedBatch>,
    /// The last batch delivered (or the checkpoint's, after a load).
    last_seq: Seq,
    /// Coarse snapshots taken by this instance (observability and tests).
    coarse_taken: u64,
}

impl<A: Application> CheckpointDelta<A> {
    /// Wrap `inner`, in its initial state (the same on every replica), taking a coarse
    /// snapshot every `coarse_every` batches (at least 1).
    pub fn new(mut inner: A, coarse_every: u64) -> CheckpointDelta<A> {
        let coarse = Arc::new(inner.take_checkpoint());
        CheckpointDelta {
            inner,
            coarse_every: coarse_every.max(1),
            coarse_seq: Seq::ZERO,
            coarse,
            log: Vec::new(),
            last_seq: Seq::ZERO,
            coarse_taken: 1,
        }
    }

    /// The wrapped application.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// Coarse snapshots this instance generated (including the initial one).
    pub fn coarse_snapshots_taken(&self) -> u64 {
        self.coarse_taken
    }

    /// Batches in the current log.
    pub fn log_len(&self) -> usize {
        self.log.len()
    }
}

impl<A: Application> Application for CheckpointDelta<A> {
    fn execute(&mut self, seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        debug_assert!(seq > self.last_seq, "batches arrive in increasing order");
        self.log.push(LoggedBatch {
            seq,
            time: nd.time,
            seed: nd.seed,
            commands: batch
                .iter()
                .map(|c| LoggedCommand {
                    client: c.client,
                    nc: c.nc,
                    op: c.op.to_vec(),
                    request: c.request,
                })
                .collect(),
        });
        self.last_seq = seq;
        self.inner.execute(seq, batch, nd)
    }

    fn execute_read_only(&self, client: ClientId, op: &[u8]) -> Vec<u8> {
        self.inner.execute_read_only(client, op)
    }

    fn is_read(&self, op: &[u8]) -> bool {
        self.inner.is_read(op)
    }

    fn execute_early(&mut self, command: Command<'_>) -> Option<Vec<u8>> {
        self.inner.execute_early(command)
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        if self.last_seq.since(self.coarse_seq) >= self.coarse_every {
            self.coarse = Arc::new(self.inner.take_checkpoint());
            self.coarse_seq = self.last_seq;
            self.log.clear();
            self.coarse_taken += 1;
        }
        DeltaCheckpoint {
            coarse_seq: self.coarse_seq,
            coarse: self.coarse.as_ref().clone(),
            log: self.log.clone(),
        }
        .encode()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        let cp = DeltaCheckpoint::decode(checkpoint)?;
        self.inner.load_checkpoint(&cp.coarse)?;
        for b in &cp.log {
            let commands: Vec<Command<'_>> = b
                .commands
                .iter()
                .map(|c| Command {
                    client: c.client,
                    nc: c.nc,
                    op: &c.op,
                    request: c.request,
                })
                .collect();
            let nd = NonDeterminism {
                time: b.time,
                seed: b.seed,
            };
            // Replies were sent when the batch first ran; the replay only rebuilds state.
            let _ = self.inner.execute(b.seq, &commands, nd);
        }
        self.last_seq = cp.log.last().map_or(cp.coarse_seq, |b| b.seq);
        self.coarse_seq = cp.coarse_seq;
        self.coarse = Arc::new(cp.coarse);
        self.log = cp.log;
        Ok(())
    }

    fn release_checkpoint(&mut self, checkpoint: &[u8]) {
        if let Ok(cp) = DeltaCheckpoint::decode(checkpoint) {
            self.inner.release_checkpoint(&cp.coarse);
        }
    }

    fn fetch_state(&self, token: &Digest) -> Option<Vec<u8>> {
        self.inner.fetch_state(token)
    }

    fn load_state(&mut self, token: &Digest, data: &[u8]) {
        self.inner.load_state(token, data)
    }

    fn state_digest(&self) -> Digest {
        self.inner.state_digest()
    }
}
