//! TCP between plumb processes: length-prefixed frames (u32 little-endian length, then the
//! sealed frame), `TCP_NODELAY`, an explicit maximum frame length so a peer cannot make us
//! allocate without bound.
//!
//! A [`Link`] is a connection this process dials and keeps dialing: frames for it wait in a
//! bounded queue while it is down (dropped and counted when full; the protocol retransmits
//! what matters). Frames that arrive on it are handed to a callback, because the far end may
//! answer on the same connection (a node answers a client on the connection the client
//! opened).

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// Largest frame accepted from the network: the envelope's own limit plus slack.
pub const MAX_FRAME: usize = plumb_wire::MAX_FRAME_BYTES + 1024;

pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .little_endian()
        .length_field_length(4)
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

pub fn framed(stream: TcpStream) -> Framed<TcpStream, LengthDelimitedCodec> {
    let _ = stream.set_nodelay(true);
    Framed::new(stream, codec())
}

/// Receives every frame read from a connection.
pub type OnFrame = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

/// Frames to send first on every new connection (a client's greetings, which tell the node to
/// answer it over this connection).
pub type Greeting = Arc<dyn Fn() -> Vec<Vec<u8>> + Send + Sync>;

#[derive(Clone)]
pub struct Link {
    tx: mpsc::Sender<Bytes>,
    capacity: usize,
    stats: Arc<LinkStats>,
}

#[derive(Default)]
pub struct LinkStats {
    pub dropped: AtomicU64,
    pub connected: AtomicBool,
    pub connects: AtomicU64,
}

impl Link {
    /// Dial `addr` now and again whenever the connection drops (back-off 20 ms doubling to
    /// 1 s). Must be called inside a tokio runtime.
    pub fn dial(
        addr: SocketAddr,
        capacity: usize,
        on_frame: OnFrame,
        greeting: Option<Greeting>,
    ) -> Link {
        let (tx, rx) = mpsc::channel(capacity);
        let stats = Arc::new(LinkStats::default());
        tokio::spawn(keep_connected(addr, rx, on_frame, greeting, stats.clone()));
        Link {
            tx,
            capacity,
            stats,
        }
    }

    /// Queue a frame; `false` if the queue is full (dropped and counted) or the link is gone.
    pub fn send(&self, frame: Vec<u8>) -> bool {
        match self.tx.try_send(Bytes::from(frame)) {
            Ok(()) => true,
            Err(_) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    pub fn depth(&self) -> usize {
        self.capacity - self.tx.capacity()
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
}

async fn keep_connected(
    addr: SocketAddr,
    mut rx: mpsc::Receiver<Bytes>,
    on_frame: OnFrame,
    greeting: Option<Greeting>,
    stats: Arc<LinkStats>,
) {
    let mut backoff = Duration::from_millis(20);
    loop {
        let stream = match TcpStream::connect(addr).await {
            Ok(s) => s,
            Err(_) => {
                // Frames keep queueing (up to the bound) while the peer is down; the protocol
                // resends whatever is lost to the bound.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                if rx.is_closed() {
                    return;
                }
                continue;
            }
        };
        backoff = Duration::from_millis(20);
        stats.connects.fetch_add(1, Ordering::Relaxed);
        stats.connected.store(true, Ordering::Relaxed);
        let (mut sink, mut stream) = framed(stream).split();
        if let Some(greeting) = &greeting {
            let mut failed = false;
            for frame in greeting() {
                if sink.feed(Bytes::from(frame)).await.is_err() {
                    failed = true;
                    break;
                }
            }
            if failed || sink.flush().await.is_err() {
                stats.connected.store(false, Ordering::Relaxed);
                tokio::time::sleep(backoff).await;
                continue;
            }
        }
        let reader_cb = on_frame.clone();
        let mut reader = tokio::spawn(async move {
            while let Some(Ok(frame)) = stream.next().await {
                reader_cb(frame.to_vec());
            }
        });
        let closed = loop {
            tokio::select! {
                next = rx.recv() => {
                    let Some(frame) = next else { break true };
                    if sink.feed(frame).await.is_err() {
                        break false;
                    }
                    // Write whatever else is already queued before flushing: one syscall for
                    // a burst.
                    let mut failed = false;
                    while let Ok(more) = rx.try_recv() {
                        if sink.feed(more).await.is_err() {
                            failed = true;
                            break;
                        }
                    }
                    if failed || sink.flush().await.is_err() {
                        break false;
                    }
                }
                _ = &mut reader => break false,
            }
        };
        reader.abort();
        stats.connected.store(false, Ordering::Relaxed);
        if closed {
            return;
        }
        tokio::time::sleep(backoff).await;
    }
}
