//! The key-value store under the simulator, in one test binary (`cargo test -p plumb-kv
//! --features sim --test sim`): one binary links the simulator once, where a file each
//! linked it five times.

mod sim_support;

mod determinism;
mod lost_disks;
mod read_only_restart;
mod regressions;
mod seeds;
