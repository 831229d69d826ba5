//! Reads that are not ordered. Three kinds, all sent straight to execution replicas:
//!
//! - **Read-only requests** (seed 004 §5.5, docs/protocol.md "Read-only requests"): sent to
//!   every execution replica and accepted only if *all* of them return the same bytes. A write
//!   is acknowledged once `r + 1` replicas executed it, so any smaller read quorum could
//!   consist of replicas that have not; a unanimous answer includes a correct replica that
//!   has. On a mismatch or timeout the operation is reissued on the ordered path.
//! - **Fast reads** (Prophecy's `fast(q)`, seed 000 §3.1): sent to one execution replica and
//!   completed with its answer, unverified ([`Answered::Fast`]), or with nothing on timeout
//!   ([`Answered::Unanswered`]). Only a sketcher that checks the answer against its history
//!   (`plumb-prophecy`) may hand it to anyone.
//! - **D-Prophecy reads** (seed 000 §3.2): sent to every execution replica; one executes it,
//!   the others answer the digest of the last ordered answer to the same operation they
//!   executed. Accepted when every replica's digest matches the executed answer: unanimity, for
//!   the reason read-only requests need it (the last ordered read was vouched for by `r + 1`
//!   replicas, of which maybe one correct). Otherwise (a transition, a lagging or lying
//!   replica) the read is reissued on the ordered path, where every replica updates its history.
//!
//! **ZZ mode** (docs/zz.md): read-only requests and D-Prophecy reads are ordered at once
//! (`Client::issue`). Both need every replica that may have acknowledged a write, and a woken
//! sleeper acknowledges writes while no client knows it is awake; unanimity over the actives
//! alone can miss the one correct replica that executed a write
//! (`ProtocolConfig::unanimous_reads_ordered`). Fast reads go to actives only: their answers
//! are checked by the sketcher, not by a quorum, so which active answers does not matter.

use crate::{Client, Outstanding, READ_ONLY_DEADLINE};
use plumb_core::{Action, Answered, DropReason, Micros};
use plumb_crypto::Digest;
use plumb_wire::{request_id, ExecId, Message, Principal, ReqNo, Seq};
use std::collections::HashMap;

/// Which route an operation takes (see [`Client::submit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Ordered: linearizable, for any operation.
    Ordered,
    /// The read-only path: unanimous answers, else ordered. Linearizable.
    ReadOnly,
    /// A fast read executed by execution replica `exec` alone, unverified.
    Fast { exec: ExecId },
    /// A D-Prophecy read executed by `executor` and vouched for by every other replica's
    /// history; else ordered. Delay-once linearizable (seed 000 §4).
    Sketched { executor: ExecId },
    /// Ordered, and also sent to execution replica `early`, which executes it at once on a
    /// speculative copy of its state and answers early ([`plumb_core::Action::Early`]) before
    /// the ordered answer completes it (client speculation, seed 001). Linearizable: only the
    /// completion is agreed.
    Speculative { early: ExecId },
}

impl Route {
    /// [`Route::ReadOnly`] if `read_only`, else [`Route::Ordered`].
    pub fn read_only_if(read_only: bool) -> Route {
        if read_only {
            Route::ReadOnly
        } else {
            Route::Ordered
        }
    }
}

/// Timeouts in a row after which the pause stops doubling: 64 deadlines (32 s at the default
/// 0.5 s), so a client probes a replica that stays down once in that long.
const MAX_PAUSE_DOUBLINGS: u32 = 6;

/// After a read that needs every execution replica's answer timed out, such reads are ordered
/// at once for a while. One execution replica down is a fault the cluster tolerates, but it
/// makes every unanimous read wait out the whole deadline before it is ordered: without the
/// pause each read would take the deadline (0.5 s) plus an ordered request. The pause lasts
/// one deadline after the first timeout and doubles with each timeout in a row (each read
/// after a pause is a probe); a unanimous answer ends the streak. A mismatch does not pause:
/// it costs one round trip, not the deadline.
#[derive(Debug, Default)]
pub(crate) struct ReadOnlyPause {
    until: Micros,
    /// Timeouts since the last unanimous answer.
    streak: u32,
}

impl ReadOnlyPause {
    pub(crate) fn paused(&self, now: Micros) -> bool {
        now < self.until
    }

