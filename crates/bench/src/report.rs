//! What one measured run produced, and how it is printed and written.

use serde::Serialize;

/// One measured run: a system in one shape, one workload, one load level.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// `plumb`, `plumb-coord`, `etcd`, `zookeeper`, `redis`.
    pub system: String,
    /// The shape: `u1r0`, `u1r1-split`, `3 nodes`, ...
    pub config: String,
    /// `write-1k`, `read-1k`, ...
    pub workload: String,
    /// `closed:32` (32 clients, one request outstanding each) or `open:5000` (target rate/s).
    pub load: String,
    pub clients: usize,
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    pub ops_per_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// The longest window while measuring in which no operation completed.
    pub longest_gap_ms: f64,
    /// CPU time (user + system) of every server process, per completed operation.
    pub cpu_us_per_op: Option<f64>,
    /// What the servers spent while measuring, as totals (docs/performance.md "The cost
    /// model"; [`crate::cost::PerOp`] divides them by `ops`).
    pub cost: Option<crate::cost::Cost>,
    /// Mean requests per batch the order stage formed, where the system reports it (empty
    /// batches, which the order stage makes to fill a checkpoint interval or a view change,
    /// count too).
    pub batch_mean: Option<f64>,
    /// Views the cluster moved through while measuring, where the system reports it.
    pub views: Option<u64>,
    /// What stalled while measuring, where the system reports it: view changes by cause and
    /// slow requests by stage and reason, summed over nodes (each order replica counts the
    /// view changes it asked for; each stage the requests that waited in it).
    pub stalls: Option<String>,
    /// Which round of the suite it was measured in (from 1; `--rounds`).
    pub round: usize,
}

/// Where the numbers were measured: printed above every table, since figures from different
/// machines cannot be compared.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{model}, {cores} cores, {mem_gib:.0} GiB, Linux {}; every server and client on this one machine",
        kernel.trim()
    )
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The full table of runs, one line each.
pub fn table(results: &[RunResult]) -> String {
    let mut s = format!(
        "{:<11} {:<24} {:<12} {:<11} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>6} {:>5}\n",
        "system",
        "config",
        "workload",
        "load",
        "ops/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "p99.9",
        "max ms",
        "cpu us/op",
        "batch",
        "views"
    );
    for r in results {
        s += &format!(
            "{:<11} {:<24} {:<12} {:<11} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>9} {:>6} {:>5}{}\n",
            r.system,
            r.config,
            r.workload,
            r.load,
            r.ops_per_s,
            r.p50_ms,
            r.p90_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            opt(r.cpu_us_per_op, 0),
            opt(r.batch_mean, 1),
            r.views.map_or("-".into(), |v| v.to_string()),
            if r.errors > 0 { format!("  ({} errors)", r.errors) } else { String::new() }
        );
    }
    for r in results {
        let stalls = r
            .stalls
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!("; {s}"))
            .unwrap_or_default();
        s += &format!(
            "  {} {} {} {}: longest window without a completed operation {:.0} ms{stalls}\n",
            r.system, r.config, r.workload, r.load, r.longest_gap_ms
        );
    }
    s
}

