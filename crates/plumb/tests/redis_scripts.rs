//! Redis Lua scripts through the gateway of a real cluster, with clients nobody on the
//! project wrote: redis-cli's `EVAL`, and redis-py's `register_script` lock (`EVALSHA`,
//! falling back on `NOSCRIPT`).
//!
//! Ports: slot 41 (25100..25199) of `common::Cluster`'s scheme.

mod common;

use common::Cluster;
use std::process::Command;

#[test]
fn scripts_with_real_redis_clients() {
    let mut c = Cluster::init("redis-scripts", 41);
    c.start_all();
    let port = c.resp_port;

    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "EVAL"])
        .arg("redis.call('set', KEYS[1], ARGV[1]) return {redis.call('get', KEYS[1]), redis.call('incr', KEYS[2])}")
        .args(["2", "cli:k", "cli:n", "hello"])
        .output()
        .expect("redis-cli is installed (.ci/run installs redis-tools)");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n1\n");

    common::run_redis_py("scripts.py", port);
}
