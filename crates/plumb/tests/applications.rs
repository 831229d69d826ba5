//! The application is configuration: a cluster file names it, a node binary without it
//! refuses to start and says so, and a second application (the `counter` example, built on
//! `plumb::cli` alone) runs as a real cluster of processes and answers correctly.
//!
//! Ports: slot 20 (23000..23099) and slot 21 (23100..23199) of `common::Cluster`'s scheme.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn plumb() -> &'static str {
    env!("CARGO_BIN_EXE_plumb")
}

fn counter() -> PathBuf {
    common::example_binary("counter")
}

fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {} {args:?}: {e}", exe.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_node_built_without_the_clusters_application_refuses_to_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cluster.toml");
    let config = config.to_str().unwrap();
    let init = run(
        Path::new(plumb()),
        &["init", "--dir", dir.path().to_str().unwrap()],
    );
    assert!(init.status.success(), "{init:?}");
    let file = std::fs::read_to_string(config).unwrap();
    assert!(file.contains("\napp = \"kv\"\n"), "{file}");
    std::fs::write(config, file.replacen("app = \"kv\"", "app = \"ledger\"", 1)).unwrap();

    let node = run(
        Path::new(plumb()),
        &["node", "--config", config, "--id", "0"],
    );
    let err = text(&node.stderr);
    assert_eq!(node.status.code(), Some(2), "{node:?}");
    assert!(
        err.contains("\"ledger\""),
        "names the missing application: {err}"
    );
    assert!(err.contains("\"kv\""), "names the ones it has: {err}");
    // Nothing was opened: a refused node leaves no store behind.
    assert!(!dir.path().join("data/node-0/e0/log").exists());

    // Likewise the other way round: the counter's binary does not run the key-value store.
    std::fs::write(config, file).unwrap();
    let node = run(&counter(), &["node", "--config", config, "--id", "0"]);
    let err = text(&node.stderr);
    assert_eq!(node.status.code(), Some(2), "{node:?}");
    assert!(
        err.contains("\"kv\"") && err.contains("\"counter\""),
        "{err}"
    );

    // And `plumb init` does not write a cluster file for an application it cannot run.
    let init = run(
        Path::new(plumb()),
        &[
            "init",
            "--dir",
            dir.path().join("other").to_str().unwrap(),
            "--app",
            "ledger",
        ],
    );
    assert_eq!(init.status.code(), Some(2), "{init:?}");
    assert!(text(&init.stderr).contains("\"ledger\""), "{init:?}");
}

/// `counter up`, stopped with SIGTERM when dropped.
struct Up {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Up {
    fn start(dir: &Path, base_port: u16) -> Up {
        let mut child = Command::new(counter())
            .args(["up", "--u", "1", "--r", "0", "--dir"])
            .arg(dir)
            .args(["--base-port", &base_port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start counter up");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Up { child, lines }
    }

    /// Waits for `up`'s "ready." line; returns everything it printed until then.
    fn wait_ready(&mut self) -> String {
        let mut seen = String::new();
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                    if line.starts_with("ready.") {
                        return seen;
                    }
                }
                Err(e) => panic!("counter up did not get ready ({e}); it printed:\n{seen}"),
            }
        }
    }

    fn stop(mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        self.child.wait().unwrap()
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: as in `stop`.
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGTERM);
            }
            let _ = self.child.wait();
        }
    }
}

#[test]
fn a_second_application_runs_as_a_real_cluster_through_the_library_cli() {
    let dir = tempfile::tempdir().unwrap();
    let cluster_dir = dir.path().join("counter-local");
    let mut up = Up::start(&cluster_dir, 23100);
    let printed = up.wait_ready();
    assert!(
        printed.contains("replicating \"counter\""),
        "up says what it runs:\n{printed}"
    );
    assert!(
        !printed.contains("gateway"),
        "the counter has no front end:\n{printed}"
    );

    let config = cluster_dir.join("cluster.toml");
    let cluster = plumb_cluster::Cluster::load(&config).unwrap();
    assert_eq!(cluster.app, "counter");
    assert!(
        cluster.gateway.is_none(),
        "no [gateway] for an app without one"
    );

    // Every node reports the application its execution replica runs.
    let status = run(
        &counter(),
        &["status", "--json", "--config", config.to_str().unwrap()],
    );
    assert!(status.status.success(), "{status:?}");
    let lines = text(&status.stdout);
    assert_eq!(lines.lines().count(), cluster.nodes.len(), "{lines}");
    for line in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["app"], "counter", "{line}");
    }

    // Ordered requests add; the replies are the counter's values, agreed by the replicas. The
    // client is the library's own (`plumb::client`), with a command-line client identity.
    let id = *cluster
        .cli_clients
        .first()
        .expect("a command-line client identity");
    let identity = plumb::client::Identity::issued(&cluster, id).expect("its key");
    let client = plumb::client::BlockingClient::connect(&config, identity)
        .expect("connect to the counter cluster");
    let mut values = Vec::new();
    for (delta, read_only) in [(5i64, false), (7, false), (-2, false), (0, true)] {
        let op = delta.to_le_bytes();
        let reply = if read_only {
            client.invoke_read_only(op)
        } else {
            client.invoke(op)
        }
        .expect("the counter cluster answers");
        let bytes: [u8; 8] = reply.as_slice().try_into().expect("8-byte reply");
        values.push(i64::from_le_bytes(bytes));
    }
    client.shutdown();
    assert_eq!(values, [5, 12, 10, 10]);

    let stopped = up.stop();
    assert!(stopped.success(), "counter up stops cleanly: {stopped}");
}
