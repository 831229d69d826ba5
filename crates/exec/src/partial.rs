//! Partial state (docs/objects.md "Partial state"): with `load_objects_on_demand`, a replica
//! that must load a checkpoint of an application with objects adopts the checkpoint's root and
//! metadata at once, holding no object, and from then on
//!
//! - before executing a batch, fetches the objects of the batch's access set that it lacks,
//!   each with its proof, from one peer at a time, and executes the batch once they are in
//!   (an operation of the whole state waits for the background fill);
//! - in the background, walks the missing subtrees (their children's digests, then the
//!   objects) until it holds everything again.
//!
//! Everything fetched is checked by [`ObjectTree::fill`] or [`ObjectTree::expand`] against
//! this replica's own tree, which hashes up to the agreed root it loaded and changes since only
//! by batches it executed, each on objects it held: nothing under a missing subtree changed
//! since the load, so a peer's answer from any checkpoint between the load and now verifies,
//! and anything else is refused. A peer that sends something that does not verify is left
//! for the next one.
//!
//! Until it holds everything again the replica neither persists checkpoints nor sends their
//! tokens: the order stage counts a token as a replica able to restore that checkpoint after
//! a crash, which a replica holding part of it cannot. Its disk keeps the checkpoints it had
//! before the load; the first checkpoint after the fill is written as a delta against them.

use crate::checkpoint::ObjectsRoot;
use crate::execute::agreed_time;
use crate::learn::Learned;
use crate::ExecReplica;
use plumb_app::{AccessSet, Application, ObjectId};
use plumb_core::{Action, DropReason, Observation};
use plumb_objects::{FillError, NodePos, ObjectBytes, ObjectTree, Proof};
use plumb_wire::{
    ExecId, Message, Micros, ObjectChildren, ObjectNode, ObjectPayload, Principal, Seq,
};
use std::collections::BTreeSet;

/// Objects the background fill asks for at once (one message's worth:
/// [`crate::object_transfer::OBJECTS_PER_FETCH`]).
const OBJECTS_IN_FLIGHT: usize = crate::object_transfer::OBJECTS_PER_FETCH;
/// Objects asked for at once, the batches' and the background fill's together: the batches
/// always have room for a message's worth beside what the fill asked.
const OBJECTS_IN_FLIGHT_WITH_BATCHES: usize = 2 * OBJECTS_IN_FLIGHT;
/// Missing subtrees whose children are asked for at once by the background fill.
const NODES_IN_FLIGHT: usize = crate::object_transfer::NODES_PER_FETCH;
/// Learned batches after the next one whose objects are asked for with its own.
const LOOKAHEAD: usize = 32;

/// What a replica holding part of the state is fetching, and from whom.
#[derive(Debug)]
pub(crate) struct OnDemand {
    /// Objects asked for and not yet answered (asked again after a catch-up period).
    asked_objects: BTreeSet<ObjectId>,
    /// Missing subtrees whose children were asked for.
    asked_nodes: BTreeSet<NodePos>,
    /// The peer asked; the next one after a catch-up period without progress, or at once
    /// when it sends something that does not verify.
    peer: ExecId,
    progressed: bool,
    /// The background fill stopped for a batch that waits for objects or bodies: it asks for
    /// nothing until [`ExecReplica::execute_ready`] has caught up and restarts it. A fill that
    /// did not stop needs no restart: each answer to what it asked drives it on, and the
    /// catch-up period asks again for what was lost.
    fill_deferred: bool,
    /// What the replica held before the load: a missing subtree whose digest this tree has
    /// too is taken from it instead of fetched ([`ObjectTree::graft`]).
    base: ObjectTree,
}

impl OnDemand {
    fn new(peer: ExecId, base: ObjectTree) -> OnDemand {
        OnDemand {
            asked_objects: BTreeSet::new(),
            asked_nodes: BTreeSet::new(),
            peer,
            progressed: false,
            fill_deferred: false,
            base,
        }
    }
}

