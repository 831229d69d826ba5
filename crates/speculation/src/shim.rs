//! The replica side of client speculation: the "shim layer" of seed 001 §5 between the
//! replication library and the application.
//!
//! [`Speculative`] wraps any [`Application`] and
//!
//! - unwraps each request's [`SpecOp`] and executes it only if all its predicates hold against
//!   a log of the replies this replica committed (replica-resolved speculation, §3.2.1), and
//!   otherwise answers [`SpecReply::Aborted`] or [`SpecReply::Retry`] without executing;
//! - truncates that log at deterministic points, so every correct replica decides every
//!   predicate alike (§3.3: "truncating the logs at fixed deterministic intervals");
//! - on the designated execution replica, executes requests *early*, before agreement, on a
//!   fork of the committed state ([`Application::execute_early`]), so a nearby client gets a
//!   first reply after one round trip.
//!
//! # The fork
//!
//! The fork is a fresh instance of the inner application with the committed metadata and a
//! copy of each object an early request's access set names, taken from the committed state
//! the first time a request of the fork needs it (copy per object, so building a fork costs
//! the metadata, not the state). The copies stay right while the fork is valid: every batch
//! that commits replays the front of the fork's queue with the same replies (otherwise the
//! fork is rebuilt), so an object no queued request touched is the same in the committed state
//! as it would be in the fork. A request whose access set is the whole state is not executed
//! early.
//!
//! # What an application under the shim sees
//!
//! Each command of a batch is handed to the inner application alone: a batch of `k` commands
//! becomes `k` calls `inner.execute(seq, &[cmd], nd)` with the same `seq` and `nd`. This is
//! needed because a client pipelines requests on several lanes and a request and one that
//! depends on it may land in the same batch: the second one's predicates must see the first
//! one's reply, so the first must have been executed (and logged) before the second is
//! checked. Applications must therefore accept several calls with one `seq` (they all see the
//! same agreed time and seed, so determinism is kept). Commands whose predicates fail are not
//! passed at all (a no-op, as in the paper). The inner op is passed, not the envelope.
//!
//! # Checkpoints
//!
//! The reply log and the truncation watermarks decide future predicates, so they are state:
//! checkpoints carry them, loading restores them, and [`Application::state_digest`] covers
//! them. The inner application keeps its state as objects ([`ObjectState`]); the shim's
//! objects are the inner ones, and the log travels in the metadata beside the inner
//! application's, so a replica that fetched state decides predicates as one that executed
//! through. The log's size is bounded by the truncation interval, not by the state. An
//! operation's access set is its inner operation's; predicates read only the log.

use crate::envelope::{answer_digest, Predicate, SpecOp, SpecReply};
use plumb_app::codec::{decode_versioned, encode_versioned};
use plumb_app::{
    AccessSet, Application, BatchOutput, Command, LoadError, NonDeterminism, ObjectId, ObjectState,
    ObjectWrite,
};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, ReqNo, Seq};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Client ids that form one speculation group: `client / SPEC_GROUP` names the group. A
/// speculative session uses several consecutive client ids as lanes (the core protocol allows
/// one outstanding request per client id; seed 001 §5 groups up to 100 logical clients in one
/// process for the same reason), and its requests may depend on replies to any of its lanes.
/// A session with every lane of a group goes on past at most this many uncommitted operations,
/// so a chain of dependent operations runs at most `SPEC_GROUP` steps per commit latency: 128
/// lanes take a 15 ms-WAN commit (~117 ms) to ~0.9 ms a step (docs/speculation.md). Every id
/// of a group belongs to one owner: the cluster file refuses ranges of two owners in a group.
pub use plumb_wire::SPEC_GROUP;

/// The most requests the fork holds executed early and not yet committed. Early execution is
/// an optimisation; past this the replica simply stops answering early until batches commit.
pub const MAX_EARLY: usize = 4096;

/// The seq early-executed entries carry in the fork's log until they commit: never truncated.
const PENDING: Seq = Seq::MAX;

/// Whether two client ids are lanes of one speculation group.
pub fn same_group(a: ClientId, b: ClientId) -> bool {
    a / SPEC_GROUP == b / SPEC_GROUP
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    /// [`answer_digest`] of the request's identity and its reply.
    answer: Digest,
    /// The batch it was recorded at (or [`PENDING`] in the fork).
    seq: Seq,
}

