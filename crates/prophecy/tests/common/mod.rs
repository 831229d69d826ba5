//! A small deterministic model of a replica group behind a sharded sketching core, to check
//! delay-once end to end: objects with versions, writes, fast reads answered by replicas that
//! may lag, replicated reads whose replies come back in any order, fast reads that time out,
//! a tiny history table (evictions), and membership changes with hand-overs that settle
//! explicitly or by time.
//!
//! The check: a read (fast and accepted, or replicated) never returns an older version of
//! its object than a read of that object that completed before it was issued.
#![allow(dead_code)] // each test binary uses a part

use plumb_prophecy::{
    Plan, Position, ShardId, ShardedSketcher, ShardingConfig, Sketch, SketcherConfig, Verdict,
};

/// splitmix64: the model's only source of choices, from the seed.
pub struct Rng(u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn q(x: usize) -> Sketch {
    Sketch::of(format!("GET /object/{x}").as_bytes())
}

fn r(x: usize, version: u64) -> Sketch {
    Sketch::of(format!("object {x} version {version}").as_bytes())
}

enum Flight {
    Fast {
        x: usize,
        version: u64,
        floor: u64,
    },
    Replicated {
        x: usize,
        version: u64,
        at: Position,
        floor: u64,
    },
}

/// What a run did (so that tests can see it was not vacuous).
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    pub fast_accepted: u64,
    pub replicated_returned: u64,
    pub membership_changes: u64,
}

const OBJECTS: usize = 6;

/// A read of object `x` that was issued when `floor` was the newest version any completed
/// read of `x` had returned now returns `version`.
fn complete(
    completed: &mut [u64; OBJECTS],
    seed: u64,
    now: u64,
    x: usize,
    version: u64,
    floor: u64,
    how: &str,
) -> Result<(), String> {
    if version < floor {
        return Err(format!(
            "seed {seed}, t={now}: {how} read of object {x} returned version {version}, \
             but a read that completed before it was issued returned {floor}"
        ));
    }
    completed[x] = completed[x].max(version);
    Ok(())
}

pub fn simulate(seed: u64, steps: u64) -> Result<Outcome, String> {
    let mut rng = Rng(seed);
    let config = SketcherConfig {
        max_entries: 3,
        blacklist_cooldown_us: 30,
        ..SketcherConfig::default()
    };
    let sharding = ShardingConfig {
        vnodes_per_shard: 8,
        handover_us: Some(40),
    };
    let mut core = ShardedSketcher::new(&[ShardId(0), ShardId(1)], config, sharding)
        .map_err(|e| e.to_string())?;
    let mut versions = [0u64; OBJECTS];
    let mut completed = [0u64; OBJECTS];
    let mut seq = 0u64;
    let mut flights: Vec<Flight> = Vec::new();
    let mut out = Outcome::default();

    for now in 0..steps {
        match rng.below(20) {
            0..=3 => {
                let x = rng.below(OBJECTS as u64) as usize;
                seq += 1;
                versions[x] += 1;
            }
            4..=9 => {
                let x = rng.below(OBJECTS as u64) as usize;
                let floor = completed[x];
                match core.plan(q(x), now) {
                    Plan::Fast { .. } => {
                        // The replica picked may lag behind by a few writes.
                        let lag = rng.below(3);
                        flights.push(Flight::Fast {
                            x,
                            version: versions[x].saturating_sub(lag),
                            floor,
                        });
                    }
                    Plan::Replicated => {
                        seq += 1;
                        flights.push(Flight::Replicated {
                            x,
                            version: versions[x],
                            at: Position::new(seq, 0),
                            floor,
                        });
                    }
                }
            }
            10..=18 => {
                if flights.is_empty() {
                    continue;
                }
                let i = rng.below(flights.len() as u64) as usize;
                match flights.swap_remove(i) {
                    Flight::Fast { x, version, floor } => {
                        let verdict = if rng.below(10) == 0 {
                            core.on_fast_failed(q(x), now);
                            Verdict::Fallback
                        } else {
                            core.on_fast_reply(q(x), r(x, version), now)
                        };
                        match verdict {
                            Verdict::Accept => {
                                out.fast_accepted += 1;
                                complete(&mut completed, seed, now, x, version, floor, "fast")?;
                            }
                            Verdict::Fallback => {
                                seq += 1;
                                flights.push(Flight::Replicated {
                                    x,
                                    version: versions[x],
                                    at: Position::new(seq, 0),
                                    floor,
                                });
                            }
                        }
                    }
                    Flight::Replicated {
                        x,
                        version,
                        at,
                        floor,
                    } => {
                        // The table learns of the reply before the client gets it.
                        core.on_replicated(q(x), r(x, version), at, now);
                        out.replicated_returned += 1;
                        complete(&mut completed, seed, now, x, version, floor, "replicated")?;
                    }
                }
            }
            _ => {
                if core.handover_started().is_some() {
                    if rng.below(2) == 0 {
                        core.settle();
                    }
                } else {
                    let mut members: Vec<ShardId> =
                        (0..4).filter(|_| rng.below(2) == 0).map(ShardId).collect();
                    if members.is_empty() {
                        members.push(ShardId(rng.below(4) as u32));
                    }
                    core.set_members(&members, now).map_err(|e| e.to_string())?;
                    out.membership_changes += 1;
                }
            }
        }
    }
    Ok(out)
}
