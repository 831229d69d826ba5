//! The Redis front end: unmodified Redis clients (redis-cli, redis-benchmark, client
//! libraries) talk RESP2, or RESP3 after `HELLO 3`, to the gateway, which turns each command into one key-value
//! operation and runs it through the replicated store via the [`Pool`].
//!
//! A connection's commands run in arrival order (so a client sees its own writes in order).
//! Commands that arrive together (a pipeline) go to the cluster together, as one request that
//! runs them in order, and their replies go back together; a transaction (`MULTI` ... `EXEC`)
//! goes as one request that runs atomically.
//! Writes, and reads unless the fast read path is on, go through the ordered path and are
//! linearizable.

use super::blocking::{Waiters, FIRST_ATTEMPT_AGE, POLL_FIRST, POLL_MAX};
use super::clients::{Clients, Registration, Unblock};
use super::pubsub::{PubSubHub, Subscriber};
use crate::ScriptCache;
use plumb_gateway::arrival::{self, Arrival};
use plumb_gateway::front_end::{accept_loop, ConnectionStats, FrontEnd};
use plumb_gateway::pool::Pool;
use plumb_gateway::sketching::SketchedReads;
use plumb_kv::{Footprint, KvOp, KvResult, ERR_WRONG_TYPE};
use plumb_resp::pubsub::{is_reset, subscribed_mode_refusal, subscribed_ping};
use plumb_resp::{
    each, encode_as, exec_reply, keyspace_section, plan, render, ClientAdmin, Limits, Parser,
    Pipeline, Plan, Protocol, Render, Resp, ServerInfo, Session, Step, ERR_UNBLOCKED,
};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
pub struct GatewayStats {
    pub connections: ConnectionStats,
    pub commands: AtomicU64,
    pub submitted: AtomicU64,
    pub protocol_errors: AtomicU64,
    /// Keys the gateway's periodic `PurgeExpired` removed (expiry.rs), and purges that failed.
    pub expired_purged: AtomicU64,
    pub purge_failures: AtomicU64,
}

pub struct RespServer {
    pub pool: Arc<Pool>,
    /// Callers blocked in `BLPOP` and the like.
    pub waiters: Waiters,
    pub fast_reads: bool,
    /// Prophecy: reads go through these sketchers (docs/prophecy.md); before `fast_reads`.
    pub sketcher: Option<Arc<SketchedReads>>,
    pub info: ServerInfo,
    pub stats: Arc<GatewayStats>,
    pub started: Instant,
    /// Pub/sub: the connections' subscriptions and the messages pushed to them.
    pub pubsub: Arc<PubSubHub>,
    /// Scripts by sha1, for `EVALSHA` and `SCRIPT`: this gateway's, shared by its
    /// connections, never the cluster's (an `EVALSHA` goes out as the `EVAL` of its body).
    pub scripts: Mutex<ScriptCache>,
    /// Every open connection, for `CLIENT LIST`, `KILL` and `UNBLOCK`.
    pub clients: Arc<Clients>,
}

