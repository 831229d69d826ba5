//! Access sets (docs/objects.md "Access sets"): the objects one operation may read or write,
//! known from the operation alone, before it runs. A replica that holds only part of the state
//! (sleeping replicas, selective execution) fetches a batch's access set before executing it,
//! so an access set that misses an object the operation uses gives a wrong reply there.

use crate::ObjectId;

/// The objects an operation may read or write.
///
/// One set, not a read set and a write set: a replica must hold an object before executing
/// either (a write to an object of many entries rewrites the ones it leaves alone), and what
/// a batch actually wrote is known exactly afterwards from
/// [`crate::ObjectState::take_changed_objects`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccessSet {
    /// Only these objects, in increasing order without repeats (build it with
    /// [`AccessSet::objects`]). Empty: no object (the operation reads and changes only the
    /// metadata, or nothing).
    Objects(Vec<ObjectId>),
    /// Any object: the operation needs the whole state.
    All,
}

impl AccessSet {
    /// The set of `ids`, sorted and without repeats.
    pub fn objects(ids: impl IntoIterator<Item = ObjectId>) -> AccessSet {
        let mut ids: Vec<ObjectId> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        AccessSet::Objects(ids)
    }

    /// Every object of either set.
    pub fn union(self, other: AccessSet) -> AccessSet {
        match (self, other) {
            (AccessSet::Objects(a), AccessSet::Objects(b)) => {
                AccessSet::objects(a.into_iter().chain(b))
            }
            _ => AccessSet::All,
        }
    }

    /// Whether an operation with this access set may use object `id`.
    pub fn contains(&self, id: ObjectId) -> bool {
        match self {
            AccessSet::Objects(ids) => ids.binary_search(&id).is_ok(),
            AccessSet::All => true,
        }
    }

    /// The objects named, or `None` for [`AccessSet::All`].
    pub fn ids(&self) -> Option<&[ObjectId]> {
        match self {
            AccessSet::Objects(ids) => Some(ids),
            AccessSet::All => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u64]) -> AccessSet {
        AccessSet::objects(v.iter().map(|&i| ObjectId(i)))
    }

    #[test]
    fn objects_are_sorted_without_repeats() {
        assert_eq!(
            ids(&[5, 1, 5, 3]),
            AccessSet::Objects(vec![ObjectId(1), ObjectId(3), ObjectId(5)])
        );
    }

    #[test]
    fn union_and_membership() {
        let u = ids(&[4, 2]).union(ids(&[2, 9]));
        assert_eq!(u, ids(&[2, 4, 9]));
        assert!(u.contains(ObjectId(9)) && !u.contains(ObjectId(3)));
        assert_eq!(u.clone().union(AccessSet::All), AccessSet::All);
        assert!(AccessSet::All.contains(ObjectId(3)));
        assert_eq!(ids(&[]).ids(), Some(&[][..]));
        assert_eq!(AccessSet::All.ids(), None);
    }
}
