//! The client for code that is not async: the async [`Client`] on a small tokio runtime of its
//! own (one worker thread for the links), each call waiting for its answer.

use crate::net::{Client, ClientError, ClientOptions, Cluster, Identity, PushEvent, PushEvents};
use std::path::Path;
use std::time::Duration;

/// A [`Client`] for synchronous code: the same operations, each blocking until answered.
///
/// It is `Send + Sync`: share it between threads (in an `Arc`), and calls from several
/// threads queue like an async client's. Do not call it from inside an async runtime (use
/// [`Client`] there): blocking a runtime's thread on the runtime's own work panics.
///
/// ```no_run
/// use plumb_client::net::{BlockingClient, Identity};
///
/// # fn main() -> Result<(), plumb_client::net::ClientError> {
/// let me = Identity::from_key_file(8, "plumb-local/keys/client-8.key")?;
/// let client = BlockingClient::connect("plumb-local/cluster.toml", me)?;
/// let written = client.invoke(b"an operation".to_vec())?;
/// let read = client.invoke_read_only(b"a read".to_vec())?;
/// # let _ = (written, read);
/// client.shutdown();
/// # Ok(()) }
/// ```
pub struct BlockingClient {
    /// `None` only while shutting down.
    client: Option<Client>,
    runtime: tokio::runtime::Runtime,
}

impl BlockingClient {
    /// [`Client::connect`], blocking.
    pub fn connect(
        cluster_file: impl AsRef<Path>,
        identity: Identity,
    ) -> Result<BlockingClient, ClientError> {
        let runtime = runtime()?;
        let client = runtime.block_on(Client::connect(cluster_file, identity))?;
        Ok(BlockingClient {
            client: Some(client),
            runtime,
        })
    }

    /// [`Client::connect_with`], blocking.
    pub fn connect_with(
        cluster: &Cluster,
        identities: Vec<Identity>,
        options: ClientOptions,
    ) -> Result<BlockingClient, ClientError> {
        let runtime = runtime()?;
        let client = runtime.block_on(Client::connect_with(cluster, identities, options))?;
        Ok(BlockingClient {
            client: Some(client),
            runtime,
        })
    }

    /// [`Client::invoke`], blocking.
    pub fn invoke(&self, op: impl Into<Vec<u8>>) -> Result<Vec<u8>, ClientError> {
        let op = op.into();
        self.runtime.block_on(self.client().invoke(op))
    }

    /// [`Client::invoke_read_only`], blocking.
    pub fn invoke_read_only(&self, op: impl Into<Vec<u8>>) -> Result<Vec<u8>, ClientError> {
        let op = op.into();
        self.runtime.block_on(self.client().invoke_read_only(op))
    }

    /// [`Client::push_events`], with blocking receives.
    pub fn push_events(&self) -> BlockingPushEvents {
        BlockingPushEvents {
            events: self.client().push_events(),
            runtime: self.runtime.handle().clone(),
        }
    }

    /// The async client underneath, for code that is partly async (its futures need this
    /// client's runtime or another tokio runtime to run on).
    pub fn client(&self) -> &Client {
        self.client
            .as_ref()
            .expect("the client is present until shutdown")
    }

    /// [`Client::shutdown`], blocking (also done on drop).
    pub fn shutdown(self) {}
}

impl Drop for BlockingClient {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            self.runtime.block_on(client.shutdown());
        }
    }
}

/// Push events for synchronous code, from [`BlockingClient::push_events`].
pub struct BlockingPushEvents {
    events: PushEvents,
    runtime: tokio::runtime::Handle,
}

impl BlockingPushEvents {
    /// The next event, waiting as long as it takes; `None` once the client has shut down.
    pub fn recv(&mut self) -> Option<PushEvent> {
        self.runtime.block_on(self.events.next())
    }

    /// The next event, waiting at most `timeout`; `None` on time-out or shutdown.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<PushEvent> {
        self.runtime
            .block_on(async { tokio::time::timeout(timeout, self.events.next()).await })
            .ok()
            .flatten()
    }

    /// Events this subscription lost because it fell behind.
    pub fn missed(&self) -> u64 {
        self.events.missed()
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ClientError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("plumb-client-io")
        .enable_all()
        .build()
        .map_err(ClientError::Thread)
}
