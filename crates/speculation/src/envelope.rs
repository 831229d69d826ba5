//! What a speculative client sends and what it gets back, as bytes inside the core protocol's
//! request `op` and reply `result`: the core protocol is unchanged (seed 001 §5: "predicate
//! checking may be performed by a shim layer between the replication protocol and the
//! application without modifying the protocol itself").
//!
//! Both encodings are hand-written rather than postcard so that decoding is bounded before it
//! allocates (a request's op comes from any client, possibly a faulty one) and so that the
//! format is fixed byte for byte: the client compares reply bytes and predicates carry digests
//! of them, so two encoders of the same value must never disagree.
//!
//! ```text
//! SpecOp    = version:u8 (=1) | count:u16 LE | count × (client:u32 LE | nc:u64 LE | answer:[u8;32]) | op...
//! SpecReply = version:u8 (=1) | tag:u8 | body
//!             tag 0 Executed: the inner reply, the rest of the bytes
//!             tag 1 Aborted:  predicate:u16 LE, nothing after
//!             tag 2 Retry:    predicate:u16 LE, nothing after
//!             tag 3 Malformed: nothing after
//! ```

use plumb_crypto::Digest;
use plumb_wire::{ClientId, ReqNo};

/// The encoding version both formats start with.
pub const VERSION: u8 = 1;

/// The most predicates one request may carry. Each costs a log lookup on every execution
/// replica and 44 bytes of request; a session with more unconfirmed dependencies than this
/// waits for some to commit (the paper found 4 outstanding requests per client enough on a LAN).
pub const MAX_PREDICATES: usize = 64;

/// Bytes of one encoded predicate.
const PREDICATE_BYTES: usize = 4 + 8 + 32;

/// The digest a predicate carries and the replica's log keeps: of the identity of the request
/// answered ([`plumb_wire::request_id`], `H(client, life, nc, H(op))`) and of the whole
/// `result` bytes of its reply, that is the *encoded [`SpecReply`]* (version and tag
/// included), not only the application's bytes inside an `Executed`.
///
/// Why the request's identity: `(client, nc)` does not name one request. A lane that lost its
/// record starts a new life and may send its next operation under a number that its previous
/// life's request was ordered under; the core client then renumbers it, but predicates already
/// sent name the old number. Had the log kept only the reply, the previous life's request,
/// answered the same bytes (the same increment sent again, or any write answered "ok"), would
/// satisfy them, and an operation the client rolled back would run on every replica (sim seed
/// 419 at u=2 r=1, `--app spec`).
///
/// Why the whole encoding: an `Aborted` or `Retry` reply must never match a predicate that
/// speculated on an `Executed` one, so a request that depends on a request that turned into
/// a no-op is itself a no-op on every replica, exactly as the client rolls it back. Keeping
/// this one function is what makes the client's digest and the replica's digest the same.
pub fn answer_digest(request: Digest, reply: &[u8]) -> Digest {
    Digest::of_parts(&[b"spec-answer", &request.0, reply])
}

/// "The committed reply to (`client`, `nc`) answered the request whose identity and reply
/// [`answer_digest`] gives `answer`."
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Predicate {
    pub client: ClientId,
    pub nc: ReqNo,
    pub answer: Digest,
}

/// A predicated request: execute `op` only if every predicate holds (seed 001 §3.2.1,
/// "if response(Os) = r, then do O"). With no predicates it is an ordinary request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecOp {
    pub predicates: Vec<Predicate>,
    pub op: Vec<u8>,
}

/// Why bytes are not a [`SpecOp`] or a [`SpecReply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    Empty,
    /// A version this code does not know; newer clients must not be half-understood.
    Version(u8),
    /// More than [`MAX_PREDICATES`] predicates announced.
    TooManyPredicates(u16),
    Truncated,
    UnknownTag(u8),
    /// Bytes after a reply that has no body.
    Trailing,
}

impl SpecOp {
    /// An ordinary request in the envelope.
    pub fn plain(op: Vec<u8>) -> SpecOp {
        SpecOp {
            predicates: Vec::new(),
            op,
        }
    }

    /// The bytes to put in a request's op. Panics if there are more than [`MAX_PREDICATES`]
    /// predicates: that is a bug of the caller (the client tracker refuses to build such a
    /// request), and encoding it would only produce a request every replica rejects.
    pub fn encode(&self) -> Vec<u8> {
        assert!(
            self.predicates.len() <= MAX_PREDICATES,
            "a SpecOp carries at most {MAX_PREDICATES} predicates"
        );
        let mut out =
            Vec::with_capacity(3 + self.predicates.len() * PREDICATE_BYTES + self.op.len());
        out.push(VERSION);
        out.extend_from_slice(&(self.predicates.len() as u16).to_le_bytes());
        for p in &self.predicates {
            out.extend_from_slice(&p.client.to_le_bytes());
            out.extend_from_slice(&p.nc.to_le_bytes());
            out.extend_from_slice(&p.answer.0);
        }
        out.extend_from_slice(&self.op);
        out
    }

