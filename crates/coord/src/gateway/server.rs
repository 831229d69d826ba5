//! The ZooKeeper front end: unmodified ZooKeeper clients (zkCli, kazoo, the Java and Rust
//! client libraries) speak ZooKeeper's wire protocol to the gateway, which runs each request as
//! one operation of the coordination application through the [`Pool`].
//!
//! Decisions, kept simple:
//! - **Handshake.** A connect request with session 0 opens a session (`OpenSession`); with a
//!   session id it resumes it (`ResumeSession` with the client's password). A refusal is
//!   ZooKeeper's expired-session handshake (timeout 0, session 0), and the connection closes.
//! - **Order.** A connection's requests run one after another, in arrival order (ZooKeeper's
//!   FIFO client order); the client may pipeline them, and they are answered in order, each
//!   under its own xid. Pings are answered in that order too, without the cluster: the gateway
//!   instead sends one `Touch` every [`TOUCH_EVERY`] for all the sessions it serves.
//! - **Watch events** come over the push channel to whichever pool identity last spoke for the
//!   session. Before a reply that says the session had `events` events, the connection writes
//!   every event up to that number, fetching the ones the push channel lost with
//!   `PendingEvents`; each request acknowledges the events delivered so far.
//! - **Expiry.** A session that expires (the application says so in a push, or a `Touch` reply
//!   lists it) has its connection closed, as ZooKeeper's server does; the client's reconnect
//!   then gets the expired-session handshake and its library reports the expiry.
//! - **Hostile input.** A frame over the limit, a negative length or a body that does not
//!   decode closes the connection, counted by reason in [`ZkStats`]; an unknown operation code
//!   is answered with `UNIMPLEMENTED`.
//! - **Reads** that set no watch (exists, getData, getChildren, getACL, multiRead, the
//!   descendant count, and fetching lost events) take the read-only path when the gateway's
//!   `fast_reads` is on (`plumb init --app coord` turns it on), falling back to the ordered path
//!   when it does not answer. That keeps ZooKeeper's promises: the read-only path needs every
//!   execution replica's answer, so a session reads its own writes and never goes back in
//!   time (it is linearizable), and a reply carries the session's event count, so a watch's
//!   event is written before a reply showing the change (docs/coordination.md, "Reads").
//!   With `fast_reads` off every read is ordered.

use super::translate::{plan, render, Plan};
use crate as coord;
use crate::{CoordOp, Push, Reply, SessionId, WatchEvent};
use plumb_gateway::front_end::{accept_loop, ConnectionStats, FrontEnd};
use plumb_gateway::pool::Pool;
use plumb_gateway::push_router::{ListenerId, PushRouter};
use plumb_zk::{
    encode_notification, encode_reply, four_letter_word, frame_into, ConnectRequest,
    ConnectResponse, FrameError, Framer, JuteError, Request, RequestHeader, Response, WatcherEvent,
    DEFAULT_MAX_FRAME,
};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// How often the gateway tells the cluster its sessions are connected: a third of the
/// shortest session timeout the application allows, so no live session expires while its
/// Touches are ordered in time, whatever faulty order replicas do to agreed time
/// (docs/protocol.md, "Agreed time"; `the_touch_interval_leaves_room_for_the_time_bound`).
pub const TOUCH_EVERY: Duration = Duration::from_millis(coord::MIN_SESSION_TIMEOUT_MS as u64 / 3);

/// How long a new connection may take to send its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Requests read ahead of the one running.
const READ_AHEAD: usize = 256;

/// Counters of the ZooKeeper front end.
#[derive(Default)]
pub struct ZkStats {
    pub connections: ConnectionStats,
    pub sessions_opened: AtomicU64,
    pub sessions_resumed: AtomicU64,
    /// Handshakes refused (expired session or wrong password).
    pub handshakes_refused: AtomicU64,
    pub requests: AtomicU64,
    pub submitted: AtomicU64,
    pub events_delivered: AtomicU64,
    /// `PendingEvents` fetches: events the push channel lost.
    pub events_fetched: AtomicU64,
    pub sessions_expired: AtomicU64,
    pub touches: AtomicU64,
    /// Connections closed for a frame over the limit or with a negative length.
    pub bad_frames: AtomicU64,
    /// Connections closed for a handshake or request that did not decode.
    pub malformed: AtomicU64,
    /// Requests with an operation code this front end does not know.
    pub unknown_ops: AtomicU64,
    /// Replies from the cluster that did not decode or did not fit (the connection closes).
    pub bad_replies: AtomicU64,
    /// Four-letter admin words answered.
    pub four_letter_words: AtomicU64,
}

