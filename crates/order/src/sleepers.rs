//! ZZ mode (docs/zz.md): the order replica's watch over the active execution replicas, and the
//! WAKEs it sends the sleepers. A sub-machine owning its state: the caller tells it of reports
//! and of messages from sleepers, and asks it whom to wake.
//!
//! An active is *suspected* once its report of a batch differs from the agreed one, or comes
//! more than the timeout after another active's report of that batch, or it has been silent
//! for three catch-up periods (and no less than that timeout) since another active was last
//! heard from (an idle execution replica sends LAST-EXEC every period). Two
//! actives whose reports or checkpoint tokens of one batch differ are a *disagreement*: one of
//! them is faulty, which one no order replica can tell (with `max(u, r) + 1` actives and one
//! faulty, the `r + 1` matching reports or tokens that would name it may never come), so it
//! counts as one suspect. The timeout of a late report:
//! `zz_report_timeout_us`, or four times the 99th percentile of the recent spreads between
//! the actives' reports of one batch if that is longer, so a busy cluster does not wake its
//! sleepers, but never more than `zz_report_timeout_max_us`: the spreads are what the slowest
//! active makes them, and a faulty active that lags a little more each time would otherwise
//! raise the bound as fast as it lags and never be found late). For each suspected active one
//! sleeper is asked to wake, the lowest-numbered first, so that the correct order replicas ask
//! the same ones (one more for every three WAKEs that woke nobody: a sleeper may be down); the
//! WAKE is sent again after `resend`, the period doubling up to 64 times, until the sleeper is
//! heard from.
//!
//! The group shrinks back (docs/zz.md "Back to sleep"): once every active and every woken
//! sleeper has sent the agreed token of one checkpoint, every active has reported its batches,
//! and nothing proved an active faulty (only timing woke the sleeper), the woken sleepers are
//! asked to sleep again (SLEEP) and the suspicions are lifted. An execution replica whose report or token differed from the agreed one is *found faulty*
//! (correct replicas agree): it is reported, sent no per-batch traffic from then on (stopped,
//! as far as this order replica goes), and keeps the sleeper that replaced it awake.
//!
//! Bounded: batches opened within the report window above the stable checkpoint, each kept
//! once at or below it for at most the late-report timeout; the spread sample is a fixed ring.

use crate::exec_reports::REPORT_WINDOW;
use plumb_core::{BrokenInvariant, Micros};
use plumb_crypto::Digest;
use plumb_wire::{BatchReport, ExecId, Seq};
use std::collections::{BTreeMap, BTreeSet};

/// Spreads kept for the adaptive timeout.
const SPREADS: usize = 256;

#[derive(Debug)]
pub(crate) struct Sleepers {
    /// Execution replicas that execute: `0..active`; the rest sleep until woken.
    active: usize,
    exec: usize,
    /// Batches above the stable checkpoint that some but not all actives reported: when the
    /// first report came, and what each said.
    open: BTreeMap<Seq, (Micros, BTreeMap<ExecId, BatchReport>)>,
    /// Checkpoint tokens of the actives above the stable checkpoint, by checkpoint.
    tokens: BTreeMap<Seq, BTreeMap<ExecId, Digest>>,
    /// Actives found faulty (a wrong report) or late.
    pub suspected: BTreeSet<ExecId>,
    /// Two actives said different things of one batch or checkpoint.
    pub disagreed: bool,
    /// Sleepers heard from, and when last: awake, asked no more. One not heard from for the
    /// silence period counts as asleep again (an awake execution replica speaks at least every
    /// catch-up period): it may have been put back to sleep by other order replicas' SLEEPs
    /// while this one had reason not to ask, and must be askable again.
    heard: BTreeMap<ExecId, Micros>,
    /// Execution replicas whose report or checkpoint token differed from the agreed one.
    found_faulty: BTreeSet<ExecId>,
    /// The newest checkpoint some replica sent the agreed token of, and who did.
    healthy: (Seq, BTreeSet<ExecId>),
    /// Sleepers sent a SLEEP, and when: for two catch-up periods after, what comes from them
    /// was sent before they paused and does not make them heard.
    slept: BTreeMap<ExecId, Micros>,
    /// The catch-up period: an awake execution replica speaks at least this often.
    catch_up: Micros,
    /// The newest checkpoint with an agreed token when an active last came under suspicion:
    /// only tokens of later checkpoints show the group whole again (a token sent before the
    /// fault says nothing of the replica now).
    suspected_at: Seq,
    /// When each active was last heard from (from the first [`Sleepers::due`] on): an idle
    /// execution replica still sends LAST-EXEC every catch-up period, so a long silence is a
    /// crash, a cut link or a silent fault even when no batch is ordered.
    last_heard: BTreeMap<ExecId, Micros>,
    /// How long each active has been overdue (not heard from for a catch-up period and the
    /// floor) while another active was not: silence that only it kept.
    silent_alone: BTreeMap<ExecId, Micros>,
    /// When [`Sleepers::due`] last ran, to add up `silent_alone`.
    last_due: Option<Micros>,
    /// Recent spreads between the first and the last active's report of a batch, a ring.
    spreads: Vec<Micros>,
    next_spread: usize,
    /// Four times their 99th percentile, refreshed every few spreads.
    adaptive: Micros,
    /// The most `adaptive` counts for (`zz_report_timeout_max_us`).
    adaptive_max: Micros,
    last_wake: Option<Micros>,
    /// WAKEs sent since the last new suspicion: the resend period doubles with each, up to
    /// 64 times `resend`, so a sleeper that stays down is not asked forever at full rate.
    wakes_sent: u32,
    /// WAKE rounds since a sleeper was last newly heard from: every three, one more sleeper
    /// is asked.
    unanswered: u32,
    /// Why actives came under suspicion since the caller last took them (its counters and
    /// log), each with what showed it.
    causes: Vec<(&'static str, String)>,
    /// When the watch timer set last is due to fire, if one is set.
    watch_at: Option<Micros>,
}

impl Sleepers {
    /// `adaptive_max`: the most the recent spreads may raise the late-report bound to.
    pub(crate) fn new(
        active: usize,
        exec: usize,
        catch_up: Micros,
        adaptive_max: Micros,
    ) -> Sleepers {
        Sleepers {
            active,
            exec,
            found_faulty: BTreeSet::new(),
            healthy: (Seq(0), BTreeSet::new()),
            slept: BTreeMap::new(),
            catch_up,
            suspected_at: Seq(0),
            open: BTreeMap::new(),
            tokens: BTreeMap::new(),
            suspected: BTreeSet::new(),
            disagreed: false,
            heard: BTreeMap::new(),
            last_heard: BTreeMap::new(),
            silent_alone: BTreeMap::new(),
            last_due: None,
            spreads: Vec::new(),
            next_spread: 0,
            adaptive: 0,
            adaptive_max,
            last_wake: None,
            wakes_sent: 0,
            unanswered: 0,
            causes: Vec::new(),
            watch_at: None,
        }
    }

