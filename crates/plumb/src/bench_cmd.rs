//! `plumb bench`: measure plumb (and, with `compare`, etcd, ZooKeeper and Redis) on this
//! machine with the same load generator, and print, write and draw what it measured.

mod nemesis;
mod recovery;
mod zz;

use clap::{Args, Subcommand};
use plumb::cli::{runtime, terminated};
use plumb_bench::chart;
use plumb_bench::load::Load;
use plumb_bench::plumb::PlumbShape;
use plumb_bench::report;
use plumb_bench::suite::{Suite, SuiteOutcome, SystemSpec};
use plumb_bench::workload::{Workload, Znode};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    /// Failures tolerated while up.
    #[arg(long, default_value_t = 1)]
    u: u16,
    /// Commission failures tolerated while right [default: 0; 1 with --scenario].
    #[arg(long)]
    r: Option<u16>,
    /// Run each stage replica in its own process instead of co-locating one of each per node.
    #[arg(long)]
    split: bool,
    /// Execution replicas [default: the minimum, u + max(u, r) + 1] (`plumb init --exec`).
    #[arg(long)]
    exec: Option<usize>,
    /// Request and reply payload sizes, `REQUEST/REPLY` in bytes, `k` for KiB: 0/0, 1k/1k, 4k/0.
    #[arg(long, default_value = "1k/1k")]
    size: String,
    /// Share of operations that are writes (the rest are linearizable reads).
    #[arg(long, default_value_t = 1.0)]
    writes: f64,
    /// The fault scoreboard: run the load fault-free, then under this adversary (`all`: every
    /// one, or a comma-separated list), each on a fresh cluster, and print one line per
    /// scenario. Needs a test build: cargo build --release -p plumb --features adversary
    /// --target-dir target/adversary. --csv writes scenario,baseline_ops_per_s,faulty_ops_per_s,ratio;
    /// --chart draws the ratios.
    #[arg(long)]
    scenario: Option<String>,
    /// The nemesis: kill (then restart), pause (SIGSTOP, then SIGCONT) or partition (packet
    /// filter; root only) the primary's node and then the next primary's, one at a time, under
    /// a Redis load through the gateway whose history is checked for linearizability; prints
    /// per fault the longest window without a successful operation and the time back to half
    /// throughput (`all`, or a comma-separated list). --warmup is the fault-free time before
    /// each fault; --json writes every figure. Exits 1 on a linearizability violation.
    #[arg(long)]
    nemesis: Option<String>,
    /// With --nemesis: seconds each fault lasts.
    #[arg(long, default_value_t = 3.0)]
    hold: f64,
    /// With --nemesis: seconds the load is watched after healing.
    #[arg(long, default_value_t = 3.0)]
    recover: f64,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// plumb u=1,r=0 and u=1,r=1 against a 3-node etcd cluster, a 3-server ZooKeeper ensemble
    /// and one unreplicated Redis server, on writes and linearizable reads of 1 KiB values;
    /// and plumb's coordination service (through its ZooKeeper gateway) u=1,r=0 and u=1,r=1
    /// against the ZooKeeper ensemble on ZooKeeper's create, setData and getData, both through
    /// the same ZooKeeper client library; one after another on this machine. Installs etcd,
    /// ZooKeeper and Redis if missing (as root).
    Compare(CompareArgs),
    /// plumb in every (u, r) of {(0,0), (1,0), (0,1), (1,1), (2,0), (2,1)}, co-located and split.
    Matrix(MatrixArgs),
    /// Prophecy (seed 000 §7.2, §7.3): read throughput and latency at u=1,r=1 of every read
    /// ordered (replicated), plumb's read-only path (read-only), reads checked by a sketcher
    /// this process runs as the gateway would (prophecy) and D-Prophecy's replica-vouched reads
    /// (d-prophecy), with settable CPU work per read and transition ratio, on one fresh cluster
    /// of the `readwork` application. --csv writes
    /// system,work_us,transition_pct,sketchers,ops_per_s,p50_ms,p99_ms.
    Prophecy(ProphecyArgs),
    /// Client speculation's set-up (seed 001 §5, issue 16): one client issuing --ops dependent
    /// operations of specbench (a token-chained counter, and a create/write/read file chain)
    /// against an unreplicated server, a plumb u=1,r=1 cluster called one operation at a time,
    /// and the same cluster through a speculative session, in the topologies lan (no delay),
    /// near (node 0, the view-0 primary's, at the client's site, the others --delay-ms away)
    /// and far (every node --delay-ms from the client and each other), under plumb's emulated
    /// WAN (docs/wan-emulation.md); and peak throughput with many callers on lan. --csv writes
    /// system,topology,ops,run_s,ops_per_s,workload.
    Speculation(SpeculationArgs),
    /// Serve specbench unreplicated (one process, no replication, no disk): the baseline
    /// `bench speculation` starts. Runs until stopped.
    Unreplicated(UnreplicatedArgs),
    /// A node that lost its disk: how soon its execution replica executes again and holds the
    /// whole state, loading the stable checkpoint eagerly and on demand, by state size
    /// (docs/objects.md "Loading on demand"). --csv writes
    /// load,state_bytes,keys,fill_s,executing_ms,whole_ms,objects_fetched.
    Recovery(recovery::RecoveryArgs),
    /// Sleeping execution replicas (ZZ, seed 002, docs/zz.md) at u=1,r=1 on burnkv (the
    /// key-value store, each operation burning --burn-us of CPU): execution-stage CPU per
    /// operation with ZZ against every replica executing; and, by state size and share written
    /// since the stable checkpoint, the time from an active's crash to the client's next
    /// correct reply with the woken replica loading on demand against eagerly, and p50 latency
    /// before the fault and after the recovery. --csv writes
    /// mode,state_mib,dirty_pct,recovery_ms,exec_cpu_us_per_op,p50_after_ms,p50_before_ms,woken_ms,early_wakes.
    Zz(zz::ZzArgs),
}

