//! The production driver of plumb's pure stages (the simulator is the other one).
//!
//! - [`runner`]: a stage on its own thread, with real time, timers and a durable store
//!   (written on a thread of its own, `store_thread`);
//! - [`mailbox`]: per-sender bounded queues served round-robin;
//! - [`link`]: TCP framing and self-redialing connections;
//! - [`handshake`]: a node proving which node dialed a connection;
//! - [`admin`]: the operator's HTTP endpoint;
//! - [`wan`]: emulated wide-area delay on links (docs/wan-emulation.md);
//! - [`signal`]: waiting for the operator's Ctrl-C or SIGTERM, and [`out!`] for what a
//!   command prints.

/// `println!` that ignores a closed stdout (`plumb ... | head`) instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub mod accept;
pub mod admin;
pub mod handshake;
pub mod link;
pub mod mailbox;
pub mod runner;
pub mod signal;
pub mod source_limit;
mod store_thread;
pub mod wan;

pub use handshake::NodeKeys;
pub use link::{Greeting, Link, OnFrame};
pub use mailbox::{Item, Mailbox, QueueKey};
pub use runner::{wall_micros, Host, Outbox, Runner, StageShared};
pub use signal::terminated;
pub use wan::{DelayLine, LinkDelay};
