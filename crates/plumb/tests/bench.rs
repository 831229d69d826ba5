//! Smoke runs of every `plumb bench` mode, a few hundred requests each, so the tool cannot rot.
//! They check that each mode measures something real and writes its files; they never judge
//! speed (benchmarks are not tests).
//!
//! Every `--base-port` stays below 32768, where Linux's ephemeral range begins: a port in it may
//! be held by any outgoing connection on the machine, and a server that cannot bind it fails to
//! start (the likely way a CI run lost this test: its gateway exited on 33590).

use std::path::Path;
use std::process::Command;

fn plumb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_plumb"))
}

/// One benchmark at a time: they share two cores with everything else.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(args: &[&str], dir: &Path) -> String {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let out = plumb()
        .arg("bench")
        .args(args)
        .args(["--quiet", "--dir"])
        .arg(dir)
        .output()
        .expect("plumb runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "plumb bench {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `plumb bench compare` with a small load: four clients, 200 requests over 50 keys.
fn compare(extra: &[&str], dir: &Path) -> String {
    let small = [
        "compare",
        "--clients",
        "4",
        "--duration",
        "20",
        "--warmup",
        "0.5",
        "--requests",
        "200",
        "--keys",
        "50",
    ];
    run(&[&small[..], extra].concat(), dir)
}

/// `compare` of one `system` on `workloads`, its servers under `dir/data`: the CSV it wrote.
fn compare_one(system: &str, workloads: &str, base_port: &str, dir: &Path) -> String {
    let csv = dir.join("coord.csv");
    compare(
        &[
            "--systems",
            system,
            "--workloads",
            workloads,
            "--base-port",
            base_port,
            "--csv",
            csv.to_str().unwrap(),
        ],
        &dir.join("data"),
    );
    std::fs::read_to_string(&csv).unwrap()
}

/// A CSV's rows after its header, split into fields.
fn csv_rows(csv: &str) -> Vec<Vec<&str>> {
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect()
}

/// The table's rows for `system`: (ops/s, p50 ms).
/// The first line of the cost table (docs/performance.md, "The cost model").
const COST_TABLE: &str = "per operation, all servers together";

/// The latency table's rows of `system` (the cost table below it is left out).
fn rows(table: &str, system: &str) -> Vec<(f64, f64)> {
    let latency = table.split(COST_TABLE).next().unwrap_or(table);
    latency
        .lines()
        .filter(|l| l.starts_with(system))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = f
                .iter()
                .position(|x| x.starts_with("closed:") || x.starts_with("open:"))?;
            Some((f.get(n + 1)?.parse().ok()?, f.get(n + 2)?.parse().ok()?))
        })
        .collect()
}

#[test]
fn closed_loop_sweep_writes_csv_json_and_chart() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, json, chart) = (
        dir.path().join("runs.csv"),
        dir.path().join("runs.json"),
        dir.path().join("curve.svg"),
    );
    let table = run(
        &[
            "--u",
            "1",
            "--r",
            "0",
            "--clients",
            "1,4",
            "--size",
            "0/0",
            "--writes",
            "0.5",
            "--duration",
            "20",
            "--warmup",
            "0.5",
            "--requests",
            "150",
            "--base-port",
            "22000",
            "--csv",
            csv.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--chart",
            chart.to_str().unwrap(),
        ],
        &dir.path().join("data"),
    );
    assert!(table.contains("machine: "), "{table}");
    let r = rows(&table, "plumb");
    assert_eq!(r.len(), 2, "{table}");
    assert!(
        r.iter().all(|&(ops, p50)| ops > 0.0 && p50 > 0.0),
        "{table}"
    );
    let csv = std::fs::read_to_string(csv).unwrap();
    assert!(csv.starts_with("system,config,workload,load,"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.contains("plumb,u1r0,mixed50-0/0,closed:4,"), "{csv}");
    let runs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    // The server processes did work, and the order stage formed batches (the mean counts the
    // occasional empty batch too, so a one-client run can come out just under 1).
    assert!(
        runs.iter()
            .all(|r| r["cpu_us_per_op"].as_f64().unwrap() > 0.0),
        "{runs:?}"
    );
    assert!(
        runs.iter().all(|r| r["batch_mean"].as_f64().unwrap() > 0.5),
        "{runs:?}"
    );
    // The cost model: the nodes routed frames (stage to stage, peer, client), computed
    // digests and MACs, and allocated; their threads blocked and were woken.
    for r in runs {
        let cost = &r["cost"];
        let counted = |name: &str| cost["counters"][name].as_u64().unwrap_or(0);
        assert!(cost["wakeups"].as_u64().unwrap() > 0, "{cost}");
        for name in [
            "frames auth->peer",
            "frames exec->client",
            "frames client->local",
        ] {
            assert!(counted(name) > 0, "{name}: {cost}");
        }
        for name in ["hashes", "hashed bytes", "macs", "allocations"] {
            assert!(counted(name) > 0, "{name}: {cost}");
        }
    }
    let cost_rows = table.split(COST_TABLE).nth(1).expect("a cost table");
    assert_eq!(
        cost_rows
            .lines()
            .filter(|l| l.starts_with("plumb "))
            .count(),
        2,
        "{table}"
    );
    let svg = std::fs::read_to_string(chart).unwrap();
    assert!(svg.contains("plumb u1r0 mixed50-0/0"), "{svg}");
}

