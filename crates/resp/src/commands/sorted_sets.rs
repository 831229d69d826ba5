//! Sorted set commands (`ZADD`, the `ZRANGE` family, `ZPOPMIN`, the algebra of `ZUNION`,
//! `ZINTER`, `ZDIFF`, ...).

use crate::commands::args::{
    block, err, index_range, int_arg, is, key_range, keyword, not_integer, pop_count, random_picks,
    range_ends, submit, syntax_error, ERR_NOT_INTEGER,
};
use crate::commands::call::{Call, Plan, Render};
use crate::commands::keys::plan_scan;
use crate::commands::numkeys::{intercard, plan_mpop};
use plumb_kv::{
    Aggregate, CollectionKind, KvOp, LexBound, Score, ScoreBound, SetOp, ZAddOptions, ZRangeBy,
    ERR_MIN_MAX_NOT_FLOAT, ERR_NOT_FLOAT, ERR_ZADD_GT_LT_NX, ERR_ZADD_INCR_PAIRS, ERR_ZADD_NX_XX,
};

const ERR_LEX_RANGE: &str = "ERR min or max not valid string range item";

pub(super) fn zadd(c: &Call) -> Plan {
    plan_zadd(c.args, false)
}

pub(super) fn zincrby(c: &Call) -> Plan {
    plan_zadd(c.args, true)
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`, and `ZINCRBY key
/// increment member` (`incr`), parsed as Redis 7.0's `zaddGenericCommand`: options, then the
/// pair count, incompatible options, and the scores.
fn plan_zadd(args: &[Vec<u8>], incr: bool) -> Plan {
    let mut o = ZAddOptions {
        incr,
        ..ZAddOptions::default()
    };
    let mut first = 2;
    while let Some(opt) = args.get(first) {
        if is(opt, "nx") {
            o.nx = true;
        } else if is(opt, "xx") {
            o.xx = true;
        } else if is(opt, "ch") {
            o.ch = true;
        } else if is(opt, "incr") {
            o.incr = true;
        } else if is(opt, "gt") {
            o.gt = true;
        } else if is(opt, "lt") {
            o.lt = true;
        } else {
            break;
        }
        first += 1;
    }
    let pairs = &args[first..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return syntax_error();
    }
    if o.nx && o.xx {
        return err(ERR_ZADD_NX_XX);
    }
    if (o.nx && (o.gt || o.lt)) || (o.gt && o.lt) {
        return err(ERR_ZADD_GT_LT_NX);
    }
    if o.incr && pairs.len() > 2 {
        return err(ERR_ZADD_INCR_PAIRS);
    }
    let mut members = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks_exact(2) {
        let Some(score) = Score::parse(&pair[0]) else {
            return err(ERR_NOT_FLOAT);
        };
        members.push((score, pair[1].clone()));
    }
    submit(
        KvOp::ZAdd {
            key: args[1].clone(),
            members,
            options: o,
        },
        Render::Plain,
    )
}

pub(super) fn zrem(c: &Call) -> Plan {
    submit(
        KvOp::ZRem {
            key: c.key(),
            members: c.rest(2),
        },
        Render::Plain,
    )
}

pub(super) fn zscore(c: &Call) -> Plan {
    submit(
        KvOp::ZScore {
            key: c.key(),
            member: c.args[2].clone(),
        },
        Render::Plain,
    )
}

pub(super) fn zmscore(c: &Call) -> Plan {
    submit(
        KvOp::ZMScore {
            key: c.key(),
            members: c.rest(2),
        },
        Render::Doubles,
    )
}

pub(super) fn zcard(c: &Call) -> Plan {
    submit(KvOp::ZCard { key: c.key() }, Render::Plain)
}

pub(super) fn zrank(c: &Call) -> Plan {
    rank(c, false)
}

pub(super) fn zrevrank(c: &Call) -> Plan {
    rank(c, true)
}

fn rank(c: &Call, rev: bool) -> Plan {
    submit(
        KvOp::ZRank {
            key: c.key(),
            member: c.args[2].clone(),
            rev,
        },
        Render::Plain,
    )
}

pub(super) fn zrange(c: &Call) -> Plan {
    plan_zrange(c.args, None, None)
}

pub(super) fn zrevrange(c: &Call) -> Plan {
    plan_zrange(c.args, Some(ByScore::No), Some(true))
}

pub(super) fn zrangebyscore(c: &Call) -> Plan {
    plan_zrange(c.args, Some(ByScore::Yes), Some(false))
}

pub(super) fn zrevrangebyscore(c: &Call) -> Plan {
    plan_zrange(c.args, Some(ByScore::Yes), Some(true))
}

pub(super) fn zrangebylex(c: &Call) -> Plan {
    plan_zrange(c.args, Some(ByScore::Lex), Some(false))
}

pub(super) fn zrevrangebylex(c: &Call) -> Plan {
    plan_zrange(c.args, Some(ByScore::Lex), Some(true))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ByScore {
    No,
    Yes,
    /// `BYLEX`: parsed, then refused.
    Lex,
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]` and its
/// fixed forms (`ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`: `by` and `rev` given, so
/// those options are syntax errors), parsed as Redis 7.0's `zrangeGenericCommand`.
fn plan_zrange(args: &[Vec<u8>], by: Option<ByScore>, rev: Option<bool>) -> Plan {
    let (mut by, mut rev) = (by, rev);
    let mut with_scores = false;
    let mut limit = None;
    let mut j = 4;
    while j < args.len() {
        let opt = &args[j];
        let left = args.len() - j - 1;
        if is(opt, "withscores") {
            with_scores = true;
        } else if is(opt, "limit") && left >= 2 {
            match (int_arg(&args[j + 1]), int_arg(&args[j + 2])) {
                (Some(offset), Some(count)) => limit = Some((offset, count)),
                _ => return not_integer(),
            }
            j += 2;
        } else if rev.is_none() && is(opt, "rev") {
            rev = Some(true);
        } else if by.is_none() && is(opt, "bylex") {
            by = Some(ByScore::Lex);
        } else if by.is_none() && is(opt, "byscore") {
            by = Some(ByScore::Yes);
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    let by = by.unwrap_or(ByScore::No);
    if limit.is_some() && by == ByScore::No {
        return err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if with_scores && by == ByScore::Lex {
        return err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    // Reversed ranges by score or by member are given as `max min`.
    let (min, max) = if rev && by != ByScore::No {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let range = match by {
        ByScore::No => range_ends(min, max, int_arg)
            .map(|(start, stop)| ZRangeBy::Index { start, stop })
            .ok_or(ERR_NOT_INTEGER),
        ByScore::Yes => range_ends(min, max, ScoreBound::parse)
            .map(|(min, max)| ZRangeBy::Score { min, max, limit })
            .ok_or(ERR_MIN_MAX_NOT_FLOAT),
        ByScore::Lex => range_ends(min, max, LexBound::parse)
            .map(|(min, max)| ZRangeBy::Lex { min, max, limit })
            .ok_or(ERR_LEX_RANGE),
    };
    let range = match range {
        Ok(range) => range,
        Err(text) => return err(text),
    };
    submit(
        KvOp::ZRange {
            key: args[1].clone(),
            range,
            rev,
            with_scores,
        },
        Render::Plain,
    )
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`: `ZRANGE`'s
/// arguments after the destination, read by [`plan_zrange`].
pub(super) fn zrangestore(c: &Call) -> Plan {
    let args = c.args;
    if args.iter().skip(5).any(|a| is(a, "withscores")) {
        return syntax_error();
    }
    let mut as_zrange = vec![b"zrange".to_vec()];
    as_zrange.extend_from_slice(&args[2..]);
    match plan_zrange(&as_zrange, None, None) {
        Plan::Submit {
            op: KvOp::ZRange {
                key, range, rev, ..
            },
            ..
        } => submit(
            KvOp::ZRangeStore {
                dest: args[1].clone(),
                src: key,
                range,
                rev,
            },
            Render::Plain,
        ),
        other => other,
    }
}

pub(super) fn zcount(c: &Call) -> Plan {
    score_range(c, |key, min, max| KvOp::ZCount { key, min, max })
}

pub(super) fn zremrangebyscore(c: &Call) -> Plan {
    score_range(c, |key, min, max| KvOp::ZRemRangeByScore { key, min, max })
}

/// [`key_range`] by score: `min max` score bounds.
fn score_range(c: &Call, op: fn(Vec<u8>, ScoreBound, ScoreBound) -> KvOp) -> Plan {
    key_range(c, ScoreBound::parse, ERR_MIN_MAX_NOT_FLOAT, op)
}

pub(super) fn zlexcount(c: &Call) -> Plan {
    lex_range(c, |key, min, max| KvOp::ZLexCount { key, min, max })
}

pub(super) fn zremrangebylex(c: &Call) -> Plan {
    lex_range(c, |key, min, max| KvOp::ZRemRangeByLex { key, min, max })
}

/// [`key_range`] by member: `min max` bounds of members (`[a`, `(a`, `-`, `+`).
fn lex_range(c: &Call, op: fn(Vec<u8>, LexBound, LexBound) -> KvOp) -> Plan {
    key_range(c, LexBound::parse, ERR_LEX_RANGE, op)
}

pub(super) fn zremrangebyrank(c: &Call) -> Plan {
    index_range(c, |key, start, stop| KvOp::ZRemRangeByRank {
        key,
        start,
        stop,
    })
}

pub(super) fn zpopmin(c: &Call) -> Plan {
    pop(c, false)
}

pub(super) fn zpopmax(c: &Call) -> Plan {
    pop(c, true)
}

fn pop(c: &Call, max: bool) -> Plan {
    if c.args.len() > 3 {
        return syntax_error();
    }
    let count = match pop_count(c.args.get(2)) {
        Ok(count) => count.unwrap_or(1),
        Err(text) => return err(text),
    };
    submit(
        KvOp::ZPop {
            key: c.key(),
            max,
            count,
        },
        // Redis 7.0 nests the pairs in RESP3 only when a count was given.
        if c.args.len() == 2 {
            Render::FlatScored
        } else {
            Render::Plain
        },
    )
}

/// `BZPOPMIN key ... timeout`.
pub(super) fn bzpopmin(c: &Call) -> Plan {
    block_pop(c, false)
}

/// `BZPOPMAX key ... timeout`.
pub(super) fn bzpopmax(c: &Call) -> Plan {
    block_pop(c, true)
}

fn block_pop(c: &Call, max: bool) -> Plan {
    let (last, keys) = c.args[1..].split_last().unwrap_or((&c.args[0], &[]));
    match block(
        KvOp::ZMPop {
            keys: keys.to_vec(),
            max,
            count: 1,
        },
        last,
    ) {
        Plan::Block { op, timeout, .. } => Plan::Block {
            op,
            render: Render::FlatPop,
            timeout,
        },
        other => other,
    }
}

/// `ZMPOP numkeys key ... MIN|MAX [COUNT n]`.
pub(super) fn zmpop(c: &Call) -> Plan {
    plan_mpop(c, false, max_arg, zset_mpop)
}

/// `BZMPOP timeout numkeys key ... MIN|MAX [COUNT n]`.
pub(super) fn bzmpop(c: &Call) -> Plan {
    plan_mpop(c, true, max_arg, zset_mpop)
}

fn zset_mpop(keys: Vec<Vec<u8>>, max: bool, count: u64) -> KvOp {
    KvOp::ZMPop { keys, max, count }
}

/// `MIN` (false) or `MAX` (true).
fn max_arg(arg: &[u8]) -> Option<bool> {
    keyword(arg, &[("min", false), ("max", true)])
}

pub(super) fn zunion(c: &Call) -> Plan {
    plan_zset_algebra(c, SetOp::Union, false)
}

pub(super) fn zinter(c: &Call) -> Plan {
    plan_zset_algebra(c, SetOp::Inter, false)
}

pub(super) fn zdiff(c: &Call) -> Plan {
    plan_zset_algebra(c, SetOp::Diff, false)
}

pub(super) fn zunionstore(c: &Call) -> Plan {
    plan_zset_algebra(c, SetOp::Union, true)
}

pub(super) fn zinterstore(c: &Call) -> Plan {
    plan_zset_algebra(c, SetOp::Inter, true)
}

pub(super) fn zdiffstore(c: &Call) -> Plan {
    plan_zset_algebra(c, SetOp::Diff, true)
}

/// `ZUNIONSTORE dest numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]`, the `ZINTER` and
/// `ZDIFF` forms, and without `STORE` (no destination, `WITHSCORES` allowed; `ZDIFF` takes
/// neither weights nor aggregate).
fn plan_zset_algebra(c: &Call, op: SetOp, store: bool) -> Plan {
    let (args, command) = (c.args, c.name);
    let (dest, rest) = if store {
        (Some(args[1].clone()), &args[2..])
    } else {
        (None, &args[1..])
    };
    let Some(numkeys) = int_arg(&rest[0]) else {
        return not_integer();
    };
    if numkeys < 1 {
        return err(format!(
            "ERR at least 1 input key is needed for '{command}' command"
        ));
    }
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > rest.len() - 1 {
        return syntax_error();
    }
    let keys = rest[1..=numkeys].to_vec();
    let (mut weights, mut aggregate, mut with_scores) = (Vec::new(), Aggregate::Sum, false);
    let mut j = numkeys + 1;
    while j < rest.len() {
        let more = rest.len() - j - 1;
        if is(&rest[j], "weights") && op != SetOp::Diff && more >= numkeys {
            for w in &rest[j + 1..=j + numkeys] {
                match Score::parse(w) {
                    Some(w) => weights.push(w),
                    None => return err("ERR weight value is not a float"),
                }
            }
            j += numkeys + 1;
        } else if is(&rest[j], "aggregate") && op != SetOp::Diff && more >= 1 {
            let aggregates = [
                ("sum", Aggregate::Sum),
                ("min", Aggregate::Min),
                ("max", Aggregate::Max),
            ];
            let Some(chosen) = keyword(&rest[j + 1], &aggregates) else {
                return syntax_error();
            };
            aggregate = chosen;
            j += 2;
        } else if is(&rest[j], "withscores") && !store {
            with_scores = true;
            j += 1;
        } else {
            return syntax_error();
        }
    }
    submit(
        KvOp::ZSetAlgebra {
            op,
            keys,
            weights,
            aggregate,
            store: dest,
            with_scores,
        },
        Render::Plain,
    )
}

/// `ZINTERCARD numkeys key ... [LIMIT n]`.
pub(super) fn zintercard(c: &Call) -> Plan {
    // ZINTERCARD words its key count errors as the other sorted-set algebra does.
    match int_arg(&c.args[1]) {
        None => return not_integer(),
        Some(n) if n <= 0 => {
            return err("ERR at least 1 input key is needed for 'zintercard' command")
        }
        Some(_) => {}
    }
    intercard(c.args, true)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub(super) fn zrandmember(c: &Call) -> Plan {
    match random_picks(c.args, "withscores") {
        Ok((count, with_scores)) => submit(
            KvOp::ZRandMember {
                key: c.key(),
                count,
                with_scores,
            },
            Render::Plain,
        ),
        Err(text) => err(text),
    }
}

pub(super) fn zscan(c: &Call) -> Plan {
    plan_scan(&c.args[2..], Some((c.key(), CollectionKind::ZSet)))
}
