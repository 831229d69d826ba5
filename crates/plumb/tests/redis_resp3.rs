//! RESP3 through the gateway of a real cluster: `redis-cli -3` (a client nobody on the
//! project wrote; it sends `HELLO 3` when it connects) and raw connections, each compared
//! with what redis-server 7.0.15 sent for the same input.
//!
//! - A `HELLO 3` connection gets maps, sets, doubles and nulls; a RESP2 connection beside it
//!   keeps RESP2; `HELLO 2` switches back.
//! - In RESP3 a subscribed connection runs any command, its confirmations and messages are
//!   push frames, and `RESET` returns it to RESP2.
//!
//! Ports: slot 42 (25200..25299) of `common::Cluster`'s scheme.

mod common;

use common::redis_wire::{expect, multibulk, open, redis_cli, replay};
use common::Cluster;
use std::io::{Read, Write};
use std::net::TcpStream;

/// `HELLO 3`'s reply up to the connection id (which differs), then the rest.
fn hello3(s: &mut TcpStream) {
    s.write_all(&multibulk("HELLO 3")).unwrap();
    expect(
        s,
        "HELLO 3",
        b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n\
          $5\r\nproto\r\n:3\r\n$2\r\nid\r\n:",
    );
    let mut byte = [0u8; 1];
    loop {
        s.read_exact(&mut byte).unwrap();
        if byte[0] == b'\n' {
            break;
        }
        assert!(byte[0].is_ascii_digit() || byte[0] == b'\r', "id: {byte:?}");
    }
    expect(
        s,
        "HELLO 3",
        b"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n\
          $7\r\nmodules\r\n*0\r\n",
    );
}

