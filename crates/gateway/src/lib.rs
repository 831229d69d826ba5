//! The client side of plumb over the network, and the gateway that serves unmodified Redis
//! clients: [`pool`] runs library clients, [`resp_server`] speaks RESP to Redis clients and
//! turns their commands into replicated key-value operations.

pub mod blocking;
pub mod clients;
pub mod front_end;
pub mod pool;

pub use pool::Pool;
pub mod pubsub;
pub mod push_router;
pub mod resp_server;
pub mod sketching;
pub mod start;

pub use resp_server::{GatewayStats, RespServer};
