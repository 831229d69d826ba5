//! The simulated network: per message loss, duplication and delay (with a heavy tail, which
//! reorders), and partitions that cut a set of nodes off from the rest and later heal. After
//! `heal` the network is reliable: every message arrives once, after a short delay.

use crate::config::NetConfig;
use crate::rng::SimRng;
use plumb_wire::Micros;
use std::collections::BTreeMap;

pub struct Network {
    cfg: NetConfig,
    healed: bool,
    /// Active partitions by id: which node indices are on the cut-off side.
    partitions: BTreeMap<usize, Vec<bool>>,
    rng: SimRng,
}

impl Network {
    pub fn new(cfg: NetConfig, rng: SimRng) -> Network {
        Network {
            cfg,
            healed: false,
            partitions: BTreeMap::new(),
            rng,
        }
    }

    /// Faults stop: no more loss, duplication, long delays or partitions.
    pub fn heal(&mut self) {
        self.healed = true;
        self.partitions.clear();
    }

    pub fn start_partition(&mut self, id: usize, side: Vec<bool>) {
        if !self.healed {
            self.partitions.insert(id, side);
        }
    }

    pub fn end_partition(&mut self, id: usize) {
        self.partitions.remove(&id);
    }

    /// Whether `a` and `b` are on the same side of every active partition.
    pub fn connected(&self, a: usize, b: usize) -> bool {
        self.partitions.values().all(|side| {
            side.get(a).copied().unwrap_or(false) == side.get(b).copied().unwrap_or(false)
        })
    }

    /// The delays after which copies of one message from `from` to `to` arrive (none if lost).
    pub fn deliveries(&mut self, from: usize, to: usize, out: &mut Vec<Micros>) {
        out.clear();
        if !self.connected(from, to) {
            return;
        }
        if self.healed {
            out.push(self.base_delay());
            return;
        }
        if self.rng.chance(self.cfg.loss) {
            return;
        }
        let first = self.faulty_delay();
        out.push(first);
        if self.rng.chance(self.cfg.duplicate) {
            let second = self.faulty_delay();
            out.push(second);
        }
    }

    fn base_delay(&mut self) -> Micros {
        self.rng.range(self.cfg.delay_min_us, self.cfg.delay_max_us)
    }

    fn faulty_delay(&mut self) -> Micros {
        let base = self.base_delay();
        if self.rng.chance(self.cfg.tail_chance) {
            base + self.rng.range(0, self.cfg.tail_max_us)
        } else {
            base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> NetConfig {
        NetConfig {
            loss: 0.5,
            duplicate: 0.5,
            delay_min_us: 10,
            delay_max_us: 20,
            tail_chance: 0.5,
            tail_max_us: 1000,
        }
    }

    #[test]
    fn partition_cuts_both_ways_and_heal_restores() {
        let mut n = Network::new(cfg(), SimRng::new(1, "net"));
        n.start_partition(0, vec![true, false, false]);
        assert!(!n.connected(0, 1) && !n.connected(1, 0) && n.connected(1, 2));
        let mut out = Vec::new();
        n.deliveries(0, 1, &mut out);
        assert!(out.is_empty());
        n.heal();
        for _ in 0..50 {
            n.deliveries(0, 1, &mut out);
            assert_eq!(out.len(), 1, "healed network delivers exactly once");
            assert!((10..=20).contains(&out[0]));
        }
    }

    #[test]
    fn faulty_network_loses_and_duplicates() {
        let mut n = Network::new(cfg(), SimRng::new(2, "net"));
        let mut counts = [0usize; 3];
        let mut out = Vec::new();
        for _ in 0..400 {
            n.deliveries(0, 1, &mut out);
            counts[out.len()] += 1;
        }
        assert!(counts.iter().all(|&c| c > 50), "{counts:?}");
    }
}
