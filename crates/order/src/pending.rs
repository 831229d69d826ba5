//! Requests waiting to be ordered: for each client its latest request as the authentication
//! replicas vouched for it (AUTH-REQs), when it became pending, and the order in which requests
//! came to be vouched for. A sub-machine owning its state: the replica verifies AUTH-REQs, then
//! tells it what arrived and asks it what the primary may propose; it sends nothing itself.
//!
//! [`Pending::check_invariants`] states what the primary's proposal order and the watch on the
//! primary (monitor.rs) rely on.

use plumb_core::{BrokenInvariant, Micros};
use plumb_crypto::{Digest, Mac};
use plumb_wire::{AuthId, Batch, ClientId, MatrixRow, ReqCore, ReqNo, SignedRequest};
use std::collections::{BTreeMap, HashMap, HashSet};

/// AUTH-REQs collected for a client's latest request.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    nc: ReqNo,
    /// By request id digest: the core and the rows (auth replica -> its MAC authenticator).
    by_id: BTreeMap<Digest, (ReqCore, BTreeMap<AuthId, Vec<Mac>>)>,
    /// When `n_auth - u` auth replicas first vouched for it while it was next in its client's
    /// sequence: the request is known to be pending.
    pending_since: Option<Micros>,
    /// The order in which `n_auth - u` auth replicas came to vouch for requests here (a
    /// counter; 0: not yet): the primary proposes the earliest vouched first, so requests sent
    /// through the same authentication replicas keep the order they were sent in. Counted
    /// whether or not the request is next in its client's sequence yet: a client may send its
    /// next request once its previous one committed at the execution stage, before this
    /// replica committed it, and that request must not be proposed ahead of older ones.
    vouched_order: u64,
    /// When enough auth replicas vouched for it here that the primary provably holds it
    /// (`held_evidence`): from then on the primary answers for it (monitor.rs).
    held_since: Option<Micros>,
}

impl Collected {
    pub fn nc(&self) -> ReqNo {
        self.nc
    }

    pub fn pending_since(&self) -> Option<Micros> {
        self.pending_since
    }

    pub fn held_since(&self) -> Option<Micros> {
        self.held_since
    }
}

/// The thresholds an AUTH-REQ is judged by, from the quorums.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Thresholds {
    /// `n_auth - u`: a request vouched for by this many auth replicas can be proposed.
    pub gather: usize,
    /// Enough auth replicas that the primary provably holds the request.
    pub held: usize,
}

/// What an authentic AUTH-REQ changed.
pub(crate) enum Collect {
    /// Older than the request kept for its client: ignored.
    Stale,
    Kept {
        /// The first AUTH-REQ for this request number (the watch on the primary notes it).
        new_number: bool,
        /// It became pending now (the watch on the primary starts its clock).
        newly_pending: bool,
    },
}

#[derive(Debug, Default)]
pub(crate) struct Pending {
    by_client: HashMap<ClientId, Collected>,
    /// Requests vouched for so far (`Collected::vouched_order`).
    vouched: u64,
    /// When a RETRANSMIT was last asked for each client (rate limit).
    retransmitted: HashMap<ClientId, Micros>,
}

impl Pending {
    /// The id digest of `core` if an AUTH-REQ for exactly it was collected: a request comes
    /// from several authentication replicas and again in the PRE-PREPARE, and comparing it
    /// with the copy kept costs less than hashing its identity (and an inline body) again.
    pub fn known_id(&self, core: &ReqCore) -> Option<Digest> {
        let collected = self.by_client.get(&core.client)?;
        let (id, _) = collected.by_id.iter().find(|(_, (kept, _))| kept == core)?;
        debug_assert_eq!(*id, core.id_digest(), "collected requests are keyed by id");
        Some(*id)
    }

    /// Auth replica `f` vouches for `core` (whose id digest is `id`) with `macs`; `needed` is
    /// the next request number its client may have ordered.
    #[allow(clippy::too_many_arguments)]
    pub fn collect(
        &mut self,
        now: Micros,
        f: AuthId,
        core: ReqCore,
        id: Digest,
        macs: Vec<Mac>,
        needed: ReqNo,
        t: Thresholds,
    ) -> Collect {
        let entry = self.by_client.entry(core.client).or_default();
        // Keep the newest request, except that the one the order needs next always wins over
        // a later one that cannot be proposed yet (a faulty client sending out of order).
        if core.nc < entry.nc && !(core.nc == needed && entry.nc != needed) {
            return Collect::Stale;
        }
        let new_number = core.nc != entry.nc;
        if new_number {
            *entry = Collected {
                nc: core.nc,
                ..Default::default()
            };
        }
        let rows = &mut entry
            .by_id
            .entry(id)
            .or_insert_with(|| (core, BTreeMap::new()))
            .1;
        rows.insert(f, macs);
        // Pending (and grounds to suspect the primary) only once the primary could propose it:
        // next in its client's sequence and vouched for by n_auth - u auth replicas. A faulty
        // client that splits its request across auth replicas never gets there.
        let vouched = rows.len();
        if vouched >= t.gather && entry.vouched_order == 0 {
            self.vouched += 1;
            entry.vouched_order = self.vouched;
        }
        let newly_pending =
            vouched >= t.gather && entry.nc == needed && entry.pending_since.is_none();
        if newly_pending {
            entry.pending_since = Some(now);
        }
        if vouched >= t.held && entry.nc == needed && entry.held_since.is_none() {
            entry.held_since = Some(now);
        }
        Collect::Kept {
            new_number,
            newly_pending,
        }
    }

