//! The znode tree: nodes with data, ACL and ZooKeeper's `Stat`, kept in a `BTreeMap` by path
//! (so iteration, and the checkpoint, are a function of the contents), grouped into hash
//! buckets (the application's objects, objects.rs), with the indexes the application looks
//! nodes up by without holding them ([`Indexes`]) and an undo log that makes a multi atomic.
//!
//! A node's kind lives in its `ephemeral_owner`, as in ZooKeeper: 0 for a plain node, a
//! session id for an ephemeral, [`CONTAINER_OWNER`] for a container, [`TTL_BITS`] with the
//! TTL in milliseconds for a TTL node.
//!
//! A node's children's names are kept apart from it, in `2^chunk_bits` chunks by a hash of the
//! name, each chunk in an object of its own: a create or delete under a parent rewrites one
//! chunk of it, not a list of all its children (a parent of 20 000 children made every create
//! under it rewrite 280 KB), and `getChildren` reads the parent's chunks without its children.
//! A node starts with [`MIN_CHUNK_BITS`] and doubles its chunks each time its children pass
//! [`NAMES_PER_CHUNK`] a chunk (the create that does it rewrites every chunk of the parent,
//! once per doubling), so a create rewrites at most a few hundred names at any size: with 256
//! fixed chunks, taking and hashing a create's writes cost 2.5-2.9 µs per create up to 16 000
//! children and 15.8-16.1 µs from 48 000 to 64 000, and kept growing; now at most about 11.
//! Why 128 and not 32: a doubling rewrites every chunk of the parent in one batch (1 024
//! objects at 32 768 children), and while a parent grows that costs more than it saves until
//! it is tens of thousands of children wide (at 32, bench zk-create's p99 rose by 5 ms). Chunks
//! never merge while the node has children, so a count that swings across a threshold does
//! not rewrite them back and forth; the last child's delete takes the node
//! back to [`MIN_CHUNK_BITS`] (every chunk is empty then: nothing moves).
//! The tree may hold part of the nodes and chunks (a replica that loads on demand): whatever
//! the application looks up, its access sets named, and the library fetched.

use crate::acl::open_acl;
use crate::names::Names;
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
/// Bits of a bucket id: there are `2^BUCKET_BITS` buckets of nodes, so a bucket holds about
/// one node up to a few million nodes (the key-value store's reasoning, docs/objects.md), and
/// as many buckets of children's names. Object ids have one bit more: which kind it is.
pub const BUCKET_BITS: u8 = 22;
/// A node's children's names start in `2^MIN_CHUNK_BITS` chunks.
pub const MIN_CHUNK_BITS: u8 = 8;
/// At most `2^MAX_CHUNK_BITS` chunks: past `NAMES_PER_CHUNK << MAX_CHUNK_BITS` (eight million)
/// children, chunks grow instead.
pub const MAX_CHUNK_BITS: u8 = 16;
/// A node's chunks double when its children pass this many a chunk.
pub const NAMES_PER_CHUNK: i32 = 128;
/// A node whose children reach this many (half the first doubling's count) is in the metadata
/// with its children's count and chunk bits ([`Indexes::wide`]), so that an access set can
/// tell which create doubles its chunks.
pub const WIDE_FROM: i32 = (NAMES_PER_CHUNK << MIN_CHUNK_BITS) / 2;

/// The bucket (object) holding the node at `path`.
pub fn bucket_of(path: &str) -> ObjectId {
    ObjectId::hashed(path.as_bytes(), BUCKET_BITS)
}

/// The chunk a child named `name` is in when its parent has `2^bits` chunks: the top `bits`
/// bits of the name's hash, so doubling splits chunk `c` into `2c` and `2c + 1`.
pub fn chunk_of(name: &str, bits: u8) -> u16 {
    debug_assert!((MIN_CHUNK_BITS..=MAX_CHUNK_BITS).contains(&bits));
    ObjectId::hashed(name.as_bytes(), bits).0 as u16
}

/// Whether a child named `name` can be in chunk `chunk` (at some number of chunks).
pub fn may_be_in_chunk(name: &str, chunk: u16) -> bool {
    (MIN_CHUNK_BITS..=MAX_CHUNK_BITS).any(|b| chunk_of(name, b) == chunk)
}

