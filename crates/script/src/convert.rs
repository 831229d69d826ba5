//! Values between Lua and RESP, as Redis 7.0 documents them (RESP2).
//!
//! Lua to a reply: a number becomes an integer (truncated toward zero), a string a bulk
//! string, `true` the integer 1, `false` and `nil` the nil bulk string, a table with a
//! string `err` field an error, one with a string `ok` field a status, any other table an
//! array of its elements `1, 2, ...` up to the first `nil`. Anything else (a function, a
//! coroutine) is nil. RESP3's types too (Redis 7.0): a table with a `double` field is a
//! double, with a `map` table a map of its entries, with a `set` table a set of its keys
//! (each written in the client's protocol: a double is a bulk string in RESP2).
//!
//! A reply to Lua: an integer becomes a number, a bulk string a string, nil (bulk or array)
//! `false`, an array a table, a status `{ok = text}`, an error `{err = text}`.

use mlua::{Lua, Table, Value};
use plumb_resp::{Protocol, Resp, MAX_DEPTH};

/// Redis' text when a reply nests deeper than it can convert.
pub const ERR_TOO_DEEP: &str = "ERR reached lua stack limit";

/// What C's `(long long)` cast does on x86-64 (Redis converts a Lua number that way): truncate
/// toward zero; NaN and anything out of range give `i64::MIN`. Rust's `as` saturates instead,
/// so the out-of-range cases are spelled out to keep Redis' replies.
pub fn truncate(n: f64) -> i64 {
    // 2^63 is exactly representable; every double below it in magnitude fits an i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n.trunc() as i64
    }
}

/// A double's text as Redis 7.0 writes it (`%.17g`; `inf`, `-inf`, `nan`).
fn format_double(n: f64) -> String {
    match plumb_kv::Score::new(n) {
        Some(score) => score.to_string(),
        None => "nan".to_string(),
    }
}

/// The reply a script's return value stands for.
/// `protocol` is the one the script chose with `redis.setresp`: after `redis.setresp(3)` a
/// Lua boolean is a boolean reply (`#t`/`#f`; `:1`/`:0` to a RESP2 client), as in Redis 7.0.
pub fn lua_to_resp(value: &Value, protocol: Protocol) -> Resp {
    to_resp(value, 0, protocol == Protocol::Resp3)
}

fn to_resp(value: &Value, depth: usize, resp3: bool) -> Resp {
    match value {
        Value::String(s) => Resp::bulk(s.as_bytes().to_vec()),
        Value::Integer(n) => Resp::Integer(*n),
        Value::Number(n) => Resp::Integer(truncate(*n)),
        Value::Boolean(b) if resp3 => Resp::Bool(*b),
        Value::Boolean(true) => Resp::Integer(1),
        Value::Table(t) => table_to_resp(t, depth, resp3),
        _ => Resp::nil(),
    }
}

/// The text of a string (or number) field, if the table has one. Raw access: converting a
/// reply never runs a script's metamethods.
fn text_field(table: &Table, name: &str) -> Option<String> {
    match table.raw_get::<Value>(name).ok()? {
        Value::String(s) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        _ => None,
    }
}

fn table_to_resp(table: &Table, depth: usize, resp3: bool) -> Resp {
    if let Some(text) = text_field(table, "err") {
        return Resp::Error(text);
    }
    if let Some(text) = text_field(table, "ok") {
        return Resp::Simple(text);
    }
    if depth >= MAX_DEPTH {
        return Resp::error(ERR_TOO_DEEP);
    }
    // RESP3's types (Redis 7.0): `{double = n}`, `{map = {k = v}}`, `{set = {m = true}}`.
    if let Ok(Value::Number(n)) = table.raw_get::<Value>("double") {
        return Resp::Double(format_double(n));
    }
    if let Ok(Value::Integer(n)) = table.raw_get::<Value>("double") {
        return Resp::Double(format_double(n as f64));
    }
    if let Ok(Value::Table(map)) = table.raw_get::<Value>("map") {
        let mut pairs = Vec::new();
        for (k, v) in map.pairs::<Value, Value>().flatten() {
            pairs.push((to_resp(&k, depth + 1, resp3), to_resp(&v, depth + 1, resp3)));
        }
        return Resp::Map(pairs);
    }
    if let Ok(Value::Table(set)) = table.raw_get::<Value>("set") {
        let members = set
            .pairs::<Value, Value>()
            .flatten()
            .map(|(k, _)| to_resp(&k, depth + 1, resp3))
            .collect();
        return Resp::Set(members);
    }
    let mut items = Vec::new();
    // Lua 5.1 arrays end at the first nil, as Redis reads them. The table is bounded by the
    // script's memory limit, so this loop is too.
    for i in 1.. {
        match table.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_resp(&v, depth + 1, resp3)),
        }
    }
    Resp::array(items)
}

