//! Shared by the integration tests: sweep the key-value store's seeds (`plumb_sim::assert_seeds_pass`).

pub fn assert_seeds_pass(u: u16, r: u16, seeds: impl IntoIterator<Item = u64>) {
    plumb_sim::assert_seeds_pass(&plumb_sim::apps::kv::Kv, u, r, seeds);
}
