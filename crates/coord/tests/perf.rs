//! A micro-benchmark of the coordination application's execution, ignored by default:
//! `cargo test --release -p plumb-coord --test perf -- --ignored --nocapture`.
//!
//! 1000 sessions (one per client identity), 1000 znodes of 1 KiB, then batches of 16
//! `setData` of 1 KiB (the bench's `zk-set-1k`) with a `Touch` of every session every 64
//! batches, as the gateway sends. It prints the time per operation of execution alone, of
//! taking the batch's written objects and hashing them (what the execution stage does after
//! every batch, for its report and tree), and of the metadata a checkpoint takes every 128
//! batches. `create_under_one_parent` shows what a parent with many children costs: its bucket
//! holds their names and is written again by every create under it.

use plumb_app::{Application, Command, NonDeterminism, ObjectState};
use plumb_coord::*;
use plumb_crypto::Digest;
use plumb_wire::{Life, ReqNo, Seq};
use std::time::Instant;

const SESSIONS: usize = 1000;
const NODES: usize = 1000;
const BATCH: usize = 16;
const BATCHES: usize = 20_000;

#[test]
#[ignore]
fn execute_set_1k() {
    let mut app = CoordApp::new();
    let mut seq = 0u64;
    let mut time = 1_000_000_000u64;
    let mut run = |app: &mut CoordApp, cmds: &[(u32, Vec<u8>)]| {
        seq += 1;
        time += 1000;
        let batch: Vec<Command<'_>> = cmds
            .iter()
            .enumerate()
            .map(|(i, (client, op))| Command::new(*client, Life(0), ReqNo(i as u64), op))
            .collect();
        app.execute(Seq(seq), &batch, NonDeterminism { time, seed: seq })
    };
    let mut sessions = Vec::new();
    for c in 0..SESSIONS as u32 {
        let out = run(
            &mut app,
            &[(c, CoordOp::OpenSession { timeout_ms: 30_000 }.encode())],
        );
        match Reply::decode(&out.replies[0]).unwrap().result {
            Ok(Response::Session { session, .. }) => sessions.push(session),
            other => panic!("{other:?}"),
        }
    }
    let data = vec![7u8; 1024];
    for n in 0..NODES {
        let s = sessions[n % SESSIONS];
        let op = CoordOp::Session {
            session: s,
            acked_events: 0,
            request: Request::Create {
                path: format!("/n{n}"),
                data: data.clone(),
                acl: plumb_coord::acl::open_acl(),
                mode: CreateMode::Persistent,
                ttl_ms: 0,
            },
        };
        let out = run(&mut app, &[((n % SESSIONS) as u32, op.encode())]);
        assert!(Reply::decode(&out.replies[0]).unwrap().result.is_ok());
    }
    let ops: Vec<Vec<(u32, Vec<u8>)>> = (0..64)
        .map(|b| {
            (0..BATCH)
                .map(|i| {
                    let k = (b * BATCH + i) % SESSIONS;
                    let op = CoordOp::Session {
                        session: sessions[k],
                        acked_events: 0,
                        request: Request::SetData {
                            path: format!("/n{}", (b * 31 + i * 7) % NODES),
                            data: data.clone(),
                            version: -1,
                        },
                    };
                    (k as u32, op.encode())
                })
                .collect()
        })
        .collect();
    let touch = vec![(
        0u32,
        CoordOp::Touch {
            sessions: sessions.clone(),
        }
        .encode(),
    )];
    let _ = app.take_changed_objects();
    let (mut exec, mut objects) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    for b in 0..BATCHES {
        let start = Instant::now();
        let out = run(&mut app, &ops[b % ops.len()]);
        assert_eq!(out.replies.len(), BATCH);
        if b % 64 == 63 {
            run(&mut app, &touch);
        }
        exec += start.elapsed();
        let start = Instant::now();
        take_and_hash(&mut app);
        objects += start.elapsed();
    }
    let per_op = |d: std::time::Duration| d.as_nanos() as f64 / (BATCHES * BATCH) as f64 / 1000.0;
    let start = Instant::now();
    let rounds = 20;
    let mut len = 0;
    for _ in 0..rounds {
        len = std::hint::black_box(app.object_metadata()).len();
    }
    let cp = start.elapsed() / rounds;
    println!(
        "execute: {:.2} µs per setData ({BATCH} per batch, {SESSIONS} sessions, {NODES} nodes of 1 KiB)",
        per_op(exec)
    );
    println!(
        "written objects taken and hashed: {:.2} µs per setData",
        per_op(objects)
    );
    println!(
        "metadata: {:.2} ms per checkpoint ({len} bytes), {:.2} µs per op at one per 128 batches",
        cp.as_secs_f64() * 1000.0,
        cp.as_secs_f64() * 1e6 / (128 * BATCH) as f64
    );
}

/// What the execution stage does after each batch: take the written objects, hash each.
fn take_and_hash(app: &mut CoordApp) {
    for (_, bytes) in app.take_changed_objects() {
        std::hint::black_box(Digest::of(bytes.as_deref().unwrap_or_default()));
    }
}

/// 64 000 creates of 16-byte nodes under one parent, 16 per batch (the bench's `zk-create`):
/// execution and the written objects per create, by how many children the parent has.
#[test]
#[ignore]
fn create_under_one_parent() {
    let mut app = CoordApp::new();
    let nd = |seq: u64| NonDeterminism {
        time: 1_000_000_000 + seq * 1000,
        seed: seq,
    };
    let open = CoordOp::OpenSession { timeout_ms: 30_000 }.encode();
    let out = app.execute(Seq(1), &[Command::new(0, Life(0), ReqNo(0), &open)], nd(1));
    let Ok(Response::Session { session, .. }) = Reply::decode(&out.replies[0]).unwrap().result
    else {
        panic!("no session");
    };
    let create = |path: String| {
        CoordOp::Session {
            session,
            acked_events: 0,
            request: Request::Create {
                path,
                data: vec![7; 16],
                acl: plumb_coord::acl::open_acl(),
                mode: CreateMode::Persistent,
                ttl_ms: 0,
            },
        }
        .encode()
    };
    app.execute(
        Seq(2),
        &[Command::new(0, Life(0), ReqNo(1), &create("/d".into()))],
        nd(2),
    );
    let _ = app.take_changed_objects();
    let mut n = 0;
    for round in 0..4 {
        let (mut exec, mut objects) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
        for b in 0..1000u64 {
            let seq = 3 + round * 1000 + b;
            let ops: Vec<Vec<u8>> = (0..BATCH)
                .map(|_| {
                    n += 1;
                    create(format!("/d/new-{n}"))
                })
                .collect();
            let cmds: Vec<Command<'_>> = ops
                .iter()
                .map(|op| Command::new(0, Life(0), ReqNo(seq), op))
                .collect();
            let start = Instant::now();
            app.execute(Seq(seq), &cmds, nd(seq));
            exec += start.elapsed();
            let start = Instant::now();
            take_and_hash(&mut app);
            objects += start.elapsed();
        }
        let per = |d: std::time::Duration| d.as_nanos() as f64 / (1000 * BATCH) as f64 / 1000.0;
        println!(
            "children {:>6}..{n:>6}: execute {:.2} µs, written objects taken and hashed {:.2} µs per create",
            n - 1000 * BATCH as u64 + 1 - 1,
            per(exec),
            per(objects)
        );
    }
}
