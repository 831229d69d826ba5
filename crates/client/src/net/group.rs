//! A driver's client identities as one stage: one thread, one store and one sync per group for
//! all of them, instead of a thread, a file and an `fdatasync` per identity and request.
//!
//! Each member is an unchanged pure [`Client`]; this wrapper only routes events to the member
//! they are for and renames what members leave behind so they cannot collide: store keys get
//! the member's principal as a prefix (`c7/client/out`), timer ids are spread over disjoint
//! ranges, and completions and push events are kept for the host with the member they belong
//! to. A driver with a single identity runs a group of one, so its record has the same layout
//! as a pool member's and either can take over the other's store.

use crate::net::Answer;
use crate::{Client, ClientBusy, Route};
use plumb_core::{
    Action, Counters, Event, Micros, Recovered, Stage, StageContext, StoreOp, TimerId,
};
use plumb_wire::{Envelope, Principal};
use std::collections::HashMap;

/// Each member's timer ids are below this; member `i` uses `i * TIMER_SPACE + id`.
const TIMER_SPACE: u32 = 1 << 8;
/// How often (in stage time) the members' counters are summed for the process to read.
const COUNT_EVERY: Micros = 100_000;

pub(crate) struct ClientGroup {
    members: Vec<Client>,
    ids: Vec<u32>,
    by_id: HashMap<u32, usize>,
    /// `(member, answer)` of operations completed since the host last took them.
    pub(crate) completed: Vec<(usize, Answer)>,
    /// `(member, event id, payload)` of push events delivered since the host last took them.
    pub(crate) pushed: Vec<(usize, u64, Vec<u8>)>,
    /// `(member, result)` of early replies (client speculation) since the host last took them.
    pub(crate) early: Vec<(usize, Vec<u8>)>,
    counters: Counters,
    counted_at: Micros,
    scratch: Vec<Action>,
}

/// The prefix of client `c`'s record keys in a client store (`c7/`): one store holds the
/// records of every identity a client runs, and a driver that moves records into such a store
/// (the gateway adopting an older layout) must put them under this prefix.
pub fn key_prefix(c: u32) -> String {
    format!("{}/", Principal::Client(c))
}

impl ClientGroup {
    /// `members`: each identity's context. `recovered`: what the shared store held; each
    /// member gets the records under its prefix, with the prefix taken off.
    pub(crate) fn new(members: Vec<(u32, StageContext)>, recovered: &Recovered) -> ClientGroup {
        let ids: Vec<u32> = members.iter().map(|(c, _)| *c).collect();
        let members = members
            .into_iter()
            .map(|(c, ctx)| Client::new(ctx, member_records(recovered, c)))
            .collect();
        ClientGroup {
            by_id: ids.iter().enumerate().map(|(i, c)| (*c, i)).collect(),
            ids,
            members,
            completed: Vec::new(),
            pushed: Vec::new(),
            early: Vec::new(),
            counters: Counters::default(),
            counted_at: 0,
            scratch: Vec::new(),
        }
    }

    /// Member `i` has nothing outstanding (a request recovered from its store counts).
    pub(crate) fn is_free(&self, i: usize) -> bool {
        !self.members[i].outstanding()
    }

    /// Client id and number of member `i`'s outstanding ordered request.
    pub(crate) fn outstanding_request(
        &self,
        i: usize,
    ) -> Option<(u32, plumb_wire::ReqNo, plumb_crypto::Digest)> {
        self.members[i]
            .outstanding_identity()
            .map(|(nc, req)| (self.ids[i], nc, req))
    }

    /// Issue `op` as member `i`.
    pub(crate) fn submit(
        &mut self,
        i: usize,
        now: Micros,
        op: Vec<u8>,
        route: Route,
        out: &mut Vec<Action>,
    ) -> Result<(), ClientBusy> {
        let mut acts = std::mem::take(&mut self.scratch);
        let r = self.members[i].submit(now, op, route, &mut acts);
        self.translate(i, &mut acts, out);
        self.scratch = acts;
        r
    }

    fn deliver(&mut self, i: usize, now: Micros, event: Event, out: &mut Vec<Action>) {
        let mut acts = std::mem::take(&mut self.scratch);
        self.members[i].handle(now, event, &mut acts);
        self.translate(i, &mut acts, out);
        self.scratch = acts;
    }