/// Two connections, `a` in RESP3 and `b` in RESP2, and the bytes redis-server 7.0.15 sent
/// each (an empty command: read what was pushed).
const PUBSUB_RESP3: &[(char, &str, &[u8])] = &[
    (
        'a',
        "SUBSCRIBE ch",
        b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    ),
    ('a', "GET k", b"_\r\n"),
    ('a', "PING", b"+PONG\r\n"),
    ('b', "PUBLISH ch hi", b":1\r\n"),
    ('a', "", b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"),
    (
        'a',
        "PSUBSCRIBE c*",
        b">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n",
    ),
    ('b', "PUBLISH ch yo", b":2\r\n"),
    (
        'a',
        "",
        b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nyo\r\n\
          >4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$2\r\nyo\r\n",
    ),
    ('a', "SET k v", b"+OK\r\n"),
    (
        'a',
        "UNSUBSCRIBE",
        b">3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n",
    ),
    (
        'a',
        "PUNSUBSCRIBE",
        b">3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0\r\n",
    ),
    (
        'a',
        "UNSUBSCRIBE",
        b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n",
    ),
    (
        'a',
        "SUBSCRIBE r",
        b">3\r\n$9\r\nsubscribe\r\n$1\r\nr\r\n:1\r\n",
    ),
    ('a', "RESET", b"+RESET\r\n"),
    // RESP2 again after RESET.
    ('a', "GET nokey", b"$-1\r\n"),
    ('a', "GET k", b"$1\r\nv\r\n"),
    ('a', "DEL k", b":1\r\n"),
];

/// Scripts' replies (`EVAL script 0`) to a RESP3 and to a RESP2 connection, as
/// redis-server 7.0.15 sent them.
const SCRIPTS_RESP3: &[(&str, &[u8])] = &[
    ("redis.setresp(3); return true", b"#t\r\n"),
    ("redis.setresp(3); return false", b"#f\r\n"),
    ("return {double=1.5}", b",1.5\r\n"),
    ("return {double=0.1}", b",0.10000000000000001\r\n"),
    ("return {map={a=1}}", b"%1\r\n$1\r\na\r\n:1\r\n"),
    ("return {set={x=true}}", b"~1\r\n$1\r\nx\r\n"),
    ("return true", b":1\r\n"),
    ("return false", b"_\r\n"),
    ("return nil", b"_\r\n"),
    (
        "return {1,{double=2},{map={k='v'}}}",
        b"*3\r\n:1\r\n,2\r\n%1\r\n$1\r\nk\r\n$1\r\nv\r\n",
    ),
    (
        "redis.setresp(3); return redis.call('hgetall','nohash')",
        b"%0\r\n",
    ),
    (
        "redis.setresp(3); return redis.call('get','nokey')",
        b"_\r\n",
    ),
    ("return {double='x'}", b"*0\r\n"),
    ("return {map={}}", b"%0\r\n"),
];
const SCRIPTS_RESP2: &[(&str, &[u8])] = &[
    ("redis.setresp(3); return true", b":1\r\n"),
    ("redis.setresp(3); return false", b":0\r\n"),
    ("return {double=1.5}", b"$3\r\n1.5\r\n"),
    ("return {double=0.1}", b"$19\r\n0.10000000000000001\r\n"),
    ("return {map={a=1}}", b"*2\r\n$1\r\na\r\n:1\r\n"),
    ("return {set={x=true}}", b"*1\r\n$1\r\nx\r\n"),
    ("return true", b":1\r\n"),
    ("return false", b"$-1\r\n"),
    ("return nil", b"$-1\r\n"),
    (
        "return {1,{double=2},{map={k='v'}}}",
        b"*3\r\n:1\r\n$1\r\n2\r\n*2\r\n$1\r\nk\r\n$1\r\nv\r\n",
    ),
    (
        "redis.setresp(3); return redis.call('hgetall','nohash')",
        b"*0\r\n",
    ),
    (
        "redis.setresp(3); return redis.call('get','nokey')",
        b"$-1\r\n",
    ),
    ("return {double='x'}", b"*0\r\n"),
    ("return {map={}}", b"*0\r\n"),
];

/// `EVAL script 0` as a multibulk request (the script has spaces).
fn eval(script: &str) -> Vec<u8> {
    format!(
        "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n",
        script.len()
    )
    .into_bytes()
}

#[test]
fn resp3_with_redis_cli_and_raw_connections() {
    let mut c = Cluster::init("redis-resp3", 42);
    c.start_all();
    let port = c.resp_port;

    // redis-cli -3, output not to a terminal: a map's entries one `key value` a line, a
    // pair's elements one a line, a double as its number, a null as an empty line (as
    // redis-cli 7 prints redis-server 7.0.15's replies to this input).
    let out = redis_cli(
        port,
        &["-3"],
        "HSET h a 1 b 2\nHGETALL h\nSADD s x\nSMEMBERS s\nZADD z 1.5 a 2 b\nZSCORE z a\n\
         ZRANGE z 0 -1 WITHSCORES\nGET nokey\nCONFIG GET maxmemory\nDEL h s z\n",
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "2",
            "a 1",
            "b 2",
            "1",
            "x",
            "2",
            "1.5",
            "a",
            "1.5",
            "b",
            "2",
            "",
            "maxmemory 0",
            "3"
        ],
        "{out}"
    );
    // HELLO without a version reports the protocol redis-cli chose.
    let out = redis_cli(port, &["-3"], "HELLO\n");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..3],
        ["server redis", "version 7.0.15", "proto 3"],
        "{out}"
    );

    // The wire itself: pub/sub in RESP3 beside a RESP2 connection.
    let (mut a, mut b) = (open(port), open(port));
    hello3(&mut a);
    replay(&mut a, &mut b, PUBSUB_RESP3);

    // Scripts: RESP3's types from Lua, in each connection's protocol.
    let mut q = open(port);
    hello3(&mut q);
    for (script, reply) in SCRIPTS_RESP3 {
        q.write_all(&eval(script)).unwrap();
        expect(&mut q, script, reply);
    }
    let mut q2 = open(port);
    for (script, reply) in SCRIPTS_RESP2 {
        q2.write_all(&eval(script)).unwrap();
        expect(&mut q2, script, reply);
    }

    // A pipeline across a switch: each reply in the protocol in force when it was made.
    let mut p = open(port);
    let mut batch = Vec::new();
    for line in ["GET nokey", "HELLO 3", "GET nokey", "HELLO 2", "GET nokey"] {
        batch.extend(multibulk(line));
    }
    p.write_all(&batch).unwrap();
    expect(&mut p, "GET nokey in RESP2", b"$-1\r\n");
    hello_rest(&mut p, b"%7\r\n");
    expect(&mut p, "GET nokey in RESP3", b"_\r\n");
    hello_rest(&mut p, b"*14\r\n");
    expect(&mut p, "GET nokey in RESP2 again", b"$-1\r\n");
    // Hostile HELLOs are refused with Redis' errors, and the connection stays usable.
    for (line, reply) in [
        ("HELLO 4", &b"-NOPROTO unsupported protocol version\r\n"[..]),
        (
            "HELLO x",
            b"-ERR Protocol version is not an integer or out of range\r\n",
        ),
        (
            "HELLO 3 SETNAME",
            b"-ERR Syntax error in HELLO option 'SETNAME'\r\n",
        ),
        ("PING", b"+PONG\r\n"),
    ] {
        p.write_all(&multibulk(line)).unwrap();
        expect(&mut p, line, reply);
    }
}

/// A `HELLO` reply starting with `head`: read through its `modules` entry.
fn hello_rest(s: &mut TcpStream, head: &[u8]) {
    expect(s, "HELLO", head);
    let tail = b"$7\r\nmodules\r\n*0\r\n";
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(tail) {
        s.read_exact(&mut byte).unwrap();
        seen.push(byte[0]);
        assert!(seen.len() < 512, "HELLO reply: {}", seen.escape_ascii());
    }
}
