//! Every message exchanged between clients and stages (seed 004 Table 5.1, 6.3, plus the
//! order stage's internal agreement messages).

use crate::{AuthId, BatchReport, ExecId, OrderId};
use plumb_crypto::{Digest, Mac, Signature};
use serde::{Deserialize, Serialize};

pub type ClientId = u32;
/// Client ids that form one speculation group: `client / SPEC_GROUP` names the group. A
/// speculative request may depend only on replies to clients of its own group
/// (`plumb_speculation`), so a group's ids must all belong to one owner: the cluster file
/// refuses client ranges of two owners that share a group (`plumb_cluster`).
pub const SPEC_GROUP: ClientId = 128;

/// One life of a client: a number the client draws afresh each time it starts, and which every
/// request and read of that life carries as part of its identity ([`request_id`]). A client
/// that lost its record may reuse a number, and may send the very bytes its previous life sent
/// under it (`GET k`, `INCR k`); because the life differs, no stage takes the new request for the
/// old one's retransmission and the client never takes the old one's reply for the new one's
/// (docs/protocol.md, "Clients after a crash"). A request the previous life left outstanding is
/// resent under the life it was issued in, which the client's record keeps.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Life(pub u64);

/// Where an ordered request's reply was produced: the batch and the request's index in it.
/// Two requests of one batch are executed one after the other, so (seq, index) orders every
/// ordered reply; seq alone does not (Prophecy's sketcher must tell which of two replicated
/// reads of one batch saw the later state, seed 000 §3.3).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
pub struct Position {
    pub seq: Seq,
    pub index: u32,
}
pub use crate::req_no::ReqNo;
pub use crate::seq::Seq;
pub use crate::view::View;
/// Microseconds of agreed (batch) time.
pub type Micros = u64;

/// A request's operation as the order stage sees it: small bodies travel whole, large ones as
/// a digest that execution replicas fetch from the authentication stage.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Body {
    Inline(#[serde(with = "serde_bytes")] Vec<u8>),
    Digest(Digest),
}

/// `REQ-CORE`: client, the client's life, request number and operation (or its digest).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ReqCore {
    pub client: ClientId,
    pub life: Life,
    pub nc: ReqNo,
    pub body: Body,
}

impl ReqCore {
    /// Digest of the operation bytes, whichever form the body travels in.
    pub fn op_digest(&self) -> Digest {
        match &self.body {
            Body::Inline(op) => Digest::of(op),
            Body::Digest(d) => *d,
        }
    }

    /// Identity of the request: what authenticators cover and what batch digests include.
    /// Equal for the inline and the digest form of the same request.
    pub fn id_digest(&self) -> Digest {
        request_id(self.client, self.life, self.nc, self.op_digest())
    }
}

/// `H(client, life, nc, H(op))`: a request's identity (see [`ReqCore::id_digest`]). Replies
/// carry it so that a client can tell the answer to its operation from the answer to another
/// operation that used the same number: a previous life of the client that lost its record,
/// whatever bytes that life sent (see [`Life`]).
pub fn request_id(client: ClientId, life: Life, nc: ReqNo, op_digest: Digest) -> Digest {
    Digest::of_parts(&[
        b"req-core",
        &client.to_le_bytes(),
        &life.0.to_le_bytes(),
        &nc.to_le_bytes(),
        &op_digest.0,
    ])
}

/// One authentication replica's row of a matrix signature: `macs[o]` is its MAC over the
/// request's id digest for order replica `o`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct MatrixRow {
    pub auth: AuthId,
    pub macs: Vec<Mac>,
}

/// A request as the primary proposes it: the core and the matrix signature that makes its
/// authentication one-step transferable to every order replica (seed 004 §6.4).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SignedRequest {
    pub core: ReqCore,
    pub matrix: Vec<MatrixRow>,
}

/// The value the order stage agrees on for one sequence number.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Batch {
    pub requests: Vec<ReqCore>,
    /// Time proposed by the primary. The agreed time of batch `n` is
    /// `max(time_n, agreed_time_{n-1} + 1)`, so it increases strictly (LS7) whatever a view
    /// change stitches together.
    pub time: Micros,
    /// PRNG seed handed to the application with the batch.
    pub seed: u64,
}

