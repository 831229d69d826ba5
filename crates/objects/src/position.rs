//! Where a node sits in a tree of `bits` levels: `depth` from the root (0) down to the
//! leaves (`bits`), and `index` among the `2^depth` nodes of its depth. The leaf of object
//! `id` is at `(bits, id)`; the children of `(d, i)` are `(d + 1, 2i)` and `(d + 1, 2i + 1)`.

use plumb_app::ObjectId;

/// A node's position in an object tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodePos {
    /// Levels below the root (0: the root).
    pub depth: u8,
    /// Index among the nodes of this depth, below `2^depth`.
    pub index: u64,
}

impl NodePos {
    /// The root.
    pub const ROOT: NodePos = NodePos { depth: 0, index: 0 };

    /// The leaf of object `id` in a tree of `bits` levels.
    pub fn leaf(bits: u8, id: ObjectId) -> NodePos {
        NodePos {
            depth: bits,
            index: id.0,
        }
    }

    /// Whether this position exists in a tree of `bits` levels (remote input is checked with
    /// this before any use).
    pub fn is_valid(&self, bits: u8) -> bool {
        self.depth <= bits && self.depth < 64 && self.index >> self.depth == 0
    }

    /// Levels between this node and the leaves of a tree of `bits` levels.
    pub fn height(&self, bits: u8) -> u8 {
        bits.saturating_sub(self.depth)
    }

    /// The left (`right == false`) or right child.
    pub fn child(&self, right: bool) -> NodePos {
        NodePos {
            depth: self.depth + 1,
            index: (self.index << 1) | u64::from(right),
        }
    }

    /// The object of a leaf position.
    pub fn object(&self) -> ObjectId {
        ObjectId(self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_bounds_checked() {
        assert!(NodePos::ROOT.is_valid(0));
        assert!(NodePos { depth: 3, index: 7 }.is_valid(3));
        assert!(!NodePos { depth: 3, index: 8 }.is_valid(3));
        assert!(!NodePos { depth: 4, index: 0 }.is_valid(3));
        assert!(!NodePos {
            depth: 255,
            index: u64::MAX
        }
        .is_valid(32));
        assert_eq!(NodePos::ROOT.child(true), NodePos { depth: 1, index: 1 });
    }
}
