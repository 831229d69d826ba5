//! A chain of dependent operations run speculatively, as pure bookkeeping: what the client
//! of seed 001's counter benchmark does. Step `i`'s operation is built from the state the
//! steps before it left; the chain goes on with each step's early reply, keeps the state every
//! unconfirmed step started from (the client's checkpoints), and when an agreed reply differs
//! from what it went on with, returns to that step. `Session::run_chain` (feature `net`)
//! drives it over the network; the tests below drive it directly.
//!
//! Each step's request names only the step before it in its predicates (one predicate per
//! request): if step `j`'s speculation fails, replicas execute step `j + 1` as a no-op (its
//! predicate names `j`'s wrong reply), so `j + 2` fails its predicate on `j + 1`'s speculated
//! `Executed` reply, and so on: the whole rest of the chain is void, as the client assumes.

use crate::client::{Confirmation, Dependence, OpId};
use crate::envelope::SpecReply;
use std::collections::BTreeMap;

/// What a chain did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChainStats {
    /// Operations sent, reissues included.
    pub issued: u64,
    /// Steps that went on with an early reply before it committed.
    pub speculated: u64,
    /// Steps that waited for their agreed reply (no early reply, or an untrusted replica).
    pub waited: u64,
    /// Times the chain went back to an earlier step after going on past it: a speculation
    /// failed, or the replicas answered a step with a no-op or Retry.
    pub rollbacks: u64,
    /// Of those, the ones whose agreed reply was an execution with other bytes than the early
    /// reply the chain went on with: the early replier was wrong (it lied, or its fork had
    /// not seen what the committed order put first). The others were answered with a no-op
    /// (`Aborted`: the committed order put the step before the one its predicate names, as
    /// it may when consecutive steps go out on different lanes; or `Retry`).
    pub wrong_early: u64,
}

/// A speculative chain of `steps` dependent operations over state `S` (module docs).
#[derive(Clone, Debug)]
pub struct Chain<S> {
    steps: u64,
    /// The state the chain is at: after every step below `next`, as far as it knows.
    state: S,
    /// The step to issue next.
    next: u64,
    /// The state each unconfirmed step started from.
    before: BTreeMap<u64, S>,
    /// Agreed replies of confirmed steps.
    confirmed: BTreeMap<u64, SpecReply>,
    /// Operations in flight (the session's ids): their step.
    in_flight: BTreeMap<OpId, u64>,
    /// The operation each step in flight was sent as.
    op_of: BTreeMap<u64, OpId>,
    stats: ChainStats,
}

impl<S: Clone> Chain<S> {
    pub fn new(steps: u64, init: S) -> Chain<S> {
        Chain {
            steps,
            state: init,
            next: 0,
            before: BTreeMap::new(),
            confirmed: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            op_of: BTreeMap::new(),
            stats: ChainStats::default(),
        }
    }

    /// Every step confirmed.
    pub fn done(&self) -> bool {
        self.confirmed.len() as u64 >= self.steps
    }

    /// The step to issue now: none at the chain's end, nor while the step it is at is in
    /// flight (it waits for that step's agreed reply; issuing it again would run it twice).
    pub fn next_step(&self) -> Option<u64> {
        (self.next < self.steps && !self.op_of.contains_key(&self.next)).then_some(self.next)
    }

    /// The state the next step is built from.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// What the next step's request depends on: the step before it, if that is in flight.
    pub fn depends_on(&self) -> Dependence {
        match self.next.checked_sub(1).and_then(|p| self.op_of.get(&p)) {
            Some(prev) => Dependence::On(vec![*prev]),
            None => Dependence::Nothing,
        }
    }

    /// The next step was sent as operation `id`.
    pub fn issued(&mut self, id: OpId) {
        debug_assert!(self.next < self.steps, "issued past the chain's end");
        self.before.insert(self.next, self.state.clone());
        self.in_flight.insert(id, self.next);
        self.op_of.insert(self.next, id);
        self.stats.issued += 1;
    }

    /// What the session said about the step just issued: `Some` early reply to go on with,
    /// or `None`. True if the chain went on (issue the next step); false: wait for replies.
    pub fn early(&mut self, early: Option<SpecReply>, apply: impl Fn(&S, &SpecReply) -> S) -> bool {
        match early {
            Some(reply @ SpecReply::Executed(_)) => {
                self.stats.speculated += 1;
                self.state = apply(&self.state, &reply);
                self.next += 1;
                true
            }
            _ => {
                self.stats.waited += 1;
                false
            }
        }
    }

