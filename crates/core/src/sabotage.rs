//! Deliberate protocol breakages, compiled only with the `sabotage` feature. Each is a named
//! switch that one place in a stage consults; the simulator turns one on and must then report
//! violations. This is how we know the simulator's checks are not vacuous.

use std::sync::atomic::{AtomicU32, Ordering};

/// Declares the switches and [`ALL`] from one list, so that no switch can be left out of it.
macro_rules! sabotages {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Sabotage {
            $($(#[$doc])* $variant,)*
        }

        /// Every switch with its name (`plumb sim --sabotage NAME`).
        pub const ALL: &[(Sabotage, &str)] = &[$((Sabotage::$variant, $name),)*];
    };
}

sabotages! {
    /// Order replicas prepare and commit with one vote fewer than the medium quorum.
    CommitQuorumMinusOne = "commit-quorum-minus-one",
    /// Execution replicas load a transferred checkpoint without checking it against its token.
    UncheckedCheckpoint = "unchecked-checkpoint",
    /// Order replicas skip the per-client sequence check on proposed requests.
    SkipRequestSequenceCheck = "skip-request-sequence-check",
    /// Execution replicas deliver a batch learned from a single NEXT-BATCH instead of r+1.
    ExecLearnBelowQuorum = "exec-learn-below-quorum",
    /// Execution replicas learn a batch from a single TENTATIVE-BATCH instead of `n - u`
    /// matching ones of one view: a faulty order replica's batch is executed.
    TentativeBelowQuorum = "tentative-below-quorum",
    /// An order replica whose records are gone starts as if new, without the recovery
    /// protocol, and votes at once.
    Amnesia = "amnesia",
    /// Order replicas accept a batch time however far behind their clock (the old one-sided
    /// check): a faulty primary can hold agreed time still, then jump it (caught by
    /// `TIME-bound`, with the simulator's bent clocks).
    TimeUnboundedBelow = "time-unbounded-below",
    /// Clients draw no life: every start uses life 0, so a new life that reuses a number with
    /// the same bytes sends its previous life's very request again, and accepts its reply
    /// (caught by `CLIENT-one-life`).
    SameBytesRetransmission = "same-bytes-retransmission",
    /// Order replicas keep the CHECKPOINT votes below a checkpoint that became stable (caught
    /// at that step by the order stage's own `INV-checkpoints-above-stable`).
    CheckpointKeepsOldVotes = "checkpoint-keeps-old-votes",
    /// Order replicas keep the VIEW-CHANGEs for the view they enter (caught at that step by the
    /// order stage's own `INV-entered-holds-only-later-view-changes`).
    ViewKeepsSpentChanges = "view-keeps-spent-changes",
    /// Order replicas keep early PRE-PREPAREs for slots filled otherwise (by catch-up or a
    /// checkpoint) (caught at that step by the agreement log's own `INV-early-beyond-accepted`).
    LogKeepsObsoleteEarly = "log-keeps-obsolete-early",
    /// Execution replicas do not free a vote's bytes when a later vote of the same order
    /// replica replaces it (caught at that step by the learning ledger's own
    /// `INV-vote-bytes-are-votes`; left alone, a correct replica's budget fills with nothing).
    VoteBytesKeptOnReplace = "vote-bytes-kept-on-replace",
    /// Order replicas accept a NEW-VIEW from any order replica, signed by it, not only from the
    /// new view's primary.
    AnyNewView = "any-new-view",
    /// Execution replicas answer read-only requests right after a (re)start, from the state
    /// of their last checkpoint, without waiting for the order stage's probe answers.
    StaleReadOnly = "stale-read-only",
    /// Authentication replicas never supersede a stranded pending request: a client that lost
    /// its record and reuses the number of a request its previous life sent to too few
    /// replicas is stuck for good.
    KeepStranded = "keep-stranded",
    /// An order replica restarted as the active primary of its view goes on proposing in it,
    /// although it may have sent PRE-PREPAREs it lost in the crash.
    ReproposeAfterRestart = "primary-reproposes-after-restart",
    /// The key-value store runs a transaction whatever its watched keys now hold (caught by
    /// `plumb sim --app redis`, whose workload has transactions).
    TransactionIgnoresWatch = "transaction-ignores-watch",
    /// The key-value store's pop from the first non-empty list (under `BLPOP`) returns the
    /// element but leaves it in the list (caught by `plumb sim --app redis`'s queue check).
    PopKeepsElement = "pop-keeps-element",
    /// The key-value store's `PUBLISH` pushes each message twice (under two event ids), so a
    /// subscriber receives it twice (caught by `plumb sim --app redis`'s pub/sub check).
    PublishPushesTwice = "publish-pushes-twice",
    /// A script's write command (`redis.call('incr', ...)`) is applied twice (caught by
    /// `plumb sim --app redis`, whose workload has scripts).
    ScriptCallAppliesTwice = "script-call-applies-twice",
    /// The key-value store rounds a relative expiry (`SET ... PX`) down to whole seconds, so a
    /// key set to live 1.9 s lives 1 s (caught by `plumb sim --app redis`'s KV-ttl).
    ExpiryRoundsDown = "expiry-rounds-down",
    /// The key-value store's access set of an operation on two or more keys leaves out the
    /// last key's bucket (caught by the simulator's `access-set` check, which runs each batch
    /// again on only its access sets' objects).
    StaleAccessSet = "stale-access-set",
    /// Execution replicas leave the last object a batch changed out of the write set they
    /// report (caught by the simulator's `ES-report`, which compares every report with the
    /// reference replay's; correct replicas still agree with each other).
    ReportSkipsWrite = "report-skips-write",
    /// Execution replicas send a checkpoint's token without waiting for the checkpoint's sync
    /// (caught by the simulator's `ES4-token-durable`, which checks at every token a correct
    /// execution replica sends that its disk holds that checkpoint, or a later one, durably).
    TokenBeforeSync = "token-before-sync",
    /// An execution replica holding part of the state uses an object a peer sent although its
    /// proof does not verify (caught by the simulator's `object-verified`, which compares
    /// every object a correct replica fetched with the reference state it must equal).
    UnverifiedObject = "unverified-object",
    /// An execution replica that loaded on demand keeps the objects of its former state under
    /// a subtree the fill found empty (caught by the simulator's `ES-report-agreement`: a batch
    /// reading one answers otherwise than correct replicas do).
    EmptiedObjectKept = "emptied-object-kept",
    /// Order replicas record a batch's report as agreed on the first EXEC-REPORT of it instead
    /// of `r + 1` matching ones (caught by the simulator's `OS-report-quorum` once a faulty
    /// execution replica's wrong report comes first).
    ReportQuorumOne = "report-quorum-one",
    /// A sleeping execution replica (ZZ) wakes on the first order replica's WAKE instead of
    /// `r + 1` (caught by the simulator's `ZZ-wake-quorum`, which counts the order replicas
    /// whose WAKEs reached the sleeper before it woke).
    WakeOnOne = "wake-on-one",
    /// A woken execution replica (ZZ) goes back to sleep on the first order replica's SLEEP
    /// instead of `r + 1` (caught by the simulator's `ZZ-sleep-quorum`, which counts the order
    /// replicas whose SLEEPs reached it before it slept).
    SleepOnOne = "sleep-on-one",
    /// Order replicas let the recent spreads between the actives' reports raise the
    /// late-report bound without a most (ZZ), so an active that lags a little more each time
    /// is never found late (caught by the simulator's latency bound `LB`, which in ZZ mode
    /// allows the bound's most and a wake).
    ReportBoundUncapped = "report-bound-uncapped",
    /// The coordination application never renews a session once opened (its requests, a
    /// resume and a Touch leave it as it was), so a session whose client is busy expires
    /// (caught by `plumb sim --app coord`'s COORD-session-live).
    SessionNotRenewed = "session-not-renewed",
    /// The coordination application leaves a one-shot data watch registered when it fires, so
    /// it fires again at the next change (caught by `plumb sim --app coord`'s COORD-watch).
    CoordWatchFiresTwice = "watch-fires-twice",
    /// The coordination application expires a session but keeps its ephemeral nodes (caught by
    /// `plumb sim --app coord`'s COORD-ephemeral).
    CoordExpiryKeepsEphemeral = "expiry-keeps-ephemeral",
    /// The Prophecy sketcher accepts a fast reply whatever its sketch, as if every read were
    /// whitelisted (caught by `plumb sim --sketcher`'s delay-once check).
    SketcherAcceptsUnmatched = "sketcher-accepts-unmatched",
    /// The Prophecy sketcher updates its history table with every replicated reply, also one
    /// older than the entry (caught by `plumb sim --sketcher`'s delay-once check).
    SketcherTakesOlder = "sketcher-takes-older",
    /// The speculation shim executes a predicated request without checking its predicates
    /// (caught by `plumb sim --app spec`'s SPEC-predicate).
    PredicatesUnchecked = "predicates-unchecked",
    /// The speculation shim truncates its reply log on a count local to the replica instead of
    /// at agreed batch numbers (caught by `plumb sim --app spec`'s state and reply checks).
    TruncateNondeterministic = "truncate-nondeterministic",
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
