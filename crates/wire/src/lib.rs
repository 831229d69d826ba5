//! The wire format.
//!
//! Every message travels in an [`envelope`]: a fixed header (magic, version, sender, receiver,
//! body length), a body, and a MAC over header and body under the sender/receiver pairwise key.
//! The MAC is checked *before* the body is parsed, so a forged or corrupted frame costs one
//! keyed hash and no parsing. Bodies are `postcard` encodings of [`Message`]: deterministic, so
//! equal messages have equal bytes and equal digests everywhere.
//!
//! Decoding is total: every malformed input is an [`WireError`], never a panic.

pub mod encode;
pub mod envelope;
pub mod message;
pub mod principal;
mod replica_id;
mod report;
mod req_no;
mod seq;
mod view;

pub use envelope::{open, seal, Envelope, WireError, MAX_FRAME_BYTES};
pub use message::*;
pub use principal::Principal;
pub use replica_id::{AuthId, ExecId, OrderId};
pub use report::BatchReport;
