//! ZooKeeper's requests and replies to and from the coordination application's operations:
//! the pure part of the ZooKeeper front end ([`super::server`]).

use crate as coord;
use crate::{AddWatchMode, CreateMode, ErrorCode, MultiOp, WatchKind};
use plumb_zk::{err, op, Acl, MultiResult, Request, Response, Stat};

/// What the gateway does with one request.
#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Submit this request for the session; `how` renders the application's reply.
    Submit { request: coord::Request, how: How },
    /// Answer at once with this error code (no body).
    Error(i32),
    /// Answer at once with this body.
    Local(Response),
    /// `closeSession`.
    Close,
}

/// How a reply's body is rendered: which ZooKeeper response the client reads.
#[derive(Clone, Debug, PartialEq)]
pub enum How {
    /// By the request's operation code.
    Op(i32),
    /// sync: the request's path.
    Sync(String),
    /// multi/multiRead: the operation code of each operation.
    Multi(Vec<i32>),
}

fn acls(a: Vec<Acl>) -> Vec<coord::Acl> {
    a.into_iter()
        .map(|a| coord::Acl {
            perms: a.perms,
            scheme: a.scheme,
            id: a.id,
        })
        .collect()
}

fn zk_acls(a: Vec<coord::Acl>) -> Vec<Acl> {
    a.into_iter()
        .map(|a| Acl {
            perms: a.perms,
            scheme: a.scheme,
            id: a.id,
        })
        .collect()
}

/// The `ephemeralOwner` a ZooKeeper client sees: a session's id for an ephemeral node, 0 for
/// every other kind, containers and TTL nodes included (ZooKeeper's
/// `DataTree.getClientEphemeralOwner`: their owner field marks the kind, it names no session).
pub fn client_owner(owner: i64) -> i64 {
    match coord::tree::NodeKind::of(owner) {
        coord::tree::NodeKind::Ephemeral(_) => owner,
        _ => 0,
    }
}

pub fn stat(s: coord::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        ctime: s.ctime,
        mtime: s.mtime,
        version: s.version,
        cversion: s.cversion,
        aversion: s.aversion,
        ephemeral_owner: client_owner(s.ephemeral_owner),
        data_length: s.data_length,
        num_children: s.num_children,
        pzxid: s.pzxid,
    }
}

/// The create mode of a create request: createContainer is the container mode whatever its
/// flags say; createTTL needs a TTL mode; the others any but those.
fn create_mode(code: i32, flags: i32) -> Option<CreateMode> {
    let mode = CreateMode::from_flag(flags)?;
    match code {
        op::CREATE_CONTAINER => Some(CreateMode::Container),
        op::CREATE_TTL => mode.has_ttl().then_some(mode),
        _ => (!mode.has_ttl()).then_some(mode),
    }
}

fn multi_op(r: Request) -> Result<MultiOp, i32> {
    Ok(match r {
        Request::Create {
            op: code,
            path,
            data,
            acl,
            flags,
            ttl,
        } => MultiOp::Create {
            path,
            data,
            acl: acls(acl),
            mode: create_mode(code, flags).ok_or(err::BAD_ARGUMENTS)?,
            ttl_ms: ttl,
        },
        Request::Delete { path, version } => MultiOp::Delete { path, version },
        Request::SetData {
            path,
            data,
            version,
        } => MultiOp::SetData {
            path,
            data,
            version,
        },
        Request::Check { path, version } => MultiOp::Check { path, version },
        Request::GetData { path, .. } => MultiOp::GetData { path },
        Request::GetChildren { path, .. } => MultiOp::GetChildren { path },
        _ => return Err(err::UNIMPLEMENTED),
    })
}

