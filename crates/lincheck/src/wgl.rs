//! The Wing-Gong-Lowe search over one partition of a history.
//!
//! Events (invocations and responses) sit in one doubly linked list ordered by time, with
//! invocations before responses at equal times (so operations that touch at an instant count as
//! concurrent). Scanning from the head, every invocation met before the first response belongs
//! to a *candidate*: an operation that may be linearized next without breaking real-time order.
//! A candidate whose model return value matches the recorded one is linearized: its two events
//! are unlinked and the scan restarts from the head. Meeting a response means no candidate is
//! left at this depth: undo the last linearization (re-link its events, restore the state) and
//! try the next candidate after it. Unanswered operations have no response event, so they
//! never block the scan and need not be linearized at all: the search succeeds once every
//! answered operation is linearized.
//!
//! Lowe's memoisation: the pair (set of linearized operations, model state) determines
//! everything that can still happen, so a pair already expanded is never expanded again.
//! Each expansion inserts a pair, so the step budget also bounds memory.
//!
//! One pruning on top (sound for operations the model declares read-only): if a candidate
//! read fits the current state, it is linearized next without trying alternatives, since any
//! linearization from here can be reordered to start with it.
//!
//! Nondeterministic models ([`Model::choices`] above 1): a candidate is tried once per choice
//! whose return value fits, in choice order, each choice being its own branch (and its own
//! memo entry, keyed on the state it leads to). A deterministic model has one choice per
//! operation and searches exactly as before.

use crate::{Model, Operation};
use std::collections::HashSet;

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    NotLinearizable,
    /// The step budget ran out first: nothing is known.
    OutOfBudget,
}

/// The result of [`search`].
#[derive(Clone, Debug)]
pub struct Search<S> {
    pub verdict: Verdict,
    /// Candidates tried plus backtracks.
    pub steps: u64,
    /// Indices (into the searched slice) of the longest linearizable prefix found, in order.
    /// For a linearizable history, a whole linearization (without the unanswered operations it
    /// chose to leave out).
    pub longest: Vec<usize>,
    /// The choice ([`Model::step_choice`]) each operation of `longest` was linearized with
    /// (all 0 for a deterministic model).
    pub choices: Vec<usize>,
    /// The model state after `longest`.
    pub state_after_longest: S,
}

/// Search for a linearization of `ops` (one partition; indices into this slice are the
/// operations' names in the result), trying at most `max_steps` steps.
///
/// `model` is the specification searched against; the history may have been recorded for
/// another model with the same operations and returns (as [`crate::DelayOnce`] wraps one).
pub fn search<D, M>(model: &D, ops: &[&Operation<M>], max_steps: u64) -> Search<D::State>
where
    D: Model,
    M: Model<Op = D::Op, Ret = D::Ret>,
{
    let mut s = Searcher::new(model, ops);
    let mut cursor = Cursor::Fresh;
    loop {
        if s.answered_left == 0 {
            let order = s.path();
            return finish(Verdict::Linearizable, s.steps, (order, s.state));
        }
        if s.steps >= max_steps {
            return finish(Verdict::OutOfBudget, s.steps, s.longest);
        }
        s.steps += 1;
        cursor = match cursor {
            Cursor::Fresh => match s.fitting_read() {
                Some((node, choice, next_state)) => s.descend(node, choice, next_state, true),
                None => Cursor::Try(s.list.first(), 0),
            },
            Cursor::Try(node, choice) if s.list.is_call(node) => s.try_candidate(node, choice),
            // A response event or the end of the list: no candidate is left at this depth.
            Cursor::Try(..) | Cursor::Backtrack => match s.backtrack() {
                Some(cursor) => cursor,
                None => return finish(Verdict::NotLinearizable, s.steps, s.longest),
            },
        };
    }
}

