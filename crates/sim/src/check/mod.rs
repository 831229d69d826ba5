//! The checkers. Observations of correct principals are checked as they happen (agreement,
//! LS2, LS3); the rest runs once at the end of a seed over what was recorded (LS4-LS7, ES2,
//! LS1/ES3 by reference replay, linearizability, liveness). Every violation is named by the
//! property it breaks.

mod access;
mod agreement;
mod leases;
mod linear;
mod liveness;
mod lives;
mod replies;
mod sequence;
mod time;
mod votes;

pub use leases::{check_leases, Expired, LeaseWatch};
pub use linear::check_linearizability;
pub use liveness::{check_latency_bound, check_liveness, ClientEnd};
pub use lives::check_one_life;
pub use replies::{check_replies, faulty_ordered_ops, ExecEnd, OrderedOp};
pub use sequence::check_sequence;
pub use time::check_agreed_time;

use plumb_core::DeliveredRequest;
use plumb_crypto::Digest;
use plumb_wire::{Micros, Principal, Seq, View};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// One broken property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The property's name: "LS3", "ES-agreement", "LL1", ...
    pub property: &'static str,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated: {}", self.property, self.detail)
    }
}

/// A batch of the agreed sequence, as the first correct execution replica reported it.
#[derive(Clone, Debug)]
pub struct Agreed {
    pub digest: Digest,
    pub agreed_time: Micros,
    pub requests: Vec<DeliveredRequest>,
    pub null: bool,
    /// The batch's random seed, for the reference replay.
    pub seed: u64,
    pub by: Principal,
    /// When it was first delivered (global time).
    pub at: Micros,
}

/// Violations are capped so that one broken property does not drown a run in output; the first
/// of each property is kept beyond the cap ([`Checker::violate`]).
const MAX_VIOLATIONS: usize = 100;

#[derive(Default)]
pub struct Checker {
    violations: Vec<Violation>,
    suppressed: usize,
    /// Checks that ran out of budget without a verdict: failures, never passes.
    undecided: Vec<String>,
    pub warnings: Vec<String>,
    /// The agreed sequence, by batch number.
    pub agreed: BTreeMap<Seq, Agreed>,
    /// Leases the reference replay saw expire (leases.rs).
    pub expired: Vec<Expired>,
    /// Digest each batch was committed with by correct order replicas.
    pub committed: BTreeMap<Seq, (Digest, Principal)>,
    /// The lowest view in which a correct order replica committed each batch.
    pub committed_view: BTreeMap<Seq, View>,
    /// Batches that a correct order replica committed as chosen by a NEW-VIEW (carried over
    /// from an earlier view), not proposed afresh.
    pub carried: BTreeSet<Seq>,
    /// Votes of correct order replicas as they were sent (votes.rs).
    votes: votes::VoteLog,
    /// Byzantine principals of the run and the number of order replicas: a view whose primary
    /// is faulty may legitimately show replicas different NEW-VIEWs.
    pub byzantine: BTreeSet<Principal>,
    pub order_replicas: u64,
    /// Execution checkpoint tokens of correct execution replicas.
    tokens: BTreeMap<Seq, (Digest, Principal)>,
    /// LS3: the batch each correct execution replica's current incarnation delivers next.
    exec_next: HashMap<Principal, Seq>,
    /// Push events correct clients delivered: (client, event id, payload), in delivery order.
    pub pushed: Vec<(plumb_wire::ClientId, u64, Vec<u8>)>,
    /// The first report of each batch by a correct execution replica, and who gave it
    /// (ES-report-agreement, ES-report).
    pub reports: BTreeMap<Seq, (plumb_wire::BatchReport, Principal)>,
    /// Objects correct execution replicas holding part of the state fetched, by the batch
    /// they were fetched before: (replica, object id, digest of the bytes used)
    /// (object-verified, replies.rs).
    pub fetched: BTreeMap<Seq, Vec<(Principal, u64, Digest)>>,
}

impl Checker {
    pub fn violate(&mut self, property: &'static str, detail: String) {
        // Past the cap, the first violation of each property is still kept: a report names
        // every property the run broke, however many violations of another came first (the
        // sabotage gate judges a seed by the properties it names).
        if self.violations.len() < MAX_VIOLATIONS
            || !self.violations.iter().any(|v| v.property == property)
        {
            self.violations.push(Violation { property, detail });
        } else {
            self.suppressed += 1;
        }
    }

    /// A check that could not decide (its search budget ran out). The seed fails.
    pub fn undecided(&mut self, text: String) {
        self.undecided.push(text);
    }

    pub fn warn(&mut self, text: String) {
        if self.warnings.len() < MAX_VIOLATIONS {
            self.warnings.push(text);
        }
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// (violations, violations beyond the cap, undecided checks, warnings).
    pub fn into_verdicts(self) -> (Vec<Violation>, usize, Vec<String>, Vec<String>) {
        (
            self.violations,
            self.suppressed,
            self.undecided,
            self.warnings,
        )
    }

    pub fn undecided_checks(&self) -> &[String] {
        &self.undecided
    }

    pub fn violation_count(&self) -> usize {
        self.violations.len() + self.suppressed
    }
}

/// What the checkers' unit tests build their records from: every test module here needs a
/// workload whose configuration plays no part (the tests record operations by hand) and
/// batches that differ only in their digest, time, requests and delivery time.
#[cfg(test)]
pub(crate) mod test_support {
    use super::Agreed;
    use crate::config::WorkloadConfig;
    use crate::rng::SimRng;
    use crate::workload::Workload;
    use plumb_core::DeliveredRequest;
    use plumb_crypto::Digest;
    use plumb_wire::{ExecId, Micros, Principal};

    /// A workload of `clients` clients, `byzantine` among them faulty, that generates nothing
    /// by itself: no keys, and it stops at time 0.
    pub(crate) fn workload(clients: u32, byzantine: Option<u32>) -> Workload {
        let cfg = WorkloadConfig {
            keys: vec![],
            think_min_us: 1,
            think_max_us: 2,
            read_only_gets: 0.0,
            extra_gets: 0.0,
            stop_at: 0,
        };
        Workload::new(cfg, SimRng::new(0, "t"), clients, byzantine)
    }

    /// A non-null batch as execution replica 0 reported it.
    pub(crate) fn agreed(
        digest: Digest,
        agreed_time: Micros,
        requests: Vec<DeliveredRequest>,
        at: Micros,
    ) -> Agreed {
        Agreed {
            digest,
            agreed_time,
            requests,
            null: false,
            seed: 0,
            by: Principal::Exec(ExecId(0)),
            at,
        }
    }
}
