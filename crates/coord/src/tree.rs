//! The znode tree: nodes with data, ACL and ZooKeeper's `Stat`, kept in a `BTreeMap` by path
//! (so iteration, and the checkpoint, are a function of the contents), grouped into hash
//! buckets (the application's objects, objects.rs), with the indexes the application looks
//! nodes up by without holding them ([`Indexes`]) and an undo log that makes a multi atomic.
//!
//! A node's kind lives in its `ephemeral_owner`, as in ZooKeeper: 0 for a plain node, a
//! session id for an ephemeral, [`CONTAINER_OWNER`] for a container, [`TTL_BITS`] with the
//! TTL in milliseconds for a TTL node.
//!
//! Each node keeps its children's names, so a replica holding a node answers `getChildren`
//! without holding the children. The tree may hold part of the nodes (a replica that loads on
//! demand): whatever the application looks up, its access sets named, and the library fetched.

use crate::acl::open_acl;
use crate::op::{perms, Acl, SessionId, Stat};
use crate::path;
use plumb_app::ObjectId;
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
/// Bits of a bucket id: the tree has `2^BUCKET_BITS` buckets, so a bucket holds about one
/// node up to a few million nodes (the key-value store's reasoning, docs/objects.md).
pub const BUCKET_BITS: u8 = 22;

/// The bucket (object) holding the node at `path`.
pub fn bucket_of(path: &str) -> ObjectId {
    ObjectId::hashed(path.as_bytes(), BUCKET_BITS)
}

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

/// One znode, with the names of its children (`stat.num_children` of them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Znode {
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub acl: Vec<Acl>,
    pub stat: Stat,
    pub children: BTreeSet<String>,
}

impl Znode {
    pub fn kind(&self) -> NodeKind {
        NodeKind::of(self.stat.ephemeral_owner)
    }
}

/// The number a sequential create under a node with `stat` appends: ZooKeeper's count of the
/// children ever created under it. ZooKeeper stores that count and serves `cversion` as twice
/// it less the children there are now (creates plus deletes), so the count is
/// (`cversion` + `numChildren`) / 2; after a delete it is not `cversion`.
pub fn sequence_number(stat: &Stat) -> i64 {
    (i64::from(stat.cversion) + i64::from(stat.num_children)) / 2
}

/// When a container or TTL node with `stat` is deleted if it stays as it is: once the
/// batch's time in milliseconds is past the value (`None`: not while it has children, nor a
/// container that never had one).
fn due(stat: &Stat) -> Option<i64> {
    if stat.num_children != 0 {
        return None;
    }
    match NodeKind::of(stat.ephemeral_owner) {
        NodeKind::Container => (stat.cversion > 0).then_some(i64::MIN),
        NodeKind::Ttl(ttl) => Some(stat.mtime.saturating_add(ttl)),
        NodeKind::Plain | NodeKind::Ephemeral(_) => None,
    }
}

/// What the application must know of nodes it may not hold (part of the metadata, which
/// every replica holds whole): which nodes a session's end deletes, which timed nodes a batch
/// deletes, and the name a sequential create picks. Each entry is a function of one node's
/// path and stat, kept in step by every change of a node; on a whole tree it equals what the
/// nodes give ([`Tree::indexes_match`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indexes {
    /// Each session's ephemeral nodes.
    pub ephemerals: BTreeMap<SessionId, BTreeSet<String>>,
    /// Container and TTL nodes, and when each is due ([`due`]).
    pub timed: BTreeMap<String, Option<i64>>,
    /// The nodes that had children created under them, with [`sequence_number`] (only if not 0).
    pub sequence: BTreeMap<String, i64>,
}

impl Indexes {
    fn add(&mut self, path: &str, stat: &Stat) {
        match NodeKind::of(stat.ephemeral_owner) {
            NodeKind::Ephemeral(s) => {
                self.ephemerals
                    .entry(s)
                    .or_default()
                    .insert(path.to_string());
            }
            NodeKind::Container | NodeKind::Ttl(_) => {
                self.timed.insert(path.to_string(), due(stat));
            }
            NodeKind::Plain => {}
        }
        let n = sequence_number(stat);
        if n != 0 {
            self.sequence.insert(path.to_string(), n);
        }
    }

    fn remove(&mut self, path: &str, stat: &Stat) {
        match NodeKind::of(stat.ephemeral_owner) {
            NodeKind::Ephemeral(s) => {
                if let Some(set) = self.ephemerals.get_mut(&s) {
                    set.remove(path);
                    if set.is_empty() {
                        self.ephemerals.remove(&s);
                    }
                }
            }
            NodeKind::Container | NodeKind::Ttl(_) => {
                self.timed.remove(path);
            }
            NodeKind::Plain => {}
        }
        self.sequence.remove(path);
    }

    /// The number the next sequential child of `path` gets.
    pub fn sequence_of(&self, path: &str) -> i64 {
        self.sequence.get(path).copied().unwrap_or(0)
    }

