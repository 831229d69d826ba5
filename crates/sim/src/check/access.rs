//! access-set: an operation uses only the objects its access set names
//! ([`ObjectState::access_set`], docs/objects.md "Access sets"). Each batch of the reference
//! replay runs a second time on a fresh instance that holds only the objects of its requests'
//! access sets (the batch's [`ObjectState::batch_access_set`]), with the metadata, as a
//! replica holding part of the state would run it after fetching them: the replies, the
//! pushes and every object written must be the same, and no object outside the access sets
//! may change. A batch with an operation of the whole state
//! ([`AccessSet::All`]) needs everything anyway and is not run twice.

use crate::app::SimApp;
use plumb_app::{
    AccessSet, Application, BatchOutput, Command, NonDeterminism, ObjectId, ObjectWrite, Seq,
};
use plumb_crypto::Digest;
use plumb_objects::object_digest;
use plumb_wire::BatchReport;
use std::collections::BTreeMap;

/// The reference state's objects, kept in step batch by batch, and what runs each batch again.
pub(super) struct AccessCheck {
    /// Every non-empty object of the reference state after the last batch: what a replica
    /// fetching an access set would be served.
    objects: BTreeMap<ObjectId, Vec<u8>>,
    /// Whether a batch already broke the property (the first is reported, not every later one).
    broken: bool,
}

/// `None` and empty bytes are both the empty object.
fn bytes(b: Option<Vec<u8>>) -> Option<Vec<u8>> {
    b.filter(|b| !b.is_empty())
}

impl AccessCheck {
    /// The check over `store`, a fresh reference instance; `None` if the application keeps no
    /// objects.
    pub(super) fn new<A: Application>(store: &mut A) -> Option<AccessCheck> {
        let objects = store.objects()?;
        let mut check = AccessCheck {
            objects: BTreeMap::new(),
            broken: false,
        };
        let initial = objects.take_changed_objects();
        check.absorb(initial);
        Some(check)
    }

    /// The digest of object `id` in the reference state after the last batch run.
    pub(super) fn object_digest(&self, id: ObjectId) -> Digest {
        object_digest(self.objects.get(&id).map(Vec::as_slice))
    }

    fn absorb(&mut self, writes: Vec<(ObjectId, Option<Vec<u8>>)>) {
        for (id, b) in writes {
            match bytes(b) {
                Some(b) => self.objects.insert(id, b),
                None => self.objects.remove(&id),
            };
        }
    }

    /// The digest of a write set as execution replicas report it: the objects whose bytes
    /// differ from before the batch, with their new digests, by id.
    fn writes_digest(&self, written: &[(ObjectId, Option<Vec<u8>>)]) -> Digest {
        let mut changed: Vec<(u64, Digest)> = written
            .iter()
            .filter(|(id, b)| bytes(b.clone()) != self.objects.get(id).cloned())
            .map(|(id, b)| (id.0, object_digest(b.as_deref().filter(|b| !b.is_empty()))))
            .collect();
        changed.sort_by_key(|(id, _)| *id);
        changed.dedup_by_key(|(id, _)| *id);
        BatchReport::writes_digest(changed)
    }

    /// The reference write set of a batch that gave the application nothing to execute.
    pub(super) fn nothing_written(&self) -> Digest {
        BatchReport::writes_digest([])
    }

