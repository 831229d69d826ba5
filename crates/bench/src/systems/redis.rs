//! Redis: one `redis-server` on loopback, driven through the `redis` crate.
//!
//! This is the reference point with no fault tolerance: a single in-memory server with
//! persistence off (no snapshots, no append-only file), so a write is acknowledged once it is in
//! memory and is lost if that one process dies. It shows what serving the same operations costs
//! with no replication, ordering or disk in the way.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

use super::{ensure_free, launch, local, wait_for_port, wait_until, Launched};
use crate::target::{BoxFuture, Op, Session, Target};

const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A running Redis server, stopped when dropped.
pub struct Redis {
    server: Launched,
    client: redis::Client,
}

impl Redis {
    /// Starts `redis-server` on `127.0.0.1:port` with its working directory and log in `dir`,
    /// and waits until it answers PING. Installs `redis-server` first if it is missing and we
    /// are root.
    pub async fn start(dir: &Path, port: u16) -> Result<Redis, String> {
        super::ensure_installed(&[("redis-server", "redis-server")])?;
        ensure_free(&[port])?;
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir);
        let mut servers = [launch("redis", command, dir.join("redis.log"))?];
        let deadline = Instant::now() + START_TIMEOUT;
        wait_for_port(&mut servers, local(port), deadline).await?;
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .map_err(|e| format!("bad Redis address for port {port}: {e}"))?;
        wait_until(&mut servers, "Redis to answer PING", deadline, || async {
            let mut connection = connect(&client).await?;
            redis::cmd("PING")
                .query_async::<String>(&mut connection)
                .await
                .map(drop)
                .map_err(|e| format!("PING failed: {e}"))
        })
        .await?;
        let [server] = servers;
        Ok(Redis { server, client })
    }
}

async fn connect(client: &redis::Client) -> Result<MultiplexedConnection, String> {
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| {
            format!(
                "could not connect to Redis at {}: {e}",
                client.get_connection_info().addr
            )
        })
}

impl Target for Redis {
    fn system(&self) -> &'static str {
        "redis"
    }

    fn config(&self) -> String {
        "1 node".into()
    }

    fn server_pids(&self) -> Vec<u32> {
        vec![self.server.process.pid()]
    }

    fn session(&self) -> BoxFuture<'_, Result<Box<dyn Session>, String>> {
        Box::pin(async move {
            let connection = connect(&self.client).await?;
            Ok(Box::new(RedisSession { connection }) as Box<dyn Session>)
        })
    }
}

/// One connection; the session runs one command at a time on it.
struct RedisSession {
    connection: MultiplexedConnection,
}

impl Session for RedisSession {
    fn run<'a>(&'a mut self, op: &'a Op) -> BoxFuture<'a, Result<usize, String>> {
        Box::pin(async move {
            match op {
                Op::Write { key, value } => redis::cmd("SET")
                    .arg(key)
                    .arg(value.as_slice())
                    .query_async::<()>(&mut self.connection)
                    .await
                    .map(|()| 0)
                    .map_err(|e| format!("Redis SET {key} failed: {e}")),
                Op::Read { key } => redis::cmd("GET")
                    .arg(key)
                    .query_async::<Option<Vec<u8>>>(&mut self.connection)
                    .await
                    .map(|value| value.map_or(0, |v| v.len()))
                    .map_err(|e| format!("Redis GET {key} failed: {e}")),
                Op::Create { .. } | Op::GetData { .. } => Err(op.unsupported("redis")),
            }
        })
    }
}
