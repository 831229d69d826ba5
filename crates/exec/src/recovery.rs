//! Restart after a crash (seed 004 §5.3.2, ES4, ES5): load the newest checkpoint on disk that
//! decodes and that the application accepts; batches after it are replayed through the normal
//! catch-up path (LAST-EXEC on Start).

use crate::checkpoint::{parse_checkpoint_key, ExecCheckpoint};
use crate::{ExecReplica, Held};
use plumb_app::Application;
use plumb_core::Recovered;
use plumb_wire::Seq;
use std::collections::BTreeMap;

impl<A: Application> ExecReplica<A> {
    pub(crate) fn recover(&mut self, recovered: Recovered) {
        for key in recovered.corrupt {
            // The driver's checksum failed: never trust it, and clear it on Start.
            self.counters.add("recovery-corrupt-record");
            if parse_checkpoint_key(&key).is_some() {
                self.unusable_keys.push(key);
            }
        }
        let mut candidates: BTreeMap<Seq, (ExecCheckpoint, Vec<u8>)> = BTreeMap::new();
        for (key, bytes) in recovered.records {
            let Some(seq) = parse_checkpoint_key(&key) else {
                self.counters.add("recovery-unknown-record");
                continue;
            };
            match ExecCheckpoint::decode(&bytes) {
                Some(cp) if cp.seq == seq => {
                    candidates.insert(seq, (cp, bytes));
                }
                _ => {
                    self.counters.add("recovery-undecodable-checkpoint");
                    self.unusable_keys.push(key);
                }
            }
        }
        while let Some((seq, (cp, bytes))) = candidates.pop_last() {
            if self.app.load_checkpoint(&cp.app).is_err() {
                self.counters.add("recovery-checkpoint-unloadable");
                self.unusable_keys.push(crate::checkpoint_key(seq));
                continue;
            }
            let token = ExecCheckpoint::token(&bytes);
            self.replies = cp.replies;
            self.agreed_time = cp.agreed_time;
            self.next_push = cp.next_push;
            self.next_seq = seq + 1;
            self.checkpoints.insert(seq, Held { token, bytes });
            self.recovered_checkpoint = Some((seq, token));
            break;
        }
        // Older checkpoints stay available to peers and to a LOAD-CP naming them.
        for (seq, (_, bytes)) in candidates {
            let token = ExecCheckpoint::token(&bytes);
            self.checkpoints.insert(seq, Held { token, bytes });
        }
    }
}
