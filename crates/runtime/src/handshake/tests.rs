use super::*;
use crate::link::codec;
use plumb_crypto::MacKey;
use std::collections::HashMap;
use tokio::io::DuplexStream;

/// Node `me`'s keys: one per peer, the same bytes on both ends of a pair.
struct Keys {
    me: u16,
    keys: HashMap<u16, MacKey>,
}

impl NodeKeys for Keys {
    fn me(&self) -> u16 {
        self.me
    }
    fn mac(&self, peer: u16, bytes: &[u8]) -> Option<Mac> {
        self.keys.get(&peer).map(|k| k.mac(bytes))
    }
    fn verify(&self, peer: u16, bytes: &[u8], mac: &Mac) -> bool {
        self.keys.get(&peer).is_some_and(|k| k.verify(bytes, mac))
    }
}

fn pair_key(a: u16, b: u16) -> MacKey {
    let (lo, hi) = (a.min(b) as u8, a.max(b) as u8);
    MacKey::from_bytes([lo.wrapping_mul(16).wrapping_add(hi); 32])
}

/// Node `me` of a three-node cluster (nodes 0, 1, 2).
fn node(me: u16) -> Keys {
    Keys {
        me,
        keys: (0..3)
            .filter(|n| *n != me)
            .map(|n| (n, pair_key(me, n)))
            .collect(),
    }
}

fn pipe() -> (Framed<DuplexStream>, Framed<DuplexStream>) {
    let (a, b) = tokio::io::duplex(1 << 16);
    (
        tokio_util::codec::Framed::new(a, codec()),
        tokio_util::codec::Framed::new(b, codec()),
    )
}

/// Node `acceptor` reading a connection's first frame and running the handshake; the
/// connection closes when it returns, as the node closes a refused one.
async fn accept_on(
    mut framed: Framed<DuplexStream>,
    acceptor: &Keys,
    timeout: Duration,
) -> Result<u16, Refused> {
    let first = next(&mut framed).await?;
    assert!(is_hello(&first));
    accept(&mut framed, acceptor, &first, timeout).await
}

#[tokio::test]
async fn a_correct_answer_binds_the_connection_to_the_dialing_node() {
    let (mut a, mut b) = pipe();
    let (dialer, acceptor) = (node(1), node(0));
    let accepting = async {
        let first = next(&mut b).await?;
        accept(&mut b, &acceptor, &first, TIMEOUT).await
    };
    let (dialed, accepted) = tokio::join!(dial(&mut a, &dialer, 0, TIMEOUT), accepting);
    assert_eq!(dialed, Ok(()));
    assert_eq!(accepted, Ok(1));
    // Ordinary frames flow afterwards, above the handshake's size limit.
    a.send(Bytes::from(vec![7u8; 10_000])).await.unwrap();
    assert_eq!(b.next().await.unwrap().unwrap().len(), 10_000);
}

#[tokio::test]
async fn a_dialer_with_the_wrong_key_is_refused() {
    let (mut a, b) = pipe();
    let mut impostor = node(1);
    impostor.keys.insert(0, MacKey::from_bytes([0xEE; 32]));
    let acceptor = node(0);
    let (dialed, accepted) = tokio::join!(
        dial(&mut a, &impostor, 0, TIMEOUT),
        accept_on(b, &acceptor, TIMEOUT)
    );
    assert_eq!(accepted, Err(Refused::BadMac));
    // The acceptor closes without a Welcome: the dialer sees it fail too.
    assert_eq!(dialed, Err(Refused::Closed));
}

#[tokio::test]
async fn a_node_claiming_another_nodes_id_is_refused() {
    // Node 2 says it is node 1, but can only compute MACs under its own keys (here: the key
    // it shares with node 0, presented as node 1's).
    let (mut a, b) = pipe();
    let liar = Keys {
        me: 1,
        keys: [(0, pair_key(2, 0))].into_iter().collect(),
    };
    let acceptor = node(0);
    let (_, accepted) = tokio::join!(
        dial(&mut a, &liar, 0, TIMEOUT),
        accept_on(b, &acceptor, TIMEOUT)
    );
    assert_eq!(accepted, Err(Refused::BadMac));
}

#[test]
fn hellos_for_another_node_from_unknown_nodes_or_from_itself_are_refused() {
    let me = node(0);
    let nonce = [1; NONCE];
    assert_eq!(
        Challenge::on_hello(&me, &hello(1, 2), nonce).unwrap_err(),
        Refused::WrongNode
    );
    assert_eq!(
        Challenge::on_hello(&me, &hello(9, 0), nonce).unwrap_err(),
        Refused::UnknownNode
    );
    assert_eq!(
        Challenge::on_hello(&me, &hello(0, 0), nonce).unwrap_err(),
        Refused::UnknownNode
    );
}

