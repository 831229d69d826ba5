//! Linearizability of the correct clients' histories against the application's own model
//! (plumb-lincheck, [`SimApp::model`]).
//!
//! Operations the model leaves out ([`SimApp::model_op`] gives `None`) are dropped: they must
//! be reads, and dropping read-only operations from a linearizable history keeps it
//! linearizable, so what remains is still a sound test. A result the model cannot express is
//! recorded as unanswered and warned about: the reference replay (LS1) judges the exact bytes
//! of ordered replies anyway. `Unknown` (step budget exhausted) is an undecided check, which
//! fails the seed: a checker that gives up is not a pass.

use super::Checker;
use crate::app::SimApp;
use crate::workload::Workload;
use plumb_lincheck::{History, Outcome};

///
/// With `delay_once` (reads went through a Prophecy sketcher), the history is judged
/// delay-once linearizable instead (seed 000 §4, `plumb_lincheck::check_delay_once`): writes
/// linearizable, and a read reflects either the latest state or the state the latest read of
/// its key reflected. The violation is then named `delay-once`.
pub fn check_linearizability<A: SimApp>(
    app: &A,
    checker: &mut Checker,
    workload: &Workload,
    delay_once: bool,
    max_steps: u64,
) {
    let mut history = History::<A::Model>::new();
    let mut unmodelled = 0usize;
    for (c, load) in workload
        .clients
        .iter()
        .enumerate()
        .filter(|(_, l)| l.correct)
    {
        for rec in &load.history {
            let Some(op) = app.model_op(&rec.op) else {
                continue;
            };
            let ret = rec
                .response
                .as_ref()
                .map(|resp| (app.model_ret(&op, &resp.result), resp.at));
            let id = history.invoke(c as u64, op, rec.invoke);
            match ret {
                None => {}
                Some((Some(ret), at)) => {
                    if let Err(e) = history.complete(id, ret, at) {
                        checker.warn(format!("history of c{c}: {e}"));
                    }
                }
                Some((None, _)) => unmodelled += 1,
            }
        }
    }
    if unmodelled > 0 {
        checker.warn(format!(
            "{unmodelled} results outside the {} model were left unanswered in the history",
            app.name()
        ));
    }
    let search = plumb_lincheck::Checker::new().with_max_steps(max_steps);
    let (property, outcome) = if delay_once {
        (
            "delay-once",
            search.check_delay_once(&app.model(), &history),
        )
    } else {
        ("linearizability", search.check(&app.model(), &history))
    };
    match outcome {
        Outcome::Linearizable => {}
        Outcome::NotLinearizable(v) => {
            let detail = format!(
                "{} of {} operations on {}: {}",
                v.ops.len(),
                history.len(),
                v.partition,
                v.explanation.trim_end()
            );
            checker.violate(property, detail);
        }
        Outcome::Unknown { undecided } => {
            checker.undecided(format!(
                "{property} undecided: the search spent its budget of {max_steps} steps on {} of the history's partitions",
                undecided.len()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::kv::Kv;
    use crate::config::WorkloadConfig;
    use crate::rng::SimRng;
    use plumb_kv::{KvOp, KvResult};

    fn workload() -> Workload {
        let cfg = WorkloadConfig {
            keys: vec![],
            think_min_us: 1,
            think_max_us: 2,
            read_only_gets: 0.0,
            extra_gets: 0.0,
            stop_at: 0,
        };
        Workload::new(cfg, SimRng::new(0, "t"), 2, None)
    }

    fn op(w: &mut Workload, c: u32, op: KvOp, t0: u64, ret: KvResult, t1: u64) {
        w.invoked(c, op.encode(), false, t0);
        w.completed(c, 1, ret.encode(), t1).unwrap();
    }

    #[test]
    fn stale_read_after_completed_write_is_not_linearizable() {
        let mut w = workload();
        let k = b"k0".to_vec();
        op(
            &mut w,
            0,
            KvOp::Set {
                key: k.clone(),
                value: b"1".to_vec(),
                expire: None,
            },
            10,
            KvResult::Ok,
            20,
        );
        op(
            &mut w,
            1,
            KvOp::Get { key: k.clone() },
            30,
            KvResult::Value(None),
            40,
        );
        let mut c = Checker::default();
        check_linearizability(&Kv, &mut c, &w, false, plumb_lincheck::DEFAULT_MAX_STEPS);
        assert_eq!(c.violations().len(), 1);
        assert_eq!(c.violations()[0].property, "linearizability");
    }

    #[test]
    fn overlapping_read_may_see_either_value() {
        let mut w = workload();
        let k = b"k0".to_vec();
        w.invoked(
            0,
            KvOp::Set {
                key: k.clone(),
                value: b"1".to_vec(),
                expire: None,
            }
            .encode(),
            false,
            10,
        );
        op(
            &mut w,
            1,
            KvOp::Get { key: k.clone() },
            12,
            KvResult::Value(None),
            14,
        );
        w.completed(0, 1, KvResult::Ok.encode(), 20).unwrap();
        let mut c = Checker::default();
        check_linearizability(&Kv, &mut c, &w, false, plumb_lincheck::DEFAULT_MAX_STEPS);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
    }

    #[test]
    fn a_search_out_of_budget_is_undecided_not_a_pass() {
        let mut w = workload();
        op(
            &mut w,
            0,
            KvOp::Get {
                key: b"k0".to_vec(),
            },
            10,
            KvResult::Value(None),
            20,
        );
        let mut c = Checker::default();
        check_linearizability(&Kv, &mut c, &w, false, 0);
        assert!(c.violations().is_empty());
        assert_eq!(c.undecided_checks().len(), 1, "{:?}", c.undecided_checks());
        let mut c = Checker::default();
        check_linearizability(&Kv, &mut c, &w, true, 0);
        assert!(c.undecided_checks()[0].starts_with("delay-once undecided"));
    }
}
