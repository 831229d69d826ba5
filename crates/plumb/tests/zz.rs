//! Sleeping execution replicas with real processes (docs/zz.md): a ZZ cluster's third
//! execution replica sleeps; an active one that answers wrongly (the `drifting` example,
//! whose first stored value differs on node 0) makes the order replicas wake it, and the
//! client gets the agreed answers throughout. Before that, a read-only read is answered by
//! the actives alone (ordered: ZZ mode has no read-only path) while the sleeper sleeps.
//!
//! Ports: slot 27 (23700..23799) of `common::Cluster`'s scheme.

mod common;

use common::{example_binary, Cluster};
use std::time::{Duration, Instant};

fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_wrong_active_wakes_the_sleeper_and_clients_get_agreed_answers() {
    let mut c = Cluster::init_binary(example_binary("drifting"), "zz", 27, &["--app", "drifting"]);
    // A report is late only after 10 s: on a busy machine a slow active must not wake the
    // sleeper before the read below; the wrong active's differing reports wake it at once.
    c.set_protocol("checkpoint_interval = 4\nzz = true\nzz_report_timeout_us = 10000000");
    // Node 0 hosts the active execution replica e0, whose first stored value gets a suffix.
    c.set_node_env(0, "DRIFTING_SUFFIX", "!");
    for i in 0..common::NODES {
        c.start_node(i);
    }
    let sleeper = |c: &Cluster| {
        c.status(2)
            .and_then(|s| s["sleeper"].as_str().map(str::to_string))
            .unwrap_or_default()
    };
    wait_for("node 2's status", Duration::from_secs(20), || {
        !sleeper(&c).is_empty()
    });
    assert_eq!(sleeper(&c), "asleep");
    let config = plumb::Cluster::load(&c.config()).unwrap();
    let identity = plumb::client::Identity::issued(&config, config.cli_clients[0]).unwrap();
    let client = plumb::client::BlockingClient::connect(c.config(), identity)
        .expect("connect to the cluster");

    // A read-only read is ordered at once in ZZ mode (docs/zz.md "Reads and early replies")
    // and answered by the two actives while e2 sleeps.
    // The client sums its counters every 100 ms of its own activity: read until they show.
    wait_for("the read to be counted", Duration::from_secs(20), || {
        assert_eq!(client.invoke_read_only("get a").unwrap(), b"");
        client.client().counters().get("read-only-ordered-zz") > 0
    });
    let events = client.client().counters();
    assert_eq!(events.get("read-only-accepted"), 0);
    assert_eq!(events.get("read-only-timeout"), 0);
    assert_eq!(sleeper(&c), "asleep");

    // e0 answers "1!", e1 "1": one matching reply of the two the client needs, until the
    // order replicas, seeing the actives' reports differ, wake e2.
    assert_eq!(client.invoke("set a 1").unwrap(), b"1");
    let woken = sleeper(&c);
    assert!(woken.starts_with("woken by order replicas "), "{woken}");
    // Two order replicas at least asked (r + 1).
    assert!(woken.contains(", "), "{woken}");
    for i in 0..12 {
        let reply = client.invoke(format!("set k{i} {i}")).unwrap();
        assert_eq!(reply, i.to_string().as_bytes());
    }
    for i in 0..12 {
        let reply = client.invoke(format!("get k{i}")).unwrap();
        assert_eq!(reply, i.to_string().as_bytes());
    }
    assert_eq!(client.invoke("get a").unwrap(), b"1");
    // The woken replica executes: it caught up with the others.
    let executed = |node: usize| {
        c.status(node)
            .and_then(|s| s["last_executed"].as_u64())
            .unwrap_or(0)
    };
    let target = executed(1);
    wait_for("e2 to catch up", Duration::from_secs(30), || {
        executed(2) >= target
    });
    client.shutdown();
}