/// The plan for one request. Pings, whoAmI and the requests the application has no operation
/// for (getEphemerals) are answered here.
pub fn plan(request: Request, peer: &str) -> Plan {
    let code = request.op();
    let submit = |request| Plan::Submit {
        request,
        how: How::Op(code),
    };
    match request {
        // The writes and checks a multi may hold: the application takes one alone as the
        // request it would be there.
        write @ (Request::Create { .. }
        | Request::Delete { .. }
        | Request::SetData { .. }
        | Request::Check { .. }) => match multi_op(write) {
            Ok(op) => submit(op.into_request()),
            Err(e) => Plan::Error(e),
        },
        Request::Exists { path, watch } => submit(coord::Request::Exists { path, watch }),
        Request::GetData { path, watch } => submit(coord::Request::GetData { path, watch }),
        Request::GetAcl { path } => submit(coord::Request::GetAcl { path }),
        Request::SetAcl { path, acl, version } => submit(coord::Request::SetAcl {
            path,
            acl: acls(acl),
            version,
        }),
        Request::GetChildren { path, watch, .. } => {
            submit(coord::Request::GetChildren { path, watch })
        }
        Request::Sync { path } => Plan::Submit {
            request: coord::Request::Sync { path: path.clone() },
            how: How::Sync(path),
        },
        Request::Ping => Plan::Local(Response::Empty),
        Request::Multi { op: code, ops } => {
            let codes: Vec<i32> = ops.iter().map(Request::op).collect();
            let ops: Result<Vec<MultiOp>, i32> = ops.into_iter().map(multi_op).collect();
            match ops {
                Ok(ops) => Plan::Submit {
                    request: if code == op::MULTI_READ {
                        coord::Request::MultiRead(ops)
                    } else {
                        coord::Request::Multi(ops)
                    },
                    how: How::Multi(codes),
                },
                Err(e) => Plan::Error(e),
            }
        }
        Request::RemoveWatches { path, kind } => {
            let kind = match kind {
                1 => WatchKind::Children,
                2 => WatchKind::Data,
                3 => WatchKind::Any,
                4 => WatchKind::Persistent,
                5 => WatchKind::PersistentRecursive,
                _ => return Plan::Error(err::BAD_ARGUMENTS),
            };
            submit(coord::Request::RemoveWatches { path, kind })
        }
        Request::Auth { scheme, auth, .. } => submit(coord::Request::AddAuth { scheme, auth }),
        Request::SetWatches {
            relative_zxid,
            data,
            exist,
            child,
            persistent,
            persistent_recursive,
            ..
        } => submit(coord::Request::SetWatches {
            relative_zxid: coord::Zxid(relative_zxid),
            data,
            exist,
            child,
            persistent,
            persistent_recursive,
        }),
        Request::GetEphemerals { .. } => Plan::Error(err::UNIMPLEMENTED),
        Request::GetAllChildrenNumber { path } => {
            submit(coord::Request::GetAllChildrenNumber { path })
        }
        Request::AddWatch { path, mode } => {
            let mode = match mode {
                0 => AddWatchMode::Persistent,
                1 => AddWatchMode::PersistentRecursive,
                _ => return Plan::Error(err::BAD_ARGUMENTS),
            };
            submit(coord::Request::AddWatch { path, mode })
        }
        Request::WhoAmI => Plan::Local(Response::WhoAmI(vec![("ip".into(), peer.into())])),
        Request::CloseSession => Plan::Close,
    }
}

