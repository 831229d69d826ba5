//! Redis pub/sub on a connection: the frames a subscribed connection receives (push frames,
//! `>`, in RESP3; arrays in RESP2) and what it may send while subscribed (in RESP2 only a few
//! commands; in RESP3 any). Who subscribes to what lives in the replicated store
//! (`plumb_kv::pubsub`); a gateway keeps a connection's own subscriptions and fans messages out.

use crate::Resp;

/// The commands a connection in subscribed mode may send (Redis 7.0, RESP2). `reset` is
/// answered only there (it leaves subscribed mode).
const ALLOWED: &[&str] = &[
    "subscribe",
    "psubscribe",
    "unsubscribe",
    "punsubscribe",
    "ping",
    "quit",
    "reset",
];

/// `None` if `args` may run on a subscribed RESP2 connection, else Redis' error for it (a
/// RESP3 connection may run any command while subscribed).
pub fn subscribed_mode_refusal(args: &[Vec<u8>]) -> Option<Resp> {
    let name = args.first()?;
    if ALLOWED
        .iter()
        .any(|a| name.eq_ignore_ascii_case(a.as_bytes()))
    {
        return None;
    }
    // An unknown command gets the unknown-command error, as in Redis.
    let spec = crate::lookup(name)?;
    Some(Resp::Error(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        spec.name
    )))
}

/// `RESET` on a subscribed connection: the connection leaves subscribed mode.
pub fn is_reset(args: &[Vec<u8>]) -> bool {
    args.len() == 1 && args[0].eq_ignore_ascii_case(b"reset")
}

/// `PING [message]` on a subscribed connection: `["pong", message or ""]` (RESP2).
pub fn subscribed_ping(args: &[Vec<u8>]) -> Resp {
    match args {
        [_] => Resp::array(vec![Resp::bulk("pong"), Resp::bulk("")]),
        [_, m] => Resp::array(vec![Resp::bulk("pong"), Resp::bulk(m.clone())]),
        _ => Resp::error("ERR wrong number of arguments for 'ping' command"),
    }
}

/// A (un)subscription confirmation (a push frame): `kind` is `subscribe`, `psubscribe`, `unsubscribe` or
/// `punsubscribe`; `name` is `None` for an unsubscribe-all with nothing to unsubscribe;
/// `count` the connection's channels and patterns after it.
pub fn confirmation(kind: &str, name: Option<&[u8]>, count: usize) -> Resp {
    Resp::Push(vec![
        Resp::bulk(kind),
        Resp::Bulk(name.map(<[u8]>::to_vec)),
        Resp::Integer(i64::try_from(count).unwrap_or(i64::MAX)),
    ])
}

/// A message on a channel the connection subscribes to.
pub fn message(channel: &[u8], payload: &[u8]) -> Resp {
    Resp::Push(vec![
        Resp::bulk("message"),
        Resp::bulk(channel),
        Resp::bulk(payload),
    ])
}

/// A message on a channel matching a pattern the connection subscribes to.
pub fn pmessage(pattern: &[u8], channel: &[u8], payload: &[u8]) -> Resp {
    Resp::Push(vec![
        Resp::bulk("pmessage"),
        Resp::bulk(pattern),
        Resp::bulk(channel),
        Resp::bulk(payload),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn only_pubsub_commands_pass_in_subscribed_mode() {
        assert_eq!(subscribed_mode_refusal(&args(&["PsUbScRiBe", "x"])), None);
        assert_eq!(subscribed_mode_refusal(&args(&["reset"])), None);
        assert_eq!(subscribed_mode_refusal(&args(&["nosuch"])), None);
        assert_eq!(subscribed_mode_refusal(&[]), None);
        assert!(subscribed_mode_refusal(&args(&["GET", "k"])).is_some());
    }

    /// The frames as redis-server 7.0.15 sent them.
    #[test]
    fn frames_are_redis_bytes() {
        let cases: [(Resp, &[u8]); 5] = [
            (
                confirmation("subscribe", Some(b"chan"), 1),
                b"*3\r\n$9\r\nsubscribe\r\n$4\r\nchan\r\n:1\r\n",
            ),
            (
                confirmation("punsubscribe", None, 0),
                b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n",
            ),
            (
                message(b"chan", b"hello"),
                b"*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n",
            ),
            (
                pmessage(b"ch*", b"chan", b"both"),
                b"*4\r\n$8\r\npmessage\r\n$3\r\nch*\r\n$4\r\nchan\r\n$4\r\nboth\r\n",
            ),
            (
                subscribed_ping(&args(&["PING"])),
                b"*2\r\n$4\r\npong\r\n$0\r\n\r\n",
            ),
        ];
        for (resp, bytes) in cases {
            assert_eq!(resp.to_bytes(), bytes);
        }
    }

    /// The same frames in RESP3, as redis-server 7.0.15 sent them after `HELLO 3`.
    #[test]
    fn resp3_frames_are_pushes() {
        use crate::Protocol::Resp3;
        let cases: [(Resp, &[u8]); 3] = [
            (
                confirmation("subscribe", Some(b"ch1"), 1),
                b">3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n",
            ),
            (
                confirmation("unsubscribe", None, 0),
                b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n",
            ),
            (
                message(b"chan", b"hello"),
                b">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n",
            ),
        ];
        for (resp, bytes) in cases {
            assert_eq!(resp.to_bytes_as(Resp3), bytes);
        }
    }
}
