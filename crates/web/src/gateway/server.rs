//! The HTTP/1.1 front end of the replicated web application: browsers, curl and
//! wrk speak HTTP to the gateway, which runs each request as one operation of the
//! application through the [`Pool`].
//!
//! Decisions, kept simple:
//! - **Parsing** uses the `httparse` crate: a small, widely used, fuzzed, zero-copy parser of
//!   request heads that leaves framing (bodies, keep-alive, pipelining) to us. hyper would
//!   bring a second connection model and many dependencies for the little this front end
//!   serves. Bodies need `Content-Length`; a `Transfer-Encoding` (chunked) body is refused
//!   with `411`, which also rules out request smuggling through conflicting framing.
//! - **Keep-alive and pipelining.** A connection's requests are answered one after another,
//!   in arrival order: bytes read beyond one request are the start of the next one. HTTP/1.1
//!   connections stay open unless the client sends `Connection: close`; HTTP/1.0 ones only
//!   with `Connection: keep-alive`.
//! - **Limits** ([`HttpLimits`]): a request head over the limit is `431`, a body over the
//!   limit `413` (before it is read: `Expect: 100-continue` gets the refusal instead of the
//!   go-ahead), and a head that stalls is `408`; each of these closes the connection. Idle
//!   keep-alive connections are closed after a while.
//! - **Headers.** The application answers without volatile headers; this front end adds
//!   `Date`, `Content-Length`, `Server`, and `Connection: close` when it closes. `HEAD` is the
//!   `GET` without its body. `If-None-Match` is answered here, `304`, from the application's
//!   ETag, so the application's answer depends only on the URL (what a sketcher keys on).
//! - **Reads** (`GET`, `HEAD`) all go through [`HttpServer::read`], the one place the
//!   Prophecy sketcher (DESIGN §5.1, issue 15) will sit. **Writes** (`POST`) are ordered.

use crate::date::format_http_date;
use crate::wiki::error_page;
use crate::{WebOp, WebResponse};
use plumb_gateway::front_end::{accept_loop, ConnectionStats, FrontEnd};
use plumb_gateway::pool::{Pool, PoolError};
use plumb_gateway::sketching::SketchedReads;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long, and for how many bytes, a refused connection is read from before it closes.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;

/// What a client may send and how long it may take.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// The largest request head (request line and headers), in bytes.
    pub max_head_bytes: usize,
    /// The most header fields in one request.
    pub max_headers: usize,
    /// The largest request body, in bytes: the application's own limit on a form.
    pub max_body_bytes: usize,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How long a started request (head and body) may take to arrive.
    pub request_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_head_bytes: 16 * 1024,
            max_headers: 64,
            max_body_bytes: crate::MAX_FORM_BYTES,
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// Counters of the HTTP front end.
#[derive(Default)]
pub struct HttpStats {
    pub connections: ConnectionStats,
    /// Requests answered (including the refused ones).
    pub requests: AtomicU64,
    /// Responses by status class: 1xx (not counting `100 Continue`), 2xx, 3xx, 4xx, 5xx.
    pub responses_by_class: [AtomicU64; 5],
    /// Bytes read from clients and written to them.
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// GETs and HEADs sent through [`HttpServer::read`].
    pub reads: AtomicU64,
    /// POSTs sent through the ordered path.
    pub writes: AtomicU64,
    /// `304 Not Modified` answers.
    pub not_modified: AtomicU64,
    /// Requests refused for their framing: malformed, over a limit, too slow.
    pub bad_requests: AtomicU64,
    /// Calls the cluster did not answer (`503`), or answered with bytes that do not decode
    /// (`502`).
    pub unanswered: AtomicU64,
    pub bad_replies: AtomicU64,
}

