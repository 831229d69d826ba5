//! Partial trees (docs/objects.md "Partial state"): subtrees held as digests, objects filled
//! in with proofs, writes and roots as on the whole tree.

use super::{objects, tree_of, writes};
use crate::*;
use plumb_crypto::Digest;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A position of depth 0 to `bits` in a tree of `bits`, from two random numbers.
fn position(bits: u8, depth: u8, index: u64) -> NodePos {
    let depth = depth % (bits + 1);
    NodePos {
        depth,
        index: index & ((1u64 << depth) - 1),
    }
}

/// Whether object `id` lies under `pos` in a tree of `bits`.
fn under(bits: u8, pos: NodePos, id: u64) -> bool {
    id >> (bits - pos.depth) == pos.index
}

proptest! {
    /// Pruning keeps the root and makes exactly the slots under non-empty pruned subtrees
    /// missing; filling every non-empty object back, with proofs from the whole tree and in
    /// any order, makes it whole again.
    #[test]
    fn prune_then_fill_gives_the_whole_tree_back(
        objs in objects(6),
        cuts in prop::collection::vec((any::<u8>(), any::<u64>()), 0..6),
        order in any::<u64>(),
    ) {
        let whole = tree_of(6, &objs);
        let mut part = whole.clone();
        let mut cut = Vec::new();
        for (depth, index) in cuts {
            let pos = position(6, depth, index);
            part.prune(pos);
            part.check_invariants();
            cut.push(pos);
        }
        prop_assert_eq!(part.root(), whole.root());
        for i in 0..64u64 {
            let id = ObjectId(i);
            let gone = cut.iter().any(|pos| {
                under(6, *pos, i) && objs.keys().any(|k| under(6, *pos, *k))
            });
            if gone {
                prop_assert_eq!(part.lookup(id), Held::Missing);
                prop_assert!(part.proof(id).is_none());
            } else {
                prop_assert_eq!(part.lookup(id), whole.lookup(id));
            }
        }
        prop_assert_eq!(part.is_complete(), part.missing_positions(100).is_empty());
        // Fill the non-empty objects, starting at a random one.
        let ids: Vec<u64> = objs.keys().copied().collect();
        let start = if ids.is_empty() { 0 } else { (order as usize) % ids.len() };
        for &i in ids[start..].iter().chain(&ids[..start]) {
            let id = ObjectId(i);
            let proof = whole.proof(id).unwrap();
            let was_missing = part.lookup(id) == Held::Missing;
            prop_assert_eq!(part.fill(id, whole.get(id).cloned(), &proof), Ok(was_missing));
            prop_assert_eq!(part.root(), whole.root());
        }
        part.check_invariants();
        prop_assert!(part.is_complete());
        prop_assert_eq!(part.diff(&whole).unwrap(), Vec::<ObjectId>::new());
        prop_assert_eq!(part.len(), whole.len());
    }

    /// A replica that holds a subtree as a digest agreed elsewhere (selective execution's
    /// certified partition roots): after its own writes, setting each subtree it did not keep
    /// current to the digest the up-to-date tree has there gives that tree's root; the
    /// objects outside stay held, with proofs against the new root, and those inside are
    /// missing (or known empty). A subtree inside a missing one cannot be set.
    #[test]
    fn a_subtree_set_to_an_agreed_digest_gives_the_agreed_root(
        objs in objects(6),
        ws in writes(6),
        cuts in prop::collection::vec((1u8..=6, any::<u64>()), 1..4),
    ) {
        let before = tree_of(6, &objs);
        let mut current = before.clone();
        current.apply_vecs(ws.iter().map(|(k, v)| (ObjectId(*k), v.clone()))).unwrap();
        let cuts: Vec<NodePos> = cuts.into_iter().map(|(d, i)| position(6, d, i)).collect();
        // This replica ran only the writes outside the cut subtrees.
        let mut stale = before.clone();
        stale
            .apply_vecs(
                ws.iter()
                    .filter(|(k, _)| !cuts.iter().any(|c| under(6, *c, *k)))
                    .map(|(k, v)| (ObjectId(*k), v.clone())),
            )
            .unwrap();
        for &pos in &cuts {
            // A cut inside one set before lies in a missing subtree, unless that one was empty.
            let inside = stale.node_digest(pos).is_none();
            let result = stale.set_subtree_digest(pos, current.node_digest(pos).unwrap());
            prop_assert_eq!(result.is_err(), inside, "{:?}", pos);
            stale.check_invariants();
        }
        prop_assert_eq!(stale.root(), current.root());
        for i in 0..64u64 {
            let id = ObjectId(i);
            if cuts.iter().any(|c| under(6, *c, i)) {
                prop_assert!(matches!(stale.lookup(id), Held::Missing | Held::Object(None)));
            } else {
                prop_assert_eq!(stale.lookup(id), current.lookup(id));
                let proof = stale.proof(id).unwrap();
                let bytes = current.get(id).map(|b| b.to_vec());
                prop_assert_eq!(proof.verify(current.root(), 6, id, bytes.as_deref()), Ok(()));
            }
        }
    }

    /// A tree that starts from a root alone holds nothing; its writes are refused until the
    /// objects are filled; then writes give the root the whole tree gets from the same
    /// writes.
    #[test]
    fn writes_on_a_partial_tree_equal_writes_on_the_whole(objs in objects(6), ws in writes(6)) {
        let whole = tree_of(6, &objs);
        let mut part = ObjectTree::pruned(6, whole.root()).unwrap();
        prop_assert_eq!(part.root(), whole.root());
        prop_assert_eq!(part.is_complete(), objs.is_empty());
        let written: Vec<ObjectId> = ws.iter().map(|(k, _)| ObjectId(*k)).collect();
        let batch = || ws.iter().map(|(k, v)| (ObjectId(*k), v.clone()));
        let lacking = part.missing_of(&written);
        if let Some(first) = lacking.first() {
            prop_assert_eq!(part.apply_vecs(batch()), Err(TreeError::Missing(*first)));
            prop_assert_eq!(part.root(), whole.root());
        }
        for id in lacking {
            // An earlier fill may have shown it empty (its subtree's digest), or it repeats.
            let still = part.lookup(id) == Held::Missing;
            let proof = whole.proof(id).unwrap();
            prop_assert_eq!(part.fill(id, whole.get(id).cloned(), &proof), Ok(still));
        }
        prop_assert!(part.missing_of(&written).is_empty());
        let mut after = whole.clone();
        after.apply_vecs(batch()).unwrap();
        part.apply_vecs(batch()).unwrap();
        part.check_invariants();
        prop_assert_eq!(part.root(), after.root());
        for id in &written {
            prop_assert_eq!(part.lookup(*id), after.lookup(*id));
            let proof = part.proof(*id).unwrap();
            let bytes = after.get(*id).map(|b| b.to_vec());
            prop_assert_eq!(proof.verify(after.root(), 6, *id, bytes.as_deref()), Ok(()));
        }
    }

    /// A fill is judged against the digest of the missing subtree alone: bytes other than the
    /// tree's, or a proof tampered with below it, are refused and change nothing; a proof
    /// from a later state whose changes all lie outside that subtree is accepted.
    #[test]
    fn fills_prove_against_the_missing_subtree(objs in objects(6), id in 0u64..64, flip in any::<u8>()) {
        let whole = tree_of(6, &objs);
        let mut part = whole.clone();
        let pos = NodePos { depth: 3, index: id >> 3 };
        part.prune(pos);
        let target = ObjectId(id);
        if part.lookup(target) != Held::Missing {
            // The eighth of the slots holding `id` is empty: pruning leaves it known.
            prop_assert!(objs.keys().all(|k| !under(6, pos, *k)));
            return Ok(());
        }
        let before = part.clone();
        let bytes = whole.get(target).cloned();
        let proof = whole.proof(target).unwrap();
        let mut other = bytes.as_deref().unwrap_or_default().to_vec();
        other.push(flip);
        prop_assert_eq!(part.fill(target, Some(other.into()), &proof), Err(FillError::ProofMismatch(target)));
        let mut bad = proof.clone();
        bad.siblings[usize::from(flip % 3)].0[0] ^= 1;
        prop_assert_eq!(part.fill(target, bytes.clone(), &bad), Err(FillError::ProofMismatch(target)));
        let short = Proof { siblings: proof.siblings[..5].to_vec() };
        let too_short = Err(FillError::ProofLength { got: 5, want: 6 });
        prop_assert_eq!(part.fill(target, bytes.clone(), &short), too_short);
        prop_assert_eq!(part.root(), before.root());
        prop_assert_eq!(part.missing_subtrees(), before.missing_subtrees());
        // A later state that changed only an object outside the pruned subtree.
        let outside = ObjectId(((pos.index ^ 1) << 3) | (id & 7));
        let mut later = whole.clone();
        later.apply_vecs([(outside, Some(vec![flip, 1]))]).unwrap();
        prop_assert_eq!(part.fill(target, bytes, &later.proof(target).unwrap()), Ok(true));
        prop_assert_eq!(part.root(), whole.root());
        part.check_invariants();
    }

    /// A background fill: from the root alone, expanding each missing subtree with the whole
    /// tree's children digests, then filling the missing leaves, gives the whole tree back;
    /// children that do not hash to the subtree's digest are refused and change nothing.
    #[test]
    fn expanding_missing_subtrees_walks_down_to_the_whole_tree(objs in objects(6), flip in any::<u8>()) {
        let whole = tree_of(6, &objs);
        let mut part = ObjectTree::pruned(6, whole.root()).unwrap();
        let mut lies = 0;
        while let Some(&pos) = part.missing_positions(1).first() {
            part.check_invariants();
            if pos.depth == 6 {
                let id = ObjectId(pos.index);
                let bytes = whole.get(id).cloned();
                prop_assert_eq!(part.fill(id, bytes, &whole.proof(id).unwrap()), Ok(true));
                continue;
            }
            let (l, r) = whole.children(pos).unwrap();
            if lies < 2 {
                lies += 1;
                let mut forged = l;
                forged.0[usize::from(flip % 32)] ^= 1;
                let before = part.missing_subtrees();
                prop_assert_eq!(part.expand_missing(pos, forged, r), Err(FillError::ChildrenMismatch(pos)));
                prop_assert_eq!(part.missing_subtrees(), before);
            }
            prop_assert_eq!(part.expand_missing(pos, l, r), Ok(true));
            // Asked twice (an answer that came late): nothing left to expand there.
            prop_assert_eq!(part.expand_missing(pos, l, r), Ok(false));
        }
        prop_assert!(part.is_complete());
        prop_assert_eq!(part.root(), whole.root());
        prop_assert_eq!(part.diff(&whole), Ok(vec![]));
        part.check_invariants();
    }

    /// Grafting from a former state: every subtree whose digest is unchanged is taken as the
    /// former state holds it, the rest stays missing; filling the rest gives the new tree.
    #[test]
    fn grafting_keeps_exactly_the_unchanged_subtrees(objs in objects(6), changes in objects(6)) {
        let old = tree_of(6, &objs);
        let mut new = old.clone();
        new.apply_vecs(changes.iter().map(|(k, v)| (ObjectId(*k), (!v.is_empty()).then(|| v.clone())))).unwrap();
        let mut part = ObjectTree::pruned(6, new.root()).unwrap();
        let mut kept = Vec::new();
        // Walk down: graft where possible, else expand with the new tree's children.
        while let Some(&pos) = part.missing_positions(1).first() {
            if let Some(ids) = part.graft(pos, &old) {
                prop_assert_eq!(old.node_digest(pos), new.node_digest(pos));
                kept.extend(ids);
                continue;
            }
            prop_assert_ne!(old.node_digest(pos), new.node_digest(pos));
            if pos.depth == 6 {
                let id = ObjectId(pos.index);
                prop_assert_eq!(part.fill(id, new.get(id).cloned(), &new.proof(id).unwrap()), Ok(true));
            } else {
                let (l, r) = new.children(pos).unwrap();
                prop_assert_eq!(part.expand_missing(pos, l, r), Ok(true));
            }
            part.check_invariants();
        }
        prop_assert_eq!(part.root(), new.root());
        prop_assert_eq!(part.diff(&new), Ok(vec![]));
        for id in kept {
            prop_assert_eq!(old.get(id), new.get(id));
        }
        // Nothing to take where nothing is missing.
        prop_assert_eq!(part.graft(NodePos::ROOT, &old), None);
    }

    /// A partial tree with its missing subtrees taken from another tree holds, object by
    /// object, its own objects where it holds them and the other's elsewhere; it shares what
    /// it holds; `missing_around` names the missing subtree each missing object lies in.
    #[test]
    fn missing_parts_taken_from_another_tree(
        objs in objects(6),
        other in objects(6),
        cuts in prop::collection::vec((any::<u8>(), any::<u64>()), 0..6),
    ) {
        let whole = tree_of(6, &objs);
        let from = tree_of(6, &other);
        let mut part = whole.clone();
        for (depth, index) in cuts {
            part.prune(position(6, depth, index));
        }
        for i in 0..64u64 {
            let id = ObjectId(i);
            match part.missing_around(id) {
                Some(pos) => {
                    prop_assert_eq!(part.lookup(id), Held::Missing);
                    prop_assert!(under(6, pos, i));
                    prop_assert!(part.node_digest(pos).is_some());
                    prop_assert!(!part.is_empty_at(pos));
                }
                None => prop_assert_ne!(part.lookup(id), Held::Missing),
            }
        }
        let merged = part.with_missing_from(&from).unwrap();
        merged.check_invariants();
        prop_assert!(merged.is_complete());
        for i in 0..64u64 {
            let id = ObjectId(i);
            let want = match part.lookup(id) {
                Held::Missing => from.lookup(id),
                held => held,
            };
            prop_assert_eq!(merged.lookup(id), want);
            let leaf = NodePos { depth: 6, index: i };
            prop_assert_eq!(merged.is_empty_at(leaf), merged.get(id).is_none());
        }
        // Nothing missing: the same tree.
        prop_assert_eq!(whole.with_missing_from(&from).unwrap().root(), whole.root());
        // What the other tree lacks cannot be taken from it.
        if !part.is_complete() {
            let lacking = ObjectTree::pruned(6, from.root()).unwrap();
            if !lacking.is_complete() {
                prop_assert!(part.with_missing_from(&lacking).is_none());
            }
        }
    }
}

