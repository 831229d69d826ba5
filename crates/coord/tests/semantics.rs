//! The operations' semantics and errors, as ZooKeeper's.

mod common;

use common::{create, delete, exists, get_children, get_data, set_data, H};
use plumb_app::Application;
use plumb_coord::*;

use CreateMode::*;
use ErrorCode::*;

#[test]
fn initial_tree_looks_like_zookeepers() {
    let mut h = H::default();
    let s = h.open(1);
    assert_eq!(h.children(s, "/"), ["zookeeper"]);
    assert_eq!(h.children(s, "/zookeeper"), ["config", "quota"]);
    let root = h.stat(s, "/").unwrap();
    assert_eq!((root.czxid, root.mzxid, root.version), (0, 0, 0));
    assert_eq!(root.num_children, 1);
    // What a fresh ZooKeeper 3.8 serves (tests/zk_differential.rs found it): its initial
    // children count as never created, and `cversion` is 2 * created - children.
    assert_eq!(root.cversion, -1);
    assert_eq!(h.stat(s, "/zookeeper").unwrap().cversion, -2);
    let config = h.stat(s, "/zookeeper/config").unwrap();
    assert_eq!((config.cversion, config.aversion), (0, -1));
}

#[test]
fn create_sets_the_full_stat_and_the_parents() {
    let mut h = H::default();
    let s = h.open(1);
    let reply = h.req_full(s, create("/a", b"hello", Persistent));
    let Ok(Response::Created { path, stat }) = reply.result else {
        panic!("{reply:?}")
    };
    assert_eq!(path, "/a");
    assert_eq!(stat.czxid, reply.zxid.0);
    assert_eq!((stat.mzxid, stat.pzxid), (stat.czxid, stat.czxid));
    assert_eq!(stat.ctime, (h.time / 1000) as i64);
    assert_eq!(stat.mtime, stat.ctime);
    assert_eq!((stat.version, stat.cversion, stat.aversion), (0, 0, 0));
    assert_eq!(
        (stat.ephemeral_owner, stat.data_length, stat.num_children),
        (0, 5, 0)
    );
    let root = h.stat(s, "/").unwrap();
    assert_eq!(
        (root.num_children, root.cversion, root.pzxid),
        (2, 0, stat.czxid)
    );
    assert_eq!(h.create(s, "/a", b"", Persistent), Err(NodeExists));
    assert_eq!(h.create(s, "/x/y", b"", Persistent), Err(NoNode));
    assert_eq!(h.create(s, "/", b"", Persistent), Err(NodeExists));
    for bad in [
        "a",
        "/a/",
        "/a//b",
        "/a/.",
        "/a/..",
        "/a\0b",
        "/\u{1f600}",
        "",
    ] {
        assert_eq!(
            h.create(s, bad, b"", Persistent),
            Err(BadArguments),
            "{bad:?}"
        );
    }
    assert_eq!(
        h.create(s, "/big", &vec![0; MAX_DATA + 1], Persistent),
        Err(BadArguments)
    );
    assert!(h.create(s, "/big", &vec![0; MAX_DATA], Persistent).is_ok());
}

#[test]
fn sequential_numbers_come_from_the_parents_cversion() {
    let mut h = H::default();
    let s = h.open(1);
    h.create(s, "/q", b"", Persistent).unwrap();
    assert_eq!(
        h.create(s, "/q/n-", b"", PersistentSequential).unwrap(),
        "/q/n-0000000000"
    );
    h.create(s, "/q/other", b"", Persistent).unwrap();
    h.req(s, delete("/q/other", -1)).unwrap();
    // Two children created and one deleted: cversion 3, but ZooKeeper numbers by the
    // children created (as a real ZooKeeper 3.8 does: tests/zk_differential.rs found it).
    assert_eq!(h.stat(s, "/q").unwrap().cversion, 3);
    assert_eq!(
        h.create(s, "/q/n-", b"", EphemeralSequential).unwrap(),
        "/q/n-0000000002"
    );
    // A trailing slash is a valid sequential prefix.
    assert_eq!(
        h.create(s, "/q/", b"", PersistentSequential).unwrap(),
        "/q/0000000003"
    );
    assert_eq!(h.stat(s, "/q").unwrap().cversion, 5);
    assert_eq!(h.create(s, "/q/", b"", Persistent), Err(BadArguments));
    // At the top level, the children created under the root: /q (/zookeeper does not
    // count).
    assert_eq!(
        h.create(s, "/", b"", PersistentSequential).unwrap(),
        "/0000000001"
    );
}