impl Batch {
    /// The batch a PRE-PREPARE proposes: its requests without their matrix signatures.
    pub fn proposed(requests: &[SignedRequest], time: Micros, seed: u64) -> Batch {
        Batch {
            requests: requests.iter().map(|r| r.core.clone()).collect(),
            time,
            seed,
        }
    }

    pub fn digest(&self, seq: Seq) -> Digest {
        let mut ids = Vec::with_capacity(self.requests.len() * 32);
        for r in &self.requests {
            ids.extend_from_slice(&r.id_digest().0);
        }
        Digest::of_parts(&[
            b"batch",
            &seq.to_le_bytes(),
            &self.time.to_le_bytes(),
            &self.seed.to_le_bytes(),
            &ids,
        ])
    }
}

/// The history hash chain `H_n = hash(H_{n-1}, B_n, t_n)` over agreed batches.
pub fn chain_history(prev: Digest, seq: Seq, batch_digest: Digest, agreed_time: Micros) -> Digest {
    Digest::of_parts(&[
        b"history",
        &prev.0,
        &seq.to_le_bytes(),
        &batch_digest.0,
        &agreed_time.to_le_bytes(),
    ])
}

/// A batch a replica prepared, reported in a view change (PBFT's P set).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PreparedEntry {
    pub seq: Seq,
    pub view: View,
    pub batch: Batch,
}

/// A batch digest a replica accepted a PRE-PREPARE for (PBFT's Q set).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PrePreparedEntry {
    pub seq: Seq,
    pub view: View,
    pub digest: Digest,
}

/// VIEW-CHANGE contents; signed so that the new primary can forward it in NEW-VIEW.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ViewChange {
    pub new_view: View,
    pub replica: OrderId,
    /// The replica's last stable order checkpoint (its low water mark).
    pub stable_seq: Seq,
    pub stable_digest: Digest,
    /// Every order checkpoint the replica holds, stable or not: (seq, digest). Vouching for a
    /// later checkpoint lets a view change start from it even if few saw it become stable.
    pub checkpoints: Vec<(Seq, Digest)>,
    pub prepared: Vec<PreparedEntry>,
    pub pre_prepared: Vec<PrePreparedEntry>,
    /// The sender's incarnation: it grows each time the replica restarts without its records
    /// (docs/protocol.md, "Order replicas that lost their records"). Peers refuse a
    /// VIEW-CHANGE from an older incarnation, so one sent before the records were lost and
    /// delivered late cannot speak for the replica's new life.
    pub incarnation: u64,
}

impl ViewChange {
    pub fn signing_bytes(&self) -> Vec<u8> {
        crate::encode::append(b"plumb view-change v1".to_vec(), self)
    }
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct SignedViewChange {
    pub vc: ViewChange,
    pub signature: Signature,
}

/// A request number executed for a client, as reported to the authentication stage.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Executed {
    pub client: ClientId,
    pub nc: ReqNo,
}

