//! A suite: several systems, one after another on this machine, each fresh, under the same
//! workloads and load levels. `plumb bench compare` and `plumb bench matrix` are suites.

use crate::app::BenchApp;
use crate::load::{self, Load, RunSpec};
use crate::plumb::{Plumb, PlumbShape};
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
            SystemSpec::Etcd => "etcd".into(),
            SystemSpec::ZooKeeper => "zookeeper".into(),
            SystemSpec::Redis => "redis".into(),
        }
    }

    /// `plumb-u1r0`, `plumb-u1r1-split`, `etcd`, `zookeeper`, `redis`.
    pub fn parse(text: &str) -> Result<SystemSpec, String> {
        match text {
            "etcd" => return Ok(SystemSpec::Etcd),
            "zookeeper" => return Ok(SystemSpec::ZooKeeper),
            "redis" => return Ok(SystemSpec::Redis),
            _ => {}
        }
        let bad = || {
            format!("unknown system `{text}`: use plumb-u<U>r<R>[-split], etcd, zookeeper or redis")
        };
        let shape = text.strip_prefix("plumb-u").ok_or_else(bad)?;
        let (shape, split) = match shape.strip_suffix("-split") {
            Some(s) => (s, true),
            None => (shape, false),
        };
        let (u, r) = shape.split_once('r').ok_or_else(bad)?;
        Ok(SystemSpec::Plumb(PlumbShape {
            u: u.parse().map_err(|_| bad())?,
            r: r.parse().map_err(|_| bad())?,
            split,
        }))
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
        let most_clients = self.loads.iter().map(Load::clients).max().unwrap_or(1);
        for (i, system) in self.systems.iter().enumerate() {
            let label = system.label();
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
            for w in &self.workloads {
                if w.write_fraction < 1.0 {
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
                    };
                    match load::run(target.as_ref(), &spec).await {
                        Ok(r) => outcome.results.push(r),
                        Err(e) => {
                            eprintln!("{label}: {e}");
                            outcome.failures.push(format!("{label}: {e}"));
                        }
                    }
                }
            }
            drop(target);
        }
        outcome
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
                )
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
            "etcd",
            "zookeeper",
            "redis",
        ] {
            assert_eq!(SystemSpec::parse(name).unwrap().label(), name);
        }
        for bad in ["plumb", "plumb-u1", "plumb-uxr1", "mysql"] {
            assert!(SystemSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
