//! What the client keeps on disk (CS3) and how it reads it back after a restart.

use plumb_core::storage::{decode, encode};
use plumb_core::{Counters, Recovered, StoreOp};
use plumb_wire::{Life, ReqNo};
use serde::{Deserialize, Serialize};

/// The most recently issued ordered request. Read-only numbers are not kept: a read's
/// identity includes the life it was issued in, so reusing a number in a later life is
/// harmless.
pub(crate) const OUT_KEY: &str = "client/out";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum OutRecord {
    /// Issued and not yet answered: resent on restart (CL1 survives a crash), under the life
    /// it was issued in so that the resend is the same request.
    Outstanding {
        life: Life,
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

/// What the client resumes from.
#[derive(Debug, Default)]
pub(crate) struct Resumed {
    pub next_nc: ReqNo,
    /// An issued but unanswered request (its life, number and operation), to resend on start.
    pub outstanding: Option<(Life, ReqNo, Vec<u8>)>,
    /// The ordered-request record was present and valid. Otherwise the client cannot tell a
    /// first start from a lost disk and learns its last number first (`learn.rs`).
    pub trusted: bool,
}

/// Read the client's records.
///
/// A missing, corrupt or undecodable `client/out` record loses the last request number: the
/// client is then not `trusted` and learns the number from the execution replicas before it
/// issues a request (`learn.rs`), and replies name their request, life included, so that a
/// number reused anyway is never answered with an earlier life's result. The operation
/// outstanding at the crash is lost with the record (it may still be executed, once).
/// A record written by a version without lives does not decode: it is treated as lost.
pub(crate) fn resume(recovered: &Recovered, counters: &mut Counters) -> Resumed {
    let mut resumed = Resumed {
        next_nc: ReqNo(1),
        outstanding: None,
        trusted: false,
    };
    match read::<OutRecord>(recovered, OUT_KEY) {
        Read::Absent => {}
        Read::Corrupt => counters.add("recovered-corrupt"),
        Read::Valid(OutRecord::Outstanding { life, nc, op }) if nc >= ReqNo(1) => {
            resumed.trusted = true;
            if op.len() > crate::MAX_OPERATION_BYTES {
                // Written by a version that did not refuse it: no frame can carry it, so it
                // was never sent and resending it would occupy this client forever. Its
                // number was never used; the next request takes it.
                counters.add("recovered-oversized-dropped");
                resumed.next_nc = nc;
            } else {
                resumed.next_nc = nc.next();
                resumed.outstanding = Some((life, nc, op));
            }
        }
        Read::Valid(OutRecord::Completed { nc }) if nc >= ReqNo(1) => {
            resumed.next_nc = nc.next();
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
        resumed.next_nc = ReqNo(1);
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
