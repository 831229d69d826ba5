//! An order replica whose records are missing or damaged rejoins without ever contradicting a
//! vote it cast before it lost them. docs/protocol.md ("Order replicas that lost their
//! records") has the argument; in short:
//!
//! 1. **Classify the store.** Only `plumb init` (or a completed rejoin) writes the genesis
//!    record. A store without it, or with any corrupt record or damaged span not acknowledged
//!    by the last rejoin, is *not* a fresh replica: an empty directory looks exactly like a lost
//!    disk.
//! 2. **New incarnation**, persisted before anything is sent. VIEW-CHANGE messages carry it and
//!    peers refuse older ones, so a VIEW-CHANGE of the lost life delivered late cannot speak for
//!    the new one.
//! 3. **Fence.** With a fresh nonce, ask every peer for the highest sequence number it has seen
//!    in any form; `n - u` answers fix `fence = max + 2 * CP_interval + 1`. Every vote of the
//!    lost life lies below it: a correct replica votes only inside its window (stable + 2
//!    intervals), its stable checkpoint was voted for by `n - u` replicas, and those intersect
//!    any `n - u` answering peers in `r + 1`, one of them correct and at least that far.
//! 4. **No vote** of any kind (pre-prepare, prepare, commit, checkpoint, view change, new view,
//!    catch-up answers, batches to execution) until this replica holds a checkpoint at or above
//!    the fence made stable by `n - u` matching votes of *other* replicas. It learns batches
//!    only from `r + 1` matching COMMITTED answers and state only against stable digests.
//!    Peers fill idle time with null batches so the fence is reached without client load.
//! 5. **Rejoin** in the view `r + 1` peers reported (one is correct): view 0 directly, a later
//!    view through the primary's NEW-VIEW, which peers forward on this replica's VIEW-CHANGE.

use crate::incarnations::Incarnations;
use crate::view_change::VIEW_KEY;
use crate::OrderReplica;
use plumb_core::{storage, Action, DropReason, Micros, Observation, Recovered, StoreOp};
use plumb_wire::{Message, OrderId, Principal, Seq, View};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Written by `plumb init` and by a completed rejoin; a store without it is not trusted.
pub const GENESIS_KEY: &str = "order/genesis";
/// The replica's incarnation, kept apart from the genesis record so that a rejoin that
/// crashes half-way still moves to a higher one next time.
pub(crate) const INCARNATION_KEY: &str = "order/incarnation";

/// The genesis record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Genesis {
    incarnation: u64,
    /// Damaged spans (`?corrupt@...` keys) the storage layer keeps reporting until it compacts
    /// the log: present when this replica last rejoined, so already accounted for.
    acknowledged: Vec<String>,
}

/// The store operations that make a fresh order replica's store (what `plumb init` does).
pub fn genesis() -> Vec<StoreOp> {
    vec![
        StoreOp::Put {
            key: GENESIS_KEY.to_string(),
            value: storage::encode(&Genesis::default()),
        },
        StoreOp::Sync,
    ]
}

/// True when the store is one this replica can resume from: it has the genesis record and no
/// damage beyond what the last rejoin acknowledged. Anything else means records may be lost.
pub fn store_is_intact(rec: &Recovered) -> bool {
    let Some(genesis) = rec
        .records
        .get(GENESIS_KEY)
        .and_then(|b| storage::decode::<Genesis>(b))
    else {
        return false;
    };
    rec.corrupt.iter().all(|k| genesis.acknowledged.contains(k))
}

/// What may leave a rejoining replica: questions, never answers or votes.
pub(crate) fn may_send_while_rejoining(msg: &Message) -> bool {
    matches!(
        msg,
        Message::RecoveryQuery { .. }
            | Message::FetchCommitted { .. }
            | Message::FetchOrderState { .. }
    )
}

/// What a rejoining replica listens to: what it needs to learn the fence, committed batches
/// and stable checkpoints, and requests it will need once it votes again.
fn useful_while_rejoining(msg: &Message) -> bool {
    matches!(
        msg,
        Message::RecoveryReply { .. }
            | Message::RecoveryQuery { .. }
            | Message::Checkpoint { .. }
            | Message::Committed { .. }
            | Message::OrderState { .. }
            | Message::AuthReq { .. }
            | Message::AuthReqs { .. }
            | Message::CpToken { .. }
    )
}

/// Lost records, ours and our peers'.
#[derive(Debug, Default)]
pub(crate) struct Rejoins {
    /// Ours and the highest each peer has shown (incarnations.rs).
    pub incarnations: Incarnations,
    /// Set while this replica recovers from lost records: it casts no vote of any kind.
    pub own: Option<Rejoin>,
    /// What this replica does for peers that rejoin.
    pub helping: Helping,
}

