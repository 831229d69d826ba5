//! The driver's own behaviour without a running cluster: what it refuses and why, where it
//! keeps records, and that shutdown answers every caller. (A real cluster is exercised by
//! `crates/plumb/tests/client.rs`.)

use crate::net::{
    BlockingClient, Client, ClientError, ClientOptions, Cluster, Identity, RecordLocation,
    MAX_OPERATION_BYTES,
};
use plumb_cluster::{init, InitOptions};
use std::time::Duration;

/// A u=1 r=1 cluster file whose nodes listen on ports nothing serves (1, 3, 5, 7: below 1024,
/// so no test process can be listening there), with clients 0 and 1.
fn cluster(dir: &std::path::Path) -> Cluster {
    let o = InitOptions {
        base_port: 1,
        gateway_clients: 2,
        cli_clients: 0,
        ..InitOptions::default()
    };
    Cluster::load(&init(dir, &o).unwrap()).unwrap()
}

/// Options that do not wait for the (absent) nodes.
fn no_wait(record: RecordLocation) -> ClientOptions {
    ClientOptions {
        record,
        connect_timeout: None,
        op_timeout: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_id_the_cluster_does_not_list_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let stranger = Identity::from_secret(99, [7; 32]);
    let err = runtime()
        .block_on(Client::connect_with(
            &c,
            vec![stranger],
            ClientOptions::default(),
        ))
        .err()
        .unwrap();
    assert!(
        matches!(err, ClientError::UnknownClient { id: 99, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("[[client]]"),
        "says what to do: {err}"
    );
}

#[test]
fn the_key_of_another_client_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let wrong = Identity::from_key_file(0, c.client_secret_path(1)).unwrap();
    let err = runtime()
        .block_on(Client::connect_with(
            &c,
            vec![wrong],
            ClientOptions::default(),
        ))
        .err()
        .unwrap();
    assert!(matches!(err, ClientError::WrongKey { id: 0, .. }), "{err}");
}

#[test]
fn a_missing_key_file_names_the_file() {
    let err = Identity::from_key_file(3, "/nonexistent/client-3.key").unwrap_err();
    assert!(matches!(err, ClientError::KeyFile { id: 3, .. }), "{err}");
    assert!(
        err.to_string().contains("/nonexistent/client-3.key"),
        "{err}"
    );
}

#[test]
fn an_identity_shows_its_id_and_never_its_key() {
    let shown = format!("{:?}", Identity::from_secret(5, [0xab; 32]));
    assert!(shown.contains('5') && !shown.contains("ab, ") && !shown.contains("171"));
}

#[test]
fn a_bad_cluster_file_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.toml");
    std::fs::write(&path, "u = 1\nnot toml at all [").unwrap();
    let err = runtime()
        .block_on(Client::connect(&path, Identity::from_secret(0, [0; 32])))
        .err()
        .unwrap();
    assert!(matches!(err, ClientError::Config(_)), "{err}");
}

#[test]
fn identities_must_be_distinct_and_at_least_one() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let rt = runtime();
    let none = rt.block_on(Client::connect_with(&c, vec![], ClientOptions::default()));
    assert!(matches!(none, Err(ClientError::Identities(_))));
    let me = Identity::issued(&c, 0).unwrap();
    let twice = rt.block_on(Client::connect_with(
        &c,
        vec![me.clone(), me],
        ClientOptions::default(),
    ));
    assert!(matches!(twice, Err(ClientError::Identities(_))));
}

#[test]
fn the_default_record_is_beside_the_cluster_file_where_plumb_kv_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let one = RecordLocation::BesideClusterFile.dir(&c, &[4]).unwrap();
    assert_eq!(one, dir.path().join("clients").join("pool-c4"));
    let group = RecordLocation::BesideClusterFile
        .dir(&c, &[4, 5, 9])
        .unwrap();
    assert_eq!(group, dir.path().join("clients").join("group-c4-c9"));
    assert_eq!(RecordLocation::Temporary.dir(&c, &[4]), None);
}

#[test]
fn one_record_serves_one_running_client() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let rt = runtime();
    rt.block_on(async {
        let me = || vec![Identity::issued(&c, 0).unwrap()];
        let first = Client::connect_with(&c, me(), no_wait(RecordLocation::default()))
            .await
            .unwrap();
        assert_eq!(
            first.record_dir(),
            dir.path().join("clients").join("pool-c0")
        );
        let second = Client::connect_with(&c, me(), no_wait(RecordLocation::default())).await;
        assert!(
            matches!(second, Err(ClientError::RecordInUse { .. })),
            "{:?}",
            second.err()
        );
        first.shutdown().await;
        // Released at shutdown.
        let third = Client::connect_with(&c, me(), no_wait(RecordLocation::default())).await;
        third.unwrap().shutdown().await;
    });
}

