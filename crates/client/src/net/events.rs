//! Push events (seed 004 §5.5): what the application sends a client without being asked (a
//! watch firing, a message on a channel). An event reaches the subscriber once `r + 1`
//! execution replicas sent the same payload for its id, and at most once. The channel is
//! unreliable by design: events are not resent, and a subscriber that falls behind loses the
//! oldest ones (counted in [`PushEvents::missed`]).

use tokio::sync::broadcast;

/// How many undelivered events a subscriber may fall behind before it loses the oldest.
pub(crate) const EVENT_BACKLOG: usize = 1024;

/// One push event, vouched for by `r + 1` execution replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushEvent {
    /// The client identity it was sent to.
    pub client: u32,
    /// Its id, unique per client identity: the application numbers its events.
    pub event: u64,
    /// What the application sent.
    pub payload: Vec<u8>,
}

/// A subscription to a client's push events, from [`Client::push_events`](crate::net::Client::push_events).
///
/// It sees the events delivered after it was made. Several subscriptions each see every event.
pub struct PushEvents {
    rx: broadcast::Receiver<PushEvent>,
    missed: u64,
}

impl PushEvents {
    pub(crate) fn new(rx: broadcast::Receiver<PushEvent>) -> PushEvents {
        PushEvents { rx, missed: 0 }
    }

    /// The next event; `None` once the client has shut down.
    pub async fn next(&mut self) -> Option<PushEvent> {
        loop {
            match self.rx.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(n)) => self.missed += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<PushEvent> {
        loop {
            match self.rx.try_recv() {
                Ok(event) => return Some(event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.missed += n,
                Err(_) => return None,
            }
        }
    }

    /// Events this subscription lost because it fell more than 1024 behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: u64) -> PushEvent {
        PushEvent {
            client: 1,
            event: id,
            payload: vec![id as u8],
        }
    }

    #[test]
    fn a_subscriber_that_falls_behind_loses_the_oldest_events_and_counts_them() {
        let (tx, rx) = broadcast::channel(EVENT_BACKLOG);
        let mut events = PushEvents::new(rx);
        for id in 0..EVENT_BACKLOG as u64 + 10 {
            tx.send(event(id)).unwrap();
        }
        assert_eq!(events.try_next(), Some(event(10)));
        assert_eq!(events.missed(), 10);
        drop(tx);
        let mut rest = 0;
        while events.try_next().is_some() {
            rest += 1;
        }
        assert_eq!(rest, EVENT_BACKLOG - 1);
    }
}
