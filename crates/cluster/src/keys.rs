//! Secret key files and the identities derived from them.

use crate::ClusterError;
use plumb_crypto::{Identity, PublicIdentity};
use plumb_wire::Principal;
use std::path::Path;

/// The identity of principal `p` on a node (or client) whose secret is `secret`: each role
/// principal of a node gets its own key pair, derived so one secret file serves them all.
pub fn identity_for(secret: &[u8; 32], p: Principal) -> Identity {
    let mut material = secret.to_vec();
    material.extend_from_slice(&p.label().to_le_bytes());
    Identity::from_seed(blake3::derive_key("plumb principal identity v1", &material))
}

/// Read a secret file: 64 hex digits (whitespace around them ignored).
pub fn read_secret(path: &Path) -> Result<[u8; 32], ClusterError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ClusterError::new(
            path,
            format!("cannot read key file: {e}; `plumb init` writes the key files"),
        )
    })?;
    let bytes = hex::decode(text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| ClusterError::new(path, "a key file must hold exactly 64 hex digits"))?;
    Ok(bytes)
}

/// Write a new random secret, readable by its owner only.
pub fn write_secret(path: &Path) -> Result<[u8; 32], ClusterError> {
    use rand::RngCore;
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| ClusterError::new(dir, format!("cannot create directory: {e}")))?;
    }
    std::fs::write(path, format!("{}\n", hex::encode(secret)))
        .map_err(|e| ClusterError::new(path, format!("cannot write key file: {e}")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(secret)
}

/// A public identity as 128 hex digits: X25519 key, then Ed25519 key.
pub fn public_to_hex(p: &PublicIdentity) -> String {
    let mut bytes = p.agreement.to_vec();
    bytes.extend_from_slice(&p.signing);
    hex::encode(bytes)
}

pub fn public_from_hex(text: &str) -> Option<PublicIdentity> {
    let bytes = hex::decode(text.trim()).ok()?;
    if bytes.len() != 64 {
        return None;
    }
    let mut agreement = [0u8; 32];
    let mut signing = [0u8; 32];
    agreement.copy_from_slice(&bytes[..32]);
    signing.copy_from_slice(&bytes[32..]);
    Some(PublicIdentity { agreement, signing })
}
