//! Giving back the memory of keys that expire unread. The store removes a due key when an
//! operation names it (expiry is per object, so that an operation touches only its access
//! set: docs/objects.md "Access sets"); a key set to expire and never named again would stay
//! stored. Redis samples such keys in the background; a replicated store can only order the
//! removal, so the gateway orders `PurgeExpired` every [`PURGE_EVERY`], as long as it served
//! anything since the last one (an idle cluster stays idle). Several gateways each send
//! theirs; a purge with nothing due removes nothing.

use super::server::GatewayStats;
use plumb_gateway::pool::Pool;
use plumb_kv::{KvOp, KvResult};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How often the gateway orders a purge of due keys while it is serving.
pub const PURGE_EVERY: Duration = Duration::from_secs(10);

/// Order `PurgeExpired` every [`PURGE_EVERY`] while the gateway submits operations; counts
/// the keys removed in `stats`. Runs until the process stops.
pub async fn purge_expired(pool: Arc<Pool>, stats: Arc<GatewayStats>) {
    let mut seen = stats.submitted.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(PURGE_EVERY).await;
        let submitted = stats.submitted.load(Ordering::Relaxed);
        if submitted == seen {
            continue;
        }
        seen = submitted;
        match pool.call(KvOp::PurgeExpired.encode(), false).await {
            Ok(reply) => {
                if let Ok(KvResult::Int(n)) = KvResult::decode(&reply) {
                    let n = u64::try_from(n).unwrap_or(0);
                    stats.expired_purged.fetch_add(n, Ordering::Relaxed);
                }
            }
            // The cluster is unavailable: the next round tries again.
            Err(_) => {
                stats.purge_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
