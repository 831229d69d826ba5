//! Applications the simulator ships support for. Others implement [`crate::SimApp`] in their
//! own crate (`examples/bank`).

pub mod coord;
pub mod kv;
pub mod redis;
pub mod spec;