#[test]
fn a_subtree_set_to_the_empty_digest_is_empty_and_a_node_outside_the_tree_is_refused() {
    let mut t = tree_of(4, &BTreeMap::from([(1, vec![1]), (9, vec![2])]));
    let left = NodePos { depth: 1, index: 0 };
    t.set_subtree_digest(left, empty_subtree(3)).unwrap();
    t.check_invariants();
    assert_eq!(t.len(), 1);
    assert!(t.is_complete() && t.is_empty_at(left));
    assert_eq!(t.lookup(ObjectId(1)), Held::Object(None));
    let deep = NodePos { depth: 5, index: 0 };
    assert_eq!(
        t.set_subtree_digest(deep, empty_subtree(0)),
        Err(TreeError::NoSuchNode(deep))
    );
    // Under a missing subtree there is no node to set.
    t.set_subtree_digest(left, Digest::of(b"x")).unwrap();
    let below = NodePos { depth: 2, index: 1 };
    assert_eq!(
        t.set_subtree_digest(below, Digest::of(b"y")),
        Err(TreeError::NoSuchNode(below))
    );
    assert_eq!(t.missing_subtrees(), 1);
}

#[test]
fn an_empty_root_gives_a_complete_empty_tree() {
    let empty = ObjectTree::new(5).unwrap();
    let t = ObjectTree::pruned(5, empty.root()).unwrap();
    assert!(t.is_complete() && t.is_empty());
    assert_eq!(t.lookup(ObjectId(3)), Held::Object(None));
}

#[test]
fn a_diff_under_a_missing_subtree_cannot_be_listed() {
    let objs: BTreeMap<u64, Vec<u8>> = [(1, vec![1]), (40, vec![2])].into_iter().collect();
    let whole = tree_of(6, &objs);
    let mut part = whole.clone();
    part.prune(NodePos { depth: 1, index: 1 });
    let mut changed = whole.clone();
    changed.apply_vecs([(ObjectId(41), Some(vec![3]))]).unwrap();
    assert_eq!(part.diff(&whole).unwrap(), Vec::<ObjectId>::new());
    assert_eq!(
        part.diff(&changed),
        Err(TreeError::MissingSubtree(NodePos { depth: 1, index: 1 }))
    );
    assert_eq!(
        part.missing_positions(10),
        vec![NodePos { depth: 1, index: 1 }]
    );
    assert_eq!(
        part.missing_of(&[ObjectId(1), ObjectId(33), ObjectId(40)]),
        vec![ObjectId(33), ObjectId(40)]
    );
}
