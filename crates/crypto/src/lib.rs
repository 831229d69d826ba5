//! Cryptographic primitives for plumb.
//!
//! - [`Digest`]: BLAKE3, 32 bytes. Used for request, batch, checkpoint and history digests.
//! - [`Mac`]: BLAKE3 keyed hash truncated to 16 bytes, under a pairwise [`MacKey`].
//!   No nonces, so nothing to manage across crashes.
//! - Pairwise MAC keys come from X25519 agreement between long-term key pairs, so an operator
//!   distributes public keys only ([`Identity::pairwise_key`]).
//! - Ed25519 signatures (ZIP-215 via `ed25519-consensus`, so every correct verifier reaches the
//!   same verdict) are used only where a certificate must be transferable: view changes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One digest over `bytes` bytes, for the per-operation cost table (docs/performance.md).
fn count_hash(bytes: usize) {
    plumb_cost::HASHES.add(1);
    plumb_cost::HASHED_BYTES.add(bytes as u64);
}

/// A 32-byte BLAKE3 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    pub const ZERO: Digest = Digest([0; 32]);

    pub fn of(bytes: &[u8]) -> Digest {
        count_hash(bytes.len());
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// Keyed BLAKE3 of `bytes` under `key` (a key from [`Digest::derive_key`] names a domain:
    /// digests under different keys cannot be taken for one another). Over 64 bytes it is one
    /// compression, half the cost of [`Digest::of_parts`] over the same bytes with a prefix.
    pub fn keyed(key: &[u8; 32], bytes: &[u8]) -> Digest {
        count_hash(bytes.len());
        Digest(*blake3::keyed_hash(key, bytes).as_bytes())
    }

    /// A key for [`Digest::keyed`] from a context string that names what it digests (BLAKE3's
    /// key derivation: hard-coded, globally unique, application-specific).
    pub fn derive_key(context: &str) -> [u8; 32] {
        blake3::derive_key(context, b"")
    }

    /// Digest of several fields, each length-prefixed so that field boundaries are unambiguous.
    pub fn of_parts(parts: &[&[u8]]) -> Digest {
        count_hash(parts.iter().map(|p| 8 + p.len()).sum());
        let mut h = blake3::Hasher::new();
        for p in parts {
            h.update(&(p.len() as u64).to_le_bytes());
            h.update(p);
        }
        Digest(*h.finalize().as_bytes())
    }

    /// All 32 bytes in lowercase hex (64 characters), one allocation.
    pub fn hex(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(2 * self.0.len());
        for b in self.0 {
            let _ = write!(out, "{b:02x}");
        }
        out
    }

    pub fn short(&self) -> String {
        self.0[..4].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.short())
    }
}

/// A 16-byte message authentication code.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Mac(pub [u8; 16]);

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mac:{:02x}{:02x}", self.0[0], self.0[1])
    }
}

/// A symmetric key shared by exactly two principals.
#[derive(Clone)]
pub struct MacKey([u8; 32]);

impl MacKey {
    pub fn from_bytes(bytes: [u8; 32]) -> MacKey {
        MacKey(bytes)
    }

    pub fn mac(&self, msg: &[u8]) -> Mac {
        plumb_cost::MACS.add(1);
        plumb_cost::MACED_BYTES.add(msg.len() as u64);
        let full = blake3::keyed_hash(&self.0, msg);
        let mut out = [0u8; 16];
        out.copy_from_slice(&full.as_bytes()[..16]);
        Mac(out)
    }

    /// Constant-time comparison of the expected and the received MAC.
    pub fn verify(&self, msg: &[u8], mac: &Mac) -> bool {
        let expected = self.mac(msg);
        let mut diff = 0u8;
        for (a, b) in expected.0.iter().zip(mac.0.iter()) {
            diff |= a ^ b;
        }
        diff == 0
    }
}

impl fmt::Debug for MacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MacKey(..)")
    }
}

/// Public half of a principal's long-term identity: what an operator distributes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct PublicIdentity {
    /// X25519 public key, for pairwise MAC key agreement.
    pub agreement: [u8; 32],
    /// Ed25519 verification key, for transferable signatures.
    pub signing: [u8; 32],
}

/// A principal's long-term secret keys.
pub struct Identity {
    agreement: x25519_dalek::StaticSecret,
    signing: ed25519_consensus::SigningKey,
}

