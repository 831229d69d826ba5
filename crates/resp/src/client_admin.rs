//! `CLIENT LIST`, `CLIENT INFO`, `CLIENT KILL` and `CLIENT UNBLOCK`: the commands that look at
//! or act on *other* connections of the gateway. Here they are parsed and checked, with Redis
//! 7.0's error texts; the gateway, which knows its connections, carries them out.

use crate::Resp;
use plumb_kv::parse_integer;

/// The kinds of connection `TYPE` names. A gateway has no replicas or masters among its
/// clients, so those match nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    Normal,
    Pubsub,
    Master,
    Replica,
}

/// Which connections a `CLIENT KILL` or `CLIENT LIST` means: all of the given conditions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientFilter {
    pub ids: Option<Vec<u64>>,
    pub kind: Option<ClientKind>,
    /// `ip:port` of the client's end (`ADDR`) and of the gateway's (`LADDR`).
    pub addr: Option<Vec<u8>>,
    pub laddr: Option<Vec<u8>>,
    pub user: Option<Vec<u8>>,
    /// Leave the connection that asks out (`SKIPME`, yes unless said otherwise).
    pub skip_me: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAdmin {
    /// One line per matching connection.
    List(ClientFilter),
    /// The asking connection's line.
    Info,
    /// Close the matching connections. `old_form` (`CLIENT KILL ip:port`) replies `OK` or
    /// `No such client`; the filter form replies how many it closed.
    Kill {
        filter: ClientFilter,
        old_form: bool,
    },
    /// Wake connection `id` from a blocking command: with a nil reply, or with `error` the
    /// `UNBLOCKED` error. Replies 1 if it was blocked, else 0.
    Unblock { id: u64, error: bool },
}

/// The error a `CLIENT UNBLOCK ... ERROR` wakes its client with.
pub const ERR_UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn error(text: impl Into<String>) -> Resp {
    Resp::Error(text.into())
}

fn kind(arg: &[u8]) -> Result<ClientKind, Resp> {
    Ok(if is(arg, "normal") {
        ClientKind::Normal
    } else if is(arg, "pubsub") {
        ClientKind::Pubsub
    } else if is(arg, "master") {
        ClientKind::Master
    } else if is(arg, "replica") || is(arg, "slave") {
        ClientKind::Replica
    } else {
        return Err(error(format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(arg)
        )));
    })
}

/// `CLIENT <sub> ...` for the subcommands of this module; `None` for any other.
pub fn parse(args: &[Vec<u8>]) -> Option<Result<ClientAdmin, Resp>> {
    let sub = args.get(1)?;
    let rest = &args[2..];
    Some(if is(sub, "list") {
        list(rest)
    } else if is(sub, "info") {
        if rest.is_empty() {
            Ok(ClientAdmin::Info)
        } else {
            Err(error(
                "ERR wrong number of arguments for 'client|info' command",
            ))
        }
    } else if is(sub, "kill") {
        kill(rest)
    } else if is(sub, "unblock") {
        unblock(rest)
    } else {
        return None;
    })
}

fn list(rest: &[Vec<u8>]) -> Result<ClientAdmin, Resp> {
    let mut filter = ClientFilter::default();
    match rest {
        [] => {}
        [t, k] if is(t, "type") => filter.kind = Some(kind(k)?),
        [i, ids @ ..] if is(i, "id") && !ids.is_empty() => {
            let ids = ids
                .iter()
                .map(|id| match parse_integer(id) {
                    Some(n) if n > 0 => Ok(n as u64),
                    _ => Err(error("ERR Invalid client ID")),
                })
                .collect::<Result<Vec<u64>, Resp>>()?;
            filter.ids = Some(ids);
        }
        _ => return Err(error("ERR syntax error")),
    }
    Ok(ClientAdmin::List(filter))
}

