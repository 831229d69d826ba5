//! Crash recovery of a real cluster (four `plumb node` processes, u=1 r=1, and the Redis
//! gateway on loopback) under a concurrent SET/GET/INCR load whose history must stay
//! linearizable. Each test has its own port range (see `Cluster::init`'s slot).
//!
//! Note on `kill -9`: it kills the process but keeps the kernel's page cache, so these tests
//! prove the protocol's sync discipline (nothing acknowledged depends on state a process had
//! not handed to the kernel / synced before acting on it), not that fsync reaches the disk.

mod common;

use common::*;
use std::thread::sleep;
use std::time::{Duration, Instant};

const CLIENTS: u64 = 4;
const T20: Duration = Duration::from_secs(20);

/// Starts every process of `c` and the first load phase (clients `0..CLIENTS`) on it.
fn start_under_load(c: &mut Cluster) -> (Recorder, Load) {
    c.start_all();
    let rec = Recorder::default();
    let load = Load::start(&rec, c.resp_port, CLIENTS, 0);
    (rec, load)
}

/// Waits until `load` has 40 more acknowledged operations than it has now.
fn wait_more_progress(load: &Load, what: &str) {
    wait_progress(load, load.acked(), 40, T20, what);
}

/// Starts node `n` again and waits until the cluster is ready.
fn restart_node(c: &mut Cluster, n: usize) {
    c.start_node(n);
    c.wait_ready(T20);
}

/// Stops `load` and checks that every process outlived it: (acked, unknown).
fn stop_load(c: &mut Cluster, load: Load) -> (u64, u64) {
    let counts = load.stop();
    c.assert_running();
    counts
}

/// A second load phase (clients from 10, distinct from the first's) that must get 40
/// operations through: (acked, unknown, how long those 40 took).
fn second_load(c: &mut Cluster, rec: &Recorder, what: &str) -> (u64, u64, Duration) {
    let load = Load::start(rec, c.resp_port, CLIENTS, 10);
    let t = Instant::now();
    wait_progress(&load, 0, 40, T20, what);
    let took = t.elapsed();
    let (acked, unknown) = stop_load(c, load);
    (acked, unknown, took)
}

/// Reads every key and checks that the whole history is linearizable: (operations in it,
/// unanswered ones).
fn check_history(c: &Cluster, rec: &Recorder) -> (usize, usize) {
    final_reads(rec, c.resp_port, 100, T20);
    rec.assert_linearizable()
}

