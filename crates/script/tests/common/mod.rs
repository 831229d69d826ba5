//! A gateway in miniature: plan, the script cache, the store, render.

use plumb_kv::KvStore;
use plumb_resp::{plan, render, Plan, Resp, ServerInfo};
use plumb_script::ScriptCache;

pub struct Local {
    pub store: KvStore,
    pub cache: ScriptCache,
    pub now: u64,
    pub seed: u64,
}

impl Local {
    pub fn new() -> Local {
        Local {
            store: plumb_script::store(),
            cache: ScriptCache::default(),
            now: 1_700_000_000_000_000,
            seed: 7,
        }
    }

    pub fn run(&mut self, args: &[&str]) -> Resp {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let info = ServerInfo {
            now_ms: (self.now / 1000) as i64,
            ..ServerInfo::default()
        };
        match self.cache.resolve(plan(&args, &info)) {
            Plan::Submit {
                op, render: how, ..
            } => {
                self.seed += 1;
                render(&how, self.store.apply_seeded(&op, self.now, self.seed))
            }
            Plan::Reply(r) | Plan::Reject(r) => r,
            other => panic!("unexpected plan {other:?}"),
        }
    }
}
