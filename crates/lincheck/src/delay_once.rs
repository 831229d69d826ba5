//! Delay-once linearizability (Prophecy, Sen, Lloyd and Freedman, NSDI 2010, §4).
//!
//! Prophecy's sketcher serves a read from one replica (a *fast read*) and accepts it only if
//! its digest matches that of the latest replicated read of the same request; otherwise it
//! falls back to a replicated read. Reads may then be stale, but only by one step: the paper
//! calls a history *delay-once linearizable* if its writes are linearizable and every read
//! `R_x` (reflecting state `x`) has `x = y` or `x = z`, where `R_y` and `W_z` are the read and
//! the write of maximal order preceding `R_x`. Reads never go back past what the latest read
//! saw (monotonic reads), and a read that is not stale reflects the latest write; a client
//! need not read its own writes.
//!
//! # As linearizability of a derived model
//!
//! [`DelayOnce`] wraps a sequential [`Model`] `M`. Its state ([`DelayOnceState`]) is the pair
//! (`current`, `last_read`): `M`'s state after the writes so far, and the state the latest read
//! reflected (`None` before any read). An operation `M` calls read-only is a *read*, anything
//! else a *write*:
//! - a write steps `current` as `M` does and leaves `last_read` alone;
//! - a read has two outcomes ([`Model::choices`]): *fresh*, returning its value on `current`
//!   and setting `last_read := current`, or *stale*, returning its value on `last_read` and
//!   changing nothing (impossible while `last_read` is `None`).
//!
//! A history is delay-once linearizable iff it is linearizable against `DelayOnce<M>`: the
//! total order is the paper's order (writes linearizable among themselves, every operation
//! placed within its real-time interval), and `last_read` is exactly the state of the read of
//! maximal order before each read. The WGL search handles the two outcomes as two branches
//! and memoises on the whole pair, so nothing else changes: partitioning, step budget,
//! explanations (which name the outcomes "fresh" and "stale").
//!
//! # Choices made
//!
//! - *Per object.* Staleness is per partition key ([`Model::partition`]): Prophecy's history
//!   table is per request, and a key-value request reads one key, so each key has its own
//!   `last_read`. A model that does not partition is checked whole, with one `last_read`.
//! - *Reads change state here.* [`DelayOnce::is_read_only`] is `false` for every operation, so
//!   the checker keeps two things it does for `M`:
//!   - No "reads first" shortcut. It commits a read that fits the current state without
//!     trying alternatives, which is sound only for operations that change nothing. A fresh
//!     read moves `last_read` forward, and that can rule out a concurrent stale read that
//!     needed the older `last_read`: with `last_read` = v1, `current` = v2 and two concurrent
//!     reads returning v2 and v1, reading v2 first (fresh) leaves nothing for v1, while v1
//!     (stale) then v2 (fresh) works. Restricting the shortcut soundly (say, to reads whose
//!     fresh outcome changes nothing) still fails, since the read may be needed *later* to
//!     move `last_read` for a later stale read, so the shortcut is off. The memo keeps the
//!     search to the configurations reachable, as for writes.
//!   - Unanswered reads are searched, not dropped: one may have taken effect (a replicated
//!     read that updated the sketcher's table although its client gave up) and be the read a
//!     later stale read reflects. Its value is unconstrained, so leaving it out or taking it
//!     stale are also allowed. This only admits more histories, so a violation is a real one.
//! - A model whose `is_read_only` is `false` for everything makes every operation a write:
//!   delay-once is then plain linearizability. A read-modify-write (compare-and-set,
//!   increment) is a write: Prophecy orders and replicates those, and its return reflects
//!   `current`.
//!
//! # Staleness
//!
//! [`staleness`] checks the history and, if it passes, replays the witness order found: a read
//! is *stale* (the paper's staleness indicator) if its return differs from what it returns on
//! the state left by the latest write before it in that order. The witness is one valid order
//! (the search tries fresh before stale, and the memo may pick either), so the count is that
//! order's, not a minimum over all orders.
//!
//! ```
//! use plumb_lincheck::{check, check_delay_once, History};
//! use plumb_lincheck::kv::{BytesKv, KvOp, KvRet};
//!
//! let mut h = History::<BytesKv>::new();
//! h.record(1, KvOp::get(b"k"), 0, KvRet::Value(None), 1).unwrap();
//! h.record(2, KvOp::set(b"k", b"1"), 2, KvRet::Ok, 3).unwrap();
//! // Stale: the write completed before this read began, but the latest read saw nothing.
//! h.record(1, KvOp::get(b"k"), 4, KvRet::Value(None), 5).unwrap();
//! assert!(check(&BytesKv::new(), &h).is_violation());
//! assert!(check_delay_once(&BytesKv::new(), &h).is_linearizable());
//! ```

