//! `SETBIT` and `GETBIT`: strings as bit arrays, bit 0 the most significant bit of byte 0.

use super::{int, wrong_type, KvStore, Value};
use crate::op::{KvResult, ERR_STRING_TOO_LONG, MAX_STRING};

/// The byte holding bit `offset` and the mask of that bit within it.
fn locate(offset: u64) -> (u64, u8) {
    let shift = 7 - u32::try_from(offset % 8).unwrap_or(0);
    (offset / 8, 1u8 << shift)
}

impl KvStore {
    pub(super) fn setbit(&mut self, key: &[u8], offset: u64, bit: bool) -> KvResult {
        let (byte, mask) = locate(offset);
        if byte >= MAX_STRING {
            // The string would pass plumb's bound on a value (see MAX_STRING).
            return KvResult::error(ERR_STRING_TOO_LONG);
        }
        let mut bytes = match self.value(key) {
            None => Vec::new(),
            Some(Value::Str(v)) => v.clone(),
            Some(_) => return wrong_type(),
        };
        // Below MAX_STRING, so it fits a usize.
        let byte = usize::try_from(byte).unwrap_or(usize::MAX);
        if bytes.len() <= byte {
            bytes.resize(byte + 1, 0);
        }
        let old = bytes[byte] & mask != 0;
        if bit {
            bytes[byte] |= mask;
        } else {
            bytes[byte] &= !mask;
        }
        self.replace_string(key, bytes);
        int(usize::from(old))
    }

    pub(super) fn getbit(&self, key: &[u8], offset: u64) -> KvResult {
        let (byte, mask) = locate(offset);
        match self.value(key) {
            None => KvResult::Int(0),
            Some(Value::Str(v)) => {
                let set = usize::try_from(byte)
                    .ok()
                    .and_then(|i| v.get(i))
                    .is_some_and(|b| b & mask != 0);
                int(usize::from(set))
            }
            Some(_) => wrong_type(),
        }
    }
}
