//! String commands: `GET`, `SET` and its forms, counters, ranges, bits, `LCS`.

use crate::commands::args::{
    arity_error_at_run, err, expire_micros, index_range, int_arg, is, not_integer, submit,
    syntax_error,
};
use crate::commands::call::{Call, Plan, Render};
use plumb_kv::{KvOp, Score, SetCondition, SetExpiry, ERR_NOT_FLOAT};

pub(super) fn get(c: &Call) -> Plan {
    submit(KvOp::Get { key: c.key() }, Render::Plain)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|KEEPTTL]`, parsed as Redis 7.0 does.
pub(super) fn set(c: &Call) -> Plan {
    let (args, now_ms) = (c.args, c.info.now_ms);
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(Unit, &[u8])> = None;
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        let next = args.get(j + 1);
        let unit = if is(opt, "ex") {
            Some(Unit::Ex)
        } else if is(opt, "px") {
            Some(Unit::Px)
        } else if is(opt, "exat") {
            Some(Unit::ExAt)
        } else if is(opt, "pxat") {
            Some(Unit::PxAt)
        } else {
            None
        };
        if is(opt, "nx") && !xx {
            nx = true;
        } else if is(opt, "xx") && !nx {
            xx = true;
        } else if is(opt, "get") {
            get = true;
        } else if is(opt, "keepttl") && expire.is_none() {
            keepttl = true;
        } else if let (Some(unit), Some(next)) = (unit, next) {
            // The same unit may repeat (the last wins); two different ones may not.
            if keepttl || expire.is_some_and(|(u, _)| u != unit) {
                return syntax_error();
            }
            expire = Some((unit, next));
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    // EXAT and PXAT are absolute: agreed time is the primaries' wall clock.
    let (expire, at) = match expire {
        None => (None, None),
        Some((unit @ (Unit::ExAt | Unit::PxAt), arg)) => {
            match expire_micros(arg, unit == Unit::PxAt, "set", 0) {
                Ok(micros) => (None, Some(micros)),
                Err(text) => return err(text),
            }
        }
        Some((unit, arg)) => match expire_micros(arg, unit == Unit::Px, "set", now_ms) {
            Ok(micros) => (Some(micros), None),
            Err(text) => return err(text),
        },
    };
    let (key, value) = (args[1].clone(), args[2].clone());
    if !nx && !xx && !get && !keepttl && at.is_none() {
        return submit(KvOp::Set { key, value, expire }, Render::Plain);
    }
    let op = KvOp::SetExtended {
        key,
        value,
        expire: match (keepttl, expire, at) {
            (true, _, _) => SetExpiry::Keep,
            (false, _, Some(at)) => SetExpiry::At(at),
            (false, Some(micros), None) => SetExpiry::After(micros),
            (false, None, None) => SetExpiry::Clear,
        },
        condition: match (nx, xx) {
            (true, _) => SetCondition::IfAbsent,
            (_, true) => SetCondition::IfPresent,
            _ => SetCondition::Always,
        },
        get,
    };
    submit(op, if get { Render::Plain } else { Render::OkOrNil })
}

pub(super) fn setnx(c: &Call) -> Plan {
    submit(
        KvOp::SetExtended {
            key: c.key(),
            value: c.args[2].clone(),
            expire: SetExpiry::Clear,
            condition: SetCondition::IfAbsent,
            get: false,
        },
        Render::Plain,
    )
}

/// `SETEX key seconds value`.
pub(super) fn setex(c: &Call) -> Plan {
    set_expiring(c, false)
}

/// `PSETEX key millis value`.
pub(super) fn psetex(c: &Call) -> Plan {
    set_expiring(c, true)
}

fn set_expiring(c: &Call, millis: bool) -> Plan {
    match expire_micros(&c.args[2], millis, c.name, c.info.now_ms) {
        Ok(expire) => submit(
            KvOp::Set {
                key: c.key(),
                value: c.args[3].clone(),
                expire: Some(expire),
            },
            Render::Plain,
        ),
        Err(text) => err(text),
    }
}

pub(super) fn getset(c: &Call) -> Plan {
    submit(
        KvOp::SetExtended {
            key: c.key(),
            value: c.args[2].clone(),
            expire: SetExpiry::Clear,
            condition: SetCondition::Always,
            get: true,
        },
        Render::Plain,
    )
}

/// `GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]`.
pub(super) fn getex(c: &Call) -> Plan {
    let (args, now_ms) = (c.args, c.info.now_ms);
    let expire = match &args[2..] {
        [] => None,
        [opt] if is(opt, "persist") => Some(SetExpiry::Clear),
        [opt, n] => {
            let (millis, absolute) = if is(opt, "ex") {
                (false, false)
            } else if is(opt, "px") {
                (true, false)
            } else if is(opt, "exat") {
                (false, true)
            } else if is(opt, "pxat") {
                (true, true)
            } else {
                return syntax_error();
            };
            let base = if absolute { 0 } else { now_ms };
            match expire_micros(n, millis, "getex", base) {
                Ok(micros) if absolute => Some(SetExpiry::At(micros)),
                Ok(micros) => Some(SetExpiry::After(micros)),
                Err(text) => return err(text),
            }
        }
        _ => return syntax_error(),
    };
    submit(
        KvOp::GetEx {
            key: args[1].clone(),
            expire,
        },
        Render::Plain,
    )
}

pub(super) fn getdel(c: &Call) -> Plan {
    submit(KvOp::GetDel { key: c.key() }, Render::Plain)
}

pub(super) fn incr(c: &Call) -> Plan {
    increment(c, 1)
}

pub(super) fn decr(c: &Call) -> Plan {
    increment(c, -1)
}

pub(super) fn incrby(c: &Call) -> Plan {
    match int_arg(&c.args[2]) {
        Some(delta) => increment(c, delta),
        None => not_integer(),
    }
}

pub(super) fn decrby(c: &Call) -> Plan {
    match int_arg(&c.args[2]) {
        Some(i64::MIN) => err("ERR decrement would overflow"),
        Some(n) => increment(c, -n),
        None => not_integer(),
    }
}

fn increment(c: &Call, delta: i64) -> Plan {
    submit(
        KvOp::Increment {
            key: c.key(),
            delta,
        },
        Render::Plain,
    )
}

pub(super) fn incrbyfloat(c: &Call) -> Plan {
    let Some(delta) = Score::parse(&c.args[2]) else {
        return err(ERR_NOT_FLOAT);
    };
    // Redis checks only the sum (the store does), not the increment as HINCRBYFLOAT does.
    submit(
        KvOp::IncrByFloat {
            key: c.key(),
            delta,
        },
        Render::Plain,
    )
}

pub(super) fn append(c: &Call) -> Plan {
    submit(
        KvOp::Append {
            key: c.key(),
            value: c.args[2].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn strlen(c: &Call) -> Plan {
    submit(KvOp::StrLen { key: c.key() }, Render::Plain)
}

/// `GETRANGE key start end`, and `SUBSTR`, its old name.
pub(super) fn getrange(c: &Call) -> Plan {
    index_range(c, |key, start, end| KvOp::GetRange { key, start, end })
}

pub(super) fn setrange(c: &Call) -> Plan {
    match int_arg(&c.args[2]) {
        Some(offset) if offset >= 0 => submit(
            KvOp::SetRange {
                key: c.key(),
                offset: offset.unsigned_abs(),
                value: c.args[3].clone(),
            },
            Render::Plain,
        ),
        Some(_) => err("ERR offset is out of range"),
        None => not_integer(),
    }
}

pub(super) fn mget(c: &Call) -> Plan {
    submit(KvOp::MGet { keys: c.rest(1) }, Render::Plain)
}

pub(super) fn mset(c: &Call) -> Plan {
    set_many(c, false)
}

pub(super) fn msetnx(c: &Call) -> Plan {
    set_many(c, true)
}

/// `MSET key value ...`, and with `nx` `MSETNX`.
fn set_many(c: &Call, nx: bool) -> Plan {
    if c.args.len().is_multiple_of(2) {
        return arity_error_at_run(c.name);
    }
    let pairs = c.args[1..]
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let op = if nx {
        KvOp::MSetNx { pairs }
    } else {
        KvOp::MSet { pairs }
    };
    submit(op, Render::Plain)
}

pub(super) fn getbit(c: &Call) -> Plan {
    match bit_offset(&c.args[2]) {
        Ok(offset) => submit(
            KvOp::GetBit {
                key: c.key(),
                offset,
            },
            Render::Plain,
        ),
        Err(text) => err(text),
    }
}

pub(super) fn setbit(c: &Call) -> Plan {
    let offset = match bit_offset(&c.args[2]) {
        Ok(offset) => offset,
        Err(text) => return err(text),
    };
    let bit = match c.args[3].as_slice() {
        b"0" => false,
        b"1" => true,
        _ => return err("ERR bit is not an integer or out of range"),
    };
    submit(
        KvOp::SetBit {
            key: c.key(),
            offset,
            bit,
        },
        Render::Plain,
    )
}

/// The offset of `GETBIT`/`SETBIT`, or the error text to reply with.
fn bit_offset(arg: &[u8]) -> Result<u64, &'static str> {
    // Redis' bound: offsets address a string of at most 512 MiB.
    match int_arg(arg) {
        Some(n) if (0..1 << 32).contains(&n) => Ok(n.unsigned_abs()),
        _ => Err("ERR bit offset is not an integer or out of range"),
    }
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`.
pub(super) fn lcs(c: &Call) -> Plan {
    let args = c.args;
    let (mut len_only, mut idx, mut min_match_len, mut with_match_len) = (false, false, 0, false);
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "len") {
            len_only = true;
        } else if is(&args[i], "idx") {
            idx = true;
        } else if is(&args[i], "withmatchlen") {
            with_match_len = true;
        } else if is(&args[i], "minmatchlen") && i + 1 < args.len() {
            match int_arg(&args[i + 1]) {
                // Redis takes a negative length as 0.
                Some(n) => min_match_len = u64::try_from(n).unwrap_or(0),
                None => return not_integer(),
            }
            i += 1;
        } else {
            return syntax_error();
        }
        i += 1;
    }
    if len_only && idx {
        return err("ERR If you want both the length and indexes, please just use IDX.");
    }
    submit(
        KvOp::Lcs {
            a: args[1].clone(),
            b: args[2].clone(),
            len_only,
            idx,
            min_match_len,
            with_match_len,
        },
        Render::Plain,
    )
}
