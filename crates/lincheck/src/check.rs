//! Splitting a history into partitions, searching each, and explaining a failure.

use crate::wgl::{self, Verdict};
use crate::{History, Model, OpId, Operation};
use std::collections::BTreeMap;
use std::fmt::{self, Write};

/// Default step budget per partition. A step inserts at most one memo entry, so this also caps
/// the memo table (a few hundred bytes per entry for small states).
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;

/// Partitions of at most this many operations are listed whole in an explanation.
const LISTED_OPS: usize = 40;
/// How many of the last linearized operations an explanation shows.
const LISTED_PREFIX: usize = 12;

/// The part of a history that was checked on its own.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Partition<K> {
    /// The whole history (the model does not partition, or some operation has no key).
    Whole,
    /// The operations on one key.
    Key(K),
}

impl<K: fmt::Debug> fmt::Display for Partition<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Whole => f.write_str("the whole history"),
            Partition::Key(k) => write!(f, "key {k:?}"),
        }
    }
}

/// Evidence that a history is not linearizable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation<K> {
    /// The failing partition: the smallest one, if several fail.
    pub partition: Partition<K>,
    /// The partition's operations (unanswered ones the searched model calls read-only dropped),
    /// by invocation time.
    pub ops: Vec<OpId>,
    /// The longest order of some of these operations that the model accepts and real time
    /// allows; the failure is right after it.
    pub longest_prefix: Vec<OpId>,
    /// Human-readable: the prefix's tail, why each candidate after it fails, and the
    /// partition's operations.
    pub explanation: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<K> {
    Linearizable,
    NotLinearizable(Violation<K>),
    /// Some partitions ran out of step budget and none of the others failed.
    Unknown {
        undecided: Vec<Partition<K>>,
    },
}

impl<K> Outcome<K> {
    pub fn is_linearizable(&self) -> bool {
        matches!(self, Outcome::Linearizable)
    }

    pub fn is_violation(&self) -> bool {
        matches!(self, Outcome::NotLinearizable(_))
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Outcome::Unknown { .. })
    }

    pub fn violation(&self) -> Option<&Violation<K>> {
        match self {
            Outcome::NotLinearizable(v) => Some(v),
            _ => None,
        }
    }
}

impl<K: fmt::Debug> fmt::Display for Outcome<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Linearizable => f.write_str("linearizable"),
            Outcome::NotLinearizable(v) => f.write_str(&v.explanation),
            Outcome::Unknown { undecided } => {
                write!(f, "unknown: step budget ran out on ")?;
                for (i, p) in undecided.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{p}")?;
                }
                Ok(())
            }
        }
    }
}

/// An [`Outcome`] with the work it took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report<K> {
    pub outcome: Outcome<K>,
    pub partitions: usize,
    /// Steps summed over the partitions searched.
    pub steps: u64,
}

/// Checker settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checker {
    max_steps: u64,
}

impl Default for Checker {
    fn default() -> Self {
        Checker {
            max_steps: DEFAULT_MAX_STEPS,
        }
    }
}

impl Checker {
    pub fn new() -> Checker {
        Checker::default()
    }

    /// Step budget for each partition's search.
    pub fn with_max_steps(self, max_steps: u64) -> Checker {
        Checker { max_steps }
    }

    pub fn check<M: Model>(&self, model: &M, history: &History<M>) -> Outcome<M::PartitionKey> {
        self.run(model, history).outcome
    }

    /// Check every partition, smallest first; the first failure is the answer (so it is the
    /// smallest failing partition), otherwise `Unknown` if any ran out of budget.
    pub fn run<M: Model>(&self, model: &M, history: &History<M>) -> Report<M::PartitionKey> {
        self.run_as(model, history, "linearizable", |_, _, _| {})
    }

    /// [`Checker::run`] against `model`, which may be another model than the history's with the
    /// same operations, returns and partitions (a wrapper such as [`crate::DelayOnce`]).
    /// `property` names what is checked in explanations. `witness` is called for every
    /// partition found to pass, with its operations, a valid order of them (indices into the
    /// operations; unanswered operations left out are not in it) and the choice each was
    /// linearized with.
    pub(crate) fn run_as<M, D>(
        &self,
        model: &D,
        history: &History<M>,
        property: &str,
        mut witness: impl FnMut(&[OpId], &[usize], &[usize]),
    ) -> Report<M::PartitionKey>
    where
        M: Model,
        D: Model<Op = M::Op, Ret = M::Ret, PartitionKey = M::PartitionKey>,
    {
        let parts = partitions(model, history);
        let mut report = Report {
            outcome: Outcome::Linearizable,
            partitions: parts.len(),
            steps: 0,
        };
        let mut undecided = Vec::new();
        for (partition, ids) in parts {
            let ops: Vec<&Operation<M>> = ids.iter().filter_map(|&id| history.get(id)).collect();
            let found = wgl::search(model, &ops, self.max_steps);
            report.steps += found.steps;
            match found.verdict {
                Verdict::Linearizable => witness(&ids, &found.longest, &found.choices),
                Verdict::OutOfBudget => undecided.push(partition),
                Verdict::NotLinearizable => {
                    let prefix = found.longest.iter().filter_map(|&i| ids.get(i).copied());
                    let prefix: Vec<OpId> = prefix.collect();
                    let explanation = explain(
                        model,
                        history,
                        property,
                        &partition,
                        &ids,
                        &prefix,
                        &found.state_after_longest,
                    );
                    report.outcome = Outcome::NotLinearizable(Violation {
                        partition,
                        ops: ids,
                        longest_prefix: prefix,
                        explanation,
                    });
                    return report;
                }
            }
        }
        if !undecided.is_empty() {
            report.outcome = Outcome::Unknown { undecided };
        }
        report
    }
}

