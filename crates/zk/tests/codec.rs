//! Round trips of every record, and hostile bytes: decoding random, truncated and mutated
//! frames never panics.

use plumb_zk::*;
use proptest::prelude::*;

fn path() -> impl Strategy<Value = String> {
    "(/[a-z0-9]{0,6}){1,3}"
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..24)
}

fn stat() -> impl Strategy<Value = Stat> {
    (any::<[i64; 5]>(), any::<[i32; 5]>(), any::<i64>()).prop_map(|(l, i, pzxid)| Stat {
        czxid: l[0],
        mzxid: l[1],
        ctime: l[2],
        mtime: l[3],
        version: i[0],
        cversion: i[1],
        aversion: i[2],
        ephemeral_owner: l[4],
        data_length: i[3],
        num_children: i[4],
        pzxid,
    })
}

fn acls() -> impl Strategy<Value = Vec<Acl>> {
    proptest::collection::vec(
        (0..32i32, "[a-z]{0,6}", "[a-z:]{0,8}").prop_map(|(perms, scheme, id)| Acl {
            perms,
            scheme,
            id,
        }),
        0..3,
    )
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(path(), 0..3)
}

/// Requests that may appear inside a multi.
fn sub_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (
            prop_oneof![
                Just(op::CREATE),
                Just(op::CREATE2),
                Just(op::CREATE_CONTAINER),
                Just(op::CREATE_TTL)
            ],
            path(),
            bytes(),
            acls(),
            0..7i32,
            any::<i64>()
        )
            .prop_map(|(op, path, data, acl, flags, ttl)| Request::Create {
                op,
                path,
                data,
                acl,
                flags,
                ttl: if op == op::CREATE_TTL { ttl } else { 0 },
            }),
        (path(), any::<i32>()).prop_map(|(path, version)| Request::Delete { path, version }),
        (path(), bytes(), any::<i32>()).prop_map(|(path, data, version)| Request::SetData {
            path,
            data,
            version
        }),
        (path(), any::<i32>()).prop_map(|(path, version)| Request::Check { path, version }),
        (path(), any::<bool>()).prop_map(|(path, watch)| Request::GetData { path, watch }),
        (
            path(),
            any::<bool>(),
            prop_oneof![Just(op::GET_CHILDREN), Just(op::GET_CHILDREN2)]
        )
            .prop_map(|(path, watch, op)| Request::GetChildren { op, path, watch }),
        (path(), any::<bool>()).prop_map(|(path, watch)| Request::Exists { path, watch }),
        path().prop_map(|path| Request::GetAcl { path }),
        (path(), acls(), any::<i32>()).prop_map(|(path, acl, version)| Request::SetAcl {
            path,
            acl,
            version
        }),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        sub_request(),
        (
            prop_oneof![Just(op::MULTI), Just(op::MULTI_READ)],
            proptest::collection::vec(sub_request(), 0..4)
        )
            .prop_map(|(op, ops)| Request::Multi { op, ops }),
        path().prop_map(|path| Request::Sync { path }),
        Just(Request::Ping),
        Just(Request::WhoAmI),
        Just(Request::CloseSession),
        (path(), 1..6i32).prop_map(|(path, kind)| Request::RemoveWatches { path, kind }),
        (path(), 0..2i32).prop_map(|(path, mode)| Request::AddWatch { path, mode }),
        ("[a-z]{0,6}", bytes()).prop_map(|(scheme, auth)| Request::Auth {
            kind: 0,
            scheme,
            auth
        }),
        path().prop_map(|prefix| Request::GetEphemerals { prefix }),
        path().prop_map(|path| Request::GetAllChildrenNumber { path }),
        (
            any::<bool>(),
            any::<i64>(),
            strings(),
            strings(),
            strings(),
            strings(),
            strings()
        )
            .prop_map(|(two, relative_zxid, data, exist, child, p, pr)| {
                Request::SetWatches {
                    op: if two {
                        op::SET_WATCHES2
                    } else {
                        op::SET_WATCHES
                    },
                    relative_zxid,
                    data,
                    exist,
                    child,
                    persistent: if two { p } else { Vec::new() },
                    persistent_recursive: if two { pr } else { Vec::new() },
                }
            }),
    ]
}

