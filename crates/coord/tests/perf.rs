//! A micro-benchmark of the coordination application's execution, ignored by default:
//! `cargo test --release -p plumb-coord --test perf -- --ignored --nocapture`.
//!
//! 1000 sessions (one per client identity), 1000 znodes of 1 KiB, then batches of 16
//! `setData` of 1 KiB (the bench's `zk-set-1k`) with a `Touch` of every session every 64
//! batches, as the gateway sends. It prints the time per operation of execution alone, and of
//! the state digest and checkpoint the execution stage takes every 128 batches.

use plumb_app::{Application, Command, NonDeterminism};
use plumb_coord::*;
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
    let start = Instant::now();
    for b in 0..BATCHES {
        let out = run(&mut app, &ops[b % ops.len()]);
        assert_eq!(out.replies.len(), BATCH);
        if b % 64 == 63 {
            run(&mut app, &touch);
        }
    }
    let exec = start.elapsed();
    let per_op = exec.as_nanos() as f64 / (BATCHES * BATCH) as f64 / 1000.0;
    let start = Instant::now();
    let rounds = 20;
    let mut len = 0;
    for _ in 0..rounds {
        len = app.take_checkpoint().len();
        std::hint::black_box(app.state_digest());
    }
    let cp = start.elapsed() / rounds;
    println!(
        "execute: {per_op:.2} µs per setData ({BATCH} per batch, {SESSIONS} sessions, {NODES} nodes of 1 KiB)"
    );
    println!(
        "checkpoint + digest: {:.2} ms per checkpoint ({len} bytes), {:.2} µs per op at one per 128 batches",
        cp.as_secs_f64() * 1000.0,
        cp.as_secs_f64() * 1e6 / (128 * BATCH) as f64
    );
}
