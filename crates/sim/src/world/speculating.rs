//! Speculative sessions (seed 001, PBFT-CS) in the simulator, for `plumb sim --app spec`.
//!
//! A session is a few correct simulated clients of one speculation group acting as its lanes
//! (the core protocol allows one outstanding request per client id), driven by one
//! `plumb_speculation::Speculation` tracker. It chains increments of one counter, each of
//! which needs the previous increment's reply (its token): every operation goes out with
//! `Route::Speculative` (the ordered request plus an EARLY-REQUEST to the session's early
//! replica, on some seeds a Byzantine one that lies), and as soon as an early reply arrives
//! (`Action::Early`) the next increment goes out on a free lane, with a predicate naming the
//! earlier one (lane, request number, digest of the early reply). Some increments are
//! speculated with no reply at all (`issue_predicted`). A lane with nothing to chain sends an
//! independent file operation (depending on every unsettled speculation, or on none).
//!
//! When an agreed reply differs from what the session went on with, the tracker names the
//! operations to roll back; each must come back `Aborted` or `Retry` from the replicas
//! (**SPEC-rollback**), and the session continues the chain from the agreed state (a retried
//! file operation is sent again). The lanes' operations are in the workload's histories like
//! any client's, so their agreed results are judged linearizable with the others'.

use super::{StageBox, World};
use crate::app::SimApp;
use crate::config::SessionPlan;
use crate::rng::SimRng;
use crate::spec::random_file_op;
use plumb_client::Route;
use plumb_crypto::Digest;
use plumb_speculation::app::{incr_op, next_token, IncrReply};
use plumb_speculation::client::{Confirmation, Early, IssueError, Issued};
use plumb_speculation::{Dependence, OpId, SpecOp, SpecReply, Speculation};
use plumb_wire::{ClientId, ExecId, Principal, ReqNo};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

pub(crate) struct Sessions {
    sessions: Vec<Session>,
    /// Lane (client id) → its session.
    lane_of: HashMap<ClientId, usize>,
}

struct Session {
    plan: SessionPlan,
    tracker: Speculation,
    rng: SimRng,
    /// The operation each lane has outstanding, and the request number it went out under
    /// (unknown while the lane still learns its number).
    lane_op: BTreeMap<ClientId, (OpId, Option<ReqNo>)>,
    /// The chain's latest increment, while it may still be speculated on.
    head: Option<OpId>,
    /// The counter's newest agreed (value, token): where the chain goes on from when nothing
    /// unsettled can be built on.
    known: (u64, u64),
    /// Operations the tracker rolled back, not yet answered: each answer must be a no-op.
    rolled_back: BTreeSet<OpId>,
    /// File operations answered `Retry`, to send again.
    reissue: VecDeque<Vec<u8>>,
}

/// What a session sends next on a lane.
struct Next {
    inner: Vec<u8>,
    depends: Dependence,
    predicted: Option<Vec<u8>>,
    chain: bool,
}

/// (value, token) after an agreed or speculated reply to an increment.
fn counter_after(reply: &[u8]) -> Option<(u64, u64)> {
    match SpecReply::decode(reply).ok()? {
        SpecReply::Executed(inner) => match IncrReply::decode(&inner)? {
            IncrReply::Done { value, token } => Some((value, token)),
            IncrReply::WrongToken { value } => Some((value, crate::spec::token_at(value)?)),
        },
        _ => None,
    }
}

