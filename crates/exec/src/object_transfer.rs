//! Object-level state transfer (docs/objects.md): a replica loading a checkpoint whose
//! application state is objects fetches only the objects whose digests differ from what it
//! holds, each verified against the checkpoint's root, from one peer at a time; and it serves
//! the same requests for the checkpoints it holds.
//!
//! The root comes from the checkpoint bytes, which matched the token that `r + 1` LOAD-CPs
//! named (transfer.rs), so every tree node and object accepted here is verified against
//! agreed state and any peer may serve, a faulty one only wasting our time: without progress
//! for a catch-up period the replica asks the next peer.

use crate::checkpoint::ObjectsRoot;
use crate::ExecReplica;
use plumb_app::{Application, ObjectId};
use plumb_core::Action;
use plumb_core::DropReason;
use plumb_objects::{
    Held, NodePos, ObjectBytes, ObjectTree, Proof, ProvenWrite, StateUpdate, SyncReject, TreeSync,
};
use plumb_wire::{ExecId, Message, ObjectChildren, ObjectNode, ObjectPayload, Principal, Seq};
use std::collections::BTreeSet;

/// At most this many nodes per FETCH-OBJECT-NODES (a reply is ~73 bytes a node).
pub const NODES_PER_FETCH: usize = 2048;
/// At most this many objects per FETCH-OBJECTS.
pub const OBJECTS_PER_FETCH: usize = 512;
/// Requests in flight per kind: this many messages' worth.
const FETCHES_IN_FLIGHT: usize = 4;
/// An OBJECTS reply stops adding objects past this many bytes (frames are at most 16 MiB).
const OBJECT_REPLY_BYTES_MAX: usize = 8 << 20;
/// Bytes of object-transfer answers served to one peer per catch-up period: a small request
/// buys a large answer, so a faulty peer must not be able to ask without limit.
const SERVED_BYTES_PER_PERIOD: usize = 64 << 20;

/// An object-level load in progress.
#[derive(Debug)]
pub(crate) struct ObjectLoad {
    sync: TreeSync,
    /// The tree the session compares against: our objects when it started.
    base: ObjectTree,
    asked_nodes: BTreeSet<NodePos>,
    asked_objects: BTreeSet<ObjectId>,
    /// The peer asked; another one after a catch-up period without progress.
    peer: ExecId,
    progressed: bool,
    /// A state update asked for first, from a checkpoint we hold (its seq and tree); the tree
    /// walk starts if it does not come within a catch-up period or does not verify.
    update_from: Option<(Seq, ObjectTree)>,
    /// Objects that batches executed since the session started wrote: `base` no longer says
    /// what the application holds for them, so the load gives them the checkpoint's bytes.
    pub(crate) written_since: BTreeSet<ObjectId>,
}

fn reject_counter(r: SyncReject) -> DropReason {
    match r {
        SyncReject::Unrequested => DropReason::ObjectUnrequested,
        SyncReject::BadChildren => DropReason::ObjectNodesBadDigest,
        SyncReject::BadObject => DropReason::ObjectBadDigest,
    }
}

fn pos_of(n: ObjectNode) -> NodePos {
    NodePos {
        depth: n.depth,
        index: n.index,
    }
}

fn node_of(p: NodePos) -> ObjectNode {
    ObjectNode {
        depth: p.depth,
        index: p.index,
    }
}

impl<A: Application> ExecReplica<A> {
    pub(crate) fn next_exec_peer(&self, after: ExecId) -> ExecId {
        let n = self.q().exec.max(1);
        let mut p = (after.index() + 1) % n;
        if p == self.me.index() {
            p = (p + 1) % n;
        }
        ExecId(p as u16)
    }