/// The Lua value of a command's reply, as a script that chose `protocol` with
/// `redis.setresp` sees it. RESP2 (the default): a map is a flat table, a set a table, a
/// double a string, a boolean 1 or nil (`false`). RESP3: a map `{map = {k = v}}`, a set
/// `{set = {member = true}}`, a double `{double = number}`, null `nil`, a boolean a Lua
/// boolean.
pub fn resp_to_lua(lua: &Lua, reply: &Resp, protocol: Protocol) -> mlua::Result<Value> {
    let resp3 = protocol == Protocol::Resp3;
    let array = |items: &mut dyn Iterator<Item = &Resp>| -> mlua::Result<Value> {
        let table = lua.create_table()?;
        for (i, item) in items.enumerate() {
            table.raw_set(i + 1, resp_to_lua(lua, item, protocol)?)?;
        }
        Ok(Value::Table(table))
    };
    Ok(match reply {
        Resp::Integer(n) => Value::Number(*n as f64),
        Resp::Bulk(Some(bytes)) => Value::String(lua.create_string(bytes)?),
        Resp::Verbatim(_, bytes) if !resp3 => Value::String(lua.create_string(bytes)?),
        Resp::Verbatim(format, bytes) => {
            let table = lua.create_table_with_capacity(0, 2)?;
            table.raw_set("format", lua.create_string(format)?)?;
            table.raw_set("string", lua.create_string(bytes)?)?;
            Value::Table(wrapped(lua, "verbatim_string", Value::Table(table))?)
        }
        Resp::Bulk(None) | Resp::Array(None) if resp3 => Value::Nil,
        Resp::Bulk(None) | Resp::Array(None) => Value::Boolean(false),
        Resp::Array(Some(items)) | Resp::Push(items) => array(&mut items.iter())?,
        Resp::Set(items) if !resp3 => array(&mut items.iter())?,
        Resp::Set(items) => {
            let set = lua.create_table()?;
            for item in items {
                set.raw_set(resp_to_lua(lua, item, protocol)?, true)?;
            }
            Value::Table(wrapped(lua, "set", Value::Table(set))?)
        }
        Resp::Map(pairs) | Resp::Pairs(pairs) if !resp3 => {
            array(&mut pairs.iter().flat_map(|(k, v)| [k, v]))?
        }
        Resp::Map(pairs) => {
            let map = lua.create_table()?;
            for (k, v) in pairs {
                map.raw_set(
                    resp_to_lua(lua, k, protocol)?,
                    resp_to_lua(lua, v, protocol)?,
                )?;
            }
            Value::Table(wrapped(lua, "map", Value::Table(map))?)
        }
        Resp::Pairs(pairs) => {
            let table = lua.create_table()?;
            for (i, (a, b)) in pairs.iter().enumerate() {
                let pair = lua.create_table_with_capacity(2, 0)?;
                pair.raw_set(1, resp_to_lua(lua, a, protocol)?)?;
                pair.raw_set(2, resp_to_lua(lua, b, protocol)?)?;
                table.raw_set(i + 1, pair)?;
            }
            Value::Table(table)
        }
        Resp::Double(text) if resp3 => {
            let n: f64 = text.parse().unwrap_or(f64::NAN);
            Value::Table(wrapped(lua, "double", Value::Number(n))?)
        }
        Resp::Double(text) => Value::String(lua.create_string(text)?),
        Resp::Bool(b) if resp3 => Value::Boolean(*b),
        Resp::Bool(true) => Value::Number(1.0),
        Resp::Bool(false) => Value::Boolean(false),
        Resp::Simple(text) => Value::Table(one_field(lua, "ok", text)?),
        Resp::Error(text) => Value::Table(one_field(lua, "err", text)?),
    })
}

/// `{name = value}`.
fn wrapped(lua: &Lua, name: &str, value: Value) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set(name, value)?;
    Ok(table)
}

/// `{name = text}`: a status or error reply in Lua.
pub fn one_field(lua: &Lua, name: &str, text: &str) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set(name, lua.create_string(text)?)?;
    Ok(table)
}
