//! Recording a history: invocations, responses and operations that never got one.

use crate::Model;
use std::fmt;

/// Any clock, as long as all clients' events are on the same one (the simulator's global time).
pub type Time = u64;

/// Who issued an operation, in the history's own numbering (the simulator gives each correct
/// client one, and each faulty client another, past them): not a wire `ClientId`. Used for
/// explanations only: the checker does not require one issuer's operations to be sequential.
pub type Issuer = u64;

/// Index of an operation in its [`History`], in invocation-call order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub usize);

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response<R> {
    pub ret: R,
    pub time: Time,
}

/// One operation of a history.
pub struct Operation<M: Model> {
    pub client: Issuer,
    pub op: M::Op,
    pub invoke: Time,
    /// `None`: no response was ever seen. The operation may or may not have taken effect, its
    /// return value is unconstrained and its response time counts as +infinity.
    pub response: Option<Response<M::Ret>>,
}

impl<M: Model> Operation<M> {
    /// True if `self` responded strictly before `other` was invoked, so every linearization must
    /// put `self` first. Equal times count as concurrent.
    pub fn precedes(&self, other: &Operation<M>) -> bool {
        self.response
            .as_ref()
            .is_some_and(|r| r.time < other.invoke)
    }

    pub fn is_complete(&self) -> bool {
        self.response.is_some()
    }
}

impl<M: Model> Clone for Operation<M>
where
    M::Op: Clone,
    M::Ret: Clone,
{
    fn clone(&self) -> Self {
        Operation {
            client: self.client,
            op: self.op.clone(),
            invoke: self.invoke,
            response: self.response.clone(),
        }
    }
}

impl<M: Model> fmt::Debug for Operation<M> {
    /// `c3 [10, 25] Get(b"k") -> Value(None)`; an unanswered operation shows `[10, inf)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.response {
            Some(r) => write!(
                f,
                "c{} [{}, {}] {:?} -> {:?}",
                self.client, self.invoke, r.time, self.op, r.ret
            ),
            None => write!(
                f,
                "c{} [{}, inf) {:?} -> (no response)",
                self.client, self.invoke, self.op
            ),
        }
    }
}

/// Why a response could not be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryError {
    UnknownOp(OpId),
    AlreadyCompleted(OpId),
    ResponseBeforeInvocation {
        id: OpId,
        invoke: Time,
        response: Time,
    },
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::UnknownOp(id) => write!(f, "no operation {id} in the history"),
            HistoryError::AlreadyCompleted(id) => write!(f, "operation {id} already completed"),
            HistoryError::ResponseBeforeInvocation {
                id,
                invoke,
                response,
            } => write!(
                f,
                "operation {id} invoked at {invoke} cannot respond at {response}"
            ),
        }
    }
}

impl std::error::Error for HistoryError {}

/// A history under construction: call [`History::invoke`] when a client starts an operation and
/// [`History::complete`] when it sees the result. Operations never completed count as
/// unanswered.
pub struct History<M: Model> {
    ops: Vec<Operation<M>>,
}

impl<M: Model> Default for History<M> {
    fn default() -> Self {
        History { ops: Vec::new() }
    }
}

impl<M: Model> Clone for History<M>
where
    M::Op: Clone,
    M::Ret: Clone,
{
    fn clone(&self) -> Self {
        History {
            ops: self.ops.clone(),
        }
    }
}

impl<M: Model> fmt::Debug for History<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_map();
        for (i, op) in self.ops.iter().enumerate() {
            list.entry(&OpId(i), op);
        }
        list.finish()
    }
}

impl<M: Model> History<M> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Client `client` invoked `op` at `time`.
    pub fn invoke(&mut self, client: Issuer, op: M::Op, time: Time) -> OpId {
        self.ops.push(Operation {
            client,
            op,
            invoke: time,
            response: None,
        });
        OpId(self.ops.len() - 1)
    }

    /// Operation `id` returned `ret` at `time`.
    pub fn complete(&mut self, id: OpId, ret: M::Ret, time: Time) -> Result<(), HistoryError> {
        let op = self.ops.get_mut(id.0).ok_or(HistoryError::UnknownOp(id))?;
        if op.response.is_some() {
            return Err(HistoryError::AlreadyCompleted(id));
        }
        if time < op.invoke {
            return Err(HistoryError::ResponseBeforeInvocation {
                id,
                invoke: op.invoke,
                response: time,
            });
        }
        op.response = Some(Response { ret, time });
        Ok(())
    }

    /// A whole completed operation at once (handy in tests).
    pub fn record(
        &mut self,
        client: Issuer,
        op: M::Op,
        invoke: Time,
        ret: M::Ret,
        response: Time,
    ) -> Result<OpId, HistoryError> {
        let id = self.invoke(client, op, invoke);
        match self.complete(id, ret, response) {
            Ok(()) => Ok(id),
            Err(e) => {
                self.ops.pop();
                Err(e)
            }
        }
    }

    pub fn get(&self, id: OpId) -> Option<&Operation<M>> {
        self.ops.get(id.0)
    }

    pub fn ops(&self) -> &[Operation<M>] {
        &self.ops
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
