//! Tentative agreement with real processes (docs/protocol.md "Tentative agreement"): a u=1 r=1
//! cluster with `tentative_agreement = true` serves redis-cli. Its execution replicas learn
//! batches from the order replicas' TENTATIVE-BATCHes (counted `learned-tentative`), the order
//! replicas do not send those batches again committed (`next-batch-sent-tentatively`), and once
//! the primary's node is killed the others change view, learn tentatively in the new view, and
//! lose no increment.
//!
//! Ports: slot 14 (22400..22499) of `common::Cluster`'s scheme.

mod common;

use common::redis_wire::redis_cli;
use common::{metric_sample, Cluster};
use std::time::{Duration, Instant};

/// A stage's event counter on `node`'s `/metrics`.
fn event(c: &Cluster, node: usize, principal: &str, event: &str) -> u64 {
    let text = c.metrics(node).unwrap_or_default();
    metric_sample(
        &text,
        &format!("plumb_stage_events_total{{principal=\"{principal}\",event=\"{event}\"}}"),
    )
}

/// `n` increments of `key` through redis-cli, each awaited before the next (`-r`: not a
/// pipeline, which the gateway would send as one request): the last reply.
fn increments(port: u16, key: &str, n: usize) -> String {
    let out = redis_cli(port, &["-r", &n.to_string(), "INCR", key], "");
    out.lines().last().unwrap_or_default().to_string()
}

/// `event` once it reaches `at_least`, or what it is after 10 s (stages publish their
/// counters a few times a second).
fn event_reaching(c: &Cluster, node: usize, principal: &str, name: &str, at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = event(c, node, principal, name);
        if v >= at_least || Instant::now() > deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The node hosting the order stage's primary, and the view, as `node`'s `/status` says.
fn primary(c: &Cluster, node: usize) -> (usize, u64) {
    let s = c.status(node).expect("status");
    let primary = s["primary_node"].as_u64().expect("primary_node") as usize;
    (primary, s["view"].as_u64().expect("view"))
}

#[test]
fn execution_replicas_learn_tentatively_and_a_killed_primary_loses_nothing() {
    let mut c = Cluster::init("tentative", 14);
    c.set_protocol("tentative_agreement = true");
    c.start_all();
    let port = c.resp_port;

    assert_eq!(increments(port, "n", 30), "30");
    // Nodes 0-2 hold execution replicas e0-e2 (and order replicas o0-o2): watch one whose node
    // survives the primary's.
    let (dead, view) = primary(&c, 0);
    let node = (0..3).find(|&i| i != dead).unwrap();
    let (e, o) = (format!("e{node}"), format!("o{node}"));
    let learned = event_reaching(&c, node, &e, "learned-tentative", 30);
    assert!(
        learned > 0,
        "{e} learned nothing tentatively:\n{}",
        c.metrics_summary(node)
    );
    assert!(
        event_reaching(&c, node, &o, "next-batch-sent-tentatively", 1) > 0,
        "{o} sent every batch again committed:\n{}",
        c.metrics_summary(node)
    );

    eprintln!("primary node {dead} view {view}, watching {node}, learned {learned}");
    c.kill_node(dead);
    assert_eq!(increments(port, "n", 30), "60");
    assert_eq!(redis_cli(port, &[], "GET n\n").trim(), "60");
    let (_, after) = primary(&c, node);
    assert!(
        after > view,
        "still in view {after} with the primary's node {dead} dead"
    );
    let later = event_reaching(&c, node, &e, "learned-tentative", learned + 30);
    eprintln!("after: view {after}, learned {later}");
    assert!(
        later > learned,
        "{e} learned nothing tentatively after node {dead} died:\n{}",
        c.metrics_summary(node)
    );
}
