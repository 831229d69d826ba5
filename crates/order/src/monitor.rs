//! Watching the primary (seed 004 §3.4.3). Besides the progress timeout and the commission
//! checks, a backup replaces a primary that
//! - sends no PRE-PREPARE at all for a heartbeat while a request is pending here (the
//!   heartbeat doubles with each expiry and resets on a valid PRE-PREPARE, so a slow network
//!   still makes progress);
//! - orders fewer requests per second over a window of busy time than a bar: a fraction of the
//!   best rate of the last few views, rising after a grace period so that no primary reigns for
//!   ever (with no past view to compare with, the view changes once the grace period is over).
//!   Below the base bar counts only while requests wait longer than usual for their
//!   PRE-PREPAREs (the order delay): otherwise the clients or the rest of the pipeline, not the
//!   primary, set the rate;
//! - passes over a request it provably holds while `unfair_orders` PRE-PREPAREs order requests
//!   of one other client.
//!
//! "Provably holds": authentication replicas send each AUTH-REQ to every order replica, but a
//! faulty one may send a row with a good MAC for a backup and a bad one for the primary, so a
//! request vouched for by `n_auth - u` replicas here may be unproposable there. Only rows from
//! `n_auth - u + r` replicas here mean `n_auth - u` correct ones sent theirs to the primary too.
//! The fairness check uses that evidence; anything less would let one faulty authentication
//! replica trigger view changes at will under load. The heartbeat and the rate's busy clock
//! make do with a pending request (`n_auth - u`): with `u` authentication replicas down,
//! `n_auth - u + r` rows never come, and a request kept from the primary only fires the
//! heartbeat when no PRE-PREPARE flows at all, until the client's retransmission reaches every
//! authentication replica. docs/robustness.md has the argument.

use crate::OrderReplica;
use plumb_core::{Action, Evidence, Micros, TimerId, ViewChangeCause};
use plumb_wire::{ClientId, OrderId, ReqNo, Seq};
use std::collections::{BTreeSet, HashMap, VecDeque};

pub(crate) const HEARTBEAT: TimerId = TimerId(3);

/// The heartbeat doubles at most this many times (40 ms becomes about 10 s).
const MAX_DOUBLINGS: u32 = 8;

/// Windows in a row below the base bar before the primary is suspected of being slow.
const SLOW_WINDOWS: u32 = 2;

#[derive(Debug, Default)]
pub(crate) struct Monitor {
    /// Consecutive heartbeat expiries.
    misses: u32,
    heartbeat_armed: bool,
    /// When the last valid PRE-PREPARE of the current view arrived (or the view began).
    last_pre_prepare: Micros,
    /// When the current view was entered.
    view_since: Micros,
    /// When this replica last left a view.
    view_change_began: Micros,
    /// Requests applied so far by this replica.
    applied: u64,
    /// Time so far during which a pending request waited here: the primary is judged on its
    /// rate while it had work, not on how much work clients offered.
    busy: Micros,
    /// Since when a pending request has been waiting, if one is.
    busy_since: Option<Micros>,
    /// Start of the current window of this view: (`busy`, `applied` then).
    interval: Option<(Micros, u64)>,
    /// Busy time and requests over the judged windows of the current view: its mean rate.
    view_busy: Micros,
    view_applied: u64,
    /// Mean rates (requests per second) of past views, newest last, at most
    /// `throughput_views`.
    past_rates: VecDeque<u64>,
    /// Consecutive windows of this view below the base bar.
    below: u32,
    /// Windows judged after the grace period in this view: the bar rises with each.
    raises: u32,
    /// For the last `unfair_orders` requests of each client that PRE-PREPAREs ordered: when
    /// each first reached this replica (or its PRE-PREPARE did, if that was first).
    ordered: HashMap<ClientId, VecDeque<Micros>>,
    /// When a stable checkpoint last freed a window the primary had filled: it could propose
    /// nothing before, so the heartbeat counts from here.
    window_reopened: Micros,
    /// Order delay (how long a request pending here waited for the PRE-PREPARE that ordered
    /// it) over the current window, and over the judged windows of this view: (sum, count).
    window_delay: (Micros, u64),
    view_delay: (Micros, u64),
    /// Mean order delays of past views, newest last, at most `throughput_views`.
    past_delays: VecDeque<Micros>,
    /// When the first AUTH-REQ row of each client's latest few request numbers came.
    arrivals: HashMap<ClientId, VecDeque<(ReqNo, Micros)>>,
}