/// The next pub/sub message for a connection; never, if it never subscribed.
async fn next_message(subscriber: &mut Option<Subscriber>) -> Option<Resp> {
    match subscriber {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

impl FrontEnd for RespServer {
    const NAME: &'static str = "gateway (Redis clients)";

    fn connection_stats(&self) -> &ConnectionStats {
        &self.stats.connections
    }

    fn serve_connection(&self, stream: TcpStream, id: u64) -> impl Future<Output = ()> + Send + '_ {
        self.connection(stream, id)
    }
}

impl RespServer {
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        self.pubsub.start();
        accept_loop(self, listener).await;
    }

    async fn connection(&self, mut stream: TcpStream, id: u64) {
        let reg = self
            .clients
            .register(id, stream.peer_addr().ok(), stream.local_addr().ok());
        // Blocked callers are served in the order their commands reached this machine
        // (`blocking`); without the kernel's stamps, in the order they were read.
        let _ = arrival::stamp_arrivals(&stream);
        let mut parser = Parser::new(Limits::default());
        let mut name: Option<Vec<u8>> = None;
        let mut session = Session::default();
        let mut pipeline = Pipeline::default();
        let mut buf = vec![0u8; 64 * 1024];
        let mut out = Vec::with_capacity(16 * 1024);
        // Made at the first SUBSCRIBE; dropped with the connection, which unsubscribes it.
        let mut subscriber: Option<Subscriber> = None;
        // RESP2 until `HELLO 3`. Every reply is encoded in the protocol in force when it was
        // made: a switch first sends the replies gathered before it.
        let mut protocol = Protocol::Resp2;
        loop {
            let (n, mut arrived) = tokio::select! {
                read = arrival::read(&stream, &mut buf) => match read {
                    Ok((0, _)) | Err(_) => return,
                    Ok(read) => read,
                },
                // `CLIENT KILL` from another connection (or this one: its reply went out).
                _ = reg.killed() => return,
                Some(frame) = next_message(&mut subscriber) => {
                    encode_as(&frame, protocol, &mut out);
                    if stream.write_all(&out).await.is_err() {
                        return;
                    }
                    out.clear();
                    continue;
                }
            };
            parser.feed(&buf[..n]);
            let mut close = false;
            // Every command read so far is planned before any goes out: commands for the
            // cluster gather in `pipeline` and go as one request, their replies (and local
            // ones between them) in order.
            loop {
                let args = match parser.next_command() {
                    Ok(Some(args)) => args,
                    Ok(None) => break,
                    Err(e) => {
                        self.stats.protocol_errors.fetch_add(1, Ordering::Relaxed);
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        encode_as(&e.to_resp(), protocol, &mut out);
                        close = true;
                        break;
                    }
                };
                self.stats.commands.fetch_add(1, Ordering::Relaxed);
                reg.command(&args, session.queued());
                if is_reset(&args) {
                    // `RESET`: out of subscribed mode and any transaction, no name, RESP2.
                    self.flush(&mut pipeline, &mut out, protocol).await;
                    if let Some(s) = subscriber.as_mut() {
                        s.unsubscribe(false, Vec::new()).await;
                        s.unsubscribe(true, Vec::new()).await;
                    }
                    if let Some(s) = subscriber.as_ref() {
                        reg.set_subscriptions(s.channels(), s.patterns());
                    }
                    session = Session::default();
                    name = None;
                    reg.set_name(None);
                    protocol = Protocol::Resp2;
                    reg.set_protocol(2);
                    pipeline.local(Resp::Simple("RESET".into()));
                    continue;
                }
                if protocol == Protocol::Resp2 && subscriber.as_ref().is_some_and(|s| s.count() > 0)
                {
                    // Subscribed mode in RESP2: Redis' few commands only (in RESP3 any).
                    if let Some(refusal) = subscribed_mode_refusal(&args) {
                        pipeline.local(refusal);
                        continue;
                    }
                    if args
                        .first()
                        .is_some_and(|c| c.eq_ignore_ascii_case(b"ping"))
                    {
                        pipeline.local(subscribed_ping(&args));
                        continue;
                    }
                }
                let mut info = self.info_for(id, &name, protocol);
                if args
                    .first()
                    .is_some_and(|c| c.eq_ignore_ascii_case(b"info"))
                {
                    process_stats(&mut info);
                }
                let planned = self
                    .scripts
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .resolve(plan(&args, &info));
                match session.step(planned) {
                    Step::Plan(Plan::Submit {
                        op,
                        read_only,
                        render: how,
                    }) => {
                        let op = op.encode();
                        if !pipeline.has_room_for(op.len()) {
                            self.flush(&mut pipeline, &mut out, protocol).await;
                        }
                        pipeline.submit(op, read_only, how);
                    }
                    Step::Plan(Plan::SetName { name: n, reply }) => {
                        reg.set_name(n.as_deref());
                        name = n;
                        pipeline.local(reply);
                    }
                    Step::Plan(Plan::Hello {
                        protocol: p,
                        name: n,
                        reply,
                    }) => {
                        if p != protocol {
                            self.flush(&mut pipeline, &mut out, protocol).await;
                            protocol = p;
                            reg.set_protocol(if p == Protocol::Resp3 { 3 } else { 2 });
                        }
                        if let Some(n) = n {
                            reg.set_name(n.as_deref());
                            name = n;
                        }
                        pipeline.local(reply);
                    }
                    Step::Plan(Plan::Block {
                        op,
                        render: how,
                        timeout,
                    }) => {
                        // The replies before it go out now: the caller may wait long.
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        if !out.is_empty() {
                            if stream.write_all(&out).await.is_err() {
                                return;
                            }
                            out.clear();
                        }
                        let Some(reply) = self
                            .block(
                                op,
                                how,
                                timeout,
                                &mut stream,
                                &mut parser,
                                &mut arrived,
                                &reg,
                            )
                            .await
                        else {
                            // The caller left while it waited: it takes nothing.
                            return;
                        };
                        encode_as(&reply, protocol, &mut out);
                    }
                    Step::Plan(Plan::Close(r)) => {
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        encode_as(&r, protocol, &mut out);
                        close = true;
                        break;
                    }
                    Step::Plan(Plan::Info { text, keyspace }) => {
                        let text = if keyspace {
                            self.flush(&mut pipeline, &mut out, protocol).await;
                            let stats = self.call(KvOp::KeyspaceStats.encode(), true).await;
                            keyspace_section(&text, &stats)
                        } else {
                            text
                        };
                        pipeline.local(Resp::Verbatim("txt", text));
                    }
                    Step::Plan(Plan::Subscribe { patterns, names }) => {
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        let s = subscriber.get_or_insert_with(|| Subscriber::new(&self.pubsub));
                        for reply in s.subscribe(patterns, names).await {
                            encode_as(&reply, protocol, &mut out);
                        }
                        reg.set_subscriptions(s.channels(), s.patterns());
                    }
                    Step::Plan(Plan::Unsubscribe { patterns, names }) => {
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        let s = subscriber.get_or_insert_with(|| Subscriber::new(&self.pubsub));
                        for reply in s.unsubscribe(patterns, names).await {
                            encode_as(&reply, protocol, &mut out);
                        }
                        reg.set_subscriptions(s.channels(), s.patterns());
                    }
                    Step::Plan(Plan::Client(admin)) => pipeline.local(self.client_admin(id, admin)),
                    // The session answers every other plan itself.
                    Step::Plan(Plan::Reply(r) | Plan::Reject(r)) => pipeline.local(r),
                    Step::Plan(_) => pipeline.local(Resp::error("ERR internal: unplanned command")),
                    Step::Watch { op, keys } => {
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        let result = self.call(op.encode(), true).await;
                        encode_as(&session.watched(keys, result), protocol, &mut out);
                    }
                    Step::Exec {
                        op,
                        read_only,
                        slots,
                    } => {
                        self.flush(&mut pipeline, &mut out, protocol).await;
                        let result = self.call(op.encode(), read_only).await;
                        encode_as(&exec_reply(&slots, result), protocol, &mut out);
                    }
                }
            }
            self.flush(&mut pipeline, &mut out, protocol).await;
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

    /// Send the pipeline's ops (one request, or several if the cluster ran only part of one)
    /// and encode every reply it holds, in order.
    async fn flush(&self, pipeline: &mut Pipeline, out: &mut Vec<u8>, protocol: Protocol) {
        if pipeline.is_empty() {
            return;
        }
        let ops = pipeline.ops().len();
        let read_only = pipeline.read_only();
        let mut results = Vec::with_capacity(ops);
        let mut failure = Resp::error("ERR the pipelined command did not run");
        while results.len() < ops {
            let from = results.len();
            match self.call(pipeline.request(from), read_only).await {
                KvResult::Each(mut ran) if ops - from > 1 && !ran.is_empty() => {
                    ran.truncate(ops - from);
                    results.extend(each(ran));
                }
                KvResult::Error(text) if ops - from > 1 => {
                    // The request itself failed: every command in it gets the error.
                    failure = Resp::Error(text);
                    break;
                }
                one if ops - from == 1 => results.push(one),
                _ => {
                    failure =
                        Resp::error("ERR the cluster's answer to a pipeline has the wrong shape");
                    break;
                }
            }
        }
        for reply in pipeline.finish(results, &failure) {
            encode_as(&reply, protocol, out);
        }
    }

    /// `CLIENT LIST`, `INFO`, `KILL` or `UNBLOCK`, asked by connection `me`.
    fn client_admin(&self, me: u64, admin: ClientAdmin) -> Resp {
        match admin {
            ClientAdmin::List(filter) => {
                Resp::Verbatim("txt", self.clients.list(&filter).into_bytes())
            }
            ClientAdmin::Info => Resp::Verbatim("txt", self.clients.info(me).into_bytes()),
            ClientAdmin::Kill { filter, old_form } => {
                let killed = self.clients.kill(me, &filter);
                match (old_form, killed) {
                    (true, 0) => Resp::error("ERR No such client"),
                    (true, _) => Resp::ok(),
                    (false, n) => Resp::Integer(i64::try_from(n).unwrap_or(i64::MAX)),
                }
            }
            ClientAdmin::Unblock { id, error } => {
                let how = if error {
                    Unblock::Error
                } else {
                    Unblock::Timeout
                };
                Resp::Integer(i64::from(self.clients.unblock(id, how)))
            }
        }
    }

    /// Run one request through the pool: its result, or an error result saying why not. A
    /// write wakes the callers blocked on the keys it touches.
    async fn call(&self, op: Vec<u8>, read_only: bool) -> KvResult {
        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
        // Only a copy when someone waits (one who starts waiting meanwhile has its poll).
        let written =
            (!read_only && self.waiters.blocked.load(Ordering::Relaxed) > 0).then(|| op.clone());
        let answer = match &self.sketcher {
            Some(sketcher) if read_only => sketcher.read(op).await,
            _ => self.pool.call(op, read_only && self.fast_reads).await,
        };
        let result = match answer {
            Ok(bytes) => KvResult::decode(&bytes).unwrap_or_else(|e| {
                KvResult::Error(format!("ERR the cluster's answer does not decode: {e}"))
            }),
            Err(e) => KvResult::Error(format!("ERR {e}")),
        };
        if let Some(op) = written {
            self.waiters.wake_for(&op);
        }
        result
    }

    /// A blocking command: try `op`; while it finds nothing, wait for a write through this
    /// gateway to one of its keys (or the next poll) and try again, until `timeout`. No pool
    /// client is held while waiting. The connection is watched meanwhile: `None` if the caller
    /// closed it (as Redis does, it then stops waiting, so a departed consumer takes no
    /// element); bytes it sends go to `parser`, to run once this command is answered.
    /// `arrived`: when the command reached this machine; then, of the bytes read meanwhile.
    #[allow(clippy::too_many_arguments)]
    async fn block(
        &self,
        op: KvOp,
        how: Render,
        timeout: Option<Duration>,
        stream: &mut TcpStream,
        parser: &mut Parser,
        arrived: &mut Arrival,
        reg: &Registration,
    ) -> Option<Resp> {
        let blocked = reg.blocking();
        let deadline = timeout.map(|t| Instant::now() + t);
        // The keys whose writes may give it something: a move waits on its source only, the
        // pops (BLPOP, BLMPOP, BZPOPMIN, BZMPOP) on every key they name. A key left out here
        // would be served by polls alone, and not oldest first.
        let keys: Vec<Vec<u8>> = match &op {
            KvOp::Move { from, .. } => vec![from.clone()],
            other => match other.footprint() {
                Footprint::Keys(keys) => keys.into_iter().map(<[u8]>::to_vec).collect(),
                Footprint::Prefix(_) => Vec::new(),
            },
        };
        let mut waiter = self.waiters.register(&keys, *arrived);
        let age = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(*arrived);
        if age < FIRST_ATTEMPT_AGE {
            tokio::time::sleep(FIRST_ATTEMPT_AGE - age).await;
        }
        let waits_on_kind = !matches!(op, KvOp::Move { .. });
        let mut tried = false;
        let encoded = op.encode();
        let mut poll = POLL_FIRST;
        let mut buf = [0u8; 4096];
        loop {
            // Behind an earlier caller on every key: its turn comes when that one is served,
            // leaves or finds nothing (it then waits at the front, and a write wakes it).
            let result = if self.waiters.is_front(&waiter) {
                let result = self.call(encoded.clone(), false).await;
                let tried_before = std::mem::replace(&mut tried, true);
                // A key that became something else than a list (or sorted set) while the
                // caller waited does not wake it, as in Redis: only its first attempt answers
                // WRONGTYPE. (A move's destination of the wrong kind does answer it.)
                match result {
                    KvResult::Error(e) if tried_before && waits_on_kind && e == ERR_WRONG_TYPE => {
                        KvResult::Nil
                    }
                    result => result,
                }
            } else {
                KvResult::Nil
            };
            if !matches!(result, KvResult::Nil | KvResult::Value(None)) {
                drop(waiter);
                // The list may hold more: the next waiter in line tries too.
                let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                self.waiters.wake(&keys);
                return Some(render(&how, result));
            }
            let mut wait = poll;
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    // Redis' reply to every blocking command that timed out.
                    return Some(Resp::Array(None));
                }
                wait = wait.min(left);
            }
            waiter.waiting();
            tokio::select! {
                _ = waiter.notify.notified() => {}
                _ = tokio::time::sleep(wait) => poll = (poll * 2).min(POLL_MAX),
                how = blocked.unblocked() => return Some(match how {
                    Unblock::Timeout => Resp::Array(None),
                    Unblock::Error => Resp::error(ERR_UNBLOCKED),
                }),
                _ = reg.killed() => return None,
                read = arrival::read(stream, &mut buf) => match read {
                    Ok((0, _)) | Err(_) => return None,
                    Ok((n, at)) => {
                        *arrived = at;
                        parser.feed(&buf[..n]);
                    }
                },
            }
        }
    }

    fn info_for(&self, id: u64, name: &Option<Vec<u8>>, protocol: Protocol) -> ServerInfo {
        ServerInfo {
            uptime_secs: self.started.elapsed().as_secs(),
            connected_clients: self.stats.connections.open.load(Ordering::Relaxed),
            client_id: id,
            client_name: name.clone(),
            protocol,
            blocked_clients: self.waiters.waiting.load(Ordering::Relaxed),
            total_connections: self.stats.connections.total.load(Ordering::Relaxed),
            total_commands: self.stats.commands.load(Ordering::Relaxed),
            now_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            plumb_fields: vec![
                ("pool_clients".into(), self.pool.clients.len().to_string()),
                ("pool_backlog".into(), self.pool.backlog().to_string()),
                ("fast_reads".into(), (self.fast_reads as u8).to_string()),
                (
                    "sketchers".into(),
                    self.sketcher
                        .as_ref()
                        .map_or(0, |s| s.sketchers())
                        .to_string(),
                ),
            ],
            ..self.info.clone()
        }
    }
}

/// The gateway process's resident memory and CPU time, from `/proc` (zero where unreadable).
fn process_stats(info: &mut ServerInfo) {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        info.memory_rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the command name (which may hold spaces, so split after its ')'):
        // utime and stime are the 12th and 13th, in clock ticks of 1/100 s on Linux.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        info.cpu_user_us = ticks(11) * 10_000;
        info.cpu_sys_us = ticks(12) * 10_000;
    }
}
