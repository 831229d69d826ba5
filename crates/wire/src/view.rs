//! The view number: which order replica leads agreement, and which attempt at agreement a
//! message belongs to.

use crate::OrderId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A view of the order stage, from 0. The primary of view `v` among `n` order replicas is
/// replica `v mod n` (seed 004 §6, PBFT). Its own type so that a view is never taken for a
/// batch number or a count (both were bare `u64`); on the wire it is the bare number
/// (`serde(transparent)`), so messages and their digests are unchanged.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct View(pub u64);

impl View {
    /// The view every replica fresh from `plumb init` starts in.
    pub const ZERO: View = View(0);

    /// The view after this one. Saturates: a faulty peer may name the last view, and no
    /// correct cluster reaches it.
    pub fn next(self) -> View {
        View(self.0.saturating_add(1))
    }

    /// The view `k` after this one, saturating as [`View::next`] does.
    pub fn plus(self, k: u64) -> View {
        View(self.0.saturating_add(k))
    }

    /// The index of this view's primary among `order` order replicas (`order > 0`).
    pub fn primary(self, order: usize) -> OrderId {
        debug_assert!(order > 0, "a view's primary among no replicas");
        OrderId((self.0 % order.max(1) as u64) as u16)
    }

    /// The bytes a signature over a view covers.
    pub fn to_le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_bare_number() {
        let bare = postcard::to_allocvec(&7u64).unwrap();
        assert_eq!(postcard::to_allocvec(&View(7)).unwrap(), bare);
        assert_eq!(postcard::from_bytes::<View>(&bare).unwrap(), View(7));
    }

    #[test]
    fn primary_rotates_and_next_saturates() {
        assert_eq!(View(0).primary(4), OrderId(0));
        assert_eq!(View(5).primary(4), OrderId(1));
        assert_eq!(View(u64::MAX).next(), View(u64::MAX));
        assert_eq!(View(3).plus(2), View(5));
        assert_eq!(View(12).to_string(), "12");
    }
}