/// Check `history` against `model` with the default budget.
pub fn check<M: Model>(model: &M, history: &History<M>) -> Outcome<M::PartitionKey> {
    Checker::default().check(model, history)
}

/// The operations worth searching, grouped by partition, smallest group first; each group in
/// invocation order.
fn partitions<M, D>(model: &D, history: &History<M>) -> Vec<(Partition<D::PartitionKey>, Vec<OpId>)>
where
    M: Model,
    D: Model<Op = M::Op>,
{
    let mut ids: Vec<OpId> = (0..history.len())
        .map(OpId)
        .filter(|&id| {
            // An unanswered read-only operation changes nothing and constrains nothing.
            history
                .get(id)
                .is_some_and(|o| o.is_complete() || !model.is_read_only(&o.op))
        })
        .collect();
    ids.sort_by_key(|&id| (history.get(id).map_or(0, |o| o.invoke), id));
    let mut by_key: BTreeMap<D::PartitionKey, Vec<OpId>> = BTreeMap::new();
    for &id in &ids {
        let key = history.get(id).and_then(|o| model.partition(&o.op));
        match key {
            Some(k) => by_key.entry(k).or_default().push(id),
            None => return vec![(Partition::Whole, ids)],
        }
    }
    let mut parts: Vec<_> = by_key
        .into_iter()
        .map(|(k, ids)| (Partition::Key(k), ids))
        .collect();
    parts.sort_by_key(|(_, ids)| ids.len());
    parts
}

/// Describe the failure: what was linearized last, why each operation that could come next
/// does not fit, and (for small partitions) every operation.
fn explain<M, D>(
    model: &D,
    history: &History<M>,
    property: &str,
    partition: &Partition<D::PartitionKey>,
    ids: &[OpId],
    prefix: &[OpId],
    state: &D::State,
) -> String
where
    M: Model,
    D: Model<Op = M::Op, Ret = M::Ret>,
{
    let mut out = String::new();
    let name = match partition {
        Partition::Whole => partition.to_string(),
        Partition::Key(k) => format!("key {}", model.describe_key(k)),
    };
    let _ = writeln!(
        out,
        "not {property} on {name}: no valid order of its {} operation(s)",
        ids.len()
    );
    let skipped = prefix.len().saturating_sub(LISTED_PREFIX);
    let _ = write!(
        out,
        "longest {property} prefix has {} operation(s)",
        prefix.len()
    );
    if skipped > 0 {
        let _ = write!(out, ", the last {LISTED_PREFIX}");
    }
    let _ = writeln!(out, ":");
    for &id in prefix.iter().skip(skipped) {
        let _ = writeln!(out, "  {}", show(history, id));
    }
    let _ = writeln!(out, "after it, no operation fits:");
    for id in candidates(history, ids, prefix) {
        let _ = writeln!(out, "  {}", why_not(model, history, state, id));
    }
    if ids.len() <= LISTED_OPS {
        let _ = writeln!(out, "operations of the partition:");
        for &id in ids {
            let _ = writeln!(out, "  {}", show(history, id));
        }
    }
    out
}

/// Operations not in `prefix` that real time allows next: invoked no later than the earliest
/// response among the answered operations not in `prefix`.
fn candidates<M: Model>(history: &History<M>, ids: &[OpId], prefix: &[OpId]) -> Vec<OpId> {
    let rest: Vec<(OpId, &Operation<M>)> = ids
        .iter()
        .filter(|id| !prefix.contains(id))
        .filter_map(|&id| history.get(id).map(|o| (id, o)))
        .collect();
    let deadline = rest
        .iter()
        .filter_map(|(_, o)| o.response.as_ref().map(|r| r.time))
        .min()
        .unwrap_or(u64::MAX);
    rest.iter()
        .filter(|(_, o)| o.invoke <= deadline)
        .map(|&(id, _)| id)
        .collect()
}

/// Why `id` cannot come next: the returns the model allows (each choice's, named), or that it
/// fits but leads nowhere.
fn why_not<M, D>(model: &D, history: &History<M>, state: &D::State, id: OpId) -> String
where
    M: Model,
    D: Model<Op = M::Op, Ret = M::Ret>,
{
    let Some(op) = history.get(id) else {
        return format!("{id} (missing)");
    };
    let mut allowed = Vec::new();
    let mut fits = false;
    for choice in 0..model.choices(&op.op) {
        if let Some((_, ret)) = model.step_choice(state, &op.op, choice) {
            fits |= op.response.as_ref().is_none_or(|r| r.ret == ret);
            let name = model.describe_choice(&op.op, choice);
            allowed.push(if name.is_empty() {
                format!("{ret:?}")
            } else {
                format!("{ret:?} ({name})")
            });
        }
    }
    if fits {
        format!("{} fits, but nothing can follow it", show(history, id))
    } else if allowed.is_empty() {
        format!("{} but the model allows no outcome", show(history, id))
    } else {
        let allowed = allowed.join(" or ");
        format!("{} but the model returns {allowed}", show(history, id))
    }
}

fn show<M: Model>(history: &History<M>, id: OpId) -> String {
    match history.get(id) {
        Some(op) => format!("{id} {op:?}"),
        None => format!("{id} (missing)"),
    }
}
