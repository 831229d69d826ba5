//! The client blacklist (seed 004 §3.4.1 step (a)): the first and cheapest filter. A client
//! that proved itself faulty, with a validly MACed frame no correct client sends, has all its
//! frames dropped unread for `blacklist_us`, then is served again so a repaired machine can
//! come back.
//!
//! The check reads the sender label from the frame header before any MAC: forging a
//! blacklisted client's label only gets the forger's own frames dropped, and getting a client
//! blacklisted takes a frame under that client's own key.

use plumb_core::Micros;
use plumb_wire::ClientId;
use std::collections::BTreeMap;

/// Most clients held at once: a bound on memory whatever clients do. When full, the entry
/// closest to expiry makes room.
const MAX_ENTRIES: usize = 65_536;

#[derive(Debug, Default)]
pub(crate) struct Blacklist {
    until: BTreeMap<ClientId, Micros>,
}

impl Blacklist {
    /// Whether `client` is refused at `now`; an expired entry is removed.
    pub fn refuses(&mut self, client: ClientId, now: Micros) -> bool {
        match self.until.get(&client) {
            Some(&until) if now < until => true,
            Some(_) => {
                self.until.remove(&client);
                false
            }
            None => false,
        }
    }

    pub fn add(&mut self, client: ClientId, now: Micros, duration: Micros) {
        if self.until.len() >= MAX_ENTRIES && !self.until.contains_key(&client) {
            if let Some((&soonest, _)) = self.until.iter().min_by_key(|(_, until)| **until) {
                self.until.remove(&soonest);
            }
        }
        self.until.insert(client, now.saturating_add(duration));
    }

    pub fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_until_expiry_then_forgotten() {
        let mut b = Blacklist::default();
        b.add(7, 1_000, 500);
        assert!(b.refuses(7, 1_000));
        assert!(b.refuses(7, 1_499));
        assert!(!b.refuses(8, 1_200));
        assert!(!b.refuses(7, 1_500));
        assert_eq!(b.len(), 0);
    }

    #[test]
    fn bounded() {
        let mut b = Blacklist::default();
        for c in 0..MAX_ENTRIES as u32 + 10 {
            b.add(c, c as u64, 1_000_000);
        }
        assert_eq!(b.len(), MAX_ENTRIES);
        // The soonest to expire made room.
        assert!(!b.refuses(0, 20));
        assert!(b.refuses(MAX_ENTRIES as u32 + 9, 20));
    }
}