#[test]
fn open_loop_on_split_stages() {
    let dir = tempfile::tempdir().unwrap();
    let table = run(
        &[
            "--u",
            "1",
            "--r",
            "1",
            "--split",
            "--rate",
            "100",
            "--clients",
            "8",
            "--size",
            "1k/1k",
            "--duration",
            "2",
            "--warmup",
            "0.5",
            "--base-port",
            "22100",
        ],
        &dir.path().join("data"),
    );
    let r = rows(&table, "plumb");
    assert_eq!(r.len(), 1, "{table}");
    // At a rate far below capacity, throughput follows the rate.
    assert!((60.0..=140.0).contains(&r[0].0), "{table}");
    assert!(table.contains("u1r1-split"), "{table}");
    assert!(table.contains("open:100"), "{table}");
}

#[test]
fn compare_measures_every_system_and_writes_the_comparison_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, chart) = (
        dir.path().join("compare.csv"),
        dir.path().join("compare.svg"),
    );
    let table = compare(
        &[
            "--base-port",
            "24000",
            "--csv",
            csv.to_str().unwrap(),
            "--chart",
            chart.to_str().unwrap(),
        ],
        &dir.path().join("data"),
    );
    assert!(table.contains("ratios to plumb u1r0"), "{table}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("system,config,workload,ops_per_s,p50_ms,p99_ms")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for (system, config) in [
        ("plumb", "u1r0"),
        ("plumb", "u1r1"),
        ("etcd", "3 nodes"),
        ("zookeeper", "3 nodes"),
        ("redis", "1 node"),
    ] {
        for workload in ["write-1k", "read-1k"] {
            let row = rows
                .iter()
                .find(|r| r[0] == system && r[1] == config && r[2] == workload)
                .unwrap_or_else(|| panic!("no {system} {config} {workload} row in\n{csv}"));
            assert!(row[3].parse::<f64>().unwrap() > 0.0, "{row:?}");
        }
    }
    // plumb's coordination service through its ZooKeeper gateway, against the ZooKeeper
    // ensemble, on ZooKeeper's own operations through the same client library.
    for (system, config) in [
        ("plumb-coord", "u1r0"),
        ("plumb-coord", "u1r1"),
        ("zookeeper", "3 nodes"),
    ] {
        for workload in ["zk-create", "zk-set-1k", "zk-get-1k"] {
            let row = rows
                .iter()
                .find(|r| r[0] == system && r[1] == config && r[2] == workload)
                .unwrap_or_else(|| panic!("no {system} {config} {workload} row in\n{csv}"));
            assert!(row[3].parse::<f64>().unwrap() > 0.0, "{row:?}");
        }
    }
    // The ZooKeeper workloads go only to the systems that speak ZooKeeper's protocol, and the
    // coordination service runs only those.
    assert!(
        !rows
            .iter()
            .any(|r| r[2].starts_with("zk-") && !matches!(r[0], "plumb-coord" | "zookeeper")),
        "{csv}"
    );
    assert!(
        !rows
            .iter()
            .any(|r| r[0] == "plumb-coord" && !r[2].starts_with("zk-")),
        "{csv}"
    );
    assert!(chart.exists());
    assert!(dir.path().join("compare-throughput.svg").exists());
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.contains("plumb-coord u1r0 zk-set-1k"), "{svg}");
}