    /// Operation `id`'s agreed outcome.
    pub fn confirmed(
        &mut self,
        id: OpId,
        outcome: Confirmation,
        apply: impl Fn(&S, &SpecReply) -> S,
    ) {
        let Some(step) = self.in_flight.remove(&id) else {
            return; // rolled back already: its reply changes nothing
        };
        let (reply, corrected) = match outcome {
            Confirmation::Confirmed { reply } => (reply, false),
            Confirmation::Corrected { reply, .. } => (reply, true),
            Confirmation::Retry { .. } => (SpecReply::Retry { predicate: 0 }, true),
            Confirmation::Unknown => return,
        };
        let went_on = self.next > step;
        // The chain must return to `step` when what it went on with was wrong, or when it
        // waited there (then nothing later exists).
        if corrected || !went_on {
            if went_on {
                self.stats.rollbacks += 1;
                if corrected && matches!(reply, SpecReply::Executed(_)) {
                    self.stats.wrong_early += 1;
                }
            }
            // Later steps started from a wrong reply: void (replicas executed them as
            // no-ops), and issued again.
            self.in_flight.retain(|_, s| *s < step);
            self.op_of.retain(|s, _| *s < step);
            self.confirmed.retain(|s, _| *s < step);
            self.before.retain(|s, _| *s <= step);
            // Every step in flight has its starting state kept (`issued`).
            debug_assert!(self.before.contains_key(&step));
            if let Some(start) = self.before.get(&step) {
                self.state = start.clone();
            }
            self.next = step;
        }
        match reply {
            SpecReply::Executed(_) => {
                if self.next == step {
                    self.state = apply(&self.state, &reply);
                    self.next = step + 1;
                }
                self.confirmed.insert(step, reply);
                self.before.remove(&step);
                self.op_of.remove(&step);
            }
            // The step did nothing (a failed predicate, a Retry, a malformed request):
            // `next == step` now, so it is issued again. Its operation is settled, so the
            // reissue names no predicate on it.
            _ => {
                self.op_of.remove(&step);
            }
        }
    }