/// Where the search goes next.
enum Cursor {
    /// A configuration never expanded before: look for a read to commit, else scan.
    Fresh,
    /// Try the candidate at this event node with this choice and the later ones (a response
    /// node or the end means no candidate is left).
    Try(usize, usize),
    /// This configuration has no linearization: undo the last step.
    Backtrack,
}

/// One linearized operation on the search path.
struct Frame<S> {
    call: usize,
    /// Which of the operation's choices was taken.
    choice: usize,
    state_before: S,
    /// Committed as a fitting read: no alternative at this depth needs trying.
    forced: bool,
}

struct Searcher<'a, D: Model, M: Model> {
    model: &'a D,
    ops: &'a [&'a Operation<M>],
    list: EventList,
    state: D::State,
    linearized: Bits,
    /// Configurations expanded so far (Lowe's cache).
    seen: HashSet<(Bits, D::State)>,
    stack: Vec<Frame<D::State>>,
    answered_left: usize,
    /// The longest path so far: (operation, choice) pairs, and the state after them.
    longest: (Vec<(usize, usize)>, D::State),
    steps: u64,
}

impl<'a, D, M> Searcher<'a, D, M>
where
    D: Model,
    M: Model<Op = D::Op, Ret = D::Ret>,
{
    fn new(model: &'a D, ops: &'a [&'a Operation<M>]) -> Self {
        let state = model.init();
        Searcher {
            model,
            ops,
            list: EventList::new(ops),
            longest: (Vec::new(), state.clone()),
            state,
            linearized: Bits::new(ops.len()),
            seen: HashSet::new(),
            stack: Vec::new(),
            answered_left: ops.iter().filter(|o| o.is_complete()).count(),
            steps: 0,
        }
    }

    /// An unanswered operation's return value is unconstrained.
    fn fits(&self, i: usize, ret: &D::Ret) -> bool {
        match &self.ops[i].response {
            Some(r) => r.ret == *ret,
            None => true,
        }
    }

    /// A candidate read-only operation whose recorded return fits the current state.
    /// Committing it first loses nothing: it changes no state and all its real-time
    /// predecessors are linearized, so any linearization from here can be reordered to start
    /// with it. This removes most branching on read-heavy histories. (A read-only operation
    /// changes no state under any choice, so its first fitting choice is as good as any.)
    fn fitting_read(&self) -> Option<(usize, usize, D::State)> {
        let mut node = self.list.first();
        while self.list.is_call(node) {
            let i = self.list.op(node);
            let op = &self.ops[i].op;
            if self.model.is_read_only(op) {
                for choice in 0..self.model.choices(op) {
                    if let Some((next, ret)) = self.model.step_choice(&self.state, op, choice) {
                        if self.fits(i, &ret) {
                            return Some((node, choice, next));
                        }
                    }
                }
            }
            node = self.list.next(node);
        }
        None
    }

    /// Try choice `choice` of the candidate at `node`.
    fn try_candidate(&mut self, node: usize, choice: usize) -> Cursor {
        let i = self.list.op(node);
        let op = &self.ops[i].op;
        // Reads were tried when this configuration was fresh: none fits.
        if self.model.is_read_only(op) {
            return Cursor::Try(self.list.next(node), 0);
        }
        if let Some((next_state, ret)) = self.model.step_choice(&self.state, op, choice) {
            if self.fits(i, &ret) {
                return self.descend(node, choice, next_state, false);
            }
        }
        self.after(node, choice)
    }

    /// The cursor after trying `choice` at `node`: its next choice, or the next candidate once
    /// the choices are exhausted (at once for a deterministic model, so it takes no extra step).
    fn after(&self, node: usize, choice: usize) -> Cursor {
        if choice + 1 < self.model.choices(&self.ops[self.list.op(node)].op) {
            Cursor::Try(node, choice + 1)
        } else {
            Cursor::Try(self.list.next(node), 0)
        }
    }

    /// Linearize the operation at `node` (with choice `choice`), unless that configuration was
    /// already expanded (then it has no linearization: it is not on the path, whose sets are
    /// all smaller).
    fn descend(
        &mut self,
        node: usize,
        choice: usize,
        next_state: D::State,
        forced: bool,
    ) -> Cursor {
        let i = self.list.op(node);
        self.linearized.set(i);
        let key = (self.linearized.clone(), next_state);
        if self.seen.contains(&key) {
            self.linearized.clear(i);
            return if forced {
                Cursor::Backtrack
            } else {
                self.after(node, choice)
            };
        }
        let next_state = key.1.clone();
        self.seen.insert(key);
        let state_before = std::mem::replace(&mut self.state, next_state);
        self.stack.push(Frame {
            call: node,
            choice,
            state_before,
            forced,
        });
        if self.ops[i].is_complete() {
            self.answered_left -= 1;
        }
        self.list.lift(node);
        if self.stack.len() > self.longest.0.len() {
            self.longest = (self.path(), self.state.clone());
        }
        Cursor::Fresh
    }

    /// The operations on the search path and their choices, in order.
    fn path(&self) -> Vec<(usize, usize)> {
        let op = |f: &Frame<D::State>| (self.list.op(f.call), f.choice);
        self.stack.iter().map(op).collect()
    }

    /// Undo the last linearization; `None` if there is none (the search failed).
    fn backtrack(&mut self) -> Option<Cursor> {
        let frame = self.stack.pop()?;
        let i = self.list.op(frame.call);
        self.linearized.clear(i);
        self.state = frame.state_before;
        if self.ops[i].is_complete() {
            self.answered_left += 1;
        }
        self.list.unlift(frame.call);
        Some(if frame.forced {
            Cursor::Backtrack
        } else {
            self.after(frame.call, frame.choice)
        })
    }
}

fn finish<S>(verdict: Verdict, steps: u64, (path, state): (Vec<(usize, usize)>, S)) -> Search<S> {
    let (longest, choices) = path.into_iter().unzip();
    Search {
        verdict,
        steps,
        longest,
        choices,
        state_after_longest: state,
    }
}

const NIL: usize = usize::MAX;
const HEAD: usize = 0;

/// The time-ordered event list. Node 0 is the head sentinel; nodes are never freed, only
/// unlinked, so an unlinked node still knows its neighbours and can be re-linked in place.
struct EventList {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// Operation index of each node (unused for the head).
    op: Vec<usize>,
    is_call: Vec<bool>,
    /// For a call node: its response node, or `NIL` for an unanswered operation.
    response: Vec<usize>,
}

impl EventList {
    fn new<M: Model>(ops: &[&Operation<M>]) -> EventList {
        // (time, 0 = call / 1 = response, op): calls sort before responses at equal times.
        let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(2 * ops.len());
        for (i, op) in ops.iter().enumerate() {
            events.push((op.invoke, 0, i));
            if let Some(r) = &op.response {
                events.push((r.time, 1, i));
            }
        }
        events.sort_unstable();
        let n = events.len() + 1;
        let mut list = EventList {
            next: (1..=n).map(|i| if i == n { NIL } else { i }).collect(),
            prev: (0..n).map(|i| i.wrapping_sub(1)).collect(),
            op: vec![0; n],
            is_call: vec![false; n],
            response: vec![NIL; n],
        };
        let mut call_node = vec![NIL; ops.len()];
        for (k, &(_, kind, i)) in events.iter().enumerate() {
            let node = k + 1;
            list.op[node] = i;
            if kind == 0 {
                list.is_call[node] = true;
                call_node[i] = node;
            } else {
                list.response[call_node[i]] = node;
            }
        }
        list
    }

    fn first(&self) -> usize {
        self.next[HEAD]
    }

    fn next(&self, node: usize) -> usize {
        self.next[node]
    }

    fn op(&self, node: usize) -> usize {
        self.op[node]
    }

    fn is_call(&self, node: usize) -> bool {
        node != NIL && self.is_call[node]
    }

    /// Unlink a call event and its response event.
    fn lift(&mut self, call: usize) {
        self.unlink(call);
        let response = self.response[call];
        if response != NIL {
            self.unlink(response);
        }
    }

    /// Undo `lift(call)`; valid only in reverse order of lifts.
    fn unlift(&mut self, call: usize) {
        let response = self.response[call];
        if response != NIL {
            self.relink(response);
        }
        self.relink(call);
    }

    fn unlink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = n;
        if n != NIL {
            self.prev[n] = p;
        }
    }

    fn relink(&mut self, node: usize) {
        let (p, n) = (self.prev[node], self.next[node]);
        self.next[p] = node;
        if n != NIL {
            self.prev[n] = node;
        }
    }
}

