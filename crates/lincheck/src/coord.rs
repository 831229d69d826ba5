//! A model of ZooKeeper's znode operations (the coordination application, `plumb-coord`), for
//! persistent and persistent-sequential nodes: create, delete and setData with versions,
//! check, getData, exists, getChildren, and atomic multis of the writes.
//!
//! Written apart from the implementation, from ZooKeeper's rules: a create needs its parent
//! (`NoNode`) and no node at its path (`NodeExists`); a sequential create appends the number
//! of children ever created under the parent as ten zero-padded digits ((`cversion` + number
//! of children) / 2); creating or deleting a child bumps the parent's `cversion`; a delete
//! checks existence, then the version (-1: any), then that the node has no
//! children (`NotEmpty`); a failed multi changes nothing and reports `RolledBack` before the
//! failing operation, its error, and `RuntimeInconsistency` after it.
//!
//! Stats are compared on what a client can predict (version, cversion, number of children,
//! data length), not on zxids and times. The root always exists and is never read, so the
//! model partitions by top-level node: operations under different top-level names commute.
//! Ephemeral nodes are not modelled (their deletion at expiry happens at an agreed time the
//! clients do not see); a workload keeps them under top-level nodes of their own.

use crate::Model;
use std::collections::BTreeMap;

/// What the model keeps of a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Node {
    pub data: Vec<u8>,
    pub version: i32,
    pub cversion: i32,
}

/// The nodes below the root, by path.
pub type Tree = BTreeMap<String, Node>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ZOp {
    Create {
        path: String,
        data: Vec<u8>,
        sequential: bool,
    },
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    GetData {
        path: String,
    },
    Exists {
        path: String,
    },
    GetChildren {
        path: String,
    },
    /// Writes and checks, all or none.
    Multi(Vec<ZOp>),
}

/// The predictable part of a `Stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatLite {
    pub version: i32,
    pub cversion: i32,
    pub num_children: i32,
    pub data_length: i32,
}

/// ZooKeeper's error codes the model produces (and any other, by number, from a result).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZErr {
    NoNode,
    NodeExists,
    NotEmpty,
    BadVersion,
    RolledBack,
    RuntimeInconsistency,
    Other(i32),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ZRet {
    Created(String),
    Deleted,
    Checked,
    Stat(StatLite),
    Data(Vec<u8>, StatLite),
    Children(Vec<String>, StatLite),
    Multi(Vec<ZRet>),
    Err(ZErr),
}

/// The model.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoordModel;

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The top-level node a path lies in (`k0` for `/k0/a`).
pub fn top(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

fn children(tree: &Tree, path: &str) -> Vec<String> {
    let prefix = format!("{path}/");
    tree.range(prefix.clone()..)
        .take_while(|(p, _)| p.starts_with(&prefix))
        .filter(|(p, _)| !p[prefix.len()..].contains('/'))
        .map(|(p, _)| p[prefix.len()..].to_string())
        .collect()
}

fn stat(tree: &Tree, path: &str, n: &Node) -> StatLite {
    StatLite {
        version: n.version,
        cversion: n.cversion,
        num_children: children(tree, path).len() as i32,
        data_length: n.data.len() as i32,
    }
}

fn version_ok(expected: i32, current: i32) -> bool {
    expected == -1 || expected == current
}

/// Apply `op` to `tree`: its return (on an error the tree is unchanged).
fn apply(tree: &mut Tree, op: &ZOp) -> ZRet {
    let err = ZRet::Err;
    match op {
        ZOp::Create {
            path,
            data,
            sequential,
        } => {
            let parent = parent(path);
            let parent_cversion = if parent == "/" {
                // The root is outside every partition; the workload makes no sequential
                // node at the top level.
                0
            } else {
                match tree.get(parent) {
                    // Creates plus deletes, less the children there are: twice the creates.
                    Some(p) => (p.cversion + children(tree, parent).len() as i32) / 2,
                    None => return err(ZErr::NoNode),
                }
            };
            let path = if *sequential {
                format!("{path}{parent_cversion:010}")
            } else {
                path.clone()
            };
            if tree.contains_key(&path) {
                return err(ZErr::NodeExists);
            }
            if let Some(p) = tree.get_mut(parent) {
                p.cversion += 1;
            }
            tree.insert(
                path.clone(),
                Node {
                    data: data.clone(),
                    ..Node::default()
                },
            );
            ZRet::Created(path)
        }
        ZOp::Delete { path, version } => {
            let Some(n) = tree.get(path) else {
                return err(ZErr::NoNode);
            };
            if !version_ok(*version, n.version) {
                return err(ZErr::BadVersion);
            }
            if !children(tree, path).is_empty() {
                return err(ZErr::NotEmpty);
            }
            tree.remove(path);
            if let Some(p) = tree.get_mut(parent(path)) {
                p.cversion += 1;
            }
            ZRet::Deleted
        }
        ZOp::SetData {
            path,
            data,
            version,
        } => {
            let Some(n) = tree.get_mut(path) else {
                return err(ZErr::NoNode);
            };
            if !version_ok(*version, n.version) {
                return err(ZErr::BadVersion);
            }
            n.data = data.clone();
            n.version += 1;
            let n = n.clone();
            ZRet::Stat(stat(tree, path, &n))
        }
        ZOp::Check { path, version } => match tree.get(path) {
            None => err(ZErr::NoNode),
            Some(n) if !version_ok(*version, n.version) => err(ZErr::BadVersion),
            Some(_) => ZRet::Checked,
        },
        ZOp::GetData { path } => match tree.get(path) {
            None => err(ZErr::NoNode),
            Some(n) => ZRet::Data(n.data.clone(), stat(tree, path, n)),
        },
        ZOp::Exists { path } => match tree.get(path) {
            None => err(ZErr::NoNode),
            Some(n) => ZRet::Stat(stat(tree, path, n)),
        },
        ZOp::GetChildren { path } => match tree.get(path) {
            None => err(ZErr::NoNode),
            Some(n) => ZRet::Children(children(tree, path), stat(tree, path, n)),
        },
        ZOp::Multi(ops) => {
            let mut scratch = tree.clone();
            let mut results = Vec::with_capacity(ops.len());
            for (i, op) in ops.iter().enumerate() {
                let r = match op {
                    ZOp::Multi(_)
                    | ZOp::GetData { .. }
                    | ZOp::Exists { .. }
                    | ZOp::GetChildren { .. } => ZRet::Err(ZErr::Other(-8)),
                    _ => apply(&mut scratch, op),
                };
                if let ZRet::Err(e) = r {
                    let shaped = (0..ops.len())
                        .map(|j| {
                            ZRet::Err(match j.cmp(&i) {
                                std::cmp::Ordering::Less => ZErr::RolledBack,
                                std::cmp::Ordering::Equal => e,
                                std::cmp::Ordering::Greater => ZErr::RuntimeInconsistency,
                            })
                        })
                        .collect();
                    return ZRet::Multi(shaped);
                }
                results.push(r);
            }
            *tree = scratch;
            ZRet::Multi(results)
        }
    }
}

impl ZOp {
    /// Every path the operation names.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            ZOp::Create { path, .. }
            | ZOp::Delete { path, .. }
            | ZOp::SetData { path, .. }
            | ZOp::Check { path, .. }
            | ZOp::GetData { path }
            | ZOp::Exists { path }
            | ZOp::GetChildren { path } => vec![path.as_str()],
            ZOp::Multi(ops) => ops.iter().flat_map(|o| o.paths()).collect(),
        }
    }
}

