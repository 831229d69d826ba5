//! Consistent hashing of request sketches onto sketcher shards (§5 of the paper: the global
//! history table is partitioned by s(q) into non-overlapping regions).
//!
//! Each shard has `vnodes` points on a ring of `u64`s, placed by hashing the shard id and the
//! virtual node number, so placement depends on the shard ids only: every router computing
//! the ring from the same membership agrees. A sketch's point is its first eight bytes; its
//! owner is the shard of the first virtual node at or after that point (wrapping around).

use crate::config::MAX_VNODES;
use crate::sketch::Sketch;
use plumb_crypto::Digest;
use std::collections::BTreeSet;
use std::fmt;

/// A sketcher shard's identity.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(pub u32);

impl fmt::Debug for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard{}", self.0)
    }
}

/// Why a ring cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    #[error("a ring needs at least one shard")]
    NoShards,
    #[error("shard {0:?} is listed twice")]
    Duplicate(ShardId),
    #[error("vnodes per shard must be between 1 and {max}, not {got}")]
    Vnodes { got: u32, max: u32 },
}

/// An arc `(start, end]` of the ring; `start == end` is the whole ring, `start > end` wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: u64,
    pub end: u64,
}

impl Span {
    pub fn contains(&self, point: u64) -> bool {
        if self.start < self.end {
            self.start < point && point <= self.end
        } else {
            // Wrapping (or the whole ring when start == end).
            point > self.start || point <= self.end
        }
    }

    /// How many points the span covers (2^64 for the whole ring, hence u128).
    pub fn width(&self) -> u128 {
        if self.start == self.end {
            1u128 << 64
        } else {
            u128::from(self.end.wrapping_sub(self.start))
        }
    }
}

/// A region that changes owner between two rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub span: Span,
    pub from: ShardId,
    pub to: ShardId,
}

/// The ring for one membership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Virtual nodes sorted by point (ties, astronomically unlikely, broken by shard id and
    /// the later duplicate dropped, so that the result is still deterministic).
    vnodes: Vec<(u64, ShardId)>,
    shards: Vec<ShardId>,
    per_shard: u32,
}

fn vnode_point(shard: ShardId, i: u32) -> u64 {
    Sketch(Digest::of_parts(&[
        b"plumb-prophecy/ring/v1",
        &shard.0.to_le_bytes(),
        &i.to_le_bytes(),
    ]))
    .point()
}

impl Ring {
    pub fn new(shards: &[ShardId], vnodes_per_shard: u32) -> Result<Ring, RingError> {
        if shards.is_empty() {
            return Err(RingError::NoShards);
        }
        if vnodes_per_shard == 0 || vnodes_per_shard > MAX_VNODES {
            return Err(RingError::Vnodes {
                got: vnodes_per_shard,
                max: MAX_VNODES,
            });
        }
        let mut set = BTreeSet::new();
        for s in shards {
            if !set.insert(*s) {
                return Err(RingError::Duplicate(*s));
            }
        }
        let mut vnodes: Vec<(u64, ShardId)> = set
            .iter()
            .flat_map(|s| (0..vnodes_per_shard).map(move |i| (vnode_point(*s, i), *s)))
            .collect();
        vnodes.sort_unstable();
        vnodes.dedup_by_key(|(p, _)| *p);
        debug_assert!(!vnodes.is_empty());
        Ok(Ring {
            vnodes,
            shards: set.into_iter().collect(),
            per_shard: vnodes_per_shard,
        })
    }

    /// The shards, in id order.
    pub fn shards(&self) -> &[ShardId] {
        &self.shards
    }

    pub fn vnodes_per_shard(&self) -> u32 {
        self.per_shard
    }

    pub fn contains(&self, shard: ShardId) -> bool {
        self.shards.binary_search(&shard).is_ok()
    }

    /// The shard that owns request sketch `q`.
    pub fn owner(&self, q: Sketch) -> ShardId {
        self.owner_of_point(q.point())
    }

    pub fn owner_of_point(&self, point: u64) -> ShardId {
        let i = self.vnodes.partition_point(|(p, _)| *p < point);
        // Past the last virtual node the ring wraps to the first. `vnodes` is never empty.
        let (_, s) = self
            .vnodes
            .get(i)
            .or(self.vnodes.first())
            .copied()
            .unwrap_or((0, ShardId(0)));
        s
    }

    /// The fraction of the ring that `shard` owns.
    pub fn share(&self, shard: ShardId) -> f64 {
        let n = self.vnodes.len();
        let mut owned: u128 = 0;
        for k in 0..n {
            if self.vnodes[k].1 == shard {
                let start = self.vnodes[(k + n - 1) % n].0;
                owned += Span {
                    start,
                    end: self.vnodes[k].0,
                }
                .width();
            }
        }
        owned as f64 / (1u128 << 64) as f64
    }

