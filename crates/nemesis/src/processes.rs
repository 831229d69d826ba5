//! The processes of one cluster: `plumb init` with every node on its own loopback address
//! (127.0.0.10, .11, ...), its nodes, and the Redis gateway the load goes through; kill,
//! restart, pause and resume one node; read a node's `/status`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The first node's loopback address is 127.0.0.FIRST_HOST.
const FIRST_HOST: u8 = 10;

pub struct Processes {
    exe: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    pub base_port: u16,
    pub resp_port: u16,
    nodes: Vec<Option<Child>>,
    /// SIGSTOPped nodes: resumed before they are killed or dropped.
    paused: Vec<bool>,
    gateway: Option<Child>,
}

impl Processes {
    /// `plumb init` a co-located cluster of `u`, `r` in `dir` (which must not hold one).
    pub fn init(
        exe: &Path,
        dir: &Path,
        u: u16,
        r: u16,
        base_port: u16,
        clients: usize,
    ) -> Result<Processes, String> {
        let faults = plumb_config::Faults::new(u, r);
        let nodes = faults
            .min_auth()
            .max(faults.min_order())
            .max(faults.min_exec());
        let hosts: Vec<String> = (0..nodes).map(|i| host(i as u16).to_string()).collect();
        let resp_port = base_port + 90;
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let out = Command::new(exe)
            .args(["init", "--dir"])
            .arg(dir)
            .args(["--u", &u.to_string(), "--r", &r.to_string()])
            .args(["--hosts", &hosts.join(",")])
            .args(["--base-port", &base_port.to_string()])
            .args(["--resp-port", &resp_port.to_string()])
            .args(["--gateway-clients", &clients.max(1).to_string()])
            .output()
            .map_err(|e| format!("cannot run {} init: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} init failed: {}",
                exe.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Processes {
            exe: exe.to_path_buf(),
            dir: dir.to_path_buf(),
            config: dir.join("cluster.toml"),
            base_port,
            resp_port,
            nodes: (0..nodes).map(|_| None).collect(),
            paused: vec![false; nodes],
            gateway: None,
        })
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn log(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{what}.log"))
    }

    fn spawn(&self, what: &str, args: &[&str]) -> Result<Child, String> {
        let path = self.log(what);
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let _ = writeln!(log, "---- nemesis: starting {what} ----");
        let err = log.try_clone().map_err(|e| e.to_string())?;
        Command::new(&self.exe)
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))
    }

    pub fn start_node(&mut self, node: usize) -> Result<(), String> {
        debug_assert!(self.nodes[node].is_none(), "node {node} already running");
        let child = self.spawn(
            &format!("node-{node}"),
            &["node", "--id", &node.to_string()],
        )?;
        self.nodes[node] = Some(child);
        Ok(())
    }

    /// Every node and the gateway; waits until each node answers `/status` and the gateway
    /// accepts connections.
    pub fn start_all(&mut self) -> Result<(), String> {
        for n in 0..self.nodes.len() {
            self.start_node(n)?;
        }
        self.gateway = Some(self.spawn("gateway", &["gateway"])?);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.check_running()?;
            let nodes_up = (0..self.nodes.len()).all(|n| self.status(n).is_some());
            let gateway_up = TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], self.resp_port)),
                Duration::from_millis(200),
            )
            .is_ok();
            if nodes_up && gateway_up {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("the cluster did not come up in 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// An error naming every process that should run and has exited.
    pub fn check_running(&mut self) -> Result<(), String> {
        let mut dead = Vec::new();
        for (n, c) in self.nodes.iter_mut().enumerate() {
            if let Some(Ok(Some(status))) = c.as_mut().map(Child::try_wait) {
                dead.push(format!(
                    "node {n} exited ({status}); see {}",
                    self.dir.join(format!("node-{n}.log")).display()
                ));
            }
        }
        if let Some(Ok(Some(status))) = self.gateway.as_mut().map(Child::try_wait) {
            dead.push(format!(
                "the gateway exited ({status}); see {}",
                self.dir.join("gateway.log").display()
            ));
        }
        if dead.is_empty() {
            Ok(())
        } else {
            Err(dead.join("; "))
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self, node: usize) {
        if let Some(mut c) = self.nodes[node].take() {
            if self.paused[node] {
                self.resume(node);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn signal(&self, node: usize, signal: libc::c_int) {
        if let Some(c) = &self.nodes[node] {
            // SAFETY: kill(2) on a child this process spawned and has not reaped.
            unsafe {
                libc::kill(c.id() as libc::pid_t, signal);
            }
        }
    }

    /// SIGSTOP: the process keeps its sockets but does nothing, like a machine that hangs.
    pub fn pause(&mut self, node: usize) {
        self.signal(node, libc::SIGSTOP);
        self.paused[node] = true;
    }

    pub fn resume(&mut self, node: usize) {
        self.signal(node, libc::SIGCONT);
        self.paused[node] = false;
    }

    pub fn admin(&self, node: usize) -> SocketAddr {
        SocketAddr::from((host(node as u16), self.base_port + 2 * node as u16 + 1))
    }

    /// A node's `/status`, parsed; `None` if it does not answer within a second.
    pub fn status(&self, node: usize) -> Option<serde_json::Value> {
        serde_json::from_str(&http_get(
            self.admin(node),
            "/status",
            ADMIN_CONNECT_TIMEOUT,
            ADMIN_IO_TIMEOUT,
        )?)
        .ok()
    }

    /// The node hosting the primary, as most answering nodes say (the later view on a tie).
    /// Not the first to answer: a node that was just paused or restarted may still be in an
    /// earlier view, and a "next primary" picked from it was the current one.
    pub fn primary(&self) -> Option<usize> {
        let mut said: BTreeMap<(u64, u64), usize> = BTreeMap::new();
        for n in 0..self.nodes.len() {
            let Some(status) = self.status(n) else {
                continue;
            };
            let view = status.get("view").and_then(|v| v.as_u64());
            let primary = status.get("primary_node").and_then(|p| p.as_u64());
            if let (Some(view), Some(primary)) = (view, primary) {
                *said.entry((view, primary)).or_default() += 1;
            }
        }
        said.into_iter()
            .max_by_key(|((view, _), count)| (*count, *view))
            .map(|((_, primary), _)| primary as usize)
    }

    /// A node's `last_committed` from `/status`.
    pub fn last_committed(&self, node: usize) -> Option<u64> {
        self.status(node)?.get("last_committed")?.as_u64()
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for n in 0..self.nodes.len() {
            self.kill(n);
        }
        if let Some(mut g) = self.gateway.take() {
            let _ = g.kill();
            let _ = g.wait();
        }
    }
}

/// The loopback address of node `node`.
pub fn host(node: u16) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, FIRST_HOST + node as u8)
}

/// A node's admin pages are polled with these timeouts: a paused node must not stall the
/// harness.
const ADMIN_CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
const ADMIN_IO_TIMEOUT: Duration = Duration::from_secs(1);

/// HTTP/1.0 GET, giving up after `connect` to connect and `io` per read or write: the body if
/// the status is 200. The real-process tests use it too.
pub fn http_get(addr: SocketAddr, path: &str, connect: Duration, io: Duration) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, connect).ok()?;
    s.set_read_timeout(Some(io)).ok()?;
    s.set_write_timeout(Some(io)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    s.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    (head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200")).then(|| body.to_string())
}