#[test]
fn a_temporary_record_is_removed_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    runtime().block_on(async {
        let me = vec![Identity::issued(&c, 1).unwrap()];
        let client = Client::connect_with(&c, me, no_wait(RecordLocation::Temporary))
            .await
            .unwrap();
        let record = client.record_dir().to_path_buf();
        assert!(record.exists());
        client.shutdown().await;
        assert!(!record.exists());
    });
}

#[test]
fn too_few_reachable_replicas_is_unreachable_naming_the_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let options = ClientOptions {
        record: RecordLocation::Temporary,
        connect_timeout: Some(Duration::from_millis(100)),
        op_timeout: None,
    };
    let err = runtime()
        .block_on(Client::connect_with(
            &c,
            vec![Identity::issued(&c, 0).unwrap()],
            options,
        ))
        .err()
        .unwrap();
    match &err {
        ClientError::Unreachable {
            connected,
            down,
            auth_needed,
            exec_needed,
            ..
        } => {
            assert!(connected.is_empty());
            assert_eq!(down, &[0, 1, 2, 3]);
            assert_eq!((*auth_needed, *exec_needed), (3, 2));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn an_unanswered_operation_times_out_and_an_oversized_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    runtime().block_on(async {
        let options = ClientOptions {
            op_timeout: Some(Duration::from_millis(50)),
            ..no_wait(RecordLocation::Temporary)
        };
        let client = Client::connect_with(&c, vec![Identity::issued(&c, 0).unwrap()], options)
            .await
            .unwrap();
        let err = client.invoke(b"x".to_vec()).await.unwrap_err();
        assert!(matches!(err, ClientError::TimedOut { .. }), "{err}");
        let big = vec![0u8; MAX_OPERATION_BYTES + 1];
        let err = client.invoke(big).await.unwrap_err();
        assert!(
            matches!(err, ClientError::OperationTooLarge { .. }),
            "{err}"
        );
        client.shutdown().await;
    });
}

#[test]
fn shutdown_answers_every_waiting_caller_with_closed() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    runtime().block_on(async {
        let client = Client::connect_with(
            &c,
            vec![Identity::issued(&c, 0).unwrap()],
            no_wait(RecordLocation::Temporary),
        )
        .await
        .unwrap();
        let waiting: Vec<_> = (0..3)
            .map(|i| {
                let client = client.clone();
                tokio::spawn(async move { client.invoke(vec![i]).await })
            })
            .collect();
        let mut events = client.push_events();
        // Let the callers queue before shutting down.
        while client.backlog() < 2 {
            tokio::task::yield_now().await;
        }
        let handle = client.clone();
        client.shutdown().await;
        for w in waiting {
            assert!(matches!(w.await.unwrap(), Err(ClientError::Closed)));
        }
        assert!(matches!(
            handle.invoke(b"late".to_vec()).await,
            Err(ClientError::Closed)
        ));
        assert_eq!(events.next().await, None, "subscriptions end");
    });
}

#[test]
fn the_async_client_needs_a_runtime_and_the_blocking_one_brings_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let c = cluster(dir.path());
    let store_dir = dir.path().join("record");
    let (store, recovered) = plumb_storage::Store::open(&store_dir).unwrap();
    let outside = Client::start_with_store(
        &c,
        &[Identity::issued(&c, 0).unwrap()],
        store,
        recovered,
        &ClientOptions::default(),
    );
    assert!(matches!(outside, Err(ClientError::NoRuntime)));

    let blocking = BlockingClient::connect_with(
        &c,
        vec![Identity::issued(&c, 1).unwrap()],
        ClientOptions {
            op_timeout: Some(Duration::from_millis(20)),
            ..no_wait(RecordLocation::Temporary)
        },
    )
    .unwrap();
    assert!(matches!(
        blocking.invoke(b"x".to_vec()),
        Err(ClientError::TimedOut { .. })
    ));
    let mut events = blocking.push_events();
    assert_eq!(events.recv_timeout(Duration::from_millis(1)), None);
    blocking.shutdown();
}