    /// Total: any bytes give a value or an error, never a panic, and the predicate count is
    /// checked against [`MAX_PREDICATES`] and the bytes present before anything is allocated.
    pub fn decode(bytes: &[u8]) -> Result<SpecOp, DecodeError> {
        let (predicates, op) = SpecOp::split(bytes)?;
        Ok(SpecOp {
            predicates,
            op: op.to_vec(),
        })
    }

    /// [`SpecOp::decode`] without copying the op: the predicates and the op's bytes within
    /// `bytes`. Replicas use this on every ordered request.
    pub fn split(bytes: &[u8]) -> Result<(Vec<Predicate>, &[u8]), DecodeError> {
        let (&version, rest) = bytes.split_first().ok_or(DecodeError::Empty)?;
        if version != VERSION {
            return Err(DecodeError::Version(version));
        }
        let count = rest.get(..2).ok_or(DecodeError::Truncated)?;
        let count = u16::from_le_bytes([count[0], count[1]]);
        if usize::from(count) > MAX_PREDICATES {
            return Err(DecodeError::TooManyPredicates(count));
        }
        let rest = &rest[2..];
        let need = usize::from(count) * PREDICATE_BYTES;
        if rest.len() < need {
            return Err(DecodeError::Truncated);
        }
        let predicates = rest[..need]
            .chunks_exact(PREDICATE_BYTES)
            .map(|p| {
                let mut client = [0u8; 4];
                let mut nc = [0u8; 8];
                let mut reply = [0u8; 32];
                client.copy_from_slice(&p[..4]);
                nc.copy_from_slice(&p[4..12]);
                reply.copy_from_slice(&p[12..]);
                Predicate {
                    client: ClientId::from_le_bytes(client),
                    nc: ReqNo(u64::from_le_bytes(nc)),
                    answer: Digest(reply),
                }
            })
            .collect();
        Ok((predicates, &rest[need..]))
    }
}

/// What a request under the shim is answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecReply {
    /// Every predicate held and the application executed the op: its reply.
    Executed(Vec<u8>),
    /// Predicate number `predicate` (index in the request) named a reply that differs from
    /// the logged one, one that is not in the log, or one of another speculation group: the
    /// request was executed as a no-op. The client has rolled it back or will.
    Aborted { predicate: u16 },
    /// Predicate number `predicate` is older than the truncated log, so no replica can tell
    /// whether it held: the request was a no-op and the client must reissue it without that
    /// predicate (once what it depends on has committed, it needs none).
    Retry { predicate: u16 },
    /// The op is not a [`SpecOp`]; nothing was executed.
    Malformed,
}

const TAG_EXECUTED: u8 = 0;
const TAG_ABORTED: u8 = 1;
const TAG_RETRY: u8 = 2;
const TAG_MALFORMED: u8 = 3;

impl SpecReply {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            SpecReply::Executed(inner) => {
                let mut out = Vec::with_capacity(2 + inner.len());
                out.extend_from_slice(&[VERSION, TAG_EXECUTED]);
                out.extend_from_slice(inner);
                out
            }
            SpecReply::Aborted { predicate } => {
                let p = predicate.to_le_bytes();
                vec![VERSION, TAG_ABORTED, p[0], p[1]]
            }
            SpecReply::Retry { predicate } => {
                let p = predicate.to_le_bytes();
                vec![VERSION, TAG_RETRY, p[0], p[1]]
            }
            SpecReply::Malformed => vec![VERSION, TAG_MALFORMED],
        }
    }

    /// Total, like [`SpecOp::decode`]; a reply has exactly one encoding (no trailing bytes
    /// after a body-less reply), so decode-then-encode gives the bytes back.
    pub fn decode(bytes: &[u8]) -> Result<SpecReply, DecodeError> {
        let (&version, rest) = bytes.split_first().ok_or(DecodeError::Empty)?;
        if version != VERSION {
            return Err(DecodeError::Version(version));
        }
        let (&tag, body) = rest.split_first().ok_or(DecodeError::Truncated)?;
        let index = |body: &[u8]| -> Result<u16, DecodeError> {
            match body.len() {
                0 | 1 => Err(DecodeError::Truncated),
                2 => Ok(u16::from_le_bytes([body[0], body[1]])),
                _ => Err(DecodeError::Trailing),
            }
        };
        match tag {
            TAG_EXECUTED => Ok(SpecReply::Executed(body.to_vec())),
            TAG_ABORTED => Ok(SpecReply::Aborted {
                predicate: index(body)?,
            }),
            TAG_RETRY => Ok(SpecReply::Retry {
                predicate: index(body)?,
            }),
            TAG_MALFORMED if body.is_empty() => Ok(SpecReply::Malformed),
            TAG_MALFORMED => Err(DecodeError::Trailing),
            other => Err(DecodeError::UnknownTag(other)),
        }
    }
}
