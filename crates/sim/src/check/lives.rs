//! CLIENT-one-life: a client's operation completes only with the answer to a request that
//! operation sent. A request's identity is `H(client, life, nc, H(op))` with a life drawn at
//! every start, so a client that lost its record and reuses a number with the very same bytes
//! still sends a request no earlier life sent: the authentication stage never takes it for the
//! earlier one's retransmission, nor the client the earlier one's reply for its own
//! (docs/protocol.md, "Clients after a crash").
//!
//! Judged from the wire: for every ordered answer a correct client accepted, the request its
//! reply names (`Observation::ClientAccepted`) must have been first sent, as the simulator saw
//! it leave the client, no earlier than the operation was invoked. An operation resumed after a restart that kept
//! the record is invoked before its request was first sent too, so it passes; a new life's
//! operation answered with a request its previous life sent before it was invoked does not,
//! whether or not the values it returned give it away to linearizability.

use super::Checker;
use crate::faults::secs;
use crate::workload::Workload;

pub fn check_one_life(checker: &mut Checker, workload: &Workload) {
    let mut found = Vec::new();
    for (c, load) in workload.clients.iter().enumerate() {
        if !load.correct {
            continue;
        }
        for op in &load.history {
            let Some(resp) = &op.response else { continue };
            let Some(id) = resp.request else { continue };
            match load.first_sent.get(&id) {
                Some(&sent) if sent < op.invoke => found.push(format!(
                    "c{c}'s operation invoked at {} completed with the reply to request {} as first sent at {}, before the operation existed (an earlier life's request with the same number and bytes)",
                    secs(op.invoke),
                    resp.nc,
                    secs(sent)
                )),
                Some(_) => {}
                None => found.push(format!(
                    "c{c}'s operation invoked at {} completed with a reply naming request {} of an identity it never sent",
                    secs(op.invoke),
                    resp.nc
                )),
            }
        }
    }
    for detail in found {
        checker.violate("CLIENT-one-life", detail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::test_support::workload;
    use plumb_crypto::Digest;
    use plumb_wire::{Life, ReqNo};

    /// c0's previous life sent `op` as request 5 at 1 s; its new life invokes the same `op`
    /// at 2 s and reuses number 5. Answered with the identity the old life sent, the check
    /// fails; with the identity its own life sent at 2 s, it passes.
    fn run(life_of_answer: Life) -> Vec<&'static str> {
        let mut w = workload(1, None);
        w.sent_identity(0, Life(1), ReqNo(5), b"op", 1_000_000);
        w.invoked(0, b"op".to_vec(), false, 2_000_000);
        w.sent_identity(0, Life(2), ReqNo(5), b"op", 2_000_000);
        w.sent_request(0, ReqNo(5), b"op");
        let answered = plumb_wire::request_id(0, life_of_answer, ReqNo(5), Digest::of(b"op"));
        w.accepting(0, answered);
        w.completed(0, ReqNo(5), b"r".to_vec(), 3_000_000).unwrap();
        let mut c = Checker::default();
        check_one_life(&mut c, &w);
        c.violations().iter().map(|v| v.property).collect()
    }

    #[test]
    fn an_answer_to_the_previous_lifes_request_is_caught() {
        assert_eq!(run(Life(1)), vec!["CLIENT-one-life"]);
        assert!(run(Life(2)).is_empty());
    }
}
