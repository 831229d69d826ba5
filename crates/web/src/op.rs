//! The application's operations and results as bytes: what the HTTP front end sends through
//! the cluster, and what every replica answers.
//!
//! An operation carries only what selects the answer: the method, the request target (path
//! and query) and, for a POST, its content type and body. No other header reaches the
//! application, so the answer to a GET is a function of its URL and the state, which is what
//! the Prophecy sketcher assumes of HTTP (DESIGN §5.1: a request's sketch is its method and
//! URL). Conditional requests (`If-None-Match`) are answered by the front end from the ETag.
//!
//! The result is an HTTP response without volatile headers (no `Date`, no `Server`): the
//! front end adds them, so correct replicas answer byte-identical results.
//!
//! Both encodings are a version byte, then postcard. Decoding is bounds-checked and refuses,
//! with a reason, anything but exactly one well-formed value of the known version: bytes
//! from a faulty client or replica are never trusted.

use plumb_app::codec;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Version byte of [`WebOp`] encodings.
pub const OP_VERSION: u8 = 1;
/// Version byte of [`WebResponse`] encodings.
pub const RESPONSE_VERSION: u8 = 1;

/// The longest request target (path and query) an operation may carry, in bytes.
pub const MAX_TARGET_BYTES: usize = 2048;
/// The longest `Content-Type` an operation may carry, in bytes.
pub const MAX_CONTENT_TYPE_BYTES: usize = 256;
/// The largest POST body the application accepts, in bytes (the encoded form). The front end
/// refuses larger bodies before they reach the cluster, with the same limit.
pub const MAX_FORM_BYTES: usize = 256 * 1024;
/// The largest encoded operation: a POST at the limits, with room for the encoding.
pub const MAX_OP_BYTES: usize = MAX_FORM_BYTES + MAX_TARGET_BYTES + MAX_CONTENT_TYPE_BYTES + 64;

/// One request to the web application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WebOp {
    /// `GET target` (the front end also sends a HEAD as this, and drops the body): read-only.
    Get { target: String },
    /// `POST target` with a body: changes the state.
    Post {
        target: String,
        /// The request's `Content-Type`, if it had one.
        content_type: Option<String>,
        #[serde(with = "serde_bytes")]
        body: Vec<u8>,
    },
}

