//! Per-entry transition statistics: which of an entry's most recent reads were transitions.

/// The outcomes of the last `cap` reads of one entry, newest in the lowest bit; a set bit is
/// a transition. Fixed size (one word) so that an entry stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TransitionWindow {
    bits: u64,
    len: u8,
}

impl TransitionWindow {
    /// Record one read, `cap` being the window size (1..=64, validated by the config).
    pub(crate) fn push(&mut self, transition: bool, cap: u8) {
        debug_assert!((1..=64).contains(&cap));
        let mask = if cap >= 64 {
            u64::MAX
        } else {
            (1u64 << cap) - 1
        };
        self.bits = ((self.bits << 1) | u64::from(transition)) & mask;
        self.len = self.len.saturating_add(1).min(cap);
        debug_assert!(self.bits.count_ones() <= u32::from(self.len));
    }

    /// Forget the recorded reads (after the entry was blacklisted, so that the reads during
    /// the cool-down decide whether it is blacklisted again).
    pub(crate) fn clear(&mut self) {
        *self = TransitionWindow::default();
    }

    /// How many of the recorded reads were transitions.
    pub fn transitions(&self) -> u32 {
        self.bits.count_ones()
    }

    /// How many reads are recorded (at most the window size).
    pub fn reads(&self) -> u32 {
        u32::from(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_only_the_last_cap_reads() {
        let mut w = TransitionWindow::default();
        for _ in 0..5 {
            w.push(true, 8);
        }
        assert_eq!((w.transitions(), w.reads()), (5, 5));
        for _ in 0..8 {
            w.push(false, 8);
        }
        assert_eq!((w.transitions(), w.reads()), (0, 8));
        w.push(true, 8);
        assert_eq!(w.transitions(), 1);
        let mut full = TransitionWindow::default();
        for _ in 0..100 {
            full.push(true, 64);
        }
        assert_eq!((full.transitions(), full.reads()), (64, 64));
        full.clear();
        assert_eq!((full.transitions(), full.reads()), (0, 0));
    }
}
