//! The batch number: where a batch stands in the agreed order.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};
use std::str::FromStr;

/// A batch number `n_o` (seed 004 §5): 1 for the first batch the order stage agrees on, one
/// more for each next one; 0 means "none yet" (the genesis checkpoint, a fresh replica's
/// log). Its own type so that a batch number is never taken for a view, a request number or a
/// count (all were bare `u64`); on the wire it is the bare number (`serde(transparent)`), so
/// messages and their digests are unchanged.
///
/// Arithmetic is that of a position and a distance: a batch number plus a count is a batch
/// number (`seq + 1`), the difference of two batch numbers is a count (`seq - stable`), and a
/// batch number minus a count is a batch number. It overflows exactly as the bare `u64` did;
/// where a faulty peer may name the number, use the saturating [`Seq::next`], [`Seq::plus`]
/// and [`Seq::since`].
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Seq(pub u64);

impl Seq {
    /// No batch yet: the genesis checkpoint's number and an empty log's last.
    pub const ZERO: Seq = Seq(0);
    /// The last number: the top of a range over every number.
    pub const MAX: Seq = Seq(u64::MAX);

    /// The batch after this one, saturating: a faulty peer may name the last number, and no
    /// correct cluster reaches it.
    pub fn next(self) -> Seq {
        Seq(self.0.saturating_add(1))
    }

    /// The batch `k` after this one, saturating as [`Seq::next`] does.
    pub fn plus(self, k: u64) -> Seq {
        Seq(self.0.saturating_add(k))
    }

    /// The batch `k` before this one, or [`Seq::ZERO`].
    pub fn minus(self, k: u64) -> Seq {
        Seq(self.0.saturating_sub(k))
    }

    /// How many batches this one lies after `earlier`; 0 if it does not.
    pub fn since(self, earlier: Seq) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Whether a checkpoint is taken after this batch: every `interval` batches.
    pub fn is_multiple_of(self, interval: u64) -> bool {
        self.0.is_multiple_of(interval)
    }

    /// Which checkpoint interval of `every` batches this batch falls in (`seq / every`):
    /// batches `k * every` through `(k + 1) * every - 1` form interval `k`.
    pub fn interval(self, every: u64) -> u64 {
        self.0 / every
    }

    /// The checkpoint (a multiple of `every`) at or above this batch.
    pub fn round_up(self, every: u64) -> Seq {
        Seq(self.0.div_ceil(every) * every)
    }

    /// The checkpoint (a multiple of `every`) at or below this batch.
    pub fn round_down(self, every: u64) -> Seq {
        Seq(self.0 / every * every)
    }

    /// The batches from this one to `last`, both included.
    pub fn through(self, last: Seq) -> impl DoubleEndedIterator<Item = Seq> {
        (self.0..=last.0).map(Seq)
    }

    /// The bytes a digest or signature over a batch number covers.
    pub fn to_le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }
}

impl Add<u64> for Seq {
    type Output = Seq;
    fn add(self, k: u64) -> Seq {
        Seq(self.0 + k)
    }
}

impl AddAssign<u64> for Seq {
    fn add_assign(&mut self, k: u64) {
        self.0 += k;
    }
}

impl Sub<u64> for Seq {
    type Output = Seq;
    fn sub(self, k: u64) -> Seq {
        Seq(self.0 - k)
    }
}

impl Sub<Seq> for Seq {
    type Output = u64;
    fn sub(self, earlier: Seq) -> u64 {
        self.0 - earlier.0
    }
}

/// Parses the bare number, as [`fmt::Display`] prints it (storage keys name batches so).
impl FromStr for Seq {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Seq, Self::Err> {
        s.parse().map(Seq)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_bare_number() {
        let bare = postcard::to_allocvec(&300u64).unwrap();
        assert_eq!(postcard::to_allocvec(&Seq(300)).unwrap(), bare);
        assert_eq!(postcard::from_bytes::<Seq>(&bare).unwrap(), Seq(300));
    }

    #[test]
    fn positions_and_distances() {
        assert_eq!(Seq(5) + 2, Seq(7));
        assert_eq!(Seq(7) - Seq(5), 2);
        assert_eq!(Seq(7) - 2, Seq(5));
        assert_eq!(Seq(3).since(Seq(5)), 0);
        assert_eq!(Seq(2).minus(5), Seq::ZERO);
        assert_eq!(Seq::MAX.next(), Seq::MAX);
        assert!(Seq(256).is_multiple_of(128) && !Seq(257).is_multiple_of(128));
        assert_eq!(
            Seq(1).through(Seq(3)).collect::<Vec<_>>(),
            [Seq(1), Seq(2), Seq(3)]
        );
        assert_eq!(Seq(12).to_string(), "12");
        assert_eq!("12".parse::<Seq>(), Ok(Seq(12)));
        assert_eq!(
            (
                Seq(300).interval(128),
                Seq(300).round_up(128),
                Seq(300).round_down(128)
            ),
            (2, Seq(384), Seq(256))
        );
    }
}
