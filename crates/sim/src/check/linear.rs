//! Linearizability of the correct clients' histories against the application's own model
//! (plumb-lincheck, [`SimApp::model`]).
//!
//! Operations the model leaves out ([`SimApp::model_op`] gives `None`) are dropped: they must
//! be reads, and dropping read-only operations from a linearizable history keeps it
//! linearizable, so what remains is still a sound test. A result the model cannot express is
//! recorded as unanswered and warned about: the reference replay (LS1) judges the exact bytes
//! of ordered replies anyway. `Unknown` (step budget exhausted) is an undecided check, which
//! fails the seed: a checker that gives up is not a pass.

use super::replies::OrderedOp;
use super::Checker;
use crate::app::SimApp;
use crate::workload::Workload;
use plumb_lincheck::{History, Outcome};

///
/// With `delay_once` (reads went through a Prophecy sketcher), the history is judged
/// delay-once linearizable instead (seed 000 §4, `plumb_lincheck::check_delay_once`): writes
/// linearizable, and a read reflects either the latest state or the state the latest read of
/// its key reflected. The violation is then named `delay-once`.
///
/// `faulty` are operations of faulty clients that were ordered and executed; they join the
/// history as taking effect at the moment they first reached a correct execution replica. Under
/// D-Prophecy they must: every ordered read, whoever sent it, becomes the replicas' last answer
/// to that request, which a later fast read is vouched against, so it is a read of the paper's
/// order like any other (sketcher seed 802, u=1 r=1). Pass none otherwise.
pub fn check_linearizability<A: SimApp>(
    app: &A,
    checker: &mut Checker,
    workload: &Workload,
    faulty: &[OrderedOp],
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
    let first_faulty = workload.clients.len() as u64;
    for o in faulty {
        // The point at which it ran is inside any interval the checker could give it: every
        // operation that completed before it was ordered before it, and every operation
        // invoked after it was ordered after it (a later batch is delivered later everywhere).
        let Some(op) = app.model_op(&o.op) else {
            continue;
        };
        match app.model_ret(&op, &o.result) {
            Some(ret) => {
                // Faulty clients' operations get client ids past the correct ones': two of
                // them may run in one batch, at one instant.
                let id = history.invoke(first_faulty + u64::from(o.client), op, o.at);
                if let Err(e) = history.complete(id, ret, o.at) {
                    checker.warn(format!("history of faulty c{}: {e}", o.client));
                }
            }
            None => unmodelled += 1,
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
    use crate::check::test_support::workload as workload_of;
    use crate::test_kv::Kv;
    use plumb_kv::{KvOp, KvResult};
    use plumb_wire::ReqNo;

    fn workload() -> Workload {
        workload_of(2, None)
    }

    /// `w` checked against the key-value model, with the default search budget.
    fn check(w: &Workload, faulty: &[OrderedOp], delay_once: bool) -> Checker {
        let mut c = Checker::default();
        let steps = plumb_lincheck::DEFAULT_MAX_STEPS;
        check_linearizability(&Kv, &mut c, w, faulty, delay_once, steps);
        c
    }

    fn set_k0(value: &[u8]) -> KvOp {
        KvOp::Set {
            key: b"k0".to_vec(),
            value: value.to_vec(),
            expire: None,
        }
    }

    fn get_k0() -> KvOp {
        KvOp::Get {
            key: b"k0".to_vec(),
        }
    }

    fn op(w: &mut Workload, c: u32, op: KvOp, t0: u64, ret: KvResult, t1: u64) {
        w.invoked(c, op.encode(), false, t0);
        w.completed(c, ReqNo(1), ret.encode(), t1).unwrap();
    }

    #[test]
    fn stale_read_after_completed_write_is_not_linearizable() {
        let mut w = workload();
        op(&mut w, 0, set_k0(b"1"), 10, KvResult::Ok, 20);
        op(&mut w, 1, get_k0(), 30, KvResult::Value(None), 40);
        let c = check(&w, &[], false);
        assert_eq!(c.violations().len(), 1);
        assert_eq!(c.violations()[0].property, "linearizability");
    }

    #[test]
    fn overlapping_read_may_see_either_value() {
        let mut w = workload();
        w.invoked(0, set_k0(b"1").encode(), false, 10);
        op(&mut w, 1, get_k0(), 12, KvResult::Value(None), 14);
        w.completed(0, ReqNo(1), KvResult::Ok.encode(), 20).unwrap();
        let c = check(&w, &[], false);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
    }

    /// Sketcher seed 802 (u=1 r=1) in small: under D-Prophecy a faulty client's ordered read
    /// becomes what replicas vouch for, so a later fast read may return what it saw, although
    /// a correct client's write changed the key after the last correct read.
    #[test]
    fn a_faulty_clients_ordered_read_counts_as_the_latest_read() {
        let mut w = workload_of(3, Some(2));
        let get = get_k0();
        let set = set_k0;
        let value = |v: &[u8]| KvResult::Value(Some(v.to_vec()));
        // c0 reads nothing, c1 sets 1; the faulty c2's ordered read sees 1; c1 sets 2; c0's
        // fast read is vouched for with c2's answer and returns 1.
        w.invoked(0, get.encode(), false, 10);
        w.completed(0, ReqNo(1), KvResult::Value(None).encode(), 20)
            .unwrap();
        w.invoked(1, set(b"1").encode(), false, 30);
        w.completed(1, ReqNo(1), KvResult::Ok.encode(), 40).unwrap();
        w.invoked(1, set(b"2").encode(), false, 60);
        w.completed(1, ReqNo(2), KvResult::Ok.encode(), 70).unwrap();
        w.invoked(0, get.encode(), false, 80);
        w.completed(0, ReqNo(0), value(b"1").encode(), 90).unwrap();
        let faulty = [OrderedOp {
            client: 2,
            op: get.encode(),
            at: 50,
            result: value(b"1").encode(),
        }];
        let c = check(&w, &faulty, true);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
        // Without it the fast read goes back past the latest read the checker knows of.
        let c = check(&w, &[], true);
        assert_eq!(c.violations().len(), 1, "{:?}", c.violations());
        assert_eq!(c.violations()[0].property, "delay-once");
    }

    #[test]
    fn a_search_out_of_budget_is_undecided_not_a_pass() {
        let mut w = workload();
        op(&mut w, 0, get_k0(), 10, KvResult::Value(None), 20);
        let mut c = Checker::default();
        check_linearizability(&Kv, &mut c, &w, &[], false, 0);
        assert!(c.violations().is_empty());
        assert_eq!(c.undecided_checks().len(), 1, "{:?}", c.undecided_checks());
        let mut c = Checker::default();
        check_linearizability(&Kv, &mut c, &w, &[], true, 0);
        assert!(c.undecided_checks()[0].starts_with("delay-once undecided"));
    }
}
