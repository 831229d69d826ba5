//! Jute's primitives (ZooKeeper's `BinaryInputArchive`/`BinaryOutputArchive`): big-endian
//! `int` and `long`, one-byte `boolean`, and `buffer`, `ustring` and `vector` as a 4-byte
//! length (-1 for null, read as empty) followed by the bytes or elements.
//!
//! The [`Reader`] is bounded: every read checks what is left, and a length is checked against
//! the bytes left before anything is allocated, so no input makes it panic or allocate more
//! than its own size.

use std::fmt;

/// Why bytes did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JuteError {
    /// The record ends before its fields do.
    Truncated,
    /// A length below -1.
    BadLength(i32),
    /// An operation code this codec does not know (or not allowed where it was found).
    UnknownOp(i32),
    /// A multi's operations did not end with the closing header.
    Unterminated,
}

impl fmt::Display for JuteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JuteError::Truncated => f.write_str("record truncated"),
            JuteError::BadLength(n) => write!(f, "negative length {n}"),
            JuteError::UnknownOp(op) => write!(f, "unknown operation code {op}"),
            JuteError::Unterminated => f.write_str("multi without its closing header"),
        }
    }
}

impl std::error::Error for JuteError {}

pub type Result<T> = std::result::Result<T, JuteError>;

/// A bounded cursor over one record's bytes.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.bytes.len() {
            return Err(JuteError::Truncated);
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    pub fn int(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn long(&mut self) -> Result<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// Jute writes a boolean as one byte; any nonzero byte reads as true, as Java's does.
    pub fn boolean(&mut self) -> Result<bool> {
        Ok(self.take(1)?[0] != 0)
    }

    /// A length prefix: -1 (null) reads as 0; below -1 is an error.
    fn length(&mut self) -> Result<usize> {
        match self.int()? {
            -1 => Ok(0),
            n if n < -1 => Err(JuteError::BadLength(n)),
            n => Ok(n as usize),
        }
    }

    pub fn buffer(&mut self) -> Result<Vec<u8>> {
        let n = self.length()?;
        Ok(self.take(n)?.to_vec())
    }

    /// A string; bytes that are not UTF-8 are replaced, as Java's decoder does.
    pub fn ustring(&mut self) -> Result<String> {
        let n = self.length()?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// A vector of elements read by `each`. Every element takes at least `min_size` bytes,
    /// so a count larger than what is left is refused before anything is allocated.
    pub fn vector<T>(
        &mut self,
        min_size: usize,
        mut each: impl FnMut(&mut Reader<'a>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = self.length()?;
        if n.saturating_mul(min_size.max(1)) > self.bytes.len() {
            return Err(JuteError::Truncated);
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(each(self)?);
        }
        Ok(out)
    }

    pub fn strings(&mut self) -> Result<Vec<String>> {
        self.vector(4, |r| r.ustring())
    }
}

/// Appends jute's primitives to a byte vector.
pub trait Writer {
    fn int(&mut self, v: i32);
    fn long(&mut self, v: i64);
    fn boolean(&mut self, v: bool);
    fn buffer(&mut self, v: &[u8]);
    fn ustring(&mut self, v: &str);
    fn strings(&mut self, v: &[String]);
}

impl Writer for Vec<u8> {
    fn int(&mut self, v: i32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn long(&mut self, v: i64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn boolean(&mut self, v: bool) {
        self.push(v as u8);
    }
    fn buffer(&mut self, v: &[u8]) {
        self.int(len_i32(v.len()));
        self.extend_from_slice(v);
    }
    fn ustring(&mut self, v: &str) {
        self.buffer(v.as_bytes());
    }
    fn strings(&mut self, v: &[String]) {
        self.int(len_i32(v.len()));
        for s in v {
            self.ustring(s);
        }
    }
}

/// A length as jute's `int`. Frames are limited far below 2 GiB, so this never saturates for
/// anything that is sent.
pub(crate) fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
