//! A coordination application for plumb with ZooKeeper's data model: znodes with data and
//! stats, sessions that expire in agreed time, ephemeral and sequential nodes, multi, ACLs and
//! watches pushed through the library's push channel. `docs/coordination.md` tells how it is
//! served to unmodified ZooKeeper clients: by its gateway (`gateway`, feature `gateway`).
//!
//! Files: `op.rs` (operations, replies, pushes and their encoding), `path.rs` (path rules),
//! `tree.rs` (znodes and stats), `names.rs` (a chunk's children's names), `session.rs`, `watch.rs` (firing rules), `acl.rs`,
//! `app.rs` (execution, the [`plumb_app::Application`] implementation), `objects.rs` (the
//! state as objects: buckets of nodes, the metadata, access sets) and `checkpoint.rs`.

pub mod acl;
mod app;
mod checkpoint;
/// The ZooKeeper front end `plumb gateway` runs for a coordination cluster (feature `gateway`).
#[cfg(feature = "gateway")]
pub mod gateway;
pub mod names;
mod objects;
mod op;
pub mod path;
pub mod session;
/// The application under the simulator (feature `sim`).
#[cfg(feature = "sim")]
pub mod sim;
pub mod tree;
pub mod watch;

pub use app::{is_read_only, CoordApp};
pub use checkpoint::CHECKPOINT_VERSION;
pub use objects::{BUCKET_VERSION, METADATA_VERSION};
pub use op::*;