impl HttpStats {
    /// Every counter by name, for the gateway's `/status` and `/metrics`.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let get = |x: &AtomicU64| x.load(Ordering::Relaxed);
        let class = |i: usize| get(&self.responses_by_class[i]);
        vec![
            ("connections", get(&self.connections.open)),
            ("connections_total", get(&self.connections.total)),
            ("requests", get(&self.requests)),
            ("responses_1xx", class(0)),
            ("responses_2xx", class(1)),
            ("responses_3xx", class(2)),
            ("responses_4xx", class(3)),
            ("responses_5xx", class(4)),
            ("bytes_in", get(&self.bytes_in)),
            ("bytes_out", get(&self.bytes_out)),
            ("reads", get(&self.reads)),
            ("writes", get(&self.writes)),
            ("not_modified", get(&self.not_modified)),
            ("bad_requests", get(&self.bad_requests)),
            ("unanswered", get(&self.unanswered)),
            ("bad_replies", get(&self.bad_replies)),
            ("accept_failures", get(&self.connections.accept_failures)),
        ]
    }
}

/// A parsed request head: what this front end honours of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    pub method: String,
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    pub content_length: usize,
    pub content_type: Option<String>,
    pub if_none_match: Option<String>,
    /// The client sent `Expect: 100-continue` and waits for the go-ahead.
    pub expect_continue: bool,
    /// The connection closes after this request (`Connection: close`, or HTTP/1.0 without
    /// `keep-alive`).
    pub close: bool,
}

/// A request refused for its framing: the status and what was wrong. The connection closes
/// after the answer, since where the next request starts is unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub why: String,
}

/// What the bytes received so far hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request head yet (and under the limit).
    Partial,
    /// A request head, and how many bytes it took.
    Head(RequestHead, usize),
    Refused(Refusal),
}

fn refuse(status: u16, why: impl Into<String>) -> Parsed {
    Parsed::Refused(Refusal {
        status,
        why: why.into(),
    })
}

/// Parse the request head at the start of `buf` (the whole pure part of the front end, so
/// hostile input can be tested without a cluster).
pub fn parse_head(buf: &[u8], limits: &HttpLimits) -> Parsed {
    let mut headers = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(buf) {
        Ok(httparse::Status::Partial) => {
            if buf.len() > limits.max_head_bytes {
                return refuse(
                    431,
                    format!("The request head is over {} bytes.", limits.max_head_bytes),
                );
            }
            return Parsed::Partial;
        }
        Ok(httparse::Status::Complete(n)) => n,
        Err(httparse::Error::TooManyHeaders) => {
            return refuse(
                431,
                format!(
                    "The request has more than {} header fields.",
                    limits.max_headers
                ),
            )
        }
        Err(httparse::Error::Version) => {
            return refuse(505, "Only HTTP/1.0 and HTTP/1.1 are spoken here.")
        }
        Err(e) => return refuse(400, format!("The request does not parse as HTTP: {e}.")),
    };
    if head_len > limits.max_head_bytes {
        return refuse(
            431,
            format!("The request head is over {} bytes.", limits.max_head_bytes),
        );
    }
    let (Some(method), Some(target), Some(minor_version)) =
        (request.method, request.path, request.version)
    else {
        return refuse(400, "The request line is incomplete.");
    };
    let mut head = RequestHead {
        method: method.to_string(),
        target: target.to_string(),
        minor_version,
        content_length: 0,
        content_type: None,
        if_none_match: None,
        expect_continue: false,
        close: minor_version == 0,
    };
    let mut content_length: Option<usize> = None;
    for h in request.headers.iter() {
        let value = String::from_utf8_lossy(h.value);
        let value = value.trim();
        let name = h.name.to_ascii_lowercase();
        match name.as_str() {
            "content-length" => {
                let Ok(n) = value.parse::<usize>() else {
                    return refuse(400, "The Content-Length is not a number.");
                };
                if content_length.is_some_and(|m| m != n) {
                    return refuse(400, "The request has two different Content-Lengths.");
                }
                content_length = Some(n);
            }
            "transfer-encoding" => return refuse(
                411,
                "Send the body with a Content-Length: transfer codings (chunked) are not accepted.",
            ),
            "content-type" => head.content_type = Some(value.to_string()),
            "if-none-match" => head.if_none_match = Some(value.to_string()),
            "expect" => {
                if value.eq_ignore_ascii_case("100-continue") {
                    head.expect_continue = true;
                } else {
                    return refuse(417, "The only expectation met here is 100-continue.");
                }
            }
            "connection" => {
                for token in value.split(',').map(str::trim) {
                    if token.eq_ignore_ascii_case("close") {
                        head.close = true;
                    } else if token.eq_ignore_ascii_case("keep-alive") && minor_version == 0 {
                        head.close = false;
                    }
                }
            }
            _ => {}
        }
    }
    // A close token wins over keep-alive whatever their order.
    if request.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("connection")
            && String::from_utf8_lossy(h.value)
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("close"))
    }) {
        head.close = true;
    }
    head.content_length = content_length.unwrap_or(0);
    if head.content_length > limits.max_body_bytes {
        return refuse(
            413,
            format!(
                "The request body is {} bytes; at most {} are accepted.",
                head.content_length, limits.max_body_bytes
            ),
        );
    }
    if !head.target.starts_with('/') {
        return refuse(
            400,
            "The request target must be a path starting with '/' (origin form).",
        );
    }
    if head.target.len() > crate::op::MAX_TARGET_BYTES {
        return refuse(
            414,
            format!("The URL is over {} bytes.", crate::op::MAX_TARGET_BYTES),
        );
    }
    Parsed::Head(head, head_len)
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        303 => "See Other",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "Status",
    }
}

