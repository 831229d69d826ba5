//! The incremental request parser: multibulk (`*N\r\n$len\r\n...`) and inline commands, as
//! Redis' `processMultibulkBuffer` / `processInlineBuffer` read them, with Redis' error texts.
//!
//! Each command is recognised by its first byte: `*` starts a multibulk request, anything
//! else an inline one. Lengths are checked against [`Limits`] before anything is allocated
//! for them, and bytes are copied out of the buffer only once a whole argument is present,
//! so a header announcing a huge array or string costs nothing until its bytes arrive.
//! After an error the parser keeps returning it: the caller replies and closes the
//! connection, as Redis does.
//!
//! Like Redis, the two bytes after a header line's `\r` and after a bulk string's payload
//! are skipped without being checked to be `\r\n`. Unlike Redis, a line's length limit
//! (`max_inline_len` bytes before the line end) is also enforced when the line end is already
//! buffered, so the outcome never depends on how the input was split into reads.

use plumb_kv::parse_integer;
use std::fmt;

/// Size limits of requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string argument, in bytes (Redis' `proto-max-bulk-len`).
    pub max_bulk_len: usize,
    /// Most arguments in one multibulk request.
    pub max_array_len: usize,
    /// Longest inline command line, and longest `*N` / `$N` header line, in bytes.
    pub max_inline_len: usize,
}

impl Default for Limits {
    /// 64 MiB bulk strings, 1Mi arguments, 64 KiB inline lines.
    fn default() -> Limits {
        Limits {
            max_bulk_len: 64 << 20,
            max_array_len: 1 << 20,
            max_inline_len: 64 << 10,
        }
    }
}

/// A malformed request. Its text is Redis' (e.g. `ERR Protocol error: invalid multibulk
/// length`); reply with [`ProtocolError::to_resp`] and close the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    text: String,
}

impl ProtocolError {
    fn new(what: impl fmt::Display) -> ProtocolError {
        // Redis turns line breaks in error texts into spaces.
        let text = format!("ERR Protocol error: {what}").replace(['\r', '\n'], " ");
        ProtocolError { text }
    }

    /// The error text, starting with `ERR`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The error reply to send before closing.
    pub fn to_resp(&self) -> crate::Resp {
        crate::Resp::Error(self.text.clone())
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for ProtocolError {}

/// A multibulk request whose header has been read.
#[derive(Debug)]
struct Pending {
    /// Arguments still to read.
    remaining: usize,
    args: Vec<Vec<u8>>,
    /// Length of the bulk string whose `$len` line has been read.
    bulk_len: Option<usize>,
}

/// The incremental request parser of one connection.
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    buf: Vec<u8>,
    /// Start of the unparsed bytes in `buf`.
    pos: usize,
    pending: Option<Pending>,
    failed: Option<ProtocolError>,
}

/// What one step of parsing found.
enum Step {
    Command(Vec<Vec<u8>>),
    /// An empty request (`*0`, `*-1`, a blank inline line): skipped, as Redis does.
    Nothing,
    NeedMore,
}

impl Parser {
    pub fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            buf: Vec::new(),
            pos: 0,
            pending: None,
            failed: None,
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Append received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        // Drop parsed bytes before growing, so the buffer holds about one request.
        if self.pos > 0 && (self.pos == self.buf.len() || self.pos >= 4096) {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes fed but not yet consumed by a returned command.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Next complete command as its argument list; `Ok(None)` if more bytes are needed.
    /// Never returns an empty list. After an `Err`, every later call returns it again.
    pub fn next_command(&mut self) -> Result<Option<Vec<Vec<u8>>>, ProtocolError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        loop {
            let step = match self.pending.is_some() {
                true => self.multibulk_args(),
                false => match self.buf.get(self.pos) {
                    None => Ok(Step::NeedMore),
                    Some(b'*') => self.multibulk_header(),
                    Some(_) => self.inline(),
                },
            };
            match step {
                Ok(Step::Command(args)) => return Ok(Some(args)),
                Ok(Step::Nothing) => continue,
                Ok(Step::NeedMore) => return Ok(None),
                Err(e) => {
                    self.failed = Some(e.clone());
                    self.buf = Vec::new();
                    self.pos = 0;
                    self.pending = None;
                    return Err(e);
                }
            }
        }
    }

