//! LS1 / ES3: only responses the application generated reach correct clients. The agreed
//! sequence is replayed on a fresh instance of the application ([`SimApp::new_app`]); every
//! ordered reply a correct client accepted must equal the reference reply to that request, and
//! every correct execution replica's state must equal the reference state after the same number
//! of batches. The application's own invariants are checked on the reference state after every
//! batch ([`SimApp::check_state`]) and on the replayed history ([`SimApp::check_history`]).
//!
//! Each batch is also run on only the objects its access sets name (access.rs).
//!
//! The replay passes each batch's agreed seed (`Observation::Delivered` reports it), so an
//! application may draw from it (the coordination application's session ids do).

use super::access::AccessCheck;
use super::{Checker, LeaseWatch};
use crate::app::{Executed, SimApp};
use crate::workload::Workload;
use plumb_app::{Application, Command, NonDeterminism, ObjectId};
use plumb_core::DeliveredRequest;
use plumb_crypto::Digest;
use plumb_wire::{BatchReport, ClientId, Micros, Principal, ReqNo, Seq};
use std::collections::{BTreeSet, HashMap};

/// A correct execution replica at the end of the run.
pub struct ExecEnd {
    pub p: Principal,
    /// Batches it has executed (its next batch minus one).
    pub executed: Seq,
    /// The digest of its application's state; `None` while it holds part of the state (loaded
    /// on demand, not yet filled), whose digest is not the state's: what it holds is checked
    /// object by object instead (`object-verified`, and `ES-report` for what it writes).
    pub state: Option<Digest>,
}

struct Replay {
    replies: HashMap<(ClientId, ReqNo), Vec<u8>>,
    states: HashMap<Seq, Digest>,
    /// Each batch's replies and (with objects) write set digests, as reports give them.
    reports: HashMap<Seq, (Digest, Option<Digest>)>,
    /// Last batch replayed: the agreed sequence is known and replayable up to here.
    upto: Seq,
}

/// object-verified: every object a correct replica holding part of the state fetched before
/// batch `before` is the object as the reference state holds it after batch `before - 1`:
/// what the agreed root commits to, so what its proof must have shown.
fn check_fetched(checker: &mut Checker, access: Option<&AccessCheck>, before: Seq) {
    let (Some(access), Some(fetched)) = (access, checker.fetched.get(&before)) else {
        return;
    };
    let wrong: Vec<String> = fetched
        .iter()
        .filter(|(_, id, digest)| access.object_digest(ObjectId(*id)) != *digest)
        .map(|(p, id, _)| {
            format!("{p} used object {id} fetched before batch {before} with bytes other than the agreed state's")
        })
        .collect();
    for detail in wrong {
        checker.violate("object-verified", detail);
    }
}

