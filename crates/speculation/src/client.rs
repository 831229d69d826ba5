//! The client side of speculation, as pure bookkeeping: no I/O, no clock. The caller (a
//! session over `plumb_client`, the simulator, a test) sends the bytes this hands out and
//! feeds back what replicas answer; [`Speculation`] says which results it may go on with,
//! which commit, and what must be rolled back and reissued.
//!
//! The life of an operation:
//!
//! 1. [`Speculation::issue`] (or [`Speculation::issue_predicted`] for 0-reply speculation)
//!    gives it an [`OpId`] and the [`SpecOp`] bytes to send, with one predicate per earlier
//!    unconfirmed operation whose speculated result it depends on.
//! 2. [`Speculation::assign`] records the lane (client id) and request number it was sent
//!    with; later operations need them to name it in their predicates.
//! 3. [`Speculation::on_early`] takes the first early reply; the session goes on with it if
//!    that replica is trusted ([`Speculation::should_speculate`]).
//! 4. [`Speculation::on_confirmed`] takes the committed reply: it confirms the speculation,
//!    or corrects it and names every later operation that depended on the wrong result
//!    (directly or through another), which replicas turn into no-ops and the session must
//!    roll back and reissue; or it says the operation must be retried.
//!
//! Only results the session has seen can be depended on: an operation issued while an
//! earlier one has no result yet does not depend on that result (the caller could not have
//! used it), so [`Dependence::All`] names only operations with a speculated result.

use crate::envelope::{answer_digest, Predicate, SpecOp, SpecReply, MAX_PREDICATES};
use crate::shim::{same_group, SPEC_GROUP};
use plumb_crypto::Digest;
use plumb_wire::{ClientId, ExecId, ReqNo};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A session-local operation number, increasing from 0.
pub type OpId = u64;

/// Early replies per replica whose outcome is remembered (seed 001 §3.3: "the past n early
/// replies").
pub const DEFAULT_WINDOW: usize = 100;
/// The fraction of failed early replies above which a replica is not speculated on (§3.3:
/// "PBFT-CS currently uses an arbitrary threshold of 1%").
pub const DEFAULT_THRESHOLD: f64 = 0.01;

/// Which earlier results a new operation depends on.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Dependence {
    /// Every unconfirmed earlier operation with a speculated result: conservative, right for
    /// a caller that does not track what it actually used.
    #[default]
    All,
    /// None: the operation is independent of every speculation.
    Nothing,
    /// These operations' results. Ids already settled (confirmed, or rolled back: the caller
    /// was told and must not depend on those) need no predicate and are skipped.
    On(Vec<OpId>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssueError {
    /// No operation with this id was ever issued.
    Unknown(OpId),
    /// The operation has no speculated result yet: nothing to depend on.
    NotSpeculated(OpId),
    /// The operation was not [`Speculation::assign`]ed a lane and number, so it cannot be named.
    NotAssigned(OpId),
    /// More than [`MAX_PREDICATES`] unconfirmed dependencies: wait for some to commit.
    TooManyPredicates(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssignError {
    Unknown(OpId),
    /// The lane is not in this session's speculation group: replicas would abort every
    /// operation that depends on it.
    ForeignLane(ClientId),
    /// The operation went out on another lane already.
    AlreadyAssigned(OpId),
}

/// An issued operation: its id and the request op bytes to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    pub id: OpId,
    pub request: Vec<u8>,
}

/// What an early reply allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Early {
    /// Go on with this result (1-reply speculation).
    Speculate(SpecReply),
    /// Remembered to judge the replica when the operation commits, but not to be used: the
    /// replica is over its failure threshold, the reply does not decode, or the operation
    /// already has a speculated result (predicted, or an earlier early reply).
    Track,
    /// Unknown or settled operation, or a second early reply for it.
    Ignored,
}

/// What a committed reply means for the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirmation {
    /// The committed reply equals the speculated result, or there was none to compare with.
    Confirmed { reply: SpecReply },
    /// The committed reply differs from the speculated result: `reply` is the right one and
    /// `aborted` the operations (oldest first) that depended on the wrong one, directly or
    /// transitively. Replicas executed those as no-ops; the session rolls them back and
    /// issues them again. They are no longer tracked.
    Corrected {
        reply: SpecReply,
        aborted: Vec<OpId>,
    },
    /// A predicate was older than the replicas' log: the operation did nothing and must be
    /// issued again (its committed dependencies then need no predicate). `aborted` as above
    /// when the session had speculated on another result for it.
    Retry { aborted: Vec<OpId> },
    /// Not a tracked operation (settled, rolled back, or never issued).
    Unknown,
}