impl Identity {
    /// Deterministic identity from 32 bytes of seed material (a key file, or a test seed).
    pub fn from_seed(seed: [u8; 32]) -> Identity {
        let a = blake3::derive_key("plumb identity v1 x25519", &seed);
        let s = blake3::derive_key("plumb identity v1 ed25519", &seed);
        Identity {
            agreement: x25519_dalek::StaticSecret::from(a),
            signing: ed25519_consensus::SigningKey::from(s),
        }
    }

    pub fn public(&self) -> PublicIdentity {
        PublicIdentity {
            agreement: x25519_dalek::PublicKey::from(&self.agreement).to_bytes(),
            signing: self.signing.verification_key().to_bytes(),
        }
    }

    /// The MAC key shared with `peer`. Both sides derive the same key: the two principal labels
    /// are put in a canonical order before the KDF.
    pub fn pairwise_key(&self, my_label: u64, peer_label: u64, peer: &PublicIdentity) -> MacKey {
        let shared = self
            .agreement
            .diffie_hellman(&x25519_dalek::PublicKey::from(peer.agreement));
        let (lo, hi) = if my_label <= peer_label {
            (my_label, peer_label)
        } else {
            (peer_label, my_label)
        };
        let mut material = Vec::with_capacity(48);
        material.extend_from_slice(shared.as_bytes());
        material.extend_from_slice(&lo.to_le_bytes());
        material.extend_from_slice(&hi.to_le_bytes());
        MacKey(blake3::derive_key("plumb pairwise mac key v1", &material))
    }

    pub fn sign(&self, msg: &[u8]) -> Signature {
        Signature(self.signing.sign(msg).to_bytes())
    }
}

/// An Ed25519 signature.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature(#[serde(with = "sig_bytes")] pub [u8; 64]);

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sig:{:02x}{:02x}", self.0[0], self.0[1])
    }
}

mod sig_bytes {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &[u8; 64], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 64], D::Error> {
        let v: &[u8] = <&[u8]>::deserialize(d)?;
        v.try_into()
            .map_err(|_| serde::de::Error::custom("signature must be 64 bytes"))
    }
}

impl PublicIdentity {
    pub fn verify(&self, msg: &[u8], sig: &Signature) -> bool {
        self.verifier().is_some_and(|v| v.verify(msg, sig))
    }

    /// The signing key, parsed (`None` if its bytes are no point of the curve): a [`Verifier`]
    /// kept for many verifications decompresses the key once instead of at each.
    pub fn verifier(&self) -> Option<Verifier> {
        ed25519_consensus::VerificationKey::try_from(self.signing)
            .ok()
            .map(Verifier)
    }
}

/// A principal's signing key, parsed: what a key ring keeps to verify its signatures.
#[derive(Clone, Copy, Debug)]
pub struct Verifier(ed25519_consensus::VerificationKey);

impl Verifier {
    pub fn verify(&self, msg: &[u8], sig: &Signature) -> bool {
        self.0
            .verify(&ed25519_consensus::Signature::from(sig.0), msg)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_in_hex_is_every_byte_lowercase_and_starts_as_its_short_form() {
        let mut d = Digest::ZERO;
        d.0[0] = 0xab;
        d.0[31] = 0x0f;
        let hex = d.hex();
        assert_eq!(hex, format!("ab{}0f", "00".repeat(30)));
        assert!(hex.starts_with(&d.short()));
    }

    #[test]
    fn pairwise_keys_agree() {
        let a = Identity::from_seed([1; 32]);
        let b = Identity::from_seed([2; 32]);
        let kab = a.pairwise_key(10, 20, &b.public());
        let kba = b.pairwise_key(20, 10, &a.public());
        let m = kab.mac(b"hello");
        assert!(kba.verify(b"hello", &m));
        assert!(!kba.verify(b"hellp", &m));
        let c = Identity::from_seed([3; 32]);
        let kac = a.pairwise_key(10, 30, &c.public());
        assert!(!kac.verify(b"hello", &m));
    }

    #[test]
    fn signatures_verify_and_reject() {
        let a = Identity::from_seed([7; 32]);
        let s = a.sign(b"view change");
        assert!(a.public().verify(b"view change", &s));
        assert!(!a.public().verify(b"view chang3", &s));
        let b = Identity::from_seed([8; 32]);
        assert!(!b.public().verify(b"view change", &s));
    }

    #[test]
    fn digest_parts_are_unambiguous() {
        assert_ne!(
            Digest::of_parts(&[b"ab", b"c"]),
            Digest::of_parts(&[b"a", b"bc"])
        );
    }
}
