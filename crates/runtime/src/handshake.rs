//! The peer handshake: a node that dials another proves, once per connection, which node it
//! is, and the accepting node binds the connection to that node. Everything read on the
//! connection afterwards is attributed to the bound node, never to the sender label a frame's
//! header claims (that label is unauthenticated until a stage checks the MAC, and routing,
//! queueing and flood accounting happen before that).
//!
//! ```text
//! dialer A                                   acceptor B
//!   Hello { from: A, to: B }        ──▶
//!                                   ◀──      Challenge { nonce }      (32 fresh random bytes)
//!   Answer { MAC_k(TAG, nonce, A, B) } ──▶   verify under k = key(A, B), bind to A
//!                                   ◀──      Welcome
//! ```
//!
//! Each handshake frame is one length-prefixed frame like any other, starting with [`MAGIC`]
//! (which no envelope starts with: envelopes start with "PB"). A connection whose first frame
//! is not a Hello is a client connection. The nonce is fresh per connection, so an answer
//! recorded on one connection does not verify on another; `TAG` keeps the MAC input apart
//! from every other use of the same pairwise key (envelope MACs cover bytes starting with
//! "PB", MAC authenticators cover 32-byte digests). After the Hello every frame is limited to
//! [`MAX_HANDSHAKE_FRAME`] bytes and the exchange to a timeout, so a stalled or hostile dialer
//! holds nothing for long.
//!
//! A client proves nothing about itself here (it has no node key), but it asks for a nonce of
//! its own, so that what it proves next cannot be replayed on another connection:
//!
//! ```text
//! client                                     node
//!   ClientHello                       ──▶
//!                                   ◀──      Challenge { nonce }      (32 fresh random bytes)
//!   envelopes: Hello { nonce }, one per client identity, sealed with that identity's key
//! ```
//!
//! The node binds a client's reply route to the connection only on a `Hello` carrying that
//! connection's nonce under a MAC that verifies (`plumb_node`'s router); no other frame
//! claims a route, so a frame recorded on one connection and replayed on another diverts no
//! replies.

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use plumb_crypto::Mac;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::LengthDelimitedCodec;

type Framed<T> = tokio_util::codec::Framed<T, LengthDelimitedCodec>;

/// How long either side waits for the whole exchange after the Hello.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// Largest frame read while a handshake is under way (every handshake frame is smaller).
pub const MAX_HANDSHAKE_FRAME: usize = 64;
/// First bytes of every handshake frame.
pub const MAGIC: [u8; 4] = *b"PLHS";
/// Domain separation of the answer's MAC input.
const TAG: &[u8] = b"plumb peer link handshake v1";
const NONCE: usize = 32;

const HELLO: u8 = 1;
const CHALLENGE: u8 = 2;
const ANSWER: u8 = 3;
const WELCOME: u8 = 4;
const CLIENT_HELLO: u8 = 5;

/// A fresh nonce of a connection's challenge.
pub type Nonce = [u8; NONCE];

/// The keys a node's links are proven with: one MAC key shared with each other node.
pub trait NodeKeys: Send + Sync {
    /// This node's id.
    fn me(&self) -> u16;
    /// MAC over `bytes` under the key shared with node `peer`; `None` if there is none.
    fn mac(&self, peer: u16, bytes: &[u8]) -> Option<Mac>;
    /// Check, in constant time, a MAC node `peer` computed over `bytes`.
    fn verify(&self, peer: u16, bytes: &[u8], mac: &Mac) -> bool;
}

/// Why a handshake did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refused {
    /// A frame that is not the handshake frame expected next.
    Garbage,
    /// A frame longer than any handshake frame.
    Oversize,
    /// The Hello names a node this node shares no key with (or itself).
    UnknownNode,
    /// The Hello is addressed to another node.
    WrongNode,
    /// The answer's MAC does not verify: wrong key, wrong node id, or an old answer replayed.
    BadMac,
    Timeout,
    /// The far end closed the connection (or it failed) mid-handshake.
    Closed,
}

impl Refused {
    pub const ALL: [Refused; 7] = [
        Refused::Garbage,
        Refused::Oversize,
        Refused::UnknownNode,
        Refused::WrongNode,
        Refused::BadMac,
        Refused::Timeout,
        Refused::Closed,
    ];

