//! RESP2 values and their encoding.

/// A RESP2 value.
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
    /// `*len` and the elements, or `*-1` (the null array) for `None`.
    Array(Option<Vec<Resp>>),
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

    /// The one value `bytes` encode exactly (nothing after it), nested at most
    /// [`MAX_DEPTH`] arrays deep; `None` otherwise. For replies the gateway did not make
    /// (a script's, carried as bytes), so a hostile encoding is refused, never trusted.
    pub fn parse(bytes: &[u8]) -> Option<Resp> {
        let mut at = 0;
        let value = parse_value(bytes, &mut at, 0)?;
        (at == bytes.len()).then_some(value)
    }

    /// The RESP2 bytes of this value.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        encode(self, &mut out);
        out
    }
}

/// Append the RESP2 encoding of `v` to `out`. `\r` and `\n` in simple strings and errors
/// become spaces (as Redis does), so any value encodes to a well-formed reply.
pub fn encode(v: &Resp, out: &mut Vec<u8>) {
    match v {
        Resp::Simple(text) => line(b'+', text.as_bytes(), out),
        Resp::Error(text) => line(b'-', text.as_bytes(), out),
        Resp::Integer(n) => header(b':', *n, out),
        Resp::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
        Resp::Bulk(Some(bytes)) => {
            header(b'$', len_i64(bytes.len()), out);
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
        Resp::Array(None) => out.extend_from_slice(b"*-1\r\n"),
        Resp::Array(Some(items)) => {
            header(b'*', len_i64(items.len()), out);
            for item in items {
                encode(item, out);
            }
        }
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

/// Deepest array nesting [`Resp::parse`] accepts (and a script reply may have).
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
            n if depth < MAX_DEPTH => {
                let n = usize::try_from(n).ok()?;
                // Each element takes at least 3 bytes: no allocation beyond what is there.
                let mut items = Vec::with_capacity(n.min(bytes.len() / 3));
                for _ in 0..n {
                    items.push(parse_value(bytes, at, depth + 1)?);
                }
                Some(Resp::Array(Some(items)))
            }
            _ => None,
        },
        _ => None,
    }
}
