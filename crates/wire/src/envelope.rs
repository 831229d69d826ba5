//! The authenticated frame around every message.
//!
//! ```text
//! 0      2    3         11          19        23            23+len     39+len
//! | "PB" | v  | sender  | receiver  | len u32 | body (len)  | MAC (16) |
//! ```
//! All integers little-endian. The MAC covers bytes `0 .. 23+len` under the pairwise key of
//! sender and receiver.

use crate::{Message, Principal};
use plumb_crypto::{Mac, MacKey};

pub const MAGIC: [u8; 2] = *b"PB";
pub const VERSION: u8 = 1;
pub const HEADER: usize = 23;
const MAC_LEN: usize = 16;
/// Frames above this size are refused before any work is done on them.
pub const MAX_FRAME_BYTES: usize = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("frame of {0} bytes is shorter than the {min} byte minimum", min = HEADER + MAC_LEN)]
    Short(usize),
    #[error("frame of {0} bytes exceeds the {max} byte limit", max = MAX_FRAME_BYTES)]
    TooLarge(usize),
    #[error("bad magic bytes: not a plumb frame")]
    BadMagic,
    #[error("unsupported wire version {0} (this build speaks {VERSION})")]
    BadVersion(u8),
    #[error("length field says {declared} body bytes but the frame holds {actual}")]
    BadLength { declared: usize, actual: usize },
    #[error("sender label {0:#x} names no principal")]
    BadSender(u64),
    #[error("frame is addressed to {0:?}, not to this principal")]
    WrongReceiver(Option<Principal>),
    #[error("no key is shared with sender {0:?}: unknown or unauthorised principal")]
    UnknownSender(Principal),
    #[error("MAC check failed for a frame from {0:?}")]
    BadMac(Principal),
    #[error("body from {0:?} does not decode: {1}")]
    Malformed(Principal, String),
}

impl WireError {
    /// Short stable name, used as a metrics label for dropped messages.
    pub fn reason(&self) -> &'static str {
        match self {
            WireError::Short(_) => "short",
            WireError::TooLarge(_) => "too-large",
            WireError::BadMagic => "bad-magic",
            WireError::BadVersion(_) => "bad-version",
            WireError::BadLength { .. } => "bad-length",
            WireError::BadSender(_) => "bad-sender",
            WireError::WrongReceiver(_) => "wrong-receiver",
            WireError::UnknownSender(_) => "unknown-sender",
            WireError::BadMac(_) => "bad-mac",
            WireError::Malformed(..) => "malformed",
        }
    }
}

/// A frame whose header has been checked but whose MAC has not: enough to route and filter
/// (blacklist by sender) before spending a MAC computation.
#[derive(Debug)]
pub struct Envelope<'a> {
    pub sender: Principal,
    pub receiver: Principal,
    authed: &'a [u8],
    body: &'a [u8],
    mac: Mac,
}