    /// Whether to ask the execution stage to resend client `c`'s reply now: at most once per
    /// `wait`.
    pub fn retransmit_due(&mut self, c: ClientId, now: Micros, wait: Micros) -> bool {
        if self.retransmitted.get(&c).is_some_and(|t| now < *t + wait) {
            return false;
        }
        self.retransmitted.insert(c, now);
        true
    }

    /// Requests the primary can propose now, oldest vouched first, at most `max`: vouched for
    /// by `gather` auth replicas and next in their client's sequence after `ordered` (unless
    /// `any_number`, a sabotage). Only their keys: the primary looks on every AUTH-REQ, and
    /// building every candidate's body and matrix each time made proposing quadratic in the
    /// number of waiting requests.
    pub fn ready(
        &self,
        ordered: impl Fn(ClientId) -> ReqNo,
        gather: usize,
        max: usize,
        any_number: bool,
    ) -> Vec<(ClientId, Digest)> {
        let mut ready: Vec<(u64, ClientId, Digest)> = Vec::new();
        for (c, entry) in &self.by_client {
            if entry.nc != ordered(*c).next() && !any_number {
                continue;
            }
            if let Some((id, _)) = entry
                .by_id
                .iter()
                .find(|(_, (_, rows))| rows.len() >= gather)
            {
                ready.push((entry.vouched_order, *c, *id));
            }
        }
        ready.sort_by_key(|(order, c, _)| (*order, *c));
        ready
            .into_iter()
            .take(max)
            .map(|(_, c, id)| (c, id))
            .collect()
    }

    /// Client `c`'s request with id digest `id`, with its matrix signature.
    pub fn signed(&self, c: ClientId, id: &Digest) -> Option<SignedRequest> {
        let (core, rows) = self.by_client.get(&c)?.by_id.get(id)?;
        Some(SignedRequest {
            core: core.clone(),
            matrix: matrix_of(rows),
        })
    }

    /// Every request of `b` with its matrix signature, if all are held here.
    pub fn signed_for(&self, b: &Batch) -> Option<Vec<SignedRequest>> {
        b.requests
            .iter()
            .map(|core| self.signed(core.client, &core.id_digest()))
            .collect()
    }

    /// The request kept for client `c`.
    pub fn get(&self, c: ClientId) -> Option<&Collected> {
        self.by_client.get(&c)
    }

    /// When client `c`'s request number `nc` became pending here, if it did.
    pub fn pending_since(&self, c: ClientId, nc: ReqNo) -> Option<Micros> {
        self.get(c)
            .filter(|e| e.nc == nc)
            .and_then(|e| e.pending_since)
    }

    pub fn iter(&self) -> impl Iterator<Item = (ClientId, &Collected)> {
        self.by_client.iter().map(|(c, e)| (*c, e))
    }

    /// Whether a request has been pending for `timeout` or longer at `now`.
    pub fn waiting_longer_than(&self, now: Micros, timeout: Micros) -> bool {
        self.by_client
            .values()
            .any(|e| e.pending_since.is_some_and(|t| now >= t + timeout))
    }

    /// Drop what is ordered: `ordered(c)` is client `c`'s last ordered request number.
    pub fn drop_ordered(&mut self, ordered: impl Fn(ClientId) -> ReqNo) {
        self.by_client.retain(|c, e| e.nc > ordered(*c));
    }

