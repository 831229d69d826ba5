//! Divergence reports with real processes (docs/divergence.md): an application that breaks
//! the determinism rules on one replica (the `drifting` example reads replica-local
//! configuration) is reported in that node's log, `/metrics` and `/status`, by the other
//! nodes' order replicas and by the client; the replica rolls back to the agreed checkpoint
//! and agrees again.
//!
//! Ports: slot 22 (23200..23299) of `common::Cluster`'s scheme.

mod common;

use common::{example_binary, http_get, Cluster};
use std::time::{Duration, Instant};

/// The drifting example's object of `key` (as the example computes it).
fn bucket(key: &str) -> u64 {
    u64::from(plumb::Digest::of(key.as_bytes()).0[0]) % 64
}

fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn metric(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_replica_whose_application_is_not_deterministic_is_reported_and_rolled_back() {
    let mut c = Cluster::init_binary(
        example_binary("drifting"),
        "divergence",
        22,
        &["--app", "drifting"],
    );
    c.set_protocol("checkpoint_interval = 4");
    // Node 0 hosts execution replica e0; its process has the replica-local setting.
    c.set_node_env(0, "DRIFTING_SUFFIX", "!");
    for i in 0..common::NODES {
        c.start_node(i);
    }
    let config = plumb::Cluster::load(&c.config()).unwrap();
    let identity = plumb::client::Identity::issued(&config, config.cli_clients[0]).unwrap();
    let client = plumb::client::BlockingClient::connect(c.config(), identity)
        .expect("connect to the cluster");

    // The first value e0 stores is "1!": outvoted, the client gets the agreed "1".
    assert_eq!(client.invoke("set a 1").unwrap(), b"1");
    for i in 0..8 {
        let reply = client.invoke(format!("set k{i} {i}")).unwrap();
        assert_eq!(reply, i.to_string().as_bytes());
    }
    // e0's checkpoint at 4 differs: the order replicas tell it; it rolls back and reports.
    wait_for("e0's divergence report", Duration::from_secs(30), || {
        c.node_log(0).contains("DIVERGENCE")
    });
    let log = c.node_log(0);
    let line = log
        .lines()
        .find(|l| l.contains("DIVERGENCE"))
        .unwrap()
        .to_string();
    assert!(
        line.contains("state differed from the agreed checkpoint at batch "),
        "{line}"
    );
    assert!(
        line.contains(&format!("1 object(s) differed [{:#x}]", bucket("a"))),
        "names the object that differed: {line}"
    );
    // The request that stored "a" is client identity #1 (its first request).
    let client_id = config.cli_clients[0];
    assert!(
        line.contains(&format!("{client_id}#1@")),
        "names the requests: {line}"
    );

    let metrics = http_get(c.admin(0), "/metrics").unwrap();
    assert_eq!(
        metric(&metrics, "plumb_divergences_total"),
        Some(1),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "plumb_divergence_objects"),
        Some(1),
        "{metrics}"
    );
    let status = http_get(c.admin(0), "/status").unwrap();
    assert!(
        status.contains("\"last_divergence\": \"state differed"),
        "{status}"
    );
    // Every other node's order replica saw e0's checkpoint differ.
    for node in 1..common::NODES {
        let m = http_get(c.admin(node), "/metrics").unwrap();
        assert!(
            m.contains("plumb_exec_checkpoints_differing_total{node=\"e0\"} "),
            "node {node}: {m}"
        );
    }
    // Rolled back and re-executed without the one-off drift, e0 agrees from then on: two
    // more checkpoints pass without another report, and it keeps executing.
    for i in 0..10 {
        client.invoke(format!("set m{i} {i}")).unwrap();
    }
    let executed = |node: usize| {
        c.status(node)
            .and_then(|s| s["last_executed"].as_u64())
            .unwrap_or(0)
    };
    let target = executed(1);
    wait_for("e0 to catch up", Duration::from_secs(30), || {
        executed(0) >= target
    });
    let metrics = http_get(c.admin(0), "/metrics").unwrap();
    assert_eq!(
        metric(&metrics, "plumb_divergences_total"),
        Some(1),
        "{metrics}"
    );
    assert_eq!(client.invoke_read_only("get a").unwrap(), b"1");
    // The client saw e0's reply to "set a 1" differ from the accepted one. (Its counters are
    // summed at most every 100 ms, on activity.)
    wait_for(
        "the client's divergent-reply count",
        Duration::from_secs(10),
        || {
            client.invoke_read_only("get a").unwrap();
            client.client().counters().get("reply-divergent") >= 1
        },
    );
    client.shutdown();
}