/// Request numbers per client whose arrival is remembered: the ones a PRE-PREPARE may still
/// order while a later one already arrived.
const ARRIVALS_KEPT: usize = 4;

impl Monitor {
    /// The first row of client `c`'s request `nc` came now.
    pub(crate) fn note_arrival(&mut self, c: ClientId, nc: ReqNo, now: Micros) {
        let seen = self.arrivals.entry(c).or_default();
        if seen.iter().any(|(n, _)| *n == nc) {
            return;
        }
        seen.push_back((nc, now));
        while seen.len() > ARRIVALS_KEPT {
            seen.pop_front();
        }
    }

    fn arrived(&self, c: ClientId, nc: ReqNo) -> Option<Micros> {
        self.arrivals
            .get(&c)?
            .iter()
            .find(|(n, _)| *n == nc)
            .map(|(_, t)| *t)
    }
}

impl OrderReplica {
    /// Rows from this many authentication replicas here mean the primary holds the request.
    pub(crate) fn held_evidence(&self) -> usize {
        (self.q().auth_gather() + self.q().faults.r as usize).min(self.q().auth)
    }

    fn heartbeat(&self) -> Micros {
        self.cfg().heartbeat_us << self.watch.monitor.misses.min(MAX_DOUBLINGS)
    }

    fn watching(&self) -> bool {
        self.views.active() && self.primary() != self.me
    }

    /// A request became pending: make sure the heartbeat runs.
    pub(crate) fn arm_heartbeat(&mut self, out: &mut Vec<Action>) {
        if self.watch.monitor.heartbeat_armed || !self.watching() {
            return;
        }
        self.watch.monitor.heartbeat_armed = true;
        out.push(Action::SetTimer {
            id: HEARTBEAT,
            after: self.heartbeat(),
        });
    }

    /// The oldest time a request not yet in any accepted batch became pending here.
    pub(crate) fn oldest_pending(&self) -> Option<Micros> {
        let tentative = self.tentative_last_ordered();
        self.pending
            .iter()
            .filter(|(c, e)| e.nc() > tentative.get(*c))
            .filter_map(|(_, e)| e.pending_since())
            .min()
    }

    pub(crate) fn on_heartbeat(&mut self, now: Micros, out: &mut Vec<Action>) {
        self.watch.monitor.heartbeat_armed = false;
        if !self.watching() {
            return;
        }
        let Some(pending) = self.oldest_pending() else {
            return;
        };
        if self.log.accepted_upto() >= self.window_top() {
            // The primary filled its window: it may propose nothing until a checkpoint is
            // stable, which waits on execution and on every replica's votes, not on it alone.
            // Suspecting it would be false (under load on two cores, 4 to 20 view changes in a
            // fault-free 15 s run came from here); the progress timeout still guards a window
            // that never moves.
            self.counters.add("heartbeat-window-full");
            self.watch.monitor.heartbeat_armed = true;
            out.push(Action::SetTimer {
                id: HEARTBEAT,
                after: self.heartbeat(),
            });
            return;
        }
        let since = pending
            .max(self.watch.monitor.last_pre_prepare)
            .max(self.watch.monitor.window_reopened);
        let due = since + self.heartbeat();
        if now >= due {
            self.watch.monitor.misses = self.watch.monitor.misses.saturating_add(1);
            let evidence = Evidence::Silence {
                silent: now.saturating_sub(
                    self.watch
                        .monitor
                        .last_pre_prepare
                        .max(self.watch.monitor.window_reopened),
                ),
                waited: now.saturating_sub(pending),
                accepted: self.log.accepted_upto(),
                window_top: self.window_top(),
                primary_checkpoint: self.newest_checkpoint_of(self.primary()),
            };
            self.suspect_on(now, ViewChangeCause::Heartbeat, evidence, out);
            if !self.watching() {
                return;
            }
            // Still in the view (the suspicion alone does not change it): keep watching, at
            // the doubled heartbeat.
            self.watch.monitor.heartbeat_armed = true;
            out.push(Action::SetTimer {
                id: HEARTBEAT,
                after: self.heartbeat(),
            });
            return;
        }
        self.watch.monitor.heartbeat_armed = true;
        out.push(Action::SetTimer {
            id: HEARTBEAT,
            after: due - now,
        });
    }