    fn timed_out(&mut self, now: Micros, deadline: Micros) {
        let pause = deadline.saturating_mul(1 << self.streak.min(MAX_PAUSE_DOUBLINGS));
        self.until = now.saturating_add(pause);
        self.streak = self.streak.saturating_add(1);
    }

    fn answered(&mut self) {
        self.streak = 0;
    }
}

/// How an outstanding unordered read is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadMode {
    Unanimous,
    Fast { exec: ExecId },
    Sketched { executor: ExecId },
}

/// The outstanding unordered read.
#[derive(Debug)]
pub(crate) struct ReadOnly {
    pub(crate) ro: ReqNo,
    pub(crate) op: Vec<u8>,
    /// `H(client, life, ro, H(op))`: only replies naming it answer this read (read-only
    /// numbers start at 1 in every life; a late answer to an earlier life's read names another
    /// life).
    pub(crate) req: Digest,
    pub(crate) mode: ReadMode,
    /// Execution replica -> its result (for D-Prophecy: the executor's only).
    pub(crate) votes: HashMap<ExecId, Vec<u8>>,
    /// D-Prophecy: replica -> the digest its history holds for the operation.
    pub(crate) sketches: HashMap<ExecId, Digest>,
}

impl Client {
    pub(crate) fn start_read_only(&mut self, op: Vec<u8>, mode: ReadMode, out: &mut Vec<Action>) {
        let (life, ro) = (self.life, self.next_ro);
        self.next_ro = ro.next();
        match mode {
            ReadMode::Unanimous => {
                let msg = Message::ReadOnly {
                    life,
                    nc: ro,
                    op: op.clone(),
                };
                self.send_to_all_exec(&msg, out);
            }
            ReadMode::Fast { exec } => {
                let msg = Message::ReadOnly {
                    life,
                    nc: ro,
                    op: op.clone(),
                };
                self.send(Principal::Exec(exec), &msg, out);
            }
            ReadMode::Sketched { executor } => {
                let msg = Message::FastRead {
                    life,
                    nc: ro,
                    executor,
                    op: op.clone(),
                };
                self.send_to_all_exec(&msg, out);
            }
        }
        out.push(Action::SetTimer {
            id: READ_ONLY_DEADLINE,
            after: self.cfg.client_retry_us,
        });
        self.outstanding = Some(Outstanding::ReadOnly(ReadOnly {
            ro,
            req: request_id(self.me, life, ro, Digest::of(&op)),
            op,
            mode,
            votes: HashMap::new(),
            sketches: HashMap::new(),
        }));
    }

    fn send_to_all_exec(&mut self, msg: &Message, out: &mut Vec<Action>) {
        for i in ExecId::all(self.q.exec) {
            self.send(Principal::Exec(i), msg, out);
        }
    }