fn multi_result() -> impl Strategy<Value = MultiResult> {
    prop_oneof![
        path().prop_map(|path| MultiResult::Create { path }),
        (path(), stat()).prop_map(|(path, stat)| MultiResult::Create2 {
            op: op::CREATE2,
            path,
            stat
        }),
        Just(MultiResult::Delete),
        Just(MultiResult::Check),
        stat().prop_map(|stat| MultiResult::SetData { stat }),
        (bytes(), stat()).prop_map(|(data, stat)| MultiResult::GetData { data, stat }),
        strings().prop_map(|children| MultiResult::GetChildren { children }),
        (-125..=0i32).prop_map(|err| MultiResult::Error { err }),
    ]
}

/// A response and the operation code whose reply it is.
fn response() -> impl Strategy<Value = (i32, Response)> {
    prop_oneof![
        Just((op::DELETE, Response::Empty)),
        path().prop_map(|p| (op::CREATE, Response::Path(p))),
        path().prop_map(|p| (op::SYNC, Response::Path(p))),
        (path(), stat()).prop_map(|(path, stat)| (op::CREATE2, Response::PathStat { path, stat })),
        stat().prop_map(|s| (op::EXISTS, Response::Stat(s))),
        stat().prop_map(|s| (op::SET_DATA, Response::Stat(s))),
        (bytes(), stat()).prop_map(|(data, stat)| (op::GET_DATA, Response::Data { data, stat })),
        (acls(), stat()).prop_map(|(acl, stat)| (op::GET_ACL, Response::Acl { acl, stat })),
        strings().prop_map(|c| (op::GET_CHILDREN, Response::Children(c))),
        (strings(), stat()).prop_map(|(children, stat)| (
            op::GET_CHILDREN2,
            Response::Children2 { children, stat }
        )),
        any::<i32>().prop_map(|n| (op::GET_ALL_CHILDREN_NUMBER, Response::Count(n))),
        proptest::collection::vec(multi_result(), 0..4)
            .prop_map(|r| (op::MULTI, Response::Multi(r))),
        proptest::collection::vec(("[a-z]{0,4}", "[a-z]{0,4}"), 0..3)
            .prop_map(|ids| (op::WHO_AM_I, Response::WhoAmI(ids))),
    ]
}

proptest! {
    #[test]
    fn requests_round_trip(xid in any::<i32>(), req in request()) {
        let frame = encode_request(xid, &req);
        let (h, back) = decode_request(&frame).unwrap();
        prop_assert_eq!(h, RequestHeader { xid, op: req.op() });
        prop_assert_eq!(back, req);
    }

    #[test]
    fn responses_round_trip((code, resp) in response(), xid in any::<i32>(), zxid in any::<i64>()) {
        let frame = encode_reply(xid, zxid, 0, &resp);
        let (h, body) = decode_reply_header(&frame).unwrap();
        prop_assert_eq!(h, ReplyHeader { xid, zxid, err: 0 });
        prop_assert_eq!(Response::decode(code, body).unwrap(), resp);
    }

    #[test]
    fn handshakes_round_trip(
        pv in any::<i32>(), z in any::<i64>(), t in any::<i32>(), s in any::<i64>(),
        pw in bytes(), ro in proptest::option::of(any::<bool>())
    ) {
        let req = ConnectRequest { protocol_version: pv, last_zxid_seen: z, timeout_ms: t, session_id: s, password: pw.clone(), read_only: ro };
        prop_assert_eq!(ConnectRequest::decode(&req.encode()).unwrap(), req);
        let resp = ConnectResponse { protocol_version: pv, timeout_ms: t, session_id: s, password: pw, read_only: ro };
        prop_assert_eq!(ConnectResponse::decode(&resp.encode()).unwrap(), resp);
    }

    #[test]
    fn notifications_round_trip(kind in -1..8i32, st in -112..8i32, p in path()) {
        let e = WatcherEvent { kind, state: st, path: p };
        let frame = encode_notification(&e);
        let (h, body) = decode_reply_header(&frame).unwrap();
        prop_assert_eq!(h.xid, xid::NOTIFICATION);
        prop_assert_eq!(WatcherEvent::read(&mut Reader::new(body)).unwrap(), e);
    }

    /// Arbitrary bytes under every operation code: an error or a value, never a panic.
    #[test]
    fn random_bytes_never_panic(code in -12..110i32, body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Request::decode(code, &body);
        let _ = Response::decode(code, &body);
        let _ = ConnectRequest::decode(&body);
        let _ = ConnectResponse::decode(&body);
        let _ = decode_request(&body);
    }

    /// Every prefix of a valid request, and the request with one byte changed.
    #[test]
    fn truncated_and_mutated_requests_never_panic(req in request(), at in any::<usize>(), byte in any::<u8>()) {
        let frame = encode_request(7, &req);
        for cut in 0..frame.len() {
            let _ = decode_request(&frame[..cut]);
        }
        let mut mutated = frame.clone();
        let i = at % mutated.len();
        mutated[i] = byte;
        let _ = decode_request(&mutated);
    }

    #[test]
    fn framer_reassembles_any_split(payloads in proptest::collection::vec(bytes(), 1..5), split in 1..7usize) {
        let mut stream = Vec::new();
        for p in &payloads {
            frame_into(&mut stream, p);
        }
        let mut f = Framer::new(1024);
        let mut got = Vec::new();
        for chunk in stream.chunks(split) {
            f.feed(chunk);
            while let Some(frame) = f.next_frame().unwrap() {
                got.push(frame);
            }
        }
        prop_assert_eq!(got, payloads);
    }
}

