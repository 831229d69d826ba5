//! Emulated wide-area delay (docs/wan-emulation.md): a [`DelayLine`] holds each item for a
//! fixed time after it was pushed and then hands it on, in push order, from a task of its own,
//! so a delayed connection never blocks the thread that sends on it nor any other connection.
//!
//! One line per connection and direction: with a fixed delay, items leave in the order they
//! came (FIFO), and the line's task sleeps only until the head item is due. The tokio timer
//! rounds a sleep up to its next millisecond tick, so an item waits at least the delay and at
//! most about a millisecond more.

use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The added one-way delays of a connection, by direction, as seen by the process that owns
/// it. Zero (the default) adds nothing: no line, no task, no clock reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkDelay {
    /// Frames this process sends wait this long before they are written.
    pub send: Duration,
    /// Frames that arrive wait this long before they are handed to the receiver.
    pub receive: Duration,
}

impl LinkDelay {
    pub const NONE: LinkDelay = LinkDelay {
        send: Duration::ZERO,
        receive: Duration::ZERO,
    };

    /// Only frames sent are delayed.
    pub fn sending(d: Duration) -> LinkDelay {
        LinkDelay {
            send: d,
            receive: Duration::ZERO,
        }
    }

    /// Both directions: a process that applies the whole path's delay itself.
    pub fn both(d: Duration) -> LinkDelay {
        LinkDelay {
            send: d,
            receive: d,
        }
    }
}

/// Items pushed wait `delay`, then go to the line's output, in push order.
pub struct DelayLine<T> {
    tx: mpsc::Sender<(Instant, T)>,
    capacity: usize,
}

impl<T> Clone for DelayLine<T> {
    fn clone(&self) -> Self {
        DelayLine {
            tx: self.tx.clone(),
            capacity: self.capacity,
        }
    }
}

impl<T: Send + 'static> DelayLine<T> {
    /// A line holding at most `capacity` items, each handed to `deliver` `delay` after it was
    /// pushed. The line's task ends when every handle is dropped (after delivering what it
    /// holds). Must be called inside a tokio runtime.
    pub fn spawn(
        delay: Duration,
        capacity: usize,
        mut deliver: impl FnMut(T) + Send + 'static,
    ) -> DelayLine<T> {
        let (tx, mut rx) = mpsc::channel::<(Instant, T)>(capacity.max(1));
        tokio::spawn(async move {
            while let Some((pushed, item)) = rx.recv().await {
                let due = pushed + delay;
                if due > Instant::now() {
                    tokio::time::sleep_until(due).await;
                }
                deliver(item);
            }
        });
        DelayLine {
            tx,
            capacity: capacity.max(1),
        }
    }

    /// Queue `item`; `Err(item)` if the line is full or its task is gone.
    pub fn push(&self, item: T) -> Result<(), T> {
        self.tx
            .try_send((Instant::now(), item))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full((_, t))
                | mpsc::error::TrySendError::Closed((_, t)) => t,
            })
    }

    /// Items waiting in the line.
    pub fn depth(&self) -> usize {
        self.capacity - self.tx.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Every item waits at least the delay (a lower bound: nothing here asserts how much
    /// longer), and items leave in the order they came.
    #[tokio::test]
    async fn items_wait_at_least_the_delay_in_order() {
        let delay = Duration::from_millis(30);
        let seen: Arc<Mutex<Vec<(u32, Instant)>>> = Arc::default();
        let s = seen.clone();
        let line = DelayLine::spawn(delay, 16, move |i: u32| {
            s.lock().unwrap().push((i, Instant::now()));
        });
        let mut pushed = Vec::new();
        for i in 0..5u32 {
            pushed.push(Instant::now());
            line.push(i).unwrap();
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        drop(line);
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.lock().unwrap().len() < 5 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let seen = seen.lock().unwrap();
        let order: Vec<u32> = seen.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [0, 1, 2, 3, 4]);
        for (i, at) in seen.iter() {
            let waited = *at - pushed[*i as usize];
            assert!(waited >= delay, "item {i} waited only {waited:?}");
        }
    }

    #[tokio::test]
    async fn a_full_line_gives_the_item_back() {
        let line = DelayLine::spawn(Duration::from_secs(60), 2, |_: u8| {});
        assert!(line.push(1).is_ok());
        // The line's task takes the first item and sleeps holding it: the line has room for
        // two more (this test runtime runs one task at a time, so nothing races here).
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(line.push(2).is_ok());
        assert!(line.push(3).is_ok());
        assert_eq!(line.push(4), Err(4));
        assert_eq!(line.depth(), 2);
    }
}
