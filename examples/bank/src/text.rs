//! The ledger's command line, for humans: `transfer alice bob 25` in, `ok: transferred` out.
//! The bank's own client (and, later, its binary) reads commands with [`parse`] and prints
//! answers with [`show_result`]; the simulator's trace uses [`show_op`].

use crate::op::{decode_result, BankOp, BankResult, Reply};

/// The commands [`parse`] accepts, for a usage message.
pub const USAGE: &str = "open NAME | deposit NAME AMOUNT | withdraw NAME AMOUNT | \
transfer FROM TO AMOUNT | balance NAME | audit";

/// Parse one command line.
pub fn parse(line: &str) -> Result<BankOp, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let name = |w: &str| w.as_bytes().to_vec();
    let amount = |w: &str| {
        w.parse::<u64>()
            .map_err(|_| format!("{w:?} is not an amount (a whole number of units)"))
    };
    Ok(match words.as_slice() {
        ["open", a] => BankOp::Open { account: name(a) },
        ["deposit", a, n] => BankOp::Deposit {
            account: name(a),
            amount: amount(n)?,
        },
        ["withdraw", a, n] => BankOp::Withdraw {
            account: name(a),
            amount: amount(n)?,
        },
        ["transfer", from, to, n] => BankOp::Transfer {
            from: name(from),
            to: name(to),
            amount: amount(n)?,
        },
        ["balance", a] => BankOp::Balance { account: name(a) },
        ["audit"] => BankOp::Audit,
        _ => return Err(format!("unknown command {line:?}; one of: {USAGE}")),
    })
}

/// An operation as a command line (the inverse of [`parse`] for printable names).
pub fn show_op(op: &BankOp) -> String {
    let t = |b: &[u8]| b.escape_ascii().to_string();
    match op {
        BankOp::Open { account } => format!("open {}", t(account)),
        BankOp::Deposit { account, amount } => format!("deposit {} {amount}", t(account)),
        BankOp::Withdraw { account, amount } => format!("withdraw {} {amount}", t(account)),
        BankOp::Transfer { from, to, amount } => {
            format!("transfer {} {} {amount}", t(from), t(to))
        }
        BankOp::Balance { account } => format!("balance {}", t(account)),
        BankOp::Audit => "audit".to_string(),
    }
}

/// A result as one line: `ok: balance 25`, `refused: InsufficientFunds { balance: 3 }`.
pub fn show(result: &BankResult) -> String {
    match result {
        Ok(Reply::Opened) => "ok: opened".to_string(),
        Ok(Reply::Balance(b)) => format!("ok: balance {b}"),
        Ok(Reply::Transferred) => "ok: transferred".to_string(),
        Ok(Reply::Audit(a)) => format!(
            "ok: {} accounts hold {} (deposited {}, withdrawn {})",
            a.accounts, a.total, a.deposited, a.withdrawn
        ),
        Err(e) => format!("refused: {e:?}"),
    }
}

/// An encoded result as one line.
pub fn show_result(bytes: &[u8]) -> String {
    match decode_result(bytes) {
        Ok(r) => show(&r),
        Err(_) => format!("<{} undecodable bytes>", bytes.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        for line in [
            "open alice",
            "deposit alice 10",
            "withdraw alice 3",
            "transfer alice bob 7",
            "balance bob",
            "audit",
        ] {
            assert_eq!(show_op(&parse(line).unwrap()), line);
        }
        assert!(parse("deposit alice -1").is_err());
        assert!(parse("steal everything").is_err());
    }
}
