//! Helpers the key-value test files share. Each test file is its own crate and uses only
//! some of them, so the rest would be dead code there.
#![allow(dead_code)]

use plumb_app::{Application, Command, LoadError, NonDeterminism};
use plumb_kv::*;
use plumb_wire::{Life, ReqNo, Seq};

pub fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

pub fn err(text: &str) -> KvResult {
    KvResult::Error(text.to_string())
}

pub fn items(v: &[&str]) -> KvResult {
    KvResult::Items(v.iter().map(|s| b(s)).collect())
}

/// `SET key v`, with no expiry.
pub fn set(key: &str, v: &str) -> KvOp {
    KvOp::Set {
        key: b(key),
        value: b(v),
        expire: None,
    }
}

/// splitmix64: a small deterministic generator for the tests' random operations.
pub fn splitmix(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Execute ops as one batch at `time` with `seed`; the decoded replies.
pub fn batch(store: &mut KvStore, ops: &[KvOp], time: u64, seed: u64) -> Vec<KvResult> {
    let encoded: Vec<Vec<u8>> = ops.iter().map(KvOp::encode).collect();
    let cmds: Vec<Command<'_>> = encoded
        .iter()
        .map(|op| Command::new(1, Life(0), ReqNo(1), op))
        .collect();
    let out = store.execute(Seq(1), &cmds, NonDeterminism { time, seed });
    out.replies
        .iter()
        .map(|r| KvResult::decode(r).expect("replies decode"))
        .collect()
}

/// `bad` is refused as corrupt and leaves `store` as it was.
pub fn assert_checkpoint_refused(store: &mut KvStore, bad: &[u8]) {
    let before = store.clone();
    let result = store.load_checkpoint(bad);
    assert!(
        matches!(result, Err(LoadError::Corrupt(_))),
        "{bad:?} gave {result:?}"
    );
    assert_eq!(*store, before);
}