#[test]
fn delete_and_set_data_check_versions() {
    let mut h = H::default();
    let s = h.open(1);
    h.create(s, "/a", b"1", Persistent).unwrap();
    let set = |v: i32| set_data("/a", b"2", v);
    assert_eq!(h.req(s, set(3)), Err(BadVersion));
    let Ok(Response::Stat(st)) = h.req(s, set(0)) else {
        panic!()
    };
    assert_eq!((st.version, st.data_length), (1, 1));
    assert!(st.mzxid > st.czxid);
    let Ok(Response::Stat(st)) = h.req(s, set(-1)) else {
        panic!()
    };
    assert_eq!(st.version, 2);
    assert_eq!(h.req(s, set_data("/nope", b"", -1)), Err(NoNode));
    h.create(s, "/a/b", b"", Persistent).unwrap();
    assert_eq!(h.req(s, delete("/a", -1)), Err(NotEmpty));
    assert_eq!(h.req(s, delete("/a/b", 1)), Err(BadVersion));
    assert_eq!(h.req(s, delete("/a/b", 0)), Ok(Response::Empty));
    assert_eq!(h.req(s, delete("/a/b", -1)), Err(NoNode));
    assert_eq!(h.req(s, delete("/a", 2)), Ok(Response::Empty));
    for special in ["/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
        assert_eq!(h.req(s, delete(special, -1)), Err(BadArguments));
    }
    assert_eq!(
        h.req(
            s,
            Request::Check {
                path: "/zookeeper".into(),
                version: 1
            }
        ),
        Err(BadVersion)
    );
    assert_eq!(
        h.req(
            s,
            Request::Check {
                path: "/zookeeper".into(),
                version: 0
            }
        ),
        Ok(Response::Empty)
    );
}

#[test]
fn reads() {
    let mut h = H::default();
    let s = h.open(1);
    h.create(s, "/a", b"x", Persistent).unwrap();
    h.create(s, "/a/c", b"", Persistent).unwrap();
    h.create(s, "/a/b", b"", Persistent).unwrap();
    h.create(s, "/a/b/d", b"", Persistent).unwrap();
    let Ok(Response::Data { data, stat }) = h.req(s, get_data("/a", false)) else {
        panic!()
    };
    assert_eq!((data.as_slice(), stat.num_children), (&b"x"[..], 2));
    assert_eq!(h.children(s, "/a"), ["b", "c"]);
    assert_eq!(
        h.req(s, Request::GetAllChildrenNumber { path: "/a".into() }),
        Ok(Response::Count(3))
    );
    assert_eq!(h.req(s, get_data("/z", false)), Err(NoNode));
    assert_eq!(h.req(s, get_children("/a/", false)), Err(BadArguments));
    let Ok(Response::Multi(rs)) = h.req(
        s,
        Request::MultiRead(vec![
            MultiOp::GetData { path: "/a".into() },
            MultiOp::GetChildren {
                path: "/nope".into(),
            },
            MultiOp::GetChildren {
                path: "/a/b".into(),
            },
        ]),
    ) else {
        panic!()
    };
    assert!(matches!(rs[0], Ok(MultiResult::Data { .. })));
    assert_eq!(rs[1], Err(NoNode));
    assert!(matches!(&rs[2], Ok(MultiResult::Children { children, .. }) if children == &["d"]));
    assert_eq!(
        h.req(s, Request::Sync { path: "/a".into() }),
        Ok(Response::Path("/a".into()))
    );
}

