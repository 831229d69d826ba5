//! Checkpoint and state-transfer figures for the key-value store as objects
//! (docs/performance.md, "State as objects"):
//!
//! ```sh
//! cargo run --release -p plumb-objects --example checkpoint_bench
//! cargo run --release -p plumb-objects --example checkpoint_bench -- --keys 100000 --small-keys 1000
//! ```
//!
//! (a) the time of a checkpoint after changing `--changed` keys, at `--small-keys` and at
//! `--keys` keys of state, object checkpoint against whole checkpoint; (b) the bytes and time
//! a replica that missed `--missed-percent` of the updates needs to catch up, object-level
//! transfer against whole-checkpoint transfer.

#[allow(dead_code)] // fields the tables do not print
#[path = "../tests/support/kv_figures.rs"]
mod kv_figures;

use std::time::Duration;

struct Args {
    keys: u64,
    small_keys: u64,
    value_bytes: usize,
    changed: u64,
    missed_percent: f64,
    rounds: usize,
}

fn parse() -> Args {
    let mut a = Args {
        keys: 1_000_000,
        small_keys: 10_000,
        value_bytes: 1024,
        changed: 1_000,
        missed_percent: 1.0,
        rounds: 5,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    fn num<T: std::str::FromStr>(flag: &str, v: &str) -> T {
        v.parse()
            .unwrap_or_else(|_| panic!("bad value {v:?} for {flag}"))
    }
    for pair in args.chunks(2) {
        let (flag, v) = (pair[0].as_str(), pair.get(1).map_or("", String::as_str));
        match flag {
            "--keys" => a.keys = num(flag, v),
            "--small-keys" => a.small_keys = num(flag, v),
            "--value-bytes" => a.value_bytes = num(flag, v),
            "--changed" => a.changed = num(flag, v),
            "--missed-percent" => a.missed_percent = num(flag, v),
            "--rounds" => a.rounds = num(flag, v),
            other => panic!("unknown option {other}; see the file's header"),
        }
    }
    a
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or("?".into(), |kb| format!("{:.1} GiB", kb as f64 / 1048576.0));
    format!("{cpu}, {cores} cores, {mem}")
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn mib(b: u64) -> String {
    format!("{:.2} MiB", b as f64 / 1048576.0)
}

fn main() {
    let a = parse();
    println!("machine: {}", machine());
    println!("times are CPU time of the benchmark thread (the machine is shared)");
    println!(
        "config: keys {} (small {}), values {} B, {} changed keys per checkpoint, {}% missed, median of {} rounds, {} buckets",
        a.keys,
        a.small_keys,
        a.value_bytes,
        a.changed,
        a.missed_percent,
        a.rounds,
        1u64 << plumb_kv::BUCKET_BITS
    );

    println!("\n(a) checkpoint after changing {} keys", a.changed);
    println!("| keys | state | objects rehashed | object checkpoint (CPU) | delta persisted | whole checkpoint: encode + hash (CPU) |");
    println!("|---|---|---|---|---|---|");
    for keys in [a.small_keys, a.keys] {
        let (mut store, mut tree, first) = kv_figures::build_store(keys, a.value_bytes, 3);
        let f = kv_figures::checkpoint_figures(
            &mut store,
            &mut tree,
            a.changed,
            a.value_bytes,
            a.rounds,
        );
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            keys,
            mib(f.state_bytes),
            f.objects_written,
            ms(f.object_checkpoint),
            mib(f.delta_bytes),
            ms(f.whole_checkpoint)
        );
        eprintln!(
            "  (first, full object checkpoint of {keys} keys: {})",
            ms(first)
        );
    }

    let missed = ((a.keys as f64) * a.missed_percent / 100.0).round() as u64;
    println!(
        "\n(b) a replica that missed {missed} key updates ({}%) catches up",
        a.missed_percent
    );
    let f = kv_figures::transfer_figures(a.keys, a.value_bytes, missed);
    println!("| transfer | messages | bytes on the wire | share of the state | objects | tree nodes | CPU time (both sides, one process) |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| object-level | {} | {} | {:.2}% | {} | {} | {} |",
        f.object_messages,
        mib(f.object_wire_bytes),
        100.0 * f.object_wire_bytes as f64 / f.state_bytes as f64,
        f.objects_fetched,
        f.nodes_fetched,
        ms(f.object_time)
    );
    println!(
        "| whole checkpoint | 1 | {} | {:.2}% | - | - | {} |",
        mib(f.whole_wire_bytes),
        100.0 * f.whole_wire_bytes as f64 / f.state_bytes as f64,
        ms(f.whole_time)
    );
    if f.whole_wire_bytes > plumb_wire::MAX_FRAME_BYTES as u64 {
        println!(
            "(the whole checkpoint exceeds the {} frame limit: today it cannot be sent at all)",
            mib(plumb_wire::MAX_FRAME_BYTES as u64)
        );
    }
}