fn replay<A: SimApp>(
    app: &A,
    checker: &mut Checker,
    workload: &Workload,
    wanted: &BTreeSet<Seq>,
) -> Replay {
    let mut store = app.new_app();
    let mut access = AccessCheck::new(&mut store);
    // Every request replayed, with its result, for the application's history invariants.
    let mut executed: Vec<(Seq, DeliveredRequest, Vec<u8>)> = Vec::new();
    // Application invariants the reference state has broken so far.
    let mut broken: BTreeSet<&'static str> = BTreeSet::new();
    let mut out = Replay {
        replies: HashMap::new(),
        states: HashMap::new(),
        reports: HashMap::new(),
        upto: Seq(0),
    };
    if wanted.contains(&Seq(0)) {
        out.states.insert(Seq(0), store.state_digest());
    }
    let mut seq: Seq = Seq(1);
    // Exactly-once, as execution replicas do it: a copy of a request already run is skipped.
    let mut last_run: HashMap<ClientId, ReqNo> = HashMap::new();
    let mut leases = LeaseWatch::default();
    check_fetched(checker, access.as_ref(), seq);
    while let Some(batch) = checker.agreed.get(&seq) {
        let null = batch.null;
        if !null {
            let mut bodies = Vec::with_capacity(batch.requests.len());
            for r in &batch.requests {
                let (c, nc) = (&r.client, &r.nc);
                if last_run.get(c).is_some_and(|last| nc <= last) {
                    continue;
                }
                last_run.insert(*c, *nc);
                match workload.bodies.get(&r.op) {
                    Some(op) => bodies.push((*r, op.as_slice())),
                    None => {
                        let text = format!("replay stops at batch {seq}: c{c} request {nc} has a body no client sent");
                        checker.warn(text);
                        // A push of a later batch has nothing to be judged against.
                        check_replayed(app, checker, workload, &executed, &store, false);
                        return out;
                    }
                }
            }
            let commands: Vec<Command<'_>> = bodies
                .iter()
                .map(|(r, op)| Command {
                    client: r.client,
                    nc: r.nc,
                    op,
                    request: r.id,
                })
                .collect();
            let nd = NonDeterminism {
                time: batch.agreed_time,
                seed: batch.seed,
            };
            if commands.is_empty() {
                let nothing = access.as_ref().map(|a| a.nothing_written());
                out.reports
                    .insert(seq, (BatchReport::replies_digest([]), nothing));
                if wanted.contains(&seq) {
                    out.states.insert(seq, store.state_digest());
                }
                out.upto = seq;
                seq += 1;
                check_fetched(checker, access.as_ref(), seq);
                continue;
            }
            let before = app.leases(&store);
            let (output, writes) = match access.as_mut() {
                Some(access) => {
                    let (output, writes, broken) =
                        access.execute(app, &mut store, seq, &commands, nd);
                    if let Some(detail) = broken {
                        checker.violate("access-set", detail);
                    }
                    (output, Some(writes))
                }
                None => (store.execute(seq, &commands, nd), None),
            };
            let replies = BatchReport::replies_digest(output.replies.iter().map(Vec::as_slice));
            out.reports.insert(seq, (replies, writes));
            let after = app.leases(&store);
            if !before.is_empty() || !after.is_empty() {
                let requests: Vec<(ClientId, ReqNo, &[u8])> =
                    bodies.iter().map(|(r, op)| (r.client, r.nc, *op)).collect();
                let ended = leases.batch(seq, &before, &after, &requests, |op| app.lease_ops(op));
                checker.expired.extend(ended);
            }
            for ((r, _), reply) in bodies.iter().zip(output.replies) {
                executed.push((seq, *r, reply.clone()));
                out.replies.insert((r.client, r.nc), reply);
            }
            for v in app.check_state(&store) {
                // Once broken, an invariant usually stays broken: report where it broke
                // first, not every batch after it (that would drown every other violation).
                if broken.insert(v.property) {
                    let detail = format!("reference state after batch {seq}: {}", v.detail);
                    checker.violate(v.property, detail);
                }
            }
        }
        if null {
            let nothing = access.as_ref().map(|a| a.nothing_written());
            out.reports
                .insert(seq, (BatchReport::replies_digest([]), nothing));
        }
        if wanted.contains(&seq) {
            out.states.insert(seq, store.state_digest());
        }
        out.upto = seq;
        seq += 1;
        check_fetched(checker, access.as_ref(), seq);
    }
    // A gap in the agreed sequence (batches no correct replica was seen executing) stops the
    // replay; pushes of the batches after it could not be judged.
    let complete = checker.agreed.range(seq..).next().is_none();
    check_replayed(app, checker, workload, &executed, &store, complete);
    out
}

/// The application's invariants on the replayed history and the state it ended in.
fn check_replayed<A: SimApp>(
    app: &A,
    checker: &mut Checker,
    workload: &Workload,
    executed: &[(Seq, DeliveredRequest, Vec<u8>)],
    end: &A::App,
    complete: bool,
) {
    let history: Vec<Executed<'_>> = executed
        .iter()
        .filter_map(|(seq, r, result)| {
            let op = workload.bodies.get(&r.op)?;
            Some(Executed {
                seq: *seq,
                client: r.client,
                nc: r.nc,
                request: r.id,
                op,
                result,
            })
        })
        .collect();
    debug_assert_eq!(history.len(), executed.len(), "replayed bodies are known");
    for v in app.check_history(&history, end) {
        checker.violate(v.property, v.detail);
    }
    if complete {
        let pushed = std::mem::take(&mut checker.pushed);
        for v in app.check_pushes(&pushed, &history) {
            checker.violate(v.property, v.detail);
        }
    }
}

