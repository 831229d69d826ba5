//! The znode tree: nodes with data, ACL and ZooKeeper's `Stat`, kept in a `BTreeMap` by path
//! (so iteration, and the checkpoint, are a function of the contents), with the indexes
//! derived from it (each node's children, each session's ephemeral nodes, the container and
//! TTL nodes) and an undo log that makes a multi atomic.
//!
//! A node's kind lives in its `ephemeral_owner`, as in ZooKeeper: 0 for a plain node, a
//! session id for an ephemeral, [`CONTAINER_OWNER`] for a container, [`TTL_BITS`] with the
//! TTL in milliseconds for a TTL node.

use crate::acl::open_acl;
use crate::op::{perms, Acl, SessionId, Stat};
use crate::path;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `ephemeral_owner` of a container node (ZooKeeper's `EphemeralType.CONTAINER`).
pub const CONTAINER_OWNER: i64 = i64::MIN;
/// The high byte of a TTL node's `ephemeral_owner` (ZooKeeper's extended type bits).
pub const TTL_BITS: i64 = 0xFF00_0000_0000_0000_u64 as i64;
/// The longest TTL, in milliseconds (what fits below the type bits).
pub const MAX_TTL_MS: i64 = 0xFF_FFFF_FFFF;
/// Session ids stay below the type bits.
pub const SESSION_ID_MASK: i64 = 0x00FF_FFFF_FFFF_FFFF;

/// What kind of node an `ephemeral_owner` denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Plain,
    Ephemeral(SessionId),
    Container,
    Ttl(i64),
}

impl NodeKind {
    pub fn of(owner: i64) -> NodeKind {
        if owner == 0 {
            NodeKind::Plain
        } else if owner == CONTAINER_OWNER {
            NodeKind::Container
        } else if owner & TTL_BITS == TTL_BITS {
            NodeKind::Ttl(owner & !TTL_BITS)
        } else {
            NodeKind::Ephemeral(SessionId(owner))
        }
    }
}

/// One znode. `children` is derived (the tree's paths say it) and left out of the encoding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Znode {
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub acl: Vec<Acl>,
    pub stat: Stat,
    #[serde(skip)]
    pub children: BTreeSet<String>,
}

impl Znode {
    pub fn kind(&self) -> NodeKind {
        NodeKind::of(self.stat.ephemeral_owner)
    }
}

/// The tree and its derived indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    nodes: BTreeMap<String, Znode>,
    /// Each live session's ephemeral nodes (derived).
    ephemerals: BTreeMap<SessionId, BTreeSet<String>>,
    /// Container and TTL nodes, which the application deletes when they qualify (derived).
    timed: BTreeSet<String>,
    /// While a multi runs: each path's node before its first change.
    undo: Option<BTreeMap<String, Option<Znode>>>,
}

