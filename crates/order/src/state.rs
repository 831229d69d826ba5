//! The order stage's replicated state: what committed batches have done to it. A snapshot of it
//! at a checkpoint sequence is the *order checkpoint*.

use plumb_crypto::Digest;
use plumb_wire::{chain_history, Batch, ClientId, Micros, ReqNo, Seq};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderState {
    /// Last applied (committed, in order) batch.
    pub seq: Seq,
    /// Last request number ordered per client (OS3: the next one must be this + 1).
    pub last_ordered: BTreeMap<ClientId, ReqNo>,
    /// Agreed time of the last non-null batch.
    pub agreed_time: Micros,
    /// History hash chain through `seq`.
    pub history: Digest,
    /// Token of the execution checkpoint at `seq` (zero before one is learned).
    pub exec_token: Digest,
}

impl OrderState {
    /// Apply committed batch `seq` (which must be `self.seq + 1`). Null batches (no requests)
    /// advance the sequence only.
    pub fn apply(&mut self, seq: Seq, batch: &Batch, digest: Digest) {
        debug_assert_eq!(seq, self.seq + 1);
        self.seq = seq;
        if batch.requests.is_empty() {
            return;
        }
        for r in &batch.requests {
            let e = self.last_ordered.entry(r.client).or_insert(ReqNo::NONE);
            *e = (*e).max(r.nc);
        }
        self.agreed_time = batch.time.max(self.agreed_time + 1);
        debug_assert_eq!(digest, batch.digest(seq), "the digest given is the batch's");
        self.history = chain_history(self.history, seq, digest, self.agreed_time);
    }

    pub fn encode(&self) -> Vec<u8> {
        plumb_core::storage::encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Option<OrderState> {
        plumb_core::storage::decode(bytes)
    }

    pub fn digest(&self) -> Digest {
        Digest::of(&self.encode())
    }
}
