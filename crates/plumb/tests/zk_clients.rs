//! Unmodified ZooKeeper clients against a coordination cluster's gateway (`--app coord`):
//! the `zookeeper-client` crate from crates.io, Debian's `zkCli.sh`, kazoo from PyPI with its
//! recipes, and hostile bytes. One cluster serves them all (a cluster per client would cost
//! minutes on a 2-core machine).
//!
//! zkCli needs Debian's `zookeeper` package and kazoo a Python with kazoo (`.ci/run` installs
//! both: kazoo into `target/kazoo-venv`); without them those parts say so and are skipped.

mod common;

use common::zk_wire::ZkConn;
use common::Cluster;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use zookeeper_client::{Acls, AddWatchMode, Client, CreateMode, EventType, MultiWriteResult};

/// Port slot 85: nodes from 29500, ZooKeeper clients on 29550.
const SLOT: u16 = 85;

fn start(fast_reads: Option<bool>) -> Cluster {
    Cluster::start_app(
        "zk-clients",
        SLOT,
        "coord",
        fast_reads,
        "the ZooKeeper gateway did not take a session",
        |port| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let addr = format!("127.0.0.1:{port}");
                let mut connector = Client::connector();
                connector.session_timeout(Duration::from_secs(10));
                let connect = connector.connect(&addr);
                matches!(
                    tokio::time::timeout(Duration::from_secs(10), connect).await,
                    Ok(Ok(_))
                )
            })
        },
    )
}

/// The multi-threaded runtime the `zookeeper-client` parts run on.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A session through the `zookeeper-client` crate, with a 10 s session timeout.
async fn connect(port: u16) -> Client {
    Client::connector()
        .session_timeout(Duration::from_secs(10))
        .connect(&format!("127.0.0.1:{port}"))
        .await
        .expect("zookeeper-client connects")
}

/// The gateway with `fast_reads` off (not the default for a coordination cluster): every read
/// is ordered.
#[test]
fn zookeeper_clients_with_reads_ordered() {
    let mut c = start(Some(false));
    let port = c.resp_port;
    let rt = runtime();
    rt.block_on(rust_crate(port));
    zkcli(port);
    let metrics = common::http_get(c.gateway_admin(), "/metrics").unwrap_or_default();
    let series = "plumb_gateway_client_events_total{event=\"read-only-accepted\"}";
    assert_eq!(common::metric_sample(&metrics, series), 0, "{metrics}");
    c.assert_running();
}

/// A coordination cluster as `plumb init --app coord` writes it (`fast_reads` on: reads that
/// set no watch take the read-only path) under unmodified clients, kazoo's recipes and their
/// watches among them.
#[test]
fn unmodified_zookeeper_clients() {
    let mut c = start(None);
    let file = std::fs::read_to_string(c.config()).unwrap();
    assert!(file.contains("\nfast_reads = true\n"), "{file}");
    let port = c.resp_port;
    let rt = runtime();
    rt.block_on(rust_crate(port));
    pipelined_and_expiry(port);
    hostile_bytes(port);
    let status = c.gateway_status();
    let count = |k: &str| status.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    assert!(
        count("bad_frames") >= 3 && count("malformed") >= 1,
        "hostile frames counted by reason: {status}"
    );
    four_letter_words(port);
    zkcli(port);
    kazoo(port);
    // The reads above took the read-only path (a read that met a lagging replica falls back
    // to the ordered path, so not necessarily all of them).
    let accepted = common::read_only_accepted(c.gateway_admin(), 3, || {
        rt.block_on(async {
            let client = connect(port).await;
            client.get_data("/").await.expect("a read of /");
        })
    });
    eprintln!("{accepted} reads answered on the read-only path");
    c.assert_running();
}

