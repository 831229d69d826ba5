//! Harness for whole-cluster tests with real processes on loopback: a [`Cluster`] of four
//! `plumb node` processes (u=1, r=1) and a `plumb gateway`, and a Redis [`Load`] whose every
//! operation is recorded in a linearizability history.

#![allow(dead_code)]

pub mod redis_wire;
pub mod splitmix;
pub mod zk_wire;

use plumb_lincheck::kv::{BytesKv, KvOp, KvRet};
use plumb_lincheck::{check, History};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub const NODES: usize = 4;
/// Nodes hosting an execution replica (node 3 hosts only auth and order).
pub const EXEC_NODES: [usize; 3] = [0, 1, 2];

/// How long a Redis call may take before the test treats the cluster as stuck.
pub const OP_TIMEOUT: Duration = Duration::from_secs(20);

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_plumb")
}

/// One of the `plumb` package's examples (an application's own binary built on `plumb::cli`),
/// from the same profile as the `plumb` binary. `cargo test` builds examples along with the
/// tests; a run limited to one test target (`--test x`) does not, so it is built here then.
pub fn example_binary(name: &str) -> PathBuf {
    let plumb = Path::new(bin());
    let profile_dir = plumb.parent().expect("the plumb binary is in a directory");
    let exe = profile_dir.join("examples").join(name);
    if !exe.exists() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-p", "plumb", "--example", name]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build
            .status()
            .unwrap_or_else(|e| panic!("run cargo build --example {name}: {e}"));
        assert!(status.success(), "building the {name} example failed");
    }
    exe
}

/// The processes of one cluster in a fresh temporary directory. Dropping it kills them all;
/// if the test is panicking it first prints the tail of every process's output and keeps the
/// directory.
pub struct Cluster {
    pub name: String,
    dir: Option<tempfile::TempDir>,
    pub base_port: u16,
    pub resp_port: u16,
    nodes: Vec<Option<Child>>,
    /// Nodes hosting an execution replica.
    exec_nodes: Vec<usize>,
    gateway: Option<Child>,
    /// The binary that runs `init` and the nodes: `plumb`, or an application's own.
    binary: PathBuf,
    /// Environment variables given to one node's process.
    node_env: std::collections::HashMap<usize, Vec<(String, String)>>,
    /// A file-descriptor limit (RLIMIT_NOFILE) for the gateway's process.
    gateway_nofile: Option<u64>,
    /// Clusters run one at a time: five clusters of five processes on a 2-core machine would
    /// make every timing bound in these tests a measure of the machine's load instead.
    _serial: std::sync::MutexGuard<'static, ()>,
}

/// The highest slot whose ports (21000 + 100*slot .. +99) stay below 32768.
const MAX_SLOT: u16 = 116;

static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

impl Cluster {
    /// `slot` gives the test its own port range: 21000 + 100*slot. A u=1 r=1 cluster.
    pub fn init(name: &str, slot: u16) -> Cluster {
        Cluster::init_with(name, slot, &[])
    }

    /// A co-located cluster for `u` and `r` (`plumb init --u --r`).
    pub fn init_shape(name: &str, slot: u16, u: u16, r: u16) -> Cluster {
        Cluster::init_with(name, slot, &["--u", &u.to_string(), "--r", &r.to_string()])
    }

    /// Like [`Cluster::init`], with more `plumb init` options (`--u`, `--r`, `--split`); the
    /// node count is then read from the configuration (`NODES` and `EXEC_NODES` describe only
    /// the default layout).
    pub fn init_with(name: &str, slot: u16, init_args: &[&str]) -> Cluster {
        Cluster::init_binary(PathBuf::from(bin()), name, slot, init_args)
    }

