//! What a command's handler is given ([`Call`]: the command's arguments and what the gateway
//! knows, [`ServerInfo`]) and what it gives back ([`Plan`], with the [`Render`] of the store's
//! result).

use crate::{Protocol, Resp};
use plumb_kv::KvOp;

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

/// How a command shapes the store's result into its reply. A
/// [`KvResult::Error`](plumb_kv::KvResult::Error) is always sent as an error reply.
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
    /// enabled the fast read path), then turn its result into a reply with
    /// [`render`](crate::render).
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
    /// figures come from the cluster: [`KvOp::KeyspaceStats`], see
    /// [`keyspace_section`](crate::keyspace_section)).
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

/// What a command's handler is given: the command's name as the table spells it (for the
/// error texts that quote it), its arguments (name first, arity already checked) and what the
/// gateway knows.
pub(crate) struct Call<'a> {
    pub name: &'static str,
    pub args: &'a [Vec<u8>],
    pub info: &'a ServerInfo,
}

impl Call<'_> {
    /// The first argument after the name: the key of most commands.
    pub fn key(&self) -> Vec<u8> {
        self.args[1].clone()
    }

    /// The arguments from `from` on.
    pub fn rest(&self, from: usize) -> Vec<Vec<u8>> {
        self.args[from..].to_vec()
    }
}