/// A result the session goes on with before it commits.
#[derive(Clone, Debug)]
enum Speculated {
    Early(Vec<u8>),
    Predicted(Vec<u8>),
}

impl Speculated {
    fn bytes(&self) -> &[u8] {
        match self {
            Speculated::Early(b) | Speculated::Predicted(b) => b,
        }
    }
}

#[derive(Clone, Debug)]
struct Op {
    /// The lane, number and request identity it went out as.
    sent_as: Option<(ClientId, ReqNo, Digest)>,
    /// The operations whose speculated results this one's predicates name.
    deps: Vec<OpId>,
    predicates: Vec<Predicate>,
    /// The first early reply and who sent it.
    early: Option<(ExecId, Vec<u8>)>,
    speculated: Option<Speculated>,
}

/// Outcomes of a replica's last early replies: `true` = failed.
#[derive(Clone, Debug, Default)]
struct Window {
    outcomes: VecDeque<bool>,
    failures: usize,
}

/// A speculative session's bookkeeping (module docs).
#[derive(Clone, Debug)]
pub struct Speculation {
    group: ClientId,
    next_id: OpId,
    ops: BTreeMap<OpId, Op>,
    window: usize,
    max_failures: usize,
    replicas: BTreeMap<ExecId, Window>,
}

impl Speculation {
    /// A session whose lanes are the client ids of speculation group `group`
    /// (`group * SPEC_GROUP ..`), with the default fault window.
    pub fn new(group: ClientId) -> Self {
        Self::with_fault_window(group, DEFAULT_WINDOW, DEFAULT_THRESHOLD)
    }

    /// Stop speculating on a replica while more than `threshold` × `window` of its last
    /// `window` early replies failed. The count is against the whole window even before
    /// `window` replies were seen, so one early failure does not silence a replica for a
    /// whole window (with the defaults: at most 1 failure in the last 100 is tolerated).
    pub fn with_fault_window(group: ClientId, window: usize, threshold: f64) -> Self {
        let window = window.max(1);
        let max_failures = (threshold.max(0.0) * window as f64 + 1e-9).floor() as usize;
        Speculation {
            group,
            next_id: 0,
            ops: BTreeMap::new(),
            window,
            max_failures,
            replicas: BTreeMap::new(),
        }
    }

    /// The client ids this session may use as lanes.
    pub fn lanes(&self) -> std::ops::Range<ClientId> {
        let first = self.group.saturating_mul(SPEC_GROUP);
        first..first.saturating_add(SPEC_GROUP)
    }

    /// Operations issued and not settled.
    pub fn outstanding(&self) -> usize {
        self.ops.len()
    }

    pub fn is_tracked(&self, id: OpId) -> bool {
        self.ops.contains_key(&id)
    }

    /// The result the session goes on with for `id`, if any (encoded [`SpecReply`]).
    pub fn speculated(&self, id: OpId) -> Option<&[u8]> {
        self.ops
            .get(&id)?
            .speculated
            .as_ref()
            .map(Speculated::bytes)
    }

    /// The predicates `id` was issued with.
    pub fn predicates(&self, id: OpId) -> Option<&[Predicate]> {
        self.ops.get(&id).map(|o| o.predicates.as_slice())
    }

    /// Issue `op`, depending on `depends_on`: the id and the request bytes to send.
    pub fn issue(&mut self, op: Vec<u8>, depends_on: Dependence) -> Result<Issued, IssueError> {
        self.issue_with(op, depends_on, None)
    }

    /// 0-reply speculation: issue `op` and go on at once as if the application answered
    /// `predicted`; later operations may depend on the prediction straight away. An early
    /// reply then only judges its replica; the committed reply confirms or corrects the
    /// prediction.
    pub fn issue_predicted(
        &mut self,
        op: Vec<u8>,
        depends_on: Dependence,
        predicted: Vec<u8>,
    ) -> Result<Issued, IssueError> {
        let reply = SpecReply::Executed(predicted).encode();
        self.issue_with(op, depends_on, Some(Speculated::Predicted(reply)))
    }