    /// Like [`Cluster::init_with`], with an application's own binary (`example_binary`) for
    /// `init` and the nodes.
    pub fn init_binary(binary: PathBuf, name: &str, slot: u16, init_args: &[&str]) -> Cluster {
        let serial = ONE_CLUSTER_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = tempfile::Builder::new()
            .prefix(&format!("plumb-{name}-"))
            .tempdir()
            .expect("tempdir");
        // Linux hands out outgoing connections' local ports from 32768 up: a listening port in
        // that range may already be taken by some connection (slot 118 was, in CI).
        assert!(
            slot <= MAX_SLOT,
            "port slot {slot} reaches Linux's ephemeral ports (32768 and up): use a slot of at most {MAX_SLOT}"
        );
        let base_port = 21000 + 100 * slot;
        let resp_port = base_port + 50;
        let out = Command::new(&binary)
            .args(["init", "--dir"])
            .arg(dir.path())
            .args(["--base-port", &base_port.to_string()])
            .args(["--resp-port", &resp_port.to_string()])
            .args(["--gateway-clients", "8", "--cli-clients", "2"])
            .args(init_args)
            .output()
            .expect("run plumb init");
        assert!(out.status.success(), "plumb init failed: {out:?}");
        let config = plumb_cluster::Cluster::load(&dir.path().join("cluster.toml"))
            .expect("the configuration plumb init wrote loads");
        let node_count = config.nodes.len();
        let exec_nodes: Vec<usize> = config
            .nodes
            .iter()
            .filter(|n| {
                n.principals
                    .iter()
                    .any(|p| matches!(p, plumb_wire::Principal::Exec(_)))
            })
            .map(|n| n.id as usize)
            .collect();
        Cluster {
            name: name.to_string(),
            dir: Some(dir),
            base_port,
            resp_port,
            nodes: (0..node_count).map(|_| None).collect(),
            exec_nodes,
            gateway: None,
            binary,
            node_env: Default::default(),
            gateway_nofile: None,
            _serial: serial,
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.as_ref().unwrap().path()
    }

    pub fn config(&self) -> PathBuf {
        self.dir().join("cluster.toml")
    }

    /// Adds `key = value` lines to the `[protocol]` table of cluster.toml (before starting).
    pub fn set_protocol(&self, lines: &str) {
        let path = self.config();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\n[protocol]\n"),
            "no [protocol] table in {text}"
        );
        let text = text.replacen("\n[protocol]\n", &format!("\n[protocol]\n{lines}\n"), 1);
        std::fs::write(&path, text).unwrap();
    }

    /// Sends read-only operations (GET) on the read-only path (before starting the gateway).
    pub fn set_fast_reads(&self) {
        self.set_fast_reads_to(true);
    }

    /// The gateway's `fast_reads` (before starting the gateway), whatever `init` wrote.
    pub fn set_fast_reads_to(&self, on: bool) {
        let path = self.config();
        let text = std::fs::read_to_string(&path).unwrap();
        let line = |on: bool| format!("\nfast_reads = {on}\n");
        assert!(
            text.contains(&line(false)) || text.contains(&line(true)),
            "no fast_reads in {text}"
        );
        let text = text.replacen(&line(!on), &line(on), 1);
        std::fs::write(&path, text).unwrap();
    }

    pub fn data_dir(&self, node: usize) -> PathBuf {
        self.dir().join("data").join(format!("node-{node}"))
    }

