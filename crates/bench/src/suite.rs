//! A suite: several systems, one after another on this machine, each fresh, under the same
//! workloads and load levels. `plumb bench compare` and `plumb bench matrix` are suites.

use crate::app::BenchApp;
use crate::coord::{PlumbCoord, ORDERED_READS};
use crate::load::{self, Load, RunSpec};
use crate::plumb::{Placement, Plumb, PlumbShape, TENTATIVE};
use crate::report::RunResult;
use crate::systems::{etcd::Etcd, redis::Redis, zookeeper::ZooKeeper};
use crate::target::Target;
use crate::workload::Workload;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum SystemSpec {
    Plumb(PlumbShape),
    /// plumb's coordination service behind its ZooKeeper gateway, `fast_reads` on as `plumb
    /// init` writes it (reads that set no watch take the read-only path); with `true`, off
    /// (ordered reads).
    PlumbCoord(PlumbShape, bool),
    /// A three-member etcd cluster.
    Etcd,
    /// A three-server ZooKeeper ensemble.
    ZooKeeper,
    /// One unreplicated Redis server.
    Redis,
}

impl SystemSpec {
    pub fn label(&self) -> String {
        match self {
            SystemSpec::Plumb(s) => format!("plumb-{}", s.label()),
            SystemSpec::PlumbCoord(s, ordered_reads) => format!(
                "plumb-coord-{}{}",
                s.label(),
                if *ordered_reads { ORDERED_READS } else { "" }
            ),
            SystemSpec::Etcd => "etcd".into(),
            SystemSpec::ZooKeeper => "zookeeper".into(),
            SystemSpec::Redis => "redis".into(),
        }
    }

    /// Whether the system runs workload `w`: the ZooKeeper workloads need ZooKeeper's
    /// protocol (ZooKeeper and plumb's coordination service), the keyed ones a key-value
    /// store (everything but the coordination service).
    pub fn runs(&self, w: &Workload) -> bool {
        match self {
            SystemSpec::ZooKeeper => true,
            SystemSpec::PlumbCoord(..) => w.znode.is_some(),
            SystemSpec::Plumb(_) | SystemSpec::Etcd | SystemSpec::Redis => w.znode.is_none(),
        }
    }

    /// `plumb-u1r0`, `plumb-u1r1-split`, `plumb-coord-u1r0`, `plumb-coord-u1r0-ordered-reads`,
    /// `etcd`, `zookeeper`, `redis`.
    pub fn parse(text: &str) -> Result<SystemSpec, String> {
        match text {
            "etcd" => return Ok(SystemSpec::Etcd),
            "zookeeper" => return Ok(SystemSpec::ZooKeeper),
            "redis" => return Ok(SystemSpec::Redis),
            _ => {}
        }
        let bad = || {
            format!("unknown system `{text}`: use plumb-u<U>r<R>[-e<N>][-split][-tentative], plumb-coord-u<U>r<R>[-e<N>][-split][-tentative][-ordered-reads], etcd, zookeeper or redis")
        };
        if let Some(default) = text
            .strip_prefix("plumb-coord-")
            .and_then(|s| s.strip_suffix("-fast-reads"))
        {
            return Err(format!(
                "unknown system `{text}`: the read-only path is a coordination cluster's default since 2026-12-03, so use plumb-coord-{default} (and plumb-coord-{default}{ORDERED_READS} for ordered reads)"
            ));
        }
        let (coord, shape) = match text.strip_prefix("plumb-coord-u") {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix("plumb-u").ok_or_else(bad)?),
        };
        let (shape, ordered_reads) = match shape.strip_suffix(ORDERED_READS) {
            Some(s) if coord => (s, true),
            Some(_) => return Err(bad()),
            None => (shape, false),
        };
        let (shape, tentative) = match shape.strip_suffix(TENTATIVE) {
            Some(s) => (s, true),
            None => (shape, false),
        };
        let (shape, split) = match shape.strip_suffix("-split") {
            Some(s) => (s, true),
            None => (shape, false),
        };
        // `-e<N>`: N execution replicas (`plumb init --exec`).
        let (shape, exec) = match shape.rsplit_once("-e") {
            Some((s, n)) => (s, Some(n.parse().map_err(|_| bad())?)),
            None => (shape, None),
        };
        let (u, r) = shape.split_once('r').ok_or_else(bad)?;
        let shape = PlumbShape {
            u: u.parse().map_err(|_| bad())?,
            r: r.parse().map_err(|_| bad())?,
            split,
            tentative,
            exec,
        };
        Ok(if coord {
            SystemSpec::PlumbCoord(shape, ordered_reads)
        } else {
            SystemSpec::Plumb(shape)
        })
    }
}

#[derive(Clone, Debug)]
pub struct Suite {
    pub systems: Vec<SystemSpec>,
    pub workloads: Vec<Workload>,
    pub loads: Vec<Load>,
    pub warmup: Duration,
    pub duration: Duration,
    pub max_ops: Option<u64>,
    /// The application plumb runs, and the executable that registers it, to start nodes with.
    pub app: Arc<dyn BenchApp>,
    pub exe: PathBuf,
    /// Each system gets a fresh directory under here.
    pub dir: PathBuf,
    /// Each system takes ports from `base_port + 100 * its index`.
    pub base_port: u16,
    pub progress: bool,
    /// Run every system this many times, interleaved (round 1 of each, then round 2, ...), so
    /// that a machine's swings fall on every system alike; [`crate::report::spread`] shows them.
    pub rounds: usize,
    /// Count the servers' system calls and fsyncs (`--syscalls`, needs perf).
    pub syscalls: bool,
}

