//! etcd: a Raft cluster of `etcd` servers on loopback, driven over its gRPC KV API.
//!
//! The client is `tonic` with message types written out below rather than the `etcd-client`
//! crate, whose build script needs `protoc`, which a fresh machine lacks. Only the fields this
//! benchmark uses are declared; prost skips the others in replies.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::uri::PathAndQuery;
use tonic::client::Grpc;
use tonic::codec::ProstCodec;
use tonic::transport::{Channel, Endpoint};

use super::{ensure_free, launch, local, nodes, port, wait_for_port, wait_until, Launched};
use crate::target::{BoxFuture, Op, Session, Target};

/// How long a cluster gets to elect a leader and commit a first write.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running etcd cluster. Its servers are stopped when it is dropped.
pub struct Etcd {
    servers: Vec<Launched>,
    /// Client port of each member.
    client_ports: Vec<u16>,
    /// Which member the next session connects to.
    next: AtomicUsize,
}

impl Etcd {
    /// Starts `nodes` members in data directories under `dir`, member `i` serving clients on
    /// `base_port + 2i` and peers on `base_port + 2i + 1`, and waits until the cluster commits a
    /// write. Durability is etcd's default: every commit fsyncs the write-ahead log.
    /// Installs `etcd-server` first if it is missing and we are root.
    pub async fn start(dir: &Path, nodes: usize, base_port: u16) -> Result<Etcd, String> {
        super::ensure_installed(&[("etcd", "etcd-server")])?;
        if nodes == 0 {
            return Err("an etcd cluster needs at least 1 node".into());
        }
        let mut client_ports = Vec::with_capacity(nodes);
        let mut peer_ports = Vec::with_capacity(nodes);
        for i in 0..nodes {
            client_ports.push(port(base_port, 2 * i)?);
            peer_ports.push(port(base_port, 2 * i + 1)?);
        }
        ensure_free(&client_ports)?;
        ensure_free(&peer_ports)?;
        let initial_cluster: Vec<String> = peer_ports
            .iter()
            .enumerate()
            .map(|(i, p)| format!("etcd-{i}=http://127.0.0.1:{p}"))
            .collect();
        let initial_cluster = initial_cluster.join(",");
        let mut servers = Vec::with_capacity(nodes);
        for i in 0..nodes {
            let name = format!("etcd-{i}");
            let data = dir.join(&name);
            // A leftover data dir would make etcd rejoin an old cluster instead of forming one.
            if data.exists() {
                std::fs::remove_dir_all(&data)
                    .map_err(|e| format!("could not clear {}: {e}", data.display()))?;
            }
            let client_url = format!("http://127.0.0.1:{}", client_ports[i]);
            let peer_url = format!("http://127.0.0.1:{}", peer_ports[i]);
            let mut command = Command::new("etcd");
            command
                .arg("--name")
                .arg(&name)
                .arg("--data-dir")
                .arg(&data)
                .args(["--listen-client-urls", &client_url])
                .args(["--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer_url])
                .args(["--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &initial_cluster])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", "plumb-bench"])
                // Every put adds a revision; without compaction a long run fills the 2 GB
                // backend quota and the cluster turns read-only.
                .args(["--auto-compaction-mode", "revision"])
                .args(["--auto-compaction-retention", "10000"])
                .args(["--logger", "zap", "--log-outputs", "stderr"]);
            servers.push(launch(&name, command, dir.join(format!("{name}.log")))?);
        }
        let deadline = Instant::now() + START_TIMEOUT;
        for &p in &client_ports {
            wait_for_port(&mut servers, local(p), deadline).await?;
        }
        let probe_port = client_ports[0];
        wait_until(
            &mut servers,
            "the etcd cluster to commit a write",
            deadline,
            || async move {
                let mut session = EtcdSession::connect(probe_port).await?;
                session
                    .put(b"plumb-bench:probe".to_vec(), b"ok".to_vec())
                    .await
            },
        )
        .await?;
        Ok(Etcd {
            servers,
            client_ports,
            next: AtomicUsize::new(0),
        })
    }
}

impl Target for Etcd {
    fn system(&self) -> &'static str {
        "etcd"
    }

    fn config(&self) -> String {
        nodes(self.servers.len())
    }

    fn server_pids(&self) -> Vec<u32> {
        self.servers.iter().map(|s| s.process.pid()).collect()
    }

    fn session(&self) -> BoxFuture<'_, Result<Box<dyn Session>, String>> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.client_ports.len();
        let port = self.client_ports[i];
        Box::pin(async move {
            let session = EtcdSession::connect(port).await?;
            Ok(Box::new(session) as Box<dyn Session>)
        })
    }
}

