//! The primary's proposer: the next sequence number to propose, the time of the last batch, and
//! when to wait for a fuller batch. A sub-machine owning its state: the replica (agreement.rs,
//! `try_propose`) asks it whether to propose now and takes the number and time it hands out.
//!
//! Batching: with nothing in flight, what is ready goes at once (latency); with batches in
//! flight, a partial batch waits for the batch timer (throughput), and a full one never waits.

use plumb_core::Micros;
use plumb_wire::Seq;

#[derive(Debug)]
pub(crate) struct Proposer {
    /// The sequence number the next batch takes.
    next: Seq,
    /// The time of the last batch proposed: times strictly increase.
    last_time: Micros,
    /// The batch timer is set and has not fired.
    timer_armed: bool,
    /// The batch timer (or the tick) fired since the last batch: a partial batch may go.
    timer_fired: bool,
    /// A stable checkpoint moved the window during this event: the primary proposes what
    /// waited for it when the event is done (not from inside the checkpoint code, which
    /// agreement itself calls).
    window_moved: bool,
}

/// What the primary does with the requests ready now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing to propose.
    Idle,
    /// Wait for a fuller batch; `arm`: set the batch timer now.
    Wait { arm: bool },
    /// Propose a batch now.
    Propose,
}

impl Default for Proposer {
    fn default() -> Proposer {
        Proposer {
            next: Seq(1),
            last_time: 0,
            timer_armed: false,
            timer_fired: false,
            window_moved: false,
        }
    }
}

impl Proposer {
    pub fn next(&self) -> Seq {
        self.next
    }

    /// `ready` requests can go now; `fill`: a null batch is wanted even with none (a rejoining
    /// peer's fence); `in_flight`: earlier batches are not yet applied.
    pub fn step(&mut self, ready: usize, fill: bool, in_flight: bool, batch_max: usize) -> Step {
        if ready == 0 && !fill {
            self.timer_fired = false;
            return Step::Idle;
        }
        if !fill && ready < batch_max && in_flight && !self.timer_fired {
            let arm = !self.timer_armed;
            self.timer_armed = true;
            return Step::Wait { arm };
        }
        self.timer_fired = false;
        Step::Propose
    }

    /// Take the next sequence number and a batch time at or after `now`, after the last.
    pub fn take(&mut self, now: Micros) -> (Seq, Micros) {
        let seq = self.next;
        let time = now.max(self.last_time + 1);
        self.last_time = time;
        self.next += 1;
        (seq, time)
    }

    /// The batch timer fired.
    pub fn timer_fired(&mut self) {
        self.timer_armed = false;
        self.timer_fired = true;
    }

    /// A tick while primary: a partial batch may go.
    pub fn tick(&mut self) {
        self.timer_fired = true;
    }

    /// Leaving the view: a timer set in it is forgotten.
    pub fn view_left(&mut self) {
        self.timer_armed = false;
    }

    /// A new view's proposals start after `top`, the NEW-VIEW's last slot.
    pub fn view_entered(&mut self, top: Seq) {
        self.next = top + 1;
        self.timer_fired = false;
    }

    /// Restart proposing after `seq` (recovery, rejoining), the last batch at `last_time`
    /// if known.
    pub fn resume_after(&mut self, seq: Seq, last_time: Option<Micros>) {
        self.next = seq + 1;
        if let Some(t) = last_time {
            self.last_time = t;
        }
    }

    /// Batches through `seq` are applied (or their state adopted): never propose at or below.
    pub fn applied_through(&mut self, seq: Seq) {
        self.next = self.next.max(seq + 1);
    }

    pub fn note_window_moved(&mut self) {
        self.window_moved = true;
    }

    /// Whether the window moved during this event (and forget it).
    pub fn take_window_moved(&mut self) -> bool {
        std::mem::take(&mut self.window_moved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_batch_waits_for_the_timer_only_while_batches_are_in_flight() {
        let mut p = Proposer::default();
        assert_eq!(p.step(0, false, false, 8), Step::Idle);
        assert_eq!(
            p.step(1, false, false, 8),
            Step::Propose,
            "nothing in flight"
        );
        assert_eq!(p.step(1, false, true, 8), Step::Wait { arm: true });
        assert_eq!(p.step(1, false, true, 8), Step::Wait { arm: false });
        assert_eq!(p.step(8, false, true, 8), Step::Propose, "a full batch");
        p.timer_fired();
        assert_eq!(p.step(1, false, true, 8), Step::Propose);
        assert_eq!(
            p.step(0, true, true, 8),
            Step::Propose,
            "a null batch to fill"
        );
    }

    #[test]
    fn numbers_and_times_strictly_increase() {
        let mut p = Proposer::default();
        assert_eq!(p.take(100), (Seq(1), 100));
        assert_eq!(p.take(50), (Seq(2), 101), "time never goes back");
        p.applied_through(Seq(1));
        assert_eq!(p.next(), Seq(3));
        p.applied_through(Seq(9));
        assert_eq!(p.next(), Seq(10));
        p.view_entered(Seq(12));
        assert_eq!(p.take(0), (Seq(13), 102));
    }
}
