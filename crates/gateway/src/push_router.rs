//! Routing the cluster's push events to local listeners: the gateway side of the push channel.
//!
//! The cluster pushes to a client *identity* (one of the gateway's pool identities); behind it
//! are many local connections. A [`PushRouter`] maps keys (a Redis channel or pattern; later a
//! ZooKeeper watch path) to the listeners that want them, and [`PushRouter::run`] turns each
//! push event of one identity into `(key, frame)` pairs through a front end's decoder and
//! hands every frame to the listeners of its key.
//!
//! Delivery is at most once and unreliable, like the push channel itself: the client library
//! delivers an event once `r + 1` execution replicas sent the same payload for its id and never
//! resends one, and a listener whose queue is full ([`LISTENER_BACKLOG`]) loses the frame
//! (counted in [`PushRouter::dropped`]) rather than holding up every other listener.

use plumb_client::net::PushEvents;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

/// Frames a listener may have waiting before it loses new ones.
pub const LISTENER_BACKLOG: usize = 1024;

/// A listener's id, unique for the router's life.
pub type ListenerId = u64;

struct Inner<K, M> {
    by_key: BTreeMap<K, BTreeSet<ListenerId>>,
    senders: HashMap<ListenerId, mpsc::Sender<M>>,
    next: ListenerId,
}

pub struct PushRouter<K, M> {
    inner: Mutex<Inner<K, M>>,
    dropped: AtomicU64,
    malformed: AtomicU64,
}

impl<K: Ord + Clone, M: Clone> Default for PushRouter<K, M> {
    fn default() -> Self {
        PushRouter {
            inner: Mutex::new(Inner {
                by_key: BTreeMap::new(),
                senders: HashMap::new(),
                next: 1,
            }),
            dropped: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
        }
    }
}

impl<K: Ord + Clone, M: Clone> PushRouter<K, M> {
    fn lock(&self) -> MutexGuard<'_, Inner<K, M>> {
        // A panic elsewhere while holding the lock leaves consistent maps (each update is
        // a single insert or remove): go on with them.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new listener, listening to nothing yet, and where its frames arrive.
    pub fn add_listener(&self) -> (ListenerId, mpsc::Receiver<M>) {
        let (tx, rx) = mpsc::channel(LISTENER_BACKLOG);
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        inner.senders.insert(id, tx);
        (id, rx)
    }

    /// `listener` gets the frames of `key` from now on. True if no local listener had it
    /// before (the gateway's interest in `key` went from none to some).
    pub fn listen(&self, listener: ListenerId, key: K) -> bool {
        let mut inner = self.lock();
        let set = inner.by_key.entry(key).or_default();
        let first = set.is_empty();
        set.insert(listener);
        first
    }

    /// `listener` no longer gets `key`'s frames. True if it was the last local listener.
    pub fn unlisten(&self, listener: ListenerId, key: &K) -> bool {
        let mut inner = self.lock();
        let Some(set) = inner.by_key.get_mut(key) else {
            return false;
        };
        let was = set.remove(&listener);
        let last = was && set.is_empty();
        if set.is_empty() {
            inner.by_key.remove(key);
        }
        last
    }

    /// Forget `listener` and every key it listened to.
    pub fn remove_listener(&self, listener: ListenerId) {
        let mut inner = self.lock();
        inner.senders.remove(&listener);
        inner.by_key.retain(|_, set| {
            set.remove(&listener);
            !set.is_empty()
        });
    }

    /// Hand `frame` to every listener of `key`; how many took it.
    pub fn dispatch(&self, key: &K, frame: &M) -> usize {
        let inner = self.lock();
        let Some(set) = inner.by_key.get(key) else {
            return 0;
        };
        let mut took = 0;
        for id in set {
            let Some(tx) = inner.senders.get(id) else {
                debug_assert!(false, "a listener with keys has a sender");
                continue;
            };
            match tx.try_send(frame.clone()) {
                Ok(()) => took += 1,
                // A full queue loses the frame; a closed one is a listener on its way out.
                Err(_) => {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        took
    }

    /// Frames lost to full listener queues.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Push events of the routed identity that the decoder refused.
    pub fn malformed(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed)
    }

    /// Route the push events of `identity` until the client stops: each event's payload is
    /// decoded into `(key, frame)` pairs (`None`: malformed, counted and skipped) and each
    /// frame handed to the listeners of its key. Events arrive in the order the client
    /// library delivers them (see `plumb_client::net::PushEvents`).
    pub async fn run<F>(self: Arc<Self>, mut events: PushEvents, identity: u32, decode: F)
    where
        F: Fn(&[u8]) -> Option<Vec<(K, M)>>,
    {
        while let Some(event) = events.next().await {
            if event.client != identity {
                continue;
            }
            match decode(&event.payload) {
                Some(frames) => {
                    for (key, frame) in &frames {
                        self.dispatch(key, frame);
                    }
                }
                None => {
                    self.malformed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_reach_the_listeners_of_their_key_only() {
        let router: PushRouter<&str, u32> = PushRouter::default();
        let (a, mut ra) = router.add_listener();
        let (b, mut rb) = router.add_listener();
        assert!(router.listen(a, "x"));
        assert!(!router.listen(b, "x"), "not the first listener of x");
        assert!(router.listen(b, "y"));
        assert_eq!(router.dispatch(&"x", &1), 2);
        assert_eq!(router.dispatch(&"y", &2), 1);
        assert_eq!(router.dispatch(&"z", &3), 0);
        assert_eq!(ra.try_recv(), Ok(1));
        assert!(ra.try_recv().is_err());
        assert_eq!((rb.try_recv(), rb.try_recv()), (Ok(1), Ok(2)));
        assert!(!router.unlisten(a, &"x"), "b still listens");
        assert!(router.unlisten(b, &"x"));
        router.remove_listener(b);
        assert_eq!(router.dispatch(&"y", &4), 0);
    }

    #[test]
    fn a_full_listener_loses_frames_and_others_still_get_theirs() {
        let router: PushRouter<u8, u64> = PushRouter::default();
        let (slow, _keep_open) = router.add_listener();
        let (fast, mut rf) = router.add_listener();
        router.listen(slow, 0);
        router.listen(fast, 0);
        for i in 0..LISTENER_BACKLOG as u64 + 5 {
            router.dispatch(&0, &i);
            assert_eq!(rf.try_recv(), Ok(i));
        }
        assert_eq!(router.dropped(), 5);
    }
}
