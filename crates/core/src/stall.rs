//! Why the service paused: the cause of each view change, and the reason a slow request waited
//! in a stage. Stages report them as observations; the node counts them in `/metrics` and logs
//! them, so an operator reads why latency spiked instead of guessing (docs/operations.md).

use plumb_wire::{ClientId, Micros, ReqNo, Seq, View};

/// Why an order replica asked for a new view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViewChangeCause {
    /// No PRE-PREPARE at all for a heartbeat while a request was pending (seed 004 §3.4.3).
    Heartbeat,
    /// The primary ordered below the bar: a fraction of what past primaries achieved.
    SlowPrimary,
    /// The primary met the base bar but not the bar that rises after the grace period: the
    /// deliberate rotation that keeps any primary from reigning for ever.
    Rotation,
    /// No past view to compare with after the grace period: learn what another primary does.
    NoReference,
    /// The primary passed over a request it provably held.
    Unfair,
    /// A pending request waited the progress timeout and nothing committed (PBFT).
    ProgressTimeout,
    /// A batch accepted in this view waited the progress timeout without committing: the view
    /// cannot gather its commit quorum (a primary that died after proposing, with too few of
    /// the others holding its PRE-PREPARE).
    Uncommitted,
    /// The view change to the previous view did not complete in time.
    Incomplete,
    /// The primary proposed an invalid batch, or two batches for one slot.
    Commission,
    /// `min(u,r) + 1` peers asked for or work in a higher view.
    Joined,
    /// A rejoining peer asked for null batches and the primary ordered none.
    Unfilled,
    /// This replica restarted as its view's primary: it may have sent PRE-PREPAREs it no
    /// longer remembers, so it proposes nothing more in that view and asks for the next.
    Restarted,
}

impl ViewChangeCause {
    pub const ALL: [ViewChangeCause; 12] = [
        ViewChangeCause::Heartbeat,
        ViewChangeCause::SlowPrimary,
        ViewChangeCause::Rotation,
        ViewChangeCause::NoReference,
        ViewChangeCause::Unfair,
        ViewChangeCause::ProgressTimeout,
        ViewChangeCause::Uncommitted,
        ViewChangeCause::Incomplete,
        ViewChangeCause::Commission,
        ViewChangeCause::Joined,
        ViewChangeCause::Unfilled,
        ViewChangeCause::Restarted,
    ];

    /// Its names, in one place: the `cause` label in `/metrics`, the stage counter a view
    /// change for it bumps, and the stage counter a suspicion for it bumps (once per view).
    fn names(self) -> [&'static str; 3] {
        match self {
            ViewChangeCause::Heartbeat => {
                ["heartbeat", "view-change-heartbeat", "suspect-heartbeat"]
            }
            ViewChangeCause::SlowPrimary => [
                "slow-primary",
                "view-change-slow-primary",
                "suspect-slow-primary",
            ],
            ViewChangeCause::Rotation => ["rotation", "view-change-rotation", "suspect-rotation"],
            ViewChangeCause::NoReference => [
                "no-reference",
                "view-change-no-reference",
                "suspect-no-reference",
            ],
            ViewChangeCause::Unfair => ["unfair", "view-change-unfair", "suspect-unfair"],
            ViewChangeCause::ProgressTimeout => [
                "progress-timeout",
                "view-change-progress-timeout",
                "suspect-progress-timeout",
            ],
            ViewChangeCause::Uncommitted => [
                "uncommitted",
                "view-change-uncommitted",
                "suspect-uncommitted",
            ],
            ViewChangeCause::Incomplete => {
                ["incomplete", "view-change-incomplete", "suspect-incomplete"]
            }
            ViewChangeCause::Commission => {
                ["commission", "view-change-commission", "suspect-commission"]
            }
            ViewChangeCause::Joined => ["joined", "view-change-joined", "suspect-joined"],
            ViewChangeCause::Unfilled => ["unfilled", "view-change-unfilled", "suspect-unfilled"],
            ViewChangeCause::Restarted => {
                ["restarted", "view-change-restarted", "suspect-restarted"]
            }
        }
    }

    /// The `cause` label in `/metrics`.
    pub fn as_str(self) -> &'static str {
        self.names()[0]
    }

    /// The stage counter a view change for this cause bumps.
    pub fn counter(self) -> &'static str {
        self.names()[1]
    }

    /// The stage counter a suspicion for this cause bumps.
    pub fn suspicion_counter(self) -> &'static str {
        self.names()[2]
    }
}

