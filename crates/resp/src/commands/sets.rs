//! Set commands (`SADD`, `SMEMBERS`, the algebra of `SINTER`, `SUNION`, `SDIFF`, ...).

use crate::commands::args::{err, pop_count, random_count, submit, syntax_error};
use crate::commands::call::{Call, Plan, Render};
use crate::commands::keys::plan_scan;
use crate::commands::numkeys::intercard;
use plumb_kv::{CollectionKind, KvOp, SetOp};

pub(super) fn sadd(c: &Call) -> Plan {
    submit(
        KvOp::SAdd {
            key: c.key(),
            members: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn srem(c: &Call) -> Plan {
    submit(
        KvOp::SRem {
            key: c.key(),
            members: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn smembers(c: &Call) -> Plan {
    submit(KvOp::SMembers { key: c.key() }, Render::Set)
}

pub(super) fn sismember(c: &Call) -> Plan {
    submit(
        KvOp::SIsMember {
            key: c.key(),
            member: c.args[2].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn smismember(c: &Call) -> Plan {
    submit(
        KvOp::SMIsMember {
            key: c.key(),
            members: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn scard(c: &Call) -> Plan {
    submit(KvOp::SCard { key: c.key() }, Render::Plain)
}

pub(super) fn spop(c: &Call) -> Plan {
    if c.args.len() > 3 {
        return syntax_error();
    }
    let count = match pop_count(c.args.get(2)) {
        Ok(count) => count,
        Err(text) => return err(text),
    };
    submit(
        KvOp::SPop {
            key: c.key(),
            count,
        },
        Render::Set,
    )
}

pub(super) fn srandmember(c: &Call) -> Plan {
    if c.args.len() > 3 {
        return syntax_error();
    }
    match random_count(c.args.get(2)) {
        Ok(count) => submit(
            KvOp::SRandMember {
                key: c.key(),
                count,
            },
            Render::Plain,
        ),
        Err(text) => err(text),
    }
}

pub(super) fn smove(c: &Call) -> Plan {
    submit(
        KvOp::SMove {
            from: c.key(),
            to: c.args[2].clone(),
            member: c.args[3].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn sinter(c: &Call) -> Plan {
    algebra(c, SetOp::Inter, false)
}

pub(super) fn sunion(c: &Call) -> Plan {
    algebra(c, SetOp::Union, false)
}

pub(super) fn sdiff(c: &Call) -> Plan {
    algebra(c, SetOp::Diff, false)
}

pub(super) fn sinterstore(c: &Call) -> Plan {
    algebra(c, SetOp::Inter, true)
}

pub(super) fn sunionstore(c: &Call) -> Plan {
    algebra(c, SetOp::Union, true)
}

pub(super) fn sdiffstore(c: &Call) -> Plan {
    algebra(c, SetOp::Diff, true)
}

/// `SINTER key ...` and the others, or with `store` their `...STORE destination key ...`
/// forms.
fn algebra(c: &Call, op: SetOp, store: bool) -> Plan {
    let (keys, store) = if store {
        (c.rest(2), Some(c.key()))
    } else {
        (c.rest(1), None)
    };
    let render = if store.is_some() {
        Render::Plain
    } else {
        Render::Set
    };
    submit(KvOp::SetAlgebra { op, keys, store }, render)
}

pub(super) fn sintercard(c: &Call) -> Plan {
    intercard(c.args, false)
}

pub(super) fn sscan(c: &Call) -> Plan {
    plan_scan(&c.args[2..], Some((c.key(), CollectionKind::Set)))
}