/// The objects batch `learned` may use at agreed time `time`
/// ([`plumb_app::ObjectState::batch_access_set`]). Copies of requests already executed are
/// included (harmless: they are fetched, not used). Exact for the next batch to execute, whose
/// agreed time and metadata are known; for a later batch it is computed from today's metadata
/// and its proposed time, a guess that only decides what is fetched ahead.
fn batch_access_set<A: Application>(app: &mut A, learned: &Learned, time: Micros) -> AccessSet {
    let Some(objects) = app.objects() else {
        return AccessSet::All;
    };
    let ops: Vec<&[u8]> = learned.bodies.iter().flatten().map(Vec::as_slice).collect();
    objects.batch_access_set(&ops, time)
}

impl<A: Application> ExecReplica<A> {
    /// Whether the replica holds only part of its objects (it loaded on demand and has not
    /// filled the rest yet).
    pub fn holds_part(&self) -> bool {
        self.objects.as_ref().is_some_and(|o| o.on_demand.is_some())
    }

    /// Load the verified checkpoint `cp` (being loaded by transfer.rs) on demand: adopt its root
    /// and metadata, and execute on.
    pub(crate) fn load_on_demand(&mut self, root: ObjectsRoot, out: &mut Vec<Action>) {
        let Some(loading) = self.transfer.loading.take() else {
            return;
        };
        let peer = self.first_load_peer(&loading);
        let Some((cp, bytes)) = loading.fetched else {
            return;
        };
        let Ok(tree) = ObjectTree::pruned(root.bits, root.root) else {
            self.counters.add("load-cp-object-bits-mismatch");
            return;
        };
        let (Some(state), Some(app)) = (self.objects.as_mut(), self.app.objects()) else {
            return;
        };
        // The application keeps every object it holds (letting go of them and taking back
        // the unchanged ones would cost the whole state at every load): what it holds is the
        // former state, `base`, and a missing subtree it later gets whole is the same there,
        // while one found empty is let go of (`let_go_of_emptied`). Loading again before the
        // fill was done: what the last load's former state still had to give joins the tree
        // first, and where the tree still lacks objects the application holds that state's.
        let base = match state.on_demand.take() {
            Some(previous) => {
                let live = state.live();
                for pos in live.missing_positions(usize::MAX) {
                    live.graft(pos, &previous.base);
                }
                live.with_missing_from(&previous.base)
            }
            None => Some(state.live().clone()),
        };
        // Every load starts from a whole state, and each load's `base` is whole again: the
        // application holds an object for every slot.
        let base = base
            .filter(ObjectTree::is_complete)
            .expect("INV-partial-base: the state held before a load is whole");
        if app.load_object_metadata(&cp.app).is_err() {
            self.counters.add("load-cp-app-rejected");
        }
        // A checkpoint of an empty state gives a tree that is whole at once: no fill finds
        // subtrees empty, so the application lets go of the former state's objects here (sim
        // seed 899 --partial: a replica that loaded while every key was deleted answered
        // reads from the state it held before).
        let emptied: Vec<ObjectId> = if tree.is_complete() {
            base.iter().map(|(id, _)| id).collect()
        } else {
            Vec::new()
        };
        state.replace_live(tree.clone());
        state.on_demand = Some(OnDemand::new(peer, base));
        self.counters.add("load-cp-on-demand");
        self.let_go_of_emptied(emptied);
        self.finish_load(loading.seq, loading.token, cp, bytes, Some(tree), out);
        self.fill_in_background(out);
    }

    /// Whether batch `seq` (learned, with its bodies) may execute now: it may unless this
    /// replica lacks objects the batch may use. What it and the next [`LOOKAHEAD`] learned
    /// batches lack is asked for together, so a run of batches waits about one round trip
    /// rather than one per batch.
    pub(crate) fn objects_ready(&mut self, seq: Seq, out: &mut Vec<Action>) -> bool {
        if !self.holds_part() {
            return true;
        }
        let Some(state) = self.objects.as_ref() else {
            return true;
        };
        let live = state.holding();
        let agreed_before = self.executed.agreed_time;
        let (mut ready, mut needs_all) = (true, false);
        let mut wanted: Vec<ObjectId> = Vec::new();
        for (s, learned) in self.learning.learned.range(seq..).take(LOOKAHEAD) {
            if !learned.complete() {
                continue;
            }
            let time = if *s == seq {
                agreed_time(&learned.batch, agreed_before)
            } else {
                learned.batch.time
            };
            let missing = match batch_access_set(&mut self.app, learned, time).ids() {
                Some(ids) => live.missing_of(ids),
                // The whole state: only the background fill can give it.
                None => {
                    needs_all |= *s == seq && !live.is_complete();
                    Vec::new()
                }
            };
            #[cfg(feature = "sabotage")]
            let missing: Vec<ObjectId> = missing
                .into_iter()
                .filter(|id| !state.unverified.contains(id))
                .collect();
            ready &= *s != seq || missing.is_empty();
            wanted.extend(missing);
            if wanted.len() >= OBJECTS_IN_FLIGHT {
                break;
            }
        }
        if needs_all {
            self.counters.add("on-demand-waits-for-fill");
            self.fill_in_background(out);
            return false;
        }
        if !ready {
            self.counters.add("on-demand-batch-waits");
        }
        self.ask_objects(wanted, OBJECTS_IN_FLIGHT_WITH_BATCHES, out);
        ready
    }

