//! The sabotage switches of the execution stage really break it (so the simulator's checks
//! that catch them are not vacuous). One test function: the switch is process-wide.
#![cfg(feature = "sabotage")]

use plumb_app::{Application, BatchOutput, Command, LoadError, NonDeterminism};
use plumb_config::{Faults, ProtocolConfig, Quorums};
use plumb_core::sabotage::{self, Sabotage};
use plumb_core::{Event, KeyRing, Observation, Recovered, StageContext};
use plumb_crypto::{Digest, Identity, PublicIdentity};
use plumb_exec::{ExecCheckpoint, ExecReplica};
use plumb_wire::{
    AuthId, Batch, Body, ClientId, ExecId, Message, OrderId, Principal, ReqCore, ReqNo, Seq,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The state is the list of executed operations.
#[derive(Default)]
struct Log(Vec<Vec<u8>>);

impl Application for Log {
    fn execute(&mut self, _seq: Seq, batch: &[Command<'_>], _nd: NonDeterminism) -> BatchOutput {
        self.0.extend(batch.iter().map(|c| c.op.to_vec()));
        BatchOutput {
            replies: vec![Vec::new(); batch.len()],
            pushes: Vec::new(),
        }
    }
    fn execute_read_only(&self, _client: ClientId, _op: &[u8]) -> Vec<u8> {
        Vec::new()
    }
    fn take_checkpoint(&mut self) -> Vec<u8> {
        postcard::to_stdvec(&self.0).unwrap()
    }
    fn load_checkpoint(&mut self, checkpoint: &[u8]) -> Result<(), LoadError> {
        self.0 = postcard::from_bytes(checkpoint).map_err(|e| LoadError::Corrupt(e.to_string()))?;
        Ok(())
    }
    fn state_digest(&self) -> Digest {
        Digest::of(&self.take_bytes())
    }
}

impl Log {
    fn take_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(&self.0).unwrap()
    }
}

struct Net {
    cfg: Arc<ProtocolConfig>,
    rings: HashMap<Principal, KeyRing>,
}

impl Net {
    fn new() -> Net {
        let q = Quorums::minimal(Faults::new(1, 1));
        let cfg = Arc::new(ProtocolConfig::new(q));
        let mut all: Vec<Principal> = OrderId::all(q.order).map(Principal::Order).collect();
        all.extend(ExecId::all(q.exec).map(Principal::Exec));
        all.extend(AuthId::all(q.auth).map(Principal::Auth));
        let ids: HashMap<Principal, Arc<Identity>> = all
            .iter()
            .map(|p| {
                (
                    *p,
                    Arc::new(Identity::from_seed(Digest::of(&p.label().to_le_bytes()).0)),
                )
            })
            .collect();
        let dir: Arc<HashMap<Principal, PublicIdentity>> =
            Arc::new(ids.iter().map(|(p, i)| (*p, i.public())).collect());
        let rings = ids
            .iter()
            .map(|(p, i)| (*p, KeyRing::new(*p, i.clone(), dir.clone())))
            .collect();
        Net { cfg, rings }
    }

    fn replica(&self) -> ExecReplica<Log> {
        let ctx = StageContext {
            config: self.cfg.clone(),
            keys: self.rings[&Principal::Exec(ExecId(0))].clone(),
            seed: 0,
        };
        ExecReplica::new(ctx, Log::default(), Recovered::default())
    }

    fn deliver(
        &self,
        r: &mut ExecReplica<Log>,
        from: Principal,
        msg: &Message,
    ) -> Vec<plumb_core::Action> {
        let frame = self.rings[&from]
            .seal(Principal::Exec(ExecId(0)), msg)
            .unwrap();
        plumb_core::run(r, 1, Event::Receive(frame))
    }
}

fn evil_batch() -> Batch {
    Batch {
        requests: vec![ReqCore {
            client: 0,
            life: plumb_wire::Life::default(),
            nc: ReqNo(1),
            body: Body::Inline(b"evil".to_vec()),
        }],
        time: 1,
        seed: 0,
    }
}

#[test]
fn sabotage_switches_break_the_execution_stage() {
    let net = Net::new();
    let next_batch = Message::NextBatch {
        view: plumb_wire::View::ZERO,
        seq: Seq(1),
        batch: evil_batch(),
    };

    // ExecLearnBelowQuorum: one faulty order replica makes it execute.
    sabotage::set(None);
    let mut honest = net.replica();
    net.deliver(&mut honest, Principal::Order(OrderId(3)), &next_batch);
    assert_eq!(honest.next_seq(), Seq(1));
    sabotage::set(Some(Sabotage::ExecLearnBelowQuorum));
    let mut broken = net.replica();
    net.deliver(&mut broken, Principal::Order(OrderId(3)), &next_batch);
    assert_eq!(broken.next_seq(), Seq(2));
    assert_eq!(broken.app().0, vec![b"evil".to_vec()]);

    // TentativeBelowQuorum: one faulty order replica's TENTATIVE-BATCH makes it execute; n - u
    // of one view are needed.
    let tentative = Message::TentativeBatch {
        view: plumb_wire::View::ZERO,
        seq: Seq(1),
        batch: evil_batch(),
    };
    sabotage::set(None);
    let mut honest = net.replica();
    net.deliver(&mut honest, Principal::Order(OrderId(3)), &tentative);
    assert_eq!(honest.next_seq(), Seq(1));
    sabotage::set(Some(Sabotage::TentativeBelowQuorum));
    let mut broken = net.replica();
    net.deliver(&mut broken, Principal::Order(OrderId(3)), &tentative);
    assert_eq!(broken.next_seq(), Seq(2));
    assert_eq!(broken.app().0, vec![b"evil".to_vec()]);

    // UncheckedCheckpoint: a checkpoint that does not match the token is loaded.
    let forged = ExecCheckpoint {
        seq: Seq(4),
        app: postcard::to_stdvec(&vec![b"forged".to_vec()]).unwrap(),
        replies: BTreeMap::new(),
        agreed_time: 9,
        next_push: BTreeMap::new(),
        objects: None,
    };
    let load = Message::LoadCp {
        seq: Seq(4),
        token: Digest::of(b"the real checkpoint"),
    };
    let state = Message::ExecCpState {
        seq: Seq(4),
        state: forged.encode(),
    };
    for (switch, loaded) in [(None, false), (Some(Sabotage::UncheckedCheckpoint), true)] {
        sabotage::set(switch);
        let mut r = net.replica();
        net.deliver(&mut r, Principal::Order(OrderId(0)), &load);
        net.deliver(&mut r, Principal::Order(OrderId(1)), &load);
        let out = net.deliver(&mut r, Principal::Exec(ExecId(1)), &state);
        let got = out.iter().any(|a| {
            matches!(
                a,
                plumb_core::Action::Observe(Observation::CheckpointLoaded { seq: Seq(4), .. })
            )
        });
        assert_eq!(got, loaded, "switch {switch:?}");
        assert_eq!(r.next_seq() == Seq(5), loaded);
    }
    sabotage::set(None);
}