/// What a suite produced: every measured run, and the systems that could not be measured.
#[derive(Default)]
pub struct SuiteOutcome {
    pub results: Vec<RunResult>,
    pub failures: Vec<String>,
}

impl Suite {
    pub async fn run(&self) -> SuiteOutcome {
        let mut outcome = SuiteOutcome::default();
        for round in 1..=self.rounds.max(1) {
            if self.progress && self.rounds > 1 {
                eprintln!("round {round} of {}", self.rounds);
            }
            self.run_round(round, &mut outcome).await;
        }
        outcome
    }

    /// Every system once, each on a fresh cluster, its runs numbered `round`.
    async fn run_round(&self, round: usize, outcome: &mut SuiteOutcome) {
        let most_clients = self.loads.iter().map(Load::clients).max().unwrap_or(1);
        for (i, system) in self.systems.iter().enumerate() {
            let label = system.label();
            let workloads: Vec<&Workload> =
                self.workloads.iter().filter(|w| system.runs(w)).collect();
            if workloads.is_empty() {
                if self.progress {
                    eprintln!("{label}: runs none of the workloads asked for; skipped");
                }
                continue;
            }
            let dir = self.dir.join(&label);
            let port = self.base_port + 100 * i as u16;
            if self.progress {
                eprintln!("{label}: starting (data in {})", dir.display());
            }
            let target = match self.start(system, dir, port, most_clients).await {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("{label}: could not start: {e}");
                    outcome
                        .failures
                        .push(format!("{label}: could not start: {e}"));
                    continue;
                }
            };
            for w in workloads {
                if w.needs_preload() {
                    if let Err(e) = load::preload(target.as_ref(), w, most_clients).await {
                        outcome
                            .failures
                            .push(format!("{label} {}: preload failed: {e}", w.name()));
                        continue;
                    }
                }
                for l in &self.loads {
                    let spec = RunSpec {
                        workload: w.clone(),
                        load: *l,
                        warmup: self.warmup,
                        duration: self.duration,
                        max_ops: self.max_ops,
                        progress: self.progress,
                        syscalls: self.syscalls,
                    };
                    match load::run(target.as_ref(), &spec).await {
                        Ok(r) => outcome.results.push(RunResult { round, ..r }),
                        Err(e) => {
                            eprintln!("{label}: {e}");
                            outcome.failures.push(format!("{label}: {e}"));
                        }
                    }
                }
            }
            drop(target);
        }
    }

    async fn start(
        &self,
        system: &SystemSpec,
        dir: PathBuf,
        port: u16,
        clients: usize,
    ) -> Result<Box<dyn Target>, String> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(match system {
            SystemSpec::Plumb(shape) => Box::new(
                Plumb::start(
                    self.app.clone(),
                    &self.exe,
                    &dir,
                    shape,
                    port,
                    clients as u32,
                    0,
                    None,
                    &Placement::default(),
                )
                .await?,
            ),
            SystemSpec::PlumbCoord(shape, ordered_reads) => Box::new(
                PlumbCoord::start(&self.exe, &dir, shape, *ordered_reads, port, clients as u32)
                    .await?,
            ),
            SystemSpec::Etcd => Box::new(Etcd::start(&dir, 3, port).await?),
            SystemSpec::ZooKeeper => Box::new(ZooKeeper::start(&dir, 3, port).await?),
            SystemSpec::Redis => Box::new(Redis::start(&dir, port).await?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_names_round_trip() {
        for name in [
            "plumb-u1r0",
            "plumb-u2r1-split",
            "plumb-u1r1-e6",
            "plumb-u1r1-e4-split-tentative",
            "plumb-coord-u1r0",
            "plumb-coord-u1r1-split",
            "plumb-coord-u1r0-ordered-reads",
            "plumb-coord-u1r1-split-ordered-reads",
            "etcd",
            "zookeeper",
            "redis",
        ] {
            assert_eq!(SystemSpec::parse(name).unwrap().label(), name);
        }
        for bad in [
            "plumb",
            "plumb-u1",
            "plumb-uxr1",
            "plumb-coord",
            "plumb-u1r0-ordered-reads",
            "plumb-u1r1-e",
            "plumb-u1r1-ex",
            "mysql",
        ] {
            assert!(SystemSpec::parse(bad).is_err(), "{bad}");
        }
        // The name the default had before 2026-12-03 says what to use now.
        let e = SystemSpec::parse("plumb-coord-u1r1-split-fast-reads").unwrap_err();
        assert!(
            e.contains("use plumb-coord-u1r1-split (and plumb-coord-u1r1-split-ordered-reads"),
            "{e}"
        );
    }

    #[test]
    fn zookeeper_workloads_go_to_the_systems_that_speak_its_protocol() {
        use crate::workload::Znode;
        let kv = Workload::keyed(1024, 1024, 1.0, 10);
        let zk = Workload::zk(Znode::Set, 1024, 10);
        let runs = |name: &str, w: &Workload| SystemSpec::parse(name).unwrap().runs(w);
        assert!(runs("plumb-u1r0", &kv) && !runs("plumb-u1r0", &zk));
        assert!(!runs("plumb-coord-u1r0", &kv) && runs("plumb-coord-u1r0", &zk));
        assert!(runs("zookeeper", &kv) && runs("zookeeper", &zk));
        assert!(!runs("etcd", &zk) && !runs("redis", &zk));
    }
}