/// `--systems` and `--workloads` pick the rows: the coordination service alone on one
/// ZooKeeper workload (it skips the keyed one it does not run).
#[test]
fn compare_selects_the_coordination_rows() {
    let dir = tempfile::tempdir().unwrap();
    let csv = compare_one(
        "plumb-coord-u1r0",
        "write-1k,zk-set-1k",
        "24900",
        dir.path(),
    );
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 1, "{csv}");
    assert_eq!(&rows[0][..3], ["plumb-coord", "u1r0", "zk-set-1k"], "{csv}");
    assert!(rows[0][3].parse::<f64>().unwrap() > 0.0, "{csv}");
}

#[test]
fn compare_measures_the_coordination_service_with_ordered_reads() {
    let dir = tempfile::tempdir().unwrap();
    let csv = compare_one(
        "plumb-coord-u1r0-ordered-reads",
        "zk-get-1k",
        "26000",
        dir.path(),
    );
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 1, "{csv}");
    assert_eq!(
        &rows[0][..3],
        ["plumb-coord", "u1r0-ordered-reads", "zk-get-1k"],
        "{csv}"
    );
    assert!(rows[0][3].parse::<f64>().unwrap() > 0.0, "{csv}");
    // The gateway was started with fast_reads off.
    let cluster = std::fs::read_to_string(
        dir.path()
            .join("data/plumb-coord-u1r0-ordered-reads/cluster.toml"),
    )
    .unwrap();
    assert!(cluster.contains("fast_reads = false"), "{cluster}");
}

#[test]
fn matrix_runs_every_fault_model() {
    let dir = tempfile::tempdir().unwrap();
    let table = run(
        &[
            "matrix",
            "--no-split",
            "--clients",
            "2",
            "--duration",
            "20",
            "--warmup",
            "0.2",
            "--requests",
            "100",
            "--base-port",
            "24500",
        ],
        &dir.path().join("data"),
    );
    for config in ["u0r0", "u1r0", "u0r1", "u1r1", "u2r0", "u2r1"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("plumb") && l.contains(config)),
            "no {config} row in\n{table}"
        );
    }
}

/// The fault scoreboard with a faulty client (which needs no test build): fault-free and
/// faulty throughput are both real, and the CSV has the documented header. A faulty-replica
/// scenario in a build without the `adversary` feature is refused with the command that makes
/// one.
#[test]
fn scoreboard_measures_a_faulty_client_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, chart) = (dir.path().join("score.csv"), dir.path().join("score.svg"));
    let table = run(
        &[
            "--scenario",
            "client-malformed",
            "--clients",
            "4",
            "--duration",
            "1",
            "--warmup",
            "0.5",
            "--base-port",
            "24800",
            "--csv",
            csv.to_str().unwrap(),
            "--chart",
            chart.to_str().unwrap(),
        ],
        &dir.path().join("data"),
    );
    let row = table
        .lines()
        .find(|l| l.starts_with("client-malformed"))
        .unwrap_or_else(|| panic!("no scoreboard row:\n{table}"));
    let f: Vec<f64> = row
        .split_whitespace()
        .skip(1)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(f[0] > 0.0 && f[1] > 0.0, "{row}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("scenario,baseline_ops_per_s,faulty_ops_per_s,ratio")
    );
    assert!(lines.next().unwrap().starts_with("client-malformed,"));
    assert!(std::fs::read_to_string(&chart).unwrap().contains("<svg"));

    if !cfg!(feature = "adversary") {
        let out = plumb()
            .args(["bench", "--scenario", "replica-silent", "--quiet"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("--features adversary"));
    }
}
