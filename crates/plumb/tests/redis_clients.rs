//! Transactions, pipelining and blocking pops through the Redis gateway of a real cluster,
//! with clients nobody on the project wrote: redis-cli, redis-rs and redis-py.
//!
//! - `MULTI` ... `EXEC` is one operation: queued commands do not run before `EXEC`, and they
//!   run together (`printf 'MULTI\nINCR txctr\nEXEC\n' | redis-cli` leaves txctr at 1).
//! - `WATCH` is an optimistic lock: concurrent read-modify-write loops under it lose no
//!   update.
//! - A pipeline's commands go as one request and their replies come back in order.
//! - A `BLPOP` on an empty list waits, holding no pool client, and is served by a later push;
//!   producers and consumers of a queue move every job exactly once.
//! - Keys set to expire and never read again are removed by the gateway's periodic purge.
//!
//! Ports: slot 24 (23400..23499) of `common::Cluster`'s scheme.

mod common;

use common::redis_wire::redis_cli;
use common::Cluster;
use std::time::Instant;

fn connect(port: u16) -> redis::Connection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let con = client.get_connection().unwrap();
    con.set_read_timeout(Some(common::OP_TIMEOUT)).unwrap();
    con
}

#[test]
fn transactions_pipelines_and_blocking_pops_with_real_redis_clients() {
    let mut c = Cluster::init("redis-transactions", 24);
    c.start_all();
    let port = c.resp_port;

    // redis-cli, commands one per line as a user types them.
    let out = redis_cli(
        port,
        &[],
        "MULTI\nINCR txctr\nINCR txctr\nGET txctr\nEXEC\nGET txctr\n",
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        // Not a terminal: redis-cli prints raw replies, EXEC's array one element a line.
        ["OK", "QUEUED", "QUEUED", "QUEUED", "1", "2", "2", "2"],
        "{out}"
    );
    // A queue-time error discards the whole transaction; nothing of it ran.
    let out = redis_cli(port, &[], "MULTI\nINCR txctr\nNOSUCH\nEXEC\nGET txctr\n");
    assert!(out.contains("EXECABORT"), "{out}");
    assert!(out.trim_end().ends_with("\n2"), "{out}");

    // redis-rs: concurrent WATCH/MULTI/EXEC read-modify-write loops lose no update.
    let mut con = connect(port);
    redis::cmd("SET")
        .arg("counter")
        .arg(0)
        .query::<()>(&mut con)
        .unwrap();
    let (threads, each) = (4, 20);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let mut con = connect(port);
                let mut aborted = 0;
                for _ in 0..each {
                    loop {
                        redis::cmd("WATCH")
                            .arg("counter")
                            .query::<()>(&mut con)
                            .unwrap();
                        let v: i64 = redis::cmd("GET").arg("counter").query(&mut con).unwrap();
                        let done: Option<(String,)> = redis::pipe()
                            .atomic()
                            .cmd("SET")
                            .arg("counter")
                            .arg(v + 1)
                            .query(&mut con)
                            .unwrap();
                        if done.is_some() {
                            break;
                        }
                        aborted += 1;
                    }
                }
                aborted
            })
        })
        .collect();
    let aborted: u32 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let total: i64 = redis::cmd("GET").arg("counter").query(&mut con).unwrap();
    assert_eq!(total, threads * each, "no update lost under WATCH");
    eprintln!(
        "WATCH: {} increments from {threads} connections, {aborted} EXECs aborted and retried",
        total
    );

    // redis-rs: a pipeline of 1000 INCRs, replies in order, against the same INCRs one by one.
    let n = 1000;
    let started = Instant::now();
    let mut pipe = redis::pipe();
    for _ in 0..n {
        pipe.cmd("INCR").arg("piped");
    }
    let replies: Vec<i64> = pipe.query(&mut con).unwrap();
    let pipelined = started.elapsed();
    assert_eq!(replies, (1..=n).collect::<Vec<i64>>());
    let started = Instant::now();
    for i in 1..=n {
        let got: i64 = redis::cmd("INCR").arg("single").query(&mut con).unwrap();
        assert_eq!(got, i);
    }
    let single = started.elapsed();
    eprintln!(
        "{n} INCRs on one connection: pipelined {:.3} s, one by one {:.3} s ({:.1}x)",
        pipelined.as_secs_f64(),
        single.as_secs_f64(),
        single.as_secs_f64() / pipelined.as_secs_f64().max(1e-6)
    );
    // The gateway sent the pipeline as few requests: its submitted counter grew by far less
    // than the commands (a count, not a time).
    let submitted = |c: &Cluster| -> u64 {
        let text = common::http_get(c.gateway_admin(), "/metrics").unwrap();
        common::metric_sample(&text, "plumb_gateway_submitted_total")
    };
    let before = submitted(&c);
    let mut pipe = redis::pipe();
    for _ in 0..n {
        pipe.cmd("INCR").arg("piped");
    }
    let _: Vec<i64> = pipe.query(&mut con).unwrap();
    let requests = submitted(&c) - before;
    assert!(
        requests * 10 <= n as u64,
        "{requests} requests for {n} pipelined commands"
    );

    // redis-rs: a BLPOP waits for a push from another connection, and times out with nil.
    let waiter = std::thread::spawn(move || {
        let mut con = connect(port);
        let started = Instant::now();
        let got: Option<(String, String)> = redis::cmd("BLPOP")
            .arg("queue")
            .arg(10)
            .query(&mut con)
            .unwrap();
        (got, started.elapsed())
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    redis::cmd("RPUSH")
        .arg("queue")
        .arg("job-1")
        .query::<()>(&mut con)
        .unwrap();
    let (got, waited) = waiter.join().unwrap();
    assert_eq!(got, Some(("queue".to_string(), "job-1".to_string())));
    eprintln!("BLPOP served by a push after {:.3} s", waited.as_secs_f64());
    let none: Option<(String, String)> = redis::cmd("BLPOP")
        .arg("empty")
        .arg(0.2)
        .query(&mut con)
        .unwrap();
    assert_eq!(none, None);

    // A consumer that leaves while it waits takes nothing: the gateway stops waiting for it.
    {
        use std::io::Write as _;
        let mut gone = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        gone.write_all(b"*3\r\n$5\r\nBLPOP\r\n$5\r\nghost\r\n$1\r\n0\r\n")
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let blocked = |con: &mut redis::Connection| -> String {
        let info: String = redis::cmd("INFO").arg("clients").query(con).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .unwrap_or("?")
            .trim()
            .to_string()
    };
    let deadline = Instant::now() + common::OP_TIMEOUT;
    while blocked(&mut con) != "0" {
        assert!(
            Instant::now() < deadline,
            "the departed consumer is still waiting"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    redis::cmd("RPUSH")
        .arg("ghost")
        .arg("job")
        .query::<()>(&mut con)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let left: i64 = redis::cmd("LLEN").arg("ghost").query(&mut con).unwrap();
    assert_eq!(left, 1, "the job is still there for a live consumer");

    // BLMPOP and BZPOPMIN waiters are served oldest first, woken by the write itself: the
    // first takes one element, the second the rest (they once waited on no key, so whichever
    // polled first took everything and the other waited for ever).
    for (kind, first_cmd, second_cmd, fill) in [
        (
            "list",
            ["BLMPOP", "0", "1", "mq", "LEFT", "COUNT", "1"].as_slice(),
            ["BLMPOP", "0", "1", "mq", "LEFT", "COUNT", "10"].as_slice(),
            ["RPUSH", "mq", "a", "b", "c"].as_slice(),
        ),
        (
            "zset",
            ["BZPOPMIN", "mz", "0"].as_slice(),
            ["BZMPOP", "0", "1", "mz", "MIN", "COUNT", "10"].as_slice(),
            ["ZADD", "mz", "1", "a", "2", "b", "3", "c"].as_slice(),
        ),
    ] {
        let spawn = |args: &'static [&'static str]| {
            std::thread::spawn(move || {
                let mut con = connect(port);
                let mut cmd = redis::cmd(args[0]);
                for a in &args[1..] {
                    cmd.arg(*a);
                }
                cmd.query::<redis::Value>(&mut con).unwrap()
            })
        };
        let wait_blocked = |con: &mut redis::Connection, n: &str| {
            let deadline = Instant::now() + common::OP_TIMEOUT;
            while blocked(con) != n {
                assert!(
                    Instant::now() < deadline,
                    "{kind}: {n} waiters never blocked"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        };
        let first = spawn(first_cmd);
        wait_blocked(&mut con, "1");
        // Long enough for the first waiter's own polls to space out (250 ms, then 500, 1 s):
        // were waiters served by their polls alone, the second's first poll would come
        // before the first's next one and take everything.
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let second = spawn(second_cmd);
        wait_blocked(&mut con, "2");
        let mut cmd = redis::cmd(fill[0]);
        for a in &fill[1..] {
            cmd.arg(*a);
        }
        cmd.query::<()>(&mut con).unwrap();
        let (first, second) = (first.join().unwrap(), second.join().unwrap());
        // The members and elements each got, scores and keys left out.
        let got = |v: &redis::Value| -> Vec<String> {
            strings(v)
                .into_iter()
                .filter(|s| ["a", "b", "c"].contains(&s.as_str()))
                .collect()
        };
        assert_eq!(got(&first), ["a"], "{kind}: the oldest waiter: {first:?}");
        assert_eq!(got(&second), ["b", "c"], "{kind}: the second: {second:?}");
    }

    // Callers are served in order of arrival, the first attempt included: the first of two
    // BRPOPLPUSHes, whose destination is not a list, fails with WRONGTYPE and the element goes
    // to the second (Redis' own suite, "BRPOPLPUSH with multiple blocked clients"; once the
    // second's first attempt could run after the push and take it, leaving the first waiting
    // for ever). In the first rounds the second is sent once the first is listed as blocked
    // (which it is from before its first attempt); the push follows at once, while the first's
    // first attempt may still be in flight. In the later rounds the two are sent back to back,
    // as Redis' suite sends them: the gateway's two connection tasks may then read them in
    // either order, and the queue follows the kernel's receive stamps instead (before that,
    // the second was served first in 15 of 100 such rounds, and `.ci/run`'s list unit hung);
    // and `INFO` counts a caller as blocked only once no attempt of its is in flight (before
    // that, the second's first attempt could be ordered after the push and take its element:
    // twice in about 160 back-to-back rounds under a full test run).
    // In the last rounds the push follows the two at once, as in Redis' suite, without
    // waiting for them to be counted blocked: the second's task could then run first (tokio
    // runs the task woken last first), find the queue empty and take the element before the
    // first was queued; a first attempt now waits until its command is 2 ms old
    // (`FIRST_ATTEMPT_AGE`). Without that, Redis' suite hung in `unit/type/list`.
    // `blocking.rs`'s unit tests check the rule itself.
    let blocked_id = |con: &mut redis::Connection, id: i64| {
        let deadline = Instant::now() + common::OP_TIMEOUT;
        loop {
            let list: String = redis::cmd("CLIENT").arg("LIST").query(con).unwrap();
            if list
                .lines()
                .any(|l| l.starts_with(&format!("id={id} ")) && l.contains("flags=b"))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{id} never listed as blocked:\n{list}"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    let blocked_count = |con: &mut redis::Connection, count: u64| {
        let deadline = Instant::now() + common::OP_TIMEOUT;
        loop {
            let info: String = redis::cmd("INFO").arg("clients").query(con).unwrap();
            if info
                .lines()
                .any(|l| l.trim() == format!("blocked_clients:{count}"))
            {
                return;
            }
            assert!(Instant::now() < deadline, "never {count} blocked:\n{info}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    for round in 0..65 {
        let back_to_back = round >= 5;
        let push_at_once = round >= 45;
        redis::cmd("DEL")
            .arg("bl")
            .arg("t2")
            .query::<()>(&mut con)
            .unwrap();
        redis::cmd("SET")
            .arg("t1")
            .arg("nolist")
            .query::<()>(&mut con)
            .unwrap();
        let mut rd1 = connect(port);
        let mut rd2 = connect(port);
        // A first caller left waiting for ever fails the round rather than the whole run.
        rd1.set_read_timeout(Some(common::OP_TIMEOUT)).unwrap();
        let id1: i64 = redis::cmd("CLIENT").arg("ID").query(&mut rd1).unwrap();
        rd1.send_packed_command(
            &redis::cmd("BRPOPLPUSH")
                .arg("bl")
                .arg("t1")
                .arg(0)
                .get_packed_command(),
        )
        .unwrap();
        if !back_to_back {
            blocked_id(&mut con, id1);
        }
        rd2.send_packed_command(
            &redis::cmd("BRPOPLPUSH")
                .arg("bl")
                .arg("t2")
                .arg(0)
                .get_packed_command(),
        )
        .unwrap();
        if !push_at_once {
            blocked_count(&mut con, 2);
        }
        redis::cmd("LPUSH")
            .arg("bl")
            .arg("foo")
            .query::<()>(&mut con)
            .unwrap();
        let first = rd1.recv_response();
        // An error reply comes as a value (redis-rs 0.27) or an error, by its version.
        assert!(
            format!("{first:?}").contains("WRONGTYPE"),
            "round {round} (back to back: {back_to_back}, push at once: {push_at_once}): the first caller: {first:?}"
        );
        let second: String = redis::from_redis_value(&rd2.recv_response().unwrap()).unwrap();
        assert_eq!(second, "foo", "round {round}");
    }

    // CLIENT LIST shows a blocked caller (flags=b); CLIENT UNBLOCK wakes it with the
    // UNBLOCKED error or, with TIMEOUT, a nil reply; CLIENT KILL ID closes a connection.
    for (how, expect_error) in [("ERROR", true), ("TIMEOUT", false)] {
        let mut waiting = connect(port);
        let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut waiting).unwrap();
        waiting
            .send_packed_command(&redis::cmd("BLPOP").arg("never").arg(0).get_packed_command())
            .unwrap();
        blocked_id(&mut con, id);
        let woken: i64 = redis::cmd("CLIENT")
            .arg("UNBLOCK")
            .arg(id)
            .arg(how)
            .query(&mut con)
            .unwrap();
        assert_eq!(woken, 1, "{how}");
        let reply = waiting.recv_response();
        if expect_error {
            assert!(format!("{reply:?}").contains("UNBLOCKED"), "{reply:?}");
        } else {
            assert_eq!(reply.unwrap(), redis::Value::Nil);
        }
        let again: i64 = redis::cmd("CLIENT")
            .arg("UNBLOCK")
            .arg(id)
            .query(&mut con)
            .unwrap();
        assert_eq!(again, 0, "{how}: no longer blocked");
    }
    let mut victim = connect(port);
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut victim).unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query(&mut con)
        .unwrap();
    assert_eq!(killed, 1);
    assert!(
        redis::cmd("PING").query::<String>(&mut victim).is_err(),
        "a killed connection is closed"
    );

    // Keys that expire unread give their memory back: the gateway orders PurgeExpired every
    // 10 s while it serves (expiry is per object, docs/objects.md "Access sets").
    let purged = |c: &Cluster| -> u64 {
        let text = common::http_get(c.gateway_admin(), "/metrics").unwrap();
        common::metric_sample(&text, "plumb_gateway_expired_purged_total")
    };
    let before = purged(&c);
    for i in 0..50 {
        let key = format!("short-lived-{i}");
        redis::cmd("SET")
            .arg(key)
            .arg("v")
            .arg("PX")
            .arg(50)
            .query::<()>(&mut con)
            .unwrap();
    }
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    while purged(&c) < before + 50 {
        assert!(
            Instant::now() < deadline,
            "expired keys never purged: {}",
            purged(&c)
        );
        // Something to serve, so that the gateway keeps purging.
        let _: Option<String> = redis::cmd("GET").arg("unrelated").query(&mut con).unwrap();
        std::thread::sleep(std::time::Duration::from_secs(1));
    }

    // redis-py, from Python's ecosystem.
    common::run_redis_py("clients.py", port);
}

/// Every bulk string in a reply, depth first.
fn strings(v: &redis::Value) -> Vec<String> {
    match v {
        redis::Value::BulkString(b) => vec![String::from_utf8_lossy(b).into_owned()],
        redis::Value::Array(items) => items.iter().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}
