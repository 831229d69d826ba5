//! Identities and pairwise MAC keys of every principal of a cluster. X25519 agreement costs tens
//! of microseconds per pair, so the key set of a (u, r) cluster is derived once per process and
//! shared by every seed.

use crate::config::MAX_CLIENTS;
use plumb_config::Quorums;
use plumb_core::KeyRing;
use plumb_crypto::{Digest, Identity, MacKey, PublicIdentity};
use plumb_wire::{AuthId, ExecId, OrderId, Principal};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

pub struct KeySet {
    rings: HashMap<Principal, KeyRing>,
}

impl KeySet {
    pub fn ring(&self, p: Principal) -> Option<&KeyRing> {
        self.rings.get(&p)
    }
}

/// Every principal of a minimal cluster for `q`, with `MAX_CLIENTS` clients.
pub fn principals(q: &Quorums) -> Vec<Principal> {
    let mut v: Vec<Principal> = Vec::new();
    v.extend(AuthId::all(q.auth).map(Principal::Auth));
    v.extend(OrderId::all(q.order).map(Principal::Order));
    v.extend(ExecId::all(q.exec).map(Principal::Exec));
    v.extend((0..MAX_CLIENTS).map(Principal::Client));
    v
}

/// Key sets by cluster shape (auth, order, exec counts).
type Cache = Mutex<HashMap<(usize, usize, usize), Arc<KeySet>>>;

/// The key set for `q`, derived on first use.
pub fn key_set(q: &Quorums) -> Arc<KeySet> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let id = (q.auth, q.order, q.exec);
    let mut guard = match cache.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard
        .entry(id)
        .or_insert_with(|| Arc::new(derive(q)))
        .clone()
}

fn identity_of(p: Principal) -> Identity {
    let mut material = b"plumb-sim identity ".to_vec();
    material.extend_from_slice(&p.label().to_le_bytes());
    Identity::from_seed(Digest::of(&material).0)
}

fn derive(q: &Quorums) -> KeySet {
    let all = principals(q);
    let ids: Vec<Arc<Identity>> = all.iter().map(|p| Arc::new(identity_of(*p))).collect();
    let publics: Arc<HashMap<Principal, PublicIdentity>> = Arc::new(
        all.iter()
            .zip(&ids)
            .map(|(p, id)| (*p, id.public()))
            .collect(),
    );
    let mut macs: Vec<HashMap<Principal, MacKey>> = vec![HashMap::new(); all.len()];
    for i in 0..all.len() {
        for j in i + 1..all.len() {
            let key = ids[i].pairwise_key(all[i].label(), all[j].label(), &publics[&all[j]]);
            macs[i].insert(all[j], key.clone());
            macs[j].insert(all[i], key);
        }
    }
    let rings = all
        .iter()
        .zip(ids)
        .zip(macs)
        .map(|((p, id), m)| (*p, KeyRing::from_parts(*p, id, m, publics.clone())))
        .collect();
    KeySet { rings }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_config::Faults;
    use plumb_wire::{ExecId, Message, OrderId, Seq};

    #[test]
    fn cached_pairwise_keys_open_each_others_frames() {
        let q = Quorums::minimal(Faults::new(1, 1));
        let keys = key_set(&q);
        let msg = Message::LastExec { next: Seq(3) };
        let frame = keys
            .ring(Principal::Exec(ExecId(0)))
            .unwrap()
            .seal(Principal::Order(OrderId(2)), &msg)
            .unwrap();
        let (from, got) = keys
            .ring(Principal::Order(OrderId(2)))
            .unwrap()
            .open(&frame)
            .unwrap();
        assert_eq!((from, got), (Principal::Exec(ExecId(0)), msg));
        assert!(Arc::ptr_eq(&keys, &key_set(&q)));
    }
}
