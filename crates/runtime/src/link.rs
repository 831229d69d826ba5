//! TCP between plumb processes: length-prefixed frames (u32 little-endian length, then the
//! sealed frame), `TCP_NODELAY`, an explicit maximum frame length so a peer cannot make us
//! allocate without bound.
//!
//! A [`Link`] is a connection this process dials and keeps dialing: frames for it wait in a
//! bounded queue while it is down (dropped and counted when full; the protocol retransmits
//! what matters). Frames that arrive on it are handed to a callback, because the far end may
//! answer on the same connection (a node answers a client on the connection the client
//! opened).
//!
//! A link between nodes ([`Link::dial_peer`]) first proves which node dialed it
//! (`handshake.rs`); a client's link ([`Link::dial`]) asks for the connection's nonce and
//! sends its greetings over it instead.
//!
//! An emulated wide-area delay ([`LinkDelay`], docs/wan-emulation.md) puts a [`DelayLine`] in
//! front of the connection (frames sent wait before they are queued for writing) and, for
//! frames received, between the reader and the callback. Without one nothing changes: no
//! line, no task, no clock reading.

use crate::handshake::{self, NodeKeys};
use crate::wan::{DelayLine, LinkDelay};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::codec::LengthDelimitedCodec;

use crate::handshake::MAX_FRAME;

pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .little_endian()
        .length_field_length(4)
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// A TCP connection carrying length-prefixed frames.
pub type Framed = tokio_util::codec::Framed<TcpStream, LengthDelimitedCodec>;

pub fn framed(stream: TcpStream) -> Framed {
    let _ = stream.set_nodelay(true);
    Framed::new(stream, codec())
}

/// Receives every frame read from a connection.
pub type OnFrame = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

/// Frames to send first on every new connection, over the nonce the node gave it (a client's
/// greetings, which tell the node to answer it over this connection).
pub type Greeting = Arc<dyn Fn(&handshake::Nonce) -> Vec<Vec<u8>> + Send + Sync>;

/// What a new connection opens with.
#[derive(Clone)]
enum Opening {
    /// A client's: greetings, if any.
    Greet(Option<Greeting>),
    /// A node's: the peer handshake, proving this node to node `to`, from this node's own
    /// address (`from`).
    Prove {
        keys: Arc<dyn NodeKeys>,
        to: u16,
        from: SocketAddr,
    },
}

#[derive(Clone)]
pub struct Link {
    tx: mpsc::Sender<Bytes>,
    capacity: usize,
    stats: Arc<LinkStats>,
    /// Under an emulated delay: where frames wait before they go to `tx`.
    line: Option<DelayLine<Bytes>>,
    delay: LinkDelay,
}