#[derive(Args, Debug)]
struct SpeculationArgs {
    /// Dependent operations per run (seed 001 uses 2000).
    #[arg(long, default_value_t = 2000)]
    ops: u64,
    /// Operations before each timed run (not counted).
    #[arg(long, default_value_t = 20)]
    warmup_ops: u64,
    /// The systems, in order: unreplicated, plumb, plumb-spec, plumb-tentative (plumb with
    /// tentative agreement, docs/protocol.md).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "unreplicated,plumb,plumb-spec"
    )]
    systems: Vec<String>,
    /// The topologies, in order.
    #[arg(long, value_delimiter = ',', default_value = "lan,near,far")]
    topologies: Vec<String>,
    /// The dependent workloads: counter (increments, each with the token the previous one
    /// answered), files (create a file, write what the previous one held plus a byte, read it).
    #[arg(long, value_delimiter = ',', default_value = "counter,files")]
    workloads: Vec<String>,
    /// One-way delay between sites, in milliseconds (seed 001: 15).
    #[arg(long, default_value_t = 15)]
    delay_ms: u64,
    /// Closed-loop callers of the peak rows, on lan (0: no peak rows); plumb-spec runs half as
    /// many sessions of two lanes each, the same number of client identities.
    #[arg(long, default_value_t = 32)]
    peak_clients: usize,
    /// Seconds the peak rows measure (after 1 s of warm-up).
    #[arg(long, default_value_t = 5.0)]
    peak_duration: f64,
    /// Write the runs to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write every run to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Where the clusters keep their data (default: a temporary directory, removed after).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// First port: each system and topology takes 20 from here on. Below 32768, where Linux's
    /// ephemeral range begins: the nodes' outgoing connections bind their own addresses with
    /// any port, so a later cluster's listening port in that range could be held (a CI run's
    /// node exited on start with the default at 41400).
    #[arg(long, default_value_t = 25400)]
    base_port: u16,
    /// Loopback network of the servers: nodes on A.B.C.11 and up, the unreplicated server on
    /// A.B.C.2.
    #[arg(long, default_value = "127.0.41")]
    net: String,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct UnreplicatedArgs {
    /// host:port to listen on.
    #[arg(long)]
    listen: std::net::SocketAddr,
}

