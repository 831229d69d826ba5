//! The unreplicated baseline of `plumb bench speculation` (seed 001 §5: "an unreplicated
//! server"): one process runs an [`Application`] directly, with no replication, no
//! authentication and no disk, and answers over TCP; and the minimal client that calls it.
//!
//! Honest to the application: each request is executed as a batch of its own (sequence numbers
//! 1, 2, 3...) with the agreed time taken from the clock (strictly increasing, as plumb's batch
//! times are) and a fresh seed, and its reply is sent at once. Push events the application
//! produces are dropped: the baseline has no push channel.
//!
//! Wire format: plumb's link framing (u32 little-endian length, then the bytes); a request is
//! an operation's bytes, a reply the result's bytes, in order on each connection.
//!
//! Under an emulated wide-area network the client delays both directions itself, exactly as
//! plumb's client does (docs/wan-emulation.md), so the two are measured under the same delay.

use futures_util::{SinkExt, StreamExt};
use plumb_app::{Application, Command, NonDeterminism};
use plumb_runtime::link::{self, Framed};
use plumb_runtime::{wall_micros, DelayLine, LinkDelay};
use plumb_wire::{Life, ReqNo, Seq};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The application and what executing it needs between requests.
struct Executor {
    app: Box<dyn Application + Send>,
    seq: Seq,
    last_time: u64,
    seed: u64,
}

