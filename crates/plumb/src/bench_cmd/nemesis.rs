//! `plumb bench --nemesis`: faults on a real cluster under a checked Redis load
//! (crates/nemesis), printed as one line per fault.

use super::{bench_dir, plumb_exe, usage_error, BenchArgs};
use plumb_bench::report;
use plumb_nemesis::{describe, Fault, Options, MAX_BACK_TO_HALF, MAX_GAP};
use std::process::ExitCode;
use std::time::Duration;

pub fn nemesis_cmd(a: &BenchArgs, faults: &str) -> ExitCode {
    let fail = |e: String| usage_error("plumb bench", e);
    let faults = match Fault::parse_list(faults) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let exe = match plumb_exe() {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let keep = a.common.dir.is_some();
    let dir = bench_dir(&a.common.dir, "plumb-nemesis");
    let seconds = |s: f64| Duration::from_secs_f64(s.max(0.1));
    let o = Options {
        exe,
        dir: dir.join(format!("u{}r{}", a.u, a.r.unwrap_or(1))),
        u: a.u,
        r: a.r.unwrap_or(1),
        base_port: a.common.base_port,
        faults,
        clients: a.common.clients.iter().copied().max().unwrap_or(8).max(1) as u64,
        baseline: seconds(a.common.warmup),
        hold: seconds(a.hold),
        recover: seconds(a.recover),
        progress: !a.common.quiet,
    };
    out!("machine: {}", report::machine());
    out!(
        "cluster: plumb u{}r{}, every node on its own loopback address; {} closed-loop Redis clients through the gateway; {:.1} s fault-free, {:.1} s of fault, {:.1} s watched after healing, per fault",
        o.u,
        o.r,
        o.clients,
        o.baseline.as_secs_f64(),
        o.hold.as_secs_f64(),
        o.recover.as_secs_f64()
    );
    out!(
        "targets: longest gap under {} ms, back to half throughput within {} ms of healing",
        MAX_GAP.as_millis(),
        MAX_BACK_TO_HALF.as_millis()
    );
    let result = plumb_nemesis::run(&o);
    // A node left out of the cluster's view is a liveness miss whose cause is open: its logs,
    // status and metrics are kept whatever `--dir` says.
    let left_behind = result.as_ref().is_ok_and(|r| !r.left_behind.is_empty());
    if !keep && !left_behind {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!(
                "plumb bench: the nemesis run did not finish: {e}{}",
                if keep {
                    ""
                } else {
                    " (rerun with --dir to keep the logs)"
                }
            );
            return ExitCode::from(1);
        }
    };
    out!("");
    for e in &outcome.episodes {
        out!("{}", describe(e));
    }
    for s in &outcome.skipped {
        out!("{s}");
    }
    for l in &outcome.left_behind {
        out!("{l}");
    }
    if left_behind {
        out!("the cluster's logs are kept in {}", dir.display());
    }
    let met = outcome
        .episodes
        .iter()
        .filter(|e| e.meets_targets())
        .count();
    out!(
        "{} of {} faults within the targets; history: {} operations ({} unanswered): {}",
        met,
        outcome.episodes.len(),
        outcome.operations,
        outcome.unanswered,
        match &outcome.linearizability_failure {
            None => "linearizable".to_string(),
            Some(f) => format!("NOT linearizable: {f}"),
        }
    );
    if let Some(path) = &a.common.json {
        let text = serde_json::to_string_pretty(&outcome).unwrap_or_default();
        if let Err(e) = report::write(path, &text) {
            eprintln!("plumb bench: {e}");
            return ExitCode::from(1);
        }
    }
    // CI installs nft and runs as root: a fault it could not inject there is a broken set-up,
    // not a pass.
    if !outcome.skipped.is_empty() && std::env::var("CI").is_ok_and(|v| v == "true") {
        eprintln!(
            "plumb bench: with CI=true every fault must run; {} did not (partitions need root and nft: apt-get install nftables)",
            outcome.skipped.len()
        );
        return ExitCode::from(1);
    }
    if outcome.is_safe() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