    /// The regions whose owner differs between `prev` and `next`, in ring order. Between two
    /// consecutive boundary points of either ring both owners are constant, so comparing the
    /// owners of each elementary span's end point is exact.
    pub fn moves(prev: &Ring, next: &Ring) -> Vec<Move> {
        let mut bounds: Vec<u64> = prev
            .vnodes
            .iter()
            .chain(next.vnodes.iter())
            .map(|(p, _)| *p)
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let n = bounds.len();
        let mut out = Vec::new();
        for k in 0..n {
            let end = bounds[k];
            let start = bounds[(k + n - 1) % n];
            let (from, to) = (prev.owner_of_point(end), next.owner_of_point(end));
            if from != to {
                out.push(Move {
                    span: Span { start, end },
                    from,
                    to,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u32) -> Vec<ShardId> {
        (0..n).map(ShardId).collect()
    }

    #[test]
    fn ring_rejects_bad_memberships() {
        assert_eq!(Ring::new(&[], 8), Err(RingError::NoShards));
        assert_eq!(
            Ring::new(&[ShardId(1), ShardId(1)], 8),
            Err(RingError::Duplicate(ShardId(1)))
        );
        assert!(matches!(
            Ring::new(&ids(2), 0),
            Err(RingError::Vnodes { .. })
        ));
    }

    #[test]
    fn placement_depends_on_shard_ids_only() {
        let a = Ring::new(&[ShardId(3), ShardId(1), ShardId(7)], 64).expect("ring");
        let b = Ring::new(&[ShardId(7), ShardId(3), ShardId(1)], 64).expect("ring");
        assert_eq!(a, b);
        for i in 0..1000u32 {
            let q = Sketch::of(&i.to_le_bytes());
            assert_eq!(a.owner(q), b.owner(q));
        }
    }

    #[test]
    fn ring_balance_is_within_reason_for_2_to_8_shards() {
        for n in 2..=8u32 {
            let ring = Ring::new(&ids(n), 128).expect("ring");
            let fair = 1.0 / f64::from(n);
            let total: f64 = ids(n).iter().map(|s| ring.share(*s)).sum();
            assert!((total - 1.0).abs() < 1e-9, "shares sum to {total}");
            for s in ids(n) {
                let share = ring.share(s);
                assert!(
                    share > 0.7 * fair && share < 1.3 * fair,
                    "{n} shards: {s:?} owns {share:.3}, fair is {fair:.3}"
                );
            }
            // And the sketches of actual requests follow the shares.
            let mut counts = vec![0u32; n as usize];
            let samples = 20_000u32;
            for i in 0..samples {
                let q = Sketch::of(format!("GET /object/{i}").as_bytes());
                counts[ring.owner(q).0 as usize] += 1;
            }
            for (s, c) in counts.iter().enumerate() {
                let got = f64::from(*c) / f64::from(samples);
                assert!(
                    got > 0.65 * fair && got < 1.35 * fair,
                    "{n} shards: shard{s} got {got:.3} of the requests"
                );
            }
        }
    }

    #[test]
    fn adding_a_shard_moves_only_regions_to_it() {
        let prev = Ring::new(&ids(4), 64).expect("ring");
        let next = Ring::new(&ids(5), 64).expect("ring");
        let moves = Ring::moves(&prev, &next);
        assert!(!moves.is_empty());
        assert!(moves
            .iter()
            .all(|m| m.to == ShardId(4) && m.from != ShardId(4)));
        let moved: u128 = moves.iter().map(|m| m.span.width()).sum();
        let frac = moved as f64 / (1u128 << 64) as f64;
        assert!((frac - next.share(ShardId(4))).abs() < 1e-9);
        // Points inside a moved span change owner; others do not.
        for i in 0..5000u32 {
            let q = Sketch::of(&i.to_le_bytes());
            let moved = moves.iter().any(|m| m.span.contains(q.point()));
            assert_eq!(moved, prev.owner(q) != next.owner(q));
        }
    }

    #[test]
    fn one_vnode_ring_owns_everything() {
        let ring = Ring::new(&[ShardId(9)], 1).expect("ring");
        assert_eq!(ring.owner_of_point(0), ShardId(9));
        assert_eq!(ring.owner_of_point(u64::MAX), ShardId(9));
        assert!((ring.share(ShardId(9)) - 1.0).abs() < 1e-12);
    }
}
