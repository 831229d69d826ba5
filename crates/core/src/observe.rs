use crate::stall::{Evidence, SlowRequest, ViewChangeCause};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, ExecId, Micros, ReqNo, Seq, View};
use std::collections::BTreeMap;

/// A request of a delivered batch (copies of already executed requests too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveredRequest {
    pub client: ClientId,
    pub nc: ReqNo,
    /// The digest of its operation bytes.
    pub op: Digest,
    /// Its identity, `H(client, life, nc, op)`, which its reply names: two lives of a client
    /// can have a request ordered under one number.
    pub id: Digest,
}

impl DeliveredRequest {
    /// Request `nc` of `client` in its life `life`, with operation digest `op`.
    pub fn new(client: ClientId, life: plumb_wire::Life, nc: ReqNo, op: Digest) -> Self {
        DeliveredRequest {
            client,
            nc,
            op,
            id: plumb_wire::request_id(client, life, nc, op),
        }
    }
}

/// Facts a stage reports for checkers and metrics. They have no protocol effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// An execution replica delivered batch `seq` to the application (a null batch, filler
    /// from a view change, has no requests and is not given to the application).
    Delivered {
        seq: Seq,
        digest: Digest,
        agreed_time: Micros,
        requests: Vec<DeliveredRequest>,
        null: bool,
        /// The batch's agreed random seed (what the application got as `nd.seed`).
        seed: u64,
    },
    /// An execution replica's report of a batch it executed (docs/objects.md "Batch reports"):
    /// correct replicas' agree, and match what the reference replay of the batch produced.
    BatchReported(plumb_wire::BatchReport),
    /// An execution replica holding part of the state (docs/objects.md "Partial state") took
    /// object `id` from a peer, its proof verified, before executing batch `before`; `digest`
    /// is its bytes' digest: the object as of batch `before - 1` of the agreed sequence.
    ObjectFetched {
        before: Seq,
        id: u64,
        digest: Digest,
    },
    /// An order replica recorded `r + 1` matching reports of a batch from execution replicas:
    /// the agreed report (docs/objects.md "Batch reports").
    ExecReportAgreed(plumb_wire::BatchReport),
    /// A sleeping execution replica (ZZ, docs/zz.md) woke: these order replicas had asked.
    Woken { asked: Vec<plumb_wire::OrderId> },
    /// A woken execution replica (ZZ) went back to sleep: these order replicas had asked.
    Slept { asked: Vec<plumb_wire::OrderId> },
    /// ZZ: an order replica came to suspect an active execution replica (or two of
    /// disagreeing), for `cause` (its counter's name), on `evidence` (what showed it, for the
    /// log): it will wake a sleeper.
    ActiveSuspected {
        cause: &'static str,
        evidence: String,
    },
    /// ZZ: an order replica found execution replica `exec` faulty (its report or checkpoint
    /// token differed from the agreed one) and stopped sending it batches.
    ExecFoundFaulty { exec: ExecId },
    /// An execution replica took checkpoint `seq` with token `token`.
    CheckpointTaken { seq: Seq, token: Digest },
    /// An execution replica loaded checkpoint `seq`: its next batch is `seq + 1`.
    CheckpointLoaded { seq: Seq, token: Digest },
    /// An order replica committed batch `seq`. `view`: the view in which its own agreement
    /// committed it; `None` when it took the batch from peers (catch-up) or from its disk,
    /// whatever view it was in then. `carried`: the batch was chosen by a NEW-VIEW (carried over
    /// from an earlier view), not proposed afresh.
    Committed {
        seq: Seq,
        view: Option<View>,
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
    /// A client accepted a reply to its request `nc`, which names the request identity
    /// `request` (`H(client, life, nc, H(op))`). Reported before the completion it causes.
    ClientAccepted {
        client: ClientId,
        nc: ReqNo,
        request: Digest,
    },
    /// An order replica learned that execution replica `exec`'s checkpoint at `seq` differs
    /// from the one agreed by `max(u,r) + 1` execution replicas, and told it to load the agreed
    /// one (docs/divergence.md).
    ExecCheckpointDiffers {
        exec: ExecId,
        seq: Seq,
        agreed: Digest,
        reported: Digest,
    },
    /// An execution replica found its own state different from the agreed checkpoint and
    /// rolled back to it (docs/divergence.md).
    Diverged(DivergenceReport),
    /// An order replica asked for view `view`, for `cause`.
    ViewChangeStarted { view: View, cause: ViewChangeCause },
    /// An order replica began to suspect the primary of view `view` (once per view), for
    /// `cause`, on `evidence`.
    Suspected {
        view: View,
        cause: ViewChangeCause,
        evidence: Evidence,
    },
    /// A request waited longer than `slow_request_us` in a stage.
    SlowRequest(SlowRequest),
}

