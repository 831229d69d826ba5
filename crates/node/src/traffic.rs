//! Frames this node's router moved, by the stage that sent them and where they went: the
//! messages of the per-operation cost table (`plumb bench`, docs/performance.md "The cost
//! model"). Counted at the router, which every frame a stage sends passes through.

use plumb_wire::Principal;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a frame went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// A stage of this node: a mailbox push, no socket.
    Local,
    /// A stage on another node: a peer link.
    Peer,
    /// A client's connection.
    Client,
}

impl Dest {
    pub const ALL: [Dest; 3] = [Dest::Local, Dest::Peer, Dest::Client];

    pub fn name(self) -> &'static str {
        match self {
            Dest::Local => "local",
            Dest::Peer => "peer",
            Dest::Client => "client",
        }
    }
}

/// The roles a frame can come from: a node's three stages, and clients (frames received).
const ROLES: [&str; 4] = ["auth", "order", "exec", "client"];

fn role(p: Principal) -> usize {
    match p {
        Principal::Auth(_) => 0,
        Principal::Order(_) => 1,
        Principal::Exec(_) => 2,
        Principal::Client(_) => 3,
    }
}

#[derive(Default)]
pub struct Traffic {
    frames: [[AtomicU64; 3]; 4],
    bytes: [[AtomicU64; 3]; 4],
}

impl Traffic {
    /// A frame of `len` bytes from `from`, routed to `to`.
    pub fn sent(&self, from: Principal, to: Dest, len: usize) {
        let (r, d) = (role(from), to as usize);
        self.frames[r][d].fetch_add(1, Ordering::Relaxed);
        self.bytes[r][d].fetch_add(len as u64, Ordering::Relaxed);
    }

    /// `(from, to, frames, bytes)` for every pair that moved a frame.
    pub fn snapshot(&self) -> Vec<(&'static str, &'static str, u64, u64)> {
        let mut out = Vec::new();
        for (r, name) in ROLES.iter().enumerate() {
            for d in Dest::ALL {
                let frames = self.frames[r][d as usize].load(Ordering::Relaxed);
                if frames > 0 {
                    let bytes = self.bytes[r][d as usize].load(Ordering::Relaxed);
                    out.push((*name, d.name(), frames, bytes));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{ExecId, OrderId};

    #[test]
    fn frames_are_counted_by_sender_role_and_destination() {
        let t = Traffic::default();
        t.sent(Principal::Order(OrderId(1)), Dest::Peer, 100);
        t.sent(Principal::Order(OrderId(2)), Dest::Peer, 50);
        t.sent(Principal::Exec(ExecId(0)), Dest::Client, 7);
        t.sent(Principal::Client(9), Dest::Local, 3);
        assert_eq!(
            t.snapshot(),
            vec![
                ("order", "peer", 2, 150),
                ("exec", "client", 1, 7),
                ("client", "local", 1, 3),
            ]
        );
    }
}
