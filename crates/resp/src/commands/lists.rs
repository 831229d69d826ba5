//! List commands (`LPUSH`, `LPOP`, `LRANGE`, ...), with the blocking pops and moves.

use crate::commands::args::{
    arity_error_at_run, block, err, index_range, int_arg, is, keyword, not_integer, pop_count,
    submit, syntax_error, ERR_SYNTAX,
};
use crate::commands::call::{Call, Plan, Render};
use crate::commands::numkeys::plan_mpop;
use plumb_kv::{End, KvOp};

pub(super) fn lpush(c: &Call) -> Plan {
    push(c, End::Left)
}

pub(super) fn rpush(c: &Call) -> Plan {
    push(c, End::Right)
}

fn push(c: &Call, end: End) -> Plan {
    submit(
        KvOp::Push {
            key: c.key(),
            end,
            values: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn lpushx(c: &Call) -> Plan {
    push_existing(c, End::Left)
}

pub(super) fn rpushx(c: &Call) -> Plan {
    push_existing(c, End::Right)
}

fn push_existing(c: &Call, end: End) -> Plan {
    submit(
        KvOp::PushExisting {
            key: c.key(),
            end,
            values: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn lpop(c: &Call) -> Plan {
    pop(c, End::Left)
}

pub(super) fn rpop(c: &Call) -> Plan {
    pop(c, End::Right)
}

fn pop(c: &Call, end: End) -> Plan {
    if c.args.len() > 3 {
        return arity_error_at_run(c.name);
    }
    let count = match pop_count(c.args.get(2)) {
        Ok(count) => count,
        Err(text) => return err(text),
    };
    submit(
        KvOp::Pop {
            key: c.key(),
            end,
            count,
        },
        Render::Plain,
    )
}

pub(super) fn lrange(c: &Call) -> Plan {
    index_range(c, |key, start, stop| KvOp::LRange { key, start, stop })
}

pub(super) fn llen(c: &Call) -> Plan {
    submit(KvOp::LLen { key: c.key() }, Render::Plain)
}

pub(super) fn lindex(c: &Call) -> Plan {
    match int_arg(&c.args[2]) {
        Some(index) => submit(
            KvOp::LIndex {
                key: c.key(),
                index,
            },
            Render::Plain,
        ),
        None => not_integer(),
    }
}

pub(super) fn lset(c: &Call) -> Plan {
    match int_arg(&c.args[2]) {
        Some(index) => submit(
            KvOp::LSet {
                key: c.key(),
                index,
                value: c.args[3].clone(),
            },
            Render::Plain,
        ),
        None => not_integer(),
    }
}

pub(super) fn ltrim(c: &Call) -> Plan {
    index_range(c, |key, start, stop| KvOp::LTrim { key, start, stop })
}

pub(super) fn lrem(c: &Call) -> Plan {
    match int_arg(&c.args[2]) {
        Some(count) => submit(
            KvOp::LRem {
                key: c.key(),
                count,
                element: c.args[3].clone(),
            },
            Render::Plain,
        ),
        None => not_integer(),
    }
}

pub(super) fn linsert(c: &Call) -> Plan {
    let Some(before) = keyword(&c.args[2], &[("before", true), ("after", false)]) else {
        return syntax_error();
    };
    submit(
        KvOp::LInsert {
            key: c.key(),
            before,
            pivot: c.args[3].clone(),
            element: c.args[4].clone(),
        },
        Render::Plain,
    )
}

/// `LPOS key element [RANK r] [COUNT c] [MAXLEN m]`.
pub(super) fn lpos(c: &Call) -> Plan {
    let args = c.args;
    let (mut rank, mut count, mut maxlen) = (1, None, 0);
    for option in args[3..].chunks(2) {
        let [name, value] = option else {
            return syntax_error();
        };
        let Some(n) = int_arg(value) else {
            return not_integer();
        };
        if is(name, "rank") {
            if n == 0 {
                return err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
            }
            if n == i64::MIN {
                return err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
            }
            rank = n;
        } else if is(name, "count") {
            if n < 0 {
                return err("ERR COUNT can't be negative");
            }
            count = Some(n.unsigned_abs());
        } else if is(name, "maxlen") {
            if n < 0 {
                return err("ERR MAXLEN can't be negative");
            }
            maxlen = n.unsigned_abs();
        } else {
            return syntax_error();
        }
    }
    submit(
        KvOp::LPos {
            key: args[1].clone(),
            element: args[2].clone(),
            rank,
            count,
            maxlen,
        },
        Render::Plain,
    )
}

/// `LEFT` or `RIGHT`.
fn end_arg(arg: &[u8]) -> Option<End> {
    keyword(arg, &[("left", End::Left), ("right", End::Right)])
}

pub(super) fn lmove(c: &Call) -> Plan {
    match move_between_ends(c) {
        Ok(op) => submit(op, Render::Plain),
        Err(text) => err(text),
    }
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`.
pub(super) fn blmove(c: &Call) -> Plan {
    match move_between_ends(c) {
        Ok(op) => block(op, &c.args[5]),
        Err(text) => err(text),
    }
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`'s move, or the error text to reply with.
fn move_between_ends(c: &Call) -> Result<KvOp, &'static str> {
    let (Some(from_end), Some(to_end)) = (end_arg(&c.args[3]), end_arg(&c.args[4])) else {
        return Err(ERR_SYNTAX);
    };
    Ok(KvOp::Move {
        from: c.key(),
        to: c.args[2].clone(),
        from_end,
        to_end,
    })
}

pub(super) fn rpoplpush(c: &Call) -> Plan {
    submit(right_to_left(c), Render::Plain)
}

/// `BRPOPLPUSH source destination timeout`.
pub(super) fn brpoplpush(c: &Call) -> Plan {
    block(right_to_left(c), &c.args[3])
}

fn right_to_left(c: &Call) -> KvOp {
    KvOp::Move {
        from: c.key(),
        to: c.args[2].clone(),
        from_end: End::Right,
        to_end: End::Left,
    }
}

/// `BLPOP key ... timeout`.
pub(super) fn blpop(c: &Call) -> Plan {
    pop_first(c, End::Left)
}

/// `BRPOP key ... timeout`.
pub(super) fn brpop(c: &Call) -> Plan {
    pop_first(c, End::Right)
}

fn pop_first(c: &Call, end: End) -> Plan {
    let (last, keys) = c.args[1..].split_last().unwrap_or((&c.args[0], &[]));
    block(
        KvOp::PopFirst {
            keys: keys.to_vec(),
            end,
        },
        last,
    )
}

/// `LMPOP numkeys key ... LEFT|RIGHT [COUNT n]`.
pub(super) fn lmpop(c: &Call) -> Plan {
    plan_mpop(c, false, end_arg, list_mpop)
}

/// `BLMPOP timeout numkeys key ... LEFT|RIGHT [COUNT n]`.
pub(super) fn blmpop(c: &Call) -> Plan {
    plan_mpop(c, true, end_arg, list_mpop)
}

fn list_mpop(keys: Vec<Vec<u8>>, end: End, count: u64) -> KvOp {
    KvOp::ListMPop { keys, end, count }
}
