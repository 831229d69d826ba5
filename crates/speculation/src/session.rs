//! A speculative session over the network client (feature `net`): [`Speculation`]'s
//! bookkeeping driven by [`plumb_client::net::Client::invoke_speculative`].
//!
//! A session's *lanes* are the client's identities: the protocol lets each identity have one
//! request outstanding (CS2), so a session that goes on before its earlier operations commit
//! needs several, and they must share a speculation group (`id / SPEC_GROUP`), because
//! replicas abort predicates that name another group's replies. The client hands each
//! operation to the next free identity.
//!
//! ```no_run
//! use plumb_speculation::{session::Session, app, Dependence, SpecReply};
//! # async fn run(client: plumb_client::net::Client) -> Result<(), plumb_speculation::session::SessionError> {
//! let session = Session::new(client, plumb_wire::ExecId(0))?; // speculate on execution replica 0
//! let mut call = session.invoke(app::incr_op(1, 0), Dependence::All)?;
//! if let Some(SpecReply::Executed(early)) = call.early().await {
//!     // Go on with `early` (the next increment's token) before it commits...
//! }
//! let _outcome = call.confirmed().await?; // ...and undo it if this says Corrected.
//! # Ok(()) }
//! ```

use crate::chain::{Chain, ChainStats};
use crate::client::{AssignError, Confirmation, Dependence, Early, IssueError, OpId};
use crate::envelope::SpecReply;
use crate::shim::SPEC_GROUP;
use crate::Speculation;
use plumb_client::net::{Client, ClientError, SpeculativeCall};
use plumb_wire::ExecId;
use std::sync::{Arc, Mutex, MutexGuard};

/// What can go wrong in a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the client's identities {0:?} are not in one speculation group of {SPEC_GROUP} consecutive ids (id / {SPEC_GROUP} must be equal): replicas would abort every predicate across them; connect with identities from one group")]
    LanesNotInOneGroup(Vec<u32>),
    #[error("cannot issue: {0:?}")]
    Issue(IssueError),
    #[error("cannot record the request's number: {0:?}")]
    Assign(AssignError),
    #[error("the operation was never given a request number (the client closed)")]
    NotNumbered,
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Speculative operations of one client, resolved by the replicas (module docs).
#[derive(Clone)]
pub struct Session {
    client: Client,
    tracker: Arc<Mutex<Speculation>>,
    early: ExecId,
}

impl Session {
    /// A session over `client`, speculating on execution replica `early` (the one nearest
    /// the client, or the one beside the primary). Every identity of `client` must be in one
    /// speculation group. In a ZZ cluster `early` must be an active execution replica: a
    /// sleeper answers nothing (docs/zz.md).
    pub fn new(client: Client, early: ExecId) -> Result<Session, SessionError> {
        if client.is_sleeper(early) {
            return Err(SessionError::Client(ClientError::Asleep {
                exec: early.0,
                actives: client.executing_replicas(),
            }));
        }
        let ids = client.identities().to_vec();
        let group = ids.first().map_or(0, |c| c / SPEC_GROUP);
        if ids.iter().any(|c| c / SPEC_GROUP != group) {
            return Err(SessionError::LanesNotInOneGroup(ids));
        }
        Ok(Session {
            client,
            tracker: Arc::new(Mutex::new(Speculation::new(group))),
            early,
        })
    }

    /// Issue `op` (the application's operation), with predicates on the earlier results it
    /// depends on. Returns at once.
    pub fn invoke(&self, op: Vec<u8>, depends_on: Dependence) -> Result<Call, SessionError> {
        let issued = self
            .tracker()
            .issue(op, depends_on)
            .map_err(SessionError::Issue)?;
        self.send(issued.id, issued.request)
    }

    /// 0-reply speculation (seed 001 §3.2): issue `op` and go on at once as if it answered
    /// `predicted`; later operations may depend on the prediction straight away (this waits
    /// only until the operation has a request number, which later predicates name).
    pub async fn invoke_predicted(
        &self,
        op: Vec<u8>,
        depends_on: Dependence,
        predicted: Vec<u8>,
    ) -> Result<Call, SessionError> {
        let issued = self
            .tracker()
            .issue_predicted(op, depends_on, predicted)
            .map_err(SessionError::Issue)?;
        let mut call = self.send(issued.id, issued.request)?;
        call.numbered().await?;
        Ok(call)
    }

    /// The blocking helper: run `op` (depending on every earlier speculated result) and wait
    /// for its agreed reply, issuing it again while the replicas answer Retry.
    pub async fn invoke_confirmed(&self, op: Vec<u8>) -> Result<SpecReply, SessionError> {
        loop {
            let call = self.invoke(op.clone(), Dependence::All)?;
            match call.confirmed().await? {
                Confirmation::Retry { .. } | Confirmation::Unknown => continue,
                Confirmation::Confirmed { reply } | Confirmation::Corrected { reply, .. } => {
                    return Ok(reply)
                }
            }
        }
    }