#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Message {
    // ---- client -> authentication
    /// `CLIENT-REQ`. The client is the envelope's sender.
    Request {
        life: Life,
        nc: ReqNo,
        #[serde(with = "serde_bytes")]
        op: Vec<u8>,
    },

    // ---- client -> execution (read-only optimisation, seed 004 §5.5)
    ReadOnly {
        life: Life,
        nc: ReqNo,
        #[serde(with = "serde_bytes")]
        op: Vec<u8>,
    },

    // ---- authentication -> order
    /// `AUTH-REQ`: `macs[o]` authenticates `core.id_digest()` for order replica `o`.
    AuthReq {
        core: ReqCore,
        macs: Vec<Mac>,
    },

    // ---- order <-> order (Zyzzyvark agreement, checkpoints, view change, catch-up)
    PrePrepare {
        view: View,
        seq: Seq,
        requests: Vec<SignedRequest>,
        time: Micros,
        seed: u64,
    },
    Prepare {
        view: View,
        seq: Seq,
        digest: Digest,
    },
    Commit {
        view: View,
        seq: Seq,
        digest: Digest,
    },
    /// Order-stage checkpoint: digest of the order state after committing `seq`.
    Checkpoint {
        seq: Seq,
        digest: Digest,
    },
    ViewChange(SignedViewChange),
    /// The new primary's NEW-VIEW. Signed by that primary over `new_view_signing_bytes`, so
    /// any replica can forward it and nobody else can make one.
    NewView {
        view: View,
        proofs: Vec<SignedViewChange>,
        signature: Signature,
    },
    /// Ask a peer for committed batches from `from` on.
    FetchCommitted {
        from: Seq,
    },
    /// A batch the sender committed, for a lagging peer (accepted on r+1 matching).
    Committed {
        seq: Seq,
        batch: Batch,
    },
    /// Ask a peer for the order state of its stable checkpoint `seq`.
    FetchOrderState {
        seq: Seq,
    },
    OrderState {
        seq: Seq,
        #[serde(with = "serde_bytes")]
        state: Vec<u8>,
    },

    // ---- order -> execution
    /// Committed `NEXT-BATCH`: executed on r+1 matching.
    NextBatch {
        view: View,
        seq: Seq,
        batch: Batch,
    },
    /// `RETRANSMIT`: client `client` retransmitted; `next_seq` is the order stage's next batch.
    Retransmit {
        client: ClientId,
        next_seq: Seq,
    },
    /// `LOAD-CP`: load execution checkpoint `seq` whose token is `token`.
    LoadCp {
        seq: Seq,
        token: Digest,
    },

    // ---- execution -> order
    /// `LAST-EXEC`: the sender has executed every batch below `next`.
    LastExec {
        next: Seq,
    },
    /// `CP-TOKEN`: digest of the execution checkpoint taken after batch `seq`.
    CpToken {
        seq: Seq,
        token: Digest,
    },

    // ---- execution -> authentication
    BatchComplete {
        seq: Seq,
        executed: Vec<Executed>,
    },
    Fetch {
        seq: Seq,
        client: ClientId,
        nc: ReqNo,
        digest: Digest,
    },

    // ---- authentication -> execution
    Command {
        seq: Seq,
        client: ClientId,
        nc: ReqNo,
        #[serde(with = "serde_bytes")]
        op: Vec<u8>,
    },

    // ---- execution -> client
    /// The result of request `nc`; `req` is the executed request's [`request_id`], so the reply
    /// names the operation it answers and not only its number.
    Reply {
        nc: ReqNo,
        req: Digest,
        #[serde(with = "serde_bytes")]
        result: Vec<u8>,
        /// Where the request was executed; correct replicas agree on it as on the result.
        at: Position,
    },
    /// `req` is [`request_id`] of `(client, life, nc, H(op))` for the read-only operation answered.
    ReadOnlyReply {
        nc: ReqNo,
        req: Digest,
        #[serde(with = "serde_bytes")]
        result: Vec<u8>,
        executed: Seq,
    },
    /// Spontaneous server event (unreliable channel, seed 004 §5.5).
    Push {
        event: u64,
        #[serde(with = "serde_bytes")]
        payload: Vec<u8>,
    },

    // ---- execution <-> execution (Figure 6.6)
    FetchExecCp {
        seq: Seq,
    },
    ExecCpState {
        seq: Seq,
        #[serde(with = "serde_bytes")]
        state: Vec<u8>,
    },
    FetchState {
        token: Digest,
    },
    State {
        token: Digest,
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
    },

    // ---- driver level
    /// A client's greeting to a node it connected to, over the nonce the node gave this
    /// connection (`plumb_runtime::handshake`): the node answers that client over this
    /// connection from now on. Consumed by the production driver's router; no protocol effect.
    Hello {
        nonce: [u8; 32],
    },

    // ---- client <-> execution (a client that lost its record, docs/protocol.md "Clients after
    // a crash")
    /// Ask an execution replica for the last request number it executed for the sender.
    LastRequestQuery,
    /// Answer to [`Message::LastRequestQuery`]: the last request number executed for the
    /// receiver (0 if none).
    LastRequest {
        nc: ReqNo,
    },

    // ---- order <-> order: a replica that lost its records rejoins
    /// From a replica that lost its records: "what is the highest sequence number you have
    /// seen?" `nonce` makes the answers fresh; `incarnation` is the asker's new incarnation;
    /// `fence`, once known (0 before), asks the primary to fill idle time with null batches
    /// until a checkpoint at or above it is stable.
    RecoveryQuery {
        nonce: u64,
        incarnation: u64,
        fence: Seq,
    },
    /// The answer: the highest sequence number the sender has seen in any form (applied,
    /// accepted, prepared, voted on, checkpointed), the highest incarnation of the asker it has
    /// seen in a VIEW-CHANGE, and its current view.
    RecoveryReply {
        nonce: u64,
        highest: Seq,
        incarnation: u64,
        view: View,
    },

    // ---- execution <-> order: the read-only gate after a start (docs/protocol.md
    // "Read-only requests")
    /// An execution replica that (re)started asks how far the order stage may have committed.
    ExecProbe {
        nonce: u64,
    },
    /// An order replica's answer: every batch it knows may be committed is at or below `seq`.
    ExecProbeReply {
        nonce: u64,
        seq: Seq,
    },

    // ---- execution <-> execution: object-level state transfer (docs/objects.md)
    /// Ask for the children digests of inner nodes of the object tree of checkpoint `seq`.
    FetchObjectNodes {
        seq: Seq,
        nodes: Vec<ObjectNode>,
    },
    /// Children digests of the asked nodes the sender holds (the receiver checks that they
    /// hash to the node's digest).
    ObjectNodes {
        seq: Seq,
        nodes: Vec<ObjectChildren>,
    },
    /// Ask for objects of checkpoint `seq`; with `proofs`, each comes with its Merkle path.
    FetchObjects {
        seq: Seq,
        ids: Vec<u64>,
        proofs: bool,
    },
    /// Objects of checkpoint `seq` (possibly fewer than asked, to bound the frame).
    Objects {
        seq: Seq,
        objects: Vec<ObjectPayload>,
    },
    /// Ask for the state update from checkpoint `from` to checkpoint `to`: the objects that
    /// differ, each with its proof against `to`'s root (seed 002 §4.8.2).
    FetchStateUpdate {
        from: Seq,
        to: Seq,
    },
    /// The state update from `from` to `to` (every object written between them).
    StateUpdate {
        from: Seq,
        to: Seq,
        writes: Vec<ObjectPayload>,
    },

    // ---- order <-> order
    /// The sender suspects the primary of `view` (Zyzzyva's I-HATE-THE-PRIMARY): a vote for a
    /// view change, not a departure. The view changes once `min(u,r) + 1` replicas suspect it.
    Suspect {
        view: View,
    },

    // ---- client <-> execution: D-Prophecy (seed 000 §3.2; docs/prophecy.md). Last: variants
    // are numbered on the wire, so new ones go at the end.
    /// D-Prophecy's fast read (seed 000 §3.2), sent to every execution replica: `executor`
    /// executes it and answers [`Message::ReadOnlyReply`]; the others answer
    /// [`Message::SketchReply`] from their history of replicated reads.
    FastRead {
        life: Life,
        nc: ReqNo,
        executor: ExecId,
        #[serde(with = "serde_bytes")]
        op: Vec<u8>,
    },
    /// A replica's answer to a [`Message::FastRead`] it does not execute: the digest of the
    /// result of the last ordered execution of the same operation it executed, if it has one.
    /// `req` is [`request_id`] of the read, as for [`Message::ReadOnlyReply`].
    SketchReply {
        nc: ReqNo,
        req: Digest,
        sketch: Option<Digest>,
    },

    // ---- client <-> execution: client speculation (seed 001; docs/speculation.md).
    /// A copy of ordered request `nc` (the same operation the client sent to the
    /// authentication stage) for the one execution replica the client speculates on: it
    /// executes it at once on a speculative copy of its state and answers
    /// [`Message::EarlyReply`]. Only a hint: the request is executed for real when it is
    /// ordered, and the client accepts nothing on an early reply alone.
    EarlyRequest {
        life: Life,
        nc: ReqNo,
        #[serde(with = "serde_bytes")]
        op: Vec<u8>,
    },
    /// One execution replica's speculative answer to [`Message::EarlyRequest`] `nc`; `req` is
    /// [`request_id`] of the request, as for [`Message::Reply`].
    EarlyReply {
        nc: ReqNo,
        req: Digest,
        #[serde(with = "serde_bytes")]
        result: Vec<u8>,
    },

    // ---- execution -> order: batch reports (docs/objects.md "Batch reports").
    /// `EXEC-REPORT`: the sender's reports of batches it executed, oldest first, at most
    /// [`EXEC_REPORTS_MAX`] (sent every few batches and on the catch-up tick).
    ExecReport {
        reports: Vec<BatchReport>,
    },

    // ---- order -> sleeping execution replica (ZZ, docs/zz.md).
    /// `WAKE`: an active execution replica's report of batch `seq` differed from the agreed
    /// one or did not come in time; the sleeper wakes once `r + 1` order replicas ask.
    Wake {
        seq: Seq,
    },
    /// ZZ: an active execution replica's copy of the reply it cached for `client`, sent to
    /// every order replica when one relays the client's retransmission (docs/zz.md "A reply
    /// a client cannot get"). The order replicas compare the actives' copies.
    ReplyCopy {
        client: ClientId,
        nc: ReqNo,
        req: Digest,
        #[serde(with = "serde_bytes")]
        result: Vec<u8>,
        at: Position,
    },
    /// ZZ: an order replica passes on a reply every active execution replica sent it alike;
    /// a client accepts a result `r + 1` order replicas relayed alike.
    RelayedReply {
        nc: ReqNo,
        req: Digest,
        #[serde(with = "serde_bytes")]
        result: Vec<u8>,
        at: Position,
    },
    /// `SLEEP` (ZZ, docs/zz.md "Back to sleep"): at checkpoint `seq` every active and every
    /// woken replica sent the agreed token, so the woken one is not needed; it sleeps again
    /// once `r + 1` order replicas ask.
    Sleep {
        seq: Seq,
    },
    /// Tentative `NEXT-BATCH` (seed 004 §6.2.3, docs/protocol.md "Tentative agreement"): the
    /// sender holds a prepared certificate for `batch` at `(view, seq)`, durably. An execution
    /// replica learns the batch from `n - u` of these matching in one view, a round before
    /// `r + 1` committed [`Message::NextBatch`]es.
    TentativeBatch {
        view: View,
        seq: Seq,
        batch: Batch,
    },

    // ---- execution -> client: selective execution (ODRC, seed 003 §4.2.1; docs/odrc.md).
    /// The digest of the reply to request `nc`, from an execution replica that holds the
    /// reply's digest but not its bytes (it did not run the request: it does not maintain the
    /// objects it touched). A client counts it towards the `r + 1` matching replies once a
    /// full [`Message::Reply`] whose result has this digest, at the same position, is in; it
    /// never completes a request by itself. `req` is [`request_id`], as for
    /// [`Message::Reply`].
    ReplyDigest {
        nc: ReqNo,
        req: Digest,
        /// `Digest::of(result)` of the reply vouched for.
        result: Digest,
        at: Position,
    },

    // ---- authentication -> order, bundled
    /// The `AUTH-REQ`s an authentication replica vouched for in one group commit, for one
    /// order replica: each is what a [`Message::AuthReq`] would carry, and is judged as one.
    /// One frame, one MAC and one wake-up of the order replica for the group instead of one
    /// per request (docs/performance.md). At most [`AUTH_REQS_MAX`]; a longer one is dropped.
    AuthReqs {
        reqs: Vec<Vouched>,
    },
}

