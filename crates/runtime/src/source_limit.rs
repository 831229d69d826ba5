//! Connections per source address. A node serves whoever connects, so one source that opens
//! connections as fast as it can (seed 004 Table 3.3's "TCP network flooding": a single faulty
//! client that repeatedly requests TCP connections, which crashed the Q/U and HQ servers)
//! would otherwise make every accepted connection cost a task, buffers and a descriptor. Each source gets a bucket of new connections that refills at a steady rate
//! and a cap on connections open at once; over either, the connection is closed as soon as
//! it is accepted, before anything is spawned or read for it. Correct clients connect once per
//! server and reconnect rarely, far below both.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Connections one source address may hold open at once.
pub const MAX_OPEN_PER_SOURCE: u32 = 1024;
/// New connections one source may open per second, sustained.
pub const NEW_PER_SOURCE_PER_S: u32 = 200;
/// New connections one source may open in a burst (a gateway's pool, a benchmark's clients,
/// starting together).
pub const NEW_BURST_PER_SOURCE: u32 = 1024;

/// Why a connection was closed unserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverLimit {
    /// Its source already holds [`MAX_OPEN_PER_SOURCE`] connections.
    Open,
    /// Its source opened connections faster than [`NEW_PER_SOURCE_PER_S`].
    Rate,
}

#[derive(Debug)]
struct Source {
    open: u32,
    /// New connections the source may still open now.
    tokens: f64,
    refilled: Instant,
}

/// The per-source accounting of one listener (shared by its connections).
#[derive(Debug, Default)]
pub struct SourceLimit {
    sources: Mutex<HashMap<IpAddr, Source>>,
}

/// An admitted connection: counts as open for its source until dropped.
#[derive(Debug)]
pub struct Admitted {
    limit: Arc<SourceLimit>,
    source: IpAddr,
}

impl SourceLimit {
    pub fn new() -> Arc<SourceLimit> {
        Arc::new(SourceLimit::default())
    }

    /// Admit a connection from `source` now, or say which limit it is over.
    pub fn admit(self: &Arc<Self>, source: IpAddr, now: Instant) -> Result<Admitted, OverLimit> {
        let mut sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        if sources.len() >= 4096 {
            // Forget sources with nothing open whose bucket has refilled: they are as if new.
            sources.retain(|_, s| s.open > 0 || refill(s, now) < f64::from(NEW_BURST_PER_SOURCE));
        }
        let s = sources.entry(source).or_insert(Source {
            open: 0,
            tokens: f64::from(NEW_BURST_PER_SOURCE),
            refilled: now,
        });
        s.tokens = refill(s, now);
        s.refilled = now;
        if s.open >= MAX_OPEN_PER_SOURCE {
            return Err(OverLimit::Open);
        }
        if s.tokens < 1.0 {
            return Err(OverLimit::Rate);
        }
        s.tokens -= 1.0;
        s.open += 1;
        Ok(Admitted {
            limit: self.clone(),
            source,
        })
    }

    /// Connections open from `source`.
    pub fn open_from(&self, source: IpAddr) -> u32 {
        let sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        sources.get(&source).map_or(0, |s| s.open)
    }
}

/// The bucket of `s` refilled up to `now` (not stored).
fn refill(s: &Source, now: Instant) -> f64 {
    let elapsed = now.saturating_duration_since(s.refilled).as_secs_f64();
    (s.tokens + elapsed * f64::from(NEW_PER_SOURCE_PER_S)).min(f64::from(NEW_BURST_PER_SOURCE))
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut sources = self.limit.sources.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = sources.get_mut(&self.source) {
            s.open = s.open.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn a_source_over_its_burst_is_refused_until_the_bucket_refills() {
        let limit = SourceLimit::new();
        let t0 = Instant::now();
        let mut held = Vec::new();
        for _ in 0..NEW_BURST_PER_SOURCE {
            held.push(limit.admit(ip(2), t0).expect("within the burst"));
            held.pop(); // closes at once: only the rate counts
        }
        assert_eq!(limit.admit(ip(2), t0).unwrap_err(), OverLimit::Rate);
        // Another source is not affected.
        assert!(limit.admit(ip(3), t0).is_ok());
        // A tenth of a second later, a tenth of the rate is back.
        let later = t0 + Duration::from_millis(100);
        for _ in 0..NEW_PER_SOURCE_PER_S / 10 {
            limit.admit(ip(2), later).expect("refilled");
        }
        assert_eq!(limit.admit(ip(2), later).unwrap_err(), OverLimit::Rate);
    }

    #[test]
    fn a_source_holding_too_many_connections_is_refused_until_one_closes() {
        let limit = SourceLimit::new();
        let mut now = Instant::now();
        let mut held = Vec::new();
        for _ in 0..MAX_OPEN_PER_SOURCE {
            now += Duration::from_millis(10); // slow enough for the rate
            held.push(limit.admit(ip(2), now).expect("under the cap"));
        }
        assert_eq!(limit.open_from(ip(2)), MAX_OPEN_PER_SOURCE);
        now += Duration::from_secs(10);
        assert_eq!(limit.admit(ip(2), now).unwrap_err(), OverLimit::Open);
        held.pop();
        assert!(limit.admit(ip(2), now).is_ok());
    }
}