#[derive(Args, Debug)]
struct ProphecyArgs {
    /// The systems, in order (d-prophecy's writes change values: it runs last by default).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "replicated,read-only,prophecy,d-prophecy"
    )]
    systems: Vec<String>,
    /// CPU time an execution replica spends on each read, in microseconds (BLAKE3 rounds,
    /// calibrated on this machine at the start).
    #[arg(long, value_delimiter = ',', default_value = "0,100,1000")]
    work_us: Vec<u64>,
    /// Transition ratios in percent: for prophecy that share of fast replies is failed at the
    /// sketcher (seed 000 §7.2); for d-prophecy that share of reads follows a write to the same
    /// key (real transitions). replicated and read-only keep no history: measured at 0 only.
    #[arg(long, value_delimiter = ',', default_value = "0,15")]
    transitions: Vec<u32>,
    /// Sketcher counts for prophecy (each its own pool of client identities and thread; the
    /// history table partitioned among them).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    sketchers: Vec<usize>,
    /// Closed-loop callers (one read outstanding each).
    #[arg(long, default_value_t = 48)]
    clients: usize,
    /// Keys read, uniformly at random.
    #[arg(long, default_value_t = 1000)]
    keys: u32,
    /// Seconds measured per configuration.
    #[arg(long, default_value_t = 4.0)]
    duration: f64,
    /// Seconds of load before measuring (after the history is filled).
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// A smoke run: work 0 and 100, 0% transitions, 1 sketcher, 1 s measured.
    #[arg(long)]
    quick: bool,
    /// Write the runs to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write every run, every field, to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Where the cluster keeps its data.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// First port of the cluster's nodes.
    #[arg(long, default_value_t = 26000)]
    base_port: u16,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// The systems, in order: plumb-u<U>r<R>[-split][-tentative],
    /// plumb-coord-u<U>r<R>[-split][-tentative][-ordered-reads] (-tentative: with tentative
    /// agreement; the ZooKeeper gateway sends reads that set no watch down the read-only path,
    /// as `plumb init --app coord` configures it; -ordered-reads: it orders every read), etcd,
    /// zookeeper, redis.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "plumb-u1r0,plumb-u1r1,plumb-coord-u1r0,plumb-coord-u1r1,etcd,zookeeper,redis"
    )]
    systems: Vec<String>,
    /// The workloads, in order; each system runs those it can. write-<SIZE> and read-<SIZE>
    /// (keyed writes and linearizable reads: plumb's key-value store, etcd, ZooKeeper, Redis);
    /// zk-create (fresh persistent znodes of 16 bytes), zk-set-<SIZE> (setData on existing
    /// znodes) and zk-get-<SIZE> (getData) for the systems that speak ZooKeeper's protocol
    /// (plumb-coord-*, zookeeper).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "write-1k,read-1k,zk-create,zk-set-1k,zk-get-1k"
    )]
    workloads: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct MatrixArgs {
    /// Request and reply payload sizes, as for `plumb bench`.
    #[arg(long, default_value = "0/0")]
    size: String,
    /// Only the co-located shapes.
    #[arg(long)]
    no_split: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct Common {
    /// Closed-loop clients (one request outstanding each); a list sweeps the load, for a
    /// latency-versus-throughput curve.
    #[arg(long, value_delimiter = ',', default_value = "32")]
    clients: Vec<usize>,
    /// Open loop instead: issue this many requests per second (over --clients sessions); a
    /// list sweeps the rate.
    #[arg(long, value_delimiter = ',')]
    rate: Vec<f64>,
    /// Seconds measured per load level.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of load before measuring starts.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Stop a load level after this many operations, if sooner than --duration.
    #[arg(long)]
    requests: Option<u64>,
    /// Distinct keys.
    #[arg(long, default_value_t = 1000)]
    keys: usize,
    /// Write every run to this CSV file (`compare`: the comparison table, with the header
    /// system,config,workload,ops_per_s,p50_ms,p99_ms).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write every run, every field, to this JSON file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw latency against throughput to this SVG file (`compare` also draws
    /// <name>-throughput.svg beside it).
    #[arg(long)]
    chart: Option<PathBuf>,
    /// Where the clusters keep their data; each system gets a fresh directory under it.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// First port; each system takes 100 from here.
    #[arg(long, default_value_t = 26000)]
    base_port: u16,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    /// Run every system this many times, interleaved, each on a fresh cluster; print each
    /// level's median, lowest and highest throughput and p99, and take peaks and comparisons
    /// from the median runs (this machine's figures swing by up to 2x between runs).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=100))]
    rounds: u16,
    /// Count the servers' system calls and fsyncs per operation too (perf's syscall
    /// tracepoints: needs perf and root; each system call costs a little more while counted).
    #[arg(long)]
    syscalls: bool,
}

/// The data of each znode `zk-create` makes: small, as a lock's or a member's znode is.
const ZK_CREATE_BYTES: usize = 16;

fn parse_size(text: &str) -> Result<(usize, usize), String> {
    let one = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        let (n, mult) = match t.strip_suffix(['k', 'K']) {
            Some(n) => (n, 1024),
            None => (t, 1),
        };
        n.parse::<usize>().map(|n| n * mult).map_err(|_| {
            format!("--size `{text}`: `{t}` is not a byte count (examples: 0, 512, 1k, 4k)")
        })
    };
    let (req, rep) = text
        .split_once('/')
        .ok_or_else(|| format!("--size `{text}`: give REQUEST/REPLY, for example 1k/1k"))?;
    Ok((one(req)?, one(rep)?))
}

impl Common {
    fn loads(&self) -> Vec<Load> {
        let sessions = self.clients.iter().copied().max().unwrap_or(32).max(1);
        if self.rate.is_empty() {
            self.clients
                .iter()
                .map(|&c| Load::Closed { clients: c.max(1) })
                .collect()
        } else {
            self.rate
                .iter()
                .map(|&rate| Load::Open {
                    rate,
                    clients: sessions,
                })
                .collect()
        }
    }

