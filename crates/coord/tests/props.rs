//! Properties: decoders are total, checkpoints round-trip, execution is deterministic and keeps
//! the tree's invariants, the state as objects round-trips and every batch runs alike on just
//! the objects of its access set.

use plumb_app::{Application, BatchOutput, Command, NonDeterminism, ObjectState};
use plumb_coord::*;
use plumb_wire::{Life, ReqNo, Seq};
use proptest::prelude::*;

const PATHS: [&str; 8] = [
    "/a",
    "/a/b",
    "/a/b/c",
    "/b",
    "/a/",
    "/b/x",
    "/",
    "/zookeeper",
];

/// An operation from five random bytes, over the sessions opened so far.
fn op_of(bytes: [u8; 5], sessions: &[SessionId]) -> CoordOp {
    let [kind, p, s, arg, acked] = bytes;
    let path = PATHS[p as usize % PATHS.len()].to_string();
    let session = if sessions.is_empty() || s == 255 {
        SessionId(i64::from(s))
    } else {
        sessions[s as usize % sessions.len()]
    };
    let version = i32::from(arg % 4) - 1;
    let mode = CreateMode::from_flag(i32::from(arg % 7)).unwrap_or(CreateMode::Persistent);
    let data = vec![arg; usize::from(arg % 3)];
    let create = MultiOp::Create {
        path: path.clone(),
        data: data.clone(),
        acl: acl::open_acl(),
        mode,
        ttl_ms: i64::from(arg) * 10,
    };
    let request = match kind % 16 {
        0 | 1 => Request::Create {
            path,
            data,
            acl: acl::open_acl(),
            mode,
            ttl_ms: i64::from(arg) * 10,
        },
        2 => Request::Delete { path, version },
        3 => Request::SetData {
            path,
            data,
            version,
        },
        4 => Request::Exists {
            path,
            watch: arg % 2 == 0,
        },
        5 => Request::GetData {
            path,
            watch: arg % 2 == 0,
        },
        6 => Request::GetChildren {
            path,
            watch: arg % 2 == 0,
        },
        7 => Request::Multi(vec![
            create,
            MultiOp::SetData {
                path: "/a".into(),
                data: vec![],
                version,
            },
            MultiOp::Delete {
                path: "/b/x".into(),
                version: -1,
            },
        ]),
        8 => Request::AddWatch {
            path,
            mode: if arg % 2 == 0 {
                AddWatchMode::Persistent
            } else {
                AddWatchMode::PersistentRecursive
            },
        },
        9 => Request::RemoveWatches {
            path,
            kind: WatchKind::Any,
        },
        10 => Request::PendingEvents,
        11 => Request::SetAcl {
            path,
            acl: acl::open_acl(),
            version,
        },
        _ => {
            return match kind % 4 {
                0 => CoordOp::OpenSession { timeout_ms: 4000 },
                1 => CoordOp::CloseSession { session },
                2 => CoordOp::Touch {
                    sessions: vec![session],
                },
                _ => CoordOp::Session {
                    session,
                    acked_events: u64::from(acked),
                    request: Request::SetWatches {
                        relative_zxid: Zxid(i64::from(arg)),
                        data: vec![path.clone()],
                        exist: vec![path.clone()],
                        child: vec![path],
                        persistent: vec![],
                        persistent_recursive: vec![],
                    },
                },
            }
        }
    };
    CoordOp::Session {
        session,
        acked_events: u64::from(acked % 8),
        request,
    }
}

/// Run `batches` (each: time step in ms and operations) on a fresh app.
fn run(batches: &[(u16, Vec<[u8; 5]>)]) -> (CoordApp, Vec<BatchOutput>) {
    let mut app = CoordApp::new();
    let outputs = drive(&mut app, batches, |app, seq, cmds, nd| {
        app.execute(seq, cmds, nd)
    });
    (app, outputs)
}

