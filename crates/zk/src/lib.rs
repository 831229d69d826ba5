//! ZooKeeper's wire protocol (jute), pure and bounds-checked: what plumb's gateway needs to
//! serve unmodified ZooKeeper clients (zkCli, kazoo, the Java and Rust client libraries).
//!
//! A connection is a stream of frames, each a 4-byte big-endian length and that many bytes.
//! The client's first frame is a [`ConnectRequest`], answered by a [`ConnectResponse`]; then
//! every request is a [`RequestHeader`] (xid, operation code) and a body ([`Request`]), and
//! every reply a [`ReplyHeader`] (xid, zxid, error code) and, when the error code is 0, a body
//! ([`Response`]). Notifications are replies with xid -1 and a [`WatcherEvent`] body.
//!
//! Nothing here panics on any input: every read is checked against the bytes left, lengths
//! before allocating, and a frame longer than the limit is refused by [`Framer::next_frame`].

pub mod jute;
pub mod records;

pub use jute::{JuteError, Reader, Writer};
pub use records::{
    err, event, op, state, xid, Acl, ConnectRequest, ConnectResponse, MultiHeader, MultiResult,
    ReplyHeader, Request, RequestHeader, Response, Stat, WatcherEvent,
};

use std::fmt;

/// ZooKeeper's default `jute.maxbuffer` (1 MiB) plus room for a request's header and path:
/// the largest frame accepted unless told otherwise.
pub const DEFAULT_MAX_FRAME: usize = (1 << 20) + 64 * 1024;

/// Why a connection's byte stream is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A frame announced more bytes than the limit.
    TooLarge { len: i64, max: usize },
    /// A negative length.
    Negative(i32),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the limit of {max} bytes")
            }
            FrameError::Negative(n) => write!(f, "negative frame length {n}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Splits a byte stream into frames: feed it what the socket gave, take whole frames out.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    start: usize,
    max: usize,
}

impl Framer {
    pub fn new(max: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            start: 0,
            max,
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes fed and not yet taken.
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// The next whole frame's payload, `None` if more bytes are needed, or why the stream is
    /// bad (the caller closes the connection).
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let pending = &self.buf[self.start..];
        let Some(head) = pending.get(..4) else {
            return Ok(None);
        };
        let len = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        if len < 0 {
            return Err(FrameError::Negative(len));
        }
        let len = len as usize;
        if len > self.max {
            return Err(FrameError::TooLarge {
                len: len as i64,
                max: self.max,
            });
        }
        let Some(body) = pending.get(4..4 + len) else {
            return Ok(None);
        };
        let frame = body.to_vec();
        self.start += 4 + len;
        Ok(Some(frame))
    }
}

/// `payload` with its 4-byte length in front, appended to `out`.
pub fn frame_into(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&jute::len_i32(payload.len()).to_be_bytes());
    out.extend_from_slice(payload);
}

/// ZooKeeper's four-letter admin words this codec recognises, by the 4 bytes a connection
/// starts with (read as a frame length, they are far beyond any limit).
pub fn four_letter_word(first: &[u8]) -> Option<&'static str> {
    match first.get(..4)? {
        b"ruok" => Some("ruok"),
        b"srvr" => Some("srvr"),
        b"stat" => Some("stat"),
        b"conf" => Some("conf"),
        b"envi" => Some("envi"),
        b"mntr" => Some("mntr"),
        b"cons" => Some("cons"),
        b"wchs" => Some("wchs"),
        b"dump" => Some("dump"),
        b"isro" => Some("isro"),
        _ => None,
    }
}

/// A request frame (after the handshake) decoded: its header and body.
pub fn decode_request(frame: &[u8]) -> Result<(RequestHeader, Request), JuteError> {
    let mut r = Reader::new(frame);
    let header = RequestHeader::read(&mut r)?;
    let rest = &frame[8..];
    Ok((header, Request::decode(header.op, rest)?))
}

/// A request frame's payload (header and body, without the length).
pub fn encode_request(xid: i32, request: &Request) -> Vec<u8> {
    let mut w = Vec::new();
    RequestHeader {
        xid,
        op: request.op(),
    }
    .write(&mut w);
    w.extend_from_slice(&request.encode());
    w
}

/// A reply frame's payload: the header, and the body only if `err` is 0 (ZooKeeper sends no
/// body with an error).
pub fn encode_reply(xid: i32, zxid: i64, err: i32, body: &Response) -> Vec<u8> {
    let mut w = Vec::new();
    ReplyHeader { xid, zxid, err }.write(&mut w);
    if err == 0 {
        body.write(&mut w);
    }
    w
}

/// A notification frame's payload (xid -1; zxid -1, as ZooKeeper sends).
pub fn encode_notification(event: &WatcherEvent) -> Vec<u8> {
    let mut w = Vec::new();
    ReplyHeader {
        xid: xid::NOTIFICATION,
        zxid: -1,
        err: 0,
    }
    .write(&mut w);
    event.write(&mut w);
    w
}

/// A reply frame split into its header and body bytes.
pub fn decode_reply_header(frame: &[u8]) -> Result<(ReplyHeader, &[u8]), JuteError> {
    let mut r = Reader::new(frame);
    let h = ReplyHeader::read(&mut r)?;
    Ok((h, &frame[16..]))
}