impl<'a> Envelope<'a> {
    pub fn parse(frame: &'a [u8]) -> Result<Envelope<'a>, WireError> {
        if frame.len() > MAX_FRAME_BYTES {
            return Err(WireError::TooLarge(frame.len()));
        }
        if frame.len() < HEADER + MAC_LEN {
            return Err(WireError::Short(frame.len()));
        }
        if frame[0..2] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if frame[2] != VERSION {
            return Err(WireError::BadVersion(frame[2]));
        }
        let sender_label = u64::from_le_bytes(arr8(&frame[3..11]));
        let receiver_label = u64::from_le_bytes(arr8(&frame[11..19]));
        let len = u32::from_le_bytes([frame[19], frame[20], frame[21], frame[22]]) as usize;
        let actual = frame.len() - HEADER - MAC_LEN;
        if len != actual {
            return Err(WireError::BadLength {
                declared: len,
                actual,
            });
        }
        let sender =
            Principal::from_label(sender_label).ok_or(WireError::BadSender(sender_label))?;
        let receiver =
            Principal::from_label(receiver_label).ok_or(WireError::WrongReceiver(None))?;
        let mut mac = [0u8; MAC_LEN];
        mac.copy_from_slice(&frame[HEADER + len..]);
        Ok(Envelope {
            sender,
            receiver,
            authed: &frame[..HEADER + len],
            body: &frame[HEADER..HEADER + len],
            mac: Mac(mac),
        })
    }

    /// Check the MAC, then decode the body.
    pub fn open(self, key: &MacKey) -> Result<Message, WireError> {
        if !key.verify(self.authed, &self.mac) {
            return Err(WireError::BadMac(self.sender));
        }
        postcard::from_bytes(self.body)
            .map_err(|e| WireError::Malformed(self.sender, e.to_string()))
    }
}

fn arr8(s: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    a
}

/// Encode `msg` from `sender` to `receiver` and authenticate it under their pairwise key. The
/// body is encoded straight into the frame, which is allocated once at its final size.
pub fn seal(sender: Principal, receiver: Principal, msg: &Message, key: &MacKey) -> Vec<u8> {
    let len = crate::encode::encoded_len(msg);
    match postcard::to_extend(msg, header(sender, receiver, len)) {
        Ok(frame) => finish(frame, key),
        // Encoding an in-memory message into a Vec cannot fail (crate::encode); were it to,
        // the frame carries an empty body, which the receiver drops as undecodable.
        Err(_) => seal_encoded(sender, receiver, &[], key),
    }
}

/// [`seal`] for a body already encoded ([`encode_body`]): a message to several receivers is
/// encoded once, and only the header and MAC differ between their frames.
pub fn seal_encoded(sender: Principal, receiver: Principal, body: &[u8], key: &MacKey) -> Vec<u8> {
    let mut frame = header(sender, receiver, body.len());
    frame.extend_from_slice(body);
    finish(frame, key)
}

/// A frame's header, in a buffer with room for a body of `len` bytes and the MAC.
fn header(sender: Principal, receiver: Principal, len: usize) -> Vec<u8> {
    let mut frame = Vec::with_capacity(HEADER + len + MAC_LEN);
    frame.extend_from_slice(&MAGIC);
    frame.push(VERSION);
    frame.extend_from_slice(&sender.label().to_le_bytes());
    frame.extend_from_slice(&receiver.label().to_le_bytes());
    frame.extend_from_slice(&(len as u32).to_le_bytes());
    frame
}

/// Append the MAC over everything so far.
fn finish(mut frame: Vec<u8>, key: &MacKey) -> Vec<u8> {
    debug_assert_eq!(
        frame.len() - HEADER,
        u32::from_le_bytes(frame[HEADER - 4..HEADER].try_into().unwrap_or_default()) as usize,
        "the body is as long as the header says"
    );
    let mac = key.mac(&frame);
    frame.extend_from_slice(&mac.0);
    frame
}

/// Canonical body bytes of a message.
pub fn encode_body(msg: &Message) -> Vec<u8> {
    crate::encode::to_vec(msg)
}

/// Parse, check the receiver, look up the sender's key, check the MAC, decode.
pub fn open<'k>(
    frame: &[u8],
    me: Principal,
    key_for: impl FnOnce(Principal) -> Option<&'k MacKey>,
) -> Result<(Principal, Message), WireError> {
    let env = Envelope::parse(frame)?;
    if env.receiver != me {
        return Err(WireError::WrongReceiver(Some(env.receiver)));
    }
    let sender = env.sender;
    let key = key_for(sender).ok_or(WireError::UnknownSender(sender))?;
    Ok((sender, env.open(key)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::*;
    use proptest::prelude::*;

    fn key() -> MacKey {
        MacKey::from_bytes([9; 32])
    }

    #[test]
    fn round_trip() {
        let m = Message::Prepare {
            view: View(3),
            seq: Seq(9),
            digest: plumb_crypto::Digest::of(b"x"),
        };
        let f = seal(
            Principal::Order(OrderId(1)),
            Principal::Order(OrderId(2)),
            &m,
            &key(),
        );
        let k = key();
        let (s, got) = open(&f, Principal::Order(OrderId(2)), |_| Some(&k)).unwrap();
        assert_eq!(s, Principal::Order(OrderId(1)));
        assert_eq!(got, m);
    }

    #[test]
    fn a_body_encoded_once_seals_to_the_same_frame() {
        let m = Message::Request {
            life: crate::Life(2),
            nc: ReqNo(7),
            op: vec![5; 1500],
        };
        let (from, to) = (Principal::Exec(ExecId(1)), Principal::Order(OrderId(3)));
        let frame = seal(from, to, &m, &key());
        assert_eq!(frame, seal_encoded(from, to, &encode_body(&m), &key()));
        assert_eq!(frame.capacity(), frame.len(), "allocated once, at its size");
        let k = key();
        assert_eq!(open(&frame, to, |_| Some(&k)).unwrap(), (from, m));
    }

    #[test]
    fn tampering_is_detected_as_bad_mac() {
        let m = Message::Request {
            life: crate::Life(9),
            nc: ReqNo(1),
            op: b"set a 1".to_vec(),
        };
        let mut f = seal(Principal::Client(4), Principal::Auth(AuthId(0)), &m, &key());
        let n = f.len();
        f[n - 20] ^= 1;
        let k = key();
        let e = open(&f, Principal::Auth(AuthId(0)), |_| Some(&k)).unwrap_err();
        assert_eq!(e, WireError::BadMac(Principal::Client(4)));
    }

    #[test]
    fn wrong_receiver_and_unknown_sender() {
        let m = Message::LastExec { next: Seq(4) };
        let f = seal(
            Principal::Exec(ExecId(0)),
            Principal::Order(OrderId(1)),
            &m,
            &key(),
        );
        let k = key();
        assert!(matches!(
            open(&f, Principal::Order(OrderId(2)), |_| Some(&k)),
            Err(WireError::WrongReceiver(_))
        ));
        assert_eq!(
            open(&f, Principal::Order(OrderId(1)), |_| None),
            Err(WireError::UnknownSender(Principal::Exec(ExecId(0))))
        );
    }

    #[test]
    fn authenticated_garbage_body_is_malformed_not_panic() {
        // A correctly MACed frame whose body is not a Message: a faulty peer with a valid key.
        let body = [0xffu8, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3];
        let mut frame = Vec::new();
        frame.extend_from_slice(&MAGIC);
        frame.push(VERSION);
        frame.extend_from_slice(&Principal::Order(OrderId(0)).label().to_le_bytes());
        frame.extend_from_slice(&Principal::Order(OrderId(1)).label().to_le_bytes());
        frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
        frame.extend_from_slice(&body);
        let mac = key().mac(&frame);
        frame.extend_from_slice(&mac.0);
        let k = key();
        let e = open(&frame, Principal::Order(OrderId(1)), |_| Some(&k)).unwrap_err();
        assert_eq!(e.reason(), "malformed");
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let k = key();
            let _ = open(&bytes, Principal::Order(OrderId(1)), |_| Some(&k));
            let _ = postcard::from_bytes::<Message>(&bytes);
        }

        #[test]
        fn mutated_frames_never_panic(idx in 0usize..400, bit in 0u8..8, payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let m = Message::AuthReq {
                core: ReqCore { client: 7, life: crate::Life(5), nc: ReqNo(3), body: Body::Inline(payload) },
                macs: vec![plumb_crypto::Mac([1; 16]); 4],
            };
            let mut f = seal(Principal::Auth(AuthId(1)), Principal::Order(OrderId(1)), &m, &key());
            let i = idx % f.len();
            f[i] ^= 1 << bit;
            let k = key();
            let r = open(&f, Principal::Order(OrderId(1)), |_| Some(&k));
            prop_assert!(r.is_err());
        }

        /// Hostile bytes: replies that name their operation, and the last-request query and
        /// answer, decode to an error or a message, never a panic; a genuine one round-trips.
        #[test]
        fn reply_and_last_request_decoding_never_panics(
            which in 0u8..11,
            nc in any::<u64>(),
            result in proptest::collection::vec(any::<u8>(), 0..64),
            cut in 0usize..200,
            idx in 0usize..200,
            bit in 0u8..8,
        ) {
            let req = plumb_crypto::Digest::of(&result);
            let m = match which {
                0 => Message::Reply { nc: ReqNo(nc), req, result, at: crate::Position { seq: Seq(nc / 3), index: (nc % 7) as u32 } },
                1 => Message::ReadOnlyReply { nc: ReqNo(nc), req, result, executed: Seq(nc / 2) },
                2 => Message::LastRequestQuery,
                3 => Message::FastRead { life: crate::Life(nc ^ 7), nc: ReqNo(nc), executor: crate::ExecId((nc % 5) as u16), op: result },
                4 => Message::SketchReply { nc: ReqNo(nc), req, sketch: (nc % 2 == 0).then_some(req) },
                5 => Message::EarlyRequest { life: crate::Life(nc >> 3), nc: ReqNo(nc), op: result },
                6 => Message::EarlyReply { nc: ReqNo(nc), req, result },
                8 => Message::ReplyDigest { nc: ReqNo(nc), req, result: plumb_crypto::Digest::of(&result), at: crate::Position { seq: Seq(nc / 5), index: (nc % 3) as u32 } },
                9 => Message::AuthReqs { reqs: vec![crate::Vouched { core: ReqCore { client: (nc % 9) as u32, life: crate::Life(nc), nc: ReqNo(nc), body: Body::Inline(result.clone()) }, macs: vec![plumb_crypto::Mac([3; 16]); (nc % 5) as usize] }; (nc % 3) as usize] },
                7 => Message::ExecReport { reports: vec![crate::BatchReport { seq: Seq(nc), replies: req, writes: (nc % 2 == 0).then_some(req), history: None }; (nc % 4) as usize] },
                _ => Message::LastRequest { nc: ReqNo(nc) },
            };
            let body = encode_body(&m);
            prop_assert_eq!(postcard::from_bytes::<Message>(&body).ok(), Some(m.clone()));
            let _ = postcard::from_bytes::<Message>(&body[..cut.min(body.len())]);
            let mut flipped = body.clone();
            let i = idx % flipped.len();
            flipped[i] ^= 1 << bit;
            let _ = postcard::from_bytes::<Message>(&flipped);
            let f = seal(Principal::Exec(ExecId(0)), Principal::Client(3), &m, &key());
            let k = key();
            let _ = open(&f[..cut.min(f.len())], Principal::Client(3), |_| Some(&k));
        }

        /// The object-transfer messages (docs/objects.md) round-trip, and truncated or
        /// flipped bodies decode to an error or a message, never a panic.
        #[test]
        fn object_transfer_decoding_never_panics(
            which in 0u8..6,
            seq in any::<u64>(),
            index in any::<u64>(),
            depth in any::<u8>(),
            bytes in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
            cut in 0usize..300,
            idx in 0usize..300,
            bit in 0u8..8,
        ) {
            let node = ObjectNode { depth, index };
            let seq = Seq(seq);
            let d = plumb_crypto::Digest::of(&index.to_le_bytes());
            let m = match which {
                0 => Message::FetchObjectNodes { seq, nodes: vec![node, node] },
                1 => Message::ObjectNodes {
                    seq,
                    nodes: vec![ObjectChildren { node, left: d, right: d }],
                },
                2 => Message::FetchObjects { seq, ids: vec![index, 1], proofs: depth % 2 == 0 },
                3 => Message::FetchStateUpdate { from: seq, to: Seq(index) },
                4 => Message::StateUpdate {
                    from: seq,
                    to: Seq(index),
                    writes: vec![ObjectPayload { id: index, bytes: bytes.clone(), proof: vec![d] }],
                },
                _ => Message::Objects {
                    seq,
                    objects: vec![ObjectPayload { id: index, bytes, proof: vec![d; 3] }],
                },
            };
            let body = encode_body(&m);
            prop_assert_eq!(postcard::from_bytes::<Message>(&body).ok(), Some(m.clone()));
            let _ = postcard::from_bytes::<Message>(&body[..cut.min(body.len())]);
            let mut flipped = body.clone();
            let i = idx % flipped.len();
            flipped[i] ^= 1 << bit;
            let _ = postcard::from_bytes::<Message>(&flipped);
        }
    }
}
