//! The request number: which of one client's requests a message is about.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A client's request number `n_c` (seed 004 §5): 1 for a client's first request, one more for
/// each next one; 0 means "none yet" (a fresh client's record, a LAST-REQUEST answer for a
/// client no replica has heard of). Its own type so that a request number is never taken for a
/// batch number, a view or a client id (all were bare integers); on the wire it is the bare
/// number (`serde(transparent)`), so messages and their digests are unchanged.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct ReqNo(pub u64);

impl ReqNo {
    /// No request yet: what a client's record holds before its first request.
    pub const NONE: ReqNo = ReqNo(0);
    /// The last number: the top of a range over every number.
    pub const MAX: ReqNo = ReqNo(u64::MAX);

    /// The number after this one. Saturates: a faulty client or replica may name the last
    /// number, and no correct client reaches it.
    pub fn next(self) -> ReqNo {
        ReqNo(self.0.saturating_add(1))
    }

    /// The number `k` after this one, saturating as [`ReqNo::next`] does.
    pub fn plus(self, k: u64) -> ReqNo {
        ReqNo(self.0.saturating_add(k))
    }

    /// The bytes a request's identity digest covers.
    pub fn to_le_bytes(self) -> [u8; 8] {
        self.0.to_le_bytes()
    }
}

impl fmt::Display for ReqNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_bare_number() {
        let bare = postcard::to_allocvec(&9u64).unwrap();
        assert_eq!(postcard::to_allocvec(&ReqNo(9)).unwrap(), bare);
        assert_eq!(postcard::from_bytes::<ReqNo>(&bare).unwrap(), ReqNo(9));
    }

    #[test]
    fn next_counts_up_and_saturates() {
        assert_eq!(ReqNo::NONE.next(), ReqNo(1));
        assert_eq!(ReqNo(3).plus(2), ReqNo(5));
        assert_eq!(ReqNo(u64::MAX).next(), ReqNo(u64::MAX));
        assert_eq!(ReqNo(12).to_string(), "12");
    }
}