impl Sessions {
    pub(crate) fn new(seed: u64, plans: &[SessionPlan]) -> Option<Sessions> {
        if plans.is_empty() {
            return None;
        }
        let mut lane_of = HashMap::new();
        let sessions = plans
            .iter()
            .enumerate()
            .map(|(i, plan)| {
                for &l in &plan.lanes {
                    lane_of.insert(l, i);
                }
                let group = plan.lanes[0] / plumb_speculation::SPEC_GROUP;
                let mut rng = SimRng::new(seed, &format!("session {i}"));
                // Half the sessions keep the paper's 1% threshold over 100 early replies; the
                // others tolerate more, so that they go on speculating on a liar for longer.
                let tracker = if rng.chance(0.5) {
                    Speculation::new(group)
                } else {
                    Speculation::with_fault_window(group, 20, 0.3)
                };
                Session {
                    plan: plan.clone(),
                    tracker,
                    rng,
                    lane_op: BTreeMap::new(),
                    head: None,
                    known: (0, 0),
                    rolled_back: BTreeSet::new(),
                    reissue: VecDeque::new(),
                }
            })
            .collect();
        Some(Sessions { sessions, lane_of })
    }
}

impl Session {
    /// The next increment of the chain, if one can be sent now: on the head's speculated
    /// result, or (with no head to build on) on the agreed state. `None` while the head has
    /// no result to go on with.
    fn chain_next(&mut self) -> Option<Next> {
        let counter = self.plan.counter;
        let (state, depends) = match self.head.filter(|h| self.tracker.is_tracked(*h)) {
            Some(h) => {
                let speculated = self.tracker.speculated(h)?;
                (counter_after(speculated)?, Dependence::On(vec![h]))
            }
            None => (self.known, Dependence::Nothing),
        };
        let (value, token) = state;
        let predicted = self.rng.chance(self.plan.predict).then(|| {
            // A lying early reply may have said u64::MAX.
            let value = value.wrapping_add(1);
            IncrReply::Done {
                value,
                token: next_token(token, value),
            }
            .encode()
        });
        Some(Next {
            inner: incr_op(counter, token),
            depends,
            predicted,
            chain: true,
        })
    }

    /// An operation that needs no speculated result: a retried one, or a file operation.
    fn independent(&mut self, objects: &[Vec<u8>]) -> Next {
        let inner = self
            .reissue
            .pop_front()
            .unwrap_or_else(|| random_file_op(&mut self.rng, objects));
        let depends = if self.rng.chance(0.5) {
            Dependence::All
        } else {
            Dependence::Nothing
        };
        Next {
            inner,
            depends,
            predicted: None,
            chain: false,
        }
    }

    fn issue(&mut self, next: &Next) -> Result<Issued, IssueError> {
        let attempt = |t: &mut Speculation, d: Dependence| match &next.predicted {
            Some(p) => t.issue_predicted(next.inner.clone(), d, p.clone()),
            None => t.issue(next.inner.clone(), d),
        };
        match attempt(&mut self.tracker, next.depends.clone()) {
            // A file operation may as well depend on nothing (an unsettled operation of a
            // lane that is still learning its number cannot be named, and too many cannot
            // be carried).
            Err(_) if !next.chain => attempt(&mut self.tracker, Dependence::Nothing),
            other => other,
        }
    }
}

