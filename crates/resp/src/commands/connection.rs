//! Commands about the connection itself: `PING`, `ECHO`, `QUIT`, `SELECT`, `AUTH`, `HELLO`,
//! `CLIENT`.

use crate::commands::args::{
    arity_error, arity_error_at_run, err, int_arg, is, not_integer, syntax_error, text,
    unknown_subcommand,
};
use crate::commands::call::{Call, Plan, ServerInfo};
use crate::commands::server::REDIS_VERSION;
use crate::{Protocol, Resp};

pub(super) fn ping(c: &Call) -> Plan {
    match c.args.len() {
        1 => Plan::Reply(Resp::Simple("PONG".into())),
        2 => Plan::Reply(Resp::bulk(c.args[1].clone())),
        _ => arity_error_at_run(c.name),
    }
}

pub(super) fn echo(c: &Call) -> Plan {
    Plan::Reply(Resp::bulk(c.args[1].clone()))
}

pub(super) fn quit(_: &Call) -> Plan {
    Plan::Close(Resp::ok())
}

pub(super) fn select(c: &Call) -> Plan {
    match int_arg(&c.args[1]) {
        Some(0) => Plan::Reply(Resp::ok()),
        Some(n) if i32::try_from(n).is_ok() => err("ERR DB index is out of range"),
        _ => not_integer(),
    }
}

pub(super) fn auth(c: &Call) -> Plan {
    match c.args.len() {
        2 => err(
            "ERR AUTH <password> called without any password configured for the default \
             user. Are you sure your configuration is correct?",
        ),
        3 => authenticate(&c.args[1]),
        _ => syntax_error(),
    }
}

/// `AUTH user pass` without configured passwords: the default user takes any password.
fn authenticate(user: &[u8]) -> Plan {
    if user == b"default" {
        Plan::Reply(Resp::ok())
    } else {
        err("WRONGPASS invalid username-password pair or user is disabled.")
    }
}

/// `HELLO`'s reply, as Redis 7.0 gives it: a map in RESP3, a flat array in RESP2.
fn hello_reply(info: &ServerInfo, protocol: Protocol) -> Resp {
    let s = |t: &str| Resp::bulk(t.as_bytes());
    Resp::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(REDIS_VERSION)),
        (s("proto"), Resp::Integer(protocol.version())),
        (
            s("id"),
            Resp::Integer(i64::try_from(info.client_id).unwrap_or(i64::MAX)),
        ),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Resp::array(Vec::new())),
    ])
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`: switches the connection to RESP2 or
/// RESP3 (without a version it keeps its protocol).
pub(super) fn hello(c: &Call) -> Plan {
    let (args, info) = (c.args, c.info);
    let protocol = match args.get(1).map(|v| int_arg(v)) {
        None => info.protocol,
        Some(None) => return err("ERR Protocol version is not an integer or out of range"),
        Some(Some(2)) => Protocol::Resp2,
        Some(Some(3)) => Protocol::Resp3,
        Some(Some(_)) => return err("NOPROTO unsupported protocol version"),
    };
    let mut name = None;
    let mut user: Option<&[u8]> = None;
    let mut j = 2;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "auth") && more >= 2 {
            user = Some(&args[j + 1]);
            j += 2;
        } else if is(&args[j], "setname") && more >= 1 {
            if let Err(text) = check_client_name(&args[j + 1]) {
                return err(text);
            }
            name = Some(args[j + 1].clone());
            j += 1;
        } else {
            return err(format!(
                "ERR Syntax error in HELLO option '{}'",
                text(&args[j])
            ));
        }
        j += 1;
    }
    if let Some(user) = user {
        if let wrong @ Plan::Reply(Resp::Error(_)) = authenticate(user) {
            return wrong;
        }
    }
    Plan::Hello {
        protocol,
        name: name.map(|name| (!name.is_empty()).then_some(name)),
        reply: hello_reply(info, protocol),
    }
}

/// The error text for a client name with spaces or special characters.
fn check_client_name(name: &[u8]) -> Result<(), &'static str> {
    if name.iter().all(|b| (b'!'..=b'~').contains(b)) {
        Ok(())
    } else {
        Err("ERR Client names cannot contain spaces, newlines or special characters.")
    }
}

/// `CLIENT ID|GETNAME|SETNAME|SETINFO|NO-EVICT`; `LIST`, `INFO`, `KILL` and `UNBLOCK` go to the
/// gateway ([`Plan::Client`]).
pub(super) fn client(c: &Call) -> Plan {
    let (args, info) = (c.args, c.info);
    match crate::client_admin::parse(args) {
        Some(Ok(admin)) => return Plan::Client(admin),
        Some(Err(refusal)) => return Plan::Reply(refusal),
        None => {}
    }
    let sub = &args[1];
    let argc = args.len();
    let arity = |n: usize, name: &str| (argc != n).then(|| arity_error(&format!("client|{name}")));
    if is(sub, "id") {
        arity(2, "id").unwrap_or_else(|| {
            Plan::Reply(Resp::Integer(
                i64::try_from(info.client_id).unwrap_or(i64::MAX),
            ))
        })
    } else if is(sub, "getname") {
        arity(2, "getname").unwrap_or_else(|| Plan::Reply(Resp::Bulk(info.client_name.clone())))
    } else if is(sub, "setname") {
        arity(3, "setname").unwrap_or_else(|| match check_client_name(&args[2]) {
            Err(text) => err(text),
            Ok(()) => Plan::SetName {
                name: (!args[2].is_empty()).then(|| args[2].clone()),
                reply: Resp::ok(),
            },
        })
    } else if is(sub, "setinfo") {
        // Redis 7.2 clients announce their library; accept and ignore.
        arity(4, "setinfo").unwrap_or_else(|| Plan::Reply(Resp::ok()))
    } else if is(sub, "no-evict") {
        // Nothing is evicted from a gateway's connections.
        arity(3, "no-evict").unwrap_or_else(|| {
            if is(&args[2], "on") || is(&args[2], "off") {
                Plan::Reply(Resp::ok())
            } else {
                syntax_error()
            }
        })
    } else {
        unknown_subcommand(sub, "client")
    }
}
