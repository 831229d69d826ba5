//! Callers blocked on keys (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`), and what wakes them.
//!
//! A blocked caller holds no pool client: between attempts it only waits here. It is woken
//! when a write through this gateway touches one of its keys, oldest waiter of a key first:
//! a waiter that gets an element passes the wake-up on to the next one (the list may hold
//! more), and one that finds the list empty again waits at the front of the queue. Writes
//! through another gateway or a library client are not seen here, so a waiter also tries
//! again on its own, after 250 ms and then at doubling intervals up to 2 s.
//!
//! A key's queue is in order of the blocking commands' arrival at this machine (the kernel's
//! receive stamp, `plumb_gateway::arrival`), not of registration: each connection is served by
//! its own task, and of two commands sent microseconds apart on two connections the second
//! could register first.
//!
//! Only a waiter at the front of one of its keys' queues tries at all ([`Waiters::is_front`]),
//! its first attempt included: callers are served in order of arrival, as Redis serves them.
//! Were a later caller to try while an earlier one's attempt is in flight, the order stage
//! could run the later one first, and it would take the element the earlier one was owed
//! (the earlier one may be the caller Redis' own test suite expects to fail on a wrong-type
//! destination, and then the later one must get the element).

use plumb_gateway::arrival::Arrival;
use plumb_kv::{Footprint, KvOp};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// The first and the longest pause between a waiter's own attempts.
pub const POLL_FIRST: Duration = Duration::from_millis(250);
pub const POLL_MAX: Duration = Duration::from_secs(2);

/// How old (from its arrival) a blocking command must be before its first attempt. Queued by
/// arrival, a caller still cannot stand behind one whose task has not registered yet, and
/// tokio runs the task woken last first (its LIFO slot): of two commands read in one pass, the
/// second registers, finds the queue empty and tries before the first is queued. Redis' suite
/// ("BRPOPLPUSH with multiple blocked clients": two callers, then a push at once) then hung in
/// 3 runs of 9, the second caller served and the first waiting forever on an empty list. The
/// pause lets every command that arrived earlier be read and queued; it delays only a first
/// attempt, by at most this.
pub const FIRST_ATTEMPT_AGE: Duration = Duration::from_millis(2);

/// A key's waiters in order of arrival: arrival, id and wake-up of each.
type Line = VecDeque<(Arrival, u64, Arc<Notify>)>;

#[derive(Default)]
pub struct Waiters {
    queues: Mutex<BTreeMap<Vec<u8>, Line>>,
    next_id: AtomicU64,
    /// How many callers are queued now (the fast path of [`Waiters::wake`]).
    pub blocked: AtomicU64,
    /// How many of them wait with no attempt of theirs in flight ([`Waiter::waiting`]): what
    /// `INFO` calls blocked. Redis counts a caller once its first attempt found nothing, and
    /// clients rely on it: Redis' suite (and `redis_clients.rs`) sends two blocking pops, waits
    /// for two blocked clients, then pushes; counted at registration, the second caller's
    /// first attempt could still be in flight, be ordered after the push and take the element
    /// the first caller was owed (seen twice in 160 back-to-back rounds under a full test run).
    pub waiting: AtomicU64,
}

/// One blocked caller's place in the queues; leaving (dropping it) takes it out of them, also
/// when its connection closes mid-wait.
pub struct Waiter<'a> {
    waiters: &'a Waiters,
    id: u64,
    keys: Vec<Vec<u8>>,
    pub notify: Arc<Notify>,
    /// Counted in [`Waiters::waiting`].
    counted: bool,
}

