//! The small value types the sketcher works with.

use plumb_crypto::Digest;
use std::fmt;

/// The sketch of a request, s(q), or of a response, s(r): a BLAKE3 digest of the parts that
/// matter (the caller strips extraneous or non-deterministic parts before sketching).
///
/// A newtype so that a request sketch, a response sketch and any other digest are not mixed
/// up by accident at a call site.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sketch(pub Digest);

impl Sketch {
    /// The sketch of some bytes.
    pub fn of(bytes: &[u8]) -> Sketch {
        Sketch(Digest::of(bytes))
    }

    /// The point of this sketch on the consistent-hashing ring: its first eight bytes, big
    /// endian. Big endian so that the order of points is the order of sketches (the history
    /// table is ordered by sketch), which keeps a ring arc a contiguous key range.
    pub fn point(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0 .0[..8]);
        u64::from_be_bytes(b)
    }
}

impl fmt::Debug for Sketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{:?}", self.0)
    }
}

/// The position in the replica group's total order that a replicated reply reflects: the
/// sequence number of the batch that carried the request and the index of the request in
/// that batch.
///
/// Why not the batch sequence number alone: one batch may carry a write to an object
/// between two reads of it (`[read x, write x, read x]`). Both reads then have the same
/// `seq` but reflect different states; ordered by `seq` alone the sketcher could not tell
/// which reply is the newer one and could keep the older, which is exactly what Algorithm 1's
/// sequence-number check is there to prevent. `(seq, index)` is a total order on requests;
/// the derived `Ord` compares `seq` first, then `index` (field order matters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    pub seq: u64,
    pub index: u32,
}

impl Position {
    pub const fn new(seq: u64, index: u32) -> Position {
        Position { seq, index }
    }
}

/// How a request is to be handled regardless of its history (the paper's 2-bit value b).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Listing {
    /// The default: fast if the table has an entry, replicated otherwise.
    #[default]
    Neither,
    /// Always fast, and any fast reply is accepted (the operator vouches that the response
    /// never changes, e.g. static content). Outside delay-once, by the operator's choice.
    White,
    /// Always replicated.
    Black,
}
