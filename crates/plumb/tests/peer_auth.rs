//! Peer authentication of a real cluster (four `plumb node` processes, u=1 r=1, on loopback):
//! anyone who can reach a node's port, holding no key, opens a raw TCP connection and sends
//! frames whose header claims another node's principal. A node routes, queues and charges
//! frames by the identity their connection proved, so none of that lands on the named peer:
//! it is not cut off as a flooder and its queues are not filled; the frames are dropped and
//! counted, and the cluster keeps serving.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const T20: Duration = Duration::from_secs(20);

/// Envelope labels (`plumb_wire::Principal::label`): kind in the top byte, index below.
fn auth(i: u64) -> u64 {
    (2 << 56) | i
}
fn order(i: u64) -> u64 {
    (3 << 56) | i
}
fn exec(i: u64) -> u64 {
    (4 << 56) | i
}

/// A frame with a well-formed envelope header from `sender` to `receiver` and a MAC that does
/// not verify (nobody outside the cluster can make one that does), length-prefixed for TCP.
fn spoofed(sender: u64, receiver: u64, body_len: usize) -> Vec<u8> {
    let mut env = b"PB\x01".to_vec();
    env.extend_from_slice(&sender.to_le_bytes());
    env.extend_from_slice(&receiver.to_le_bytes());
    env.extend_from_slice(&(body_len as u32).to_le_bytes());
    env.extend((0..body_len).map(|i| (i * 31 % 251) as u8));
    env.extend_from_slice(&[0xAB; 16]);
    let mut f = (env.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(&env);
    f
}

fn dropped(text: &str, reason: &str) -> u64 {
    metric_sample(
        text,
        &format!("plumb_messages_dropped_total{{principal=\"node\",reason=\"{reason}\"}}"),
    )
}

/// Open a peer handshake claiming to be node 1, then answer the challenge with a MAC made
/// without node 1's key. The node must close the connection (and count a refused handshake).
fn fake_handshake(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T20)).unwrap();
    let hello = plumb_runtime::handshake::hello(1, 0);
    s.write_all(&(hello.len() as u32).to_le_bytes()).unwrap();
    s.write_all(&hello).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut challenge = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut challenge).unwrap();
    assert!(
        plumb_runtime::handshake::is_hello(&challenge),
        "{challenge:?}"
    );
    let mut answer = plumb_runtime::handshake::MAGIC.to_vec();
    answer.push(3);
    answer.extend_from_slice(&[0x5A; 16]);
    s.write_all(&(answer.len() as u32).to_le_bytes()).unwrap();
    s.write_all(&answer).unwrap();
    // No Welcome: the connection ends.
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "a refused dialer got {rest:?}");
}

#[test]
fn frames_spoofing_a_peer_on_an_unproven_connection_are_dropped_and_never_cut_that_peer_off() {
    let mut c = Cluster::init("peer-auth", 7);
    // A low flood floor: were the spoofed bytes charged to node 1 (as before peer
    // authentication), node 0 would cut node 1 off within a second of the attack.
    c.set_protocol("flood_floor_bytes = 8388608");
    c.start_all();
    c.wait_ready(T20);
    assert_eq!(c.kv(&["set", "before", "1"]), "OK");

    // The attacker: a raw connection to node 0 (listening on base_port), no handshake, no keys.
    let node0 = SocketAddr::from(([127, 0, 0, 1], c.base_port));
    let mut s = TcpStream::connect(node0).unwrap();
    // Claims to be node 1's order, auth and execution replicas, to node 0's, with bodies of
    // every size; mostly 60 KiB, to make a flood.
    let frames = [
        spoofed(order(1), order(0), 60 << 10),
        spoofed(auth(1), auth(0), 60 << 10),
        spoofed(exec(1), order(0), 200),
        spoofed(order(1), exec(0), 0),
    ];
    let mut sent = 0u64;
    let start = Instant::now();
    // Over three one-second flood windows (pacing the attack, not asserting on time).
    while start.elapsed() < Duration::from_secs(3) {
        let f = &frames[sent as usize % frames.len()];
        if s.write_all(f).is_err() {
            break;
        }
        sent += 1;
    }

    // Every spoofed frame is read and dropped as unproven (poll: the node may still be reading).
    let deadline = Instant::now() + T20;
    let text = loop {
        let text = c.metrics(0).expect("node 0 metrics");
        // Checked first: on code that trusts the header, this is where it fails.
        assert_eq!(
            dropped(&text, "flooding-peer"),
            0,
            "node 0 cut a peer off for frames it never sent:\n{text}"
        );
        if dropped(&text, "replica-on-client-connection") >= sent || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(s);
    eprintln!("peer-auth: sent {sent} spoofed frames to node 0");
    assert_eq!(dropped(&text, "replica-on-client-connection"), sent);
    assert_eq!(
        metric_sample(&text, "plumb_peer_cut_off{node=\"1\"}"),
        0,
        "node 1 is cut off:\n{text}"
    );
    // Nothing reached node 0's queue for node 1's principals, so nothing failed a MAC there.
    for (p, reason) in [("o0", "bad-mac"), ("a0", "bad-mac")] {
        let series =
            format!("plumb_messages_dropped_total{{principal=\"{p}\",reason=\"{reason}\"}}");
        assert_eq!(metric_sample(&text, &series), 0, "{series} in\n{text}");
    }

    // Nor can the attacker pass the handshake as node 1.
    fake_handshake(node0);
    let text = c.metrics(0).expect("node 0 metrics");
    assert_eq!(
        metric_sample(
            &text,
            "plumb_peer_handshakes_refused_total{reason=\"bad-mac\"}"
        ),
        1,
        "the forged handshake was not refused:\n{text}"
    );

    // Node 1 is still node 0's peer in both directions, and the cluster serves.
    for (from, to) in [(0, 1), (1, 0)] {
        let status = c.status(from).expect("status");
        let up = status["peers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p[0] == to && p[1] == true);
        assert!(up, "node {from}'s link to node {to} is down: {status}");
    }
    assert_eq!(c.kv(&["set", "after", "2"]), "OK");
    assert_eq!(c.kv(&["get", "before"]), "1");
    assert_eq!(c.kv(&["get", "after"]), "2");
    c.assert_running();
}
