use crate::{AuthId, ExecId, OrderId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Who sends or receives a message: a client, or one replica of one stage.
///
/// Roles are principals even when several are hosted by one node process: each has its own
/// pairwise keys, and co-location is a driver concern.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Principal {
    Client(u32),
    Auth(AuthId),
    Order(OrderId),
    Exec(ExecId),
}

impl Principal {
    /// A stable 64-bit label, used in key derivation and in the envelope header.
    pub fn label(self) -> u64 {
        match self {
            Principal::Client(c) => (1u64 << 56) | c as u64,
            Principal::Auth(i) => (2u64 << 56) | i.0 as u64,
            Principal::Order(i) => (3u64 << 56) | i.0 as u64,
            Principal::Exec(i) => (4u64 << 56) | i.0 as u64,
        }
    }

    pub fn from_label(label: u64) -> Option<Principal> {
        let low = label & ((1u64 << 56) - 1);
        match label >> 56 {
            1 => u32::try_from(low).ok().map(Principal::Client),
            2 => u16::try_from(low).ok().map(|i| Principal::Auth(AuthId(i))),
            3 => u16::try_from(low)
                .ok()
                .map(|i| Principal::Order(OrderId(i))),
            4 => u16::try_from(low).ok().map(|i| Principal::Exec(ExecId(i))),
            _ => None,
        }
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Client(c) => write!(f, "c{c}"),
            Principal::Auth(i) => write!(f, "a{i}"),
            Principal::Order(i) => write!(f, "o{i}"),
            Principal::Exec(i) => write!(f, "e{i}"),
        }
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