    /// The checkpoint being loaded is verified and its state is objects with `root`: start
    /// (or keep) fetching what differs from our objects.
    pub(crate) fn start_object_load(&mut self, root: ObjectsRoot, out: &mut Vec<Action>) {
        let Some(bits) = self.objects.as_ref().map(|o| o.holding().bits()) else {
            return;
        };
        let Some(loading) = self.transfer.loading.as_mut() else {
            return;
        };
        if loading.objects.is_some() {
            return;
        }
        if root.bits != bits {
            self.counters.add("load-cp-object-bits-mismatch");
            loading.fetched = None;
            return;
        }
        self.flush_objects();
        let Some(base) = self.objects.as_mut().map(|o| o.live().clone()) else {
            return;
        };
        // A checkpoint we hold has that very tree: no transfer at all.
        let held = self
            .transfer
            .held
            .values()
            .filter_map(|h| h.tree.as_ref())
            .find(|t| t.root() == root.root)
            .cloned();
        if let Some(tree) = held.filter(|_| base.is_complete()) {
            let writes = base
                .diff(&tree)
                .unwrap_or_default()
                .into_iter()
                .map(|id| (id, tree.get(id).cloned()))
                .collect();
            self.complete_object_load(base, writes, BTreeSet::new(), out);
            return;
        }
        // On demand (ZZ mode's default: a woken sleeper answers before it holds the state,
        // docs/zz.md), or when this replica holds part of the state already (a tree walk
        // compares against a whole tree): adopt the root, fetch objects as batches need them.
        if self.cfg().load_objects_on_demand || !base.is_complete() {
            self.load_on_demand(root, out);
            return;
        }
        let sync = TreeSync::new(&base, root.root);
        let peer = self.next_exec_peer(self.me);
        let done = sync.is_done();
        let Some(to) = self.transfer.loading.as_ref().map(|l| l.seq) else {
            return;
        };
        // From the newest checkpoint we hold, one STATE-UPDATE carries every write since.
        let update_from = self
            .transfer
            .held
            .iter()
            .rev()
            .filter(|(seq, _)| **seq < to)
            .find_map(|(seq, h)| h.tree.clone().map(|t| (*seq, t)));
        if let Some(loading) = self.transfer.loading.as_mut() {
            loading.objects = Some(ObjectLoad {
                sync,
                base,
                asked_nodes: BTreeSet::new(),
                asked_objects: BTreeSet::new(),
                peer,
                progressed: false,
                update_from: update_from.clone().filter(|_| !done),
                written_since: BTreeSet::new(),
            });
        }
        if done {
            self.continue_object_load(out);
        } else if let Some((from, _)) = update_from {
            self.send(
                Principal::Exec(peer),
                &Message::FetchStateUpdate { from, to },
                out,
            );
        } else {
            self.request_object_transfer(out);
        }
    }

    /// Ask the current peer for the nodes and objects still needed that are not in flight.
    pub(crate) fn request_object_transfer(&mut self, out: &mut Vec<Action>) {
        let Some(loading) = self.transfer.loading.as_mut() else {
            return;
        };
        let seq = loading.seq;
        let Some(ol) = loading.objects.as_mut() else {
            return;
        };
        if ol.update_from.is_some() {
            // Waiting for the state update; the tree walk starts if it does not come.
            return;
        }
        let mut msgs = Vec::new();
        let room = (FETCHES_IN_FLIGHT * NODES_PER_FETCH).saturating_sub(ol.asked_nodes.len());
        let nodes: Vec<NodePos> = ol
            .sync
            .wanted_nodes(ol.asked_nodes.len() + room)
            .into_iter()
            .filter(|p| !ol.asked_nodes.contains(p))
            .take(room)
            .collect();
        for chunk in nodes.chunks(NODES_PER_FETCH) {
            ol.asked_nodes.extend(chunk.iter().copied());
            msgs.push(Message::FetchObjectNodes {
                seq,
                nodes: chunk.iter().copied().map(node_of).collect(),
            });
        }
        let room = (FETCHES_IN_FLIGHT * OBJECTS_PER_FETCH).saturating_sub(ol.asked_objects.len());
        let ids: Vec<ObjectId> = ol
            .sync
            .wanted_objects(ol.asked_objects.len() + room)
            .into_iter()
            .filter(|id| !ol.asked_objects.contains(id))
            .take(room)
            .collect();
        for chunk in ids.chunks(OBJECTS_PER_FETCH) {
            ol.asked_objects.extend(chunk.iter().copied());
            msgs.push(Message::FetchObjects {
                seq,
                ids: chunk.iter().map(|id| id.0).collect(),
                proofs: false,
            });
        }
        let peer = ol.peer;
        for msg in &msgs {
            self.send(Principal::Exec(peer), msg, out);
        }
    }

