//! Reply values and their encoding in RESP2 or RESP3.
//!
//! A [`Resp`] is built in its RESP3 shape (maps, sets, doubles, pushes) and written in the
//! connection's protocol: [`encode_as`] with [`Protocol::Resp2`] writes each RESP3 type the
//! way Redis 7.0 does for a RESP2 client (a map as a flat array, a set as an array, a double
//! as a bulk string, a push as an array, the nulls as `$-1` / `*-1`).

/// The protocol a connection speaks: RESP2 until `HELLO 3`, again after `HELLO 2` or
/// `RESET`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Resp2,
    Resp3,
}

impl Protocol {
    /// The version number `HELLO` takes and reports.
    pub fn version(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// A reply value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resp {
    /// `+text`: a status reply.
    Simple(String),
    /// `-text`: an error reply; the text starts with its code (`ERR`, `WRONGTYPE`, ...).
    Error(String),
    /// `:n`.
    Integer(i64),
    /// `$len` and the bytes, or `$-1` (the null bulk string) for `None`.
    Bulk(Option<Vec<u8>>),
    /// `*len` and the elements, or `*-1` (the null array) for `None`. In RESP3 both nulls
    /// are `_`.
    Array(Option<Vec<Resp>>),
    /// RESP3 `%len` and the keys and values; RESP2: a flat array `[k1, v1, k2, v2, ...]`.
    Map(Vec<(Resp, Resp)>),
    /// RESP3 `~len`; RESP2: an array.
    Set(Vec<Resp>),
    /// RESP3 `,text`; RESP2: the bulk string `text`. The text is Redis' (`%.17g`, `inf`).
    Double(String),
    /// RESP3 `#t` / `#f`; RESP2: `:1` / `:0`.
    Bool(bool),
    /// RESP3 `=len` and `fmt:text` (`fmt` three letters, `txt` for `INFO`); RESP2: the bulk
    /// string `text`.
    Verbatim(&'static str, Vec<u8>),
    /// RESP3 `>len` (an out-of-band pub/sub frame); RESP2: an array.
    Push(Vec<Resp>),
    /// Pairs that RESP3 sends as an array of two-element arrays (`ZRANGE ... WITHSCORES`,
    /// `HRANDFIELD ... WITHVALUES`) and RESP2 as one flat array.
    Pairs(Vec<(Resp, Resp)>),
}

impl Resp {
    /// `+OK`.
    pub fn ok() -> Resp {
        Resp::Simple("OK".to_string())
    }

    pub fn error(text: impl Into<String>) -> Resp {
        Resp::Error(text.into())
    }

    pub fn bulk(bytes: impl Into<Vec<u8>>) -> Resp {
        Resp::Bulk(Some(bytes.into()))
    }

    /// The null bulk string (`$-1`), Redis' "nil".
    pub fn nil() -> Resp {
        Resp::Bulk(None)
    }

    pub fn array(items: Vec<Resp>) -> Resp {
        Resp::Array(Some(items))
    }

    /// An array of bulk strings.
    pub fn bulks<I, B>(items: I) -> Resp
    where
        I: IntoIterator<Item = B>,
        B: Into<Vec<u8>>,
    {
        Resp::Array(Some(items.into_iter().map(Resp::bulk).collect()))
    }

    /// The one value `bytes` encode exactly (nothing after it), in RESP2 or RESP3 (nulls,
    /// booleans, doubles, sets, maps, pushes), nested at most [`MAX_DEPTH`] aggregates deep;
    /// `None` otherwise. For replies the gateway did not make
    /// (a script's, carried as bytes), so a hostile encoding is refused, never trusted.
    pub fn parse(bytes: &[u8]) -> Option<Resp> {
        let mut at = 0;
        let value = parse_value(bytes, &mut at, 0)?;
        (at == bytes.len()).then_some(value)
    }

    /// Whether RESP2 would lose something of this value: it holds a map, set, double,
    /// boolean, verbatim string or push (which RESP2 writes as other types).
    pub fn needs_resp3(&self) -> bool {
        match self {
            Resp::Simple(_) | Resp::Error(_) | Resp::Integer(_) | Resp::Bulk(_) => false,
            Resp::Array(None) => false,
            Resp::Array(Some(items)) => items.iter().any(Resp::needs_resp3),
            Resp::Map(_)
            | Resp::Set(_)
            | Resp::Double(_)
            | Resp::Bool(_)
            | Resp::Verbatim(..)
            | Resp::Push(_)
            | Resp::Pairs(_) => true,
        }
    }

    /// The RESP2 bytes of this value.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_bytes_as(Protocol::Resp2)
    }

    /// The bytes of this value in `proto`.
    pub fn to_bytes_as(&self, proto: Protocol) -> Vec<u8> {
        let mut out = Vec::new();
        encode_as(self, proto, &mut out);
        out
    }
}

/// Append the RESP2 encoding of `v` to `out` (see [`encode_as`]).
pub fn encode(v: &Resp, out: &mut Vec<u8>) {
    encode_as(v, Protocol::Resp2, out)
}

/// Append the encoding of `v` in `proto` to `out`. `\r` and `\n` in simple strings,
/// errors and doubles become spaces (as Redis does), so any value encodes to a well-formed
/// reply.
pub fn encode_as(v: &Resp, proto: Protocol, out: &mut Vec<u8>) {
    let resp3 = proto == Protocol::Resp3;
    match v {
        Resp::Simple(text) => line(b'+', text.as_bytes(), out),
        Resp::Error(text) => line(b'-', text.as_bytes(), out),
        Resp::Integer(n) => header(b':', *n, out),
        Resp::Bulk(None) | Resp::Array(None) if resp3 => out.extend_from_slice(b"_\r\n"),
        Resp::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
        Resp::Bulk(Some(bytes)) => bulk(bytes, out),
        Resp::Array(None) => out.extend_from_slice(b"*-1\r\n"),
        Resp::Array(Some(items)) => aggregate(b'*', items, proto, out),
        Resp::Map(pairs) => {
            let kind = if resp3 { b'%' } else { b'*' };
            let n = if resp3 {
                pairs.len()
            } else {
                pairs.len().saturating_mul(2)
            };
            header(kind, len_i64(n), out);
            for (k, v) in pairs {
                encode_as(k, proto, out);
                encode_as(v, proto, out);
            }
        }
        Resp::Set(items) => aggregate(if resp3 { b'~' } else { b'*' }, items, proto, out),
        Resp::Push(items) => aggregate(if resp3 { b'>' } else { b'*' }, items, proto, out),
        Resp::Double(text) if resp3 => line(b',', text.as_bytes(), out),
        Resp::Double(text) => bulk(text.as_bytes(), out),
        Resp::Bool(b) if resp3 => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Resp::Bool(b) => header(b':', i64::from(*b), out),
        Resp::Verbatim(format, text) if resp3 => {
            let format = format.as_bytes();
            // The format is three bytes by definition; any other is sent as `txt`.
            let format: &[u8] = if format.len() == 3 && !format.contains(&b':') {
                format
            } else {
                b"txt"
            };
            header(b'=', len_i64(text.len().saturating_add(4)), out);
            out.extend_from_slice(format);
            out.push(b':');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
        Resp::Verbatim(_, text) => bulk(text, out),
        Resp::Pairs(pairs) if resp3 => {
            header(b'*', len_i64(pairs.len()), out);
            for (a, b) in pairs {
                out.extend_from_slice(b"*2\r\n");
                encode_as(a, proto, out);
                encode_as(b, proto, out);
            }
        }
        Resp::Pairs(pairs) => {
            header(b'*', len_i64(pairs.len().saturating_mul(2)), out);
            for (a, b) in pairs {
                encode_as(a, proto, out);
                encode_as(b, proto, out);
            }
        }
    }
}

fn bulk(bytes: &[u8], out: &mut Vec<u8>) {
    header(b'$', len_i64(bytes.len()), out);
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

fn aggregate(kind: u8, items: &[Resp], proto: Protocol, out: &mut Vec<u8>) {
    header(kind, len_i64(items.len()), out);
    for item in items {
        encode_as(item, proto, out);
    }
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn header(kind: u8, n: i64, out: &mut Vec<u8>) {
    out.push(kind);
    out.extend_from_slice(n.to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn line(kind: u8, text: &[u8], out: &mut Vec<u8>) {
    out.push(kind);
    out.extend(text.iter().map(|&b| match b {
        b'\r' | b'\n' => b' ',
        other => other,
    }));
    out.extend_from_slice(b"\r\n");
}

/// Deepest aggregate nesting [`Resp::parse`] accepts (and a script reply may have).
pub const MAX_DEPTH: usize = 512;

/// The line at `*at` (without its CRLF), moving `at` past it.
fn parse_line<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let rest = bytes.get(*at..)?;
    let end = rest.windows(2).position(|w| w == b"\r\n")?;
    *at += end + 2;
    Some(&rest[..end])
}

fn parse_value(bytes: &[u8], at: &mut usize, depth: usize) -> Option<Resp> {
    let kind = *bytes.get(*at)?;
    *at += 1;
    let line = parse_line(bytes, at)?;
    let text = || String::from_utf8(line.to_vec()).ok();
    let number = || -> Option<i64> { std::str::from_utf8(line).ok()?.parse().ok() };
    match kind {
        b'+' => Some(Resp::Simple(text()?)),
        b'-' => Some(Resp::Error(text()?)),
        b':' => Some(Resp::Integer(number()?)),
        b'$' => match number()? {
            -1 => Some(Resp::Bulk(None)),
            n => {
                let n = usize::try_from(n).ok()?;
                let body = bytes.get(*at..at.checked_add(n)?)?.to_vec();
                *at += n;
                (bytes.get(*at..*at + 2)? == b"\r\n").then_some(())?;
                *at += 2;
                Some(Resp::Bulk(Some(body)))
            }
        },
        b'*' => match number()? {
            -1 => Some(Resp::Array(None)),
            n => Some(Resp::Array(Some(parse_items(bytes, at, depth, n)?))),
        },
        // RESP3 (a script's reply that has a map, set or double is carried in RESP3).
        b'_' if line.is_empty() => Some(Resp::Bulk(None)),
        b'#' => match line {
            b"t" => Some(Resp::Bool(true)),
            b"f" => Some(Resp::Bool(false)),
            _ => None,
        },
        b',' => Some(Resp::Double(text()?)),
        b'~' => Some(Resp::Set(parse_items(bytes, at, depth, number()?)?)),
        b'>' => Some(Resp::Push(parse_items(bytes, at, depth, number()?)?)),
        b'%' => {
            let n = number()?.checked_mul(2)?;
            let mut items = parse_items(bytes, at, depth, n)?.into_iter();
            let mut pairs = Vec::with_capacity(items.len() / 2);
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                pairs.push((k, v));
            }
            Some(Resp::Map(pairs))
        }
        _ => None,
    }
}

/// `n` values of an aggregate nested at `depth` (refused past [`MAX_DEPTH`]).
fn parse_items(bytes: &[u8], at: &mut usize, depth: usize, n: i64) -> Option<Vec<Resp>> {
    if depth >= MAX_DEPTH {
        return None;
    }
    let n = usize::try_from(n).ok()?;
    // Each element takes at least 3 bytes: no allocation beyond what is there.
    let mut items = Vec::with_capacity(n.min(bytes.len() / 3));
    for _ in 0..n {
        items.push(parse_value(bytes, at, depth + 1)?);
    }
    Some(items)
}
