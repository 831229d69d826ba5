//! Shared by the key-value store's simulator tests (this directory): one seed, and sweeps of
//! seeds, of the store's adapter (`plumb_kv::sim::Kv`).
#![allow(dead_code)]

use plumb_kv::sim::Kv;
use plumb_sim::{SeedReport, SimOptions};

/// Run one seed of the key-value store and judge it.
pub fn run_seed(opts: &SimOptions) -> SeedReport {
    plumb_sim::run_app_seed(&Kv, opts)
}

/// Sweep the key-value store's seeds (`plumb_sim::assert_seeds_pass`).
pub fn assert_seeds_pass(u: u16, r: u16, seeds: impl IntoIterator<Item = u64>) {
    plumb_sim::assert_seeds_pass(&Kv, u, r, seeds);
}

/// Runs of the key-value store given whole (`plumb_sim::assert_runs_pass`).
pub fn assert_runs_pass(runs: impl IntoIterator<Item = SimOptions>) {
    plumb_sim::assert_runs_pass(&Kv, runs);
}