#[test]
fn multi_is_atomic_with_zookeepers_result_shape() {
    let mut h = H::default();
    let s = h.open(1);
    h.create(s, "/a", b"", Persistent).unwrap();
    let before = h.app.tree().clone();
    let zxid = h.app.zxid();
    let ops = vec![
        MultiOp::Create {
            path: "/a/x".into(),
            data: vec![],
            acl: acl::open_acl(),
            mode: Persistent,
            ttl_ms: 0,
        },
        MultiOp::SetData {
            path: "/a".into(),
            data: b"1".to_vec(),
            version: -1,
        },
        MultiOp::Check {
            path: "/a".into(),
            version: 0,
        },
        MultiOp::Delete {
            path: "/a/x".into(),
            version: -1,
        },
    ];
    let r = h.req(s, Request::Multi(ops.clone()));
    assert_eq!(
        r,
        Ok(Response::Multi(vec![
            Err(RolledBack),
            Err(RolledBack),
            Err(BadVersion),
            Err(RuntimeInconsistency)
        ]))
    );
    assert_eq!(h.app.tree(), &before, "nothing applied");
    assert_eq!(h.app.zxid(), zxid);
    let mut ops = ops;
    ops[2] = MultiOp::Check {
        path: "/a".into(),
        version: 1,
    };
    let Ok(Response::Multi(rs)) = h.req(s, Request::Multi(ops)) else {
        panic!()
    };
    assert!(rs.iter().all(|r| r.is_ok()), "{rs:?}");
    assert_eq!(h.app.zxid().0, zxid.0 + 1, "one zxid for the whole multi");
    let Some(MultiResult::Created { stat, .. }) = rs[0].clone().ok() else {
        panic!()
    };
    assert_eq!(stat.czxid, zxid.0 + 1);
    assert_eq!(h.stat(s, "/a/x"), None);
    assert_eq!(h.stat(s, "/a").unwrap().cversion, 2);
    // A sequential create inside a multi that fails later leaves no trace.
    let r = h.req(
        s,
        Request::Multi(vec![
            MultiOp::Create {
                path: "/a/s-".into(),
                data: vec![],
                acl: acl::open_acl(),
                mode: EphemeralSequential,
                ttl_ms: 0,
            },
            MultiOp::Delete {
                path: "/nope".into(),
                version: -1,
            },
        ]),
    );
    assert_eq!(r, Ok(Response::Multi(vec![Err(RolledBack), Err(NoNode)])));
    assert!(h.app.sessions()[&s].event_count == 0);
    assert_eq!(h.app.tree().ephemerals_of(s), Vec::<String>::new());
    assert_eq!(
        h.req(s, Request::Multi(vec![])),
        Ok(Response::Multi(vec![]))
    );
}

#[test]
fn ephemerals_go_with_their_session() {
    let mut h = H::default();
    let s = h.open(1);
    let (t, _) = h.open_with(2, 4_000);
    h.create(s, "/e", b"", Persistent).unwrap();
    h.create(t, "/e/mine", b"", Ephemeral).unwrap();
    assert_eq!(
        h.create(t, "/e/mine/child", b"", Persistent),
        Err(NoChildrenForEphemerals)
    );
    let st = h.stat(s, "/e/mine").unwrap();
    assert_eq!(st.ephemeral_owner, t.0);
    // Watch it from s, then let t expire: s keeps itself alive, t does not.
    h.req(s, exists("/e/mine", true)).unwrap();
    h.wait(3_000);
    h.req(s, Request::Sync { path: "/".into() }).unwrap();
    h.wait(3_000);
    assert_eq!(h.stat(s, "/e/mine"), None);
    assert!(!h.app.sessions().contains_key(&t));
    // The harness speaks for every session as identity 1: its owner now.
    assert!(h.pushes.iter().any(|(c, p)| *c == 1 && p.expired == [t]));
    let ev = h.events_of(s);
    assert_eq!(ev.len(), 1);
    assert_eq!(
        (ev[0].kind, ev[0].path.as_str(), ev[0].number),
        (EventType::NodeDeleted, "/e/mine", 1)
    );
    // A dead session's requests and a closed one's.
    assert_eq!(h.create(t, "/e/again", b"", Ephemeral), Err(SessionExpired));
    let u = h.open(3);
    h.create(u, "/e/u", b"", EphemeralSequential).unwrap();
    assert_eq!(
        h.run(3, CoordOp::CloseSession { session: u }).result,
        Ok(Response::Empty)
    );
    assert_eq!(h.children(s, "/e"), Vec::<String>::new());
    assert_eq!(
        h.run(3, CoordOp::CloseSession { session: u }).result,
        Err(SessionExpired)
    );
}