impl Executor {
    /// Execute `op` as batch `seq + 1` of its own.
    fn execute(&mut self, client: u32, nc: ReqNo, op: &[u8]) -> Vec<u8> {
        self.seq += 1;
        self.last_time = wall_micros().max(self.last_time + 1);
        self.seed = splitmix(self.seed);
        let nd = NonDeterminism {
            time: self.last_time,
            seed: self.seed,
        };
        let batch = [Command::new(client, Life(0), nc, op)];
        let mut out = self.app.execute(self.seq, &batch, nd);
        // One command, one reply; an application that answers nothing answers empty bytes.
        out.replies.pop().unwrap_or_default()
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Serve `app` on `listener` until the task is dropped or the process ends. Every connection
/// is a client of its own; requests from all of them execute one at a time, in arrival order.
pub async fn serve(listener: TcpListener, app: Box<dyn Application + Send>) {
    let executor = Arc::new(Mutex::new(Executor {
        app,
        seq: Seq::ZERO,
        last_time: 0,
        seed: u64::from(std::process::id()),
    }));
    let next_client = AtomicU32::new(0);
    let failures = AtomicU64::new(0);
    loop {
        let stream =
            plumb_runtime::accept::accept(&listener, &failures, "unreplicated server").await;
        let client = next_client.fetch_add(1, Ordering::Relaxed);
        let executor = executor.clone();
        tokio::spawn(async move {
            let (mut sink, mut frames) = link::framed(stream).split();
            let mut nc = ReqNo::NONE;
            while let Some(Ok(op)) = frames.next().await {
                nc = nc.next();
                let reply = executor
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .execute(client, nc, &op);
                if sink.send(bytes::Bytes::from(reply)).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// A client of the unreplicated server: one operation at a time.
pub struct UnreplicatedClient {
    send: Sender,
    replies: tokio::sync::Mutex<mpsc::Receiver<Vec<u8>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Where requests go: straight to the writer, or through the delay first.
enum Sender {
    Direct(mpsc::Sender<bytes::Bytes>),
    Delayed(DelayLine<bytes::Bytes>),
}

/// Requests and replies in flight on one connection.
const QUEUE: usize = 1024;

impl UnreplicatedClient {
    /// Connect to the server at `addr`, `delay` away each way (zero: no emulated delay).
    pub async fn connect(addr: SocketAddr, delay: Duration) -> Result<UnreplicatedClient, String> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to the unreplicated server at {addr}: {e}"))?;
        let framed: Framed = link::framed(stream);
        let (mut sink, mut frames) = framed.split();
        let delay = LinkDelay::both(delay);
        let (req_tx, mut req_rx) = mpsc::channel::<bytes::Bytes>(QUEUE);
        let (rep_tx, rep_rx) = mpsc::channel::<Vec<u8>>(QUEUE);
        let writer = tokio::spawn(async move {
            while let Some(frame) = req_rx.recv().await {
                if sink.send(frame).await.is_err() {
                    return;
                }
            }
        });
        let deliver = {
            let rep_tx = rep_tx.clone();
            move |reply: Vec<u8>| {
                let _ = rep_tx.try_send(reply);
            }
        };
        let received: Box<dyn Fn(Vec<u8>) + Send> = if delay.receive.is_zero() {
            Box::new(deliver)
        } else {
            let line = DelayLine::spawn(delay.receive, QUEUE, deliver);
            Box::new(move |reply| {
                let _ = line.push(reply);
            })
        };
        drop(rep_tx);
        let reader = tokio::spawn(async move {
            while let Some(Ok(reply)) = frames.next().await {
                received(reply.to_vec());
            }
        });
        let send = if delay.send.is_zero() {
            Sender::Direct(req_tx)
        } else {
            Sender::Delayed(DelayLine::spawn(delay.send, QUEUE, move |f| {
                let _ = req_tx.try_send(f);
            }))
        };
        Ok(UnreplicatedClient {
            send,
            replies: tokio::sync::Mutex::new(rep_rx),
            tasks: vec![writer, reader],
        })
    }

    /// Run `op` and wait for its reply.
    pub async fn invoke(&self, op: Vec<u8>) -> Result<Vec<u8>, String> {
        // One operation at a time: the reply that comes next is this one's.
        let mut replies = self.replies.lock().await;
        let frame = bytes::Bytes::from(op);
        let sent = match &self.send {
            Sender::Direct(tx) => tx.send(frame).await.is_ok(),
            Sender::Delayed(line) => line.push(frame).is_ok(),
        };
        if !sent {
            return Err("the connection to the unreplicated server is closed".into());
        }
        replies
            .recv()
            .await
            .ok_or_else(|| "the unreplicated server closed the connection".to_string())
    }
}

impl Drop for UnreplicatedClient {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_kv::{KvOp, KvResult};
    use std::time::Instant;

    async fn server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, Box::new(plumb_kv::KvStore::new())));
        addr
    }

    fn incr() -> Vec<u8> {
        KvOp::Increment {
            key: b"n".to_vec(),
            delta: 1,
        }
        .encode()
    }

    /// Every request is executed against one state, shared by every connection, in order.
    #[tokio::test]
    async fn requests_execute_in_order_on_one_state() {
        let addr = server().await;
        let a = UnreplicatedClient::connect(addr, Duration::ZERO)
            .await
            .unwrap();
        let b = UnreplicatedClient::connect(addr, Duration::ZERO)
            .await
            .unwrap();
        for expect in 1..=3 {
            let r = KvResult::decode(&a.invoke(incr()).await.unwrap()).unwrap();
            assert_eq!(r, KvResult::Int(expect));
        }
        let r = KvResult::decode(&b.invoke(incr()).await.unwrap()).unwrap();
        assert_eq!(r, KvResult::Int(4));
    }

    /// An emulated delay makes every call take at least a round trip of it (a lower bound
    /// only: nothing is asserted about how much longer).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delayed_client_takes_at_least_the_round_trip() {
        let addr = server().await;
        let d = Duration::from_millis(20);
        let c = UnreplicatedClient::connect(addr, d).await.unwrap();
        for expect in 1..=3 {
            let t0 = Instant::now();
            let r = KvResult::decode(&c.invoke(incr()).await.unwrap()).unwrap();
            assert!(t0.elapsed() >= 2 * d, "{:?}", t0.elapsed());
            assert_eq!(r, KvResult::Int(expect));
        }
    }
}
