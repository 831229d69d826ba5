//! Redis pub/sub at the gateway: one pool identity (the first) subscribes for every local
//! connection; the replicated store counts the connections behind each channel and pattern
//! (so `PUBLISH` answers the cluster-wide number of receivers) and pushes each message once to
//! this identity; the [`PushRouter`] fans it out to the subscribed connections as `message`
//! and `pmessage` frames.
//!
//! Every (un)subscription of a connection is one ordered operation, and the connection's
//! confirmation waits for it: a `PUBLISH` that any client sends after the confirmation is
//! ordered after the subscription, so it counts and reaches the connection. The connection
//! listens locally *before* the operation is sent, so a message ordered right after the
//! subscription is not lost to a push that overtakes the reply.

use plumb_gateway::pool::Pool;
use plumb_gateway::push_router::{ListenerId, PushRouter};
use plumb_kv::pubsub::Message;
use plumb_kv::{KvOp, KvResult};
use plumb_resp::pubsub::{confirmation, message, pmessage};
use plumb_resp::Resp;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::{mpsc, OnceCell};

/// What a connection listens to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Topic {
    Channel(Vec<u8>),
    Pattern(Vec<u8>),
}

fn topic(patterns: bool, name: Vec<u8>) -> Topic {
    if patterns {
        Topic::Pattern(name)
    } else {
        Topic::Channel(name)
    }
}

/// The gateway's pub/sub hub.
pub struct PubSubHub {
    pool: Arc<Pool>,
    /// The identity the cluster pushes messages to.
    subscriber: u32,
    router: Arc<PushRouter<Topic, Resp>>,
    /// Cleared the identity's subscriptions left by an earlier run of this gateway (whose
    /// connections are gone): done once, before the first subscription of this run.
    reset: OnceCell<()>,
}

/// The frames a pushed payload makes: `message` to the channel's listeners, `pmessage` to each
/// matched pattern's. `None` if it does not decode.
fn frames(payload: &[u8]) -> Option<Vec<(Topic, Resp)>> {
    let m = Message::decode(payload).ok()?;
    let mut out = Vec::with_capacity(m.patterns.len() + 1);
    if m.to_channel {
        out.push((
            Topic::Channel(m.channel.clone()),
            message(&m.channel, &m.message),
        ));
    }
    for p in &m.patterns {
        out.push((
            Topic::Pattern(p.clone()),
            pmessage(p, &m.channel, &m.message),
        ));
    }
    Some(out)
}

impl PubSubHub {
    /// A hub pushing through the pool's first identity.
    pub fn new(pool: Arc<Pool>) -> Arc<PubSubHub> {
        let subscriber = pool.clients.first().copied().unwrap_or(0);
        Arc::new(PubSubHub {
            pool,
            subscriber,
            router: Arc::default(),
            reset: OnceCell::new(),
        })
    }

    /// Start routing the identity's pushes and clear its stale subscriptions. Call once, in a
    /// tokio runtime, before serving connections.
    pub fn start(self: &Arc<Self>) {
        let events = self.pool.push_events();
        tokio::spawn(self.router.clone().run(events, self.subscriber, frames));
        let hub = self.clone();
        tokio::spawn(async move { hub.ensure_reset().await });
    }

    async fn ensure_reset(&self) {
        self.reset
            .get_or_init(|| async {
                let op = KvOp::ResetSubscriptions {
                    subscriber: self.subscriber,
                };
                // Fails only when the pool stops; nothing to subscribe for then.
                let _ = self.pool.call(op.encode(), false).await;
            })
            .await;
    }

    /// Messages lost to connections that fell behind, and pushes that did not decode.
    pub fn dropped(&self) -> (u64, u64) {
        (self.router.dropped(), self.router.malformed())
    }

    async fn call(&self, op: KvOp) -> Result<(), String> {
        self.ensure_reset().await;
        match self.pool.call(op.encode(), false).await {
            Ok(bytes) => match KvResult::decode(&bytes) {
                Ok(KvResult::Ok) => Ok(()),
                Ok(KvResult::Error(e)) => Err(e),
                Ok(_) | Err(_) => Err("ERR the cluster's answer has the wrong shape".into()),
            },
            Err(e) => Err(format!("ERR {e}")),
        }
    }

    fn change(&self, subscribe: bool, channels: Vec<Vec<u8>>, patterns: Vec<Vec<u8>>) -> KvOp {
        KvOp::subscription(subscribe, self.subscriber, channels, patterns)
    }
}