#[test]
fn sessions_resume_with_their_password_and_touch_keeps_them() {
    let mut h = H::default();
    let (s, pw) = h.open_with(1, 1);
    assert_eq!(h.app.sessions()[&s].timeout_ms, MIN_SESSION_TIMEOUT_MS);
    let (_, pw2) = h.open_with(1, 100_000);
    assert_ne!(pw, pw2);
    let resume = |pw| CoordOp::ResumeSession {
        session: s,
        password: pw,
        timeout_ms: 5000,
    };
    assert_eq!(h.run(9, resume(pw2)).result, Err(SessionExpired));
    assert!(matches!(
        h.run(9, resume(pw)).result,
        Ok(Response::Session {
            timeout_ms: 5000,
            ..
        })
    ));
    assert_eq!(h.app.sessions()[&s].owner, 9);
    for _ in 0..4 {
        h.wait(3_000);
        let r = h.run(
            9,
            CoordOp::Touch {
                sessions: vec![s, SessionId(12345)],
            },
        );
        assert_eq!(r.result, Ok(Response::Expired(vec![SessionId(12345)])));
    }
    assert!(h.app.sessions().contains_key(&s));
    h.wait(6_000);
    assert!(!h.app.sessions().contains_key(&s));
}

#[test]
fn watches_fire_once_by_zookeepers_rules() {
    let mut h = H::default();
    let w = h.open(1);
    let s = h.open(2);
    let watch = |h: &mut H, r: Request| h.req(w, r);
    // Exist watch on a missing node: NodeCreated.
    assert_eq!(watch(&mut h, exists("/a", true)), Err(NoNode));
    // getData on a missing node sets no watch.
    assert_eq!(watch(&mut h, get_data("/b", true)), Err(NoNode));
    h.create(s, "/a", b"", Persistent).unwrap();
    h.create(s, "/b", b"", Persistent).unwrap();
    watch(&mut h, get_data("/a", true)).unwrap();
    watch(&mut h, get_children("/a", true)).unwrap();
    watch(&mut h, get_children("/", true)).unwrap();
    h.req(s, set_data("/a", &[1], -1)).unwrap();
    h.req(s, set_data("/a", &[2], -1)).unwrap();
    h.create(s, "/a/c", b"", Persistent).unwrap();
    h.create(s, "/a/d", b"", Persistent).unwrap();
    h.req(s, delete("/b", -1)).unwrap();
    let ev = h.kinds_and_paths_of(w);
    assert_eq!(
        ev,
        [
            (EventType::NodeCreated, "/a".into()),
            (EventType::NodeDataChanged, "/a".into()),
            (EventType::NodeChildrenChanged, "/a".into()),
            (EventType::NodeChildrenChanged, "/".into()),
        ]
    );
    let numbers: Vec<u64> = h.events_of(w).iter().map(|e| e.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert!(h.events_of(s).is_empty());
    // Data and child watch on one node: one NodeDeleted.
    watch(&mut h, get_data("/a/c", true)).unwrap();
    watch(&mut h, get_children("/a/c", true)).unwrap();
    h.req(s, delete("/a/c", -1)).unwrap();
    let last = h.events_of(w);
    assert_eq!(last.len(), 5);
    assert_eq!(
        (last[4].kind, last[4].path.as_str()),
        (EventType::NodeDeleted, "/a/c")
    );
    // The event's zxid is the change's, after the registration's.
    let reply = h.req_full(w, get_data("/a", true));
    let r = h.req_full(s, set_data("/a", b"", -1));
    let e = h.events_of(w).pop().unwrap();
    assert!(e.zxid > reply.zxid);
    assert_eq!(e.zxid, r.zxid);
    // A reply tells how many events the session had: the watcher's next reply says 6.
    let r = h.req_full(w, Request::Sync { path: "/".into() });
    assert_eq!(r.events, 6);
}

#[test]
fn persistent_and_recursive_watches() {
    let mut h = H::default();
    let w = h.open(1);
    let s = h.open(2);
    h.create(s, "/p", b"", Persistent).unwrap();
    h.req(
        w,
        Request::AddWatch {
            path: "/p".into(),
            mode: AddWatchMode::Persistent,
        },
    )
    .unwrap();
    h.req(
        w,
        Request::AddWatch {
            path: "/r".into(),
            mode: AddWatchMode::PersistentRecursive,
        },
    )
    .unwrap();
    h.create(s, "/p/x", b"", Persistent).unwrap(); // p: NodeChildrenChanged
    h.req(s, set_data("/p", b"", -1)).unwrap();
    h.req(s, set_data("/p", b"", -1)).unwrap();
    h.create(s, "/r", b"", Persistent).unwrap(); // r: NodeCreated
    h.create(s, "/r/a", b"", Persistent).unwrap(); // r/a: NodeCreated (no ChildrenChanged)
    h.req(s, set_data("/r/a", b"", -1)).unwrap();
    let ev = h.kinds_and_paths_of(w);
    assert_eq!(
        ev,
        [
            (EventType::NodeChildrenChanged, "/p".into()),
            (EventType::NodeDataChanged, "/p".into()),
            (EventType::NodeDataChanged, "/p".into()),
            (EventType::NodeCreated, "/r".into()),
            (EventType::NodeCreated, "/r/a".into()),
            (EventType::NodeDataChanged, "/r/a".into()),
        ]
    );
    let rm = |kind| Request::RemoveWatches {
        path: "/p".into(),
        kind,
    };
    assert_eq!(h.req(w, rm(WatchKind::Data)), Err(NoWatcher));
    assert_eq!(h.req(w, rm(WatchKind::Persistent)), Ok(Response::Empty));
    assert_eq!(h.req(w, rm(WatchKind::Any)), Err(NoWatcher));
    h.req(s, set_data("/p", b"", -1)).unwrap();
    assert_eq!(h.events_of(w).len(), 6);
}

#[test]
fn set_watches_fires_for_what_changed_since() {
    let mut h = H::default();
    let w = h.open(1);
    let s = h.open(2);
    h.create(s, "/a", b"", Persistent).unwrap();
    h.create(s, "/b", b"", Persistent).unwrap();
    let seen = h.app.zxid();
    h.req(s, set_data("/a", b"", -1)).unwrap();
    h.req(
        w,
        Request::SetWatches {
            relative_zxid: seen,
            data: vec!["/a".into(), "/b".into(), "/gone".into()],
            exist: vec!["/b".into(), "/c".into()],
            child: vec!["/b".into()],
            persistent: vec![],
            persistent_recursive: vec![],
        },
    )
    .unwrap();
    let ev = h.kinds_and_paths_of(w);
    assert_eq!(
        ev,
        [
            (EventType::NodeDataChanged, "/a".into()),
            (EventType::NodeDeleted, "/gone".into()),
            (EventType::NodeCreated, "/b".into()),
        ]
    );
    h.create(s, "/c", b"", Persistent).unwrap();
    h.create(s, "/b/x", b"", Persistent).unwrap();
    h.req(s, set_data("/b", b"", -1)).unwrap();
    let ev: Vec<EventType> = h.events_of(w).into_iter().map(|e| e.kind).collect();
    assert_eq!(
        ev[3..],
        [
            EventType::NodeCreated,
            EventType::NodeChildrenChanged,
            EventType::NodeDataChanged
        ]
    );
}

#[test]
fn pending_events_until_acked() {
    let mut h = H::default();
    let w = h.open(1);
    let s = h.open(2);
    for i in 0..3 {
        h.req(w, exists(&format!("/n{i}"), true)).unwrap_err();
        h.create(s, &format!("/n{i}"), b"", Persistent).unwrap();
    }
    let pending = |h: &mut H, acked| match h
        .run(
            1,
            CoordOp::Session {
                session: w,
                acked_events: acked,
                request: Request::PendingEvents,
            },
        )
        .result
    {
        Ok(Response::Events(e)) => e.iter().map(|e| e.number).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(pending(&mut h, 0), [1, 2, 3]);
    assert_eq!(pending(&mut h, 2), [3]);
    assert_eq!(pending(&mut h, 0), [3], "acknowledged events are gone");
    // The read-only path answers the same.
    let op = CoordOp::Session {
        session: w,
        acked_events: 2,
        request: Request::PendingEvents,
    }
    .encode();
    let r = Reply::decode(&h.app.execute_read_only(1, &op)).unwrap();
    assert!(matches!(r.result, Ok(Response::Events(e)) if e.len() == 1));
    assert_eq!(r.events, 3);
}

#[test]
fn acls_and_digest_auth() {
    let mut h = H::default();
    let s = h.open(1);
    let t = h.open(2);
    assert_eq!(
        h.req(
            s,
            Request::AddAuth {
                scheme: "ip".into(),
                auth: b"1.2.3.4".to_vec()
            }
        ),
        Err(AuthFailed)
    );
    h.req(
        s,
        Request::AddAuth {
            scheme: "digest".into(),
            auth: b"alice:secret".to_vec(),
        },
    )
    .unwrap();
    let only_alice = vec![Acl {
        perms: perms::ALL,
        scheme: "auth".into(),
        id: String::new(),
    }];
    let r = h.req(
        s,
        Request::Create {
            path: "/priv".into(),
            data: b"x".to_vec(),
            acl: only_alice.clone(),
            mode: Persistent,
            ttl_ms: 0,
        },
    );
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        h.req(
            t,
            Request::Create {
                path: "/t".into(),
                data: vec![],
                acl: only_alice,
                mode: Persistent,
                ttl_ms: 0
            }
        ),
        Err(InvalidAcl)
    );
    assert_eq!(
        h.req(
            t,
            Request::Create {
                path: "/t".into(),
                data: vec![],
                acl: vec![],
                mode: Persistent,
                ttl_ms: 0
            }
        ),
        Err(InvalidAcl)
    );
    assert_eq!(h.req(t, get_data("/priv", false)), Err(NoAuth));
    assert_eq!(h.req(t, set_data("/priv", b"", -1)), Err(NoAuth));
    assert_eq!(h.req(t, create("/priv/c", b"", Persistent)), Err(NoAuth));
    assert!(h.stat(t, "/priv").is_some(), "exists needs no permission");
    assert_eq!(
        h.req(
            t,
            Request::GetAcl {
                path: "/priv".into()
            }
        ),
        Err(NoAuth)
    );
    let Ok(Response::Acl { acl, stat }) = h.req(
        s,
        Request::GetAcl {
            path: "/priv".into(),
        },
    ) else {
        panic!()
    };
    assert_eq!(
        acl,
        vec![Acl {
            perms: perms::ALL,
            scheme: "digest".into(),
            id: acl::digest_id("alice:secret")
        }]
    );
    // setACL checks ADMIN and aversion.
    let open = acl::open_acl();
    let set = |v| Request::SetAcl {
        path: "/priv".into(),
        acl: open.clone(),
        version: v,
    };
    assert_eq!(h.req(t, set(-1)), Err(NoAuth));
    assert_eq!(h.req(s, set(5)), Err(BadVersion));
    let Ok(Response::Stat(st)) = h.req(s, set(stat.aversion)) else {
        panic!()
    };
    assert_eq!((st.aversion, st.mzxid), (1, stat.mzxid));
    assert!(h.req(t, get_data("/priv", false)).is_ok());
    // Read without ADMIN: digests masked.
    let read_only = vec![
        Acl {
            perms: perms::READ,
            scheme: "digest".into(),
            id: acl::digest_id("alice:secret"),
        },
        Acl {
            perms: perms::READ,
            scheme: "world".into(),
            id: "anyone".into(),
        },
    ];
    h.req(
        s,
        Request::SetAcl {
            path: "/priv".into(),
            acl: read_only,
            version: -1,
        },
    )
    .unwrap();
    let Ok(Response::Acl { acl, .. }) = h.req(
        t,
        Request::GetAcl {
            path: "/priv".into(),
        },
    ) else {
        panic!()
    };
    assert_eq!(acl[0].id, "alice:x");
    assert_eq!(
        h.req(
            t,
            Request::SetAcl {
                path: "/priv".into(),
                acl: vec![Acl {
                    perms: 1,
                    scheme: "ip".into(),
                    id: "10.0.0.1".into()
                }],
                version: -1
            }
        ),
        Err(InvalidAcl)
    );
}

#[test]
fn containers_and_ttl_nodes_are_reaped() {
    let mut h = H::default();
    let s = h.open(1);
    h.create(s, "/c", b"", Container).unwrap();
    assert_eq!(h.stat(s, "/c").unwrap().ephemeral_owner, i64::MIN);
    h.wait(100);
    assert!(
        h.stat(s, "/c").is_some(),
        "a container that never had a child stays"
    );
    h.create(s, "/c/x", b"", Persistent).unwrap();
    h.req(s, delete("/c/x", -1)).unwrap();
    h.wait(1);
    assert!(h.stat(s, "/c").is_none());
    let ttl = |ms| Request::Create {
        path: "/t".into(),
        data: vec![],
        acl: acl::open_acl(),
        mode: PersistentWithTtl,
        ttl_ms: ms,
    };
    assert_eq!(h.req(s, ttl(0)), Err(BadArguments));
    assert_eq!(h.req(s, ttl(1 << 41)), Err(BadArguments));
    h.req(s, ttl(2_000)).unwrap();
    h.wait(1_000);
    assert!(h.stat(s, "/t").is_some());
    h.wait(1_500);
    assert!(h.stat(s, "/t").is_none());
}

#[test]
fn garbage_and_the_read_only_path() {
    let mut h = H::default();
    let s = h.open(1);
    let replies = h.batch(&[(1, vec![]), (1, vec![7, 1, 2]), (1, vec![1, 0xff, 0xff])]);
    assert!(replies.iter().all(|r| r.result == Err(Marshalling)));
    assert_eq!(
        Reply::decode(&h.app.execute_read_only(1, b"junk"))
            .unwrap()
            .result,
        Err(Marshalling)
    );
    h.create(s, "/a", b"v", Persistent).unwrap();
    let ro = |req| {
        CoordOp::Session {
            session: s,
            acked_events: 0,
            request: req,
        }
        .encode()
    };
    let r = Reply::decode(&h.app.execute_read_only(1, &ro(get_data("/a", false)))).unwrap();
    assert!(matches!(r.result, Ok(Response::Data { .. })));
    for mutating in [
        ro(get_data("/a", true)),
        ro(create("/b", b"", Persistent)),
        CoordOp::OpenSession { timeout_ms: 5000 }.encode(),
        CoordOp::Touch { sessions: vec![s] }.encode(),
    ] {
        let r = Reply::decode(&h.app.execute_read_only(1, &mutating)).unwrap();
        assert_eq!(r.result, Err(Unimplemented));
    }
    let dead = CoordOp::Session {
        session: SessionId(1),
        acked_events: 0,
        request: Request::PendingEvents,
    }
    .encode();
    assert_eq!(
        Reply::decode(&h.app.execute_read_only(1, &dead))
            .unwrap()
            .result,
        Err(SessionExpired)
    );
}

/// Replicas a write apart (the write on another node) answer a read-only read of an untouched
/// node with the same bytes: the reply carries no zxid, which is the whole tree's, or under
/// writes no read could be unanimous. A read of the written node differs, as it must.
#[test]
fn a_read_only_reply_is_the_same_a_write_elsewhere_apart() {
    let mut behind = H::default();
    let s = behind.open(1);
    behind.create(s, "/a", b"v", Persistent).unwrap();
    let mut ahead = H {
        app: behind.app.clone(),
        seq: behind.seq,
        time: behind.time,
        pushes: Vec::new(),
    };
    ahead.create(s, "/b", b"w", Persistent).unwrap();
    assert!(ahead.app.zxid() > behind.app.zxid());
    let ro = |path: &str| {
        CoordOp::Session {
            session: s,
            acked_events: 0,
            request: get_data(path, false),
        }
        .encode()
    };
    let answer = |h: &H, path: &str| h.app.execute_read_only(1, &ro(path));
    assert_eq!(answer(&behind, "/a"), answer(&ahead, "/a"));
    assert_ne!(answer(&behind, "/b"), answer(&ahead, "/b"));
    let r = Reply::decode(&answer(&ahead, "/a")).unwrap();
    assert!(matches!(r.result, Ok(Response::Data { .. })));
    assert_eq!(r.zxid, Zxid(0));
}

#[test]
fn checkpoints_round_trip_and_refuse_corruption() {
    let mut h = H::default();
    let s = h.open(1);
    h.create(s, "/a", b"x", Persistent).unwrap();
    h.create(s, "/a/e", b"", Ephemeral).unwrap();
    h.req(s, get_data("/a", true)).unwrap();
    h.req(
        s,
        Request::AddAuth {
            scheme: "digest".into(),
            auth: b"u:p".to_vec(),
        },
    )
    .unwrap();
    let cp = h.app.take_checkpoint();
    let mut other = CoordApp::new();
    other.load_checkpoint(&cp).unwrap();
    assert_eq!(other, h.app);
    assert_eq!(other.state_digest(), h.app.state_digest());
    assert!(other.load_checkpoint(&[]).is_err());
    assert!(other.load_checkpoint(&cp[..cp.len() - 1]).is_err());
    let mut longer = cp.clone();
    longer.push(0);
    assert!(other.load_checkpoint(&longer).is_err());
    for i in 1..cp.len() {
        let mut bad = cp.clone();
        bad[i] ^= 0x40;
        // Never a panic; a corrupted checkpoint that happens to decode is a valid state.
        if other.load_checkpoint(&bad).is_ok() {
            assert_eq!(other.take_checkpoint(), bad);
        }
    }
}

/// Expiry looks at every session only when a bound of their deadlines has passed: whatever
/// opens, resumes (with shorter or longer timeouts), touches, requests and checkpoint loads
/// happen, after every batch no live session is past its timeout, and a session goes no
/// earlier than its timeout.
#[test]
fn sessions_expire_exactly_on_time_whatever_was_looked_at_when() {
    let mut h = H::default();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut known: Vec<(SessionId, [u8; 16])> = Vec::new();
    let mut expired = 0;
    for step in 0..3000 {
        h.time += next(1500) * 1000;
        let timeout = MIN_SESSION_TIMEOUT_MS + next(8000) as i32;
        let before: Vec<(SessionId, session::Session)> = h
            .app
            .sessions()
            .iter()
            .map(|(id, s)| (*id, s.clone()))
            .collect();
        let pick = |k: u64| known.get(k as usize % known.len().max(1)).copied();
        match next(6) {
            0 if known.len() < 40 || step % 50 == 0 => known.push(h.open_with(1, timeout)),
            1 => {
                if let Some((session, password)) = pick(next(1000)) {
                    h.run(
                        2,
                        CoordOp::ResumeSession {
                            session,
                            password,
                            timeout_ms: timeout,
                        },
                    );
                }
            }
            2 => {
                let sessions = known
                    .iter()
                    .filter(|_| next(3) == 0)
                    .map(|(s, _)| *s)
                    .collect();
                h.run(3, CoordOp::Touch { sessions });
            }
            3 => {
                if let Some((s, _)) = pick(next(1000)) {
                    let _ = h.req(s, Request::Sync { path: "/".into() });
                }
            }
            4 if step % 7 == 0 => {
                let bytes = h.app.take_checkpoint();
                h.app.load_checkpoint(&bytes).unwrap();
                h.batch(&[]);
            }
            _ => {
                h.batch(&[]);
            }
        }
        for (id, s) in h.app.sessions() {
            assert!(
                !s.expired_at(h.time),
                "step {step}: {id:?} outlived its timeout"
            );
        }
        // The batch's time is the harness's: whoever went had expired by then (a session
        // the batch heard of first counts as heard of at this time).
        for (id, s) in &before {
            if !h.app.sessions().contains_key(id) {
                expired += 1;
                assert!(s.expired_at(h.time), "step {step}: {id:?} went early");
            }
        }
        known.retain(|(s, _)| h.app.sessions().contains_key(s));
    }
    assert!(expired > 50, "only {expired} sessions expired: a weak test");
}
