//! One exchange in ZooKeeper's wire format written with plumb-zk's encoder and read with its
//! decoder, no client library in between: handshake, creates, a failed and a successful multi,
//! a watch firing before the reply of the change, ping, sync, deletes. Run against the real
//! ZooKeeper by zk_differential.rs, it pins the codec's byte layouts to the reference server.

use crate::common::zk_wire::ZkConn;
use plumb_zk::*;
use std::time::{Duration, Instant};

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

/// A session's connection, whose server is expected to answer every request.
struct Conn(ZkConn);

impl Conn {
    fn send(&mut self, payload: &[u8]) {
        self.0.send(payload);
    }
    fn recv(&mut self) -> Vec<u8> {
        self.0.recv().expect("server closed the connection")
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

/// A new session at `addr`. A starting server refuses connections, or accepts and closes
/// them until it serves, so both are retried for up to 90 s.
fn open_session(addr: &str) -> (Conn, ConnectResponse) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Ok(mut c) = ZkConn::connect(addr, Duration::from_secs(10)) {
            if let Some(hs) = c.handshake(0, vec![0; 16], 10_000) {
                return (Conn(c), hs);
            }
        }
        assert!(Instant::now() < deadline, "no session from {addr} in 90 s");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Runs the exchange against the ZooKeeper wire server at `addr` under the path `root`,
/// waiting up to 90 s for the server to serve (a JVM starts slowly).
pub fn exercise(addr: &str, root: &str) {
    let (mut c, hs) = open_session(addr);
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