impl<A: SimApp> World<'_, A> {
    /// Whether client `c` is a lane of a speculative session.
    pub(super) fn is_lane(&self, c: ClientId) -> bool {
        self.sessions
            .as_ref()
            .is_some_and(|s| s.lane_of.contains_key(&c))
    }

    /// Node `i` (a lane) is free to send: its client is up and has nothing outstanding. (A
    /// lane still learning its request number holds the operation until it knows it; the
    /// operation is named in predicates only once its number is known.)
    fn lane_free(&self, i: usize) -> bool {
        matches!(&self.nodes[i].stage, Some(StageBox::Client(cl)) if !cl.outstanding())
    }

    /// A lane's think time is over: send the chain's next increment if it can go, otherwise
    /// an independent operation.
    pub(super) fn lane_wake(&mut self, i: usize, c: ClientId) {
        if self.now >= self.workload.stop_at() || !self.lane_free(i) {
            return;
        }
        let Some(s) = self
            .sessions
            .as_ref()
            .and_then(|s| s.lane_of.get(&c).copied())
        else {
            return;
        };
        let objects = self.cfg.workload.keys.clone();
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let session = &mut sessions.sessions[s];
        let next = match session.chain_next() {
            Some(n) => n,
            None => session.independent(&objects),
        };
        if !self.send_on_lane(i, c, s, next) {
            self.schedule_wake(i);
        }
    }

    /// Go on with the chain on every free lane of session `s`, as far as it can go.
    fn pump(&mut self, s: usize) {
        if self.now >= self.workload.stop_at() {
            return;
        }
        let lanes = match &self.sessions {
            Some(sessions) => sessions.sessions[s].plan.lanes.clone(),
            None => return,
        };
        for lane in lanes {
            let Some(i) = self.index(Principal::Client(lane)) else {
                continue;
            };
            if !self.lane_free(i) {
                continue;
            }
            let Some(sessions) = self.sessions.as_mut() else {
                return;
            };
            let Some(next) = sessions.sessions[s].chain_next() else {
                return;
            };
            if !self.send_on_lane(i, lane, s, next) {
                return;
            }
        }
    }

    /// Issue `next` with the tracker and send it on lane `c` (node `i`). False if nothing went.
    fn send_on_lane(&mut self, i: usize, c: ClientId, s: usize, next: Next) -> bool {
        let local = self.nodes[i].clock.local(self.now);
        let Some(sessions) = self.sessions.as_mut() else {
            return false;
        };
        let session = &mut sessions.sessions[s];
        let Ok(Issued { id, request }) = session.issue(&next) else {
            self.stats.counters.add("spec-issue-refused");
            return false;
        };
        let route = Route::Speculative {
            early: session.plan.early,
        };
        let mut actions = std::mem::take(&mut self.actions);
        actions.clear();
        let Some(StageBox::Client(client)) = self.nodes[i].stage.as_mut() else {
            self.actions = actions;
            return false;
        };
        if client
            .submit(local, request.clone(), route, &mut actions)
            .is_err()
        {
            // Checked free just before; never leave a tracked operation that never went out
            // as something later ones could depend on.
            self.actions = actions;
            return false;
        }
        let outstanding = client.outstanding_identity();
        if let Some((nc, req)) = outstanding {
            // Fresh id, lane of the session's group: cannot fail.
            let _ = session.tracker.assign(id, c, nc, req);
        }
        let nc = outstanding.map(|(nc, _)| nc);
        session.lane_op.insert(c, (id, nc));
        if next.chain {
            session.head = Some(id);
        }
        let counter = if next.predicted.is_some() {
            "spec-predicted"
        } else {
            "spec-issued"
        };
        self.stats.counters.add(counter);
        self.trace.fold(&[self.now, 5, i as u64]);
        self.trace.line(
            self.now,
            format_args!(
                "c{c} invokes {} (speculative, op {id}{})",
                self.app.op_text(&request),
                if next.predicted.is_some() {
                    ", predicted"
                } else {
                    ""
                }
            ),
        );
        self.workload.invoked(c, request, false, self.now);
        self.carry_out(i, &mut actions);
        self.actions = actions;
        true
    }

    /// Lane `c` got an early reply to its request `nc`, identity `req`, from execution replica
    /// `exec`.
    pub(super) fn lane_early(
        &mut self,
        c: ClientId,
        nc: ReqNo,
        req: Digest,
        exec: ExecId,
        result: &[u8],
    ) {
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let Some(&s) = sessions.lane_of.get(&c) else {
            return;
        };
        let session = &mut sessions.sessions[s];
        let Some((id, sent)) = session.lane_op.get_mut(&c) else {
            return;
        };
        let id = *id;
        if *sent != Some(nc) {
            // Numbered late (the lane was learning its number), or renumbered (the number
            // was its previous life's): later predicates name this request.
            *sent = Some(nc);
            let _ = session.tracker.assign(id, c, nc, req);
        }
        let what = match session.tracker.on_early(id, exec, result) {
            Early::Speculate(_) => "spec-early-speculated",
            Early::Track => "spec-early-tracked",
            Early::Ignored => "spec-early-ignored",
        };
        self.stats.counters.add(what);
        if what == "spec-early-speculated" {
            self.trace.line(
                self.now,
                format_args!(
                    "c{c} speculates on exec {exec}'s early reply: {}",
                    self.app.result_text(result)
                ),
            );
            self.pump(s);
        }
    }

    /// Lane `c`'s request `nc` was answered `result` (agreed by a reply quorum).
    pub(super) fn lane_complete(&mut self, c: ClientId, nc: ReqNo, result: &[u8]) {
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let Some(&s) = sessions.lane_of.get(&c) else {
            return;
        };
        let session = &mut sessions.sessions[s];
        let Some((id, _)) = session.lane_op.remove(&c) else {
            return;
        };
        let no_op = matches!(
            SpecReply::decode(result),
            Ok(SpecReply::Aborted { .. } | SpecReply::Retry { .. })
        );
        if session.rolled_back.remove(&id) {
            self.stats.counters.add("spec-rolled-back-answered");
            if !no_op {
                let detail = format!(
                    "c{c} request {nc} (session op {id}) depended on a wrong speculation and was rolled back, but the replicas answered {}",
                    self.app.result_text(result)
                );
                self.checker.violate("SPEC-rollback", detail);
            }
            return;
        }
        let is_incr = |s: &Session, inner: &[u8]| {
            inner.first() == Some(&0) && inner.get(1..5) == Some(&s.plan.counter.to_le_bytes())
        };
        // The op's inner bytes, from the lane's history (the request just completed).
        let inner = self
            .workload
            .clients
            .get(c as usize)
            .and_then(|l| l.history.iter().rev().find(|r| r.ncs.contains(&nc)))
            .and_then(|r| SpecOp::decode(&r.op).ok())
            .map(|o| o.op)
            .unwrap_or_default();
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let session = &mut sessions.sessions[s];
        let (what, aborted) = match session.tracker.on_confirmed(id, result) {
            Confirmation::Confirmed { .. } => ("spec-confirmed", Vec::new()),
            Confirmation::Corrected { aborted, .. } => ("spec-corrected", aborted),
            Confirmation::Retry { aborted } => {
                if !is_incr(session, &inner) {
                    session.reissue.push_back(inner.clone());
                }
                ("spec-retry", aborted)
            }
            Confirmation::Unknown => ("spec-unknown", Vec::new()),
        };
        if is_incr(session, &inner) {
            if let Some(state) = counter_after(result) {
                // Values only grow: the larger is the newer agreed state.
                if state.0 >= session.known.0 {
                    session.known = state;
                }
            }
        }
        if session.head == Some(id) {
            session.head = None;
        }
        let rolled = aborted.len();
        session.rolled_back.extend(aborted);
        self.stats.counters.add(what);
        self.stats.counters.add_n("spec-rolled-back", rolled as u64);
        if rolled > 0 {
            self.trace.line(
                self.now,
                format_args!(
                    "c{c}: speculation on op {id} failed, {rolled} operations rolled back"
                ),
            );
        }
        self.pump(s);
    }

    /// Lane `c` restarted, resuming request `resumed` (if any): an operation it does not
    /// resume will never be answered, and nothing may wait for it. One whose record was lost
    /// goes on with its chain: its next request may carry the number, even the bytes, of one it
    /// abandoned, and its life tells the two apart.
    pub(super) fn lane_restarted(&mut self, c: ClientId, resumed: Option<ReqNo>) {
        let Some(sessions) = self.sessions.as_mut() else {
            return;
        };
        let Some(&s) = sessions.lane_of.get(&c) else {
            return;
        };
        let session = &mut sessions.sessions[s];
        let Some(&(id, sent)) = session.lane_op.get(&c) else {
            return;
        };
        if sent.is_some() && sent == resumed {
            return;
        }
        session.lane_op.remove(&c);
        session.rolled_back.remove(&id);
        if session.head == Some(id) {
            session.head = None;
        }
        self.stats.counters.add("spec-abandoned");
    }
}