use crate::{Checker, History, Model, OpId, Outcome, Report};

/// The derived model whose linearizability is the wrapped model's delay-once linearizability
/// (see the [module documentation](self)). `DelayOnce(model)`; [`check_delay_once`] wraps for
/// you.
#[derive(Clone, Copy, Debug, Default)]
pub struct DelayOnce<M>(pub M);

/// The state of [`DelayOnce`]: the object's state and what the latest read saw.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DelayOnceState<S> {
    /// The wrapped model's state after the writes linearized so far.
    pub current: S,
    /// The state the latest linearized read reflected (fresh or stale); `None` before any read.
    pub last_read: Option<S>,
}

/// A read's outcome `choice` is `2 * inner_choice + FRESH` or `+ STALE`.
const FRESH: usize = 0;
const STALE: usize = 1;

impl<M: Model> Model for DelayOnce<M> {
    type State = DelayOnceState<M::State>;
    type Op = M::Op;
    type Ret = M::Ret;
    type PartitionKey = M::PartitionKey;

    fn init(&self) -> Self::State {
        DelayOnceState {
            current: self.0.init(),
            last_read: None,
        }
    }

    /// The first outcome: a fresh read, or the write.
    fn step(&self, state: &Self::State, op: &Self::Op) -> (Self::State, Self::Ret) {
        match self.step_choice(state, op, 0) {
            Some(next) => next,
            // Only if the wrapped model refuses its own choice 0: fall back to its `step`.
            None => {
                let (current, ret) = self.0.step(&state.current, op);
                let last_read = state.last_read.clone();
                (DelayOnceState { current, last_read }, ret)
            }
        }
    }

    fn partition(&self, op: &Self::Op) -> Option<Self::PartitionKey> {
        self.0.partition(op)
    }

    fn describe_key(&self, key: &Self::PartitionKey) -> String {
        self.0.describe_key(key)
    }

    /// Always `false`: a read moves `last_read` (see the module documentation for why this
    /// also turns off the "reads first" shortcut and keeps unanswered reads).
    fn is_read_only(&self, _op: &Self::Op) -> bool {
        false
    }

    fn choices(&self, op: &Self::Op) -> usize {
        let inner = self.0.choices(op);
        if self.0.is_read_only(op) {
            2 * inner
        } else {
            inner
        }
    }

    fn step_choice(
        &self,
        state: &Self::State,
        op: &Self::Op,
        choice: usize,
    ) -> Option<(Self::State, Self::Ret)> {
        if !self.0.is_read_only(op) {
            let (current, ret) = self.0.step_choice(&state.current, op, choice)?;
            let last_read = state.last_read.clone();
            return Some((DelayOnceState { current, last_read }, ret));
        }
        // A read-only operation leaves the wrapped state as it is: only its return matters.
        let inner = choice / 2;
        if choice % 2 == FRESH {
            let (_, ret) = self.0.step_choice(&state.current, op, inner)?;
            let next = DelayOnceState {
                current: state.current.clone(),
                last_read: Some(state.current.clone()),
            };
            Some((next, ret))
        } else {
            let (_, ret) = self.0.step_choice(state.last_read.as_ref()?, op, inner)?;
            Some((state.clone(), ret))
        }
    }

    fn describe_choice(&self, op: &Self::Op, choice: usize) -> String {
        if !self.0.is_read_only(op) {
            return self.0.describe_choice(op, choice);
        }
        let which = match choice % 2 {
            STALE => "stale: what the latest read saw",
            _ => "fresh: the latest write's state",
        };
        let inner = self.0.describe_choice(op, choice / 2);
        if inner.is_empty() {
            which.to_string()
        } else {
            format!("{which}; {inner}")
        }
    }
}

/// Delegates to a borrowed model, so [`check_delay_once`] can wrap `&M` without cloning it.
struct ByRef<'a, M>(&'a M);