/// The cost table (docs/performance.md, "The cost model"): what one operation cost the
/// servers while measured, each run on a line, then each plumb run's frames by sender.
pub fn cost_table(results: &[RunResult]) -> String {
    use crate::cost::{frames_by_sender, PerOp};
    let mut s = String::from(
        "per operation, all servers together (wake-ups: voluntary context switches; frames: \
         routed by plumb's nodes, socket: those to another node or a client):\n",
    );
    s += &format!(
        "{:<11} {:<24} {:<12} {:<11} {:>7} {:>8} {:>7} {:>8} {:>6} {:>7} {:>7} {:>8} {:>7} {:>8} {:>6} {:>7} {:>7}\n",
        "system", "config", "workload", "load", "cpu us", "wake-ups", "preempt", "syscalls",
        "fsyncs", "frames", "socket", "sent KiB", "hashes", "hash KiB", "MACs", "MAC KiB", "allocs"
    );
    let o = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    for r in results {
        let Some(cost) = &r.cost else { continue };
        let p = PerOp::of(cost, r.ops);
        s += &format!(
            "{:<11} {:<24} {:<12} {:<11} {:>7} {:>8.1} {:>7.1} {:>8} {:>6} {:>7} {:>7} {:>8} {:>7} {:>8} {:>6} {:>7} {:>7}\n",
            r.system,
            r.config,
            r.workload,
            r.load,
            opt(r.cpu_us_per_op, 0),
            p.wakeups,
            p.preemptions,
            o(p.syscalls, 1),
            o(p.fsyncs, 3),
            o(p.frames, 1),
            o(p.socket_frames, 1),
            o(p.frame_kib, 1),
            o(p.hashes, 1),
            o(p.hashed_kib, 1),
            o(p.macs, 1),
            o(p.maced_kib, 1),
            o(p.allocations, 0),
        );
    }
    for r in results {
        let Some(cost) = &r.cost else { continue };
        let by_sender = frames_by_sender(cost, r.ops);
        if !by_sender.is_empty() {
            s += &format!(
                "  {} {} {} {}: frames per operation by sender: {by_sender}\n",
                r.system, r.config, r.workload, r.load
            );
        }
    }
    s
}

/// Runs of the same system, config, workload and load over rounds, in the order first seen.
fn by_level(results: &[RunResult]) -> Vec<Vec<&RunResult>> {
    let mut levels: Vec<Vec<&RunResult>> = Vec::new();
    for r in results {
        let same = |o: &&RunResult| {
            o.system == r.system
                && o.config == r.config
                && o.workload == r.workload
                && o.load == r.load
        };
        match levels.iter_mut().find(|l| l.first().is_some_and(same)) {
            Some(l) => l.push(r),
            None => levels.push(vec![r]),
        }
    }
    levels
}

/// For each (system, config, workload, load) measured in several rounds, its median run by
/// throughput (of an even count, the lower of the two middle ones): a run that happened, so
/// its latencies and CPU belong with its throughput. What peaks and comparisons over rounds
/// are taken from.
pub fn medians(results: &[RunResult]) -> Vec<RunResult> {
    by_level(results)
        .into_iter()
        .map(|mut level| {
            level.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
            level[(level.len() - 1) / 2].clone()
        })
        .collect()
}

/// The median (of an even count, the lower middle one), lowest and highest of `values` (at
/// least one).
fn median_and_range(values: impl Iterator<Item = f64>) -> (f64, f64, f64) {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    (v[(v.len() - 1) / 2], v[0], v[v.len() - 1])
}

/// The spread over rounds of each (system, config, workload, load): its median, lowest and
/// highest throughput, p99 and CPU per operation, so a swing between runs shows as such.
pub fn spread(results: &[RunResult]) -> String {
    let mut s = format!(
        "{:<11} {:<24} {:<12} {:<10} {:>6} {:>9} {:>17} {:>8} {:>15} {:>9}\n",
        "system",
        "config",
        "workload",
        "load",
        "rounds",
        "ops/s",
        "lowest..highest",
        "p99 ms",
        "lowest..highest",
        "cpu us/op"
    );
    for level in by_level(results) {
        let (ops, ops_lo, ops_hi) = median_and_range(level.iter().map(|r| r.ops_per_s));
        let (p99, p99_lo, p99_hi) = median_and_range(level.iter().map(|r| r.p99_ms));
        let cpu = Some(
            level
                .iter()
                .filter_map(|r| r.cpu_us_per_op)
                .collect::<Vec<_>>(),
        )
        .filter(|v| !v.is_empty())
        .map(|v| median_and_range(v.into_iter()).0);
        let r = level[0];
        s += &format!(
            "{:<11} {:<24} {:<12} {:<10} {:>6} {:>9.0} {:>17} {:>8.2} {:>15} {:>9}\n",
            r.system,
            r.config,
            r.workload,
            r.load,
            level.len(),
            ops,
            format!("{ops_lo:.0}..{ops_hi:.0}"),
            p99,
            format!("{p99_lo:.1}..{p99_hi:.1}"),
            opt(cpu, 0),
        );
    }
    s
}