    /// The newest checkpoint this replica holds: what it asks peers to serve objects of.
    fn fetch_seq(&self) -> Seq {
        self.transfer
            .held
            .keys()
            .next_back()
            .copied()
            .unwrap_or(Seq::ZERO)
    }

    /// Ask the current peer for `ids` (those not already in flight), with proofs, as long as
    /// fewer than `limit` objects are in flight.
    fn ask_objects(&mut self, ids: Vec<ObjectId>, limit: usize, out: &mut Vec<Action>) {
        let seq = self.fetch_seq();
        let Some(od) = self.objects.as_mut().and_then(|o| o.on_demand.as_mut()) else {
            return;
        };
        let room = limit.saturating_sub(od.asked_objects.len());
        // `ids` may name an object twice (two batches of the lookahead use it): each is asked
        // once, as it goes into the set.
        let ids: Vec<u64> = ids
            .into_iter()
            .filter(|id| od.asked_objects.insert(*id))
            .take(room)
            .map(|id| id.0)
            .collect();
        let peer = od.peer;
        for chunk in ids.chunks(crate::object_transfer::OBJECTS_PER_FETCH) {
            let msg = Message::FetchObjects {
                seq,
                ids: chunk.to_vec(),
                proofs: true,
            };
            self.send(Principal::Exec(peer), &msg, out);
        }
    }

    /// Take from the state held before the load every missing subtree it holds unchanged (its
    /// digest the same); the application holds their objects already.
    fn graft_from_base(&mut self) {
        let Some(state) = self.objects.as_mut() else {
            return;
        };
        let Some((live, od)) = state.fetching() else {
            return;
        };
        // The application holds them already (load_on_demand): nothing to give it.
        let mut kept = 0;
        for pos in live.missing_positions(NODES_IN_FLIGHT + OBJECTS_IN_FLIGHT) {
            if let Some(ids) = live.graft(pos, &od.base) {
                kept += ids.len() as u64;
            }
        }
        self.counters.add_n("on-demand-objects-kept", kept);
    }

    /// The background fill: keep what did not change since before the load, then, unless a
    /// batch waits for objects of its own, ask for the children of missing subtrees and for
    /// the objects at missing leaves, as much as fits beside what is in flight.
    ///
    /// A batch comes first: the fill asking beside it took the peer's answers, and its
    /// serving budget, for objects nobody waited for. A woken ZZ replica re-executing 40
    /// batches after a 100 MiB checkpoint fetched the whole state before the batches were
    /// done (`plumb bench zz --sizes 100M --dirty 10`: the last dirty batch 1.3 s after the
    /// wake, with the fill complete).
    pub(crate) fn fill_in_background(&mut self, out: &mut Vec<Action>) {
        let held_part = self.holds_part();
        self.graft_from_base();
        if self.finish_fill_if_whole(out) {
            if held_part {
                // Whole through the graft alone: the batch that waited for these objects (or
                // for the whole state, objects_ready) runs now. Nothing else would retry it:
                // a whole replica has no on-demand tick, and NEXT-BATCH and COMMAND for a
                // batch learned with its bodies do not execute (sim seed 205 --zz --u 2:
                // two replicas stopped at a batch of the whole state for good).
                self.execute_ready(out);
            }
            return;
        }
        let deferred = self.next_batch_waits();
        if let Some(od) = self.objects.as_mut().and_then(|o| o.on_demand.as_mut()) {
            od.fill_deferred = deferred;
        }
        if deferred {
            self.counters.add("on-demand-fill-deferred");
            return;
        }
        self.counters.add("on-demand-fill-walked");
        let seq = self.fetch_seq();
        let Some(state) = self.objects.as_mut() else {
            return;
        };
        let bits = state.holding().bits();
        let wanted = state
            .holding()
            .missing_positions(NODES_IN_FLIGHT + OBJECTS_IN_FLIGHT);
        let Some(od) = state.on_demand.as_mut() else {
            return;
        };
        let mut nodes = Vec::new();
        let mut leaves = Vec::new();
        for pos in wanted {
            if pos.depth == bits {
                leaves.push(ObjectId(pos.index));
            } else if od.asked_nodes.len() < NODES_IN_FLIGHT && od.asked_nodes.insert(pos) {
                nodes.push(ObjectNode {
                    depth: pos.depth,
                    index: pos.index,
                });
            }
        }
        let peer = od.peer;
        if !nodes.is_empty() {
            let msg = Message::FetchObjectNodes { seq, nodes };
            self.send(Principal::Exec(peer), &msg, out);
        }
        self.ask_objects(leaves, OBJECTS_IN_FLIGHT, out);
    }

