//! Sleeping execution replicas with real processes (docs/zz.md): a ZZ cluster's third
//! execution replica sleeps; an active one that answers wrongly (the `drifting` example,
//! whose first stored value differs on node 0) makes the order replicas wake it, and the
//! client gets the agreed answers throughout. Before that, a read-only read is answered by
//! the actives alone (ordered: ZZ mode has no read-only path) while the sleeper sleeps.
//! The order replicas find the wrong active faulty and keep the woken replica awake.
//! A second cluster's active is killed and restarted: the sleeper wakes, then, once the
//! restarted active is back in step, goes back to sleep (docs/zz.md "Back to sleep").
//!
//! Ports: slots 27 and 28 (23700..23899) of `common::Cluster`'s scheme.

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

/// Node 2's sleeper status ("asleep", "woken by ...", "asleep again, ..."; empty before the
/// node answers).
fn sleeper(c: &Cluster) -> String {
    c.status(2)
        .and_then(|s| s["sleeper"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A ZZ cluster of the `drifting` example in port slot `slot` with these protocol lines,
/// node 0's value suffix `suffix` (if any), started, with a connected client.
fn start(
    name: &str,
    slot: u16,
    protocol: &str,
    suffix: Option<&str>,
) -> (Cluster, plumb::client::BlockingClient) {
    let mut c = Cluster::init_binary(
        example_binary("drifting"),
        name,
        slot,
        &["--app", "drifting"],
    );
    c.set_protocol(protocol);
    if let Some(suffix) = suffix {
        c.set_node_env(0, "DRIFTING_SUFFIX", suffix);
    }
    for i in 0..common::NODES {
        c.start_node(i);
    }
    wait_for("node 2's status", Duration::from_secs(20), || {
        !sleeper(&c).is_empty()
    });
    let config = plumb::Cluster::load(&c.config()).unwrap();
    let identity = plumb::client::Identity::issued(&config, config.cli_clients[0]).unwrap();
    let client = plumb::client::BlockingClient::connect(c.config(), identity)
        .expect("connect to the cluster");
    (c, client)
}

#[test]
fn a_wrong_active_wakes_the_sleeper_and_clients_get_agreed_answers() {
    // A report is late only after 10 s: on a busy machine a slow active must not wake the
    // sleeper before the read below; the wrong active's differing reports wake it at once.
    // Node 0 hosts the active execution replica e0, whose first stored value gets a suffix.
    let (c, client) = start(
        "zz",
        27,
        "checkpoint_interval = 4\nzz = true\nzz_report_timeout_us = 10000000",
        Some("!"),
    );
    assert_eq!(sleeper(&c), "asleep");

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
    // The correct order replicas found e0 faulty (its reports differ from the agreed ones
    // e1 and e2 sent) and say so; e2 stays awake, checkpoints later, to outvote it.
    let found = |node: usize| {
        c.status(node)
            .map(|s| s["zz_found_faulty"].clone())
            .unwrap_or_default()
    };
    wait_for(
        "order replicas to report e0",
        Duration::from_secs(30),
        || (1..common::NODES).all(|n| found(n) == serde_json::json!([0])),
    );
    for i in 0..12 {
        let reply = client.invoke(format!("set m{i} {i}")).unwrap();
        assert_eq!(reply, i.to_string().as_bytes());
    }
    assert!(sleeper(&c).starts_with("woken by"), "{}", sleeper(&c));
    client.shutdown();
}

#[test]
fn a_sleeper_woken_by_a_crash_sleeps_again_once_the_active_is_back() {
    let (mut c, client) = start("zz-back", 28, "checkpoint_interval = 4\nzz = true", None);
    let mut n = 0u32;
    let mut write = |client: &plumb::client::BlockingClient| {
        n += 1;
        let reply = client.invoke(format!("set k{} {n}", n % 7)).unwrap();
        assert_eq!(reply, n.to_string().as_bytes());
    };
    // A false wake on a loaded machine is undone the same way: wait for the sleeper to sleep.
    wait_for("the sleeper asleep", Duration::from_secs(60), || {
        write(&client);
        sleeper(&c).starts_with("asleep")
    });
    // Node 1 hosts the active e1: its silence while e0 speaks wakes e2.
    c.kill_node(1);
    wait_for("e2 woken", Duration::from_secs(60), || {
        write(&client);
        sleeper(&c).starts_with("woken by")
    });
    c.start_node(1);
    // Once e1 has sent the agreed token of a checkpoint after the wake, with e0 and e2,
    // r + 1 order replicas ask e2 to sleep again.
    wait_for("e2 asleep again", Duration::from_secs(90), || {
        write(&client);
        sleeper(&c).starts_with("asleep again, asked by order replicas ")
    });
    for _ in 0..20 {
        write(&client);
    }
    let found = c.status(0).map(|s| s["zz_found_faulty"].clone());
    assert_eq!(found, Some(serde_json::Value::Null), "nobody found faulty");
    client.shutdown();
}
