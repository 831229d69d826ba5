//! Linearizability of read-only requests on a real cluster, read-only after restart
//! (docs/protocol.md "Read-only requests"): an execution replica that restarts resumes from its
//! last checkpoint and must not answer a read-only GET from that state.
//!
//! A u=1 r=0 cluster with every replica on a node of its own (`--split`: nodes 0-2 auth, 3-5
//! order, 6-8 exec) and the gateway's fast reads on, so GET takes the read-only path. All
//! execution replicas are killed and restarted while the order stage is down: they come back
//! at their last checkpoint (none: the interval is long), behind an acknowledged SET, and cannot
//! catch up. Before the read-only gate they all answered the GET with the old value at once, and the
//! client took the unanimous answer. Now they answer no read-only request until caught up with
//! what the order stage may have committed, so the GET falls back to the ordered path and
//! returns the newest value once the order stage is back.

mod common;

use common::*;
use plumb_lincheck::kv::{KvOp, KvRet};
use std::thread::{self, sleep};
use std::time::Duration;

const T20: Duration = Duration::from_secs(20);
const ORDER_NODES: [usize; 3] = [3, 4, 5];
const EXEC_NODES_SPLIT: [usize; 3] = [6, 7, 8];

fn get(port: u16, key: &[u8]) -> Answer {
    Redis::new(port).exec(&KvOp::Get { key: key.to_vec() })
}

#[test]
fn read_only_after_restart_returns_the_newest_value() {
    let mut c = Cluster::init_with("read-only-restart", 6, &["--u", "1", "--r", "0", "--split"]);
    c.set_protocol("checkpoint_interval = 512");
    c.set_fast_reads();
    c.start_all();

    let key = b"ro-key".to_vec();
    let mut redis = Redis::new(c.resp_port);
    for value in [&b"old"[..], b"new"] {
        let set = KvOp::Set {
            key: key.clone(),
            value: value.to_vec(),
        };
        assert!(matches!(redis.exec(&set), Answer::Ret(KvRet::Ok)));
    }
    assert!(matches!(
        get(c.resp_port, &key),
        Answer::Ret(KvRet::Value(Some(v))) if v == b"new"
    ));

    for n in ORDER_NODES.into_iter().chain(EXEC_NODES_SPLIT) {
        c.kill_node(n);
    }
    for n in EXEC_NODES_SPLIT {
        c.start_node(n);
    }
    c.wait_ready(T20);
    // The gateway redials the restarted nodes with a back-off of up to a second: give it time,
    // or the GET's read-only attempt never reaches them and takes the ordered path at once.
    sleep(Duration::from_secs(3));

    // The GET reaches only the restarted execution replicas, which cannot catch up yet.
    let port = c.resp_port;
    let reader = thread::spawn(move || get(port, b"ro-key"));
    // Time for a stale answer to come back (the old code answered within milliseconds). No
    // assertion depends on this wait: a correct answer is the same whenever it arrives.
    sleep(Duration::from_secs(2));
    for n in ORDER_NODES {
        c.start_node(n);
    }
    let answer = reader.join().unwrap();
    c.assert_running();
    let got = match answer {
        Answer::Ret(KvRet::Value(v)) => format!("{:?}", v.map(String::from_utf8)),
        Answer::Ret(_) => "a non-value answer".to_string(),
        Answer::Unknown(e) => format!("an error: {e}"),
    };
    assert_eq!(
        got,
        format!("{:?}", Some(String::from_utf8(b"new".to_vec()))),
        "read-only GET after a restart must return the newest value\n{}",
        c.statuses()
    );
}

fn set(redis: &mut Redis, key: &[u8], v: &str) {
    let op = KvOp::Set {
        key: key.to_vec(),
        value: v.as_bytes().to_vec(),
    };
    assert!(matches!(redis.exec(&op), Answer::Ret(KvRet::Ok)));
}

fn get_returns(port: u16, key: &[u8], v: &str) {
    let got = match get(port, key) {
        Answer::Ret(KvRet::Value(Some(x))) => String::from_utf8_lossy(&x).into_owned(),
        Answer::Ret(_) => "a non-value answer".to_string(),
        Answer::Unknown(e) => format!("an error: {e}"),
    };
    assert_eq!(got, v, "GET after SET {v}");
}

/// One execution replica down, a fault u=1 tolerates: a read on the read-only path cannot get
/// every replica's answer, waits out the read-only deadline and is ordered. Without a pause
/// every GET paid that deadline. Now the pool's client orders reads at once for a while after
/// a timeout (`read-only-paused`), and every GET still returns the value just written.
#[test]
fn with_an_execution_replica_down_reads_are_ordered_at_once_after_a_timeout() {
    let mut c = Cluster::init_with(
        "read-only-replica-down",
        13,
        &["--u", "1", "--r", "0", "--split"],
    );
    c.set_fast_reads();
    c.start_all();
    let (port, key) = (c.resp_port, b"down-key");
    let mut redis = Redis::new(port);
    set(&mut redis, key, "v0");
    // Every replica answers: the read-only path works before the fault.
    read_only_accepted(c.gateway_admin(), 1, || get_returns(port, key, "v0"));

    c.kill_node(EXEC_NODES_SPLIT[2]);
    for i in 1..=20 {
        let v = format!("v{i}");
        set(&mut redis, key, &v);
        get_returns(port, key, &v);
    }
    let timeouts = client_events(c.gateway_admin(), "read-only-timeout", 1, || {
        get_returns(port, key, "v20")
    });
    let paused = client_events(c.gateway_admin(), "read-only-paused", 1, || {
        get_returns(port, key, "v20")
    });
    c.assert_running();
    assert!(
        timeouts >= 1 && paused >= 1,
        "{timeouts} read-only timeouts and {paused} reads ordered at once for a pause, each at least 1 expected\n{}",
        c.statuses()
    );
}