/// For each (system, config, workload), the run with the highest throughput.
pub fn peaks(results: &[RunResult]) -> Vec<RunResult> {
    let mut best: Vec<RunResult> = Vec::new();
    for r in results {
        match best
            .iter_mut()
            .find(|b| b.system == r.system && b.config == r.config && b.workload == r.workload)
        {
            Some(b) if r.ops_per_s > b.ops_per_s => *b = r.clone(),
            Some(_) => {}
            None => best.push(r.clone()),
        }
    }
    best
}

/// The comparison table: each system's peak per workload and its ratio to the reference (the
/// row of that workload whose system and config match the first of `references` that has one).
pub fn comparison(peaks: &[RunResult], references: &[(&str, &str)]) -> String {
    let mut s = format!(
        "{:<11} {:<24} {:<12} {:>9} {:>8} {:>8} {:>11} {:>11}\n",
        "system", "config", "workload", "ops/s", "p50 ms", "p99 ms", "ops/s ratio", "p99 ratio"
    );
    for r in peaks {
        let base = references.iter().find_map(|reference| {
            peaks.iter().find(|b| {
                b.workload == r.workload && b.system == reference.0 && b.config == reference.1
            })
        });
        let ratio = |a: f64, b: Option<f64>| b.filter(|b| *b > 0.0).map(|b| a / b);
        s += &format!(
            "{:<11} {:<24} {:<12} {:>9.0} {:>8.2} {:>8.2} {:>11} {:>11}\n",
            r.system,
            r.config,
            r.workload,
            r.ops_per_s,
            r.p50_ms,
            r.p99_ms,
            opt(ratio(r.ops_per_s, base.map(|b| b.ops_per_s)), 2),
            opt(ratio(r.p99_ms, base.map(|b| b.p99_ms)), 2),
        );
    }
    s
}

/// The comparison as CSV, with the header `system,config,workload,ops_per_s,p50_ms,p99_ms`.
pub fn comparison_csv(peaks: &[RunResult]) -> String {
    let mut s = String::from("system,config,workload,ops_per_s,p50_ms,p99_ms\n");
    for r in peaks {
        s += &format!(
            "{},{},{},{:.1},{:.3},{:.3}\n",
            r.system, r.config, r.workload, r.ops_per_s, r.p50_ms, r.p99_ms
        );
    }
    s
}

/// Every run as CSV, every field.
pub fn runs_csv(results: &[RunResult]) -> String {
    let mut s = String::from(
        "system,config,workload,load,clients,ops,errors,seconds,ops_per_s,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,mean_ms,cpu_us_per_op,batch_mean,longest_gap_ms,round,wakeups_per_op,syscalls_per_op,fsyncs_per_op,frames_per_op,socket_frames_per_op,hashes_per_op,macs_per_op,allocations_per_op\n",
    );
    let o = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
    for r in results {
        let per = r.cost.as_ref().map(|c| crate::cost::PerOp::of(c, r.ops));
        let cost_fields = [
            per.map(|p| p.wakeups),
            per.and_then(|p| p.syscalls),
            per.and_then(|p| p.fsyncs),
            per.and_then(|p| p.frames),
            per.and_then(|p| p.socket_frames),
            per.and_then(|p| p.hashes),
            per.and_then(|p| p.macs),
            per.and_then(|p| p.allocations),
        ]
        .map(o)
        .join(",");
        s += &format!(
            "{},{},{},{},{},{},{},{:.3},{:.1},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{},{},{:.1},{},{cost_fields}\n",
            r.system,
            r.config,
            r.workload,
            r.load,
            r.clients,
            r.ops,
            r.errors,
            r.seconds,
            r.ops_per_s,
            r.p50_ms,
            r.p90_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            r.mean_ms,
            o(r.cpu_us_per_op),
            o(r.batch_mean),
            r.longest_gap_ms,
            r.round
        );
    }
    s
}

