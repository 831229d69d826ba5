//! The Rust client library (`plumb_client::net`) against a real u=1 r=1 cluster of four node
//! processes: the async client and the blocking client write, read on the read-only path, keep
//! working with a node killed mid-way (u=1), resume from their record after a restart, and a
//! wrong identity is refused with its typed error before anything is sent.

mod common;

use common::*;
use plumb_client::net::{
    BlockingClient, Client, ClientError, ClientOptions, Cluster as ClusterConfig, Identity,
    RecordLocation,
};
use plumb_kv::{KvOp, KvResult};
use std::time::Duration;

const T20: Duration = Duration::from_secs(20);
/// The harness's cluster lists client ids 0-7 for the gateway and 128-129 for tools (the
/// tools' own speculation group).
const ASYNC_ID: u32 = 128;
const BLOCKING_ID: u32 = 129;

fn set(key: &str, value: &str) -> Vec<u8> {
    KvOp::Set {
        key: key.into(),
        value: value.into(),
        expire: None,
    }
    .encode()
}

fn get(key: &str) -> Vec<u8> {
    KvOp::Get { key: key.into() }.encode()
}

fn incr(key: &str) -> Vec<u8> {
    KvOp::Increment {
        key: key.into(),
        delta: 1,
    }
    .encode()
}

fn result(bytes: Result<Vec<u8>, ClientError>) -> KvResult {
    let bytes = bytes.unwrap_or_else(|e| panic!("operation failed: {e}"));
    KvResult::decode(&bytes).expect("a key-value result")
}

fn value(v: &str) -> KvResult {
    KvResult::Value(Some(v.as_bytes().to_vec()))
}

fn options(record: std::path::PathBuf) -> ClientOptions {
    ClientOptions {
        record: RecordLocation::Dir(record),
        connect_timeout: Some(T20),
        op_timeout: Some(T20),
    }
}

#[test]
fn async_and_blocking_clients_write_read_and_survive_a_killed_node() {
    let mut c = Cluster::init("client-api", 30);
    for n in 0..NODES {
        c.start_node(n);
    }
    c.wait_ready(T20);
    let config = ClusterConfig::load(&c.config()).expect("the harness's cluster file loads");
    let records = c.dir().join("app-records");

    // A wrong identity: refused with its typed error, nothing sent.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let someone_elses_key =
        Identity::from_key_file(ASYNC_ID, config.client_secret_path(BLOCKING_ID)).unwrap();
    let refused = rt.block_on(Client::connect(c.config(), someone_elses_key));
    assert!(
        matches!(refused, Err(ClientError::WrongKey { id: ASYNC_ID, .. })),
        "{:?}",
        refused.err()
    );
    let stranger = Identity::from_secret(4242, [1; 32]);
    let refused = BlockingClient::connect(c.config(), stranger);
    assert!(
        matches!(refused, Err(ClientError::UnknownClient { id: 4242, .. })),
        "{:?}",
        refused.err()
    );

    // The async client: writes, a read-only read, and concurrent operations through clones of
    // one handle (they queue: one identity has one request outstanding).
    let me = Identity::issued(&config, ASYNC_ID).unwrap();
    let client = rt
        .block_on(Client::connect_with(
            &config,
            vec![me.clone()],
            options(records.join("async")),
        ))
        .expect("connect");
    rt.block_on(async {
        assert_eq!(
            result(client.invoke(set("greeting", "hello")).await),
            KvResult::Ok
        );
        assert_eq!(
            result(client.invoke_read_only(get("greeting")).await),
            value("hello")
        );
        let incrs: Vec<_> = (0..5)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move { client.invoke(incr("visits")).await })
            })
            .collect();
        for i in incrs {
            assert!(matches!(result(i.await.unwrap()), KvResult::Int(1..=5)));
        }
        assert_eq!(result(client.invoke(get("visits")).await), value("5"));
    });

    // The blocking client sees what the async one wrote, and writes too.
    let blocking = BlockingClient::connect_with(
        &config,
        vec![Identity::issued(&config, BLOCKING_ID).unwrap()],
        options(records.join("blocking")),
    )
    .expect("connect blocking");
    assert_eq!(
        result(blocking.invoke_read_only(get("greeting"))),
        value("hello")
    );
    assert_eq!(
        result(blocking.invoke(set("from-blocking", "yes"))),
        KvResult::Ok
    );

    // Node 1 (a1, o1, e1; not the primary) killed mid-way: u=1, so both clients go on. Reads
    // on the read-only path cannot be unanimous with an execution replica down and fall back
    // to the ordered path; they still answer, and answer right.
    c.kill_node(1);
    rt.block_on(async {
        for i in 0..10 {
            let v = format!("v{i}");
            assert_eq!(result(client.invoke(set("during", &v)).await), KvResult::Ok);
            assert_eq!(
                result(client.invoke_read_only(get("during")).await),
                value(&v)
            );
        }
    });
    assert_eq!(result(blocking.invoke(incr("visits"))), KvResult::Int(6));
    assert_eq!(
        result(blocking.invoke_read_only(get("during"))),
        value("v9")
    );
    blocking.shutdown();

    // Node 1 back; the async client restarts from its record (its request numbers go on) and
    // reads everything back.
    c.start_node(1);
    c.wait_ready(T20);
    rt.block_on(client.shutdown());
    let client = rt
        .block_on(Client::connect_with(
            &config,
            vec![me],
            options(records.join("async")),
        ))
        .expect("reconnect from the record");
    rt.block_on(async {
        assert_eq!(
            result(client.invoke(incr("visits")).await),
            KvResult::Int(7)
        );
        assert_eq!(
            result(client.invoke_read_only(get("from-blocking")).await),
            value("yes")
        );
        client.shutdown().await;
    });
    c.assert_running();
}
