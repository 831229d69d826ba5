//! Postcard encoding into a buffer allocated once, at its final size.
//!
//! `postcard::to_stdvec` starts from an empty `Vec` and doubles it as it writes: a message
//! carrying a 1 KiB value is reallocated and copied about eight times on its way. Counting the
//! bytes first (a pass that writes and allocates nothing) costs less than those copies; in a
//! profile of u1r0 writes, growing these buffers was about a third of the allocator's time.

use serde::Serialize;

/// `v` encoded.
pub fn to_vec<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    append(Vec::new(), v)
}

/// `out` followed by `v` encoded (after a version byte, say).
///
/// Encoding plain in-memory data into a `Vec` cannot fail: postcard fails only on types it
/// does not support or a full fixed buffer. Were it to, the result is empty, as
/// `postcard::to_stdvec(..).unwrap_or_default()` was.
pub fn append<T: Serialize + ?Sized>(mut out: Vec<u8>, v: &T) -> Vec<u8> {
    out.reserve_exact(encoded_len(v));
    postcard::to_extend(v, out).unwrap_or_default()
}

/// The encoded length of `v`, with nothing written or allocated.
pub fn encoded_len<T: Serialize + ?Sized>(v: &T) -> usize {
    postcard::experimental::serialized_size(v).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_bytes_as_postcard_in_a_buffer_of_their_size() {
        let v = (7u32, vec![3u8; 1500], "name".to_string(), Some(-2i64));
        let bytes = to_vec(&v);
        assert_eq!(bytes, postcard::to_stdvec(&v).unwrap());
        assert_eq!(bytes.capacity(), bytes.len());
        assert_eq!(encoded_len(&v), bytes.len());
        let prefixed = append(vec![9], &v);
        assert_eq!(prefixed[0], 9);
        assert_eq!(&prefixed[1..], &bytes[..]);
        assert_eq!(prefixed.capacity(), prefixed.len());
    }
}