    /// Stable name, used as a metrics label.
    pub fn name(self) -> &'static str {
        match self {
            Refused::Garbage => "garbage",
            Refused::Oversize => "oversize",
            Refused::UnknownNode => "unknown-node",
            Refused::WrongNode => "wrong-node",
            Refused::BadMac => "bad-mac",
            Refused::Timeout => "timeout",
            Refused::Closed => "closed",
        }
    }
}

/// Whether a connection's first frame opens a peer handshake (otherwise it is a client's):
/// any handshake frame but a ClientHello (a malformed one is refused by [`accept`]).
pub fn is_hello(frame: &[u8]) -> bool {
    frame.starts_with(&MAGIC) && !is_client_hello(frame)
}

/// Whether a connection's first frame is a client asking for a nonce.
pub fn is_client_hello(frame: &[u8]) -> bool {
    payload(frame, CLIENT_HELLO, 0).is_ok()
}

/// A client's first frame.
pub fn client_hello() -> Vec<u8> {
    frame(CLIENT_HELLO, &[])
}

fn fresh_nonce() -> Nonce {
    use rand::RngCore;
    let mut nonce = [0u8; NONCE];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    nonce
}

fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(MAGIC.len() + 1 + payload.len());
    f.extend_from_slice(&MAGIC);
    f.push(kind);
    f.extend_from_slice(payload);
    f
}

/// The payload of a handshake frame of `kind`, if `f` is exactly that.
fn payload(f: &[u8], kind: u8, len: usize) -> Result<&[u8], Refused> {
    match f.strip_prefix(&MAGIC) {
        Some([k, rest @ ..]) if *k == kind && rest.len() == len => Ok(rest),
        _ => Err(Refused::Garbage),
    }
}

/// What the answer's MAC covers: the acceptor's nonce and both node ids, in their roles.
fn transcript(nonce: &[u8; NONCE], from: u16, to: u16) -> Vec<u8> {
    let mut t = Vec::with_capacity(TAG.len() + NONCE + 4);
    t.extend_from_slice(TAG);
    t.extend_from_slice(nonce);
    t.extend_from_slice(&from.to_le_bytes());
    t.extend_from_slice(&to.to_le_bytes());
    t
}

/// The dialer's first frame.
pub fn hello(from: u16, to: u16) -> Vec<u8> {
    let mut p = from.to_le_bytes().to_vec();
    p.extend_from_slice(&to.to_le_bytes());
    frame(HELLO, &p)
}

/// The acceptor's state between sending its challenge and reading the answer.
#[derive(Debug)]
pub struct Challenge {
    from: u16,
    nonce: [u8; NONCE],
}

impl Challenge {
    /// Read a Hello with `keys`; `nonce` must be fresh random bytes, never used before.
    pub fn on_hello(
        keys: &dyn NodeKeys,
        hello: &[u8],
        nonce: [u8; NONCE],
    ) -> Result<Challenge, Refused> {
        let p = payload(hello, HELLO, 4)?;
        let from = u16::from_le_bytes([p[0], p[1]]);
        let to = u16::from_le_bytes([p[2], p[3]]);
        if to != keys.me() {
            return Err(Refused::WrongNode);
        }
        // A node has no key with itself: a Hello claiming to come from us is refused here too.
        if from == keys.me() || keys.mac(from, &[]).is_none() {
            return Err(Refused::UnknownNode);
        }
        Ok(Challenge { from, nonce })
    }

    pub fn frame(&self) -> Vec<u8> {
        frame(CHALLENGE, &self.nonce)
    }

    /// The node the connection is bound to, if `answer` proves it.
    pub fn check(&self, keys: &dyn NodeKeys, answer: &[u8]) -> Result<u16, Refused> {
        let p = payload(answer, ANSWER, 16)?;
        let mut mac = [0u8; 16];
        mac.copy_from_slice(p);
        let t = transcript(&self.nonce, self.from, keys.me());
        if keys.verify(self.from, &t, &Mac(mac)) {
            Ok(self.from)
        } else {
            Err(Refused::BadMac)
        }
    }
}

/// The dialer's answer to `challenge` from node `to`.
pub fn answer(keys: &dyn NodeKeys, to: u16, challenge: &[u8]) -> Result<Vec<u8>, Refused> {
    let p = payload(challenge, CHALLENGE, NONCE)?;
    let mut nonce = [0u8; NONCE];
    nonce.copy_from_slice(p);
    let mac = keys
        .mac(to, &transcript(&nonce, keys.me(), to))
        .ok_or(Refused::UnknownNode)?;
    Ok(frame(ANSWER, &mac.0))
}