#[derive(Debug)]
pub(crate) struct Rejoin {
    nonce: u64,
    /// Answers to the current nonce: peer -> (highest sequence seen, its view).
    answers: BTreeMap<OrderId, (Seq, View)>,
    /// Once `n - u` peers answered: the fence, and the view to rejoin.
    fenced: Option<(Seq, View)>,
    /// Damaged spans found at start, acknowledged in the genesis record when done.
    damage: Vec<String>,
}

impl Rejoin {
    pub(crate) fn fence(&self) -> Option<Seq> {
        self.fenced.map(|(f, _)| f)
    }
}

/// What this replica does for peers that rejoin: fill idle time with null batches up to their
/// fence (as primary), and answer each one's query at most so often.
#[derive(Debug, Default)]
pub(crate) struct Helping {
    /// Null batches fill idle time through this sequence number.
    fill_until: Seq,
    /// When each rejoining peer's query was last answered, and its nonce (rate limit).
    served: HashMap<OrderId, (u64, Micros)>,
}

impl Helping {
    pub(crate) fn fill_until(&self) -> Seq {
        self.fill_until
    }

    pub(crate) fn fill_to(&mut self, seq: Seq) {
        self.fill_until = self.fill_until.max(seq);
    }

    /// Whether peer `j`'s query with `nonce` is answered now: not if the same query was
    /// answered less than `wait` ago.
    pub(crate) fn answer_due(&mut self, j: OrderId, nonce: u64, now: Micros, wait: Micros) -> bool {
        if self
            .served
            .get(&j)
            .is_some_and(|(n, t)| *n == nonce && now < t + wait)
        {
            return false;
        }
        self.served.insert(j, (nonce, now));
        true
    }
}

impl OrderReplica {
    /// Start-up found no trustworthy store: take a new incarnation and ask peers for the fence.
    pub(crate) fn begin_rejoin(&mut self, now: Micros, rec: Recovered, out: &mut Vec<Action>) {
        let previous = rec
            .records
            .get(INCARNATION_KEY)
            .and_then(|b| storage::decode::<u64>(b))
            .unwrap_or(0);
        // The wall clock is a floor that keeps growing even when the incarnation record is
        // lost with the rest; peers' answers raise it further if they saw a later one.
        self.rejoins.incarnations.begin_new(previous, now);
        let damage: Vec<String> = rec
            .corrupt
            .iter()
            .filter(|k| k.starts_with('?'))
            .cloned()
            .collect();
        self.counters.add("rejoin-started");
        // Nothing of the old records is trusted, and none may come back at a later restart.
        out.push(Action::Store(StoreOp::DeletePrefix {
            prefix: "order/".to_string(),
        }));
        self.persist_incarnation(out);
        self.views.forget_for_rejoin();
        let nonce = self.rng.next_u64();
        self.rejoins.own = Some(Rejoin {
            nonce,
            answers: BTreeMap::new(),
            fenced: None,
            damage,
        });
        out.push(Action::Observe(Observation::Recovering {
            incarnation: self.rejoins.incarnations.own(),
        }));
        self.rejoin_tick(out);
    }

    fn persist_incarnation(&self, out: &mut Vec<Action>) {
        out.push(Action::Store(StoreOp::Put {
            key: INCARNATION_KEY.to_string(),
            value: storage::encode(&self.rejoins.incarnations.own()),
        }));
        out.push(Action::Store(StoreOp::Sync));
    }

    /// Ask (again: messages get lost) every peer.
    pub(crate) fn rejoin_tick(&mut self, out: &mut Vec<Action>) {
        let Some(rj) = &self.rejoins.own else {
            return;
        };
        let msg = Message::RecoveryQuery {
            nonce: rj.nonce,
            incarnation: self.rejoins.incarnations.own(),
            fence: rj.fence().unwrap_or(Seq::ZERO),
        };
        self.send_to_peers(&msg, out);
    }

