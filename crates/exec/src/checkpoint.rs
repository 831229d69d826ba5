//! The execution checkpoint (seed 004 §5.3.2, Figure 5.5): everything an execution replica
//! needs to continue after batch `seq`. Its token is the BLAKE3 digest of its canonical bytes.

use plumb_crypto::Digest;
use plumb_wire::{ClientId, Micros, Position, ReqNo, Seq};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Storage keys of execution checkpoints: `exec/cp/<seq, 20 digits>`, so they sort by seq.
pub const CHECKPOINT_PREFIX: &str = "exec/cp/";

pub fn checkpoint_key(seq: Seq) -> String {
    format!("{CHECKPOINT_PREFIX}{seq:020}")
}

pub(crate) fn parse_checkpoint_key(key: &str) -> Option<Seq> {
    let digits = key.strip_prefix(CHECKPOINT_PREFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// State after executing every batch up to and including `seq`.
///
/// The encoding is canonical: postcard of fixed-order fields and `BTreeMap`s, so correct
/// replicas that executed the same batches produce the same bytes and the same token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecCheckpoint {
    pub seq: Seq,
    /// The application's checkpoint (its whole state, or a token naming state it keeps).
    pub app: Vec<u8>,
    /// Last reply per client.
    pub replies: BTreeMap<ClientId, CachedReply>,
    /// Agreed time of the last non-null batch at or before `seq`.
    pub agreed_time: Micros,
    /// Next push event id per client.
    pub next_push: BTreeMap<ClientId, u64>,
    /// For an application with objects (docs/objects.md): the root of its object tree, which
    /// the token thereby commits to; `app` then holds the application's object metadata.
    pub objects: Option<ObjectsRoot>,
}

/// The object tree of a checkpoint: id bits and root digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectsRoot {
    /// Bits of the object ids (the tree's depth).
    pub bits: u8,
    /// The tree's root digest.
    pub root: Digest,
}

/// The last reply sent to a client, resent on RETRANSMIT (EL3). It names the request it
/// answers (`req`, its identity digest), not only its number, so a client that reused the
/// number for another operation never takes it for its own answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedReply {
    pub nc: ReqNo,
    pub req: Digest,
    pub result: Vec<u8>,
    /// Where the request was executed (resent with the reply: correct replicas agree on it).
    pub at: Position,
}

impl CachedReply {
    #[cfg(test)]
    pub(crate) fn test(nc: ReqNo, result: &[u8]) -> CachedReply {
        CachedReply {
            nc,
            req: Digest::of(result),
            result: result.to_vec(),
            at: Position::default(),
        }
    }
}

impl ExecCheckpoint {
    pub fn encode(&self) -> Vec<u8> {
        plumb_wire::encode::to_vec(self)
    }

    /// Decode bytes that passed the token check (or came from our own disk). Trailing bytes
    /// are refused so that one token names exactly one encoding.
    pub fn decode(bytes: &[u8]) -> Option<ExecCheckpoint> {
        match postcard::take_from_bytes::<ExecCheckpoint>(bytes) {
            Ok((cp, [])) => Some(cp),
            _ => legacy::decode(bytes),
        }
    }

    pub fn token(bytes: &[u8]) -> Digest {
        Digest::of(bytes)
    }
}

/// Checkpoints written before replies carried their position (the D-Prophecy change): still
/// read from a replica's own disk, so an upgraded node resumes from its last checkpoint. A
/// reply cached there gets the position "the checkpoint's batch, after every request of it",
/// so a Prophecy sketcher never takes it for newer than anything executed after it.
mod legacy {
    use super::{CachedReply, ExecCheckpoint, ObjectsRoot};
    use plumb_crypto::Digest;
    use plumb_wire::{ClientId, Micros, Position, ReqNo, Seq};
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Deserialize)]
    struct ReplyV0 {
        nc: ReqNo,
        req: Digest,
        result: Vec<u8>,
    }

    #[derive(Deserialize)]
    struct CheckpointV0 {
        seq: Seq,
        app: Vec<u8>,
        replies: BTreeMap<ClientId, ReplyV0>,
        agreed_time: Micros,
        next_push: BTreeMap<ClientId, u64>,
        objects: Option<ObjectsRoot>,
    }

    pub(super) fn decode(bytes: &[u8]) -> Option<ExecCheckpoint> {
        let Ok((cp, [])) = postcard::take_from_bytes::<CheckpointV0>(bytes) else {
            return None;
        };
        let at = Position {
            seq: cp.seq,
            index: u32::MAX,
        };
        Some(ExecCheckpoint {
            seq: cp.seq,
            app: cp.app,
            replies: cp
                .replies
                .into_iter()
                .map(|(c, r)| {
                    let reply = CachedReply {
                        nc: r.nc,
                        req: r.req,
                        result: r.result,
                        at,
                    };
                    (c, reply)
                })
                .collect(),
            agreed_time: cp.agreed_time,
            next_push: cp.next_push,
            objects: cp.objects,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_by_seq() {
        assert_eq!(
            parse_checkpoint_key(&checkpoint_key(Seq(42))),
            Some(Seq(42))
        );
        assert!(checkpoint_key(Seq(9)) < checkpoint_key(Seq(10)));
        assert_eq!(parse_checkpoint_key("exec/cp/12"), None);
        assert_eq!(parse_checkpoint_key("order/cp/00000000000000000001"), None);
        assert_eq!(parse_checkpoint_key("exec/cp/+0000000000000000001"), None);
    }

    #[test]
    fn encoding_is_canonical_and_rejects_trailing_bytes() {
        let mut a = ExecCheckpoint {
            seq: Seq(4),
            app: b"state".to_vec(),
            replies: BTreeMap::new(),
            agreed_time: 9,
            next_push: BTreeMap::new(),
            objects: None,
        };
        let mut b = a.clone();
        a.replies.insert(2, CachedReply::test(ReqNo(1), b"x"));
        a.replies.insert(1, CachedReply::test(ReqNo(5), b"y"));
        b.replies.insert(1, CachedReply::test(ReqNo(5), b"y"));
        b.replies.insert(2, CachedReply::test(ReqNo(1), b"x"));
        assert_eq!(a.encode(), b.encode());
        let mut bytes = a.encode();
        assert_eq!(ExecCheckpoint::decode(&bytes), Some(a));
        bytes.push(0);
        assert_eq!(ExecCheckpoint::decode(&bytes), None);
    }
}
