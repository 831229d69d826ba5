//! Redis pub/sub as replicated state: who subscribes to what, and the messages a `PUBLISH`
//! pushes.
//!
//! A subscriber here is a client *identity* (a gateway's designated pool identity), not a Redis
//! connection: one gateway serves many connections through one identity. For each identity the
//! store keeps its channels and patterns with the number of connections behind each, so that
//! `PUBLISH` can answer the cluster-wide number of receiving connections, as one Redis server
//! does, while it pushes one message per receiving identity (the gateway fans it out).
//!
//! The subscriptions are state like any key: every replica changes them at the same point in
//! the order, and they are part of the checkpoint (appended to the whole-state encoding, and
//! the object metadata), so a replica that loaded a checkpoint pushes to the same identities
//! as its peers. A message is not state: it is pushed when `PUBLISH` executes and never again.

use crate::glob::glob_match;
use crate::op::DecodeError;
use plumb_wire::ClientId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Version byte of a pushed [`Message`].
pub const PUSH_VERSION: u8 = 1;

/// One identity's subscriptions: channel or pattern -> connections behind it (never 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subs {
    pub channels: BTreeMap<Vec<u8>, u64>,
    pub patterns: BTreeMap<Vec<u8>, u64>,
}

impl Subs {
    fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty()
    }
}

/// Every identity's subscriptions. An identity without any is not stored, so equal
/// subscriptions have equal bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscriptions {
    by_client: BTreeMap<ClientId, Subs>,
}

/// What a `PUBLISH` pushes to one subscriber identity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    #[serde(with = "serde_bytes")]
    pub channel: Vec<u8>,
    #[serde(with = "serde_bytes")]
    pub message: Vec<u8>,
    /// The identity subscribes to the channel itself (its connections get `message`).
    pub to_channel: bool,
    /// The identity's patterns that match the channel, in byte order (`pmessage` each).
    pub patterns: Vec<Vec<u8>>,
}

impl Message {
    pub fn encode(&self) -> Vec<u8> {
        plumb_app::codec::encode_versioned(PUSH_VERSION, self)
    }

    /// Total: any bytes give a message or an error (pushed bytes come from replicas).
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        plumb_app::codec::decode_versioned(PUSH_VERSION, bytes)
    }
}

fn add(counts: &mut BTreeMap<Vec<u8>, u64>, name: &[u8]) {
    let n = counts.entry(name.to_vec()).or_insert(0);
    *n = n.saturating_add(1);
}

/// One fewer connection behind `name`; gone at zero. Removing what is not there is a no-op:
/// a gateway that restarted (and reset) may unsubscribe a connection it no longer counts.
fn sub(counts: &mut BTreeMap<Vec<u8>, u64>, name: &[u8]) {
    if let Some(n) = counts.get_mut(name) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(name);
        }
    }
}

impl Subscriptions {
    pub fn is_empty(&self) -> bool {
        self.by_client.is_empty()
    }

    /// The subscriptions of `client`, if it has any.
    pub fn of(&self, client: ClientId) -> Option<&Subs> {
        self.by_client.get(&client)
    }

    /// One more connection of `client` behind each channel and pattern (a name listed twice
    /// counts twice: the gateway lists one per connection that subscribed).
    pub fn subscribe(&mut self, client: ClientId, channels: &[Vec<u8>], patterns: &[Vec<u8>]) {
        let subs = self.by_client.entry(client).or_default();
        channels.iter().for_each(|c| add(&mut subs.channels, c));
        patterns.iter().for_each(|p| add(&mut subs.patterns, p));
        self.tidy(client);
    }

    /// One fewer connection of `client` behind each channel and pattern.
    pub fn unsubscribe(&mut self, client: ClientId, channels: &[Vec<u8>], patterns: &[Vec<u8>]) {
        if let Some(subs) = self.by_client.get_mut(&client) {
            channels.iter().for_each(|c| sub(&mut subs.channels, c));
            patterns.iter().for_each(|p| sub(&mut subs.patterns, p));
        }
        self.tidy(client);
    }

    /// Forget every subscription of `client` (its gateway started afresh). Replies how many
    /// channel and pattern entries it had.
    pub fn reset(&mut self, client: ClientId) -> usize {
        self.by_client
            .remove(&client)
            .map_or(0, |s| s.channels.len() + s.patterns.len())
    }

    fn tidy(&mut self, client: ClientId) {
        if self.by_client.get(&client).is_some_and(Subs::is_empty) {
            self.by_client.remove(&client);
        }
    }

