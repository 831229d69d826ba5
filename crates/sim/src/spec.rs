//! Client speculation under simulation (seed 001, PBFT-CS; `plumb sim --app spec`): the
//! execution replicas run `Speculative<SpecBench>` (the speculation shim around the counter and
//! file service), some correct clients form speculative sessions (`world/speculating.rs`) that
//! go on with early and predicted replies and send predicated requests, the others send plain
//! requests in the envelope; and the checks:
//!
//! - linearizability of every confirmed (agreed) result against [`SpecModel`], in which a
//!   request answered `Aborted` or `Retry` is a no-op;
//! - **SPEC-predicate**: in the agreed history, a request one of whose predicates names a
//!   request whose agreed reply differs (or that was not executed before it) was answered
//!   `Aborted` or `Retry`: a request whose predicate failed had no effect;
//! - **SPEC-rollback** (`world/speculating.rs`): every operation a session's tracker rolled
//!   back came back `Aborted` or `Retry`;
//! - the simulator's own state and reply checks on every correct execution replica, including
//!   the one that executes early: early execution must not leak into replicated state.
//!
//! The shim truncates its reply log every [`TRUNCATE_EVERY`] batches, so that `Retry` happens
//! in runs. Counters are the seed's objects by index; files live under `/d`.
//!
//! Unlike the applications' adapters, which their own crates own (`plumb_kv::sim::Kv`, ...),
//! this one lives in the simulator, because of what it depends on: speculation is a capability
//! of the simulated world, not an application. The sessions this workload plans
//! ([`SessionPlan`] in the seed's configuration) are driven by `world/speculating.rs`, which
//! chains the counter's increments by the tokens this module derives ([`token_at`]) and mixes
//! in its file operations ([`random_file_op`]); and the simulator depends on plumb-speculation
//! for those sessions (its client tracker), so plumb-speculation cannot own an adapter that
//! depends on the simulator without a cycle.

use crate::app::{AppViolation, Executed, OpRecord, SimApp};
use crate::config::{SessionPlan, SimConfig, MAX_CLIENTS};
use crate::rng::SimRng;
use plumb_adversary::{AppForgery, Behaviour, EARLY_LIE_PERCENTS};
use plumb_app::{Application, Command, NonDeterminism};
use plumb_crypto::Digest;
use plumb_lincheck::Model;
use plumb_speculation::app::{
    create_op, incr_op, list_op, next_token, read_op, write_op, IncrReply,
};
use plumb_speculation::{answer_digest, SpecBench, SpecOp, SpecReply, Speculative};
use plumb_wire::{ClientId, ExecId, Life, Principal, ReqNo, Seq};
use std::collections::HashMap;
use std::sync::Arc;

/// Batches between two truncations of the replicas' reply log: small, so that a request
/// depending on one committed a few batches earlier is answered `Retry` now and then.
pub const TRUNCATE_EVERY: u64 = 4;

const INCR: u8 = 0;
const READ: u8 = 3;
const LIST: u8 = 4;

/// `Speculative<SpecBench>` with speculative sessions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spec;

/// Above this a counter's value is a lie: no simulated run increments one counter nearly this
/// often. `token_at` hashes once per unit of value, so a lying early reply's number must not
/// decide how long it runs (a `WrongToken { value }` near `u64::MAX` hung a whole sweep).
pub const MAX_COUNTER_VALUE: u64 = 1 << 16;

/// The token a counter's next increment carries once it holds `value`: tokens follow from
/// values alone (`next_token` of the previous token and the new value, from 0), so whoever
/// learns a counter's value can continue its chain. `None` above [`MAX_COUNTER_VALUE`].
pub fn token_at(value: u64) -> Option<u64> {
    (value <= MAX_COUNTER_VALUE).then(|| (1..=value).fold(0, next_token))
}

/// The token to increment with after this reply to an increment (`None` if it says nothing).
pub fn token_after(reply: &[u8]) -> Option<u64> {
    match SpecReply::decode(reply).ok()? {
        SpecReply::Executed(inner) => match IncrReply::decode(&inner)? {
            IncrReply::Done { token, .. } => Some(token),
            IncrReply::WrongToken { value } => token_at(value),
        },
        _ => None,
    }
}

/// The counter an (inner) op increments.
fn counter_of(inner: &[u8]) -> Option<u32> {
    (inner.first() == Some(&INCR))
        .then(|| inner.get(1..5)?.try_into().ok().map(u32::from_le_bytes))
        .flatten()
}

