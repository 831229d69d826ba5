//! Prometheus counters that mirror totals kept elsewhere (stage counters, atomics, the
//! process-wide cost counters), brought up to date when `/metrics` is read.

use prometheus_client::metrics::counter::Counter;

/// Bring `counter` up to `total`.
pub(crate) fn advance_to(counter: &Counter, total: u64) {
    let now = counter.get();
    if total > now {
        counter.inc_by(total - now);
    }
}
