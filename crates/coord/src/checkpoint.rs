//! The canonical encoding of the whole state, and loading it back.
//!
//! A checkpoint is [`CHECKPOINT_VERSION`], then postcard of the last zxid, the count of
//! sessions opened, the nodes by path (children are derived, not encoded), the sessions by id
//! and the watches. Everything is a `BTreeMap`/`BTreeSet`, so equal states give equal bytes.
//! Loading refuses trailing bytes, anything that does not re-encode to exactly the same bytes,
//! and any state that breaks the tree's invariants (a missing parent, a child of an ephemeral,
//! a stat that does not match, an ephemeral or a watch of a session that does not exist).

use crate::app::CoordApp;
use crate::op::SessionId;
use crate::session::Session;
use crate::tree::{Tree, Znode};
use crate::watch::Watches;
use plumb_app::LoadError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version byte of checkpoint encodings (2: chunk bits per node).
pub const CHECKPOINT_VERSION: u8 = 2;

#[derive(Serialize)]
struct StateRef<'a> {
    zxid: i64,
    opened: u64,
    nodes: &'a BTreeMap<String, Znode>,
    sessions: &'a BTreeMap<SessionId, Session>,
    watches: &'a Watches,
}

#[derive(Deserialize)]
struct State {
    zxid: i64,
    opened: u64,
    nodes: BTreeMap<String, Znode>,
    sessions: BTreeMap<SessionId, Session>,
    watches: Watches,
}

fn corrupt(why: impl Into<String>) -> LoadError {
    LoadError::Corrupt(why.into())
}

impl CoordApp {
    /// The canonical encoding of the whole state.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let state = StateRef {
            zxid: self.zxid,
            opened: self.opened,
            nodes: self.tree.nodes(),
            sessions: &self.sessions,
            watches: self.watches(),
        };
        plumb_app::codec::encode_versioned(CHECKPOINT_VERSION, &state)
    }

    /// The state `bytes` encodes, if they are exactly a canonical encoding of a valid state.
    pub fn from_canonical_bytes(bytes: &[u8]) -> Result<CoordApp, LoadError> {
        let state: State = plumb_app::codec::decode_versioned(CHECKPOINT_VERSION, bytes)
            .map_err(|e| corrupt(format!("checkpoint: {e}")))?;
        let tree = Tree::from_nodes(state.nodes).map_err(corrupt)?;
        if let Some(s) = tree
            .ephemeral_owners()
            .find(|s| !state.sessions.contains_key(s))
        {
            return Err(corrupt(format!(
                "ephemeral of a session that does not exist: {s:?}"
            )));
        }
        if let Some(s) = state
            .watches
            .sessions()
            .into_iter()
            .find(|s| !state.sessions.contains_key(s))
        {
            return Err(corrupt(format!(
                "watch of a session that does not exist: {s:?}"
            )));
        }
        let app = CoordApp {
            zxid: state.zxid,
            tree,
            sessions: state.sessions,
            watches: state.watches,
            opened: state.opened,
            ..CoordApp::default()
        };
        if app.canonical_bytes() != bytes {
            return Err(corrupt("non-canonical encoding"));
        }
        Ok(app)
    }
}