impl<M: Model> Model for ByRef<'_, M> {
    type State = M::State;
    type Op = M::Op;
    type Ret = M::Ret;
    type PartitionKey = M::PartitionKey;

    fn init(&self) -> Self::State {
        self.0.init()
    }
    fn step(&self, state: &Self::State, op: &Self::Op) -> (Self::State, Self::Ret) {
        self.0.step(state, op)
    }
    fn partition(&self, op: &Self::Op) -> Option<Self::PartitionKey> {
        self.0.partition(op)
    }
    fn describe_key(&self, key: &Self::PartitionKey) -> String {
        self.0.describe_key(key)
    }
    fn is_read_only(&self, op: &Self::Op) -> bool {
        self.0.is_read_only(op)
    }
    fn choices(&self, op: &Self::Op) -> usize {
        self.0.choices(op)
    }
    fn step_choice(
        &self,
        state: &Self::State,
        op: &Self::Op,
        choice: usize,
    ) -> Option<(Self::State, Self::Ret)> {
        self.0.step_choice(state, op, choice)
    }
    fn describe_choice(&self, op: &Self::Op, choice: usize) -> String {
        self.0.describe_choice(op, choice)
    }
}

/// How stale the reads of a delay-once linearizable history were, in the witness order found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Staleness {
    /// Answered reads (operations the model calls read-only) in the history.
    pub reads: usize,
    /// The answered reads whose return is not what the latest write before them gives, in
    /// [`OpId`] order.
    pub stale: Vec<OpId>,
}

impl Staleness {
    /// Stale reads over answered reads (0 if there are no reads).
    pub fn fraction(&self) -> f64 {
        if self.reads == 0 {
            0.0
        } else {
            self.stale.len() as f64 / self.reads as f64
        }
    }
}

impl Checker {
    /// Is `history` delay-once linearizable with respect to `model`? See the
    /// [module documentation](crate::delay_once). The same history as for [`Checker::check`].
    pub fn check_delay_once<M: Model>(
        &self,
        model: &M,
        history: &History<M>,
    ) -> Outcome<M::PartitionKey> {
        self.run_delay_once(model, history).outcome
    }

    /// [`Checker::check_delay_once`] with the work it took.
    pub fn run_delay_once<M: Model>(
        &self,
        model: &M,
        history: &History<M>,
    ) -> Report<M::PartitionKey> {
        let derived = DelayOnce(ByRef(model));
        self.run_as(&derived, history, "delay-once linearizable", |_, _, _| {})
    }

    /// Check delay-once linearizability; if it holds, which reads were stale in the witness
    /// order. `Err` holds the outcome otherwise (a violation, or unknown).
    pub fn staleness<M: Model>(
        &self,
        model: &M,
        history: &History<M>,
    ) -> Result<Staleness, Outcome<M::PartitionKey>> {
        let derived = DelayOnce(ByRef(model));
        let mut staleness = Staleness::default();
        let report = self.run_as(
            &derived,
            history,
            "delay-once linearizable",
            |ids, order, choices| {
                let mut state = derived.init();
                for (&k, &choice) in order.iter().zip(choices) {
                    let Some(op) = history.get(ids[k]) else {
                        continue;
                    };
                    if let (true, Some(r)) = (model.is_read_only(&op.op), &op.response) {
                        staleness.reads += 1;
                        let fresh = (0..model.choices(&op.op)).any(|c| {
                            let ret = model.step_choice(&state.current, &op.op, c);
                            ret.is_some_and(|(_, ret)| ret == r.ret)
                        });
                        if !fresh {
                            staleness.stale.push(ids[k]);
                        }
                    }
                    // The witness's own choice, so it is available.
                    if let Some((next, _)) = derived.step_choice(&state, &op.op, choice) {
                        state = next;
                    }
                }
            },
        );
        match report.outcome {
            Outcome::Linearizable => {
                staleness.stale.sort_unstable();
                Ok(staleness)
            }
            other => Err(other),
        }
    }
}

/// Check that `history` is delay-once linearizable with respect to `model`, with the default
/// budget. Takes the same history as [`crate::check`]; [`Outcome::Linearizable`] means
/// delay-once linearizable here.
pub fn check_delay_once<M: Model>(model: &M, history: &History<M>) -> Outcome<M::PartitionKey> {
    Checker::default().check_delay_once(model, history)
}

/// [`Checker::staleness`] with the default budget.
pub fn staleness<M: Model>(
    model: &M,
    history: &History<M>,
) -> Result<Staleness, Outcome<M::PartitionKey>> {
    Checker::default().staleness(model, history)
}
