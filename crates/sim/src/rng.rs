//! The simulator's own randomness: one seeded stream per purpose, so adding a draw in one place
//! (say, the workload) does not shift every later network decision.

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct SimRng(ChaCha8Rng);

impl SimRng {
    /// A stream named `purpose` of run `seed`.
    pub fn new(seed: u64, purpose: &str) -> SimRng {
        let mut material = seed.to_le_bytes().to_vec();
        material.extend_from_slice(purpose.as_bytes());
        let key = plumb_crypto::Digest::of(&material);
        SimRng(ChaCha8Rng::from_seed(key.0))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.gen()
    }

    /// Uniform in `lo..=hi` (`lo` if the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            self.0.gen_range(lo..=hi)
        }
    }

    /// Uniform index in `0..n` (0 if `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.0.gen_range(0..n)
        }
    }

    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.0.gen_bool(p.min(1.0))
    }

    pub fn float(&mut self, lo: f64, hi: f64) -> f64 {
        if hi <= lo {
            lo
        } else {
            self.0.gen_range(lo..hi)
        }
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            items.get(self.index(items.len()))
        }
    }

    /// A random subset of `items`, each kept with probability `p`.
    pub fn subset<T: Copy>(&mut self, items: &[T], p: f64) -> Vec<T> {
        items.iter().copied().filter(|_| self.chance(p)).collect()
    }
}
