//! Applications the simulator ships support for. Others implement [`crate::SimApp`] in their
//! own crate (`examples/bank`).

pub mod coord;
pub mod kv;
pub mod redis;
pub mod spec;

use crate::app::AppViolation;

/// What one of an application's own checks found, as the simulator reports it: nothing, or
/// one violation of `property`.
fn violations(property: &'static str, found: Result<(), String>) -> Vec<AppViolation> {
    match found {
        Ok(()) => Vec::new(),
        Err(detail) => vec![AppViolation { property, detail }],
    }
}
