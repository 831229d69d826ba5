//! Commands on keys whatever their kind: `DEL`, `EXISTS`, expiry and time to live, `TYPE`,
//! `RENAME`, `COPY`, `OBJECT`, and finding keys (`KEYS`, `SCAN`, `RANDOMKEY`).

use crate::commands::args::{
    arity_error, err, expire_overflows, int_arg, is, not_integer, submit, syntax_error, text,
    unknown_subcommand,
};
use crate::commands::call::{Call, Plan, Render};
use plumb_kv::{CollectionKind, ExpireCondition, KvOp};

/// `DEL key ...`, and `UNLINK`: Redis frees an unlinked value in the background, which
/// changes no reply, so here it is `DEL`.
pub(super) fn del(c: &Call) -> Plan {
    submit(KvOp::DeleteMany { keys: c.rest(1) }, Render::Plain)
}

pub(super) fn exists(c: &Call) -> Plan {
    submit(KvOp::Exists { keys: c.rest(1) }, Render::Plain)
}

pub(super) fn expire(c: &Call) -> Plan {
    plan_expire(c, false, false)
}

pub(super) fn pexpire(c: &Call) -> Plan {
    plan_expire(c, true, false)
}

pub(super) fn expireat(c: &Call) -> Plan {
    plan_expire(c, false, true)
}

pub(super) fn pexpireat(c: &Call) -> Plan {
    plan_expire(c, true, true)
}

/// `EXPIRE key seconds [NX|XX|GT|LT]...`, `PEXPIRE key millis ...` (`millis`), and with
/// `absolute` their `...AT` forms, which count from the epoch.
fn plan_expire(c: &Call, millis: bool, absolute: bool) -> Plan {
    let (args, command, now_ms) = (c.args, c.name, c.info.now_ms);
    let mut cond = ExpireCondition::default();
    for opt in &args[3..] {
        if is(opt, "nx") {
            cond.nx = true;
        } else if is(opt, "xx") {
            cond.xx = true;
        } else if is(opt, "gt") {
            cond.gt = true;
        } else if is(opt, "lt") {
            cond.lt = true;
        } else {
            return err(format!("ERR Unsupported option {}", text(opt)));
        }
    }
    if cond.nx && (cond.xx || cond.gt || cond.lt) {
        return err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if cond.gt && cond.lt {
        return err("ERR GT and LT options at the same time are not compatible");
    }
    let Some(n) = int_arg(&args[2]) else {
        return not_integer();
    };
    // EXPIREAT and PEXPIREAT count from the epoch: agreed time is the primaries' wall clock.
    let now_ms = if absolute { 0 } else { now_ms };
    // Redis' checks: seconds that overflow as milliseconds, then an absolute time past
    // i64::MAX milliseconds (a negative time expires the key at once, whatever its size).
    let too_far = if millis {
        n > 0 && expire_overflows(n, true, now_ms)
    } else {
        !(i64::MIN / 1000..=i64::MAX / 1000).contains(&n)
            || (n > 0 && expire_overflows(n, false, now_ms))
    };
    if too_far {
        return err(format!("ERR invalid expire time in '{command}' command"));
    }
    let micros = n.saturating_mul(if millis { 1_000 } else { 1_000_000 });
    let key = args[1].clone();
    let op = if absolute {
        KvOp::ExpireAt {
            key,
            at: micros,
            condition: cond,
        }
    } else {
        KvOp::Expire {
            key,
            after: micros,
            condition: cond,
        }
    };
    submit(op, Render::Plain)
}

pub(super) fn expiretime(c: &Call) -> Plan {
    expire_time(c, false)
}

pub(super) fn pexpiretime(c: &Call) -> Plan {
    expire_time(c, true)
}

fn expire_time(c: &Call, millis: bool) -> Plan {
    submit(KvOp::ExpireTime { key: c.key() }, Render::Ttl { millis })
}

pub(super) fn ttl(c: &Call) -> Plan {
    time_to_live(c, false)
}

pub(super) fn pttl(c: &Call) -> Plan {
    time_to_live(c, true)
}

fn time_to_live(c: &Call, millis: bool) -> Plan {
    Plan::Submit {
        op: KvOp::Ttl { key: c.key() },
        // Remaining time is relative to agreed time, which only the ordered path has.
        read_only: false,
        render: Render::Ttl { millis },
    }
}

pub(super) fn persist(c: &Call) -> Plan {
    submit(KvOp::Persist { key: c.key() }, Render::Plain)
}

/// `TYPE key`.
pub(super) fn key_type(c: &Call) -> Plan {
    submit(KvOp::Type { key: c.key() }, Render::Status)
}

pub(super) fn rename(c: &Call) -> Plan {
    plan_rename(c, false)
}

pub(super) fn renamenx(c: &Call) -> Plan {
    plan_rename(c, true)
}

fn plan_rename(c: &Call, nx: bool) -> Plan {
    submit(
        KvOp::Rename {
            from: c.key(),
            to: c.args[2].clone(),
            nx,
        },
        Render::Plain,
    )
}

/// `COPY source destination [DB n] [REPLACE]`: only database 0 exists.
pub(super) fn copy(c: &Call) -> Plan {
    let args = c.args;
    if args[1] == args[2] {
        return err("ERR source and destination objects are the same");
    }
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "replace") {
            replace = true;
            i += 1;
        } else if is(&args[i], "db") && i + 1 < args.len() {
            match int_arg(&args[i + 1]) {
                Some(0) => {}
                Some(n) if (0..16).contains(&n) => {
                    return err("ERR plumb has one database: COPY ... DB takes 0 only")
                }
                Some(_) => return err("ERR DB index is out of range"),
                None => return not_integer(),
            }
            i += 2;
        } else {
            return syntax_error();
        }
    }
    submit(
        KvOp::Copy {
            from: args[1].clone(),
            to: args[2].clone(),
            replace,
        },
        Render::Plain,
    )
}