/// Run `batches` on `app`, each through `step` (which executes it and returns its output),
/// with the operations over the sessions opened so far.
fn drive(
    app: &mut CoordApp,
    batches: &[(u16, Vec<[u8; 5]>)],
    mut step: impl FnMut(&mut CoordApp, Seq, &[Command<'_>], NonDeterminism) -> BatchOutput,
) -> Vec<BatchOutput> {
    let mut sessions = Vec::new();
    let mut time = 1_000_000_000u64;
    let mut outputs = Vec::new();
    for (seq, (dt, ops)) in batches.iter().enumerate() {
        time += u64::from(*dt) * 1000 + 1;
        let ops: Vec<Vec<u8>> = ops.iter().map(|b| op_of(*b, &sessions).encode()).collect();
        let cmds: Vec<Command<'_>> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| Command::new((i % 3) as u32, Life(0), ReqNo(i as u64), op))
            .collect();
        let nd = NonDeterminism {
            time,
            seed: seq as u64 * 7919,
        };
        let out = step(app, Seq(seq as u64 + 1), &cmds, nd);
        for r in &out.replies {
            if let Ok(Reply {
                result: Ok(Response::Session { session, .. }),
                ..
            }) = Reply::decode(r)
            {
                sessions.push(session);
            }
        }
        outputs.push(out);
    }
    outputs
}

fn batches() -> impl Strategy<Value = Vec<(u16, Vec<[u8; 5]>)>> {
    prop::collection::vec(
        (0u16..6000, prop::collection::vec(any::<[u8; 5]>(), 0..6)),
        1..25,
    )
}

fn invariants(app: &CoordApp) {
    assert!(app.tree().indexes_match());
    for (p, n) in app.tree().nodes() {
        assert_eq!(
            n.stat.num_children as usize,
            app.tree().children_of(p).len(),
            "{p}"
        );
        assert!(n.stat.pzxid >= n.stat.czxid, "{p}");
        assert!(
            n.stat.mzxid >= n.stat.czxid && n.stat.mzxid <= app.zxid().0,
            "{p}"
        );
        if let tree::NodeKind::Ephemeral(s) = n.kind() {
            assert!(
                app.sessions().contains_key(&s),
                "{p}: ephemeral of a dead session"
            );
            assert_eq!(n.stat.num_children, 0);
        }
        if p != "/" {
            assert!(app.tree().get(path::parent(p)).is_some(), "{p}: orphan");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn decoders_are_total(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = CoordOp::decode(&bytes);
        let _ = Reply::decode(&bytes);
        let _ = Push::decode(&bytes);
        let _ = CoordApp::from_canonical_bytes(&bytes);
        let app = CoordApp::new();
        let r = Reply::decode(&app.execute_read_only(0, &bytes)).unwrap();
        if CoordOp::decode(&bytes).is_err() {
            prop_assert_eq!(r.result, Err(ErrorCode::Marshalling));
        }
    }

    #[test]
    fn versioned_garbage_decodes_or_errs(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut op = vec![OP_VERSION];
        op.extend_from_slice(&bytes);
        if let Ok(decoded) = CoordOp::decode(&op) {
            prop_assert_eq!(CoordOp::decode(&decoded.encode()).unwrap(), decoded);
        }
        let mut app = CoordApp::new();
        let out = app.execute(Seq(1), &[Command::new(0, Life(0), ReqNo(0), &op)], NonDeterminism { time: 5, seed: 1 });
        prop_assert!(Reply::decode(&out.replies[0]).is_ok());
    }

    #[test]
    fn execution_is_deterministic_and_checkpoints_round_trip(batches in batches()) {
        let (mut a, out_a) = run(&batches);
        let (b, out_b) = run(&batches);
        prop_assert_eq!(&out_a, &out_b);
        prop_assert_eq!(a.state_digest(), b.state_digest());
        invariants(&a);
        let cp = a.take_checkpoint();
        let mut c = CoordApp::new();
        c.load_checkpoint(&cp).unwrap();
        prop_assert_eq!(&c, &a);
        prop_assert_eq!(c.take_checkpoint(), cp);
        for out in &out_a {
            for (_, p) in &out.pushes {
                prop_assert!(Push::decode(p).is_ok());
            }
        }
    }

    /// A checkpoint taken midway and loaded elsewhere continues exactly like the original.
    #[test]
    fn a_loaded_checkpoint_continues_alike(batches in batches(), cut in 0usize..25) {
        let cut = cut.min(batches.len());
        let (mut first, _) = run(&batches[..cut]);
        let mut second = CoordApp::new();
        second.load_checkpoint(&first.take_checkpoint()).unwrap();
        let sessions: Vec<SessionId> = first.sessions().keys().copied().collect();
        let mut time = 2_000_000_000u64;
        for (i, (step, ops)) in batches[cut..].iter().enumerate() {
            time += u64::from(*step) * 1000 + 1;
            let ops: Vec<Vec<u8>> = ops.iter().map(|b| op_of(*b, &sessions).encode()).collect();
            let cmds: Vec<Command<'_>> = ops.iter().map(|op| Command::new(1, Life(0), ReqNo(0), op)).collect();
            let nd = NonDeterminism { time, seed: i as u64 };
            prop_assert_eq!(first.execute(Seq(i as u64), &cmds, nd), second.execute(Seq(i as u64), &cmds, nd));
        }
        prop_assert_eq!(first.state_digest(), second.state_digest());
    }
}

proptest! {
    // The cases that break a wrong access set are rare (two sequential creates under one parent
    // in a batch, a session expiring with an ephemeral under a container): a mutation of either
    // rule was caught within 20 000 cases, so the test runs more cases than the others.
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// A batch runs alike on a fresh instance holding only the objects of its access set and
    /// the metadata (what a replica loading on demand holds after fetching them): the same
    /// replies and pushes, the same objects written, none outside the set. The indexes stay
    /// what the nodes give, and the whole state as objects loads back equal.
    #[test]
    fn batches_run_alike_on_their_access_sets(batches in batches()) {
        let mut whole = CoordApp::new();
        let _ = whole.take_changed_objects();
        drive(&mut whole, &batches, |whole, seq, cmds, nd| {
            let ops: Vec<&[u8]> = cmds.iter().map(|c| c.op).collect();
            let set = whole.batch_access_set(&ops, nd.time);
            let mut part = set.ids().map(|ids| holding(whole, ids));
            let out = whole.execute(seq, cmds, nd);
            let written = whole.take_changed_objects();
            assert!(whole.tree().indexes_match(), "batch {seq}: indexes");
            if let Some(part) = part.as_mut() {
                assert_eq!(part.execute(seq, cmds, nd), out, "batch {seq}");
                for (id, bytes) in &written {
                    assert!(set.contains(*id), "batch {seq}: bucket {} outside {set:?}", id.0);
                    assert_eq!(&part.bucket_bytes(*id), bytes, "batch {seq}");
                }
            }
            out
        });
        // Every node's bucket and every chunk of its children.
        let ids: Vec<plumb_app::ObjectId> = whole
            .tree()
            .nodes()
            .iter()
            .flat_map(|(p, n)| {
                (0..1u32 << n.chunk_bits)
                    .map(|c| tree::chunk_object(p, c as u16))
                    .chain([tree::bucket_of(p)])
            })
            .collect();
        let copy = holding(&whole, &ids);
        prop_assert_eq!(&copy, &whole);
    }
}

/// A fresh instance holding objects `ids` of `whole` and its metadata.
fn holding(whole: &CoordApp, ids: &[plumb_app::ObjectId]) -> CoordApp {
    let mut part = CoordApp::new();
    for (id, _) in part.take_changed_objects() {
        part.load_object(id, None).unwrap();
    }
    for id in ids {
        part.load_object(*id, whole.bucket_bytes(*id).as_deref())
            .unwrap();
    }
    part.load_object_metadata(&whole.object_metadata()).unwrap();
    part
}

/// The session an `OpenSession` batch's first reply opened.
fn session_opened(out: &BatchOutput) -> SessionId {
    match Reply::decode(&out.replies[0]).map(|r| r.result) {
        Ok(Ok(Response::Session { session, .. })) => session,
        other => panic!("no session: {other:?}"),
    }
}

/// `request` in `session`, encoded.
fn in_session(session: SessionId, request: Request) -> Vec<u8> {
    CoordOp::Session {
        session,
        acked_events: 0,
        request,
    }
    .encode()
}

/// A persistent node with no data at `path`.
fn create_request(path: String) -> Request {
    Request::Create {
        path,
        data: vec![],
        acl: acl::open_acl(),
        mode: CreateMode::Persistent,
        ttl_ms: 0,
    }
}

/// A parent with children in every chunk: `getChildren` on just its access set's objects
/// lists them all (an access set missing any chunk of the children lists fewer).
#[test]
fn get_children_reads_every_chunk() {
    let mut app = CoordApp::new();
    let nd = NonDeterminism {
        time: 1_000_000_000,
        seed: 1,
    };
    let open = CoordOp::OpenSession { timeout_ms: 30_000 }.encode();
    let out = app.execute(Seq(1), &[Command::new(0, Life(0), ReqNo(0), &open)], nd);
    let session = session_opened(&out);
    let request = |request: Request| in_session(session, request);
    let create = |path: String| request(create_request(path));
    let ops: Vec<Vec<u8>> = std::iter::once(create("/p".into()))
        .chain((0..400).map(|i| create(format!("/p/c{i}"))))
        .collect();
    let cmds: Vec<Command<'_>> = ops
        .iter()
        .map(|op| Command::new(0, Life(0), ReqNo(1), op))
        .collect();
    app.execute(Seq(2), &cmds, nd);
    let read = request(Request::GetChildren {
        path: "/p".into(),
        watch: false,
    });
    let ids = app.access_set(&read).ids().unwrap().to_vec();
    let mut part = holding(&app, &ids);
    let cmd = [Command::new(0, Life(0), ReqNo(2), &read)];
    let whole = app.execute(Seq(3), &cmd, nd);
    assert_eq!(part.execute(Seq(3), &cmd, nd), whole);
    let Ok(Response::Children { children, .. }) = Reply::decode(&whole.replies[0]).unwrap().result
    else {
        panic!("no children");
    };
    assert_eq!(children.len(), 400);
}

/// A parent whose children pass the first doubling of its chunks (8 192): a multi that would
/// double them and fails leaves them as they were, the create that doubles them and the
/// `getChildren` after it in the batch, and a batch that deletes the last children and creates
/// one again (back to the fewest chunks), each run alike on just their batch's access set, and the
/// tree's invariants hold after each.
#[test]
fn a_parent_that_doubles_its_chunks_runs_alike_on_access_sets() {
    let mut whole = CoordApp::new();
    let _ = whole.take_changed_objects();
    let mut seq = 0u64;
    let nd = |seq: u64| NonDeterminism {
        time: 1_000_000_000 + seq * 1000,
        seed: seq,
    };
    // Each batch runs on the whole state and on a copy holding its access set's objects.
    let mut batch = |whole: &mut CoordApp, ops: &[Vec<u8>], check: bool| {
        seq += 1;
        let cmds: Vec<Command<'_>> = ops
            .iter()
            .enumerate()
            .map(|(i, op)| Command::new(0, Life(0), ReqNo(seq * 100_000 + i as u64), op))
            .collect();
        let refs: Vec<&[u8]> = ops.iter().map(|o| o.as_slice()).collect();
        let set = whole.batch_access_set(&refs, nd(seq).time);
        let mut part = check.then(|| holding(whole, set.ids().expect("objects named")));
        let out = whole.execute(Seq(seq), &cmds, nd(seq));
        let written = whole.take_changed_objects();
        if let Some(part) = part.as_mut() {
            assert_eq!(part.execute(Seq(seq), &cmds, nd(seq)), out, "batch {seq}");
            for (id, bytes) in &written {
                assert!(
                    set.contains(*id),
                    "batch {seq}: object {} outside the set",
                    id.0
                );
                assert_eq!(&part.bucket_bytes(*id), bytes, "batch {seq}");
            }
            assert!(whole.tree().indexes_match(), "batch {seq}: indexes");
        }
        out
    };
    let open = CoordOp::OpenSession { timeout_ms: 30_000 }.encode();
    let out = batch(&mut whole, &[open], true);
    let session = session_opened(&out);
    let request = |request: Request| in_session(session, request);
    let create_op = |path: String| {
        create_request(path)
            .as_write()
            .expect("a create is a write")
    };
    let create = |path: String| request(create_request(path));
    let delete = |path: String| request(Request::Delete { path, version: -1 });
    let children = |path: &str| {
        request(Request::GetChildren {
            path: path.into(),
            watch: false,
        })
    };
    let bits = |app: &CoordApp| app.tree().get("/p").unwrap().chunk_bits;
    batch(&mut whole, &[create("/p".into())], true);
    let doubling = (tree::NAMES_PER_CHUNK << tree::MIN_CHUNK_BITS) as usize;
    for from in (0..doubling - 10).step_by(1000) {
        let ops: Vec<Vec<u8>> = (from..(from + 1000).min(doubling - 10))
            .map(|i| create(format!("/p/c{i}")))
            .collect();
        batch(&mut whole, &ops, false);
    }
    assert_eq!(bits(&whole), tree::MIN_CHUNK_BITS);
    // A multi that passes the threshold, then fails on its last operation.
    let failing = request(Request::Multi(
        (0..20)
            .map(|i| create_op(format!("/p/m{i}")))
            .chain([MultiOp::Check {
                path: "/p".into(),
                version: 12345,
            }])
            .collect(),
    ));
    batch(&mut whole, &[failing], true);
    assert_eq!(bits(&whole), tree::MIN_CHUNK_BITS, "a rolled back multi");
    // Creates that pass it (one of an existing name, which fails), a delete, and the children.
    let ops: Vec<Vec<u8>> = [create("/p/c1".into()), delete("/p/c2".into())]
        .into_iter()
        .chain((0..20).map(|i| create(format!("/p/n{i}"))))
        .chain([delete("/p/c3".into()), children("/p")])
        .collect();
    let out = batch(&mut whole, &ops, true);
    assert_eq!(bits(&whole), tree::MIN_CHUNK_BITS + 1, "doubled");
    let Ok(Response::Children {
        children: names, ..
    }) = Reply::decode(out.replies.last().unwrap()).unwrap().result
    else {
        panic!("no children");
    };
    assert_eq!(names.len(), doubling - 10 - 2 + 20);
    // All but three children deleted (the chunks stay doubled), then those three deleted and
    // one created again in one batch: back to the fewest chunks, the new name in its chunk at
    // the fewest, which the batch's other operations do not name.
    let names = whole.tree().children_of("/p");
    for part in names[3..].chunks(1000) {
        let ops: Vec<Vec<u8>> = part.iter().map(|n| delete(format!("/p/{n}"))).collect();
        batch(&mut whole, &ops, false);
    }
    assert_eq!(bits(&whole), tree::MIN_CHUNK_BITS + 1, "chunks never merge");
    let ops: Vec<Vec<u8>> = names[..3]
        .iter()
        .map(|n| delete(format!("/p/{n}")))
        .chain([create("/p/again".into())])
        .collect();
    batch(&mut whole, &ops, true);
    assert_eq!(bits(&whole), tree::MIN_CHUNK_BITS, "back to the fewest");
    assert_eq!(whole.tree().children_of("/p"), vec!["again".to_string()]);
}
