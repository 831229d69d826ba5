//! The key a node proves itself to another node with (the peer handshake,
//! `plumb_runtime::handshake`).
//!
//! No new key material: each node's *link principal* is the lowest-ordered principal it hosts
//! (auth before order before execution, then by index), and two nodes share the pairwise MAC
//! key of their link principals, which both already derive from X25519 for envelopes. Only
//! the node holding the link principal's secret can compute it. The handshake's own tag keeps
//! its MAC inputs apart from the envelope and authenticator MACs made under the same key.

use plumb_cluster::Cluster;
use plumb_core::KeyRing;
use plumb_crypto::Mac;
use plumb_runtime::NodeKeys;
use plumb_wire::Principal;
use std::collections::HashMap;

pub struct PeerKeys {
    me: u16,
    /// The key ring of this node's link principal.
    ring: KeyRing,
    /// Every other node's link principal.
    peers: HashMap<u16, Principal>,
}

/// The principal whose keys speak for node `id` on its links.
pub fn link_principal(cluster: &Cluster, id: u16) -> Option<Principal> {
    cluster.node(id)?.principals.iter().min().copied()
}

impl PeerKeys {
    /// `None` if this node hosts no principal (it then has nothing to send its peers).
    pub fn new(
        cluster: &Cluster,
        me: u16,
        rings: &HashMap<Principal, KeyRing>,
    ) -> Option<PeerKeys> {
        let ring = rings.get(&link_principal(cluster, me)?)?.clone();
        let peers = cluster
            .nodes
            .iter()
            .filter(|n| n.id != me)
            .filter_map(|n| Some((n.id, link_principal(cluster, n.id)?)))
            .collect();
        Some(PeerKeys { me, ring, peers })
    }
}

impl NodeKeys for PeerKeys {
    fn me(&self) -> u16 {
        self.me
    }

    fn mac(&self, peer: u16, bytes: &[u8]) -> Option<Mac> {
        self.ring.mac_for(*self.peers.get(&peer)?, bytes)
    }

    fn verify(&self, peer: u16, bytes: &[u8], mac: &Mac) -> bool {
        self.peers
            .get(&peer)
            .is_some_and(|p| self.ring.verify_from(*p, bytes, mac))
    }
}
