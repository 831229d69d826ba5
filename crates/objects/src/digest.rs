//! The digests of the object tree: objects, inner nodes, and empty subtrees.
//!
//! Domains are separated by key: objects and inner nodes are keyed BLAKE3 under two keys
//! derived from their names, so no object can be taken for an inner node, and an inner node's
//! digest is one compression of its children's 64 bytes (it was two with a prefix and length
//! fields; a checkpoint rehashes about a dozen inner nodes for every object written). The
//! empty object's digest is [`EMPTY_OBJECT`] (all zeroes, which BLAKE3 never yields for real
//! bytes), so an empty object and an object that never existed are indistinguishable, and a
//! subtree with no objects has a digest that depends on its height only.

use plumb_crypto::Digest;
use std::sync::OnceLock;

use crate::MAX_BITS;

/// The digest of an empty (or deleted, or never written) object.
pub const EMPTY_OBJECT: Digest = Digest::ZERO;

/// The keys of the two domains: objects, inner nodes.
fn keys() -> &'static ([u8; 32], [u8; 32]) {
    static KEYS: OnceLock<([u8; 32], [u8; 32])> = OnceLock::new();
    KEYS.get_or_init(|| {
        (
            Digest::derive_key("plumb 2026 object tree: object bytes"),
            Digest::derive_key("plumb 2026 object tree: inner node"),
        )
    })
}

/// The digest of an object's bytes; empty bytes are the empty object.
pub fn object_digest(bytes: Option<&[u8]>) -> Digest {
    match bytes {
        None | Some([]) => EMPTY_OBJECT,
        Some(b) => Digest::keyed(&keys().0, b),
    }
}

/// The digest of an inner node from its children's digests.
pub fn node_digest(left: &Digest, right: &Digest) -> Digest {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(&left.0);
    block[32..].copy_from_slice(&right.0);
    Digest::keyed(&keys().1, &block)
}

/// The digest of a subtree of `height` levels (0: a leaf) holding no object.
pub fn empty_subtree(height: u8) -> Digest {
    static EMPTY: OnceLock<Vec<Digest>> = OnceLock::new();
    let table = EMPTY.get_or_init(|| {
        let mut t = vec![EMPTY_OBJECT];
        for h in 0..MAX_BITS as usize {
            let below = t[h];
            t.push(node_digest(&below, &below));
        }
        t
    });
    // Heights above MAX_BITS never occur in a tree; a caller passing one gets the top value
    // rather than a panic (it can only fail a comparison).
    table[usize::from(height).min(table.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_bytes_are_the_empty_object() {
        assert_eq!(object_digest(None), EMPTY_OBJECT);
        assert_eq!(object_digest(Some(b"")), EMPTY_OBJECT);
        assert_ne!(object_digest(Some(b"x")), EMPTY_OBJECT);
    }

    #[test]
    fn objects_and_nodes_are_apart() {
        let (a, b) = (Digest([1; 32]), Digest([2; 32]));
        let mut both = a.0.to_vec();
        both.extend_from_slice(&b.0);
        assert_ne!(node_digest(&a, &b), object_digest(Some(&both)));
        assert_ne!(node_digest(&a, &b), node_digest(&b, &a));
        assert_ne!(object_digest(Some(&both)), Digest::of(&both));
    }

    #[test]
    fn empty_subtrees_chain() {
        assert_eq!(empty_subtree(0), EMPTY_OBJECT);
        for h in 0..MAX_BITS {
            let b = empty_subtree(h);
            assert_eq!(empty_subtree(h + 1), node_digest(&b, &b));
        }
        assert_eq!(empty_subtree(200), empty_subtree(MAX_BITS));
    }
}
