//! Applications the simulator ships support for. Others implement [`crate::SimApp`] in their
//! own crate (`examples/bank`).

pub mod kv;
pub mod redis;
