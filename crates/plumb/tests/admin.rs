//! What an operator sees of a running cluster: `/metrics` is valid Prometheus text with the
//! metrics the operations guide lists, `/status` names the view, primary, last executed batch
//! and last stable checkpoint, and `plumb status` / `plumb kv` work against it.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

const T20: Duration = Duration::from_secs(20);

/// A line of the text exposition format: `name{label="value",...} number`.
fn sample_is_valid(line: &str) -> bool {
    let (series, value) = match line.rsplit_once(' ') {
        Some(x) => x,
        None => return false,
    };
    let name_end = series.find('{').unwrap_or(series.len());
    let name = &series[..name_end];
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    let labels_ok = match &series[name_end..] {
        "" => true,
        l => {
            l.starts_with('{')
                && l.ends_with('}')
                && l[1..l.len() - 1].split("\",").all(|kv| {
                    let kv = kv.trim_end_matches('"');
                    kv.split_once("=\"").is_some_and(|(k, _)| {
                        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    })
                })
        }
    };
    name_ok && labels_ok && (value.parse::<f64>().is_ok() || value == "+Inf")
}

#[test]
fn metrics_status_and_cli_show_a_working_cluster() {
    let mut c = Cluster::init("admin", 5);
    c.start_all();
    let rec = Recorder::default();
    let load = Load::start(&rec, c.resp_port, 2, 0);
    wait_progress(&load, 0, 30, T20, "load");
    load.stop();

    for node in 0..NODES {
        let text = c.metrics(node).expect("metrics answer");
        let mut samples = 0;
        for line in text.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            assert!(
                sample_is_valid(line),
                "node {node}: bad metrics line {line:?}"
            );
            samples += 1;
        }
        assert!(samples > 10, "node {node}: only {samples} samples");
        for name in [
            "plumb_batches_ordered_total",
            "plumb_view",
            "plumb_stable_checkpoint_seq",
            "plumb_queue_depth",
            "plumb_fsync_seconds_bucket",
            "plumb_peer_connected",
        ] {
            assert!(text.contains(name), "node {node}: no {name} in\n{text}");
        }
        let executed = c.last_executed(node);
        let status = c.status(node).expect("status answers");
        for field in [
            "view",
            "primary",
            "primary_node",
            "last_committed",
            "stable_checkpoint",
        ] {
            assert!(
                !status[field].is_null(),
                "node {node}: /status lacks {field}: {status}"
            );
        }
        if EXEC_NODES.contains(&node) {
            assert!(executed.is_some_and(|e| e > 0), "node {node}: {status}");
            assert!(text.contains("plumb_requests_executed_total"));
        }
    }

    let plumb = env!("CARGO_BIN_EXE_plumb");
    let config = c.config();
    let out = Command::new(plumb)
        .args(["status", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "plumb status failed: {text}");
    assert!(text.contains("4 of 4 nodes up"), "{text}");

    let kv = |args: &[&str]| {
        let out = Command::new(plumb)
            .args(["kv", "--config"])
            .arg(&config)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "plumb kv {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(kv(&["set", "admin-key", "v1"]), "OK");
    assert_eq!(kv(&["get", "admin-key"]), "v1");
    assert_eq!(kv(&["incr", "admin-n", "5"]), "5");
    assert_eq!(kv(&["del", "admin-key"]), "1");
    assert_eq!(kv(&["get", "admin-key"]), "(nil)");
}