/// One request an authentication replica vouches for: the core, and `macs[o]` over
/// `core.id_digest()` for order replica `o` (the row of the matrix signature).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Vouched {
    pub core: ReqCore,
    pub macs: Vec<Mac>,
}

/// Most requests in one [`Message::AuthReqs`]; a longer one is dropped. A group commit
/// holds at most a few hundred events, each vouching for at most one request.
pub const AUTH_REQS_MAX: usize = 512;

/// Most reports in one [`Message::ExecReport`]; a longer one is dropped.
pub const EXEC_REPORTS_MAX: usize = 64;

/// A node of an object tree: `depth` levels below the root, `index` among its depth's nodes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ObjectNode {
    /// Levels below the root (0: the root).
    pub depth: u8,
    /// Index among the `2^depth` nodes of its depth.
    pub index: u64,
}

/// The children digests of an object tree node.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ObjectChildren {
    /// The node asked for.
    pub node: ObjectNode,
    /// Digest of its left child.
    pub left: Digest,
    /// Digest of its right child.
    pub right: Digest,
}

/// One object of a checkpoint: its bytes (`None`: empty) and, if asked, its Merkle path
/// (sibling digests from the leaf up).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ObjectPayload {
    /// The object's id.
    pub id: u64,
    /// Its bytes (`None`: the empty object).
    #[serde(with = "serde_bytes")]
    pub bytes: Option<Vec<u8>>,
    /// Sibling digests from its leaf up to the root, if asked for (else empty).
    pub proof: Vec<Digest>,
}

