//! Publish/subscribe: `SUBSCRIBE`, `UNSUBSCRIBE` and their pattern forms, `PUBLISH`, `PUBSUB`
//! (the subscribed connection's own rules are in [`crate::pubsub`]).

use crate::commands::args::{arity_error, is, reject, submit, text_prefix, unknown_subcommand};
use crate::commands::call::{Call, Plan, Render};
use plumb_kv::KvOp;

pub(super) fn subscribe(c: &Call) -> Plan {
    Plan::Subscribe {
        patterns: false,
        names: c.rest(1),
    }
}

pub(super) fn psubscribe(c: &Call) -> Plan {
    Plan::Subscribe {
        patterns: true,
        names: c.rest(1),
    }
}

pub(super) fn unsubscribe(c: &Call) -> Plan {
    Plan::Unsubscribe {
        patterns: false,
        names: c.rest(1),
    }
}

pub(super) fn punsubscribe(c: &Call) -> Plan {
    Plan::Unsubscribe {
        patterns: true,
        names: c.rest(1),
    }
}

pub(super) fn publish(c: &Call) -> Plan {
    submit(
        KvOp::Publish {
            channel: c.args[1].clone(),
            message: c.args[2].clone(),
        },
        Render::Plain,
    )
}

/// `PUBSUB CHANNELS [pattern]`, `NUMSUB [channel ...]`, `NUMPAT`: reads of the replicated
/// subscriptions. The shard variants of Redis' cluster mode are not supported.
pub(super) fn pubsub(c: &Call) -> Plan {
    let args = c.args;
    let sub = &args[1];
    if is(sub, "channels") && args.len() <= 3 {
        submit(
            KvOp::PubSubChannels {
                pattern: args.get(2).cloned(),
            },
            Render::Plain,
        )
    } else if is(sub, "numsub") {
        submit(
            KvOp::PubSubNumSub {
                channels: args[2..].to_vec(),
            },
            Render::Plain,
        )
    } else if is(sub, "numpat") {
        if args.len() != 2 {
            return arity_error("pubsub|numpat");
        }
        submit(KvOp::PubSubNumPat, Render::Plain)
    } else if is(sub, "channels") {
        reject(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            text_prefix(sub, 128)
        ))
    } else {
        unknown_subcommand(sub, "pubsub")
    }
}
