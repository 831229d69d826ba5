//! A simulated disk: writes land in a volatile buffer, `Sync` makes them durable, a crash keeps
//! only a prefix of the unsynced writes (often none). Durable records carry a BLAKE3 checksum,
//! so a flipped bit shows up as a corrupt key at recovery, as it would with a real driver.

use crate::rng::SimRng;
use plumb_core::{Recovered, StoreOp};
use plumb_crypto::Digest;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct Disk {
    durable: BTreeMap<String, (Vec<u8>, Digest)>,
    volatile: Vec<StoreOp>,
}

fn checksum(key: &str, value: &[u8]) -> Digest {
    Digest::of_parts(&[key.as_bytes(), value])
}

impl Disk {
    pub fn apply(&mut self, op: StoreOp) {
        match op {
            StoreOp::Sync => self.sync(),
            other => self.volatile.push(other),
        }
    }

    fn sync(&mut self) {
        let pending = std::mem::take(&mut self.volatile);
        for op in pending {
            self.write_durably(op);
        }
    }

    fn write_durably(&mut self, op: StoreOp) {
        match op {
            StoreOp::Put { key, value } => {
                let sum = checksum(&key, &value);
                self.durable.insert(key, (value, sum));
            }
            StoreOp::Delete { key } => {
                self.durable.remove(&key);
            }
            StoreOp::DeletePrefix { prefix } => {
                let doomed: Vec<String> = self
                    .durable
                    .range(prefix.clone()..)
                    .map(|(k, _)| k)
                    .take_while(|k| k.starts_with(&prefix))
                    .cloned()
                    .collect();
                for k in doomed {
                    self.durable.remove(&k);
                }
            }
            StoreOp::Sync => {}
        }
    }

    /// Power loss: a random prefix of the unsynced writes reached the platter, the rest is lost.
    pub fn crash(&mut self, rng: &mut SimRng) {
        let pending = std::mem::take(&mut self.volatile);
        let kept = if rng.chance(0.5) {
            0
        } else {
            rng.index(pending.len() + 1)
        };
        for op in pending.into_iter().take(kept) {
            self.write_durably(op);
        }
    }

    /// Flip one bit of one durable record (keeping its old checksum). Returns the key.
    pub fn flip_bit(&mut self, rng: &mut SimRng) -> Option<String> {
        let keys: Vec<&String> = self
            .durable
            .iter()
            .filter(|(_, (v, _))| !v.is_empty())
            .map(|(k, _)| k)
            .collect();
        let key = (*rng.pick(&keys)?).clone();
        let (value, _) = self.durable.get_mut(&key)?;
        let at = rng.index(value.len());
        value[at] ^= 1 << rng.index(8);
        Some(key)
    }

    /// The whole store is gone: a lost disk or a deleted data directory.
    pub fn wipe(&mut self) {
        *self = Disk::default();
    }

    /// One record whose key starts with `prefix` can no longer be read back (its checksum
    /// fails). Returns the key.
    pub fn lose_record(&mut self, rng: &mut SimRng, prefix: &str) -> Option<String> {
        let keys: Vec<&String> = self
            .durable
            .range(prefix.to_string()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(prefix))
            .collect();
        let key = (*rng.pick(&keys)?).clone();
        let (_, sum) = self.durable.get_mut(&key)?;
        sum.0[0] ^= 1;
        Some(key)
    }

    /// What a restarting stage finds: every record whose checksum holds, and the keys whose
    /// checksum fails.
    pub fn recover(&self) -> Recovered {
        let mut rec = Recovered::default();
        for (key, (value, sum)) in &self.durable {
            if checksum(key, value) == *sum {
                rec.records.insert(key.clone(), value.clone());
            } else {
                rec.corrupt.push(key.clone());
            }
        }
        rec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(k: &str, v: &[u8]) -> StoreOp {
        StoreOp::Put {
            key: k.to_string(),
            value: v.to_vec(),
        }
    }

    #[test]
    fn unsynced_writes_may_be_lost_synced_ones_survive() {
        let mut rng = SimRng::new(1, "disk");
        for _ in 0..20 {
            let mut d = Disk::default();
            d.apply(put("a", b"1"));
            d.apply(StoreOp::Sync);
            d.apply(put("b", b"2"));
            d.apply(StoreOp::Delete { key: "a".into() });
            d.crash(&mut rng);
            let rec = d.recover();
            // Prefix semantics: the delete of "a" survives only if the put of "b" did.
            if !rec.records.contains_key("a") {
                assert!(rec.records.contains_key("b"));
            }
        }
    }

    #[test]
    fn flipped_bit_is_reported_corrupt() {
        let mut rng = SimRng::new(2, "disk");
        let mut d = Disk::default();
        d.apply(put("log/1", b"hello"));
        d.apply(put("log/2", b"world"));
        d.apply(StoreOp::Sync);
        let key = d.flip_bit(&mut rng).unwrap();
        let rec = d.recover();
        assert_eq!(rec.corrupt, vec![key.clone()]);
        assert!(!rec.records.contains_key(&key));
        assert_eq!(rec.records.len(), 1);
    }

    #[test]
    fn delete_prefix_removes_only_that_prefix() {
        let mut d = Disk::default();
        for k in ["cp/1", "cp/2", "cq", "c"] {
            d.apply(put(k, b"x"));
        }
        d.apply(StoreOp::DeletePrefix {
            prefix: "cp/".into(),
        });
        d.apply(StoreOp::Sync);
        let keys: Vec<String> = d.recover().records.into_keys().collect();
        assert_eq!(keys, vec!["c".to_string(), "cq".to_string()]);
    }
}
