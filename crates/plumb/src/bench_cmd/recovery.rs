//! `plumb bench recovery`: a node that lost its disk, its execution replica loading the stable
//! checkpoint eagerly and on demand, by state size (crates/bench/src/recovery.rs).

use super::{exit_code, fresh_bench_dir, plumb_exe, print_provenance, report_and_write};
use super::{run_bench, usage_error};
use clap::Args;
use plumb_bench::recovery::{self, Load, RecoveryBench};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct RecoveryArgs {
    /// State sizes (bytes of values; `M` for MiB, `G` for GiB), each a fresh cluster per load.
    #[arg(long, value_delimiter = ',', default_value = "10M,100M")]
    sizes: Vec<String>,
    /// How the restarted execution replica loads the checkpoint: eager (the tree walk: every
    /// object that differs, verified, before it executes) and on-demand
    /// (`load_objects_on_demand`).
    #[arg(long, value_delimiter = ',', default_value = "eager,on-demand")]
    loads: Vec<String>,
    /// Bytes per value (`k` for KiB).
    #[arg(long, default_value = "16k")]
    value: String,
    /// Concurrent writers filling the state.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Writes per second to random keys while the node recovers.
    #[arg(long, default_value_t = 200)]
    trickle: u64,
    /// Write the rows to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Where the clusters keep their data (default: a temporary directory, removed after).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, default_value_t = 26000)]
    base_port: u16,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

/// `10M`, `1G`, `16k`, `512`: a byte count.
pub(super) fn bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (n, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    n.parse::<u64>()
        .map(|n| n * mult)
        .map_err(|_| format!("`{text}` is not a size (examples: 512, 16k, 10M, 1G)"))
}

pub fn recovery_cmd(r: &RecoveryArgs) -> ExitCode {
    const WHO: &str = "plumb bench recovery";
    let fail = |e: String| usage_error(WHO, e);
    let parsed = (|| {
        let sizes = r
            .sizes
            .iter()
            .map(|s| bytes(s))
            .collect::<Result<Vec<_>, _>>()?;
        let loads = r
            .loads
            .iter()
            .map(|l| Load::parse(l))
            .collect::<Result<Vec<_>, _>>()?;
        let value = bytes(&r.value)?.max(1) as usize;
        Ok::<_, String>((sizes, loads, value))
    })();
    let (sizes, loads, value_bytes) = match parsed {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let exe = match plumb_exe() {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let dir = match fresh_bench_dir(&r.dir, "plumb-bench-recovery") {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let bench = RecoveryBench {
        exe,
        dir: dir.clone(),
        base_port: r.base_port,
        sizes,
        loads,
        value_bytes,
        clients: r.clients,
        trickle_per_s: r.trickle,
        progress: !r.quiet,
    };
    let command: Vec<String> = std::env::args().collect();
    let before = plumb_bench::prophecy::loadavg();
    let rows = match run_bench(WHO, &dir, r.dir.is_some(), bench.run()) {
        Ok(rows) => rows,
        Err(code) => return code,
    };
    print_provenance(&command, &before, &plumb_bench::prophecy::loadavg());
    out!(
        "cluster: plumb u1r0 co-located, 3 nodes on loopback, checkpoint every 64 batches, key-value store; {} B values filled by {} writers, then {} writes/s to random keys while node 2 (killed, its data directory deleted) restarts",
        value_bytes, r.clients, r.trickle
    );
    out!("executing: from the restart until node 2's execution replica executed past the batch the others had executed at the restart; whole: until it held every object again");
    out!("");
    out!("{}", recovery::table(&rows));
    let missed: Vec<String> = rows
        .iter()
        .filter(|r| r.executing_ms.is_none() || r.whole_ms.is_none())
        .map(|r| {
            format!(
                "{} {} MiB: node 2 did not recover within {:?}",
                r.load.name(),
                r.state_bytes >> 20,
                recovery::DEADLINE
            )
        })
        .collect();
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.1}"));
    let csv = || {
        let mut text =
            "load,state_bytes,keys,fill_s,executing_ms,whole_ms,objects_fetched\n".to_string();
        for row in &rows {
            text += &format!(
                "{},{},{},{:.2},{},{},{}\n",
                row.load.name(),
                row.state_bytes,
                row.keys,
                row.fill_s,
                opt(row.executing_ms),
                opt(row.whole_ms),
                row.objects_fetched
            );
        }
        text
    };
    exit_code(report_and_write(WHO, &missed, &[(&r.csv, &csv)]))
}