    /// What the primary's proposal order and the watch on the primary rely on:
    /// - `INV-pending-was-vouched`: a pending request was vouched for, in an order already
    ///   handed out;
    /// - `INV-vouched-order-unique`: no two requests share a place in the vouched order (the
    ///   proposal order is total);
    /// - `INV-held-after-pending`: a request the primary provably holds became pending no
    ///   later than that.
    pub fn check_invariants(&self) -> Result<(), BrokenInvariant> {
        let mut places = HashSet::new();
        for (c, e) in &self.by_client {
            let order = e.vouched_order;
            BrokenInvariant::check(
                e.pending_since.is_none() || (1..=self.vouched).contains(&order),
                "INV-pending-was-vouched",
                || {
                    format!(
                        "client {c}'s request {} pending at vouched order {order} of {}",
                        e.nc, self.vouched
                    )
                },
            )?;
            BrokenInvariant::check(
                order == 0 || places.insert(order),
                "INV-vouched-order-unique",
                || format!("client {c}'s request {} shares vouched order {order}", e.nc),
            )?;
            BrokenInvariant::check(
                e.held_since
                    .is_none_or(|h| e.pending_since.is_some_and(|p| p <= h)),
                "INV-held-after-pending",
                || {
                    format!(
                        "client {c}'s request {} held since {:?}, pending since {:?}",
                        e.nc, e.held_since, e.pending_since
                    )
                },
            )?;
        }
        Ok(())
    }
}

/// The matrix signature of a request: one row per auth replica that vouched for it.
fn matrix_of(rows: &BTreeMap<AuthId, Vec<Mac>>) -> Vec<MatrixRow> {
    rows.iter()
        .map(|(a, macs)| MatrixRow {
            auth: *a,
            macs: macs.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::{Body, Life};

    const T: Thresholds = Thresholds { gather: 2, held: 3 };

    fn core(client: ClientId, nc: ReqNo) -> ReqCore {
        ReqCore {
            client,
            life: Life::default(),
            nc,
            body: Body::Inline(vec![nc.0 as u8]),
        }
    }

    /// Auth replicas `auths` vouch for client `c`'s request `nc`; `needed` is its next number.
    fn vouch(p: &mut Pending, now: Micros, c: ClientId, nc: u64, needed: u64, auths: &[AuthId]) {
        let (nc, needed) = (ReqNo(nc), ReqNo(needed));
        for f in auths {
            let core = core(c, nc);
            let id = core.id_digest();
            p.collect(now, *f, core, id, vec![Mac::default()], needed, T);
        }
        p.check_invariants().unwrap();
    }

    #[test]
    fn requests_are_ready_in_the_order_they_were_vouched_for() {
        let mut p = Pending::default();
        vouch(&mut p, 10, 7, 1, 1, &[AuthId(0)]);
        vouch(&mut p, 11, 3, 1, 1, &[AuthId(0), AuthId(1)]);
        vouch(&mut p, 12, 7, 1, 1, &[AuthId(1)]);
        let ready = p.ready(|_| ReqNo(0), T.gather, 10, false);
        assert_eq!(ready.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [3, 7]);
        assert_eq!(
            p.ready(|_| ReqNo(0), T.gather, 1, false).len(),
            1,
            "at most a batch"
        );
        // Client 7's request is not next once its number 1 is ordered.
        assert_eq!(
            p.ready(|c| ReqNo((c == 7) as u64), T.gather, 10, false)
                .len(),
            1
        );
        assert_eq!(p.pending_since(3, ReqNo(1)), Some(11));
        assert_eq!(p.pending_since(7, ReqNo(1)), Some(12));
        let signed = p.signed(3, &ready[0].1).unwrap();
        assert_eq!(
            signed.matrix.len(),
            2,
            "one row per auth replica that vouched"
        );
    }

    #[test]
    fn a_newer_number_replaces_an_older_one_unless_the_older_is_needed_next() {
        let mut p = Pending::default();
        vouch(&mut p, 1, 5, 3, 2, &[AuthId(0), AuthId(1)]);
        assert_eq!(p.get(5).unwrap().nc(), ReqNo(3));
        assert_eq!(
            p.pending_since(5, ReqNo(3)),
            None,
            "not next in its client's sequence"
        );
        // The number the order needs next wins over a later one.
        vouch(&mut p, 2, 5, 2, 2, &[AuthId(0), AuthId(1), AuthId(2)]);
        assert_eq!(p.get(5).unwrap().nc(), ReqNo(2));
        assert_eq!(p.get(5).unwrap().held_since(), Some(2));
        // An older number that is not needed is stale.
        let c = core(5, ReqNo(1));
        let id = c.id_digest();
        assert!(matches!(
            p.collect(3, AuthId(0), c, id, vec![], ReqNo(2), T),
            Collect::Stale
        ));
        p.drop_ordered(|_| ReqNo(2));
        assert!(p.get(5).is_none());
        assert!(p.retransmit_due(5, 100, 50));
        assert!(!p.retransmit_due(5, 120, 50));
        assert!(p.retransmit_due(5, 150, 50));
    }
}