    /// Catch-up period: if the peer answered nothing in it, forget what is in flight (it is
    /// asked again) and move to the next peer. A peer that answers, however slowly, keeps its
    /// requests: asking again what is still on its way doubled the work of a loaded peer each
    /// period (a 1 GiB transfer under load dropped 2.1 million duplicate objects, its peer cut
    /// off as flooding, and never finished).
    pub(crate) fn object_transfer_tick(&mut self) {
        let Some(ol) = self
            .transfer
            .loading
            .as_mut()
            .and_then(|l| l.objects.as_mut())
        else {
            return;
        };
        if !ol.progressed {
            ol.asked_nodes.clear();
            ol.asked_objects.clear();
        }
        if ol.update_from.take().is_some() {
            self.counters.add("state-update-not-received");
        }
        if !ol.progressed {
            let after = ol.peer;
            let next = self.next_exec_peer(after);
            if let Some(ol) = self
                .transfer
                .loading
                .as_mut()
                .and_then(|l| l.objects.as_mut())
            {
                ol.peer = next;
            }
            self.counters.add("object-transfer-peer-changed");
        }
        if let Some(ol) = self
            .transfer
            .loading
            .as_mut()
            .and_then(|l| l.objects.as_mut())
        {
            ol.progressed = false;
        }
    }

    /// Peer `e` sent something that does not verify: it is faulty. If it is the peer being
    /// asked, ask the next one now, everything still needed.
    fn leave_lying_peer(&mut self, e: ExecId) {
        let Some(peer) = self
            .transfer
            .loading
            .as_ref()
            .and_then(|l| l.objects.as_ref())
            .map(|ol| ol.peer)
        else {
            return;
        };
        if peer != e {
            return;
        }
        let next = self.next_exec_peer(peer);
        if let Some(ol) = self
            .transfer
            .loading
            .as_mut()
            .and_then(|l| l.objects.as_mut())
        {
            ol.peer = next;
            ol.asked_nodes.clear();
            ol.asked_objects.clear();
        }
        self.counters.add("object-transfer-peer-changed");
    }

    /// OBJECT-NODES: children digests, each accepted only if they hash to the awaited node.
    pub(crate) fn on_object_nodes(
        &mut self,
        e: ExecId,
        seq: Seq,
        nodes: Vec<ObjectChildren>,
        out: &mut Vec<Action>,
    ) {
        if nodes.len() > NODES_PER_FETCH {
            self.counters.dropped(DropReason::ObjectNodesTooMany);
            return;
        }
        let Some(ol) = self
            .transfer
            .loading
            .as_mut()
            .filter(|l| l.seq == seq)
            .and_then(|l| l.objects.as_mut())
        else {
            // Not a state transfer's: the background fill's (partial.rs), if any.
            self.on_object_nodes_on_demand(e, nodes, out);
            return;
        };
        let mut lied = false;
        for c in nodes {
            let pos = pos_of(c.node);
            ol.asked_nodes.remove(&pos);
            match ol.sync.on_children(&ol.base, pos, c.left, c.right) {
                Ok(()) => ol.progressed = true,
                Err(r) => {
                    lied |= r == SyncReject::BadChildren;
                    self.counters.dropped(reject_counter(r));
                }
            }
        }
        if lied {
            self.leave_lying_peer(e);
        }
        self.continue_object_load(out);
    }

