//! Hash commands (`HSET`, `HGET`, ...).

use crate::commands::args::{arity_error_at_run, err, int_arg, not_integer, random_picks, submit};
use crate::commands::call::{Call, Plan, Render};
use crate::commands::keys::plan_scan;
use plumb_kv::{CollectionKind, KvOp, Score, ERR_NOT_FLOAT};

pub(super) fn hset(c: &Call) -> Plan {
    set_fields(c, Render::Plain)
}

/// `HMSET`: `HSET` that replies `+OK`.
pub(super) fn hmset(c: &Call) -> Plan {
    set_fields(c, Render::Ok)
}

fn set_fields(c: &Call, render: Render) -> Plan {
    if !c.args.len().is_multiple_of(2) {
        return arity_error_at_run(c.name);
    }
    let fields = c.args[2..]
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    submit(
        KvOp::HSet {
            key: c.key(),
            fields,
        },
        render,
    )
}

pub(super) fn hsetnx(c: &Call) -> Plan {
    submit(
        KvOp::HSetNx {
            key: c.key(),
            field: c.args[2].clone(),
            value: c.args[3].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn hget(c: &Call) -> Plan {
    submit(
        KvOp::HGet {
            key: c.key(),
            field: c.args[2].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn hmget(c: &Call) -> Plan {
    submit(
        KvOp::HMGet {
            key: c.key(),
            fields: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn hdel(c: &Call) -> Plan {
    submit(
        KvOp::HDel {
            key: c.key(),
            fields: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn hgetall(c: &Call) -> Plan {
    submit(KvOp::HGetAll { key: c.key() }, Render::Map)
}

pub(super) fn hexists(c: &Call) -> Plan {
    submit(
        KvOp::HExists {
            key: c.key(),
            field: c.args[2].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn hlen(c: &Call) -> Plan {
    submit(KvOp::HLen { key: c.key() }, Render::Plain)
}

pub(super) fn hkeys(c: &Call) -> Plan {
    keys_or_values(c, false)
}

pub(super) fn hvals(c: &Call) -> Plan {
    keys_or_values(c, true)
}

fn keys_or_values(c: &Call, values: bool) -> Plan {
    submit(
        KvOp::HKeys {
            key: c.key(),
            values,
        },
        Render::Plain,
    )
}

pub(super) fn hstrlen(c: &Call) -> Plan {
    submit(
        KvOp::HStrLen {
            key: c.key(),
            field: c.args[2].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn hincrby(c: &Call) -> Plan {
    match int_arg(&c.args[3]) {
        Some(delta) => submit(
            KvOp::HIncrBy {
                key: c.key(),
                field: c.args[2].clone(),
                delta,
            },
            Render::Plain,
        ),
        None => not_integer(),
    }
}

pub(super) fn hincrbyfloat(c: &Call) -> Plan {
    let Some(delta) = Score::parse(&c.args[3]) else {
        return err(ERR_NOT_FLOAT);
    };
    // Redis checks HINCRBYFLOAT's increment itself; INCRBYFLOAT only the sum.
    if delta.get().is_infinite() {
        return err("ERR value is NaN or Infinity");
    }
    submit(
        KvOp::HIncrByFloat {
            key: c.key(),
            field: c.args[2].clone(),
            delta,
        },
        Render::Plain,
    )
}

/// `HRANDFIELD key [count [WITHVALUES]]`.
pub(super) fn hrandfield(c: &Call) -> Plan {
    let (count, with_values) = match random_picks(c.args, "withvalues") {
        Ok(picks) => picks,
        Err(text) => return err(text),
    };
    let render = if with_values {
        Render::Tuples
    } else {
        Render::Plain
    };
    submit(
        KvOp::HRandField {
            key: c.key(),
            count,
            with_values,
        },
        render,
    )
}

pub(super) fn hscan(c: &Call) -> Plan {
    plan_scan(&c.args[2..], Some((c.key(), CollectionKind::Hash)))
}
