use plumb_crypto::{Digest, Identity, Mac, MacKey, PublicIdentity, Signature, Verifier};
use plumb_wire::{Message, Principal, WireError};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// A principal's keys: pairwise MAC keys with every peer it may talk to, the public identities
/// of peers (for view-change signatures), and its own identity for signing.
pub struct KeyRing {
    me: Principal,
    identity: Arc<Identity>,
    macs: HashMap<Principal, MacKey>,
    /// Peers' signing keys, parsed once and shared by the ring's copies.
    verifiers: Arc<HashMap<Principal, Verifier>>,
    /// Signatures verified lately: a view change's messages come again inside NEW-VIEW and
    /// in resends, and a signature costs tens of microseconds to verify. Each copy of the
    /// ring has its own.
    verified: Mutex<Verified>,
}

impl Clone for KeyRing {
    fn clone(&self) -> KeyRing {
        KeyRing {
            me: self.me,
            identity: self.identity.clone(),
            macs: self.macs.clone(),
            verifiers: self.verifiers.clone(),
            verified: Mutex::new(Verified::default()),
        }
    }
}

/// The digests of `(signer, signature, bytes)` that verified, at most [`VERIFIED_MAX`]: when
/// full it starts over. Only true results are kept, so a hit is the answer verifying would
/// give (a digest collision aside).
#[derive(Default)]
struct Verified(HashSet<Digest>);

const VERIFIED_MAX: usize = 1024;

impl Verified {
    fn key(signer: Principal, bytes: &[u8], sig: &Signature) -> Digest {
        Digest::of_parts(&[&signer.label().to_le_bytes(), &sig.0, bytes])
    }
}

/// Each directory entry's signing key, parsed (an entry whose key is no curve point verifies
/// nothing).
fn verifiers(directory: &HashMap<Principal, PublicIdentity>) -> Arc<HashMap<Principal, Verifier>> {
    Arc::new(
        directory
            .iter()
            .filter_map(|(p, pk)| Some((*p, pk.verifier()?)))
            .collect(),
    )
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
            verifiers: verifiers(&directory),
            verified: Mutex::new(Verified::default()),
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
            verifiers: verifiers(&publics),
            verified: Mutex::new(Verified::default()),
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

    /// `msg` as `from` would have sealed it for this principal. MAC keys are pairwise, so the
    /// receiver of a frame can make one its sender could have sent; a test adversary uses it
    /// to take part of a message out before its own stage sees it.
    pub fn seal_from(&self, from: Principal, msg: &Message) -> Option<Vec<u8>> {
        let key = self.macs.get(&from)?;
        Some(plumb_wire::seal(from, self.me, msg, key))
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
        let key = Verified::key(signer, bytes, sig);
        let mut verified = match self.verified.lock() {
            Ok(v) => v,
            Err(poisoned) => poisoned.into_inner(),
        };
        if verified.0.contains(&key) {
            return true;
        }
        let ok = self
            .verifiers
            .get(&signer)
            .is_some_and(|v| v.verify(bytes, sig));
        if ok {
            if verified.0.len() >= VERIFIED_MAX {
                verified.0.clear();
            }
            verified.0.insert(key);
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::OrderId;

    fn ring(me: Principal, ids: &[(Principal, Arc<Identity>)]) -> KeyRing {
        let directory = Arc::new(ids.iter().map(|(p, i)| (*p, i.public())).collect());
        let identity = ids
            .iter()
            .find(|(p, _)| *p == me)
            .expect("listed")
            .1
            .clone();
        KeyRing::new(me, identity, directory)
    }

    #[test]
    fn a_remembered_signature_answers_only_for_its_own_signer_and_bytes() {
        let (a, b) = (Principal::Order(OrderId(0)), Principal::Order(OrderId(1)));
        let ids = [
            (a, Arc::new(Identity::from_seed([1; 32]))),
            (b, Arc::new(Identity::from_seed([2; 32]))),
        ];
        let (signer, checker) = (ring(a, &ids), ring(b, &ids));
        let sig = signer.sign(b"view change");
        for _ in 0..2 {
            assert!(
                checker.verify_signature(a, b"view change", &sig),
                "verified, then remembered"
            );
        }
        assert!(
            !checker.verify_signature(a, b"view chance", &sig),
            "other bytes"
        );
        assert!(
            !checker.verify_signature(b, b"view change", &sig),
            "another signer"
        );
        let mut forged = sig;
        forged.0[0] ^= 1;
        assert!(!checker.verify_signature(a, b"view change", &forged));
        // A copy of the ring starts with nothing remembered, and verifies alike.
        assert!(checker.clone().verify_signature(a, b"view change", &sig));
        // When full it starts over, still answering right.
        for i in 0..VERIFIED_MAX + 1 {
            let bytes = i.to_le_bytes();
            assert!(checker.verify_signature(a, &bytes, &signer.sign(&bytes)));
        }
        assert!(checker.verify_signature(a, b"view change", &sig));
        assert!(!checker.verify_signature(a, b"view chance", &sig));
    }
}
