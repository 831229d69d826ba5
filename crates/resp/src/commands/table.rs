//! The command table: each command's name, arity, flags and key positions as `COMMAND`
//! reports them, and the handler that plans it. `COMMAND` itself is planned here: it reports
//! the table.

use crate::commands::args::{arity_error, is, unknown_subcommand};
use crate::commands::call::{Call, Plan};
use crate::commands::{
    channels, connection, hashes, keys, lists, scripting, server, sets, sorted_sets, strings,
    transactions,
};
use crate::Resp;

/// Plans a command whose arity [`crate::plan`] has checked.
pub(crate) type Handler = fn(&Call) -> Plan;

/// A command of the table: what `COMMAND` reports about it, and its handler.
#[derive(Clone, Copy, Debug)]
pub struct CommandSpec {
    pub name: &'static str,
    /// Redis' arity: `n > 0` exactly `n` arguments (the name included), `-n` at least `n`.
    pub arity: i64,
    pub flags: &'static [&'static str],
    pub first_key: i64,
    pub last_key: i64,
    pub step: i64,
    pub(crate) handler: Handler,
}

/// Entries are equal when `COMMAND` describes them alike. Not by handler: function pointers'
/// addresses are not unique (the compiler may merge or duplicate functions), and a name has
/// one entry, so one handler, anyway.
impl PartialEq for CommandSpec {
    fn eq(&self, other: &Self) -> bool {
        (
            self.name,
            self.arity,
            self.flags,
            self.first_key,
            self.last_key,
            self.step,
        ) == (
            other.name,
            other.arity,
            other.flags,
            other.first_key,
            other.last_key,
            other.step,
        )
    }
}

impl Eq for CommandSpec {}

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        handler,
    }
}

const W: &[&str] = &["write"];
const WF: &[&str] = &["write", "fast"];
const WD: &[&str] = &["write", "denyoom"];
const WDF: &[&str] = &["write", "denyoom", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const CONN: &[&str] = &["noscript", "loading", "stale", "fast"];
const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
const TX: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];
const BLOCKING: &[&str] = &["write", "noscript", "blocking"];
const PUBSUB: &[&str] = &["pubsub", "noscript", "loading", "stale"];
const EVAL: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "may_replicate",
    "no_mandatory_keys",
    "movablekeys",
];
const EVAL_RO: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "readonly",
    "movablekeys",
];
const ONE: (i64, i64, i64) = (1, 1, 1);
const ALL: (i64, i64, i64) = (1, -1, 1);
const NONE: (i64, i64, i64) = (0, 0, 0);

