//! TIME-bound: agreed time stays within `X = max_clock_skew + e` of real time, where `e` is how
//! far the furthest correct order replica's clock is from real (global) time in the run
//! (docs/protocol.md, "Agreed time").
//!
//! A batch's time was accepted by at least one correct order replica against its own clock,
//! to within the skew either side (a replica that took it on `r + 1` peers' word has a correct
//! one among them). That acceptance came after every request in the batch was invoked and
//! before the batch was first delivered, so:
//! - agreed time is at most `X` past the global time of its first delivery (a faulty primary
//!   cannot run time ahead: sessions and keys would expire early);
//! - agreed time is at least the invocation of each of its requests less `X` (a faulty
//!   primary cannot hold time back, then leap: a session pinged in time would see its pings
//!   stamped too early).
//!
//! Agreed time is `max(proposed, previous + 1)`: the `+ 1 µs` a batch can add over its
//! proposal is allowed for.

use super::Checker;
use crate::faults::secs;
use crate::workload::Workload;
use plumb_core::DeliveredRequest;
use plumb_wire::{Micros, ReqNo};
use std::collections::HashMap;

pub fn check_agreed_time(checker: &mut Checker, workload: &Workload, bound: Micros) {
    // The earliest invocation of each (client, number): a number may carry another operation
    // after a lost record; the earliest is the weaker lower bound, never a false alarm.
    let mut invoked: HashMap<(u32, ReqNo), Micros> = HashMap::new();
    for (c, load) in workload.clients.iter().enumerate() {
        if !load.correct {
            continue;
        }
        for op in &load.history {
            for nc in &op.ncs {
                let e = invoked.entry((c as u32, *nc)).or_insert(op.invoke);
                *e = (*e).min(op.invoke);
            }
        }
    }
    let mut found = Vec::new();
    for (n, (seq, b)) in checker.agreed.iter().enumerate() {
        let slack = n as Micros + 1;
        if b.agreed_time > b.at + bound + slack {
            found.push(format!(
                "batch {seq} has agreed time {}, {} ahead of its first delivery at {} (bound {})",
                secs(b.agreed_time),
                secs(b.agreed_time - b.at),
                secs(b.at),
                secs(bound)
            ));
        }
        for &DeliveredRequest { client: c, nc, .. } in &b.requests {
            let Some(&invoke) = invoked.get(&(c, nc)) else {
                continue;
            };
            if b.agreed_time.saturating_add(bound) < invoke {
                found.push(format!(
                    "batch {seq} has agreed time {}, {} behind the invocation of c{c}'s request {nc} at {} (bound {})",
                    secs(b.agreed_time),
                    secs(invoke - b.agreed_time),
                    secs(invoke),
                    secs(bound)
                ));
            }
        }
    }
    for detail in found {
        checker.violate("TIME-bound", detail);
    }
}
