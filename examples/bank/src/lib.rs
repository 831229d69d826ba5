//! A bank ledger replicated by plumb: the example application of `docs/application-guide.md`,
//! written only against plumb's public surface.
//!
//! Accounts hold whole units (`u64`). Money enters only by [`BankOp::Deposit`] and leaves only by
//! [`BankOp::Withdraw`]; [`BankOp::Transfer`] moves it atomically and refuses an overdraft with a
//! typed error ([`BankError::InsufficientFunds`]). So the ledger's invariant, checked by the
//! simulator on every correct replica and on the reference replay, is *conservation*: the sum of
//! all balances equals everything deposited minus everything withdrawn. [`BankOp::Balance`] and
//! [`BankOp::Audit`] (the total supply with the deposit and withdrawal totals) are read-only.
//!
//! Files: `op.rs` (operations, results, their encoding), `ledger.rs` (the state and the
//! [`plumb_app::Application`] implementation), `text.rs` (a command line for humans and the
//! trace), `model.rs` (the sequential model for the linearizability checker), `sim.rs` (the
//! ledger under the simulator, with its invariants).

mod ledger;
pub mod model;
mod op;
pub mod sim;
pub mod text;

pub use ledger::Ledger;
pub use op::{
    decode_result, encode_result, Audit, BankError, BankOp, BankResult, Reply, MAX_ACCOUNTS,
    MAX_NAME_LEN,
};