impl Model for CoordModel {
    type State = Tree;
    type Op = ZOp;
    type Ret = ZRet;
    type PartitionKey = String;

    fn init(&self) -> Tree {
        Tree::new()
    }

    fn step(&self, state: &Tree, op: &ZOp) -> (Tree, ZRet) {
        let mut next = state.clone();
        let ret = apply(&mut next, op);
        (next, ret)
    }

    fn partition(&self, op: &ZOp) -> Option<String> {
        let paths = op.paths();
        let first = top(paths.first()?);
        paths
            .iter()
            .all(|p| top(p) == first)
            .then(|| first.to_string())
    }

    fn is_read_only(&self, op: &ZOp) -> bool {
        matches!(
            op,
            ZOp::GetData { .. } | ZOp::Exists { .. } | ZOp::GetChildren { .. } | ZOp::Check { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check, History};

    fn create(p: &str, seq: bool) -> ZOp {
        ZOp::Create {
            path: p.into(),
            data: vec![],
            sequential: seq,
        }
    }

    #[test]
    fn sequential_names_follow_the_cversion() {
        let m = CoordModel;
        let mut t = m.init();
        for op in [create("/k", false), create("/k/q", false)] {
            t = m.step(&t, &op).0;
        }
        let (t, r) = m.step(&t, &create("/k/q/s-", true));
        assert_eq!(r, ZRet::Created("/k/q/s-0000000000".into()));
        let (_, r) = m.step(&t, &create("/k/q/s-", true));
        assert_eq!(r, ZRet::Created("/k/q/s-0000000001".into()));
        let (_, r) = m.step(
            &t,
            &ZOp::Delete {
                path: "/k/q".into(),
                version: -1,
            },
        );
        assert_eq!(r, ZRet::Err(ZErr::NotEmpty));
        // After a delete the number is the count of children created, not the cversion.
        let (t, _) = m.step(
            &t,
            &ZOp::Delete {
                path: "/k/q/s-0000000000".into(),
                version: -1,
            },
        );
        let (_, r) = m.step(&t, &create("/k/q/s-", true));
        assert_eq!(r, ZRet::Created("/k/q/s-0000000001".into()));
    }

    #[test]
    fn a_lost_create_is_caught() {
        let mut h = History::<CoordModel>::new();
        h.record(1, create("/k", false), 0, ZRet::Created("/k".into()), 5)
            .unwrap();
        h.record(
            2,
            ZOp::Exists { path: "/k".into() },
            10,
            ZRet::Err(ZErr::NoNode),
            12,
        )
        .unwrap();
        assert!(check(&CoordModel, &h).is_violation());
    }
}
