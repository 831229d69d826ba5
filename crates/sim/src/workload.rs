//! The clients' workload and what it records for the checkers.
//!
//! Each correct client runs a closed loop with random think time: a random operation of the
//! application under test ([`SimApp::random_op`]) on the seed's few objects, a fifth of those
//! that may go read-only on the read-only path (some seeds: more reads, all of them read-only,
//! see `WorkloadConfig::extra_gets`). Every operation is recorded with its
//! invocation and response time (global time) for the linearizability checker. The ordered
//! requests each client actually sent (read from its frames) are recorded for LS6, and every
//! operation body seen on the wire is kept by digest so that the agreed sequence can be replayed.
//!
//! A Byzantine client issues only non-mutating operations through its (correct) client code, so
//! the correct clients' histories do not depend on which of its conflicting requests won; its
//! attacks are the frames the simulator injects (see `World::byzantine_client_tick`).

use crate::app::SimApp;
use crate::config::WorkloadConfig;
pub use crate::op_record::{OpRecord, Response};
use crate::rng::SimRng;
use plumb_crypto::Digest;
use plumb_wire::{ClientId, Life, Micros, ReqNo};
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub struct ClientLoad {
    pub correct: bool,
    pub history: Vec<OpRecord>,
    /// Index in `history` of the outstanding operation.
    pub pending: Option<usize>,
    /// Ordered request numbers the client sent, with the digest of the operation and the
    /// numbering epoch it was sent in (LS6, CS1).
    pub sent: BTreeMap<ReqNo, Vec<(u32, Digest)>>,
    /// Numbering epochs: a restart that lost the client's record starts a new one, in which the
    /// client may reuse a number of an earlier epoch (docs/protocol.md "Clients after a
    /// crash"); within one epoch a number carries one operation (CS1).
    pub epoch: u32,
    /// A request answered before a crash whose completion record was lost: the restarted
    /// client resends it and completes it again. That completion is not a new answer.
    pub replaying: Option<ReqNo>,
    /// The last ordered request it sent: what a Byzantine client replays with another body.
    pub last_request: Option<(ReqNo, Vec<u8>)>,
    /// After a restart that lost the record: the operation the previous life abandoned (its
    /// bytes, and whether it went read-only), which the new life sends first. The new life
    /// learns a number that may be the abandoned one's, and with the same bytes only the
    /// life in the request's identity tells the two requests apart (docs/protocol.md
    /// "Clients after a crash"; `plumb sim --seed 8575 --u 1 --r 1` found it).
    pub repeat: Option<(Vec<u8>, bool)>,
    /// When each ordered request identity `H(client, life, nc, H(op))` the client sent was
    /// first on the wire (CLIENT-one-life).
    pub first_sent: HashMap<Digest, Micros>,
    /// The identity the reply being accepted names, until the completion records it.
    pub accepted: Option<Digest>,
}

impl ClientLoad {
    /// Whether the client sent `nc` as the operation `digest`, in any epoch (LS6).
    pub fn sent_as(&self, nc: ReqNo, digest: &Digest) -> Option<bool> {
        self.sent
            .get(&nc)
            .map(|sent| sent.iter().any(|(_, d)| d == digest))
    }
}

pub struct Workload {
    cfg: WorkloadConfig,
    rng: SimRng,
    pub clients: Vec<ClientLoad>,
    /// Every operation body seen in a client's request, by digest.
    pub bodies: HashMap<Digest, Vec<u8>>,
    /// Correct clients that sent two operations under one request number (CS1).
    pub reused: Vec<(u32, ReqNo)>,
}

impl Workload {
    pub fn new(cfg: WorkloadConfig, rng: SimRng, clients: u32, byzantine: Option<u32>) -> Workload {
        let clients = (0..clients)
            .map(|c| ClientLoad {
                correct: byzantine != Some(c),
                ..ClientLoad::default()
            })
            .collect();
        Workload {
            cfg,
            rng,
            clients,
            bodies: HashMap::new(),
            reused: Vec::new(),
        }
    }

    pub fn stop_at(&self) -> Micros {
        self.cfg.stop_at
    }

    pub fn think_time(&mut self) -> Micros {
        self.rng.range(self.cfg.think_min_us, self.cfg.think_max_us)
    }

    /// The next operation of client `c` and whether it goes read-only.
    pub fn next_op<A: SimApp>(&mut self, app: &A, c: u32) -> (Vec<u8>, bool) {
        let correct = self.clients.get(c as usize).is_some_and(|l| l.correct);
        let objects = &self.cfg.keys;
        let rng = &mut self.rng;
        if !correct {
            return (app.harmless_op(rng, objects), false);
        }
        if let Some(repeat) = self
            .clients
            .get_mut(c as usize)
            .and_then(|l| l.repeat.take())
        {
            return repeat;
        }
        let mut op = app.random_op(rng, objects);
        // Drawn only when set, so that seeds without it draw exactly as before.
        if self.cfg.extra_gets > 0.0 && rng.chance(self.cfg.extra_gets) {
            op = app.random_read(rng, objects);
        }
        let past = self
            .clients
            .get(c as usize)
            .map_or(&[][..], |l| l.history.as_slice());
        let op = app.bind(op, past);
        let read_only = app.read_only_eligible(&op) && rng.chance(self.cfg.read_only_gets);
        (op, read_only)
    }