/// The reply to a request: ZooKeeper's error code and body. A result whose shape does not fit
/// the request is a marshalling error (the application and the gateway disagree).
pub fn render(how: &How, result: Result<coord::Response, ErrorCode>) -> (i32, Response) {
    let response = match result {
        Err(e) => return (e.code(), Response::Empty),
        Ok(r) => r,
    };
    use coord::Response as R;
    let body = match (how, response) {
        (How::Sync(path), R::Empty | R::Path(_)) => Response::Path(path.clone()),
        (How::Op(op::CREATE), R::Created { path, .. }) => Response::Path(path),
        (
            How::Op(op::CREATE2 | op::CREATE_CONTAINER | op::CREATE_TTL),
            R::Created { path, stat: s },
        ) => Response::PathStat {
            path,
            stat: stat(s),
        },
        (How::Op(op::EXISTS | op::SET_DATA | op::SET_ACL), R::Stat(s)) => Response::Stat(stat(s)),
        (How::Op(op::GET_DATA), R::Data { data, stat: s }) => Response::Data {
            data,
            stat: stat(s),
        },
        (How::Op(op::GET_ACL), R::Acl { acl, stat: s }) => Response::Acl {
            acl: zk_acls(acl),
            stat: stat(s),
        },
        (How::Op(op::GET_CHILDREN), R::Children { children, .. }) => Response::Children(children),
        (How::Op(op::GET_CHILDREN2), R::Children { children, stat: s }) => Response::Children2 {
            children,
            stat: stat(s),
        },
        (How::Op(op::GET_ALL_CHILDREN_NUMBER), R::Count(n)) => Response::Count(n),
        (How::Multi(codes), R::Multi(results)) => {
            let mut out = Vec::with_capacity(results.len());
            for (i, r) in results.into_iter().enumerate() {
                let code = codes.get(i).copied().unwrap_or(op::ERROR);
                out.push(match r {
                    Err(e) => MultiResult::Error { err: e.code() },
                    Ok(coord::MultiResult::Created { path, .. }) if code == op::CREATE => {
                        MultiResult::Create { path }
                    }
                    // ZooKeeper's result of a create with a stat is typed create2 whatever
                    // the request (createContainer, createTTL): its clients read no other.
                    Ok(coord::MultiResult::Created { path, stat: s }) => MultiResult::Create2 {
                        op: op::CREATE2,
                        path,
                        stat: stat(s),
                    },
                    Ok(coord::MultiResult::Deleted) => MultiResult::Delete,
                    Ok(coord::MultiResult::Stat(s)) => MultiResult::SetData { stat: stat(s) },
                    Ok(coord::MultiResult::Checked) => MultiResult::Check,
                    Ok(coord::MultiResult::Data { data, stat: s }) => MultiResult::GetData {
                        data,
                        stat: stat(s),
                    },
                    Ok(coord::MultiResult::Children { children, .. }) => {
                        MultiResult::GetChildren { children }
                    }
                });
            }
            Response::Multi(out)
        }
        (
            How::Op(
                op::DELETE
                | op::CHECK
                | op::REMOVE_WATCHES
                | op::ADD_WATCH
                | op::AUTH
                | op::SET_WATCHES
                | op::SET_WATCHES2
                | op::CLOSE_SESSION,
            ),
            _,
        ) => Response::Empty,
        _ => return (err::MARSHALLING_ERROR, Response::Empty),
    };
    (0, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_maps_its_mode_and_answers_by_its_code() {
        let p = plan(
            Request::Create {
                op: op::CREATE2,
                path: "/a".into(),
                data: vec![1],
                acl: vec![],
                flags: 3,
                ttl: 0,
            },
            "",
        );
        let Plan::Submit { request, how } = p else {
            panic!("{p:?}")
        };
        assert!(matches!(
            request,
            coord::Request::Create {
                mode: CreateMode::EphemeralSequential,
                ..
            }
        ));
        let created = coord::Response::Created {
            path: "/a0000000001".into(),
            stat: coord::Stat::default(),
        };
        assert_eq!(
            render(&how, Ok(created.clone())),
            (
                0,
                Response::PathStat {
                    path: "/a0000000001".into(),
                    stat: Stat::default()
                }
            )
        );
        assert_eq!(
            render(&How::Op(op::CREATE), Ok(created)),
            (0, Response::Path("/a0000000001".into()))
        );
        // A TTL mode under plain create, or a bad flag: bad arguments.
        for flags in [5, 9] {
            let p = plan(
                Request::Create {
                    op: op::CREATE,
                    path: "/a".into(),
                    data: vec![],
                    acl: vec![],
                    flags,
                    ttl: 0,
                },
                "",
            );
            assert_eq!(p, Plan::Error(err::BAD_ARGUMENTS));
        }
    }

    #[test]
    fn a_failed_multi_renders_rolled_back_error_and_inconsistent() {
        let how = How::Multi(vec![op::CREATE, op::CHECK, op::DELETE]);
        let r = coord::Response::Multi(vec![
            Err(ErrorCode::RolledBack),
            Err(ErrorCode::BadVersion),
            Err(ErrorCode::RuntimeInconsistency),
        ]);
        assert_eq!(
            render(&how, Ok(r)),
            (
                0,
                Response::Multi(vec![
                    MultiResult::Error { err: 0 },
                    MultiResult::Error { err: -103 },
                    MultiResult::Error { err: -2 },
                ])
            )
        );
    }

    #[test]
    fn errors_carry_zookeepers_codes_and_wrong_shapes_are_marshalling_errors() {
        assert_eq!(
            render(&How::Op(op::GET_DATA), Err(ErrorCode::NoNode)),
            (-101, Response::Empty)
        );
        assert_eq!(
            render(&How::Op(op::GET_DATA), Ok(coord::Response::Count(1))),
            (err::MARSHALLING_ERROR, Response::Empty)
        );
        assert_eq!(
            render(&How::Sync("/x".into()), Ok(coord::Response::Empty)),
            (0, Response::Path("/x".into()))
        );
    }

    #[test]
    fn a_container_created_in_a_multi_answers_as_create2() {
        // The zookeeper-client crate (as ZooKeeper's own client) refuses a multi result typed
        // createContainer (tests/zk_differential found it).
        let how = How::Multi(vec![op::CREATE_CONTAINER, op::CREATE_TTL]);
        let created = |p: &str| {
            Ok(coord::MultiResult::Created {
                path: p.into(),
                stat: coord::Stat::default(),
            })
        };
        let r = coord::Response::Multi(vec![created("/k"), created("/t")]);
        let (code, Response::Multi(results)) = render(&how, Ok(r)) else {
            panic!()
        };
        assert_eq!(code, 0);
        for (r, p) in results.iter().zip(["/k", "/t"]) {
            assert_eq!(
                r,
                &MultiResult::Create2 {
                    op: op::CREATE2,
                    path: p.into(),
                    stat: Stat::default()
                }
            );
        }
    }

    #[test]
    fn containers_and_ttl_nodes_show_no_owner_as_in_zookeeper() {
        // A real ZooKeeper 3.8 serves a container's ephemeralOwner as 0 (tests/zk_differential).
        let owned = |owner| {
            stat(coord::Stat {
                ephemeral_owner: owner,
                ..coord::Stat::default()
            })
            .ephemeral_owner
        };
        assert_eq!(owned(coord::tree::CONTAINER_OWNER), 0);
        assert_eq!(owned(coord::tree::TTL_BITS | 5000), 0);
        assert_eq!(owned(0x1234), 0x1234);
        assert_eq!(owned(0), 0);
    }

    #[test]
    fn local_answers() {
        assert_eq!(plan(Request::Ping, ""), Plan::Local(Response::Empty));
        assert_eq!(plan(Request::CloseSession, ""), Plan::Close);
        assert_eq!(
            plan(Request::GetEphemerals { prefix: "/".into() }, ""),
            Plan::Error(err::UNIMPLEMENTED)
        );
    }
}
