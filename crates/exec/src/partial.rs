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
use crate::learn::Learned;
use crate::ExecReplica;
use plumb_app::{AccessSet, Application, ObjectId};
use plumb_core::{Action, DropReason, Observation};
use plumb_objects::{NodePos, ObjectBytes, ObjectTree, Proof};
use plumb_wire::{ExecId, Message, ObjectChildren, ObjectNode, ObjectPayload, Principal, Seq};
use std::collections::BTreeSet;

/// Objects asked for at once, the batch's and the background fill's together (one message's
/// worth: [`crate::object_transfer::OBJECTS_PER_FETCH`]).
const OBJECTS_IN_FLIGHT: usize = crate::object_transfer::OBJECTS_PER_FETCH;
/// Missing subtrees whose children are asked for at once by the background fill.
const NODES_IN_FLIGHT: usize = crate::object_transfer::NODES_PER_FETCH;

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
}

impl OnDemand {
    fn new(peer: ExecId) -> OnDemand {
        OnDemand {
            asked_objects: BTreeSet::new(),
            asked_nodes: BTreeSet::new(),
            peer,
            progressed: false,
        }
    }
}

/// The objects batch `learned` may use: the union of its operations' access sets. Copies of
/// requests already executed are included (harmless: they are fetched, not used).
fn batch_access_set<A: Application>(app: &mut A, learned: &Learned) -> AccessSet {
    let Some(objects) = app.objects() else {
        return AccessSet::All;
    };
    let mut set = AccessSet::Objects(Vec::new());
    for op in learned.bodies.iter().flatten() {
        set = set.union(objects.access_set(op));
        if set == AccessSet::All {
            break;
        }
    }
    set
}

impl<A: Application> ExecReplica<A> {
    /// Whether the replica holds only part of its objects.
    pub(crate) fn holds_part(&self) -> bool {
        self.objects.as_ref().is_some_and(|o| o.on_demand.is_some())
    }

    /// Load the verified checkpoint `cp` (being loaded by transfer.rs) on demand: adopt its root
    /// and metadata, let the application drop every object it holds, and execute on.
    pub(crate) fn load_on_demand(&mut self, root: ObjectsRoot, out: &mut Vec<Action>) {
        let Some(loading) = self.transfer.loading.take() else {
            return;
        };
        let Some((cp, bytes)) = loading.fetched else {
            return;
        };
        let Ok(tree) = ObjectTree::pruned(root.bits, root.root) else {
            self.counters.add("load-cp-object-bits-mismatch");
            return;
        };
        let peer = self.next_exec_peer(self.me);
        let (Some(state), Some(app)) = (self.objects.as_mut(), self.app.objects()) else {
            return;
        };
        // The objects held before were moved into the live tree by the caller: from now on
        // the application holds exactly the objects filled in.
        let mut ok = true;
        for (id, _) in state.live.iter() {
            ok &= app.load_object(id, None).is_ok();
        }
        ok &= app.load_object_metadata(&cp.app).is_ok();
        if !ok {
            self.counters.add("load-cp-app-rejected");
        }
        state.live = tree.clone();
        state.on_demand = Some(OnDemand::new(peer));
        self.counters.add("load-cp-on-demand");
        self.finish_load(loading.seq, loading.token, cp, bytes, Some(tree), out);
        self.fill_in_background(out);
    }