    /// The timed nodes due at `now_ms`.
    pub fn due_at(&self, now_ms: i64) -> impl Iterator<Item = &String> {
        self.timed
            .iter()
            .filter(move |(_, due)| due.is_some_and(|d| d < now_ms))
            .map(|(p, _)| p)
    }

    /// Whether `path` is a container or TTL node.
    pub fn is_timed(&self, path: &str) -> bool {
        self.timed.contains_key(path)
    }

    /// Every path named.
    pub fn paths(&self) -> impl Iterator<Item = &String> {
        self.ephemerals
            .values()
            .flatten()
            .chain(self.timed.keys())
            .chain(self.sequence.keys())
    }
}

/// The tree (or the part of it held), its buckets and its indexes. Two trees are equal if
/// they hold the same nodes and indexes (what changed since the last checkpoint is not state).
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: BTreeMap<String, Znode>,
    /// The paths held in each bucket (derived from `nodes`).
    buckets: BTreeMap<u64, BTreeSet<String>>,
    /// Buckets changed since the last [`Tree::take_dirty`].
    dirty: BTreeSet<u64>,
    indexes: Indexes,
    /// While a multi runs: each path's node before its first change.
    undo: Option<BTreeMap<String, Option<Znode>>>,
}

impl PartialEq for Tree {
    fn eq(&self, other: &Tree) -> bool {
        self.nodes == other.nodes && self.indexes == other.indexes
    }
}

impl Eq for Tree {}

impl Default for Tree {
    /// ZooKeeper's initial tree: `/`, `/zookeeper`, `/zookeeper/quota`, `/zookeeper/config`,
    /// all with zero stats.
    fn default() -> Tree {
        // ZooKeeper keeps the count of children created and serves `cversion` as twice that
        // count less the children there are now; its initial children count as never created,
        // so a fresh ZooKeeper 3.8 shows `/` with cversion -1 and `/zookeeper` with -2 (and
        // `/zookeeper/config` with aversion -1).
        let node = |acl: Vec<Acl>, children: &[&str]| Znode {
            data: Vec::new(),
            acl,
            stat: Stat {
                num_children: children.len() as i32,
                cversion: -(children.len() as i32),
                ..Stat::default()
            },
            children: children.iter().map(|c| c.to_string()).collect(),
        };
        let read_only = vec![Acl {
            perms: perms::READ,
            scheme: "world".into(),
            id: "anyone".into(),
        }];
        let nodes = [
            ("/", node(open_acl(), &["zookeeper"])),
            ("/zookeeper", node(open_acl(), &["config", "quota"])),
            ("/zookeeper/quota", node(open_acl(), &[])),
            ("/zookeeper/config", {
                let mut config = node(read_only, &[]);
                config.stat.aversion = -1;
                config
            }),
        ]
        .into_iter()
        .map(|(p, n)| (p.to_string(), n))
        .collect();
        Tree::from_nodes(nodes).unwrap_or_else(|e| unreachable!("the initial tree is valid: {e}"))
    }
}

/// Why one node, on its own, is no node of a tree: an invalid path, a stat that does not
/// match, an invalid child name.
pub(crate) fn node_error(p: &str, n: &Znode) -> Option<String> {
    if p != "/" && !path::is_valid(p, false) {
        return Some(format!("invalid path {p:?}"));
    }
    if n.stat.num_children as usize != n.children.len()
        || n.stat.data_length as usize != n.data.len()
    {
        return Some(format!("{p}: stat does not match"));
    }
    if n.children
        .iter()
        .any(|c| !path::is_valid(&path::join(p, c), false))
    {
        return Some(format!("{p}: invalid child name"));
    }
    if !n.children.is_empty() && matches!(n.kind(), NodeKind::Ephemeral(_)) {
        return Some(format!("{p}: an ephemeral with children"));
    }
    None
}

impl Tree {
    /// A whole tree of `nodes`, if they form one: the root is there, every node is valid on its
    /// own ([`node_error`]), every other node's parent is there, and each node's children are
    /// exactly the nodes below it. Every bucket counts as changed.
    pub fn from_nodes(nodes: BTreeMap<String, Znode>) -> Result<Tree, String> {
        if !nodes.contains_key("/") {
            return Err("no root".into());
        }
        let mut children: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (p, n) in &nodes {
            if let Some(e) = node_error(p, n) {
                return Err(e);
            }
            if p != "/" {
                if !nodes.contains_key(path::parent(p)) {
                    return Err(format!("{p} has no parent"));
                }
                children
                    .entry(path::parent(p))
                    .or_default()
                    .insert(path::name(p).to_string());
            }
        }
        for (p, n) in &nodes {
            if children.get(p.as_str()).unwrap_or(&BTreeSet::new()) != &n.children {
                return Err(format!("{p}: its children are not the nodes below it"));
            }
        }
        let mut tree = Tree {
            nodes: BTreeMap::new(),
            buckets: BTreeMap::new(),
            dirty: BTreeSet::new(),
            indexes: Indexes::default(),
            undo: None,
        };
        for (p, n) in nodes {
            tree.put(&p, Some(n));
        }
        Ok(tree)
    }

