//! What the handlers share: the replies that refuse arguments (Redis' error texts) and readers
//! of the arguments many commands take (integers, counts, expiry times, blocking timeouts).

use crate::commands::call::{Call, Plan, Render};
use crate::Resp;
use plumb_kv::{parse_integer, KvOp};

pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const ERR_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

pub(super) fn err(text: impl Into<String>) -> Plan {
    Plan::Reply(Resp::Error(text.into()))
}

pub(super) fn reject(text: impl Into<String>) -> Plan {
    Plan::Reject(Resp::Error(text.into()))
}

fn arity_text(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Wrong number of arguments for the command table (or a subcommand's): refused before it
/// runs, as Redis does, so it fails a transaction it is queued in.
pub(super) fn arity_error(name: &str) -> Plan {
    reject(arity_text(name))
}

/// Wrong number of arguments found by the command itself (an odd `MSET`): in Redis an error
/// the command returns when it runs, inside `EXEC` too.
pub(super) fn arity_error_at_run(name: &str) -> Plan {
    err(arity_text(name))
}

pub(super) fn syntax_error() -> Plan {
    err(ERR_SYNTAX)
}

pub(super) fn not_integer() -> Plan {
    err(ERR_NOT_INTEGER)
}

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// At most `n` bytes of `bytes`, as text.
pub(super) fn text_prefix(bytes: &[u8], n: usize) -> String {
    text(&bytes[..bytes.len().min(n)])
}

/// Redis' reply to an unknown command: the name and the start of its arguments.
pub(super) fn unknown_command(args: &[Vec<u8>]) -> Plan {
    let name = args
        .first()
        .map(|n| text_prefix(n, 128))
        .unwrap_or_default();
    let mut shown = String::new();
    for arg in args.iter().skip(1) {
        if shown.len() >= 128 {
            break;
        }
        let room = 128 - shown.len();
        shown.push_str(&format!("'{}' ", text_prefix(arg, room)));
    }
    reject(format!(
        "ERR unknown command '{name}', with args beginning with: {shown}"
    ))
}

pub(super) fn unknown_subcommand(sub: &[u8], command: &str) -> Plan {
    reject(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        text_prefix(sub, 128),
        command.to_ascii_uppercase()
    ))
}

pub(super) fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// The value paired with the word `arg` is, case-insensitively; `None` if it is none of them.
pub(super) fn keyword<T: Copy>(arg: &[u8], words: &[(&str, T)]) -> Option<T> {
    words
        .iter()
        .find(|(word, _)| is(arg, word))
        .map(|&(_, value)| value)
}

pub(super) fn int_arg(arg: &[u8]) -> Option<i64> {
    parse_integer(arg)
}

pub(super) fn submit(op: KvOp, render: Render) -> Plan {
    let read_only = !op.is_mutating();
    Plan::Submit {
        op,
        read_only,
        render,
    }
}

/// Plans `KEY a b` where `a` and `b` are the ends of a range (`LRANGE key start stop`,
/// `ZCOUNT key min max`, ...): each read by `parse`, `error` the reply where either is not
/// one, and `op` the operation on the key and the range.
pub(super) fn key_range<B>(
    c: &Call,
    parse: fn(&[u8]) -> Option<B>,
    error: &'static str,
    op: fn(Vec<u8>, B, B) -> KvOp,
) -> Plan {
    match range_ends(&c.args[2], &c.args[3], parse) {
        Some((from, to)) => submit(op(c.key(), from, to), Render::Plain),
        None => err(error),
    }
}

/// Both ends of a range, each read by `parse`: `None` where either is not one.
pub(super) fn range_ends<B>(
    from: &[u8],
    to: &[u8],
    parse: fn(&[u8]) -> Option<B>,
) -> Option<(B, B)> {
    Some((parse(from)?, parse(to)?))
}

/// [`key_range`] by position: `start stop` integers.
pub(super) fn index_range(c: &Call, op: fn(Vec<u8>, i64, i64) -> KvOp) -> Plan {
    key_range(c, int_arg, ERR_NOT_INTEGER, op)
}

/// The count of `LPOP`, `RPOP`, `SPOP`, `ZPOPMIN`, `ZPOPMAX`, if given: a non-negative
/// integer, or the error text to reply with.
pub(super) fn pop_count(arg: Option<&Vec<u8>>) -> Result<Option<u64>, &'static str> {
    match arg {
        None => Ok(None),
        Some(n) => match int_arg(n).and_then(|n| u64::try_from(n).ok()) {
            Some(n) => Ok(Some(n)),
            None => Err(ERR_NOT_POSITIVE),
        },
    }
}