/// The log of committed reply digests, per (client, nc), and per client the highest request
/// number truncated away.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplyLog {
    entries: BTreeMap<(ClientId, ReqNo), Entry>,
    watermarks: BTreeMap<ClientId, ReqNo>,
}

impl ReplyLog {
    pub(crate) fn record(&mut self, client: ClientId, nc: ReqNo, answer: Digest, seq: Seq) {
        self.entries.insert((client, nc), Entry { answer, seq });
    }

    pub(crate) fn watermark(&self, client: ClientId) -> ReqNo {
        self.watermarks.get(&client).copied().unwrap_or(ReqNo::NONE)
    }
}

/// What the predicates of a request came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Hold,
    /// Index of the first predicate that failed for good.
    Abort(u16),
    /// Index of the first predicate older than the log, when none failed for good.
    Retry(u16),
}

/// Whether every predicate of a request from `requester` holds against `log`.
///
/// A predicate fails for good (abort) if it names another speculation group (otherwise the
/// log would be an oracle: a client could learn, one guessed digest at a time, what another
/// client was answered, by predicating a harmless request on it), if its (client, nc) is in
/// the log with another digest, or if it is not in the log and above the client's truncation
/// watermark (a reply never committed, a read-only reply, or the request itself). It is too
/// old (retry) if it is not in the log and at or below the watermark. A definite failure
/// wins over a retry: the client rolls the request back anyway, and a retry would make it
/// reissue a request that can only abort.
///
/// Sabotage hook: this is the one place replicas decide whether a predicated request runs.
pub(crate) fn predicates_hold(
    log: &ReplyLog,
    requester: ClientId,
    predicates: &[Predicate],
) -> Verdict {
    #[cfg(feature = "sabotage")]
    if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::PredicatesUnchecked) {
        return Verdict::Hold;
    }
    let mut retry = None;
    for (i, p) in predicates.iter().enumerate() {
        // At most MAX_PREDICATES (64) by decoding, so the index fits.
        let i = i as u16;
        if !same_group(p.client, requester) {
            return Verdict::Abort(i);
        }
        match log.entries.get(&(p.client, p.nc)) {
            Some(e) if e.answer == p.answer => {}
            Some(_) => return Verdict::Abort(i),
            None if p.nc <= log.watermark(p.client) => {
                retry.get_or_insert(i);
            }
            None => return Verdict::Abort(i),
        }
    }
    retry.map_or(Verdict::Hold, Verdict::Retry)
}

/// Drop every entry recorded at or before batch `upto`, raising each client's watermark to the
/// highest request number dropped, so a later predicate on it is answered `Retry` rather than
/// `Aborted` (the client cannot tell an old reply from a wrong one otherwise).
///
/// Sabotage hook: the one place the log shrinks; replicas that truncate differently decide
/// predicates differently.
pub(crate) fn truncate(log: &mut ReplyLog, upto: Seq) {
    let ReplyLog {
        entries,
        watermarks,
    } = log;
    entries.retain(|&(client, nc), e| {
        if e.seq <= upto {
            let w = watermarks.entry(client).or_insert(ReqNo::NONE);
            *w = (*w).max(nc);
            false
        } else {
            true
        }
    });
}

/// Counters for the execution stage and tests. Local observations, not replicated state:
/// checkpoints and state digests do not cover them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpecStats {
    /// Ordered commands executed by the inner application.
    pub executed: u64,
    /// Ordered commands answered `Aborted`.
    pub aborted: u64,
    /// Ordered commands answered `Retry`.
    pub retried: u64,
    /// Ordered commands answered `Malformed`.
    pub malformed: u64,
    /// Forks built from the committed state (the first one included).
    pub fork_rebuilds: u64,
    /// Forks dropped because the committed order or reply differed from the early one.
    pub fork_drops: u64,
    /// Requests executed early on the fork.
    pub early_executions: u64,
    /// Early requests answered again from the queue without executing.
    pub early_repeats: u64,
    /// Committed commands the fork had predicted (same request, same place, same reply).
    pub early_confirmed: u64,
    /// Objects copied from the committed state into a fork.
    pub fork_objects_copied: u64,
    /// Early requests not executed because their access set is the whole state.
    pub early_whole_state: u64,
}