    /// OBJECTS: object bytes, each accepted only if they match the awaited leaf digest.
    pub(crate) fn on_objects(
        &mut self,
        e: ExecId,
        seq: Seq,
        objects: Vec<ObjectPayload>,
        out: &mut Vec<Action>,
    ) {
        if objects.len() > OBJECTS_PER_FETCH {
            self.counters.dropped(DropReason::ObjectsTooMany);
            return;
        }
        let Some(ol) = self
            .transfer
            .loading
            .as_mut()
            .filter(|l| l.seq == seq)
            .and_then(|l| l.objects.as_mut())
        else {
            // Not a state transfer's: fetched on demand (partial.rs), if anything was.
            self.on_objects_on_demand(e, objects, out);
            return;
        };
        let mut lied = false;
        for p in objects {
            let id = ObjectId(p.id);
            ol.asked_objects.remove(&id);
            match ol.sync.on_object(id, p.bytes.as_deref()) {
                Ok(()) => ol.progressed = true,
                Err(r) => {
                    lied |= r == SyncReject::BadObject;
                    self.counters.dropped(reject_counter(r));
                }
            }
        }
        if lied {
            self.leave_lying_peer(e);
        }
        self.continue_object_load(out);
    }

    fn continue_object_load(&mut self, out: &mut Vec<Action>) {
        let done = self
            .transfer
            .loading
            .as_ref()
            .and_then(|l| l.objects.as_ref())
            .is_some_and(|ol| ol.sync.is_done());
        if !done {
            self.request_object_transfer(out);
            return;
        }
        let Some(mut ol) = self
            .transfer
            .loading
            .as_mut()
            .and_then(|l| l.objects.take())
        else {
            return;
        };
        let stats = ol.sync.stats();
        self.counters
            .add_n("object-transfer-nodes", stats.nodes_fetched);
        self.counters
            .add_n("object-transfer-objects", stats.objects_fetched);
        self.counters
            .add_n("object-transfer-bytes", stats.object_bytes);
        let writes = ol.sync.take_writes();
        self.complete_object_load(ol.base, writes, ol.written_since, out);
    }

    /// Every object of the checkpoint is verified: give the application the writes, and the
    /// checkpoint's bytes back for whatever it changed since `base` (it may have executed
    /// batches meanwhile: `written_since`, which the execution stage took from it batch by
    /// batch, and whatever it changed since the last batch), then finish the load.
    ///
    /// Without `written_since` an object a batch executed during the load wrote, and the
    /// checkpoint holds as `base` did, kept the batch's bytes: simulator seed 483 at u=2 r=1,
    /// an execution replica restarted at checkpoint 140, loading 154, executed 141-148 meanwhile,
    /// and answered `KEYS` one key short from then on.
    fn complete_object_load(
        &mut self,
        base: ObjectTree,
        writes: Vec<(ObjectId, Option<ObjectBytes>)>,
        written_since: BTreeSet<ObjectId>,
        out: &mut Vec<Action>,
    ) {
        let Some(loading) = self.transfer.loading.take() else {
            return;
        };
        let Some((cp, bytes)) = loading.fetched else {
            return;
        };
        let mut tree = base;
        let applied = tree.apply(writes.iter().cloned()).is_ok();
        let root_ok = cp.objects.is_some_and(|o| o.root == tree.root());
        if !applied || !root_ok {
            // Cannot happen with verified input and an unchanged base; start over on the
            // next LOAD-CP rather than adopt a state we cannot vouch for.
            self.counters.add("load-cp-object-root-mismatch");
            return;
        }
        let written: BTreeSet<ObjectId> = writes.iter().map(|(id, _)| *id).collect();
        let Some(app) = self.app.objects() else {
            return;
        };
        let mut ok = true;
        let changed: BTreeSet<ObjectId> = app
            .take_changed_objects()
            .into_iter()
            .map(|(id, _)| id)
            .chain(written_since)
            .collect();
        for id in changed.difference(&written) {
            // The checkpoint's bytes; `None` also where the tree does not hold the object (a
            // replica holding part of the state): let go of here, fetched with its proof
            // before an operation uses it.
            ok &= app.load_object(*id, tree.get(*id).map(|b| &b[..])).is_ok();
        }
        for (id, bytes) in &writes {
            ok &= app.load_object(*id, bytes.as_deref()).is_ok();
        }
        ok &= app.load_object_metadata(&cp.app).is_ok();
        if !ok {
            // The bytes are the ones correct replicas produced: the application cannot read
            // its own objects. Count it; the divergence shows in the next checkpoint.
            self.counters.add("load-cp-app-rejected");
        }
        if let Some(state) = self.objects.as_mut() {
            state.replace_live(tree.clone());
        }
        self.finish_load(loading.seq, loading.token, cp, bytes, Some(tree), out);
    }

