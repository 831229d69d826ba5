//! Pub/sub as replicated state: subscriptions change in order, `PUBLISH` pushes one message per
//! receiving identity, and the subscriptions travel in checkpoints (whole and as objects).

use plumb_app::{Application, Command, NonDeterminism, ObjectState};
use plumb_kv::pubsub::Message;
use plumb_kv::{KvOp, KvResult, KvStore};
use plumb_wire::{Life, ReqNo, Seq};

mod common;
use common::set;

fn v(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn batch(store: &mut KvStore, time: u64, ops: &[KvOp]) -> (Vec<KvResult>, Vec<(u32, Vec<u8>)>) {
    let encoded: Vec<Vec<u8>> = ops.iter().map(KvOp::encode).collect();
    let commands: Vec<Command<'_>> = encoded
        .iter()
        .enumerate()
        .map(|(i, op)| Command::new(40, Life(0), ReqNo(i as u64 + 1), op))
        .collect();
    let out = store.execute(Seq(time), &commands, NonDeterminism { time, seed: 1 });
    let replies = out
        .replies
        .iter()
        .map(|r| KvResult::decode(r).unwrap())
        .collect();
    (replies, out.pushes)
}

fn subscribe(subscriber: u32, channels: &[&str], patterns: &[&str]) -> KvOp {
    KvOp::Subscribe {
        subscriber,
        channels: channels.iter().map(|c| v(c)).collect(),
        patterns: patterns.iter().map(|p| v(p)).collect(),
    }
}

fn publish(channel: &str, message: &str) -> KvOp {
    KvOp::Publish {
        channel: v(channel),
        message: v(message),
    }
}

#[test]
fn publish_counts_connections_and_pushes_to_subscribed_identities() {
    let mut s = KvStore::new();
    let (replies, pushes) = batch(
        &mut s,
        1,
        &[
            subscribe(1, &["news", "news"], &[]),
            subscribe(2, &[], &["n*"]),
            publish("news", "hello"),
            publish("sport", "nobody"),
        ],
    );
    assert_eq!(
        replies,
        vec![
            KvResult::Ok,
            KvResult::Ok,
            KvResult::Int(3),
            KvResult::Int(0)
        ]
    );
    assert_eq!(pushes.len(), 2);
    assert_eq!(pushes[0].0, 1);
    assert_eq!(pushes[1].0, 2);
    let m = Message::decode(&pushes[1].1).unwrap();
    assert_eq!(m.patterns, vec![v("n*")]);
    assert_eq!(m.message, v("hello"));
    // Only this batch's pushes come out of the next batch.
    let (_, pushes) = batch(&mut s, 2, &[KvOp::PubSubNumPat]);
    assert!(pushes.is_empty());
}

#[test]
fn a_publish_inside_a_transaction_pushes_only_if_it_runs() {
    let mut s = KvStore::new();
    batch(&mut s, 1, &[subscribe(1, &["c"], &[])]);
    let tx = KvOp::Transaction {
        watched: vec![plumb_kv::Watched {
            key: v("k"),
            fingerprint: [9; 32],
        }],
        ops: vec![publish("c", "m").encode()],
    };
    let (replies, pushes) = batch(&mut s, 2, &[tx]);
    assert_eq!(replies, vec![KvResult::Aborted]);
    assert!(pushes.is_empty());
    let pipe = KvOp::Pipeline {
        ops: vec![publish("c", "m1").encode(), publish("c", "m2").encode()],
    };
    let (_, pushes) = batch(&mut s, 3, &[pipe]);
    let messages: Vec<Vec<u8>> = pushes
        .iter()
        .map(|(_, p)| Message::decode(p).unwrap().message)
        .collect();
    assert_eq!(messages, vec![v("m1"), v("m2")], "in publish order");
}

#[test]
fn reads_and_reset() {
    let mut s = KvStore::new();
    batch(
        &mut s,
        1,
        &[
            subscribe(1, &["a", "b"], &["p*"]),
            subscribe(2, &["a"], &["p*", "q*"]),
        ],
    );
    assert_eq!(
        s.read(&KvOp::PubSubChannels { pattern: None }),
        KvResult::Items(vec![v("a"), v("b")])
    );
    assert_eq!(
        s.read(&KvOp::PubSubNumSub {
            channels: vec![v("a"), v("b"), v("c")]
        }),
        KvResult::Counts(vec![(v("a"), 2), (v("b"), 1), (v("c"), 0)])
    );
    assert_eq!(s.read(&KvOp::PubSubNumPat), KvResult::Int(2));
    assert_eq!(
        s.read(&publish("a", "x")),
        KvResult::error(plumb_kv::ERR_NOT_READ_ONLY)
    );
    let (replies, _) = batch(&mut s, 2, &[KvOp::ResetSubscriptions { subscriber: 1 }]);
    assert_eq!(replies, vec![KvResult::Int(3)]);
    assert_eq!(
        s.read(&KvOp::PubSubChannels { pattern: None }),
        KvResult::Items(vec![v("a")])
    );
    let (replies, _) = batch(
        &mut s,
        3,
        &[KvOp::Unsubscribe {
            subscriber: 2,
            channels: vec![v("a")],
            patterns: vec![v("p*"), v("q*")],
        }],
    );
    assert_eq!(replies, vec![KvResult::Ok]);
    assert!(s.subscriptions().is_empty());
}

#[test]
fn subscriptions_are_in_checkpoints_and_digests() {
    let mut a = KvStore::new();
    let mut b = KvStore::new();
    let ops = [set("k", "x"), subscribe(3, &["c"], &["*"])];
    batch(&mut a, 1, &ops);
    batch(&mut b, 1, &ops);
    assert_eq!(a.state_digest(), b.state_digest(), "two stores agree");
    let mut plain = KvStore::new();
    batch(&mut plain, 1, &ops[..1]);
    assert_ne!(
        a.state_digest(),
        plain.state_digest(),
        "the digest covers them"
    );

    // Whole checkpoint round trip.
    let cp = a.take_checkpoint();
    let mut loaded = KvStore::new();
    loaded.load_checkpoint(&cp).unwrap();
    assert_eq!(loaded, a);
    assert_eq!(loaded.take_checkpoint(), cp);
    // A state without subscriptions encodes as before pub/sub: old checkpoints load.
    let old = plain.take_checkpoint();
    let mut from_old = KvStore::new();
    from_old.load_checkpoint(&old).unwrap();
    assert!(from_old.subscriptions().is_empty());
    // Junk after the entries is refused, not a panic.
    let mut junk = old.clone();
    junk.extend_from_slice(b"\xff\xff");
    assert!(KvStore::new().load_checkpoint(&junk).is_err());

    // As objects: the subscriptions are the metadata.
    let meta = a.object_metadata();
    assert!(!meta.is_empty());
    let mut c = KvStore::new();
    for (id, bytes) in a.clone().take_changed_objects() {
        c.load_object(id, bytes.as_deref()).unwrap();
    }
    c.load_object_metadata(&meta).unwrap();
    assert_eq!(c, a);
    let (replies, pushes) = batch(&mut c, 2, &[publish("c", "m")]);
    assert_eq!(replies, vec![KvResult::Int(2)]);
    assert_eq!(pushes.len(), 1);
    assert!(c.load_object_metadata(b"\x05\x05").is_err());
    assert!(plain.object_metadata().is_empty());
}