/// What the primary of `view` signs for a NEW-VIEW carrying `proofs`.
pub fn new_view_signing_bytes(view: View, proofs: &[SignedViewChange]) -> Vec<u8> {
    let mut v = b"plumb new-view v1".to_vec();
    v.extend_from_slice(&view.to_le_bytes());
    crate::encode::append(v, proofs)
}

impl Message {
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Request { .. } => "request",
            Message::ReadOnly { .. } => "read-only",
            Message::FastRead { .. } => "fast-read",
            Message::AuthReq { .. } => "auth-req",
            Message::AuthReqs { .. } => "auth-reqs",
            Message::PrePrepare { .. } => "pre-prepare",
            Message::Prepare { .. } => "prepare",
            Message::Commit { .. } => "commit",
            Message::Checkpoint { .. } => "checkpoint",
            Message::ViewChange(_) => "view-change",
            Message::NewView { .. } => "new-view",
            Message::FetchCommitted { .. } => "fetch-committed",
            Message::Committed { .. } => "committed",
            Message::FetchOrderState { .. } => "fetch-order-state",
            Message::OrderState { .. } => "order-state",
            Message::NextBatch { .. } => "next-batch",
            Message::Retransmit { .. } => "retransmit",
            Message::LoadCp { .. } => "load-cp",
            Message::LastExec { .. } => "last-exec",
            Message::CpToken { .. } => "cp-token",
            Message::BatchComplete { .. } => "batch-complete",
            Message::Fetch { .. } => "fetch",
            Message::Command { .. } => "command",
            Message::Reply { .. } => "reply",
            Message::ReplyDigest { .. } => "reply-digest",
            Message::ReadOnlyReply { .. } => "read-only-reply",
            Message::SketchReply { .. } => "sketch-reply",
            Message::EarlyRequest { .. } => "early-request",
            Message::EarlyReply { .. } => "early-reply",
            Message::ExecReport { .. } => "exec-report",
            Message::Wake { .. } => "wake",
            Message::Sleep { .. } => "sleep",
            Message::TentativeBatch { .. } => "tentative-batch",
            Message::ReplyCopy { .. } => "reply-copy",
            Message::RelayedReply { .. } => "relayed-reply",
            Message::Push { .. } => "push",
            Message::FetchExecCp { .. } => "fetch-exec-cp",
            Message::ExecCpState { .. } => "exec-cp-state",
            Message::FetchState { .. } => "fetch-state",
            Message::State { .. } => "state",
            Message::Hello { .. } => "hello",
            Message::LastRequestQuery => "last-request-query",
            Message::LastRequest { .. } => "last-request",
            Message::RecoveryQuery { .. } => "recovery-query",
            Message::RecoveryReply { .. } => "recovery-reply",
            Message::ExecProbe { .. } => "exec-probe",
            Message::ExecProbeReply { .. } => "exec-probe-reply",
            Message::FetchObjectNodes { .. } => "fetch-object-nodes",
            Message::ObjectNodes { .. } => "object-nodes",
            Message::FetchObjects { .. } => "fetch-objects",
            Message::Objects { .. } => "objects",
            Message::FetchStateUpdate { .. } => "fetch-state-update",
            Message::StateUpdate { .. } => "state-update",
            Message::Suspect { .. } => "suspect",
        }
    }
}
