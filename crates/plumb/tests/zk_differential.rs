//! A differential test of the coordination service against the real ZooKeeper: one seeded
//! random sequence of ZooKeeper operations from several sessions runs, one operation at a
//! time, against a ZooKeeper 3.8 standalone server (Debian's `zookeeper` package) and against
//! a coord cluster through its ZooKeeper gateway, both driven by the same `zookeeper-client`
//! code, and every reply is compared: result or error, created paths, data, sorted children,
//! the deterministic stat fields (versions, lengths, child counts, which of the test's sessions
//! owns an ephemeral; zxids by their order relations, times not at all) and the watch events
//! each session receives after each step.
//!
//! `PLUMB_ZK_DIFF_SEED` (default 1) and `PLUMB_ZK_DIFF_OPS` (default 10000) vary the run.
//! A second test runs plumb-zk's own encoder and decoder against the same kind of server
//! (tests/zk_codec_exchange), pinning the codec's byte layouts to the reference.
//!
//! Without Java and Debian's ZooKeeper jars each says so and passes, except with `CI=true`,
//! where it fails (`.ci/run` installs them). See "Differential test" in docs/coordination.md.

mod common;
mod zk_codec_exchange;

use common::splitmix::SplitMix64;
use common::Cluster;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zookeeper_client::{
    Acls, AddWatchMode, Client, CreateMode, EventType, MultiReadResult, MultiWriteError,
    MultiWriteResult, Stat,
};

/// ZooKeeper's client port (private range 30100-30199) for the differential test, and the
/// codec test's own server's (the two tests run at once).
const ZK_PORT: u16 = 30100;
const ZK_CODEC_PORT: u16 = 30101;
/// Port slot 92: plumb's nodes from 30200, its ZooKeeper gateway on 30250.
const SLOT: u16 = 92;
/// Sessions driven in turn.
const SESSIONS: usize = 4;
const CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar";
const SESSION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one operation may take before the test gives up on a system.
const OP_TIMEOUT: Duration = Duration::from_secs(30);

// ------------------------------------------------------------------------------ ZooKeeper

/// A standalone ZooKeeper server in a temporary directory, killed when dropped.
struct ZooKeeper {
    child: Child,
    dir: tempfile::TempDir,
}