fn path_of(objects: &[Vec<u8>], i: usize) -> String {
    let name = objects
        .get(i)
        .map(|o| String::from_utf8_lossy(o).into_owned())
        .unwrap_or_else(|| format!("k{i}"));
    format!("/d/{name}")
}

/// A file operation over the seed's objects (as files under `/d`).
pub fn random_file_op(rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
    let path = path_of(objects, rng.index(objects.len().max(1)));
    match rng.index(5) {
        0 => create_op(&path),
        1 | 2 => {
            let byte = b'a' + rng.index(26) as u8;
            write_op(&path, rng.range(0, 8), &[byte; 3])
        }
        3 => read_op(&path),
        _ => list_op("/d"),
    }
}

fn random_read_op(rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
    if rng.chance(0.7) {
        read_op(&path_of(objects, rng.index(objects.len().max(1))))
    } else {
        list_op("/d")
    }
}

impl SimApp for Spec {
    type App = Speculative<SpecBench>;
    type Model = SpecModel;

    fn name(&self) -> &'static str {
        "spec"
    }

    /// Every client key the seed has, so that sessions and plain clients mix; one or two
    /// sessions of two or three lanes, each asking one execution replica for early replies,
    /// half the time a Byzantine one; on half the seeds with a faulty execution replica, it
    /// lies in early replies only, at one of [`EARLY_LIE_PERCENTS`].
    fn configure(&self, cfg: &mut SimConfig) {
        let mut rng = SimRng::new(cfg.seed, "speculation");
        cfg.clients = MAX_CLIENTS;
        // Early replicas are replicas that execute: in ZZ mode the actives.
        let execs = cfg.protocol.executing_replicas();
        let mut liars: Vec<ExecId> = Vec::new();
        for (p, behaviour) in cfg.plan.byzantine.iter_mut() {
            if let Principal::Exec(e) = p {
                if cfg.protocol.is_sleeper(e.0) {
                    continue;
                }
                if rng.chance(0.5) {
                    let pct = *rng.pick(&EARLY_LIE_PERCENTS).unwrap_or(&30);
                    *behaviour = Behaviour::WrongEarlyReplies(pct);
                }
                liars.push(*e);
            }
        }
        let correct: Vec<u32> = (0..cfg.clients)
            .filter(|c| cfg.plan.byzantine_client != Some(*c))
            .collect();
        // Lanes of one session must share a speculation group; all of a seed's clients do.
        debug_assert!(correct
            .iter()
            .all(|c| c / plumb_speculation::SPEC_GROUP == 0));
        let counters = cfg.workload.keys.len().max(1) as u32;
        let mut free = correct.as_slice();
        // At least one correct client stays plain.
        while free.len() >= 3 && cfg.sessions.len() < 2 {
            let n = if free.len() >= 4 && rng.chance(0.5) {
                3
            } else {
                2
            };
            let (lanes, rest) = free.split_at(n);
            let early = match rng.pick(&liars) {
                Some(&e) if rng.chance(0.5) => e,
                _ => ExecId(rng.index(execs) as u16),
            };
            let counter = rng.index(counters as usize) as u32;
            cfg.sessions.push(SessionPlan {
                lanes: lanes.to_vec(),
                early,
                counter,
                predict: if rng.chance(0.5) { 0.0 } else { 0.3 },
            });
            free = rest;
        }
    }

    fn new_app(&self) -> Self::App {
        Speculative::new(SpecBench::new, TRUNCATE_EVERY)
    }

    /// Half increments (their token bound from the client's own past, [`SimApp::bind`]), half
    /// file operations; plain requests in the envelope.
    fn random_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        let inner = if rng.chance(0.5) {
            incr_op(rng.index(objects.len().max(1)) as u32, 0)
        } else {
            random_file_op(rng, objects)
        };
        SpecOp::plain(inner).encode()
    }

    /// An increment carries the token the client's latest answered increment of that counter
    /// implies: right unless someone else incremented it since.
    fn bind(&self, op: Vec<u8>, past: &[OpRecord]) -> Vec<u8> {
        let Ok(SpecOp {
            predicates,
            op: inner,
        }) = SpecOp::decode(&op)
        else {
            return op;
        };
        let Some(counter) = counter_of(&inner) else {
            return op;
        };
        let token = past
            .iter()
            .rev()
            .filter_map(|r| {
                let (_, inner) = SpecOp::split(&r.op).ok()?;
                (counter_of(inner) == Some(counter)).then_some(())?;
                token_after(&r.response.as_ref()?.result)
            })
            .next()
            .unwrap_or(0);
        SpecOp {
            predicates,
            op: incr_op(counter, token),
        }
        .encode()
    }

    fn random_read(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        SpecOp::plain(random_read_op(rng, objects)).encode()
    }

    fn read_only_eligible(&self, op: &[u8]) -> bool {
        matches!(SpecOp::split(op), Ok((p, inner)) if p.is_empty() && matches!(inner.first(), Some(&READ) | Some(&LIST)))
    }

    fn harmless_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        self.random_read(rng, objects)
    }

    fn injected_op(&self, rng: &mut SimRng, objects: &[Vec<u8>]) -> Vec<u8> {
        self.random_read(rng, objects)
    }

    fn mutating_op(&self) -> Vec<u8> {
        SpecOp::plain(create_op("/d/read-only-write")).encode()
    }

    fn forgery(&self) -> Arc<dyn AppForgery> {
        Arc::new(SpecForgery)
    }

    fn op_text(&self, op: &[u8]) -> String {
        match SpecOp::split(op) {
            Ok((predicates, inner)) => {
                let preds: Vec<String> = predicates
                    .iter()
                    .map(|p| format!("c{}#{}", p.client, p.nc))
                    .collect();
                let when = if preds.is_empty() {
                    String::new()
                } else {
                    format!(" if {}", preds.join(","))
                };
                format!("{}{when}", inner_text(inner))
            }
            Err(e) => format!("<malformed {e:?}, {} bytes>", op.len()),
        }
    }

    fn result_text(&self, result: &[u8]) -> String {
        match SpecReply::decode(result) {
            Ok(SpecReply::Executed(inner)) => match IncrReply::decode(&inner) {
                Some(r) => format!("{r:?}"),
                None => format!("{:?}", inner.escape_ascii().to_string()),
            },
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("<{e:?}, {} bytes>", result.len()),
        }
    }

    fn model(&self) -> SpecModel {
        SpecModel
    }

    fn model_op(&self, op: &[u8]) -> Option<SpecModelOp> {
        let (predicates, inner) = SpecOp::split(op).ok()?;
        Some(SpecModelOp {
            inner: inner.to_vec(),
            predicated: !predicates.is_empty(),
        })
    }

    fn model_ret(&self, _op: &SpecModelOp, result: &[u8]) -> Option<SpecRet> {
        Some(match SpecReply::decode(result).ok()? {
            SpecReply::Executed(inner) => SpecRet::Executed(inner),
            SpecReply::Aborted { .. } | SpecReply::Retry { .. } => SpecRet::NoOp,
            // No correct client sends a malformed envelope: the model never answers this.
            SpecReply::Malformed => SpecRet::Malformed,
        })
    }

    /// SPEC-predicate over the agreed history (module docs).
    fn check_history(&self, executed: &[Executed<'_>], _end: &Self::App) -> Vec<AppViolation> {
        check_predicates(executed)
    }
}