    fn issue_with(
        &mut self,
        op: Vec<u8>,
        depends_on: Dependence,
        speculated: Option<Speculated>,
    ) -> Result<Issued, IssueError> {
        let deps: Vec<OpId> = match depends_on {
            Dependence::All => self
                .ops
                .iter()
                .filter(|(_, o)| o.speculated.is_some())
                .map(|(&id, _)| id)
                .collect(),
            Dependence::Nothing => Vec::new(),
            Dependence::On(ids) => {
                let mut set = BTreeSet::new();
                for id in ids {
                    if id >= self.next_id {
                        return Err(IssueError::Unknown(id));
                    }
                    if self.ops.contains_key(&id) {
                        set.insert(id);
                    }
                }
                set.into_iter().collect()
            }
        };
        if deps.len() > MAX_PREDICATES {
            return Err(IssueError::TooManyPredicates(deps.len()));
        }
        let mut predicates = Vec::with_capacity(deps.len());
        for &d in &deps {
            let o = &self.ops[&d];
            let Some(s) = &o.speculated else {
                return Err(IssueError::NotSpeculated(d));
            };
            let Some((client, nc, request)) = o.sent_as else {
                return Err(IssueError::NotAssigned(d));
            };
            predicates.push(Predicate {
                client,
                nc,
                answer: answer_digest(request, s.bytes()),
            });
        }
        let request = SpecOp {
            predicates: predicates.clone(),
            op,
        }
        .encode();
        let id = self.next_id;
        self.next_id += 1;
        self.ops.insert(
            id,
            Op {
                sent_as: None,
                deps,
                predicates,
                early: None,
                speculated,
            },
        );
        Ok(Issued { id, request })
    }

    /// The request bytes for `op` on the read-only path, or `None` while any operation of the
    /// session is unsettled: then it must be sent ordered (`issue`). Seed 001 §3.2.2: a read
    /// may not skip agreement before the session's writes have committed (it could miss
    /// them on replicas that have not executed them), and nothing may depend on its reply
    /// (replicas do not log read-only replies), so it carries no predicates and is not
    /// tracked. This is the paper's simpler policy ("disable the read-only optimization while
    /// it has any uncommitted writes"), which needs no knowledge of what the op reads.
    pub fn read_only_request(&self, op: Vec<u8>) -> Option<Vec<u8>> {
        self.ops.is_empty().then(|| SpecOp::plain(op).encode())
    }

    /// `id` was sent as request `nc` of client `lane`, whose identity
    /// ([`plumb_wire::request_id`]: the lane's life and the request bytes included) is
    /// `request`: what later predicates on it name.
    ///
    /// Called again when the lane renumbers it (a lane that lost its record may learn a number
    /// its previous life's request was ordered under; the core client then sends the
    /// operation again under a higher one): later predicates name the new request. Those
    /// already sent name the old identity, which no replica logs at that number, so the
    /// operations carrying them come back `Aborted` (or `Retry`) and their own confirmations
    /// roll them back. Another lane for an assigned operation is refused.
    pub fn assign(
        &mut self,
        id: OpId,
        lane: ClientId,
        nc: ReqNo,
        request: Digest,
    ) -> Result<(), AssignError> {
        if !same_group(lane, self.lanes().start) {
            return Err(AssignError::ForeignLane(lane));
        }
        let op = self.ops.get_mut(&id).ok_or(AssignError::Unknown(id))?;
        if op.sent_as.is_some_and(|(l, _, _)| l != lane) {
            return Err(AssignError::AlreadyAssigned(id));
        }
        op.sent_as = Some((lane, nc, request));
        Ok(())
    }

    /// The first early reply to `id`, from `replica` (the whole result bytes).
    pub fn on_early(&mut self, id: OpId, replica: ExecId, result: &[u8]) -> Early {
        let trusted = self.should_speculate(replica);
        let Some(op) = self.ops.get_mut(&id) else {
            return Early::Ignored;
        };
        if op.early.is_some() {
            return Early::Ignored;
        }
        op.early = Some((replica, result.to_vec()));
        match (trusted, &op.speculated, SpecReply::decode(result)) {
            (true, None, Ok(reply)) => {
                op.speculated = Some(Speculated::Early(result.to_vec()));
                Early::Speculate(reply)
            }
            _ => Early::Track,
        }
    }