pub fn write(path: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A run for the report's and the charts' tests: one closed-loop client, one operation in
/// one second at `ops_per_s`, every latency `latency_ms`, no extras.
#[cfg(test)]
pub(crate) fn sample_run(
    system: &str,
    config: &str,
    workload: &str,
    ops_per_s: f64,
    latency_ms: f64,
) -> RunResult {
    RunResult {
        system: system.into(),
        config: config.into(),
        workload: workload.into(),
        load: "closed:1".into(),
        clients: 1,
        ops: 1,
        errors: 0,
        seconds: 1.0,
        ops_per_s,
        p50_ms: latency_ms,
        p90_ms: latency_ms,
        p99_ms: latency_ms,
        p999_ms: latency_ms,
        max_ms: latency_ms,
        mean_ms: latency_ms,
        longest_gap_ms: latency_ms,
        cpu_us_per_op: None,
        cost: None,
        batch_mean: None,
        views: None,
        stalls: None,
        round: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(system: &str, config: &str, workload: &str, ops: f64, p99: f64) -> RunResult {
        RunResult {
            ops: 100,
            p99_ms: p99,
            ..sample_run(system, config, workload, ops, 1.0)
        }
    }

    #[test]
    fn rounds_give_each_level_its_median_run_and_spread() {
        let round = |n: usize, ops: f64, p99: f64| RunResult {
            round: n,
            cpu_us_per_op: Some(ops / 10.0),
            ..run("plumb", "u1r0", "write-1k", ops, p99)
        };
        let rs = vec![
            round(1, 3000.0, 9.0),
            run("etcd", "3 nodes", "write-1k", 1500.0, 16.0),
            round(2, 1000.0, 30.0),
            round(3, 2000.0, 12.0),
        ];
        let m = medians(&rs);
        assert_eq!(m.len(), 2);
        // The median run, with its own latency, not a mix of rounds.
        assert_eq!((m[0].ops_per_s, m[0].p99_ms, m[0].round), (2000.0, 12.0, 3));
        assert_eq!(m[1].system, "etcd");
        let t = spread(&rs);
        let plumb = t.lines().find(|l| l.starts_with("plumb")).unwrap();
        for part in [" 3 ", " 2000 ", "1000..3000", "12.00", "9.0..30.0", " 200"] {
            assert!(plumb.contains(part), "{part:?} in {plumb}");
        }
        let csv = runs_csv(&rs);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let field = |row: usize, name: &str| {
            let column = header.iter().position(|h| *h == name).unwrap();
            csv.lines()
                .nth(row)
                .unwrap()
                .split(',')
                .nth(column)
                .unwrap()
                .to_string()
        };
        assert_eq!(field(3, "round"), "2");
        // No cost measured for these runs: the cost columns are empty, not zero.
        assert_eq!(field(3, "wakeups_per_op"), "");
        assert_eq!(field(3, "allocations_per_op"), "");
        assert_eq!(csv.lines().nth(3).unwrap().split(',').count(), header.len());
    }

    #[test]
    fn peaks_keep_the_best_load_and_ratios_use_the_reference() {
        let rs = vec![
            run("plumb", "u1r0", "write-1k", 1000.0, 4.0),
            run("plumb", "u1r0", "write-1k", 3000.0, 8.0),
            run("etcd", "3 nodes", "write-1k", 1500.0, 16.0),
        ];
        let p = peaks(&rs);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].ops_per_s, 3000.0);
        let t = comparison(&p, &[("plumb", "u1r0")]);
        let etcd = t.lines().find(|l| l.starts_with("etcd")).unwrap();
        assert!(etcd.contains("0.50") && etcd.contains("2.00"), "{etcd}");
        let csv = comparison_csv(&p);
        assert!(csv.starts_with("system,config,workload,ops_per_s,p50_ms,p99_ms\n"));
        assert!(
            csv.contains("etcd,3 nodes,write-1k,1500.0,1.000,16.000"),
            "{csv}"
        );
    }
}