    fn is_active(&self, e: ExecId) -> bool {
        e.index() < self.active
    }

    /// A message from execution replica `e` at `now`: a sleeper that speaks is awake.
    pub(crate) fn heard(&mut self, now: Micros, e: ExecId) {
        if self.is_active(e) {
            self.last_heard.insert(e, now);
        } else if e.index() < self.exec {
            let grace = self.catch_up.saturating_mul(2);
            if let Some(t) = self.slept.get(&e) {
                if now.saturating_sub(*t) < grace {
                    return;
                }
                self.slept.remove(&e);
            }
            if self.heard.insert(e, now).is_none() {
                self.unanswered = 0;
            }
        }
    }

    /// Whether execution replica `e` is a sleeper not heard from: asleep as far as this
    /// order replica knows. It drops everything but WAKEs, so the per-batch traffic to the
    /// execution stage (NEXT-BATCH, RETRANSMIT) is not sent to it. Once woken it asks where
    /// things stand (LAST-EXEC, answered directly), is heard from, and gets it from then on.
    /// A replica found faulty counts as asleep too: it is stopped.
    pub(crate) fn asleep(&self, e: ExecId) -> bool {
        (!self.is_active(e) && e.index() < self.exec && !self.heard.contains_key(&e))
            || self.found_faulty.contains(&e)
    }

    /// Active `e`'s report at `now`: kept if within the report window above `stable`
    /// (checkpoints every `interval` batches).
    pub(crate) fn reported(
        &mut self,
        now: Micros,
        e: ExecId,
        report: BatchReport,
        (stable, interval): (Seq, u64),
    ) {
        let seq = report.seq;
        // A batch still open is taken even at or below the stable checkpoint (`due`).
        let still_open = self.open.contains_key(&seq) && self.is_active(e);
        if !still_open && !self.within(e, seq, stable, interval) {
            return;
        }
        let (first, said) = self.open.entry(seq).or_insert((now, BTreeMap::new()));
        said.insert(e, report);
        let differ = said.values().any(|r| *r != report);
        let spread = (said.len() == self.active).then(|| now.saturating_sub(*first));
        if differ {
            self.disagree("zz-reports-differ", || {
                format!("actives reported batch {seq} differently")
            });
        }
        if let Some(spread) = spread {
            self.open.remove(&seq);
            self.note_spread(spread);
        }
    }

    /// Active `e`'s token of checkpoint `seq`: actives that differ disagree.
    pub(crate) fn token(
        &mut self,
        e: ExecId,
        seq: Seq,
        token: Digest,
        (stable, interval): (Seq, u64),
    ) {
        if !self.within(e, seq, stable, interval) {
            return;
        }
        let said = self.tokens.entry(seq).or_default();
        said.insert(e, token);
        if said.values().any(|t| *t != token) {
            self.disagree("zz-tokens-differ", || {
                format!("actives sent different tokens of checkpoint {seq}")
            });
        }
    }