    /// Whether `bytes` more may go to peer `e` in this catch-up period (and count them).
    fn object_serving_allowed(&mut self, e: ExecId, bytes: usize) -> bool {
        let now = self.now;
        let period = self.cfg().catch_up_us;
        let window = self.serving.objects.entry(e).or_insert((now, 0));
        if now >= window.0.saturating_add(period) {
            *window = (now, 0);
        }
        if window.1.saturating_add(bytes) > SERVED_BYTES_PER_PERIOD {
            self.counters.add("fetch-objects-rate-limited");
            return false;
        }
        window.1 += bytes;
        true
    }

    /// STATE-UPDATE: the writes from the checkpoint we hold to the one being loaded, applied
    /// instead of re-executing the batches between them if every write proves against the
    /// agreed root and together they give it (plumb_objects::StateUpdate). Otherwise the
    /// tree walk fetches what differs.
    pub(crate) fn on_state_update(
        &mut self,
        e: ExecId,
        from: Seq,
        to: Seq,
        writes: Vec<ObjectPayload>,
        out: &mut Vec<Action>,
    ) {
        let Some(loading) = self.transfer.loading.as_mut().filter(|l| l.seq == to) else {
            self.counters.dropped(DropReason::StateUpdateUnrequested);
            return;
        };
        let root = loading.fetched.as_ref().and_then(|(cp, _)| cp.objects);
        let Some((ol, root)) = loading.objects.as_mut().zip(root) else {
            self.counters.dropped(DropReason::StateUpdateUnrequested);
            return;
        };
        let Some((_, from_tree)) = ol.update_from.take_if(|(s, _)| *s == from) else {
            self.counters.dropped(DropReason::StateUpdateUnrequested);
            return;
        };
        let update = StateUpdate {
            writes: writes
                .into_iter()
                .map(|w| ProvenWrite {
                    id: ObjectId(w.id),
                    bytes: w.bytes,
                    proof: Proof { siblings: w.proof },
                })
                .collect(),
        };
        match update.apply_to(&from_tree, root.root) {
            Ok(tree) => {
                let base = ol.base.clone();
                let writes: Vec<(ObjectId, Option<ObjectBytes>)> = base
                    .diff(&tree)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|id| (id, tree.get(id).cloned()))
                    .collect();
                self.counters.add("state-update-applied");
                self.counters
                    .add_n("state-update-writes", update.writes.len() as u64);
                let since = std::mem::take(&mut ol.written_since);
                self.complete_object_load(base, writes, since, out);
            }
            Err(_) => {
                self.counters.dropped(DropReason::StateUpdateBad);
                self.leave_lying_peer(e);
                self.request_object_transfer(out);
            }
        }
    }

    /// FETCH-STATE-UPDATE from a peer: the writes between two checkpoints we hold, with
    /// proofs against the later one, if they fit in one answer (else the peer walks the tree).
    pub(crate) fn on_fetch_state_update(
        &mut self,
        e: ExecId,
        from: Seq,
        to: Seq,
        out: &mut Vec<Action>,
    ) {
        let trees = self
            .transfer
            .held
            .get(&from)
            .and_then(|h| h.tree.as_ref())
            .zip(self.transfer.held.get(&to).and_then(|h| h.tree.as_ref()));
        let Some((from_tree, to_tree)) = trees.filter(|_| from < to) else {
            self.counters.add("fetch-objects-not-held");
            return;
        };
        let Ok(update) = StateUpdate::between(from_tree, to_tree) else {
            return;
        };
        let size: usize = update
            .writes
            .iter()
            .map(|w| w.bytes.as_ref().map_or(0, Vec::len) + 32 * w.proof.siblings.len() + 16)
            .sum();
        if size > OBJECT_REPLY_BYTES_MAX {
            self.counters.add("state-update-too-large");
            return;
        }
        if !self.object_serving_allowed(e, size) {
            return;
        }
        let writes = update
            .writes
            .into_iter()
            .map(|w| ObjectPayload {
                id: w.id.0,
                bytes: w.bytes,
                proof: w.proof.siblings,
            })
            .collect();
        self.send(
            Principal::Exec(e),
            &Message::StateUpdate { from, to, writes },
            out,
        );
    }

    /// FETCH-OBJECT-NODES from a peer: children digests of the asked nodes of checkpoint
    /// `seq`'s tree, if we hold it.
    pub(crate) fn on_fetch_object_nodes(
        &mut self,
        e: ExecId,
        seq: Seq,
        nodes: Vec<ObjectNode>,
        out: &mut Vec<Action>,
    ) {
        if nodes.len() > NODES_PER_FETCH {
            self.counters.dropped(DropReason::FetchObjectNodesTooMany);
            return;
        }
        let Some(tree) = self.transfer.held.get(&seq).and_then(|h| h.tree.as_ref()) else {
            self.counters.add("fetch-objects-not-held");
            return;
        };
        let children: Vec<ObjectChildren> = nodes
            .into_iter()
            .filter_map(|n| {
                tree.children(pos_of(n))
                    .map(|(left, right)| ObjectChildren {
                        node: n,
                        left,
                        right,
                    })
            })
            .collect();
        if !self.object_serving_allowed(e, children.len() * 80) {
            return;
        }
        let msg = Message::ObjectNodes {
            seq,
            nodes: children,
        };
        self.send(Principal::Exec(e), &msg, out);
    }

    /// FETCH-OBJECTS from a peer: objects of checkpoint `seq`, with proofs if asked, in as
    /// many OBJECTS replies as their bytes need. One reply cut at its size bound left the rest
    /// of the request asked and unanswered until the asker's next catch-up period: with 16 KiB
    /// values a request of 512 objects fills 8 MiB at about 480, and a woken replica's batch
    /// waited up to 200 ms for the other 32 (`plumb bench zz --sizes 100M --dirty 10`).
    pub(crate) fn on_fetch_objects(
        &mut self,
        e: ExecId,
        seq: Seq,
        ids: Vec<u64>,
        proofs: bool,
        out: &mut Vec<Action>,
    ) {
        if ids.len() > OBJECTS_PER_FETCH {
            self.counters.dropped(DropReason::FetchObjectsTooMany);
            return;
        }
        let Some(tree) = self.transfer.held.get(&seq).and_then(|h| h.tree.as_ref()) else {
            self.counters.add("fetch-objects-not-held");
            return;
        };
        let mut replies: Vec<(Vec<ObjectPayload>, usize)> = vec![(Vec::new(), 0)];
        for id in ids.into_iter().map(ObjectId) {
            // An object outside the tree, or one this replica does not hold (a partial tree),
            // is left out: never served as empty.
            let Held::Object(bytes) = tree.lookup(id) else {
                continue;
            };
            if !tree.contains_id(id) {
                continue;
            }
            let bytes = bytes.map(|b| b.to_vec());
            let proof = if proofs {
                tree.proof(id).map(|p| p.siblings).unwrap_or_default()
            } else {
                Vec::new()
            };
            let size = bytes.as_ref().map_or(0, Vec::len) + 32 * proof.len() + 16;
            let full = replies
                .last()
                .is_some_and(|(o, total)| total + size > OBJECT_REPLY_BYTES_MAX && !o.is_empty());
            if full {
                replies.push((Vec::new(), 0));
            }
            if let Some((objects, total)) = replies.last_mut() {
                *total += size;
                objects.push(ObjectPayload {
                    id: id.0,
                    bytes,
                    proof,
                });
            }
        }
        for (objects, total) in replies {
            // What the budget does not cover is not served: the peer asks again.
            if !self.object_serving_allowed(e, total) {
                return;
            }
            self.send(Principal::Exec(e), &Message::Objects { seq, objects }, out);
        }
    }
}
