//! Byzantine replicas as message mutators. A Byzantine principal runs the correct stage code;
//! the adversary intercepts each frame it sends, opens it with the principal's own keys, alters
//! the message as the principal's [`Behaviour`] says, and reseals it. The result is
//! indistinguishable on the wire from a replica whose code lies: the MACs are valid.

use crate::forgery::{AnyApp, AppForgery};
use crate::{Behaviour, Dice};
use plumb_core::KeyRing;
use plumb_crypto::{Digest, Mac};
use plumb_exec::ExecCheckpoint;
use plumb_wire::{
    new_view_signing_bytes, Batch, Body, Message, OrderId, PrePreparedEntry, PreparedEntry,
    Principal, ReqNo, Seq, SignedRequest, SignedViewChange, View, ViewChange, Vouched,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// What the adversary does with one outgoing frame.
pub enum Outgoing {
    Drop,
    Keep(Vec<u8>),
    Replace(Vec<u8>),
    /// Sent unaltered, this many microseconds late.
    Delay(Vec<u8>, u64),
}

/// A WAKE to every execution replica `ring` has a key for, on an EXEC-REPORT received.
fn wake_everyone(ring: &KeyRing, frame: &[u8]) -> Vec<(Principal, Vec<u8>)> {
    let Ok((Principal::Exec(_), Message::ExecReport { reports })) = ring.open(frame) else {
        return Vec::new();
    };
    let seq = reports.last().map_or(plumb_wire::Seq::ZERO, |r| r.seq);
    (0..u16::MAX)
        .map(|i| Principal::Exec(plumb_wire::ExecId(i)))
        .take_while(|p| ring.knows(*p))
        .filter_map(|p| Some((p, ring.seal(p, &Message::Wake { seq })?)))
        .collect()
}

/// The client a starving order replica ignores.
pub const STARVED_CLIENT: u32 = 0;

/// An equivocation of the batch proposed at one `(view, seq)`.
struct Equivocation {
    requests: Vec<SignedRequest>,
    time: u64,
    digest: Digest,
    /// Per backup: whether it gets the altered batch.
    victims: HashMap<Principal, bool>,
}

pub struct Adversary {
    behaviour: Behaviour,
    /// Order medium quorum `n - u`: how many VIEW-CHANGE proofs a NEW-VIEW needs.
    medium: usize,
    /// Probability of lying in a given message.
    rate: f64,
    rng: Dice,
    equivocations: HashMap<(View, Seq), Option<Equivocation>>,
    /// `RaceNewView`: VIEW-CHANGEs seen per view (the newest few views), and the views raced.
    view_changes: BTreeMap<View, BTreeMap<OrderId, SignedViewChange>>,
    raced: BTreeSet<View>,
    /// The application's vocabulary for lies ([`AnyApp`] unless set with `with_forgery`).
    forgery: Arc<dyn AppForgery>,
    /// `StaleReads`: the operation digest of each unordered read received (by its request
    /// id), and per operation the last two different answers its state gave (older, newer).
    read_ops: HashMap<Digest, Digest>,
    answers: HashMap<Digest, (Option<Vec<u8>>, Vec<u8>)>,
    /// `CreepingExec`: batches reported so far.
    reported: u64,
}

/// `CreepingExec`: batches it reports on time first (a replica that turns slow, not one slow
/// from the start: a sleeper woken early by other faults has gone back to sleep by then).
const CREEP_ON_TIME: u64 = 64;
/// `CreepingExec`: the first lag (under the default floor of the late-report bound, 100 ms),
/// and the most (a minute: longer than any simulated run).
const CREEP_FIRST_US: u64 = 50_000;
const CREEP_MAX_US: u64 = 60_000_000;
/// `CreepingExec`: batches reported at each lag before it doubles. The order replicas' bound
/// is four times the p99 spread, refreshed every 32 spreads: a lag held for 64 batches fills a
/// refresh, so the next lag, twice it, stays under the bound it set, with room for the reports
/// a busy replica gathers before it sends them.
const CREEP_BATCHES: u64 = 64;

/// Reads a stale replica remembers (beyond, it forgets the oldest half at random).
const STALE_READS_KEPT: usize = 4096;

/// How many views a NEW-VIEW racer keeps VIEW-CHANGEs for.
const RACE_VIEWS: usize = 4;

impl Adversary {
    /// `rate`: the probability of lying in a given message; `medium`: the order medium quorum
    /// `n - u`; `seed`: the dice.
    pub fn new(behaviour: Behaviour, rate: f64, medium: usize, seed: u64) -> Adversary {
        Adversary {
            behaviour,
            medium,
            rate,
            rng: Dice::new(seed),
            equivocations: HashMap::new(),
            view_changes: BTreeMap::new(),
            raced: BTreeSet::new(),
            forgery: Arc::new(AnyApp),
            read_ops: HashMap::new(),
            answers: HashMap::new(),
            reported: 0,
        }
    }

    /// Lie in the application's own terms (forged requests, plausible results, well-formed
    /// wrong checkpoints) instead of with corrupted bytes.
    pub fn with_forgery(mut self, forgery: Arc<dyn AppForgery>) -> Adversary {
        self.forgery = forgery;
        self
    }

    /// Frames the principal sends on its own initiative on seeing an incoming frame (already
    /// sealed with its keys). Only a NEW-VIEW racer has any: once it holds `n - u` VIEW-CHANGEs
    /// for a view, it sends every order replica its own NEW-VIEW, a valid subset of them signed
    /// by itself, hoping to install a decision of its choosing before the new primary's arrives.
    pub fn incoming(&mut self, ring: &KeyRing, frame: &[u8]) -> Vec<(Principal, Vec<u8>)> {
        if self.behaviour == Behaviour::StaleReads {
            self.note_read(ring, frame);
            return Vec::new();
        }
        if self.behaviour == Behaviour::WakeSleepers {
            return wake_everyone(ring, frame);
        }
        if self.behaviour != Behaviour::RaceNewView {
            return Vec::new();
        }
        let Ok((_, Message::ViewChange(vc))) = ring.open(frame) else {
            return Vec::new();
        };
        self.race(ring, vc)
    }

    /// `StaleReads`: remember which operation an unordered read asks for.
    fn note_read(&mut self, ring: &KeyRing, frame: &[u8]) {
        let (client, life, nc, op) = match ring.open(frame) {
            Ok((Principal::Client(c), Message::ReadOnly { life, nc, op })) => (c, life, nc, op),
            Ok((Principal::Client(c), Message::FastRead { life, nc, op, .. })) => (c, life, nc, op),
            _ => return,
        };
        if self.read_ops.len() >= STALE_READS_KEPT {
            self.read_ops.clear();
        }
        let op = Digest::of(&op);
        self.read_ops
            .insert(plumb_wire::request_id(client, life, nc, op), op);
    }

    fn race(&mut self, ring: &KeyRing, vc: SignedViewChange) -> Vec<(Principal, Vec<u8>)> {
        let view = vc.vc.new_view;
        if self.raced.contains(&view) {
            return Vec::new();
        }
        self.view_changes
            .entry(view)
            .or_default()
            .insert(vc.vc.replica, vc);
        while self.view_changes.len() > RACE_VIEWS {
            self.view_changes.pop_first();
        }
        let Some(held) = self.view_changes.get(&view) else {
            return Vec::new();
        };
        if held.len() < self.medium {
            return Vec::new();
        }
        self.raced.insert(view);
        while self.raced.len() > RACE_VIEWS {
            self.raced.pop_first();
        }
        let mut proofs: Vec<SignedViewChange> = held.values().cloned().collect();
        // A random valid subset: likely not the one the primary will use.
        while proofs.len() > self.medium {
            proofs.remove(self.rng.index(proofs.len()));
        }
        let signature = ring.sign(&new_view_signing_bytes(view, &proofs));
        let msg = Message::NewView {
            view,
            proofs,
            signature,
        };
        let me = ring.me();
        let peers: BTreeSet<OrderId> = self
            .view_changes
            .values()
            .flat_map(|m| m.keys().copied())
            .collect();
        peers
            .into_iter()
            .map(Principal::Order)
            .filter(|p| *p != me)
            .filter_map(|p| ring.seal(p, &msg).map(|f| (p, f)))
            .collect()
    }

    pub fn behaviour(&self) -> Behaviour {
        self.behaviour
    }

    /// What becomes of a frame the principal whose keys are `ring` sealed.
    pub fn outgoing(&mut self, ring: &KeyRing, frame: Vec<u8>) -> Outgoing {
        if self.behaviour == Behaviour::Silent {
            return Outgoing::Drop;
        }
        let Ok((to, msg)) = ring.open_own(&frame) else {
            return Outgoing::Keep(frame);
        };
        if let (Behaviour::RaceNewView, Message::ViewChange(vc)) = (self.behaviour, &msg) {
            // Its own VIEW-CHANGE counts towards the racer's quorum too. The race itself
            // happens on the next incoming one (`incoming`), which the simulator delivers.
            let view = vc.vc.new_view;
            if !self.raced.contains(&view) {
                self.view_changes
                    .entry(view)
                    .or_default()
                    .insert(vc.vc.replica, vc.clone());
            }
        }
        if let (Behaviour::SlowPrimary(delay), Message::PrePrepare { .. }) = (self.behaviour, &msg)
        {
            return Outgoing::Delay(frame, delay);
        }
        if self.behaviour == Behaviour::CreepingExec {
            if let Some(lag) = self.creep(&msg) {
                return Outgoing::Delay(frame, lag);
            }
        }
        match self.mutate(ring, to, msg) {
            Some(lie) => match ring.seal(to, &lie) {
                Some(f) => Outgoing::Replace(f),
                None => Outgoing::Keep(frame),
            },
            None => Outgoing::Keep(frame),
        }
    }

    /// `CreepingExec`: how long `msg` is held back, if it is one of those held.
    fn creep(&mut self, msg: &Message) -> Option<u64> {
        let lag = |reported: u64| {
            let Some(creeping) = reported.checked_sub(CREEP_ON_TIME) else {
                return 0;
            };
            let mut lag = CREEP_FIRST_US;
            for _ in 0..(creeping / CREEP_BATCHES).min(32) {
                lag = lag.saturating_mul(2).min(CREEP_MAX_US);
            }
            lag
        };
        match msg {
            Message::ExecReport { reports } => {
                let now = lag(self.reported);
                self.reported = self.reported.saturating_add(reports.len() as u64);
                (now > 0).then_some(now)
            }
            Message::Reply { .. } | Message::ReplyCopy { .. } => {
                Some(lag(self.reported)).filter(|l| *l > 0)
            }
            _ => None,
        }
    }

    /// The incoming frame as the principal acts on it, `None` if not at all: a starving
    /// order replica does not see its victim's AUTH-REQs, alone or in an AUTH-REQS.
    pub fn accepts(&self, ring: &KeyRing, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.behaviour != Behaviour::Starve {
            return Some(frame);
        }
        let Ok((from, msg)) = ring.open(&frame) else {
            return Some(frame);
        };
        match msg {
            Message::AuthReq { core, .. } if core.client == STARVED_CLIENT => None,
            Message::AuthReqs { mut reqs }
                if reqs.iter().any(|v| v.core.client == STARVED_CLIENT) =>
            {
                reqs.retain(|v| v.core.client != STARVED_CLIENT);
                if reqs.is_empty() {
                    return None;
                }
                ring.seal_from(from, &Message::AuthReqs { reqs })
            }
            _ => Some(frame),
        }
    }

    fn lie(&mut self) -> bool {
        self.rng.chance(self.rate)
    }

    /// `v` with a forged operation under the same client and number, vouched for as if real.
    fn forge_vouched(&mut self, ring: &KeyRing, v: Vouched) -> Vouched {
        let Vouched { mut core, macs } = v;
        let forged = self.forgery.forged_op(core.nc.0);
        core.body = match core.body {
            Body::Inline(_) => Body::Inline(forged),
            Body::Digest(_) => Body::Digest(Digest::of(&forged)),
        };
        let id = core.id_digest();
        let macs = OrderId::all(macs.len())
            .map(|o| ring.mac_for(Principal::Order(o), &id.0).unwrap_or_default())
            .collect();
        Vouched { core, macs }
    }

    /// The altered message, or `None` to send the original.
    fn mutate(&mut self, ring: &KeyRing, to: Principal, msg: Message) -> Option<Message> {
        match (self.behaviour, msg) {
            (Behaviour::BadMacs, Message::AuthReq { core, macs }) if self.lie() => {
                let macs = macs
                    .into_iter()
                    .map(|m| if self.rng.chance(0.7) { flip_mac(m) } else { m })
                    .collect();
                Some(Message::AuthReq { core, macs })
            }
            (Behaviour::ForgedRequests, Message::AuthReq { core, macs }) if self.lie() => {
                let Vouched { core, macs } = self.forge_vouched(ring, Vouched { core, macs });
                Some(Message::AuthReq { core, macs })
            }
            // In a bundle, each request is lied about as it would be alone.
            (Behaviour::BadMacs, Message::AuthReqs { reqs }) => {
                let reqs = reqs
                    .into_iter()
                    .map(|mut v| {
                        if self.lie() {
                            v.macs = v
                                .macs
                                .into_iter()
                                .map(|m| if self.rng.chance(0.7) { flip_mac(m) } else { m })
                                .collect();
                        }
                        v
                    })
                    .collect();
                Some(Message::AuthReqs { reqs })
            }
            (Behaviour::ForgedRequests, Message::AuthReqs { reqs }) => {
                let reqs = reqs
                    .into_iter()
                    .map(|v| {
                        if self.lie() {
                            self.forge_vouched(ring, v)
                        } else {
                            v
                        }
                    })
                    .collect();
                Some(Message::AuthReqs { reqs })
            }
            (
                Behaviour::ForgedRequests,
                Message::Command {
                    seq, client, nc, ..
                },
            ) if self.lie() => Some(Message::Command {
                seq,
                client,
                nc,
                op: self.forgery.forged_op(nc.0),
            }),
            (
                Behaviour::Equivocate,
                Message::PrePrepare {
                    view,
                    seq,
                    requests,
                    time,
                    seed,
                },
            ) => Some(self.equivocate(to, view, seq, requests, time, seed)),
            (
                Behaviour::InvalidBatch,
                Message::PrePrepare {
                    view,
                    seq,
                    mut requests,
                    time,
                    seed,
                },
            ) if self.lie() && !requests.is_empty() => {
                requests[0].matrix.clear();
                Some(Message::PrePrepare {
                    view,
                    seq,
                    requests,
                    time,
                    seed,
                })
            }
            (Behaviour::Equivocate, Message::Prepare { view, seq, digest }) => {
                Some(Message::Prepare {
                    view,
                    seq,
                    digest: self.equivocated_digest(to, view, seq, digest),
                })
            }
            (
                Behaviour::Equivocate,
                Message::NewView {
                    view, mut proofs, ..
                },
            ) if proofs.len() > self.medium => {
                // Each backup gets its own valid subset of the proofs, signed: different,
                // legitimate inputs to the decision.
                proofs.remove(self.rng.index(proofs.len()));
                let signature = ring.sign(&new_view_signing_bytes(view, &proofs));
                Some(Message::NewView {
                    view,
                    proofs,
                    signature,
                })
            }
            (Behaviour::ForgedViewChange, Message::ViewChange(signed)) if self.lie() => {
                let forged = self.forge_view_change(signed.vc);
                let signature = ring.sign(&forged.signing_bytes());
                Some(Message::ViewChange(SignedViewChange {
                    vc: forged,
                    signature,
                }))
            }
            (Behaviour::Equivocate, Message::Commit { view, seq, digest }) => {
                Some(Message::Commit {
                    view,
                    seq,
                    digest: self.equivocated_digest(to, view, seq, digest),
                })
            }
            (Behaviour::ConflictingVotes, Message::Prepare { view, seq, digest })
                if self.half() =>
            {
                Some(Message::Prepare {
                    view,
                    seq,
                    digest: other_digest(digest),
                })
            }
            (Behaviour::ConflictingVotes, Message::Commit { view, seq, digest }) if self.half() => {
                Some(Message::Commit {
                    view,
                    seq,
                    digest: other_digest(digest),
                })
            }
            (Behaviour::ConflictingVotes, Message::Checkpoint { seq, digest }) if self.half() => {
                Some(Message::Checkpoint {
                    seq,
                    digest: other_digest(digest),
                })
            }
            (Behaviour::WrongNextBatch, Message::NextBatch { view, seq, batch }) if self.lie() => {
                Some(Message::NextBatch {
                    view,
                    seq,
                    batch: self.alter_batch(batch),
                })
            }
            (Behaviour::WrongNextBatch, Message::TentativeBatch { view, seq, batch })
                if self.lie() =>
            {
                Some(Message::TentativeBatch {
                    view,
                    seq,
                    batch: self.alter_batch(batch),
                })
            }
            (Behaviour::WrongNextBatch, Message::Committed { seq, batch }) if self.lie() => {
                Some(Message::Committed {
                    seq,
                    batch: self.alter_batch(batch),
                })
            }
            (Behaviour::WrongNextBatch, Message::LoadCp { seq, token }) if self.lie() => {
                Some(Message::LoadCp {
                    seq,
                    token: other_digest(token),
                })
            }
            (Behaviour::WrongNextBatch, Message::OrderState { seq, state }) if self.lie() => {
                Some(Message::OrderState {
                    seq,
                    state: self.corrupt_bytes(state),
                })
            }
            // A wrong result for the right operation, in full or (for odd numbers, drawing no
            // more randomness) as a digest-only reply that vouches for it (ODRC's form: a
            // client must never complete on digests whose bytes nobody correct sent). Or a
            // reply naming another operation (which tries to make the client believe its
            // number is used and move on). Or the right result at a later position (to make a
            // Prophecy sketcher take it for newer than it is).
            (
                Behaviour::WrongReplies,
                Message::Reply {
                    nc,
                    req,
                    result,
                    at,
                },
            ) if self.lie() => Some(match self.rng.index(3) {
                0 if nc.0 % 2 == 1 => Message::ReplyDigest {
                    nc,
                    req,
                    result: Digest::of(&self.wrong_result(result)),
                    at,
                },
                0 => Message::Reply {
                    nc,
                    req,
                    result: self.wrong_result(result),
                    at,
                },
                1 => Message::Reply {
                    nc,
                    req: other_digest(req),
                    result,
                    at,
                },
                _ => Message::Reply {
                    nc,
                    req,
                    result,
                    at: plumb_wire::Position {
                        seq: at.seq.plus(1000),
                        index: at.index,
                    },
                },
            }),
            // An early reply is only a hint a client may speculate on: a wrong one must cost it
            // a rollback, never a wrong confirmed result.
            (Behaviour::WrongEarlyReplies(pct), Message::EarlyReply { nc, req, result })
                if self.rng.chance(f64::from(pct) / 100.0) =>
            {
                Some(Message::EarlyReply {
                    nc,
                    req,
                    result: self.wrong_result(result),
                })
            }
            // ZZ: a copy for the order replicas that differs from the reply's, half the
            // time; the other half the client's reply is the only lie (docs/zz.md).
            (
                Behaviour::WrongReplies,
                Message::ReplyCopy {
                    client,
                    nc,
                    req,
                    result,
                    at,
                },
            ) if self.lie() && self.rng.chance(0.5) => Some(Message::ReplyCopy {
                client,
                nc,
                req,
                result: self.wrong_result(result),
                at,
            }),
            (Behaviour::WrongReplies, Message::EarlyReply { nc, req, result }) if self.lie() => {
                Some(Message::EarlyReply {
                    nc,
                    req,
                    result: self.wrong_result(result),
                })
            }
            // A replica one change behind: the answer its state gave to the same read before
            // the last change it saw (exactly what a lagging replica would say).
            (
                Behaviour::StaleReads,
                Message::ReadOnlyReply {
                    nc,
                    req,
                    result,
                    executed,
                },
            ) => {
                let op = *self.read_ops.get(&req)?;
                if self.answers.len() >= STALE_READS_KEPT {
                    self.answers.clear();
                }
                let (older, newer) = self
                    .answers
                    .entry(op)
                    .or_insert_with(|| (None, result.clone()));
                if *newer != result {
                    *older = Some(std::mem::replace(newer, result.clone()));
                }
                let stale = older.clone()?;
                Some(Message::ReadOnlyReply {
                    nc,
                    req,
                    result: stale,
                    executed,
                })
            }
            (Behaviour::StaleReads, Message::SketchReply { nc, req, sketch }) => {
                let op = *self.read_ops.get(&req)?;
                let older = self.answers.get(&op)?.0.as_ref()?;
                let stale = Some(Digest::of(older));
                (stale != sketch).then_some(Message::SketchReply {
                    nc,
                    req,
                    sketch: stale,
                })
            }
            // D-Prophecy: vouch for another answer, or for none.
            (Behaviour::WrongReplies, Message::SketchReply { nc, req, sketch }) if self.lie() => {
                Some(Message::SketchReply {
                    nc,
                    req,
                    sketch: match sketch {
                        Some(d) if self.rng.chance(0.5) => Some(other_digest(d)),
                        Some(_) => None,
                        None => Some(other_digest(req)),
                    },
                })
            }
            (
                Behaviour::WrongReplies,
                Message::ReadOnlyReply {
                    nc,
                    req,
                    result,
                    executed,
                },
            ) if self.lie() => Some(Message::ReadOnlyReply {
                nc,
                req,
                result: self.wrong_result(result),
                executed,
            }),
            // A client learning its last request number: claim far more (to open a gap the
            // order stage would refuse) or nothing (to make it reuse a number).
            (Behaviour::WrongReplies, Message::LastRequest { nc }) if self.lie() => {
                Some(Message::LastRequest {
                    nc: match self.rng.index(3) {
                        0 => ReqNo::NONE,
                        1 => nc.plus(1000),
                        _ => ReqNo::MAX,
                    },
                })
            }
            // Batch reports: a wrong reply digest in the first.
            (Behaviour::WrongCheckpoint, Message::ExecReport { mut reports }) if self.lie() => {
                if let Some(r) = reports.first_mut() {
                    r.replies = other_digest(r.replies);
                }
                Some(Message::ExecReport { reports })
            }
            (Behaviour::WrongCheckpoint, Message::CpToken { seq, token }) if self.lie() => {
                Some(Message::CpToken {
                    seq,
                    token: other_digest(token),
                })
            }
            // State transfer is rare: lie in most answers. Not in all: a replica that loads on
            // demand first asks for objects the peer whose copy of the checkpoint verified, so a
            // peer that always lied here was almost never asked, and the objects it corrupts
            // below almost never tested the proofs (the `unverified-object` sabotage went
            // unseen for 301 seeds).
            (Behaviour::WrongCheckpoint, Message::ExecCpState { seq, state })
                if self.rng.chance(0.75) =>
            {
                Some(Message::ExecCpState {
                    seq,
                    state: self.wrong_checkpoint(state),
                })
            }
            (Behaviour::WrongCheckpoint, Message::State { token, data }) => Some(Message::State {
                token,
                data: self.corrupt_bytes(data),
            }),
            // Object-level transfer (docs/objects.md): a wrong digest, wrong object bytes.
            (Behaviour::WrongCheckpoint, Message::ObjectNodes { seq, mut nodes }) => {
                if let Some(n) = nodes.first_mut() {
                    n.left = other_digest(n.left);
                }
                Some(Message::ObjectNodes { seq, nodes })
            }
            (Behaviour::WrongCheckpoint, Message::Objects { seq, mut objects }) => {
                if let Some(o) = objects.first_mut() {
                    let bytes = o.bytes.take().unwrap_or_default();
                    o.bytes = Some(self.corrupt_bytes(bytes));
                }
                Some(Message::Objects { seq, objects })
            }
            (
                Behaviour::WrongCheckpoint,
                Message::StateUpdate {
                    from,
                    to,
                    mut writes,
                },
            ) => {
                if let Some(w) = writes.first_mut() {
                    let bytes = w.bytes.take().unwrap_or_default();
                    w.bytes = Some(self.corrupt_bytes(bytes));
                }
                Some(Message::StateUpdate { from, to, writes })
            }
            _ => None,
        }
    }

    /// Lie to about half of the recipients (scaled by the lying rate).
    fn half(&mut self) -> bool {
        self.rng.chance(0.5) && self.lie()
    }

    /// The pre-prepare `to` gets: the original, or (for the victims of this `(view, seq)`) a
    /// well-formed alternative, with a later time or one request fewer.
    fn equivocate(
        &mut self,
        to: Principal,
        view: View,
        seq: Seq,
        requests: Vec<SignedRequest>,
        time: u64,
        seed: u64,
    ) -> Message {
        let key = (view, seq);
        if !self.equivocations.contains_key(&key) {
            let plan = if self.lie() {
                Some(self.plan_equivocation(seq, &requests, time, seed))
            } else {
                None
            };
            self.equivocations.insert(key, plan);
        }
        let victim_coin = self.rng.chance(0.5);
        let Some(Some(eq)) = self.equivocations.get_mut(&key) else {
            return Message::PrePrepare {
                view,
                seq,
                requests,
                time,
                seed,
            };
        };
        if *eq.victims.entry(to).or_insert(victim_coin) {
            Message::PrePrepare {
                view,
                seq,
                requests: eq.requests.clone(),
                time: eq.time,
                seed,
            }
        } else {
            Message::PrePrepare {
                view,
                seq,
                requests,
                time,
                seed,
            }
        }
    }

    fn plan_equivocation(
        &mut self,
        seq: Seq,
        requests: &[SignedRequest],
        time: u64,
        seed: u64,
    ) -> Equivocation {
        let mut altered = requests.to_vec();
        let mut new_time = time;
        if altered.len() > 1 && self.rng.chance(0.5) {
            // Dropping the last request keeps every remaining client's sequence intact.
            altered.pop();
        } else {
            new_time = time + 1;
        }
        let batch = Batch {
            requests: altered.iter().map(|r| r.core.clone()).collect(),
            time: new_time,
            seed,
        };
        Equivocation {
            digest: batch.digest(seq),
            requests: altered,
            time: new_time,
            victims: HashMap::new(),
        }
    }

    /// A vote consistent with what `to` was told at `(view, seq)`.
    fn equivocated_digest(
        &mut self,
        to: Principal,
        view: View,
        seq: Seq,
        digest: Digest,
    ) -> Digest {
        match self.equivocations.get(&(view, seq)) {
            Some(Some(eq)) if eq.victims.get(&to).copied().unwrap_or(false) => eq.digest,
            _ => digest,
        }
    }

    /// A VIEW-CHANGE that lies, validly signed: a batch prepared in a high view that no one
    /// prepared, amnesia (nothing prepared at all), or a checkpoint no one took.
    fn forge_view_change(&mut self, mut vc: ViewChange) -> ViewChange {
        match self.rng.index(3) {
            0 => {
                let high = View(vc.new_view.0.saturating_sub(1));
                let (seq, batch) = match vc.prepared.last() {
                    Some(p) => (p.seq, self.alter_batch(p.batch.clone())),
                    None => (
                        vc.stable_seq + 1,
                        Batch {
                            requests: Vec::new(),
                            time: 1,
                            seed: 7,
                        },
                    ),
                };
                let digest = batch.digest(seq);
                vc.prepared.retain(|p| p.seq != seq);
                vc.prepared.push(PreparedEntry {
                    seq,
                    view: high,
                    batch,
                });
                vc.pre_prepared.retain(|p| p.seq != seq);
                vc.pre_prepared.push(PrePreparedEntry {
                    seq,
                    view: high,
                    digest,
                });
            }
            1 => {
                vc.prepared.clear();
                vc.pre_prepared.clear();
            }
            _ => {
                let top = vc
                    .checkpoints
                    .iter()
                    .map(|(s, _)| *s)
                    .max()
                    .unwrap_or(vc.stable_seq);
                let seq = top + 1 + self.rng.range(0, 16);
                vc.checkpoints.push((
                    seq,
                    Digest::of_parts(&[b"forged checkpoint", &seq.to_le_bytes()]),
                ));
            }
        }
        vc
    }

    fn alter_batch(&mut self, mut batch: Batch) -> Batch {
        match self.rng.index(3) {
            0 if batch.requests.len() > 1 => {
                batch.requests.pop();
            }
            1 => batch.seed ^= 1,
            _ => batch.time += 1,
        }
        batch
    }

    /// A wrong result: one of the application's plausible results (drawn whether or not it
    /// differs, so the dice roll the same however the application answers), else a bit flip.
    fn wrong_result(&mut self, result: Vec<u8>) -> Vec<u8> {
        let plausible = self.forgery.plausible_results();
        if plausible.is_empty() {
            return self.corrupt_bytes(result);
        }
        let pick = self.rng.index(plausible.len());
        match plausible.into_iter().nth(pick) {
            Some(lie) if lie != result => lie,
            _ => self.corrupt_bytes(result),
        }
    }

    /// A well-formed execution checkpoint with the wrong contents: the application's state
    /// altered by its own forgery (or, for an application without one, a bit flipped in its
    /// part). Only the token check can tell it apart from the real one.
    fn wrong_checkpoint(&mut self, state: Vec<u8>) -> Vec<u8> {
        let Some(mut cp) = ExecCheckpoint::decode(&state) else {
            return self.corrupt_bytes(state);
        };
        if cp.objects.is_some() {
            // The state is in objects, each verified against the root: lie in what only the
            // token covers (an hour later: every later batch then runs at the wrong time).
            cp.agreed_time = cp.agreed_time.saturating_add(3_600_000_000);
            return cp.encode();
        }
        cp.app = match self.forgery.wrong_checkpoint(&cp.app, cp.agreed_time) {
            Some(app) => app,
            None => {
                let app = std::mem::take(&mut cp.app);
                self.corrupt_bytes(app)
            }
        };
        cp.encode()
    }

    fn corrupt_bytes(&mut self, mut bytes: Vec<u8>) -> Vec<u8> {
        if bytes.is_empty() {
            bytes.push(1);
        } else {
            let at = self.rng.index(bytes.len());
            bytes[at] ^= 1 << self.rng.index(8);
        }
        bytes
    }
}

fn flip_mac(mut m: Mac) -> Mac {
    m.0[0] ^= 0xff;
    m
}

fn other_digest(d: Digest) -> Digest {
    Digest::of_parts(&[b"byzantine", &d.0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_crypto::{Identity, PublicIdentity};
    use plumb_wire::{AuthId, ExecId};
    use std::sync::Arc;

    struct KeySet(HashMap<Principal, KeyRing>);

    impl KeySet {
        fn ring(&self, p: Principal) -> Option<&KeyRing> {
            self.0.get(&p)
        }
    }

    fn key_set(q: &Quorums) -> KeySet {
        let mut all: Vec<Principal> = Vec::new();
        all.extend(AuthId::all(q.auth).map(Principal::Auth));
        all.extend(OrderId::all(q.order).map(Principal::Order));
        all.extend(ExecId::all(q.exec).map(Principal::Exec));
        let ids: HashMap<Principal, Arc<Identity>> = all
            .iter()
            .map(|p| {
                let seed = Digest::of(&p.label().to_le_bytes()).0;
                (*p, Arc::new(Identity::from_seed(seed)))
            })
            .collect();
        let dir: Arc<HashMap<Principal, PublicIdentity>> =
            Arc::new(ids.iter().map(|(p, i)| (*p, i.public())).collect());
        KeySet(
            ids.iter()
                .map(|(p, i)| (*p, KeyRing::new(*p, i.clone(), dir.clone())))
                .collect(),
        )
    }
    use plumb_config::{Faults, Quorums};
    use plumb_wire::ReqCore;

    fn signed(client: u32) -> SignedRequest {
        SignedRequest {
            core: ReqCore {
                client,
                life: plumb_wire::Life::default(),
                nc: ReqNo(1),
                body: Body::Inline(vec![client as u8]),
            },
            matrix: vec![],
        }
    }

    fn open(keys: &KeySet, to: Principal, out: Outgoing) -> Message {
        let frame = match out {
            Outgoing::Keep(f) | Outgoing::Replace(f) | Outgoing::Delay(f, _) => f,
            Outgoing::Drop => panic!("dropped"),
        };
        keys.ring(to).unwrap().open(&frame).unwrap().1
    }

    /// Each backup's COMMIT digest matches the batch the equivocating primary showed it, and at
    /// least two backups were shown different batches.
    #[test]
    fn equivocating_primary_is_consistent_per_recipient() {
        let keys = key_set(&Quorums::minimal(Faults::new(2, 1)));
        let primary = Principal::Order(OrderId(0));
        let mut adv = Adversary::new(Behaviour::Equivocate, 1.0, 4, 5);
        let requests = vec![signed(0), signed(1)];
        let pp = Message::PrePrepare {
            view: View(0),
            seq: Seq(1),
            requests: requests.clone(),
            time: 100,
            seed: 9,
        };
        let mut seen = Vec::new();
        for b in 1..6u16 {
            let to = Principal::Order(OrderId(b));
            let frame = keys.ring(primary).unwrap().seal(to, &pp).unwrap();
            let Message::PrePrepare {
                requests,
                time,
                seed,
                ..
            } = open(&keys, to, adv.outgoing(keys.ring(primary).unwrap(), frame))
            else {
                panic!("not a pre-prepare")
            };
            let batch = Batch {
                requests: requests.into_iter().map(|r| r.core).collect(),
                time,
                seed,
            };
            let commit = Message::Commit {
                view: View(0),
                seq: Seq(1),
                digest: Digest::ZERO,
            };
            let frame = keys.ring(primary).unwrap().seal(to, &commit).unwrap();
            let Message::Commit { digest, .. } =
                open(&keys, to, adv.outgoing(keys.ring(primary).unwrap(), frame))
            else {
                panic!("not a commit")
            };
            if digest != Digest::ZERO {
                assert_eq!(
                    digest,
                    batch.digest(Seq(1)),
                    "commit to {to} does not match its batch"
                );
            }
            seen.push(batch.digest(Seq(1)));
        }
        seen.sort();
        seen.dedup();
        assert_eq!(
            seen.len(),
            2,
            "expected two different batches among the backups"
        );
    }

    #[test]
    fn silent_replica_sends_nothing() {
        let keys = key_set(&Quorums::minimal(Faults::new(1, 1)));
        let mut adv = Adversary::new(Behaviour::Silent, 1.0, 3, 1);
        let frame = keys
            .ring(Principal::Exec(ExecId(0)))
            .unwrap()
            .seal(
                Principal::Order(OrderId(0)),
                &Message::LastExec { next: Seq(1) },
            )
            .unwrap();
        assert!(matches!(
            adv.outgoing(keys.ring(Principal::Exec(ExecId(0))).unwrap(), frame),
            Outgoing::Drop
        ));
    }

    #[test]
    fn forged_auth_req_carries_valid_macs_for_another_operation() {
        let keys = key_set(&Quorums::minimal(Faults::new(1, 1)));
        let auth = Principal::Auth(AuthId(0));
        let mut adv = Adversary::new(Behaviour::ForgedRequests, 1.0, 3, 1);
        let core = ReqCore {
            client: 0,
            life: plumb_wire::Life::default(),
            nc: ReqNo(3),
            body: Body::Inline(b"real".to_vec()),
        };
        let msg = Message::AuthReq {
            core: core.clone(),
            macs: vec![Mac::default(); 4],
        };
        let frame = keys
            .ring(auth)
            .unwrap()
            .seal(Principal::Order(OrderId(1)), &msg)
            .unwrap();
        let Message::AuthReq { core: forged, macs } = open(
            &keys,
            Principal::Order(OrderId(1)),
            adv.outgoing(keys.ring(auth).unwrap(), frame),
        ) else {
            panic!("not an auth-req")
        };
        assert_ne!(forged.op_digest(), core.op_digest());
        let ring = keys.ring(Principal::Order(OrderId(1))).unwrap();
        assert!(ring.verify_from(auth, &forged.id_digest().0, &macs[1]));
    }

    /// A forged VIEW-CHANGE still carries a valid signature of its sender, so only the
    /// view-change rule itself can defend against it.
    #[test]
    fn forged_view_change_is_validly_signed_and_differs() {
        let keys = key_set(&Quorums::minimal(Faults::new(1, 1)));
        let o1 = Principal::Order(OrderId(1));
        let ring = keys.ring(o1).unwrap();
        let batch = Batch {
            requests: vec![signed(0).core, signed(1).core],
            time: 50,
            seed: 1,
        };
        let vc = ViewChange {
            new_view: View(3),
            replica: OrderId(1),
            stable_seq: Seq(0),
            stable_digest: Digest::ZERO,
            checkpoints: vec![],
            prepared: vec![PreparedEntry {
                seq: Seq(1),
                view: View(0),
                batch: batch.clone(),
            }],
            pre_prepared: vec![PrePreparedEntry {
                seq: Seq(1),
                view: View(0),
                digest: batch.digest(Seq(1)),
            }],
            incarnation: 0,
        };
        let signature = ring.sign(&vc.signing_bytes());
        let msg = Message::ViewChange(SignedViewChange {
            vc: vc.clone(),
            signature,
        });
        let mut adv = Adversary::new(Behaviour::ForgedViewChange, 1.0, 3, 3);
        for _ in 0..12 {
            let frame = ring.seal(Principal::Order(OrderId(2)), &msg).unwrap();
            let out = adv.outgoing(keys.ring(o1).unwrap(), frame);
            let Message::ViewChange(got) = open(&keys, Principal::Order(OrderId(2)), out) else {
                panic!("not a view change")
            };
            let checker = keys.ring(Principal::Order(OrderId(2))).unwrap();
            assert!(checker.verify_signature(o1, &got.vc.signing_bytes(), &got.signature));
            assert_ne!(got.vc, vc);
        }
    }
}