fn kill(rest: &[Vec<u8>]) -> Result<ClientAdmin, Resp> {
    match rest {
        [] => Err(error(
            "ERR wrong number of arguments for 'client|kill' command",
        )),
        [addr] => Ok(ClientAdmin::Kill {
            filter: ClientFilter {
                addr: Some(addr.clone()),
                ..ClientFilter::default()
            },
            old_form: true,
        }),
        _ if rest.len() % 2 == 1 => Err(error("ERR syntax error")),
        _ => {
            let mut filter = ClientFilter {
                skip_me: true,
                ..ClientFilter::default()
            };
            for pair in rest.chunks(2) {
                let (name, value) = (&pair[0], &pair[1]);
                if is(name, "id") {
                    match parse_integer(value) {
                        Some(n) if n > 0 => filter.ids = Some(vec![n as u64]),
                        _ => return Err(error("ERR client-id should be greater than 0")),
                    }
                } else if is(name, "type") {
                    filter.kind = Some(kind(value)?);
                } else if is(name, "addr") {
                    filter.addr = Some(value.clone());
                } else if is(name, "laddr") {
                    filter.laddr = Some(value.clone());
                } else if is(name, "user") {
                    filter.user = Some(value.clone());
                } else if is(name, "skipme") {
                    filter.skip_me = if is(value, "yes") {
                        true
                    } else if is(value, "no") {
                        false
                    } else {
                        return Err(error("ERR syntax error"));
                    };
                } else {
                    return Err(error("ERR syntax error"));
                }
            }
            Ok(ClientAdmin::Kill {
                filter,
                old_form: false,
            })
        }
    }
}

fn unblock(rest: &[Vec<u8>]) -> Result<ClientAdmin, Resp> {
    let (id, how) = match rest {
        [id] => (id, None),
        [id, how] => (id, Some(how)),
        _ => {
            return Err(error(
                "ERR wrong number of arguments for 'client|unblock' command",
            ))
        }
    };
    let Some(id) = parse_integer(id) else {
        return Err(error("ERR value is not an integer or out of range"));
    };
    let error_reply = match how {
        None => false,
        Some(h) if is(h, "timeout") => false,
        Some(h) if is(h, "error") => true,
        Some(_) => {
            return Err(error(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    // An id no connection has (0 or negative) unblocks nothing.
    Ok(ClientAdmin::Unblock {
        id: u64::try_from(id).unwrap_or(0),
        error: error_reply,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn parsed(line: &str) -> Result<ClientAdmin, Resp> {
        parse(&args(line)).expect("a client admin subcommand")
    }

    fn refused(line: &str) -> String {
        match parsed(line) {
            Err(Resp::Error(text)) => text,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn errors_are_redis_7_0s() {
        // Recorded from redis-server 7.0.15.
        assert_eq!(
            refused("client kill id abc"),
            "ERR client-id should be greater than 0"
        );
        assert_eq!(refused("client kill id 1 skipme maybe"), "ERR syntax error");
        assert_eq!(
            refused("client kill type foo"),
            "ERR Unknown client type 'foo'"
        );
        assert_eq!(refused("client kill foo bar"), "ERR syntax error");
        assert_eq!(refused("client kill maxage 5"), "ERR syntax error");
        assert_eq!(
            refused("client list type foo"),
            "ERR Unknown client type 'foo'"
        );
        assert_eq!(refused("client list id abc"), "ERR Invalid client ID");
        assert_eq!(
            refused("client unblock abc"),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            refused("client unblock 1 foo"),
            "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
        );
    }

    #[test]
    fn forms_parse_to_what_they_mean() {
        assert_eq!(
            parsed("client kill 1.2.3.4:5").unwrap(),
            ClientAdmin::Kill {
                filter: ClientFilter {
                    addr: Some(b"1.2.3.4:5".to_vec()),
                    ..ClientFilter::default()
                },
                old_form: true
            }
        );
        let Ok(ClientAdmin::Kill {
            filter,
            old_form: false,
        }) = parsed("client kill id 7 type normal skipme no")
        else {
            panic!()
        };
        assert_eq!(filter.ids, Some(vec![7]));
        assert_eq!(filter.kind, Some(ClientKind::Normal));
        assert!(!filter.skip_me);
        assert_eq!(
            parsed("client unblock 3 error").unwrap(),
            ClientAdmin::Unblock { id: 3, error: true }
        );
        assert_eq!(
            parsed("client list id 1 2").unwrap(),
            ClientAdmin::List(ClientFilter {
                ids: Some(vec![1, 2]),
                ..ClientFilter::default()
            })
        );
        assert!(parse(&args("client setname x")).is_none());
    }
}