impl ZkStats {
    /// Every counter by name, for the gateway's `/status` and `/metrics`.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
        vec![
            ("connections", get(&self.connections.open)),
            ("connections_total", get(&self.connections.total)),
            ("sessions_opened", get(&self.sessions_opened)),
            ("sessions_resumed", get(&self.sessions_resumed)),
            ("handshakes_refused", get(&self.handshakes_refused)),
            ("requests", get(&self.requests)),
            ("submitted", get(&self.submitted)),
            ("events_delivered", get(&self.events_delivered)),
            ("events_fetched", get(&self.events_fetched)),
            ("sessions_expired", get(&self.sessions_expired)),
            ("touches", get(&self.touches)),
            ("bad_frames", get(&self.bad_frames)),
            ("malformed", get(&self.malformed)),
            ("unknown_ops", get(&self.unknown_ops)),
            ("bad_replies", get(&self.bad_replies)),
            ("four_letter_words", get(&self.four_letter_words)),
            ("accept_failures", get(&self.connections.accept_failures)),
        ]
    }
}

/// What the push channel brings a connection.
#[derive(Clone, Debug)]
enum SessionPush {
    Event(WatchEvent),
    Expired,
}

pub struct ZkServer {
    pub pool: Arc<Pool>,
    pub stats: Arc<ZkStats>,
    /// The largest frame a client may send.
    pub max_frame: usize,
    /// What `srvr`/`stat` report.
    pub version: String,
    /// Reads that set no watch take the read-only path.
    pub fast_reads: bool,
    router: Arc<PushRouter<i64, SessionPush>>,
    /// The sessions of open connections, and how many connections each has.
    live: Mutex<HashMap<i64, usize>>,
    started: Instant,
}

impl FrontEnd for ZkServer {
    const NAME: &'static str = "gateway (ZooKeeper clients)";

    fn connection_stats(&self) -> &ConnectionStats {
        &self.stats.connections
    }

    fn serve_connection(
        &self,
        stream: TcpStream,
        _id: u64,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.connection(stream)
    }
}

