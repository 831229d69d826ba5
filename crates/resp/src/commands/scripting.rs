//! Lua scripts: `EVAL`, `EVALSHA` and their read-only forms, `SCRIPT`.

use crate::commands::args::{arity_error, err, int_arg, is, not_integer, unknown_subcommand};
use crate::commands::call::{Call, Plan, Render};
use plumb_kv::KvOp;

/// Redis' reply to `EVALSHA` of a script this gateway does not know.
pub const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

pub(super) fn eval(c: &Call) -> Plan {
    plan_eval(c.args, false, false)
}

pub(super) fn evalsha(c: &Call) -> Plan {
    plan_eval(c.args, true, false)
}

pub(super) fn eval_ro(c: &Call) -> Plan {
    plan_eval(c.args, false, true)
}

pub(super) fn evalsha_ro(c: &Call) -> Plan {
    plan_eval(c.args, true, true)
}

/// `EVAL script numkeys key... arg...` and its `EVALSHA` / `_RO` forms. `EVAL` goes to the
/// cluster as it is; `EVALSHA` becomes [`Plan::EvalSha`], which the gateway's script cache
/// turns into the `EVAL` of the body (or `NOSCRIPT`).
fn plan_eval(args: &[Vec<u8>], sha: bool, read_only: bool) -> Plan {
    let Some(numkeys) = int_arg(&args[2]) else {
        return not_integer();
    };
    if numkeys < 0 {
        return err("ERR Number of keys can't be negative");
    }
    let given = args.len() - 3;
    let numkeys = match usize::try_from(numkeys) {
        Ok(n) if n <= given => n,
        _ => return err("ERR Number of keys can't be greater than number of args"),
    };
    let keys = args[3..3 + numkeys].to_vec();
    let script_args = args[3 + numkeys..].to_vec();
    if sha {
        return Plan::EvalSha {
            sha: args[1].to_ascii_lowercase(),
            keys,
            args: script_args,
            read_only,
        };
    }
    Plan::Submit {
        op: KvOp::Eval {
            script: args[1].clone(),
            keys,
            args: script_args,
            read_only,
        },
        // Scripts always take the ordered path (see `KvOp::Eval`).
        read_only: false,
        render: Render::Plain,
    }
}

/// `SCRIPT LOAD|EXISTS|FLUSH|KILL`: the first three act on the gateway's script cache.
pub(super) fn script(c: &Call) -> Plan {
    let args = c.args;
    let sub = &args[1];
    if is(sub, "load") {
        if args.len() != 3 {
            return arity_error("script|load");
        }
        Plan::ScriptLoad {
            body: args[2].clone(),
        }
    } else if is(sub, "exists") {
        if args.len() < 3 {
            return arity_error("script|exists");
        }
        Plan::ScriptExists {
            shas: args[2..].iter().map(|s| s.to_ascii_lowercase()).collect(),
        }
    } else if is(sub, "flush") {
        match args.get(2) {
            _ if args.len() > 3 => arity_error("script|flush"),
            Some(mode) if !is(mode, "async") && !is(mode, "sync") => {
                err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
            }
            _ => Plan::ScriptFlush,
        }
    } else if is(sub, "kill") {
        if args.len() != 2 {
            return arity_error("script|kill");
        }
        // A script never runs long here: its instruction budget stops it.
        err("NOTBUSY No scripts in execution right now.")
    } else {
        unknown_subcommand(sub, "script")
    }
}
