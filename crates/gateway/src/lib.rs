//! The gateway core: what every front end (the Redis one in plumb-script, the ZooKeeper one in
//! plumb-coord, the HTTP one in plumb-web) is built on, and plumb's client side over the
//! network. [`pool`] runs library clients; [`front_end`] accepts and counts a front end's
//! connections; [`arrival`] says when a connection's bytes reached the machine; [`push_router`]
//! fans one identity's push events out to local listeners; [`sketching`] puts Prophecy
//! sketchers in front of reads; [`start`] is the start-up every gateway shares (its port, its
//! pool, its admin endpoint and start-up line).

pub mod arrival;
pub mod front_end;
pub mod pool;
pub mod push_router;
pub mod sketching;
pub mod start;

pub use pool::Pool;