#[test]
fn a_frame_over_the_limit_is_refused() {
    let mut f = Framer::new(100);
    f.feed(&101i32.to_be_bytes());
    assert_eq!(
        f.next_frame(),
        Err(FrameError::TooLarge { len: 101, max: 100 })
    );
    let mut f = Framer::new(100);
    f.feed(&(-5i32).to_be_bytes());
    assert_eq!(f.next_frame(), Err(FrameError::Negative(-5)));
}

#[test]
fn a_huge_vector_count_is_refused_before_allocating() {
    // getChildren's response claiming 2^31-1 names in 8 bytes.
    let mut body = Vec::new();
    body.extend_from_slice(&i32::MAX.to_be_bytes());
    body.extend_from_slice(&[0; 4]);
    assert_eq!(
        Response::decode(op::GET_CHILDREN, &body),
        Err(JuteError::Truncated)
    );
    let mut req = Vec::new();
    req.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]); // xid 1, create
    req.extend_from_slice(&[0, 0, 0, 1, b'/']); // path "/"
    req.extend_from_slice(&(-1i32).to_be_bytes()); // null data
    req.extend_from_slice(&i32::MAX.to_be_bytes()); // acl count
    assert_eq!(decode_request(&req), Err(JuteError::Truncated));
}

#[test]
fn known_bytes_of_a_create_request() {
    // xid 1, create, path "/a", data "x", one ACL world:anyone ALL, flags 1 (ephemeral).
    let req = Request::Create {
        op: op::CREATE,
        path: "/a".into(),
        data: b"x".to_vec(),
        acl: vec![Acl {
            perms: 31,
            scheme: "world".into(),
            id: "anyone".into(),
        }],
        flags: 1,
        ttl: 0,
    };
    let expected: Vec<u8> = [
        &[0, 0, 0, 1, 0, 0, 0, 1][..],
        &[0, 0, 0, 2, b'/', b'a'],
        &[0, 0, 0, 1, b'x'],
        &[0, 0, 0, 1, 0, 0, 0, 31],
        &[0, 0, 0, 5],
        b"world",
        &[0, 0, 0, 6],
        b"anyone",
        &[0, 0, 0, 1],
    ]
    .concat();
    assert_eq!(encode_request(1, &req), expected);
}

#[test]
fn four_letter_words_are_recognised_by_their_first_bytes() {
    assert_eq!(four_letter_word(b"ruok"), Some("ruok"));
    assert_eq!(four_letter_word(b"srvr\n"), Some("srvr"));
    assert_eq!(four_letter_word(&[0, 0, 0, 44]), None);
    assert_eq!(four_letter_word(b"ru"), None);
}
