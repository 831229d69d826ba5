//! Syncs take time, as in the production runner (`plumb_runtime::runner`): a stage's `Sync`
//! begins after the event that asked for it, completes after a simulated `fdatasync` latency,
//! and meanwhile the stage goes on handling events. Every visible action after a `Sync`
//! (send, completion, push, observation) is held until a sync begun after it completes; a
//! crash before then loses the held actions with the unsynced writes. Only
//! `Action::SendUnsynced` leaves at once. So a crash can land between a message a stage sent
//! ahead of its disk and the record behind it, which is what ahead-of-disk sends must survive.
//!
//! Latency: mostly a fraction of a millisecond, sometimes a few milliseconds, and rarely a
//! stall of 20-150 ms, the range a shared disk showed on the development machine (the
//! stalls that used to stop a primary's PRE-PREPAREs long enough for a backup to suspect it).

use super::{Ev, World};
use crate::app::SimApp;
use crate::rng::SimRng;
use plumb_core::{Action, Observation, StoreOp};
use plumb_wire::Micros;
use std::collections::VecDeque;

/// One stage's syncs. Numbered from 1 in the order they begin; at most one is in flight.
#[derive(Default)]
pub(super) struct Syncs {
    /// A `Sync` was asked for since the latest sync began.
    wanted: bool,
    begun: u64,
    done: u64,
    /// Visible actions in order, each with the sync it waits for.
    held: VecDeque<(u64, Action)>,
}

impl Syncs {
    /// The sync an action carried out now must wait for (`<= done`: none).
    fn needed(&self) -> u64 {
        self.begun + u64::from(self.wanted)
    }

    /// A sync asked for is not complete: what was written since the last one is not durable.
    pub(super) fn pending(&self) -> bool {
        self.needed() > self.done
    }

    /// Hold `action` if a sync asked for before it is not complete; otherwise give it back.
    pub(super) fn hold(&mut self, action: Action) -> Option<Action> {
        match action {
            Action::Store(StoreOp::Sync) => {
                self.wanted = true;
                None
            }
            // An execution replica's reports leave ahead of its syncs (docs/protocol.md
            // "Execution ahead of its checkpoint"), so the checker learns of them as the order
            // stage does, also from a life that a crash cuts short.
            Action::Observe(Observation::BatchReported(_)) => Some(action),
            Action::Send { .. }
            | Action::Complete { .. }
            | Action::Pushed { .. }
            | Action::Observe(_)
                if self.needed() > self.done =>
            {
                self.held.push_back((self.needed(), action));
                None
            }
            other => Some(other),
        }
    }
}

/// A simulated `fdatasync`'s duration.
pub(super) fn sync_latency(rng: &mut SimRng) -> Micros {
    if rng.chance(0.005) {
        rng.range(20_000, 150_000)
    } else if rng.chance(0.05) {
        rng.range(1_000, 5_000)
    } else {
        rng.range(50, 800)
    }
}

impl<A: SimApp> World<'_, A> {
    /// After node `i` carried out actions: begin the sync they asked for, unless one is in
    /// flight (it begins when that one completes).
    pub(super) fn begin_sync(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if !node.syncs.wanted || node.syncs.begun > node.syncs.done || node.stage.is_none() {
            return;
        }
        // What the stage kept back for this sync, held behind it (`wanted` is still set).
        self.before_sync(i);
        let node = &mut self.nodes[i];
        node.syncs.wanted = false;
        node.syncs.begun += 1;
        let life = node.incarnation;
        let at = self.now + sync_latency(&mut self.sync_rng);
        self.push(at, Ev::Synced { node: i, life });
    }

    /// Node `i`'s sync in flight completed: everything written so far is durable; release
    /// what waited for it and begin the next.
    pub(super) fn synced(&mut self, i: usize, life: u64) {
        if self.nodes[i].incarnation != life || self.nodes[i].stage.is_none() {
            return;
        }
        self.nodes[i].disk.apply(StoreOp::Sync);
        let syncs = &mut self.nodes[i].syncs;
        syncs.done = syncs.begun;
        let done = syncs.done;
        let mut released = Vec::new();
        while syncs.held.front().is_some_and(|(need, _)| *need <= done) {
            if let Some((_, action)) = syncs.held.pop_front() {
                released.push(action);
            }
        }
        // Performed, not held again behind a sync asked for since: they keep their order.
        for action in released {
            self.perform(i, action);
        }
        self.begin_sync(i);
    }
}
