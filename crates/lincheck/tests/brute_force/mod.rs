//! The brute-force linearizability checker the property tests hold the WGL search to.

use plumb_lincheck::{Model, Operation};

/// Is there an order of a subset of `ops` containing every answered operation, respecting real
/// time, and a choice per operation, whose returns the model reproduces? Shares nothing with
/// the search but `Model` and `Operation`: for a deterministic model (one choice per
/// operation) it tries every order of every such subset.
pub fn brute_force<D, M>(model: &D, ops: &[Operation<M>]) -> bool
where
    D: Model,
    M: Model<Op = D::Op, Ret = D::Ret>,
{
    fn extend<D, M>(model: &D, ops: &[Operation<M>], placed: &mut [bool], state: &D::State) -> bool
    where
        D: Model,
        M: Model<Op = D::Op, Ret = D::Ret>,
    {
        if ops
            .iter()
            .zip(placed.iter())
            .all(|(o, &p)| p || !o.is_complete())
        {
            return true;
        }
        for i in 0..ops.len() {
            let ready =
                !placed[i] && (0..ops.len()).all(|j| placed[j] || !ops[j].precedes(&ops[i]));
            if !ready {
                continue;
            }
            for choice in 0..model.choices(&ops[i].op) {
                let Some((next, ret)) = model.step_choice(state, &ops[i].op, choice) else {
                    continue;
                };
                if ops[i].response.as_ref().is_some_and(|r| r.ret != ret) {
                    continue;
                }
                placed[i] = true;
                let found = extend(model, ops, placed, &next);
                placed[i] = false;
                if found {
                    return true;
                }
            }
        }
        false
    }
    extend(model, ops, &mut vec![false; ops.len()], &model.init())
}
