//! A client identity: the client id the cluster file lists and the secret whose public half it
//! lists, as `plumb init` issues them (`keys/client-<id>.key`, 64 hex digits). Pairwise MAC keys
//! with every replica are derived from it (X25519), so the secret never leaves this process.

use crate::net::ClientError;
use plumb_cluster::{identity_for, read_secret, Cluster};
use plumb_core::KeyRing;
use plumb_wire::Principal;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A client id and its secret key.
///
/// ```no_run
/// # fn main() -> Result<(), plumb_client::net::ClientError> {
/// use plumb_client::net::Identity;
/// // The key file `plumb init` wrote for client 8 of the cluster in ./plumb-local.
/// let me = Identity::from_key_file(8, "plumb-local/keys/client-8.key")?;
/// assert_eq!(me.id(), 8);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Identity {
    id: u32,
    secret: [u8; 32],
    /// Where the secret came from, for error messages.
    source: Option<PathBuf>,
}

impl Identity {
    /// Client `id` with the secret in `path` (a key file as `plumb init` writes it).
    pub fn from_key_file(id: u32, path: impl AsRef<Path>) -> Result<Identity, ClientError> {
        let path = path.as_ref();
        let secret = read_secret(path).map_err(|e| ClientError::KeyFile {
            id,
            path: path.to_path_buf(),
            reason: e.what,
        })?;
        Ok(Identity {
            id,
            secret,
            source: Some(path.to_path_buf()),
        })
    }

    /// Client `id` with the key file `plumb init` wrote for it beside `cluster`'s file
    /// (`keys/client-<id>.key`).
    pub fn issued(cluster: &Cluster, id: u32) -> Result<Identity, ClientError> {
        Identity::from_key_file(id, cluster.client_secret_path(id))
    }

    /// Client `id` with a secret held elsewhere (a secret store, an environment variable).
    pub fn from_secret(id: u32, secret: [u8; 32]) -> Identity {
        Identity {
            id,
            secret,
            source: None,
        }
    }

    /// The client id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The principal's keys for `cluster`, refusing an id the cluster does not list or a secret
    /// whose public half is not the one it lists: better a clear error now than requests that
    /// every replica silently drops.
    pub(crate) fn key_ring(&self, cluster: &Cluster) -> Result<KeyRing, ClientError> {
        let me = Principal::Client(self.id);
        let listed = cluster
            .directory
            .get(&me)
            .ok_or_else(|| ClientError::UnknownClient {
                id: self.id,
                config: cluster.path.clone(),
            })?;
        let identity = identity_for(&self.secret, me);
        if identity.public() != *listed {
            return Err(ClientError::WrongKey {
                id: self.id,
                config: cluster.path.clone(),
            });
        }
        Ok(KeyRing::new(
            me,
            Arc::new(identity),
            cluster.directory.clone(),
        ))
    }
}

/// Shows the id and where the key came from, never the key.
impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("id", &self.id)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}
