//! A cluster's configuration: one TOML file that every node, gateway and client reads.
//!
//! The file names `u` and `r`, optional protocol overrides, every node with its addresses,
//! roles and the public keys of its role principals, the clients allowed to talk to the
//! cluster with their public keys, and the gateway. Secrets live in separate files under
//! `keys/` beside the configuration; only public keys are distributed (pairwise MAC keys come
//! from X25519 agreement). `docs/operations.md` documents the format field by field.
//!
//! The file also names the application the cluster replicates (`app = "kv"`); a node binary
//! runs only the applications it was built with and refuses any other by name.
//!
//! A node hosting a role is that role's replica number *k*, where *k* is the node's rank among
//! the nodes that have the role, in the order the file lists them. Each role principal has
//! its own identity, derived from the node's secret and the principal's label.

mod file;
mod init;
mod keys;

pub use file::{
    valid_app_name, ClientRange, ClusterFile, GatewayEntry, NodeEntry, ProtocolOverrides, RoleName,
    WanEntry, DEFAULT_APP,
};
pub use init::{init, InitOptions};
pub use keys::{identity_for, public_from_hex, public_to_hex, read_secret, write_secret};

use plumb_config::{Faults, ProtocolConfig, Quorums, Wan};
use plumb_core::KeyRing;
use plumb_crypto::PublicIdentity;
use plumb_wire::Principal;
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What was wrong with a configuration or key file, naming the file and the field.
#[derive(Debug)]
pub struct ClusterError {
    pub file: PathBuf,
    pub what: String,
}

impl ClusterError {
    pub fn new(file: &Path, what: impl Into<String>) -> ClusterError {
        ClusterError {
            file: file.to_path_buf(),
            what: what.into(),
        }
    }
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.what)
    }
}

impl std::error::Error for ClusterError {}

/// A node of the cluster, validated.
#[derive(Clone, Debug)]
pub struct Node {
    pub id: u16,
    /// Where peers and clients connect.
    pub address: SocketAddr,
    /// Admin HTTP endpoint: `/metrics`, `/status`.
    pub admin: SocketAddr,
    /// The role principals this node hosts.
    pub principals: Vec<Principal>,
}

/// The gateway, validated.
#[derive(Clone, Debug)]
pub struct Gateway {
    pub resp: SocketAddr,
    pub admin: SocketAddr,
    /// The client identities its pool uses.
    pub clients: Vec<u32>,
    /// Serve read-only commands on the fast path (answered by every execution replica alike,
    /// else ordered) instead of always ordering them.
    pub fast_reads: bool,
    /// Reads go through this many Prophecy sketchers (0: none): served by one execution
    /// replica when the sketcher's history vouches for the answer (docs/prophecy.md).
    pub sketchers: u32,
}

/// A loaded, validated cluster configuration.
#[derive(Clone)]
pub struct Cluster {
    /// The configuration file it was read from; key files are relative to its directory.
    pub path: PathBuf,
    /// The application every execution replica runs, by the name node binaries register it
    /// under (`app = "..."` in the file, [`DEFAULT_APP`] if absent).
    pub app: String,
    pub protocol: Arc<ProtocolConfig>,
    pub nodes: Vec<Node>,
    /// Public identity of every principal: replicas and clients.
    pub directory: Arc<HashMap<Principal, PublicIdentity>>,
    pub gateway: Option<Gateway>,
    /// Client identities set aside for command-line tools (`plumb kv`).
    pub cli_clients: Vec<u32>,
    /// The emulated wide-area network, if the file has a `[wan]` section.
    pub wan: Option<Wan>,
}

impl Cluster {
    pub fn load(path: &Path) -> Result<Cluster, ClusterError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ClusterError::new(path, format!("cannot read: {e}")))?;
        let file: ClusterFile = toml::from_str(&text)
            .map_err(|e| ClusterError::new(path, format!("not a valid cluster file: {e}")))?;
        Cluster::from_file(path, file)
    }

    pub fn from_file(path: &Path, file: ClusterFile) -> Result<Cluster, ClusterError> {
        file::validate(path, file)
    }

    pub fn faults(&self) -> Faults {
        self.protocol.quorums.faults
    }

    pub fn quorums(&self) -> Quorums {
        self.protocol.quorums
    }

    /// One-way delay of frames from node `from` to node `to` (zero without `[wan]`).
    pub fn node_delay(&self, from: u16, to: u16) -> std::time::Duration {
        self.wan
            .as_ref()
            .map_or(std::time::Duration::ZERO, |w| w.node_to_node(from, to))
    }

    /// One-way delay between the clients and node `id`, either way (zero without `[wan]`).
    pub fn client_delay(&self, id: u16) -> std::time::Duration {
        self.wan
            .as_ref()
            .map_or(std::time::Duration::ZERO, |w| w.client_to_node(id))
    }

    pub fn node(&self, id: u16) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The node hosting replica principal `p`.
    pub fn node_of(&self, p: Principal) -> Option<&Node> {
        self.nodes.iter().find(|n| n.principals.contains(&p))
    }

    /// Directory holding the configuration file (key files are found from here).
    pub fn dir(&self) -> PathBuf {
        self.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }

    pub fn node_secret_path(&self, id: u16) -> PathBuf {
        self.dir().join("keys").join(format!("node-{id}.key"))
    }

    pub fn client_secret_path(&self, c: u32) -> PathBuf {
        self.dir().join("keys").join(format!("client-{c}.key"))
    }

    /// Key ring of principal `p`, from the secret in `secret_path`. Refuses a secret that does
    /// not match the public key the configuration lists for `p` (a wrong key file).
    pub fn key_ring(&self, p: Principal, secret_path: &Path) -> Result<KeyRing, ClusterError> {
        let secret = read_secret(secret_path)?;
        let identity = identity_for(&secret, p);
        let listed = self.directory.get(&p).ok_or_else(|| {
            ClusterError::new(
                &self.path,
                format!("{p} is not listed in the configuration"),
            )
        })?;
        if identity.public() != *listed {
            return Err(ClusterError::new(
                secret_path,
                format!("this key does not match the public key listed for {p} in the configuration; use the key file `plumb init` wrote for it"),
            ));
        }
        Ok(KeyRing::new(p, Arc::new(identity), self.directory.clone()))
    }
}
