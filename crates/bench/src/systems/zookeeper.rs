//! ZooKeeper: an ensemble of `QuorumPeerMain` JVMs on loopback, driven through the
//! `zookeeper-client` crate.
//!
//! Keys map to znodes `/bench/<key>`. ZooKeeper reads are only sequentially consistent (a
//! server answers from its own, possibly lagging, state), so a read first `sync`s the path,
//! which makes the server catch up with the leader, and then reads it. That is what ZooKeeper
//! offers for fresh reads; it is not strictly linearizable in every leader change
//! (ZOOKEEPER-1675, ZOOKEEPER-2136) but costs what a linearizable read costs.
//!
//! The ZooKeeper workloads (`zk-create`, `zk-set-1k`, `zk-get-1k`) run ZooKeeper's own
//! operations as they are: `create`, `setData`, and a plain `getData` (no `sync`). The session
//! that runs them, [`ZkSession`], serves plumb's coordination service through its ZooKeeper
//! gateway too (`crate::coord`), so both sides go through the same client library.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

use super::{ensure_free, launch, local, nodes, port, wait_for_port, wait_until, Launched};
use crate::target::{BoxFuture, Op, Session, Target};

/// The jars the Debian packages install: the server (its manifest's Class-Path names its other
/// dependencies) and an SLF4J binding so the server's log reaches its log file.
const CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar";
const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
/// JVMs start slowly, and three of them share two cores on the reference machine.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The parent of every key's znode, and of the znodes `zk-create` makes.
pub(crate) const ROOT: &str = "/bench";

/// A running ZooKeeper ensemble. Its servers are stopped when it is dropped.
pub struct ZooKeeper {
    servers: Vec<Launched>,
    client_ports: Vec<u16>,
    /// Which server the next session connects to.
    next: AtomicUsize,
}

impl ZooKeeper {
    /// Starts `nodes` servers with configuration and data under `dir`, server `i` (myid `i + 1`)
    /// serving clients on `base_port + 3i`, followers on `+ 1` and leader election on `+ 2`, and
    /// waits until the ensemble commits a write. Durability is ZooKeeper's default: `forceSync`
    /// fsyncs the transaction log before a write is acknowledged. Installs `zookeeper` first if it
    /// is missing and we are root.
    pub async fn start(dir: &Path, nodes: usize, base_port: u16) -> Result<ZooKeeper, String> {
        super::ensure_installed(&[
            ("java", "default-jre-headless"),
            ("/usr/share/java/zookeeper.jar", "zookeeper"),
            ("/usr/share/java/slf4j-simple.jar", "libslf4j-java"),
        ])?;
        if nodes == 0 {
            return Err("a ZooKeeper ensemble needs at least 1 node".into());
        }
        let mut ports = Vec::with_capacity(nodes);
        for i in 0..nodes {
            ports.push([
                port(base_port, 3 * i)?,
                port(base_port, 3 * i + 1)?,
                port(base_port, 3 * i + 2)?,
            ]);
        }
        ensure_free(&ports.concat())?;
        let mut servers = Vec::with_capacity(nodes);
        for (i, [client, _, _]) in ports.iter().enumerate() {
            let name = format!("zookeeper-{}", i + 1);
            let data = dir.join(&name);
            // Old snapshots would bring back an old ensemble's znodes and epochs.
            if data.exists() {
                std::fs::remove_dir_all(&data)
                    .map_err(|e| format!("could not clear {}: {e}", data.display()))?;
            }
            std::fs::create_dir_all(&data)
                .map_err(|e| format!("could not create {}: {e}", data.display()))?;
            write(&data.join("myid"), &format!("{}\n", i + 1))?;
            // maxClientCnxns=0 lifts the default cap of 60 connections from one address, which
            // a benchmark's sessions, all from 127.0.0.1, would otherwise hit.
            let mut cfg = format!(
                "tickTime=2000\n\
                 initLimit=10\n\
                 syncLimit=5\n\
                 dataDir={}\n\
                 clientPort={client}\n\
                 clientPortAddress=127.0.0.1\n\
                 maxClientCnxns=0\n\
                 4lw.commands.whitelist=*\n\
                 admin.enableServer=false\n",
                data.display()
            );
            for (j, [_, peer, election]) in ports.iter().enumerate() {
                let _ = writeln!(cfg, "server.{}=127.0.0.1:{peer}:{election}", j + 1);
            }
            let cfg_path = dir.join(format!("{name}.cfg"));
            write(&cfg_path, &cfg)?;
            let mut command = Command::new("java");
            command
                .args(["-Xmx512m", "-Djava.net.preferIPv4Stack=true"])
                .args(["-cp", CLASSPATH, MAIN_CLASS])
                .arg(&cfg_path);
            servers.push(launch(&name, command, dir.join(format!("{name}.log")))?);
        }
        let client_ports: Vec<u16> = ports.iter().map(|p| p[0]).collect();
        let deadline = Instant::now() + START_TIMEOUT;
        for &p in &client_ports {
            wait_for_port(&mut servers, local(p), deadline).await?;
        }
        let all: Vec<String> = client_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let all = all.join(",");
        wait_for_a_write(
            &mut servers,
            &all,
            "the ZooKeeper ensemble to commit a write",
            deadline,
        )
        .await?;
        Ok(ZooKeeper {
            servers,
            client_ports,
            next: AtomicUsize::new(0),
        })
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// Waits, as [`wait_until`] does, until a session with the ZooKeeper service at `hosts` stores
/// the bench's probe znode: the write that shows the service is up.
pub(crate) async fn wait_for_a_write(
    servers: &mut [Launched],
    hosts: &str,
    what: &str,
    deadline: Instant,
) -> Result<(), String> {
    wait_until(servers, what, deadline, || async move {
        // fail_eagerly: report NoHosts as soon as every server refused, so the next try comes
        // sooner than a session timeout.
        let client = Client::connector()
            .fail_eagerly()
            .connect(hosts)
            .await
            .map_err(|e| format!("could not open a session with {hosts}: {e}"))?;
        ensure_node(&client, ROOT, b"").await?;
        ensure_node(&client, &format!("{ROOT}/plumb-bench:probe"), b"ok").await
    })
    .await
}

/// Stores `data` at `path`, creating the znode if it does not exist.
pub(crate) async fn ensure_node(client: &Client, path: &str, data: &[u8]) -> Result<(), String> {
    let failed = |e: ZkError| format!("ZooKeeper could not store {path}: {e}");
    match client.set_data(path, data, None).await {
        Ok(_) => Ok(()),
        Err(ZkError::NoNode) => {
            let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
            match client.create(path, data, &options).await {
                Ok(_) => Ok(()),
                // Another session created it first: overwrite its value with ours.
                Err(ZkError::NodeExists) => client
                    .set_data(path, data, None)
                    .await
                    .map(drop)
                    .map_err(failed),
                Err(e) => Err(failed(e)),
            }
        }
        Err(e) => Err(failed(e)),
    }
}

impl Target for ZooKeeper {
    fn system(&self) -> &'static str {
        "zookeeper"
    }

    fn config(&self) -> String {
        nodes(self.servers.len())
    }

    fn server_pids(&self) -> Vec<u32> {
        self.servers.iter().map(|s| s.process.pid()).collect()
    }

    fn session(&self) -> BoxFuture<'_, Result<Box<dyn Session>, String>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let server = format!(
            "127.0.0.1:{}",
            self.client_ports[n % self.client_ports.len()]
        );
        // One server per session (the client would otherwise pick one at random), so
        // sessions spread evenly.
        Box::pin(async move { ZkSession::open("ZooKeeper", &server, n).await })
    }
}