    /// Execute the batch on `store` and, if its access sets name objects, once more on an
    /// instance holding only those. Returns `store`'s output, the digest of its write set,
    /// and, the first time a batch breaks the property, what broke it.
    pub(super) fn execute<A: SimApp>(
        &mut self,
        app: &A,
        store: &mut A::App,
        seq: Seq,
        commands: &[Command<'_>],
        nd: NonDeterminism,
    ) -> (BatchOutput, Digest, Option<String>) {
        let Some(objects) = store.objects() else {
            let writes = self.nothing_written();
            return (store.execute(seq, commands, nd), writes, None);
        };
        let sets: Vec<AccessSet> = commands.iter().map(|c| objects.access_set(c.op)).collect();
        let ops: Vec<&[u8]> = commands.iter().map(|c| c.op).collect();
        let union = objects.batch_access_set(&ops, nd.time);
        let metadata = objects.object_metadata();
        let mut partial = match (&union, self.broken) {
            (AccessSet::Objects(ids), false) => Some(self.partial(app, ids, &metadata, seq)),
            _ => None,
        };
        let output = store.execute(seq, commands, nd);
        let written = store
            .objects()
            .map(|o| o.take_changed_objects())
            .unwrap_or_default();
        let verdict = match partial.as_mut() {
            Some(Ok(partial)) => {
                let partial_output = partial.execute(seq, commands, nd);
                let partial_written = partial
                    .objects()
                    .map(|o| o.take_changed_objects())
                    .unwrap_or_default();
                self.compare(
                    app,
                    seq,
                    commands,
                    &sets,
                    &union,
                    (&output, &written),
                    (&partial_output, partial_written),
                )
            }
            Some(Err(e)) => Some(e.clone()),
            None => None,
        };
        self.broken |= verdict.is_some();
        let writes = self.writes_digest(&written);
        self.absorb(written);
        (output, writes, verdict)
    }

    /// A fresh instance holding objects `ids` of the reference state and its metadata.
    fn partial<A: SimApp>(
        &self,
        app: &A,
        ids: &[ObjectId],
        metadata: &[u8],
        seq: Seq,
    ) -> Result<A::App, String> {
        let mut partial = app.new_app();
        let objects = partial
            .objects()
            .ok_or_else(|| format!("batch {seq}: a fresh instance keeps no objects"))?;
        // A fresh instance may start with objects of its own (the coordination service's
        // initial nodes): it lets go of them, as a replica loading on demand does.
        for (id, _) in objects.take_changed_objects() {
            objects
                .load_object(id, None)
                .map_err(|e| format!("batch {seq}: object {} does not drop: {e}", id.0))?;
        }
        for id in ids {
            if let Some(b) = self.objects.get(id) {
                objects
                    .load_object(*id, Some(b))
                    .map_err(|e| format!("batch {seq}: object {} does not load: {e}", id.0))?;
            }
        }
        objects
            .load_object_metadata(metadata)
            .map_err(|e| format!("batch {seq}: the metadata does not load: {e}"))?;
        Ok(partial)
    }

    /// What differs between the batch run on the whole state and on its access sets' objects.
    #[allow(clippy::too_many_arguments)]
    fn compare<A: SimApp>(
        &self,
        app: &A,
        seq: Seq,
        commands: &[Command<'_>],
        sets: &[AccessSet],
        union: &AccessSet,
        (whole, written): (&BatchOutput, &[ObjectWrite]),
        (part, part_written): (&BatchOutput, Vec<ObjectWrite>),
    ) -> Option<String> {
        let named = |i: usize| {
            let ids: Vec<u64> = sets[i].ids().unwrap_or(&[]).iter().map(|id| id.0).collect();
            format!(
                "request {i} ({}, access set {ids:?})",
                app.op_text(commands[i].op)
            )
        };
        for (i, (a, b)) in whole.replies.iter().zip(&part.replies).enumerate() {
            if a != b {
                return Some(format!(
                    "batch {seq}: {} replies {} on the whole state but {} on its access sets' objects: it read an object outside them",
                    named(i),
                    app.result_text(a),
                    app.result_text(b)
                ));
            }
        }
        if whole.replies.len() != part.replies.len() || whole.pushes != part.pushes {
            return Some(format!(
                "batch {seq}: the batch pushes other events on its access sets' objects than on the whole state"
            ));
        }
        let before = |id: &ObjectId| self.objects.get(id).cloned();
        let mut after_whole: BTreeMap<ObjectId, Option<Vec<u8>>> = BTreeMap::new();
        for (id, b) in written {
            let b = bytes(b.clone());
            if b != before(id) && !union.contains(*id) {
                let by: Vec<String> = (0..commands.len()).map(named).collect();
                return Some(format!(
                    "batch {seq}: object {} changed, but no access set of the batch names it ({})",
                    id.0,
                    by.join("; ")
                ));
            }
            after_whole.insert(*id, b);
        }
        let mut after_part: BTreeMap<ObjectId, Option<Vec<u8>>> = BTreeMap::new();
        for (id, b) in part_written {
            after_part.insert(id, bytes(b));
        }
        for id in after_whole.keys().chain(after_part.keys()) {
            let w = after_whole.get(id).cloned().unwrap_or_else(|| before(id));
            let p = after_part.get(id).cloned().unwrap_or_else(|| before(id));
            if w != p {
                return Some(format!(
                    "batch {seq}: object {} ends otherwise on the access sets' objects than on the whole state: the batch read an object outside them",
                    id.0
                ));
            }
        }
        None
    }
}