    /// The newest checkpoint replica `j` announced that this replica still holds a vote for.
    fn newest_checkpoint_of(&self, j: OrderId) -> Option<Seq> {
        self.checkpoints.newest_vote_of(j)
    }

    /// A stable checkpoint freed the window the primary had filled.
    pub(crate) fn monitor_window_reopened(&mut self, now: Micros) {
        self.watch.monitor.window_reopened = now;
    }

    /// A valid PRE-PREPARE of the current primary was accepted: the heartbeat resets, and the
    /// batch is checked for fairness.
    pub(crate) fn on_valid_pre_prepare(
        &mut self,
        now: Micros,
        batch: &[(ClientId, ReqNo)],
        out: &mut Vec<Action>,
    ) {
        self.watch.monitor.misses = 0;
        self.watch.monitor.last_pre_prepare = now;
        for (c, nc) in batch {
            let waited = self.pending.pending_since(*c, *nc);
            if let Some(t) = waited {
                self.watch.monitor.window_delay.0 += now.saturating_sub(t);
                self.watch.monitor.window_delay.1 += 1;
            }
        }
        self.note_busy(now);
        // Aardvark's rule (seed 004 §3.4.3): client c's request, held here since h, is passed
        // over unfairly once `unfair_orders` PRE-PREPAREs order requests of one other client
        // d that all first reached this replica after h. A closed-loop client gets a second
        // request ordered only after a whole round trip, so this does not fire on the few
        // milliseconds by which arrival orders differ between replicas.
        //
        // Two earlier versions fired without a fault. Counting any batch holding a request
        // held here after c's fired 144 times in a fault-free 15 s u1r0 run with 128 clients
        // on two cores (one suspicion changes the view when r = 0). Counting d's orders by
        // when their PRE-PREPAREs arrived here still fired a few times per run: a backup
        // whose inbound link from the primary lags takes PRE-PREPAREs the primary sent a
        // round trip apart within a millisecond, after c's request (which came by other
        // links) was held here, though the primary made them before it could have had that
        // request. Two requests of closed-loop d that both reached this replica after c's
        // was held are a round trip of d apart; a primary that ordered both and not c's had
        // c's rows (sent to it too) for that round trip, unless its links lag by more. They
        // did, on two shared cores: a u1r0 run at 16 clients saw client 6's two requests
        // ordered within 1.5 ms of reaching a backup while client 8's waited there 1.5 ms. So
        // a request also has to have been held for a heartbeat, the patience a backup gives
        // a primary that sends nothing: a primary that starves a client is still replaced
        // within a heartbeat and `k` orders of another client.
        let k = self.cfg().unfair_orders.max(1) as usize;
        let patience = self.cfg().heartbeat_us;
        // Of the clients in this batch with `k` requests ordered, the one whose oldest of
        // them reached this replica latest, and when.
        let mut since: Option<(Micros, ClientId)> = None;
        for (c, nc) in batch {
            let arrived = self.watch.monitor.arrived(*c, *nc).unwrap_or(now).min(now);
            let times = self.watch.monitor.ordered.entry(*c).or_default();
            times.push_back(arrived);
            while times.len() > k {
                times.pop_front();
            }
            if let (true, Some(&first)) = (times.len() == k, times.iter().min()) {
                if since.is_none_or(|(t, _)| first > t) {
                    since = Some((first, *c));
                }
            }
        }
        // Requests held before `since` waited through `k` orders of some client in the batch.
        let Some((since, other)) = since else {
            return;
        };
        let in_batch: BTreeSet<ClientId> = batch.iter().map(|(c, _)| *c).collect();
        let tentative = self.tentative_last_ordered();
        // A request held from before this view began counts as held since the view began:
        // what waited through a view change is re-proposed by the new primary in a burst
        // whose order no backup can judge (each saw the requests arrive in its own order).
        // With small batches every such burst looked unfair to some backup, and views churned
        // (simulator seed 271, u=2 r=1); the burst's requests arrived before the view, so they
        // are not orders of another client "since" it. Leaving such requests out altogether
        // let a primary that starves one client starve a request pending across the view
        // change for as long as it ordered others' (spec seed 891, u=1 r=1: 3.4 s; the
        // pending-request timeout never fires while batches commit).
        let view_since = self.watch.monitor.view_since;
        // The longest-held such request is the evidence (a minimum, not the map's order, so
        // the log is the same in every run of a simulation seed).
        let passed = self
            .pending
            .iter()
            .filter_map(|(c, e)| {
                let held = e.held_since()?.max(view_since);
                let unfair = !in_batch.contains(&c)
                    && e.nc() > tentative.get(c)
                    && held < since
                    && now.saturating_sub(held) >= patience;
                unfair.then(|| (held, c, e.pending_since().unwrap_or(held)))
            })
            .min();
        if let Some((held, passed, pending)) = passed {
            let evidence = Evidence::PassedOver {
                passed,
                held: now.saturating_sub(held),
                pending: now.saturating_sub(pending),
                other,
                orders: k as u32,
                since: now.saturating_sub(since),
            };
            self.suspect_on(now, ViewChangeCause::Unfair, evidence, out);
        }
    }

