//! Commands about the server: `INFO`, `CONFIG`, `DBSIZE`, `FLUSHALL`, `TIME`, `MEMORY`,
//! `FUNCTION`.

use crate::commands::args::{
    arity_error, err, int_arg, is, submit, syntax_error, text, unknown_subcommand,
};
use crate::commands::call::{Call, Plan, Render, ServerInfo};
use crate::Resp;
use plumb_kv::{glob_match, KvOp, KvResult};

/// The Redis version the gateway reports (`INFO`, `HELLO`): the command set and replies
/// follow Redis 7.0.
pub const REDIS_VERSION: &str = "7.0.15";

pub(super) fn info(c: &Call) -> Plan {
    Plan::Info {
        text: info_text(&c.args[1..], c.info),
        keyspace: wants_section(&c.args[1..], "keyspace"),
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

/// `CONFIG GET parameter ...` (of [`CONFIG`]), `CONFIG SET` (of [`CONFIG_NO_EFFECT`]),
/// `RESETSTAT`, `REWRITE`.
pub(super) fn config(c: &Call) -> Plan {
    let args = c.args;
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

pub(super) fn dbsize(_: &Call) -> Plan {
    submit(KvOp::DbSize, Render::Plain)
}

/// `FLUSHALL [ASYNC|SYNC]`, and `FLUSHDB`: plumb has one database.
pub(super) fn flushall(c: &Call) -> Plan {
    match c.args.get(1) {
        _ if c.args.len() > 2 => syntax_error(),
        Some(mode) if !is(mode, "async") && !is(mode, "sync") => syntax_error(),
        _ => submit(KvOp::FlushAll, Render::Plain),
    }
}

pub(super) fn time(c: &Call) -> Plan {
    let micros = c.info.now_ms.saturating_mul(1000);
    Plan::Reply(Resp::array(vec![
        Resp::bulk(micros.div_euclid(1_000_000).to_string()),
        Resp::bulk(micros.rem_euclid(1_000_000).to_string()),
    ]))
}

/// `MEMORY USAGE key [SAMPLES n]`.
pub(super) fn memory(c: &Call) -> Plan {
    let args = c.args;
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

/// `FUNCTION`: plumb runs no Redis functions (7.0's stored Lua libraries). `FLUSH` and `LIST`
/// answer as a server without any do; loading one is refused with the reason.
pub(super) fn function(c: &Call) -> Plan {
    let args = c.args;
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