    /// The nodes held.
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

    pub fn indexes(&self) -> &Indexes {
        &self.indexes
    }

    /// Whether the indexes are what the nodes held give: true of a whole tree.
    pub fn indexes_match(&self) -> bool {
        let mut derived = Indexes::default();
        for (p, n) in &self.nodes {
            derived.add(p, &n.stat);
        }
        derived == self.indexes
    }

    /// The ephemeral nodes of `session`.
    pub fn ephemerals_of(&self, session: SessionId) -> Vec<String> {
        self.indexes
            .ephemerals
            .get(&session)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Sessions owning ephemeral nodes.
    pub fn ephemeral_owners(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.indexes.ephemerals.keys().copied()
    }

    /// The number of nodes strictly below `path` (of a whole tree).
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

    fn log(&mut self, path: &str) {
        if let Some(undo) = &mut self.undo {
            if !undo.contains_key(path) {
                undo.insert(path.to_string(), self.nodes.get(path).cloned());
            }
        }
    }

    /// The bucket of `path` changed: bookkeeping of what it holds, marked dirty.
    fn touched(&mut self, path: &str) {
        let b = bucket_of(path).0;
        if self.nodes.contains_key(path) {
            self.buckets.entry(b).or_default().insert(path.to_string());
        } else if let Some(set) = self.buckets.get_mut(&b) {
            set.remove(path);
            if set.is_empty() {
                self.buckets.remove(&b);
            }
        }
        self.dirty.insert(b);
    }

    /// Make the node at `path` `node` (`None`: no node), with its indexes; the old node.
    fn put(&mut self, path: &str, node: Option<Znode>) -> Option<Znode> {
        self.log(path);
        let old = self.nodes.remove(path);
        if let Some(old) = &old {
            self.indexes.remove(path, &old.stat);
        }
        if let Some(n) = node {
            self.indexes.add(path, &n.stat);
            self.nodes.insert(path.to_string(), n);
        }
        self.touched(path);
        old
    }

    /// Change the node at `path` with `f` (logged for a rollback, indexes kept in step); its
    /// new stat, or `None` if the tree holds no such node.
    pub fn update(&mut self, path: &str, f: impl FnOnce(&mut Znode)) -> Option<Stat> {
        self.log(path);
        let node = self.nodes.get_mut(path)?;
        let before = node.stat;
        f(node);
        let after = node.stat;
        self.indexes.remove(path, &before);
        self.indexes.add(path, &after);
        self.touched(path);
        self.debug_check(path);
        Some(after)
    }

    /// Add `node` at `path` below its existing parent, updating the parent's stat and
    /// children as ZooKeeper does (`cversion` + 1, `pzxid`).
    pub fn insert(&mut self, path: &str, node: Znode, zxid: i64) {
        let parent_path = path::parent(path);
        self.update(parent_path, |parent| {
            parent.children.insert(path::name(path).to_string());
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.pzxid = zxid;
            parent.stat.num_children = parent.children.len() as i32;
        });
        self.put(path, Some(node));
    }

    /// Remove the (childless) node at `path`, updating its parent.
    pub fn remove(&mut self, path: &str, zxid: i64) -> Option<Znode> {
        let node = self.put(path, None)?;
        debug_assert!(node.children.is_empty(), "{path} removed with children");
        self.update(path::parent(path), |parent| {
            parent.children.remove(path::name(path));
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.pzxid = zxid;
            parent.stat.num_children = parent.children.len() as i32;
        });
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
            self.put(&path, old);
        }
    }

    // ------------------------------------------------------------ buckets (objects.rs)

    /// The nodes held in bucket `id`, by path.
    pub(crate) fn bucket(&self, id: u64) -> Vec<(&String, &Znode)> {
        self.buckets
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|p| self.nodes.get_key_value(p))
            .collect()
    }

    /// The buckets changed since the last call.
    pub(crate) fn take_dirty(&mut self) -> BTreeSet<u64> {
        std::mem::take(&mut self.dirty)
    }

    /// Make bucket `id` hold exactly `nodes` (a bucket the library verified): the indexes are
    /// the metadata's business and stay as they are, and the bucket is not a change.
    pub(crate) fn load_bucket(&mut self, id: u64, nodes: Vec<(String, Znode)>) {
        for p in self.buckets.remove(&id).unwrap_or_default() {
            self.nodes.remove(&p);
        }
        if !nodes.is_empty() {
            self.buckets
                .insert(id, nodes.iter().map(|(p, _)| p.clone()).collect());
        }
        self.nodes.extend(nodes);
        self.dirty.remove(&id);
    }

    /// Adopt the indexes of a checkpoint's metadata.
    pub(crate) fn load_indexes(&mut self, indexes: Indexes) {
        self.indexes = indexes;
    }
}