    /// `count` requests were applied: when a window of `throughput_window_us` of busy time is
    /// full, judge the rate over it.
    ///
    /// The reference is the best *mean* rate of the last few views, and a primary is suspected
    /// of being slow only after two windows in a row below the bar. A first version compared
    /// each window with the best single window of past views: on two shared cores window rates
    /// vary by tens of percent, the best of many windows sits in that noise's upper tail, and a
    /// fault-free 60 s run under load changed view 18 times on such false suspicions, each
    /// costing a stall. A primary that really orders below the bar is still replaced within
    /// two windows; one that stops is the heartbeat's.
    pub(crate) fn on_applied(&mut self, now: Micros, count: usize, out: &mut Vec<Action>) {
        self.watch.monitor.applied += count as u64;
        self.note_busy(now);
        if !self.views.active() {
            return;
        }
        let applied = self.watch.monitor.applied;
        let busy = self.busy_time(now);
        let (start, before) = *self.watch.monitor.interval.get_or_insert((busy, applied));
        let elapsed = busy.saturating_sub(start);
        if elapsed < self.cfg().throughput_window_us.max(1) {
            return;
        }
        self.watch.monitor.interval = Some((busy, applied));
        let done = applied - before;
        let rate = done.saturating_mul(1_000_000) / elapsed;
        self.watch.monitor.view_busy += elapsed;
        self.watch.monitor.view_applied += done;
        let (delay_sum, delays) = std::mem::take(&mut self.watch.monitor.window_delay);
        self.watch.monitor.view_delay.0 += delay_sum;
        self.watch.monitor.view_delay.1 += delays;
        let order_delay = delay_sum.checked_div(delays);
        if self.primary() == self.me {
            return;
        }
        let graced = now >= self.watch.monitor.view_since + self.cfg().throughput_grace_us;
        let Some(&past) = self.watch.monitor.past_rates.iter().max() else {
            // No view to compare with yet: after the grace period, change view to learn what
            // another primary achieves (a primary slow from the start is otherwise never
            // measured against anything).
            if graced {
                let evidence = Evidence::Rate {
                    rate,
                    bar: None,
                    order_delay,
                    delay_bar: None,
                };
                self.suspect_on(now, ViewChangeCause::NoReference, evidence, out);
            }
            return;
        };
        let base = past as f64 * self.cfg().throughput_bar_permille as f64 / 1000.0;
        let risen = base
            * (1.0 + self.cfg().throughput_raise_permille as f64 / 1000.0)
                .powi(self.watch.monitor.raises as i32);
        if graced {
            self.watch.monitor.raises += 1;
        }
        let delay_bar = self.order_delay_bar();
        let evidence = |bar: f64| Evidence::Rate {
            rate,
            bar: Some(bar as u64),
            order_delay,
            delay_bar,
        };
        if (rate as f64) < base {
            // Below the bar is the primary's doing only if requests waited for it: with
            // closed-loop clients the rate is bounded by their round trips, and on two shared
            // cores a window's rate swings by tens of percent with everything else on the
            // machine. A primary that holds requests back shows in the order delay; one that
            // keeps up while the rest of the pipeline is slow does not.
            // With no past order delay to compare with (this replica was the primary of every
            // view it measured) it cannot tell: the backups that can will judge.
            let excused = match (order_delay, delay_bar) {
                (Some(d), Some(b)) => (d <= b).then_some("rate-below-bar-primary-kept-up"),
                (None, Some(_)) => None,
                (_, None) => Some("rate-below-bar-no-delay-reference"),
            };
            if let Some(excuse) = excused {
                self.counters.add(excuse);
                self.watch.monitor.below = 0;
                return;
            }
            self.watch.monitor.below += 1;
            if self.watch.monitor.below >= SLOW_WINDOWS {
                self.suspect_on(now, ViewChangeCause::SlowPrimary, evidence(base), out);
            }
            return;
        }
        self.watch.monitor.below = 0;
        if (rate as f64) < risen {
            self.suspect_on(now, ViewChangeCause::Rotation, evidence(risen), out);
        }
    }