    /// The outstanding unordered read this answer is for, if it is for one.
    fn pending_read(&mut self, ro: ReqNo, req: Digest) -> Option<&mut ReadOnly> {
        match &mut self.outstanding {
            Some(Outstanding::ReadOnly(p)) if p.ro == ro && p.req == req => Some(p),
            _ => None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_read_only_reply(
        &mut self,
        now: Micros,
        exec: ExecId,
        ro: ReqNo,
        req: Digest,
        result: Vec<u8>,
        executed: Seq,
        out: &mut Vec<Action>,
    ) {
        let unanimity = self.q.read_only();
        let Some(pending) = self.pending_read(ro, req) else {
            self.counters.add("stale-read-only-reply");
            return;
        };
        match pending.mode {
            ReadMode::Unanimous => {
                // Any two different answers (even from one replica) make unanimity impossible.
                if pending.votes.values().any(|v| *v != result) {
                    self.counters.add("read-only-mismatch");
                    self.fall_back_to_ordered(now, out);
                    return;
                }
                pending.votes.insert(exec, result);
                if pending.votes.len() >= unanimity {
                    // Only this path counts it: tests use it to show reads took the
                    // read-only path rather than falling back to the ordered one.
                    self.counters.add("read-only-accepted");
                    self.accept_read(exec, Answered::ReadOnly, out);
                }
            }
            ReadMode::Fast { exec: asked } if asked == exec => {
                pending.votes.insert(exec, result);
                self.accept_read(exec, Answered::Fast { exec, executed }, out);
            }
            ReadMode::Sketched { executor } if executor == exec => {
                pending.votes.insert(exec, result);
                self.settle_sketched(now, out);
            }
            ReadMode::Fast { .. } | ReadMode::Sketched { .. } => {
                self.counters.dropped(DropReason::ReadReplyNotAsked);
            }
        }
    }

    pub(crate) fn on_sketch_reply(
        &mut self,
        now: Micros,
        exec: ExecId,
        ro: ReqNo,
        req: Digest,
        sketch: Option<Digest>,
        out: &mut Vec<Action>,
    ) {
        let Some(pending) = self.pending_read(ro, req) else {
            self.counters.add("stale-sketch-reply");
            return;
        };
        let ReadMode::Sketched { executor } = pending.mode else {
            self.counters.dropped(DropReason::SketchReplyNotAsked);
            return;
        };
        if exec == executor {
            self.counters.dropped(DropReason::SketchReplyNotAsked);
            return;
        }
        match sketch {
            // No history for the read at this replica: it cannot vouch, so this read is
            // replicated (and the replicas' histories learn it).
            None => {
                self.counters.add("sketch-missing");
                self.fall_back_to_ordered(now, out);
            }
            Some(s) => {
                pending.sketches.insert(exec, s);
                self.settle_sketched(now, out);
            }
        }
    }

    /// D-Prophecy: accept once the executor answered and every other replica vouched for
    /// exactly that answer; fall back as soon as any digest disagrees.
    fn settle_sketched(&mut self, now: Micros, out: &mut Vec<Action>) {
        let exec_count = self.q.exec;
        let Some(Outstanding::ReadOnly(pending)) = &self.outstanding else {
            return;
        };
        let ReadMode::Sketched { executor } = pending.mode else {
            return;
        };
        let mut sketches = pending.sketches.values();
        let agreed = match (pending.votes.get(&executor), sketches.next()) {
            (Some(result), _) => Some(Digest::of(result)),
            (None, first) => first.copied(),
        };
        let Some(agreed) = agreed else {
            return;
        };
        if pending.sketches.values().any(|s| *s != agreed) {
            self.counters.add("sketch-mismatch");
            self.fall_back_to_ordered(now, out);
            return;
        }
        if pending.votes.contains_key(&executor) && pending.sketches.len() + 1 >= exec_count {
            self.accept_read(executor, Answered::Sketched { exec: executor }, out);
        }
    }

    fn accept_read(&mut self, exec: ExecId, answered: Answered, out: &mut Vec<Action>) {
        let Some(Outstanding::ReadOnly(mut pending)) = self.outstanding.take() else {
            return;
        };
        out.push(Action::CancelTimer {
            id: READ_ONLY_DEADLINE,
        });
        if matches!(
            pending.mode,
            ReadMode::Unanimous | ReadMode::Sketched { .. }
        ) {
            // Every replica answered: whatever timed out before is back.
            self.read_only_pause.answered();
        }
        let result = pending.votes.remove(&exec).unwrap_or_default();
        out.push(Action::Complete {
            nc: ReqNo::NONE,
            result,
            answered,
        });
    }

    pub(crate) fn on_read_only_deadline(&mut self, now: Micros, out: &mut Vec<Action>) {
        let Some(Outstanding::ReadOnly(pending)) = &self.outstanding else {
            return;
        };
        if let ReadMode::Fast { .. } = pending.mode {
            // A fast read is never reissued here: the sketcher decides what follows.
            self.counters.add("fast-read-timeout");
            self.outstanding = None;
            out.push(Action::Complete {
                nc: ReqNo::NONE,
                result: Vec::new(),
                answered: Answered::Unanswered,
            });
            return;
        }
        self.counters.add("read-only-timeout");
        self.read_only_pause
            .timed_out(now, self.cfg.client_retry_us);
        self.fall_back_to_ordered(now, out);
    }

    /// Reissue the outstanding read as the next ordered request.
    fn fall_back_to_ordered(&mut self, now: Micros, out: &mut Vec<Action>) {
        let Some(Outstanding::ReadOnly(pending)) = self.outstanding.take() else {
            return;
        };
        out.push(Action::CancelTimer {
            id: READ_ONLY_DEADLINE,
        });
        self.start_ordered(now, pending.op, None, out);
    }
}
