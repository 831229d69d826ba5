//! The event trace: a running digest of every event (so two runs of one seed can be compared
//! cheaply) and, on request, a compact human-readable log.

use crate::app::SimApp;
use plumb_core::Observation;
use plumb_wire::{Message, Micros};
use std::io::Write;

pub struct Trace {
    digest: u64,
    pub verbose: bool,
}

impl Trace {
    pub fn new(verbose: bool) -> Trace {
        Trace {
            digest: 0xcbf2_9ce4_8422_2325,
            verbose,
        }
    }

    /// Fold `values` into the digest (FNV-1a over 64-bit words, then mixed).
    pub fn fold(&mut self, values: &[u64]) {
        for v in values {
            self.digest ^= *v;
            self.digest = self.digest.wrapping_mul(0x0000_0100_0000_01b3);
            self.digest ^= self.digest >> 29;
        }
    }

    pub fn digest(&self) -> u64 {
        self.digest
    }

    pub fn line(&self, now: Micros, text: std::fmt::Arguments<'_>) {
        if self.verbose {
            // A closed pipe (`| head`) must not turn into a panic report.
            let _ = writeln!(
                std::io::stdout().lock(),
                "{:>4}.{:06} {}",
                now / 1_000_000,
                now % 1_000_000,
                text
            );
        }
    }
}

/// The last eight bytes of a frame (its MAC: a keyed hash of everything before it).
pub fn frame_fingerprint(frame: &[u8]) -> u64 {
    let tail = &frame[frame.len().saturating_sub(8)..];
    let mut b = [0u8; 8];
    b[..tail.len()].copy_from_slice(tail);
    u64::from_le_bytes(b) ^ frame.len() as u64
}

/// A client's life in a trace: its top 16 bits, enough to tell two lives apart by eye.
fn short(life: &plumb_wire::Life) -> String {
    format!("{:04x}", life.0 >> 48)
}

/// A NEXT-BATCH or TENTATIVE-BATCH: view, sequence number, agreed time and requests.
fn batch_line(
    kind: &str,
    view: plumb_wire::View,
    seq: plumb_wire::Seq,
    batch: &plumb_wire::Batch,
) -> String {
    let reqs: Vec<String> = batch
        .requests
        .iter()
        .map(|r| format!("c{}/{}", r.client, r.nc))
        .collect();
    format!(
        "{kind} v={view} n={seq} t={} [{}]",
        batch.time,
        reqs.join(" ")
    )
}