/// A coordination node loses its whole data directory under ZooKeeper clients' writes and
/// comes back loading on demand (docs/objects.md "Loading on demand", "The coordination
/// service"): it adopts a checkpoint's root and metadata, fetches the buckets of each batch's
/// nodes with proofs, fills the rest in the background; then, with another node down so that
/// its execution replica's replies are needed, every node written before and after the wipe
/// reads back as written, sequential names continue, and an ephemeral still goes with its
/// session.
#[test]
fn coordination_node_wiped_loads_on_demand() {
    const T: Duration = Duration::from_secs(30);
    // Port slot 86: nodes from 29600.
    let mut c = Cluster::init_with("zk-on-demand", 86, &["--app", "coord"]);
    c.set_protocol("checkpoint_interval = 8\nload_objects_on_demand = true");
    c.start_all();
    c.wait_ready(Duration::from_secs(60));
    let port = c.resp_port;
    let rt = runtime();
    let client = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let addr = format!("127.0.0.1:{port}");
            let mut connector = Client::connector();
            connector.session_timeout(Duration::from_secs(20));
            let connect = connector.connect(&addr);
            if let Ok(Ok(client)) = tokio::time::timeout(Duration::from_secs(10), connect).await {
                break client;
            }
            assert!(
                Instant::now() < deadline,
                "the ZooKeeper gateway did not take a session"
            );
        }
    });
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let mut expected: Vec<(String, Vec<u8>)> = Vec::new();
    let write = |from: usize, to: usize, expected: &mut Vec<(String, Vec<u8>)>| {
        rt.block_on(async {
            for i in from..to {
                let path = format!("/d/n-{i}");
                let data = format!("value {i}").into_bytes();
                client
                    .create(&path, &data, &persistent)
                    .await
                    .expect("create");
                expected.push((path, data));
                let (_, seq) = client
                    .create("/q/s-", b"", &sequential)
                    .await
                    .expect("sequential");
                assert_eq!(seq.into_i64(), i as i64, "sequential names count on");
            }
        })
    };
    rt.block_on(async {
        client.create("/d", b"", &persistent).await.unwrap();
        client.create("/q", b"", &persistent).await.unwrap();
    });
    write(0, 60, &mut expected);
    c.wait_stable_checkpoint(0, 16, T);

    c.kill_node(2);
    std::fs::remove_dir_all(c.data_dir(2)).unwrap();
    write(60, 120, &mut expected);
    c.start_node(2);
    c.wait_ready(T);
    // Writes move the stable checkpoint past everything node 2 holds: it must load one.
    let start = Instant::now();
    let mut next = 120;
    while !c
        .metrics(2)
        .unwrap_or_default()
        .contains("load-cp-on-demand")
    {
        assert!(
            start.elapsed() < T,
            "node 2 did not load on demand within {T:?}:\n{}",
            c.metrics_summary(2)
        );
        write(next, next + 10, &mut expected);
        next += 10;
    }
    // Its execution replica loading a checkpoint says nothing of its order replica, which
    // votes again only once a checkpoint above its fence is stable by three *other* replicas'
    // votes: with node 1 down before that, no quorum is left (a lost disk and a crash are two
    // faults against u = 1), which is how this test once stalled in CI.
    c.wait_rejoined(2, T);
    // Node 1 down: every reply now needs node 2's execution replica.
    c.kill_node(1);
    rt.block_on(async {
        let other = Client::connector()
            .session_timeout(Duration::from_secs(20))
            .connect(&format!("127.0.0.1:{port}"))
            .await
            .expect("a second session");
        other
            .create("/d/eph", b"", &ephemeral)
            .await
            .expect("ephemeral");
        for (path, data) in &expected {
            let (got, _) = client.get_data(path).await.expect("a node written before");
            assert_eq!(&got, data, "{path}");
        }
        let children = client.list_children("/d").await.unwrap();
        assert_eq!(children.len(), expected.len() + 1);
        let (_, seq) = client.create("/q/s-", b"", &sequential).await.unwrap();
        assert_eq!(seq.into_i64(), next as i64, "the sequence continues");
        drop(other);
        let deadline = Instant::now() + T;
        while client.check_stat("/d/eph").await.unwrap().is_some() {
            assert!(
                Instant::now() < deadline,
                "the ephemeral outlived its session"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let start = Instant::now();
    while !c
        .metrics(2)
        .unwrap_or_default()
        .contains("on-demand-fill-complete")
    {
        assert!(
            start.elapsed() < T,
            "node 2 did not fill within {T:?}:\n{}",
            c.metrics_summary(2)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "zk-on-demand: {} nodes read back after node 2 loaded on demand\n{}",
        expected.len(),
        c.metrics_summary(2)
            .lines()
            .filter(|l| l.contains("on-demand"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    c.assert_running();
}

async fn rust_crate(port: u16) {
    let addr = format!("127.0.0.1:{port}");
    let client = connect(port).await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let (stat, _) = client
        .create("/rs", b"hello", &persistent)
        .await
        .expect("create");
    assert_eq!(stat.version, 0);
    let (data, stat) = client.get_data("/rs").await.unwrap();
    assert_eq!((data.as_slice(), stat.data_length), (&b"hello"[..], 5));
    assert!(matches!(
        client.create("/rs", b"", &persistent).await,
        Err(zookeeper_client::Error::NodeExists)
    ));
    assert!(matches!(
        client.get_data("/rs/none").await,
        Err(zookeeper_client::Error::NoNode)
    ));
    assert_eq!(client.check_stat("/rs/none").await.unwrap(), None);

    // A one-shot data watch fires for another session's write.
    let other = Client::connector()
        .session_timeout(Duration::from_secs(10))
        .connect(&addr)
        .await
        .unwrap();
    let (_, _, watcher) = client.get_and_watch_data("/rs").await.unwrap();
    other.set_data("/rs", b"bye", None).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), watcher.changed())
        .await
        .expect("the data watch fires");
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(event.path, "/rs");

    // Sequential and ephemeral nodes; an ephemeral goes with its session.
    let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, seq) = other.create("/rs/e-", b"", &ephemeral).await.unwrap();
    let name = format!("e-{seq}");
    assert_eq!(
        client.list_children("/rs").await.unwrap(),
        vec![name.clone()]
    );
    let (children, stat) = client.get_children("/rs").await.unwrap();
    assert_eq!((children.len(), stat.num_children), (1, 1));
    let (_, _, child_watcher) = client.get_and_watch_children("/rs").await.unwrap();
    drop(other);
    let event = tokio::time::timeout(Duration::from_secs(30), child_watcher.changed())
        .await
        .expect("closing the other session deletes its ephemeral node");
    assert_eq!(event.event_type, EventType::NodeChildrenChanged);
    assert!(client.list_children("/rs").await.unwrap().is_empty());

    // A transaction, and a failed one that changes nothing.
    let mut multi = client.new_multi_writer();
    multi.add_create("/rs/m", b"1", &persistent).unwrap();
    multi.add_check_version("/rs", 1).unwrap();
    multi.add_set_data("/rs", b"m", Some(1)).unwrap();
    let results = multi.commit().await.expect("the transaction commits");
    assert!(matches!(&results[0], MultiWriteResult::Create { path, .. } if path == "/rs/m"));
    assert_eq!(results[1], MultiWriteResult::Check);
    let mut multi = client.new_multi_writer();
    multi.add_create("/rs/n", b"", &persistent).unwrap();
    multi.add_delete("/rs/missing", None).unwrap();
    assert!(multi.commit().await.is_err());
    assert_eq!(client.check_stat("/rs/n").await.unwrap(), None);

    // A persistent recursive watch (addWatch), sync, descendant count.
    let mut recursive = client
        .watch("/rs", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    client.create("/rs/m/deep", b"", &persistent).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), recursive.changed())
        .await
        .expect("the recursive watch fires");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeCreated, "/rs/m/deep")
    );
    client.sync("/rs").await.unwrap();
    assert_eq!(client.count_descendants_number("/rs").await.unwrap(), 2);
    client.delete("/rs/m/deep", None).await.unwrap();
    client.delete("/rs/m", None).await.unwrap();
    assert!(matches!(
        client.delete("/rs", Some(7)).await,
        Err(zookeeper_client::Error::BadVersion)
    ));
    client.delete("/rs", None).await.unwrap();
    eprintln!("zookeeper-client crate: passed");
}

/// A raw session on the gateway at `port` (a new one for `session_id` 0): the connection and
/// the gateway's answer to its handshake.
fn raw_session(
    port: u16,
    session_id: i64,
    password: Vec<u8>,
    timeout_ms: i32,
) -> (ZkConn, plumb_zk::ConnectResponse) {
    let mut raw = ZkConn::connect(("127.0.0.1", port), Duration::from_secs(20)).unwrap();
    let hs = raw
        .handshake(session_id, password, timeout_ms)
        .expect("a handshake reply");
    (raw, hs)
}

/// Requests sent back to back in one write are answered in order under their xids; a
/// session whose client went away expires in the agreed timeout, deleting its ephemeral node,
/// and a reconnect to it gets ZooKeeper's expired-session handshake.
fn pipelined_and_expiry(port: u16) {
    use plumb_zk::{encode_request, op, Acl, Request};
    let (mut raw, hs) = raw_session(port, 0, vec![0; 16], 4_000);
    assert_ne!(hs.session_id, 0);
    assert_eq!(hs.timeout_ms, 4_000);
    let acl = vec![Acl {
        perms: 31,
        scheme: "world".into(),
        id: "anyone".into(),
    }];
    let mut batch = Vec::new();
    let create = |path: String, flags| Request::Create {
        op: op::CREATE,
        path,
        data: Vec::new(),
        acl: acl.clone(),
        flags,
        ttl: 0,
    };
    plumb_zk::frame_into(&mut batch, &encode_request(1, &create("/pipe".into(), 0)));
    for i in 0..20 {
        plumb_zk::frame_into(
            &mut batch,
            &encode_request(2 + i, &create(format!("/pipe/n{i}"), 0)),
        );
    }
    plumb_zk::frame_into(
        &mut batch,
        &encode_request(plumb_zk::xid::PING, &Request::Ping),
    );
    plumb_zk::frame_into(
        &mut batch,
        &encode_request(30, &create("/pipe/eph".into(), 1)),
    );
    raw.stream.write_all(&batch).unwrap();
    let mut xids = Vec::new();
    for _ in 0..23 {
        let f = raw.recv().expect("a reply");
        let (h, _) = plumb_zk::decode_reply_header(&f).unwrap();
        assert_eq!(h.err, 0, "reply {h:?}");
        xids.push(h.xid);
    }
    let mut expected: Vec<i32> = (1..=21).collect();
    expected.extend([plumb_zk::xid::PING, 30]);
    assert_eq!(xids, expected, "replies in request order");

    // The client vanishes without closing its session.
    drop(raw);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(40);
    loop {
        let (mut probe, phs) = raw_session(port, 0, vec![0; 16], 10_000);
        probe.send(&encode_request(
            1,
            &Request::Exists {
                path: "/pipe/eph".into(),
                watch: false,
            },
        ));
        let f = probe.recv().unwrap();
        let (h, _) = plumb_zk::decode_reply_header(&f).unwrap();
        probe.send(&encode_request(2, &Request::CloseSession));
        let _ = probe.recv();
        assert_ne!(phs.session_id, 0);
        if h.err == plumb_zk::err::NO_NODE {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the vanished session's ephemeral node is still there after 40 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let (mut again, expired) = raw_session(port, hs.session_id, hs.password.clone(), 4_000);
    assert_eq!(
        (expired.timeout_ms, expired.session_id),
        (0, 0),
        "expired handshake"
    );
    assert!(again.recv().is_none(), "the gateway closes after refusing");
    eprintln!(
        "pipelining and expiry: passed ({:?} to expire)",
        started.elapsed()
    );
}

/// A frame over the limit and a garbage handshake close their connections, counted; the
/// gateway keeps serving.
fn hostile_bytes(port: u16) {
    for bytes in [
        (64u32 << 20).to_be_bytes().to_vec(),
        [0, 0, 0, 3, 1, 2, 3].to_vec(),
        (-7i32).to_be_bytes().to_vec(),
    ] {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&bytes).unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "the gateway closes a connection that sent {bytes:?}");
    }
    // After the handshake too: a frame over the limit ends the session's connection.
    let (mut raw, _) = raw_session(port, 0, vec![0; 16], 10_000);
    raw.stream.write_all(&(2u32 << 20).to_be_bytes()).unwrap();
    assert!(raw.recv().is_none(), "closed after a frame over the limit");
    eprintln!("hostile bytes: connections closed");
}

fn four_letter_words(port: u16) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"ruok").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert_eq!(answer, "imok");
}