impl Waiters {
    /// Queue a caller whose command arrived at `arrived` on `keys`, behind every one that
    /// arrived earlier (or at the same time: ties keep registration order).
    pub fn register(&self, keys: &[Vec<u8>], arrived: Arrival) -> Waiter<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for key in keys {
            let line = queues.entry(key.clone()).or_default();
            let place = line.partition_point(|(at, _, _)| *at <= arrived);
            line.insert(place, (arrived, id, notify.clone()));
        }
        self.blocked.fetch_add(1, Ordering::Relaxed);
        Waiter {
            waiters: self,
            id,
            keys: keys.to_vec(),
            notify,
            counted: false,
        }
    }

    /// True if `waiter` is the oldest waiter of one of its keys, or waits on no key: it may
    /// try its command.
    pub fn is_front(&self, waiter: &Waiter<'_>) -> bool {
        if waiter.keys.is_empty() {
            return true;
        }
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        waiter.keys.iter().any(|key| {
            queues
                .get(key)
                .and_then(VecDeque::front)
                .is_some_and(|(_, id, _)| *id == waiter.id)
        })
    }

    /// A write may have made `keys` non-empty: wake the oldest waiter of each.
    pub fn wake(&self, keys: &[&[u8]]) {
        if self.blocked.load(Ordering::Relaxed) == 0 {
            return;
        }
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for key in keys {
            if let Some((_, _, notify)) = queues.get(*key).and_then(VecDeque::front) {
                notify.notify_one();
            }
        }
    }

    /// Wake the oldest waiter of every key (a write whose keys are not known).
    pub fn wake_all(&self) {
        if self.blocked.load(Ordering::Relaxed) == 0 {
            return;
        }
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for (_, _, notify) in queues.values().filter_map(VecDeque::front) {
            notify.notify_one();
        }
    }

    /// Wake the waiters of whatever the encoded mutating op `op` writes.
    pub fn wake_for(&self, op: &[u8]) {
        if self.blocked.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Ok(op) = KvOp::decode(op) else {
            return;
        };
        let ops: Vec<KvOp> = match op {
            KvOp::Pipeline { ops } | KvOp::Transaction { ops, .. } => {
                ops.iter().filter_map(|o| KvOp::decode(o).ok()).collect()
            }
            op => vec![op],
        };
        for op in ops.iter().filter(|o| o.is_mutating()) {
            match op.footprint() {
                Footprint::Keys(keys) => self.wake(&keys),
                Footprint::Prefix(_) => self.wake_all(),
            }
        }
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        let mut queues = self
            .waiters
            .queues
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for key in &self.keys {
            if let Some(queue) = queues.get_mut(key) {
                let was_front = queue.front().is_some_and(|(_, id, _)| *id == self.id);
                queue.retain(|(_, id, _)| *id != self.id);
                match queue.front() {
                    None => {
                        queues.remove(key);
                    }
                    // The next in line may try now (it did not while this one was ahead).
                    Some((_, _, next)) if was_front => next.notify_one(),
                    Some(_) => {}
                }
            }
        }
        self.waiters.blocked.fetch_sub(1, Ordering::Relaxed);
        if self.counted {
            self.waiters.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Waiter<'_> {
    /// The caller waits now, no attempt of its in flight (it found nothing, or it is behind
    /// an earlier caller and did not try): counted in [`Waiters::waiting`] from now on.
    pub fn waiting(&mut self) {
        if !self.counted {
            self.counted = true;
            self.waiters.waiting.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_counts_as_blocked_once_it_waits_with_no_attempt_in_flight() {
        let waiters = Waiters::default();
        let mut first = waiters.register(&[b"q".to_vec()], Duration::from_secs(1));
        let count = |w: &Waiters| {
            (
                w.blocked.load(Ordering::Relaxed),
                w.waiting.load(Ordering::Relaxed),
            )
        };
        assert_eq!(
            count(&waiters),
            (1, 0),
            "its first attempt may be in flight"
        );
        first.waiting();
        first.waiting();
        assert_eq!(count(&waiters), (1, 1));
        let second = waiters.register(&[b"q".to_vec()], Duration::from_secs(2));
        assert_eq!(count(&waiters), (2, 1));
        drop(second);
        drop(first);
        assert_eq!(count(&waiters), (0, 0));
    }

    #[tokio::test]
    async fn the_oldest_waiter_of_a_key_is_woken_and_leaving_takes_it_out() {
        let waiters = Waiters::default();
        let at = Duration::from_secs;
        let first = waiters.register(&[b"q".to_vec()], at(1));
        let second = waiters.register(&[b"q".to_vec(), b"r".to_vec()], at(2));
        waiters.wake(&[b"q"]);
        // The permit is the first's; the second was not woken.
        tokio::time::timeout(Duration::from_millis(100), first.notify.notified())
            .await
            .expect("the oldest waiter is woken");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), second.notify.notified())
                .await
                .is_err()
        );
        assert!(waiters.is_front(&first));
        assert!(waiters.is_front(&second), "the oldest waiter of r");
        let third = waiters.register(&[b"q".to_vec()], at(3));
        assert!(!waiters.is_front(&third), "behind first and second on q");
        drop(third);
        drop(first);
        assert!(waiters.is_front(&second));
        tokio::time::timeout(Duration::from_millis(100), second.notify.notified())
            .await
            .expect("the next in line is told it may try");
        assert_eq!(waiters.blocked.load(Ordering::Relaxed), 1);
        let push = KvOp::Push {
            key: b"q".to_vec(),
            end: plumb_kv::End::Left,
            values: vec![b"x".to_vec()],
        };
        waiters.wake_for(&push.encode());
        tokio::time::timeout(Duration::from_millis(100), second.notify.notified())
            .await
            .expect("now the second is the oldest");
        drop(second);
        assert!(waiters.queues.lock().unwrap().is_empty());
    }

    #[test]
    fn a_caller_registered_late_whose_command_arrived_first_is_ahead() {
        let waiters = Waiters::default();
        let at = Duration::from_millis;
        let arrived_second = waiters.register(&[b"q".to_vec()], at(20));
        let tied = waiters.register(&[b"q".to_vec()], at(20));
        let arrived_first = waiters.register(&[b"q".to_vec()], at(10));
        assert!(waiters.is_front(&arrived_first));
        drop(arrived_first);
        assert!(
            waiters.is_front(&arrived_second),
            "ties keep registration order"
        );
        drop(arrived_second);
        assert!(waiters.is_front(&tied));
    }
}
