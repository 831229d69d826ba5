//! Replica indices tagged with their role: which authentication, order or execution replica.
//!
//! Every stage numbers its replicas from 0, and node `i` of a cluster usually hosts replica `i`
//! of each stage, so the three indices look alike and were all bare `u16`. They are not
//! interchangeable: an order replica's vote counted under an execution replica's index, or a
//! checkpoint token credited to the order replica with the same number, is a quorum miscounted.
//! One type per role lets the compiler refuse such a mix-up. On the wire each is the bare number
//! (`serde(transparent)`), so messages and their digests are unchanged.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Defines one role's index type. The three differ only in name and role, so one definition
/// serves them (unlike `Seq`, `View` and `ReqNo`, whose rules differ).
macro_rules! replica_id {
    ($(#[$doc:meta])* $name:ident, $tag:literal) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u16);

        impl $name {
            /// The position of this replica in its role's list (of addresses, keys, votes).
            pub fn index(self) -> usize {
                usize::from(self.0)
            }

            /// The replica at `index` in its role's list, if the index fits the wire's `u16`.
            pub fn from_index(index: usize) -> Option<$name> {
                u16::try_from(index).ok().map($name)
            }

            /// Every replica of a role that has `count` of them, in order. A count past the
            /// `u16` range (which configuration validation refuses) stops at the last index.
            pub fn all(count: usize) -> impl Iterator<Item = $name> + Clone {
                (0..=u16::MAX).take(count).map($name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        /// As [`crate::Principal`] shows it: the role's letter and the index (`o2`).
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($tag, "{}"), self.0)
            }
        }
    };
}

replica_id!(
    /// An authentication replica's index, `0..auth` (seed 004's request quorum stage).
    AuthId,
    "a"
);
replica_id!(
    /// An order replica's index, `0..order`; the primary of view `v` is `v mod order`.
    OrderId,
    "o"
);
replica_id!(
    /// An execution replica's index, `0..exec`.
    ExecId,
    "e"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_bare_number() {
        let bare = postcard::to_allocvec(&7u16).unwrap();
        assert_eq!(postcard::to_allocvec(&OrderId(7)).unwrap(), bare);
        assert_eq!(postcard::from_bytes::<ExecId>(&bare).unwrap(), ExecId(7));
    }

    #[test]
    fn lists_and_shows_a_role() {
        assert_eq!(
            OrderId::all(3).collect::<Vec<_>>(),
            [OrderId(0), OrderId(1), OrderId(2)]
        );
        assert_eq!(ExecId::all(70_000).count(), 65_536);
        assert_eq!(AuthId::from_index(70_000), None);
        assert_eq!(AuthId::from_index(4), Some(AuthId(4)));
        assert_eq!(format!("{} {:?}", OrderId(2), ExecId(5)), "2 e5");
    }
}
