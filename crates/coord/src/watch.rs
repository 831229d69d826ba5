//! Watches, with ZooKeeper's firing rules.
//!
//! | change                 | fires                                                      |
//! |------------------------|------------------------------------------------------------|
//! | node created           | `NodeCreated`: exist/data watches on it                     |
//! | data set               | `NodeDataChanged`: data watches on it                       |
//! | node deleted           | `NodeDeleted`: data and child watches on it                 |
//! | child created/deleted  | `NodeChildrenChanged`: child watches on the parent          |
//!
//! One-shot watches (set by exists, getData, getChildren) are removed when they fire; an
//! exist watch is a data watch on a missing node, as in ZooKeeper. Persistent watches
//! (`addWatch`) on the path fire for every one of these events and stay; persistent recursive
//! ones fire for the path and everything below it, except `NodeChildrenChanged`. A session gets
//! one event per change even if several of its watches match (as ZooKeeper's watch manager
//! deduplicates per watcher).

use crate::op::{SessionId, WatchKind};
use crate::path;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

type Registry = BTreeMap<String, BTreeSet<SessionId>>;

/// Most watches one session may hold of each kind; further registrations are ignored (a bound
/// on the state a client can grow; ZooKeeper has none).
pub const MAX_WATCHES_PER_KIND: usize = 65_536;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watches {
    data: Registry,
    child: Registry,
    persistent: Registry,
    recursive: Registry,
}

/// The registry a one-shot or persistent watch goes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Data,
    Child,
    Persistent,
    Recursive,
}

fn add(reg: &mut Registry, path: &str, session: SessionId) {
    reg.entry(path.to_string()).or_default().insert(session);
}

fn take(reg: &mut Registry, path: &str, out: &mut BTreeSet<SessionId>) {
    if let Some(set) = reg.remove(path) {
        out.extend(set);
    }
}

fn peek(reg: &Registry, path: &str, out: &mut BTreeSet<SessionId>) {
    if let Some(set) = reg.get(path) {
        out.extend(set.iter().copied());
    }
}

fn remove(reg: &mut Registry, path: &str, session: SessionId) -> bool {
    let Some(set) = reg.get_mut(path) else {
        return false;
    };
    let removed = set.remove(&session);
    if set.is_empty() {
        reg.remove(path);
    }
    removed
}

impl Watches {
    fn registry(&mut self, class: Class) -> &mut Registry {
        match class {
            Class::Data => &mut self.data,
            Class::Child => &mut self.child,
            Class::Persistent => &mut self.persistent,
            Class::Recursive => &mut self.recursive,
        }
    }

    pub fn add(&mut self, class: Class, path: &str, session: SessionId) {
        add(self.registry(class), path, session);
    }

    pub fn has(&self, class: Class, path: &str, session: SessionId) -> bool {
        let reg = match class {
            Class::Data => &self.data,
            Class::Child => &self.child,
            Class::Persistent => &self.persistent,
            Class::Recursive => &self.recursive,
        };
        reg.get(path).is_some_and(|s| s.contains(&session))
    }

    /// Remove `session`'s watches of `kind` on `path`; false if it had none.
    pub fn remove(&mut self, path: &str, kind: WatchKind, session: SessionId) -> bool {
        let classes: &[Class] = match kind {
            WatchKind::Children => &[Class::Child],
            WatchKind::Data => &[Class::Data],
            WatchKind::Persistent => &[Class::Persistent],
            WatchKind::PersistentRecursive => &[Class::Recursive],
            WatchKind::Any => &[
                Class::Data,
                Class::Child,
                Class::Persistent,
                Class::Recursive,
            ],
        };
        let mut any = false;
        for class in classes {
            any |= remove(self.registry(*class), path, session);
        }
        any
    }

    /// Forget every watch of `session`.
    pub fn remove_session(&mut self, session: SessionId) {
        for reg in [
            &mut self.data,
            &mut self.child,
            &mut self.persistent,
            &mut self.recursive,
        ] {
            reg.retain(|_, set| {
                set.remove(&session);
                !set.is_empty()
            });
        }
    }

    /// Every session with a watch (for checkpoint validation).
    pub fn sessions(&self) -> BTreeSet<SessionId> {
        [&self.data, &self.child, &self.persistent, &self.recursive]
            .iter()
            .flat_map(|r| r.values().flatten().copied())
            .collect()
    }

    fn persistent_for(&self, path: &str, recursive_too: bool, out: &mut BTreeSet<SessionId>) {
        peek(&self.persistent, path, out);
        if recursive_too {
            for p in path::ancestry(path) {
                peek(&self.recursive, p, out);
            }
        }
    }

    /// `NodeCreated` or `NodeDataChanged` at `path`: the sessions to tell.
    pub fn data_event(&mut self, path: &str) -> BTreeSet<SessionId> {
        let mut out = BTreeSet::new();
        #[cfg(feature = "sabotage")]
        let keep = plumb_core::sabotage::on(plumb_core::sabotage::Sabotage::CoordWatchFiresTwice);
        #[cfg(not(feature = "sabotage"))]
        let keep = false;
        if keep {
            // Sabotage: the one-shot watch fires but stays registered.
            peek(&self.data, path, &mut out);
        } else {
            take(&mut self.data, path, &mut out);
        }
        self.persistent_for(path, true, &mut out);
        out
    }

    /// `NodeDeleted` at `path`.
    pub fn deleted_event(&mut self, path: &str) -> BTreeSet<SessionId> {
        let mut out = BTreeSet::new();
        take(&mut self.data, path, &mut out);
        take(&mut self.child, path, &mut out);
        self.persistent_for(path, true, &mut out);
        out
    }

    /// `NodeChildrenChanged` at `path` (a child was created or deleted).
    pub fn children_event(&mut self, path: &str) -> BTreeSet<SessionId> {
        let mut out = BTreeSet::new();
        take(&mut self.child, path, &mut out);
        self.persistent_for(path, false, &mut out);
        out
    }

    /// Bound registrations per session: true if `session` may add one more `class` watch.
    pub fn room_for(&self, class: Class, session: SessionId) -> bool {
        let reg = match class {
            Class::Data => &self.data,
            Class::Child => &self.child,
            Class::Persistent => &self.persistent,
            Class::Recursive => &self.recursive,
        };
        // Counting is linear in the registry; only done when a session is near the bound
        // would be cheaper, but registries stay small in practice.
        reg.len() < MAX_WATCHES_PER_KIND
            || reg.values().filter(|s| s.contains(&session)).count() < MAX_WATCHES_PER_KIND
    }
}
