//! Redis pub/sub through the gateway of a real cluster: the reply and message frames byte for
//! byte as Redis 7.0.15 sent them (recorded with two connections to `redis-server`), then
//! redis-rs and redis-py (clients nobody on the project wrote) subscribing and publishing.
//!
//! Ports: slot 31 (24100..24199) of `common::Cluster`'s scheme.

mod common;

use common::{redis_wire, Cluster};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// `(connection, command, exact bytes that follow)`: connection `a` or `b`; an empty command
/// only reads (a message pushed to `a`). Recorded from redis-server 7.0.15 on loopback.
/// Left out, as they differ on purpose (docs/redis.md "Pub/sub"): `PUBSUB CHANNELS` without a
/// pattern lists channels in byte order (Redis: hash order), `SUBSCRIBE` inside `MULTI` is
/// refused, and `PUBSUB HELP`.
const PUBSUB_TRANSCRIPT: &[(char, &str, &[u8])] = &[
    ('b', "PUBLISH chan nobody", b":0\r\n"),
    (
        'a',
        "SUBSCRIBE chan other",
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nchan\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:2\r\n",
    ),
    ('a', "SUBSCRIBE chan", b"*3\r\n$9\r\nsubscribe\r\n$4\r\nchan\r\n:2\r\n"),
    ('b', "PUBLISH chan hello", b":1\r\n"),
    ('a', "", b"*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n"),
    (
        'a',
        "GET k",
        b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
    ),
    ('a', "PING", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"),
    ('a', "PING hi", b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"),
    ('a', "PSUBSCRIBE ch*", b"*3\r\n$10\r\npsubscribe\r\n$3\r\nch*\r\n:3\r\n"),
    ('b', "PUBLISH chan both", b":2\r\n"),
    (
        'a',
        "",
        b"*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$4\r\nboth\r\n*4\r\n$8\r\npmessage\r\n$3\r\nch*\r\n$4\r\nchan\r\n$4\r\nboth\r\n",
    ),
    ('b', "PUBSUB CHANNELS o*", b"*1\r\n$5\r\nother\r\n"),
    (
        'b',
        "PUBSUB NUMSUB chan nope",
        b"*4\r\n$4\r\nchan\r\n:1\r\n$4\r\nnope\r\n:0\r\n",
    ),
    ('b', "PUBSUB NUMPAT", b":1\r\n"),
    ('b', "PUBSUB NUMSUB", b"*0\r\n"),
    (
        'b',
        "PUBSUB FOO",
        b"-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\r\n",
    ),
    (
        'b',
        "PUBSUB",
        b"-ERR wrong number of arguments for 'pubsub' command\r\n",
    ),
    (
        'b',
        "PUBSUB NUMPAT x",
        b"-ERR wrong number of arguments for 'pubsub|numpat' command\r\n",
    ),
    (
        'b',
        "PUBSUB CHANNELS a b",
        b"-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.\r\n",
    ),
    (
        'b',
        "PUBLISH x",
        b"-ERR wrong number of arguments for 'publish' command\r\n",
    ),
    (
        'b',
        "SUBSCRIBE",
        b"-ERR wrong number of arguments for 'subscribe' command\r\n",
    ),
    (
        'a',
        "UNSUBSCRIBE chan",
        b"*3\r\n$11\r\nunsubscribe\r\n$4\r\nchan\r\n:2\r\n",
    ),
    (
        'a',
        "PUNSUBSCRIBE",
        b"*3\r\n$12\r\npunsubscribe\r\n$3\r\nch*\r\n:1\r\n",
    ),
    (
        'a',
        "UNSUBSCRIBE",
        b"*3\r\n$11\r\nunsubscribe\r\n$5\r\nother\r\n:0\r\n",
    ),
    ('a', "UNSUBSCRIBE", b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"),
    ('a', "PUNSUBSCRIBE", b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n"),
    ('a', "PING", b"+PONG\r\n"),
    ('b', "PUBLISH chan gone", b":0\r\n"),
    ('b', "UNSUBSCRIBE zz", b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nzz\r\n:0\r\n"),
    ('a', "SUBSCRIBE r", b"*3\r\n$9\r\nsubscribe\r\n$1\r\nr\r\n:1\r\n"),
    ('a', "RESET", b"+RESET\r\n"),
    ('a', "GET k", b"$-1\r\n"),
];

#[test]
fn pubsub_through_the_gateway_as_redis_does_it() {
    let mut c = Cluster::init("redis-pubsub", 31);
    c.start_all();
    let port = c.resp_port;
    // The recorded transcript, on two raw connections closed before the clients below.
    {
        let (mut a, mut b) = (redis_wire::open(port), redis_wire::open(port));
        redis_wire::replay(&mut a, &mut b, PUBSUB_TRANSCRIPT);
    }

    // redis-rs: a pub/sub connection and a publisher.
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut publisher = client.get_connection().unwrap();
    let mut con = client.get_connection().unwrap();
    con.set_read_timeout(Some(common::OP_TIMEOUT)).unwrap();
    let mut ps = con.as_pubsub();
    ps.subscribe("rs").unwrap();
    ps.psubscribe("r?").unwrap();
    let n: i64 = redis::cmd("PUBLISH")
        .arg("rs")
        .arg("hi")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(n, 2, "the channel and the pattern");
    let m = ps.get_message().unwrap();
    assert_eq!(
        (m.get_channel_name(), m.get_payload::<String>().unwrap()),
        ("rs", "hi".to_string())
    );
    let m = ps.get_message().unwrap();
    assert_eq!(m.get_pattern::<String>().unwrap(), "r?");
    ps.unsubscribe("rs").unwrap();
    ps.punsubscribe("r?").unwrap();
    let n: i64 = redis::cmd("PUBLISH")
        .arg("rs")
        .arg("again")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(n, 0);
    drop(ps);
    drop(con);

    // A connection that closes while subscribed leaves the cluster's counts.
    {
        let mut s = redis_wire::open(port);
        s.write_all(&redis_wire::multibulk("SUBSCRIBE leaving"))
            .unwrap();
        let mut got = [0u8; 36];
        s.read_exact(&mut got).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n: i64 = redis::cmd("PUBLISH")
            .arg("leaving")
            .arg("x")
            .query(&mut publisher)
            .unwrap();
        if n == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed connection still counts"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // redis-py, from Python's ecosystem.
    common::run_redis_py("pubsub.py", port);
}