#[test]
fn an_answer_recorded_on_one_connection_does_not_verify_on_another() {
    let (dialer, acceptor) = (node(1), node(0));
    let first = Challenge::on_hello(&acceptor, &hello(1, 0), [3; NONCE]).unwrap();
    let recorded = answer(&dialer, 0, &first.frame()).unwrap();
    assert_eq!(first.check(&acceptor, &recorded), Ok(1));
    // A later connection gets a fresh nonce; replaying the recorded answer fails.
    let later = Challenge::on_hello(&acceptor, &hello(1, 0), [4; NONCE]).unwrap();
    assert_eq!(later.check(&acceptor, &recorded), Err(Refused::BadMac));
    // And an answer is bound to the node it was computed for: node 2 cannot reuse it.
    let other = Challenge::on_hello(&node(2), &hello(1, 2), [3; NONCE]).unwrap();
    assert_eq!(other.check(&node(2), &recorded), Err(Refused::BadMac));
}

#[test]
fn garbage_at_any_step_is_refused_without_panicking() {
    let me = node(0);
    let ch = Challenge::on_hello(&me, &hello(1, 0), [5; NONCE]).unwrap();
    // Every prefix and one-byte extension of every handshake frame, plus pseudo-random bytes
    // behind the magic: each is refused at every step that does not expect exactly it.
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for f in [
        hello(1, 0),
        ch.frame(),
        answer(&node(1), 0, &ch.frame()).unwrap(),
        welcome(),
    ] {
        for cut in 0..f.len() {
            inputs.push(f[..cut].to_vec());
        }
        let mut longer = f.clone();
        longer.push(0);
        inputs.push(longer);
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for len in 0..200 {
        let mut f = MAGIC.to_vec();
        for _ in 0..len % 60 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f.push(x as u8);
        }
        inputs.push(f);
    }
    for f in &inputs {
        assert!(Challenge::on_hello(&me, f, [0; NONCE]).is_err() || f == &hello(1, 0));
        assert!(ch.check(&me, f).is_err());
        assert!(answer(&node(1), 0, f).is_err());
        assert!(payload(f, WELCOME, 0).is_err() || f == &welcome());
    }
}

#[tokio::test]
async fn an_oversize_frame_mid_handshake_is_refused_unread() {
    let (mut a, b) = pipe();
    a.send(Bytes::from(hello(1, 0))).await.unwrap();
    let acceptor = tokio::spawn(async move { accept_on(b, &node(0), TIMEOUT).await });
    let _challenge = a.next().await.unwrap().unwrap();
    // A length prefix far above the handshake limit (but within the ordinary one).
    a.send(Bytes::from(vec![0u8; 10_000])).await.unwrap();
    assert_eq!(acceptor.await.unwrap(), Err(Refused::Oversize));
}

#[tokio::test]
async fn a_dialer_that_stops_answering_times_out() {
    let (mut a, b) = pipe();
    a.send(Bytes::from(hello(1, 0))).await.unwrap();
    // Short timeout so the test is quick; the result, not the time taken, is asserted.
    let accepted = accept_on(b, &node(0), Duration::from_millis(50)).await;
    assert_eq!(accepted, Err(Refused::Timeout));
    // The dialer side times out the same way against a silent acceptor.
    let (mut c, _d) = pipe();
    let dialed = dial(&mut c, &node(1), 0, Duration::from_millis(50)).await;
    assert_eq!(dialed, Err(Refused::Timeout));
}

#[test]
fn envelopes_are_never_taken_for_a_hello() {
    // What a client's first frame starts with.
    assert!(!is_hello(b"PB\x01rest of an envelope"));
    assert!(!is_hello(b""));
    assert!(is_hello(&hello(1, 0)));
}

#[test]
fn a_client_hello_is_neither_a_peer_hello_nor_an_envelope() {
    assert!(is_client_hello(&client_hello()));
    assert!(!is_hello(&client_hello()));
    assert!(!is_client_hello(&hello(1, 0)));
    assert!(!is_client_hello(b"PB\x01rest of an envelope"));
}

#[tokio::test]
async fn every_client_connection_gets_a_nonce_of_its_own() {
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let (mut client, node_end) = pipe();
        let node_side = tokio::spawn(async move {
            let mut node_end = node_end;
            let first = node_end.next().await.unwrap().unwrap();
            assert!(is_client_hello(&first));
            challenge_client(&mut node_end, TIMEOUT).await.unwrap()
        });
        let seen = client_nonce(&mut client, TIMEOUT).await.unwrap();
        assert_eq!(seen, node_side.await.unwrap());
        nonces.push(seen);
    }
    assert_ne!(nonces[0], nonces[1], "a nonce was used twice");
}

#[tokio::test]
async fn a_client_whose_node_does_not_answer_times_out() {
    let (mut client, _silent) = pipe();
    let got = client_nonce(&mut client, Duration::from_millis(50)).await;
    assert_eq!(got, Err(Refused::Timeout));
}