    pub fn invoked(&mut self, c: u32, op: Vec<u8>, read_only: bool, now: Micros) {
        if let Some(load) = self.clients.get_mut(c as usize) {
            load.pending = Some(load.history.len());
            load.history.push(OpRecord {
                op,
                read_only,
                invoke: now,
                response: None,
                ncs: Vec::new(),
                abandoned: false,
            });
        }
    }

    /// Client `c` delivered a result. `Err` if it had nothing outstanding (a closed-loop client
    /// completes each operation exactly once).
    pub fn completed(
        &mut self,
        c: u32,
        nc: ReqNo,
        result: Vec<u8>,
        now: Micros,
    ) -> Result<(), String> {
        let load = self.clients.get_mut(c as usize).ok_or("no such client")?;
        // The identity the client reported accepting belongs to this completion alone.
        let request = load.accepted.take();
        if load.pending.is_none() && load.replaying == Some(nc) {
            load.replaying = None;
            return Ok(());
        }
        let i = load
            .pending
            .take()
            .ok_or_else(|| format!("c{c} completed nc {nc} with nothing outstanding"))?;
        if let Some(rec) = load.history.get_mut(i) {
            rec.response = Some(Response {
                at: now,
                nc,
                result,
                request,
            });
        }
        Ok(())
    }

    /// The body of client `c`'s outstanding operation if it is an unordered read (one that
    /// went read-only, or through the sketcher).
    pub fn pending_read(&self, c: u32) -> Option<&[u8]> {
        let load = self.clients.get(c as usize)?;
        let rec = load.history.get(load.pending?)?;
        rec.read_only.then_some(rec.op.as_slice())
    }

    /// Client `c` is accepting the reply to request `id` (its completion follows).
    pub fn accepting(&mut self, c: ClientId, id: Digest) {
        if let Some(load) = self.clients.get_mut(c as usize) {
            load.accepted = Some(id);
        }
    }

    /// A client sent an ordered request of life `life`, number `nc` and body `op` at `now`:
    /// when its identity was first on the wire.
    pub fn sent_identity(&mut self, c: ClientId, life: Life, nc: ReqNo, op: &[u8], now: Micros) {
        let id = plumb_wire::request_id(c, life, nc, Digest::of(op));
        if let Some(load) = self.clients.get_mut(c as usize) {
            load.first_sent.entry(id).or_insert(now);
        }
    }

    /// A client sent an ordered request `nc` with body `op`.
    pub fn sent_request(&mut self, c: u32, nc: ReqNo, op: &[u8]) {
        let digest = Digest::of(op);
        self.bodies.entry(digest).or_insert_with(|| op.to_vec());
        let Some(load) = self.clients.get_mut(c as usize) else {
            return;
        };
        let epoch = load.epoch;
        let sent = load.sent.entry(nc).or_default();
        if !sent.contains(&(epoch, digest)) {
            if sent.iter().any(|(e, _)| *e == epoch) && load.correct {
                self.reused.push((c, nc));
            }
            sent.push((epoch, digest));
        }
        load.last_request = Some((nc, op.to_vec()));
        if let Some(rec) = load.pending.and_then(|i| load.history.get_mut(i)) {
            if !rec.ncs.contains(&nc) {
                rec.ncs.push(nc);
            }
        }
    }

    /// Client `c` crashed. A read-only operation dies with it; an ordered one waits for the
    /// restart, which may resume it.
    pub fn client_crashed(&mut self, c: u32) {
        let Some(load) = self.clients.get_mut(c as usize) else {
            return;
        };
        if let Some(i) = load.pending {
            if load
                .history
                .get(i)
                .is_some_and(|r| r.read_only && r.ncs.is_empty())
            {
                abandon(load, i);
            }
        }
    }

    /// Client `c` restarted; `resumed` is the ordered request it resent from its record, and
    /// `lost_record` whether it found no trustworthy record (it learns its number anew).
    pub fn client_restarted(&mut self, c: u32, resumed: Option<ReqNo>, lost_record: bool) {
        let Some(load) = self.clients.get_mut(c as usize) else {
            return;
        };
        if lost_record {
            load.epoch += 1;
        }
        load.replaying = None;
        if let Some(i) = load.pending {
            let same =
                resumed.is_some_and(|nc| load.history.get(i).is_some_and(|r| r.ncs.contains(&nc)));
            if same {
                return;
            }
            abandon(load, i);
        }
        load.replaying = resumed;
        if lost_record {
            load.repeat = load
                .history
                .last()
                .filter(|r| r.abandoned)
                .map(|r| (r.op.clone(), r.read_only));
        }
    }

    /// A body the simulator itself sent on a Byzantine client's behalf.
    pub fn injected_body(&mut self, op: &[u8]) {
        self.bodies
            .entry(Digest::of(op))
            .or_insert_with(|| op.to_vec());
    }

    pub fn completed_since(&self, c: u32, t: Micros) -> usize {
        self.clients.get(c as usize).map_or(0, |l| {
            l.history
                .iter()
                .filter(|r| r.response.as_ref().is_some_and(|x| x.at >= t))
                .count()
        })
    }
}

/// The outstanding operation `i` will never be answered: its outcome stays unknown.
fn abandon(load: &mut ClientLoad, i: usize) {
    load.pending = None;
    if let Some(rec) = load.history.get_mut(i) {
        rec.abandoned = true;
    }
}