    /// The committed reply to `id` (the whole result bytes a reply quorum agreed on).
    pub fn on_confirmed(&mut self, id: OpId, result: &[u8]) -> Confirmation {
        let Some(op) = self.ops.remove(&id) else {
            return Confirmation::Unknown;
        };
        if let Some((replica, early)) = &op.early {
            self.judge(*replica, early.as_slice() != result);
        }
        // A committed reply comes from correct replicas, which only send SpecReply encodings;
        // anything else is taken as "nothing executed".
        let reply = SpecReply::decode(result).unwrap_or(SpecReply::Malformed);
        let wrong = op.speculated.as_ref().is_some_and(|s| s.bytes() != result);
        let aborted = if wrong {
            self.roll_back(id)
        } else {
            Vec::new()
        };
        match reply {
            SpecReply::Retry { .. } => Confirmation::Retry { aborted },
            reply if wrong => Confirmation::Corrected { reply, aborted },
            reply => Confirmation::Confirmed { reply },
        }
    }

    /// Remove and return every tracked operation that depends on `id`, transitively.
    fn roll_back(&mut self, id: OpId) -> Vec<OpId> {
        let mut bad = BTreeSet::from([id]);
        // Dependencies are always older, so one pass in id order finds the closure.
        for (&other, op) in &self.ops {
            if other > id && op.deps.iter().any(|d| bad.contains(d)) {
                bad.insert(other);
            }
        }
        bad.remove(&id);
        for b in &bad {
            self.ops.remove(b);
        }
        bad.into_iter().collect()
    }

    fn judge(&mut self, replica: ExecId, failed: bool) {
        let w = self.replicas.entry(replica).or_default();
        w.outcomes.push_back(failed);
        w.failures += usize::from(failed);
        if w.outcomes.len() > self.window {
            let old = w.outcomes.pop_front().unwrap_or(false);
            w.failures -= usize::from(old);
        }
    }

    /// Whether to go on with `replica`'s early replies: false while more than the threshold
    /// of its last `window` early replies failed (§3.3). Its replies are still judged while
    /// off, so it comes back once its failures fall out of the window.
    pub fn should_speculate(&self, replica: ExecId) -> bool {
        self.failures(replica) <= self.max_failures
    }

