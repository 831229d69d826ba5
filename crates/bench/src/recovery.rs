//! `plumb bench recovery`: how soon a node that lost its disk executes again, by state size,
//! when its execution replica loads the stable checkpoint eagerly (every object that differs
//! fetched and verified first: the tree walk) and on demand (`load_objects_on_demand`: the
//! root at once, each batch's objects before it, the rest in the background; docs/objects.md
//! "Loading on demand").
//!
//! Each row is a fresh plumb u=1,r=0 cluster of the key-value store, filled with
//! `state / value` keys, then kept busy by a trickle of writes to random keys. Node 2 is killed
//! (SIGKILL), its data directory deleted, and started again; the row measures, from the
//! restart, when its execution replica has executed past the batch the others had executed at
//! the restart (*executing*), and when it holds every object again (*whole*: for the eager
//! load, the same moment).

use crate::app::{BenchApp, KvBench};
use crate::plumb::{Placement, Plumb, PlumbShape};
use plumb_cluster::ProtocolOverrides;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the restarted replica loads the checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Load {
    Eager,
    OnDemand,
}

impl Load {
    pub fn parse(s: &str) -> Result<Load, String> {
        match s {
            "eager" => Ok(Load::Eager),
            "on-demand" => Ok(Load::OnDemand),
            _ => Err(format!("unknown load {s:?}: eager or on-demand")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Load::Eager => "eager",
            Load::OnDemand => "on-demand",
        }
    }
}

pub struct RecoveryBench {
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub base_port: u16,
    /// State sizes, in bytes of values.
    pub sizes: Vec<u64>,
    pub loads: Vec<Load>,
    pub value_bytes: usize,
    /// Concurrent writers filling the state.
    pub clients: usize,
    /// Writes per second kept up while the node recovers.
    pub trickle_per_s: u64,
    pub progress: bool,
}

/// How long a row waits for the restarted node.
pub const DEADLINE: Duration = Duration::from_secs(300);

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub load: Load,
    pub state_bytes: u64,
    pub keys: u64,
    pub fill_s: f64,
    /// From the restart to executing past the cluster's last batch at the restart (`None`:
    /// not within [`DEADLINE`]).
    pub executing_ms: Option<f64>,
    /// From the restart to holding every object again (`None`: not within [`DEADLINE`]).
    pub whole_ms: Option<f64>,
    /// Objects the restarted replica fetched (tree walk, or on demand and background fill).
    pub objects_fetched: u64,
}

/// Node 2's execution replica's counter `event`.
async fn exec_counter(plumb: &Plumb, event: &str) -> u64 {
    plumb
        .stage_events(2)
        .await
        .into_iter()
        .find(|(k, _)| k.ends_with(&format!("/{event}")) && k.starts_with('e'))
        .map_or(0, |(_, v)| v)
}

async fn last_executed(plumb: &Plumb, id: u16) -> u64 {
    plumb
        .status(id)
        .await
        .and_then(|s| s.get("last_executed")?.as_u64())
        .unwrap_or(0)
}

impl RecoveryBench {
    pub async fn run(&self) -> Result<Vec<Row>, String> {
        let mut rows = Vec::new();
        for (i, &size) in self.sizes.iter().enumerate() {
            for (j, &load) in self.loads.iter().enumerate() {
                let port = self.base_port + 100 * (i * self.loads.len() + j) as u16;
                rows.push(self.row(size, load, port).await?);
            }
        }
        Ok(rows)
    }

