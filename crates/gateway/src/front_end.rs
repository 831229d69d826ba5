//! What every front end (Redis, ZooKeeper, HTTP) does with its listener: accept connections
//! (backing off while out of descriptors, `plumb_runtime::accept`), turn Nagle off, and serve
//! each on its own task, counted while open and in total. Each front end says only how it
//! serves one connection.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};

/// The counters every front end keeps of its connections (its `/metrics` show them).
#[derive(Default)]
pub struct ConnectionStats {
    pub open: AtomicU64,
    pub total: AtomicU64,
    /// Failed `accept`s (out of file descriptors, typically), each followed by a pause.
    pub accept_failures: AtomicU64,
}

pub trait FrontEnd: Send + Sync + 'static {
    /// How the log names it when accepting fails.
    const NAME: &'static str;

    fn connection_stats(&self) -> &ConnectionStats;

    /// Serve connection `id` (numbered from 1, in accept order) until it closes.
    fn serve_connection(&self, stream: TcpStream, id: u64) -> impl Future<Output = ()> + Send + '_;
}

/// Accept and serve connections on `listener` until the process stops.
pub async fn accept_loop<F: FrontEnd>(server: Arc<F>, listener: TcpListener) {
    let mut next_id = 1;
    loop {
        let failures = &server.connection_stats().accept_failures;
        let stream = plumb_runtime::accept::accept(&listener, failures, F::NAME).await;
        let _ = stream.set_nodelay(true);
        let id = next_id;
        next_id += 1;
        let server = server.clone();
        tokio::spawn(async move {
            let counters = server.connection_stats();
            counters.open.fetch_add(1, Ordering::Relaxed);
            counters.total.fetch_add(1, Ordering::Relaxed);
            server.serve_connection(stream, id).await;
            counters.open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}