/// A request executed early and not yet committed.
#[derive(Clone, Debug)]
struct Early {
    client: ClientId,
    nc: ReqNo,
    /// The request's identity (its life and op included).
    request: Digest,
    /// The operation itself, to execute it again on a rebuilt fork.
    bytes: Vec<u8>,
    reply: Vec<u8>,
}

/// The speculative copy early execution works on: the inner application and the log as the
/// committed ones would be after the queued requests, in the queue's order. `app` holds the
/// committed metadata and only the objects in `copied` (module docs, "The fork").
struct Fork<A> {
    app: A,
    log: ReplyLog,
    queue: VecDeque<Early>,
    copied: BTreeSet<ObjectId>,
}

impl<A: ObjectState> Fork<A> {
    /// A fork of `committed` and its `log`, on `app`, a fresh instance of the inner
    /// application, holding no object yet; `None` if the committed metadata does not load
    /// (the application cannot read its own format).
    fn new(mut app: A, committed: &A, log: &ReplyLog) -> Option<Fork<A>> {
        // A fresh instance may start with objects of its own: it lets go of them, as a
        // replica loading on demand does.
        for (id, _) in app.take_changed_objects() {
            app.load_object(id, None).ok()?;
        }
        app.load_object_metadata(&committed.object_metadata())
            .ok()?;
        Some(Fork {
            app,
            log: log.clone(),
            queue: VecDeque::new(),
            copied: BTreeSet::new(),
        })
    }

    /// Copy from `committed` the objects `op` (a [`SpecOp`]) may use at `time` and the fork
    /// does not hold yet. False if `op` needs the whole state, or an object does not load.
    fn copy_objects(
        &mut self,
        committed: &A,
        op: &[u8],
        time: Micros,
        stats: &mut SpecStats,
    ) -> bool {
        let Ok((_, op)) = SpecOp::split(op) else {
            // Malformed: answered without touching the application.
            return true;
        };
        let set = self.app.batch_access_set(&[op], time);
        let Some(ids) = set.ids() else {
            stats.early_whole_state += 1;
            return false;
        };
        for &id in ids {
            if self.copied.insert(id) {
                if self
                    .app
                    .load_object(id, committed.object_bytes(id).as_deref())
                    .is_err()
                {
                    return false;
                }
                stats.fork_objects_copied += 1;
            }
        }
        true
    }
}

/// The shim: an [`Application`] whose requests are [`SpecOp`]s and whose replies are
/// [`SpecReply`]s, around an inner application `A` (module docs for what `A` sees).
pub struct Speculative<A> {
    inner: A,
    /// A fresh instance of the inner application, for forks.
    fresh: Arc<dyn Fn() -> A + Send + Sync>,
    truncate_every: u64,
    log: ReplyLog,
    /// The last truncation point: a batch number that is a multiple of `truncate_every`.
    last_truncation: Seq,
    /// The last committed batch and its non-determinism, which early execution borrows; `None`
    /// after a checkpoint load until the next batch (the checkpoint does not carry them).
    last: Option<(Seq, NonDeterminism)>,
    fork: Option<Fork<A>>,
    stats: SpecStats,
    /// Batches and early requests this instance executed since it was built: a local count,
    /// never state. Only the `truncate-nondeterministic` sabotage reads it.
    #[cfg(feature = "sabotage")]
    local_steps: u64,
}

/// What one command came to, for the counters.
enum Ran {
    Executed,
    Aborted,
    Retry,
    Malformed,
}