    /// Whether batch `seq` (learned, with its bodies) may execute now: it may unless this
    /// replica lacks objects the batch may use, in which case they are asked for.
    pub(crate) fn objects_ready(&mut self, seq: Seq, out: &mut Vec<Action>) -> bool {
        if !self.holds_part() {
            return true;
        }
        let Some(learned) = self.learning.learned.get(&seq) else {
            return false;
        };
        let set = batch_access_set(&mut self.app, learned);
        let Some(state) = self.objects.as_ref() else {
            return true;
        };
        let live = &state.live;
        let missing = match set.ids() {
            Some(ids) => live.missing_of(ids),
            // The whole state: only the background fill can give it.
            None if live.is_complete() => Vec::new(),
            None => {
                self.counters.add("on-demand-waits-for-fill");
                self.fill_in_background(out);
                return false;
            }
        };
        #[cfg(feature = "sabotage")]
        let missing: Vec<ObjectId> = missing
            .into_iter()
            .filter(|id| !state.unverified.contains(id))
            .collect();
        if missing.is_empty() {
            return true;
        }
        self.counters.add("on-demand-batch-waits");
        self.ask_objects(missing, out);
        false
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

    /// Ask the current peer for `ids` (those not already in flight), with proofs.
    fn ask_objects(&mut self, ids: Vec<ObjectId>, out: &mut Vec<Action>) {
        let seq = self.fetch_seq();
        let Some(od) = self.objects.as_mut().and_then(|o| o.on_demand.as_mut()) else {
            return;
        };
        let room = OBJECTS_IN_FLIGHT.saturating_sub(od.asked_objects.len());
        let ids: Vec<u64> = ids
            .into_iter()
            .filter(|id| od.asked_objects.insert(*id))
            .take(room)
            .map(|id| id.0)
            .collect();
        if ids.is_empty() {
            return;
        }
        let peer = od.peer;
        let msg = Message::FetchObjects {
            seq,
            ids,
            proofs: true,
        };
        self.send(Principal::Exec(peer), &msg, out);
    }

    /// The background fill: ask for the children of missing subtrees, and for the objects at
    /// missing leaves, as much as fits beside what is in flight.
    pub(crate) fn fill_in_background(&mut self, out: &mut Vec<Action>) {
        let seq = self.fetch_seq();
        let Some(state) = self.objects.as_mut() else {
            return;
        };
        let bits = state.live.bits();
        let Some(od) = state.on_demand.as_mut() else {
            return;
        };
        let wanted = state
            .live
            .missing_positions(NODES_IN_FLIGHT + OBJECTS_IN_FLIGHT);
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
        self.ask_objects(leaves, out);
    }

    /// Catch-up period: ask again for whatever is still missing, from the next peer if this
    /// one made no progress.
    pub(crate) fn on_demand_tick(&mut self, out: &mut Vec<Action>) {
        let next = self
            .objects
            .as_ref()
            .and_then(|o| o.on_demand.as_ref())
            .map(|od| {
                if od.progressed {
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
        od.asked_objects.clear();
        od.asked_nodes.clear();
        od.progressed = false;
        self.execute_ready(out);
        self.fill_in_background(out);
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
        for p in objects {
            let id = ObjectId(p.id);
            let Some(state) = self.objects.as_mut() else {
                return;
            };
            let Some(od) = state.on_demand.as_mut() else {
                self.counters.dropped(DropReason::ObjectsUnrequested);
                return;
            };
            if !od.asked_objects.remove(&id) {
                self.counters.dropped(DropReason::ObjectUnrequested);
                continue;
            }
            let bytes: Option<ObjectBytes> = p.bytes.filter(|b| !b.is_empty()).map(Into::into);
            let proof = Proof { siblings: p.proof };
            match state.live.fill(id, bytes.clone(), &proof) {
                Ok(filled) => {
                    od.progressed = true;
                    if filled {
                        self.use_fetched_object(before, id, bytes, out);
                    }
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
        if lied {
            self.leave_peer_on_demand(e);
        }
        self.after_fill(out);
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
        let Some(state) = self.objects.as_mut() else {
            return;
        };
        let Some(od) = state.on_demand.as_mut() else {
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
            match state.live.expand_missing(pos, c.left, c.right) {
                Ok(_) => od.progressed = true,
                Err(_) => {
                    lied = true;
                    self.counters.dropped(DropReason::ObjectNodesBadDigest);
                }
            }
        }
        if lied {
            self.leave_peer_on_demand(e);
        }
        self.after_fill(out);
    }

    /// After objects or nodes came in: hold everything again, or go on fetching; execute
    /// whatever waited.
    fn after_fill(&mut self, out: &mut Vec<Action>) {
        let complete = self
            .objects
            .as_ref()
            .is_some_and(|o| o.live.is_complete() && o.on_demand.is_some());
        if complete {
            if let Some(state) = self.objects.as_mut() {
                state.on_demand = None;
            }
            self.counters.add("on-demand-fill-complete");
        }
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
        let Some(live) = self.objects.as_ref().map(|o| &o.live) else {
            return true;
        };
        match set.ids() {
            Some(ids) => live.missing_of(ids).is_empty(),
            None => live.is_complete(),
        }
    }
}