/// One HTTP/2 connection to one member.
struct EtcdSession {
    grpc: Grpc<Channel>,
    port: u16,
}

impl EtcdSession {
    async fn connect(port: u16) -> Result<EtcdSession, String> {
        let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .map_err(|e| format!("bad etcd endpoint for port {port}: {e}"))?
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .connect()
            .await
            .map_err(|e| format!("could not connect to etcd on 127.0.0.1:{port}: {e}"))?;
        Ok(EtcdSession {
            grpc: Grpc::new(channel),
            port,
        })
    }

    async fn call<Req, Resp>(&mut self, method: &'static str, request: Req) -> Result<Resp, String>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let port = self.port;
        self.grpc
            .ready()
            .await
            .map_err(|e| format!("etcd on 127.0.0.1:{port} is not reachable: {e}"))?;
        let reply = self
            .grpc
            .unary(
                tonic::Request::new(request),
                PathAndQuery::from_static(method),
                ProstCodec::<Req, Resp>::default(),
            )
            .await
            .map_err(|status| {
                format!(
                    "etcd on 127.0.0.1:{port} failed {method}: {} ({:?})",
                    status.message(),
                    status.code()
                )
            })?;
        Ok(reply.into_inner())
    }

    async fn put(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), String> {
        let _: PutResponse = self
            .call("/etcdserverpb.KV/Put", PutRequest { key, value })
            .await?;
        Ok(())
    }

    /// A linearizable read (`serializable` false): the member confirms with the leader that it
    /// has applied everything committed before answering.
    async fn get_len(&mut self, key: Vec<u8>) -> Result<usize, String> {
        let reply: RangeResponse = self
            .call(
                "/etcdserverpb.KV/Range",
                RangeRequest {
                    key,
                    serializable: false,
                },
            )
            .await?;
        Ok(reply.kvs.first().map_or(0, |kv| kv.value.len()))
    }
}

impl Session for EtcdSession {
    fn run<'a>(&'a mut self, op: &'a Op) -> BoxFuture<'a, Result<usize, String>> {
        Box::pin(async move {
            match op {
                Op::Write { key, value } => {
                    self.put(key.as_bytes().to_vec(), value.clone()).await?;
                    Ok(0)
                }
                Op::Read { key } => self.get_len(key.as_bytes().to_vec()).await,
                Op::Create { .. } | Op::GetData { .. } => Err(op.unsupported("etcd")),
            }
        })
    }
}

// Messages from etcd's `etcdserver/etcdserverpb/rpc.proto` and `mvcc/mvccpb/kv.proto`, with the
// proto field numbers as tags.

/// `etcdserverpb.PutRequest`; lease (3), prev_kv (4), ignore_value (5) and ignore_lease (6) are
/// left at their defaults.
#[derive(Clone, PartialEq, prost::Message)]
struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

/// `etcdserverpb.PutResponse`; its header (1) is not needed.
#[derive(Clone, PartialEq, prost::Message)]
struct PutResponse {}

/// `etcdserverpb.RangeRequest` for a single key; range_end (2), limit (3), revision (4) and the
/// rest are left at their defaults.
#[derive(Clone, PartialEq, prost::Message)]
struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    key: Vec<u8>,
    /// False asks for a linearizable read, true for a possibly stale local one.
    #[prost(bool, tag = "7")]
    serializable: bool,
}

/// `etcdserverpb.RangeResponse`; header (1), more (3) and count (4) are not needed.
#[derive(Clone, PartialEq, prost::Message)]
struct RangeResponse {
    #[prost(message, repeated, tag = "2")]
    kvs: Vec<KeyValue>,
}

/// `mvccpb.KeyValue`; only the value (5) is needed.
#[derive(Clone, PartialEq, prost::Message)]
struct KeyValue {
    #[prost(bytes = "vec", tag = "5")]
    value: Vec<u8>,
}
