//! A harness: one batch per operation, agreed time advancing 1 ms per batch.

use plumb_app::{Application, Command, NonDeterminism};
use plumb_coord::*;
use plumb_wire::{Life, ReqNo, Seq};

pub struct H {
    pub app: CoordApp,
    pub seq: u64,
    /// Agreed time of the last batch, micros.
    pub time: u64,
    pub pushes: Vec<(u32, Push)>,
}

impl Default for H {
    fn default() -> Self {
        H {
            app: CoordApp::new(),
            seq: 0,
            time: 1_000_000_000,
            pushes: Vec::new(),
        }
    }
}

#[allow(dead_code)]
impl H {
    pub fn batch(&mut self, cmds: &[(u32, Vec<u8>)]) -> Vec<Reply> {
        self.seq += 1;
        self.time += 1000;
        let batch: Vec<Command<'_>> = cmds
            .iter()
            .enumerate()
            .map(|(i, (client, op))| Command::new(*client, Life(0), ReqNo(i as u64), op))
            .collect();
        let out = self.app.execute(
            Seq(self.seq),
            &batch,
            NonDeterminism {
                time: self.time,
                seed: self.seq.wrapping_mul(0x9E37_79B9),
            },
        );
        for (c, p) in out.pushes {
            self.pushes.push((c, Push::decode(&p).unwrap()));
        }
        out.replies
            .iter()
            .map(|r| Reply::decode(r).unwrap())
            .collect()
    }

    pub fn run(&mut self, client: u32, op: CoordOp) -> Reply {
        self.batch(&[(client, op.encode())]).remove(0)
    }

    /// Let `ms` of agreed time pass with an empty batch at the end.
    pub fn wait(&mut self, ms: u64) {
        self.time += ms * 1000;
        self.batch(&[]);
    }

    pub fn open(&mut self, client: u32) -> SessionId {
        self.open_with(client, 10_000).0
    }

    pub fn open_with(&mut self, client: u32, timeout_ms: i32) -> (SessionId, [u8; 16]) {
        match self.run(client, CoordOp::OpenSession { timeout_ms }).result {
            Ok(Response::Session {
                session, password, ..
            }) => (session, password),
            other => panic!("open: {other:?}"),
        }
    }

    pub fn req(&mut self, s: SessionId, request: Request) -> Result<Response, ErrorCode> {
        self.req_full(s, request).result
    }

    pub fn req_full(&mut self, s: SessionId, request: Request) -> Reply {
        self.run(
            1,
            CoordOp::Session {
                session: s,
                acked_events: 0,
                request,
            },
        )
    }

    pub fn create(
        &mut self,
        s: SessionId,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, ErrorCode> {
        match self.req(s, create(path, data, mode))? {
            Response::Created { path, .. } => Ok(path),
            other => panic!("create: {other:?}"),
        }
    }

    pub fn stat(&mut self, s: SessionId, path: &str) -> Option<Stat> {
        match self.req(
            s,
            Request::Exists {
                path: path.into(),
                watch: false,
            },
        ) {
            Ok(Response::Stat(st)) => Some(st),
            Err(ErrorCode::NoNode) => None,
            other => panic!("exists: {other:?}"),
        }
    }

    pub fn children(&mut self, s: SessionId, path: &str) -> Vec<String> {
        match self.req(
            s,
            Request::GetChildren {
                path: path.into(),
                watch: false,
            },
        ) {
            Ok(Response::Children { children, .. }) => children,
            other => panic!("children: {other:?}"),
        }
    }

    /// Every event pushed so far to session `s`, in order.
    pub fn events_of(&self, s: SessionId) -> Vec<WatchEvent> {
        self.pushes
            .iter()
            .flat_map(|(_, p)| p.events.iter())
            .filter(|(sid, _)| *sid == s)
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// What happened to which node, of every event pushed so far to session `s`.
    pub fn kinds_and_paths_of(&self, s: SessionId) -> Vec<(EventType, String)> {
        self.events_of(s)
            .into_iter()
            .map(|e| (e.kind, e.path))
            .collect()
    }
}

pub fn create(path: &str, data: &[u8], mode: CreateMode) -> Request {
    Request::Create {
        path: path.into(),
        data: data.to_vec(),
        acl: acl::open_acl(),
        mode,
        ttl_ms: 0,
    }
}

pub fn set_data(path: &str, data: &[u8], version: i32) -> Request {
    Request::SetData {
        path: path.into(),
        data: data.to_vec(),
        version,
    }
}

pub fn delete(path: &str, version: i32) -> Request {
    Request::Delete {
        path: path.into(),
        version,
    }
}

pub fn exists(path: &str, watch: bool) -> Request {
    Request::Exists {
        path: path.into(),
        watch,
    }
}

pub fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData {
        path: path.into(),
        watch,
    }
}

pub fn get_children(path: &str, watch: bool) -> Request {
    Request::GetChildren {
        path: path.into(),
        watch,
    }
}