/// What a backup saw when its monitor suspected the primary: logged by the node beside the
/// cause, so an operator can tell a real fault from a false suspicion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// No valid PRE-PREPARE for `silent` while a request had been pending here for `waited`;
    /// this replica had accepted PRE-PREPAREs up to `accepted` of a window reaching
    /// `window_top`, and the newest checkpoint the primary announced was `primary_checkpoint`
    /// above this replica's stable one (the primary's window reaches two intervals past its own
    /// stable checkpoint, which is at most that).
    Silence {
        silent: Micros,
        waited: Micros,
        accepted: Seq,
        window_top: Seq,
        primary_checkpoint: Option<Seq>,
    },
    /// Requests per second of busy time in the window just judged, against the bar it had to
    /// meet (`None`: no past view to compare with); the mean time a request pending here waited for its PRE-PREPARE in that window,
    /// against the most a request may wait before the rate counts as the primary's
    /// (`None`: no reference yet, the rate alone judges).
    Rate {
        rate: u64,
        bar: Option<u64>,
        order_delay: Option<Micros>,
        delay_bar: Option<Micros>,
    },
    /// Client `passed`'s request, held here (enough authentication rows that the primary has
    /// it too) for `held` and pending here for `pending`, was passed over while PRE-PREPAREs
    /// ordered `orders` requests of client `other`, all pending here for at most `since`.
    PassedOver {
        passed: ClientId,
        held: Micros,
        pending: Micros,
        other: ClientId,
        orders: u32,
        since: Micros,
    },
    /// Batch `first` was accepted in this view (with others up to `accepted`) and has not
    /// committed after `waited`, holding commits from `commits` of the `needed` replicas.
    Uncommitted {
        first: Seq,
        accepted: Seq,
        waited: Micros,
        commits: usize,
        needed: usize,
    },
    /// The cause says it all (a bad batch, a timeout, peers in a later view).
    None,
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Evidence::Silence {
                silent,
                waited,
                accepted,
                window_top,
                primary_checkpoint,
            } => {
                write!(
                    f,
                    "no PRE-PREPARE for {} ms, a request pending for {} ms; accepted up to batch {accepted} of a window reaching {window_top}",
                    silent / 1000,
                    waited / 1000
                )?;
                match primary_checkpoint {
                    Some(seq) => write!(f, ", the primary's newest checkpoint {seq}"),
                    None => write!(f, ", no checkpoint from the primary above the stable one"),
                }
            }
            Evidence::Rate {
                rate,
                bar,
                order_delay,
                delay_bar,
            } => {
                match bar {
                    Some(bar) => {
                        write!(f, "{rate} requests/s of busy time against a bar of {bar}")?
                    }
                    None => write!(
                        f,
                        "{rate} requests/s of busy time, no past view to compare with"
                    )?,
                }
                if let (Some(d), Some(b)) = (order_delay, delay_bar) {
                    write!(
                        f,
                        ", requests waited {:.1} ms for their PRE-PREPARE against at most {:.1}",
                        d as f64 / 1000.0,
                        b as f64 / 1000.0
                    )?;
                }
                Ok(())
            }
            Evidence::PassedOver {
                passed,
                held,
                pending,
                other,
                orders,
                since,
            } => write!(
                f,
                "client {passed}'s request held here for {:.1} ms (pending {:.1} ms) while {orders} requests of client {other} that came in the last {:.1} ms were ordered",
                held as f64 / 1000.0,
                pending as f64 / 1000.0,
                since as f64 / 1000.0
            ),
            Evidence::Uncommitted {
                first,
                accepted,
                waited,
                commits,
                needed,
            } => write!(
                f,
                "batch {first} (of those accepted up to {accepted}) uncommitted for {} ms with {commits} of {needed} commits",
                waited / 1000
            ),
            Evidence::None => Ok(()),
        }
    }
}

/// The stage a slow request waited in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StallStage {
    Order,
    Exec,
    Client,
}

impl StallStage {
    pub fn as_str(self) -> &'static str {
        match self {
            StallStage::Order => "order",
            StallStage::Exec => "exec",
            StallStage::Client => "client",
        }
    }
}

/// Why a request waited longer than `slow_request_us` in a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WaitReason {
    /// Order: a view change began while the request waited to be ordered.
    ViewChange,
    /// Order: this replica fell behind and fetched committed batches or a checkpoint.
    CatchUp,
    /// Order: ordering stalled for a whole tick (`catch_up_us`) and this replica said its
    /// votes again: a frame was lost, or a peer's vote never came.
    Resend,
    /// Order: no view change and no catch-up, and most of the wait came before the primary's
    /// PRE-PREPARE arrived (a slow primary, or the primary's window full of unstable batches).
    Proposal,
    /// Order: most of the wait came after the PRE-PREPARE: PREPARE and COMMIT quorums came late
    /// (lost frames, full queues, a slow peer needed for the quorum, CPU).
    Votes,
    /// Execution: a body arrived only after the fetch timer asked every authentication
    /// replica (the first one asked did not answer).
    FetchTimer,
    /// Execution: the batch waited for a checkpoint load (state transfer).
    StateTransfer,
    /// Execution: the batch waited for bodies or for earlier batches, with no timer involved.
    Execution,
    /// Client: a reply quorum came only after a retransmission (a lost or refused first
    /// transmission, or replies lost).
    Retransmission,
    /// Client: no retransmission; the replies were slow.
    Replies,
}

impl WaitReason {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitReason::ViewChange => "view-change",
            WaitReason::CatchUp => "catch-up",
            WaitReason::Resend => "resend",
            WaitReason::Proposal => "proposal",
            WaitReason::Votes => "votes",
            WaitReason::FetchTimer => "fetch-timer",
            WaitReason::StateTransfer => "state-transfer",
            WaitReason::Execution => "execution",
            WaitReason::Retransmission => "retransmission",
            WaitReason::Replies => "replies",
        }
    }
}

/// One request that waited longer than `slow_request_us` in one stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowRequest {
    pub stage: StallStage,
    pub client: ClientId,
    pub nc: ReqNo,
    pub waited: Micros,
    pub reason: WaitReason,
    /// The view the stage was in when the wait ended (order stage; 0 elsewhere).
    pub view: View,
}

impl std::fmt::Display for SlowRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "request {}#{} waited {} ms in the {} stage: {}",
            self.client,
            self.nc,
            self.waited / 1000,
            self.stage.as_str(),
            self.reason.as_str()
        )?;
        if self.stage == StallStage::Order {
            write!(f, " (now in view {})", self.view)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ViewChangeCause;

    #[test]
    fn each_cause_names_its_counters_after_its_label() {
        for cause in ViewChangeCause::ALL {
            let label = cause.as_str();
            assert_eq!(cause.counter(), format!("view-change-{label}"));
            assert_eq!(cause.suspicion_counter(), format!("suspect-{label}"));
        }
    }
}