fn inner_text(inner: &[u8]) -> String {
    match (inner.first(), counter_of(inner)) {
        (Some(&INCR), Some(c)) => {
            let token = inner
                .get(5..13)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes);
            format!("incr c{c} token {token:016x}")
        }
        (Some(&1), _) => format!("create {}", String::from_utf8_lossy(&inner[1..])),
        (Some(&2), _) => format!("write <{} bytes>", inner.len()),
        (Some(&READ), _) => format!("read {}", String::from_utf8_lossy(&inner[1..])),
        (Some(&LIST), _) => format!("list {}", String::from_utf8_lossy(&inner[1..])),
        _ => format!("<{} bytes>", inner.len()),
    }
}

/// SPEC-predicate: walk the agreed history in order, keeping for each (client, number) the
/// answer digest of the request executed under it (its identity and agreed reply); a request
/// with a predicate that names another request or another reply, or a number not executed
/// before it, must have been answered `Aborted` or `Retry`. (The converse is not checked: a predicate older than the log is `Retry` even
/// when it held.)
pub fn check_predicates(executed: &[Executed<'_>]) -> Vec<AppViolation> {
    let mut agreed: HashMap<(ClientId, ReqNo), Digest> = HashMap::new();
    let mut out = Vec::new();
    for e in executed {
        if let Ok((predicates, inner)) = SpecOp::split(e.op) {
            let failed = predicates
                .iter()
                .position(|p| agreed.get(&(p.client, p.nc)) != Some(&p.answer));
            if let Some(i) = failed {
                let no_effect = matches!(
                    SpecReply::decode(e.result),
                    Ok(SpecReply::Aborted { .. } | SpecReply::Retry { .. })
                );
                if !no_effect && out.len() < 5 {
                    let p = &predicates[i];
                    let why = match agreed.get(&(p.client, p.nc)) {
                        Some(_) => "another request or another agreed reply",
                        None => "a request not executed before it",
                    };
                    out.push(AppViolation {
                        property: "SPEC-predicate",
                        detail: format!(
                            "batch {}: c{} request {} ({}) has predicate {i} on c{}#{}, {why}, but was answered {:?}",
                            e.seq,
                            e.client,
                            e.nc,
                            inner_text(inner),
                            p.client,
                            p.nc,
                            Spec.result_text(e.result)
                        ),
                    });
                }
            }
        }
        agreed.insert((e.client, e.nc), answer_digest(e.request, e.result));
    }
    out
}

/// The sequential specification: `SpecBench` itself, run one operation at a time; an
/// operation with predicates may instead be a no-op (its predicates failed or were too old:
/// which one depends on other clients' replies, not on this object's state).
#[derive(Clone, Copy, Debug, Default)]
pub struct SpecModel;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecModelOp {
    /// The application's op, outside the envelope.
    pub inner: Vec<u8>,
    pub predicated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecRet {
    /// The application's reply.
    Executed(Vec<u8>),
    /// `Aborted` or `Retry`: nothing was executed.
    NoOp,
    Malformed,
}

/// Counters are independent of each other and of the files.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SpecKey {
    Counter(u32),
    Files,
}

impl Model for SpecModel {
    type State = SpecBench;
    type Op = SpecModelOp;
    type Ret = SpecRet;
    type PartitionKey = SpecKey;

    fn init(&self) -> SpecBench {
        SpecBench::new()
    }

    fn step(&self, state: &SpecBench, op: &SpecModelOp) -> (SpecBench, SpecRet) {
        let mut next = state.clone();
        let cmd = Command::new(0, Life(0), ReqNo::NONE, &op.inner);
        let out = next.execute(Seq(1), &[cmd], NonDeterminism { time: 0, seed: 0 });
        let reply = out.replies.into_iter().next().unwrap_or_default();
        (next, SpecRet::Executed(reply))
    }

    fn partition(&self, op: &SpecModelOp) -> Option<SpecKey> {
        Some(match counter_of(&op.inner) {
            Some(c) => SpecKey::Counter(c),
            None => SpecKey::Files,
        })
    }

    fn is_read_only(&self, op: &SpecModelOp) -> bool {
        matches!(op.inner.first(), Some(&READ) | Some(&LIST))
    }

    fn choices(&self, op: &SpecModelOp) -> usize {
        if op.predicated {
            2
        } else {
            1
        }
    }

    fn step_choice(
        &self,
        state: &SpecBench,
        op: &SpecModelOp,
        choice: usize,
    ) -> Option<(SpecBench, SpecRet)> {
        match choice {
            0 => Some(self.step(state, op)),
            1 if op.predicated => Some((state.clone(), SpecRet::NoOp)),
            _ => None,
        }
    }

    fn describe_choice(&self, _op: &SpecModelOp, choice: usize) -> String {
        if choice == 1 {
            "as a no-op".to_string()
        } else {
            String::new()
        }
    }
}

/// Lies in the shim's terms: plausible replies to an increment and to a file operation, and
/// the no-op answers, each a well-formed [`SpecReply`] a client could speculate on.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpecForgery;

impl AppForgery for SpecForgery {
    fn forged_op(&self, nc: u64) -> Vec<u8> {
        SpecOp::plain(create_op(&format!("/d/forged-{nc}"))).encode()
    }

    fn plausible_results(&self) -> Vec<Vec<u8>> {
        [
            SpecReply::Executed(
                IncrReply::Done {
                    value: 1,
                    token: next_token(0, 1),
                }
                .encode(),
            ),
            SpecReply::Executed(
                IncrReply::Done {
                    value: 7,
                    token: 0x6666,
                }
                .encode(),
            ),
            SpecReply::Executed(IncrReply::WrongToken { value: 3 }.encode()),
            SpecReply::Executed(vec![0]),
            SpecReply::Aborted { predicate: 0 },
            SpecReply::Retry { predicate: 0 },
        ]
        .iter()
        .map(SpecReply::encode)
        .collect()
    }

    fn wrong_checkpoint(&self, _app_checkpoint: &[u8], _agreed_time: u64) -> Option<Vec<u8>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_speculation::Predicate;

    /// Request `nc` of `client`'s life 0, answered `result`.
    fn ex<'a>(client: ClientId, nc: ReqNo, op: &'a [u8], result: &'a [u8]) -> Executed<'a> {
        Executed {
            seq: Seq(1),
            client,
            nc,
            request: plumb_wire::request_id(client, Life(0), nc, Digest::of(op)),
            op,
            result,
        }
    }

    #[test]
    fn tokens_follow_from_values() {
        let mut app = SpecBench::new();
        let mut token = 0;
        for value in 1..=5 {
            let op = incr_op(2, token);
            let cmd = Command::new(0, Life(0), ReqNo(value), &op);
            let out = app.execute(Seq(1), &[cmd], NonDeterminism { time: 0, seed: 0 });
            let reply = SpecReply::Executed(out.replies[0].clone()).encode();
            token = token_after(&reply).unwrap();
            assert_eq!(Some(token), token_at(value));
        }
    }

    /// A lying early reply may name any value; deriving its token must not take as long as
    /// the value says.
    #[test]
    fn an_absurd_value_has_no_token() {
        assert_eq!(token_at(u64::MAX), None);
        assert_eq!(token_at(MAX_COUNTER_VALUE + 1), None);
        let lie = SpecReply::Executed(IncrReply::WrongToken { value: u64::MAX }.encode()).encode();
        assert_eq!(token_after(&lie), None);
    }

    #[test]
    fn a_failed_predicate_must_abort() {
        let first = SpecOp::plain(incr_op(0, 0)).encode();
        let done = SpecReply::Executed(IncrReply::Done { value: 1, token: 9 }.encode()).encode();
        let lie = SpecReply::Executed(IncrReply::Done { value: 7, token: 1 }.encode()).encode();
        let on = |life: u64, reply: &[u8]| {
            let request = plumb_wire::request_id(1, Life(life), ReqNo(1), Digest::of(&first));
            SpecOp {
                predicates: vec![Predicate {
                    client: 1,
                    nc: ReqNo(1),
                    answer: answer_digest(request, reply),
                }],
                op: incr_op(0, 1),
            }
            .encode()
        };
        let executed_anyway =
            SpecReply::Executed(IncrReply::WrongToken { value: 1 }.encode()).encode();
        let aborted = SpecReply::Aborted { predicate: 0 }.encode();
        let (dependent, right) = (on(0, &lie), on(0, &done));
        let ok = check_predicates(&[
            ex(1, ReqNo(1), &first, &done),
            ex(2, ReqNo(1), &dependent, &aborted),
        ]);
        assert!(ok.is_empty(), "{ok:?}");
        let held = check_predicates(&[
            ex(1, ReqNo(1), &first, &done),
            ex(2, ReqNo(1), &right, &executed_anyway),
        ]);
        assert!(held.is_empty(), "{held:?}");
        let bad = check_predicates(&[
            ex(1, ReqNo(1), &first, &done),
            ex(2, ReqNo(1), &dependent, &executed_anyway),
        ]);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].property, "SPEC-predicate");
        // The right reply, but to another life's request under that number (seed 419, u=2
        // r=1): the predicate failed.
        let other_life = on(1, &done);
        let bad = check_predicates(&[
            ex(1, ReqNo(1), &first, &done),
            ex(2, ReqNo(1), &other_life, &executed_anyway),
        ]);
        assert_eq!(bad.len(), 1, "{bad:?}");
        // A predicate on a request executed only later fails too.
        let late = check_predicates(&[
            ex(2, ReqNo(1), &right, &executed_anyway),
            ex(1, ReqNo(1), &first, &done),
        ]);
        assert_eq!(late.len(), 1);
    }

    #[test]
    fn the_model_lets_only_predicated_ops_be_no_ops() {
        let m = SpecModel;
        let plain = Spec
            .model_op(&SpecOp::plain(incr_op(0, 0)).encode())
            .unwrap();
        assert_eq!(m.choices(&plain), 1);
        let predicated = SpecModelOp {
            predicated: true,
            ..plain
        };
        let (state, ret) = m.step_choice(&m.init(), &predicated, 1).unwrap();
        assert_eq!((state, ret), (m.init(), SpecRet::NoOp));
    }
}