/// Decode, check and (if the predicates hold) execute one command on `app`, recording the
/// reply's digest in `log` at `record_at`. Shared by committed and early execution so that the
/// fork decides exactly as the committed state would.
fn step<A: Application>(
    app: &mut A,
    log: &mut ReplyLog,
    seq: Seq,
    record_at: Seq,
    cmd: &Command<'_>,
    nd: NonDeterminism,
    pushes: &mut Vec<(ClientId, Vec<u8>)>,
) -> (Ran, Vec<u8>) {
    let (ran, reply) = match SpecOp::split(cmd.op) {
        Err(_) => (Ran::Malformed, SpecReply::Malformed),
        Ok((predicates, op)) => match predicates_hold(log, cmd.client, &predicates) {
            Verdict::Abort(predicate) => (Ran::Aborted, SpecReply::Aborted { predicate }),
            Verdict::Retry(predicate) => (Ran::Retry, SpecReply::Retry { predicate }),
            Verdict::Hold => {
                let one = Command { op, ..*cmd };
                let out = app.execute(seq, &[one], nd);
                pushes.extend(out.pushes);
                // The contract is one reply per command; an application that gives none is
                // answered empty on every replica alike.
                let inner = out.replies.into_iter().next().unwrap_or_default();
                (Ran::Executed, SpecReply::Executed(inner))
            }
        },
    };
    let bytes = reply.encode();
    log.record(
        cmd.client,
        cmd.nc,
        answer_digest(cmd.request, &bytes),
        record_at,
    );
    (ran, bytes)
}

/// 2: log entries are answer digests (request identity and reply); in 1 they were of the
/// reply alone.
const CHECKPOINT_VERSION: u8 = 2;

#[derive(Serialize, Deserialize)]
struct LogState {
    entries: Vec<(ClientId, ReqNo, Digest, Seq)>,
    watermarks: Vec<(ClientId, ReqNo)>,
    last_truncation: Seq,
}

#[derive(Serialize, Deserialize)]
struct Checkpoint {
    inner: Vec<u8>,
    log: LogState,
}

fn corrupt(e: impl ToString) -> LoadError {
    LoadError::Corrupt(format!("speculation checkpoint: {}", e.to_string()))
}

fn decode_checkpoint(bytes: &[u8]) -> Result<Checkpoint, LoadError> {
    decode_versioned(CHECKPOINT_VERSION, bytes).map_err(corrupt)
}

impl<A: Application + ObjectState> Speculative<A> {
    /// Wrap the inner application that `fresh` builds (it builds forks too), truncating the
    /// reply log every `truncate_every` batches (at least 1; 0 is taken as 1). Replies stay in
    /// the log between `truncate_every` and `2 * truncate_every` batches; choose it so that a
    /// client's whole pipeline commits well within that, or its dependent requests come back
    /// `Retry` (§3.2.1: "provided that the log is sufficiently long"). Every replica of a
    /// cluster must use the same value.
    pub fn new(fresh: impl Fn() -> A + Send + Sync + 'static, truncate_every: u64) -> Self {
        Speculative {
            inner: fresh(),
            fresh: Arc::new(fresh),
            truncate_every: truncate_every.max(1),
            log: ReplyLog::default(),
            last_truncation: Seq(0),
            last: Some((Seq(0), NonDeterminism { time: 0, seed: 0 })),
            fork: None,
            stats: SpecStats::default(),
            #[cfg(feature = "sabotage")]
            local_steps: 0,
        }
    }

    pub fn inner(&self) -> &A {
        &self.inner
    }

    pub fn stats(&self) -> SpecStats {
        self.stats
    }

    /// Entries in the committed reply log.
    pub fn log_len(&self) -> usize {
        self.log.entries.len()
    }

    /// The highest request number of `client` truncated from the log.
    pub fn watermark(&self, client: ClientId) -> ReqNo {
        self.log.watermark(client)
    }

    /// The committed answer digest ([`answer_digest`]) logged for (client, nc), if still in
    /// the log.
    pub fn logged(&self, client: ClientId, nc: ReqNo) -> Option<Digest> {
        self.log.entries.get(&(client, nc)).map(|e| e.answer)
    }

    /// Whether an early-execution fork currently exists.
    pub fn has_fork(&self) -> bool {
        self.fork.is_some()
    }

    fn drop_fork(&mut self) {
        if self.fork.take().is_some() {
            self.stats.fork_drops += 1;
        }
    }