pub fn welcome() -> Vec<u8> {
    frame(WELCOME, &[])
}

/// The next frame, or why there is none; frames above the codec's current limit are refused.
async fn next<T: AsyncRead + AsyncWrite + Unpin>(framed: &mut Framed<T>) -> Result<Bytes, Refused> {
    match framed.next().await {
        Some(Ok(f)) => Ok(f.freeze()),
        Some(Err(e))
            if e.get_ref().is_some_and(|inner| {
                inner.is::<tokio_util::codec::LengthDelimitedCodecError>()
            }) =>
        {
            Err(Refused::Oversize)
        }
        _ => Err(Refused::Closed),
    }
}

async fn put<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    f: Vec<u8>,
) -> Result<(), Refused> {
    framed
        .send(Bytes::from(f))
        .await
        .map_err(|_| Refused::Closed)
}

/// Largest frame accepted from the network once the handshake is done: the envelope's own
/// limit plus slack.
pub const MAX_FRAME: usize = plumb_wire::MAX_FRAME_BYTES + 1024;

/// While a handshake is under way frames are handshake-sized; afterwards the ordinary limit.
fn limit<T>(framed: &mut Framed<T>, handshaking: bool) {
    let max = if handshaking {
        MAX_HANDSHAKE_FRAME
    } else {
        MAX_FRAME
    };
    framed.codec_mut().set_max_frame_length(max);
}

/// `exchange`, or [`Refused::Timeout`] if it takes longer than `timeout`.
async fn within<R>(
    timeout: Duration,
    exchange: impl std::future::Future<Output = Result<R, Refused>>,
) -> Result<R, Refused> {
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or(Err(Refused::Timeout))
}

/// The accepting side, once `first` (the connection's first frame) was seen to be a Hello:
/// challenge, verify, welcome. `Ok(node)`: the connection is node `node`'s.
pub async fn accept<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    keys: &dyn NodeKeys,
    first: &[u8],
    timeout: Duration,
) -> Result<u16, Refused> {
    let challenge = Challenge::on_hello(keys, first, fresh_nonce())?;
    limit(framed, true);
    let out = within(timeout, accept_exchange(framed, keys, &challenge)).await;
    limit(framed, false);
    out
}

async fn accept_exchange<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    keys: &dyn NodeKeys,
    challenge: &Challenge,
) -> Result<u16, Refused> {
    put(framed, challenge.frame()).await?;
    let answer = next(framed).await?;
    let node = challenge.check(keys, &answer)?;
    put(framed, welcome()).await?;
    Ok(node)
}

/// The dialing side: prove to node `to` that this is node `keys.me()`.
pub async fn dial<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    keys: &dyn NodeKeys,
    to: u16,
    timeout: Duration,
) -> Result<(), Refused> {
    limit(framed, true);
    let out = within(timeout, dial_exchange(framed, keys, to)).await;
    limit(framed, false);
    out
}

async fn dial_exchange<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    keys: &dyn NodeKeys,
    to: u16,
) -> Result<(), Refused> {
    put(framed, hello(keys.me(), to)).await?;
    let challenge = next(framed).await?;
    put(framed, answer(keys, to, &challenge)?).await?;
    payload(&next(framed).await?, WELCOME, 0).map(|_| ())
}

/// The node's side of a client connection that opened with a ClientHello: send a fresh
/// nonce, the one the client's route claims on this connection must carry.
pub async fn challenge_client<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    timeout: Duration,
) -> Result<Nonce, Refused> {
    let nonce = fresh_nonce();
    within(timeout, put(framed, frame(CHALLENGE, &nonce))).await?;
    Ok(nonce)
}

/// The client's side: ask for the connection's nonce and return it.
pub async fn client_nonce<T: AsyncRead + AsyncWrite + Unpin>(
    framed: &mut Framed<T>,
    timeout: Duration,
) -> Result<Nonce, Refused> {
    limit(framed, true);
    let out = within(timeout, async {
        put(framed, client_hello()).await?;
        let challenge = next(framed).await?;
        let mut nonce = [0u8; NONCE];
        nonce.copy_from_slice(payload(&challenge, CHALLENGE, NONCE)?);
        Ok(nonce)
    })
    .await;
    limit(framed, false);
    out
}

#[cfg(test)]
mod tests;
