//! Client speculation (seed 001, docs/speculation.md) against a real u=1 r=1 cluster of four
//! node processes running `specbench` behind the predicated-request shim: a chain of strictly
//! dependent increments goes on with early replies and commits, and a wrong 0-reply
//! prediction is corrected while the write that depended on it has no effect on any replica.

mod common;

use common::*;
use plumb_client::net::{
    Client, ClientOptions, Cluster as ClusterConfig, Identity, RecordLocation,
};
use plumb_speculation::app::{
    create_op, incr_op, read_op, write_op, FsReply, IncrReply, SPECBENCH_APP,
};
use plumb_speculation::session::Session;
use plumb_speculation::{Confirmation, Dependence, SpecReply};
use plumb_wire::ExecId;
use std::time::Duration;

const SLOT: u16 = 62;
const T20: Duration = Duration::from_secs(20);
/// Client ids 0-3: lanes of one speculation group (ids 0-15), unused without a gateway.
const LANES: u32 = 4;

/// (value, token) of counter 1 after an increment's reply; unchanged by anything else.
fn fold(state: &(u64, u64), reply: &SpecReply) -> (u64, u64) {
    match reply {
        SpecReply::Executed(bytes) => match IncrReply::decode(bytes) {
            Some(IncrReply::Done { value, token }) => (value, token),
            _ => *state,
        },
        _ => *state,
    }
}

#[test]
fn a_speculative_chain_commits_and_a_failed_speculation_has_no_effect() {
    let mut c = Cluster::init_with("speculation", SLOT, &["--app", SPECBENCH_APP]);
    for n in 0..NODES {
        c.start_node(n);
    }
    c.wait_ready(T20);
    let config = ClusterConfig::load(&c.config()).expect("the harness's cluster file loads");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ids = (0..LANES)
            .map(|id| Identity::issued(&config, id).expect("plumb init issued it"))
            .collect();
        let options = ClientOptions {
            record: RecordLocation::Dir(c.dir().join("spec-records")),
            connect_timeout: Some(T20),
            op_timeout: Some(T20),
        };
        let client = Client::connect_with(&config, ids, options)
            .await
            .expect("connect");
        // Execution replica 0 answers early.
        let session = Session::new(client, ExecId(0)).expect("lanes in one group");

        // 1-reply speculation: 60 increments, each carrying the token the previous one
        // answered, so each needs the previous reply.
        let ((value, token), stats) = session
            .run_chain(60, (0, 0), |_, s| incr_op(1, s.1), fold)
            .await
            .expect("the chain commits");
        assert_eq!(value, 60, "every increment counted once: {stats:?}");
        assert!(
            stats.speculated > 0,
            "the chain went on with early replies: {stats:?}"
        );
        // Consecutive steps go out on different lanes, so the committed order may put a step
        // before the one its predicate names (its request reached the primary first); the
        // replicas answer it Aborted and the chain rolls back, as PBFT-CS allows. What a
        // correct early replier never does in a stable view, for this chain (each step names
        // the one before, and nothing else writes its counter), is answer an execution whose
        // bytes differ from the agreed ones. After a view change (on a machine loaded by other
        // tests a heartbeat can expire) the new primary picks its own order for what was not
        // committed, which can make even that happen.
        let views: Vec<u64> = (0..NODES)
            .filter_map(|n| c.status(n)?.get("view")?.as_u64())
            .collect();
        if views.iter().all(|v| *v == 0) {
            assert_eq!(stats.wrong_early, 0, "no replica lied, view 0: {stats:?}");
        } else {
            eprintln!("the view changed ({views:?}): wrong early replies are allowed");
        }
        eprintln!("chain of 60 dependent increments: {stats:?}");

        // The blocking helper: the agreed reply.
        let next = session
            .invoke_confirmed(incr_op(1, token))
            .await
            .expect("confirmed");
        let SpecReply::Executed(bytes) = next else {
            panic!("executed, got {next:?}")
        };
        let Some(IncrReply::Done { value: 61, token }) = IncrReply::decode(&bytes) else {
            panic!("the 61st increment, got {:?}", IncrReply::decode(&bytes))
        };

        // 0-reply speculation on a wrong prediction: a write that depends on it must be a
        // no-op on the replicas, and the prediction is corrected.
        session
            .invoke_confirmed(create_op("/f"))
            .await
            .expect("create");
        let wrong = IncrReply::Done {
            value: 999,
            token: 5,
        }
        .encode();
        let predicted = session
            .invoke_predicted(incr_op(1, token), Dependence::All, wrong)
            .await
            .expect("issued");
        let dependent = session
            .invoke(write_op("/f", 0, b"from a wrong guess"), Dependence::All)
            .expect("issued");
        let dependent_id = dependent.id();
        match predicted.confirmed().await.expect("agreed") {
            Confirmation::Corrected { reply, aborted } => {
                assert_eq!(aborted, vec![dependent_id]);
                let SpecReply::Executed(bytes) = reply else {
                    panic!("the increment executed")
                };
                assert!(matches!(
                    IncrReply::decode(&bytes),
                    Some(IncrReply::Done { value: 62, .. })
                ));
            }
            other => panic!("a wrong prediction is corrected, got {other:?}"),
        }
        assert_eq!(
            dependent.confirmed().await.expect("answered"),
            Confirmation::Unknown,
            "rolled back: the session no longer tracks it"
        );
        // Nothing unconfirmed now: the read takes the read-only path (§3.2.2).
        let read = session.invoke_read(read_op("/f")).await.expect("read");
        let SpecReply::Executed(bytes) = read else {
            panic!("read executed, got {read:?}")
        };
        assert_eq!(
            FsReply::decode(&read_op("/f"), &bytes),
            Some(FsReply::Data(Vec::new())),
            "the write that depended on the wrong prediction had no effect"
        );
        session.client().clone().shutdown().await;
    });
    // What the shim counted reaches the operator: execution replica 0 saw its early replies
    // confirmed by the committed order, and every execution replica aborted the write that
    // depended on the wrong prediction.
    let spec_event = |text: &str, exec: usize, event: &str| {
        metric_sample(
            text,
            &format!("plumb_stage_events_total{{principal=\"e{exec}\",event=\"{event}\"}}"),
        )
    };
    let deadline = std::time::Instant::now() + T20;
    loop {
        let texts: Vec<String> = (0..3).map(|n| c.metrics(n).unwrap_or_default()).collect();
        let confirmed = spec_event(&texts[0], 0, "spec-early-confirmed");
        let aborted: Vec<u64> = (0..3)
            .map(|e| spec_event(&texts[e], e, "spec-aborted"))
            .collect();
        let executed = spec_event(&texts[0], 0, "spec-executed");
        if confirmed > 0 && executed >= 61 && aborted.iter().all(|a| *a >= 1) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "spec counters in /metrics: e0 executed {executed}, early-confirmed {confirmed}; aborted per replica {aborted:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    c.assert_running();
}
