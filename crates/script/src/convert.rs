//! Values between Lua and RESP, as Redis 7.0 documents them (RESP2).
//!
//! Lua to a reply: a number becomes an integer (truncated toward zero), a string a bulk
//! string, `true` the integer 1, `false` and `nil` the nil bulk string, a table with a
//! string `err` field an error, one with a string `ok` field a status, any other table an
//! array of its elements `1, 2, ...` up to the first `nil`. Anything else (a function, a
//! coroutine) is nil.
//!
//! A reply to Lua: an integer becomes a number, a bulk string a string, nil (bulk or array)
//! `false`, an array a table, a status `{ok = text}`, an error `{err = text}`.

use mlua::{Lua, Table, Value};
use plumb_resp::{Resp, MAX_DEPTH};

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

/// The reply a script's return value stands for.
pub fn lua_to_resp(value: &Value) -> Resp {
    to_resp(value, 0)
}

fn to_resp(value: &Value, depth: usize) -> Resp {
    match value {
        Value::String(s) => Resp::bulk(s.as_bytes().to_vec()),
        Value::Integer(n) => Resp::Integer(*n),
        Value::Number(n) => Resp::Integer(truncate(*n)),
        Value::Boolean(true) => Resp::Integer(1),
        Value::Table(t) => table_to_resp(t, depth),
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

fn table_to_resp(table: &Table, depth: usize) -> Resp {
    if let Some(text) = text_field(table, "err") {
        return Resp::Error(text);
    }
    if let Some(text) = text_field(table, "ok") {
        return Resp::Simple(text);
    }
    if depth >= MAX_DEPTH {
        return Resp::error(ERR_TOO_DEEP);
    }
    let mut items = Vec::new();
    // Lua 5.1 arrays end at the first nil, as Redis reads them. The table is bounded by the
    // script's memory limit, so this loop is too.
    for i in 1.. {
        match table.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_resp(&v, depth + 1)),
        }
    }
    Resp::array(items)
}

/// The Lua value of a command's reply.
pub fn resp_to_lua(lua: &Lua, reply: &Resp) -> mlua::Result<Value> {
    Ok(match reply {
        Resp::Integer(n) => Value::Number(*n as f64),
        Resp::Bulk(Some(bytes)) => Value::String(lua.create_string(bytes)?),
        Resp::Bulk(None) | Resp::Array(None) => Value::Boolean(false),
        Resp::Array(Some(items)) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                table.raw_set(i + 1, resp_to_lua(lua, item)?)?;
            }
            Value::Table(table)
        }
        Resp::Simple(text) => Value::Table(one_field(lua, "ok", text)?),
        Resp::Error(text) => Value::Table(one_field(lua, "err", text)?),
    })
}

/// `{name = text}`: a status or error reply in Lua.
pub fn one_field(lua: &Lua, name: &str, text: &str) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set(name, lua.create_string(text)?)?;
    Ok(table)
}
