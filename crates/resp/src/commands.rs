//! Redis commands: the table (`COMMAND`), [`plan`] (arguments to a reply or a [`KvOp`]) and
//! [`render`] (a [`KvResult`] to the command's reply).

use crate::{Protocol, Resp};
use plumb_kv::{
    glob_match, parse_integer, Aggregate, CollectionKind, End, ExpireCondition, KvOp, KvResult,
    LexBound, Score, ScoreBound, SetCondition, SetExpiry, SetOp, ZAddOptions, ZRangeBy,
    ERR_MIN_MAX_NOT_FLOAT, ERR_NOT_FLOAT, ERR_ZADD_GT_LT_NX, ERR_ZADD_INCR_PAIRS, ERR_ZADD_NX_XX,
};

/// The Redis version the gateway reports (`INFO`, `HELLO`): the command set and replies
/// follow Redis 7.0.
pub const REDIS_VERSION: &str = "7.0.15";

pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const ERR_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
const ERR_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// What the gateway knows about itself and the connection, for `INFO`, `HELLO` and `CLIENT`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// plumb's version.
    pub version: String,
    /// Operating system, e.g. `Linux 6.1.0 x86_64`.
    pub os: String,
    pub process_id: u32,
    pub tcp_port: u16,
    pub uptime_secs: u64,
    pub connected_clients: u64,
    /// The cluster's fault tolerance: failures it stays up through, and lies it stays right
    /// through.
    pub u: u32,
    pub r: u32,
    /// Further `key:value` lines for the `# Plumb` section of `INFO`.
    pub plumb_fields: Vec<(String, String)>,
    /// This connection's id (`CLIENT ID`, `HELLO`).
    pub client_id: u64,
    /// This connection's name (`CLIENT GETNAME`).
    pub client_name: Option<Vec<u8>>,
    /// Connections waiting in a blocking command.
    pub blocked_clients: u64,
    /// The gateway's clock, Unix milliseconds: Redis refuses an expiry whose absolute time
    /// would pass `i64::MAX` milliseconds, and the agreed time a key expires by is near it.
    pub now_ms: i64,
    /// Connections accepted and commands read since the gateway started (`INFO stats`).
    pub total_connections: u64,
    pub total_commands: u64,
    /// The gateway process's resident memory in bytes and CPU time in micros (`INFO memory`,
    /// `INFO cpu`); filled in only for `INFO`.
    pub memory_rss: u64,
    pub cpu_user_us: u64,
    pub cpu_sys_us: u64,
    /// The connection's protocol (`HELLO` without a version reports it).
    pub protocol: Protocol,
}

/// How a command shapes the store's result into its reply. A [`KvResult::Error`] is always
/// sent as an error reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Render {
    /// The result's natural form: `Value` a bulk string or nil, `Ok` `+OK`, `Bool` and `Int`
    /// integers, lists of strings arrays, `Pairs` a flat array, `Nil` the null array.
    Plain,
    /// `SET` with `NX`/`XX`/`KEEPTTL` and without `GET`: `Bool(true)` is `+OK`, `Bool(false)`
    /// nil.
    OkOrNil,
    /// `TTL` (seconds) or `PTTL` (millis) from the store's micros; -1 and -2 pass through.
    Ttl { millis: bool },
    /// `TYPE`: the value as a status reply.
    Status,
    /// `+OK` whatever the result (`HMSET`).
    Ok,
    /// `BZPOPMIN`, `BZPOPMAX`: one popped member as a flat `[key, member, score]`.
    FlatPop,
    /// `HGETALL`: `Pairs` as a map (RESP3 `%`; a flat array in RESP2).
    Map,
    /// `SMEMBERS`, `SINTER`, `SUNION`, `SDIFF`, `SPOP key count`: `Items` as a set (RESP3
    /// `~`; an array in RESP2).
    Set,
    /// `HRANDFIELD ... WITHVALUES`: `Pairs` as `[field, value]` pairs in RESP3 (flat in
    /// RESP2).
    Tuples,
    /// `ZMSCORE`: `Values` as doubles (RESP3 `,`; bulk strings in RESP2), nil where absent.
    Doubles,
    /// `ZPOPMIN`/`ZPOPMAX` without a count: `Scored` as one flat `[member, score]`, in RESP3
    /// too.
    FlatScored,
    /// `OBJECT REFCOUNT` from the key's `TYPE`: 1 (plumb shares no values), nil if absent.
    ObjectRefcount,
    /// `OBJECT ENCODING` from the key's `TYPE`: the name Redis gives the general encoding of
    /// that kind (plumb has one per kind), nil if absent.
    ObjectEncoding,
}

/// What to do with one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Answer without touching the cluster.
    Reply(Resp),
    /// Send `op` to the replicated store (the ordered path, unless `read_only` and the gateway
    /// enabled the fast read path), then turn its result into a reply with [`render`].
    Submit {
        op: KvOp,
        read_only: bool,
        render: Render,
    },
    /// Reply and then close the connection (`QUIT`).
    Close(Resp),
    /// Set the connection's name (`None`: clear it), then send `reply` (`CLIENT SETNAME`,
    /// `HELLO ... SETNAME`).
    SetName {
        name: Option<Vec<u8>>,
        reply: Resp,
    },
    /// `HELLO`: switch the connection to `protocol` and, if `name`, set its name (`None`
    /// inside: clear it); then send `reply`, in the new protocol.
    Hello {
        protocol: Protocol,
        name: Option<Option<Vec<u8>>>,
        reply: Resp,
    },
    /// Refused before it could run (unknown command or subcommand, wrong number of
    /// arguments): reply with the error; inside `MULTI` it also fails the transaction.
    Reject(Resp),
    /// A blocking command (`BLPOP`, `BLMOVE`, ...): send `op`; if it finds nothing (`Nil` or
    /// `Value(None)`), wait until a write may have changed that or `timeout` passes (`None`:
    /// forever) and send it again; the reply is the last result rendered. Inside `MULTI` it
    /// does not block.
    Block {
        op: KvOp,
        render: Render,
        timeout: Option<std::time::Duration>,
    },
    /// `INFO`: reply `text`, with the `# Keyspace` section after it if `keyspace` (its
    /// figures come from the cluster: [`KvOp::KeyspaceStats`], see [`keyspace_section`]).
    Info {
        text: Vec<u8>,
        keyspace: bool,
    },
    /// `CLIENT LIST`, `INFO`, `KILL`, `UNBLOCK`: the gateway, which knows its connections,
    /// carries them out.
    Client(crate::ClientAdmin),
    /// Transaction commands: the connection's [`crate::Session`] handles them.
    Multi,
    Exec,
    Discard,
    Watch {
        keys: Vec<Vec<u8>>,
    },
    Unwatch,
    /// `SUBSCRIBE` / `PSUBSCRIBE` (`patterns`): the gateway's pub/sub hub handles them, and
    /// the connection is in subscribed mode while it has any (see [`crate::pubsub`]).
    Subscribe {
        patterns: bool,
        names: Vec<Vec<u8>>,
    },
    /// `UNSUBSCRIBE` / `PUNSUBSCRIBE`; no names: every channel (pattern) of the connection.
    Unsubscribe {
        patterns: bool,
        names: Vec<Vec<u8>>,
    },
    /// Script commands: the gateway's script cache (`plumb_script::ScriptCache`) turns these
    /// into a [`Plan::Submit`] of a [`KvOp::Eval`] or a reply. `sha` is lowercase.
    EvalSha {
        sha: Vec<u8>,
        keys: Vec<Vec<u8>>,
        args: Vec<Vec<u8>>,
        read_only: bool,
    },
    ScriptLoad {
        body: Vec<u8>,
    },
    ScriptExists {
        shas: Vec<Vec<u8>>,
    },
    ScriptFlush,
}