    /// `PUBLISH`: the number of receiving connections cluster-wide (a connection subscribed to
    /// the channel and to a matching pattern counts twice, as in Redis), and one push per
    /// receiving identity, in identity order.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> (u64, Vec<(ClientId, Vec<u8>)>) {
        let mut receivers = 0u64;
        let mut pushes = Vec::new();
        for (&client, subs) in &self.by_client {
            let on_channel = subs.channels.get(channel).copied().unwrap_or(0);
            let mut patterns = Vec::new();
            for (pattern, n) in &subs.patterns {
                if glob_match(pattern, channel) {
                    receivers = receivers.saturating_add(*n);
                    patterns.push(pattern.clone());
                }
            }
            receivers = receivers.saturating_add(on_channel);
            if on_channel == 0 && patterns.is_empty() {
                continue;
            }
            let m = Message {
                channel: channel.to_vec(),
                message: message.to_vec(),
                to_channel: on_channel > 0,
                patterns,
            };
            pushes.push((client, m.encode()));
        }
        (receivers, pushes)
    }

    /// `PUBSUB CHANNELS [pattern]`: channels with at least one subscriber, in byte order.
    pub fn channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let all: BTreeSet<&Vec<u8>> = self
            .by_client
            .values()
            .flat_map(|s| s.channels.keys())
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c)))
            .collect();
        all.into_iter().cloned().collect()
    }

    /// `PUBSUB NUMSUB`: subscribed connections per channel (patterns not counted, as in Redis).
    pub fn numsub(&self, channels: &[Vec<u8>]) -> Vec<i64> {
        channels
            .iter()
            .map(|c| {
                let n: u64 = self
                    .by_client
                    .values()
                    .filter_map(|s| s.channels.get(c))
                    .fold(0, |a, n| a.saturating_add(*n));
                i64::try_from(n).unwrap_or(i64::MAX)
            })
            .collect()
    }

    /// `PUBSUB NUMPAT`: distinct patterns subscribed to (Redis 7 counts unique patterns).
    pub fn numpat(&self) -> usize {
        self.by_client
            .values()
            .flat_map(|s| s.patterns.keys())
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// Canonical bytes: postcard of the map (no version byte: it rides inside versioned
    /// encodings).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain data into a Vec cannot fail.
        postcard::to_stdvec(self).unwrap_or_default()
    }

    /// The subscriptions `bytes` encode, if exactly a canonical encoding (no empty identity,
    /// no zero count).
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Subscriptions> {
        let s: Subscriptions = match postcard::take_from_bytes(bytes) {
            Ok((s, [])) => s,
            _ => return None,
        };
        let canonical = s.by_client.values().all(|subs| {
            !subs.is_empty()
                && subs
                    .channels
                    .values()
                    .chain(subs.patterns.values())
                    .all(|n| *n > 0)
        });
        canonical.then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn counts_follow_connections_and_vanish_at_zero() {
        let mut s = Subscriptions::default();
        s.subscribe(1, &[v("a"), v("a"), v("b")], &[]);
        assert_eq!(s.numsub(&[v("a"), v("b"), v("c")]), vec![2, 1, 0]);
        s.unsubscribe(1, &[v("a"), v("b")], &[]);
        assert_eq!(s.numsub(&[v("a"), v("b")]), vec![1, 0]);
        assert_eq!(s.channels(None), vec![v("a")]);
        s.unsubscribe(1, &[v("a"), v("a"), v("zzz")], &[v("p*")]);
        assert!(s.is_empty(), "nothing left is nothing stored");
    }

    #[test]
    fn publish_counts_connections_and_pushes_once_per_identity() {
        let mut s = Subscriptions::default();
        s.subscribe(1, &[v("news"), v("news")], &[v("n*")]);
        s.subscribe(2, &[], &[v("*s"), v("x*")]);
        s.subscribe(3, &[v("other")], &[]);
        let (n, pushes) = s.publish(b"news", b"hi");
        assert_eq!(
            n, 4,
            "two on the channel, one per matching pattern connection"
        );
        assert_eq!(pushes.len(), 2);
        let m1 = Message::decode(&pushes[0].1).unwrap();
        assert_eq!(pushes[0].0, 1);
        assert!(m1.to_channel);
        assert_eq!(m1.patterns, vec![v("n*")]);
        let m2 = Message::decode(&pushes[1].1).unwrap();
        assert_eq!(pushes[1].0, 2);
        assert!(!m2.to_channel);
        assert_eq!(m2.patterns, vec![v("*s")]);
        assert_eq!((m2.channel, m2.message), (v("news"), v("hi")));
        assert_eq!(s.publish(b"quiet", b"x").0, 0);
    }

    #[test]
    fn reset_forgets_one_identity_only() {
        let mut s = Subscriptions::default();
        s.subscribe(1, &[v("a")], &[v("p*")]);
        s.subscribe(2, &[v("a")], &[v("p*")]);
        assert_eq!(s.numpat(), 1, "unique patterns");
        assert_eq!(s.reset(1), 2);
        assert_eq!(s.reset(1), 0);
        assert_eq!(s.numsub(&[v("a")]), vec![1]);
        assert_eq!(s.channels(Some(b"a*")), vec![v("a")]);
        assert_eq!(s.channels(Some(b"b*")), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn encoding_round_trips_and_refuses_non_canonical_bytes() {
        let mut s = Subscriptions::default();
        s.subscribe(7, &[v("a")], &[v("p*")]);
        assert_eq!(Subscriptions::from_bytes(&s.to_bytes()), Some(s.clone()));
        let mut bad = s.clone();
        bad.by_client.insert(9, Subs::default());
        assert_eq!(Subscriptions::from_bytes(&bad.to_bytes()), None);
        let mut zero = s.clone();
        zero.by_client
            .get_mut(&7)
            .unwrap()
            .channels
            .insert(v("z"), 0);
        assert_eq!(Subscriptions::from_bytes(&zero.to_bytes()), None);
        for junk in [&b""[..], b"\xff\xff\xff", b"\x01\x07\x01"] {
            let _ = Subscriptions::from_bytes(junk);
            let _ = Message::decode(junk);
        }
    }
}
