//! Access control: ZooKeeper's `world`, `digest` and `auth` schemes.
//!
//! - `world:anyone` grants its permissions to everyone.
//! - `digest:user:HASH` grants them to a session that added the identity
//!   `digest` `user:password` with `HASH` = base64(SHA-1(`user:password`)), as ZooKeeper's
//!   `DigestAuthenticationProvider` computes it.
//! - `auth` (with any id) in a new ACL stands for every identity the session has added: it is
//!   replaced by them, and is [`ErrorCode::InvalidAcl`] if it has none.
//! - Other schemes (`ip`, `x509`, `sasl`, `super`) are refused with `InvalidAcl` in ACLs and with
//!   `AuthFailed` in `addauth`: a replicated application cannot see the client's address or
//!   certificate, which the gateway terminates.
//!
//! An empty ACL list on a node allows everything (ZooKeeper's rule; `create` and `setACL`
//! refuse empty lists, so only ZooKeeper's own nodes could have one).

use crate::op::{perms, Acl, ErrorCode};
use std::collections::BTreeSet;

/// An authenticated identity of a session: `(scheme, id)`.
pub type Identity = (String, String);

/// Most identities one session may add.
pub const MAX_IDENTITIES: usize = 32;
/// Most entries one ACL may have.
pub const MAX_ACL_ENTRIES: usize = 128;

/// ZooKeeper's open ACL (`world:anyone`, all permissions).
pub fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: perms::ALL,
        scheme: "world".to_string(),
        id: "anyone".to_string(),
    }]
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The digest identity of `user:password`: `user:base64(sha1(user:password))`.
pub fn digest_id(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or("");
    let hash = sha1_smol::Sha1::from(user_password.as_bytes())
        .digest()
        .bytes();
    format!("{user}:{}", base64(&hash))
}

/// Whether `identities` may do something `perm` (any of its bits) allows under `acl`.
pub fn allowed(acl: &[Acl], identities: &BTreeSet<Identity>, perm: i32) -> bool {
    if acl.is_empty() {
        return true;
    }
    acl.iter().filter(|a| a.perms & perm != 0).any(|a| {
        (a.scheme == "world" && a.id == "anyone")
            || (a.scheme == "digest" && identities.contains(&(a.scheme.clone(), a.id.clone())))
    })
}

/// The ACL a node gets from the one a client asked for (ZooKeeper's `fixupACL`): `auth`
/// entries replaced by the session's identities, duplicates removed, anything unknown or
/// malformed refused.
pub fn fixup(acl: &[Acl], identities: &BTreeSet<Identity>) -> Result<Vec<Acl>, ErrorCode> {
    if acl.is_empty() || acl.len() > MAX_ACL_ENTRIES {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out: Vec<Acl> = Vec::new();
    let mut push = |a: Acl| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    for a in acl {
        if a.perms & !perms::ALL != 0 {
            return Err(ErrorCode::InvalidAcl);
        }
        match a.scheme.as_str() {
            "world" if a.id == "anyone" => push(a.clone()),
            "auth" => {
                if identities.is_empty() {
                    return Err(ErrorCode::InvalidAcl);
                }
                for (scheme, id) in identities {
                    push(Acl {
                        perms: a.perms,
                        scheme: scheme.clone(),
                        id: id.clone(),
                    });
                }
            }
            "digest" if a.id.split(':').count() == 2 => push(a.clone()),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(out)
}

/// What `getACL` shows a session without ADMIN permission: digest hashes masked as `user:x`.
pub fn masked(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            let mut a = a.clone();
            if a.scheme == "digest" {
                let user = a.id.split(':').next().unwrap_or("").to_string();
                a.id = format!("{user}:x");
            }
            a
        })
        .collect()
}

/// The identity `addauth scheme auth` adds, or `AuthFailed`.
pub fn authenticate(scheme: &str, auth: &[u8]) -> Result<Identity, ErrorCode> {
    match (scheme, std::str::from_utf8(auth)) {
        ("digest", Ok(user_password)) if !user_password.is_empty() => {
            Ok(("digest".to_string(), digest_id(user_password)))
        }
        _ => Err(ErrorCode::AuthFailed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
    }

    #[test]
    fn digest_is_zookeepers() {
        // ZooKeeper's DigestAuthenticationProvider.generateDigest("super:test") (its docs).
        assert_eq!(
            digest_id("super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn fixup_and_check() {
        let none = BTreeSet::new();
        assert_eq!(fixup(&[], &none), Err(ErrorCode::InvalidAcl));
        let auth = Acl {
            perms: perms::ALL,
            scheme: "auth".into(),
            id: String::new(),
        };
        assert_eq!(
            fixup(std::slice::from_ref(&auth), &none),
            Err(ErrorCode::InvalidAcl)
        );
        let ip = Acl {
            perms: perms::READ,
            scheme: "ip".into(),
            id: "10.0.0.1".into(),
        };
        assert_eq!(fixup(&[ip], &none), Err(ErrorCode::InvalidAcl));
        let me: BTreeSet<Identity> = [authenticate("digest", b"bob:pw").unwrap()].into();
        let fixed = fixup(&[auth.clone(), auth], &me).unwrap();
        assert_eq!(fixed.len(), 1);
        assert_eq!(fixed[0].scheme, "digest");
        assert!(allowed(&fixed, &me, perms::READ));
        assert!(!allowed(&fixed, &none, perms::READ));
        assert!(allowed(&open_acl(), &none, perms::ADMIN));
        assert_eq!(masked(&fixed)[0].id, "bob:x");
        assert_eq!(authenticate("ip", b"x"), Err(ErrorCode::AuthFailed));
    }
}
