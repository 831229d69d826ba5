//! The workloads: keyed writes and reads (request and reply sizes, the share of writes, the key
//! space), which every system runs, and the ZooKeeper operations (`zk-create`, `zk-set-1k`,
//! `zk-get-1k`), which only the systems that speak ZooKeeper's protocol run.

use crate::target::Op;

/// A ZooKeeper operation a workload runs instead of keyed writes and reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Znode {
    /// `create` of a fresh persistent znode holding `request_bytes`.
    Create,
    /// `setData` of `request_bytes` on one of `keys` existing znodes.
    Set,
    /// `getData` of one of `keys` znodes holding `reply_bytes` (a plain read, at each
    /// system's default consistency: see `Op::GetData`).
    Get,
}

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
    /// A ZooKeeper operation instead of the keyed write/read mix.
    pub znode: Option<Znode>,
}

impl Workload {
    /// Keyed writes (`write_fraction` of them) and reads.
    pub fn keyed(
        request_bytes: usize,
        reply_bytes: usize,
        write_fraction: f64,
        keys: usize,
    ) -> Workload {
        Workload {
            request_bytes,
            reply_bytes,
            write_fraction,
            keys,
            znode: None,
        }
    }

    /// One ZooKeeper operation, on values of `bytes`.
    pub fn zk(znode: Znode, bytes: usize, keys: usize) -> Workload {
        let (request_bytes, reply_bytes, write_fraction) = match znode {
            Znode::Create | Znode::Set => (bytes, bytes, 1.0),
            Znode::Get => (0, bytes, 0.0),
        };
        Workload {
            request_bytes,
            reply_bytes,
            write_fraction,
            keys,
            znode: Some(znode),
        }
    }

    /// Whether every key must hold a value of `reply_bytes` before the workload is measured.
    pub fn needs_preload(&self) -> bool {
        match self.znode {
            None => self.write_fraction < 1.0,
            Some(Znode::Create) => false,
            Some(Znode::Set | Znode::Get) => true,
        }
    }

    /// A short name for tables: `write-1k`, `read-0`, `mixed50-1k/1k`, `zk-create`,
    /// `zk-set-1k`, `zk-get-1k`.
    pub fn name(&self) -> String {
        let size = |b: usize| {
            if b >= 1024 && b.is_multiple_of(1024) {
                format!("{}k", b / 1024)
            } else {
                b.to_string()
            }
        };
        match self.znode {
            Some(Znode::Create) => return "zk-create".into(),
            Some(Znode::Set) => return format!("zk-set-{}", size(self.request_bytes)),
            Some(Znode::Get) => return format!("zk-get-{}", size(self.reply_bytes)),
            None => {}
        }
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
        let value = || {
            let mut value = vec![b'v'; self.request_bytes];
            // Vary the bytes so no layer can deduplicate writes.
            for (i, byte) in value.iter_mut().take(8).enumerate() {
                *byte = b'a' + ((a >> (i * 5)) % 26) as u8;
            }
            value
        };
        match self.znode {
            Some(Znode::Create) => return Op::Create { value: value() },
            Some(Znode::Set) => {
                return Op::Write {
                    key,
                    value: value(),
                }
            }
            Some(Znode::Get) => return Op::GetData { key },
            None => {}
        }
        let write = (b as f64 / u64::MAX as f64) < self.write_fraction;
        if write {
            Op::Write {
                key,
                value: value(),
            }
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
        let w = |f, q, r| Workload::keyed(q, r, f, 10);
        assert_eq!(w(1.0, 1024, 0).name(), "write-1k");
        assert_eq!(w(0.0, 0, 4096).name(), "read-4k");
        assert_eq!(w(0.5, 1024, 1024).name(), "mixed50-1k/1k");
        assert_eq!(w(1.0, 0, 0).name(), "write-0");
        assert_eq!(Workload::zk(Znode::Create, 16, 10).name(), "zk-create");
        assert_eq!(Workload::zk(Znode::Set, 1024, 10).name(), "zk-set-1k");
        assert_eq!(Workload::zk(Znode::Get, 1024, 10).name(), "zk-get-1k");
    }

    #[test]
    fn zk_workloads_run_their_one_operation() {
        let mut rng = 3;
        let set = Workload::zk(Znode::Set, 1024, 10);
        assert!(set.needs_preload());
        assert!(matches!(set.next(&mut rng), Op::Write { value, .. } if value.len() == 1024));
        let get = Workload::zk(Znode::Get, 1024, 10);
        assert!(get.needs_preload());
        assert!(get
            .preload()
            .all(|op| matches!(op, Op::Write { value, .. } if value.len() == 1024)));
        assert!(matches!(get.next(&mut rng), Op::GetData { .. }));
        let create = Workload::zk(Znode::Create, 16, 10);
        assert!(!create.needs_preload());
        assert!(matches!(create.next(&mut rng), Op::Create { value } if value.len() == 16));
    }

    #[test]
    fn mix_follows_the_write_fraction() {
        let w = Workload::keyed(16, 16, 0.25, 100);
        let mut rng = 7;
        let writes = (0..10_000)
            .filter(|_| matches!(w.next(&mut rng), Op::Write { .. }))
            .count();
        assert!((2_200..2_800).contains(&writes), "{writes} writes in 10000");
    }
}
