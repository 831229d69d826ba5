//! Frames a faulty client sends that no correct client library builds (seed 004 §3.6.2). Each
//! is sealed with the client's own keys unless the attack is a bad MAC. They all carry the
//! life [`ATTACK_LIFE`]: a life is the client's to choose, so a faulty client gains nothing by
//! choosing another.

use plumb_core::KeyRing;
use plumb_wire::{Life, Message, Principal, ReqNo};

/// The life of every attack frame.
pub const ATTACK_LIFE: Life = Life(0);

/// A well-formed request whose MAC is wrong: dropped after one keyed hash, blacklists no one.
pub fn bad_mac(ring: &KeyRing, to: Principal, nc: ReqNo, op: &[u8]) -> Option<Vec<u8>> {
    let mut frame = ring.seal(
        to,
        &Message::Request {
            life: ATTACK_LIFE,
            nc,
            op: op.to_vec(),
        },
    )?;
    let last = frame.last_mut()?;
    *last ^= 0x5a;
    Some(frame)
}

/// A frame with a valid MAC whose body does not decode: only the client itself can have sent
/// it, so it is blacklisted.
pub fn malformed(ring: &KeyRing, to: Principal) -> Option<Vec<u8>> {
    let mut frame = ring.seal(
        to,
        &Message::Request {
            life: ATTACK_LIFE,
            nc: ReqNo(1),
            op: vec![0; 8],
        },
    )?;
    let mac_at = frame
        .len()
        .checked_sub(plumb_crypto::Mac::default().0.len())?;
    for b in frame.get_mut(plumb_wire::envelope::HEADER..mac_at)? {
        *b = 0xff;
    }
    let mac = ring.mac_for(to, frame.get(..mac_at)?)?;
    frame.get_mut(mac_at..)?.copy_from_slice(&mac.0);
    Some(frame)
}

/// A validly MACed request: with a number already used for another operation, this is the
/// reused-request-id attack; with fresh numbers in a burst, a request flood.
pub fn request(ring: &KeyRing, to: Principal, nc: ReqNo, op: &[u8]) -> Option<Vec<u8>> {
    ring.seal(
        to,
        &Message::Request {
            life: ATTACK_LIFE,
            nc,
            op: op.to_vec(),
        },
    )
}
