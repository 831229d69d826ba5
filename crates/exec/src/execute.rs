//! Delivering batches to the application (EL1b, ES1-ES3, EL2) and taking checkpoints (ES4).

use crate::checkpoint::{checkpoint_key, CachedReply, ExecCheckpoint};
use crate::learn::Learned;
use crate::{ExecReplica, Held};
use plumb_app::{Application, Command, NonDeterminism};
use plumb_core::{
    Action, DeliveredRequest, Observation, SlowRequest, StallStage, StoreOp, WaitReason,
};
use plumb_crypto::Digest;
use plumb_wire::{
    Batch, BatchReport, ClientId, Message, Micros, Position, Principal, ReqNo, Seq, View,
};

/// Nodes of retired checkpoint trees freed after each batch that takes no checkpoint: a tenth
/// of a millisecond or two. A tree retired at one checkpoint holds the paths of the objects
/// written in one interval, at most `interval * batch_max` writes of a path each (128 * 64 *
/// 23 nodes for one object per request, a bit under 190 000 at the defaults), which 127 batches
/// free at this rate (260 000); what is left when the next tree retires is freed then
/// (`Retired::retire`).
pub(crate) const RETIRED_FREED_PER_BATCH: usize = 2048;

impl<A: Application> ExecReplica<A> {
    /// Deliver every batch from `next_seq` on that is learned and has all its bodies, in order:
    /// batch `n` only ever follows batch `n - 1` (ES1).
    pub(crate) fn execute_ready(&mut self, out: &mut Vec<Action>) {
        if self.rolling_back() {
            // Executing on a state known to be wrong only makes more wrong replies.
            return;
        }
        while self
            .learning
            .learned
            .get(&self.executed.next_seq)
            .is_some_and(Learned::complete)
        {
            // A replica holding part of the state fetches the batch's objects first.
            if !self.objects_ready(self.executed.next_seq, out) {
                break;
            }
            let Some(learned) = self.learning.learned.remove(&self.executed.next_seq) else {
                break;
            };
            self.execute_batch(learned, out);
        }
        if self.fill_deferred() && !self.learning.learned.contains_key(&self.executed.next_seq) {
            // Caught up: the background fill, which stopped while a batch waited, goes on.
            // Only then: restarting a fill whose asks are in flight walked up to 2 560
            // missing subtrees at every call, per batch and per answer.
            self.fill_in_background(out);
        }
        if self.cfg().zz {
            // In ZZ mode the order stage times the actives' reports against each other
            // (docs/zz.md): one waiting for the next few batches would look late.
            self.send_reports(true, out);
        }
        self.forget_below(self.executed.next_seq);
        self.drop_overtaken_load();
    }

    /// The batch's requests waited longer than `slow_request_us` between being learned and
    /// executed: say why.
    fn report_slow(&self, learned: &Learned, out: &mut Vec<Action>) {
        let waited = self.now.saturating_sub(learned.learned_at);
        if waited <= self.cfg().slow_request_us {
            return;
        }
        let reason = if learned.fetch_timer_fired {
            WaitReason::FetchTimer
        } else if self.transfer.loaded_at > learned.learned_at {
            WaitReason::StateTransfer
        } else {
            WaitReason::Execution
        };
        for r in &learned.batch.requests {
            out.push(Action::Observe(Observation::SlowRequest(SlowRequest {
                stage: StallStage::Exec,
                client: r.client,
                nc: r.nc,
                waited,
                reason,
                view: View::ZERO,
            })));
        }
    }

