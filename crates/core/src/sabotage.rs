//! Deliberate protocol breakages, compiled only with the `sabotage` feature. Each is a named
//! switch that one place in a stage consults; the simulator turns one on and must then report
//! violations. This is how we know the simulator's checks are not vacuous.

use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sabotage {
    /// Order replicas prepare and commit with one vote fewer than the medium quorum.
    CommitQuorumMinusOne,
    /// Execution replicas load a transferred checkpoint without checking it against its token.
    UncheckedCheckpoint,
    /// Order replicas skip the per-client sequence check on proposed requests.
    SkipRequestSequenceCheck,
    /// Execution replicas deliver a batch learned from a single NEXT-BATCH instead of r+1.
    ExecLearnBelowQuorum,
    /// An order replica whose records are gone starts as if new, without the recovery
    /// protocol, and votes at once.
    Amnesia,
    /// Order replicas accept a NEW-VIEW from any order replica, signed by it, not only from the
    /// new view's primary.
    AnyNewView,
    /// Execution replicas answer read-only requests right after a (re)start, from the state
    /// of their last checkpoint, without waiting for the order stage's probe answers.
    StaleReadOnly,
    /// Authentication replicas never supersede a stranded pending request: a client that lost
    /// its record and reuses the number of a request its previous life sent to too few
    /// replicas is stuck for good.
    KeepStranded,
    /// An order replica restarted as the active primary of its view goes on proposing in it,
    /// although it may have sent PRE-PREPAREs it lost in the crash.
    ReproposeAfterRestart,
    /// The key-value store runs a transaction whatever its watched keys now hold (caught by
    /// `plumb sim --app redis`, whose workload has transactions).
    TransactionIgnoresWatch,
    /// The key-value store's pop from the first non-empty list (under `BLPOP`) returns the
    /// element but leaves it in the list (caught by `plumb sim --app redis`'s queue check).
    PopKeepsElement,
    /// The key-value store's `PUBLISH` pushes each message twice (under two event ids), so a
    /// subscriber receives it twice (caught by `plumb sim --app redis`'s pub/sub check).
    PublishPushesTwice,
    /// A script's write command (`redis.call('incr', ...)`) is applied twice (caught by
    /// `plumb sim --app redis`, whose workload has scripts).
    ScriptCallAppliesTwice,
    /// The coordination application leaves a one-shot data watch registered when it fires, so
    /// it fires again at the next change (caught by `plumb sim --app coord`'s COORD-watch).
    CoordWatchFiresTwice,
    /// The coordination application expires a session but keeps its ephemeral nodes (caught by
    /// `plumb sim --app coord`'s COORD-ephemeral).
    CoordExpiryKeepsEphemeral,
    /// The Prophecy sketcher accepts a fast reply whatever its sketch, as if every read were
    /// whitelisted (caught by `plumb sim --sketcher`'s delay-once check).
    SketcherAcceptsUnmatched,
    /// The Prophecy sketcher updates its history table with every replicated reply, also one
    /// older than the entry (caught by `plumb sim --sketcher`'s delay-once check).
    SketcherTakesOlder,
    /// The speculation shim executes a predicated request without checking its predicates
    /// (caught by `plumb sim --app spec`'s SPEC-predicate).
    PredicatesUnchecked,
    /// The speculation shim truncates its reply log on a count local to the replica instead of
    /// at agreed batch numbers (caught by `plumb sim --app spec`'s state and reply checks).
    TruncateNondeterministic,
}

pub const ALL: [(Sabotage, &str); 19] = [
    (Sabotage::CommitQuorumMinusOne, "commit-quorum-minus-one"),
    (Sabotage::UncheckedCheckpoint, "unchecked-checkpoint"),
    (
        Sabotage::SkipRequestSequenceCheck,
        "skip-request-sequence-check",
    ),
    (Sabotage::ExecLearnBelowQuorum, "exec-learn-below-quorum"),
    (Sabotage::Amnesia, "amnesia"),
    (Sabotage::AnyNewView, "any-new-view"),
    (Sabotage::StaleReadOnly, "stale-read-only"),
    (Sabotage::KeepStranded, "keep-stranded"),
    (
        Sabotage::ReproposeAfterRestart,
        "primary-reproposes-after-restart",
    ),
    (
        Sabotage::TransactionIgnoresWatch,
        "transaction-ignores-watch",
    ),
    (Sabotage::PopKeepsElement, "pop-keeps-element"),
    (Sabotage::PublishPushesTwice, "publish-pushes-twice"),
    (
        Sabotage::ScriptCallAppliesTwice,
        "script-call-applies-twice",
    ),
    (Sabotage::CoordWatchFiresTwice, "watch-fires-twice"),
    (
        Sabotage::CoordExpiryKeepsEphemeral,
        "expiry-keeps-ephemeral",
    ),
    (
        Sabotage::SketcherAcceptsUnmatched,
        "sketcher-accepts-unmatched",
    ),
    (Sabotage::SketcherTakesOlder, "sketcher-takes-older"),
    (Sabotage::PredicatesUnchecked, "predicates-unchecked"),
    (
        Sabotage::TruncateNondeterministic,
        "truncate-nondeterministic",
    ),
];

/// The simulated application a sabotage needs to show (`plumb sim --app`): the key-value
/// store's own breakages need a workload that uses what they break. `"sketcher"`: the
/// key-value store with its reads through a Prophecy sketcher (`plumb sim --sketcher`);
/// `"spec"`: speculative sessions over `Speculative<SpecBench>` (`plumb sim --app spec`).
pub fn app_for(s: Sabotage) -> &'static str {
    match s {
        Sabotage::TransactionIgnoresWatch
        | Sabotage::PopKeepsElement
        | Sabotage::PublishPushesTwice
        | Sabotage::ScriptCallAppliesTwice => "redis",
        Sabotage::CoordWatchFiresTwice | Sabotage::CoordExpiryKeepsEphemeral => "coord",
        Sabotage::SketcherAcceptsUnmatched | Sabotage::SketcherTakesOlder => "sketcher",
        Sabotage::PredicatesUnchecked | Sabotage::TruncateNondeterministic => "spec",
        _ => "kv",
    }
}

// The active sabotage is process-wide: the simulator runs one seed at a time in one thread.
static ACTIVE: AtomicU32 = AtomicU32::new(0);

fn code(s: Sabotage) -> u32 {
    ALL.iter()
        .position(|(x, _)| *x == s)
        .map(|i| i as u32 + 1)
        .unwrap_or(0)
}

pub fn by_name(name: &str) -> Option<Sabotage> {
    ALL.iter().find(|(_, n)| *n == name).map(|(s, _)| *s)
}

pub fn set(s: Option<Sabotage>) {
    ACTIVE.store(s.map(code).unwrap_or(0), Ordering::SeqCst);
}

pub fn on(s: Sabotage) -> bool {
    ACTIVE.load(Ordering::Relaxed) == code(s)
}