/// What an execution replica knows about how its state came to differ from the agreed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DivergenceReport {
    /// The checkpoint whose token differed from the agreed one.
    pub seq: Seq,
    /// The first batch after the newest checkpoint this replica held before `seq`: the state
    /// went wrong while executing batches `first..=seq` (or earlier, if that checkpoint was
    /// not agreed either).
    pub first: Seq,
    /// This replica's token at `seq`, and the agreed one.
    pub ours: Digest,
    pub agreed: Digest,
    /// The requests this replica executed in batches `first..=seq`, in order.
    pub requests: Vec<(Seq, ClientId, ReqNo)>,
    /// For an application with objects: the objects whose bytes at `seq` differed from the
    /// agreed ones. `None` for whole-checkpoint applications.
    pub objects: Option<Vec<u64>>,
    /// The batch this replica had executed up to when it rolled back.
    pub rolled_back_from: Seq,
}

impl std::fmt::Display for DivergenceReport {
    /// One log line: batches, requests (the first 16) and objects (the first 32).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "state differed from the agreed checkpoint at batch {} (ours {}, agreed {}); it went wrong in batches {}..={}, which executed {} request(s)",
            self.seq,
            self.ours.short(),
            self.agreed.short(),
            self.first,
            self.seq,
            self.requests.len()
        )?;
        if !self.requests.is_empty() {
            let requests = self.requests.iter().map(|(s, c, n)| format!("{c}#{n}@{s}"));
            write!(f, " {}", bracketed(requests, 16))?;
        }
        match &self.objects {
            Some(ids) => {
                let shown = bracketed(ids.iter().map(|id| format!("{id:#x}")), 32);
                write!(f, "; {} object(s) differed {shown}", ids.len())?;
            }
            None => write!(f, "; the application has no objects to compare")?,
        }
        write!(
            f,
            "; rolled back from batch {} to the agreed checkpoint, re-executing from batch {}",
            self.rolled_back_from,
            self.seq + 1
        )
    }
}

/// `[a b c +n]`: the first `cap` items, and how many more there are.
fn bracketed(items: impl ExactSizeIterator<Item = String>, cap: usize) -> String {
    let total = items.len();
    let shown: Vec<String> = items.take(cap).collect();
    let more = total - shown.len();
    let tail = if more > 0 {
        format!(" +{more}")
    } else {
        String::new()
    };
    format!("[{}{tail}]", shown.join(" "))
}

/// Named counters (dropped messages by reason and so on).
#[derive(Debug, Clone, Default)]
pub struct Counters(BTreeMap<&'static str, u64>);

impl Counters {
    /// No counts (usable in a `static`).
    pub const fn new() -> Counters {
        Counters(BTreeMap::new())
    }

    /// Count an event. A dropped message is counted with [`Counters::dropped`] instead.
    pub fn add(&mut self, name: &'static str) {
        debug_assert!(
            !name.starts_with("drop-"),
            "{name}: a drop is counted with Counters::dropped(DropReason)"
        );
        self.add_n(name, 1);
    }
    /// Count a message dropped for `why`.
    pub fn dropped(&mut self, why: crate::DropReason) {
        self.add_n(why.counter(), 1);
    }
    /// How many messages were dropped for `why`.
    pub fn drops(&self, why: crate::DropReason) -> u64 {
        self.get(why.counter())
    }
    pub fn add_n(&mut self, name: &'static str, n: u64) {
        if n > 0 {
            *self.0.entry(name).or_insert(0) += n;
        }
    }
    /// Set `name` to `total`, a running total kept elsewhere (an application's own counts).
    pub fn set(&mut self, name: &'static str, total: u64) {
        if total > 0 {
            self.0.insert(name, total);
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
