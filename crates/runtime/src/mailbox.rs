//! A stage's inbox: one bounded queue per sending peer and one shared by all clients, served
//! round-robin, so no single sender can crowd out the others (seed 004 §3.4.2). What does not
//! fit is dropped and counted.

use plumb_wire::Principal;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Which queue a frame waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKey {
    Peer(Principal),
    Clients,
    /// Work handed in by the local process (a client pool's jobs, a shutdown).
    Local,
}

impl QueueKey {
    /// The queue of a frame whose sender is known for sure: a co-located stage's. A frame from
    /// the network is queued by what its connection proved, not by its header (node router).
    pub fn of_sender(p: Principal) -> QueueKey {
        match p {
            Principal::Client(_) => QueueKey::Clients,
            _ => QueueKey::Peer(p),
        }
    }
}

/// What waits in a mailbox.
pub enum Item<J> {
    Frame(Vec<u8>),
    Job(J),
    /// The stage's disk finished a sync (the runner's store thread wakes it with this).
    Synced,
}

struct Inner<J> {
    queues: HashMap<QueueKey, VecDeque<Item<J>>>,
    /// Non-empty queues in serving order.
    ready: VecDeque<QueueKey>,
    closed: bool,
    /// The consumer is waiting on the condition variable. A push wakes it only then: a
    /// notification is a futex system call, and a busy stage would otherwise pay one per frame.
    sleeping: bool,
}

pub struct Mailbox<J> {
    inner: Mutex<Inner<J>>,
    wake: Condvar,
    peer_capacity: usize,
    client_capacity: usize,
    dropped: AtomicU64,
}

impl<J> Mailbox<J> {
    pub fn new(peer_capacity: usize, client_capacity: usize) -> Mailbox<J> {
        Mailbox {
            inner: Mutex::new(Inner {
                queues: HashMap::new(),
                ready: VecDeque::new(),
                closed: false,
                sleeping: false,
            }),
            wake: Condvar::new(),
            peer_capacity,
            client_capacity,
            dropped: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<J>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue `item`; `false` (and counted) if its queue is full.
    pub fn push(&self, key: QueueKey, item: Item<J>) -> bool {
        let capacity = match key {
            QueueKey::Clients => self.client_capacity,
            QueueKey::Peer(_) => self.peer_capacity,
            QueueKey::Local => usize::MAX,
        };
        let mut inner = self.lock();
        let q = inner.queues.entry(key).or_default();
        if q.len() >= capacity {
            drop(inner);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let was_empty = q.is_empty();
        q.push_back(item);
        if was_empty {
            inner.ready.push_back(key);
        }
        let sleeping = inner.sleeping;
        drop(inner);
        if sleeping {
            self.wake.notify_one();
        }
        true
    }

    /// The next item, round-robin over senders, waiting at most `timeout`. `None` on time-out
    /// or once closed.
    pub fn pop(&self, timeout: Duration) -> Option<Item<J>> {
        let mut inner = self.lock();
        if inner.ready.is_empty() && !inner.closed && !timeout.is_zero() {
            inner.sleeping = true;
            inner = self
                .wake
                .wait_timeout_while(inner, timeout, |i| i.ready.is_empty() && !i.closed)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
            inner.sleeping = false;
        }
        let key = inner.ready.pop_front()?;
        let q = inner.queues.get_mut(&key)?;
        let item = q.pop_front();
        if !q.is_empty() {
            inner.ready.push_back(key);
        }
        item
    }

    pub fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Items waiting, in all queues.
    pub fn depth(&self) -> usize {
        self.lock().queues.values().map(VecDeque::len).sum()
    }

    /// Items dropped because their queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_wire::OrderId;

    fn frame(b: u8) -> Item<()> {
        Item::Frame(vec![b])
    }

    fn take(m: &Mailbox<()>) -> u8 {
        match m.pop(Duration::ZERO) {
            Some(Item::Frame(f)) => f[0],
            _ => 0,
        }
    }

    #[test]
    fn senders_are_served_round_robin_and_bounded() {
        let m: Mailbox<()> = Mailbox::new(2, 2);
        let flood = QueueKey::Peer(Principal::Order(OrderId(1)));
        for _ in 0..5 {
            m.push(flood, frame(1));
        }
        assert_eq!(m.dropped(), 3);
        m.push(QueueKey::Peer(Principal::Order(OrderId(2))), frame(2));
        m.push(QueueKey::Clients, frame(3));
        // The flooding peer gets one turn in three, not the whole inbox.
        assert_eq!([take(&m), take(&m), take(&m), take(&m)], [1, 2, 3, 1]);
        assert_eq!(take(&m), 0);
    }

    #[test]
    fn pop_waits_for_a_push_and_close_wakes_it() {
        let m = std::sync::Arc::new(Mailbox::<()>::new(8, 8));
        let m2 = m.clone();
        let t = std::thread::spawn(move || m2.pop(Duration::from_secs(10)).is_some());
        std::thread::sleep(Duration::from_millis(20));
        m.push(QueueKey::Local, frame(9));
        assert!(t.join().unwrap());
        let m3 = m.clone();
        let t = std::thread::spawn(move || m3.pop(Duration::from_secs(10)).is_none());
        std::thread::sleep(Duration::from_millis(20));
        m.close();
        assert!(t.join().unwrap());
    }
}
