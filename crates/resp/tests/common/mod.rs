//! A gateway connection the test files share: plumb's planner, session and store, one
//! request per batch. Each test file is its own crate and uses only some of it, so the rest
//! would be dead code there.
#![allow(dead_code)]

use plumb_app::{Application, Command, NonDeterminism};
use plumb_kv::{KvOp, KvResult, KvStore};
use plumb_resp::*;
use plumb_wire::{Life, ReqNo, Seq};

/// A store the gateway talks to: each request is one batch at a fixed agreed time, and the
/// connection's session and server info as the gateway keeps them.
pub struct Gateway {
    pub store: KvStore,
    pub time: u64,
    pub info: ServerInfo,
    pub session: Session,
}

impl Gateway {
    pub fn new(info: ServerInfo) -> Gateway {
        Gateway {
            store: KvStore::new(),
            // Agreed time is wall-clock time: 2025-11-25, when the transcripts were recorded
            // (absolute expiries compare with it).
            time: 1_764_093_000_000_000,
            info,
            session: Session::default(),
        }
    }

    pub fn execute(&mut self, op: &KvOp) -> KvResult {
        let bytes = op.encode();
        let cmd = Command::new(1, Life(0), ReqNo(1), &bytes);
        let nd = NonDeterminism {
            time: self.time,
            seed: 1,
        };
        let out = self.store.execute(Seq(1), &[cmd], nd);
        KvResult::decode(&out.replies[0]).unwrap()
    }

    /// The reply to one command, as the gateway answers it (a `HELLO` switches the
    /// connection's protocol, see [`Gateway::reply_bytes`]).
    pub fn run_args(&mut self, args: &[Vec<u8>]) -> Resp {
        match self.session.step(plan(args, &self.info)) {
            Step::Plan(Plan::Reply(r) | Plan::Close(r) | Plan::Reject(r)) => r,
            Step::Plan(Plan::Hello {
                protocol,
                name,
                reply,
            }) => {
                self.info.protocol = protocol;
                if let Some(name) = name {
                    self.info.client_name = name;
                }
                reply
            }
            Step::Plan(Plan::SetName { name, reply }) => {
                self.info.client_name = name;
                reply
            }
            Step::Plan(Plan::Info { text, keyspace }) => {
                let text = if keyspace {
                    let stats = self.execute(&KvOp::KeyspaceStats);
                    keyspace_section(&text, &stats)
                } else {
                    text
                };
                Resp::Verbatim("txt", text)
            }
            Step::Plan(Plan::Submit {
                op, render: how, ..
            }) => {
                let result = self.execute(&op);
                render(&how, result)
            }
            // A blocking command once, as if its timeout passed at once (the gateway's
            // reply then is the null array).
            Step::Plan(Plan::Block {
                op, render: how, ..
            }) => match self.execute(&op) {
                KvResult::Nil | KvResult::Value(None) => Resp::Array(None),
                result => render(&how, result),
            },
            Step::Plan(other) => panic!("the session left {other:?}"),
            Step::Watch { op, keys } => {
                let result = self.execute(&op);
                self.session.watched(keys, result)
            }
            Step::Exec { op, slots, .. } => {
                let result = self.execute(&op);
                exec_reply(&slots, result)
            }
        }
    }

    /// The reply to one command as the gateway encodes it: in the protocol in force after
    /// the command (a `HELLO` answers in the protocol it switches to).
    pub fn reply_bytes(&mut self, args: &[Vec<u8>]) -> Vec<u8> {
        let reply = self.run_args(args);
        reply.to_bytes_as(self.info.protocol)
    }

    /// The reply to one inline command line.
    pub fn run(&mut self, line: &str) -> Resp {
        self.run_args(&inline(line.as_bytes()))
    }

    /// Run a recorded session line by line (inline commands), comparing every reply's bytes.
    pub fn replay(&mut self, transcript: &[(&[u8], &[u8])]) {
        for (line, expected) in transcript {
            let got = self.reply_bytes(&inline(line));
            assert_eq!(
                got.escape_ascii().to_string(),
                expected.escape_ascii().to_string(),
                "{}",
                line.escape_ascii()
            );
        }
    }
}

/// An inline command line's arguments.
pub fn inline(line: &[u8]) -> Vec<Vec<u8>> {
    split_args(line).expect("balanced quotes")
}
