//! Cutting off a flooding peer (seed 004 §3.4.2, step (a)): a node that sends this node far
//! more than any other peer does, and more than a floor no correct peer reaches, has its
//! frames dropped unread and its connections closed for a while. Per-peer mailboxes already
//! bound the share of a stage's time a flood can take; the cut also saves reading it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes are compared over windows this long.
const WINDOW: Duration = Duration::from_secs(1);

pub struct FloodGuard {
    /// A peer is cut when it sends more than `factor` times every other peer...
    factor: u64,
    /// ...and more than this many bytes in a window.
    floor: u64,
    cut_for: Duration,
    state: Mutex<State>,
}

struct State {
    window_start: Instant,
    bytes: HashMap<u16, u64>,
    cut_until: HashMap<u16, Instant>,
}

impl FloodGuard {
    pub fn new(factor: u64, floor: u64, cut_for: Duration) -> FloodGuard {
        FloodGuard {
            factor,
            floor,
            cut_for,
            state: Mutex::new(State {
                window_start: Instant::now(),
                bytes: HashMap::new(),
                cut_until: HashMap::new(),
            }),
        }
    }

    /// Count `len` bytes from peer node `peer` at `now`. False: the peer is cut off; drop the
    /// frame and close the connection it came on.
    pub fn admit(&self, peer: u16, len: usize, now: Instant) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.cut_until.get(&peer).is_some_and(|until| now < *until) {
            return false;
        }
        *s.bytes.entry(peer).or_insert(0) += len as u64;
        if now.duration_since(s.window_start) < WINDOW {
            return true;
        }
        let window = std::mem::take(&mut s.bytes);
        s.window_start = now;
        for (&p, &sent) in &window {
            let others = window
                .iter()
                .filter(|(q, _)| **q != p)
                .map(|(_, b)| *b)
                .max()
                .unwrap_or(0);
            if sent > self.floor && sent > others.saturating_mul(self.factor) {
                s.cut_until.insert(p, now + self.cut_for);
            }
        }
        s.cut_until.retain(|_, until| now < *until);
        !s.cut_until.contains_key(&peer)
    }

    /// Whether peer node `peer`'s frames are being dropped at `now`.
    pub fn is_cut(&self, peer: u16, now: Instant) -> bool {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.cut_until.get(&peer).is_some_and(|until| now < *until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_sending_far_more_than_all_others_is_cut_then_readmitted() {
        let g = FloodGuard::new(20, 1_000, Duration::from_secs(10));
        let t0 = Instant::now();
        for i in 0..100u64 {
            let t = t0 + Duration::from_millis(i * 10);
            assert!(g.admit(1, 100, t));
            assert!(g.admit(2, 100, t));
            assert!(g.admit(3, 10_000, t));
        }
        // The window closes: peer 3 sent 100x the others and more than the floor.
        let t = t0 + Duration::from_millis(1_001);
        assert!(!g.admit(3, 1, t));
        assert!(g.admit(1, 1, t));
        assert!(!g.admit(3, 1, t + Duration::from_secs(9)));
        assert!(g.admit(3, 1, t + Duration::from_secs(11)));
    }

    #[test]
    fn heavy_but_even_traffic_is_never_cut() {
        let g = FloodGuard::new(20, 1_000, Duration::from_secs(10));
        let t0 = Instant::now();
        for i in 0..300u64 {
            let t = t0 + Duration::from_millis(i * 10);
            for p in 1..4 {
                assert!(g.admit(p, 1_000_000 * p as usize, t));
            }
        }
    }
}
