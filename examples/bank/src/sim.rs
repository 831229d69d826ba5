//! The ledger under plumb's simulator: its workload, its lies for Byzantine replicas, its
//! model, and its invariants.
//!
//! Invariants, checked besides the library's properties and linearizability:
//! - `BANK-conservation`, on every correct execution replica's final state and on the reference
//!   replay's state after every batch: the balances, counted account by account, add up to
//!   what the ledger's books say was deposited minus withdrawn.
//! - `BANK-history`, on the agreed history: the balances at the end add up to the deposits
//!   minus the withdrawals that the replies *acknowledged*, counted from the history alone (so
//!   a ledger whose books drift with its balances is caught too), and every audit answered in
//!   the history reports the totals of the acknowledged deposits and withdrawals before it.

use crate::model::BankModel;
use crate::op::{decode_result, encode_result, BankError, BankOp, BankResult, Reply};
use crate::text::{show_op, show_result};
use crate::Ledger;
use plumb_sim::{AppForgery, AppViolation, Executed, SimApp, SimRng};
use std::sync::Arc;

/// The bank ledger as an application under simulation (`plumb sim --app bank`).
#[derive(Clone, Copy, Debug, Default)]
pub struct BankSim;

/// Amounts clients move: small, so that overdrafts are frequent.
const MAX_AMOUNT: u64 = 100;

fn account(rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
    rng.pick(objects).cloned().unwrap_or_else(|| b"k0".to_vec())
}

impl SimApp for BankSim {
    type App = Ledger;
    type Model = BankModel;

    fn name(&self) -> &'static str {
        "bank"
    }

    fn new_app(&self) -> Ledger {
        Ledger::new()
    }

    /// Every kind of operation, opens rarer than the rest (an account opens once).
    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        let account = account(rng, objects);
        let op = match rng.index(20) {
            0..=1 => BankOp::Open { account },
            2..=5 => BankOp::Deposit {
                account,
                amount: rng.range(1, MAX_AMOUNT),
            },
            6..=8 => BankOp::Withdraw {
                account,
                amount: rng.range(1, MAX_AMOUNT),
            },
            9..=14 => BankOp::Transfer {
                from: account,
                to: self::account(rng, objects),
                amount: rng.range(1, MAX_AMOUNT),
            },
            15..=17 => BankOp::Balance { account },
            _ => BankOp::Audit,
        };
        op.encode()
    }

    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        BankOp::Balance {
            account: account(rng, objects),
        }
        .encode()
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        BankOp::decode(op).is_ok_and(|op| op.is_read_only())
    }

    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        self.random_read(rng, objects)
    }

    fn injected_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        if rng.chance(0.5) {
            self.random_read(rng, objects)
        } else {
            BankOp::Audit.encode()
        }
    }

    fn mutating_op(&self) -> Vec<u8> {
        BankOp::Deposit {
            account: b"k0".to_vec(),
            amount: 1_000,
        }
        .encode()
    }

    fn forgery(&self) -> Arc<dyn AppForgery> {
        Arc::new(BankForgery)
    }

    fn op_text(&self, op: &[u8]) -> String {
        match BankOp::decode(op) {
            Ok(op) => show_op(&op),
            Err(_) => format!("<{} bytes>", op.len()),
        }
    }

    fn result_text(&self, result: &[u8]) -> String {
        show_result(result)
    }

    fn model(&self) -> BankModel {
        BankModel
    }

    fn model_op(&self, op: &[u8]) -> Option<BankOp> {
        BankOp::decode(op).ok()
    }

    fn model_ret(&self, _op: &BankOp, result: &[u8]) -> Option<BankResult> {
        decode_result(result).ok()
    }

    fn check_state(&self, ledger: &Ledger) -> Vec<AppViolation> {
        if ledger.conserves_money() {
            return Vec::new();
        }
        let books = ledger.audit();
        vec![AppViolation {
            property: "BANK-conservation",
            detail: format!(
                "balances add up to {}, the books say {} deposited - {} withdrawn",
                ledger.sum_of_balances(),
                books.deposited,
                books.withdrawn
            ),
        }]
    }

    fn check_history(&self, executed: &[Executed<'_>], end: &Ledger) -> Vec<AppViolation> {
        let mut violations = Vec::new();
        let (mut deposited, mut withdrawn) = (0u128, 0u128);
        for e in executed {
            let (Ok(op), Ok(result)) = (BankOp::decode(e.op), decode_result(e.result)) else {
                continue;
            };
            match (&op, &result) {
                (BankOp::Deposit { amount, .. }, Ok(_)) => deposited += u128::from(*amount),
                (BankOp::Withdraw { amount, .. }, Ok(_)) => withdrawn += u128::from(*amount),
                (BankOp::Audit, Ok(Reply::Audit(a)))
                    if (a.deposited, a.withdrawn) != (deposited, withdrawn)
                        || u128::from(a.total) != deposited - withdrawn =>
                {
                    violations.push(AppViolation {
                        property: "BANK-history",
                        detail: format!(
                            "the audit in batch {} by c{} reported {a:?}; the history acknowledged {deposited} deposited, {withdrawn} withdrawn",
                            e.seq, e.client
                        ),
                    });
                }
                _ => {}
            }
        }
        if end.sum_of_balances() != deposited - withdrawn.min(deposited) {
            violations.push(AppViolation {
                property: "BANK-history",
                detail: format!(
                    "balances add up to {} after the agreed history, which acknowledged {deposited} deposited and {withdrawn} withdrawn",
                    end.sum_of_balances()
                ),
            });
        }
        violations
    }
}

