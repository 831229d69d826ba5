//! Who keeps which objects current (seed 003 §3.1). Objects fall into `2^b` partitions by the
//! top `b` bits of their ids, so that a partition is a subtree of the object tree
//! (docs/objects.md): its root is the tree's node at depth `b`, its objects' proofs are the
//! lower parts of their usual proofs, and a replica that does not keep a partition current can
//! hold it as the digest of that node alone. Ids of hashed names (`ObjectId::hashed`) are
//! spread evenly over the top bits, so the partitions are too.
//!
//! Each partition has `m` maintainers: the execution replicas `p mod n`, `p + 1 mod n`, ...,
//! `p + m - 1 mod n`. Every replica then maintains `m / n` of the partitions, to within one
//! (2 of 3 at u=r=1 with the minimum of three execution replicas, 1 of 3 with six), the share
//! of the work selective execution leaves it.
//!
//! The assignment is a pure function of the replica count, `m` and the partition bits, so
//! every correct replica computes the same one from the configuration: no message agrees on
//! it. Changing it at run time (seed 003 §5.1) would be an ordered operation; it is not built.

use plumb_app::ObjectId;
use plumb_wire::ExecId;
use std::fmt;

/// A set of objects kept current by the same maintainers: the subtree of the object tree at
/// depth [`Maintenance::partition_depth`] and this index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition(pub u32);

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition {}", self.0)
    }
}

/// Why an assignment cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaintenanceError {
    /// `m` is zero or exceeds the replicas there are.
    Maintainers { maintainers: usize, replicas: usize },
    /// Fewer partitions than replicas would leave some replica maintaining nothing, which
    /// then executes only cross-border and forced requests; more partition bits than object
    /// id bits (or than 31) name no subtree.
    Partitions {
        partition_bits: u8,
        object_id_bits: u8,
        replicas: usize,
    },
}

impl fmt::Display for MaintenanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaintenanceError::Maintainers { maintainers, replicas } => write!(
                f,
                "{maintainers} maintainers per partition with {replicas} execution replicas: need between 1 and {replicas}"
            ),
            MaintenanceError::Partitions {
                partition_bits,
                object_id_bits,
                replicas,
            } => write!(
                f,
                "{partition_bits} partition bits over {object_id_bits}-bit object ids for {replicas} execution replicas: need at least one partition per replica, and at most min({object_id_bits}, 31) bits"
            ),
        }
    }
}

impl std::error::Error for MaintenanceError {}

/// The assignment of partitions to maintainers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maintenance {
    replicas: usize,
    maintainers: usize,
    partition_bits: u8,
    object_id_bits: u8,
}

impl Maintenance {
    /// `maintainers` for each of the `2^partition_bits` partitions of `object_id_bits`-bit
    /// object ids, among `replicas` execution replicas.
    pub fn new(
        replicas: usize,
        maintainers: usize,
        partition_bits: u8,
        object_id_bits: u8,
    ) -> Result<Maintenance, MaintenanceError> {
        if maintainers == 0 || maintainers > replicas {
            return Err(MaintenanceError::Maintainers {
                maintainers,
                replicas,
            });
        }
        if partition_bits > object_id_bits.min(31) || (1usize << partition_bits) < replicas {
            return Err(MaintenanceError::Partitions {
                partition_bits,
                object_id_bits,
                replicas,
            });
        }
        Ok(Maintenance {
            replicas,
            maintainers,
            partition_bits,
            object_id_bits,
        })
    }

    /// How many partitions there are: `2^b`.
    pub fn partitions(&self) -> u32 {
        1 << self.partition_bits
    }

    /// The depth of the object tree at which each partition is one subtree: partition `p`'s
    /// root is the node at this depth with index `p`.
    pub fn partition_depth(&self) -> u8 {
        self.partition_bits
    }

    /// Execution replicas: `n`.
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// Maintainers per partition: `m`.
    pub fn maintainers_per_partition(&self) -> usize {
        self.maintainers
    }