/// Debian's zkCli.sh, scripted through its standard input.
fn zkcli(port: u16) {
    let cli = "/usr/share/zookeeper/bin/zkCli.sh";
    if !std::path::Path::new(cli).exists() {
        common::tool_missing(cli, ".ci/run installs Debian's zookeeper");
        return;
    }
    let script = "create /cli first\nget /cli\nset /cli second\nget -s /cli\ncreate /cli/child x\nls /cli\nget -w /cli\nset /cli third\ndelete /cli/child\nls /cli\ndeleteall /cli\nls /\nquit\n";
    let mut child = Command::new(cli)
        .args(["-server", &format!("127.0.0.1:{port}")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("zkCli.sh starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = wait_with_timeout(child, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for expected in [
        "Created /cli",
        "first",
        "second",
        "dataVersion = 1",
        "Created /cli/child",
        "[child]",
        "[]",
        "WatchedEvent state:SyncConnected type:NodeDataChanged path:/cli",
    ] {
        // zkCli writes "Created ..." to stderr, the rest to stdout.
        assert!(
            all.contains(expected),
            "zkCli's output lacks {expected:?}:\n{all}"
        );
    }
    assert!(!all.contains("Node does not exist"), "{all}");
    assert!(!all.contains("KeeperErrorCode"), "{all}");
    eprintln!("zkCli.sh: passed");
}

fn wait_with_timeout(mut child: std::process::Child, timeout: Duration) -> std::process::Output {
    let deadline = Instant::now() + timeout;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "timed out:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A Python with kazoo: `PLUMB_KAZOO_PYTHON`, the venv `.ci/run` makes under target/, or a
/// python3 on the PATH that has it. `.ci/run` sets `PLUMB_KAZOO_PYTHON`, and then one without
/// kazoo fails the test rather than skipping its kazoo part.
fn kazoo_python() -> Option<PathBuf> {
    if let Some(required) = std::env::var_os("PLUMB_KAZOO_PYTHON") {
        let ok = Command::new(&required)
            .args(["-c", "import kazoo"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "PLUMB_KAZOO_PYTHON={required:?} cannot import kazoo");
        return Some(PathBuf::from(required));
    }
    let venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/kazoo-venv/bin/python3");
    let candidates = [venv, PathBuf::from("python3")];
    candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import kazoo"])
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn kazoo(port: u16) {
    let Some(python) = kazoo_python() else {
        common::tool_missing(
            "a python with kazoo",
            ".ci/run installs it in a venv and names it in PLUMB_KAZOO_PYTHON",
        );
        return;
    };
    let script = format!("{}/tests/zk_py/recipes.py", env!("CARGO_MANIFEST_DIR"));
    let child = Command::new(python)
        .arg(&script)
        .arg(port.to_string())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    let out = wait_with_timeout(child, Duration::from_secs(300));
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "kazoo recipes failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