/// Whether `if_none_match` (a list of entity tags, or `*`) matches `etag`.
fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == etag)
}

/// The bytes of `response` with the front end's headers. `head_only` leaves the body out
/// (HEAD, 304) but keeps its length.
fn response_bytes(response: &WebResponse, head_only: bool, close: bool, allow: bool) -> Vec<u8> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nDate: {}\r\nServer: plumb-gateway\r\n",
        response.status,
        reason(response.status),
        format_http_date(now)
    );
    if response.status != 304 {
        head.push_str(&format!(
            "Content-Type: {}\r\nContent-Length: {}\r\nX-Content-Type-Options: nosniff\r\n",
            response.content_type,
            response.body.len()
        ));
    }
    if let Some(etag) = &response.etag {
        // Revalidate every time: a page changes whenever anyone edits it.
        head.push_str(&format!("ETag: {etag}\r\nCache-Control: no-cache\r\n"));
    }
    if let Some(location) = &response.location {
        head.push_str(&format!("Location: {location}\r\n"));
    }
    if allow {
        head.push_str("Allow: GET, HEAD, POST\r\n");
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if !head_only && response.status != 304 {
        out.extend_from_slice(&response.body);
    }
    out
}

/// Why a connection's loop stops.
enum Stop {
    /// The client closed, went idle, or the connection failed: nothing more to say.
    Quiet,
    /// Answer this, then close.
    Refuse(Refusal),
}

pub struct HttpServer {
    pub pool: Arc<Pool>,
    pub stats: Arc<HttpStats>,
    /// GETs and HEADs take the read-only path (which falls back to the ordered path when the
    /// replicas do not answer alike).
    pub fast_reads: bool,
    /// Prophecy: GETs go through these sketchers (docs/prophecy.md); before `fast_reads`.
    pub sketcher: Option<Arc<SketchedReads>>,
    pub limits: HttpLimits,
}

impl FrontEnd for HttpServer {
    const NAME: &'static str = "gateway (HTTP clients)";

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

impl HttpServer {
    pub fn new(pool: Arc<Pool>, stats: Arc<HttpStats>, fast_reads: bool) -> Arc<HttpServer> {
        Arc::new(HttpServer {
            pool,
            stats,
            fast_reads,
            sketcher: None,
            limits: HttpLimits::default(),
        })
    }

    /// The same server with its reads through `sketcher`.
    pub fn with_sketcher(
        pool: Arc<Pool>,
        stats: Arc<HttpStats>,
        fast_reads: bool,
        sketcher: Option<Arc<SketchedReads>>,
    ) -> Arc<HttpServer> {
        Arc::new(HttpServer {
            pool,
            stats,
            fast_reads,
            sketcher,
            limits: HttpLimits::default(),
        })
    }