#[test]
fn kill9_node_restarts_and_catches_up() {
    let t0 = Instant::now();
    let mut c = Cluster::init("kill9", 0);
    let (rec, load) = start_under_load(&mut c);
    wait_progress(&load, 0, 40, T20, "before the kill");

    // Node 1 hosts a1, o1, e1 and is not the primary (node 0 is, in view 0).
    let a = load.acked();
    c.kill_node(1);
    wait_progress(&load, a, 40, T20, "node 1 down");
    sleep(Duration::from_secs(1));

    restart_node(&mut c, 1);
    wait_more_progress(&load, "after node 1 restarted");
    sleep(Duration::from_secs(1));
    let (acked, unknown) = stop_load(&mut c, load);

    let caught_up = c.wait_caught_up(1, T20);
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "kill9: {acked} acked, {unknown} unknown, {ops} ops in history ({unanswered} unanswered); node 1 caught up in {caught_up:?}; {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

#[test]
fn every_node_killed_at_once_loses_no_acknowledged_write() {
    let t0 = Instant::now();
    let mut c = Cluster::init("power-loss", 1);
    let (rec, load) = start_under_load(&mut c);
    wait_progress(&load, 0, 80, T20, "before the power cut");

    // Mid-load: every node and the gateway at once. Ops in flight get no response (unknown).
    c.kill_all();
    let (acked, unknown) = load.stop();

    c.start_all();
    // The restarted cluster must serve again: a second load phase, then read every key.
    let (acked2, unknown2, _) = second_load(&mut c, &rec, "after restarting every process");
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "power-loss: before {acked} acked/{unknown} unknown, after {acked2}/{unknown2}; {ops} ops ({unanswered} unanswered); {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

#[test]
fn deleted_data_directory_rejoins_by_state_transfer() {
    let t0 = Instant::now();
    let mut c = Cluster::init("wiped", 2);
    c.set_protocol("checkpoint_interval = 8");
    let (rec, load) = start_under_load(&mut c);
    // Past a couple of checkpoints, so the others have truncated their logs below them.
    c.wait_stable_checkpoint(0, 16, T20);

    c.kill_node(2);
    std::fs::remove_dir_all(c.data_dir(2)).unwrap();
    wait_more_progress(&load, "node 2 down");
    restart_node(&mut c, 2);
    wait_more_progress(&load, "after node 2 restarted empty");
    sleep(Duration::from_secs(1));
    let (acked, unknown) = stop_load(&mut c, load);
    let caught_up = c.wait_caught_up(2, T20);
    // Its order replica lost its votes: it rejoins by the recovery protocol, and until then it
    // counts as one of the `u` failures (docs/operations.md: lose one disk at a time).
    c.wait_rejoined(2, T20);

    // Now node 1 goes down: with u=1 the service needs all three others, node 2's fresh
    // order and execution replicas included (e0 and e2 must both answer for a reply quorum).
    c.kill_node(1);
    let (acked2, unknown2, stall) = second_load(&mut c, &rec, "node 1 down after node 2 rejoined");
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "wiped: {acked}/{unknown} then {acked2}/{unknown2} acked/unknown; {ops} ops ({unanswered} unanswered); node 2 caught up in {caught_up:?}; 40 ops after killing node 1 took {stall:?}; {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

/// Execution replicas beyond the minimum (`plumb init --exec`, docs/operations.md): a u=1 r=1
/// cluster with five, nodes 0-3 holding one replica of each stage and node 4 an execution
/// replica alone. Under load, node 4 is killed, its data directory deleted, and started again:
/// it rejoins by state transfer like any execution replica and catches up; then node 1 goes
/// down and the service goes on. The gateway's fast reads are on, so GETs also take the
/// read-only path, whose quorum is every execution replica, the extra one included.
#[test]
fn an_extra_execution_replica_rejoins_after_losing_its_disk() {
    let t0 = Instant::now();
    let mut c = Cluster::init_with("extra-exec", 15, &["--exec", "5"]);
    c.set_protocol("checkpoint_interval = 8");
    c.set_fast_reads();
    let (rec, load) = start_under_load(&mut c);
    c.wait_stable_checkpoint(0, 16, T20);

    c.kill_node(4);
    std::fs::remove_dir_all(c.data_dir(4)).unwrap();
    wait_more_progress(&load, "node 4 (an extra execution replica) down");
    restart_node(&mut c, 4);
    wait_more_progress(&load, "after node 4 restarted empty");
    let caught_up = c.wait_caught_up(4, T20);

    c.kill_node(1);
    wait_more_progress(&load, "node 1 down");
    let (acked, unknown) = stop_load(&mut c, load);
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "extra-exec: {acked} acked, {unknown} unknown; {ops} ops ({unanswered} unanswered); node 4 caught up in {caught_up:?}; {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

/// With `load_objects_on_demand`, a node that lost its data directory loads the stable
/// checkpoint at once (docs/objects.md "Loading on demand"): it executes on, fetching each
/// batch's buckets with proofs, fills the rest in the background, and then holds the whole
/// state: with another node down the service needs its execution replica's replies, for keys
/// written before the wipe too (check_history reads every key).
#[test]
fn deleted_data_directory_rejoins_loading_objects_on_demand() {
    let t0 = Instant::now();
    let mut c = Cluster::init("wiped-on-demand", 6);
    c.set_protocol("checkpoint_interval = 8\nload_objects_on_demand = true");
    let (rec, load) = start_under_load(&mut c);
    c.wait_stable_checkpoint(0, 16, T20);

    c.kill_node(2);
    std::fs::remove_dir_all(c.data_dir(2)).unwrap();
    wait_more_progress(&load, "node 2 down");
    restart_node(&mut c, 2);
    wait_more_progress(&load, "after node 2 restarted empty");
    // Loaded on demand, then filled: the counters of its execution replica say so.
    let start = Instant::now();
    loop {
        let metrics = c.metrics(2).unwrap_or_default();
        if metrics.contains("load-cp-on-demand") && metrics.contains("on-demand-fill-complete") {
            break;
        }
        assert!(
            start.elapsed() < T20,
            "node 2 did not load on demand and fill within {T20:?}:\n{}",
            c.metrics_summary(2)
        );
        sleep(Duration::from_millis(200));
    }
    let filled = start.elapsed();
    let (acked, unknown) = stop_load(&mut c, load);
    let caught_up = c.wait_caught_up(2, T20);
    c.wait_rejoined(2, T20);
    c.kill_node(1);
    let (acked2, unknown2, stall) = second_load(&mut c, &rec, "node 1 down after node 2 filled");
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "wiped-on-demand: {acked}/{unknown} then {acked2}/{unknown2} acked/unknown; {ops} ops ({unanswered} unanswered); node 2 filled {filled:?} after its restart settled, caught up in {caught_up:?}; 40 ops after killing node 1 took {stall:?}; {:?} total\n{}",
        t0.elapsed(),
        c.metrics_summary(2).lines().filter(|l| l.contains("on-demand") || l.contains("partial")).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn corrupted_log_record_is_detected_and_recovered_from_peers() {
    let t0 = Instant::now();
    let mut c = Cluster::init("corrupt", 3);
    // Frequent checkpoints so the execution replica's log holds records too.
    c.set_protocol("checkpoint_interval = 8");
    let (rec, load) = start_under_load(&mut c);
    c.wait_stable_checkpoint(0, 16, T20);

    c.kill_node(1);
    let mut flipped = vec![];
    for store in ["o1", "e1"] {
        // Compact the log first so that it holds live records only: a flipped byte then always
        // damages state the replica needs (in an uncompacted log it may hit a record a later
        // one superseded, which the store rightly ignores).
        let dir = c.data_dir(1).join(store);
        {
            let (mut s, _) = plumb_storage::Store::open(&dir).expect("open the stopped store");
            s.compact().expect("compact");
        }
        let path = dir.join("log");
        let len = std::fs::metadata(&path).unwrap().len();
        // The 20-byte file header is left alone: damage there is refused by design.
        assert!(len > 40, "{} is only {len} bytes", path.display());
        let offset = (len / 2 + len / 4).max(20);
        let old = flip_byte(&path, offset);
        flipped.push(format!(
            "{store}/log byte {offset} of {len} (was {old:#04x})"
        ));
    }
    wait_more_progress(&load, "node 1 down");

    restart_node(&mut c, 1);
    // The damage was found and refused: the node says so for each damaged store.
    let log_path = c.dir().join("node-1.log");
    let reported = |log: &str| {
        ["o1", "e1"]
            .iter()
            .all(|s| log.contains(&format!("{s} store: ")))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut log = String::new();
    while Instant::now() < deadline {
        log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if reported(&log) {
            break;
        }
        sleep(Duration::from_millis(100));
    }
    assert!(
        reported(&log),
        "node 1 did not report the damage in o1/log and e1/log:\n{log}"
    );
    wait_more_progress(&load, "after node 1 restarted on damaged logs");
    sleep(Duration::from_secs(1));
    let (acked, unknown) = stop_load(&mut c, load);
    let caught_up = c.wait_caught_up(1, T20);

    // Node 1's replicas must be sound: take node 2 down so the service depends on them.
    c.kill_node(2);
    let (acked2, unknown2, _) = second_load(
        &mut c,
        &rec,
        "node 2 down, service relying on the recovered node 1",
    );
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "corrupt: flipped {flipped:?}; {acked}/{unknown} then {acked2}/{unknown2} acked/unknown; {ops} ops ({unanswered} unanswered); node 1 caught up in {caught_up:?}; {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

/// After a kill -9 and restart, the node's *order* replica must rejoin ordering too (not only
/// its execution replica catching up from peers' commits): otherwise the cluster silently
/// runs with no spare order replica, and the next failure costs a view change or availability.
#[test]
fn kill9_node_order_replica_rejoins_ordering() {
    let t0 = Instant::now();
    let mut c = Cluster::init("kill9-order", 4);
    c.set_protocol("checkpoint_interval = 16");
    let (rec, load) = start_under_load(&mut c);
    wait_progress(&load, 0, 40, T20, "before the kill");
    c.kill_node(1);
    // While node 1 is down the others pass stable checkpoints (every 16 batches here) and
    // discard the batches below it: node 1 then needs checkpoint state transfer to rejoin.
    c.wait_stable_checkpoint(0, 64, Duration::from_secs(30));
    restart_node(&mut c, 1);
    // And another stable checkpoint after the restart.
    c.wait_stable_checkpoint(0, 128, Duration::from_secs(30));
    let (acked, unknown) = stop_load(&mut c, load);
    let caught_up = c.wait_order_caught_up(1, T20);
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "kill9-order: {acked} acked, {unknown} unknown, {ops} ops ({unanswered} unanswered); node 1 ordering caught up in {caught_up:?}; {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

/// Issue 10, finding 1, with real processes: the node hosting the primary (node 0: a0, o0, e0)
/// loses its data directory under load and restarts empty. Its order replica must rejoin by the
/// recovery protocol (not vote as if new), nothing acknowledged may be lost, and once it is
/// back the cluster must survive losing another node, which needs the rejoined replica's votes.
fn wiped_primary_node(name: &str, slot: u16, u: u16, r: u16) {
    let t0 = Instant::now();
    let mut c = Cluster::init_shape(name, slot, u, r);
    c.set_protocol("checkpoint_interval = 8");
    let (rec, load) = start_under_load(&mut c);
    c.wait_stable_checkpoint(0, 16, T20);

    c.kill_node(0);
    std::fs::remove_dir_all(c.data_dir(0)).unwrap();
    wait_more_progress(&load, "primary's node down (view change)");
    // The view change says why: a surviving order replica suspected the dead primary.
    let suspected: u64 = (1..4)
        .map(|n| {
            let text = c.metrics(n).unwrap_or_default();
            ["heartbeat", "progress-timeout", "uncommitted"]
                .iter()
                .map(|cause| {
                    metric_sample(
                        &text,
                        &format!("plumb_view_changes_total{{cause=\"{cause}\"}}"),
                    )
                })
                .sum::<u64>()
        })
        .sum();
    assert!(
        suspected >= 1,
        "no surviving node counted a suspicion of the dead primary:\n{}",
        c.metrics_summary(1)
    );
    restart_node(&mut c, 0);
    let rejoined = c.wait_rejoined(0, T20);
    wait_more_progress(&load, "after node 0 rejoined");
    let (acked, unknown) = stop_load(&mut c, load);
    let caught_up = c.wait_order_caught_up(0, T20);
    let metrics = c.metrics(0).unwrap_or_default();
    assert!(
        metrics.contains("rejoin-started") && metrics.contains("rejoined"),
        "node 0's order replica went through the recovery protocol:\n{}",
        c.metrics_summary(0)
    );

    // Another node goes down: the service now needs node 0's rejoined order replica.
    c.kill_node(1);
    let (acked2, unknown2, _) = second_load(&mut c, &rec, "node 1 down after node 0 rejoined");
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "{name}: {acked}/{unknown} then {acked2}/{unknown2} acked/unknown; {ops} ops ({unanswered} unanswered); node 0 rejoined {rejoined:?} after start, caught up {caught_up:?}; {:?} total\n{}",
        t0.elapsed(),
        c.statuses()
    );
}

#[test]
fn wiped_primary_node_rejoins_u1_r0() {
    wiped_primary_node("wiped-primary-u1r0", 8, 1, 0);
}

#[test]
fn wiped_primary_node_rejoins_u1_r1() {
    wiped_primary_node("wiped-primary-u1r1", 9, 1, 1);
}

/// With `u = 0` no quorum of other order replicas can vouch for what a replica that lost its
/// records voted: `plumb node` refuses to start it and says what to do, rather than let it
/// rejoin unsafely (or wait forever for a quorum that cannot exist).
#[test]
fn u0_node_without_its_order_records_refuses_to_start() {
    let c = Cluster::init_shape("u0-wiped", 10, 0, 1);
    let data = c.data_dir(0);
    let order_store = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with('o'))
        .expect("node 0 hosts an order replica")
        .path();
    std::fs::remove_dir_all(&order_store).unwrap();
    let mut node = std::process::Command::new(env!("CARGO_BIN_EXE_plumb"))
        .args(["node", "--config"])
        .arg(c.config())
        .args(["--id", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + T20;
    let status = loop {
        if let Some(st) = node.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = node.kill();
            panic!("a u=0 node without its order records kept running");
        }
        sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(node.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(
        err.contains("u = 0") && err.contains("Restore the directory from a backup"),
        "the refusal says why and what to do: {err}"
    );
}

/// Issue 10, client amnesia on real processes: the gateway's pool clients lose their records
/// (kill -9, then its store directory deleted) in the middle of a load. Restarted, each client
/// learns its last request number from the execution replicas; operations outstanding at the
/// kill have unknown outcomes, and the history must stay linearizable (no reply to a previous
/// life's operation taken for a new one's, LS1) with the load making progress again.
#[test]
fn gateway_that_lost_its_client_records_gives_no_wrong_answer() {
    let t0 = Instant::now();
    let mut c = Cluster::init("gateway-amnesia", 11);
    let (rec, load) = start_under_load(&mut c);
    wait_progress(&load, 0, 40, T20, "before the gateway is killed");

    c.kill_gateway();
    std::fs::remove_dir_all(c.dir().join("gateway")).unwrap();
    c.start_gateway();
    c.wait_ready(T20);
    wait_more_progress(&load, "after the gateway restarted without its records");
    let (acked, unknown) = stop_load(&mut c, load);
    let (ops, unanswered) = check_history(&c, &rec);
    eprintln!(
        "gateway amnesia: {acked} acked, {unknown} unknown, {ops} ops ({unanswered} unanswered); {:?} total",
        t0.elapsed()
    );
}
