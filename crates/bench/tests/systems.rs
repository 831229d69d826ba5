//! Smoke tests for the comparison systems: each starts on loopback, serves writes and
//! linearizable reads from several sessions, and leaves no server running once dropped.
//!
//! These need the Debian packages `etcd-server`, `zookeeper` and `redis-server`. Run as root
//! (as CI does) they are installed on first use; otherwise a test fails saying what to install.

use std::time::Instant;

use plumb_bench::systems::{etcd::Etcd, redis::Redis, zookeeper::ZooKeeper};
use plumb_bench::target::{Op, Session, Target};

/// Operations per session: a write of each key, then a read of each.
const KEYS_PER_SESSION: usize = 100;
const SESSIONS: usize = 4;

/// Writes distinct keys with values of distinct lengths from several sessions, then reads each
/// back from the same session and checks its length.
async fn write_then_read(target: &dyn Target) {
    let mut sessions: Vec<Box<dyn Session>> = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(target.session().await.expect("open a session"));
    }
    let tasks = sessions
        .into_iter()
        .enumerate()
        .map(|(s, mut session)| async move {
            let len = |k: usize| (s * 37 + k * 13) % 300;
            let key = |k: usize| format!("smoke:{s}:{k}");
            for k in 0..KEYS_PER_SESSION {
                let op = Op::Write {
                    key: key(k),
                    value: vec![b'x'; len(k)],
                };
                session.run(&op).await.expect("write");
            }
            for k in 0..KEYS_PER_SESSION {
                let read = session.run(&Op::Read { key: key(k) }).await.expect("read");
                assert_eq!(read, len(k), "length read back for {}", key(k));
            }
            let absent = session
                .run(&Op::Read {
                    key: format!("smoke:{s}:absent"),
                })
                .await
                .expect("read of an absent key");
            assert_eq!(absent, 0, "an absent key reads as empty");
        });
    let handles: Vec<_> = tasks.map(tokio::spawn).collect();
    for handle in handles {
        handle.await.expect("session task");
    }
}

fn assert_gone(system: &str, pids: &[u32]) {
    for &pid in pids {
        // SAFETY: kill(2) with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
        assert!(!alive, "{system} server {pid} still running after stop");
    }
}

async fn smoke(
    target: Box<dyn Target>,
    expect_system: &str,
    expect_servers: usize,
    started: Instant,
) {
    eprintln!(
        "{} ({}) up in {:.1?}",
        target.system(),
        target.config(),
        started.elapsed()
    );
    assert_eq!(target.system(), expect_system);
    let pids = target.server_pids();
    assert_eq!(pids.len(), expect_servers);
    let ran = Instant::now();
    write_then_read(target.as_ref()).await;
    eprintln!(
        "{}: {} operations in {:.1?}",
        expect_system,
        SESSIONS * (2 * KEYS_PER_SESSION + 1),
        ran.elapsed()
    );
    drop(target);
    assert_gone(expect_system, &pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_serves_writes_and_linearizable_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let etcd = Etcd::start(dir.path(), 3, 23100)
        .await
        .unwrap_or_else(|e| panic!("etcd did not start: {e}"));
    assert_eq!(etcd.config(), "3 nodes");
    smoke(Box::new(etcd), "etcd", 3, started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_ensemble_serves_writes_and_synced_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let zk = ZooKeeper::start(dir.path(), 3, 23200)
        .await
        .unwrap_or_else(|e| panic!("ZooKeeper did not start: {e}"));
    assert_eq!(zk.config(), "3 nodes");
    smoke(Box::new(zk), "zookeeper", 3, started).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_serves_writes_and_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let redis = Redis::start(dir.path(), 23300)
        .await
        .unwrap_or_else(|e| panic!("Redis did not start: {e}"));
    assert_eq!(redis.config(), "1 node");
    smoke(Box::new(redis), "redis", 1, started).await;
}
