//! A connection flood from one source against a real cluster (four `plumb node` processes,
//! u=1 r=1, on loopback): the attacker, on its own loopback address, opens connections to
//! node 0 as fast as it can and holds them. Past its burst the node closes each one as soon as
//! it accepts it (counted in `/metrics`), and a correct client, from another address, is
//! served throughout.

mod common;

use common::*;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const T20: Duration = Duration::from_secs(20);

/// The attacker's source address (127.0.0.1 is the correct client's).
const ATTACKER: [u8; 4] = [127, 0, 0, 77];

fn refused(text: &str, limit: &str) -> u64 {
    metric_sample(
        text,
        &format!("plumb_messages_dropped_total{{principal=\"node\",reason=\"connection-source-{limit}-limit\"}}"),
    )
}

/// A TCP connection to `to` from the attacker's address.
fn connect_from_attacker(to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::from((ATTACKER, 0)).into())?;
    socket.connect_timeout(&to.into(), T20)?;
    Ok(socket.into())
}

/// Raise this process's descriptor limit to its hard limit: the attacker holds well over a
/// thousand sockets.
fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to fill, then to read.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[test]
fn a_source_opening_connections_too_fast_is_closed_at_once_and_others_are_served() {
    raise_fd_limit();
    let mut c = Cluster::init("connection-limits", 40);
    c.start_all();
    c.wait_ready(T20);
    assert_eq!(c.kv(&["set", "before", "1"]), "OK");

    let node0 = SocketAddr::from(([127, 0, 0, 1], c.base_port));
    // Far more than the burst a source may open at once
    // (`plumb_runtime::source_limit::NEW_BURST_PER_SOURCE`), as fast as connect returns.
    let burst = plumb_runtime::source_limit::NEW_BURST_PER_SOURCE as usize;
    let mut held = Vec::new();
    for _ in 0..burst + 400 {
        held.push(connect_from_attacker(node0).expect("the kernel completes the connect"));
    }
    // The connections over the limit are closed by the node: reading one ends at once.
    let mut closed = 0;
    for s in held.iter_mut().rev().take(20) {
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 1];
        if matches!(s.read(&mut buf), Ok(0)) {
            closed += 1;
        }
    }
    assert!(closed > 0, "no connection over the limit was closed");

    // A correct client from another address is served while the attacker holds its
    // connections.
    assert_eq!(c.kv(&["set", "during", "2"]), "OK");
    let text = c.metrics(0).expect("node 0 metrics");
    let over = refused(&text, "rate") + refused(&text, "open");
    assert!(
        over >= closed,
        "{over} connections counted over the limit, {closed} seen closed:\n{text}"
    );
    eprintln!(
        "connection-limits: {over} of {} attacker connections closed unserved",
        held.len()
    );
    drop(held);
    assert_eq!(c.kv(&["get", "before"]), "1");
    assert_eq!(c.kv(&["get", "during"]), "2");
    c.assert_running();
}
