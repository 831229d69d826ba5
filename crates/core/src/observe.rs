use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, ReqNo, Seq, View};
use std::collections::BTreeMap;

/// Facts a stage reports for checkers and metrics. They have no protocol effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// An execution replica delivered batch `seq` to the application (a null batch, filler
    /// from a view change, has no requests and is not given to the application).
    Delivered {
        seq: Seq,
        digest: Digest,
        agreed_time: Micros,
        requests: Vec<(ClientId, ReqNo, Digest)>,
        null: bool,
    },
    /// An execution replica took checkpoint `seq` with token `token`.
    CheckpointTaken { seq: Seq, token: Digest },
    /// An execution replica loaded checkpoint `seq`: its next batch is `seq + 1`.
    CheckpointLoaded { seq: Seq, token: Digest },
    /// An order replica committed batch `seq`. `carried`: the batch was chosen by a NEW-VIEW
    /// (carried over from an earlier view), not proposed afresh.
    Committed {
        seq: Seq,
        view: View,
        digest: Digest,
        carried: bool,
    },
    /// An order replica entered view `view` (as a participant in it). `new_view` is the digest
    /// of the NEW-VIEW proofs it installed (zero for view 0 and for a view entered without a
    /// NEW-VIEW): every correct replica entering a view with a correct primary installs the same
    /// one.
    ViewEntered { view: View, new_view: Digest },
    /// An order replica found its records missing or damaged and started the recovery
    /// protocol under a new incarnation: it casts no vote until it rejoins.
    Recovering { incarnation: u64 },
    /// An order replica learned its fence from `n - u` peers.
    Fenced { fence: Seq },
    /// A recovering order replica holds a stable checkpoint at `stable >= fence` and votes
    /// again.
    Rejoined { stable: Seq },
    /// An order replica's checkpoint at `seq` became stable.
    StableCheckpoint { seq: Seq },
    /// A client accepted a reply.
    ClientAccepted { client: ClientId, nc: ReqNo },
}

/// Named counters (dropped messages by reason and so on).
#[derive(Debug, Clone, Default)]
pub struct Counters(BTreeMap<&'static str, u64>);

impl Counters {
    pub fn add(&mut self, name: &'static str) {
        self.add_n(name, 1);
    }
    pub fn add_n(&mut self, name: &'static str, n: u64) {
        if n > 0 {
            *self.0.entry(name).or_insert(0) += n;
        }
    }
    /// Add every count of `other` to this one's.
    pub fn add_all(&mut self, other: &Counters) {
        for (name, n) in other.iter() {
            self.add_n(name, n);
        }
    }
    pub fn get(&self, name: &str) -> u64 {
        self.0.get(name).copied().unwrap_or(0)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }
}