impl ZkServer {
    pub fn new(pool: Arc<Pool>, stats: Arc<ZkStats>, fast_reads: bool) -> Arc<ZkServer> {
        Arc::new(ZkServer {
            pool,
            stats,
            max_frame: DEFAULT_MAX_FRAME,
            version: env!("CARGO_PKG_VERSION").to_string(),
            fast_reads,
            router: Arc::default(),
            live: Mutex::new(HashMap::new()),
            started: Instant::now(),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<i64, usize>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serve ZooKeeper clients on `listener` (in a tokio runtime) until the process stops.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        tokio::spawn(self.clone().route_pushes());
        tokio::spawn(self.clone().touch());
        accept_loop(self, listener).await;
    }

    /// Every pool identity's pushes, by session, to the connections of that session.
    async fn route_pushes(self: Arc<Self>) {
        let mut events = self.pool.push_events();
        let ours: Vec<u32> = self.pool.clients.clone();
        while let Some(event) = events.next().await {
            if !ours.contains(&event.client) {
                continue;
            }
            let Ok(push) = Push::decode(&event.payload) else {
                continue;
            };
            for (session, e) in push.events {
                self.router.dispatch(&session.0, &SessionPush::Event(e));
            }
            for session in push.expired {
                self.router.dispatch(&session.0, &SessionPush::Expired);
            }
        }
    }

    /// Keep the sessions of open connections alive; close those the cluster expired.
    async fn touch(self: Arc<Self>) {
        let mut tick = tokio::time::interval(TOUCH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let sessions: Vec<SessionId> = self.live().keys().map(|&s| SessionId(s)).collect();
            if sessions.is_empty() {
                continue;
            }
            self.stats.touches.fetch_add(1, Ordering::Relaxed);
            if let Some(Reply {
                result: Ok(coord::Response::Expired(gone)),
                ..
            }) = self.call(CoordOp::Touch { sessions }).await
            {
                for s in gone {
                    self.router.dispatch(&s.0, &SessionPush::Expired);
                }
            }
        }
    }

    /// Run one operation; `None` if the pool stopped or the reply does not decode.
    async fn call(&self, op: CoordOp) -> Option<Reply> {
        if self.fast_reads {
            if let CoordOp::Session { request, .. } = &op {
                if coord::is_read_only(request) {
                    match self.call_path(&op, true).await {
                        Some(Reply {
                            result: Err(coord::ErrorCode::Unimplemented),
                            ..
                        })
                        | None => {}
                        Some(reply) => return Some(reply),
                    }
                }
            }
        }
        self.call_path(&op, false).await
    }

    async fn call_path(&self, op: &CoordOp, read_only: bool) -> Option<Reply> {
        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
        let bytes = self.pool.call(op.encode(), read_only).await.ok()?;
        match Reply::decode(&bytes) {
            Ok(r) => Some(r),
            Err(_) => {
                self.stats.bad_replies.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    async fn connection(&self, stream: TcpStream) {
        let peer = stream
            .peer_addr()
            .map(|a| a.ip().to_string())
            .unwrap_or_default();
        let (mut rd, mut wr) = stream.into_split();
        let mut framer = Framer::new(self.max_frame);
        let first = tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            self.first_frame(&mut rd, &mut wr, &mut framer),
        )
        .await;
        let Ok(Some(first)) = first else {
            return;
        };
        let Ok(connect) = ConnectRequest::decode(&first) else {
            self.stats.malformed.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let op = if connect.session_id == 0 {
            CoordOp::OpenSession {
                timeout_ms: connect.timeout_ms,
            }
        } else {
            let mut password = [0u8; 16];
            if connect.password.len() == 16 {
                password.copy_from_slice(&connect.password);
            }
            CoordOp::ResumeSession {
                session: SessionId(connect.session_id),
                password,
                timeout_ms: connect.timeout_ms,
            }
        };
        let reply = self.call(op).await;
        let (session, password, timeout_ms, zxid) = match reply {
            Some(Reply {
                zxid,
                result:
                    Ok(coord::Response::Session {
                        session,
                        password,
                        timeout_ms,
                    }),
                ..
            }) => (session, password, timeout_ms, zxid.0),
            Some(_) => {
                // ZooKeeper's answer to an expired session or a wrong password.
                self.stats
                    .handshakes_refused
                    .fetch_add(1, Ordering::Relaxed);
                let mut out = Vec::new();
                frame_into(
                    &mut out,
                    &ConnectResponse {
                        protocol_version: 0,
                        timeout_ms: 0,
                        session_id: 0,
                        password: vec![0; 16],
                        read_only: connect.read_only.map(|_| false),
                    }
                    .encode(),
                );
                let _ = wr.write_all(&out).await;
                let _ = wr.shutdown().await;
                return;
            }
            None => return,
        };
        if connect.session_id == 0 {
            self.stats.sessions_opened.fetch_add(1, Ordering::Relaxed);
        } else {
            self.stats.sessions_resumed.fetch_add(1, Ordering::Relaxed);
        }
        // Listen before answering: an event right after the handshake is not lost.
        let (listener, pushes) = self.router.add_listener();
        self.router.listen(listener, session.0);
        *self.live().entry(session.0).or_insert(0) += 1;
        let mut out = Vec::new();
        frame_into(
            &mut out,
            &ConnectResponse {
                protocol_version: 0,
                timeout_ms,
                session_id: session.0,
                password: password.to_vec(),
                read_only: connect.read_only.map(|_| false),
            }
            .encode(),
        );
        if wr.write_all(&out).await.is_ok() {
            let (tx, rx) = mpsc::channel(READ_AHEAD);
            let reader = tokio::spawn(read_requests(rd, framer, tx, self.stats.clone()));
            let mut conn = Conn {
                server: self,
                session,
                wr,
                out: Vec::new(),
                events: EventQueue::default(),
                zxid,
                peer,
            };
            conn.run(rx, pushes).await;
            reader.abort();
        }
        self.end(listener, session);
    }

    fn end(&self, listener: ListenerId, session: SessionId) {
        self.router.remove_listener(listener);
        let mut live = self.live();
        if let Some(n) = live.get_mut(&session.0) {
            *n -= 1;
            if *n == 0 {
                live.remove(&session.0);
            }
        }
    }

    /// The handshake frame, or `None` (closed, a bad frame, or a four-letter word answered).
    async fn first_frame(
        &self,
        rd: &mut OwnedReadHalf,
        wr: &mut OwnedWriteHalf,
        framer: &mut Framer,
    ) -> Option<Vec<u8>> {
        let mut buf = [0u8; 4096];
        loop {
            if framer.buffered().len() >= 4 {
                if let Some(word) = four_letter_word(framer.buffered()) {
                    self.stats.four_letter_words.fetch_add(1, Ordering::Relaxed);
                    let _ = wr.write_all(self.four_letter_answer(word).as_bytes()).await;
                    let _ = wr.shutdown().await;
                    return None;
                }
                match framer.next_frame() {
                    Ok(Some(f)) => return Some(f),
                    Ok(None) => {}
                    Err(_) => {
                        self.stats.bad_frames.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                }
            }
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => framer.feed(&buf[..n]),
            }
        }
    }

    fn four_letter_answer(&self, word: &str) -> String {
        let s = &self.stats;
        let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
        match word {
            "ruok" => "imok".into(),
            "srvr" | "stat" => format!(
                "Zookeeper version: plumb-{} (the ZooKeeper front end of plumb's coordination application)\nLatency min/avg/max: 0/0/0\nReceived: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: 0x0\nMode: standalone\nNode count: 0\nUptime: {}\n",
                self.version,
                get(&s.requests),
                get(&s.requests),
                get(&s.connections.open),
                self.pool.backlog(),
                self.started.elapsed().as_secs(),
            ),
            "isro" => "rw".into(),
            other => format!("{other} is not supported by plumb's ZooKeeper front end\n"),
        }
    }
}

/// A session's watch events on their way to its client: pushed ones wait here until every
/// earlier one has been written, so the client sees them in the session's order, each once.
#[derive(Debug, Default)]
pub struct EventQueue {
    /// Events written to the client (the session's count of them).
    delivered: u64,
    /// Events received and not yet written, by number.
    waiting: BTreeMap<u64, WatchEvent>,
}

impl EventQueue {
    /// The session's count of events written so far: what requests acknowledge.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// An event from a push or a `PendingEvents` reply; one already written is ignored.
    pub fn insert(&mut self, e: WatchEvent) {
        if e.number > self.delivered {
            self.waiting.insert(e.number, e);
        }
    }

    /// The highest event number received.
    pub fn highest(&self) -> u64 {
        self.waiting
            .keys()
            .next_back()
            .copied()
            .unwrap_or(self.delivered)
    }

    /// The events that may be written now (each the next in order), counted as delivered.
    pub fn ready(&mut self) -> Vec<WatchEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.waiting.remove(&(self.delivered + 1)) {
            self.delivered = e.number;
            out.push(e);
        }
        out
    }

    /// Whether events up to `target` are still missing.
    pub fn missing(&self, target: u64) -> bool {
        self.delivered < target
    }

    /// Give up on the missing events before the next one received (or up to `target`): the
    /// application no longer holds them, as a ZooKeeper client misses what happened while it
    /// was away.
    pub fn skip_missing(&mut self, target: u64) {
        self.delivered = match self.waiting.keys().next() {
            Some(&k) if k <= target => k - 1,
            _ => target.max(self.delivered),
        };
    }
}

/// What the reader hands the connection.
enum Incoming {
    Request(i32, Request),
    /// An operation code this front end does not know: answered `UNIMPLEMENTED`.
    Unknown(i32),
}

/// Read frames and decode requests until the client closes or sends something bad (counted),
/// which closes the channel and so the connection.
async fn read_requests(
    mut rd: OwnedReadHalf,
    mut framer: Framer,
    tx: mpsc::Sender<Incoming>,
    stats: Arc<ZkStats>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        loop {
            let frame = match framer.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(FrameError::TooLarge { .. } | FrameError::Negative(_)) => {
                    stats.bad_frames.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            let incoming = match plumb_zk::decode_request(&frame) {
                Ok((h, r)) => Incoming::Request(h.xid, r),
                Err(JuteError::UnknownOp(_)) => {
                    let Ok(h) = RequestHeader::read(&mut plumb_zk::Reader::new(&frame)) else {
                        return;
                    };
                    stats.unknown_ops.fetch_add(1, Ordering::Relaxed);
                    Incoming::Unknown(h.xid)
                }
                Err(_) => {
                    stats.malformed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            if tx.send(incoming).await.is_err() {
                return;
            }
        }
        match rd.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => framer.feed(&buf[..n]),
        }
    }
}

/// One connection's session after the handshake.
struct Conn<'a> {
    server: &'a ZkServer,
    session: SessionId,
    wr: OwnedWriteHalf,
    out: Vec<u8>,
    events: EventQueue,
    /// The last zxid a reply carried (pings reply with it).
    zxid: i64,
    peer: String,
}

/// Why a connection ends.
struct Closed;

impl Conn<'_> {
    async fn run(
        &mut self,
        mut requests: mpsc::Receiver<Incoming>,
        mut pushes: mpsc::Receiver<SessionPush>,
    ) {
        loop {
            let step = tokio::select! {
                biased;
                push = pushes.recv() => match push {
                    Some(p) => self.pushed(p, &mut pushes).await,
                    None => Err(Closed),
                },
                incoming = requests.recv() => match incoming {
                    Some(i) => self.request(i, &mut pushes).await,
                    None => Err(Closed),
                },
            };
            if step.is_err() || self.flush().await.is_err() {
                let _ = self.wr.shutdown().await;
                return;
            }
        }
    }

    async fn flush(&mut self) -> Result<(), Closed> {
        if !self.out.is_empty() {
            self.wr.write_all(&self.out).await.map_err(|_| Closed)?;
            self.out.clear();
        }
        Ok(())
    }

    /// A push while no request runs: write the events that are next in order; fetch what
    /// the push channel lost if one is missing.
    async fn pushed(
        &mut self,
        push: SessionPush,
        pushes: &mut mpsc::Receiver<SessionPush>,
    ) -> Result<(), Closed> {
        self.take(push)?;
        self.drain(pushes)?;
        let target = self.events.highest();
        self.deliver(target).await
    }

    /// Buffer a pushed event (or end the connection if the session expired).
    fn take(&mut self, push: SessionPush) -> Result<(), Closed> {
        match push {
            SessionPush::Event(e) => {
                self.events.insert(e);
                Ok(())
            }
            SessionPush::Expired => {
                self.server
                    .stats
                    .sessions_expired
                    .fetch_add(1, Ordering::Relaxed);
                Err(Closed)
            }
        }
    }

    fn drain(&mut self, pushes: &mut mpsc::Receiver<SessionPush>) -> Result<(), Closed> {
        while let Ok(p) = pushes.try_recv() {
            self.take(p)?;
        }
        Ok(())
    }

    /// Write every event up to number `target`, in order, fetching the missing ones. Events
    /// the application no longer holds (it keeps a bounded number) are skipped, as a
    /// ZooKeeper client misses what happened while it was away.
    async fn deliver(&mut self, target: u64) -> Result<(), Closed> {
        let mut fetched = false;
        loop {
            for e in self.events.ready() {
                self.write_event(&e);
            }
            if !self.events.missing(target) {
                return Ok(());
            }
            if fetched {
                self.events.skip_missing(target);
                continue;
            }
            fetched = true;
            self.server
                .stats
                .events_fetched
                .fetch_add(1, Ordering::Relaxed);
            let reply = self
                .server
                .call(CoordOp::Session {
                    session: self.session,
                    acked_events: self.events.delivered(),
                    request: coord::Request::PendingEvents,
                })
                .await
                .ok_or(Closed)?;
            match reply.result {
                Ok(coord::Response::Events(events)) => {
                    for e in events {
                        self.events.insert(e);
                    }
                }
                Err(coord::ErrorCode::SessionExpired) => return Err(Closed),
                _ => {}
            }
        }
    }

    fn write_event(&mut self, e: &WatchEvent) {
        self.server
            .stats
            .events_delivered
            .fetch_add(1, Ordering::Relaxed);
        frame_into(
            &mut self.out,
            &encode_notification(&WatcherEvent {
                kind: e.kind as i32,
                state: plumb_zk::state::SYNC_CONNECTED,
                path: e.path.clone(),
            }),
        );
    }

    fn reply(&mut self, xid: i32, err: i32, body: &Response) {
        frame_into(&mut self.out, &encode_reply(xid, self.zxid, err, body));
    }

    async fn request(
        &mut self,
        incoming: Incoming,
        pushes: &mut mpsc::Receiver<SessionPush>,
    ) -> Result<(), Closed> {
        self.server.stats.requests.fetch_add(1, Ordering::Relaxed);
        let (xid, request) = match incoming {
            Incoming::Request(xid, r) => (xid, r),
            Incoming::Unknown(xid) => {
                self.reply(xid, plumb_zk::err::UNIMPLEMENTED, &Response::Empty);
                return Ok(());
            }
        };
        let (request, how) = match plan(request, &self.peer) {
            Plan::Local(body) => {
                self.reply(xid, 0, &body);
                return Ok(());
            }
            Plan::Error(err) => {
                self.reply(xid, err, &Response::Empty);
                return Ok(());
            }
            Plan::Close => {
                let reply = self
                    .server
                    .call(CoordOp::CloseSession {
                        session: self.session,
                    })
                    .await;
                if let Some(r) = &reply {
                    self.zxid = r.zxid.0;
                }
                self.reply(xid, 0, &Response::Empty);
                // The reply goes out, then the connection closes.
                self.flush().await?;
                return Err(Closed);
            }
            Plan::Submit { request, how } => (request, how),
        };
        let reply = self
            .server
            .call(CoordOp::Session {
                session: self.session,
                acked_events: self.events.delivered(),
                request,
            })
            .await
            .ok_or(Closed)?;
        self.zxid = self.zxid.max(reply.zxid.0);
        self.drain(pushes)?;
        self.deliver(reply.events).await?;
        let expired = matches!(reply.result, Err(coord::ErrorCode::SessionExpired));
        let (err, body) = render(&how, reply.result);
        if err == plumb_zk::err::MARSHALLING_ERROR {
            self.server
                .stats
                .bad_replies
                .fetch_add(1, Ordering::Relaxed);
        }
        self.reply(xid, err, &body);
        if expired {
            self.server
                .stats
                .sessions_expired
                .fetch_add(1, Ordering::Relaxed);
            self.flush().await?;
            return Err(Closed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventType, Zxid};

    /// A session survives when `timeout > touch interval + ordering delay + 2X`, X the time
    /// bound (1.5 x the skew). At the largest skew a cluster may have, a Touch still has over
    /// a second to be ordered.
    #[test]
    fn the_touch_interval_leaves_room_for_the_time_bound() {
        let x = Duration::from_micros(plumb_config::MAX_CLOCK_SKEW_US * 3 / 2);
        let min_timeout = Duration::from_millis(coord::MIN_SESSION_TIMEOUT_MS as u64);
        let room = min_timeout - TOUCH_EVERY - 2 * x;
        assert!(
            room >= Duration::from_secs(1),
            "{room:?} left to order a Touch"
        );
    }

    fn event(number: u64) -> WatchEvent {
        WatchEvent {
            number,
            kind: EventType::NodeDataChanged,
            path: format!("/n{number}"),
            zxid: Zxid(number as i64),
        }
    }

    fn numbers(v: Vec<WatchEvent>) -> Vec<u64> {
        v.into_iter().map(|e| e.number).collect()
    }

    #[test]
    fn events_are_written_in_order_each_once() {
        let mut q = EventQueue::default();
        q.insert(event(2));
        assert!(q.ready().is_empty(), "event 1 first");
        assert!(q.missing(2));
        q.insert(event(1));
        q.insert(event(1));
        assert_eq!(numbers(q.ready()), vec![1, 2]);
        q.insert(event(2));
        assert!(q.ready().is_empty(), "already written");
        assert!(!q.missing(2));
        assert_eq!(q.delivered(), 2);
    }

    #[test]
    fn events_the_application_dropped_are_skipped_not_waited_for() {
        let mut q = EventQueue::default();
        // Events 1 and 2 were lost and are gone from the application; 3 and 5 arrived.
        q.insert(event(3));
        q.insert(event(5));
        assert!(q.ready().is_empty());
        q.skip_missing(5);
        assert_eq!(numbers(q.ready()), vec![3]);
        q.skip_missing(5);
        assert_eq!(numbers(q.ready()), vec![5]);
        assert!(!q.missing(5));
        // A reply that counts more events than ever arrived: skip to its count.
        q.skip_missing(9);
        assert_eq!(q.delivered(), 9);
        assert!(q.ready().is_empty());
    }
}