    /// Serve HTTP clients on `listener` (in a tokio runtime) until the process stops.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        accept_loop(self, listener).await;
    }

    /// **The read seam.** Every GET and HEAD reaches the cluster through this function, and
    /// only through it: `op` is an encoded [`WebOp::Get`], the result an encoded
    /// [`WebResponse`]. Today it is the read-only path when `fast_reads` is on (the client
    /// library falls back to ordering the read when the replicas disagree or are slow) and
    /// the ordered path otherwise. With Prophecy sketchers (docs/prophecy.md) it goes through
    /// them: the request sketch is the digest of the operation (method and URL: the only parts
    /// of a GET the application sees), the response sketch the digest of the application's
    /// answer (status, content type, ETag and body; `Date` is added after).
    pub async fn read(&self, op: Vec<u8>) -> Result<Vec<u8>, PoolError> {
        self.stats.reads.fetch_add(1, Ordering::Relaxed);
        match &self.sketcher {
            Some(sketcher) => sketcher.read(op).await,
            None => self.pool.call(op, self.fast_reads).await,
        }
    }

    /// Every POST: ordered.
    async fn write(&self, op: Vec<u8>) -> Result<Vec<u8>, PoolError> {
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.pool.call(op, false).await
    }

    async fn send(&self, stream: &mut TcpStream, bytes: &[u8]) -> bool {
        self.stats
            .bytes_out
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        stream.write_all(bytes).await.is_ok()
    }

    fn count_response(&self, status: u16) {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let class = (status / 100).clamp(1, 5) as usize - 1;
        self.stats.responses_by_class[class].fetch_add(1, Ordering::Relaxed);
    }

    /// Read more bytes into `buf` within `timeout`: `Ok(false)` at end of stream.
    async fn fill(
        &self,
        stream: &mut TcpStream,
        buf: &mut Vec<u8>,
        timeout: Duration,
    ) -> Result<bool, ()> {
        let mut chunk = [0u8; 8192];
        match tokio::time::timeout(timeout, stream.read(&mut chunk)).await {
            Err(_) => Err(()),
            Ok(Err(_)) | Ok(Ok(0)) => Ok(false),
            Ok(Ok(n)) => {
                self.stats.bytes_in.fetch_add(n as u64, Ordering::Relaxed);
                buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
        }
    }

    async fn connection(&self, mut stream: TcpStream) {
        let mut buf: Vec<u8> = Vec::with_capacity(8192);
        let stop = loop {
            // An idle connection may wait long for its next request; a started request (head
            // and body) must arrive whole within one deadline, so trickling bytes cannot hold
            // a connection open. Bytes pipelined behind the previous request start it now.
            let mut started = (!buf.is_empty()).then(Instant::now);
            let (head, head_len) = loop {
                match parse_head(&buf, &self.limits) {
                    Parsed::Head(head, n) => break (head, n),
                    Parsed::Refused(r) => return self.refuse(&mut stream, r).await,
                    Parsed::Partial => {}
                }
                let timeout = match started {
                    None => self.limits.idle_timeout,
                    Some(t) => {
                        (t + self.limits.request_timeout).saturating_duration_since(Instant::now())
                    }
                };
                match self.fill(&mut stream, &mut buf, timeout).await {
                    Ok(true) => {
                        started.get_or_insert_with(Instant::now);
                    }
                    Ok(false) => return,
                    Err(()) if buf.is_empty() => return,
                    Err(()) => {
                        return self
                            .refuse(
                                &mut stream,
                                Refusal {
                                    status: 408,
                                    why: "The request took too long to arrive.".into(),
                                },
                            )
                            .await
                    }
                }
            };
            // The body.
            let end = head_len + head.content_length;
            // The client waits for the go-ahead before it sends the body.
            let go_ahead = b"HTTP/1.1 100 Continue\r\n\r\n";
            if buf.len() < end && head.expect_continue && !self.send(&mut stream, go_ahead).await {
                break Stop::Quiet;
            }
            let deadline = started.unwrap_or_else(Instant::now) + self.limits.request_timeout;
            let mut stalled = false;
            while buf.len() < end {
                let timeout = deadline.saturating_duration_since(Instant::now());
                match self.fill(&mut stream, &mut buf, timeout).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(()) => {
                        stalled = true;
                        break;
                    }
                }
            }
            if stalled {
                break Stop::Refuse(Refusal {
                    status: 408,
                    why: "The request body took too long to arrive.".into(),
                });
            }
            let body = buf[head_len..end].to_vec();
            buf.drain(..end);
            let close = head.close;
            let bytes = self.answer(&head, body).await;
            if !self.send(&mut stream, &bytes).await || close {
                break Stop::Quiet;
            }
        };
        if let Stop::Refuse(r) = stop {
            self.refuse(&mut stream, r).await;
        }
        let _ = stream.shutdown().await;
    }