    /// Two actives said different things of one batch, checkpoint or reply (`evidence`
    /// says which, for the log).
    pub(crate) fn disagree(&mut self, cause: &'static str, evidence: impl FnOnce() -> String) {
        self.suspected_at = self.suspected_at.max(self.healthy.0);
        if !self.disagreed {
            self.disagreed = true;
            self.causes.push((cause, evidence()));
            self.wakes_sent = 0;
        }
    }

    fn suspect(&mut self, e: ExecId, cause: &'static str, evidence: impl FnOnce() -> String) {
        self.suspected_at = self.suspected_at.max(self.healthy.0);
        if self.suspected.insert(e) {
            self.causes.push((cause, format!("e{e}: {}", evidence())));
            self.wakes_sent = 0;
        }
    }

    /// Why actives came under suspicion since last asked, one cause per new suspect, each
    /// with what showed it.
    pub(crate) fn take_causes(&mut self) -> Vec<(&'static str, String)> {
        std::mem::take(&mut self.causes)
    }

    fn within(&self, e: ExecId, seq: Seq, stable: Seq, interval: u64) -> bool {
        let top = stable.0.saturating_add(REPORT_WINDOW * interval);
        self.is_active(e) && seq > stable && seq.0 <= top
    }

    /// Execution replica `e` sent a report or token that differs from the agreed one: found
    /// faulty. `true` the first time.
    pub(crate) fn faulty(&mut self, e: ExecId) -> bool {
        if self.is_active(e) {
            self.suspect(e, "zz-report-wrong", || {
                "its report or checkpoint token differs from the agreed one".to_string()
            });
        }
        self.healthy.1.remove(&e);
        e.index() < self.exec && self.found_faulty.insert(e)
    }

    /// Execution replica `e` sent the agreed token of checkpoint `seq` at `now`. Returns the
    /// woken sleepers to ask to sleep again: none unless every active and every woken sleeper
    /// has now sent the agreed token of `seq`, a checkpoint after the last suspicion, every
    /// active has been heard from lately, and nothing proved an active faulty: none was
    /// found faulty, and no two said different things (a disagreement proves one of them
    /// faulty without saying which, so the woken sleeper stays to outvote it). So a wake on
    /// timing alone (a crash, a cut link, a replica slow for a while, a false alarm) is undone,
    /// a proven fault is not. Then the timing suspicions are lifted and those sleepers count
    /// as asleep again.
    pub(crate) fn healthy(&mut self, now: Micros, e: ExecId, seq: Seq) -> Vec<ExecId> {
        if seq < self.healthy.0 || self.found_faulty.contains(&e) || e.index() >= self.exec {
            return Vec::new();
        }
        if seq > self.healthy.0 {
            self.healthy = (seq, BTreeSet::new());
        }
        self.healthy.1.insert(e);
        let actives = (0..self.active).map(|i| ExecId(i as u16));
        // An idle active speaks every catch-up period: one unheard for three may have
        // crashed since it sent its token.
        let lately = self.catch_up.saturating_mul(3);
        let heard_lately = |a: &ExecId| {
            self.last_heard
                .get(a)
                .is_some_and(|t| now.saturating_sub(*t) <= lately)
        };
        let whole = !self.heard.is_empty()
            && seq > self.suspected_at
            && actives.clone().all(|a| heard_lately(&a))
            && !self.disagreed
            && !actives.clone().any(|a| self.found_faulty.contains(&a))
            // Every active reported every batch up to the checkpoint: tokens on time say
            // nothing of reports and replies held back (`creeping-exec`), and clients need the
            // replies of `r + 1` actives once the sleeper sleeps.
            && self.open.range(..=seq).next().is_none()
            && actives
                .chain(self.heard.keys().copied())
                .all(|x| self.healthy.1.contains(&x));
        if !whole {
            return Vec::new();
        }
        let woken = std::mem::take(&mut self.heard);
        for s in woken.keys() {
            self.slept.insert(*s, now);
        }
        self.suspected.clear();
        self.silent_alone.clear();
        self.wakes_sent = 0;
        self.last_wake = None;
        woken.into_keys().collect()
    }