/// One connection's subscriptions. Dropping it (the connection closed) stops its messages and
/// takes its subscriptions out of the cluster's counts.
pub struct Subscriber {
    hub: Arc<PubSubHub>,
    id: ListenerId,
    rx: mpsc::Receiver<Resp>,
    channels: BTreeSet<Vec<u8>>,
    patterns: BTreeSet<Vec<u8>>,
}

impl Subscriber {
    pub fn new(hub: &Arc<PubSubHub>) -> Subscriber {
        let (id, rx) = hub.router.add_listener();
        Subscriber {
            hub: hub.clone(),
            id,
            rx,
            channels: BTreeSet::new(),
            patterns: BTreeSet::new(),
        }
    }

    /// Channels and patterns: the count the confirmations carry. Non-zero is subscribed mode.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Channels, and patterns, subscribed to (`CLIENT LIST`'s `sub` and `psub`).
    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    pub fn patterns(&self) -> usize {
        self.patterns.len()
    }

    /// The next message for the connection.
    pub async fn next(&mut self) -> Option<Resp> {
        self.rx.recv().await
    }

    fn set(&mut self, patterns: bool) -> &mut BTreeSet<Vec<u8>> {
        if patterns {
            &mut self.patterns
        } else {
            &mut self.channels
        }
    }

    /// `SUBSCRIBE` / `PSUBSCRIBE`: one confirmation per name, after the cluster counted the
    /// new ones; an error reply (and no change) if it could not.
    pub async fn subscribe(&mut self, patterns: bool, names: Vec<Vec<u8>>) -> Vec<Resp> {
        let kind = if patterns { "psubscribe" } else { "subscribe" };
        let mut fresh = Vec::new();
        let mut replies = Vec::with_capacity(names.len());
        for name in names {
            if self.set(patterns).insert(name.clone()) {
                self.hub
                    .router
                    .listen(self.id, topic(patterns, name.clone()));
                fresh.push(name.clone());
            }
            replies.push(confirmation(kind, Some(&name), self.count()));
        }
        if fresh.is_empty() {
            return replies;
        }
        let op = if patterns {
            self.hub.change(true, Vec::new(), fresh.clone())
        } else {
            self.hub.change(true, fresh.clone(), Vec::new())
        };
        if let Err(e) = self.hub.call(op).await {
            for name in fresh {
                self.set(patterns).remove(&name);
                self.hub.router.unlisten(self.id, &topic(patterns, name));
            }
            return vec![Resp::Error(e)];
        }
        replies
    }

    /// `UNSUBSCRIBE` / `PUNSUBSCRIBE` (no names: all of that kind, in byte order): one
    /// confirmation per name, or one with a nil name if there was nothing to unsubscribe.
    pub async fn unsubscribe(&mut self, patterns: bool, names: Vec<Vec<u8>>) -> Vec<Resp> {
        let kind = if patterns {
            "punsubscribe"
        } else {
            "unsubscribe"
        };
        let names: Vec<Vec<u8>> = if names.is_empty() {
            self.set(patterns).iter().cloned().collect()
        } else {
            names
        };
        if names.is_empty() {
            return vec![confirmation(kind, None, self.count())];
        }
        let mut gone = Vec::new();
        let mut replies = Vec::with_capacity(names.len());
        for name in names {
            if self.set(patterns).remove(&name) {
                self.hub
                    .router
                    .unlisten(self.id, &topic(patterns, name.clone()));
                gone.push(name.clone());
            }
            replies.push(confirmation(kind, Some(&name), self.count()));
        }
        if !gone.is_empty() {
            let op = if patterns {
                self.hub.change(false, Vec::new(), gone)
            } else {
                self.hub.change(false, gone, Vec::new())
            };
            // Locally it is unsubscribed whatever the cluster said; a count the cluster keeps
            // too high is cleared when this gateway restarts (ResetSubscriptions).
            if let Err(e) = self.hub.call(op).await {
                return vec![Resp::Error(e)];
            }
        }
        replies
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.hub.router.remove_listener(self.id);
        if self.count() == 0 {
            return;
        }
        let op = self.hub.change(
            false,
            std::mem::take(&mut self.channels).into_iter().collect(),
            std::mem::take(&mut self.patterns).into_iter().collect(),
        );
        let hub = self.hub.clone();
        // The connection is gone; its subscriptions leave the cluster's counts behind it.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = hub.call(op).await;
            });
        }
    }
}
