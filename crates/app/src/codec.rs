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
    plumb_wire::encode::append(vec![version], value)
}

/// [`encode_versioned`] into a buffer that starts with room for `size_hint` bytes: a caller
/// that knows about how long the encoding is saves the buffer's regrowth, which is most of
/// the cost of encoding a long list of short strings (each regrowth copies everything so far).
pub fn encode_versioned_sized<T: Serialize>(version: u8, value: &T, size_hint: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size_hint.saturating_add(1));
    out.push(version);
    // Serializing an in-memory value cannot fail: every sequence has a known length.
    postcard::to_extend(value, out).unwrap_or_else(|_| vec![version])
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

    #[test]
    fn the_size_hint_changes_nothing_but_the_buffer() {
        let value = (1u8..200)
            .map(|i| "n".repeat(usize::from(i)))
            .collect::<Vec<_>>();
        let plain = encode_versioned(2, &value);
        assert_eq!(plain[0], 2);
        assert_eq!(&plain[1..], postcard::to_stdvec(&value).unwrap().as_slice());
        for hint in [0, 1, plain.len() - 1, plain.len(), 10 * plain.len()] {
            assert_eq!(
                encode_versioned_sized(2, &value, hint),
                plain,
                "hint {hint}"
            );
        }
    }
}