/// A command of the table: what `COMMAND` reports about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    /// Redis' arity: `n > 0` exactly `n` arguments (the name included), `-n` at least `n`.
    pub arity: i64,
    pub flags: &'static [&'static str],
    pub first_key: i64,
    pub last_key: i64,
    pub step: i64,
}

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
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
    spec("get", 2, RF, ONE),
    spec("set", -3, WD, ONE),
    spec("setnx", 3, WDF, ONE),
    spec("setex", 4, WD, ONE),
    spec("psetex", 4, WD, ONE),
    spec("getset", 3, WDF, ONE),
    spec("del", -2, W, ALL),
    spec("exists", -2, RF, ALL),
    spec("incr", 2, WDF, ONE),
    spec("decr", 2, WDF, ONE),
    spec("incrby", 3, WDF, ONE),
    spec("decrby", 3, WDF, ONE),
    spec("append", 3, WDF, ONE),
    spec("strlen", 2, RF, ONE),
    spec("mget", -2, RF, ALL),
    spec("mset", -3, WD, (1, -1, 2)),
    spec("expire", -3, WF, ONE),
    spec("pexpire", -3, WF, ONE),
    spec("expireat", -3, WF, ONE),
    spec("pexpireat", -3, WF, ONE),
    spec("expiretime", 2, RF, ONE),
    spec("pexpiretime", 2, RF, ONE),
    spec("ttl", 2, RF, ONE),
    spec("pttl", 2, RF, ONE),
    spec("persist", 2, WF, ONE),
    spec("type", 2, RF, ONE),
    spec("dbsize", 1, RF, NONE),
    spec("keys", 2, R, NONE),
    spec("flushall", -1, W, NONE),
    spec("flushdb", -1, W, NONE),
    spec("hset", -4, WDF, ONE),
    spec("hmset", -4, WDF, ONE),
    spec("hget", 3, RF, ONE),
    spec("hdel", -3, WF, ONE),
    spec("hgetall", 2, R, ONE),
    spec("hincrby", 4, WDF, ONE),
    spec("lpush", -3, WDF, ONE),
    spec("rpush", -3, WDF, ONE),
    spec("lpushx", -3, WDF, ONE),
    spec("rpushx", -3, WDF, ONE),
    spec("lpop", -2, WF, ONE),
    spec("rpop", -2, WF, ONE),
    spec("lrange", 4, R, ONE),
    spec("llen", 2, RF, ONE),
    spec("sadd", -3, WDF, ONE),
    spec("srem", -3, WF, ONE),
    spec("smembers", 2, R, ONE),
    spec("sismember", 3, RF, ONE),
    spec("spop", -2, WF, ONE),
    spec("zadd", -4, WDF, ONE),
    spec("zincrby", 4, WDF, ONE),
    spec("zrem", -3, WF, ONE),
    spec("zscore", 3, RF, ONE),
    spec("zcard", 2, RF, ONE),
    spec("zrank", 3, RF, ONE),
    spec("zrevrank", 3, RF, ONE),
    spec("zrange", -4, R, ONE),
    spec("zrevrange", -4, R, ONE),
    spec("zrangebyscore", -4, R, ONE),
    spec("zrevrangebyscore", -4, R, ONE),
    spec("zcount", 4, RF, ONE),
    spec("zpopmin", -2, WF, ONE),
    spec("zpopmax", -2, WF, ONE),
    spec("ping", -1, &["fast"], NONE),
    spec("echo", 2, &["fast"], NONE),
    spec("quit", -1, CONN, NONE),
    spec("select", 2, CONN, NONE),
    spec("auth", -2, CONN, NONE),
    spec("hello", -1, CONN, NONE),
    spec("client", -2, ADMIN, NONE),
    spec("command", -1, &["loading", "stale"], NONE),
    spec("config", -2, ADMIN, NONE),
    spec("function", -2, &["noscript"], NONE),
    spec("memory", -2, R, NONE),
    spec("info", -1, &["loading", "stale"], NONE),
    spec("hmget", -3, RF, ONE),
    spec("hexists", 3, RF, ONE),
    spec("hlen", 2, RF, ONE),
    spec("hkeys", 2, R, ONE),
    spec("hvals", 2, R, ONE),
    spec("hsetnx", 4, WDF, ONE),
    spec("hstrlen", 3, RF, ONE),
    spec("scard", 2, RF, ONE),
    spec("smismember", -3, RF, ONE),
    spec("sinter", -2, R, ALL),
    spec("sunion", -2, R, ALL),
    spec("sdiff", -2, R, ALL),
    spec("sinterstore", -3, WD, ALL),
    spec("sunionstore", -3, WD, ALL),
    spec("sdiffstore", -3, WD, ALL),
    spec("lindex", 3, R, ONE),
    spec("lset", 4, WD, ONE),
    spec("ltrim", 4, W, ONE),
    spec("getdel", 2, WF, ONE),
    spec("rename", 3, W, (1, 2, 1)),
    spec("renamenx", 3, WF, (1, 2, 1)),
    spec("unlink", -2, WF, ALL),
    spec("lmove", 5, WD, (1, 2, 1)),
    spec("rpoplpush", 3, WD, (1, 2, 1)),
    spec("blpop", -3, BLOCKING, (1, -2, 1)),
    spec("brpop", -3, BLOCKING, (1, -2, 1)),
    spec("blmove", 6, BLOCKING, (1, 2, 1)),
    spec("brpoplpush", 4, BLOCKING, (1, 2, 1)),
    spec("scan", -2, R, NONE),
    spec("hscan", -3, R, ONE),
    spec("sscan", -3, R, ONE),
    spec("zscan", -3, R, ONE),
    spec("lrem", 4, W, ONE),
    spec("linsert", 5, WD, ONE),
    spec("lpos", -3, R, ONE),
    spec("smove", 4, WF, (1, 2, 1)),
    spec("srandmember", -2, R, ONE),
    spec("msetnx", -3, WD, (1, -1, 2)),
    spec("getrange", 4, R, ONE),
    spec("setrange", 4, WD, ONE),
    spec("zremrangebyscore", 4, W, ONE),
    spec("zremrangebyrank", 4, W, ONE),
    spec("zmscore", -3, RF, ONE),
    spec("getex", -2, WF, ONE),
    spec("zrangebylex", -4, R, ONE),
    spec("zrevrangebylex", -4, R, ONE),
    spec("zlexcount", 4, RF, ONE),
    spec("zremrangebylex", 4, W, ONE),
    spec("zunionstore", -4, WD, ONE),
    spec("zinterstore", -4, WD, ONE),
    spec("zdiffstore", -4, WD, ONE),
    spec("zunion", -3, R, NONE),
    spec("zinter", -3, R, NONE),
    spec("zdiff", -3, R, NONE),
    spec("lmpop", -4, W, NONE),
    spec("blmpop", -5, BLOCKING, NONE),
    spec("zmpop", -4, W, NONE),
    spec("bzmpop", -5, BLOCKING, NONE),
    spec("bzpopmin", -3, BLOCKING, (1, -2, 1)),
    spec("bzpopmax", -3, BLOCKING, (1, -2, 1)),
    spec("incrbyfloat", 3, WDF, ONE),
    spec("hincrbyfloat", 4, WDF, ONE),
    spec("hrandfield", -2, R, ONE),
    spec("zrandmember", -2, R, ONE),
    spec("randomkey", 1, R, NONE),
    spec("copy", -3, WD, (1, 2, 1)),
    spec("zrangestore", -5, WD, (1, 2, 1)),
    spec("sintercard", -3, R, NONE),
    spec("zintercard", -3, R, NONE),
    spec("substr", 4, R, ONE),
    spec("setbit", 4, WD, ONE),
    spec("lcs", -3, R, (1, 2, 1)),
    spec("time", 1, &["loading", "stale", "fast"], NONE),
    spec("object", -2, R, NONE),
    spec("getbit", 3, RF, ONE),
    spec("multi", 1, TX, NONE),
    spec(
        "exec",
        1,
        &["noscript", "loading", "stale", "skip_slowlog"],
        NONE,
    ),
    spec("discard", 1, TX, NONE),
    spec("watch", -2, TX, ALL),
    spec("unwatch", 1, TX, NONE),
    spec("subscribe", -2, PUBSUB, NONE),
    spec("psubscribe", -2, PUBSUB, NONE),
    spec("unsubscribe", -1, PUBSUB, NONE),
    spec("punsubscribe", -1, PUBSUB, NONE),
    spec("publish", 3, &["pubsub", "loading", "stale", "fast"], NONE),
    spec("pubsub", -2, &["pubsub", "loading", "stale"], NONE),
    spec("eval", -3, EVAL, NONE),
    spec("evalsha", -3, EVAL, NONE),
    spec("eval_ro", -3, EVAL_RO, NONE),
    spec("evalsha_ro", -3, EVAL_RO, NONE),
    spec("script", -2, &["noscript"], NONE),
];

/// The table entry of a command name, case-insensitively.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
}

fn err(text: impl Into<String>) -> Plan {
    Plan::Reply(Resp::Error(text.into()))
}

fn reject(text: impl Into<String>) -> Plan {
    Plan::Reject(Resp::Error(text.into()))
}

