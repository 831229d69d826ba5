//! A minimal HTTP/1.1 endpoint for operators: `GET <path>` answered by a handler, one request
//! per connection. Enough for Prometheus scrapes, curl and `plumb status`; nothing else is
//! served, and requests are bounded in size and time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status: 200,
            content_type,
            body: body.into(),
        }
    }

    pub fn not_found() -> Response {
        Response {
            status: 404,
            content_type: "text/plain; charset=utf-8",
            body: b"not found: try /status or /metrics\n".to_vec(),
        }
    }
}

pub type Handler = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// Bind `addr` now (so a port in use is reported at start-up) and serve in the background.
pub async fn serve(addr: SocketAddr, handler: Handler) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        let failures = std::sync::atomic::AtomicU64::new(0);
        loop {
            let mut stream = crate::accept::accept(&listener, &failures, "admin http").await;
            let handler = handler.clone();
            tokio::spawn(async move {
                let mut buf = Vec::with_capacity(1024);
                let read = tokio::time::timeout(Duration::from_secs(5), async {
                    let mut chunk = [0u8; 1024];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                        let n = stream.read(&mut chunk).await?;
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    Ok::<_, std::io::Error>(())
                })
                .await;
                if !matches!(read, Ok(Ok(()))) {
                    return;
                }
                let line = String::from_utf8_lossy(&buf);
                let mut parts = line.lines().next().unwrap_or("").split_whitespace();
                let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
                let resp = if method == "GET" {
                    handler(path.split('?').next().unwrap_or("/"))
                } else {
                    Response {
                        status: 405,
                        content_type: "text/plain; charset=utf-8",
                        body: b"only GET is served\n".to_vec(),
                    }
                };
                let reason = match resp.status {
                    200 => "OK",
                    404 => "Not Found",
                    _ => "Method Not Allowed",
                };
                let head = format!(
                    "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    resp.status,
                    resp.content_type,
                    resp.body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&resp.body).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok(local)
}

/// `GET http://addr/path` with a time limit, for `plumb status` and `plumb up`.
pub async fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
    tokio::time::timeout(Duration::from_secs(2), async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).await?;
        let split = buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| std::io::Error::other("no HTTP header end"))?;
        let status = String::from_utf8_lossy(&buf[..split])
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Ok((status, buf[split + 4..].to_vec()))
    })
    .await
    .map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "admin endpoint did not answer in 2 s",
        )
    })?
}