/// Every command the gateway answers, in `COMMAND` order.
pub const COMMANDS: &[CommandSpec] = &[
    spec("get", 2, RF, ONE, strings::get),
    spec("set", -3, WD, ONE, strings::set),
    spec("setnx", 3, WDF, ONE, strings::setnx),
    spec("setex", 4, WD, ONE, strings::setex),
    spec("psetex", 4, WD, ONE, strings::psetex),
    spec("getset", 3, WDF, ONE, strings::getset),
    spec("del", -2, W, ALL, keys::del),
    spec("exists", -2, RF, ALL, keys::exists),
    spec("incr", 2, WDF, ONE, strings::incr),
    spec("decr", 2, WDF, ONE, strings::decr),
    spec("incrby", 3, WDF, ONE, strings::incrby),
    spec("decrby", 3, WDF, ONE, strings::decrby),
    spec("append", 3, WDF, ONE, strings::append),
    spec("strlen", 2, RF, ONE, strings::strlen),
    spec("mget", -2, RF, ALL, strings::mget),
    spec("mset", -3, WD, (1, -1, 2), strings::mset),
    spec("expire", -3, WF, ONE, keys::expire),
    spec("pexpire", -3, WF, ONE, keys::pexpire),
    spec("expireat", -3, WF, ONE, keys::expireat),
    spec("pexpireat", -3, WF, ONE, keys::pexpireat),
    spec("expiretime", 2, RF, ONE, keys::expiretime),
    spec("pexpiretime", 2, RF, ONE, keys::pexpiretime),
    spec("ttl", 2, RF, ONE, keys::ttl),
    spec("pttl", 2, RF, ONE, keys::pttl),
    spec("persist", 2, WF, ONE, keys::persist),
    spec("type", 2, RF, ONE, keys::key_type),
    spec("dbsize", 1, RF, NONE, server::dbsize),
    spec("keys", 2, R, NONE, keys::keys),
    spec("flushall", -1, W, NONE, server::flushall),
    spec("flushdb", -1, W, NONE, server::flushall),
    spec("hset", -4, WDF, ONE, hashes::hset),
    spec("hmset", -4, WDF, ONE, hashes::hmset),
    spec("hget", 3, RF, ONE, hashes::hget),
    spec("hdel", -3, WF, ONE, hashes::hdel),
    spec("hgetall", 2, R, ONE, hashes::hgetall),
    spec("hincrby", 4, WDF, ONE, hashes::hincrby),
    spec("lpush", -3, WDF, ONE, lists::lpush),
    spec("rpush", -3, WDF, ONE, lists::rpush),
    spec("lpushx", -3, WDF, ONE, lists::lpushx),
    spec("rpushx", -3, WDF, ONE, lists::rpushx),
    spec("lpop", -2, WF, ONE, lists::lpop),
    spec("rpop", -2, WF, ONE, lists::rpop),
    spec("lrange", 4, R, ONE, lists::lrange),
    spec("llen", 2, RF, ONE, lists::llen),
    spec("sadd", -3, WDF, ONE, sets::sadd),
    spec("srem", -3, WF, ONE, sets::srem),
    spec("smembers", 2, R, ONE, sets::smembers),
    spec("sismember", 3, RF, ONE, sets::sismember),
    spec("spop", -2, WF, ONE, sets::spop),
    spec("zadd", -4, WDF, ONE, sorted_sets::zadd),
    spec("zincrby", 4, WDF, ONE, sorted_sets::zincrby),
    spec("zrem", -3, WF, ONE, sorted_sets::zrem),
    spec("zscore", 3, RF, ONE, sorted_sets::zscore),
    spec("zcard", 2, RF, ONE, sorted_sets::zcard),
    spec("zrank", 3, RF, ONE, sorted_sets::zrank),
    spec("zrevrank", 3, RF, ONE, sorted_sets::zrevrank),
    spec("zrange", -4, R, ONE, sorted_sets::zrange),
    spec("zrevrange", -4, R, ONE, sorted_sets::zrevrange),
    spec("zrangebyscore", -4, R, ONE, sorted_sets::zrangebyscore),
    spec(
        "zrevrangebyscore",
        -4,
        R,
        ONE,
        sorted_sets::zrevrangebyscore,
    ),
    spec("zcount", 4, RF, ONE, sorted_sets::zcount),
    spec("zpopmin", -2, WF, ONE, sorted_sets::zpopmin),
    spec("zpopmax", -2, WF, ONE, sorted_sets::zpopmax),
    spec("ping", -1, &["fast"], NONE, connection::ping),
    spec("echo", 2, &["fast"], NONE, connection::echo),
    spec("quit", -1, CONN, NONE, connection::quit),
    spec("select", 2, CONN, NONE, connection::select),
    spec("auth", -2, CONN, NONE, connection::auth),
    spec("hello", -1, CONN, NONE, connection::hello),
    spec("client", -2, ADMIN, NONE, connection::client),
    spec("command", -1, &["loading", "stale"], NONE, command),
    spec("config", -2, ADMIN, NONE, server::config),
    spec("function", -2, &["noscript"], NONE, server::function),
    spec("memory", -2, R, NONE, server::memory),
    spec("info", -1, &["loading", "stale"], NONE, server::info),
    spec("hmget", -3, RF, ONE, hashes::hmget),
    spec("hexists", 3, RF, ONE, hashes::hexists),
    spec("hlen", 2, RF, ONE, hashes::hlen),
    spec("hkeys", 2, R, ONE, hashes::hkeys),
    spec("hvals", 2, R, ONE, hashes::hvals),
    spec("hsetnx", 4, WDF, ONE, hashes::hsetnx),
    spec("hstrlen", 3, RF, ONE, hashes::hstrlen),
    spec("scard", 2, RF, ONE, sets::scard),
    spec("smismember", -3, RF, ONE, sets::smismember),
    spec("sinter", -2, R, ALL, sets::sinter),
    spec("sunion", -2, R, ALL, sets::sunion),
    spec("sdiff", -2, R, ALL, sets::sdiff),
    spec("sinterstore", -3, WD, ALL, sets::sinterstore),
    spec("sunionstore", -3, WD, ALL, sets::sunionstore),
    spec("sdiffstore", -3, WD, ALL, sets::sdiffstore),
    spec("lindex", 3, R, ONE, lists::lindex),
    spec("lset", 4, WD, ONE, lists::lset),
    spec("ltrim", 4, W, ONE, lists::ltrim),
    spec("getdel", 2, WF, ONE, strings::getdel),
    spec("rename", 3, W, (1, 2, 1), keys::rename),
    spec("renamenx", 3, WF, (1, 2, 1), keys::renamenx),
    spec("unlink", -2, WF, ALL, keys::del),
    spec("lmove", 5, WD, (1, 2, 1), lists::lmove),
    spec("rpoplpush", 3, WD, (1, 2, 1), lists::rpoplpush),
    spec("blpop", -3, BLOCKING, (1, -2, 1), lists::blpop),
    spec("brpop", -3, BLOCKING, (1, -2, 1), lists::brpop),
    spec("blmove", 6, BLOCKING, (1, 2, 1), lists::blmove),
    spec("brpoplpush", 4, BLOCKING, (1, 2, 1), lists::brpoplpush),
    spec("scan", -2, R, NONE, keys::scan),
    spec("hscan", -3, R, ONE, hashes::hscan),
    spec("sscan", -3, R, ONE, sets::sscan),
    spec("zscan", -3, R, ONE, sorted_sets::zscan),
    spec("lrem", 4, W, ONE, lists::lrem),
    spec("linsert", 5, WD, ONE, lists::linsert),
    spec("lpos", -3, R, ONE, lists::lpos),
    spec("smove", 4, WF, (1, 2, 1), sets::smove),
    spec("srandmember", -2, R, ONE, sets::srandmember),
    spec("msetnx", -3, WD, (1, -1, 2), strings::msetnx),
    spec("getrange", 4, R, ONE, strings::getrange),
    spec("setrange", 4, WD, ONE, strings::setrange),
    spec("zremrangebyscore", 4, W, ONE, sorted_sets::zremrangebyscore),
    spec("zremrangebyrank", 4, W, ONE, sorted_sets::zremrangebyrank),
    spec("zmscore", -3, RF, ONE, sorted_sets::zmscore),
    spec("getex", -2, WF, ONE, strings::getex),
    spec("zrangebylex", -4, R, ONE, sorted_sets::zrangebylex),
    spec("zrevrangebylex", -4, R, ONE, sorted_sets::zrevrangebylex),
    spec("zlexcount", 4, RF, ONE, sorted_sets::zlexcount),
    spec("zremrangebylex", 4, W, ONE, sorted_sets::zremrangebylex),
    spec("zunionstore", -4, WD, ONE, sorted_sets::zunionstore),
    spec("zinterstore", -4, WD, ONE, sorted_sets::zinterstore),
    spec("zdiffstore", -4, WD, ONE, sorted_sets::zdiffstore),
    spec("zunion", -3, R, NONE, sorted_sets::zunion),
    spec("zinter", -3, R, NONE, sorted_sets::zinter),
    spec("zdiff", -3, R, NONE, sorted_sets::zdiff),
    spec("lmpop", -4, W, NONE, lists::lmpop),
    spec("blmpop", -5, BLOCKING, NONE, lists::blmpop),
    spec("zmpop", -4, W, NONE, sorted_sets::zmpop),
    spec("bzmpop", -5, BLOCKING, NONE, sorted_sets::bzmpop),
    spec("bzpopmin", -3, BLOCKING, (1, -2, 1), sorted_sets::bzpopmin),
    spec("bzpopmax", -3, BLOCKING, (1, -2, 1), sorted_sets::bzpopmax),
    spec("incrbyfloat", 3, WDF, ONE, strings::incrbyfloat),
    spec("hincrbyfloat", 4, WDF, ONE, hashes::hincrbyfloat),
    spec("hrandfield", -2, R, ONE, hashes::hrandfield),
    spec("zrandmember", -2, R, ONE, sorted_sets::zrandmember),
    spec("randomkey", 1, R, NONE, keys::randomkey),
    spec("copy", -3, WD, (1, 2, 1), keys::copy),
    spec("zrangestore", -5, WD, (1, 2, 1), sorted_sets::zrangestore),
    spec("sintercard", -3, R, NONE, sets::sintercard),
    spec("zintercard", -3, R, NONE, sorted_sets::zintercard),
    spec("substr", 4, R, ONE, strings::getrange),
    spec("setbit", 4, WD, ONE, strings::setbit),
    spec("lcs", -3, R, (1, 2, 1), strings::lcs),
    spec("time", 1, &["loading", "stale", "fast"], NONE, server::time),
    spec("object", -2, R, NONE, keys::object),
    spec("getbit", 3, RF, ONE, strings::getbit),
    spec("multi", 1, TX, NONE, transactions::multi),
    spec(
        "exec",
        1,
        &["noscript", "loading", "stale", "skip_slowlog"],
        NONE,
        transactions::exec,
    ),
    spec("discard", 1, TX, NONE, transactions::discard),
    spec("watch", -2, TX, ALL, transactions::watch),
    spec("unwatch", 1, TX, NONE, transactions::unwatch),
    spec("subscribe", -2, PUBSUB, NONE, channels::subscribe),
    spec("psubscribe", -2, PUBSUB, NONE, channels::psubscribe),
    spec("unsubscribe", -1, PUBSUB, NONE, channels::unsubscribe),
    spec("punsubscribe", -1, PUBSUB, NONE, channels::punsubscribe),
    spec(
        "publish",
        3,
        &["pubsub", "loading", "stale", "fast"],
        NONE,
        channels::publish,
    ),
    spec(
        "pubsub",
        -2,
        &["pubsub", "loading", "stale"],
        NONE,
        channels::pubsub,
    ),
    spec("eval", -3, EVAL, NONE, scripting::eval),
    spec("evalsha", -3, EVAL, NONE, scripting::evalsha),
    spec("eval_ro", -3, EVAL_RO, NONE, scripting::eval_ro),
    spec("evalsha_ro", -3, EVAL_RO, NONE, scripting::evalsha_ro),
    spec("script", -2, &["noscript"], NONE, scripting::script),
];

