//! A faulty node, for test builds only (feature `adversary`): its stages run the correct code,
//! and what they send passes through a [`plumb_adversary::Adversary`] that rewrites, delays or
//! drops it; a starving order replica does not see its victim's requests; a flooding node
//! also streams large junk frames at every peer.
//!
//! A behaviour applies to the node's principals of the stage it is meant for (a slow primary
//! to its order replica, wrong replies to its execution replica); `silent` and `flood` apply to
//! every principal of the node.

use crate::router::Router;
use plumb_adversary::{Adversary, Behaviour, Outgoing};
use plumb_core::KeyRing;
use plumb_runtime::Outbox;
use plumb_wire::Principal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Size of each junk frame a flooding node sends (seed 004 §3.6.2 used maximal 9 KB UDP
/// messages; TCP frames can be larger).
const FLOOD_FRAME_BYTES: usize = 64 << 10;

/// Whether `b` is acted out by principal `p`.
pub fn acts(b: Behaviour, p: Principal) -> bool {
    matches!(b, Behaviour::Silent | Behaviour::Flood) || Behaviour::for_stage(p).contains(&b)
}

/// The adversaries of the node's principals that act `b` out.
pub fn adversaries(
    b: Behaviour,
    rings: &HashMap<Principal, KeyRing>,
    medium: usize,
) -> HashMap<Principal, Adversary> {
    rings
        .keys()
        .filter(|p| acts(b, **p))
        .map(|p| (*p, Adversary::new(b, 1.0, medium, p.label())))
        .collect()
}

/// The outbox of a faulty node's stages.
pub struct FaultyOutbox {
    pub inner: Arc<Router>,
    pub rings: HashMap<Principal, KeyRing>,
    pub acting: HashMap<Principal, Mutex<Adversary>>,
    pub runtime: tokio::runtime::Handle,
}

impl Outbox for FaultyOutbox {
    fn send(&self, from: Principal, to: Principal, frame: Vec<u8>) {
        let (Some(adversary), Some(ring)) = (self.acting.get(&from), self.rings.get(&from)) else {
            self.inner.send(from, to, frame);
            return;
        };
        let outcome = adversary
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .outgoing(ring, frame);
        match outcome {
            Outgoing::Drop => {}
            Outgoing::Keep(f) | Outgoing::Replace(f) => self.inner.send(from, to, f),
            Outgoing::Delay(f, micros) => {
                let inner = self.inner.clone();
                self.runtime.spawn(async move {
                    tokio::time::sleep(Duration::from_micros(micros)).await;
                    inner.send(from, to, f);
                });
            }
        }
    }
}

/// Stream junk frames at every peer node for as long as the process runs: valid headers from
/// one of this node's principals to one of the peer's, random bodies, MACs that fail. Each
/// costs the receiver a mailbox slot and a MAC check.
pub async fn flood(router: Arc<Router>, me: Principal) {
    use rand::RngCore;
    let mut body = vec![0u8; FLOOD_FRAME_BYTES];
    rand::thread_rng().fill_bytes(&mut body);
    let mut targets: Vec<(u16, Principal)> = Vec::new();
    for (p, node) in &router.remote {
        if !targets.iter().any(|(n, _)| n == node) && !matches!(p, Principal::Client(_)) {
            targets.push((*node, *p));
        }
    }
    targets.sort();
    loop {
        let mut sent = 0;
        for (node, to) in &targets {
            let Some(link) = router.links.get(node) else {
                continue;
            };
            let frame = junk(me, *to, &body);
            for _ in 0..16 {
                if link.send(frame.clone()) {
                    sent += 1;
                }
            }
        }
        // A full link refuses frames: wait for it to drain rather than spin.
        let pause = if sent == 0 { 5 } else { 1 };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

fn junk(from: Principal, to: Principal, body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(plumb_wire::envelope::HEADER + body.len() + 16);
    frame.extend_from_slice(&plumb_wire::envelope::MAGIC);
    frame.push(plumb_wire::envelope::VERSION);
    frame.extend_from_slice(&from.label().to_le_bytes());
    frame.extend_from_slice(&to.label().to_le_bytes());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(body);
    frame.extend_from_slice(&[0u8; 16]);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{AuthId, ExecId, OrderId};

    #[test]
    fn junk_parses_as_a_frame_from_me_to_the_peer() {
        let f = junk(
            Principal::Order(OrderId(1)),
            Principal::Order(OrderId(2)),
            &[7; 100],
        );
        let env = plumb_wire::Envelope::parse(&f).unwrap();
        assert_eq!(
            (env.sender, env.receiver),
            (Principal::Order(OrderId(1)), Principal::Order(OrderId(2)))
        );
    }

    #[test]
    fn behaviours_go_to_their_stage() {
        assert!(acts(
            Behaviour::SlowPrimary(1_000),
            Principal::Order(OrderId(0))
        ));
        assert!(!acts(
            Behaviour::SlowPrimary(1_000),
            Principal::Exec(ExecId(0))
        ));
        assert!(acts(Behaviour::WrongReplies, Principal::Exec(ExecId(0))));
        assert!(acts(Behaviour::Silent, Principal::Auth(AuthId(0))));
    }
}
