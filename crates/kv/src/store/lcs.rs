//! `LCS`: the longest common subsequence of two strings, by Redis' dynamic programme, and the
//! matching ranges exactly as Redis reports them (walking back from the ends).

use super::{int, KvStore, Value};
use crate::op::KvResult;

/// Most cells of the dynamic programme's table (4 bytes each) one `LCS` may make: every
/// replica builds it, so a few request bytes must not make each allocate gigabytes.
pub const LCS_MAX_CELLS: usize = 1 << 24;

/// Error text for keys that hold something other than strings.
pub const ERR_LCS_NOT_STRINGS: &str = "ERR The specified keys must contain string values";

impl KvStore {
    fn lcs_input(&self, key: &[u8]) -> Result<&[u8], KvResult> {
        match self.value(key) {
            None => Ok(&[]),
            Some(Value::Str(v)) => Ok(v),
            Some(_) => Err(KvResult::error(ERR_LCS_NOT_STRINGS)),
        }
    }

    pub(super) fn lcs(
        &self,
        a: &[u8],
        b: &[u8],
        len_only: bool,
        idx: bool,
        min_match_len: u64,
        with_match_len: bool,
    ) -> KvResult {
        let (a, b) = match (self.lcs_input(a), self.lcs_input(b)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        };
        let cells = (a.len() + 1).saturating_mul(b.len() + 1);
        if cells > LCS_MAX_CELLS {
            return KvResult::error(&format!(
                "ERR LCS of strings this long is not supported: {} by {} bytes needs more than {LCS_MAX_CELLS} table cells",
                a.len(),
                b.len()
            ));
        }
        let table = Table::new(a, b);
        let len = table.at(a.len(), b.len());
        if len_only {
            return int(len as usize);
        }
        // Walk back from the ends: a match extends the current range backwards while both
        // strings' ranges stay contiguous; a mismatch or a gap emits it. As in Redis, the
        // character that breaks a range starts none of its own.
        let mut result = vec![0u8; len as usize];
        let mut ranges = Vec::new();
        let (mut i, mut j, mut at) = (a.len(), b.len(), len as usize);
        let none = a.len();
        let (mut a_start, mut a_end, mut b_start, mut b_end) = (none, none, 0, 0);
        while i > 0 && j > 0 {
            let mut emit = false;
            if a[i - 1] == b[j - 1] {
                result[at - 1] = a[i - 1];
                if a_start == none {
                    (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
                } else if a_start == i && b_start == j {
                    a_start -= 1;
                    b_start -= 1;
                } else {
                    emit = true;
                }
                if a_start == 0 || b_start == 0 {
                    emit = true;
                }
                at -= 1;
                i -= 1;
                j -= 1;
            } else {
                if table.at(i - 1, j) > table.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                if a_start != none {
                    emit = true;
                }
            }
            if emit {
                let match_len = (a_end + 1).saturating_sub(a_start) as u64;
                if min_match_len == 0 || match_len >= min_match_len {
                    let n = |x: usize| i64::try_from(x).unwrap_or(i64::MAX);
                    let mut range = vec![n(a_start), n(a_end), n(b_start), n(b_end)];
                    if with_match_len {
                        range.push(i64::try_from(match_len).unwrap_or(i64::MAX));
                    }
                    ranges.push(range);
                }
                a_start = none;
            }
        }
        if idx {
            KvResult::Matches(ranges, i64::from(len))
        } else {
            KvResult::Value(Some(result))
        }
    }
}

/// `at(i, j)`: the length of the longest common subsequence of `a[..i]` and `b[..j]`.
struct Table {
    cells: Vec<u32>,
    width: usize,
}

impl Table {
    fn new(a: &[u8], b: &[u8]) -> Table {
        let width = b.len() + 1;
        let mut cells = vec![0u32; (a.len() + 1) * width];
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                cells[i * width + j] = if a[i - 1] == b[j - 1] {
                    cells[(i - 1) * width + j - 1] + 1
                } else {
                    cells[(i - 1) * width + j].max(cells[i * width + j - 1])
                };
            }
        }
        Table { cells, width }
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.cells[i * self.width + j]
    }
}