    /// The final state and what the chain did.
    pub fn finish(self) -> (S, ChainStats) {
        (self.state, self.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state is the list of replies folded in.
    #[allow(clippy::ptr_arg)] // the chain's `apply` takes `&S`, and S is `Vec<u8>` here
    fn fold(s: &Vec<u8>, r: &SpecReply) -> Vec<u8> {
        let mut s = s.clone();
        if let SpecReply::Executed(b) = r {
            s.extend_from_slice(b);
        }
        s
    }

    fn ex(b: u8) -> SpecReply {
        SpecReply::Executed(vec![b])
    }

    fn confirmed(b: u8) -> Confirmation {
        Confirmation::Confirmed { reply: ex(b) }
    }

    /// Issue the next step as `id` and go on with early reply `b`.
    fn speculate(c: &mut Chain<Vec<u8>>, id: OpId, b: u8) {
        c.issued(id);
        assert!(c.early(Some(ex(b)), fold));
    }

    #[test]
    fn confirmed_speculations_finish_the_chain_without_reissuing() {
        let mut c = Chain::new(3, Vec::new());
        assert_eq!(c.depends_on(), Dependence::Nothing);
        speculate(&mut c, 10, 1);
        assert_eq!(c.depends_on(), Dependence::On(vec![10]));
        speculate(&mut c, 11, 2);
        speculate(&mut c, 12, 3);
        assert_eq!(c.next_step(), None);
        // Agreed replies may arrive in any order.
        c.confirmed(12, confirmed(3), fold);
        c.confirmed(10, confirmed(1), fold);
        assert!(!c.done());
        c.confirmed(11, confirmed(2), fold);
        assert!(c.done());
        let (state, stats) = c.finish();
        assert_eq!(state, vec![1, 2, 3]);
        assert_eq!(stats.issued, 3);
        assert_eq!(stats.speculated, 3);
        assert_eq!(stats.rollbacks, 0);
    }

    #[test]
    fn a_corrected_step_rolls_the_chain_back_and_later_replies_are_ignored() {
        let mut c = Chain::new(3, Vec::new());
        speculate(&mut c, 10, 1);
        speculate(&mut c, 11, 9); // a lying early reply
        speculate(&mut c, 12, 3);
        c.confirmed(
            11,
            Confirmation::Corrected {
                reply: ex(2),
                aborted: vec![12],
            },
            fold,
        );
        // Back at step 2, from the state after step 0 and the *agreed* step 1.
        assert_eq!(c.state(), &vec![1, 2]);
        assert_eq!(c.next_step(), Some(2));
        // Step 1 is settled: the reissued step 2 names nothing in flight before it.
        assert_eq!(c.depends_on(), Dependence::Nothing);
        // The void step's late reply (a no-op at the replicas) changes nothing.
        c.confirmed(12, Confirmation::Unknown, fold);
        c.confirmed(10, confirmed(1), fold);
        speculate(&mut c, 13, 3);
        c.confirmed(13, confirmed(3), fold);
        assert!(c.done());
        let (state, stats) = c.finish();
        assert_eq!(state, vec![1, 2, 3]);
        assert_eq!(stats.rollbacks, 1);
        assert_eq!(
            stats.wrong_early, 1,
            "the agreed reply executed, with other bytes"
        );
        assert_eq!(stats.issued, 4);
    }

    #[test]
    fn a_step_answered_with_a_no_op_is_issued_again_from_its_own_state() {
        let mut c = Chain::new(2, Vec::new());
        speculate(&mut c, 10, 1);
        speculate(&mut c, 11, 2);
        // Step 0 came back Aborted although its early reply said Executed: the speculation
        // failed, and step 1 (which named it) is void too.
        c.confirmed(
            10,
            Confirmation::Corrected {
                reply: SpecReply::Aborted { predicate: 0 },
                aborted: vec![11],
            },
            fold,
        );
        assert_eq!(c.state(), &Vec::<u8>::new());
        assert_eq!(c.next_step(), Some(0));
        c.issued(20);
        assert!(!c.early(None, fold), "no early reply: wait");
        c.confirmed(20, confirmed(1), fold);
        assert_eq!(c.next_step(), Some(1));
        c.issued(21);
        assert!(!c.early(None, fold));
        c.confirmed(21, Confirmation::Retry { aborted: vec![] }, fold);
        assert_eq!(c.next_step(), Some(1), "a Retry is issued again");
        c.issued(22);
        assert!(!c.early(None, fold));
        c.confirmed(22, confirmed(2), fold);
        assert!(c.done());
        let (state, stats) = c.finish();
        assert_eq!(state, vec![1, 2]);
        assert_eq!(stats.rollbacks, 1, "only step 0 had gone on");
        assert_eq!(stats.wrong_early, 0, "a no-op is not a wrong early reply");
    }

    /// Found by `plumb bench speculation`: a step waiting for its agreed reply was issued
    /// again when another step's reply came first, and the counter's second increment with
    /// the same token came back WrongToken.
    #[test]
    fn a_step_waiting_for_its_agreed_reply_is_not_issued_again() {
        let mut c = Chain::new(3, Vec::new());
        speculate(&mut c, 10, 1);
        c.issued(11);
        assert!(!c.early(None, fold), "no early reply: wait");
        assert_eq!(c.next_step(), None, "step 1 is in flight");
        c.confirmed(10, confirmed(1), fold);
        assert_eq!(c.next_step(), None, "still waiting for step 1");
        c.confirmed(11, confirmed(2), fold);
        assert_eq!(c.next_step(), Some(2));
    }

    #[test]
    fn a_correction_of_an_early_step_voids_steps_already_confirmed_after_it() {
        // Replicas cannot confirm a later step as Executed when an earlier one it depends on
        // failed, but the chain must not keep a confirmed reply past the point it returns to.
        let mut c = Chain::new(3, Vec::new());
        speculate(&mut c, 10, 1);
        speculate(&mut c, 11, 2);
        c.confirmed(11, confirmed(2), fold);
        c.confirmed(
            10,
            Confirmation::Corrected {
                reply: ex(7),
                aborted: vec![],
            },
            fold,
        );
        assert_eq!(c.state(), &vec![7]);
        assert_eq!(c.next_step(), Some(1));
        speculate(&mut c, 12, 2);
        speculate(&mut c, 13, 3);
        c.confirmed(12, confirmed(2), fold);
        c.confirmed(13, confirmed(3), fold);
        assert!(c.done());
        assert_eq!(c.finish().0, vec![7, 2, 3]);
    }
}