    /// Failed early replies of `replica` in its current window.
    pub fn failures(&self, replica: ExecId) -> usize {
        self.replicas.get(&replica).map_or(0, |w| w.failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The identity of request `nc` of `lane` (its life and bytes are immaterial here).
    fn rid(lane: ClientId, nc: ReqNo) -> Digest {
        plumb_wire::request_id(lane, plumb_wire::Life(7), nc, Digest::of(b"op"))
    }

    fn executed(bytes: &[u8]) -> Vec<u8> {
        SpecReply::Executed(bytes.to_vec()).encode()
    }

    /// Issue, assign on lane SPEC_GROUP + id (group 1), and give it an early reply from replica 0.
    fn speculate(s: &mut Speculation, dep: Dependence, early: &[u8]) -> OpId {
        let Issued { id, .. } = s.issue(b"op".to_vec(), dep).unwrap();
        let lane = SPEC_GROUP + (id as u32 % SPEC_GROUP);
        s.assign(id, lane, ReqNo(id + 1), rid(lane, ReqNo(id + 1)))
            .unwrap();
        assert_eq!(
            s.on_early(id, ExecId(0), &executed(early)),
            Early::Speculate(SpecReply::Executed(early.to_vec()))
        );
        id
    }

    #[test]
    fn issue_all_names_every_speculated_unconfirmed_op() {
        let mut s = Speculation::new(1);
        let a = speculate(&mut s, Dependence::All, b"a");
        // b is issued but has no result yet: not depended on.
        let b = s.issue(b"b".to_vec(), Dependence::All).unwrap();
        assert_eq!(s.predicates(b.id).unwrap().len(), 1);
        s.assign(
            b.id,
            SPEC_GROUP + 1,
            ReqNo(1),
            rid(SPEC_GROUP + 1, ReqNo(1)),
        )
        .unwrap();
        let c = s.issue(b"c".to_vec(), Dependence::All).unwrap();
        let decoded = SpecOp::decode(&c.request).unwrap();
        assert_eq!(decoded.op, b"c");
        assert_eq!(
            decoded.predicates,
            vec![Predicate {
                client: SPEC_GROUP + a as u32,
                nc: ReqNo(a + 1),
                answer: answer_digest(rid(SPEC_GROUP + a as u32, ReqNo(a + 1)), &executed(b"a")),
            }]
        );
        // Once a commits, nothing is left to depend on.
        assert_eq!(
            s.on_confirmed(a, &executed(b"a")),
            Confirmation::Confirmed {
                reply: SpecReply::Executed(b"a".to_vec())
            }
        );
        let d = s.issue(b"d".to_vec(), Dependence::All).unwrap();
        assert!(SpecOp::decode(&d.request).unwrap().predicates.is_empty());
    }

    /// A lane renumbers an operation (its number was its previous life's): predicates issued
    /// afterwards name the new number and identity; another lane is refused.
    #[test]
    fn a_renumbered_operation_is_named_by_its_new_request() {
        let mut s = Speculation::new(0);
        let p = s
            .issue_predicted(b"p".to_vec(), Dependence::Nothing, b"ok".to_vec())
            .unwrap()
            .id;
        s.assign(p, 3, ReqNo(21), rid(3, ReqNo(21))).unwrap();
        let before = s.issue(b"x".to_vec(), Dependence::On(vec![p])).unwrap();
        s.assign(p, 3, ReqNo(22), rid(3, ReqNo(22))).unwrap();
        let after = s.issue(b"y".to_vec(), Dependence::On(vec![p])).unwrap();
        let named = |id: OpId| {
            let p = s.predicates(id).unwrap()[0];
            (p.nc, p.answer)
        };
        assert_eq!(
            named(before.id),
            (
                ReqNo(21),
                answer_digest(rid(3, ReqNo(21)), &executed(b"ok"))
            )
        );
        assert_eq!(
            named(after.id),
            (
                ReqNo(22),
                answer_digest(rid(3, ReqNo(22)), &executed(b"ok"))
            )
        );
        assert_eq!(
            s.assign(p, 4, ReqNo(23), rid(4, ReqNo(23))),
            Err(AssignError::AlreadyAssigned(p))
        );
    }

    #[test]
    fn explicit_dependence_checks_ids() {
        let mut s = Speculation::new(0);
        let a = s.issue(b"a".to_vec(), Dependence::Nothing).unwrap().id;
        assert_eq!(
            s.issue(b"x".to_vec(), Dependence::On(vec![a])),
            Err(IssueError::NotSpeculated(a))
        );
        assert_eq!(
            s.issue(b"x".to_vec(), Dependence::On(vec![7])),
            Err(IssueError::Unknown(7))
        );
        let p = s
            .issue_predicted(b"p".to_vec(), Dependence::Nothing, b"ok".to_vec())
            .unwrap()
            .id;
        // Predicted but not yet sent: it has no (lane, nc) to name.
        assert_eq!(
            s.issue(b"x".to_vec(), Dependence::On(vec![p])),
            Err(IssueError::NotAssigned(p))
        );
        s.assign(p, 3, ReqNo(9), rid(3, ReqNo(9))).unwrap();
        let x = s.issue(b"x".to_vec(), Dependence::On(vec![p, p])).unwrap();
        assert_eq!(
            s.predicates(x.id).unwrap(),
            &[Predicate {
                client: 3,
                nc: ReqNo(9),
                answer: answer_digest(rid(3, ReqNo(9)), &executed(b"ok"))
            }]
        );
        assert_eq!(
            s.assign(x.id, SPEC_GROUP, ReqNo(1), rid(SPEC_GROUP, ReqNo(1))),
            Err(AssignError::ForeignLane(SPEC_GROUP))
        );
        assert_eq!(
            s.assign(p, 4, ReqNo(1), rid(4, ReqNo(1))),
            Err(AssignError::AlreadyAssigned(p))
        );
        // An independent op carries no predicates even with speculations outstanding.
        let y = s.issue(b"y".to_vec(), Dependence::Nothing).unwrap();
        assert!(s.predicates(y.id).unwrap().is_empty());
    }

    #[test]
    fn too_many_dependencies_are_refused() {
        let mut s = Speculation::new(0);
        for i in 0..=MAX_PREDICATES as u64 {
            let id = s
                .issue_predicted(vec![], Dependence::Nothing, vec![])
                .unwrap()
                .id;
            // Lanes 0..16 of group 0.
            s.assign(
                id,
                (i % 16) as u32,
                ReqNo(i / 16 + 1),
                rid((i % 16) as u32, ReqNo(i / 16 + 1)),
            )
            .unwrap();
        }
        assert_eq!(
            s.issue(vec![], Dependence::All),
            Err(IssueError::TooManyPredicates(MAX_PREDICATES + 1))
        );
    }

    #[test]
    fn correction_rolls_back_transitive_dependents_only() {
        let mut s = Speculation::new(1);
        let a = speculate(&mut s, Dependence::Nothing, b"a");
        let b = speculate(&mut s, Dependence::On(vec![a]), b"b");
        let c = speculate(&mut s, Dependence::On(vec![b]), b"c");
        let free = speculate(&mut s, Dependence::Nothing, b"f");
        let d = s.issue(b"d".to_vec(), Dependence::All).unwrap().id;
        assert_eq!(s.predicates(d).unwrap().len(), 4);
        match s.on_confirmed(a, &executed(b"A")) {
            Confirmation::Corrected { reply, aborted } => {
                assert_eq!(reply, SpecReply::Executed(b"A".to_vec()));
                assert_eq!(aborted, vec![b, c, d]);
            }
            other => panic!("{other:?}"),
        }
        assert!(s.is_tracked(free));
        assert!(!s.is_tracked(b) && !s.is_tracked(c) && !s.is_tracked(d));
        // Their committed replies (Aborted) arrive later and are not ours any more.
        assert_eq!(
            s.on_confirmed(b, &SpecReply::Aborted { predicate: 0 }.encode()),
            Confirmation::Unknown
        );
        assert_eq!(s.failures(ExecId(0)), 1);
    }

    #[test]
    fn retry_asks_for_reissue_and_rolls_back_dependents_of_a_wrong_guess() {
        let mut s = Speculation::new(1);
        let a = speculate(&mut s, Dependence::Nothing, b"a");
        let b = speculate(&mut s, Dependence::On(vec![a]), b"b");
        let retry = SpecReply::Retry { predicate: 0 }.encode();
        // a's early reply said Executed but a committed as Retry: b named the wrong result.
        assert_eq!(
            s.on_confirmed(a, &retry),
            Confirmation::Retry { aborted: vec![b] }
        );
        // A retry with nothing speculated aborts nothing.
        let c = s.issue(b"c".to_vec(), Dependence::All).unwrap().id;
        assert_eq!(
            s.on_confirmed(c, &retry),
            Confirmation::Retry { aborted: vec![] }
        );
    }

    #[test]
    fn prediction_is_confirmed_or_corrected() {
        let mut s = Speculation::new(0);
        let p = s
            .issue_predicted(b"w".to_vec(), Dependence::All, b"".to_vec())
            .unwrap()
            .id;
        s.assign(p, 0, ReqNo(1), rid(0, ReqNo(1))).unwrap();
        let q = s.issue(b"q".to_vec(), Dependence::All).unwrap().id;
        assert_eq!(s.predicates(q).unwrap().len(), 1);
        // An early reply for a predicted op only judges the replica.
        assert_eq!(s.on_early(p, ExecId(2), &executed(b"")), Early::Track);
        assert_eq!(s.on_early(p, ExecId(2), &executed(b"")), Early::Ignored);
        assert_eq!(
            s.on_confirmed(p, &executed(b"")),
            Confirmation::Confirmed {
                reply: SpecReply::Executed(vec![])
            }
        );
        assert_eq!(s.failures(ExecId(2)), 0);
        let r = s
            .issue_predicted(b"w".to_vec(), Dependence::All, b"".to_vec())
            .unwrap()
            .id;
        s.assign(r, 1, ReqNo(1), rid(1, ReqNo(1))).unwrap();
        let t = s.issue(b"t".to_vec(), Dependence::On(vec![r])).unwrap().id;
        assert_eq!(
            s.on_confirmed(r, &executed(b"full")),
            Confirmation::Corrected {
                reply: SpecReply::Executed(b"full".to_vec()),
                aborted: vec![t]
            }
        );
        // q did not depend on r.
        assert!(s.is_tracked(q));
    }

    #[test]
    fn undecodable_early_reply_is_tracked_and_counts_as_a_failure() {
        let mut s = Speculation::new(0);
        let a = s.issue(b"a".to_vec(), Dependence::All).unwrap().id;
        assert_eq!(s.on_early(a, ExecId(1), b"\xff"), Early::Track);
        assert_eq!(s.speculated(a), None);
        assert_eq!(
            s.on_confirmed(a, &executed(b"a")),
            Confirmation::Confirmed {
                reply: SpecReply::Executed(b"a".to_vec())
            }
        );
        assert_eq!(s.failures(ExecId(1)), 1);
    }

    /// One op with an early reply from `replica` that is right or wrong.
    fn round(s: &mut Speculation, replica: ExecId, right: bool) -> Early {
        let id = s.issue(b"x".to_vec(), Dependence::Nothing).unwrap().id;
        let e = s.on_early(id, replica, &executed(b"x"));
        let committed = if right {
            executed(b"x")
        } else {
            executed(b"y")
        };
        s.on_confirmed(id, &committed);
        e
    }

    #[test]
    fn fault_threshold_stops_and_resumes_per_replica() {
        let mut s = Speculation::new(0);
        assert!(s.should_speculate(ExecId(0)));
        // One failure in the window is at the threshold (1 of 100), not above it.
        assert!(matches!(
            round(&mut s, ExecId(0), false),
            Early::Speculate(_)
        ));
        assert!(s.should_speculate(ExecId(0)));
        assert!(matches!(
            round(&mut s, ExecId(0), false),
            Early::Speculate(_)
        ));
        assert!(!s.should_speculate(ExecId(0)));
        // Another replica is unaffected.
        assert!(s.should_speculate(ExecId(1)));
        // While off, early replies are tracked, not speculated on, and still judged.
        for _ in 0..98 {
            assert_eq!(round(&mut s, ExecId(0), true), Early::Track);
        }
        assert_eq!(s.failures(ExecId(0)), 2);
        assert!(!s.should_speculate(ExecId(0)));
        // The 101st judgement pushes the first failure out of the window.
        assert_eq!(round(&mut s, ExecId(0), true), Early::Track);
        assert_eq!(s.failures(ExecId(0)), 1);
        assert!(s.should_speculate(ExecId(0)));
        assert!(matches!(
            round(&mut s, ExecId(0), true),
            Early::Speculate(_)
        ));
    }

    #[test]
    fn custom_window_and_zero_threshold() {
        let mut s = Speculation::with_fault_window(0, 4, 0.0);
        round(&mut s, ExecId(5), false);
        assert!(!s.should_speculate(ExecId(5)));
        for _ in 0..3 {
            round(&mut s, ExecId(5), true);
            assert!(!s.should_speculate(ExecId(5)));
        }
        round(&mut s, ExecId(5), true);
        assert!(s.should_speculate(ExecId(5)));
    }

    #[test]
    fn read_only_only_with_nothing_unsettled() {
        let mut s = Speculation::new(0);
        assert_eq!(
            SpecOp::decode(&s.read_only_request(b"r".to_vec()).unwrap()).unwrap(),
            SpecOp::plain(b"r".to_vec())
        );
        let a = s.issue(b"w".to_vec(), Dependence::All).unwrap().id;
        assert_eq!(s.read_only_request(b"r".to_vec()), None);
        s.on_confirmed(a, &executed(b""));
        assert!(s.read_only_request(b"r".to_vec()).is_some());
    }

    #[test]
    fn lanes_are_the_group() {
        let s = Speculation::new(3);
        assert_eq!(s.lanes(), 3 * SPEC_GROUP..4 * SPEC_GROUP);
        assert!(s.lanes().all(|l| same_group(l, 3 * SPEC_GROUP)));
        assert!(!same_group(4 * SPEC_GROUP, 3 * SPEC_GROUP));
    }
}