    /// Whether the background fill stopped for a batch (and so waits for
    /// [`ExecReplica::execute_ready`] to restart it once caught up).
    pub(crate) fn fill_deferred(&self) -> bool {
        self.objects
            .as_ref()
            .and_then(|o| o.on_demand.as_ref())
            .is_some_and(|od| od.fill_deferred)
    }

    /// Catch-up period: ask again for whatever is still missing, from the next peer if this
    /// one left something asked unanswered. A peer that answers keeps the background fill's
    /// requests (object_transfer.rs says why); only the objects the next batch waits for are
    /// asked again, a few, so that one lost request does not hold the batch until the fill
    /// is done.
    ///
    /// A peer asked nothing is not left: while the fill waits behind a batch that waits for
    /// its bodies, nothing is asked, and leaving the peer then sent the next batch's objects
    /// to the next in turn, in a woken ZZ replica the crashed active, for another period
    /// (`plumb bench zz --sizes 1G --dirty 10`: four changes of peer in a recovery).
    pub(crate) fn on_demand_tick(&mut self, out: &mut Vec<Action>) {
        let urgent = self.next_batch_missing();
        let next = self
            .objects
            .as_ref()
            .and_then(|o| o.on_demand.as_ref())
            .map(|od| {
                let asked = !od.asked_objects.is_empty() || !od.asked_nodes.is_empty();
                if od.progressed || !asked {
                    od.peer
                } else {
                    self.next_exec_peer(od.peer)
                }
            });
        let Some(od) = self.objects.as_mut().and_then(|o| o.on_demand.as_mut()) else {
            return;
        };
        if let Some(next) = next.filter(|p| *p != od.peer) {
            od.peer = next;
            self.counters.add("on-demand-peer-changed");
        }
        if od.progressed {
            for id in &urgent {
                od.asked_objects.remove(id);
            }
        } else {
            od.asked_objects.clear();
            od.asked_nodes.clear();
        }
        od.progressed = false;
        self.execute_ready(out);
        self.fill_in_background(out);
    }

    /// Whether the next batch is learned and waits for its request bodies or for objects of
    /// its own (not for the whole state, which only the fill gives).
    fn next_batch_waits(&mut self) -> bool {
        let next = self.executed.next_seq;
        match self.learning.learned.get(&next) {
            None => false,
            Some(learned) if !learned.complete() => true,
            Some(_) => !self.next_batch_missing().is_empty(),
        }
    }

    /// The objects the next batch may use that this replica lacks (none if the batch is not
    /// learned with its bodies yet).
    fn next_batch_missing(&mut self) -> Vec<ObjectId> {
        let next = self.executed.next_seq;
        let Some(learned) = self.learning.learned.get(&next).filter(|l| l.complete()) else {
            return Vec::new();
        };
        let time = agreed_time(&learned.batch, self.executed.agreed_time);
        let set = batch_access_set(&mut self.app, learned, time);
        match (set.ids(), self.objects.as_ref()) {
            (Some(ids), Some(state)) => state.holding().missing_of(ids),
            _ => Vec::new(),
        }
    }