    fn note_spread(&mut self, spread: Micros) {
        if self.spreads.len() < SPREADS {
            self.spreads.push(spread);
        } else {
            self.spreads[self.next_spread] = spread;
        }
        self.next_spread = (self.next_spread + 1) % SPREADS;
        if self.next_spread.is_multiple_of(32) {
            let mut sorted = self.spreads.clone();
            sorted.sort_unstable();
            let p99 = sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)];
            self.adaptive = p99.saturating_mul(4);
        }
    }

    /// After [`Sleepers::due`] at `now`: the delay after which it should run again, if a timer
    /// must be set for that, so that a report is found late when it becomes late rather than
    /// at the next catch-up tick (which would add up to a period to every detection). `None`
    /// if no open batch becomes late later, or a timer already set fires in time.
    pub(crate) fn watch_timer(&mut self, now: Micros, floor: Micros) -> Option<Micros> {
        let timeout = self.timeout(floor);
        // Batches late already were dealt with by `due` at `now`.
        let at = self
            .open
            .values()
            .map(|(first, _)| first.saturating_add(timeout))
            .filter(|at| *at > now)
            .min()?;
        if self.watch_at.is_some_and(|set| set > now && set <= at) {
            return None;
        }
        self.watch_at = Some(at);
        Some(at - now)
    }

    /// How late a report may be: the configured floor, or four times the recent p99 spread
    /// up to the configured most.
    pub(crate) fn timeout(&self, floor: Micros) -> Micros {
        if plumb_core::sabotaged!(ReportBoundUncapped) {
            return floor.max(self.adaptive);
        }
        floor.max(self.adaptive.min(self.adaptive_max))
    }

    /// At `now`, suspect every active whose report of an open batch is overdue, or that has
    /// been silent for `silence`; forget batches at or below `stable` once late. Returns the
    /// sleepers to send a WAKE to now: one per suspected active, lowest first, not yet heard
    /// from, at most once per `resend`.
    pub(crate) fn due(
        &mut self,
        now: Micros,
        stable: Seq,
        (floor, silence, resend): (Micros, Micros, Micros),
    ) -> Vec<ExecId> {
        self.tokens = self.tokens.split_off(&(stable + 1));
        let timeout = self.timeout(floor);
        self.note_silences(now, floor, silence.max(timeout), resend);
        let quiet = silence.max(timeout);
        self.heard
            .retain(|_, heard| now.saturating_sub(*heard) <= quiet);
        let mut late = Vec::new();
        for (seq, (first, said)) in &self.open {
            let waited = now.saturating_sub(*first);
            if waited < timeout {
                continue;
            }
            late.extend(
                (0..self.active)
                    .map(|i| ExecId(i as u16))
                    .filter(|e| !said.contains_key(e))
                    .map(|e| (e, *seq, waited)),
            );
        }
        // Open batches at or below the stable checkpoint are kept until they are late: the
        // checkpoint shows that the actives executed them, not that each reported them, and an
        // active that sends its tokens on time while it holds its reports and replies back
        // (`creeping-exec`) must still be found late. Once late, they have said what they can.
        self.open
            .retain(|seq, (first, _)| *seq > stable || now.saturating_sub(*first) < timeout);
        for (e, seq, waited) in late {
            let (p99, max) = (self.adaptive / 4, self.adaptive_max);
            self.suspect(e, "zz-report-late", || {
                format!(
                    "no report of batch {seq} {} ms after the first active's (late after {} ms: the floor, or 4 x the p99 spread of {} ms up to {} ms)",
                    waited / 1000,
                    timeout / 1000,
                    p99 / 1000,
                    max / 1000
                )
            });
        }
        let suspects = self.suspected.len().max(usize::from(self.disagreed));
        let period = resend.saturating_mul(1 << self.wakes_sent.saturating_sub(1).min(6));
        if suspects == 0
            || self
                .last_wake
                .is_some_and(|t| now.saturating_sub(t) < period)
        {
            return Vec::new();
        }
        // One sleeper per suspect, less those awake already; one more for every three WAKEs
        // that woke nobody (a sleeper that crashed, or cannot be reached, is passed over).
        let widen = (self.unanswered / 3) as usize;
        let awake = self
            .heard
            .keys()
            .filter(|e| !self.found_faulty.contains(e))
            .count();
        let needed = (suspects + widen).saturating_sub(awake);
        let wake: Vec<ExecId> = (self.active..self.exec)
            .map(|i| ExecId(i as u16))
            .filter(|e| !self.found_faulty.contains(e) && !self.heard.contains_key(e))
            .take(needed)
            .collect();
        if !wake.is_empty() {
            self.last_wake = Some(now);
            self.wakes_sent += 1;
            self.unanswered += 1;
        }
        wake
    }

    /// Add up, per active, the time it has been overdue (silent for a catch-up period, the
    /// period idle execution replicas send LAST-EXEC at, plus the floor) while another active
    /// was not, and suspect an active once that and the overdue period reach `silence`.
    /// Silence kept together is not counted: actives busy at once (each with the checkpoint
    /// of a large state on a loaded machine: `plumb bench zz` saw steps of 2.4 s) or this
    /// replica's own thread held up say nothing about any one of them, and the first to speak
    /// again must not make the other look silent for the whole stall. The time added per call
    /// is capped at the overdue period for the same reason.
    fn note_silences(&mut self, now: Micros, floor: Micros, silence: Micros, period: Micros) {
        let overdue_after = period.saturating_add(floor);
        let dt = self
            .last_due
            .map_or(0, |t| now.saturating_sub(t))
            .min(overdue_after);
        self.last_due = Some(now);
        for i in 0..self.active {
            self.last_heard.entry(ExecId(i as u16)).or_insert(now);
        }
        let overdue: BTreeSet<ExecId> = self
            .last_heard
            .iter()
            .filter(|(_, heard)| now.saturating_sub(**heard) > overdue_after)
            .map(|(e, _)| *e)
            .collect();
        let someone_speaks = overdue.len() < self.last_heard.len();
        let mut silent = Vec::new();
        for (e, heard) in &self.last_heard {
            let alone = self.silent_alone.entry(*e).or_insert(0);
            if !overdue.contains(e) {
                *alone = 0;
            } else if someone_speaks {
                *alone = alone.saturating_add(dt);
            }
            if overdue.contains(e) && alone.saturating_add(overdue_after) >= silence {
                silent.push((*e, now.saturating_sub(*heard)));
            }
        }
        for (e, quiet) in silent {
            self.suspect(e, "zz-active-silent", || {
                format!(
                    "not heard from for {} ms while another active spoke (silent after {} ms)",
                    quiet / 1000,
                    silence / 1000
                )
            });
        }
    }

    /// Suspicions name actives only, sleepers heard from are sleepers, and each open batch is
    /// reported by some but not all actives (those at or below the stable checkpoint go once
    /// late, at a [`Sleepers::due`]).
    pub(crate) fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        let stray = self.suspected.iter().find(|e| !self.is_active(**e));
        BrokenInvariant::check(stray.is_none(), "INV-zz-suspects-actives", || {
            format!("{stray:?} is suspected but is not an active execution replica")
        })?;
        let stranger = self
            .last_heard
            .keys()
            .chain(self.silent_alone.keys())
            .find(|e| !self.is_active(**e));
        BrokenInvariant::check(stranger.is_none(), "INV-zz-heard-actives", || {
            format!("{stranger:?} is timed as an active but is not one")
        })?;
        let odd = self
            .heard
            .keys()
            .chain(self.slept.keys())
            .find(|e| self.is_active(**e) || e.index() >= self.exec);
        BrokenInvariant::check(odd.is_none(), "INV-zz-heard-sleepers", || {
            format!("{odd:?} is counted as a woken or slept sleeper")
        })?;
        let stranger = self.found_faulty.iter().find(|e| e.index() >= self.exec);
        BrokenInvariant::check(stranger.is_none(), "INV-zz-found-faulty-known", || {
            format!("{stranger:?} is found faulty but is no execution replica")
        })?;
        let healthy_faulty = self.healthy.1.intersection(&self.found_faulty).next();
        BrokenInvariant::check(
            healthy_faulty.is_none(),
            "INV-zz-healthy-not-faulty",
            || {
                format!(
                    "{healthy_faulty:?} counts as healthy at {} but was found faulty",
                    self.healthy.0
                )
            },
        )?;
        let bad = self.open.iter().find(|(s, (_, said))| {
            said.is_empty()
                || said.len() >= self.active
                || said
                    .iter()
                    .any(|(e, r)| !self.is_active(*e) || r.seq != **s)
        });
        BrokenInvariant::check(bad.is_none(), "INV-zz-open-batches", || {
            format!(
                "open batch {:?} is reported by no active, by all or by others",
                bad.map(|b| b.0)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec_reports::tests::report;

    #[test]
    fn actives_that_disagree_wake_one_sleeper() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.reported(10, ExecId(0), report(4, b"a"), (Seq(0), 128));
        z.reported(20, ExecId(1), report(4, b"b"), (Seq(0), 128));
        assert_eq!(z.due(30, Seq(0), T), vec![ExecId(2)]);
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.token(ExecId(0), Seq(128), Digest::of(b"x"), (Seq(0), 128));
        z.token(ExecId(1), Seq(128), Digest::of(b"x"), (Seq(0), 128));
        assert!(z.due(30, Seq(0), T).is_empty());
        z.token(ExecId(1), Seq(256), Digest::of(b"y"), (Seq(0), 128));
        z.token(ExecId(0), Seq(256), Digest::of(b"z"), (Seq(0), 128));
        assert_eq!(z.due(40, Seq(0), T), vec![ExecId(2)]);
        z.check_invariants().unwrap();
    }

    #[test]
    fn each_suspicion_says_what_showed_it() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.reported(10_000, ExecId(0), report(4, b"a"), (Seq(0), 128));
        assert!(z.due(59_000, Seq(0), T).is_empty());
        assert!(z.take_causes().is_empty());
        assert_eq!(z.due(72_000, Seq(0), T), vec![ExecId(2)]);
        assert_eq!(
            z.take_causes(),
            vec![(
                "zz-report-late",
                "e1: no report of batch 4 62 ms after the first active's (late after 50 ms: the floor, or 4 x the p99 spread of 0 ms up to 1000 ms)"
                    .to_string()
            )]
        );
        // Said once per suspect.
        z.due(90_000, Seq(0), T);
        assert!(z.take_causes().is_empty());
        z.reported(95_000, ExecId(1), report(5, b"b"), (Seq(0), 128));
        z.reported(96_000, ExecId(0), report(5, b"c"), (Seq(0), 128));
        assert_eq!(
            z.take_causes(),
            vec![(
                "zz-reports-differ",
                "actives reported batch 5 differently".to_string()
            )]
        );
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_sleeper_is_asleep_until_heard_from() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        assert!(!z.asleep(ExecId(0)) && !z.asleep(ExecId(1)));
        assert!(z.asleep(ExecId(2)));
        // Beyond the cluster: not a sleeper.
        assert!(!z.asleep(ExecId(3)));
        z.heard(10, ExecId(2));
        assert!(!z.asleep(ExecId(2)));
        // Silent for longer than an awake replica ever is (other order replicas may have put
        // it back to sleep): asleep again, so that this replica can ask it to wake.
        z.due(500_000, Seq(0), IDLE);
        assert!(!z.asleep(ExecId(2)));
        z.due(700_000, Seq(0), IDLE);
        assert!(z.asleep(ExecId(2)));
        z.check_invariants().unwrap();
    }

    /// Timeout floor 50 ms, silence 10 s, resend every 200 ms.
    const T: (Micros, Micros, Micros) = (50_000, 10_000_000, 200_000);

    /// Floor 50 ms, silence 600 ms, LAST-EXEC (catch-up) every 200 ms.
    const IDLE: (Micros, Micros, Micros) = (50_000, 600_000, 200_000);

    #[test]
    fn an_active_silent_while_idle_wakes_a_sleeper() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.heard(0, ExecId(1));
        let mut woke = None;
        for t in (0..=1_000_000u64).step_by(20_000) {
            if t % 200_000 == 0 {
                z.heard(t, ExecId(0));
            }
            if !z.due(t, Seq(0), IDLE).is_empty() && woke.is_none() {
                woke = Some(t);
            }
        }
        // e1 overdue after 250 ms, silent alone 350 ms more.
        assert_eq!(woke, Some(600_000));
        assert_eq!(
            z.suspected.iter().copied().collect::<Vec<_>>(),
            vec![ExecId(1)]
        );
        z.check_invariants().unwrap();
    }

    #[test]
    fn actives_quiet_together_are_not_suspected() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.heard(0, ExecId(0));
        z.heard(0, ExecId(1));
        // Both busy for 2.4 s (due still runs on this replica's ticks), then e0 speaks and
        // e1 only 74 ms later.
        for t in (0..2_400_000u64).step_by(40_000) {
            assert!(z.due(t, Seq(0), IDLE).is_empty());
        }
        z.heard(2_465_000, ExecId(0));
        for t in (2_465_000..2_539_000u64).step_by(10_000) {
            assert!(z.due(t, Seq(0), IDLE).is_empty());
        }
        z.heard(2_539_000, ExecId(1));
        // This replica's own thread held up for ten seconds, then one of them first.
        z.heard(12_600_000, ExecId(1));
        assert!(z.due(12_600_000, Seq(0), IDLE).is_empty());
        z.heard(12_600_100, ExecId(0));
        assert!(z.due(12_600_200, Seq(0), IDLE).is_empty());
        assert!(z.suspected.is_empty());
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_late_active_wakes_one_sleeper_until_it_is_heard_from() {
        // u=2 r=1: 3 actives, 2 sleepers.
        let mut z = Sleepers::new(3, 5, 200_000, 1_000_000);
        z.reported(1_000, ExecId(0), report(5, b"r"), (Seq(0), 128));
        z.reported(1_200, ExecId(1), report(5, b"r"), (Seq(0), 128));
        assert!(z.due(40_000, Seq(0), T).is_empty());
        assert_eq!(z.due(52_000, Seq(0), T), vec![ExecId(3)]);
        assert_eq!(
            z.suspected.iter().copied().collect::<Vec<_>>(),
            vec![ExecId(2)]
        );
        // Not again before the resend period, which then doubles.
        assert!(z.due(100_000, Seq(0), T).is_empty());
        assert_eq!(z.due(260_000, Seq(0), T), vec![ExecId(3)]);
        assert!(z.due(600_000, Seq(0), T).is_empty());
        assert_eq!(z.due(660_000, Seq(0), T), vec![ExecId(3)]);
        z.heard(700_000, ExecId(3));
        assert!(z.due(5_000_000, Seq(0), T).is_empty());
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_sleeper_that_never_answers_is_passed_over() {
        let mut z = Sleepers::new(3, 5, 200_000, 1_000_000);
        z.faulty(ExecId(0));
        let mut asked = Vec::new();
        for t in (0..20_000_000u64).step_by(100_000) {
            asked.extend(z.due(t, Seq(0), T));
        }
        // e3 three times, then e3 and e4 together.
        assert_eq!(
            &asked[..5],
            &[ExecId(3), ExecId(3), ExecId(3), ExecId(3), ExecId(4)]
        );
        // e4 woke: it stands for the one suspect, and e3 is asked no more.
        z.heard(20_000_000, ExecId(4));
        assert!(z.due(26_000_000, Seq(0), T).is_empty());
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_wrong_report_wakes_at_once_and_two_faults_wake_two() {
        let mut z = Sleepers::new(3, 5, 200_000, 1_000_000);
        z.faulty(ExecId(1));
        assert_eq!(z.due(10, Seq(0), T), vec![ExecId(3)]);
        // A new suspect: asked at once, the period back to its start.
        z.faulty(ExecId(0));
        assert_eq!(z.due(300_000, Seq(0), T), vec![ExecId(3), ExecId(4)]);
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_whole_group_sends_its_woken_sleeper_back_to_sleep() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.reported(10, ExecId(0), report(4, b"a"), (Seq(0), 128));
        assert_eq!(z.due(100_000, Seq(0), T), vec![ExecId(2)]);
        z.heard(150_000, ExecId(2));
        assert!(!z.asleep(ExecId(2)));
        // Not while the woken one has not sent the agreed token (it is still filling).
        assert!(z.healthy(1_000_000, ExecId(0), Seq(128)).is_empty());
        assert!(z.healthy(1_000_000, ExecId(1), Seq(128)).is_empty());
        // A newer checkpoint starts the count again; actives heard from lately. Batch 4, below
        // it, was found late and is forgotten once the checkpoint is stable.
        z.heard(1_900_000, ExecId(0));
        z.heard(1_900_000, ExecId(1));
        assert!(z.due(1_950_000, Seq(128), T).is_empty());
        assert!(z.healthy(2_000_000, ExecId(2), Seq(256)).is_empty());
        assert!(z.healthy(2_000_000, ExecId(0), Seq(256)).is_empty());
        assert_eq!(z.healthy(2_000_100, ExecId(1), Seq(256)), vec![ExecId(2)]);
        assert!(z.asleep(ExecId(2)) && z.suspected.is_empty());
        // What it sent before it paused does not wake it in this replica's eyes; what it
        // says two catch-up periods later does.
        z.heard(2_300_000, ExecId(2));
        assert!(z.asleep(ExecId(2)));
        z.heard(2_500_000, ExecId(2));
        assert!(!z.asleep(ExecId(2)));
        z.check_invariants().unwrap();
    }

    /// An active whose tokens come on time while its reports lag keeps the woken sleeper
    /// awake: the group is whole only once every active reported the checkpoint's batches.
    #[test]
    fn an_active_whose_reports_lag_keeps_the_sleeper_awake() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.reported(10, ExecId(0), report(4, b"a"), (Seq(0), 128));
        assert_eq!(z.due(100_000, Seq(0), T), vec![ExecId(2)]);
        z.heard(150_000, ExecId(2));
        z.reported(200_000, ExecId(0), report(200, b"a"), (Seq(128), 128));
        assert!(z.due(200_000, Seq(128), T).is_empty());
        for e in [ExecId(0), ExecId(1), ExecId(2)] {
            z.heard(250_000, e);
            assert!(
                z.healthy(250_000, e, Seq(256)).is_empty(),
                "e1 owes batch 200"
            );
        }
        assert!(!z.asleep(ExecId(2)));
        // Its report comes in time: at the next checkpoint the group is whole.
        z.reported(240_000, ExecId(1), report(200, b"a"), (Seq(128), 128));
        for e in [ExecId(0), ExecId(1)] {
            z.heard(300_000, e);
            assert!(z.healthy(300_000, e, Seq(384)).is_empty());
        }
        assert_eq!(z.healthy(300_000, ExecId(2), Seq(384)), vec![ExecId(2)]);
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_disagreement_keeps_the_sleeper_awake() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.disagree("zz-reply-copies-differ", String::new);
        assert_eq!(z.due(10, Seq(0), T), vec![ExecId(2)]);
        z.heard(20, ExecId(2));
        for e in [ExecId(0), ExecId(1), ExecId(2)] {
            assert!(z.healthy(30, e, Seq(128)).is_empty());
        }
        assert!(!z.asleep(ExecId(2)));
    }

    #[test]
    fn an_active_found_faulty_is_stopped_and_keeps_the_sleeper_awake() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        assert!(z.healthy(10, ExecId(0), Seq(128)).is_empty());
        assert!(z.faulty(ExecId(0)));
        assert!(!z.faulty(ExecId(0)), "reported once");
        assert!(z.asleep(ExecId(0)), "stopped: sent no batches");
        assert_eq!(z.due(20, Seq(0), T), vec![ExecId(2)]);
        z.heard(30, ExecId(2));
        for e in [ExecId(0), ExecId(1), ExecId(2)] {
            assert!(z.healthy(40, e, Seq(256)).is_empty());
        }
        assert!(!z.asleep(ExecId(2)));
        z.check_invariants().unwrap();
    }

    #[test]
    fn a_busy_cluster_stretches_the_timeout_to_its_spreads() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        for s in 1..=64u64 {
            z.reported(s * 1_000_000, ExecId(0), report(s, b"r"), (Seq(0), 128));
            z.reported(
                s * 1_000_000 + 30_000,
                ExecId(1),
                report(s, b"r"),
                (Seq(0), 128),
            );
        }
        assert_eq!(z.timeout(50_000), 120_000);
        assert!(z
            .due(64_000_000, Seq(0), (50_000, u64::MAX, 200_000))
            .is_empty());
        assert!(z.suspected.is_empty());
    }

    /// A faulty active that lags a little more every few batches, each time under the bound its
    /// earlier lags set, raises the bound only up to its most: past it, it is late.
    #[test]
    fn a_creeping_active_cannot_raise_the_bound_past_its_most() {
        let floor = 50_000;
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        let mut lag = 10_000u64;
        let mut seq = 0u64;
        while lag < 1_000_000 {
            for _ in 0..64 {
                seq += 1;
                let at = seq * 10_000_000;
                z.reported(at, ExecId(0), report(seq, b"r"), (Seq(0), 1 << 20));
                assert!(
                    lag < z.timeout(floor),
                    "a lag of {lag} us is within the bound"
                );
                z.reported(at + lag, ExecId(1), report(seq, b"r"), (Seq(0), 1 << 20));
                assert!(z.due(at + lag, Seq(0), T).is_empty(), "{lag} us");
            }
            lag *= 2;
        }
        assert!(z.suspected.is_empty());
        assert_eq!(
            z.timeout(floor),
            1_000_000,
            "four times the lags, at most 1 s"
        );
        // The next lag, twice the last, is late.
        seq += 1;
        let at = seq * 10_000_000;
        z.reported(at, ExecId(0), report(seq, b"r"), (Seq(0), 1 << 20));
        assert_eq!(z.due(at + 1_000_001, Seq(0), T), vec![ExecId(2)]);
        assert!(z.suspected.contains(&ExecId(1)));
        // Without the most, the same lags would have raised the bound to four times the last.
        let mut unbounded = Sleepers::new(2, 3, 200_000, u64::MAX);
        unbounded.adaptive = z.adaptive;
        assert_eq!(unbounded.timeout(floor), 4 * lag / 2);
        z.check_invariants().unwrap();
    }

    /// A checkpoint that becomes stable does not excuse a missing report of a batch below it: the
    /// tokens show the actives executed it, not that each reported it. A report of it that comes
    /// in time closes it; one that does not is late, and the batch is then forgotten.
    #[test]
    fn a_stable_checkpoint_does_not_excuse_a_missing_report() {
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        z.reported(1_000, ExecId(0), report(3, b"r"), (Seq(0), 4));
        z.reported(1_000, ExecId(0), report(4, b"r"), (Seq(0), 4));
        assert!(z.due(2_000, Seq(4), T).is_empty(), "checkpoint 4 stable");
        z.reported(30_000, ExecId(1), report(3, b"r"), (Seq(4), 4));
        assert!(z.due(40_000, Seq(4), T).is_empty(), "batch 3 came in time");
        assert_eq!(z.due(51_000, Seq(4), T), vec![ExecId(2)], "batch 4 did not");
        assert!(z.suspected.contains(&ExecId(1)));
        assert!(
            z.open.is_empty(),
            "a late batch below the stable checkpoint is forgotten"
        );
        z.check_invariants().unwrap();
    }

    /// A report is found late when it becomes late, not at the next tick: the watch timer is
    /// set for the oldest open batch, not set again while it would fire in time, and set
    /// earlier for a batch that becomes late sooner; a batch late already sets nothing.
    #[test]
    fn the_watch_timer_fires_when_the_oldest_open_report_becomes_late() {
        let floor = 50_000;
        let mut z = Sleepers::new(2, 3, 200_000, 1_000_000);
        assert_eq!(z.watch_timer(0, floor), None, "nothing open");
        z.reported(1_000, ExecId(0), report(4, b"r"), (Seq(0), 128));
        assert!(z.due(1_000, Seq(0), T).is_empty());
        assert_eq!(z.watch_timer(1_000, floor), Some(50_000));
        // Another batch open later: the timer set fires first, so none is set.
        z.reported(2_000, ExecId(0), report(5, b"r"), (Seq(0), 128));
        assert_eq!(z.watch_timer(2_000, floor), None);
        // At the deadline, exec 1 is late for batch 4; batch 5's deadline is next.
        assert_eq!(z.due(51_000, Seq(0), T), vec![ExecId(2)]);
        assert!(z.suspected.contains(&ExecId(1)));
        assert_eq!(z.watch_timer(51_000, floor), Some(1_000));
        z.due(52_000, Seq(0), T);
        assert_eq!(
            z.watch_timer(52_000, floor),
            None,
            "every open batch is late already"
        );
        z.check_invariants().unwrap();
    }
}
