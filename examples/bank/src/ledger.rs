//! The ledger's state and the application contract.
//!
//! Determinism: the state is `BTreeMap`s and integers (no hash-ordered maps, no floats), the
//! ledger reads neither the clock nor an entropy source (it does not even need the agreed
//! time: [`plumb_app::NonDeterminism`] is ignored), and the checkpoint is the canonical postcard
//! encoding of the state, so correct replicas that executed the same batches produce the same
//! bytes and the same digest.

use crate::op::{
    encode_result, Audit, BankError, BankOp, BankResult, Reply, MAX_ACCOUNTS, MAX_NAME_LEN,
};
use plumb_app::{codec, Application, BatchOutput, Command, LoadError, NonDeterminism, Seq};
use plumb_crypto::Digest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const CHECKPOINT_VERSION: u8 = 1;

/// A bank ledger: named accounts with whole-unit balances.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    accounts: BTreeMap<Vec<u8>, u64>,
    /// Everything ever deposited and withdrawn: the ledger's own books, against which the sum
    /// of balances is audited.
    deposited: u128,
    withdrawn: u128,
}

impl Ledger {
    /// An empty ledger: no accounts, nothing deposited.
    pub fn new() -> Ledger {
        Ledger::default()
    }

    /// Apply one operation. A refused operation changes nothing.
    pub fn apply(&mut self, op: &BankOp) -> BankResult {
        match op {
            BankOp::Open { account } => {
                if account.len() > MAX_NAME_LEN {
                    return Err(BankError::NameTooLong);
                }
                if self.accounts.contains_key(account) {
                    return Err(BankError::AlreadyOpen);
                }
                if self.accounts.len() >= MAX_ACCOUNTS {
                    return Err(BankError::TooManyAccounts);
                }
                self.accounts.insert(account.clone(), 0);
                Ok(Reply::Opened)
            }
            BankOp::Deposit { account, amount } => {
                nonzero(*amount)?;
                let supply = self.deposited - self.withdrawn;
                if supply + u128::from(*amount) > u128::from(u64::MAX) {
                    return Err(BankError::Overflow);
                }
                let balance = self
                    .accounts
                    .get_mut(account)
                    .ok_or(BankError::NoSuchAccount)?;
                // Cannot overflow: the balance is at most the supply, checked above.
                *balance += amount;
                self.deposited += u128::from(*amount);
                Ok(Reply::Balance(*balance))
            }
            BankOp::Withdraw { account, amount } => {
                nonzero(*amount)?;
                let balance = self
                    .accounts
                    .get_mut(account)
                    .ok_or(BankError::NoSuchAccount)?;
                if *amount > *balance {
                    return Err(BankError::InsufficientFunds { balance: *balance });
                }
                *balance -= amount;
                self.withdrawn += u128::from(*amount);
                Ok(Reply::Balance(*balance))
            }
            BankOp::Transfer { from, to, amount } => self.transfer(from, to, *amount),
            BankOp::Balance { .. } | BankOp::Audit => self.read(op),
        }
    }

    /// Check everything before changing anything: a transfer happens whole or not at all.
    fn transfer(&mut self, from: &[u8], to: &[u8], amount: u64) -> BankResult {
        nonzero(amount)?;
        if from == to {
            return Err(BankError::SameAccount);
        }
        let payer = *self.accounts.get(from).ok_or(BankError::NoSuchAccount)?;
        let payee = *self.accounts.get(to).ok_or(BankError::NoSuchAccount)?;
        if amount > payer {
            return Err(BankError::InsufficientFunds { balance: payer });
        }
        debug_assert!(
            payee.checked_add(amount).is_some(),
            "balances sum to the supply"
        );
        let credited = payee.saturating_add(amount);
        self.accounts.insert(to.to_vec(), credited);
        if !sabotaged_transfer(amount) {
            self.accounts.insert(from.to_vec(), payer - amount);
        }
        Ok(Reply::Transferred)
    }

    /// A read-only operation; a mutating one is refused.
    pub fn read(&self, op: &BankOp) -> BankResult {
        match op {
            BankOp::Balance { account } => self
                .accounts
                .get(account)
                .map(|b| Reply::Balance(*b))
                .ok_or(BankError::NoSuchAccount),
            BankOp::Audit => Ok(Reply::Audit(self.audit())),
            _ => Err(BankError::NotReadOnly),
        }
    }

    /// The ledger's books: the total supply as its own records say it is.
    pub fn audit(&self) -> Audit {
        let supply = self.deposited - self.withdrawn;
        Audit {
            accounts: self.accounts.len() as u64,
            total: u64::try_from(supply).unwrap_or(u64::MAX),
            deposited: self.deposited,
            withdrawn: self.withdrawn,
        }
    }

    /// Every account and its balance, in name order.
    pub fn accounts(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.accounts.iter().map(|(k, v)| (k.as_slice(), *v))
    }

    /// The sum of all balances, counted account by account (not from the books).
    pub fn sum_of_balances(&self) -> u128 {
        self.accounts.values().map(|b| u128::from(*b)).sum()
    }

    /// Conservation: the balances add up to what was deposited minus what was withdrawn.
    pub fn conserves_money(&self) -> bool {
        self.withdrawn <= self.deposited
            && self.sum_of_balances() == self.deposited - self.withdrawn
    }

