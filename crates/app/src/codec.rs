//! The encoding applications give their operations, results and checkpoints: one version byte,
//! then postcard. Decoding is total and refuses trailing bytes, so a value has one encoding
//! and bytes a faulty client or replica made up are refused, never a panic. Variants of an
//! encoded enum are only ever appended: postcard names a variant by its index.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Why bytes did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty input")]
    Empty,
    #[error("unknown encoding version {0}")]
    UnknownVersion(u8),
    /// The body is not a postcard encoding of the expected type.
    #[error("malformed body")]
    Malformed,
    /// A valid encoding followed by this many extra bytes.
    #[error("{0} bytes after the body")]
    TrailingBytes(usize),
}

/// `value` encoded under `version`.
pub fn encode_versioned<T: Serialize>(version: u8, value: &T) -> Vec<u8> {
    let mut out = vec![version];
    // Serializing an in-memory value cannot fail: every sequence has a known length.
    out.extend_from_slice(&postcard::to_stdvec(value).unwrap_or_default());
    out
}

/// The value `bytes` encode under `version`, and nothing after it.
pub fn decode_versioned<T: DeserializeOwned>(version: u8, bytes: &[u8]) -> Result<T, DecodeError> {
    let (&found, body) = bytes.split_first().ok_or(DecodeError::Empty)?;
    if found != version {
        return Err(DecodeError::UnknownVersion(found));
    }
    let (value, rest) = postcard::take_from_bytes(body).map_err(|_| DecodeError::Malformed)?;
    if !rest.is_empty() {
        return Err(DecodeError::TrailingBytes(rest.len()));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_refusal() {
        let bytes = encode_versioned(3, &(7u32, "x".to_string()));
        assert_eq!(
            decode_versioned::<(u32, String)>(3, &bytes),
            Ok((7, "x".into()))
        );
        assert_eq!(decode_versioned::<u32>(3, &[]), Err(DecodeError::Empty));
        assert_eq!(
            decode_versioned::<u32>(3, &bytes[..1]),
            Err(DecodeError::Malformed)
        );
        assert_eq!(
            decode_versioned::<u32>(4, &bytes),
            Err(DecodeError::UnknownVersion(3))
        );
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(
            decode_versioned::<(u32, String)>(3, &long),
            Err(DecodeError::TrailingBytes(1))
        );
    }
}
