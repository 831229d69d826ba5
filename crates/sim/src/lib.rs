//! Deterministic simulator. (in progress)