/// The count of `SRANDMEMBER`, `HRANDFIELD`, `ZRANDMEMBER`, if given, or the error text to
/// reply with.
pub(super) fn random_count(arg: Option<&Vec<u8>>) -> Result<Option<i64>, &'static str> {
    match arg.map(|c| int_arg(c)) {
        None => Ok(None),
        // Bounded: the picks are made on every replica, repeats and all.
        Some(Some(n)) if n.unsigned_abs() <= 1 << 20 => Ok(Some(n)),
        Some(Some(_)) => Err("ERR value is out of range"),
        Some(None) => Err(ERR_NOT_INTEGER),
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`, `ZRANDMEMBER key [count [WITHSCORES]]` (`with`):
/// the count and whether `with` follows it, or the error text to reply with.
pub(super) fn random_picks(
    args: &[Vec<u8>],
    with: &str,
) -> Result<(Option<i64>, bool), &'static str> {
    let with = match args.get(3) {
        None => false,
        Some(w) if args.len() == 4 => {
            if !is(w, with) {
                return Err(ERR_SYNTAX);
            }
            true
        }
        Some(_) => return Err(ERR_SYNTAX),
    };
    Ok((random_count(args.get(2))?, with))
}

/// A blocking command with its timeout argument: seconds, fractions allowed, 0 for ever.
pub(super) fn block(op: KvOp, timeout: &[u8]) -> Plan {
    let secs = match std::str::from_utf8(timeout)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
    {
        Some(s) if s.is_finite() => s,
        _ => return err("ERR timeout is not a float or out of range"),
    };
    if secs < 0.0 {
        return err("ERR timeout is negative");
    }
    let timeout = match std::time::Duration::try_from_secs_f64(secs) {
        Ok(d) if d.is_zero() => None,
        Ok(d) => Some(d),
        Err(_) => return err("ERR timeout is out of range"),
    };
    Plan::Block {
        op,
        render: Render::Plain,
        timeout,
    }
}

/// Whether an expiry `n` seconds (or, with `millis`, milliseconds) from now passes what Redis
/// can hold: `i64::MAX` milliseconds since the epoch, counting from `now_ms`.
pub(super) fn expire_overflows(n: i64, millis: bool, now_ms: i64) -> bool {
    let ms = if millis { Some(n) } else { n.checked_mul(1000) };
    ms.is_none_or(|ms| ms > i64::MAX - now_ms.max(0))
}

/// An expiry argument in micros, or the error text to reply with: a positive integer of
/// seconds (`millis` false) or milliseconds (`SET`, `SETEX`, `PSETEX`, `GETEX`).
pub(super) fn expire_micros(
    arg: &[u8],
    millis: bool,
    command: &str,
    now_ms: i64,
) -> Result<u64, String> {
    let n = int_arg(arg).ok_or_else(|| ERR_NOT_INTEGER.to_string())?;
    if n <= 0 || expire_overflows(n, millis, now_ms) {
        return Err(format!("ERR invalid expire time in '{command}' command"));
    }
    let per_unit: u64 = if millis { 1_000 } else { 1_000_000 };
    Ok(n.unsigned_abs().saturating_mul(per_unit))
}