    async fn row(&self, size: u64, load: Load, port: u16) -> Result<Row, String> {
        let app: Arc<dyn BenchApp> = Arc::new(KvBench);
        let dir = self.dir.join(format!("{}-{size}", load.name()));
        let placement = Placement {
            protocol: ProtocolOverrides {
                checkpoint_interval: Some(64),
                load_objects_on_demand: Some(load == Load::OnDemand),
                ..ProtocolOverrides::default()
            },
            ..Placement::default()
        };
        let shape = PlumbShape {
            u: 1,
            r: 0,
            split: false,
            tentative: false,
            exec: None,
        };
        let clients = self.clients.max(1) as u32;
        let mut plumb = Plumb::start(
            app.clone(),
            &self.exe,
            &dir,
            &shape,
            port,
            clients,
            0,
            None,
            &placement,
        )
        .await?;
        let keys = (size / self.value_bytes.max(1) as u64).max(1);
        let started = Instant::now();
        let value: Vec<u8> = (0..self.value_bytes).map(|i| (i % 251) as u8).collect();
        let mut writers = tokio::task::JoinSet::new();
        for w in 0..self.clients.max(1) as u64 {
            let (pool, app, value) = (plumb.pool().clone(), app.clone(), value.clone());
            let step = self.clients.max(1) as u64;
            writers.spawn(async move {
                let mut k = w;
                while k < keys {
                    pool.call(app.write(&format!("r{k}"), &value), false)
                        .await
                        .map_err(|e| format!("filling the state: {e}"))?;
                    k += step;
                }
                Ok::<(), String>(())
            });
        }
        while let Some(done) = writers.join_next().await {
            done.map_err(|e| e.to_string())??;
        }
        let fill_s = started.elapsed().as_secs_f64();
        if self.progress {
            eprintln!(
                "{} {} MiB: {keys} keys in {fill_s:.1} s",
                load.name(),
                size >> 20
            );
        }
        // The trickle: writes to random keys, so batches keep coming and need their objects.
        let stop = Arc::new(AtomicBool::new(false));
        let trickle = {
            let (pool, app, stop) = (plumb.pool().clone(), app.clone(), stop.clone());
            let every = Duration::from_micros(1_000_000 / self.trickle_per_s.max(1));
            let small = vec![7u8; 64];
            tokio::spawn(async move {
                let mut k = 0x9e37_79b9_u64;
                while !stop.load(Ordering::Relaxed) {
                    k = k.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let _ = pool
                        .call(app.write(&format!("r{}", (k >> 33) % keys), &small), false)
                        .await;
                    tokio::time::sleep(every).await;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let target = last_executed(&plumb, 0)
            .await
            .max(last_executed(&plumb, 1).await);
        plumb.restart_wiped(2)?;
        let restarted = Instant::now();
        let deadline = restarted + DEADLINE;
        let (mut executing, mut whole) = (None, None);
        while executing.is_none() || whole.is_none() {
            if Instant::now() > deadline {
                break;
            }
            let now = restarted.elapsed();
            if executing.is_none() && last_executed(&plumb, 2).await > target {
                executing = Some(now);
            }
            if executing.is_some() && whole.is_none() {
                let done = match load {
                    Load::Eager => true,
                    Load::OnDemand => exec_counter(&plumb, "on-demand-fill-complete").await > 0,
                };
                if done {
                    whole = Some(restarted.elapsed());
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.store(true, Ordering::Relaxed);
        let _ = trickle.await;
        // A node publishes its stages' counters a few times a second: wait for the load's.
        let mut objects_fetched = 0;
        for _ in 0..30 {
            objects_fetched = exec_counter(&plumb, "object-transfer-objects").await
                + exec_counter(&plumb, "on-demand-objects").await;
            if objects_fetched > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
        Ok(Row {
            load,
            state_bytes: size,
            keys,
            fill_s,
            executing_ms: ms(executing),
            whole_ms: ms(whole),
            objects_fetched,
        })
    }
}

/// The rows as a table, with the eager load's times over the on-demand one's per size.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<10} {:>9} {:>8} {:>8} {:>13} {:>10} {:>9}\n",
        "load", "state MiB", "keys", "fill s", "executing ms", "whole ms", "objects"
    );
    let ms = |v: Option<f64>| v.map_or(format!(">{}", DEADLINE.as_millis()), |v| format!("{v:.0}"));
    for r in rows {
        out += &format!(
            "{:<10} {:>9} {:>8} {:>8.1} {:>13} {:>10} {:>9}\n",
            r.load.name(),
            r.state_bytes >> 20,
            r.keys,
            r.fill_s,
            ms(r.executing_ms),
            ms(r.whole_ms),
            r.objects_fetched
        );
    }
    for size in rows
        .iter()
        .map(|r| r.state_bytes)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let of = |l: Load| rows.iter().find(|r| r.state_bytes == size && r.load == l);
        let (Some(e), Some(o)) = (of(Load::Eager), of(Load::OnDemand)) else {
            continue;
        };
        if let (Some(ee), Some(oe)) = (e.executing_ms, o.executing_ms) {
            out += &format!(
                "{} MiB: executing again {:.1}x sooner on demand",
                size >> 20,
                ee / oe.max(0.001)
            );
            if let (Some(ew), Some(ow)) = (e.whole_ms, o.whole_ms) {
                out += &format!(
                    "; holding everything in {:.2}x the eager time",
                    ow / ew.max(0.001)
                );
            }
            out += "\n";
        }
    }
    out
}