    fn execute_batch(&mut self, learned: Learned, out: &mut Vec<Action>) {
        self.report_slow(&learned, out);
        let seq = self.executed.next_seq;
        let batch = &learned.batch;
        let null = batch.requests.is_empty();
        // A request may be decided at two sequence numbers: pre-prepared at one in an old view,
        // proposed afresh at another by a later primary whose NEW-VIEW did not cover the first,
        // and then the first chosen again by a yet later view change (PBFT leaves exactly-once
        // to execution too). Every correct replica holds the same reply table here (it is part
        // of the checkpoint), so all skip the same copies.
        let fresh: Vec<bool> = batch
            .requests
            .iter()
            .map(|r| {
                r.nc > self
                    .executed
                    .replies
                    .get(&r.client)
                    .map_or(ReqNo::NONE, |c| c.nc)
            })
            .collect();
        if fresh.iter().any(|f| !f) {
            self.counters.add("duplicate-request-skipped");
        }
        // The observation names every request the batch holds, copies too: the simulator
        // tells a copy decided in another view from an order-stage bug (check/sequence.rs).
        let requests: Vec<DeliveredRequest> = batch
            .requests
            .iter()
            .map(|r| DeliveredRequest {
                client: r.client,
                nc: r.nc,
                op: r.op_digest(),
                id: r.id_digest(),
            })
            .collect();
        if !null {
            // docs/protocol.md "Agreed time": strictly increasing whatever the batch times are.
            let agreed = agreed_time(batch, self.executed.agreed_time);
            // Each command with the identity of its request, which its reply names.
            let commands: Vec<Command<'_>> = batch
                .requests
                .iter()
                .zip(&learned.bodies)
                .zip(&fresh)
                .filter(|(_, f)| **f)
                .map(|(rb, _)| rb)
                .filter_map(|(r, body)| {
                    body.as_deref().map(|op| Command {
                        client: r.client,
                        nc: r.nc,
                        op,
                        request: r.id_digest(),
                    })
                })
                .collect();
            self.executed.agreed_time = agreed;
            if commands.is_empty() {
                // Only copies: nothing for the application (it never sees an empty batch).
                let nothing = BatchReport::replies_digest([]);
                self.finish_delivery(seq, &learned, requests, null, nothing, out);
                return;
            }
            let output = self.app.execute(
                seq,
                &commands,
                NonDeterminism {
                    time: agreed,
                    seed: batch.seed,
                },
            );
            if output.replies.len() != commands.len() {
                self.counters.add("app-reply-count-mismatch");
            }
            let replies = BatchReport::replies_digest(output.replies.iter().map(Vec::as_slice));
            for (index, (command, result)) in commands.iter().zip(output.replies).enumerate() {
                if self.sketches.active() && self.app.is_read(command.op) {
                    self.sketches
                        .record(Digest::of(command.op), Digest::of(&result));
                }
                let at = Position {
                    seq,
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                };
                self.reply(command.client, command.nc, command.request, result, at, out);
            }
            for (client, payload) in output.pushes {
                self.push(client, payload, out);
            }
            self.finish_delivery(seq, &learned, requests, null, replies, out);
            return;
        }
        // A null batch (view-change filler) is not given to the application (LS2) and leaves
        // the agreed time unchanged.
        let nothing = BatchReport::replies_digest([]);
        self.finish_delivery(seq, &learned, requests, null, nothing, out);
    }

    /// Batch `seq` is done (`replies`: the digest of what it answered): report it, and take a
    /// checkpoint if one is due.
    fn finish_delivery(
        &mut self,
        seq: Seq,
        learned: &Learned,
        requests: Vec<DeliveredRequest>,
        null: bool,
        replies: Digest,
        out: &mut Vec<Action>,
    ) {
        let writes = self.flush_batch_writes();
        let report = self.reports.batch(seq, replies, writes);
        out.push(Action::Observe(Observation::BatchReported(report)));
        self.send_reports(false, out);
        self.divergence
            .record(seq, requests.iter().map(|r| (r.client, r.nc)).collect());
        out.push(Action::Observe(Observation::Delivered {
            seq,
            digest: learned.digest,
            agreed_time: self.executed.agreed_time,
            requests,
            null,
            seed: learned.batch.seed,
        }));
        self.executed.next_seq = seq + 1;
        if seq.is_multiple_of(self.interval()) {
            self.take_checkpoint(seq, out);
        } else {
            self.transfer.retired.free(RETIRED_FREED_PER_BATCH);
        }
    }

    /// Cache the reply, then send it (EL2, ES3). It names the request it answers (`req`).
    fn reply(
        &mut self,
        client: ClientId,
        nc: ReqNo,
        req: Digest,
        result: Vec<u8>,
        at: Position,
        out: &mut Vec<Action>,
    ) {
        let msg = Message::Reply {
            nc,
            req,
            result: result.clone(),
            at,
        };
        self.executed.replies.insert(
            client,
            CachedReply {
                nc,
                req,
                result,
                at,
            },
        );
        self.send(Principal::Client(client), &msg, out);
    }

