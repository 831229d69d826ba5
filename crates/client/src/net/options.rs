//! What a user may choose when connecting: where the client record lives, and how long to wait.

use plumb_cluster::Cluster;
use std::path::PathBuf;
use std::time::Duration;

/// Where a client keeps its record: the number of its last request and the request it has
/// outstanding (CS3). A correct client never reuses a request number, and it resends an
/// unanswered request after a restart, so the record is written (and synced) before each
/// request leaves.
///
/// Losing the record is survivable but not free: the restarted client first asks the execution
/// replicas for its last request number (a round trip), and the operation that was outstanding
/// at the crash is forgotten (it may still be executed, once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordLocation {
    /// Beside the cluster file: `<cluster dir>/clients/pool-c<id>` for one identity (the same
    /// place `plumb kv` keeps that identity's record, so the two take turns safely), and
    /// `<cluster dir>/clients/group-c<first>-c<last>` for several.
    #[default]
    BesideClusterFile,
    /// In this directory (created if missing). It holds a lock while the client runs: one
    /// directory, one running client.
    Dir(PathBuf),
    /// In a fresh temporary directory removed at shutdown: every start is a start without a
    /// record (for tests and short-lived tools that can afford the extra round trip).
    Temporary,
}

impl RecordLocation {
    /// The directory for `ids` of `cluster`; `None` for [`RecordLocation::Temporary`].
    pub(crate) fn dir(&self, cluster: &Cluster, ids: &[u32]) -> Option<PathBuf> {
        let clients = cluster.dir().join("clients");
        match self {
            RecordLocation::BesideClusterFile => Some(match ids {
                [one] => clients.join(format!("pool-c{one}")),
                _ => clients.join(format!(
                    "group-c{}-c{}",
                    ids.first().copied().unwrap_or(0),
                    ids.last().copied().unwrap_or(0)
                )),
            }),
            RecordLocation::Dir(dir) => Some(dir.clone()),
            RecordLocation::Temporary => None,
        }
    }
}

/// How a [`Client`](crate::net::Client) connects and waits.
///
/// ```
/// use plumb_client::net::{ClientOptions, RecordLocation};
/// use std::time::Duration;
///
/// let options = ClientOptions {
///     record: RecordLocation::Dir("/var/lib/my-service/plumb-client".into()),
///     op_timeout: Some(Duration::from_secs(5)),
///     ..ClientOptions::default()
/// };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// Where the client record lives (default: beside the cluster file).
    pub record: RecordLocation,
    /// How long `connect` waits for connections to enough replicas before it gives up with
    /// [`ClientError::Unreachable`](crate::net::ClientError::Unreachable) (default 10 s).
    /// `None`: return at once and let requests wait for the links.
    pub connect_timeout: Option<Duration>,
    /// How long an operation may wait for its answer before
    /// [`ClientError::TimedOut`](crate::net::ClientError::TimedOut) (default 30 s). `None`:
    /// wait as long as it takes (the protocol resends forever).
    pub op_timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            record: RecordLocation::default(),
            connect_timeout: Some(Duration::from_secs(10)),
            op_timeout: Some(Duration::from_secs(30)),
        }
    }
}
