//! Linearizability of the correct clients' key-value histories (plumb-lincheck, KV model).
//!
//! `Keys` and `DbSize` are left out (the model does not cover them; dropping read-only
//! operations from a linearizable history keeps it linearizable, so what remains is still a
//! sound test). A result the model cannot express (an error other than not-an-integer or
//! overflow) is recorded as unanswered and warned about: the reference replay (LS1) judges the
//! exact bytes of ordered replies anyway. `Unknown` (step budget exhausted) is a warning.

use super::Checker;
use crate::workload::Workload;
use plumb_kv::{KvOp, KvResult, ERR_NOT_INTEGER, ERR_OVERFLOW};
use plumb_lincheck::kv::{BytesKv, KvError, KvOp as LinOp, KvRet};
use plumb_lincheck::{History, Outcome};

/// The model's version of an operation, if it models it.
fn model_op(op: &KvOp) -> Option<LinOp<Vec<u8>, Vec<u8>>> {
    Some(match op {
        KvOp::Get { key } => LinOp::Get { key: key.clone() },
        KvOp::Set {
            key,
            value,
            expire: None,
        } => LinOp::Set {
            key: key.clone(),
            value: value.clone(),
        },
        KvOp::Delete { key } => LinOp::Delete { key: key.clone() },
        KvOp::CompareAndSet { key, expected, new } => LinOp::CompareAndSet {
            key: key.clone(),
            expected: expected.clone(),
            new: new.clone(),
        },
        KvOp::Increment { key, delta } => LinOp::Increment {
            key: key.clone(),
            delta: *delta,
        },
        KvOp::Set {
            expire: Some(_), ..
        }
        | KvOp::Keys { .. }
        | KvOp::DbSize => return None,
        // The Redis commands are not in the model (the workload does not issue them).
        _ => return None,
    })
}

fn model_ret(result: &[u8]) -> Option<KvRet<Vec<u8>>> {
    Some(match KvResult::decode(result).ok()? {
        KvResult::Value(v) => KvRet::Value(v),
        KvResult::Ok => KvRet::Ok,
        KvResult::Bool(b) => KvRet::Bool(b),
        KvResult::Int(n) => KvRet::Int(n),
        KvResult::Error(e) if e == ERR_NOT_INTEGER => KvRet::Error(KvError::NotInteger),
        KvResult::Error(e) if e == ERR_OVERFLOW => KvRet::Error(KvError::Overflow),
        KvResult::Error(_)
        | KvResult::Keys(_)
        | KvResult::Values(_)
        | KvResult::Items(_)
        | KvResult::Pairs(_)
        | KvResult::Nil => return None,
        // Sorted sets are not in the model (the workload does not issue them).
        _ => return None,
    })
}

pub fn check_linearizability(checker: &mut Checker, workload: &Workload) {
    let mut history = History::<BytesKv>::new();
    let mut unmodelled = 0usize;
    for (c, load) in workload
        .clients
        .iter()
        .enumerate()
        .filter(|(_, l)| l.correct)
    {
        for rec in &load.history {
            let Some(op) = model_op(&rec.op) else {
                continue;
            };
            let id = history.invoke(c as u64, op, rec.invoke);
            let Some(resp) = &rec.response else { continue };
            match model_ret(&resp.result) {
                Some(ret) => {
                    if let Err(e) = history.complete(id, ret, resp.at) {
                        checker.warn(format!("history of c{c}: {e}"));
                    }
                }
                None => unmodelled += 1,
            }
        }
    }
    if unmodelled > 0 {
        checker.warn(format!(
            "{unmodelled} results outside the KV model were left unanswered in the history"
        ));
    }
    match plumb_lincheck::check(&BytesKv::new(), &history) {
        Outcome::Linearizable => {}
        Outcome::NotLinearizable(v) => {
            let detail = format!(
                "{} of {} operations on {}: {}",
                v.ops.len(),
                history.len(),
                v.partition,
                v.explanation.trim_end()
            );
            checker.violate("linearizability", detail);
        }
        Outcome::Unknown { undecided } => {
            checker.warn(format!(
                "linearizability undecided (step budget) on {} partitions",
                undecided.len()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WorkloadConfig;
    use crate::rng::SimRng;

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
        w.invoked(c, op, false, t0);
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
        check_linearizability(&mut c, &w);
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
            },
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
        check_linearizability(&mut c, &w);
        assert!(c.violations().is_empty(), "{:?}", c.violations());
    }
}