    fn suite(&self, systems: Vec<SystemSpec>, workloads: Vec<Workload>) -> Result<Suite, String> {
        let exe = plumb_exe()?;
        let dir = bench_dir(&self.dir, "plumb-bench");
        Ok(Suite {
            systems,
            workloads,
            loads: self.loads(),
            warmup: Duration::from_secs_f64(self.warmup.max(0.0)),
            duration: Duration::from_secs_f64(self.duration.max(0.1)),
            max_ops: self.requests,
            // The comparison workloads are keyed writes and reads: plumb runs the key-value
            // store, which this binary registers.
            app: Arc::new(plumb_bench::app::KvBench),
            exe,
            dir,
            base_port: self.base_port,
            progress: !self.quiet,
            rounds: usize::from(self.rounds),
            syscalls: self.syscalls,
        })
    }

    fn workload(&self, size: &str, writes: f64) -> Result<Workload, String> {
        let (request_bytes, reply_bytes) = parse_size(size)?;
        if !(0.0..=1.0).contains(&writes) {
            return Err(format!("--writes {writes}: give a share between 0 and 1"));
        }
        Ok(Workload::keyed(
            request_bytes,
            reply_bytes,
            writes,
            self.keys.max(1),
        ))
    }

    /// A `--workloads` name: `write-1k`, `read-1k`, `zk-create`, `zk-set-1k`, `zk-get-1k`.
    fn named_workload(&self, name: &str) -> Result<Workload, String> {
        let bytes = |size: &str| -> Result<usize, String> {
            parse_size(&format!("{size}/0"))
                .map(|(b, _)| b)
                .map_err(|_| {
                    format!("--workloads: `{name}`: `{size}` is not a size (examples: 0, 512, 1k)")
                })
        };
        let keys = self.keys.max(1);
        if name == "zk-create" {
            return Ok(Workload::zk(Znode::Create, ZK_CREATE_BYTES, keys));
        }
        if let Some(size) = name.strip_prefix("zk-set-") {
            return Ok(Workload::zk(Znode::Set, bytes(size)?, keys));
        }
        if let Some(size) = name.strip_prefix("zk-get-") {
            return Ok(Workload::zk(Znode::Get, bytes(size)?, keys));
        }
        if let Some(size) = name.strip_prefix("write-") {
            let b = bytes(size)?;
            return Ok(Workload::keyed(b, b, 1.0, keys));
        }
        if let Some(size) = name.strip_prefix("read-") {
            let b = bytes(size)?;
            return Ok(Workload::keyed(b, b, 0.0, keys));
        }
        Err(format!(
            "--workloads: unknown workload `{name}`: use write-<SIZE>, read-<SIZE>, zk-create, zk-set-<SIZE> or zk-get-<SIZE>"
        ))
    }

    /// Print the table, write the files; the exit code says whether every system was measured.
    fn finish(&self, suite: &Suite, outcome: SuiteOutcome, compare: bool) -> ExitCode {
        let results = &outcome.results;
        out!("");
        out!("machine: {}", report::machine());
        out!(
            "each load level: {:.0} s warm-up, then {:.0} s measured{}",
            suite.warmup.as_secs_f64(),
            suite.duration.as_secs_f64(),
            suite
                .max_ops
                .map_or(String::new(), |m| format!(" or {m} operations"))
        );
        out!("");
        out!("{}", report::table(results));
        out!("{}", report::cost_table(results));
        let peaks = if suite.rounds > 1 {
            out!(
                "over {} rounds, interleaved: each level's median, lowest and highest (each figure on its own):",
                suite.rounds
            );
            out!("{}", report::spread(results));
            report::peaks(&report::medians(results))
        } else {
            report::peaks(results)
        };
        if compare {
            let of = if suite.rounds > 1 {
                "median runs' "
            } else {
                ""
            };
            out!("{of}peak of each system, ratios to plumb u1r0 (on the zk- workloads, to plumb-coord u1r0):");
            out!(
                "{}",
                report::comparison(&peaks, &[("plumb", "u1r0"), ("plumb-coord", "u1r0")])
            );
        }
        let mut ok = report_and_write(
            "plumb bench",
            &outcome.failures,
            &[
                (&self.csv, &|| {
                    if compare {
                        report::comparison_csv(&peaks)
                    } else {
                        report::runs_csv(results)
                    }
                }),
                (&self.json, &|| {
                    serde_json::to_string_pretty(results).unwrap_or_default()
                }),
            ],
        );
        let mut write = |r: Result<(), String>| {
            if let Err(e) = r {
                eprintln!("plumb bench: {e}");
                ok = false;
            }
        };
        if let Some(path) = &self.chart {
            write(chart::latency_vs_throughput(
                path,
                "Latency against throughput",
                "p50 latency (ms)",
                &chart::from_results(results),
            ));
            if compare {
                let bars: Vec<(String, f64)> = peaks
                    .iter()
                    .map(|r| {
                        (
                            format!("{} {} {}", r.system, r.config, r.workload),
                            r.ops_per_s,
                        )
                    })
                    .collect();
                let stem = path
                    .file_stem()
                    .map_or("bench".into(), |s| s.to_string_lossy().to_string());
                let bars_path = path.with_file_name(format!("{stem}-throughput.svg"));
                write(chart::bars(
                    &bars_path,
                    "Peak throughput, one run, one machine",
                    "ops/s",
                    &bars,
                ));
            }
        }
        if self.dir.is_none() {
            let _ = std::fs::remove_dir_all(&suite.dir);
        }
        exit_code(ok)
    }
}