impl ZooKeeper {
    fn start(port: u16) -> Option<ZooKeeper> {
        let have = Path::new(CLASSPATH.split(':').next().unwrap()).exists()
            && Path::new(CLASSPATH.split(':').nth(1).unwrap()).exists()
            && Command::new("java")
                .arg("-version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if !have {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("plumb-zkdiff-zookeeper-")
            .tempdir()
            .expect("tempdir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        // Standalone (no server.N lines); containers are reaped by a periodic task whose
        // interval does not matter here: the test never gives a container a child.
        let cfg = format!(
            "tickTime=2000\n\
             dataDir={}\n\
             clientPort={port}\n\
             clientPortAddress=127.0.0.1\n\
             maxClientCnxns=0\n\
             forceSync=no\n\
             admin.enableServer=false\n",
            data.display()
        );
        let cfg_path = dir.path().join("zoo.cfg");
        std::fs::write(&cfg_path, cfg).unwrap();
        let log = std::fs::File::create(dir.path().join("zookeeper.log")).unwrap();
        let child = Command::new("java")
            .args(["-Xmx256m", "-Djava.net.preferIPv4Stack=true"])
            .args([
                "-cp",
                CLASSPATH,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(&cfg_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start java");
        Some(ZooKeeper { child, dir })
    }

    fn log_tail(&self) -> String {
        let text =
            std::fs::read_to_string(self.dir.path().join("zookeeper.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn connect(addr: &str) -> Client {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let mut connector = Client::connector();
        connector.session_timeout(SESSION_TIMEOUT);
        match tokio::time::timeout(Duration::from_secs(10), connector.connect(addr)).await {
            Ok(Ok(c)) => return c,
            other => {
                assert!(
                    Instant::now() < deadline,
                    "no ZooKeeper session from {addr} in 90 s: {other:?}"
                );
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
}

// ------------------------------------------------------------------------------ operations

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Persistent,
    Ephemeral,
    Sequential,
    EphemeralSequential,
    Container,
}

impl Mode {
    fn create_mode(self) -> CreateMode {
        match self {
            Mode::Persistent => CreateMode::Persistent,
            Mode::Ephemeral => CreateMode::Ephemeral,
            Mode::Sequential => CreateMode::PersistentSequential,
            Mode::EphemeralSequential => CreateMode::EphemeralSequential,
            Mode::Container => CreateMode::Container,
        }
    }
    fn sequential(self) -> bool {
        matches!(self, Mode::Sequential | Mode::EphemeralSequential)
    }
}

#[derive(Clone, Debug)]
enum MultiOp {
    Create(String, Vec<u8>, Mode),
    Delete(String, Option<i32>),
    SetData(String, Vec<u8>, Option<i32>),
    Check(String, i32),
}

#[derive(Clone, Debug)]
enum Op {
    Create(String, Vec<u8>, Mode),
    Delete(String, Option<i32>),
    SetData(String, Vec<u8>, Option<i32>),
    Exists(String, bool),
    GetData(String, bool),
    GetChildren(String, bool),
    Count(String),
    Multi(Vec<MultiOp>),
    Check(String, i32),
    /// (children?, path) per operation.
    MultiRead(Vec<(bool, String)>),
    Sync(String),
    AddWatch(String, bool),
    Close,
}

impl Op {
    fn kind(&self) -> &'static str {
        match self {
            Op::Create(_, _, m) => match m {
                Mode::Persistent => "create",
                Mode::Ephemeral => "create-ephemeral",
                Mode::Sequential => "create-sequential",
                Mode::EphemeralSequential => "create-ephemeral-sequential",
                Mode::Container => "create-container",
            },
            Op::Delete(..) => "delete",
            Op::SetData(..) => "setData",
            Op::Exists(_, w) => ["exists", "exists+watch"][*w as usize],
            Op::GetData(_, w) => ["getData", "getData+watch"][*w as usize],
            Op::GetChildren(_, w) => ["getChildren", "getChildren+watch"][*w as usize],
            Op::Count(_) => "getAllChildrenNumber",
            Op::Multi(_) => "multi",
            Op::Check(..) => "check",
            Op::MultiRead(_) => "multiRead",
            Op::Sync(_) => "sync",
            Op::AddWatch(_, r) => ["addWatch", "addWatch-recursive"][*r as usize],
            Op::Close => "closeSession",
        }
    }

    /// Whether it may change state (and so fire other sessions' watches).
    fn writes(&self) -> bool {
        matches!(
            self,
            Op::Create(..) | Op::Delete(..) | Op::SetData(..) | Op::Multi(_) | Op::Close
        )
    }
}

/// What the generator knows of the tree (from ZooKeeper's replies): versions by path and the
/// sequential nodes created lately.
#[derive(Default)]
struct Knowledge {
    versions: HashMap<String, i32>,
    sequential: Vec<String>,
}

const PARENTS: [&str; 3] = ["/a", "/b", "/c"];
const NAMES: [&str; 3] = ["x", "y", "z"];

struct Generator {
    rng: SplitMix64,
}

impl Generator {
    fn data(&mut self) -> Vec<u8> {
        let n = self.rng.below(6);
        (0..n).map(|_| b'a' + self.rng.below(4) as u8).collect()
    }

    fn depth2(&mut self) -> String {
        format!("{}/{}", self.rng.pick(&PARENTS), self.rng.pick(&NAMES))
    }

    /// A path to read or write: mostly ones that may exist.
    fn path(&mut self, k: &Knowledge) -> String {
        match self.rng.below(100) {
            0..=14 => self.rng.pick(&PARENTS).to_string(),
            15..=59 => self.depth2(),
            60..=71 => format!("{}/q", self.depth2()),
            72..=86 if !k.sequential.is_empty() => self.rng.pick(&k.sequential).clone(),
            72..=91 => format!("{}/k{}", self.rng.pick(&PARENTS), self.rng.below(2)),
            92..=95 => "/".to_string(),
            _ => "/d/x".to_string(),
        }
    }

    fn version(&mut self, path: &str, k: &Knowledge) -> Option<i32> {
        let known = k.versions.get(path).copied().unwrap_or(0);
        match self.rng.below(10) {
            0..=3 => None,
            4..=7 => Some(known),
            8 => Some(known + 1),
            _ => Some(self.rng.below(3) as i32),
        }
    }

    fn create(&mut self, k: &Knowledge) -> (String, Vec<u8>, Mode) {
        let data = self.data();
        let r = self.rng.below(100);
        if r < 8 {
            // Containers only ever as leaves: none gets a child, so neither system reaps one.
            let path = format!("{}/k{}", self.rng.pick(&PARENTS), self.rng.below(2));
            return (path, data, Mode::Container);
        }
        let mode = match r {
            8..=47 => Mode::Persistent,
            48..=67 => Mode::Ephemeral,
            68..=83 => Mode::Sequential,
            _ => Mode::EphemeralSequential,
        };
        let path = if mode.sequential() {
            match self.rng.below(10) {
                0..=5 => format!("{}/s-", self.rng.pick(&PARENTS)),
                6..=8 => format!("{}/s-", self.depth2()),
                _ => "/t-".to_string(),
            }
        } else {
            match self.rng.below(10) {
                0..=1 => self.rng.pick(&PARENTS).to_string(),
                2..=7 => self.depth2(),
                8 => format!("{}/q", self.depth2()),
                _ => {
                    let _ = k;
                    "/d/x".to_string()
                }
            }
        };
        (path, data, mode)
    }

    fn multi_op(&mut self, k: &Knowledge) -> MultiOp {
        match self.rng.below(4) {
            0 => {
                let (p, d, m) = self.create(k);
                MultiOp::Create(p, d, m)
            }
            1 => {
                let p = self.path(k);
                let v = self.version(&p, k);
                MultiOp::Delete(p, v)
            }
            2 => {
                let p = self.path(k);
                let v = self.version(&p, k);
                MultiOp::SetData(p, self.data(), v)
            }
            _ => {
                let p = self.path(k);
                let v = self.version(&p, k).unwrap_or(0);
                MultiOp::Check(p, v)
            }
        }
    }

    fn op(&mut self, k: &Knowledge) -> (usize, Op) {
        let session = self.rng.below(SESSIONS);
        let op = match self.rng.below(1000) {
            0..=229 => {
                let (p, d, m) = self.create(k);
                Op::Create(p, d, m)
            }
            230..=349 => {
                let p = self.path(k);
                let v = self.version(&p, k);
                Op::Delete(p, v)
            }
            350..=469 => {
                let p = self.path(k);
                let v = self.version(&p, k);
                Op::SetData(p, self.data(), v)
            }
            470..=559 => {
                let p = self.path(k);
                Op::Exists(p, self.rng.chance(50))
            }
            560..=649 => {
                let p = self.path(k);
                Op::GetData(p, self.rng.chance(50))
            }
            650..=739 => {
                let p = self.path(k);
                Op::GetChildren(p, self.rng.chance(50))
            }
            740..=769 => Op::Count(self.path(k)),
            770..=859 => {
                let n = 1 + self.rng.below(4);
                Op::Multi((0..n).map(|_| self.multi_op(k)).collect())
            }
            860..=909 => {
                let p = self.path(k);
                let v = self.version(&p, k).unwrap_or(0);
                Op::Check(p, v)
            }
            910..=949 => {
                let n = 1 + self.rng.below(3);
                Op::MultiRead(
                    (0..n)
                        .map(|_| (self.rng.chance(50), self.path(k)))
                        .collect(),
                )
            }
            950..=979 => Op::Sync(self.path(k)),
            980..=989 => {
                let p = match self.rng.below(3) {
                    0 => "/".to_string(),
                    1 => self.rng.pick(&PARENTS).to_string(),
                    _ => self.depth2(),
                };
                Op::AddWatch(p, self.rng.chance(50))
            }
            _ => Op::Close,
        };
        (session, op)
    }
}

// ------------------------------------------------------------------------------ one system

/// One of the test's sessions on one system.
struct Slot {
    client: Client,
    /// Its generation: the how-manieth session in this slot.
    generation: u32,
    /// Watch events received, as "Type path", in arrival order per watcher.
    events: Arc<Mutex<Vec<String>>>,
    /// Watchers that may still fire (persistent ones always may).
    live_watchers: Arc<AtomicUsize>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// A reply rendered for comparison: text with the zxids taken out (compared by order).
#[derive(Default)]
struct Obs {
    text: String,
    zxids: Vec<i64>,
}

struct System {
    name: &'static str,
    addr: String,
    slots: Vec<Slot>,
    /// Session ids to the test's names for them ("s2.1": slot 2, generation 1).
    owners: HashMap<i64, String>,
}

fn event_name(t: EventType) -> &'static str {
    match t {
        EventType::Session => "Session",
        EventType::NodeCreated => "NodeCreated",
        EventType::NodeDeleted => "NodeDeleted",
        EventType::NodeDataChanged => "NodeDataChanged",
        EventType::NodeChildrenChanged => "NodeChildrenChanged",
    }
}

impl System {
    async fn new(name: &'static str, addr: String) -> System {
        let mut s = System {
            name,
            addr,
            slots: Vec::new(),
            owners: HashMap::new(),
        };
        for i in 0..SESSIONS {
            let slot = s.open(i, 0).await;
            s.slots.push(slot);
        }
        s
    }

    async fn open(&mut self, index: usize, generation: u32) -> Slot {
        let client = connect(&self.addr).await;
        self.owners
            .insert(client.session_id().0, format!("s{index}.{generation}"));
        Slot {
            client,
            generation,
            events: Arc::new(Mutex::new(Vec::new())),
            live_watchers: Arc::new(AtomicUsize::new(0)),
            tasks: Vec::new(),
        }
    }

    fn owner(&self, id: i64) -> String {
        match id {
            0 => "-".to_string(),
            i64::MIN => "container".to_string(),
            id => self
                .owners
                .get(&id)
                .cloned()
                .unwrap_or_else(|| "another".to_string()),
        }
    }

    fn stat(&self, out: &mut Obs, s: &Stat) {
        out.text.push_str(&format!(
            "{{v{} cv{} av{} len{} n{} owner {}}}",
            s.version,
            s.cversion,
            s.aversion,
            s.data_length,
            s.num_children,
            self.owner(s.ephemeral_owner)
        ));
        out.zxids.extend([s.czxid, s.mzxid, s.pzxid]);
    }

    fn watch_oneshot(&mut self, slot: usize, watcher: zookeeper_client::OneshotWatcher) {
        let s = &mut self.slots[slot];
        let (events, live) = (s.events.clone(), s.live_watchers.clone());
        live.fetch_add(1, Ordering::SeqCst);
        s.tasks.push(tokio::spawn(async move {
            let e = watcher.changed().await;
            if e.event_type != EventType::Session {
                events
                    .lock()
                    .unwrap()
                    .push(format!("{} {}", event_name(e.event_type), e.path));
            }
            live.fetch_sub(1, Ordering::SeqCst);
        }));
    }

    fn watch_persistent(&mut self, slot: usize, mut watcher: zookeeper_client::PersistentWatcher) {
        let s = &mut self.slots[slot];
        let events = s.events.clone();
        s.live_watchers.fetch_add(1, Ordering::SeqCst);
        s.tasks.push(tokio::spawn(async move {
            loop {
                let e = watcher.changed().await;
                if e.event_type == EventType::Session {
                    if e.session_state.is_terminated() {
                        // Keep the watcher: dropping it would ask the server to remove it.
                        std::future::pending::<()>().await;
                    }
                    continue;
                }
                events
                    .lock()
                    .unwrap()
                    .push(format!("{} {}", event_name(e.event_type), e.path));
            }
        }));
    }

    fn create_text(
        &self,
        out: &mut Obs,
        path: &str,
        mode: Mode,
        r: Result<(Stat, String), String>,
    ) {
        match r {
            Ok((stat, seq)) => {
                let p = if mode.sequential() {
                    format!("{path}{seq}")
                } else {
                    path.to_string()
                };
                out.text.push_str(&format!("created {p} "));
                self.stat(out, &stat);
            }
            Err(e) => out.text.push_str(&e),
        }
    }

    /// Runs `op` for session `slot`; its rendered reply, and what the generator learns.
    async fn run(&mut self, slot: usize, op: &Op, learn: &mut Vec<(String, Stat)>) -> Obs {
        let mut out = Obs::default();
        let c = self.slots[slot].client.clone();
        let err = |e: zookeeper_client::Error| format!("error {e:?}");
        let persistent = Acls::anyone_all();
        match op {
            Op::Create(path, data, mode) => {
                let options = mode.create_mode().with_acls(persistent);
                let r = c
                    .create(path, data, &options)
                    .await
                    .map(|(stat, seq)| (stat, seq.to_string()))
                    .map_err(err);
                if let Ok((stat, seq)) = &r {
                    let p = if mode.sequential() {
                        format!("{path}{seq}")
                    } else {
                        path.clone()
                    };
                    learn.push((p, *stat));
                }
                self.create_text(&mut out, path, *mode, r);
            }
            Op::Delete(path, version) => match c.delete(path, *version).await {
                Ok(()) => out.text.push_str("deleted"),
                Err(e) => out.text.push_str(&err(e)),
            },
            Op::SetData(path, data, version) => match c.set_data(path, data, *version).await {
                Ok(stat) => {
                    learn.push((path.clone(), stat));
                    out.text.push_str("set ");
                    self.stat(&mut out, &stat);
                }
                Err(e) => out.text.push_str(&err(e)),
            },
            Op::Exists(path, watch) => {
                let r = if *watch {
                    match c.check_and_watch_stat(path).await {
                        Ok((stat, watcher)) => {
                            self.watch_oneshot(slot, watcher);
                            Ok(stat)
                        }
                        Err(e) => Err(e),
                    }
                } else {
                    c.check_stat(path).await
                };
                match r {
                    Ok(Some(stat)) => {
                        learn.push((path.clone(), stat));
                        out.text.push_str("exists ");
                        self.stat(&mut out, &stat);
                    }
                    Ok(None) => out.text.push_str("exists: none"),
                    Err(e) => out.text.push_str(&err(e)),
                }
            }
            Op::GetData(path, watch) => {
                let r = if *watch {
                    match c.get_and_watch_data(path).await {
                        Ok((data, stat, watcher)) => {
                            self.watch_oneshot(slot, watcher);
                            Ok((data, stat))
                        }
                        Err(e) => Err(e),
                    }
                } else {
                    c.get_data(path).await
                };
                match r {
                    Ok((data, stat)) => {
                        learn.push((path.clone(), stat));
                        out.text
                            .push_str(&format!("data {:?} ", String::from_utf8_lossy(&data)));
                        self.stat(&mut out, &stat);
                    }
                    Err(e) => out.text.push_str(&err(e)),
                }
            }
            Op::GetChildren(path, watch) => {
                let r = if *watch {
                    match c.get_and_watch_children(path).await {
                        Ok((children, stat, watcher)) => {
                            self.watch_oneshot(slot, watcher);
                            Ok((children, stat))
                        }
                        Err(e) => Err(e),
                    }
                } else {
                    c.get_children(path).await
                };
                match r {
                    Ok((mut children, stat)) => {
                        children.sort();
                        learn.push((path.clone(), stat));
                        out.text.push_str(&format!("children {children:?} "));
                        self.stat(&mut out, &stat);
                    }
                    Err(e) => out.text.push_str(&err(e)),
                }
            }
            Op::Count(path) => match c.count_descendants_number(path).await {
                Ok(n) => out.text.push_str(&format!("count {n}")),
                Err(e) => out.text.push_str(&err(e)),
            },
            Op::Check(path, version) => {
                let mut m = c.new_multi_writer();
                let r = match m.add_check_version(path, *version) {
                    Ok(()) => m.commit().await,
                    Err(e) => Err(MultiWriteError::RequestFailed { source: e }),
                };
                self.multi_text(
                    &mut out,
                    &[MultiOp::Check(path.clone(), *version)],
                    r,
                    learn,
                );
            }
            Op::Multi(ops) => {
                let mut m = c.new_multi_writer();
                let mut added = Ok(());
                for op in ops {
                    let r = match op {
                        MultiOp::Create(p, d, mode) => {
                            m.add_create(p, d, &mode.create_mode().with_acls(persistent))
                        }
                        MultiOp::Delete(p, v) => m.add_delete(p, *v),
                        MultiOp::SetData(p, d, v) => m.add_set_data(p, d, *v),
                        MultiOp::Check(p, v) => m.add_check_version(p, *v),
                    };
                    if let Err(e) = r {
                        added = Err(e);
                        break;
                    }
                }
                let r = match added {
                    Ok(()) => m.commit().await,
                    Err(e) => Err(MultiWriteError::RequestFailed { source: e }),
                };
                self.multi_text(&mut out, ops, r, learn);
            }
            Op::MultiRead(ops) => {
                let mut m = c.new_multi_reader();
                let mut added = Ok(());
                for (children, p) in ops {
                    let r = if *children {
                        m.add_get_children(p)
                    } else {
                        m.add_get_data(p)
                    };
                    if let Err(e) = r {
                        added = Err(e);
                        break;
                    }
                }
                let r = match added {
                    Ok(()) => m.commit().await,
                    Err(e) => Err(e),
                };
                match r {
                    Ok(results) => {
                        out.text.push_str("read [");
                        for r in results {
                            match r {
                                MultiReadResult::Data { data, stat } => {
                                    out.text.push_str(&format!(
                                        "data {:?} ",
                                        String::from_utf8_lossy(&data)
                                    ));
                                    self.stat(&mut out, &stat);
                                }
                                MultiReadResult::Children { mut children } => {
                                    children.sort();
                                    out.text.push_str(&format!("children {children:?}"));
                                }
                                MultiReadResult::Error { err: e } => {
                                    out.text.push_str(&err(e));
                                }
                                other => out.text.push_str(&format!("{other:?}")),
                            }
                            out.text.push_str("; ");
                        }
                        out.text.push(']');
                    }
                    Err(e) => out.text.push_str(&err(e)),
                }
            }
            Op::Sync(path) => match c.sync(path).await {
                Ok(()) => out.text.push_str("synced"),
                Err(e) => out.text.push_str(&err(e)),
            },
            Op::AddWatch(path, recursive) => {
                let mode = if *recursive {
                    AddWatchMode::PersistentRecursive
                } else {
                    AddWatchMode::Persistent
                };
                match c.watch(path, mode).await {
                    Ok(watcher) => {
                        self.watch_persistent(slot, watcher);
                        out.text.push_str("watching");
                    }
                    Err(e) => out.text.push_str(&err(e)),
                }
            }
            Op::Close => {
                drop(c);
                let old = self.slots.remove(slot);
                let mut state = old.client.state_watcher();
                drop(old.client);
                let closed = tokio::time::timeout(OP_TIMEOUT, async {
                    loop {
                        let st = state.peek_state();
                        if st.is_terminated() {
                            return st;
                        }
                        state.changed().await;
                    }
                })
                .await;
                out.text.push_str(&format!("closed {closed:?}"));
                for t in old.tasks {
                    t.abort();
                }
                let new = self.open(slot, old.generation + 1).await;
                self.slots.insert(slot, new);
            }
        }
        out
    }

    fn multi_text(
        &self,
        out: &mut Obs,
        ops: &[MultiOp],
        r: Result<Vec<MultiWriteResult>, MultiWriteError>,
        learn: &mut Vec<(String, Stat)>,
    ) {
        match r {
            Ok(results) => {
                out.text.push_str("multi [");
                for (op, r) in ops.iter().zip(results) {
                    match r {
                        MultiWriteResult::Check => out.text.push_str("checked"),
                        MultiWriteResult::Delete => out.text.push_str("deleted"),
                        MultiWriteResult::Create { path, stat } => {
                            // ZooKeeper 3.8.0 answers a create2 inside a multi with a plain
                            // create's result, without the stat (the client library then
                            // reports an invalid one); plumb sends the stat. The path is
                            // compared, the stat is not (docs/coordination.md).
                            if stat.czxid != -1 {
                                learn.push((path.clone(), stat));
                            }
                            out.text.push_str(&format!("created {path}"));
                        }
                        MultiWriteResult::SetData { stat } => {
                            if let MultiOp::SetData(p, ..) = op {
                                learn.push((p.clone(), stat));
                            }
                            out.text.push_str("set ");
                            self.stat(out, &stat);
                        }
                        other => out.text.push_str(&format!("{other:?}")),
                    }
                    out.text.push_str("; ");
                }
                out.text.push(']');
            }
            Err(MultiWriteError::OperationFailed { index, source }) => {
                out.text
                    .push_str(&format!("multi failed at {index}: {source:?}"));
            }
            Err(MultiWriteError::RequestFailed { source }) => out
                .text
                .push_str(&format!("multi request failed: {source:?}")),
        }
    }

    /// Makes sure every event of the changes so far has reached the watchers of the sessions
    /// other than `actor`: a read on each session with a watcher is ordered after the change,
    /// and both systems send a session its events before the reply to a later request. Then
    /// the watcher tasks run until quiet.
    async fn settle(&mut self, actor: Option<usize>) {
        let mut barriers = Vec::new();
        for (i, s) in self.slots.iter().enumerate() {
            if actor.is_some_and(|a| a != i) && s.live_watchers.load(Ordering::SeqCst) > 0 {
                // The request is sent when the future is made: they go out together.
                barriers.push(s.client.check_stat("/"));
            }
        }
        for b in barriers {
            let r = tokio::time::timeout(OP_TIMEOUT, b).await;
            assert!(
                matches!(r, Ok(Ok(_))),
                "{}: barrier read failed: {r:?}",
                self.name
            );
        }
        let mut quiet = 0;
        let mut last = self.event_count();
        while quiet < 3 {
            tokio::task::yield_now().await;
            let now = self.event_count();
            if now == last {
                quiet += 1;
            } else {
                quiet = 0;
                last = now;
            }
        }
    }

    fn event_count(&self) -> usize {
        self.slots
            .iter()
            .map(|s| s.events.lock().unwrap().len())
            .sum()
    }

    /// The events each session received since the last call, sorted within the step.
    fn take_events(&mut self) -> Vec<Vec<String>> {
        self.slots
            .iter()
            .map(|s| {
                let mut e = std::mem::take(&mut *s.events.lock().unwrap());
                e.sort();
                e
            })
            .collect()
    }
}

/// zxids compared by their order relations: the pairs (ZooKeeper's, plumb's) seen so far must
/// form a strictly increasing one-to-one map.
#[derive(Default)]
struct ZxidOrder {
    forward: BTreeMap<i64, i64>,
    backward: BTreeMap<i64, i64>,
}

impl ZxidOrder {
    fn add(&mut self, a: i64, b: i64) -> Result<(), String> {
        if let Some(&have) = self.forward.get(&a) {
            return if have == b {
                Ok(())
            } else {
                Err(format!(
                    "ZooKeeper's zxid {a:#x} was plumb's {have:#x} and now {b:#x}"
                ))
            };
        }
        if let Some(&have) = self.backward.get(&b) {
            return Err(format!(
                "plumb's zxid {b:#x} was ZooKeeper's {have:#x} and now {a:#x}"
            ));
        }
        if let Some((&pa, &pb)) = self.forward.range(..a).next_back() {
            if pb > b {
                return Err(format!(
                    "ZooKeeper's zxids {pa:#x} < {a:#x} but plumb's {pb:#x} > {b:#x}"
                ));
            }
        }
        if let Some((&na, &nb)) = self.forward.range(a..).next() {
            if nb < b {
                return Err(format!(
                    "ZooKeeper's zxids {a:#x} < {na:#x} but plumb's {b:#x} > {nb:#x}"
                ));
            }
        }
        self.forward.insert(a, b);
        self.backward.insert(b, a);
        Ok(())
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A standalone ZooKeeper on `port`, or None when Java or the jars are missing (which fails
/// the test under `CI=true`).
fn start_zookeeper(port: u16) -> Option<ZooKeeper> {
    let zk = ZooKeeper::start(port);
    if zk.is_none() {
        common::tool_missing(
            &format!("java or Debian's zookeeper jars ({CLASSPATH})"),
            ".ci/run installs default-jre-headless, zookeeper and libslf4j-java",
        );
    }
    zk
}

/// plumb-zk's encoder and decoder against the real ZooKeeper, byte for byte: a layout that
/// differs shows as a decode error or a wrong field here, whatever a client library forgives.
#[test]
fn the_codec_agrees_with_a_real_zookeeper_server() {
    let Some(zk) = start_zookeeper(ZK_CODEC_PORT) else {
        return;
    };
    let result = std::panic::catch_unwind(|| {
        zk_codec_exchange::exercise(&format!("127.0.0.1:{ZK_CODEC_PORT}"), "/plumb-codec")
    });
    if let Err(panic) = result {
        eprintln!("---- ZooKeeper's log ----\n{}", zk.log_tail());
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn zookeeper_differential() {
    let seed = env_u64("PLUMB_ZK_DIFF_SEED", 1);
    let ops = env_u64("PLUMB_ZK_DIFF_OPS", 10_000) as usize;
    let Some(zk) = start_zookeeper(ZK_PORT) else {
        return;
    };
    let mut cluster = Cluster::init_with("zk-differential", SLOT, &["--app", "coord"]);
    cluster.start_all();
    cluster.wait_ready(Duration::from_secs(60));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let plumb_addr = format!("127.0.0.1:{}", cluster.resp_port);
    let result = rt.block_on(differential(seed, ops, plumb_addr));
    cluster.assert_running();
    if let Err(report) = result {
        panic!("{report}\n---- ZooKeeper's log ----\n{}", zk.log_tail());
    }
}

async fn differential(seed: u64, ops: usize, plumb_addr: String) -> Result<(), String> {
    let started = Instant::now();
    let mut zk = System::new("zookeeper", format!("127.0.0.1:{ZK_PORT}")).await;
    let mut plumb = System::new("plumb", plumb_addr).await;
    eprintln!(
        "zk_differential: seed {seed}, {ops} operations, {SESSIONS} sessions; both systems up in {:?}",
        started.elapsed()
    );
    // The parents, from one session on each.
    for p in PARENTS {
        for s in [&mut zk, &mut plumb] {
            let mut learn = Vec::new();
            let r = s
                .run(
                    0,
                    &Op::Create(p.to_string(), vec![], Mode::Persistent),
                    &mut learn,
                )
                .await;
            assert!(r.text.starts_with("created"), "{}: {}", s.name, r.text);
        }
    }
    let mut generator = Generator {
        rng: SplitMix64(seed ^ 0x5A5A_1234_0000_0001),
    };
    let mut knowledge = Knowledge::default();
    let mut zxids = ZxidOrder::default();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut differences: Vec<String> = Vec::new();
    let mut history: Vec<String> = Vec::new();
    // Steps shown before a difference (PLUMB_ZK_DIFF_HISTORY).
    let keep_history = env_u64("PLUMB_ZK_DIFF_HISTORY", 12) as usize;
    let mut last_report = Instant::now();
    // The paths on which each session holds a persistent watch (see `avoid_zookeeper_4466`).
    let mut persistent: Vec<Vec<String>> = vec![Vec::new(); SESSIONS];
    for step in 0..ops {
        let (slot, op) = generator.op(&knowledge);
        let op = avoid_zookeeper_4466(op, &mut persistent[slot]);
        *counts.entry(op.kind()).or_default() += 1;
        let mut learn = Vec::new();
        let a = run_one(&mut zk, slot, &op, &mut learn).await?;
        let b = run_one(&mut plumb, slot, &op, &mut Vec::new()).await?;
        // A read fires nothing: no barrier, only the watcher tasks run.
        let actor = op.writes().then_some(slot);
        zk.settle(actor).await;
        plumb.settle(actor).await;
        let (ea, eb) = (zk.take_events(), plumb.take_events());
        let line = format!("#{step} s{slot} {op:?}");
        history.push(format!(
            "{line}\n    zookeeper: {} events {ea:?}\n    plumb:     {} events {eb:?}",
            a.text, b.text
        ));
        if history.len() > keep_history {
            history.remove(0);
        }
        let mut diff = Vec::new();
        if a.text != b.text || a.zxids.len() != b.zxids.len() {
            diff.push(format!(
                "reply differs\n    zookeeper: {}\n    plumb:     {}",
                a.text, b.text
            ));
        } else {
            for (&x, &y) in a.zxids.iter().zip(&b.zxids) {
                if let Err(e) = zxids.add(x, y) {
                    diff.push(format!("zxid order differs: {e}\n    reply: {}", a.text));
                    break;
                }
            }
        }
        for (i, (x, y)) in ea.iter().zip(&eb).enumerate() {
            if x != y {
                diff.push(format!(
                    "events of session s{i} differ\n    zookeeper: {x:?}\n    plumb:     {y:?}"
                ));
            }
        }
        if !diff.is_empty() {
            let context = history.join("\n");
            differences.push(format!(
                "step {line}\n  {}\n  last steps:\n{context}",
                diff.join("\n  ")
            ));
            // The systems have diverged: what follows would only repeat it.
            break;
        }
        for (path, stat) in learn {
            if (path.contains("/s-") || path.starts_with("/t-"))
                && !knowledge.sequential.contains(&path)
            {
                knowledge.sequential.push(path.clone());
                if knowledge.sequential.len() > 12 {
                    knowledge.sequential.remove(0);
                }
            }
            knowledge.versions.insert(path, stat.version);
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            eprintln!(
                "zk_differential: {} operations in {:?}",
                step + 1,
                started.elapsed()
            );
            last_report = Instant::now();
        }
    }
    let ran: usize = counts.values().sum();
    eprintln!(
        "zk_differential summary: seed {seed}, {ran} operations in {:?}",
        started.elapsed()
    );
    for (kind, n) in &counts {
        eprintln!("  {kind:<28} {n}");
    }
    eprintln!("  differences: {}", differences.len());
    if differences.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "zk_differential (seed {seed}): ZooKeeper and plumb differ:\n{}",
            differences.join("\n\n")
        ))
    }
}

/// ZooKeeper 3.8.0 keeps one watch mode per session and path: a one-shot watch set where the
/// session has a persistent one, or a second persistent mode, replaces the first mode
/// (ZOOKEEPER-4466, fixed in later releases), so the persistent watch stops firing. plumb keeps
/// both, as ZooKeeper intends. The sequence steers clear of it: such a read sets no watch, such
/// an addWatch becomes a sync (docs/coordination.md).
fn avoid_zookeeper_4466(op: Op, persistent: &mut Vec<String>) -> Op {
    match op {
        Op::Exists(p, true) if persistent.contains(&p) => Op::Exists(p, false),
        Op::GetData(p, true) if persistent.contains(&p) => Op::GetData(p, false),
        Op::GetChildren(p, true) if persistent.contains(&p) => Op::GetChildren(p, false),
        Op::AddWatch(p, _) if persistent.contains(&p) => Op::Sync(p),
        Op::AddWatch(p, recursive) => {
            persistent.push(p.clone());
            Op::AddWatch(p, recursive)
        }
        Op::Close => {
            persistent.clear();
            Op::Close
        }
        op => op,
    }
}

async fn run_one(
    s: &mut System,
    slot: usize,
    op: &Op,
    learn: &mut Vec<(String, Stat)>,
) -> Result<Obs, String> {
    match tokio::time::timeout(OP_TIMEOUT * 2, s.run(slot, op, learn)).await {
        Ok(obs) => Ok(obs),
        Err(_) => Err(format!("{}: {op:?} of session s{slot} timed out", s.name)),
    }
}