    /// The committed order departed from the fork's: start the fork again from the committed
    /// state and execute on it, in their arrival order, the early requests that have not
    /// committed yet. Their clients already have early replies from the old fork (those that
    /// were wrong are corrected by the agreed replies); what matters is that the next early
    /// request sees every request it follows. Just dropped when nothing waits: the next early
    /// request builds a fork.
    fn rebuild_fork(&mut self) {
        let Some(old) = self.fork.take() else {
            return;
        };
        self.stats.fork_drops += 1;
        let Some((last_seq, nd)) = self.last else {
            return;
        };
        // An early request whose number committed with another operation never commits.
        let waiting: Vec<Early> = old
            .queue
            .into_iter()
            .filter(|e| {
                !self.log.entries.contains_key(&(e.client, e.nc))
                    && e.nc > self.log.watermark(e.client)
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        self.stats.fork_rebuilds += 1;
        let Some(mut fork) = Fork::new((self.fresh)(), &self.inner, &self.log) else {
            return;
        };
        let mut discarded = Vec::new();
        for mut e in waiting {
            // A request the new fork cannot run leaves no fork: the ones after it would not
            // see it.
            if !fork.copy_objects(&self.inner, &e.bytes, nd.time, &mut self.stats) {
                return;
            }
            let cmd = Command {
                client: e.client,
                nc: e.nc,
                op: &e.bytes,
                request: e.request,
            };
            let (_, reply) = step(
                &mut fork.app,
                &mut fork.log,
                last_seq + 1,
                PENDING,
                &cmd,
                nd,
                &mut discarded,
            );
            e.reply = reply;
            fork.queue.push_back(e);
        }
        self.fork = Some(fork);
    }

    fn log_state(&self) -> LogState {
        LogState {
            entries: self
                .log
                .entries
                .iter()
                .map(|(&(c, n), e)| (c, n, e.answer, e.seq))
                .collect(),
            watermarks: self.log.watermarks.iter().map(|(&c, &w)| (c, w)).collect(),
            last_truncation: self.last_truncation,
        }
    }
}

impl<A: Application + ObjectState> Application for Speculative<A> {
    fn execute(&mut self, seq: Seq, batch: &[Command<'_>], nd: NonDeterminism) -> BatchOutput {
        let mut replies = Vec::with_capacity(batch.len());
        let mut pushes = Vec::new();
        // Set when the committed order departs from the fork's queue: the fork is rebuilt at
        // the end of the batch.
        let mut stale = false;
        for cmd in batch {
            // The fork stays valid only while the committed order replays its queue exactly.
            // A committed request the fork executed early leaves its queue wherever it is.
            let predicted = match &mut self.fork {
                Some(fork) => {
                    let at = fork.queue.iter().position(|h| {
                        h.client == cmd.client && h.nc == cmd.nc && h.request == cmd.request
                    });
                    if at != Some(0) {
                        stale = true;
                    }
                    at.and_then(|i| fork.queue.remove(i))
                }
                None => None,
            };
            let (ran, bytes) = step(
                &mut self.inner,
                &mut self.log,
                seq,
                seq,
                cmd,
                nd,
                &mut pushes,
            );
            match ran {
                Ran::Executed => self.stats.executed += 1,
                Ran::Aborted => self.stats.aborted += 1,
                Ran::Retry => self.stats.retried += 1,
                Ran::Malformed => self.stats.malformed += 1,
            }
            if let Some(early) = predicted {
                if early.reply == bytes && !stale {
                    self.stats.early_confirmed += 1;
                    if let Some(fork) = &mut self.fork {
                        // Now committed: truncated with the committed log from here on.
                        fork.log.record(
                            cmd.client,
                            cmd.nc,
                            answer_digest(cmd.request, &bytes),
                            seq,
                        );
                    }
                } else {
                    // Other reply (agreed time or seed differ from the ones the fork
                    // borrowed, say), or out of place: the fork's state is not the committed
                    // one.
                    stale = true;
                }
            }
            replies.push(bytes);
        }
        #[cfg_attr(not(feature = "sabotage"), allow(unused_mut))]
        let mut due = seq.is_multiple_of(self.truncate_every);
        #[cfg(feature = "sabotage")]
        {
            // Sabotage: truncate on a count only this instance knows (it includes early
            // executions and restarts from zero), so replicas truncate at different points.
            self.local_steps += 1;
            if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::TruncateNondeterministic) {
                due = self.local_steps.is_multiple_of(self.truncate_every);
            }
        }
        if due {
            let upto = self.last_truncation;
            truncate(&mut self.log, upto);
            if let Some(fork) = &mut self.fork {
                truncate(&mut fork.log, upto);
            }
            self.last_truncation = seq;
        }
        self.last = Some((seq, nd));
        if stale {
            self.rebuild_fork();
        }
        BatchOutput { replies, pushes }
    }

    /// Reads on the read-only path may not carry predicates (they are answered `Aborted`), and
    /// their replies are not logged: replicas answer them at different points of the order,
    /// so a write depending on one could run on some correct replicas and not on others
    /// (seed 001 §3.2.2). Not logging them makes any predicate on them abort everywhere.
    fn execute_read_only(&self, client: ClientId, op: &[u8]) -> Vec<u8> {
        match SpecOp::split(op) {
            Err(_) => SpecReply::Malformed,
            Ok((predicates, _)) if !predicates.is_empty() => SpecReply::Aborted { predicate: 0 },
            Ok((_, op)) => SpecReply::Executed(self.inner.execute_read_only(client, op)),
        }
        .encode()
    }

    /// The inner application's answer for the inner op; a predicated request is never a read,
    /// since its answer depends on the requester's group and the log, not only on the state.
    fn is_read(&self, op: &[u8]) -> bool {
        match SpecOp::split(op) {
            Ok((predicates, op)) => predicates.is_empty() && self.inner.is_read(op),
            Err(_) => false,
        }
    }

    /// Early execution on the fork (module docs). The fork starts from the committed metadata
    /// and log, built on the first early request after it was dropped, copies each object a
    /// request needs from the committed state, and executes early requests in arrival order
    /// with the last committed batch's agreed time and seed; its pushes are discarded
    /// (speculation is never externalised). `None` for a request already committed or
    /// truncated (the reply cache answers it), for one whose (client, nc) was executed early
    /// with another op, for one of the whole state, after a checkpoint load until the next
    /// batch, and when [`MAX_EARLY`] requests wait.
    fn execute_early(&mut self, cmd: Command<'_>) -> Option<Vec<u8>> {
        let (client, nc) = (cmd.client, cmd.nc);
        if let Some(fork) = &self.fork {
            if let Some(e) = fork.queue.iter().find(|e| e.client == client && e.nc == nc) {
                if e.request != cmd.request {
                    return None;
                }
                self.stats.early_repeats += 1;
                return Some(e.reply.clone());
            }
        }
        if self.log.entries.contains_key(&(client, nc)) || nc <= self.log.watermark(client) {
            return None;
        }
        let (last_seq, nd) = self.last?;
        if self
            .fork
            .as_ref()
            .is_some_and(|f| f.queue.len() >= MAX_EARLY)
        {
            return None;
        }
        if self.fork.is_none() {
            // Built from the committed state, and copies of it: the fork must never share
            // anything with the state that commits.
            self.fork = Some(Fork::new((self.fresh)(), &self.inner, &self.log)?);
            self.stats.fork_rebuilds += 1;
        }
        let (inner, stats) = (&self.inner, &mut self.stats);
        let fork = self.fork.as_mut()?;
        if !fork.copy_objects(inner, cmd.op, nd.time, stats) {
            // Objects already copied stay: they are the committed ones.
            return None;
        }
        let mut discarded = Vec::new();
        let (_, bytes) = step(
            &mut fork.app,
            &mut fork.log,
            last_seq + 1,
            PENDING,
            &cmd,
            nd,
            &mut discarded,
        );
        fork.queue.push_back(Early {
            client,
            nc,
            request: cmd.request,
            bytes: cmd.op.to_vec(),
            reply: bytes.clone(),
        });
        stats.early_executions += 1;
        #[cfg(feature = "sabotage")]
        {
            self.local_steps += 1;
        }
        Some(bytes)
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        let cp = Checkpoint {
            inner: self.inner.take_checkpoint(),
            log: self.log_state(),
        };
        encode_versioned(CHECKPOINT_VERSION, &cp)
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        let cp = decode_checkpoint(checkpoint)?;
        self.inner.load_checkpoint(&cp.inner)?;
        self.load_log(cp.log);
        Ok(())
    }

    fn release_checkpoint(&mut self, checkpoint: &[u8]) {
        if let Ok(cp) = decode_checkpoint(checkpoint) {
            self.inner.release_checkpoint(&cp.inner);
        }
    }

    fn fetch_state(&self, token: &Digest) -> Option<Vec<u8>> {
        self.inner.fetch_state(token)
    }

    fn load_state(&mut self, token: &Digest, data: &[u8]) {
        self.inner.load_state(token, data)
    }

    fn state_digest(&self) -> Digest {
        let log = postcard::to_stdvec(&self.log_state()).expect("log encodes");
        Digest::of_parts(&[
            b"plumb-speculation state v1",
            &self.inner.state_digest().0,
            &log,
        ])
    }

    /// The inner application's objects, the log in the metadata (module docs, "Checkpoints").
    fn objects(&mut self) -> Option<&mut dyn ObjectState> {
        Some(self)
    }

    /// [`SpecStats`] for the node's metrics, after the inner application's own: how many
    /// predicated requests aborted or asked for a retry, and how often the early replica's
    /// guess of the order held (an operator's first look when speculation stops paying).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        let mut out = self.inner.counters();
        out.extend([
            ("spec-executed", s.executed),
            ("spec-aborted", s.aborted),
            ("spec-retried", s.retried),
            ("spec-malformed", s.malformed),
            ("spec-fork-rebuilds", s.fork_rebuilds),
            ("spec-fork-drops", s.fork_drops),
            ("spec-early-executions", s.early_executions),
            ("spec-early-repeats", s.early_repeats),
            ("spec-early-confirmed", s.early_confirmed),
            ("spec-fork-objects-copied", s.fork_objects_copied),
            ("spec-early-whole-state", s.early_whole_state),
        ]);
        out
    }
}

/// 1: the inner application's metadata, then the log.
const METADATA_VERSION: u8 = 1;

#[derive(Serialize, Deserialize)]
struct Metadata {
    inner: Vec<u8>,
    log: LogState,
}

impl<A: Application + ObjectState> Speculative<A> {
    /// Adopt a checkpoint's log (whole or object checkpoint alike).
    fn load_log(&mut self, log: LogState) {
        self.log = ReplyLog {
            entries: log
                .entries
                .into_iter()
                .map(|(c, n, answer, seq)| ((c, n), Entry { answer, seq }))
                .collect(),
            watermarks: log.watermarks.into_iter().collect(),
        };
        self.last_truncation = log.last_truncation;
        // The fork was built on the state just replaced; it must never outlive it.
        self.drop_fork();
        self.last = None;
    }
}

/// The inner application's objects; the reply log beside its metadata (module docs).
impl<A: Application + ObjectState> ObjectState for Speculative<A> {
    fn object_id_bits(&self) -> u8 {
        self.inner.object_id_bits()
    }

