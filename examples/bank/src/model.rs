//! The ledger's sequential specification, for the linearizability checker: what one copy of
//! the ledger answers, one operation at a time. It is written apart from [`crate::Ledger`] (a
//! model that called the implementation would check it against itself).
//!
//! The model does not partition: a transfer touches two accounts and an audit all of them, so
//! the whole history is searched as one object. With a handful of accounts the state is small,
//! and closed-loop clients keep few operations in flight, so the search stays cheap.

use crate::op::{Audit, BankError, BankOp, BankResult, Reply, MAX_ACCOUNTS, MAX_NAME_LEN};
use plumb_sim::lincheck::Model;
use std::collections::BTreeMap;

/// The ledger as a model.
#[derive(Clone, Copy, Debug, Default)]
pub struct BankModel;

/// Balances of the open accounts, and the books.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BankState {
    pub balances: BTreeMap<Vec<u8>, u64>,
    pub deposited: u128,
    pub withdrawn: u128,
}

impl Model for BankModel {
    type State = BankState;
    type Op = BankOp;
    type Ret = BankResult;
    type PartitionKey = ();

    fn init(&self) -> BankState {
        BankState::default()
    }

    fn step(&self, state: &BankState, op: &BankOp) -> (BankState, BankResult) {
        let mut next = state.clone();
        let ret = step(&mut next, op);
        // A refused operation leaves the state as it was.
        if ret.is_err() {
            return (state.clone(), ret);
        }
        (next, ret)
    }

    fn is_read_only(&self, op: &BankOp) -> bool {
        op.is_read_only()
    }
}

fn step(s: &mut BankState, op: &BankOp) -> BankResult {
    let balance = |s: &BankState, a: &Vec<u8>| s.balances.get(a).copied();
    match op {
        BankOp::Open { account } => {
            if account.len() > MAX_NAME_LEN {
                Err(BankError::NameTooLong)
            } else if s.balances.contains_key(account) {
                Err(BankError::AlreadyOpen)
            } else if s.balances.len() >= MAX_ACCOUNTS {
                Err(BankError::TooManyAccounts)
            } else {
                s.balances.insert(account.clone(), 0);
                Ok(Reply::Opened)
            }
        }
        BankOp::Deposit { account, amount } => {
            let supply = s.deposited - s.withdrawn;
            match balance(s, account) {
                _ if *amount == 0 => Err(BankError::ZeroAmount),
                _ if supply + u128::from(*amount) > u128::from(u64::MAX) => {
                    Err(BankError::Overflow)
                }
                None => Err(BankError::NoSuchAccount),
                Some(b) => {
                    s.balances.insert(account.clone(), b + amount);
                    s.deposited += u128::from(*amount);
                    Ok(Reply::Balance(b + amount))
                }
            }
        }
        BankOp::Withdraw { account, amount } => match balance(s, account) {
            _ if *amount == 0 => Err(BankError::ZeroAmount),
            None => Err(BankError::NoSuchAccount),
            Some(b) if *amount > b => Err(BankError::InsufficientFunds { balance: b }),
            Some(b) => {
                s.balances.insert(account.clone(), b - amount);
                s.withdrawn += u128::from(*amount);
                Ok(Reply::Balance(b - amount))
            }
        },
        BankOp::Transfer { from, to, amount } => match (balance(s, from), balance(s, to)) {
            _ if *amount == 0 => Err(BankError::ZeroAmount),
            _ if from == to => Err(BankError::SameAccount),
            (None, _) | (_, None) => Err(BankError::NoSuchAccount),
            (Some(p), _) if *amount > p => Err(BankError::InsufficientFunds { balance: p }),
            (Some(p), Some(q)) => {
                s.balances.insert(from.clone(), p - amount);
                s.balances.insert(to.clone(), q + amount);
                Ok(Reply::Transferred)
            }
        },
        BankOp::Balance { account } => balance(s, account)
            .map(Reply::Balance)
            .ok_or(BankError::NoSuchAccount),
        BankOp::Audit => {
            let supply = s.deposited - s.withdrawn;
            Ok(Reply::Audit(Audit {
                accounts: s.balances.len() as u64,
                total: u64::try_from(supply).unwrap_or(u64::MAX),
                deposited: s.deposited,
                withdrawn: s.withdrawn,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_sim::lincheck::{check, History};

    fn open(a: &str) -> BankOp {
        BankOp::Open {
            account: a.as_bytes().to_vec(),
        }
    }

    fn balance(a: &str) -> BankOp {
        BankOp::Balance {
            account: a.as_bytes().to_vec(),
        }
    }

    /// A read that misses a deposit completed before it began is not linearizable; one that
    /// overlaps it may see either balance.
    #[test]
    fn stale_balance_is_caught() {
        let deposit = BankOp::Deposit {
            account: b"a".to_vec(),
            amount: 5,
        };
        for (read_at, linearizable) in [(25, false), (15, true)] {
            let mut h = History::<BankModel>::new();
            h.record(1, open("a"), 0, Ok(Reply::Opened), 5).unwrap();
            h.record(1, deposit.clone(), 10, Ok(Reply::Balance(5)), 20)
                .unwrap();
            h.record(2, balance("a"), read_at, Ok(Reply::Balance(0)), 30)
                .unwrap();
            assert_eq!(check(&BankModel, &h).is_linearizable(), linearizable);
        }
    }
}
