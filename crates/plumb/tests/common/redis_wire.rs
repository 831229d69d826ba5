//! Talking to the Redis gateway below any client library: `redis-cli` fed on stdin, and raw
//! connections whose replies are compared byte for byte with what redis-server sent.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `redis-cli -p port args...` with `input` on its stdin (commands one a line, as a user types
/// them); its stdout.
pub fn redis_cli(port: u16, args: &[&str], input: &str) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli is installed (.ci/run installs redis-tools)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "redis-cli failed: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A command line (words split at single spaces) as a RESP multibulk request.
pub fn multibulk(line: &str) -> Vec<u8> {
    let words: Vec<&str> = line.split(' ').collect();
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
    }
    out
}

/// A raw connection to the gateway on `port` whose reads give up after `OP_TIMEOUT`.
pub fn open(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(super::OP_TIMEOUT)).unwrap();
    s
}

/// Reads exactly `expected`'s length and asserts it is `expected` (shown escaped, so that a
/// difference in a frame's bytes is readable).
pub fn expect(s: &mut TcpStream, what: &str, expected: &[u8]) {
    let mut got = vec![0u8; expected.len()];
    s.read_exact(&mut got)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        got.escape_ascii().to_string(),
        expected.escape_ascii().to_string(),
        "{what}"
    );
}

/// Plays `transcript` on two connections: `(connection, command, exact bytes that follow)`,
/// connection `'a'` or `'b'`, an empty command only reading (what was pushed to it). Then
/// asserts that nothing more comes to `a`: no message twice.
pub fn replay(a: &mut TcpStream, b: &mut TcpStream, transcript: &[(char, &str, &[u8])]) {
    for (conn, command, expected) in transcript {
        let s = if *conn == 'a' { &mut *a } else { &mut *b };
        if !command.is_empty() {
            s.write_all(&multibulk(command)).unwrap();
        }
        expect(s, &format!("{conn}: {command}"), expected);
    }
    a.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut extra = [0u8; 64];
    assert!(a.read(&mut extra).is_err(), "nothing further for a");
}