    /// The most a request pending here may wait, on average over a window, for the
    /// PRE-PREPARE that orders it while the rate below the bar still counts as not the
    /// primary's doing: twice the best mean order delay of past views, plus a batch timeout
    /// (a correct primary may wait that long to fill a batch). `None` with no past view to
    /// compare with.
    fn order_delay_bar(&self) -> Option<Micros> {
        let best = self.watch.monitor.past_delays.iter().min()?;
        Some(best.saturating_mul(2) + self.cfg().batch_timeout_us)
    }

    /// When the current view was entered, or the last view change began.
    pub(crate) fn monitor_view_since(&self) -> Micros {
        self.watch
            .monitor
            .view_since
            .max(self.watch.monitor.view_change_began)
    }

    /// Busy time up to `now`.
    fn busy_time(&self, now: Micros) -> Micros {
        self.watch.monitor.busy
            + self
                .watch
                .monitor
                .busy_since
                .map_or(0, |t| now.saturating_sub(t))
    }

    /// Start or stop the busy clock as pending requests start or stop waiting. Pending (vouched
    /// for by `n_auth - u`), not held: the clock measures whether there was work, and a request
    /// a faulty authentication replica kept from the primary only stretches it until the
    /// client's retransmission.
    pub(crate) fn note_busy(&mut self, now: Micros) {
        let waiting = self.views.active() && self.oldest_pending().is_some();
        match (self.watch.monitor.busy_since, waiting) {
            (None, true) => self.watch.monitor.busy_since = Some(now),
            (Some(t), false) => {
                self.watch.monitor.busy += now.saturating_sub(t);
                self.watch.monitor.busy_since = None;
            }
            _ => {}
        }
    }

    /// Leaving the current view: its mean rate (over its judged windows) joins the past ones.
    pub(crate) fn close_view(&mut self, now: Micros) {
        self.watch.monitor.view_change_began = now;
        let (busy, applied) = (
            self.watch.monitor.view_busy,
            self.watch.monitor.view_applied,
        );
        if let Some(rate) = applied.saturating_mul(1_000_000).checked_div(busy) {
            self.watch.monitor.past_rates.push_back(rate);
            while self.watch.monitor.past_rates.len() > self.cfg().throughput_views {
                self.watch.monitor.past_rates.pop_front();
            }
        }
        let (sum, count) = std::mem::take(&mut self.watch.monitor.view_delay);
        if let Some(delay) = sum.checked_div(count) {
            self.watch.monitor.past_delays.push_back(delay);
            while self.watch.monitor.past_delays.len() > self.cfg().throughput_views {
                self.watch.monitor.past_delays.pop_front();
            }
        }
        self.watch.monitor.window_delay = (0, 0);
        self.watch.monitor.view_busy = 0;
        self.watch.monitor.view_applied = 0;
        self.watch.monitor.below = 0;
        self.watch.monitor.interval = None;
        // A view change is nobody's busy time: the clock restarts in the next view.
        self.watch.monitor.busy_since = None;
        self.watch.monitor.ordered.clear();
    }

    /// Entered a view: a fresh heartbeat, interval and bar.
    pub(crate) fn open_view(&mut self, now: Micros, out: &mut Vec<Action>) {
        self.watch.monitor.view_since = now;
        self.watch.monitor.last_pre_prepare = now;
        self.watch.monitor.interval = None;
        self.watch.monitor.raises = 0;
        if self.oldest_pending().is_some() {
            self.arm_heartbeat(out);
        }
    }
}
