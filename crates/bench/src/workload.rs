//! The key-value workload: request and reply sizes, the share of writes, the key space.

use crate::target::Op;

#[derive(Clone, Debug)]
pub struct Workload {
    /// Bytes of value each write stores (the request's payload).
    pub request_bytes: usize,
    /// Bytes of value each read returns (the reply's payload); the generator preloads every
    /// key with a value this long.
    pub reply_bytes: usize,
    /// Share of operations that are writes, 0.0 to 1.0.
    pub write_fraction: f64,
    /// Distinct keys; operations pick one at random.
    pub keys: usize,
}

impl Workload {
    /// A short name for tables: `write-1k`, `read-0`, `mixed50-1k/1k`.
    pub fn name(&self) -> String {
        let size = |b: usize| {
            if b >= 1024 && b.is_multiple_of(1024) {
                format!("{}k", b / 1024)
            } else {
                b.to_string()
            }
        };
        if self.write_fraction >= 1.0 {
            format!("write-{}", size(self.request_bytes))
        } else if self.write_fraction <= 0.0 {
            format!("read-{}", size(self.reply_bytes))
        } else {
            format!(
                "mixed{}-{}/{}",
                (self.write_fraction * 100.0).round() as u32,
                size(self.request_bytes),
                size(self.reply_bytes)
            )
        }
    }

    pub fn key(i: usize) -> String {
        format!("bench:{i:08}")
    }

    /// Operation number `n` of a client whose random state is `rng` (xorshift: cheap and good
    /// enough to spread keys; the generator must not be the bottleneck).
    pub fn next(&self, rng: &mut u64) -> Op {
        let a = xorshift(rng);
        let b = xorshift(rng);
        let key = Workload::key((a % self.keys.max(1) as u64) as usize);
        let write = (b as f64 / u64::MAX as f64) < self.write_fraction;
        if write {
            let mut value = vec![b'v'; self.request_bytes];
            // Vary the bytes so no layer can deduplicate writes.
            for (i, byte) in value.iter_mut().take(8).enumerate() {
                *byte = b'a' + ((a >> (i * 5)) % 26) as u8;
            }
            Op::Write { key, value }
        } else {
            Op::Read { key }
        }
    }

    /// The writes that give every key a value of `reply_bytes` before reads are measured.
    pub fn preload(&self) -> impl Iterator<Item = Op> + '_ {
        (0..self.keys).map(|i| Op::Write {
            key: Workload::key(i),
            value: vec![b'p'; self.reply_bytes],
        })
    }
}

fn xorshift(s: &mut u64) -> u64 {
    let mut x = *s | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_sizes_and_mix() {
        let w = |f, q, r| Workload {
            request_bytes: q,
            reply_bytes: r,
            write_fraction: f,
            keys: 10,
        };
        assert_eq!(w(1.0, 1024, 0).name(), "write-1k");
        assert_eq!(w(0.0, 0, 4096).name(), "read-4k");
        assert_eq!(w(0.5, 1024, 1024).name(), "mixed50-1k/1k");
        assert_eq!(w(1.0, 0, 0).name(), "write-0");
    }

    #[test]
    fn mix_follows_the_write_fraction() {
        let w = Workload {
            request_bytes: 16,
            reply_bytes: 16,
            write_fraction: 0.25,
            keys: 100,
        };
        let mut rng = 7;
        let writes = (0..10_000)
            .filter(|_| matches!(w.next(&mut rng), Op::Write { .. }))
            .count();
        assert!((2_200..2_800).contains(&writes), "{writes} writes in 10000");
    }
}