/// A fixed-size bit set: which operations are linearized.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Bits(Box<[u64]>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)].into_boxed_slice())
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{History, Model};

    /// A counter: `Some(d)` adds `d` and returns the new value; `None` reads.
    struct Counter;

    impl Model for Counter {
        type State = i64;
        type Op = Option<i64>;
        type Ret = i64;
        type PartitionKey = ();
        fn init(&self) -> i64 {
            0
        }
        fn step(&self, s: &i64, op: &Option<i64>) -> (i64, i64) {
            let n = s + op.unwrap_or(0);
            (n, n)
        }
    }

    fn run(h: &History<Counter>, budget: u64) -> Search<i64> {
        let ops: Vec<_> = h.ops().iter().collect();
        search(&Counter, &ops, budget)
    }

    #[test]
    fn witness_is_a_valid_order() {
        let mut h = History::<Counter>::new();
        h.record(0, Some(1), 0, 3, 10).unwrap();
        h.record(1, Some(2), 0, 2, 10).unwrap();
        h.record(2, None, 11, 3, 12).unwrap();
        let s = run(&h, 1000);
        assert_eq!(s.verdict, Verdict::Linearizable);
        assert_eq!(s.longest, vec![1, 0, 2]);
        assert_eq!(s.state_after_longest, 3);
    }

    #[test]
    fn unanswered_op_may_be_left_out_of_the_witness() {
        let mut h = History::<Counter>::new();
        h.invoke(0, Some(5), 0);
        h.record(1, None, 1, 0, 2).unwrap();
        let s = run(&h, 1000);
        assert_eq!(s.verdict, Verdict::Linearizable);
        assert_eq!(s.longest, vec![1]);
    }

    #[test]
    fn longest_prefix_stops_before_the_impossible_op() {
        let mut h = History::<Counter>::new();
        h.record(0, Some(1), 0, 1, 1).unwrap();
        h.record(0, None, 2, 1, 3).unwrap();
        h.record(0, None, 4, 7, 5).unwrap();
        let s = run(&h, 1000);
        assert_eq!(s.verdict, Verdict::NotLinearizable);
        assert_eq!(s.longest, vec![0, 1]);
    }

    #[test]
    fn budget_exhaustion_is_out_of_budget_not_a_verdict() {
        let mut h = History::<Counter>::new();
        for c in 0..6 {
            h.record(c, Some(1), 0, 6, 10).unwrap();
        }
        assert_eq!(run(&h, 3).verdict, Verdict::OutOfBudget);
        assert_eq!(run(&h, 10_000).verdict, Verdict::NotLinearizable);
    }

    #[test]
    fn memoisation_collapses_equivalent_orders() {
        // 12 concurrent +1s and a read of 12: without the cache the search would visit
        // every order of the increments before giving up on the impossible read of 13.
        let mut h = History::<Counter>::new();
        for c in 0..12 {
            h.invoke(c, Some(1), 0);
        }
        h.record(99, None, 1, 13, 2).unwrap();
        let s = run(&h, 1_000_000);
        assert_eq!(s.verdict, Verdict::NotLinearizable);
        assert!(s.steps < 200_000, "took {} steps", s.steps);
    }
}
