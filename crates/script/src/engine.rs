//! The script engine: a fresh, sandboxed Lua 5.1 state per script, an instruction budget and
//! a memory limit, and Redis 7.0's error texts.
//!
//! Determinism: nothing a script can reach differs between replicas. The clock is the
//! batch's agreed time (through the commands it runs), randomness comes from the request's
//! seed, `tostring` shows counters instead of addresses, Lua 5.1 hashes strings without a
//! random seed, and the budget counts instructions, never time. A fresh state per script
//! means nothing one script leaves behind can change another's behaviour.

use crate::call::Calls;
use crate::convert::{lua_to_resp, resp_to_lua};
use mlua::chunk::ChunkMode;
use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, Variadic, VmState};
use plumb_kv::{EvalRequest, KvResult, KvStore, Scripting};
use plumb_resp::{Protocol, Resp};
use plumb_wire::Micros;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Lua instructions between two budget checks.
pub const CHECK_EVERY: u32 = 1_000;
/// Default budget: about a second of Lua on one core, far more than a Redis script (which
/// blocks a whole Redis server while it runs) should take.
pub const DEFAULT_INSTRUCTIONS: u64 = 50_000_000;
/// Default memory limit of one script's Lua state.
pub const DEFAULT_MEMORY: usize = 64 << 20;

/// Limits a script runs within. Both must be the same on every replica of a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lua instructions a script may run (counted in steps of [`CHECK_EVERY`]).
    pub instructions: u64,
    /// Bytes the script's Lua state may hold.
    pub memory: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            instructions: DEFAULT_INSTRUCTIONS,
            memory: DEFAULT_MEMORY,
        }
    }
}

/// The Lua engine for [`plumb_kv::KvOp::Eval`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Engine {
    pub limits: Limits,
}

const PRELUDE: &str = include_str!("prelude.lua");

/// The hex SHA-1 of `bytes` (script names, `redis.sha1hex`).
pub fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// A script body with a Redis 7 shebang line (`#!lua flags=no-writes,...`): the flags say
/// whether it is read-only; the line itself is blanked so line numbers stay. `Err` is
/// Redis' error for a shebang it does not accept.
pub fn shebang(script: &[u8]) -> Result<(bool, &[u8]), String> {
    let Some(rest) = script.strip_prefix(b"#!") else {
        return Ok((false, script));
    };
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    let line = String::from_utf8_lossy(&rest[..end]).into_owned();
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    if words.next() != Some("lua") {
        return Err("ERR Unexpected engine in script shebang".into());
    }
    let mut read_only = false;
    for word in words {
        let Some(flags) = word.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {word}"));
        };
        for flag in flags.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => read_only = true,
                "allow-oom" | "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                other => return Err(format!("ERR Unexpected flag in script shebang: {other}")),
            }
        }
    }
    // The newline stays, so the script's first line is still line 2.
    Ok((read_only, &rest[end..]))
}

/// Compile `script` in a fresh state without running it: Redis' error text for a script
/// that does not compile (`SCRIPT LOAD` checks scripts this way).
pub fn check_compiles(script: &[u8]) -> Result<(), String> {
    let body = shebang(script)?.1;
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::new()).map_err(|e| format!("ERR {e}"))?;
    let _ = lua.set_memory_limit(DEFAULT_MEMORY);
    compile(&lua, body).map(|_| ())
}

fn compile(lua: &Lua, body: &[u8]) -> Result<Function, String> {
    lua.load(body)
        .set_name("@user_script")
        .set_mode(ChunkMode::Text)
        .into_function()
        .map_err(|e| {
            let text = match e {
                mlua::Error::SyntaxError { message, .. } => message,
                other => other.to_string(),
            };
            format!("ERR Error compiling script (new function): {text}")
        })
}

impl Scripting for Engine {
    fn eval(
        &self,
        store: &mut KvStore,
        eval: &EvalRequest<'_>,
        now: Micros,
        seed: u64,
    ) -> KvResult {
        match self.run(store, eval, now, seed) {
            Resp::Error(text) => KvResult::Error(text),
            // RESP2 bytes, as always, unless the reply has a map, set or double (a script's
            // `{map = ...}`, `{set = ...}`, `{double = ...}`): RESP3 then, and the gateway
            // writes it in the client's protocol.
            reply if reply.needs_resp3() => {
                KvResult::Script(reply.to_bytes_as(plumb_resp::Protocol::Resp3))
            }
            reply => KvResult::Script(reply.to_bytes()),
        }
    }
}