/// The chunk bits a node with `children` children needs when it has `bits` now: the same, or
/// more once its children pass [`NAMES_PER_CHUNK`] a chunk.
pub fn chunk_bits_for(children: i32, bits: u8) -> u8 {
    let mut bits = bits;
    while bits < MAX_CHUNK_BITS && children > NAMES_PER_CHUNK << bits {
        bits += 1;
    }
    bits
}

/// One chunk of a node's children's names: the node's path and the chunk number.
pub type ChunkKey = (String, u16);

/// The object holding chunk `chunk` of the children of `parent`: ids from `2^BUCKET_BITS` up.
pub fn chunk_object(parent: &str, chunk: u16) -> ObjectId {
    let mut name = Vec::with_capacity(parent.len() + 3);
    name.extend_from_slice(parent.as_bytes());
    name.push(0);
    name.extend_from_slice(&chunk.to_le_bytes());
    ObjectId((1 << BUCKET_BITS) | ObjectId::hashed(&name, BUCKET_BITS).0)
}

/// Whether object `id` holds children's names (not nodes).
pub fn is_chunk_object(id: ObjectId) -> bool {
    id.0 >> BUCKET_BITS == 1
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

/// One znode (its children's names are kept apart: [`Tree::children_of`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Znode {
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    pub acl: Vec<Acl>,
    pub stat: Stat,
    /// Its children's names are in `2^chunk_bits` chunks (see the module's comment).
    pub chunk_bits: u8,
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
/// deletes, the name a sequential create picks, and which chunk a child's name is in. Each
/// entry is a function of one node's path, stat and chunk bits, kept in step by every change of
/// a node; on a whole tree it equals what the nodes give ([`Tree::indexes_match`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indexes {
    /// Each session's ephemeral nodes.
    pub ephemerals: BTreeMap<SessionId, BTreeSet<String>>,
    /// Container and TTL nodes, and when each is due ([`due`]).
    pub timed: BTreeMap<String, Option<i64>>,
    /// The nodes that had children created under them, with [`sequence_number`] (only if not 0).
    pub sequence: BTreeMap<String, i64>,
    /// The nodes with at least [`WIDE_FROM`] children or more than [`MIN_CHUNK_BITS`], with
    /// their count of children and chunk bits: a node not here has its minimum chunks and
    /// fewer than [`WIDE_FROM`] children.
    pub wide: BTreeMap<String, Wide>,
}

/// Make `map`'s entry for `key` `value` (`None`: no entry), allocating a key only for a new one.
fn set_or_remove<V>(map: &mut BTreeMap<String, V>, key: &str, value: Option<V>) {
    match (map.get_mut(key), value) {
        (Some(slot), Some(v)) => *slot = v,
        (Some(_), None) => {
            map.remove(key);
        }
        (None, Some(v)) => {
            map.insert(key.to_string(), v);
        }
        (None, None) => {}
    }
}

/// A node with many children (or that had many), in the metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wide {
    pub children: i32,
    pub chunk_bits: u8,
}

impl Indexes {
    fn add(&mut self, path: &str, stat: &Stat, chunk_bits: u8) {
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
        if stat.num_children >= WIDE_FROM || chunk_bits > MIN_CHUNK_BITS {
            let wide = Wide {
                children: stat.num_children,
                chunk_bits,
            };
            self.wide.insert(path.to_string(), wide);
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
        self.wide.remove(path);
    }

    /// The node at `path` changed from `before` to `after` (with `chunk_bits` now): what
    /// [`Indexes::remove`] then [`Indexes::add`] do, in place where an entry stays, without
    /// allocating its key again (every create and delete changes its parent).
    fn change(&mut self, path: &str, before: &Stat, after: &Stat, chunk_bits: u8) {
        if before.ephemeral_owner != after.ephemeral_owner {
            self.remove(path, before);
            self.add(path, after, chunk_bits);
            return;
        }
        // Same owner: the ephemerals' index names the path already, or never will.
        if let NodeKind::Container | NodeKind::Ttl(_) = NodeKind::of(after.ephemeral_owner) {
            set_or_remove(&mut self.timed, path, Some(due(after)));
        }
        let n = sequence_number(after);
        set_or_remove(&mut self.sequence, path, (n != 0).then_some(n));
        let wide =
            (after.num_children >= WIDE_FROM || chunk_bits > MIN_CHUNK_BITS).then_some(Wide {
                children: after.num_children,
                chunk_bits,
            });
        set_or_remove(&mut self.wide, path, wide);
    }

    /// The number the next sequential child of `path` gets.
    pub fn sequence_of(&self, path: &str) -> i64 {
        self.sequence.get(path).copied().unwrap_or(0)
    }

    /// The chunk bits of the node at `path` and, if it is wide, its count of children (else
    /// fewer than [`WIDE_FROM`]).
    pub fn chunks_of(&self, path: &str) -> (u8, Option<i32>) {
        match self.wide.get(path) {
            Some(w) => (w.chunk_bits, Some(w.children)),
            None => (MIN_CHUNK_BITS, None),
        }
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
            .chain(self.wide.keys())
    }
}

/// The tree (or the part of it held), its buckets and its indexes. Two trees are equal if
/// they hold the same nodes and indexes (what changed since the last checkpoint is not state).
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: BTreeMap<String, Znode>,
    /// The children's names held, by parent and chunk (no empty set).
    children: BTreeMap<ChunkKey, Names>,
    /// The paths held in each bucket of nodes (derived from `nodes`).
    buckets: BTreeMap<u64, BTreeSet<String>>,
    /// The chunks held in each object of children's names (derived from `children`).
    chunks: BTreeMap<u64, BTreeSet<ChunkKey>>,
    /// Buckets changed since the last [`Tree::take_dirty`].
    dirty: BTreeSet<u64>,
    indexes: Indexes,
    /// While a multi runs: each path's node and each chunk before its first change.
    undo: Option<Undo>,
}