/// The plumb executable, which the benches start as every server they run.
fn plumb_exe() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find the plumb executable: {e}"))
}

/// `--dir` if given, else `NAME-PID` in the system's temporary directory.
fn bench_dir(given: &Option<PathBuf>, name: &str) -> PathBuf {
    given
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("{name}-{}", std::process::id())))
}

/// Like `bench_dir`, for a bench that must start from nothing: a `--dir` that exists already is
/// refused.
fn fresh_bench_dir(given: &Option<PathBuf>, name: &str) -> Result<PathBuf, String> {
    let dir = bench_dir(given, name);
    if dir.exists() && given.is_some() {
        return Err(format!(
            "{} exists; give a directory that does not",
            dir.display()
        ));
    }
    Ok(dir)
}

/// Runs `bench` to its end, or until Ctrl-C or SIGTERM (`None`): dropping the bench then
/// stops every server it started.
fn until_terminated<F: std::future::Future>(bench: F) -> Option<F::Output> {
    runtime().block_on(async {
        tokio::select! {
            outcome = bench => Some(outcome),
            _ = terminated() => None,
        }
    })
}

/// Runs a bench that keeps its servers under `dir` and removes `dir` after it unless the user
/// named it. On interruption or a failed start it has said why, under `who`, and gives the
/// exit code.
fn run_bench<T>(
    who: &str,
    dir: &std::path::Path,
    keep_dir: bool,
    bench: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, ExitCode> {
    let outcome = until_terminated(bench);
    if !keep_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    match outcome {
        None => {
            eprintln!("{who}: interrupted; the servers it started are stopped");
            Err(ExitCode::from(130))
        }
        Some(Err(e)) => Err(usage_error(who, e)),
        Some(Ok(o)) => Ok(o),
    }
}

/// Says what is wrong with the command, under `who`; exit code 2.
fn usage_error(who: &str, e: String) -> ExitCode {
    eprintln!("{who}: {e}");
    ExitCode::from(2)
}

/// A file the user may have asked for (`--csv`, `--json`), and how to make its text.
type OutputFile<'a> = (&'a Option<PathBuf>, &'a dyn Fn() -> String);

/// Says, under `who`, what was not measured, and writes each file the user asked for. False
/// if anything was not measured or not written.
fn report_and_write(who: &str, failures: &[String], files: &[OutputFile]) -> bool {
    let mut ok = failures.is_empty();
    for f in failures {
        eprintln!("{who}: not measured: {f}");
    }
    for (path, text) in files {
        if let Some(path) = path {
            if let Err(e) = report::write(path, &text()) {
                eprintln!("{who}: {e}");
                ok = false;
            }
        }
    }
    ok
}

/// Success if everything was measured and written, else 1.
fn exit_code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The lines that open a prophecy or speculation report: how it was run, on what, and how
/// busy the machine was.
fn print_provenance(command: &[String], load_before: &str, load_after: &str) {
    out!("");
    out!("command: {}", command.join(" "));
    out!("machine: {}", report::machine());
    out!("load average (1/5/15 min): {load_before} before, {load_after} after");
}

pub fn bench_cmd(a: BenchArgs) -> ExitCode {
    if let Some(BenchCommand::Prophecy(p)) = &a.command {
        return prophecy_cmd(p);
    }
    if let Some(BenchCommand::Speculation(s)) = &a.command {
        return speculation_cmd(s);
    }
    if let Some(BenchCommand::Unreplicated(u)) = &a.command {
        return unreplicated_cmd(u);
    }
    if let Some(BenchCommand::Recovery(r)) = &a.command {
        return recovery::recovery_cmd(r);
    }
    if let Some(BenchCommand::Zz(z)) = &a.command {
        return zz::zz_cmd(z);
    }
    if let (None, Some(faults)) = (&a.command, &a.nemesis) {
        return nemesis::nemesis_cmd(&a, faults);
    }
    if let (None, Some(names)) = (&a.command, &a.scenario) {
        return scoreboard_cmd(&a, names);
    }
    let prepared = match &a.command {
        None => a.common.workload(&a.size, a.writes).and_then(|w| {
            let shape = PlumbShape {
                u: a.u,
                r: a.r.unwrap_or(0),
                split: a.split,
                tentative: false,
                exec: a.exec,
            };
            Ok((
                &a.common,
                a.common.suite(vec![SystemSpec::Plumb(shape)], vec![w])?,
                false,
            ))
        }),
        Some(BenchCommand::Compare(c)) => (|| {
            let systems = c
                .systems
                .iter()
                .map(|s| SystemSpec::parse(s))
                .collect::<Result<Vec<_>, _>>()?;
            let workloads = c
                .workloads
                .iter()
                .map(|w| c.common.named_workload(w))
                .collect::<Result<Vec<_>, _>>()?;
            if !systems.iter().any(|s| workloads.iter().any(|w| s.runs(w))) {
                return Err("none of the --systems runs any of the --workloads".into());
            }
            Ok((&c.common, c.common.suite(systems, workloads)?, true))
        })(),
        Some(
            BenchCommand::Prophecy(_)
            | BenchCommand::Speculation(_)
            | BenchCommand::Unreplicated(_)
            | BenchCommand::Recovery(_)
            | BenchCommand::Zz(_),
        ) => unreachable!("handled above"),
        Some(BenchCommand::Matrix(m)) => (|| {
            let mut systems = Vec::new();
            for split in [false, true] {
                if split && m.no_split {
                    continue;
                }
                for (u, r) in [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)] {
                    systems.push(SystemSpec::Plumb(PlumbShape {
                        u,
                        r,
                        split,
                        tentative: false,
                        exec: None,
                    }));
                }
            }
            Ok((
                &m.common,
                m.common
                    .suite(systems, vec![m.common.workload(&m.size, 1.0)?])?,
                false,
            ))
        })(),
    };
    let (common, suite, compare) = match prepared {
        Ok(p) => p,
        Err(e) => {
            eprintln!("plumb bench: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(outcome) = until_terminated(suite.run()) else {
        eprintln!("plumb bench: interrupted; the servers it started are stopped");
        if common.dir.is_none() {
            let _ = std::fs::remove_dir_all(&suite.dir);
        }
        return ExitCode::from(130);
    };
    common.finish(&suite, outcome, compare)
}

/// `plumb bench prophecy`.
fn prophecy_cmd(p: &ProphecyArgs) -> ExitCode {
    use plumb_bench::prophecy::{self, ProphecyBench, System};
    const WHO: &str = "plumb bench prophecy";
    let fail = |e: String| usage_error(WHO, e);
    let systems = match p
        .systems
        .iter()
        .map(|s| System::parse(s))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let exe = match plumb_exe() {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let dir = match fresh_bench_dir(&p.dir, "plumb-bench-prophecy") {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let mut bench = ProphecyBench {
        exe,
        dir: dir.clone(),
        base_port: p.base_port,
        systems,
        work_us: p.work_us.clone(),
        transitions: p.transitions.clone(),
        sketchers: p.sketchers.iter().map(|&n| n.max(1)).collect(),
        clients: p.clients.max(1),
        keys: p.keys.max(1),
        warmup: Duration::from_secs_f64(p.warmup.max(0.0)),
        duration: Duration::from_secs_f64(p.duration.max(0.1)),
        progress: !p.quiet,
    };
    if p.quick {
        bench.work_us = vec![0, 100];
        bench.transitions = vec![0];
        bench.sketchers = vec![1];
        bench.duration = Duration::from_secs(1);
        bench.warmup = Duration::from_millis(500);
    }
    let command: Vec<String> = std::env::args().collect();
    let outcome = match run_bench(WHO, &dir, p.dir.is_some(), bench.run()) {
        Ok(o) => o,
        Err(code) => return code,
    };
    print_provenance(&command, &outcome.load_before, &outcome.load_after);
    out!(
        "cluster: plumb u1r1 co-located, {} nodes on loopback, {} execution replicas, application readwork",
        outcome.nodes,
        outcome.exec
    );
    out!(
        "load: {} closed-loop callers, {} keys read uniformly, {:.1} s warm-up then {:.1} s measured per row; work: {:.1} BLAKE3 rounds per microsecond (calibrated here)",
        bench.clients,
        bench.keys,
        bench.warmup.as_secs_f64(),
        bench.duration.as_secs_f64(),
        outcome.rounds_per_us
    );
    out!("this process plays the gateway: it holds the client pools and, for prophecy, the SketchedReads (one pool of {} client identities, thread and links per sketcher; auto-blacklisting off)", bench.clients);
    out!("transitions: prophecy fails that share of fast replies at the sketcher; d-prophecy writes a new value to the key before that share of reads (writes not counted); replicated and read-only keep no history (0% only)");
    out!("");
    out!("{}", prophecy::table(&outcome.rows));
    out!("throughput ratios (baselines: replicated and read-only at the same work):");
    out!("{}", prophecy::ratios(&outcome.rows));
    exit_code(report_and_write(
        WHO,
        &outcome.failures,
        &[
            (&p.csv, &|| prophecy::csv(&outcome.rows)),
            (&p.json, &|| {
                serde_json::to_string_pretty(&outcome.rows).unwrap_or_default()
            }),
        ],
    ))
}

/// `plumb bench unreplicated`: `specbench` in one process, until SIGTERM or Ctrl-C.
fn unreplicated_cmd(u: &UnreplicatedArgs) -> ExitCode {
    runtime().block_on(async {
        let listener = match tokio::net::TcpListener::bind(u.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "plumb bench unreplicated: cannot listen on {}: {e}",
                    u.listen
                );
                return ExitCode::from(2);
            }
        };
        out!("unreplicated specbench on {}", u.listen);
        // The application `plumb bench speculation` runs on every system: specbench behind
        // the predicated-request shim, as the replicas run it.
        let app = Box::new(plumb_speculation::Speculative::new(
            plumb_speculation::SpecBench::default,
            crate::kv_app::SPEC_TRUNCATE_EVERY,
        ));
        tokio::select! {
            _ = plumb_bench::unreplicated::serve(listener, app) => {}
            _ = terminated() => {}
        }
        ExitCode::SUCCESS
    })
}

/// `plumb bench speculation`.
fn speculation_cmd(s: &SpeculationArgs) -> ExitCode {
    use plumb_bench::speculation::{self, SpeculationBench, System, Topology};
    const WHO: &str = "plumb bench speculation";
    let fail = |e: String| usage_error(WHO, e);
    let parsed = (|| {
        let systems = s
            .systems
            .iter()
            .map(|x| System::parse(x))
            .collect::<Result<Vec<_>, _>>()?;
        let topologies = s
            .topologies
            .iter()
            .map(|x| Topology::parse(x))
            .collect::<Result<Vec<_>, _>>()?;
        for w in &s.workloads {
            speculation::workload(w, "check")?;
        }
        let net: Vec<u8> = s
            .net
            .split('.')
            .map(|o| o.parse::<u8>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("--net {}: not three octets like 127.0.41", s.net))?;
        let net: [u8; 3] = net
            .try_into()
            .map_err(|_| format!("--net {}: not three octets like 127.0.41", s.net))?;
        Ok::<_, String>((systems, topologies, net))
    })();
    let (systems, topologies, net) = match parsed {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let exe = match plumb_exe() {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let dir = match fresh_bench_dir(&s.dir, "plumb-bench-speculation") {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let bench = SpeculationBench {
        exe,
        dir: dir.clone(),
        base_port: s.base_port,
        net,
        systems,
        topologies,
        workloads: s.workloads.iter().map(|w| w.trim().to_string()).collect(),
        ops: s.ops.max(1),
        warmup_ops: s.warmup_ops,
        delay_ms: s.delay_ms,
        peak_clients: s.peak_clients,
        peak_duration: Duration::from_secs_f64(s.peak_duration.max(0.1)),
        progress: !s.quiet,
    };
    let command: Vec<String> = std::env::args().collect();
    let outcome = match run_bench(WHO, &dir, s.dir.is_some(), bench.run()) {
        Ok(o) => o,
        Err(code) => return code,
    };
    print_provenance(&command, &outcome.load_before, &outcome.load_after);
    out!(
        "plumb: u1r1 co-located, {} node processes, node i on {}.{}, specbench behind the predicated-request shim, called through the client library one operation at a time (client record synced per request); plumb-tentative: the same with tentative agreement; plumb-spec: the same cluster through a speculative session of {} lanes going on with execution replica 0's early replies; peak: clients of 2 identities each, a speculative session per client (plumb-spec) or 2 callers per client (plumb); primary rotation off (throughput_grace_us = 1 h) so the view-0 primary stays on node 0",
        outcome.nodes,
        s.net,
        "11+i",
        plumb_speculation::SPEC_GROUP
    );
    out!(
        "unreplicated: one `plumb bench unreplicated` process on {}.2 running the same application, each request its own batch, no disk",
        s.net
    );
    out!(
        "emulated WAN (in plumb's transport, docs/wan-emulation.md): {} ms one-way between sites; lan: none; near: node 0 (view-0 primary) and the unreplicated server at the client's site, nodes 1-3 away; far: every node and the server away from the client and each other",
        bench.delay_ms
    );
    out!(
        "load: one client, {} dependent operations per run after {} warm-up operations; peak: {} closed-loop callers on lan for {:.1} s",
        bench.ops,
        bench.warmup_ops,
        bench.peak_clients,
        bench.peak_duration.as_secs_f64()
    );
    out!("");
    out!("{}", speculation::table(&outcome.rows));
    out!("ratios:");
    out!("{}", speculation::ratios(&outcome.rows));
    for note in &outcome.notes {
        out!("{note}");
    }
    exit_code(report_and_write(
        WHO,
        &outcome.failures,
        &[
            (&s.csv, &|| speculation::csv(&outcome.rows)),
            (&s.json, &|| {
                serde_json::to_string_pretty(&outcome.rows).unwrap_or_default()
            }),
        ],
    ))
}

/// `plumb bench --scenario`: the fault scoreboard (docs/robustness.md).
fn scoreboard_cmd(a: &BenchArgs, names: &str) -> ExitCode {
    use plumb_bench::scenario::{self, Fault, Scoreboard};
    let fail = |e: String| usage_error("plumb bench", e);
    let scenarios = match scenario::select(names) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let needs_adversary = scenarios
        .iter()
        .any(|s| matches!(&s.fault, Fault::Node { behaviour, .. } if behaviour != plumb_bench::plumb::DOWN));
    if needs_adversary && !cfg!(feature = "adversary") {
        return fail(
            "faulty-replica scenarios need a test build of plumb whose nodes can act out an adversary; build one with `cargo build --release -p plumb --features adversary --target-dir target/adversary` and run target/adversary/release/plumb bench --scenario ...".into(),
        );
    }
    let workload = match a.common.workload(&a.size, a.writes) {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    let suite = match a.common.suite(Vec::new(), Vec::new()) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let board = Scoreboard {
        app: suite.app.clone(),
        exe: suite.exe.clone(),
        dir: suite.dir.clone(),
        base_port: a.common.base_port,
        shape: PlumbShape {
            u: a.u,
            r: a.r.unwrap_or(1),
            split: a.split,
            tentative: false,
            exec: None,
        },
        workload,
        clients: a.common.clients.iter().copied().max().unwrap_or(32).max(1),
        warmup: suite.warmup,
        duration: suite.duration,
        progress: !a.common.quiet,
    };
    let outcome = until_terminated(board.run(&scenarios));
    if a.common.dir.is_none() {
        let _ = std::fs::remove_dir_all(&board.dir);
    }
    let Some((scores, failures)) = outcome else {
        eprintln!("plumb bench: interrupted; the servers it started are stopped");
        return ExitCode::from(130);
    };
    out!("");
    out!("machine: {}", report::machine());
    out!(
        "cluster: plumb {}, {} closed-loop clients plus client 0 alone, {} ; {:.0} s warm-up, {:.0} s measured, a fresh cluster per scenario",
        board.shape.label(),
        board.clients,
        board.workload.name(),
        board.warmup.as_secs_f64(),
        board.duration.as_secs_f64()
    );
    out!("");
    out!(
        "{:<26} {:>14} {:>14} {:>7} {:>14} {:>14} {:>9}",
        "scenario",
        "fault-free/s",
        "under fault/s",
        "ratio",
        "client 0/s",
        "per client/s",
        "p99 ms"
    );
    for s in &scores {
        out!(
            "{:<26} {:>14.0} {:>14.0} {:>6.0}% {:>14.1} {:>14.1} {:>9.1}",
            s.scenario,
            s.baseline_ops_per_s,
            s.faulty_ops_per_s,
            s.ratio * 100.0,
            s.victim_ops_per_s,
            s.others_per_client_ops_per_s,
            s.p99_ms
        );
    }
    let csv = || {
        let mut text = String::from("scenario,baseline_ops_per_s,faulty_ops_per_s,ratio\n");
        for s in &scores {
            text.push_str(&format!(
                "{},{:.1},{:.1},{:.4}\n",
                s.scenario, s.baseline_ops_per_s, s.faulty_ops_per_s, s.ratio
            ));
        }
        text
    };
    let mut ok = report_and_write(
        "plumb bench",
        &failures,
        &[
            (&a.common.csv, &csv),
            (&a.common.json, &|| {
                serde_json::to_string_pretty(&scores).unwrap_or_default()
            }),
        ],
    );
    if let Some(path) = &a.common.chart {
        let bars: Vec<(String, f64)> = scores
            .iter()
            .map(|s| (s.scenario.clone(), s.ratio * 100.0))
            .collect();
        if let Err(e) = chart::bars(
            path,
            "Throughput under each fault, % of fault-free",
            "% of fault-free ops/s",
            &bars,
        ) {
            eprintln!("plumb bench: {e}");
            ok = false;
        }
    }
    exit_code(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_kib_suffixes() {
        assert_eq!(parse_size("0/0"), Ok((0, 0)));
        assert_eq!(parse_size("1k/1k"), Ok((1024, 1024)));
        assert_eq!(parse_size("4K/0"), Ok((4096, 0)));
        assert!(parse_size("1k").unwrap_err().contains("REQUEST/REPLY"));
        assert!(parse_size("x/0").unwrap_err().contains("not a byte count"));
    }
}
