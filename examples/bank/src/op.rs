//! The ledger's operations and results, and their wire encoding: one version byte, then
//! postcard. Decoding is total and refuses trailing bytes, so one operation has one encoding
//! and hostile bytes are an error, never a panic.

use plumb_app::codec;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The longest account name accepted (bytes).
pub const MAX_NAME_LEN: usize = 64;

/// The most accounts a ledger holds: the state, and so every checkpoint, stays bounded whatever
/// clients send.
pub const MAX_ACCOUNTS: usize = 100_000;

const OP_VERSION: u8 = 1;
const RESULT_VERSION: u8 = 1;

/// What a client asks of the ledger. Account names are bytes (`alice`, `k0`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BankOp {
    /// Open an empty account. Replies [`Reply::Opened`].
    Open { account: Vec<u8> },
    /// Money enters the ledger. Replies the new [`Reply::Balance`].
    Deposit { account: Vec<u8>, amount: u64 },
    /// Money leaves the ledger; refused beyond the balance. Replies the new [`Reply::Balance`].
    Withdraw { account: Vec<u8>, amount: u64 },
    /// Move money between two accounts, atomically; refused beyond the payer's balance.
    /// Replies [`Reply::Transferred`].
    Transfer {
        from: Vec<u8>,
        to: Vec<u8>,
        amount: u64,
    },
    /// Read-only: an account's balance.
    Balance { account: Vec<u8> },
    /// Read-only: the total supply, with everything deposited and withdrawn.
    Audit,
}

impl BankOp {
    /// Whether the operation never changes the ledger (it may go down the read-only path).
    pub fn is_read_only(&self) -> bool {
        matches!(self, BankOp::Balance { .. } | BankOp::Audit)
    }

    pub fn encode(&self) -> Vec<u8> {
        encode_versioned(OP_VERSION, self)
    }

    pub fn decode(bytes: &[u8]) -> Result<BankOp, BankError> {
        decode_versioned(OP_VERSION, bytes)
    }
}

/// The audited totals. `total == deposited - withdrawn` always (conservation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Audit {
    pub accounts: u64,
    /// Sum of all balances.
    pub total: u64,
    /// Everything ever deposited (and withdrawn): `u128`, so that no history overflows them.
    pub deposited: u128,
    pub withdrawn: u128,
}

/// A successful operation's answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reply {
    Opened,
    Balance(u64),
    Transferred,
    Audit(Audit),
}

/// Why an operation was refused. A refused operation changes nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BankError {
    NoSuchAccount,
    AlreadyOpen,
    /// The payer's balance, which the amount exceeds.
    InsufficientFunds {
        balance: u64,
    },
    /// A transfer from an account to itself.
    SameAccount,
    /// An amount of zero.
    ZeroAmount,
    /// The deposit would take the total supply beyond `u64::MAX`.
    Overflow,
    NameTooLong,
    TooManyAccounts,
    /// A mutating operation sent down the read-only path.
    NotReadOnly,
    /// The bytes are not an operation (or not a result) of this version.
    Malformed,
}

/// What every operation returns.
pub type BankResult = Result<Reply, BankError>;

pub fn encode_result(result: &BankResult) -> Vec<u8> {
    encode_versioned(RESULT_VERSION, result)
}

pub fn decode_result(bytes: &[u8]) -> Result<BankResult, BankError> {
    decode_versioned(RESULT_VERSION, bytes)
}

fn encode_versioned<T: Serialize>(version: u8, value: &T) -> Vec<u8> {
    codec::encode_versioned(version, value)
}

/// Bad bytes are one error to the ledger's clients, whatever was wrong with them.
fn decode_versioned<T: DeserializeOwned>(version: u8, bytes: &[u8]) -> Result<T, BankError> {
    codec::decode_versioned(version, bytes).map_err(|_| BankError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip_and_garbage_is_malformed() {
        let ops = [
            BankOp::Open {
                account: b"a".to_vec(),
            },
            BankOp::Transfer {
                from: b"a".to_vec(),
                to: b"b".to_vec(),
                amount: u64::MAX,
            },
            BankOp::Audit,
        ];
        for op in ops {
            assert_eq!(BankOp::decode(&op.encode()), Ok(op.clone()));
            let mut trailing = op.encode();
            trailing.push(0);
            assert_eq!(BankOp::decode(&trailing), Err(BankError::Malformed));
        }
        for garbage in [
            &b""[..],
            b"\x02\x00",
            b"\x01\xff\xff\xff\xff\xff",
            b"\x01\x03\xff",
        ] {
            assert_eq!(BankOp::decode(garbage), Err(BankError::Malformed));
        }
        let r: BankResult = Err(BankError::InsufficientFunds { balance: 3 });
        assert_eq!(decode_result(&encode_result(&r)), Ok(r));
    }
}