/// `OBJECT REFCOUNT|ENCODING key`, answered from the key's kind ([`KvOp::Type`]).
pub(super) fn object(c: &Call) -> Plan {
    let args = c.args;
    let sub = &args[1];
    let render = if is(sub, "refcount") {
        Render::ObjectRefcount
    } else if is(sub, "encoding") {
        Render::ObjectEncoding
    } else if is(sub, "freq") {
        return err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    } else if is(sub, "idletime") {
        return err(
            "ERR plumb does not track when a key was last read: OBJECT IDLETIME is not supported",
        );
    } else {
        return unknown_subcommand(sub, "object");
    };
    if args.len() != 3 {
        return arity_error(&format!("object|{}", text(sub).to_ascii_lowercase()));
    }
    submit(
        KvOp::Type {
            key: args[2].clone(),
        },
        render,
    )
}

pub(super) fn keys(c: &Call) -> Plan {
    submit(KvOp::KeysMatching { pattern: c.key() }, Render::Plain)
}

pub(super) fn randomkey(_: &Call) -> Plan {
    submit(KvOp::RandomKey, Render::Plain)
}

pub(super) fn scan(c: &Call) -> Plan {
    plan_scan(&c.args[1..], None)
}

/// `SCAN cursor [MATCH p] [COUNT n] [TYPE t]`, or with `collection` the `HSCAN`/`SSCAN`/
/// `ZSCAN` of that key (no `TYPE`). `args` starts at the cursor.
pub(super) fn plan_scan(args: &[Vec<u8>], collection: Option<(Vec<u8>, CollectionKind)>) -> Plan {
    let Some(cursor) = std::str::from_utf8(&args[0])
        .ok()
        .and_then(|c| c.parse::<u64>().ok())
    else {
        return err("ERR invalid cursor");
    };
    let (mut pattern, mut count, mut kind) = (None, 10, None);
    let mut options = args[1..].chunks(2);
    for option in options.by_ref() {
        let [name, value] = option else {
            return syntax_error();
        };
        if is(name, "match") {
            pattern = Some(value.clone());
        } else if is(name, "count") {
            match int_arg(value) {
                Some(n) if n >= 1 => count = n.unsigned_abs(),
                Some(_) => return syntax_error(),
                None => return not_integer(),
            }
        } else if is(name, "type") && collection.is_none() {
            kind = Some(value.clone());
        } else {
            return syntax_error();
        }
    }
    let op = match collection {
        None => KvOp::Scan {
            cursor,
            count,
            pattern,
            kind,
        },
        Some((key, of)) => KvOp::ScanCollection { key, of, pattern },
    };
    submit(op, Render::Plain)
}