#[derive(Clone, Debug, Default)]
struct Undo {
    nodes: BTreeMap<String, Option<Znode>>,
    chunks: BTreeMap<ChunkKey, Names>,
}

impl PartialEq for Tree {
    fn eq(&self, other: &Tree) -> bool {
        self.nodes == other.nodes
            && self.children == other.children
            && self.indexes == other.indexes
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
            chunk_bits: MIN_CHUNK_BITS,
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
/// match its data, an ephemeral with children, chunk bits out of range or other than a node
/// of its children has ([`MIN_CHUNK_BITS`] with none, at least enough for them).
pub(crate) fn node_error(p: &str, n: &Znode) -> Option<String> {
    if !path::is_valid(p, false) {
        return Some(format!("invalid path {p:?}"));
    }
    if n.stat.data_length as usize != n.data.len() || n.stat.num_children < 0 {
        return Some(format!("{p}: stat does not match"));
    }
    if n.stat.num_children != 0 && matches!(n.kind(), NodeKind::Ephemeral(_)) {
        return Some(format!("{p}: an ephemeral with children"));
    }
    let bits_ok = if n.stat.num_children == 0 {
        n.chunk_bits == MIN_CHUNK_BITS
    } else {
        (MIN_CHUNK_BITS..=MAX_CHUNK_BITS).contains(&n.chunk_bits)
            && chunk_bits_for(n.stat.num_children, n.chunk_bits) == n.chunk_bits
    };
    if !bits_ok {
        return Some(format!(
            "{p}: {} chunk bits for {} children",
            n.chunk_bits, n.stat.num_children
        ));
    }
    None
}

impl Tree {
    /// A whole tree of `nodes`, if they form one: the root is there, every node is valid on its
    /// own ([`node_error`]), every other node's parent is there, and each `num_children` counts
    /// the nodes below it. The children are derived; every object counts as changed.
    pub fn from_nodes(nodes: BTreeMap<String, Znode>) -> Result<Tree, String> {
        if !nodes.contains_key("/") {
            return Err("no root".into());
        }
        let mut counts: BTreeMap<&str, i32> = BTreeMap::new();
        for (p, n) in &nodes {
            if let Some(e) = node_error(p, n) {
                return Err(e);
            }
            if p != "/" {
                if !nodes.contains_key(path::parent(p)) {
                    return Err(format!("{p} has no parent"));
                }
                *counts.entry(path::parent(p)).or_default() += 1;
            }
        }
        for (p, n) in &nodes {
            if counts.get(p.as_str()).copied().unwrap_or(0) != n.stat.num_children {
                return Err(format!(
                    "{p}: numChildren is not the count of nodes below it"
                ));
            }
        }
        let mut tree = Tree {
            nodes: BTreeMap::new(),
            children: BTreeMap::new(),
            buckets: BTreeMap::new(),
            chunks: BTreeMap::new(),
            dirty: BTreeSet::new(),
            indexes: Indexes::default(),
            undo: None,
        };
        for (p, n) in nodes {
            if p != "/" {
                tree.change_child(&p, true);
            }
            tree.put(&p, Some(n));
        }
        Ok(tree)
    }

    /// The names of the children of `path` held, in order (all of them if the tree holds
    /// every chunk of `path`: an access set that names the node's children names them all).
    pub fn children_of(&self, path: &str) -> Vec<String> {
        let from = (path.to_string(), 0);
        let mut names: Vec<String> = self
            .children
            .range(from..)
            .take_while(|((p, _), _)| p == path)
            .flat_map(|(_, names)| names.iter().map(String::from))
            .collect();
        names.sort_unstable();
        names
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

    /// Whether the indexes and the children's names are what the nodes held give, and each
    /// `numChildren` counts its children: true of a whole tree.
    pub fn indexes_match(&self) -> bool {
        let mut derived = Indexes::default();
        let mut children: BTreeMap<ChunkKey, Names> = BTreeMap::new();
        for (p, n) in &self.nodes {
            derived.add(p, &n.stat, n.chunk_bits);
            if p != "/" {
                let name = path::name(p);
                let chunk = chunk_of(name, self.chunk_bits_of(path::parent(p)));
                children
                    .entry((path::parent(p).to_string(), chunk))
                    .or_default()
                    .insert(name);
            }
        }
        derived == self.indexes
            && children == self.children
            && self
                .nodes
                .iter()
                .all(|(p, n)| self.children_of(p).len() == n.stat.num_children as usize)
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
            if !undo.nodes.contains_key(path) {
                undo.nodes
                    .insert(path.to_string(), self.nodes.get(path).cloned());
            }
        }
    }

    fn log_chunk(&mut self, key: &ChunkKey) {
        if let Some(undo) = &mut self.undo {
            if !undo.chunks.contains_key(key) {
                let names = self.children.get(key).cloned().unwrap_or_default();
                undo.chunks.insert(key.clone(), names);
            }
        }
    }

    /// Make chunk `key` hold `names` (logged for a rollback), with its object's bookkeeping.
    fn set_chunk(&mut self, key: ChunkKey, names: Names) {
        self.log_chunk(&key);
        self.children.insert(key.clone(), names);
        self.chunk_changed(&key);
    }

    /// The chunk bits of the node at `path`: its own if held, else the metadata's.
    fn chunk_bits_of(&self, path: &str) -> u8 {
        match self.nodes.get(path) {
            Some(n) => n.chunk_bits,
            None => self.indexes.chunks_of(path).0,
        }
    }

    /// `path`'s name joins (`add`) or leaves its parent's children: one chunk changes.
    fn change_child(&mut self, path: &str, add: bool) {
        let name = path::name(path);
        let parent = path::parent(path);
        let key = (
            parent.to_string(),
            chunk_of(name, self.chunk_bits_of(parent)),
        );
        self.log_chunk(&key);
        // Every create and delete comes here: look up before allocating a key or a name.
        match self.children.get_mut(&key) {
            Some(names) if add => {
                names.insert(name);
            }
            Some(names) => {
                names.remove(name);
            }
            None if add => {
                self.children.insert(key.clone(), Names::from_iter([name]));
            }
            None => {}
        }
        self.chunk_changed(&key);
    }

    /// Chunk `key` changed: an empty one is dropped, its object's list of chunks follows, and
    /// the object is marked written.
    fn chunk_changed(&mut self, key: &ChunkKey) {
        let id = chunk_object(&key.0, key.1).0;
        let held = match self.children.get(key) {
            Some(names) if names.is_empty() => {
                self.children.remove(key);
                false
            }
            Some(_) => true,
            None => false,
        };
        if held {
            let keys = self.chunks.entry(id).or_default();
            if !keys.contains(key) {
                keys.insert(key.clone());
            }
        } else if let Some(keys) = self.chunks.get_mut(&id) {
            keys.remove(key);
            if keys.is_empty() {
                self.chunks.remove(&id);
            }
        }
        self.dirty.insert(id);
    }

    /// The bucket of `path` changed: bookkeeping of what it holds, marked dirty.
    fn touched(&mut self, path: &str) {
        let b = bucket_of(path).0;
        if self.nodes.contains_key(path) {
            let paths = self.buckets.entry(b).or_default();
            if !paths.contains(path) {
                paths.insert(path.to_string());
            }
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
            self.indexes.add(path, &n.stat, n.chunk_bits);
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
        let (after, bits) = (node.stat, node.chunk_bits);
        self.indexes.change(path, &before, &after, bits);
        self.touched(path);
        self.debug_check(path);
        Some(after)
    }

    /// Add `node` at `path` below its existing parent, updating the parent's stat and
    /// children as ZooKeeper does (`cversion` + 1, `pzxid`).
    /// The parent's chunks double if its children pass [`NAMES_PER_CHUNK`] a chunk.
    pub fn insert(&mut self, path: &str, node: Znode, zxid: i64) {
        let parent = path::parent(path);
        let mut doubled = None;
        self.update(parent, |parent| {
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.pzxid = zxid;
            parent.stat.num_children += 1;
            let bits = chunk_bits_for(parent.stat.num_children, parent.chunk_bits);
            if bits != parent.chunk_bits {
                doubled = Some(bits);
                parent.chunk_bits = bits;
            }
        });
        if let Some(bits) = doubled {
            self.rechunk(parent, bits);
        }
        self.change_child(path, true);
        self.put(path, Some(node));
    }

    /// Move every name of `parent`'s children to its chunk at `bits` (every chunk of `parent`
    /// is held: the access set of the create that doubles them names them all).
    fn rechunk(&mut self, parent: &str, bits: u8) {
        let keys: Vec<ChunkKey> = self
            .children
            .range((parent.to_string(), 0)..)
            .take_while(|((p, _), _)| p == parent)
            .map(|(k, _)| k.clone())
            .collect();
        let mut moved: BTreeMap<u16, Names> = BTreeMap::new();
        for key in keys {
            let names = self.children.get(&key).cloned().unwrap_or_default();
            self.set_chunk(key, Names::new());
            for n in names.iter() {
                moved.entry(chunk_of(n, bits)).or_default().insert(n);
            }
        }
        for (chunk, names) in moved {
            self.set_chunk((parent.to_string(), chunk), names);
        }
    }

    /// Remove the (childless) node at `path`, updating its parent.
    pub fn remove(&mut self, path: &str, zxid: i64) -> Option<Znode> {
        let node = self.put(path, None)?;
        debug_assert_eq!(node.stat.num_children, 0, "{path} removed with children");
        self.change_child(path, false);
        self.update(path::parent(path), |parent| {
            parent.stat.cversion = parent.stat.cversion.wrapping_add(1);
            parent.stat.pzxid = zxid;
            parent.stat.num_children -= 1;
            if parent.stat.num_children == 0 {
                parent.chunk_bits = MIN_CHUNK_BITS;
            }
        });
        Some(node)
    }

    fn debug_check(&self, path: &str) {
        if let Some(n) = self.nodes.get(path) {
            debug_assert!(n.stat.num_children >= 0, "{path}");
            debug_assert!(n.stat.pzxid >= n.stat.czxid, "{path}: pzxid < czxid");
            debug_assert_eq!(n.stat.data_length as usize, n.data.len(), "{path}");
            debug_assert!(
                node_error(path, n).is_none(),
                "{path}: {:?}",
                node_error(path, n)
            );
        }
    }

    /// Start logging changes for a rollback (a multi).
    pub fn begin(&mut self) {
        self.undo = Some(Undo::default());
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
        for (path, old) in undo.nodes {
            self.put(&path, old);
        }
        for (key, names) in undo.chunks {
            self.set_chunk(key, names);
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

    /// The chunks of children's names held in object `id`.
    pub(crate) fn chunk_bucket(&self, id: u64) -> Vec<(&ChunkKey, &Names)> {
        self.chunks
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|k| self.children.get_key_value(k))
            .collect()
    }

    /// The objects changed since the last call.
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

    /// Make object `id` hold exactly the chunks `chunks` (verified by the library); not a
    /// change.
    pub(crate) fn load_chunks(&mut self, id: u64, chunks: Vec<(ChunkKey, Names)>) {
        for k in self.chunks.remove(&id).unwrap_or_default() {
            self.children.remove(&k);
        }
        if !chunks.is_empty() {
            self.chunks
                .insert(id, chunks.iter().map(|(k, _)| k.clone()).collect());
        }
        self.children.extend(chunks);
        self.dirty.remove(&id);
    }

    /// Adopt the indexes of a checkpoint's metadata.
    pub(crate) fn load_indexes(&mut self, indexes: Indexes) {
        self.indexes = indexes;
    }
}