/// A one-line summary of a message; operations and results in `app`'s words.
pub fn describe<A: SimApp>(app: &A, msg: &Message) -> String {
    let op_text = |op: &[u8]| app.op_text(op);
    let result_text = |r: &[u8]| app.result_text(r);
    match msg {
        Message::Request { life, nc, op } => {
            format!("request nc={nc} life={} {}", short(life), op_text(op))
        }
        Message::ReadOnly { life, nc, op } => {
            format!("read-only ro={nc} life={} {}", short(life), op_text(op))
        }
        Message::FastRead {
            life,
            nc,
            executor,
            op,
        } => format!(
            "fast-read ro={nc} life={} executor=e{executor} {}",
            short(life),
            op_text(op)
        ),
        Message::AuthReqs { reqs } => format!(
            "auth-reqs {}",
            reqs.iter()
                .map(|v| format!("c{}:{}", v.core.client, v.core.nc))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Message::AuthReq { core, .. } => format!(
            "auth-req c{} nc={} {:?}",
            core.client,
            core.nc,
            core.op_digest()
        ),
        Message::PrePrepare {
            view,
            seq,
            requests,
            time,
            ..
        } => {
            let reqs: Vec<String> = requests
                .iter()
                .map(|r| format!("c{}/{}", r.core.client, r.core.nc))
                .collect();
            format!("pre-prepare v={view} n={seq} t={time} [{}]", reqs.join(" "))
        }
        Message::Prepare { view, seq, digest } => format!("prepare v={view} n={seq} {digest:?}"),
        Message::Commit { view, seq, digest } => format!("commit v={view} n={seq} {digest:?}"),
        Message::Checkpoint { seq, digest } => format!("checkpoint n={seq} {digest:?}"),
        Message::ViewChange(vc) => format!(
            "view-change v={} from o{} (incarnation {}) stable={} P={} Q={}",
            vc.vc.new_view,
            vc.vc.replica,
            vc.vc.incarnation,
            vc.vc.stable_seq,
            vc.vc.prepared.len(),
            vc.vc.pre_prepared.len()
        ),
        Message::NewView { view, proofs, .. } => {
            format!("new-view v={view} ({} proofs)", proofs.len())
        }
        Message::Suspect { view } => format!("suspect v={view}"),
        Message::FetchCommitted { from } => format!("fetch-committed from={from}"),
        Message::Committed { seq, batch } => format!("committed n={seq} {:?}", batch.digest(*seq)),
        Message::FetchOrderState { seq } => format!("fetch-order-state n={seq}"),
        Message::OrderState { seq, state } => format!("order-state n={seq} {}B", state.len()),
        Message::NextBatch { view, seq, batch } => batch_line("next-batch", *view, *seq, batch),
        Message::TentativeBatch { view, seq, batch } => {
            batch_line("tentative-batch", *view, *seq, batch)
        }
        Message::Retransmit { client, next_seq } => format!("retransmit c{client} next={next_seq}"),
        Message::LoadCp { seq, token } => format!("load-cp n={seq} {token:?}"),
        Message::LastExec { next } => format!("last-exec next={next}"),
        Message::CpToken { seq, token } => format!("cp-token n={seq} {token:?}"),
        Message::ExecReport { reports } => {
            let seqs: Vec<String> = reports.iter().map(|r| r.seq.to_string()).collect();
            format!("exec-report n={}", seqs.join(","))
        }
        Message::Wake { seq } => format!("wake n={seq}"),
        Message::Sleep { seq } => format!("sleep n={seq}"),
        Message::ReplyCopy { client, nc, .. } => format!("reply-copy c{client}/{nc}"),
        Message::RelayedReply { nc, .. } => format!("relayed-reply {nc}"),
        Message::BatchComplete { seq, executed } => {
            format!("batch-complete n={seq} ({} executed)", executed.len())
        }
        Message::Fetch {
            seq,
            client,
            nc,
            digest,
        } => format!("fetch n={seq} c{client}/{nc} {digest:?}"),
        Message::Command {
            seq, client, nc, ..
        } => format!("command n={seq} c{client}/{nc}"),
        Message::Reply {
            nc,
            req,
            result,
            at,
        } => {
            format!(
                "reply nc={nc} req={req:?} at={}.{} {}",
                at.seq,
                at.index,
                result_text(result)
            )
        }
        Message::ReplyDigest { nc, result, at, .. } => {
            format!("reply-digest nc={nc} at={}.{} {result:?}", at.seq, at.index)
        }
        Message::SketchReply { nc, sketch, .. } => {
            format!("sketch-reply nc={nc} {sketch:?}")
        }
        Message::EarlyRequest { life, nc, op } => {
            format!("early-request nc={nc} life={} {}", short(life), op_text(op))
        }
        Message::EarlyReply { nc, result, .. } => {
            format!("early-reply nc={nc} {}", result_text(result))
        }
        Message::ReadOnlyReply {
            nc,
            result,
            executed,
            ..
        } => {
            format!(
                "read-only-reply ro={nc} at={executed} {}",
                result_text(result)
            )
        }
        Message::Push { event, .. } => format!("push {event}"),
        Message::FetchExecCp { seq } => format!("fetch-exec-cp n={seq}"),
        Message::ExecCpState { seq, state } => format!("exec-cp-state n={seq} {}B", state.len()),
        Message::FetchState { token } => format!("fetch-state {token:?}"),
        Message::State { token, data } => format!("state {token:?} {}B", data.len()),
        Message::Hello { .. } => "hello".to_string(),
        Message::LastRequestQuery => "last-request-query".to_string(),
        Message::LastRequest { nc } => format!("last-request nc={nc}"),
        Message::RecoveryQuery {
            nonce,
            incarnation,
            fence,
        } => format!("recovery-query nonce={nonce:x} incarnation={incarnation} fence={fence}"),
        Message::RecoveryReply {
            nonce,
            highest,
            incarnation,
            view,
        } => format!(
            "recovery-reply nonce={nonce:x} highest={highest} incarnation={incarnation} v={view}"
        ),
        Message::ExecProbe { nonce } => format!("exec-probe {nonce:#x}"),
        Message::ExecProbeReply { nonce, seq } => format!("exec-probe-reply {nonce:#x} n={seq}"),
        Message::FetchObjectNodes { seq, nodes } => {
            format!("fetch-object-nodes n={seq} ({} nodes)", nodes.len())
        }
        Message::ObjectNodes { seq, nodes } => {
            format!("object-nodes n={seq} ({} nodes)", nodes.len())
        }
        Message::FetchObjects { seq, ids, .. } => {
            format!("fetch-objects n={seq} ({} objects)", ids.len())
        }
        Message::Objects { seq, objects } => format!("objects n={seq} ({} objects)", objects.len()),
        Message::FetchStateUpdate { from, to } => format!("fetch-state-update {from}..{to}"),
        Message::StateUpdate { from, to, writes } => {
            format!("state-update {from}..{to} ({} writes)", writes.len())
        }
    }
}

pub fn describe_observation(obs: &Observation) -> String {
    match obs {
        Observation::Delivered {
            seq,
            digest,
            agreed_time,
            requests,
            null,
            ..
        } => {
            let reqs: Vec<String> = requests
                .iter()
                .map(|r| format!("c{}/{}", r.client, r.nc))
                .collect();
            let kind = if *null { " null" } else { "" };
            format!(
                "delivered n={seq}{kind} {digest:?} t={agreed_time} [{}]",
                reqs.join(" ")
            )
        }
        other => format!("{other:?}"),
    }
}