    /// The canonical encoding: what a checkpoint holds and what the digest is of.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        codec::encode_versioned(CHECKPOINT_VERSION, self)
    }

    /// Decode a checkpoint, refusing anything but the canonical encoding of a ledger within the
    /// limits that conserves money: a checkpoint is hostile input until proven otherwise.
    pub fn from_canonical_bytes(bytes: &[u8]) -> Result<Ledger, LoadError> {
        let corrupt = |why: &str| LoadError::Corrupt(format!("bank ledger: {why}"));
        let ledger: Ledger = codec::decode_versioned(CHECKPOINT_VERSION, bytes)
            .map_err(|e| corrupt(&e.to_string()))?;
        if ledger.canonical_bytes() != bytes {
            return Err(corrupt("not the canonical encoding"));
        }
        if ledger.accounts.len() > MAX_ACCOUNTS
            || ledger.accounts.keys().any(|k| k.len() > MAX_NAME_LEN)
        {
            return Err(corrupt("beyond the limits"));
        }
        if !ledger.conserves_money() {
            return Err(corrupt("balances do not add up to the books"));
        }
        Ok(ledger)
    }
}

fn nonzero(amount: u64) -> Result<(), BankError> {
    if amount == 0 {
        Err(BankError::ZeroAmount)
    } else {
        Ok(())
    }
}

/// The `sabotage` feature's deliberate bug: a transfer of a multiple of 37 credits the payee
/// without debiting the payer, creating money. Replicas agree on it (it is deterministic), so
/// only the conservation invariant (and the model) can catch it.
fn sabotaged_transfer(amount: u64) -> bool {
    cfg!(feature = "sabotage") && amount.is_multiple_of(37)
}

impl Application for Ledger {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
        let replies = batch
            .iter()
            .map(|cmd| {
                let result = BankOp::decode(cmd.op).and_then(|op| self.apply(&op));
                encode_result(&result)
            })
            .collect();
        BatchOutput {
            replies,
            pushes: Vec::new(),
        }
    }

    fn execute_read_only(&self, _client: u32, op: &[u8]) -> Vec<u8> {
        encode_result(&BankOp::decode(op).and_then(|op| self.read(&op)))
    }

    fn take_checkpoint(&mut self) -> Vec<u8> {
        self.canonical_bytes()
    }

    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        *self = Ledger::from_canonical_bytes(checkpoint)?;
        Ok(())
    }

    fn state_digest(&self) -> Digest {
        Digest::of(&self.canonical_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    fn funded() -> Ledger {
        let mut l = Ledger::new();
        for a in ["a", "b"] {
            assert_eq!(
                l.apply(&BankOp::Open { account: name(a) }),
                Ok(Reply::Opened)
            );
        }
        let dep = BankOp::Deposit {
            account: name("a"),
            amount: 10,
        };
        assert_eq!(l.apply(&dep), Ok(Reply::Balance(10)));
        l
    }

    #[test]
    fn transfer_moves_money_and_refuses_overdraft() {
        let mut l = funded();
        let t = |amount| BankOp::Transfer {
            from: name("a"),
            to: name("b"),
            amount,
        };
        assert_eq!(l.apply(&t(4)), Ok(Reply::Transferred));
        assert_eq!(
            l.apply(&t(7)),
            Err(BankError::InsufficientFunds { balance: 6 })
        );
        assert_eq!(
            l.read(&BankOp::Balance { account: name("b") }),
            Ok(Reply::Balance(4))
        );
        assert!(l.conserves_money());
        let audit = l.audit();
        assert_eq!((audit.total, audit.deposited, audit.withdrawn), (10, 10, 0));
    }

    #[test]
    fn refusals_change_nothing() {
        let mut l = funded();
        let before = l.clone();
        for op in [
            BankOp::Open { account: name("a") },
            BankOp::Withdraw {
                account: name("a"),
                amount: 11,
            },
            BankOp::Transfer {
                from: name("a"),
                to: name("a"),
                amount: 1,
            },
            BankOp::Transfer {
                from: name("a"),
                to: name("nobody"),
                amount: 1,
            },
            BankOp::Deposit {
                account: name("b"),
                amount: u64::MAX,
            },
            BankOp::Deposit {
                account: name("b"),
                amount: 0,
            },
        ] {
            assert!(l.apply(&op).is_err(), "{op:?}");
            assert_eq!(l, before, "{op:?} changed the ledger");
        }
    }

    #[test]
    fn checkpoints_round_trip_and_hostile_ones_are_refused() {
        let mut l = funded();
        let cp = l.take_checkpoint();
        let mut other = Ledger::new();
        other.load_checkpoint(&cp).unwrap();
        assert_eq!(other.state_digest(), l.state_digest());
        // Money out of thin air: decodes, but the balances no longer match the books.
        let mut forged = l.clone();
        forged.accounts.insert(name("b"), 1);
        assert!(Ledger::from_canonical_bytes(&forged.canonical_bytes()).is_err());
        for bad in [&b""[..], b"\x09", &cp[..cp.len() - 1]] {
            assert!(other.load_checkpoint(bad).is_err());
        }
        let mut trailing = cp.clone();
        trailing.push(0);
        assert!(other.load_checkpoint(&trailing).is_err());
    }

    #[test]
    fn writes_are_refused_on_the_read_only_path() {
        let l = funded();
        let dep = BankOp::Deposit {
            account: name("a"),
            amount: 1,
        };
        let r = crate::decode_result(&l.execute_read_only(0, &dep.encode()));
        assert_eq!(r, Ok(Err(BankError::NotReadOnly)));
        let r = crate::decode_result(&l.execute_read_only(0, b"junk"));
        assert_eq!(r, Ok(Err(BankError::Malformed)));
    }
}