    /// Peer `e` answered something that does not verify: if it is the one asked, ask the next.
    fn leave_peer_on_demand(&mut self, e: ExecId) {
        let next = self.next_exec_peer(e);
        let Some(od) = self.objects.as_mut().and_then(|o| o.on_demand.as_mut()) else {
            return;
        };
        if od.peer == e {
            od.peer = next;
            od.asked_objects.clear();
            od.asked_nodes.clear();
            self.counters.add("on-demand-peer-changed");
        }
    }

    /// OBJECTS answering [`ExecReplica::ask_objects`]: each object is held once its proof
    /// leads to the digest of the missing subtree it lies in, then given to the application.
    pub(crate) fn on_objects_on_demand(
        &mut self,
        e: ExecId,
        objects: Vec<ObjectPayload>,
        out: &mut Vec<Action>,
    ) {
        let before = self.executed.next_seq;
        let mut lied = false;
        let mut emptied = Vec::new();
        for p in objects {
            let id = ObjectId(p.id);
            let Some(state) = self.objects.as_mut() else {
                return;
            };
            let Some((live, od)) = state.fetching() else {
                self.counters.dropped(DropReason::ObjectsUnrequested);
                return;
            };
            if !od.asked_objects.remove(&id) {
                self.counters.dropped(DropReason::ObjectUnrequested);
                continue;
            }
            let bytes: Option<ObjectBytes> = p.bytes.filter(|b| !b.is_empty()).map(Into::into);
            let proof = Proof { siblings: p.proof };
            let around = live.missing_around(id);
            match live.fill(id, bytes.clone(), &proof) {
                Ok(filled) => {
                    od.progressed = true;
                    if let (true, Some(around)) = (filled, around) {
                        // The proof's siblings below the subtree it filled: the empty ones
                        // are known empty from now on.
                        let bits = live.bits();
                        for depth in around.depth + 1..=bits {
                            let sibling = NodePos {
                                depth,
                                index: (id.0 >> (bits - depth)) ^ 1,
                            };
                            if live.is_empty_at(sibling) {
                                emptied.extend(od.base.objects_under(sibling));
                            }
                        }
                    }
                    if filled {
                        self.use_fetched_object(before, id, bytes, out);
                    }
                }
                // Held already with other bytes: an answer that came after the object was
                // taken from the former state and written since; not a lie.
                Err(FillError::HeldOtherwise(_)) => {
                    self.counters.add("on-demand-object-stale");
                }
                Err(_) => {
                    lied = true;
                    self.counters.dropped(DropReason::ObjectBadProof);
                    #[cfg(feature = "sabotage")]
                    if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::UnverifiedObject) {
                        // The breakage: the object is used although its proof failed.
                        state.unverified.insert(id);
                        self.use_fetched_object(before, id, bytes, out);
                    }
                }
            }
        }
        self.let_go_of_emptied(emptied);
        if lied {
            self.leave_peer_on_demand(e);
        }
        self.after_fill(out);
    }

    /// The application lets go of objects `ids` of the state it held before the load, which
    /// lie in subtrees now known to be empty: it still held them (load_on_demand), and the
    /// tree says they are held, empty, so a batch would use them as they are.
    fn let_go_of_emptied(&mut self, ids: Vec<ObjectId>) {
        if ids.is_empty() {
            return;
        }
        #[cfg(feature = "sabotage")]
        if plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::EmptiedObjectKept) {
            return;
        }
        let Some(app) = self.app.objects() else {
            return;
        };
        let mut ok = true;
        for id in &ids {
            ok &= app.load_object(*id, None).is_ok();
        }
        if !ok {
            self.counters.add("on-demand-app-rejected");
        }
        self.counters
            .add_n("on-demand-objects-emptied", ids.len() as u64);
    }

    /// Give the application a fetched object, and say so (the simulator checks its digest).
    fn use_fetched_object(
        &mut self,
        before: Seq,
        id: ObjectId,
        bytes: Option<ObjectBytes>,
        out: &mut Vec<Action>,
    ) {
        let digest = plumb_objects::object_digest(bytes.as_deref());
        if let Some(app) = self.app.objects() {
            if app.load_object(id, bytes.as_deref()).is_err() {
                self.counters.add("on-demand-app-rejected");
            }
        }
        self.counters.add("on-demand-objects");
        out.push(Action::Observe(Observation::ObjectFetched {
            before,
            id: id.0,
            digest,
        }));
    }

    /// OBJECT-NODES answering the background fill: each missing subtree whose children hash to
    /// its digest is replaced by them.
    pub(crate) fn on_object_nodes_on_demand(
        &mut self,
        e: ExecId,
        nodes: Vec<ObjectChildren>,
        out: &mut Vec<Action>,
    ) {
        let mut lied = false;
        let mut emptied = Vec::new();
        let Some(state) = self.objects.as_mut() else {
            return;
        };
        let Some((live, od)) = state.fetching() else {
            self.counters.dropped(DropReason::ObjectNodesUnrequested);
            return;
        };
        for c in nodes {
            let pos = NodePos {
                depth: c.node.depth,
                index: c.node.index,
            };
            if !od.asked_nodes.remove(&pos) {
                self.counters.dropped(DropReason::ObjectNodesUnrequested);
                continue;
            }
            match live.expand_missing(pos, c.left, c.right) {
                Ok(expanded) => {
                    od.progressed = true;
                    for child in [pos.child(false), pos.child(true)] {
                        if expanded && live.is_empty_at(child) {
                            emptied.extend(od.base.objects_under(child));
                        }
                    }
                }
                Err(_) => {
                    lied = true;
                    self.counters.dropped(DropReason::ObjectNodesBadDigest);
                }
            }
        }
        self.let_go_of_emptied(emptied);
        if lied {
            self.leave_peer_on_demand(e);
        }
        self.after_fill(out);
    }

    /// Whether the replica holds every object again; if it just came to, it stops fetching
    /// and lets go of the state from before the load.
    fn finish_fill_if_whole(&mut self, out: &mut Vec<Action>) -> bool {
        let Some(state) = self.objects.as_mut() else {
            return true;
        };
        if state.on_demand.is_none() {
            return true;
        }
        if !state.holding().is_complete() {
            return false;
        }
        state.on_demand = None;
        self.counters.add("on-demand-fill-complete");
        self.complete_held_checkpoints(out);
        true
    }

    /// The fill is done: each checkpoint taken while part of the state was missing takes its
    /// missing subtrees from the whole state where nothing changed since (equal digests), and
    /// one that is whole then is written and its token sent, as if taken now. Without this a
    /// group whose order window is full, so that no next checkpoint comes, waits for tokens
    /// nobody sends (sim seed 42, `--app redis --partial`: two replicas had loaded on demand
    /// and the stable checkpoint stayed two intervals behind).
    fn complete_held_checkpoints(&mut self, out: &mut Vec<Action>) {
        let Some(live) = self.objects.as_mut().map(|o| o.live().clone()) else {
            return;
        };
        let mut completed = Vec::new();
        for (seq, held) in self.transfer.held.iter_mut() {
            let Some(tree) = held.tree.as_mut().filter(|t| !t.is_complete()) else {
                continue;
            };
            for pos in tree.missing_positions(usize::MAX) {
                tree.graft(pos, &live);
            }
            if tree.is_complete() {
                completed.push((*seq, held.token, held.bytes.clone(), tree.clone()));
            }
        }
        for (seq, token, bytes, tree) in completed {
            self.counters.add("on-demand-checkpoint-completed");
            self.persist_checkpoint(seq, bytes, Some(&tree), out);
            self.send_token(seq, token, out);
        }
    }

    /// After objects or nodes came in: execute whatever waited, then go on filling.
    fn after_fill(&mut self, out: &mut Vec<Action>) {
        self.finish_fill_if_whole(out);
        self.execute_ready(out);
        self.fill_in_background(out);
    }
}

impl<A: Application> ExecReplica<A> {
    /// Whether this replica holds every object `op` may use (always, unless it holds part of
    /// the state): the read-only path and early replies answer only then.
    pub(crate) fn holds_objects_of(&mut self, op: &[u8]) -> bool {
        if !self.holds_part() {
            return true;
        }
        let set = match self.app.objects() {
            Some(objects) => objects.access_set(op),
            None => return true,
        };
        let Some(live) = self.objects.as_ref().map(|o| o.holding()) else {
            return true;
        };
        match set.ids() {
            Some(ids) => live.missing_of(ids).is_empty(),
            None => live.is_complete(),
        }
    }
}