    /// A read that must not change state, by seed 001 §3.2.2's rules: on the read-only path
    /// (no agreement) only while none of the session's operations is unconfirmed, since it
    /// could miss the session's own writes on replicas that have not executed them yet, and
    /// nothing may depend on its reply (replicas never log read-only replies). Otherwise it
    /// is ordered like any operation, after the session's writes.
    pub async fn invoke_read(&self, op: Vec<u8>) -> Result<SpecReply, SessionError> {
        let read_only = self.tracker().read_only_request(op.clone());
        match read_only {
            Some(request) => {
                let result = self.client.invoke_read_only(request).await?;
                Ok(SpecReply::decode(&result).unwrap_or(SpecReply::Malformed))
            }
            None => self.invoke_confirmed(op).await,
        }
    }

    /// Whether the session currently goes on with the early replica's replies (seed 001
    /// §3.3: not while more than 1% of its last 100 failed).
    pub fn speculating(&self) -> bool {
        self.tracker().should_speculate(self.early)
    }

    /// Early replies of the early replica that turned out wrong, in its current window.
    pub fn failed_speculations(&self) -> usize {
        self.tracker().failures(self.early)
    }

    /// The network client the session runs on.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn send(&self, id: OpId, request: Vec<u8>) -> Result<Call, SessionError> {
        let inner = self.client.invoke_speculative(request, self.early)?;
        Ok(Call {
            id,
            inner,
            numbered: false,
            tracker: self.tracker.clone(),
            early: self.early,
        })
    }

    fn tracker(&self) -> MutexGuard<'_, Speculation> {
        self.tracker.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One speculative operation of a [`Session`].
pub struct Call {
    id: OpId,
    inner: SpeculativeCall,
    numbered: bool,
    tracker: Arc<Mutex<Speculation>>,
    early: ExecId,
}

impl Call {
    /// The session's id for the operation ([`Confirmation`]'s roll-back lists name these).
    pub fn id(&self) -> OpId {
        self.id
    }

    /// The result to go on with: the early replica's reply, if it came before the agreed one
    /// and the session trusts that replica. `None`: wait for [`Call::confirmed`].
    pub async fn early(&mut self) -> Option<SpecReply> {
        self.numbered().await.ok()?;
        let result = self.inner.early().await?;
        match self.tracker().on_early(self.id, self.early, &result) {
            Early::Speculate(reply) => Some(reply),
            Early::Track | Early::Ignored => None,
        }
    }

    /// The agreed reply and what it means for what the session speculated: confirmed, or
    /// corrected with the operations to roll back and issue again, or to be retried.
    pub async fn confirmed(self) -> Result<Confirmation, SessionError> {
        let Call {
            id, inner, tracker, ..
        } = self;
        let answer = inner.confirmed().await?;
        let mut tracker = tracker.lock().unwrap_or_else(|p| p.into_inner());
        Ok(tracker.on_confirmed(id, &answer.result))
    }

    /// Record the lane and number the operation was sent as, once.
    async fn numbered(&mut self) -> Result<(), SessionError> {
        if self.numbered {
            return Ok(());
        }
        let (lane, nc, request) = self
            .inner
            .request()
            .await
            .ok_or(SessionError::NotNumbered)?;
        self.tracker()
            .assign(self.id, lane, nc, request)
            .map_err(SessionError::Assign)?;
        self.numbered = true;
        Ok(())
    }

    fn tracker(&self) -> MutexGuard<'_, Speculation> {
        self.tracker.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Session {
    /// Run `steps` dependent operations as one speculative chain ([`Chain`]), the way seed
    /// 001's benchmark client does: step `i`'s operation is `op(i, &state)`, and its reply is
    /// folded into the state by `apply`. Each step goes on with the early reply when there is
    /// one, so steps overlap their agreement; when an agreed reply differs from what the chain
    /// went on with, the chain returns to that step, and replicas executed the operations that
    /// depended on the wrong reply as no-ops. Returns the state after every step was confirmed.
    pub async fn run_chain<S: Clone>(
        &self,
        steps: u64,
        init: S,
        op: impl Fn(u64, &S) -> Vec<u8>,
        apply: impl Fn(&S, &SpecReply) -> S,
    ) -> Result<(S, ChainStats), SessionError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut chain = Chain::new(steps, init);
        while !chain.done() {
            if let Some(step) = chain.next_step() {
                let mut call = self.invoke(op(step, chain.state()), chain.depends_on())?;
                chain.issued(call.id());
                let early = call.early().await;
                let id = call.id();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let _ = tx.send((id, call.confirmed().await));
                });
                if chain.early(early, &apply) {
                    continue;
                }
            }
            // Wait for an agreed reply, then take every one that is in.
            let Some(first) = rx.recv().await else {
                break;
            };
            let (id, outcome) = first;
            chain.confirmed(id, outcome?, &apply);
            while let Ok((id, outcome)) = rx.try_recv() {
                chain.confirmed(id, outcome?, &apply);
            }
        }
        Ok(chain.finish())
    }
}