/// The table entry of a command name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

/// `COMMAND`'s description of one command: name, arity, flags, first key, last key, step.
pub fn command_info(spec: &CommandSpec) -> Resp {
    Resp::array(vec![
        Resp::bulk(spec.name.as_bytes()),
        Resp::Integer(spec.arity),
        Resp::Set(
            spec.flags
                .iter()
                .map(|f| Resp::Simple(f.to_string()))
                .collect(),
        ),
        Resp::Integer(spec.first_key),
        Resp::Integer(spec.last_key),
        Resp::Integer(spec.step),
    ])
}

/// `COMMAND [COUNT|DOCS|INFO|LIST]`: the table, as Redis describes its own.
pub(super) fn command(c: &Call) -> Plan {
    let args = c.args;
    let Some(sub) = args.get(1) else {
        return Plan::Reply(Resp::array(COMMANDS.iter().map(command_info).collect()));
    };
    if is(sub, "count") {
        if args.len() != 2 {
            return arity_error("command|count");
        }
        Plan::Reply(Resp::Integer(
            i64::try_from(COMMANDS.len()).unwrap_or(i64::MAX),
        ))
    } else if is(sub, "docs") {
        Plan::Reply(Resp::Map(Vec::new()))
    } else if is(sub, "info") {
        let infos = match args.len() {
            2 => COMMANDS.iter().map(command_info).collect(),
            _ => args[2..]
                .iter()
                .map(|name| lookup(name).map_or(Resp::nil(), command_info))
                .collect(),
        };
        Plan::Reply(Resp::array(infos))
    } else if is(sub, "list") {
        Plan::Reply(Resp::bulks(COMMANDS.iter().map(|c| c.name.as_bytes())))
    } else {
        unknown_subcommand(sub, "command")
    }
}

