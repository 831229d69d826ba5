//! `lastSent[c]` (seed 004 Figure 5.7): the AUTH-REQ an authentication replica built for a
//! client's latest request, and how it is built, for a new request (request.rs) and again
//! from the stored request after a restart (recovery.rs).

use plumb_config::ProtocolConfig;
use plumb_core::KeyRing;
use plumb_crypto::{Digest, Mac};
use plumb_wire::{Body, ClientId, Life, Message, OrderId, Principal, ReqCore, ReqNo};

/// `lastSent[c]`: the AUTH-REQ this replica built for the client's latest request.
#[derive(Debug, Clone)]
pub(crate) struct LastSent {
    pub core: ReqCore,
    pub macs: Vec<Mac>,
    /// When it was last *re*sent (the first send does not count): retransmissions go out at
    /// most once per `auth_resend_us` per client (§5.7.2).
    pub resent_at: Option<plumb_core::Micros>,
}

impl LastSent {
    pub(crate) fn message(&self) -> Message {
        Message::AuthReq {
            core: self.core.clone(),
            macs: self.macs.clone(),
        }
    }
}

/// Build the AUTH-REQ contents for `(client, life, nc, op)`: the core (inline body if small, its
/// digest otherwise) and this replica's MAC over the id digest for each order replica, the
/// row of the matrix signature that makes the request one-step transferable (AS1, §6.4).
/// `None` if a key for some order replica is missing (a configuration error).
pub(crate) fn authenticate_core(
    keys: &KeyRing,
    cfg: &ProtocolConfig,
    client: ClientId,
    life: Life,
    nc: ReqNo,
    op: &[u8],
    op_digest: Digest,
) -> Option<LastSent> {
    let body = if op.len() <= cfg.inline_max_bytes {
        Body::Inline(op.to_vec())
    } else {
        Body::Digest(op_digest)
    };
    let core = ReqCore {
        client,
        life,
        nc,
        body,
    };
    let id = core.id_digest();
    let macs = OrderId::all(cfg.quorums.order)
        .map(|o| keys.mac_for(Principal::Order(o), &id.0))
        .collect::<Option<Vec<Mac>>>()?;
    Some(LastSent {
        core,
        macs,
        resent_at: None,
    })
}