/// The application's answer: an HTTP response without volatile headers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebResponse {
    pub status: u16,
    pub content_type: String,
    /// Where a redirect points (`303 See Other` after a POST).
    pub location: Option<String>,
    /// A strong validator of the body: its digest, quoted (`"…"`), on successful GETs.
    pub etag: Option<String>,
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// Why bytes are not an operation (or a response).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{len} bytes, over the limit of {max}")]
    TooLarge { len: usize, max: usize },
    /// Not an encoding of the type (`plumb_app::codec`).
    #[error("{0}")]
    Codec(#[from] codec::DecodeError),
    /// Well-formed, but a field breaks a rule (named in the message).
    #[error("{0}")]
    Invalid(&'static str),
}

fn decode_versioned<T: DeserializeOwned>(version: u8, bytes: &[u8]) -> Result<T, DecodeError> {
    Ok(codec::decode_versioned(version, bytes)?)
}

impl WebOp {
    pub fn encode(&self) -> Vec<u8> {
        codec::encode_versioned(OP_VERSION, self)
    }

    /// The operation `bytes` encode, checked against the limits above.
    pub fn decode(bytes: &[u8]) -> Result<WebOp, DecodeError> {
        if bytes.len() > MAX_OP_BYTES {
            return Err(DecodeError::TooLarge {
                len: bytes.len(),
                max: MAX_OP_BYTES,
            });
        }
        let op: WebOp = decode_versioned(OP_VERSION, bytes)?;
        let target = op.target();
        if target.len() > MAX_TARGET_BYTES {
            return Err(DecodeError::Invalid("the request target is too long"));
        }
        if !target.starts_with('/') {
            return Err(DecodeError::Invalid(
                "the request target is not a path (it must start with '/')",
            ));
        }
        if let WebOp::Post {
            content_type, body, ..
        } = &op
        {
            if content_type
                .as_ref()
                .is_some_and(|c| c.len() > MAX_CONTENT_TYPE_BYTES)
            {
                return Err(DecodeError::Invalid("the content type is too long"));
            }
            if body.len() > MAX_FORM_BYTES {
                return Err(DecodeError::Invalid("the body is over the size limit"));
            }
        }
        Ok(op)
    }

    /// The request target: path and query.
    pub fn target(&self) -> &str {
        match self {
            WebOp::Get { target } | WebOp::Post { target, .. } => target,
        }
    }

    /// Whether the operation may take the read-only path (it changes nothing).
    pub fn is_read_only(&self) -> bool {
        matches!(self, WebOp::Get { .. })
    }
}

impl WebResponse {
    pub fn encode(&self) -> Vec<u8> {
        codec::encode_versioned(RESPONSE_VERSION, self)
    }

    pub fn decode(bytes: &[u8]) -> Result<WebResponse, DecodeError> {
        let response: WebResponse = decode_versioned(RESPONSE_VERSION, bytes)?;
        if !(100..=999).contains(&response.status) {
            return Err(DecodeError::Invalid("the status is not three digits"));
        }
        // These become header values: a replica must not be able to split headers.
        let header_safe = |s: &str| !s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
        if !header_safe(&response.content_type)
            || !response.location.as_deref().is_none_or(header_safe)
            || !response.etag.as_deref().is_none_or(header_safe)
        {
            return Err(DecodeError::Invalid(
                "a header value holds a line break or NUL",
            ));
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip() {
        let ops = [
            WebOp::Get {
                target: "/wiki/Home?x=1".into(),
            },
            WebOp::Post {
                target: "/wiki/Home".into(),
                content_type: Some("application/x-www-form-urlencoded".into()),
                body: b"body=hi".to_vec(),
            },
        ];
        for op in ops {
            assert_eq!(WebOp::decode(&op.encode()), Ok(op));
        }
    }

    #[test]
    fn hostile_operations_are_refused_with_a_reason() {
        assert_eq!(
            WebOp::decode(&[]),
            Err(DecodeError::Codec(codec::DecodeError::Empty))
        );
        assert_eq!(
            WebOp::decode(&[9, 0]),
            Err(DecodeError::Codec(codec::DecodeError::UnknownVersion(9)))
        );
        assert_eq!(
            WebOp::decode(&[OP_VERSION, 7]),
            Err(DecodeError::Codec(codec::DecodeError::Malformed))
        );
        let mut trailing = WebOp::Get { target: "/".into() }.encode();
        trailing.push(0);
        assert_eq!(
            WebOp::decode(&trailing),
            Err(DecodeError::Codec(codec::DecodeError::TrailingBytes(1)))
        );
        let relative = WebOp::Get {
            target: "wiki".into(),
        };
        assert!(matches!(
            WebOp::decode(&relative.encode()),
            Err(DecodeError::Invalid(_))
        ));
        // A length prefix that claims far more bytes than there are.
        assert_eq!(
            WebOp::decode(&[OP_VERSION, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]),
            Err(DecodeError::Codec(codec::DecodeError::Malformed))
        );
        let huge = vec![OP_VERSION; MAX_OP_BYTES + 1];
        assert!(matches!(
            WebOp::decode(&huge),
            Err(DecodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_response_cannot_split_headers() {
        let r = WebResponse {
            status: 303,
            content_type: "text/html".into(),
            location: Some("/x\r\nSet-Cookie: a=b".into()),
            etag: None,
            body: Vec::new(),
        };
        assert!(matches!(
            WebResponse::decode(&r.encode()),
            Err(DecodeError::Invalid(_))
        ));
    }
}
