//! The codec against a real ZooKeeper server, to check the byte layouts: set
//! `PLUMB_ZK_REFERENCE=127.0.0.1:PORT` to a standalone server (Debian's `zookeeper` package:
//! `java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
//! org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`). Without it the test does nothing.
//! The same checks run against plumb's gateway in crates/plumb/tests/zk_clients.rs.

use plumb_zk::*;
use std::io::{Read, Write};
use std::net::TcpStream;

/// A create of an empty persistent node open to all: what both multis of the test start with.
fn create_empty(path: String) -> Request {
    Request::Create {
        op: op::CREATE,
        path,
        data: Vec::new(),
        acl: open_acl(),
        flags: 0,
        ttl: 0,
    }
}

fn multi(ops: Vec<Request>) -> Request {
    Request::Multi { op: op::MULTI, ops }
}

fn check(path: &str, version: i32) -> Request {
    Request::Check {
        path: path.into(),
        version,
    }
}

struct Conn {
    s: TcpStream,
    framer: Framer,
}

impl Conn {
    fn send(&mut self, payload: &[u8]) {
        let mut out = Vec::new();
        frame_into(&mut out, payload);
        self.s.write_all(&out).unwrap();
    }
    fn recv(&mut self) -> Vec<u8> {
        loop {
            if let Some(f) = self.framer.next_frame().unwrap() {
                return f;
            }
            let mut buf = [0u8; 4096];
            let n = self.s.read(&mut buf).unwrap();
            assert!(n > 0, "server closed the connection");
            self.framer.feed(&buf[..n]);
        }
    }
    fn call(&mut self, xid: i32, req: &Request) -> (ReplyHeader, Response) {
        self.send(&encode_request(xid, req));
        loop {
            let f = self.recv();
            let (h, body) = decode_reply_header(&f).unwrap();
            if h.xid == xid::NOTIFICATION {
                continue;
            }
            assert_eq!(h.xid, xid);
            let resp = if h.err == 0 {
                Response::decode(req.op(), body).unwrap()
            } else {
                assert!(body.is_empty(), "an error reply has no body");
                Response::Empty
            };
            return (h, resp);
        }
    }
}

fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: 31,
        scheme: "world".into(),
        id: "anyone".into(),
    }]
}