impl Default for Tree {
    /// ZooKeeper's initial tree: `/`, `/zookeeper`, `/zookeeper/quota`, `/zookeeper/config`,
    /// all with zero stats.
    fn default() -> Tree {
        // ZooKeeper keeps the count of children created and serves `cversion` as twice that
        // count less the children there are now; its initial children count as never created,
        // so a fresh ZooKeeper 3.8 shows `/` with cversion -1 and `/zookeeper` with -2 (and
        // `/zookeeper/config` with aversion -1).
        let node = |acl: Vec<Acl>, num_children: i32| Znode {
            data: Vec::new(),
            acl,
            stat: Stat {
                num_children,
                cversion: -num_children,
                ..Stat::default()
            },
            children: BTreeSet::new(),
        };
        let read_only = vec![Acl {
            perms: perms::READ,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        let nodes = [
            ("/", node(open_acl(), 1)),
            ("/zookeeper", node(open_acl(), 2)),
            ("/zookeeper/quota", node(open_acl(), 0)),
            ("/zookeeper/config", {
                let mut config = node(read_only, 0);
                config.stat.aversion = -1;
                config
            }),
        ]
        .into_iter()
        .map(|(p, n)| (p.to_string(), n))
        .collect();
        Tree::from_nodes(nodes).unwrap_or_else(|_| unreachable!("the initial tree is valid"))
    }
}

impl Tree {
    /// A tree of `nodes` (children derived), if they form one: the root is there, every other
    /// node's path is valid and its parent is there and is no ephemeral, and each stat's
    /// `num_children` and `data_length` are right.
    pub fn from_nodes(mut nodes: BTreeMap<String, Znode>) -> Result<Tree, String> {
        if !nodes.contains_key("/") {
            return Err("no root".into());
        }
        let paths: Vec<String> = nodes.keys().filter(|p| *p != "/").cloned().collect();
        for p in &paths {
            if !path::is_valid(p, false) {
                return Err(format!("invalid path {p:?}"));
            }
            let parent = nodes
                .get_mut(path::parent(p))
                .ok_or_else(|| format!("{p} has no parent"))?;
            if matches!(parent.kind(), NodeKind::Ephemeral(_)) {
                return Err(format!("{p} is the child of an ephemeral"));
            }
            parent.children.insert(path::name(p).to_string());
        }
        let mut tree = Tree {
            nodes: BTreeMap::new(),
            ephemerals: BTreeMap::new(),
            timed: BTreeSet::new(),
            undo: None,
        };
        for (p, n) in &nodes {
            if n.stat.num_children as usize != n.children.len()
                || n.stat.data_length as usize != n.data.len()
            {
                return Err(format!("{p}: stat does not match"));
            }
            tree.index(p, n, true);
        }
        tree.nodes = nodes;
        Ok(tree)
    }

    pub fn nodes(&self) -> &BTreeMap<String, Znode> {
        &self.nodes
    }

    pub fn get(&self, path: &str) -> Option<&Znode> {
        self.nodes.get(path)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The ephemeral nodes of `session`.
    pub fn ephemerals_of(&self, session: SessionId) -> Vec<String> {
        self.ephemerals
            .get(&session)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Sessions owning ephemeral nodes.
    pub fn ephemeral_owners(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.ephemerals.keys().copied()
    }

    /// Container and TTL nodes.
    pub fn timed(&self) -> impl Iterator<Item = &String> {
        self.timed.iter()
    }

    /// The number of nodes strictly below `path`.
    pub fn descendants(&self, path: &str) -> usize {
        if path == "/" {
            return self.nodes.len().saturating_sub(1);
        }
        let prefix = format!("{path}/");
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .count()
    }

    fn index(&mut self, path: &str, node: &Znode, add: bool) {
        match node.kind() {
            NodeKind::Ephemeral(s) => {
                let set = self.ephemerals.entry(s).or_default();
                if add {
                    set.insert(path.to_string());
                } else {
                    set.remove(path);
                    if set.is_empty() {
                        self.ephemerals.remove(&s);
                    }
                }
            }
            NodeKind::Container | NodeKind::Ttl(_) => {
                if add {
                    self.timed.insert(path.to_string());
                } else {
                    self.timed.remove(path);
                }
            }
            NodeKind::Plain => {}
        }
    }

    fn log(&mut self, path: &str) {
        if let Some(undo) = &mut self.undo {
            if !undo.contains_key(path) {
                undo.insert(path.to_string(), self.nodes.get(path).cloned());
            }
        }
    }

    /// The node at `path` for a change (logged for a rollback).
    pub fn get_mut(&mut self, path: &str) -> Option<&mut Znode> {
        self.log(path);
        self.nodes.get_mut(path)
    }

    /// Add `node` at `path` below its existing parent, updating the parent's stat and
    /// children as ZooKeeper does (`cversion` + 1, `pzxid`).
    pub fn insert(&mut self, path: &str, node: Znode, zxid: i64) {
        let parent_path = path::parent(path);
        self.log(path);
        self.log(parent_path);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.children.insert(path::name(path).to_string());
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.pzxid = zxid;
            parent.stat.num_children = parent.children.len() as i32;
        }
        self.index(path, &node, true);
        self.nodes.insert(path.to_string(), node);
        self.debug_check(parent_path);
    }

    /// Remove the (childless) node at `path`, updating its parent.
    pub fn remove(&mut self, path: &str, zxid: i64) -> Option<Znode> {
        let parent_path = path::parent(path);
        self.log(path);
        self.log(parent_path);
        let node = self.nodes.remove(path)?;
        debug_assert!(node.children.is_empty(), "{path} removed with children");
        self.index(path, &node, false);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.children.remove(path::name(path));
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.pzxid = zxid;
            parent.stat.num_children = parent.children.len() as i32;
        }
        self.debug_check(parent_path);
        Some(node)
    }

    fn debug_check(&self, path: &str) {
        if let Some(n) = self.nodes.get(path) {
            debug_assert_eq!(n.stat.num_children as usize, n.children.len(), "{path}");
            debug_assert!(n.stat.pzxid >= n.stat.czxid, "{path}: pzxid < czxid");
            debug_assert_eq!(n.stat.data_length as usize, n.data.len(), "{path}");
        }
    }

    /// Start logging changes for a rollback (a multi).
    pub fn begin(&mut self) {
        self.undo = Some(BTreeMap::new());
    }

    /// Keep the changes made since [`Tree::begin`].
    pub fn commit(&mut self) {
        self.undo = None;
    }

    /// Undo the changes made since [`Tree::begin`].
    pub fn rollback(&mut self) {
        let Some(undo) = self.undo.take() else {
            return;
        };
        for (path, old) in undo {
            if let Some(current) = self.nodes.remove(&path) {
                self.index(&path, &current, false);
            }
            if let Some(old) = old {
                self.index(&path, &old, true);
                self.nodes.insert(path, old);
            }
        }
    }
}