    /// Answer a request refused for its framing, and close.
    async fn refuse(&self, stream: &mut TcpStream, r: Refusal) {
        self.stats.bad_requests.fetch_add(1, Ordering::Relaxed);
        self.count_response(r.status);
        let page = error_page(r.status, reason(r.status), &crate::markup::escape(&r.why));
        let bytes = response_bytes(&page, false, true, false);
        self.send(stream, &bytes).await;
        let _ = stream.shutdown().await;
        // A lingering close: read (and drop) what the client is still sending for a moment.
        // Closing with unread bytes would make the kernel reset the connection, and a reset
        // can destroy the refusal before the client reads it.
        let mut sink = [0u8; 8192];
        let mut drained = 0usize;
        let deadline = tokio::time::Instant::now() + LINGER;
        while drained < LINGER_BYTES {
            match tokio::time::timeout_at(deadline, stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => drained += n,
                _ => break,
            }
        }
    }

    /// The response bytes for one well-framed request.
    async fn answer(&self, head: &RequestHead, body: Vec<u8>) -> Vec<u8> {
        let head_only = head.method == "HEAD";
        let (op, is_read) = match head.method.as_str() {
            "GET" | "HEAD" => (
                WebOp::Get {
                    target: head.target.clone(),
                },
                true,
            ),
            "POST" => (
                WebOp::Post {
                    target: head.target.clone(),
                    content_type: head
                        .content_type
                        .clone()
                        .filter(|c| c.len() <= crate::op::MAX_CONTENT_TYPE_BYTES),
                    body,
                },
                false,
            ),
            other => {
                let page = error_page(
                    405,
                    reason(405),
                    &format!(
                        "{} is not a method this wiki answers: pages are read with GET (or HEAD) and edited with POST.",
                        crate::markup::escape(other)
                    ),
                );
                self.count_response(405);
                return response_bytes(&page, false, head.close, true);
            }
        };
        let answer = if is_read {
            self.read(op.encode()).await
        } else {
            self.write(op.encode()).await
        };
        let response = match answer {
            Ok(bytes) => {
                match WebResponse::decode(&bytes) {
                    Ok(response) => response,
                    Err(e) => {
                        self.stats.bad_replies.fetch_add(1, Ordering::Relaxed);
                        error_page(
                        502,
                        reason(502),
                        &format!("The replicated service answered with bytes that do not decode: {e}."),
                    )
                    }
                }
            }
            Err(e) => {
                self.stats.unanswered.fetch_add(1, Ordering::Relaxed);
                error_page(
                    503,
                    reason(503),
                    &format!(
                        "The replicated service did not answer: {}.",
                        crate::markup::escape(&e.to_string())
                    ),
                )
            }
        };
        if is_read && response.status == 200 {
            if let (Some(tags), Some(etag)) = (&head.if_none_match, &response.etag) {
                if etag_matches(tags, etag) {
                    self.stats.not_modified.fetch_add(1, Ordering::Relaxed);
                    self.count_response(304);
                    let not_modified = WebResponse {
                        status: 304,
                        body: Vec::new(),
                        ..response
                    };
                    return response_bytes(&not_modified, true, head.close, false);
                }
            }
        }
        self.count_response(response.status);
        response_bytes(&response, head_only, head.close, response.status == 405)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8]) -> Parsed {
        parse_head(bytes, &HttpLimits::default())
    }

    fn status(p: Parsed) -> u16 {
        match p {
            Parsed::Refused(r) => r.status,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn keep_alive_and_close_by_version() {
        let Parsed::Head(h, n) = head(b"GET /wiki/A HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n")
        else {
            panic!()
        };
        assert_eq!(
            (h.method.as_str(), h.target.as_str(), h.close),
            ("GET", "/wiki/A", false)
        );
        assert_eq!(n, 33, "the next pipelined request starts after the head");
        let Parsed::Head(h, _) = head(b"GET / HTTP/1.0\r\n\r\n") else {
            panic!()
        };
        assert!(h.close);
        let Parsed::Head(h, _) = head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") else {
            panic!()
        };
        assert!(!h.close);
        let Parsed::Head(h, _) =
            head(b"GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n")
        else {
            panic!()
        };
        assert!(h.close);
        assert_eq!(head(b"GET / HTTP/1.1\r\nHost:"), Parsed::Partial);
    }

    #[test]
    fn bodies_and_their_limits() {
        let Parsed::Head(h, _) = head(
            b"POST /wiki/A HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\nbody=x",
        ) else {
            panic!()
        };
        assert_eq!(h.content_length, 6);
        assert!(h.expect_continue);
        assert_eq!(
            status(head(
                b"POST / HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n"
            )),
            413
        );
        assert_eq!(
            status(head(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            )),
            411
        );
        assert_eq!(
            status(head(
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
            )),
            400
        );
        assert_eq!(
            status(head(b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n")),
            400
        );
    }

    #[test]
    fn hostile_heads_are_refused_not_panicked_on() {
        assert_eq!(status(head(b"\x00\x01\x02 / HTTP/1.1\r\n\r\n")), 400);
        assert_eq!(status(head(b"GET / HTTP/2.0\r\n\r\n")), 505);
        assert_eq!(status(head(b"GET http://x/ HTTP/1.1\r\n\r\n")), 400);
        let many: String = (0..100).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(
            status(head(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes())),
            431
        );
        let long = vec![b'a'; 20_000];
        let mut big = b"GET /".to_vec();
        big.extend_from_slice(&long);
        assert_eq!(status(head(&big)), 431);
        let mut lcg: u64 = 1;
        for len in 0..2000usize {
            let bytes: Vec<u8> = (0..len % 300)
                .map(|_| {
                    lcg = lcg
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (lcg >> 56) as u8
                })
                .collect();
            let _ = head(&bytes);
        }
    }

    #[test]
    fn conditional_requests_match_etags() {
        assert!(etag_matches("\"a\", \"b\"", "\"b\""));
        assert!(etag_matches("*", "\"b\""));
        assert!(etag_matches("W/\"b\"", "\"b\""));
        assert!(!etag_matches("\"a\"", "\"b\""));
    }

    #[test]
    fn responses_carry_date_and_length_and_head_has_no_body() {
        let r = WebResponse {
            status: 200,
            content_type: "text/html; charset=utf-8".into(),
            location: None,
            etag: Some("\"e\"".into()),
            body: b"hello".to_vec(),
        };
        let full = String::from_utf8(response_bytes(&r, false, false, false)).unwrap();
        assert!(full.starts_with("HTTP/1.1 200 OK\r\nDate: "), "{full}");
        assert!(full.contains("\r\nContent-Length: 5\r\n"), "{full}");
        assert!(full.ends_with("\r\n\r\nhello"), "{full}");
        let head_only = String::from_utf8(response_bytes(&r, true, true, false)).unwrap();
        assert!(
            head_only.contains("\r\nContent-Length: 5\r\n"),
            "{head_only}"
        );
        assert!(
            head_only.ends_with("Connection: close\r\n\r\n"),
            "{head_only}"
        );
    }
}
