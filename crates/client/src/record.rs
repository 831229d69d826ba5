//! What the client keeps on disk (CS3) and how it reads it back after a restart.

use plumb_core::storage::{decode, encode};
use plumb_core::{Counters, Recovered, StoreOp};
use plumb_wire::ReqNo;
use serde::{Deserialize, Serialize};

/// The most recently issued ordered request.
pub(crate) const OUT_KEY: &str = "client/out";
/// The first read-only number not yet handed out (see [`RO_LEASE`]).
pub(crate) const RO_KEY: &str = "client/ro";
/// Read-only numbers are reserved on disk this many at a time, so that a restarted client never
/// reuses one: a delayed reply to a read issued before the crash must not be counted for a
/// different read issued after it. One put+sync per lease keeps reads cheap.
pub(crate) const RO_LEASE: ReqNo = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum OutRecord {
    /// Issued and not yet answered: resent on restart (CL1 survives a crash).
    Outstanding {
        nc: ReqNo,
        #[serde(with = "serde_bytes")]
        op: Vec<u8>,
    },
    /// Answered. Kept rather than deleted because the number must never be reused (AS1 at the
    /// authentication stage rejects it). Written without a sync: if it is lost, the restarted
    /// client merely resends the answered request and gets its cached reply again.
    Completed { nc: ReqNo },
}

impl OutRecord {
    pub(crate) fn put(&self) -> StoreOp {
        StoreOp::Put {
            key: OUT_KEY.to_string(),
            value: encode(self),
        }
    }
}

pub(crate) fn put_ro_reserved(upto: ReqNo) -> StoreOp {
    StoreOp::Put {
        key: RO_KEY.to_string(),
        value: encode(&upto),
    }
}

/// What the client resumes from.
#[derive(Debug, Default)]
pub(crate) struct Resumed {
    pub next_nc: ReqNo,
    /// An issued but unanswered request, to resend on start.
    pub outstanding: Option<(ReqNo, Vec<u8>)>,
    pub next_ro: ReqNo,
    /// The ordered-request record was present and valid. Otherwise the client cannot tell a
    /// first start from a lost disk and learns its last number first (`learn.rs`).
    pub trusted: bool,
}

/// Read the client's records.
///
/// A missing, corrupt or undecodable `client/out` record loses the last request number: the
/// client is then not `trusted` and learns the number from the execution replicas before it
/// issues a request (`learn.rs`), and replies name their operation so that a number reused
/// anyway is never answered with another operation's result. The operation outstanding at the
/// crash is lost with the record (it may still be executed, once).
pub(crate) fn resume(recovered: &Recovered, counters: &mut Counters) -> Resumed {
    let mut resumed = Resumed {
        next_nc: 1,
        outstanding: None,
        next_ro: 1,
        trusted: false,
    };
    match read::<OutRecord>(recovered, OUT_KEY) {
        Read::Absent => {}
        Read::Corrupt => counters.add("recovered-corrupt"),
        Read::Valid(OutRecord::Outstanding { nc, op }) if nc >= 1 => {
            resumed.trusted = true;
            if op.len() > crate::MAX_OPERATION_BYTES {
                // Written by a version that did not refuse it: no frame can carry it, so it
                // was never sent and resending it would occupy this client forever. Its
                // number was never used; the next request takes it.
                counters.add("recovered-oversized-dropped");
                resumed.next_nc = nc;
            } else {
                resumed.next_nc = nc.saturating_add(1);
                resumed.outstanding = Some((nc, op));
            }
        }
        Read::Valid(OutRecord::Completed { nc }) if nc >= 1 => {
            resumed.next_nc = nc.saturating_add(1);
            resumed.trusted = true;
        }
        Read::Valid(_) => counters.add("recovered-corrupt"),
    }
    // A damaged span the store could not attribute may have hidden a newer `client/out`
    // behind an older one that still reads as valid (a rolled-back record): resending that
    // request or numbering from it could reuse a number. Distrust the record and learn.
    if resumed.trusted && recovered.corrupt.iter().any(|k| k.starts_with("?corrupt@")) {
        counters.add("recovered-damaged-span");
        resumed.trusted = false;
        resumed.outstanding = None;
        // Nor its number: one above a request that never reached a quorum would leave a gap
        // the order stage refuses for good (found by `plumb sim --seed 942 --u 1 --r 0`).
        resumed.next_nc = 1;
    }
    match read::<ReqNo>(recovered, RO_KEY) {
        Read::Absent => {}
        Read::Valid(upto) if upto >= 1 => resumed.next_ro = upto,
        // Limitation: numbers may now repeat ones used before the crash. Replies name the read
        // they answer, so only a read of the very same bytes can be answered by a reply to
        // the old one, and only if every execution replica's reply to it was still in flight
        // across the restart: counted, not prevented.
        Read::Valid(_) | Read::Corrupt => counters.add("recovered-corrupt-ro"),
    }
    resumed
}

enum Read<T> {
    Absent,
    Corrupt,
    Valid(T),
}

fn read<T: serde::de::DeserializeOwned>(recovered: &Recovered, key: &str) -> Read<T> {
    if recovered.corrupt.iter().any(|k| k == key) {
        return Read::Corrupt;
    }
    match recovered.records.get(key) {
        None => Read::Absent,
        Some(bytes) => decode(bytes).map_or(Read::Corrupt, Read::Valid),
    }
}
