//! Client speculation under every fault (`plumb sim --app spec`): speculative sessions chain
//! increments on early and predicted replies, some early repliers lie, and every seed must
//! keep linearizability against SpecBench (aborted requests as no-ops), SPEC-predicate,
//! SPEC-rollback and the library's properties. `plumb sim --app spec --seeds 1000` runs the
//! long sweep; this one also makes sure the runs exercise what the checks judge.

use plumb_sim::spec::Spec;
use plumb_sim::{run_app_seed, SimOptions};

fn sweep(u: u16, r: u16, seeds: std::ops::Range<u64>) {
    let mut failures = Vec::new();
    let mut counters = plumb_core::Counters::default();
    for seed in seeds {
        let report = run_app_seed(&Spec, &SimOptions::new(seed, u, r));
        counters.add_all(&report.stats.counters);
        if let Some(v) = report.violations.first() {
            failures.push(format!("{} -> {v}", report.replay_command()));
        }
    }
    assert!(
        failures.is_empty(),
        "failing seeds:\n{}",
        failures.join("\n")
    );
    let count = |name: &str| {
        counters
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| v)
    };
    // Without these the checks above would judge nothing speculative.
    for what in [
        "spec-early-speculated",
        "spec-predicted",
        "spec-corrected",
        "spec-rolled-back-answered",
        "spec-retry",
    ] {
        assert!(count(what) > 0, "no {what} in the sweep: {counters:?}");
    }
}

#[test]
fn byzantine_u1_r1() {
    sweep(1, 1, 0..20);
}

#[test]
fn hybrid_u2_r1() {
    sweep(2, 1, 0..10);
}

/// Seeds that once failed, `(seed, u, r, what it found)`; they must keep passing.
const REGRESSIONS: &[(u64, u16, u16, &str)] = &[(
    374,
    2,
    1,
    "a lane that lost its record resent a byte-identical increment under the number of the one \
     it abandoned, and was answered with that one's earlier execution",
), (
    178,
    2,
    1,
    "a lying early reply said WrongToken { value } near u64::MAX and the session hashed its way \
     towards that token: the seed never ended (token_at is bounded now)",
), (
    346,
    1,
    1,
    "a PREPARE that came before its receiver entered the view was dropped, and its sender had \
     committed the slot so never said it again: one PREPARE short for two views (2 s); a COMMIT \
     now stands for its sender's PREPARE",
), (
    891,
    1,
    1,
    "a primary starving one client passed over its request pending across the view change for \
     3.4 s: the fairness check left such requests out (they count as held since the view began \
     now)",
), (
    419,
    2,
    1,
    "SPEC-rollback: a lane that lost its record sent again the increment its previous life had in \
     flight, under the same number; that life's copy was ordered under it and answered what the \
     session had predicted, so another lane's predicate on the number held on every replica \
     while the session, seeing its own copy renumbered and answered WrongToken, rolled the \
     dependent back; predicates now name the request's identity (life included), not only its \
     number",
), (
    882,
    2,
    1,
    "LB: over the latency bound by 6 ms (1.693 s): a retransmission after 0.996 s and a view \
     change that waited exactly two timeouts left no time for the messages themselves; the \
     bound now allows 16 message delays",
)];

#[test]
fn regressions() {
    for &(seed, u, r, what) in REGRESSIONS {
        // Found before tentative agreement existed: run as found.
        let opts = SimOptions {
            tentative: Some(false),
            ..SimOptions::new(seed, u, r)
        };
        let report = run_app_seed(&Spec, &opts);
        assert!(
            report.ok(),
            "{} ({what}): {:?}",
            report.replay_command(),
            report.violations.first()
        );
    }
}
