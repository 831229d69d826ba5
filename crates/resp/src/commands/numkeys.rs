//! Arguments that count their keys, `numkeys key ...`: the multi-key pops (`LMPOP`, `ZMPOP`
//! and their blocking forms) and `SINTERCARD`/`ZINTERCARD`.

use crate::commands::args::{block, err, int_arg, is, submit, syntax_error, ERR_SYNTAX};
use crate::commands::call::{Call, Plan, Render};
use plumb_kv::KvOp;

/// `numkeys key ... ` from `args[at]` on: the keys and the index after them, or the error's
/// text; `too_many` is the text for a count past the arguments (Redis' differ by command).
fn numkeys(
    args: &[Vec<u8>],
    at: usize,
    too_many: &'static str,
) -> Result<(Vec<Vec<u8>>, usize), &'static str> {
    let n = match int_arg(&args[at]) {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => return Err("ERR numkeys should be greater than 0"),
    };
    let first = at + 1;
    if n > args.len().saturating_sub(first) {
        return Err(too_many);
    }
    Ok((args[first..first + n].to_vec(), first + n))
}

/// Plans `LMPOP`/`ZMPOP numkeys key ... LEFT|RIGHT|MIN|MAX [COUNT n]`, or with `blocking`
/// `BLMPOP`/`BZMPOP`, which take their timeout before `numkeys`: `op` is the pop of the keys,
/// the side as `side` reads it and the count.
pub(super) fn plan_mpop<S>(
    c: &Call,
    blocking: bool,
    side: fn(&[u8]) -> Option<S>,
    op: fn(Vec<Vec<u8>>, S, u64) -> KvOp,
) -> Plan {
    let at = if blocking { 2 } else { 1 };
    match mpop_args(c.args, at, side) {
        Ok((keys, side, count)) if blocking => block(op(keys, side, count), &c.args[1]),
        Ok((keys, side, count)) => submit(op(keys, side, count), Render::Plain),
        Err(text) => err(text),
    }
}

/// `numkeys key ... LEFT|RIGHT|MIN|MAX [COUNT n]` from `args[at]` on: the keys, the side as
/// `side` reads it (`None`: a syntax error) and the count (1 if not given); or the error text
/// to reply with.
fn mpop_args<S>(
    args: &[Vec<u8>],
    at: usize,
    side: impl Fn(&[u8]) -> Option<S>,
) -> Result<(Vec<Vec<u8>>, S, u64), &'static str> {
    let (keys, mut i) = numkeys(args, at, ERR_SYNTAX)?;
    let Some(side) = args.get(i).and_then(|s| side(s)) else {
        return Err(ERR_SYNTAX);
    };
    i += 1;
    let mut count = None;
    while i < args.len() {
        if !is(&args[i], "count") || count.is_some() || i + 1 >= args.len() {
            return Err(ERR_SYNTAX);
        }
        match int_arg(&args[i + 1]) {
            Some(n) if n > 0 => count = u64::try_from(n).ok(),
            _ => return Err("ERR count should be greater than 0"),
        }
        i += 2;
    }
    Ok((keys, side, count.unwrap_or(1)))
}

/// `SINTERCARD`/`ZINTERCARD numkeys key ... [LIMIT n]`.
pub(super) fn intercard(args: &[Vec<u8>], sorted: bool) -> Plan {
    let too_many = "ERR Number of keys can't be greater than number of args";
    let (keys, mut i) = match numkeys(args, 1, too_many) {
        Ok(found) => found,
        Err(text) => return err(text),
    };
    let mut limit = 0;
    while i < args.len() {
        if !is(&args[i], "limit") || i + 1 >= args.len() {
            return syntax_error();
        }
        match int_arg(&args[i + 1]) {
            Some(n) if n >= 0 => limit = n.unsigned_abs(),
            _ => return err("ERR LIMIT can't be negative"),
        }
        i += 2;
    }
    submit(
        KvOp::InterCard {
            keys,
            limit,
            sorted,
        },
        Render::Plain,
    )
}