#[derive(Default)]
pub struct LinkStats {
    pub dropped: AtomicU64,
    pub connected: AtomicBool,
    pub connects: AtomicU64,
    /// Peer handshakes that did not complete (the far end refused us, or failed).
    pub handshake_failures: AtomicU64,
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
        Link::dial_delayed(addr, capacity, on_frame, greeting, LinkDelay::NONE)
    }

    /// `dial`, with an emulated wide-area delay on frames sent and received (a client applies
    /// the whole path's delay itself: a node does not know the client's site).
    pub fn dial_delayed(
        addr: SocketAddr,
        capacity: usize,
        on_frame: OnFrame,
        greeting: Option<Greeting>,
        delay: LinkDelay,
    ) -> Link {
        Link::open(addr, capacity, on_frame, Opening::Greet(greeting), delay)
    }

    /// `dial`, for a link from this node (listening on `from`) to node `to`: every connection
    /// first proves with `keys` that it is this node's, and counts as up only once `to`
    /// accepted the proof. Connections leave from `from`'s IP address, so that a node's
    /// traffic carries the address the configuration gives it both ways (what a firewall
    /// rule, or the nemesis harness's partition, names the node by). `delay`: the emulated
    /// wide-area delay of this link (nodes delay what they send, [`LinkDelay::sending`]).
    pub fn dial_peer(
        addr: SocketAddr,
        capacity: usize,
        on_frame: OnFrame,
        keys: Arc<dyn NodeKeys>,
        to: u16,
        from: SocketAddr,
        delay: LinkDelay,
    ) -> Link {
        Link::open(
            addr,
            capacity,
            on_frame,
            Opening::Prove { keys, to, from },
            delay,
        )
    }

    fn open(
        addr: SocketAddr,
        capacity: usize,
        on_frame: OnFrame,
        opening: Opening,
        delay: LinkDelay,
    ) -> Link {
        let (tx, rx) = mpsc::channel(capacity);
        let stats = Arc::new(LinkStats::default());
        let on_frame = if delay.receive.is_zero() {
            on_frame
        } else {
            let received = DelayLine::spawn(delay.receive, capacity, move |f: Vec<u8>| on_frame(f));
            let stats = stats.clone();
            Arc::new(move |f: Vec<u8>| {
                if received.push(f).is_err() {
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }) as OnFrame
        };
        let line = (!delay.send.is_zero()).then(|| {
            let tx = tx.clone();
            let stats = stats.clone();
            DelayLine::spawn(delay.send, capacity, move |frame: Bytes| {
                if tx.try_send(frame).is_err() {
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
            })
        });
        tokio::spawn(keep_connected(addr, rx, on_frame, opening, stats.clone()));
        Link {
            tx,
            capacity,
            stats,
            line,
            delay,
        }
    }

    /// Queue a frame; `false` if the queue is full (dropped and counted) or the link is gone.
    pub fn send(&self, frame: Vec<u8>) -> bool {
        let queued = match &self.line {
            None => self.tx.try_send(Bytes::from(frame)).is_ok(),
            Some(line) => line.push(Bytes::from(frame)).is_ok(),
        };
        if !queued {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
        queued
    }

    /// Frames waiting to be written (under an emulated delay, those still in the delay too).
    pub fn depth(&self) -> usize {
        self.capacity - self.tx.capacity() + self.line.as_ref().map_or(0, DelayLine::depth)
    }

    /// The emulated wide-area delay of this link.
    pub fn delay(&self) -> LinkDelay {
        self.delay
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
}

/// Connect to `addr`, from `source` (any port) if given and not the unspecified address.
async fn connect(addr: SocketAddr, source: Option<std::net::IpAddr>) -> std::io::Result<TcpStream> {
    let Some(ip) = source.filter(|ip| !ip.is_unspecified()) else {
        return TcpStream::connect(addr).await;
    };
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(addr).await
}

async fn keep_connected(
    addr: SocketAddr,
    mut rx: mpsc::Receiver<Bytes>,
    on_frame: OnFrame,
    opening: Opening,
    stats: Arc<LinkStats>,
) {
    let mut backoff = Duration::from_millis(20);
    loop {
        let source = match &opening {
            Opening::Prove { from, .. } => Some(from.ip()),
            Opening::Greet(_) => None,
        };
        let stream = match connect(addr, source).await {
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
        let mut framed = framed(stream);
        let opened = match &opening {
            Opening::Greet(greeting) => greet(&mut framed, greeting.as_ref()).await,
            Opening::Prove { keys, to, .. } => {
                let proved = handshake::dial(&mut framed, &**keys, *to, handshake::TIMEOUT).await;
                if proved.is_err() {
                    stats.handshake_failures.fetch_add(1, Ordering::Relaxed);
                }
                proved.is_ok()
            }
        };
        if !opened {
            // Back off as when the peer is down: a peer that refuses us is not redialed in a
            // tight loop.
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
            if rx.is_closed() {
                return;
            }
            continue;
        }
        backoff = Duration::from_millis(20);
        stats.connects.fetch_add(1, Ordering::Relaxed);
        stats.connected.store(true, Ordering::Relaxed);
        let (mut sink, mut stream) = framed.split();
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

/// Ask the node for this connection's nonce and send a client's greetings over it; false if
/// the connection failed or the node did not answer.
async fn greet(framed: &mut Framed, greeting: Option<&Greeting>) -> bool {
    let Some(greeting) = greeting else {
        return true;
    };
    let Ok(nonce) = handshake::client_nonce(framed, handshake::TIMEOUT).await else {
        return false;
    };
    for frame in greeting(&nonce) {
        if framed.feed(Bytes::from(frame)).await.is_err() {
            return false;
        }
    }
    SinkExt::<Bytes>::flush(framed).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tokio::net::TcpListener;

    /// An echo server on loopback: every frame back as it came.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut sink, mut frames) = framed(stream).split();
                    while let Some(Ok(f)) = frames.next().await {
                        if sink.send(f.freeze()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    /// Send `n` numbered frames over a link with `delay`, and return when each came back
    /// (after the time it was sent) in arrival order.
    async fn round_trips(delay: LinkDelay, n: u32) -> Vec<(u32, Duration)> {
        let addr = echo().await;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let on_frame: OnFrame = Arc::new(move |f: Vec<u8>| {
            let _ = tx.send((f, Instant::now()));
        });
        let link = Link::dial_delayed(addr, 64, on_frame, None, delay);
        let mut sent = Vec::new();
        for i in 0..n {
            sent.push(Instant::now());
            assert!(link.send(i.to_le_bytes().to_vec()));
        }
        let mut back = Vec::new();
        for _ in 0..n {
            let (f, at) = tokio::time::timeout(Duration::from_secs(20), rx.recv())
                .await
                .expect("the echo came back")
                .unwrap();
            let i = u32::from_le_bytes(f[..4].try_into().unwrap());
            back.push((i, at - sent[i as usize]));
        }
        back
    }

    /// A link with an emulated delay takes at least the delay each way, keeps its frames in
    /// order, and one without gets them all back in order too. Only lower bounds on time are
    /// asserted: a loaded machine can only make things slower.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn delayed_link_takes_at_least_its_delay_each_way_in_order() {
        let d = Duration::from_millis(25);
        let delayed = round_trips(LinkDelay::both(d), 20).await;
        let order: Vec<u32> = delayed.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, (0..20).collect::<Vec<_>>());
        for (i, rtt) in &delayed {
            assert!(*rtt >= 2 * d, "frame {i} came back after {rtt:?}");
        }
        let sending_only = round_trips(LinkDelay::sending(d), 5).await;
        for (i, rtt) in &sending_only {
            assert!(*rtt >= d, "frame {i} came back after {rtt:?}");
        }
        let plain = round_trips(LinkDelay::NONE, 20).await;
        let order: Vec<u32> = plain.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, (0..20).collect::<Vec<_>>());
    }
}