    fn rest(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Where the `\r` of the header line at the current position (`*N`, `$N`) is, once it
    /// and one more byte are buffered; `Err(too_big)` once the line cannot fit the limit.
    fn header_line(&self, too_big: &str) -> Result<Option<usize>, ProtocolError> {
        let rest = self.rest();
        // A header line of `max` bytes and its `\r` fit this window.
        let window = &rest[..rest.len().min(self.limits.max_inline_len.saturating_add(1))];
        match window.iter().position(|&b| b == b'\r') {
            None if rest.len() > self.limits.max_inline_len => Err(ProtocolError::new(too_big)),
            None => Ok(None),
            // The `\n` after the `\r` must be buffered too.
            Some(cr) if cr + 2 > rest.len() => Ok(None),
            Some(cr) => Ok(Some(cr)),
        }
    }

    fn multibulk_header(&mut self) -> Result<Step, ProtocolError> {
        let Some(cr) = self.header_line("too big mbulk count string")? else {
            return Ok(Step::NeedMore);
        };
        // The line starts with `*`, so `cr >= 1`.
        let digits = self.rest().get(1..cr).unwrap_or_default();
        let count = parse_integer(digits)
            .filter(|&n| n <= i64::try_from(self.limits.max_array_len).unwrap_or(i64::MAX))
            .ok_or_else(|| ProtocolError::new("invalid multibulk length"))?;
        self.pos += cr + 2;
        let Some(remaining) = usize::try_from(count).ok().filter(|&n| n > 0) else {
            return Ok(Step::Nothing);
        };
        self.pending = Some(Pending {
            remaining,
            // Grows as arguments arrive: the count alone allocates little.
            args: Vec::with_capacity(remaining.min(1024)),
            bulk_len: None,
        });
        self.multibulk_args()
    }

    fn multibulk_args(&mut self) -> Result<Step, ProtocolError> {
        loop {
            let Some(pending) = &self.pending else {
                return Ok(Step::NeedMore);
            };
            if pending.remaining == 0 {
                let done = self.pending.take().map(|p| p.args).unwrap_or_default();
                return Ok(Step::Command(done));
            }
            let len = match pending.bulk_len {
                Some(len) => len,
                None => {
                    let Some(cr) = self.header_line("too big bulk count string")? else {
                        return Ok(Step::NeedMore);
                    };
                    let kind = self.rest()[0];
                    if kind != b'$' {
                        return Err(ProtocolError::new(format_args!(
                            "expected '$', got '{}'",
                            char::from(kind)
                        )));
                    }
                    let len = parse_integer(self.rest().get(1..cr).unwrap_or_default())
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|&n| n <= self.limits.max_bulk_len)
                        .ok_or_else(|| ProtocolError::new("invalid bulk length"))?;
                    self.pos += cr + 2;
                    if let Some(p) = self.pending.as_mut() {
                        p.bulk_len = Some(len);
                    }
                    len
                }
            };
            // The payload and the two bytes after it.
            if self.rest().len() < len + 2 {
                return Ok(Step::NeedMore);
            }
            let arg = self.rest()[..len].to_vec();
            self.pos += len + 2;
            if let Some(p) = self.pending.as_mut() {
                p.args.push(arg);
                p.remaining -= 1;
                p.bulk_len = None;
            }
        }
    }

    fn inline(&mut self) -> Result<Step, ProtocolError> {
        let max = self.limits.max_inline_len;
        let too_big = || ProtocolError::new("too big inline request");
        let rest = self.rest();
        // A line of `max` bytes, `\r` and `\n` fits this window.
        let window = &rest[..rest.len().min(max.saturating_add(2))];
        let Some(newline) = window.iter().position(|&b| b == b'\n') else {
            // The line so far, without a `\r` that may be its end.
            let content = rest.len() - usize::from(rest.last() == Some(&b'\r'));
            return match content > max {
                true => Err(too_big()),
                false => Ok(Step::NeedMore),
            };
        };
        let mut line = &rest[..newline];
        if let [head @ .., b'\r'] = line {
            line = head;
        }
        if line.len() > max {
            return Err(too_big());
        }
        let args =
            split_args(line).ok_or_else(|| ProtocolError::new("unbalanced quotes in request"))?;
        self.pos += newline + 1;
        Ok(match args.is_empty() {
            true => Step::Nothing,
            false => Step::Command(args),
        })
    }
}

impl Default for Parser {
    fn default() -> Parser {
        Parser::new(Limits::default())
    }
}

/// Split an inline command line as Redis' `sdssplitargs` does: blanks separate arguments,
/// `"..."` takes `\n \r \t \b \a \xHH` and `\<any>` escapes, `'...'` takes `\'`, a closing
/// quote must be followed by a blank or the end, and a NUL byte ends the line. `None` for
/// unbalanced quotes.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match line.iter().position(|&b| b == 0) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        // The quote the argument is inside, if any.
        let mut quote: Option<u8> = None;
        loop {
            let c = at(i);
            let Some(q) = quote else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => {
                        i += 1;
                        break;
                    }
                    b'"' | b'\'' => quote = Some(c),
                    other => current.push(other),
                }
                i += 1;
                continue;
            };
            let escape = match c {
                b'\\' => unescape(q, [at(i + 1), at(i + 2), at(i + 3)]),
                _ => None,
            };
            if let Some((byte, width)) = escape {
                current.push(byte);
                i += width;
            } else if c == q {
                if at(i + 1) != 0 && !is_space(at(i + 1)) {
                    return None;
                }
                i += 1;
                break;
            } else if c == 0 {
                return None;
            } else {
                current.push(c);
                i += 1;
            }
        }
        args.push(current);
    }
}

/// What a backslash inside a quoted argument stands for, given the three bytes after it (0
/// past the end), and how many bytes the escape takes, the backslash included: `"..."`
/// takes `\xHH`, `\n \r \t \b \a` and `\<any>`, `'...'` only `\'`. `None` where the
/// backslash is an ordinary byte.
fn unescape(quote: u8, next: [u8; 3]) -> Option<(u8, usize)> {
    if quote == b'\'' {
        return (next[0] == b'\'').then_some((b'\'', 2));
    }
    if next[0] == b'x' {
        if let (Some(hi), Some(lo)) = (hex(next[1]), hex(next[2])) {
            return Some((hi * 16 + lo, 4));
        }
    }
    let byte = match next[0] {
        0 => return None,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'b' => 0x08,
        b'a' => 0x07,
        other => other,
    };
    Some((byte, 2))
}

fn hex(b: u8) -> Option<u8> {
    char::from(b)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}
