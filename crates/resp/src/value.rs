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
