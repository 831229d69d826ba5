//! Who keeps which objects current (seed 003 §3.1). Objects fall into partitions by id, and
//! each partition has `m` maintainers: the execution replicas `p mod n`, `p + 1 mod n`, ...,
//! `p + m - 1 mod n`. With a partition count that `n` divides, every replica maintains exactly
//! `m / n` of the partitions (2 of 3 at u=r=1 with the minimum of three execution replicas, 1
//! of 3 with six), the share of the work selective execution leaves it.
//!
//! The assignment is a pure function of the replica count, `m` and the partition count, so
//! every correct replica computes the same one from the configuration: no message agrees on
//! it. Changing it at run time (seed 003 §5.1) would be an ordered operation; it is not built.

use plumb_app::ObjectId;
use plumb_wire::ExecId;
use std::fmt;

/// A set of objects kept current by the same maintainers.
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
    /// then executes only cross-border and forced requests.
    Partitions { partitions: u32, replicas: usize },
}

impl fmt::Display for MaintenanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaintenanceError::Maintainers { maintainers, replicas } => write!(
                f,
                "{maintainers} maintainers per partition with {replicas} execution replicas: need between 1 and {replicas}"
            ),
            MaintenanceError::Partitions { partitions, replicas } => write!(
                f,
                "{partitions} partitions for {replicas} execution replicas: need at least one per replica"
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
    partitions: u32,
}

impl Maintenance {
    /// `maintainers` of each of `partitions` partitions among `replicas` execution replicas.
    pub fn new(
        replicas: usize,
        maintainers: usize,
        partitions: u32,
    ) -> Result<Maintenance, MaintenanceError> {
        if maintainers == 0 || maintainers > replicas {
            return Err(MaintenanceError::Maintainers {
                maintainers,
                replicas,
            });
        }
        if (partitions as usize) < replicas {
            return Err(MaintenanceError::Partitions {
                partitions,
                replicas,
            });
        }
        Ok(Maintenance {
            replicas,
            maintainers,
            partitions,
        })
    }

    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// Maintainers per partition: `m`.
    pub fn maintainers_per_partition(&self) -> usize {
        self.maintainers
    }

    /// The partition object `id` falls in. Object ids of hashed names (`ObjectId::hashed`) are
    /// spread evenly, so their partitions are too.
    pub fn partition_of(&self, id: ObjectId) -> Partition {
        Partition((id.0 % u64::from(self.partitions)) as u32)
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
            let a = Maintenance::new(n, m, 240).unwrap();
            let mut share = vec![0u32; n];
            for p in (0..240).map(Partition) {
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
            // 240 is divisible by every n here: each replica maintains m/n of the partitions.
            assert!(
                share.iter().all(|&s| s == 240 * m as u32 / n as u32),
                "{share:?}"
            );
            // A replica outside the group maintains nothing.
            assert!(!a.maintains(ExecId(n as u16), Partition(0)));
        }
    }

    #[test]
    fn impossible_assignments_are_refused_saying_why() {
        let e = Maintenance::new(3, 4, 240).unwrap_err();
        assert!(e.to_string().contains("need between 1 and 3"), "{e}");
        assert!(Maintenance::new(3, 0, 240).is_err());
        let e = Maintenance::new(6, 2, 4).unwrap_err();
        assert!(e.to_string().contains("at least one per replica"), "{e}");
    }
}