    fn translate(&mut self, i: usize, acts: &mut Vec<Action>, out: &mut Vec<Action>) {
        let prefix = || key_prefix(self.ids[i]);
        let timer = |id: TimerId| TimerId(i as u32 * TIMER_SPACE + id.0);
        for a in acts.drain(..) {
            out.push(match a {
                Action::Store(StoreOp::Put { key, value }) => Action::Store(StoreOp::Put {
                    key: prefix() + &key,
                    value,
                }),
                Action::Store(StoreOp::Delete { key }) => Action::Store(StoreOp::Delete {
                    key: prefix() + &key,
                }),
                Action::Store(StoreOp::DeletePrefix { prefix: p }) => {
                    Action::Store(StoreOp::DeletePrefix {
                        prefix: prefix() + &p,
                    })
                }
                Action::SetTimer { id, after } => {
                    debug_assert!(id.0 < TIMER_SPACE);
                    Action::SetTimer {
                        id: timer(id),
                        after,
                    }
                }
                Action::CancelTimer { id } => Action::CancelTimer { id: timer(id) },
                Action::Complete {
                    result, answered, ..
                } => {
                    self.completed.push((i, Answer { result, answered }));
                    continue;
                }
                Action::Pushed { event, payload } => {
                    self.pushed.push((i, event, payload));
                    continue;
                }
                Action::Early { result, .. } => {
                    self.early.push((i, result));
                    continue;
                }
                other => other,
            });
        }
    }
}

fn member_records(recovered: &Recovered, c: u32) -> Recovered {
    let prefix = key_prefix(c);
    Recovered {
        records: recovered
            .records
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k[prefix.len()..].to_string(), v.clone()))
            .collect(),
        corrupt: recovered
            .corrupt
            .iter()
            .filter_map(|k| k.strip_prefix(&prefix).map(str::to_string))
            .collect(),
    }
}

impl Stage for ClientGroup {
    fn principal(&self) -> Principal {
        Principal::Client(self.ids.first().copied().unwrap_or(0))
    }