/// Checks a ZooKeeper wire server (the reference, or plumb's gateway) answers as the codec
/// expects. Shared in spirit with the gateway test; kept here so the layouts are pinned to
/// the reference.
pub fn exercise(addr: &str, root: &str) {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut c = Conn {
        s,
        framer: Framer::new(DEFAULT_MAX_FRAME),
    };
    c.send(
        &ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 10_000,
            session_id: 0,
            password: vec![0; 16],
            read_only: Some(false),
        }
        .encode(),
    );
    let hs = ConnectResponse::decode(&c.recv()).unwrap();
    assert_ne!(hs.session_id, 0);
    assert_eq!(hs.password.len(), 16);
    assert_eq!(hs.read_only, Some(false));

    let (h, r) = c.call(
        1,
        &Request::Create {
            op: op::CREATE,
            path: root.into(),
            data: b"top".to_vec(),
            acl: open_acl(),
            flags: 0,
            ttl: 0,
        },
    );
    assert_eq!((h.err, r), (0, Response::Path(root.into())));
    let (h, r) = c.call(
        2,
        &Request::Create {
            op: op::CREATE2,
            path: format!("{root}/seq-"),
            data: Vec::new(),
            acl: open_acl(),
            flags: 3,
            ttl: 0,
        },
    );
    assert_eq!(h.err, 0);
    let Response::PathStat { path, stat } = r else {
        panic!("{r:?}")
    };
    assert_eq!(path, format!("{root}/seq-0000000000"));
    assert_eq!(stat.ephemeral_owner, hs.session_id);

    let (h, _) = c.call(
        3,
        &Request::Exists {
            path: format!("{root}/none"),
            watch: true,
        },
    );
    assert_eq!(h.err, err::NO_NODE);
    let (h, r) = c.call(
        4,
        &Request::GetData {
            path: root.into(),
            watch: true,
        },
    );
    assert_eq!(h.err, 0);
    let Response::Data { data, stat } = r else {
        panic!("{r:?}")
    };
    assert_eq!((data.as_slice(), stat.num_children), (&b"top"[..], 1));

    // A failed multi: header error 0, results rolled back (0), the error, then -2.
    let (h, r) = c.call(
        5,
        &multi(vec![
            create_empty(format!("{root}/m")),
            check(root, 7),
            Request::Delete {
                path: root.into(),
                version: -1,
            },
        ]),
    );
    assert_eq!(h.err, 0, "a failed multi's header has no error");
    assert_eq!(
        r,
        Response::Multi(vec![
            MultiResult::Error { err: 0 },
            MultiResult::Error { err: -103 },
            MultiResult::Error { err: -2 },
        ])
    );
    let (h, r) = c.call(
        6,
        &multi(vec![create_empty(format!("{root}/m")), check(root, 0)]),
    );
    assert_eq!(h.err, 0);
    assert_eq!(
        r,
        Response::Multi(vec![
            MultiResult::Create {
                path: format!("{root}/m")
            },
            MultiResult::Check
        ])
    );
    let (h, r) = c.call(
        7,
        &Request::GetChildren {
            op: op::GET_CHILDREN2,
            path: root.into(),
            watch: false,
        },
    );
    assert_eq!(h.err, 0);
    let Response::Children2 { mut children, stat } = r else {
        panic!("{r:?}")
    };
    children.sort();
    assert_eq!(children, vec!["m".to_string(), "seq-0000000000".into()]);
    assert_eq!(stat.num_children, 2);

    // The data watch set by getData fires before the reply to the change.
    c.send(&encode_request(
        8,
        &Request::SetData {
            path: root.into(),
            data: b"new".to_vec(),
            version: -1,
        },
    ));
    let f = c.recv();
    let (h, body) = decode_reply_header(&f).unwrap();
    assert_eq!(h.xid, xid::NOTIFICATION);
    assert_eq!(
        WatcherEvent::read(&mut Reader::new(body)).unwrap(),
        WatcherEvent {
            kind: 3,
            state: state::SYNC_CONNECTED,
            path: root.into()
        }
    );
    let f = c.recv();
    let (h, body) = decode_reply_header(&f).unwrap();
    assert_eq!((h.xid, h.err), (8, 0));
    let Response::Stat(stat) = Response::decode(op::SET_DATA, body).unwrap() else {
        panic!()
    };
    assert_eq!(stat.version, 1);

    let (h, _) = c.call(xid::PING, &Request::Ping);
    assert_eq!(h.err, 0);
    let (h, r) = c.call(9, &Request::Sync { path: root.into() });
    assert_eq!((h.err, r), (0, Response::Path(root.into())));
    let (h, _) = c.call(
        10,
        &Request::Delete {
            path: root.into(),
            version: -1,
        },
    );
    assert_eq!(h.err, -111, "not empty");
    for (x, p) in [
        (11, format!("{root}/m")),
        (12, format!("{root}/seq-0000000000")),
    ] {
        let (h, _) = c.call(
            x,
            &Request::Delete {
                path: p,
                version: -1,
            },
        );
        assert_eq!(h.err, 0);
    }
    let (h, _) = c.call(
        13,
        &Request::Delete {
            path: root.into(),
            version: 1,
        },
    );
    assert_eq!(h.err, 0);
    let (h, _) = c.call(14, &Request::CloseSession);
    assert_eq!(h.err, 0);
}

#[test]
fn the_codec_agrees_with_a_real_zookeeper_server() {
    let Ok(addr) = std::env::var("PLUMB_ZK_REFERENCE") else {
        eprintln!("PLUMB_ZK_REFERENCE not set: skipped");
        return;
    };
    let root = format!("/plumb-codec-{}", std::process::id());
    exercise(&addr, &root);
}
