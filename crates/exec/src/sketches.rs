//! D-Prophecy's history at an execution replica (seed 000 §3.2): for each read operation this
//! replica executed on the ordered path, the digest of the answer it gave. A client's
//! [`Message::FastRead`](plumb_wire::Message::FastRead) that another replica executes is
//! answered from here, so the client can check the executor's answer against what every
//! replica last answered on the ordered path.
//!
//! Only operations the application calls reads ([`plumb_app::Application::is_read`]) are
//! recorded. The history is not replicated state: it is never checkpointed, starts empty after a
//! restart or a state transfer (a replica that has no entry cannot vouch, and the read is then
//! ordered), and each replica bounds it on its own. Correct replicas record in execution order,
//! so an entry always holds the answer of the latest ordered execution this replica performed.
//!
//! The history stays off until the first D-Prophecy read reaches this replica: asking the
//! application whether an operation is a read costs a decoding per ordered request, which a
//! cluster whose clients never use D-Prophecy should not pay. The first reads after that find
//! no entry and are ordered, as after a restart.

use plumb_crypto::Digest;
use std::collections::{HashMap, VecDeque};

/// Entries kept before the oldest recorded is forgotten.
pub const SKETCH_HISTORY_MAX: usize = 100_000;

#[derive(Default)]
pub(crate) struct SketchHistory {
    /// A D-Prophecy read has arrived since this replica started: record ordered reads.
    active: bool,
    /// Operation digest -> (answer digest, generation of its last recording).
    entries: HashMap<Digest, (Digest, u64)>,
    /// Recording order, with generations; a stale pair (re-recorded since) is skipped.
    order: VecDeque<(Digest, u64)>,
    generation: u64,
}

impl SketchHistory {
    pub(crate) fn active(&self) -> bool {
        self.active
    }

    pub(crate) fn activate(&mut self) {
        self.active = true;
    }

    pub(crate) fn record(&mut self, op: Digest, answer: Digest) {
        debug_assert!(self.active, "recorded while off");
        self.generation += 1;
        self.entries.insert(op, (answer, self.generation));
        self.order.push_back((op, self.generation));
        while self.entries.len() > SKETCH_HISTORY_MAX {
            let Some((old, generation)) = self.order.pop_front() else {
                break;
            };
            if self
                .entries
                .get(&old)
                .is_some_and(|(_, g)| *g == generation)
            {
                self.entries.remove(&old);
            }
        }
        // Re-recorded operations leave stale pairs behind; drop them once they dominate.
        if self.order.len() > 2 * SKETCH_HISTORY_MAX.max(self.entries.len()) {
            let entries = &self.entries;
            self.order
                .retain(|(op, g)| entries.get(op).is_some_and(|(_, eg)| eg == g));
        }
        debug_assert!(self.entries.len() <= SKETCH_HISTORY_MAX);
    }

    pub(crate) fn get(&self, op: &Digest) -> Option<Digest> {
        self.entries.get(op).map(|(answer, _)| *answer)
    }

    /// Forget everything: the state this history described was replaced (a checkpoint load).
    pub(crate) fn clear(&mut self) {
        *self = SketchHistory {
            active: self.active,
            ..SketchHistory::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_answer_and_stays_bounded() {
        let mut h = SketchHistory::default();
        h.activate();
        let d = |i: u64| Digest::of(&i.to_le_bytes());
        h.record(d(1), d(10));
        h.record(d(1), d(11));
        assert_eq!(h.get(&d(1)), Some(d(11)));
        for i in 0..(SKETCH_HISTORY_MAX as u64 + 10) {
            h.record(d(1000 + i), d(i));
        }
        assert!(h.entries.len() <= SKETCH_HISTORY_MAX);
        assert_eq!(h.get(&d(1)), None, "the oldest entry was forgotten");
        assert!(h.get(&d(1000 + SKETCH_HISTORY_MAX as u64)).is_some());
    }
}
