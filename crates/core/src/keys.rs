use plumb_crypto::{Identity, Mac, MacKey, PublicIdentity, Signature};
use plumb_wire::{Message, Principal, WireError};
use std::collections::HashMap;
use std::sync::Arc;

/// A principal's keys: pairwise MAC keys with every peer it may talk to, the public identities
/// of peers (for view-change signatures), and its own identity for signing.
#[derive(Clone)]
pub struct KeyRing {
    me: Principal,
    identity: Arc<Identity>,
    macs: HashMap<Principal, MacKey>,
    publics: Arc<HashMap<Principal, PublicIdentity>>,
}

impl KeyRing {
    /// Derive pairwise keys with every principal in `directory` (except `me`).
    pub fn new(
        me: Principal,
        identity: Arc<Identity>,
        directory: Arc<HashMap<Principal, PublicIdentity>>,
    ) -> KeyRing {
        let macs = directory
            .iter()
            .filter(|(p, _)| **p != me)
            .map(|(p, pk)| (*p, identity.pairwise_key(me.label(), p.label(), pk)))
            .collect();
        KeyRing {
            me,
            identity,
            macs,
            publics: directory,
        }
    }

    /// Build from precomputed pairwise keys (the simulator derives them once for all seeds).
    pub fn from_parts(
        me: Principal,
        identity: Arc<Identity>,
        macs: HashMap<Principal, MacKey>,
        publics: Arc<HashMap<Principal, PublicIdentity>>,
    ) -> KeyRing {
        KeyRing {
            me,
            identity,
            macs,
            publics,
        }
    }

    pub fn me(&self) -> Principal {
        self.me
    }

    pub fn knows(&self, p: Principal) -> bool {
        self.macs.contains_key(&p)
    }

    /// Seal `msg` for `to`. `None` if `to` is not a known peer (a local bug or a bad address
    /// taken from a message: the caller drops it).
    pub fn seal(&self, to: Principal, msg: &Message) -> Option<Vec<u8>> {
        let key = self.macs.get(&to)?;
        Some(plumb_wire::seal(self.me, to, msg, key))
    }

    /// Seal `msg` for each of `to`, encoding it once: only the header and MAC differ between
    /// the frames. `None` for a receiver that is not a known peer.
    pub fn seal_each(
        &self,
        to: impl IntoIterator<Item = Principal>,
        msg: &Message,
    ) -> Vec<(Principal, Option<Vec<u8>>)> {
        let to: Vec<Principal> = to.into_iter().collect();
        if let [one] = to[..] {
            return vec![(one, self.seal(one, msg))];
        }
        let body = plumb_wire::envelope::encode_body(msg);
        to.into_iter()
            .map(|p| {
                let frame = self
                    .macs
                    .get(&p)
                    .map(|key| plumb_wire::envelope::seal_encoded(self.me, p, &body, key));
                (p, frame)
            })
            .collect()
    }

    pub fn open(&self, frame: &[u8]) -> Result<(Principal, Message), WireError> {
        plumb_wire::open(frame, self.me, |p| self.macs.get(&p))
    }

    /// Open a frame this principal sealed, returning its receiver: how a test adversary reads
    /// what its own stage sends before it rewrites it.
    pub fn open_own(&self, frame: &[u8]) -> Result<(Principal, Message), WireError> {
        let env = plumb_wire::Envelope::parse(frame)?;
        if env.sender != self.me {
            return Err(WireError::BadSender(env.sender.label()));
        }
        let to = env.receiver;
        let key = self.macs.get(&to).ok_or(WireError::UnknownSender(to))?;
        Ok((to, env.open(key)?))
    }

    /// MAC over `bytes` for `peer` (one entry of a MAC authenticator).
    pub fn mac_for(&self, peer: Principal, bytes: &[u8]) -> Option<Mac> {
        self.macs.get(&peer).map(|k| k.mac(bytes))
    }

    /// Check a MAC that `peer` computed over `bytes` for us.
    pub fn verify_from(&self, peer: Principal, bytes: &[u8], mac: &Mac) -> bool {
        self.macs.get(&peer).is_some_and(|k| k.verify(bytes, mac))
    }

    pub fn sign(&self, bytes: &[u8]) -> Signature {
        self.identity.sign(bytes)
    }

    pub fn verify_signature(&self, signer: Principal, bytes: &[u8], sig: &Signature) -> bool {
        self.publics
            .get(&signer)
            .is_some_and(|pk| pk.verify(bytes, sig))
    }
}
