//! The Redis front end: unmodified Redis clients (redis-cli, redis-benchmark, client
//! libraries) talk RESP2 to the gateway, which turns each command into one key-value
//! operation and runs it through the replicated store via the [`Pool`].
//!
//! A connection's commands run one after another in arrival order (so a client sees its own
//! writes in order); pipelined commands are read together and their replies written together.
//! Writes, and reads unless the fast read path is on, go through the ordered path and are
//! linearizable.

use crate::pool::Pool;
use plumb_kv::KvResult;
use plumb_resp::{encode, plan, render, Limits, Parser, Plan, Resp, ServerInfo};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
pub struct GatewayStats {
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub commands: AtomicU64,
    pub submitted: AtomicU64,
    pub protocol_errors: AtomicU64,
    /// Failed `accept`s (out of file descriptors, typically), each followed by a pause.
    pub accept_failures: AtomicU64,
}

pub struct RespServer {
    pub pool: Arc<Pool>,
    pub fast_reads: bool,
    pub info: ServerInfo,
    pub stats: Arc<GatewayStats>,
    pub started: Instant,
}

impl RespServer {
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        let next_id = AtomicU64::new(1);
        loop {
            let stream = plumb_runtime::accept::accept(
                &listener,
                &self.stats.accept_failures,
                "gateway (Redis clients)",
            )
            .await;
            let _ = stream.set_nodelay(true);
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let server = self.clone();
            tokio::spawn(async move {
                server
                    .stats
                    .connections_open
                    .fetch_add(1, Ordering::Relaxed);
                server
                    .stats
                    .connections_total
                    .fetch_add(1, Ordering::Relaxed);
                server.connection(stream, id).await;
                server
                    .stats
                    .connections_open
                    .fetch_sub(1, Ordering::Relaxed);
            });
        }
    }

    async fn connection(&self, mut stream: TcpStream, id: u64) {
        let mut parser = Parser::new(Limits::default());
        let mut name: Option<Vec<u8>> = None;
        let mut buf = vec![0u8; 16 * 1024];
        let mut out = Vec::with_capacity(16 * 1024);
        loop {
            let n = match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            parser.feed(&buf[..n]);
            let mut close = false;
            loop {
                let args = match parser.next_command() {
                    Ok(Some(args)) => args,
                    Ok(None) => break,
                    Err(e) => {
                        self.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                        encode(&e.to_resp(), &mut out);
                        close = true;
                        break;
                    }
                };
                self.stats.commands.fetch_add(1, Ordering::Relaxed);
                let info = self.info_for(id, &name);
                match plan(&args, &info) {
                    Plan::Reply(r) => encode(&r, &mut out),
                    Plan::Close(r) => {
                        encode(&r, &mut out);
                        close = true;
                        break;
                    }
                    Plan::SetName { name: n, reply } => {
                        name = n;
                        encode(&reply, &mut out);
                    }
                    Plan::Submit {
                        op,
                        read_only,
                        render: how,
                    } => {
                        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
                        let reply = match self
                            .pool
                            .call(op.encode(), read_only && self.fast_reads)
                            .await
                        {
                            Ok(bytes) => match KvResult::decode(&bytes) {
                                Ok(result) => render(&how, result),
                                Err(e) => Resp::error(format!(
                                    "ERR the cluster's answer does not decode: {e}"
                                )),
                            },
                            Err(e) => Resp::error(format!("ERR {e}")),
                        };
                        encode(&reply, &mut out);
                    }
                }
            }
            if !out.is_empty() {
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                out.clear();
            }
            if close {
                let _ = stream.shutdown().await;
                return;
            }
        }
    }

    fn info_for(&self, id: u64, name: &Option<Vec<u8>>) -> ServerInfo {
        ServerInfo {
            uptime_secs: self.started.elapsed().as_secs(),
            connected_clients: self.stats.connections_open.load(Ordering::Relaxed),
            client_id: id,
            client_name: name.clone(),
            plumb_fields: vec![
                ("pool_clients".into(), self.pool.clients.len().to_string()),
                ("pool_backlog".into(), self.pool.backlog().to_string()),
                ("fast_reads".into(), (self.fast_reads as u8).to_string()),
            ],
            ..self.info.clone()
        }
    }
}