#[cfg(test)]
mod tests {
    use super::{lookup, COMMANDS};
    use crate::{plan, ServerInfo};
    use std::collections::HashSet;

    /// `lookup` takes the first entry of a name, so a second would never be planned; names are
    /// lowercase, as Redis' `COMMAND` spells them, and found whatever their case.
    #[test]
    fn every_name_is_unique_lowercase_and_found() {
        let mut names = HashSet::new();
        for spec in COMMANDS {
            assert!(names.insert(spec.name), "{} twice", spec.name);
            assert_eq!(spec.name, spec.name.to_ascii_lowercase());
            let found = lookup(spec.name.to_ascii_uppercase().as_bytes());
            assert_eq!(found.map(|f| f.name), Some(spec.name));
        }
    }

    /// A handler put on another command's entry may read arguments that command's arity does
    /// not promise: planning each command with the fewest arguments it takes (and a few more
    /// where it takes any number) must not panic.
    #[test]
    fn every_handler_takes_its_commands_arguments() {
        for spec in COMMANDS {
            let least = usize::try_from(spec.arity.unsigned_abs()).unwrap();
            let most = if spec.arity > 0 { least } else { least + 3 };
            for count in least..=most {
                let mut args = vec![spec.name.as_bytes().to_vec()];
                args.resize(count, b"1".to_vec());
                let _ = plan(&args, &ServerInfo::default());
            }
        }
    }
}
