//! Talking ZooKeeper's wire protocol below any client library, through plumb's own codec
//! (crates/zk, whose layouts are checked against a real ZooKeeper server): framed requests
//! out, frames back, and the handshake that opens or resumes a session.

use plumb_zk::{frame_into, ConnectRequest, ConnectResponse, Framer, DEFAULT_MAX_FRAME};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

pub struct ZkConn {
    /// The socket itself, for tests that write bytes that are not a well-formed frame.
    pub stream: TcpStream,
    framer: Framer,
}

impl ZkConn {
    /// A connection to `addr` whose reads give up after `read_timeout`.
    pub fn connect(addr: impl ToSocketAddrs, read_timeout: Duration) -> io::Result<ZkConn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(read_timeout))?;
        Ok(ZkConn {
            stream,
            framer: Framer::new(DEFAULT_MAX_FRAME),
        })
    }

    /// Sends the handshake of a client that has seen nothing: a new session with `session_id`
    /// 0, else a resume of that one. The server's answer, or `None` if it closed the
    /// connection instead.
    pub fn handshake(
        &mut self,
        session_id: i64,
        password: Vec<u8>,
        timeout_ms: i32,
    ) -> Option<ConnectResponse> {
        self.send(
            &ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: 0,
                timeout_ms,
                session_id,
                password,
                read_only: Some(false),
            }
            .encode(),
        );
        let frame = self.recv()?;
        Some(ConnectResponse::decode(&frame).unwrap())
    }

    pub fn send(&mut self, payload: &[u8]) {
        let mut out = Vec::new();
        frame_into(&mut out, payload);
        self.stream.write_all(&out).unwrap();
    }

    /// The next frame; `None` once the server closed the connection (or it broke).
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(f) = self.framer.next_frame().unwrap() {
                return Some(f);
            }
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.framer.feed(&buf[..n]),
            }
        }
    }
}