/// Returns the reference replies, by request.
pub fn check_replies<A: SimApp>(
    app: &A,
    checker: &mut Checker,
    workload: &Workload,
    execs: &[ExecEnd],
) -> HashMap<(ClientId, ReqNo), Vec<u8>> {
    let wanted: BTreeSet<Seq> = execs.iter().map(|e| e.executed).collect();
    let reference = replay(app, checker, workload, &wanted);
    let placed: HashMap<(ClientId, ReqNo), Seq> = checker
        .agreed
        .iter()
        .flat_map(|(s, b)| b.requests.iter().map(move |r| ((r.client, r.nc), *s)))
        .collect();
    // The operation ordered under each number (a copy in another view has the same one).
    let ordered_op: HashMap<(ClientId, ReqNo), Digest> = checker
        .agreed
        .values()
        .flat_map(|b| b.requests.iter().map(|r| ((r.client, r.nc), r.op)))
        .collect();
    for (c, load) in workload
        .clients
        .iter()
        .enumerate()
        .filter(|(_, l)| l.correct)
    {
        let c = c as ClientId;
        for (record, resp) in load
            .history
            .iter()
            .filter_map(|r| r.response.as_ref().map(|resp| (r, resp)))
            .filter(|(_, r)| r.nc > ReqNo::NONE)
        {
            // "A reply names its operation": the number a client completed an operation under
            // must carry that operation. Comparing results alone would miss a client that took
            // the answer to another operation of its own (a previous life's) for its answer.
            if let Some(d) = ordered_op.get(&(c, resp.nc)) {
                if *d != Digest::of(&record.op) {
                    let detail = format!(
                        "c{c} completed {} with the reply to request {}, which is another operation",
                        app.op_text(&record.op),
                        resp.nc
                    );
                    checker.violate("LS1", detail);
                }
            }
            match (
                reference.replies.get(&(c, resp.nc)),
                placed.get(&(c, resp.nc)),
            ) {
                (Some(expected), _) if *expected != resp.result => {
                    let detail = format!(
                        "c{c} accepted {} for request {}, the application produced {}",
                        app.result_text(&resp.result),
                        resp.nc,
                        app.result_text(expected)
                    );
                    checker.violate("LS1", detail);
                }
                (Some(_), _) => {}
                (None, Some(seq)) if *seq <= reference.upto => {}
                (None, Some(_)) => {}
                (None, None) => {
                    let detail = format!(
                        "c{c} accepted a reply to request {} that no correct replica executed",
                        resp.nc
                    );
                    checker.violate("LS1", detail);
                }
            }
        }
    }
    // ES-report: every correct replica's report of a batch names the replies and write set
    // the reference replay of that batch produced.
    for (seq, (report, by)) in &checker.reports {
        let Some((replies, writes)) = reference.reports.get(seq) else {
            continue;
        };
        if report.replies != *replies || report.writes != *writes {
            let detail = format!(
                "{by} reported batch {seq} with replies {:?} and writes {:?}, the reference replay gives {replies:?} and {writes:?}",
                report.replies, report.writes
            );
            checker.violate("ES-report", detail);
            break;
        }
    }
    for e in execs {
        let Some(state) = e.state else {
            continue;
        };
        match reference.states.get(&e.executed) {
            Some(d) if *d != state => {
                let detail = format!(
                    "{} state after {} batches is {:?}, the reference is {d:?}",
                    e.p, e.executed, state
                );
                checker.violate("ES-state", detail);
            }
            Some(_) => {}
            None => checker.warn(format!(
                "{} executed {} batches, beyond the replayable sequence",
                e.p, e.executed
            )),
        }
    }
    reference.replies
}

