//! Why a stage dropped a message: one enum, so a reason is named once and `/metrics` labels
//! (`plumb_dropped_total{reason=...}`) cannot drift from the code that counts them. A stage
//! counts a drop with [`crate::Counters::dropped`]; its counter is `drop-` and the label.

use plumb_wire::WireError;

/// Declares [`DropReason`] and its labels from one list.
macro_rules! drop_reasons {
    ($($(#[$doc:meta])* $variant:ident = $label:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DropReason {
            $($(#[$doc])* $variant,)*
        }

        impl DropReason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant,)*];

            /// The label `/metrics` shows.
            pub const fn label(self) -> &'static str {
                match self {
                    $(DropReason::$variant => $label,)*
                }
            }

            /// The counter a stage bumps: `drop-` and the label.
            pub const fn counter(self) -> &'static str {
                match self {
                    $(DropReason::$variant => concat!("drop-", $label),)*
                }
            }
        }
    };
}

drop_reasons! {
    // A frame that does not open (plumb_wire::WireError): any stage.
    BadLength = "bad-length",
    BadMac = "bad-mac",
    BadMagic = "bad-magic",
    BadSender = "bad-sender",
    BadVersion = "bad-version",
    Malformed = "malformed",
    Short = "short",
    TooLarge = "too-large",
    UnknownSender = "unknown-sender",
    WrongReceiver = "wrong-receiver",
    // Any stage.
    Unexpected = "unexpected",
    // Authentication stage.
    Blacklisted = "blacklisted",
    MissingOrderKey = "missing-order-key",
    OversizedBatchComplete = "oversized-batch-complete",
    // Order stage.
    BadAuthenticator = "bad-authenticator",
    BadNewView = "bad-new-view",
    BadViewChange = "bad-view-change",
    BeyondWindow = "beyond-window",
    CheckpointFarStale = "checkpoint-far-stale",
    NewViewNotFromPrimary = "new-view-not-from-primary",
    NewViewOldIncarnation = "new-view-old-incarnation",
    OrderStateMismatch = "order-state-mismatch",
    PrePrepareBehindCheckpoint = "pre-prepare-behind-checkpoint",
    PrePrepareView = "pre-prepare-view",
    ProbeUnknownExec = "probe-unknown-exec",
    RecoveryReplyStale = "recovery-reply-stale",
    ViewChangeOldIncarnation = "view-change-old-incarnation",
    VoteBeyondWindow = "vote-beyond-window",
    VoteView = "vote-view",
    WhileRejoining = "while-rejoining",
    ExecReportTooMany = "exec-report-too-many",
    AuthReqsTooMany = "auth-reqs-too-many",
    // Execution stage.
    CommandBadDigest = "command-bad-digest",
    CommandUnknownBatch = "command-unknown-batch",
    ExecCpBadToken = "exec-cp-bad-token",
    ExecCpMalformed = "exec-cp-malformed",
    ExecCpUnrequested = "exec-cp-unrequested",
    FetchObjectNodesTooMany = "fetch-object-nodes-too-many",
    FetchObjectsTooMany = "fetch-objects-too-many",
    NextBatchBeyondWindow = "next-batch-beyond-window",
    NextBatchOverBudget = "next-batch-over-budget",
    NextBatchOversized = "next-batch-oversized",
    ObjectBadDigest = "object-bad-digest",
    ObjectBadProof = "object-bad-proof",
    ObjectNodesBadDigest = "object-nodes-bad-digest",
    ObjectNodesTooMany = "object-nodes-too-many",
    ObjectNodesUnrequested = "object-nodes-unrequested",
    ObjectUnrequested = "object-unrequested",
    ObjectsTooMany = "objects-too-many",
    ObjectsUnrequested = "objects-unrequested",
    ProbeReplyBadNonce = "probe-reply-bad-nonce",
    ProbeReplyNotOrder = "probe-reply-not-order",
    SendUnknownPeer = "send-unknown-peer",
    StateBadDigest = "state-bad-digest",
    StateUnrequested = "state-unrequested",
    StateUpdateBad = "state-update-bad",
    StateUpdateUnrequested = "state-update-unrequested",
    UnknownTimer = "unknown-timer",
    // A sleeping execution replica (ZZ): anything but a WAKE from an order replica.
    Asleep = "asleep",
    // Client.
    PushNotExec = "push-not-exec",
    ReadReplyNotAsked = "read-reply-not-asked",
    ReplyNotExec = "reply-not-exec",
    SketchReplyNotAsked = "sketch-reply-not-asked",
}

impl From<&WireError> for DropReason {
    fn from(e: &WireError) -> DropReason {
        match e {
            WireError::Short(_) => DropReason::Short,
            WireError::TooLarge(_) => DropReason::TooLarge,
            WireError::BadMagic => DropReason::BadMagic,
            WireError::BadVersion(_) => DropReason::BadVersion,
            WireError::BadLength { .. } => DropReason::BadLength,
            WireError::BadSender(_) => DropReason::BadSender,
            WireError::WrongReceiver(_) => DropReason::WrongReceiver,
            WireError::UnknownSender(_) => DropReason::UnknownSender,
            WireError::BadMac(_) => DropReason::BadMac,
            WireError::Malformed(..) => DropReason::Malformed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_distinct_and_counters_are_prefixed() {
        let mut seen = std::collections::BTreeSet::new();
        for r in DropReason::ALL {
            assert!(seen.insert(r.label()), "{r:?}: label {} twice", r.label());
            assert_eq!(r.counter().strip_prefix("drop-"), Some(r.label()));
        }
    }
}