/// One ZooKeeper session, over one connection to one server (a ZooKeeper server or plumb's
/// ZooKeeper gateway), through the `zookeeper-client` crate.
pub(crate) struct ZkSession {
    client: Client,
    /// This session's number among the target's sessions, so the znodes it creates are named
    /// apart from every other session's.
    number: usize,
    created: u64,
}

impl ZkSession {
    /// Opens session number `number` with `server` (`what` names it in errors).
    pub(crate) async fn open(
        what: &str,
        server: &str,
        number: usize,
    ) -> Result<Box<dyn Session>, String> {
        let client = Client::connector()
            .connect(server)
            .await
            .map_err(|e| format!("could not open a {what} session with {server}: {e}"))?;
        Ok(Box::new(ZkSession {
            client,
            number,
            created: 0,
        }))
    }
}

impl Session for ZkSession {
    fn run<'a>(&'a mut self, op: &'a Op) -> BoxFuture<'a, Result<usize, String>> {
        Box::pin(async move {
            match op {
                Op::Write { key, value } => {
                    ensure_node(&self.client, &format!("{ROOT}/{key}"), value).await?;
                    Ok(0)
                }
                Op::Read { key } => {
                    let path = format!("{ROOT}/{key}");
                    let failed = |e: ZkError| format!("ZooKeeper could not read {path}: {e}");
                    self.client.sync(&path).await.map_err(failed)?;
                    match self.client.get_data(&path).await {
                        Ok((data, _)) => Ok(data.len()),
                        Err(ZkError::NoNode) => Ok(0),
                        Err(e) => Err(failed(e)),
                    }
                }
                Op::Create { value } => {
                    self.created += 1;
                    let path = format!("{ROOT}/new-{}-{}", self.number, self.created);
                    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
                    self.client
                        .create(&path, value, &options)
                        .await
                        .map(drop)
                        .map_err(|e| format!("ZooKeeper could not create {path}: {e}"))?;
                    Ok(0)
                }
                Op::GetData { key } => {
                    let path = format!("{ROOT}/{key}");
                    match self.client.get_data(&path).await {
                        Ok((data, _)) => Ok(data.len()),
                        Err(ZkError::NoNode) => Ok(0),
                        Err(e) => Err(format!("ZooKeeper could not read {path}: {e}")),
                    }
                }
            }
        })
    }
}