    /// True if `msg` is dropped because this replica is rejoining.
    pub(crate) fn ignored_while_rejoining(&mut self, msg: &Message) -> bool {
        if self.rejoins.own.is_some() && !useful_while_rejoining(msg) {
            self.counters.dropped(DropReason::WhileRejoining);
            return true;
        }
        false
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_recovery_reply(
        &mut self,
        _now: Micros,
        j: OrderId,
        nonce: u64,
        highest: Seq,
        incarnation: u64,
        view: View,
        out: &mut Vec<Action>,
    ) {
        let medium = self.q().order_medium();
        let small = self.q().small();
        let interval = self.cfg().checkpoint_interval;
        let Some(rj) = self.rejoins.own.as_mut() else {
            return;
        };
        if nonce != rj.nonce || rj.fenced.is_some() {
            self.counters.dropped(DropReason::RecoveryReplyStale);
            return;
        }
        if self.rejoins.incarnations.move_past(incarnation) {
            // A VIEW-CHANGE of ours from a life we do not remember had this incarnation: move
            // past it and ask again (the old answers were given to a replica peers would now
            // refuse).
            rj.nonce = self.rng.next_u64();
            rj.answers.clear();
            self.persist_incarnation(out);
            self.rejoin_tick(out);
            return;
        }
        rj.answers.insert(j, (highest, view));
        if rj.answers.len() < medium {
            return;
        }
        let max = rj
            .answers
            .values()
            .map(|(h, _)| *h)
            .max()
            .unwrap_or(Seq::ZERO);
        let fence = max + 2 * interval + 1;
        let mut views: Vec<View> = rj.answers.values().map(|(_, v)| *v).collect();
        views.sort_unstable_by(|a, b| b.cmp(a));
        // r + 1 peers are in this view or a later one: one of them is correct.
        let view = views.get(small - 1).copied().unwrap_or(View::ZERO);
        rj.fenced = Some((fence, view));
        out.push(Action::Observe(Observation::Fenced { fence }));
        self.rejoin_tick(out);
    }

    /// Done once a checkpoint at or above the fence is stable here (by peers' votes).
    pub(crate) fn maybe_rejoin(&mut self, now: Micros, out: &mut Vec<Action>) {
        let Some((fence, view)) = self.rejoins.own.as_ref().and_then(|rj| rj.fenced) else {
            return;
        };
        if self.checkpoints.stable().seq < fence || self.behind_checkpoint() {
            return;
        }
        let Some(rj) = self.rejoins.own.take() else {
            return;
        };
        debug_assert!(self.state.seq >= fence, "the stable state is applied");
        self.counters.add("rejoined");
        let genesis = Genesis {
            incarnation: self.rejoins.incarnations.own(),
            acknowledged: rj.damage,
        };
        out.push(Action::Store(StoreOp::Put {
            key: GENESIS_KEY.to_string(),
            value: storage::encode(&genesis),
        }));
        let entered = self.views.rejoin_into(view);
        self.put(VIEW_KEY.to_string(), storage::encode(&(view, entered)), out);
        self.sync(out);
        out.push(Action::Observe(Observation::Rejoined {
            stable: self.checkpoints.stable().seq,
        }));
        self.watch.last_progress = now;
        self.log.restart_accepted_at(self.state.seq);
        self.proposer.resume_after(self.state.seq, None);
        if self.views.active() {
            // View 0 has no NEW-VIEW: its slots start from the genesis state.
            self.open_view(now, out);
            out.push(Action::Observe(Observation::ViewEntered {
                view,
                new_view: self.views.new_view_digest(),
            }));
        } else {
            // Ask to be let into `view`: peers already in it forward its NEW-VIEW, and a
            // VIEW-CHANGE from a replica that prepared nothing above its stable checkpoint
            // cannot pull any decision away from what committed.
            let vc = self.own_view_change();
            self.views.keep_own(self.me, vc.clone());
            self.send_to_peers(&Message::ViewChange(vc), out);
        }
    }

    /// A peer lost its records and asks how far the cluster got.
    pub(crate) fn on_recovery_query(
        &mut self,
        now: Micros,
        j: OrderId,
        nonce: u64,
        incarnation: u64,
        fence: Seq,
        out: &mut Vec<Action>,
    ) {
        if self.rejoins.incarnations.note_rejoining(j, incarnation) {
            // Whatever it said in its lost life is void now.
            self.views.forget_older_life(j, incarnation);
        }
        if self.rejoins.own.is_some() {
            // We cannot vouch for anything ourselves.
            return;
        }
        if fence > Seq::ZERO {
            // Fill idle time with null batches up to the checkpoint at or above the fence. A
            // faulty asker can only make the primary order a few intervals of null batches.
            let interval = self.cfg().checkpoint_interval;
            let target = fence.round_up(interval);
            let bound = self.highest_seen() + 4 * interval;
            self.rejoins.helping.fill_to(target.min(bound));
            if self.is_primary() {
                self.try_propose(now, out);
            }
        }
        if !self
            .rejoins
            .helping
            .answer_due(j, nonce, now, self.cfg().catch_up_us / 2)
        {
            return;
        }
        let msg = Message::RecoveryReply {
            nonce,
            highest: self.highest_seen(),
            incarnation: self.rejoins.incarnations.in_view_changes_of(j),
            view: self.views.current(),
        };
        self.send(Principal::Order(j), &msg, out);
    }

    /// The highest sequence number this replica has seen in any form: applied, accepted,
    /// prepared, voted on by a peer, or checkpointed. Every one lies inside the window.
    pub(crate) fn highest_seen(&self) -> Seq {
        let slots = self.log.highest().unwrap_or(Seq::ZERO);
        let checkpoints = self.checkpoints.newest_own().unwrap_or(Seq::ZERO);
        self.state
            .seq
            .max(self.checkpoints.stable().seq)
            .max(slots)
            .max(checkpoints)
            .max(self.log.accepted_upto())
    }
}