    fn take_changed_objects(&mut self) -> Vec<ObjectWrite> {
        self.inner.take_changed_objects()
    }

    fn object_bytes(&self, id: ObjectId) -> Option<Vec<u8>> {
        self.inner.object_bytes(id)
    }

    /// Also drops the fork: an object loaded into the committed state (a fetch, a fill) may
    /// be one the fork copied before.
    fn load_object(&mut self, id: ObjectId, bytes: Option<&[u8]>) -> Result<(), LoadError> {
        self.drop_fork();
        self.inner.load_object(id, bytes)
    }

    fn object_metadata(&self) -> Vec<u8> {
        let metadata = Metadata {
            inner: self.inner.object_metadata(),
            log: self.log_state(),
        };
        encode_versioned(METADATA_VERSION, &metadata)
    }

    fn load_object_metadata(&mut self, metadata: &[u8]) -> Result<(), LoadError> {
        let m: Metadata = decode_versioned(METADATA_VERSION, metadata).map_err(corrupt)?;
        self.inner.load_object_metadata(&m.inner)?;
        self.load_log(m.log);
        Ok(())
    }

    /// The inner operation's; a malformed envelope touches nothing.
    fn access_set(&self, op: &[u8]) -> AccessSet {
        match SpecOp::split(op) {
            Ok((_, op)) => self.inner.access_set(op),
            Err(_) => AccessSet::Objects(Vec::new()),
        }
    }

    /// The inner application's set for the batch's inner operations. It covers the shim's
    /// way of running a batch (one call per command, with the batch's seq and time): the
    /// inner application must accept that anyway (module docs).
    fn batch_access_set(&self, ops: &[&[u8]], time: Micros) -> AccessSet {
        let inner: Vec<&[u8]> = ops
            .iter()
            .filter_map(|op| SpecOp::split(op).ok().map(|(_, op)| op))
            .collect();
        self.inner.batch_access_set(&inner, time)
    }
}