/// The ledger's lies: a forged deposit, plausible answers, and a checkpoint that still
/// conserves money (so it loads) but has moved one unit between accounts.
#[derive(Clone, Copy, Debug, Default)]
pub struct BankForgery;

impl AppForgery for BankForgery {
    fn forged_op(&self, nc: u64) -> Vec<u8> {
        BankOp::Deposit {
            account: b"k0".to_vec(),
            amount: 1_000_000 + nc,
        }
        .encode()
    }

    fn plausible_results(&self) -> Vec<Vec<u8>> {
        let lies: [BankResult; 5] = [
            Ok(Reply::Balance(666)),
            Ok(Reply::Transferred),
            Ok(Reply::Opened),
            Err(BankError::InsufficientFunds { balance: 0 }),
            Err(BankError::NoSuchAccount),
        ];
        lies.iter().map(encode_result).collect()
    }

    fn wrong_checkpoint(&self, app_checkpoint: &[u8], _agreed_time: u64) -> Option<Vec<u8>> {
        let mut ledger = Ledger::from_canonical_bytes(app_checkpoint).ok()?;
        let richest = ledger
            .accounts()
            .max_by_key(|(_, b)| *b)
            .map(|(a, b)| (a.to_vec(), b));
        let other = ledger
            .accounts()
            .map(|(a, _)| a.to_vec())
            .find(|a| Some(a) != richest.as_ref().map(|r| &r.0));
        let lie = match (richest, other) {
            (Some((from, b)), Some(to)) if b > 0 => BankOp::Transfer {
                from,
                to,
                amount: 1,
            },
            _ => BankOp::Open {
                account: b"forged".to_vec(),
            },
        };
        let applied = ledger.apply(&lie);
        debug_assert!(applied.is_ok(), "the lie applies: {applied:?}");
        Some(ledger.canonical_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_app::Application;

    #[test]
    fn forged_checkpoint_loads_but_differs() {
        let mut l = Ledger::new();
        for op in ["open a", "open b", "deposit a 5"] {
            l.apply(&crate::text::parse(op).unwrap()).unwrap();
        }
        let cp = l.take_checkpoint();
        let forged = BankForgery.wrong_checkpoint(&cp, 0).unwrap();
        assert_ne!(forged, cp);
        let mut other = Ledger::new();
        other.load_checkpoint(&forged).unwrap();
        assert!(other.conserves_money());
        assert!(BankSim.check_state(&other).is_empty());
    }
}