fn arity_text(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Wrong number of arguments for the command table (or a subcommand's): refused before it
/// runs, as Redis does, so it fails a transaction it is queued in.
fn arity_error(name: &str) -> Plan {
    reject(arity_text(name))
}

/// Wrong number of arguments found by the command itself (an odd `MSET`): in Redis an error
/// the command returns when it runs, inside `EXEC` too.
fn arity_error_at_run(name: &str) -> Plan {
    err(arity_text(name))
}

fn syntax_error() -> Plan {
    err(ERR_SYNTAX)
}

fn not_integer() -> Plan {
    err(ERR_NOT_INTEGER)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// At most `n` bytes of `bytes`, as text.
fn text_prefix(bytes: &[u8], n: usize) -> String {
    text(&bytes[..bytes.len().min(n)])
}

/// Redis' reply to an unknown command: the name and the start of its arguments.
fn unknown_command(args: &[Vec<u8>]) -> Plan {
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

fn unknown_subcommand(sub: &[u8], command: &str) -> Plan {
    reject(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        text_prefix(sub, 128),
        command.to_ascii_uppercase()
    ))
}

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn int_arg(arg: &[u8]) -> Option<i64> {
    parse_integer(arg)
}

fn submit(op: KvOp, render: Render) -> Plan {
    let read_only = !op.is_mutating();
    Plan::Submit {
        op,
        read_only,
        render,
    }
}

/// Decide what to do with one command (its arguments, name first).
pub fn plan(args: &[Vec<u8>], info: &ServerInfo) -> Plan {
    let Some(spec) = args.first().and_then(|name| lookup(name)) else {
        return unknown_command(args);
    };
    let argc = i64::try_from(args.len()).unwrap_or(i64::MAX);
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        return arity_error(spec.name);
    }
    let key = || args[1].clone();
    let rest = |from: usize| args[from..].to_vec();
    match spec.name {
        "get" => submit(KvOp::Get { key: key() }, Render::Plain),
        "set" => plan_set(args, info.now_ms),
        "setnx" => submit(
            KvOp::SetExtended {
                key: key(),
                value: args[2].clone(),
                expire: SetExpiry::Clear,
                condition: SetCondition::IfAbsent,
                get: false,
            },
            Render::Plain,
        ),
        "setex" | "psetex" => {
            let millis = spec.name == "psetex";
            match expire_micros(&args[2], millis, spec.name, info.now_ms) {
                Ok(expire) => submit(
                    KvOp::Set {
                        key: key(),
                        value: args[3].clone(),
                        expire: Some(expire),
                    },
                    Render::Plain,
                ),
                Err(text) => err(text),
            }
        }
        "getset" => submit(
            KvOp::SetExtended {
                key: key(),
                value: args[2].clone(),
                expire: SetExpiry::Clear,
                condition: SetCondition::Always,
                get: true,
            },
            Render::Plain,
        ),
        "del" => submit(KvOp::DeleteMany { keys: rest(1) }, Render::Plain),
        "exists" => submit(KvOp::Exists { keys: rest(1) }, Render::Plain),
        "incr" | "decr" => {
            let delta = if spec.name == "incr" { 1 } else { -1 };
            submit(KvOp::Increment { key: key(), delta }, Render::Plain)
        }
        "incrby" | "decrby" => {
            let Some(n) = int_arg(&args[2]) else {
                return not_integer();
            };
            let delta = match spec.name {
                "incrby" => n,
                _ if n == i64::MIN => return err("ERR decrement would overflow"),
                _ => -n,
            };
            submit(KvOp::Increment { key: key(), delta }, Render::Plain)
        }
        "append" => submit(
            KvOp::Append {
                key: key(),
                value: args[2].clone(),
            },
            Render::Plain,
        ),
        "strlen" => submit(KvOp::StrLen { key: key() }, Render::Plain),
        "mget" => submit(KvOp::MGet { keys: rest(1) }, Render::Plain),
        "mset" => {
            if args.len().is_multiple_of(2) {
                return arity_error_at_run(spec.name);
            }
            let pairs = args[1..]
                .chunks_exact(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            submit(KvOp::MSet { pairs }, Render::Plain)
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" => {
            plan_expire(args, spec.name, info.now_ms)
        }
        "expiretime" | "pexpiretime" => submit(
            KvOp::ExpireTime { key: key() },
            Render::Ttl {
                millis: spec.name == "pexpiretime",
            },
        ),
        "ttl" | "pttl" => Plan::Submit {
            op: KvOp::Ttl { key: key() },
            // Remaining time is relative to agreed time, which only the ordered path has.
            read_only: false,
            render: Render::Ttl {
                millis: spec.name == "pttl",
            },
        },
        "persist" => submit(KvOp::Persist { key: key() }, Render::Plain),
        "type" => submit(KvOp::Type { key: key() }, Render::Status),
        "time" => {
            let micros = info.now_ms.saturating_mul(1000);
            Plan::Reply(Resp::array(vec![
                Resp::bulk(micros.div_euclid(1_000_000).to_string()),
                Resp::bulk(micros.rem_euclid(1_000_000).to_string()),
            ]))
        }
        "object" => plan_object(args),
        "dbsize" => submit(KvOp::DbSize, Render::Plain),
        "keys" => submit(KvOp::KeysMatching { pattern: key() }, Render::Plain),
        "flushall" | "flushdb" => match args.get(1) {
            _ if args.len() > 2 => syntax_error(),
            Some(mode) if !is(mode, "async") && !is(mode, "sync") => syntax_error(),
            _ => submit(KvOp::FlushAll, Render::Plain),
        },
        "hset" | "hmset" => {
            if !args.len().is_multiple_of(2) {
                return arity_error_at_run(spec.name);
            }
            let fields = args[2..]
                .chunks_exact(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            let render = if spec.name == "hset" {
                Render::Plain
            } else {
                Render::Ok
            };
            submit(KvOp::HSet { key: key(), fields }, render)
        }
        "hget" => submit(
            KvOp::HGet {
                key: key(),
                field: args[2].clone(),
            },
            Render::Plain,
        ),
        "hdel" => submit(
            KvOp::HDel {
                key: key(),
                fields: rest(2),
            },
            Render::Plain,
        ),
        "hgetall" => submit(KvOp::HGetAll { key: key() }, Render::Map),
        "hincrby" => match int_arg(&args[3]) {
            Some(delta) => submit(
                KvOp::HIncrBy {
                    key: key(),
                    field: args[2].clone(),
                    delta,
                },
                Render::Plain,
            ),
            None => not_integer(),
        },
        "lpush" | "rpush" => submit(
            KvOp::Push {
                key: key(),
                end: if spec.name == "lpush" {
                    End::Left
                } else {
                    End::Right
                },
                values: rest(2),
            },
            Render::Plain,
        ),
        "lpushx" | "rpushx" => submit(
            KvOp::PushExisting {
                key: key(),
                end: if spec.name == "lpushx" {
                    End::Left
                } else {
                    End::Right
                },
                values: rest(2),
            },
            Render::Plain,
        ),
        "lpop" | "rpop" => {
            if args.len() > 3 {
                return arity_error_at_run(spec.name);
            }
            let count = match args.get(2).map(|c| positive(c)) {
                None => None,
                Some(Some(n)) => Some(n),
                Some(None) => return err(ERR_NOT_POSITIVE),
            };
            let end = if spec.name == "lpop" {
                End::Left
            } else {
                End::Right
            };
            submit(
                KvOp::Pop {
                    key: key(),
                    end,
                    count,
                },
                Render::Plain,
            )
        }
        "lrange" => match (int_arg(&args[2]), int_arg(&args[3])) {
            (Some(start), Some(stop)) => submit(
                KvOp::LRange {
                    key: key(),
                    start,
                    stop,
                },
                Render::Plain,
            ),
            _ => not_integer(),
        },
        "llen" => submit(KvOp::LLen { key: key() }, Render::Plain),
        "sadd" => submit(
            KvOp::SAdd {
                key: key(),
                members: rest(2),
            },
            Render::Plain,
        ),
        "srem" => submit(
            KvOp::SRem {
                key: key(),
                members: rest(2),
            },
            Render::Plain,
        ),
        "smembers" => submit(KvOp::SMembers { key: key() }, Render::Set),
        "sismember" => submit(
            KvOp::SIsMember {
                key: key(),
                member: args[2].clone(),
            },
            Render::Plain,
        ),
        "spop" => {
            if args.len() > 3 {
                return syntax_error();
            }
            let count = match args.get(2).map(|c| positive(c)) {
                None => None,
                Some(Some(n)) => Some(n),
                Some(None) => return err(ERR_NOT_POSITIVE),
            };
            submit(KvOp::SPop { key: key(), count }, Render::Set)
        }
        "zadd" => plan_zadd(args, false),
        "zincrby" => plan_zadd(args, true),
        "zrem" => submit(
            KvOp::ZRem {
                key: key(),
                members: rest(2),
            },
            Render::Plain,
        ),
        "zscore" => submit(
            KvOp::ZScore {
                key: key(),
                member: args[2].clone(),
            },
            Render::Plain,
        ),
        "zcard" => submit(KvOp::ZCard { key: key() }, Render::Plain),
        "zrank" | "zrevrank" => submit(
            KvOp::ZRank {
                key: key(),
                member: args[2].clone(),
                rev: spec.name == "zrevrank",
            },
            Render::Plain,
        ),
        "zrange" => plan_zrange(args, None, None),
        "zrevrange" => plan_zrange(args, Some(ByScore::No), Some(true)),
        "zrangebyscore" => plan_zrange(args, Some(ByScore::Yes), Some(false)),
        "zrevrangebyscore" => plan_zrange(args, Some(ByScore::Yes), Some(true)),
        "zrangebylex" => plan_zrange(args, Some(ByScore::Lex), Some(false)),
        "zrevrangebylex" => plan_zrange(args, Some(ByScore::Lex), Some(true)),
        "zlexcount" | "zremrangebylex" => {
            match (LexBound::parse(&args[2]), LexBound::parse(&args[3])) {
                (Some(min), Some(max)) if spec.name == "zlexcount" => submit(
                    KvOp::ZLexCount {
                        key: key(),
                        min,
                        max,
                    },
                    Render::Plain,
                ),
                (Some(min), Some(max)) => submit(
                    KvOp::ZRemRangeByLex {
                        key: key(),
                        min,
                        max,
                    },
                    Render::Plain,
                ),
                _ => err(ERR_LEX_RANGE),
            }
        }
        "zcount" => match (ScoreBound::parse(&args[2]), ScoreBound::parse(&args[3])) {
            (Some(min), Some(max)) => submit(
                KvOp::ZCount {
                    key: key(),
                    min,
                    max,
                },
                Render::Plain,
            ),
            _ => err(ERR_MIN_MAX_NOT_FLOAT),
        },
        "zpopmin" | "zpopmax" => {
            if args.len() > 3 {
                return syntax_error();
            }
            let count = match args.get(2).map(|c| positive(c)) {
                None => 1,
                Some(Some(n)) => n,
                Some(None) => return err(ERR_NOT_POSITIVE),
            };
            submit(
                KvOp::ZPop {
                    key: key(),
                    max: spec.name == "zpopmax",
                    count,
                },
                // Redis 7.0 nests the pairs in RESP3 only when a count was given.
                if args.len() == 2 {
                    Render::FlatScored
                } else {
                    Render::Plain
                },
            )
        }
        "ping" => match args.len() {
            1 => Plan::Reply(Resp::Simple("PONG".into())),
            2 => Plan::Reply(Resp::bulk(args[1].clone())),
            _ => arity_error_at_run(spec.name),
        },
        "echo" => Plan::Reply(Resp::bulk(args[1].clone())),
        "quit" => Plan::Close(Resp::ok()),
        "subscribe" | "psubscribe" => Plan::Subscribe {
            patterns: spec.name == "psubscribe",
            names: rest(1),
        },
        "unsubscribe" | "punsubscribe" => Plan::Unsubscribe {
            patterns: spec.name == "punsubscribe",
            names: rest(1),
        },
        "publish" => submit(
            KvOp::Publish {
                channel: args[1].clone(),
                message: args[2].clone(),
            },
            Render::Plain,
        ),
        "pubsub" => plan_pubsub(args),
        "select" => match int_arg(&args[1]) {
            Some(0) => Plan::Reply(Resp::ok()),
            Some(n) if i32::try_from(n).is_ok() => err("ERR DB index is out of range"),
            _ => not_integer(),
        },
        "auth" => match args.len() {
            2 => err(
                "ERR AUTH <password> called without any password configured for the default \
                 user. Are you sure your configuration is correct?",
            ),
            3 => auth(&args[1]),
            _ => syntax_error(),
        },
        "hello" => plan_hello(args, info),
        "client" => plan_client(args, info),
        "command" => plan_command(args),
        "config" => plan_config(args),
        "function" => plan_function(args),
        "memory" => {
            if !is(&args[1], "usage") {
                return unknown_subcommand(&args[1], "memory");
            }
            match args.len() {
                3 => {}
                5 if is(&args[3], "samples") && int_arg(&args[4]).is_some() => {}
                _ => return syntax_error(),
            }
            submit(
                KvOp::MemoryUsage {
                    key: args[2].clone(),
                },
                Render::Plain,
            )
        }
        "info" => Plan::Info {
            text: info_text(&args[1..], info),
            keyspace: wants_section(&args[1..], "keyspace"),
        },
        "hmget" => submit(
            KvOp::HMGet {
                key: key(),
                fields: rest(2),
            },
            Render::Plain,
        ),
        "hexists" => submit(
            KvOp::HExists {
                key: key(),
                field: args[2].clone(),
            },
            Render::Plain,
        ),
        "hlen" => submit(KvOp::HLen { key: key() }, Render::Plain),
        "hkeys" | "hvals" => submit(
            KvOp::HKeys {
                key: key(),
                values: spec.name == "hvals",
            },
            Render::Plain,
        ),
        "hsetnx" => submit(
            KvOp::HSetNx {
                key: key(),
                field: args[2].clone(),
                value: args[3].clone(),
            },
            Render::Plain,
        ),
        "hstrlen" => submit(
            KvOp::HStrLen {
                key: key(),
                field: args[2].clone(),
            },
            Render::Plain,
        ),
        "scard" => submit(KvOp::SCard { key: key() }, Render::Plain),
        "smismember" => submit(
            KvOp::SMIsMember {
                key: key(),
                members: rest(2),
            },
            Render::Plain,
        ),
        "sinter" | "sunion" | "sdiff" | "sinterstore" | "sunionstore" | "sdiffstore" => {
            let op = match &spec.name[..4] {
                "sint" => SetOp::Inter,
                "suni" => SetOp::Union,
                _ => SetOp::Diff,
            };
            let (keys, store) = if spec.name.ends_with("store") {
                (rest(2), Some(key()))
            } else {
                (rest(1), None)
            };
            let render = if store.is_some() {
                Render::Plain
            } else {
                Render::Set
            };
            submit(KvOp::SetAlgebra { op, keys, store }, render)
        }
        "lindex" => match int_arg(&args[2]) {
            Some(index) => submit(KvOp::LIndex { key: key(), index }, Render::Plain),
            None => not_integer(),
        },
        "lset" => match int_arg(&args[2]) {
            Some(index) => submit(
                KvOp::LSet {
                    key: key(),
                    index,
                    value: args[3].clone(),
                },
                Render::Plain,
            ),
            None => not_integer(),
        },
        "ltrim" => match (int_arg(&args[2]), int_arg(&args[3])) {
            (Some(start), Some(stop)) => submit(
                KvOp::LTrim {
                    key: key(),
                    start,
                    stop,
                },
                Render::Plain,
            ),
            _ => not_integer(),
        },
        "getdel" => submit(KvOp::GetDel { key: key() }, Render::Plain),
        "rename" | "renamenx" => submit(
            KvOp::Rename {
                from: key(),
                to: args[2].clone(),
                nx: spec.name == "renamenx",
            },
            Render::Plain,
        ),
        "unlink" => submit(KvOp::DeleteMany { keys: rest(1) }, Render::Plain),
        "lmove" | "blmove" => {
            let (Some(from_end), Some(to_end)) = (end_arg(&args[3]), end_arg(&args[4])) else {
                return syntax_error();
            };
            let op = KvOp::Move {
                from: key(),
                to: args[2].clone(),
                from_end,
                to_end,
            };
            if spec.name == "lmove" {
                return submit(op, Render::Plain);
            }
            block(op, &args[5])
        }
        "rpoplpush" | "brpoplpush" => {
            let op = KvOp::Move {
                from: key(),
                to: args[2].clone(),
                from_end: End::Right,
                to_end: End::Left,
            };
            if spec.name == "rpoplpush" {
                return submit(op, Render::Plain);
            }
            block(op, &args[3])
        }
        "blpop" | "brpop" => {
            let end = if spec.name == "blpop" {
                End::Left
            } else {
                End::Right
            };
            let (last, keys) = args[1..].split_last().unwrap_or((&args[0], &[]));
            block(
                KvOp::PopFirst {
                    keys: keys.to_vec(),
                    end,
                },
                last,
            )
        }
        "lrem" => match int_arg(&args[2]) {
            Some(count) => submit(
                KvOp::LRem {
                    key: key(),
                    count,
                    element: args[3].clone(),
                },
                Render::Plain,
            ),
            None => not_integer(),
        },
        "linsert" => {
            let before = if is(&args[2], "before") {
                true
            } else if is(&args[2], "after") {
                false
            } else {
                return syntax_error();
            };
            submit(
                KvOp::LInsert {
                    key: key(),
                    before,
                    pivot: args[3].clone(),
                    element: args[4].clone(),
                },
                Render::Plain,
            )
        }
        "lpos" => plan_lpos(args),
        "getex" => plan_getex(args, info.now_ms),
        "zunionstore" | "zinterstore" | "zdiffstore" | "zunion" | "zinter" | "zdiff" => {
            plan_zset_algebra(args, spec.name)
        }
        "smove" => submit(
            KvOp::SMove {
                from: key(),
                to: args[2].clone(),
                member: args[3].clone(),
            },
            Render::Plain,
        ),
        "srandmember" => {
            if args.len() > 3 {
                return syntax_error();
            }
            let count = match args.get(2).map(|c| int_arg(c)) {
                None => None,
                // Bounded: the members are made on every replica, repeats and all.
                Some(Some(n)) if n.unsigned_abs() <= 1 << 20 => Some(n),
                Some(Some(_)) => return err("ERR value is out of range"),
                Some(None) => return not_integer(),
            };
            submit(KvOp::SRandMember { key: key(), count }, Render::Plain)
        }
        "msetnx" => {
            if args.len().is_multiple_of(2) {
                return arity_error_at_run(spec.name);
            }
            let pairs = args[1..]
                .chunks_exact(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            submit(KvOp::MSetNx { pairs }, Render::Plain)
        }
        "lmpop" | "zmpop" => plan_mpop(args, 1, spec.name == "zmpop", None),
        "blmpop" | "bzmpop" => plan_mpop(args, 2, spec.name == "bzmpop", Some(&args[1])),
        "bzpopmin" | "bzpopmax" => {
            let (last, keys) = args[1..].split_last().unwrap_or((&args[0], &[]));
            match block(
                KvOp::ZMPop {
                    keys: keys.to_vec(),
                    max: spec.name == "bzpopmax",
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
        "incrbyfloat" | "hincrbyfloat" => {
            let (field, delta) = if spec.name == "incrbyfloat" {
                (None, &args[2])
            } else {
                (Some(args[2].clone()), &args[3])
            };
            let Some(delta) = Score::parse(delta) else {
                return err(ERR_NOT_FLOAT);
            };
            // Redis checks HINCRBYFLOAT's increment itself; INCRBYFLOAT only the sum.
            if field.is_some() && delta.get().is_infinite() {
                return err("ERR value is NaN or Infinity");
            }
            let op = match field {
                None => KvOp::IncrByFloat { key: key(), delta },
                Some(field) => KvOp::HIncrByFloat {
                    key: key(),
                    field,
                    delta,
                },
            };
            submit(op, Render::Plain)
        }
        "hrandfield" | "zrandmember" => {
            let with = match args.get(3) {
                None => false,
                Some(w) if args.len() == 4 => {
                    let word = if spec.name == "hrandfield" {
                        "withvalues"
                    } else {
                        "withscores"
                    };
                    if !is(w, word) {
                        return syntax_error();
                    }
                    true
                }
                Some(_) => return syntax_error(),
            };
            let count = match args.get(2).map(|c| int_arg(c)) {
                None => None,
                // Bounded: the picks are made on every replica, repeats and all.
                Some(Some(n)) if n.unsigned_abs() <= 1 << 20 => Some(n),
                Some(Some(_)) => return err("ERR value is out of range"),
                Some(None) => return not_integer(),
            };
            let render = if spec.name == "hrandfield" && with {
                Render::Tuples
            } else {
                Render::Plain
            };
            let op = if spec.name == "hrandfield" {
                KvOp::HRandField {
                    key: key(),
                    count,
                    with_values: with,
                }
            } else {
                KvOp::ZRandMember {
                    key: key(),
                    count,
                    with_scores: with,
                }
            };
            submit(op, render)
        }
        "randomkey" => submit(KvOp::RandomKey, Render::Plain),
        "lcs" => plan_lcs(args),
        "setbit" | "getbit" => {
            // Redis' bound: offsets address a string of at most 512 MiB.
            let offset = match int_arg(&args[2]) {
                Some(n) if (0..1 << 32).contains(&n) => n.unsigned_abs(),
                _ => return err("ERR bit offset is not an integer or out of range"),
            };
            if spec.name == "getbit" {
                return submit(KvOp::GetBit { key: key(), offset }, Render::Plain);
            }
            let bit = match args[3].as_slice() {
                b"0" => false,
                b"1" => true,
                _ => return err("ERR bit is not an integer or out of range"),
            };
            submit(
                KvOp::SetBit {
                    key: key(),
                    offset,
                    bit,
                },
                Render::Plain,
            )
        }
        "copy" => plan_copy(args),
        "zrangestore" => plan_zrangestore(args),
        "sintercard" | "zintercard" => plan_intercard(args, spec.name == "zintercard"),
        "getrange" | "substr" => match (int_arg(&args[2]), int_arg(&args[3])) {
            (Some(start), Some(end)) => submit(
                KvOp::GetRange {
                    key: key(),
                    start,
                    end,
                },
                Render::Plain,
            ),
            _ => not_integer(),
        },
        "setrange" => match int_arg(&args[2]) {
            Some(offset) if offset >= 0 => submit(
                KvOp::SetRange {
                    key: key(),
                    offset: offset.unsigned_abs(),
                    value: args[3].clone(),
                },
                Render::Plain,
            ),
            Some(_) => err("ERR offset is out of range"),
            None => not_integer(),
        },
        "zremrangebyscore" => match (ScoreBound::parse(&args[2]), ScoreBound::parse(&args[3])) {
            (Some(min), Some(max)) => submit(
                KvOp::ZRemRangeByScore {
                    key: key(),
                    min,
                    max,
                },
                Render::Plain,
            ),
            _ => err(ERR_MIN_MAX_NOT_FLOAT),
        },
        "zremrangebyrank" => match (int_arg(&args[2]), int_arg(&args[3])) {
            (Some(start), Some(stop)) => submit(
                KvOp::ZRemRangeByRank {
                    key: key(),
                    start,
                    stop,
                },
                Render::Plain,
            ),
            _ => not_integer(),
        },
        "zmscore" => submit(
            KvOp::ZMScore {
                key: key(),
                members: rest(2),
            },
            Render::Doubles,
        ),
        "scan" => plan_scan(&args[1..], None),
        "hscan" => plan_scan(&args[2..], Some((key(), CollectionKind::Hash))),
        "sscan" => plan_scan(&args[2..], Some((key(), CollectionKind::Set))),
        "zscan" => plan_scan(&args[2..], Some((key(), CollectionKind::ZSet))),
        "multi" => Plan::Multi,
        "exec" => Plan::Exec,
        "discard" => Plan::Discard,
        "watch" => Plan::Watch { keys: rest(1) },
        "unwatch" => Plan::Unwatch,
        "eval" | "eval_ro" | "evalsha" | "evalsha_ro" => plan_eval(args, spec.name),
        "script" => plan_script(args),
        _ => unknown_command(args),
    }
}

/// Redis' reply to `EVALSHA` of a script this gateway does not know.
pub const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// `EVAL script numkeys key... arg...` and its `EVALSHA` / `_RO` forms. `EVAL` goes to the
/// cluster as it is; `EVALSHA` becomes [`Plan::EvalSha`], which the gateway's script cache
/// turns into the `EVAL` of the body (or `NOSCRIPT`).
fn plan_eval(args: &[Vec<u8>], command: &str) -> Plan {
    let Some(numkeys) = int_arg(&args[2]) else {
        return not_integer();
    };
    if numkeys < 0 {
        return err("ERR Number of keys can't be negative");
    }
    let given = args.len() - 3;
    let numkeys = match usize::try_from(numkeys) {
        Ok(n) if n <= given => n,
        _ => return err("ERR Number of keys can't be greater than number of args"),
    };
    let keys = args[3..3 + numkeys].to_vec();
    let script_args = args[3 + numkeys..].to_vec();
    let read_only = command.ends_with("_ro");
    if command.starts_with("evalsha") {
        return Plan::EvalSha {
            sha: args[1].to_ascii_lowercase(),
            keys,
            args: script_args,
            read_only,
        };
    }
    Plan::Submit {
        op: KvOp::Eval {
            script: args[1].clone(),
            keys,
            args: script_args,
            read_only,
        },
        // Scripts always take the ordered path (see `KvOp::Eval`).
        read_only: false,
        render: Render::Plain,
    }
}

/// `SCRIPT LOAD|EXISTS|FLUSH|KILL`: the first three act on the gateway's script cache.
fn plan_script(args: &[Vec<u8>]) -> Plan {
    let sub = &args[1];
    if is(sub, "load") {
        if args.len() != 3 {
            return arity_error("script|load");
        }
        Plan::ScriptLoad {
            body: args[2].clone(),
        }
    } else if is(sub, "exists") {
        if args.len() < 3 {
            return arity_error("script|exists");
        }
        Plan::ScriptExists {
            shas: args[2..].iter().map(|s| s.to_ascii_lowercase()).collect(),
        }
    } else if is(sub, "flush") {
        match args.get(2) {
            _ if args.len() > 3 => arity_error("script|flush"),
            Some(mode) if !is(mode, "async") && !is(mode, "sync") => {
                err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
            }
            _ => Plan::ScriptFlush,
        }
    } else if is(sub, "kill") {
        if args.len() != 2 {
            return arity_error("script|kill");
        }
        // A script never runs long here: its instruction budget stops it.
        err("NOTBUSY No scripts in execution right now.")
    } else {
        unknown_subcommand(sub, "script")
    }
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
    let range = match by {
        ByScore::Lex => {
            // Reversed ranges are given as `max min`, as by score.
            let (min, max) = if rev {
                (&args[3], &args[2])
            } else {
                (&args[2], &args[3])
            };
            match (LexBound::parse(min), LexBound::parse(max)) {
                (Some(min), Some(max)) => ZRangeBy::Lex { min, max, limit },
                _ => return err(ERR_LEX_RANGE),
            }
        }
        ByScore::No => match (int_arg(&args[2]), int_arg(&args[3])) {
            (Some(start), Some(stop)) => ZRangeBy::Index { start, stop },
            _ => return not_integer(),
        },
        ByScore::Yes => {
            // Reversed ranges are given as `max min`.
            let (min, max) = if rev {
                (&args[3], &args[2])
            } else {
                (&args[2], &args[3])
            };
            match (ScoreBound::parse(min), ScoreBound::parse(max)) {
                (Some(min), Some(max)) => ZRangeBy::Score { min, max, limit },
                _ => return err(ERR_MIN_MAX_NOT_FLOAT),
            }
        }
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

/// A count argument of `LPOP`/`SPOP`: a non-negative integer.
/// `SCAN cursor [MATCH p] [COUNT n] [TYPE t]`, or with `collection` the `HSCAN`/`SSCAN`/
/// `ZSCAN` of that key (no `TYPE`). `args` starts at the cursor.
fn plan_scan(args: &[Vec<u8>], collection: Option<(Vec<u8>, CollectionKind)>) -> Plan {
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

/// `ZUNIONSTORE dest numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]`, the `ZINTER` and
/// `ZDIFF` forms, and without `STORE` (no destination, `WITHSCORES` allowed; `ZDIFF` takes
/// neither weights nor aggregate).
fn plan_zset_algebra(args: &[Vec<u8>], command: &str) -> Plan {
    let store = command.ends_with("store");
    let op = match &command[..5] {
        "zunio" => SetOp::Union,
        "zinte" => SetOp::Inter,
        _ => SetOp::Diff,
    };
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
            aggregate = if is(&rest[j + 1], "sum") {
                Aggregate::Sum
            } else if is(&rest[j + 1], "min") {
                Aggregate::Min
            } else if is(&rest[j + 1], "max") {
                Aggregate::Max
            } else {
                return syntax_error();
            };
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

/// `GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]`.
fn plan_getex(args: &[Vec<u8>], now_ms: i64) -> Plan {
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

/// `LPOS key element [RANK r] [COUNT c] [MAXLEN m]`.
fn plan_lpos(args: &[Vec<u8>]) -> Plan {
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

fn end_arg(arg: &[u8]) -> Option<End> {
    if is(arg, "left") {
        Some(End::Left)
    } else if is(arg, "right") {
        Some(End::Right)
    } else {
        None
    }
}

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

/// `LMPOP`/`ZMPOP numkeys key ... LEFT|RIGHT|MIN|MAX [COUNT n]` from `args[at]` on, and the
/// blocking forms with their `timeout` before it.
fn plan_mpop(args: &[Vec<u8>], at: usize, sorted: bool, timeout: Option<&[u8]>) -> Plan {
    let (keys, mut i) = match numkeys(args, at, ERR_SYNTAX) {
        Ok(found) => found,
        Err(text) => return err(text),
    };
    let Some(side) = args.get(i) else {
        return syntax_error();
    };
    let (end, max) = if sorted {
        match () {
            _ if is(side, "min") => (End::Left, false),
            _ if is(side, "max") => (End::Left, true),
            _ => return syntax_error(),
        }
    } else {
        match end_arg(side) {
            Some(end) => (end, false),
            None => return syntax_error(),
        }
    };
    i += 1;
    let mut count = None;
    while i < args.len() {
        if !is(&args[i], "count") || count.is_some() || i + 1 >= args.len() {
            return syntax_error();
        }
        match int_arg(&args[i + 1]) {
            Some(n) if n > 0 => count = u64::try_from(n).ok(),
            _ => return err("ERR count should be greater than 0"),
        }
        i += 2;
    }
    let count = count.unwrap_or(1);
    let op = if sorted {
        KvOp::ZMPop { keys, max, count }
    } else {
        KvOp::ListMPop { keys, end, count }
    };
    match timeout {
        None => submit(op, Render::Plain),
        Some(timeout) => block(op, timeout),
    }
}

/// `COPY source destination [DB n] [REPLACE]`: only database 0 exists.
fn plan_copy(args: &[Vec<u8>]) -> Plan {
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

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`: `ZRANGE`'s
/// arguments after the destination, read by [`plan_zrange`].
fn plan_zrangestore(args: &[Vec<u8>]) -> Plan {
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

/// `SINTERCARD`/`ZINTERCARD numkeys key ... [LIMIT n]`.
fn plan_intercard(args: &[Vec<u8>], sorted: bool) -> Plan {
    let too_many = "ERR Number of keys can't be greater than number of args";
    if sorted {
        // ZINTERCARD words its key count errors as the other sorted-set algebra does.
        match int_arg(&args[1]) {
            None => return not_integer(),
            Some(n) if n <= 0 => {
                return err("ERR at least 1 input key is needed for 'zintercard' command")
            }
            Some(_) => {}
        }
    }
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

/// A blocking command with its timeout argument: seconds, fractions allowed, 0 for ever.
fn block(op: KvOp, timeout: &[u8]) -> Plan {
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

fn positive(arg: &[u8]) -> Option<u64> {
    int_arg(arg).and_then(|n| u64::try_from(n).ok())
}

/// `AUTH user pass` without configured passwords: the default user takes any password.
fn auth(user: &[u8]) -> Plan {
    if user == b"default" {
        Plan::Reply(Resp::ok())
    } else {
        err("WRONGPASS invalid username-password pair or user is disabled.")
    }
}

/// A relative expiry argument of `SET EX|PX`, `SETEX`, `PSETEX` in micros: a positive
/// integer of seconds (`millis` false) or milliseconds.
/// Whether an expiry `n` seconds (or, with `millis`, milliseconds) from now passes what Redis
/// can hold: `i64::MAX` milliseconds since the epoch, counting from `now_ms`.
fn expire_overflows(n: i64, millis: bool, now_ms: i64) -> bool {
    let ms = if millis { Some(n) } else { n.checked_mul(1000) };
    ms.is_none_or(|ms| ms > i64::MAX - now_ms.max(0))
}

/// An expiry argument in micros, or the error text to reply with.
fn expire_micros(arg: &[u8], millis: bool, command: &str, now_ms: i64) -> Result<u64, String> {
    let n = int_arg(arg).ok_or_else(|| ERR_NOT_INTEGER.to_string())?;
    if n <= 0 || expire_overflows(n, millis, now_ms) {
        return Err(format!("ERR invalid expire time in '{command}' command"));
    }
    let per_unit: u64 = if millis { 1_000 } else { 1_000_000 };
    Ok(n.unsigned_abs().saturating_mul(per_unit))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|KEEPTTL]`, parsed as Redis 7.0 does.
fn plan_set(args: &[Vec<u8>], now_ms: i64) -> Plan {
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

/// `EXPIRE key seconds [NX|XX|GT|LT]...`, `PEXPIRE key millis ...`.
fn plan_expire(args: &[Vec<u8>], command: &str, now_ms: i64) -> Plan {
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
    let millis = command.starts_with('p');
    // EXPIREAT and PEXPIREAT count from the epoch: agreed time is the primaries' wall clock.
    let absolute = command.ends_with("at");
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

/// `HELLO`'s reply, as Redis 7.0 gives it: a map in RESP3, a flat array in RESP2.
fn hello_reply(info: &ServerInfo, protocol: Protocol) -> Resp {
    let s = |t: &str| Resp::bulk(t.as_bytes());
    Resp::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(REDIS_VERSION)),
        (s("proto"), Resp::Integer(protocol.version())),
        (
            s("id"),
            Resp::Integer(i64::try_from(info.client_id).unwrap_or(i64::MAX)),
        ),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Resp::array(Vec::new())),
    ])
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`: switches the connection to RESP2 or
/// RESP3 (without a version it keeps its protocol).
fn plan_hello(args: &[Vec<u8>], info: &ServerInfo) -> Plan {
    let protocol = match args.get(1).map(|v| int_arg(v)) {
        None => info.protocol,
        Some(None) => return err("ERR Protocol version is not an integer or out of range"),
        Some(Some(2)) => Protocol::Resp2,
        Some(Some(3)) => Protocol::Resp3,
        Some(Some(_)) => return err("NOPROTO unsupported protocol version"),
    };
    let mut name = None;
    let mut user: Option<&[u8]> = None;
    let mut j = 2;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "auth") && more >= 2 {
            user = Some(&args[j + 1]);
            j += 2;
        } else if is(&args[j], "setname") && more >= 1 {
            if let Err(text) = check_client_name(&args[j + 1]) {
                return err(text);
            }
            name = Some(args[j + 1].clone());
            j += 1;
        } else {
            return err(format!(
                "ERR Syntax error in HELLO option '{}'",
                text(&args[j])
            ));
        }
        j += 1;
    }
    if let Some(user) = user {
        if let wrong @ Plan::Reply(Resp::Error(_)) = auth(user) {
            return wrong;
        }
    }
    Plan::Hello {
        protocol,
        name: name.map(|name| (!name.is_empty()).then_some(name)),
        reply: hello_reply(info, protocol),
    }
}

/// The error text for a client name with spaces or special characters.
fn check_client_name(name: &[u8]) -> Result<(), &'static str> {
    if name.iter().all(|b| (b'!'..=b'~').contains(b)) {
        Ok(())
    } else {
        Err("ERR Client names cannot contain spaces, newlines or special characters.")
    }
}

fn plan_client(args: &[Vec<u8>], info: &ServerInfo) -> Plan {
    match crate::client_admin::parse(args) {
        Some(Ok(admin)) => return Plan::Client(admin),
        Some(Err(refusal)) => return Plan::Reply(refusal),
        None => {}
    }
    let sub = &args[1];
    let argc = args.len();
    let arity = |n: usize, name: &str| (argc != n).then(|| arity_error(&format!("client|{name}")));
    if is(sub, "id") {
        arity(2, "id").unwrap_or_else(|| {
            Plan::Reply(Resp::Integer(
                i64::try_from(info.client_id).unwrap_or(i64::MAX),
            ))
        })
    } else if is(sub, "getname") {
        arity(2, "getname").unwrap_or_else(|| Plan::Reply(Resp::Bulk(info.client_name.clone())))
    } else if is(sub, "setname") {
        arity(3, "setname").unwrap_or_else(|| match check_client_name(&args[2]) {
            Err(text) => err(text),
            Ok(()) => Plan::SetName {
                name: (!args[2].is_empty()).then(|| args[2].clone()),
                reply: Resp::ok(),
            },
        })
    } else if is(sub, "setinfo") {
        // Redis 7.2 clients announce their library; accept and ignore.
        arity(4, "setinfo").unwrap_or_else(|| Plan::Reply(Resp::ok()))
    } else if is(sub, "no-evict") {
        // Nothing is evicted from a gateway's connections.
        arity(3, "no-evict").unwrap_or_else(|| {
            if is(&args[2], "on") || is(&args[2], "off") {
                Plan::Reply(Resp::ok())
            } else {
                syntax_error()
            }
        })
    } else {
        unknown_subcommand(sub, "client")
    }
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

fn plan_command(args: &[Vec<u8>]) -> Plan {
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

/// The parameters `CONFIG GET` reports: what clients and `redis-benchmark` ask about.
pub const CONFIG: &[(&str, &str)] = &[
    ("save", ""),
    ("appendonly", "no"),
    ("databases", "1"),
    ("maxmemory", "0"),
    ("timeout", "0"),
    ("hash-max-listpack-entries", "128"),
    ("hash-max-listpack-value", "64"),
    ("hash-max-ziplist-entries", "128"),
    ("hash-max-ziplist-value", "64"),
    ("list-max-listpack-size", "-2"),
    ("list-max-ziplist-size", "-2"),
    ("list-compress-depth", "0"),
    ("set-max-intset-entries", "512"),
    ("zset-max-listpack-entries", "128"),
    ("zset-max-listpack-value", "64"),
    ("zset-max-ziplist-entries", "128"),
    ("zset-max-ziplist-value", "64"),
    ("lazyfree-lazy-user-del", "no"),
    ("lazyfree-lazy-user-flush", "no"),
];

/// Parameters `CONFIG SET` accepts and ignores: they choose between Redis' memory encodings
/// (listpack or hashtable, and so on) or when it frees memory, which change no reply, and
/// plumb has one encoding per kind. Applications and test suites set them to reach an
/// encoding; refusing would break them for nothing.
/// `save` and `appendonly` schedule Redis' snapshots and turn its append-only file on or off;
/// plumb writes every operation to its stages' logs and syncs them before it replies, whatever
/// they say, so they are accepted and change nothing either.
const CONFIG_NO_EFFECT: &[&str] = &[
    "save",
    "appendonly",
    "appendfsync",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "hash-max-ziplist-entries",
    "hash-max-ziplist-value",
    "list-max-listpack-size",
    "list-max-ziplist-size",
    "list-compress-depth",
    "set-max-intset-entries",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "zset-max-ziplist-entries",
    "zset-max-ziplist-value",
    "lazyfree-lazy-user-del",
    "lazyfree-lazy-user-flush",
    "lazyfree-lazy-expire",
    "lazyfree-lazy-eviction",
    "lazyfree-lazy-server-del",
    "active-expire-enabled",
];

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`.
fn plan_lcs(args: &[Vec<u8>]) -> Plan {
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

/// `OBJECT REFCOUNT|ENCODING key`, answered from the key's kind ([`KvOp::Type`]).
fn plan_object(args: &[Vec<u8>]) -> Plan {
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

/// `FUNCTION`: plumb runs no Redis functions (7.0's stored Lua libraries). `FLUSH` and `LIST`
/// answer as a server without any do; loading one is refused with the reason.
fn plan_function(args: &[Vec<u8>]) -> Plan {
    let sub = &args[1];
    if is(sub, "flush") {
        match args.get(2) {
            None => Plan::Reply(Resp::ok()),
            Some(mode) if args.len() == 3 && (is(mode, "async") || is(mode, "sync")) => {
                Plan::Reply(Resp::ok())
            }
            Some(_) => syntax_error(),
        }
    } else if is(sub, "list") {
        Plan::Reply(Resp::array(Vec::new()))
    } else if is(sub, "load") || is(sub, "delete") || is(sub, "restore") || is(sub, "dump") {
        err("ERR plumb does not support Redis functions (FUNCTION LOAD); use EVAL scripts")
    } else {
        unknown_subcommand(sub, "function")
    }
}

fn plan_config(args: &[Vec<u8>]) -> Plan {
    let sub = &args[1];
    if is(sub, "get") {
        if args.len() < 3 {
            return arity_error("config|get");
        }
        let mut reply = Vec::new();
        for (name, value) in CONFIG {
            let wanted = args[2..].iter().any(|p| {
                let p = p.to_ascii_lowercase();
                p == name.as_bytes() || glob_match(&p, name.as_bytes())
            });
            if wanted {
                reply.push((Resp::bulk(name.as_bytes()), Resp::bulk(value.as_bytes())));
            }
        }
        Plan::Reply(Resp::Map(reply))
    } else if is(sub, "set") {
        if args.len() < 4 {
            return arity_error("config|set");
        }
        let pairs = &args[2..];
        if !pairs.len().is_multiple_of(2) {
            return arity_error("config|set");
        }
        for pair in pairs.chunks_exact(2) {
            let name = pair[0].to_ascii_lowercase();
            if !CONFIG_NO_EFFECT.iter().any(|p| p.as_bytes() == name) {
                return err(format!(
                    "ERR CONFIG SET {} is not supported: the gateway's configuration is read-only (only parameters that choose Redis' memory encodings are accepted, and they change nothing here)",
                    text(&pair[0])
                ));
            }
        }
        Plan::Reply(Resp::ok())
    } else if is(sub, "resetstat") {
        Plan::Reply(Resp::ok())
    } else if is(sub, "rewrite") {
        err("ERR CONFIG REWRITE is not supported: the gateway's configuration is read-only")
    } else {
        unknown_subcommand(sub, "config")
    }
}

/// Whether `INFO` with these arguments shows the section `name` (none, `default`, `all`,
/// `everything`: every section).
fn wants_section(sections: &[Vec<u8>], name: &str) -> bool {
    sections.is_empty()
        || sections
            .iter()
            .any(|s| is(s, "all") || is(s, "default") || is(s, "everything") || is(s, name))
}

/// The `INFO` text for the requested sections but `Keyspace` (see [`keyspace_section`]).
/// Memory and CPU are the gateway process's: the replicas' own are on their `/metrics`.
pub fn info_text(sections: &[Vec<u8>], info: &ServerInfo) -> Vec<u8> {
    let mut out = Vec::new();
    let mut section = |title: &str, lines: Vec<(String, String)>| {
        if !wants_section(sections, title) {
            return;
        }
        if !out.is_empty() {
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("# {title}\r\n").as_bytes());
        for (k, v) in lines {
            out.extend_from_slice(format!("{k}:{v}\r\n").as_bytes());
        }
    };
    let kv = |k: &str, v: String| (k.to_string(), v);
    section(
        "Server",
        vec![
            kv("redis_version", REDIS_VERSION.to_string()),
            kv("redis_mode", "standalone".to_string()),
            kv("plumb_version", info.version.clone()),
            kv("os", info.os.clone()),
            kv("arch_bits", (usize::BITS).to_string()),
            kv("process_id", info.process_id.to_string()),
            kv("tcp_port", info.tcp_port.to_string()),
            kv("uptime_in_seconds", info.uptime_secs.to_string()),
            kv("uptime_in_days", (info.uptime_secs / 86_400).to_string()),
        ],
    );
    section(
        "Clients",
        vec![
            kv("connected_clients", info.connected_clients.to_string()),
            kv("blocked_clients", info.blocked_clients.to_string()),
        ],
    );
    let mib = info.memory_rss as f64 / (1024.0 * 1024.0);
    section(
        "Memory",
        vec![
            kv("used_memory", info.memory_rss.to_string()),
            kv("used_memory_human", format!("{mib:.2}M")),
            kv("used_memory_rss", info.memory_rss.to_string()),
            kv("maxmemory", "0".to_string()),
            kv("maxmemory_policy", "noeviction".to_string()),
        ],
    );
    section(
        "Persistence",
        vec![
            kv("loading", "0".to_string()),
            kv("rdb_changes_since_last_save", "0".to_string()),
            kv("rdb_bgsave_in_progress", "0".to_string()),
            kv("rdb_last_bgsave_status", "ok".to_string()),
            kv("aof_enabled", "0".to_string()),
        ],
    );
    section(
        "Stats",
        vec![
            kv(
                "total_connections_received",
                info.total_connections.to_string(),
            ),
            kv("total_commands_processed", info.total_commands.to_string()),
            kv("rejected_connections", "0".to_string()),
        ],
    );
    section(
        "Replication",
        vec![
            kv("role", "master".to_string()),
            kv("connected_slaves", "0".to_string()),
        ],
    );
    let secs = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    section(
        "CPU",
        vec![
            kv("used_cpu_sys", secs(info.cpu_sys_us)),
            kv("used_cpu_user", secs(info.cpu_user_us)),
        ],
    );
    let mut plumb = vec![kv("u", info.u.to_string()), kv("r", info.r.to_string())];
    plumb.extend(info.plumb_fields.iter().cloned());
    section("Plumb", plumb);
    out
}

/// `INFO`'s `# Keyspace` section from the cluster's [`KvOp::KeyspaceStats`] result, to append
/// to [`info_text`]'s (Redis lists only databases that hold keys).
pub fn keyspace_section(before: &[u8], result: &KvResult) -> Vec<u8> {
    let mut out = before.to_vec();
    if !out.is_empty() {
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"# Keyspace\r\n");
    if let KvResult::Ints(n) = result {
        if let [keys, expires] = n.as_slice() {
            if *keys > 0 {
                out.extend_from_slice(
                    format!("db0:keys={keys},expires={expires},avg_ttl=0\r\n").as_bytes(),
                );
            }
        }
    }
    out
}

/// `PUBSUB CHANNELS [pattern]`, `NUMSUB [channel ...]`, `NUMPAT`: reads of the replicated
/// subscriptions. The shard variants of Redis' cluster mode are not supported.
fn plan_pubsub(args: &[Vec<u8>]) -> Plan {
    let sub = &args[1];
    if is(sub, "channels") && args.len() <= 3 {
        submit(
            KvOp::PubSubChannels {
                pattern: args.get(2).cloned(),
            },
            Render::Plain,
        )
    } else if is(sub, "numsub") {
        submit(
            KvOp::PubSubNumSub {
                channels: args[2..].to_vec(),
            },
            Render::Plain,
        )
    } else if is(sub, "numpat") {
        if args.len() != 2 {
            return arity_error("pubsub|numpat");
        }
        submit(KvOp::PubSubNumPat, Render::Plain)
    } else if is(sub, "channels") {
        reject(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            text_prefix(sub, 128)
        ))
    } else {
        unknown_subcommand(sub, "pubsub")
    }
}

/// The reply to a command from the store's result, shaped by its [`Render`].
pub fn render(render: &Render, result: KvResult) -> Resp {
    match (render, result) {
        (_, KvResult::Error(text)) => Resp::Error(text),
        (Render::OkOrNil, KvResult::Bool(true)) => Resp::ok(),
        (Render::OkOrNil, KvResult::Bool(false)) => Resp::nil(),
        (Render::Ttl { millis }, KvResult::Int(micros)) if micros >= 0 => {
            // Rounded to the nearest unit, as Redis rounds milliseconds to seconds.
            let unit = if *millis { 1_000 } else { 1_000_000 };
            Resp::Integer(micros.saturating_add(unit / 2) / unit)
        }
        (Render::Status, KvResult::Value(Some(v))) => Resp::Simple(text(&v)),
        (Render::Ok, _) => Resp::ok(),
        (Render::ObjectRefcount | Render::ObjectEncoding, KvResult::Value(Some(kind)))
            if kind == b"none" =>
        {
            Resp::nil()
        }
        (Render::ObjectRefcount, KvResult::Value(Some(_))) => Resp::Integer(1),
        (Render::ObjectEncoding, KvResult::Value(Some(kind))) => {
            let encoding = match kind.as_slice() {
                b"string" => "raw",
                b"list" => "quicklist",
                b"zset" => "skiplist",
                _ => "hashtable",
            };
            Resp::bulk(encoding)
        }
        (Render::FlatPop, KvResult::PoppedScored(key, members)) => {
            let mut flat = vec![Resp::bulk(key)];
            for (m, s) in members {
                flat.push(Resp::bulk(m));
                flat.push(double(s));
            }
            Resp::array(flat)
        }
        (Render::FlatScored, KvResult::Scored(members)) => Resp::array(
            members
                .into_iter()
                .flat_map(|(m, s)| [Resp::bulk(m), double(s)])
                .collect(),
        ),
        (Render::Map, KvResult::Pairs(pairs)) => Resp::Map(
            pairs
                .into_iter()
                .map(|(f, v)| (Resp::bulk(f), Resp::bulk(v)))
                .collect(),
        ),
        (Render::Tuples, KvResult::Pairs(pairs)) => Resp::Pairs(
            pairs
                .into_iter()
                .map(|(f, v)| (Resp::bulk(f), Resp::bulk(v)))
                .collect(),
        ),
        (Render::Set, KvResult::Items(items)) => {
            Resp::Set(items.into_iter().map(Resp::bulk).collect())
        }
        (Render::Doubles, KvResult::Values(values)) => Resp::array(
            values
                .into_iter()
                .map(|v| match v {
                    Some(text) => Resp::Double(String::from_utf8_lossy(&text).into_owned()),
                    None => Resp::nil(),
                })
                .collect(),
        ),
        (_, result) => plain(result),
    }
}

/// A score as a double reply (`%.17g`, `inf`, `-inf`: the bulk string's text in RESP2).
fn double(score: Score) -> Resp {
    Resp::Double(score.to_string())
}

fn plain(result: KvResult) -> Resp {
    match result {
        KvResult::Value(v) => Resp::Bulk(v),
        KvResult::Ok => Resp::ok(),
        KvResult::Bool(b) => Resp::Integer(i64::from(b)),
        KvResult::Int(n) => Resp::Integer(n),
        KvResult::Error(text) => Resp::Error(text),
        KvResult::Keys(items) | KvResult::Items(items) => Resp::bulks(items),
        KvResult::Values(values) => Resp::array(values.into_iter().map(Resp::Bulk).collect()),
        KvResult::Pairs(pairs) => Resp::array(
            pairs
                .into_iter()
                .flat_map(|(f, v)| [Resp::bulk(f), Resp::bulk(v)])
                .collect(),
        ),
        KvResult::Nil => Resp::Array(None),
        KvResult::Score(score) => score.map_or_else(Resp::nil, double),
        KvResult::Scored(scored) => Resp::Pairs(
            scored
                .into_iter()
                .map(|(m, s)| (Resp::bulk(m), double(s)))
                .collect(),
        ),
        // Not a single command's result (the session renders these); shown plainly.
        KvResult::Each(results) => Resp::array(each(results).into_iter().map(plain).collect()),
        KvResult::Aborted => Resp::Array(None),
        KvResult::Ints(ns) => Resp::array(ns.into_iter().map(Resp::Integer).collect()),
        KvResult::Matches(ranges, len) => Resp::Map(vec![
            (
                Resp::bulk("matches"),
                Resp::array(
                    ranges
                        .into_iter()
                        .map(|r| {
                            let pair = |x: i64, y: i64| {
                                Resp::array(vec![Resp::Integer(x), Resp::Integer(y)])
                            };
                            let mut item = vec![pair(r[0], r[1]), pair(r[2], r[3])];
                            item.extend(r.get(4).map(|&n| Resp::Integer(n)));
                            Resp::array(item)
                        })
                        .collect(),
                ),
            ),
            (Resp::bulk("len"), Resp::Integer(len)),
        ]),
        KvResult::Popped(key, items) => Resp::array(vec![Resp::bulk(key), Resp::bulks(items)]),
        KvResult::PoppedScored(key, members) => Resp::array(vec![
            Resp::bulk(key),
            Resp::array(
                members
                    .into_iter()
                    .map(|(m, s)| Resp::array(vec![Resp::bulk(m), double(s)]))
                    .collect(),
            ),
        ]),
        KvResult::Counts(counts) => Resp::array(
            counts
                .into_iter()
                .flat_map(|(name, n)| [Resp::bulk(name), Resp::Integer(n)])
                .collect(),
        ),
        KvResult::Cursor(next, items) => Resp::array(vec![
            Resp::bulk(next.to_string().into_bytes()),
            Resp::bulks(items),
        ]),
        KvResult::Script(bytes) => Resp::parse(&bytes)
            .unwrap_or_else(|| Resp::error("ERR the cluster's script reply is not one RESP value")),
    }
}

/// The encoded results of a [`KvResult::Each`], decoded (an undecodable one becomes an error).
pub fn each(results: Vec<Vec<u8>>) -> Vec<KvResult> {
    results
        .iter()
        .map(|bytes| {
            KvResult::decode(bytes).unwrap_or_else(|e| {
                KvResult::Error(format!("ERR the cluster's answer does not decode: {e}"))
            })
        })
        .collect()
}
