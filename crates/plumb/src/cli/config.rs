//! What every command shares: finding the cluster file, a tokio runtime, waiting for Ctrl-C.

use clap::Args;
use plumb_cluster::Cluster;
use std::path::{Path, PathBuf};

/// The directory `up` and the other commands use when none is given.
pub const DEFAULT_DIR: &str = "plumb-local";

/// `--config FILE`: which cluster a command works on.
#[derive(Args, Debug, Clone)]
pub struct ConfigArg {
    /// The cluster configuration file [default: plumb-local/cluster.toml].
    #[arg(long)]
    pub config: Option<PathBuf>,
}

impl ConfigArg {
    /// The file named, or `plumb-local/cluster.toml`.
    pub fn path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("cluster.toml"))
    }

    /// Load and validate the cluster file; a missing one is explained with how to make one.
    pub fn load(&self) -> Result<Cluster, String> {
        let path = self.path();
        if !path.exists() {
            return Err(format!(
                "{}: no cluster configuration here; start a local cluster with `up` or write one with `init`",
                path.display()
            ));
        }
        Cluster::load(&path).map_err(|e| e.to_string())
    }
}

/// The tokio runtime the commands run on (two workers).
pub fn runtime() -> tokio::runtime::Runtime {
    runtime_with_workers(2)
}

pub(crate) fn runtime_with_workers(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Resolves on SIGINT or SIGTERM (it lives in plumb-runtime, where the gateway waits for it too).
pub use plumb_runtime::terminated;
