//! Properties of the agreed sequence as a whole: LS4 (a request in at most one batch), LS5 and
//! OS3 (a client's requests in order, none skipped), LS6 (only what a correct client issued),
//! LS7 (agreed time strictly increases) and ES2 (only batches the order stage committed).

use super::Checker;
use crate::workload::Workload;
use plumb_core::DeliveredRequest;
use plumb_wire::{ClientId, ReqNo, Seq};
use std::collections::HashMap;

pub fn check_sequence(checker: &mut Checker, workload: &Workload) {
    let agreed: Vec<(Seq, super::Agreed)> = checker
        .agreed
        .iter()
        .map(|(s, a)| (*s, a.clone()))
        .collect();
    let mut placed: HashMap<(ClientId, ReqNo), Seq> = HashMap::new();
    let mut last_of: HashMap<ClientId, (ReqNo, Seq)> = HashMap::new();
    // LS7 is about batches the application sees: a null batch keeps the previous time.
    let mut previous_time: Option<(Seq, u64)> = None;
    let mut previous_seq: Seq = Seq(0);
    // OS3 is judged only on the gap-free prefix of the sequence seen by correct replicas.
    let mut contiguous = true;
    for (seq, batch) in &agreed {
        contiguous &= *seq == previous_seq + 1;
        previous_seq = *seq;
        if !batch.null {
            if let Some((prev_seq, prev_time)) = previous_time {
                if batch.agreed_time <= prev_time {
                    let detail = format!(
                        "batch {seq} has time {} after batch {prev_seq} at {prev_time}",
                        batch.agreed_time
                    );
                    checker.violate("LS7", detail);
                }
            }
            previous_time = Some((*seq, batch.agreed_time));
        }
        if let Some((digest, by)) = checker.committed.get(seq).copied() {
            if digest != batch.digest {
                let detail = format!(
                    "{} delivered batch {seq} as {:?}, {by} committed {digest:?}",
                    batch.by, batch.digest
                );
                checker.violate("ES2", detail);
            }
        }
        for &DeliveredRequest {
            client: c, nc, op, ..
        } in &batch.requests
        {
            if let Some(&first) = placed.get(&(c, nc)) {
                // A copy is allowed only where a NEW-VIEW carried an old view's batch holding
                // a request that a later primary had proposed afresh (so in two views).
                // Execution runs it once (docs/protocol.md). Anything else, such as a primary
                // proposing an already committed request again, is a bug.
                let views = (
                    checker.committed_view.get(&first).copied(),
                    checker.committed_view.get(seq).copied(),
                );
                // Both can also be carried by one NEW-VIEW: the fresh copy prepared in the view
                // before, the old one prepared earlier still, each the highest certificate of its
                // slot (seed 153, u=1 r=0: c0/36 proposed at 201 in view 42, afresh at 199 in view
                // 43, both chosen by the NEW-VIEW of view 44).
                let (first_carried, now_carried) = (
                    checker.carried.contains(&first),
                    checker.carried.contains(seq),
                );
                let different_views = matches!(views, (Some(a), Some(b)) if a != b);
                if (first_carried && now_carried)
                    || ((first_carried || now_carried) && different_views)
                {
                    continue;
                }
                checker.violate(
                    "LS4",
                    format!("c{c} request {nc} in batches {first} and {seq}"),
                );
            }
            placed.insert((c, nc), *seq);
            match last_of.get(&c).copied() {
                Some((prev_nc, prev_seq)) if nc <= prev_nc => {
                    let detail = format!("c{c} request {nc} in batch {seq} after request {prev_nc} in batch {prev_seq}");
                    checker.violate("LS5", detail);
                }
                Some((prev_nc, prev_seq)) if contiguous && nc != prev_nc.next() => {
                    let detail = format!("c{c} request {nc} in batch {seq} but its last was {prev_nc} in batch {prev_seq}");
                    checker.violate("OS3", detail);
                }
                None if contiguous && nc != ReqNo(1) => {
                    checker.violate(
                        "OS3",
                        format!("c{c}'s first ordered request is {nc} (batch {seq})"),
                    );
                }
                _ => {}
            }
            last_of.insert(c, (nc, *seq));
            match workload.clients.get(c as usize) {
                None => checker.violate(
                    "LS6",
                    format!("batch {seq} holds request {nc} of c{c}, no such client"),
                ),
                Some(load) if load.correct => {
                    match load.sent_as(nc, &op) {
                        Some(true) => {}
                        Some(false) => {
                            let detail = format!("batch {seq} holds c{c} request {nc} as {op:?}, the client sent {:?}", load.sent.get(&nc));
                            checker.violate("LS6", detail);
                        }
                        None => checker.violate(
                            "LS6",
                            format!("batch {seq} holds c{c} request {nc}, never sent"),
                        ),
                    }
                }
                Some(_) => {}
            }
        }
    }
    for (c, nc) in &workload.reused {
        checker.violate(
            "CS1",
            format!("correct client c{c} sent two operations as request {nc}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{test_support, Agreed};
    use plumb_crypto::Digest;
    use plumb_wire::{OrderId, Principal, View};

    fn workload() -> Workload {
        let mut w = test_support::workload(2, None);
        w.sent_request(0, ReqNo(1), b"op1");
        w.sent_request(0, ReqNo(2), b"op2");
        w
    }

    fn batch(t: u64, requests: Vec<(u32, u64, &[u8])>) -> Agreed {
        let requests = requests
            .into_iter()
            .map(|(c, nc, op)| {
                DeliveredRequest::new(c, plumb_wire::Life(0), ReqNo(nc), Digest::of(op))
            })
            .collect();
        test_support::agreed(Digest::of(&t.to_le_bytes()), t, requests, 0)
    }

    fn names(c: &Checker) -> Vec<&'static str> {
        c.violations().iter().map(|v| v.property).collect()
    }

    #[test]
    fn well_formed_sequence_passes() {
        let mut c = Checker::default();
        c.agreed.insert(Seq(1), batch(10, vec![(0, 1, b"op1")]));
        c.agreed.insert(Seq(2), batch(20, vec![(0, 2, b"op2")]));
        check_sequence(&mut c, &workload());
        assert!(c.violations().is_empty(), "{:?}", c.violations());
    }

    #[test]
    fn ls4_ls6_ls7_are_caught() {
        let mut c = Checker::default();
        c.agreed.insert(Seq(1), batch(10, vec![(0, 1, b"op1")]));
        // Same request again (LS4 and LS5), with a time that does not increase (LS7).
        c.agreed.insert(Seq(2), batch(10, vec![(0, 1, b"op1")]));
        // A body the client never sent for request 2 (LS6).
        c.agreed.insert(Seq(3), batch(30, vec![(0, 2, b"forged")]));
        check_sequence(&mut c, &workload());
        let got = names(&c);
        for p in ["LS4", "LS5", "LS6", "LS7"] {
            assert!(got.contains(&p), "{p} not reported: {got:?}");
        }
    }

    /// Issue 10, finding 6: a request in two batches committed in different views is allowed
    /// only where a NEW-VIEW carried one of them over from an earlier view. A primary that
    /// proposes an already committed request again in a later view is an LS4 violation.
    #[test]
    fn ls4_copy_across_views_allowed_only_when_carried_over_by_a_new_view() {
        let copy = |carried: bool| {
            let mut c = Checker::default();
            c.agreed.insert(Seq(1), batch(10, vec![(0, 1, b"op1")]));
            c.agreed.insert(Seq(2), batch(20, vec![(0, 1, b"op1")]));
            c.committed_view.insert(Seq(1), View(0));
            c.committed_view.insert(Seq(2), View(1));
            if carried {
                c.carried.insert(Seq(2));
            }
            check_sequence(&mut c, &workload());
            names(&c).contains(&"LS4")
        };
        assert!(copy(false), "re-proposed in a later view: LS4");
        assert!(
            !copy(true),
            "carried over by a NEW-VIEW: executed once, allowed"
        );
    }

    #[test]
    fn es2_delivered_batch_differs_from_committed() {
        let mut c = Checker::default();
        c.agreed.insert(Seq(1), batch(10, vec![(0, 1, b"op1")]));
        c.committed
            .insert(Seq(1), (Digest::of(b"other"), Principal::Order(OrderId(0))));
        check_sequence(&mut c, &workload());
        assert_eq!(names(&c), vec!["ES2"]);
    }
}