    /// The partition object `id` falls in: the top bits of the id. An id past the object id
    /// bits (which a correct application never names) falls in the last partition.
    pub fn partition_of(&self, id: ObjectId) -> Partition {
        let top = id.0 >> (self.object_id_bits - self.partition_bits);
        Partition(top.min(u64::from(self.partitions() - 1)) as u32)
    }

    /// Where partition `p`'s maintainers start: `p mod n`.
    fn first(&self, p: Partition) -> usize {
        p.0 as usize % self.replicas
    }

    /// The `m` maintainers of partition `p`, in order from the first.
    pub fn maintainers(&self, p: Partition) -> impl Iterator<Item = ExecId> + '_ {
        let first = self.first(p);
        (0..self.maintainers).filter_map(move |k| ExecId::from_index((first + k) % self.replicas))
    }

    /// Whether replica `e` maintains partition `p`: its distance after the first maintainer,
    /// around the ring of replicas, is below `m`.
    pub fn maintains(&self, e: ExecId, p: Partition) -> bool {
        let e = e.index();
        e < self.replicas && (e + self.replicas - self.first(p)) % self.replicas < self.maintainers
    }

    /// Whether replica `e` maintains the partition of object `id`.
    pub fn maintains_object(&self, e: ExecId, id: ObjectId) -> bool {
        self.maintains(e, self.partition_of(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partition_has_m_distinct_maintainers_and_the_shares_are_even() {
        for (n, m) in [(3, 2), (4, 2), (5, 3), (6, 2), (6, 3)] {
            let a = Maintenance::new(n, m, 8, 16).unwrap();
            let mut share = vec![0u32; n];
            for p in (0..a.partitions()).map(Partition) {
                let who: Vec<ExecId> = a.maintainers(p).collect();
                let mut distinct = who.clone();
                distinct.sort();
                distinct.dedup();
                assert_eq!(distinct.len(), m, "n={n} m={m} {p}");
                for e in ExecId::all(n) {
                    assert_eq!(a.maintains(e, p), who.contains(&e), "n={n} m={m} {p} e{e}");
                }
                for e in &who {
                    share[e.index()] += 1;
                }
            }
            // Each replica maintains m/n of the 256 partitions, to within one.
            let even = 256 * m as u32 / n as u32;
            assert!(
                share.iter().all(|&s| s.abs_diff(even) <= 1),
                "n={n} m={m} {share:?}"
            );
            // A replica outside the group maintains nothing.
            assert!(!a.maintains(ExecId(n as u16), Partition(0)));
        }
    }

    #[test]
    fn a_partition_is_the_subtree_under_the_top_bits_of_its_ids() {
        let a = Maintenance::new(3, 2, 4, 16).unwrap();
        assert_eq!((a.partitions(), a.partition_depth()), (16, 4));
        assert_eq!(a.partition_of(ObjectId(0)), Partition(0));
        assert_eq!(a.partition_of(ObjectId(0x0fff)), Partition(0));
        assert_eq!(a.partition_of(ObjectId(0x1000)), Partition(1));
        assert_eq!(a.partition_of(ObjectId(0xffff)), Partition(15));
        // Hostile ids past the id bits stay in range.
        assert_eq!(a.partition_of(ObjectId(u64::MAX)), Partition(15));
        // As many partition bits as id bits: one object per partition.
        let a = Maintenance::new(3, 2, 4, 4).unwrap();
        assert_eq!(a.partition_of(ObjectId(9)), Partition(9));
    }

    #[test]
    fn impossible_assignments_are_refused_saying_why() {
        let e = Maintenance::new(3, 4, 8, 16).unwrap_err();
        assert!(e.to_string().contains("need between 1 and 3"), "{e}");
        assert!(Maintenance::new(3, 0, 8, 16).is_err());
        let e = Maintenance::new(6, 2, 2, 16).unwrap_err();
        assert!(
            e.to_string().contains("at least one partition per replica"),
            "{e}"
        );
        assert!(Maintenance::new(3, 2, 9, 8).is_err());
        assert!(Maintenance::new(3, 2, 32, 48).is_err());
    }
}
