//! The store's result as the command's reply: [`render`] it as the command's [`Render`] says.

use crate::commands::args::text;
use crate::commands::call::Render;
use crate::Resp;
use plumb_kv::{KvResult, Score};

/// The reply to a command from the store's result, shaped by its [`Render`].
pub fn render(render: &Render, result: KvResult) -> Resp {
    match (render, result) {
        (_, KvResult::Error(text)) => Resp::Error(text),
        (Render::OkOrNil, KvResult::Bool(true)) => Resp::ok(),
        (Render::OkOrNil, KvResult::Bool(false)) => Resp::nil(),
        (Render::Ttl { millis }, KvResult::Int(micros)) if micros >= 0 => {
            // Rounded to the nearest unit, as Redis rounds milliseconds to seconds.
            let unit = if *millis { 1_000 } else { 1_000_000 };
            Resp::Integer(micros.saturating_add(unit / 2) / unit)
        }
        (Render::Status, KvResult::Value(Some(v))) => Resp::Simple(text(&v)),
        (Render::Ok, _) => Resp::ok(),
        (Render::ObjectRefcount | Render::ObjectEncoding, KvResult::Value(Some(kind)))
            if kind == b"none" =>
        {
            Resp::nil()
        }
        (Render::ObjectRefcount, KvResult::Value(Some(_))) => Resp::Integer(1),
        (Render::ObjectEncoding, KvResult::Value(Some(kind))) => {
            let encoding = match kind.as_slice() {
                b"string" => "raw",
                b"list" => "quicklist",
                b"zset" => "skiplist",
                _ => "hashtable",
            };
            Resp::bulk(encoding)
        }
        (Render::FlatPop, KvResult::PoppedScored(key, members)) => {
            let mut flat = vec![Resp::bulk(key)];
            for (m, s) in members {
                flat.push(Resp::bulk(m));
                flat.push(double(s));
            }
            Resp::array(flat)
        }
        (Render::FlatScored, KvResult::Scored(members)) => Resp::array(
            members
                .into_iter()
                .flat_map(|(m, s)| [Resp::bulk(m), double(s)])
                .collect(),
        ),
        (Render::Map, KvResult::Pairs(pairs)) => Resp::Map(
            pairs
                .into_iter()
                .map(|(f, v)| (Resp::bulk(f), Resp::bulk(v)))
                .collect(),
        ),
        (Render::Tuples, KvResult::Pairs(pairs)) => Resp::Pairs(
            pairs
                .into_iter()
                .map(|(f, v)| (Resp::bulk(f), Resp::bulk(v)))
                .collect(),
        ),
        (Render::Set, KvResult::Items(items)) => {
            Resp::Set(items.into_iter().map(Resp::bulk).collect())
        }
        (Render::Doubles, KvResult::Values(values)) => Resp::array(
            values
                .into_iter()
                .map(|v| match v {
                    Some(text) => Resp::Double(String::from_utf8_lossy(&text).into_owned()),
                    None => Resp::nil(),
                })
                .collect(),
        ),
        (_, result) => plain(result),
    }
}

/// A score as a double reply (`%.17g`, `inf`, `-inf`: the bulk string's text in RESP2).
fn double(score: Score) -> Resp {
    Resp::Double(score.to_string())
}

fn plain(result: KvResult) -> Resp {
    match result {
        KvResult::Value(v) => Resp::Bulk(v),
        KvResult::Ok => Resp::ok(),
        KvResult::Bool(b) => Resp::Integer(i64::from(b)),
        KvResult::Int(n) => Resp::Integer(n),
        KvResult::Error(text) => Resp::Error(text),
        KvResult::Keys(items) | KvResult::Items(items) => Resp::bulks(items),
        KvResult::Values(values) => Resp::array(values.into_iter().map(Resp::Bulk).collect()),
        KvResult::Pairs(pairs) => Resp::array(
            pairs
                .into_iter()
                .flat_map(|(f, v)| [Resp::bulk(f), Resp::bulk(v)])
                .collect(),
        ),
        KvResult::Nil => Resp::Array(None),
        KvResult::Score(score) => score.map_or_else(Resp::nil, double),
        KvResult::Scored(scored) => Resp::Pairs(
            scored
                .into_iter()
                .map(|(m, s)| (Resp::bulk(m), double(s)))
                .collect(),
        ),
        // Not a single command's result (the session renders these); shown plainly.
        KvResult::Each(results) => Resp::array(each(results).into_iter().map(plain).collect()),
        KvResult::Aborted => Resp::Array(None),
        KvResult::Ints(ns) => Resp::array(ns.into_iter().map(Resp::Integer).collect()),
        KvResult::Matches(ranges, len) => Resp::Map(vec![
            (
                Resp::bulk("matches"),
                Resp::array(
                    ranges
                        .into_iter()
                        .map(|r| {
                            let pair = |x: i64, y: i64| {
                                Resp::array(vec![Resp::Integer(x), Resp::Integer(y)])
                            };
                            let mut item = vec![pair(r[0], r[1]), pair(r[2], r[3])];
                            item.extend(r.get(4).map(|&n| Resp::Integer(n)));
                            Resp::array(item)
                        })
                        .collect(),
                ),
            ),
            (Resp::bulk("len"), Resp::Integer(len)),
        ]),
        KvResult::Popped(key, items) => Resp::array(vec![Resp::bulk(key), Resp::bulks(items)]),
        KvResult::PoppedScored(key, members) => Resp::array(vec![
            Resp::bulk(key),
            Resp::array(
                members
                    .into_iter()
                    .map(|(m, s)| Resp::array(vec![Resp::bulk(m), double(s)]))
                    .collect(),
            ),
        ]),
        KvResult::Counts(counts) => Resp::array(
            counts
                .into_iter()
                .flat_map(|(name, n)| [Resp::bulk(name), Resp::Integer(n)])
                .collect(),
        ),
        KvResult::Cursor(next, items) => Resp::array(vec![
            Resp::bulk(next.to_string().into_bytes()),
            Resp::bulks(items),
        ]),
        KvResult::Script(bytes) => Resp::parse(&bytes)
            .unwrap_or_else(|| Resp::error("ERR the cluster's script reply is not one RESP value")),
    }
}

/// The encoded results of a [`KvResult::Each`], decoded (an undecodable one becomes an error).
pub fn each(results: Vec<Vec<u8>>) -> Vec<KvResult> {
    results
        .iter()
        .map(|bytes| {
            KvResult::decode(bytes).unwrap_or_else(|e| {
                KvResult::Error(format!("ERR the cluster's answer does not decode: {e}"))
            })
        })
        .collect()
}
