//! A client without a trustworthy record learns the last request number it used before it
//! issues a new one (docs/protocol.md "Clients after a crash").
//!
//! A lost disk and a brand-new client look alike (no `client/out` record), as does a corrupt
//! record; in each case the client asks every execution replica for the last number it executed
//! for this client (`LastRequestQuery`) and waits for `exec - u` answers, which come even with
//! `u` replicas silent. It then numbers its next request one above the `(r + 1)`-th highest
//! answer: `r + 1` replicas report at least that number, one of them correct, so the number is
//! used, while `r` liars cannot push it higher. No gap is left for the order stage to refuse
//! (OS3): every number up to the chosen one minus one was ordered.
//!
//! The answer may be too low (lagging replicas, liars reporting less, or an operation of the
//! previous life authenticated but not yet executed). Reusing a number is then safe because a
//! reply names the operation it answers (`Client::on_reply`), and it is live because replies for
//! the reused number name another operation or a later number, and `r + 1` of those move the
//! client past it (`Client::on_number_used`).

use crate::{Client, LEARN};
use plumb_core::{Action, Micros};
use plumb_wire::{ExecId, Message, Principal, ReqNo};
use std::collections::HashMap;

#[derive(Debug)]
pub(crate) struct Learning {
    /// Execution replica -> the last number it executed for this client (its latest answer).
    answers: HashMap<ExecId, ReqNo>,
    /// Current retransmission timeout of the query.
    timeout: Micros,
    /// The operation submitted while learning (`(op, read_only)`), issued once the number is
    /// known. One at most: submit stays closed loop (CS2).
    pub(crate) deferred: Option<(Vec<u8>, crate::Route)>,
}

impl Learning {
    pub(crate) fn new(timeout: Micros) -> Learning {
        Learning {
            answers: HashMap::new(),
            timeout,
            deferred: None,
        }
    }
}

impl Client {
    /// Ask the execution replicas that have not answered yet.
    pub(crate) fn send_last_request_query(&mut self, out: &mut Vec<Action>) {
        let Some(learning) = &self.learning else {
            return;
        };
        let ask: Vec<ExecId> = ExecId::all(self.q.exec)
            .filter(|i| !learning.answers.contains_key(i))
            .collect();
        let timeout = learning.timeout;
        for e in ask {
            self.send(Principal::Exec(e), &Message::LastRequestQuery, out);
        }
        out.push(Action::SetTimer {
            id: LEARN,
            after: timeout,
        });
    }

    /// Answers are lost like any message: ask again, backing off like a request (§5.7.1).
    pub(crate) fn on_learn_timer(&mut self, out: &mut Vec<Action>) {
        let cap = self.cfg.client_retry_max_us;
        let Some(learning) = &mut self.learning else {
            return;
        };
        learning.timeout = learning.timeout.saturating_mul(2).min(cap).max(1);
        self.counters.add("last-request-query-retransmit");
        self.send_last_request_query(out);
    }

    pub(crate) fn on_last_request(
        &mut self,
        now: Micros,
        exec: ExecId,
        nc: ReqNo,
        out: &mut Vec<Action>,
    ) {
        let rank = self.q.reply();
        let needed = self
            .q
            .exec
            .saturating_sub(usize::from(self.q.faults.u))
            .max(rank);
        let Some(learning) = &mut self.learning else {
            self.counters.add("stale-last-request");
            return;
        };
        // One replica, one voice: its latest answer replaces an earlier one.
        learning.answers.insert(exec, nc);
        if learning.answers.len() < needed {
            return;
        }
        let mut reported: Vec<ReqNo> = learning.answers.values().copied().collect();
        reported.sort_unstable_by(|a, b| b.cmp(a));
        // `needed >= r + 1` (exec - u = max(u, r) + 1), so the rank exists.
        let used_upto = reported
            .get(rank.saturating_sub(1))
            .copied()
            .unwrap_or(ReqNo::NONE);
        let deferred = learning.deferred.take();
        self.learning = None;
        self.next_nc = self.next_nc.max(used_upto.next());
        self.counters.add("learned-last-request");
        out.push(Action::CancelTimer { id: LEARN });
        if let Some((op, route)) = deferred {
            self.issue(now, op, route, out);
        }
    }
}
