//! The Redis front end against Redis itself: one seeded random command sequence, sent to a
//! real plumb cluster through the gateway and to `redis-server` (Debian's 7.0), every reply
//! compared. Replies whose order Redis leaves to its hash tables (`SMEMBERS`, `HGETALL`, ...)
//! are compared sorted. A random choice (`SPOP`) is compared by validity: the members plumb
//! popped must be members Redis removes with `SREM`, which keeps the two stores equal. One
//! step in ten sends three commands as a transaction (`MULTI`/`EXEC`) or a pipeline. A second
//! sequence runs the same way with both connections in RESP3 (redis-rs' `protocol=resp3`).
//!
//! Skipped, with a message, where `redis-server` is not installed (`.ci/run` installs it).
//!
//! Ports: slot 25 (23500..23599) of `common::Cluster`'s scheme; redis-server on 23590.

mod common;

use common::splitmix::SplitMix64;
use common::Cluster;
use redis::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REDIS_PORT: u16 = 23590;
const COMMANDS: usize = 3000;
const COMMANDS_RESP3: usize = 1500;

struct RedisServer(Child);

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A redis-rs connection; with `resp3` it speaks RESP3 (redis-rs sends `HELLO 3`).
fn connect(port: u16, resp3: bool) -> redis::Connection {
    let deadline = Instant::now() + Duration::from_secs(20);
    let query = if resp3 { "?protocol=resp3" } else { "" };
    loop {
        let attempt = redis::Client::open(format!("redis://127.0.0.1:{port}/{query}"))
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)));
        match attempt {
            Ok(con) => {
                con.set_read_timeout(Some(common::OP_TIMEOUT)).unwrap();
                return con;
            }
            Err(e) => assert!(Instant::now() < deadline, "connect to {port}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A reply or an error, as text: redis-rs parses both servers' bytes the same way.
fn run(con: &mut redis::Connection, args: &[String]) -> Result<Value, String> {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    cmd.query::<Value>(con).map_err(|e| e.to_string())
}

/// The reply with its array elements in sorted order (pairs kept together for `HGETALL`;
/// in RESP3 a map's entries and a set's members sorted).
fn sorted(reply: Result<Value, String>, pairs: bool) -> Result<Value, String> {
    let key = |v: &Value| format!("{v:?}");
    let items = match reply {
        Ok(Value::Array(items)) => items,
        Ok(Value::Set(mut items)) => {
            items.sort_by_key(key);
            return Ok(Value::Set(items));
        }
        Ok(Value::Map(mut entries)) => {
            entries.sort_by_key(|(k, v)| (key(k), key(v)));
            return Ok(Value::Map(entries));
        }
        other => return other,
    };
    if pairs {
        let mut chunks: Vec<Vec<Value>> = items.chunks(2).map(<[Value]>::to_vec).collect();
        chunks.sort_by_key(|c| c.iter().map(key).collect::<Vec<_>>());
        return Ok(Value::Array(chunks.concat()));
    }
    let mut items = items;
    items.sort_by_key(key);
    Ok(Value::Array(items))
}

const KEYS: &[&str] = &[
    "k1", "k2", "k3", "h1", "h2", "l1", "l2", "s1", "s2", "z1", "z2",
];
const VALUES: &[&str] = &["0", "1", "7", "-3", "10", "a", "bc", "", "1.5", "x y"];
const MEMBERS: &[&str] = &["m1", "m2", "m3", "m4", "1", "2"];

/// How a command's reply is compared.
enum Compare {
    Exact,
    Sorted,
    SortedPairs,
    /// `SPOP`: plumb's choice, then the same members removed from Redis.
    Popped,
}

fn command(rng: &mut SplitMix64) -> (Vec<String>, Compare) {
    let k = rng.pick(KEYS).to_string();
    let k2 = rng.pick(KEYS).to_string();
    let v = rng.pick(VALUES).to_string();
    let m = rng.pick(MEMBERS).to_string();
    let n = rng.int(-3, 5).to_string();
    let s = |items: &[&str]| items.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    use Compare::*;
    let (args, how): (Vec<String>, Compare) = match rng.next() % 66 {
        0 => (s(&["SET", &k, &v]), Exact),
        1 => (s(&["GET", &k]), Exact),
        2 => (s(&["SETNX", &k, &v]), Exact),
        3 => (s(&["GETSET", &k, &v]), Exact),
        4 => (s(&["APPEND", &k, &v]), Exact),
        5 => (s(&["STRLEN", &k]), Exact),
        6 => (s(&["INCR", &k]), Exact),
        7 => (s(&["INCRBY", &k, &n]), Exact),
        8 => (s(&["DECR", &k]), Exact),
        9 => (s(&["MGET", &k, &k2]), Exact),
        10 => (s(&["MSET", &k, &v, &k2, &m]), Exact),
        11 => (s(&["DEL", &k, &k2]), Exact),
        12 => (s(&["EXISTS", &k, &k2, &k]), Exact),
        13 => (s(&["GETDEL", &k]), Exact),
        14 => (s(&["GETRANGE", &k, &n, &rng.int(-2, 3).to_string()]), Exact),
        15 => (s(&["SETRANGE", &k, &rng.int(0, 4).to_string(), &v]), Exact),
        16 => (s(&["MSETNX", &k, &v, &k2, &v]), Exact),
        17 => (s(&["TYPE", &k]), Exact),
        18 => (s(&["RENAME", &k, &k2]), Exact),
        19 => (s(&["RENAMENX", &k, &k2]), Exact),
        20 => (s(&["HSET", &k, &m, &v]), Exact),
        21 => (s(&["HGET", &k, &m]), Exact),
        22 => (s(&["HDEL", &k, &m]), Exact),
        23 => (s(&["HGETALL", &k]), SortedPairs),
        24 => (s(&["HINCRBY", &k, &m, &n]), Exact),
        25 => (s(&["HMGET", &k, &m, "m2"]), Exact),
        26 => (s(&["HEXISTS", &k, &m]), Exact),
        27 => (s(&["HLEN", &k]), Exact),
        28 => (s(&["HKEYS", &k]), Sorted),
        29 => (s(&["HSETNX", &k, &m, &v]), Exact),
        30 => (s(&["LPUSH", &k, &v, &m]), Exact),
        31 => (s(&["RPUSH", &k, &m]), Exact),
        32 => (s(&["LPOP", &k]), Exact),
        33 => (s(&["RPOP", &k, &rng.int(0, 3).to_string()]), Exact),
        34 => (s(&["LRANGE", &k, &n, &rng.int(-3, 5).to_string()]), Exact),
        35 => (s(&["LLEN", &k]), Exact),
        36 => (s(&["LINDEX", &k, &n]), Exact),
        37 => (s(&["LSET", &k, &n, &v]), Exact),
        38 => (s(&["LTRIM", &k, &n, &rng.int(-3, 5).to_string()]), Exact),
        39 => (s(&["LREM", &k, &n, &m]), Exact),
        40 => (s(&["LINSERT", &k, "BEFORE", &m, &v]), Exact),
        41 => (s(&["LPOS", &k, &m]), Exact),
        42 => (s(&["LMOVE", &k, &k2, "LEFT", "RIGHT"]), Exact),
        43 => (s(&["SADD", &k, &m, "m2"]), Exact),
        44 => (s(&["SREM", &k, &m]), Exact),
        45 => (s(&["SMEMBERS", &k]), Sorted),
        46 => (s(&["SISMEMBER", &k, &m]), Exact),
        47 => (s(&["SCARD", &k]), Exact),
        48 => (s(&["SINTER", &k, &k2]), Sorted),
        49 => (s(&["SUNIONSTORE", &k, &k, &k2]), Exact),
        50 => (s(&["SMOVE", &k, &k2, &m]), Exact),
        51 => (s(&["SPOP", &k]), Popped),
        52 => (s(&["ZADD", &k, &n, &m]), Exact),
        53 => (s(&["ZINCRBY", &k, "1.5", &m]), Exact),
        54 => (s(&["ZRANGE", &k, "0", "-1", "WITHSCORES"]), Exact),
        55 => (s(&["ZSCORE", &k, &m]), Exact),
        56 => (s(&["ZRANK", &k, &m]), Exact),
        57 => (s(&["ZREMRANGEBYSCORE", &k, "-inf", &n]), Exact),
        58 => (
            s(&["ZUNIONSTORE", &k, "2", &k, &k2, "WEIGHTS", "2", "1"]),
            Exact,
        ),
        _ => (s(&["EXPIRE", &k, "1000"]), Exact),
    };
    (args, how)
}

#[test]
fn a_random_command_sequence_gets_the_replies_redis_gives() {
    let Ok(server) = Command::new("redis-server")
        .args([
            "--port",
            &REDIS_PORT.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        common::tool_missing("redis-server", ".ci/run installs Debian's redis-server");
        return;
    };
    let _server = RedisServer(server);
    let mut c = Cluster::init("redis-differential", 25);
    c.start_all();
    // Another sequence by hand: PLUMB_DIFF_SEED=N cargo test --test redis_differential.
    let seed = std::env::var("PLUMB_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2026);
    compare(c.resp_port, false, seed, COMMANDS);
    // Then RESP3 on both (maps, sets, doubles, nulls, pairs as redis-rs reads them).
    compare(c.resp_port, true, seed + 1, COMMANDS_RESP3);
}

/// `n` random commands from `seed`, each sent to plumb and to redis-server on fresh
/// connections speaking RESP3 if `resp3`, every reply compared; both stores start empty.
fn compare(plumb_port: u16, resp3: bool, seed: u64, n: usize) {
    let mut plumb = connect(plumb_port, resp3);
    let mut redis = connect(REDIS_PORT, resp3);
    run(&mut plumb, &["FLUSHALL".into()]).unwrap();
    run(&mut redis, &["FLUSHALL".into()]).unwrap();
    // The connections speak the protocol asked for: HELLO answers a map only in RESP3.
    for con in [&mut plumb, &mut redis] {
        let hello = run(con, &["HELLO".into()]);
        let shape = match &hello {
            Ok(Value::Map(_)) => true,
            Ok(Value::Array(_)) => false,
            other => panic!("HELLO: {other:?}"),
        };
        assert_eq!(shape, resp3, "HELLO: {hello:?}");
    }
    let mut rng = SplitMix64(seed);
    let mut compared = 0;
    for i in 0..n {
        // One step in ten is a transaction or a pipeline of three commands.
        if rng.next().is_multiple_of(10) {
            let atomic = rng.next().is_multiple_of(2);
            let mut group = Vec::new();
            while group.len() < 3 {
                if let (args, Compare::Exact) = command(&mut rng) {
                    group.push(args);
                }
            }
            let mut pipe = redis::pipe();
            if atomic {
                pipe.atomic();
            }
            for args in &group {
                let mut cmd = redis::cmd(&args[0]);
                for a in &args[1..] {
                    cmd.arg(a);
                }
                pipe.add_command(cmd);
            }
            let ours = pipe.query::<Value>(&mut plumb).map_err(|e| e.to_string());
            let theirs = pipe.query::<Value>(&mut redis).map_err(|e| e.to_string());
            assert_eq!(
                format!("{ours:?}"),
                format!("{theirs:?}"),
                "step {i}: {} {group:?} (plumb left, Redis right)",
                if atomic { "MULTI/EXEC" } else { "pipeline" }
            );
            compared += group.len();
            continue;
        }
        let (args, how) = command(&mut rng);
        let ours = run(&mut plumb, &args);
        match how {
            Compare::Popped => {
                // Validity: Redis must hold what plumb popped, and now loses it too.
                let (check, expected) = match &ours {
                    Ok(Value::BulkString(m)) => {
                        let m = String::from_utf8_lossy(m).into_owned();
                        (
                            vec!["SREM".to_string(), args[1].clone(), m],
                            Ok(Value::Int(1)),
                        )
                    }
                    Ok(Value::Nil) => (
                        vec!["SCARD".to_string(), args[1].clone()],
                        Ok(Value::Int(0)),
                    ),
                    other => (args.clone(), other.clone()),
                };
                let got = run(&mut redis, &check);
                assert_eq!(
                    format!("{got:?}"),
                    format!("{expected:?}"),
                    "command {i}: {args:?}: plumb popped {ours:?}"
                );
            }
            Compare::Exact | Compare::Sorted | Compare::SortedPairs => {
                let theirs = run(&mut redis, &args);
                let (ours, theirs) = match how {
                    Compare::Sorted => (sorted(ours, false), sorted(theirs, false)),
                    Compare::SortedPairs => (sorted(ours, true), sorted(theirs, true)),
                    _ => (ours, theirs),
                };
                assert_eq!(
                    format!("{ours:?}"),
                    format!("{theirs:?}"),
                    "command {i}: {args:?} (plumb left, Redis right)"
                );
            }
        }
        compared += 1;
    }
    // The stores end equal, key by key.
    for key in KEYS {
        let args = ["TYPE".to_string(), key.to_string()];
        assert_eq!(
            format!("{:?}", run(&mut plumb, &args)),
            format!("{:?}", run(&mut redis, &args)),
            "TYPE {key} at the end"
        );
    }
    let protocol = if resp3 { "RESP3" } else { "RESP2" };
    eprintln!(
        "{compared} random commands in {protocol} (seed {seed}): every reply as redis-server's"
    );
}
