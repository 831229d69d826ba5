//! Restart after a crash (seed 004 §5.3.2, ES4, ES5): load the newest checkpoint on disk that
//! decodes and that the application accepts; batches after it are replayed through the normal
//! catch-up path (LAST-EXEC on Start). An application with objects is rebuilt from its object
//! records instead (objects.rs).

use crate::checkpoint::{parse_checkpoint_key, ExecCheckpoint};
use crate::{ExecReplica, Held};
use plumb_app::Application;
use plumb_core::Recovered;
use plumb_crypto::Digest;
use plumb_wire::Seq;
use std::collections::BTreeMap;

/// What recovery found on the disk, reported on Start: the checkpoint the replica resumes
/// from, and what it could not use (named, so the operator can see what was lost).
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub checkpoint: Option<(Seq, Digest)>,
    pub unusable_keys: Vec<String>,
    pub unusable_prefixes: Vec<String>,
}

impl<A: Application> ExecReplica<A> {
    pub(crate) fn recover(&mut self, recovered: Recovered) {
        for key in recovered.corrupt {
            // The driver's checksum failed: never trust it, and clear it on Start.
            self.counters.add("recovery-corrupt-record");
            if parse_checkpoint_key(&key).is_some() {
                self.found.unusable_keys.push(key);
            }
        }
        let mut records = recovered.records;
        let mut candidates: BTreeMap<Seq, (ExecCheckpoint, Vec<u8>)> = BTreeMap::new();
        let cp_keys: Vec<String> = records
            .keys()
            .filter(|k| parse_checkpoint_key(k).is_some())
            .cloned()
            .collect();
        for key in cp_keys {
            let (Some(seq), Some(bytes)) = (parse_checkpoint_key(&key), records.remove(&key))
            else {
                continue;
            };
            match ExecCheckpoint::decode(&bytes) {
                Some(cp) if cp.seq == seq && cp.objects.is_some() == self.objects.is_some() => {
                    candidates.insert(seq, (cp, bytes));
                }
                _ => {
                    self.counters.add("recovery-undecodable-checkpoint");
                    self.found.unusable_keys.push(key);
                }
            }
        }
        if self.objects.is_some() {
            self.recover_with_objects(records, candidates);
            return;
        }
        for _ in records.keys() {
            self.counters.add("recovery-unknown-record");
        }
        while let Some((seq, (cp, bytes))) = candidates.pop_last() {
            if self.app.load_checkpoint(&cp.app).is_err() {
                self.counters.add("recovery-checkpoint-unloadable");
                self.found.unusable_keys.push(crate::checkpoint_key(seq));
                continue;
            }
            self.adopt_recovered(seq, cp, bytes, None);
            break;
        }
        // Older checkpoints stay available to peers and to a LOAD-CP naming them.
        for (seq, (_, bytes)) in candidates {
            let token = ExecCheckpoint::token(&bytes);
            self.transfer.held.insert(
                seq,
                Held {
                    token,
                    bytes,
                    tree: None,
                },
            );
        }
    }

    /// Objects on disk give every checkpoint kept (objects.rs): the newest is adopted, older
    /// ones whose objects check out are held for peers, the rest are deleted.
    fn recover_with_objects(
        &mut self,
        mut records: BTreeMap<String, Vec<u8>>,
        mut candidates: BTreeMap<Seq, (ExecCheckpoint, Vec<u8>)>,
    ) {
        let mut trees = self.recover_objects(&mut records, &candidates);
        for _ in records.keys() {
            self.counters.add("recovery-unknown-record");
        }
        let Some((seq, (cp, bytes))) = candidates.pop_last() else {
            return;
        };
        let Some(tree) = trees.remove(&seq) else {
            // recover_objects cleared the objects; no checkpoint on disk is usable.
            self.found.unusable_keys.push(crate::checkpoint_key(seq));
            for older in candidates.keys() {
                self.found.unusable_keys.push(crate::checkpoint_key(*older));
            }
            return;
        };
        let loaded = self.load_all_objects(&tree)
            && self
                .app
                .objects()
                .is_some_and(|o| o.load_object_metadata(&cp.app).is_ok());
        if !loaded {
            self.counters.add("recovery-checkpoint-unloadable");
            self.found.unusable_keys.push(crate::checkpoint_key(seq));
            for older in candidates.keys() {
                self.found.unusable_keys.push(crate::checkpoint_key(*older));
            }
            self.found
                .unusable_prefixes
                .push(crate::objects::OBJECT_PREFIX.to_string());
            self.found
                .unusable_prefixes
                .push(crate::objects::DELTA_PREFIX.to_string());
            if let Some(state) = self.objects.as_mut() {
                if let Some(fresh) = crate::objects::ObjectsState::new(tree.bits()) {
                    *state = fresh;
                }
            }
            return;
        }
        self.adopt_recovered(seq, cp, bytes, Some(tree));
        for (older, (_, bytes)) in candidates {
            match trees.remove(&older) {
                Some(tree) => {
                    let token = ExecCheckpoint::token(&bytes);
                    self.transfer.held.insert(
                        older,
                        Held {
                            token,
                            bytes,
                            tree: Some(tree),
                        },
                    );
                }
                None => {
                    self.counters.add("recovery-checkpoint-objects-mismatch");
                    self.found.unusable_keys.push(crate::checkpoint_key(older));
                }
            }
        }
    }

    fn adopt_recovered(
        &mut self,
        seq: Seq,
        cp: ExecCheckpoint,
        bytes: Vec<u8>,
        tree: Option<plumb_objects::ObjectTree>,
    ) {
        let token = ExecCheckpoint::token(&bytes);
        self.executed.replies = cp.replies;
        self.executed.agreed_time = cp.agreed_time;
        self.executed.next_push = cp.next_push;
        self.executed.next_seq = seq + 1;
        self.reports.anchor(token);
        self.transfer.held.insert(seq, Held { token, bytes, tree });
        self.found.checkpoint = Some((seq, token));
    }
}
