//! A coordination application for plumb with ZooKeeper's data model: znodes with data and
//! stats, sessions that expire in agreed time, ephemeral and sequential nodes, multi, ACLs and
//! watches pushed through the library's push channel. `docs/coordination.md` tells how it is
//! served to unmodified ZooKeeper clients.

mod op;

pub use op::*;
