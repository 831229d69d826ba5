//! Shared by the integration tests: run seeds and fail with every violation and its replay line.

use plumb_sim::{run_seed, SimOptions};

pub fn assert_seeds_pass(u: u16, r: u16, seeds: impl IntoIterator<Item = u64>) {
    let mut failures = Vec::new();
    for seed in seeds {
        let report = run_seed(&SimOptions::new(seed, u, r));
        if !report.ok() {
            let first: Vec<String> = report
                .violations
                .iter()
                .take(3)
                .map(|v| v.to_string())
                .collect();
            failures.push(format!(
                "{} -> {}",
                report.replay_command(),
                first.join("; ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "failing seeds:\n{}",
        failures.join("\n")
    );
}