    fn push(&mut self, client: ClientId, payload: Vec<u8>, out: &mut Vec<Action>) {
        let id = self.executed.next_push.entry(client).or_insert(1);
        let event = *id;
        *id += 1;
        self.send(
            Principal::Client(client),
            &Message::Push { event, payload },
            out,
        );
    }

    /// ES4: the checkpoint is durable before its token leaves, so the order stage never learns
    /// a token that no correct replica can produce after a power loss.
    fn take_checkpoint(&mut self, seq: Seq, out: &mut Vec<Action>) {
        // With objects: only the objects written since the last checkpoint are hashed, and
        // the checkpoint commits to all of them through the tree's root.
        self.flush_objects();
        let tree = self.objects.as_mut().map(|o| o.live().clone());
        let (app, objects) = match (&tree, self.app.objects()) {
            (Some(tree), Some(app)) => (
                app.object_metadata(),
                Some(crate::ObjectsRoot {
                    bits: tree.bits(),
                    root: tree.root(),
                }),
            ),
            _ => (self.app.take_checkpoint(), None),
        };
        let cp = ExecCheckpoint {
            seq,
            app,
            replies: self.executed.replies.clone(),
            agreed_time: self.executed.agreed_time,
            next_push: self.executed.next_push.clone(),
            objects,
        };
        let bytes = cp.encode();
        let token = ExecCheckpoint::token(&bytes);
        self.reports.anchor(token);
        self.persist_checkpoint(seq, bytes.clone(), tree.as_ref(), out);
        // A replica holding part of the state could not restore this checkpoint after a crash:
        // its token must not count toward making it stable (partial.rs).
        if tree.as_ref().is_none_or(|t| t.is_complete()) {
            self.send_token(seq, token, out);
        }
        out.push(Action::Observe(Observation::CheckpointTaken { seq, token }));
        self.transfer.held.insert(seq, Held { token, bytes, tree });
        self.collect_checkpoints(seq, out);
    }

    /// Make a checkpoint durable: whole, or incrementally with its objects (objects.rs).
    pub(crate) fn persist_checkpoint(
        &mut self,
        seq: Seq,
        bytes: Vec<u8>,
        tree: Option<&plumb_objects::ObjectTree>,
        out: &mut Vec<Action>,
    ) {
        match tree {
            // Part of the objects cannot be written as a delta: the disk keeps the checkpoints
            // from before the on-demand load until the replica holds everything (partial.rs).
            Some(tree) if !tree.is_complete() => {
                self.counters.add("checkpoint-not-persisted-partial")
            }
            Some(tree) => self.persist_object_checkpoint(seq, bytes, tree, out),
            None => self.persist(checkpoint_key(seq), bytes, out),
        }
    }

    /// Keep checkpoints back to `latest - 2 * CP_interval`: the order stage may still name
    /// those in a LOAD-CP (seed 004 §5.3.2 garbage collection).
    pub(crate) fn collect_checkpoints(&mut self, latest: Seq, out: &mut Vec<Action>) {
        let keep_from = latest.minus(2 * self.interval());
        let kept = self.transfer.held.split_off(&keep_from);
        let old = std::mem::replace(&mut self.transfer.held, kept);
        for (seq, held) in old {
            out.push(Action::Store(StoreOp::Delete {
                key: checkpoint_key(seq),
            }));
            self.release_whole_checkpoint(&held);
            if let Some(tree) = held.tree {
                self.transfer.retired.retire(tree);
            }
        }
        // A report on the oldest checkpoint held names the batches of the interval before it.
        let oldest = self.transfer.held.keys().next().copied().unwrap_or(latest);
        self.divergence
            .forget_before(oldest.minus(self.interval()) + 1);
    }
}

/// The agreed time of `batch`, executed after a batch of agreed time `before`
/// (docs/protocol.md "Agreed time"): strictly increasing whatever the batch times are.
pub(crate) fn agreed_time(batch: &Batch, before: Micros) -> Micros {
    batch.time.max(before.saturating_add(1))
}