    fn handle(&mut self, now: Micros, event: Event, out: &mut Vec<Action>) {
        match event {
            Event::Start => {
                for i in 0..self.members.len() {
                    self.deliver(i, now, Event::Start, out);
                }
            }
            Event::Receive(frame) => {
                let member = match Envelope::parse(&frame) {
                    Ok(env) => match env.receiver {
                        Principal::Client(c) => self.by_id.get(&c).copied(),
                        _ => None,
                    },
                    Err(_) => None,
                };
                match member {
                    Some(i) => self.deliver(i, now, Event::Receive(frame), out),
                    None => self.counters.add("not-for-this-pool"),
                }
            }
            Event::Timer(TimerId(t)) => {
                let i = (t / TIMER_SPACE) as usize;
                if i < self.members.len() {
                    self.deliver(i, now, Event::Timer(TimerId(t % TIMER_SPACE)), out);
                }
            }
        }
        if now.saturating_sub(self.counted_at) >= COUNT_EVERY {
            self.counted_at = now;
            let own = self.counters.get("not-for-this-pool");
            let mut sum = Counters::default();
            for m in &self.members {
                sum.add_all(m.counters());
            }
            sum.add_n("not-for-this-pool", own);
            self.counters = sum;
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Route;
    use plumb_cluster::{init, Cluster, InitOptions};
    use plumb_wire::{ExecId, ReqNo};

    fn members(dir: &std::path::Path, n: u32) -> Vec<(u32, StageContext)> {
        setup(dir, n).1
    }

    fn setup(dir: &std::path::Path, n: u32) -> (Cluster, Vec<(u32, StageContext)>) {
        let o = InitOptions {
            u: 1,
            r: 0,
            gateway_clients: n,
            cli_clients: 0,
            ..InitOptions::default()
        };
        let cluster = Cluster::load(&init(dir, &o).unwrap()).unwrap();
        let members = (0..n)
            .map(|c| {
                let keys = cluster
                    .key_ring(Principal::Client(c), &cluster.client_secret_path(c))
                    .unwrap();
                let config = cluster.protocol.clone();
                (
                    c,
                    StageContext {
                        config,
                        keys,
                        seed: c as u64,
                    },
                )
            })
            .collect();
        (cluster, members)
    }

    /// Every execution replica tells every member it executed nothing for it: what a fresh
    /// member waits for before its first request (it cannot tell a first start from a lost
    /// disk).
    fn answer_last_request(
        cluster: &Cluster,
        set: &mut ClientGroup,
        n: u32,
        out: &mut Vec<Action>,
    ) {
        for e in ExecId::all(cluster.quorums().exec) {
            let p = Principal::Exec(e);
            let node = cluster.node_of(p).unwrap().id;
            let ring = cluster
                .key_ring(p, &cluster.node_secret_path(node))
                .unwrap();
            for c in 0..n {
                let frame = ring
                    .seal(
                        Principal::Client(c),
                        &plumb_wire::Message::LastRequest { nc: ReqNo(0) },
                    )
                    .unwrap();
                set.handle(1, Event::Receive(frame), out);
            }
        }
    }

    fn puts(out: &[Action]) -> Vec<(String, Vec<u8>)> {
        out.iter()
            .filter_map(|a| match a {
                Action::Store(StoreOp::Put { key, value }) => Some((key.clone(), value.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn members_keep_their_records_and_timers_apart_and_recover_them() {
        let dir = tempfile::tempdir().unwrap();
        let (cluster, pool) = setup(dir.path(), 2);
        let mut set = ClientGroup::new(pool, &Recovered::default());
        let mut out = Vec::new();
        set.handle(1, Event::Start, &mut out);
        out.clear();
        set.submit(0, 2, b"op-0".to_vec(), Route::Ordered, &mut out)
            .unwrap();
        set.submit(1, 2, b"op-1".to_vec(), Route::Ordered, &mut out)
            .unwrap();
        assert!(set
            .submit(1, 2, b"again".to_vec(), Route::Ordered, &mut out)
            .is_err());
        // Submitted while learning their numbers: they wait for the execution replicas.
        assert!(puts(&out).is_empty());
        answer_last_request(&cluster, &mut set, 2, &mut out);
        let written = puts(&out);
        let keys: Vec<&str> = written.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["c0/client/out", "c1/client/out"]);
        let timers: Vec<u32> = out
            .iter()
            .filter_map(|a| match a {
                Action::SetTimer { id, .. } => Some(id.0),
                _ => None,
            })
            .collect();
        assert!(timers.iter().any(|&t| t < TIMER_SPACE), "{timers:?}");
        assert!(timers.iter().any(|&t| t >= TIMER_SPACE), "{timers:?}");
        assert!(!set.is_free(0) && !set.is_free(1));

        // A restart from those records finds both requests still outstanding, each with its
        // own member; a member with no records starts free.
        let recovered = Recovered {
            records: written.into_iter().collect(),
            corrupt: Vec::new(),
        };
        let dir2 = tempfile::tempdir().unwrap();
        let again = ClientGroup::new(members(dir2.path(), 3), &recovered);
        assert!(!again.is_free(0) && !again.is_free(1) && again.is_free(2));
    }

    #[test]
    fn push_events_are_kept_with_the_member_they_are_for() {
        let dir = tempfile::tempdir().unwrap();
        let (cluster, pool) = setup(dir.path(), 2);
        let mut set = ClientGroup::new(pool, &Recovered::default());
        let exec = Principal::Exec(ExecId(0));
        let node = cluster.node_of(exec).unwrap().id;
        let ring = cluster
            .key_ring(exec, &cluster.node_secret_path(node))
            .unwrap();
        let push = plumb_wire::Message::Push {
            event: 7,
            payload: b"fired".to_vec(),
        };
        let mut out = Vec::new();
        // u=1 r=0: one execution replica (r + 1) vouches for an event.
        set.handle(
            1,
            Event::Receive(ring.seal(Principal::Client(1), &push).unwrap()),
            &mut out,
        );
        assert_eq!(set.pushed, [(1, 7, b"fired".to_vec())]);
        assert!(!out.iter().any(|a| matches!(a, Action::Pushed { .. })));

        // The driver's host hands it to subscribers, naming the identity.
        use plumb_runtime::Host;
        let (tx, rx) = tokio::sync::broadcast::channel(4);
        let mut events = crate::net::PushEvents::new(rx);
        let backlog = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut host = crate::net::driver::GroupHost::new(vec![0, 1], backlog, tx);
        host.after(&mut set, 2, &mut out);
        let event = events.try_next().expect("delivered");
        assert_eq!(
            (event.client, event.event, &event.payload[..]),
            (1, 7, &b"fired"[..])
        );
        assert!(set.pushed.is_empty());
    }

    #[test]
    fn frames_for_other_principals_are_counted_not_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = ClientGroup::new(members(dir.path(), 1), &Recovered::default());
        let mut out = Vec::new();
        set.handle(1, Event::Receive(b"not an envelope".to_vec()), &mut out);
        set.handle(
            COUNT_EVERY + 1,
            Event::Timer(TimerId(7 * TIMER_SPACE)),
            &mut out,
        );
        assert!(out.is_empty());
        assert_eq!(set.counters().get("not-for-this-pool"), 1);
    }
}