    pub fn admin(&self, node: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.base_port + 2 * node as u16 + 1))
    }

    fn log_file(&self, what: &str) -> (File, File) {
        let path = self.dir().join(format!("{what}.log"));
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        (f.try_clone().unwrap(), f)
    }

    /// Start node `node` with `key=value` in its environment, from now on.
    pub fn set_node_env(&mut self, node: usize, key: &str, value: &str) {
        self.node_env
            .entry(node)
            .or_default()
            .push((key.to_string(), value.to_string()));
    }

    /// Start the gateway with at most `n` open file descriptors, from now on.
    pub fn set_gateway_fd_limit(&mut self, n: u64) {
        self.gateway_nofile = Some(n);
    }

    /// The gateway's admin HTTP endpoint.
    pub fn gateway_admin(&self) -> SocketAddr {
        let config = plumb_cluster::Cluster::load(&self.config()).expect("cluster.toml loads");
        config.gateway.expect("a [gateway] section").admin
    }

    /// GET /status of the gateway's admin HTTP, parsed; panics if it does not answer.
    pub fn gateway_status(&self) -> serde_json::Value {
        let body = http_get(self.gateway_admin(), "/status").expect("the gateway's status");
        serde_json::from_str(&body).unwrap()
    }

    /// What node `node` wrote to its standard error and output.
    pub fn node_log(&self, node: usize) -> String {
        std::fs::read_to_string(self.dir().join(format!("node-{node}.log"))).unwrap_or_default()
    }

    fn spawn(&self, what: &str, args: &[String]) -> Child {
        self.spawn_with(what, args, &[])
    }

    fn spawn_with(&self, what: &str, args: &[String], env: &[(String, String)]) -> Child {
        let (out, err) = self.log_file(what);
        let mut f = out.try_clone().unwrap();
        let _ = writeln!(f, "---- harness: starting {what} ----");
        let binary = if what == "gateway" {
            PathBuf::from(bin())
        } else {
            self.binary.clone()
        };
        let mut command = Command::new(binary);
        if let Some(n) = self.gateway_nofile.filter(|_| what == "gateway") {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe and touches only the child's limits.
            unsafe {
                command.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {what}: {e}"))
    }

    pub fn start_node(&mut self, node: usize) {
        assert!(self.nodes[node].is_none(), "node {node} already running");
        let args = vec![
            "node".to_string(),
            "--config".to_string(),
            self.config().display().to_string(),
            "--id".to_string(),
            node.to_string(),
        ];
        let env = self.node_env.get(&node).cloned().unwrap_or_default();
        self.nodes[node] = Some(self.spawn_with(&format!("node-{node}"), &args, &env));
    }

    pub fn start_gateway(&mut self) {
        assert!(self.gateway.is_none(), "gateway already running");
        let args = vec![
            "gateway".to_string(),
            "--config".to_string(),
            self.config().display().to_string(),
        ];
        self.gateway = Some(self.spawn("gateway", &args));
    }

    /// Starts every node and the gateway and waits until they answer.
    pub fn start_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.start_node(i);
        }
        self.start_gateway();
        self.wait_ready(Duration::from_secs(20));
    }

    /// SIGKILL (Child::kill) and reap.
    pub fn kill_node(&mut self, node: usize) {
        let mut c = self.nodes[node].take().expect("node not running");
        c.kill().unwrap();
        c.wait().unwrap();
    }

    pub fn kill_gateway(&mut self) {
        let mut c = self.gateway.take().expect("gateway not running");
        c.kill().unwrap();
        c.wait().unwrap();
    }

    /// SIGKILL every process at once (signals first, then reap), like a power cut.
    pub fn kill_all(&mut self) {
        let mut all: Vec<Child> = self.nodes.iter_mut().filter_map(Option::take).collect();
        all.extend(self.gateway.take());
        for c in &mut all {
            let _ = c.kill();
        }
        for c in &mut all {
            let _ = c.wait();
        }
    }

    /// Panics (with log tails) if a process that should be running has exited.
    pub fn assert_running(&mut self) {
        let mut dead = vec![];
        for (i, c) in self.nodes.iter_mut().enumerate() {
            if let Some(c) = c {
                if let Ok(Some(st)) = c.try_wait() {
                    dead.push(format!("node {i} exited: {st}"));
                }
            }
        }
        if let Some(g) = &mut self.gateway {
            if let Ok(Some(st)) = g.try_wait() {
                dead.push(format!("gateway exited: {st}"));
            }
        }
        assert!(dead.is_empty(), "{}", dead.join("; "));
    }

    /// Waits until every running node's /status answers and the gateway accepts connections.
    pub fn wait_ready(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            self.assert_running();
            let nodes_ok = (0..self.nodes.len())
                .filter(|&i| self.nodes[i].is_some())
                .all(|i| self.status(i).is_some());
            let gw_ok = self.gateway.is_none()
                || TcpStream::connect_timeout(
                    &SocketAddr::from(([127, 0, 0, 1], self.resp_port)),
                    Duration::from_millis(200),
                )
                .is_ok();
            if nodes_ok && gw_ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cluster not ready after {timeout:?}"
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// A cluster of `plumb init --app <app>` (with `fast_reads` as asked, or as `init` wrote it
    /// if `None`), started, once its
    /// gateway answers a real client: the gateway accepts connections before its pool has
    /// reached the nodes, so `answers(client port)` is tried until it says yes, for up to 60 s.
    /// `not_answering` says what did not happen, for the failure.
    pub fn start_app(
        name: &str,
        slot: u16,
        app: &str,
        fast_reads: Option<bool>,
        not_answering: &str,
        mut answers: impl FnMut(u16) -> bool,
    ) -> Cluster {
        let mut c = Cluster::init_with(name, slot, &["--app", app]);
        if let Some(on) = fast_reads {
            c.set_fast_reads_to(on);
        }
        c.start_all();
        c.wait_ready(Duration::from_secs(60));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !answers(c.resp_port) {
            assert!(
                Instant::now() < deadline,
                "{not_answering} in 60 s\n{}",
                c.log_tails(20)
            );
            thread::sleep(Duration::from_millis(200));
        }
        c
    }

    /// GET /status of a node's admin HTTP, parsed; None if it does not answer.
    pub fn status(&self, node: usize) -> Option<serde_json::Value> {
        let body = http_get(self.admin(node), "/status")?;
        serde_json::from_str(&body).ok()
    }

    /// Polls until `node`'s order replica is not recovering lost records (`order_recovery`
    /// in /status is null). Returns the time it took.
    pub fn wait_rejoined(&self, node: usize, timeout: Duration) -> Duration {
        let start = Instant::now();
        loop {
            if let Some(s) = self.status(node) {
                if s.get("order_recovery").is_some_and(|r| r.is_null()) {
                    return start.elapsed();
                }
            }
            assert!(
                start.elapsed() < timeout,
                "node {node} did not rejoin within {timeout:?}; statuses:\n{}\nnode {node} metrics (non-zero):\n{}",
                self.statuses(),
                self.metrics_summary(node)
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn metrics(&self, node: usize) -> Option<String> {
        http_get(self.admin(node), "/metrics")
    }

    /// `plumb kv --config <this cluster> ARGS`: its output, trimmed; panics if it fails.
    pub fn kv(&self, args: &[&str]) -> String {
        let out = Command::new(bin())
            .args(["kv", "--config"])
            .arg(self.config())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "plumb kv {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn last_executed(&self, node: usize) -> Option<u64> {
        self.status(node)?.get("last_executed")?.as_u64()
    }

    fn field(&self, node: usize, name: &str) -> Option<u64> {
        self.status(node)?.get(name)?.as_u64()
    }

    /// Polls until `node`'s execution replica has executed (`last_executed`) at least as far as
    /// any other running one, measured once at the start (call it with the load stopped).
    /// Returns the time it took.
    pub fn wait_caught_up(&self, node: usize, timeout: Duration) -> Duration {
        self.wait_fields_caught_up(node, false, timeout)
    }

    /// Like [`Cluster::wait_caught_up`], and also `node`'s order replica has committed
    /// (`last_committed`) at least as far as any other running one.
    pub fn wait_order_caught_up(&self, node: usize, timeout: Duration) -> Duration {
        self.wait_fields_caught_up(node, true, timeout)
    }

    fn wait_fields_caught_up(&self, node: usize, order: bool, timeout: Duration) -> Duration {
        let start = Instant::now();
        let others = |set: &[usize], name: &str| {
            set.iter()
                .filter(|&&i| i != node && self.nodes[i].is_some())
                .filter_map(|&i| self.field(i, name))
                .max()
                .unwrap_or_else(|| panic!("no other node reports {name}"))
        };
        let all: Vec<usize> = (0..self.nodes.len()).collect();
        let mut targets = vec![];
        if order {
            targets.push(("last_committed", others(&all, "last_committed")));
        }
        if self.exec_nodes.contains(&node) {
            targets.push(("last_executed", others(&self.exec_nodes, "last_executed")));
        }
        loop {
            let behind: Vec<String> = targets
                .iter()
                .filter_map(|&(name, target)| {
                    let mine = self.field(node, name);
                    mine.is_none_or(|m| m < target)
                        .then(|| format!("{name} {mine:?} < {target}"))
                })
                .collect();
            if behind.is_empty() {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < timeout,
                "node {node} did not catch up within {timeout:?} ({}); statuses:\n{}\nnode {node} metrics (non-zero):\n{}",
                behind.join(", "),
                self.statuses(),
                self.metrics_summary(node)
            );
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// The non-zero, non-histogram samples of a node's /metrics.
    pub fn metrics_summary(&self, node: usize) -> String {
        self.metrics(node)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.contains("_bucket") && !l.contains("fsync"))
            .filter(|l| !l.ends_with(" 0"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub fn statuses(&self) -> String {
        (0..self.nodes.len())
            .map(|i| match self.status(i) {
                Some(s) => format!(
                    "node {i}: view {} primary_node {} last_committed {} last_executed {} stable_checkpoint {}",
                    s["view"], s["primary_node"], s["last_committed"], s["last_executed"], s["stable_checkpoint"]
                ),
                None => format!("node {i}: no answer"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The last `lines` lines of every process's output.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        let mut names: Vec<String> = (0..self.nodes.len()).map(|i| format!("node-{i}")).collect();
        names.push("gateway".into());
        for n in names {
            let text =
                std::fs::read_to_string(self.dir().join(format!("{n}.log"))).unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            let tail = &all[all.len().saturating_sub(lines)..];
            out.push_str(&format!("==== {n}.log (last {} lines) ====\n", tail.len()));
            for l in tail {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
        if thread::panicking() {
            eprintln!(
                "---- cluster {} failed; process output: ----\n{}",
                self.name,
                self.log_tails(30)
            );
            if let Some(d) = self.dir.take() {
                eprintln!("---- kept {} ----", d.keep().display());
            }
        }
    }
}

/// The value of the Prometheus sample whose series is exactly `series` in `/metrics` text (0 if
/// absent).
pub fn metric_sample(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)?
                .strip_prefix(' ')?
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0, |v| v as u64)
}

/// How many reads the gateway's pool answered on the read-only path (`fast_reads`): the
/// `read-only-accepted` client event, which no other path counts. Fails unless it reaches
/// `min` within 10 s (see [`client_events`]).
pub fn read_only_accepted(gateway_admin: SocketAddr, min: u64, read: impl FnMut()) -> u64 {
    let accepted = client_events(gateway_admin, "read-only-accepted", min, read);
    assert!(
        accepted >= min,
        "{accepted} reads answered on the read-only path, {min} expected:\n{}",
        http_get(gateway_admin, "/metrics").unwrap_or_default()
    );
    accepted
}

/// The gateway pool's count of client event `event` (`plumb_gateway_client_events_total`).
/// The pool sums its clients' counters at most every 100 ms of client activity, so this calls
/// `read` (one more read on the path under test) until the count is at least `min`, for up to
/// 10 s, and returns the count then, whatever it is.
pub fn client_events(
    gateway_admin: SocketAddr,
    event: &str,
    min: u64,
    mut read: impl FnMut(),
) -> u64 {
    let series = format!("plumb_gateway_client_events_total{{event=\"{event}\"}}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = http_get(gateway_admin, "/metrics").unwrap_or_default();
        let count = metric_sample(&metrics, &series);
        if count >= min || Instant::now() >= deadline {
            return count;
        }
        read();
        std::thread::sleep(Duration::from_millis(150));
    }
}

/// HTTP/1.0 GET with short timeouts (the nemesis harness's); the body if the status is 200.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    plumb_nemesis::processes::http_get(
        addr,
        path,
        Duration::from_millis(500),
        Duration::from_secs(2),
    )
}

/// Flips every bit of the byte at `offset` of `path`; returns the old byte.
pub fn flip_byte(path: &Path, offset: u64) -> u8 {
    use std::io::{Seek, SeekFrom};
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    let mut b = [0u8; 1];
    f.read_exact(&mut b).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&[!b[0]]).unwrap();
    f.sync_all().unwrap();
    b[0]
}

// ---------------------------------------------------------------------------------------------
// Load and history

/// Keys written with SET (unique values) and read with GET.
pub const REGISTERS: [&str; 4] = ["r0", "r1", "r2", "r3"];
/// The key incremented with INCR (and read with GET).
pub const COUNTER: &str = "ctr";

/// A history shared by client threads, timed on one clock.
#[derive(Clone)]
pub struct Recorder {
    start: Instant,
    history: Arc<Mutex<History<BytesKv>>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            start: Instant::now(),
            history: Arc::new(Mutex::new(History::new())),
        }
    }
}

/// What a Redis call answered, already in the model's terms.
pub enum Answer {
    Ret(KvRet<Vec<u8>>),
    /// An error or timeout: the outcome is unknown; the op stays without response.
    Unknown(String),
}

impl Recorder {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Records the invocation, runs the call, records the response if there is one.
    pub fn run(
        &self,
        client: u64,
        op: KvOp<Vec<u8>, Vec<u8>>,
        call: impl FnOnce() -> Answer,
    ) -> Answer {
        let id = {
            let mut h = self.history.lock().unwrap();
            let t = self.now();
            h.invoke(client, op, t)
        };
        let a = call();
        if let Answer::Ret(r) = &a {
            let mut h = self.history.lock().unwrap();
            let t = self.now();
            h.complete(id, r.clone(), t).unwrap();
        }
        a
    }

    /// Asserts the history is linearizable (an `Unknown` answer from the checker fails too).
    pub fn assert_linearizable(&self) -> (usize, usize) {
        let h = self.history.lock().unwrap();
        let total = h.len();
        let unanswered = h.ops().iter().filter(|o| !o.is_complete()).count();
        let outcome = check(&BytesKv::new(), &h);
        assert!(
            outcome.is_linearizable(),
            "history of {total} ops ({unanswered} unanswered) is not linearizable: {outcome}"
        );
        (total, unanswered)
    }
}

/// One Redis connection (the nemesis harness's client), with the tests' operation timeout.
pub struct Redis(plumb_nemesis::load::Redis);

impl Redis {
    pub fn new(port: u16) -> Redis {
        Redis(plumb_nemesis::load::Redis::new(port, OP_TIMEOUT))
    }

    /// Runs `op`; on any error the connection is dropped (the next call reconnects).
    pub fn exec(&mut self, op: &KvOp<Vec<u8>, Vec<u8>>) -> Answer {
        match self.0.call(op) {
            Ok(ret) => Answer::Ret(ret),
            Err(e) => Answer::Unknown(e),
        }
    }
}

/// Counts of what the load threads saw.
#[derive(Default)]
pub struct LoadStats {
    pub acked: AtomicU64,
    pub unknown: AtomicU64,
    pub last_error: Mutex<Option<String>>,
}

/// `threads` client threads running a SET/GET/INCR mix until stopped.
pub struct Load {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
    pub stats: Arc<LoadStats>,
}

impl Load {
    /// Client ids are `first_client..first_client+threads` (keep them distinct per phase).
    pub fn start(rec: &Recorder, port: u16, threads: u64, first_client: u64) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(LoadStats::default());
        let handles = (first_client..first_client + threads)
            .map(|client| {
                let (rec, stop, stats) = (rec.clone(), stop.clone(), stats.clone());
                thread::spawn(move || {
                    let mut redis = Redis::new(port);
                    let mut n: u64 = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        // A small deterministic mix per client: 40% SET, 35% GET, 25% INCR/GET ctr.
                        let x = (n * 7 + client * 13) % 20;
                        let reg = REGISTERS[((n + client) % REGISTERS.len() as u64) as usize];
                        let op = match x {
                            0..=7 => {
                                KvOp::set(reg.as_bytes(), format!("c{client}-{n}").into_bytes())
                            }
                            8..=14 => KvOp::get(reg.as_bytes()),
                            15..=18 => KvOp::increment(COUNTER.as_bytes(), 1),
                            _ => KvOp::get(COUNTER.as_bytes()),
                        };
                        match rec.run(client, op.clone(), || redis.exec(&op)) {
                            Answer::Ret(_) => {
                                stats.acked.fetch_add(1, Ordering::Relaxed);
                            }
                            Answer::Unknown(e) => {
                                stats.unknown.fetch_add(1, Ordering::Relaxed);
                                *stats.last_error.lock().unwrap() = Some(e);
                                thread::sleep(Duration::from_millis(100));
                            }
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            handles,
            stats,
        }
    }

    pub fn acked(&self) -> u64 {
        self.stats.acked.load(Ordering::Relaxed)
    }

    /// Stops and joins the threads; returns (acked, unknown).
    pub fn stop(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            h.join().expect("load thread panicked");
        }
        (
            self.stats.acked.load(Ordering::Relaxed),
            self.stats.unknown.load(Ordering::Relaxed),
        )
    }
}

/// Waits until `load` has `n` more acknowledged ops than `from`, or panics after `timeout`.
pub fn wait_progress(load: &Load, from: u64, n: u64, timeout: Duration, what: &str) {
    let start = Instant::now();
    while load.acked() < from + n {
        assert!(
            start.elapsed() < timeout,
            "{what}: only {} acknowledged ops in {timeout:?} (last error: {:?})",
            load.acked() - from,
            load.stats.last_error.lock().unwrap()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// Reads every key once through a fresh connection (client id `client`), recording the reads.
/// Retries a read that fails (each attempt is recorded as an unanswered read) until `timeout`.
pub fn final_reads(rec: &Recorder, port: u16, client: u64, timeout: Duration) {
    let start = Instant::now();
    let mut redis = Redis::new(port);
    for key in REGISTERS.iter().chain([&COUNTER]) {
        let op = KvOp::get(key.as_bytes());
        loop {
            match rec.run(client, op.clone(), || redis.exec(&op)) {
                Answer::Ret(_) => break,
                Answer::Unknown(e) => {
                    assert!(start.elapsed() < timeout, "final read of {key} failed: {e}");
                    thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
}

impl Cluster {
    /// Polls until `node`'s order stage reports a stable checkpoint at or beyond `seq`.
    pub fn wait_stable_checkpoint(&self, node: usize, seq: u64, timeout: Duration) {
        let start = Instant::now();
        loop {
            let cp = self
                .status(node)
                .and_then(|s| s["stable_checkpoint"].as_u64());
            if cp.is_some_and(|c| c >= seq) {
                return;
            }
            assert!(
                start.elapsed() < timeout,
                "node {node}: stable checkpoint {cp:?} < {seq} after {timeout:?}:\n{}",
                self.statuses()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A tool a real-client test needs is missing. With `CI=true` that fails the test: CI installs
/// every tool (`.ci/run`), so a missing one is a broken install, never a reason to pass.
/// Elsewhere the part that needs it is skipped, saying so and how to get the tool.
pub fn tool_missing(tool: &str, how: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{tool} is missing ({how}); with CI=true a test fails rather than skip");
    }
    eprintln!("SKIPPED the part that needs {tool}: it is missing ({how})");
}

/// Run `tests/redis_py/<script>` against the gateway on `port` with redis-py and assert it
/// succeeded, showing its output. Debian's python3-redis installs for the system's Python,
/// which a pyenv or venv on the PATH may hide, so the system's is tried first. Without a Python
/// that has the module it says so and returns (`.ci/run` installs python3-redis).
#[allow(dead_code)]
pub fn run_redis_py(script: &str, port: u16) {
    let python = ["/usr/bin/python3", "python3"].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import redis"])
            .status()
            .is_ok_and(|s| s.success())
    });
    let Some(python) = python else {
        tool_missing(
            "python3 with the redis module",
            ".ci/run installs Debian's python3-redis",
        );
        return;
    };
    let path = format!("{}/tests/redis_py/{script}", env!("CARGO_MANIFEST_DIR"));
    let started = Instant::now();
    let out = Command::new(python)
        .arg(&path)
        .arg(port.to_string())
        .output()
        .expect("python3 runs");
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "redis-py {script} failed after {:?}: {}",
        started.elapsed(),
        String::from_utf8_lossy(&out.stderr)
    );
}