/// The step of the `splitmix64` generator behind `math.random`.
fn splitmix(state: &Cell<u64>) -> u64 {
    let s = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
    state.set(s);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Engine {
    /// The script's reply (an error reply if it failed).
    pub fn run(&self, store: &mut KvStore, eval: &EvalRequest<'_>, now: Micros, seed: u64) -> Resp {
        let sha = sha1_hex(eval.script);
        let (no_writes, body) = match shebang(eval.script) {
            Ok(parsed) => parsed,
            Err(text) => return Resp::Error(text),
        };
        let exceeded = Rc::new(Cell::new(false));
        let out_of_memory = || {
            Resp::Error(format!(
                "ERR plumb: the script used more than its {} bytes of memory script: {sha}",
                self.limits.memory
            ))
        };
        let result = self.run_in_lua(store, eval, no_writes, body, now, seed, &exceeded);
        if exceeded.get() {
            return Resp::Error(format!(
                "ERR plumb: the script ran past its budget of {} Lua instructions (see docs/redis.md) script: {sha}",
                self.limits.instructions
            ));
        }
        match result {
            Ok(Outcome::Reply(reply)) => reply,
            Ok(Outcome::Raised { text, line }) => match line {
                Some(line) => Resp::Error(format!("{text} script: {sha}, on @user_script:{line}.")),
                None if is_memory_error(&text) => out_of_memory(),
                None => Resp::Error(format!("{text} script: {sha}")),
            },
            Err(RunError::Compile(text)) => Resp::Error(text),
            Err(RunError::Lua(e)) if is_memory_error(&e.to_string()) => out_of_memory(),
            Err(RunError::Lua(e)) => {
                Resp::Error(format!("ERR plumb: the script engine failed: {e}"))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_in_lua(
        &self,
        store: &mut KvStore,
        eval: &EvalRequest<'_>,
        no_writes: bool,
        body: &[u8],
        now: Micros,
        seed: u64,
        exceeded: &Rc<Cell<bool>>,
    ) -> Result<Outcome, RunError> {
        // The debug library only for the prelude, which keeps `getinfo` for its error handler
        // and removes the library before any script code runs.
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
        // SAFETY: `unsafe_new_with` is unsafe only because of the debug library, which the
        // prelude takes away from scripts before they run.
        let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::new()) };
        lua.set_memory_limit(self.limits.memory)?;
        let function = compile(&lua, body).map_err(RunError::Compile)?;

        let rng = Rc::new(Cell::new(seed ^ 0x5EED_0F5C_81B7_0000));
        let rand_state = rng.clone();
        let rand_next = lua.create_function(move |_, ()| {
            // 53 random bits: a float in [0, 1), every value equally likely.
            Ok((splitmix(&rand_state) >> 11) as f64 / (1u64 << 53) as f64)
        })?;
        let rand_seed = lua.create_function(move |_, n: f64| {
            rng.set(n.to_bits());
            Ok(())
        })?;
        let flag = exceeded.clone();
        let is_exceeded = lua.create_function(move |_, ()| Ok(flag.get()))?;
        // The text of the error a Rust function raised last (Lua sees only an opaque value).
        let raised_text: Rc<RefCell<Option<String>>> = Rc::default();
        let slot = raised_text.clone();
        let take_raised = lua.create_function(move |_, ()| Ok(slot.borrow_mut().take()))?;
        let raise = {
            let slot = raised_text.clone();
            move |text: &str| -> mlua::Error {
                *slot.borrow_mut() = Some(text.to_string());
                mlua::Error::runtime(text)
            }
        };

        let rust = lua.create_table()?;
        let sha1 = {
            let raise = raise.clone();
            lua.create_function(move |lua, args: Variadic<Value>| {
                let [v] = args.as_slice() else {
                    return Err(raise("ERR wrong number of arguments"));
                };
                let bytes = match lua.coerce_string(v.clone())? {
                    Some(s) => s.as_bytes().to_vec(),
                    None => Vec::new(),
                };
                lua.create_string(sha1_hex(&bytes))
            })?
        };
        rust.raw_set("sha1hex", sha1)?;
        let log = {
            let raise = raise.clone();
            lua.create_function(move |_, args: Variadic<Value>| {
                if args.len() < 2 {
                    return Err(raise("ERR redis.log() requires two arguments or more."));
                }
                let Some(level) = number(&args[0]) else {
                    return Err(raise("ERR First argument must be a number (log level)."));
                };
                if !(0.0..=3.0).contains(&level) {
                    return Err(raise("ERR Invalid debug level."));
                }
                // Replicas keep no script log: one line per replica per script says nothing.
                Ok(())
            })?
        };
        rust.raw_set("log", log)?;
        // The protocol `redis.call` replies are converted by (`redis.setresp`): RESP2 until
        // the script asks for 3.
        let protocol = Rc::new(Cell::new(Protocol::Resp2));
        let setresp = {
            let raise = raise.clone();
            let protocol = protocol.clone();
            lua.create_function(move |_, args: Variadic<Value>| {
                let [v] = args.as_slice() else {
                    return Err(raise("ERR redis.setresp() requires one argument."));
                };
                match number(v) {
                    Some(2.0) => protocol.set(Protocol::Resp2),
                    Some(3.0) => protocol.set(Protocol::Resp3),
                    _ => return Err(raise("ERR RESP version must be 2 or 3.")),
                }
                Ok(())
            })?
        };
        rust.raw_set("setresp", setresp)?;
        let set_repl = {
            let raise = raise.clone();
            lua.create_function(move |_, args: Variadic<Value>| {
                let [v] = args.as_slice() else {
                    return Err(raise("ERR redis.set_repl() requires one argument."));
                };
                match number(v) {
                    // Every replica runs the script itself: there is nothing to replicate.
                    Some(n) if (0.0..=3.0).contains(&n) => Ok(()),
                    _ => Err(raise(
                        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                    )),
                }
            })?
        };
        rust.raw_set("set_repl", set_repl)?;

        let read_only = eval.read_only || no_writes;
        let calls = RefCell::new(Calls {
            store,
            now,
            seed,
            count: 0,
            read_only,
        });
        let keys = strings(&lua, eval.keys)?;
        let argv = strings(&lua, eval.args)?;
        let (ok, value) = lua.scope(|scope| {
            let run_command = |lua: &Lua, args: &[Value]| -> Resp {
                match command_args(lua, args) {
                    Ok(args) => calls.borrow_mut().call(&args),
                    Err(text) => Resp::error(text),
                }
            };
            let call = {
                let raise = raise.clone();
                let protocol = protocol.clone();
                scope.create_function(move |lua, args: Variadic<Value>| {
                    match run_command(lua, &args) {
                        Resp::Error(text) => Err(raise(&text)),
                        reply => resp_to_lua(lua, &reply, protocol.get()),
                    }
                })?
            };
            let pcall = {
                let protocol = protocol.clone();
                scope.create_function(move |lua, args: Variadic<Value>| {
                    resp_to_lua(lua, &run_command(lua, &args), protocol.get())
                })?
            };
            rust.raw_set("call", call)?;
            rust.raw_set("pcall", pcall)?;
            let runner: Function = lua
                .load(PRELUDE)
                .set_name("=plumb")
                .set_mode(ChunkMode::Text)
                .call((
                    rust,
                    is_exceeded,
                    take_raised,
                    rand_next,
                    rand_seed,
                    keys,
                    argv,
                ))?;

            let hooks_allowed = self.limits.instructions.div_ceil(u64::from(CHECK_EVERY));
            let hooks = Cell::new(0u64);
            let flag = exceeded.clone();
            lua.set_global_hook(
                HookTriggers::new().every_nth_instruction(CHECK_EVERY),
                move |_, _| {
                    hooks.set(hooks.get() + 1);
                    if hooks.get() > hooks_allowed {
                        // Raised again at every later check too: see the prelude's `pass`.
                        flag.set(true);
                        return Err(mlua::Error::runtime("script budget exceeded"));
                    }
                    Ok(VmState::Continue)
                },
            )?;
            let result = runner.call::<(bool, Value)>(function);
            lua.remove_global_hook();
            result
        })?;
        if ok {
            return Ok(Outcome::Reply(lua_to_resp(&value, protocol.get())));
        }
        Ok(match value {
            Value::Table(t) => raised(&t),
            // Errors the handler did not see (memory, an error inside the handler).
            other => Outcome::Raised {
                text: format!(
                    "ERR {}",
                    lua.coerce_string(other)
                        .ok()
                        .flatten()
                        .map(|s| String::from_utf8_lossy(&s.as_bytes()).into_owned())
                        .unwrap_or_else(|| "error".into())
                ),
                line: None,
            },
        })
    }
}

/// How a script ended.
enum Outcome {
    Reply(Resp),
    /// It raised an error: the text and the script's line, from the prelude's handler.
    Raised {
        text: String,
        line: Option<i64>,
    },
}

enum RunError {
    Compile(String),
    Lua(mlua::Error),
}

impl From<mlua::Error> for RunError {
    fn from(e: mlua::Error) -> RunError {
        RunError::Lua(e)
    }
}

fn is_memory_error(text: &str) -> bool {
    text.contains("not enough memory") || text.contains("memory error")
}

fn raised(t: &Table) -> Outcome {
    let text = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        _ => "ERR unknown error".into(),
    };
    let line = match t.raw_get::<Value>("line") {
        Ok(Value::Integer(n)) => Some(n),
        Ok(Value::Number(n)) => Some(crate::convert::truncate(n)),
        _ => None,
    };
    Outcome::Raised { text, line }
}

/// A Lua array of byte strings (`KEYS`, `ARGV`).
fn strings(lua: &Lua, items: &[Vec<u8>]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// A `redis.call`'s arguments as a command: strings, and numbers in Lua's own text form.
fn command_args(lua: &Lua, args: &[Value]) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err(crate::call::ERR_NO_ARGS);
    }
    args.iter()
        .map(|v| match v {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(_) | Value::Number(_) => match lua.coerce_string(v.clone()) {
                Ok(Some(s)) => Ok(s.as_bytes().to_vec()),
                _ => Err(crate::call::ERR_ARG_TYPE),
            },
            _ => Err(crate::call::ERR_ARG_TYPE),
        })
        .collect()
}

/// A Lua number's value.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}