/// A faulty client's operation as it was ordered: when it first reached a correct execution
/// replica (global time) and what the reference replay answered.
pub struct OrderedOp {
    pub client: ClientId,
    pub op: Vec<u8>,
    pub at: Micros,
    pub result: Vec<u8>,
}

/// The operations of faulty clients that the agreed sequence executed, each where it ran
/// (a copy ordered again later is skipped, as execution replicas skip it).
pub fn faulty_ordered_ops(
    checker: &Checker,
    workload: &Workload,
    reference: &HashMap<(ClientId, ReqNo), Vec<u8>>,
) -> Vec<OrderedOp> {
    let faulty = |c: ClientId| !workload.clients.get(c as usize).is_some_and(|l| l.correct);
    let mut seen: BTreeSet<(ClientId, ReqNo)> = BTreeSet::new();
    let mut out = Vec::new();
    for batch in checker.agreed.values() {
        for r in batch.requests.iter().filter(|r| faulty(r.client)) {
            if !seen.insert((r.client, r.nc)) {
                continue;
            }
            let (Some(op), Some(result)) =
                (workload.bodies.get(&r.op), reference.get(&(r.client, r.nc)))
            else {
                continue;
            };
            out.push(OrderedOp {
                client: r.client,
                op: op.clone(),
                at: batch.at,
                result: result.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::test_support::{agreed, workload};
    use crate::test_kv::Kv;
    use plumb_kv::{KvOp, KvResult, KvStore};
    use plumb_wire::ExecId;

    fn set(v: &[u8]) -> KvOp {
        KvOp::Set {
            key: b"k0".to_vec(),
            value: v.to_vec(),
            expire: None,
        }
    }

    /// c0 sets k0, c1 reads it in the next batch; c1's accepted reply is checked against what
    /// the reference application answers.
    fn run(c1_saw: KvResult, exec_state: Option<Digest>) -> Vec<&'static str> {
        let mut w = workload(2, None);
        let get = KvOp::Get {
            key: b"k0".to_vec(),
        };
        w.invoked(0, set(b"1").encode(), false, 1);
        w.sent_request(0, ReqNo(1), &set(b"1").encode());
        w.completed(0, ReqNo(1), KvResult::Ok.encode(), 5).unwrap();
        w.invoked(1, get.encode(), false, 6);
        w.sent_request(1, ReqNo(1), &get.encode());
        w.completed(1, ReqNo(1), c1_saw.encode(), 9).unwrap();
        let mut c = Checker::default();
        for (seq, client, op) in [(Seq(1), 0, set(b"1")), (Seq(2), 1, get)] {
            let d = Digest::of(&op.encode());
            let requests = vec![DeliveredRequest::new(
                client,
                plumb_wire::Life(0),
                ReqNo(1),
                d,
            )];
            let batch = agreed(d, seq.0, requests, 0);
            c.agreed.insert(seq, batch);
        }
        let mut reference = KvStore::new();
        reference.apply(&set(b"1"), 1);
        let state = exec_state.unwrap_or_else(|| reference.state_digest());
        check_replies(
            &Kv,
            &mut c,
            &w,
            &[ExecEnd {
                p: Principal::Exec(ExecId(1)),
                executed: Seq(2),
                state: Some(state),
            }],
        );
        c.violations().iter().map(|v| v.property).collect()
    }

    #[test]
    fn accepted_replies_match_the_reference() {
        assert!(run(KvResult::Value(Some(b"1".to_vec())), None).is_empty());
    }

    #[test]
    fn ls1_wrong_reply_accepted() {
        assert_eq!(run(KvResult::Value(None), None), vec!["LS1"]);
    }

    #[test]
    fn es_state_diverged_replica() {
        let wrong = Digest::of(b"not the state");
        assert_eq!(
            run(KvResult::Value(Some(b"1".to_vec())), Some(wrong)),
            vec!["ES-state"]
        );
    }
}
