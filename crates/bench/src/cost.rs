//! The cost model (docs/performance.md, "The cost model"): what one operation costs the
//! servers, counted over a measured window and divided by the operations completed, so that
//! every change is judged by what it removes.
//!
//! - Kernel-side, the same for every system compared: thread wake-ups (voluntary context
//!   switches: a thread that blocked and was woken again) and preemptions, summed over the
//!   servers' threads from `/proc`; with `--syscalls`, system calls and fsyncs, counted by
//!   `perf stat` on the syscall tracepoints (which needs perf and the right to trace the
//!   servers; it slows every system call a little, so it is off by default).
//! - plumb's own, read off each server's `/metrics`: frames routed by the role that sent them
//!   and where they went (local: a stage of the same node, no socket), their bytes, BLAKE3
//!   digests and MACs with the bytes they covered, and heap allocations.

use serde::Serialize;
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};

/// What the servers spent over a window, as totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Voluntary context switches of the servers' threads.
    pub wakeups: u64,
    /// Involuntary ones: a thread preempted.
    pub preemptions: u64,
    /// System calls, if counted (`--syscalls`).
    pub syscalls: Option<u64>,
    /// `fsync`, `fdatasync` and `sync_file_range` calls, if counted.
    pub fsyncs: Option<u64>,
    /// plumb's counters (`frames order->peer`, `allocations`, ...), empty for other systems.
    pub counters: BTreeMap<String, u64>,
}

/// `/proc` figures of a set of processes at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Switches {
    pub voluntary: u64,
    pub involuntary: u64,
}

impl Switches {
    /// Summed over every thread of `pids` (threads that exited are not counted).
    pub fn of(pids: &[u32]) -> Switches {
        let mut total = Switches::default();
        for pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for t in tasks.flatten() {
                if let Ok(status) = std::fs::read_to_string(t.path().join("status")) {
                    let s = parse_switches(&status);
                    total.voluntary += s.voluntary;
                    total.involuntary += s.involuntary;
                }
            }
        }
        total
    }
}

/// The context switch lines of a `/proc/.../status` file.
fn parse_switches(status: &str) -> Switches {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Switches {
        voluntary: field("voluntary_ctxt_switches:"),
        involuntary: field("nonvoluntary_ctxt_switches:"),
    }
}

/// Events `perf stat` counts for `--syscalls`.
const SYSCALL_EVENTS: [&str; 4] = [
    "raw_syscalls:sys_enter",
    "syscalls:sys_enter_fsync",
    "syscalls:sys_enter_fdatasync",
    "syscalls:sys_enter_sync_file_range",
];

/// A `perf stat` counting the servers' system calls until [`SyscallCount::stop`].
pub struct SyscallCount {
    /// `None` once stopped.
    child: Option<Child>,
}

impl SyscallCount {
    /// Start counting the system calls of `pids`' threads.
    pub fn start(pids: &[u32]) -> Result<SyscallCount, String> {
        if pids.is_empty() {
            return Err("no server process to count".into());
        }
        let list: Vec<String> = pids.iter().map(u32::to_string).collect();
        let child = Command::new("perf")
            .args(["stat", "-x", ",", "-e", &SYSCALL_EVENTS.join(","), "-p"])
            .arg(list.join(","))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!("--syscalls needs perf (Debian: apt-get install linux-perf): {e}")
            })?;
        Ok(SyscallCount { child: Some(child) })
    }

    /// Stop (SIGINT, as perf expects) and read `(system calls, fsyncs)`.
    pub fn stop(mut self) -> Result<(u64, u64), String> {
        let child = self.child.take().ok_or("perf stat already stopped")?;
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("perf stat: {e}"))?;
        parse_perf_stat(&String::from_utf8_lossy(&out.stderr))
    }
}

impl Drop for SyscallCount {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `(system calls, fsyncs)` from `perf stat -x ,` output: `count,unit,event,...` lines. An
/// event perf could not count (`<not supported>`, `<not counted>`) is an error that says which
/// and why, never a zero.
fn parse_perf_stat(text: &str) -> Result<(u64, u64), String> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        let (Some(value), Some(event)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        if let Some(wanted) = SYSCALL_EVENTS.iter().find(|e| *e == event) {
            let n = value.trim().parse::<u64>().map_err(|_| {
                format!("perf could not count {wanted} ({}): run as root, or lower kernel.perf_event_paranoid", value.trim())
            })?;
            counts.insert(wanted, n);
        }
    }
    let Some(&syscalls) = counts.get(SYSCALL_EVENTS[0]) else {
        let said = text.lines().last().unwrap_or("nothing");
        return Err(format!(
            "perf stat counted no system calls (it said: {said})"
        ));
    };
    let fsyncs = SYSCALL_EVENTS[1..]
        .iter()
        .map(|e| counts.get(e).copied().unwrap_or(0))
        .sum();
    Ok((syscalls, fsyncs))
}

/// The counters of one plumb process's `/metrics` text that the cost table uses, summed into
/// `into`: `frames <from>-><to>`, `frame bytes <from>-><to>`, `allocations`, `hashes`, ...
pub fn add_plumb_counters(text: &str, into: &mut BTreeMap<String, u64>) {
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let key = if let Some(labels) = name.strip_prefix("plumb_frames_routed_total{") {
            traffic_key("frames", labels)
        } else if let Some(labels) = name.strip_prefix("plumb_frame_bytes_routed_total{") {
            traffic_key("frame bytes", labels)
        } else {
            plumb_cost::PROCESS_COUNTERS
                .iter()
                .find(|(k, _, _)| name == format!("plumb_{k}_total"))
                .map(|(k, _, _)| k.replace('_', " "))
        };
        if let Some(key) = key {
            *into.entry(key).or_insert(0) += value as u64;
        }
    }
}

/// `frames order->peer` from the labels `from="order",to="peer"}`.
fn traffic_key(what: &str, labels: &str) -> Option<String> {
    let labels = labels.strip_suffix('}')?;
    let mut from = None;
    let mut to = None;
    for kv in labels.split(',') {
        let (k, v) = kv.split_once('=')?;
        let v = v.trim_matches('"');
        match k {
            "from" => from = Some(v),
            "to" => to = Some(v),
            _ => {}
        }
    }
    Some(format!("{what} {}->{}", from?, to?))
}

impl Cost {
    /// `self` minus `earlier`, for the counters that only grow.
    pub fn since(&self, earlier: &Cost) -> Cost {
        Cost {
            wakeups: self.wakeups.saturating_sub(earlier.wakeups),
            preemptions: self.preemptions.saturating_sub(earlier.preemptions),
            syscalls: self.syscalls,
            fsyncs: self.fsyncs,
            counters: self
                .counters
                .iter()
                .map(|(k, v)| {
                    let then = earlier.counters.get(k).copied().unwrap_or(0);
                    (k.clone(), v.saturating_sub(then))
                })
                .collect(),
        }
    }

    /// The sum of plumb's counters whose name starts with `prefix`, `None` if it has none.
    pub fn counted(&self, prefix: &str) -> Option<u64> {
        let mut matching = self
            .counters
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .peekable();
        matching.peek()?;
        Some(matching.map(|(_, v)| v).sum())
    }
}

/// Figures per operation, for the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerOp {
    pub wakeups: f64,
    pub preemptions: f64,
    pub syscalls: Option<f64>,
    pub fsyncs: Option<f64>,
    /// Frames the servers routed (plumb), and of them those that crossed a socket (to a peer
    /// node or a client).
    pub frames: Option<f64>,
    pub socket_frames: Option<f64>,
    pub frame_kib: Option<f64>,
    pub hashes: Option<f64>,
    pub hashed_kib: Option<f64>,
    pub macs: Option<f64>,
    pub maced_kib: Option<f64>,
    pub allocations: Option<f64>,
}

impl PerOp {
    pub fn of(cost: &Cost, ops: u64) -> PerOp {
        let ops = ops.max(1) as f64;
        let per = |v: u64| v as f64 / ops;
        let counted = |prefix: &str| cost.counted(prefix).map(per);
        let kib = |prefix: &str| cost.counted(prefix).map(|v| per(v) / 1024.0);
        // Frames that crossed a socket: to another node or to a client.
        let socket = counted("frames ").map(|_| {
            let crossed = cost.counters.iter().filter(|(k, _)| {
                k.starts_with("frames ") && (k.ends_with("->peer") || k.ends_with("->client"))
            });
            crossed.map(|(_, v)| per(*v)).sum()
        });
        PerOp {
            wakeups: per(cost.wakeups),
            preemptions: per(cost.preemptions),
            syscalls: cost.syscalls.map(per),
            fsyncs: cost.fsyncs.map(per),
            frames: counted("frames "),
            socket_frames: socket,
            frame_kib: kib("frame bytes "),
            hashes: counted("hashes"),
            hashed_kib: kib("hashed bytes"),
            macs: counted("macs"),
            maced_kib: kib("maced bytes"),
            allocations: counted("allocations"),
        }
    }
}

/// Frames per operation by the role that sent them: `auth 4.0 (peer 3.0, local 1.0), ...`.
pub fn frames_by_sender(cost: &Cost, ops: u64) -> String {
    let ops = ops.max(1) as f64;
    let mut by_role: BTreeMap<&str, Vec<(&str, u64)>> = BTreeMap::new();
    for (k, v) in &cost.counters {
        let Some((from, to)) = k.strip_prefix("frames ").and_then(|t| t.split_once("->")) else {
            continue;
        };
        by_role.entry(from).or_default().push((to, *v));
    }
    by_role
        .iter()
        .map(|(role, tos)| {
            let total: u64 = tos.iter().map(|(_, v)| v).sum();
            let parts: Vec<String> = tos
                .iter()
                .map(|(to, v)| format!("{to} {:.1}", *v as f64 / ops))
                .collect();
            let role = if *role == "client" {
                "from clients"
            } else {
                role
            };
            format!("{role} {:.1} ({})", total as f64 / ops, parts.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_come_from_the_status_lines() {
        let status =
            "Name:\tplumb-o0\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(
            parse_switches(status),
            Switches {
                voluntary: 120,
                involuntary: 7
            }
        );
        let me = Switches::of(&[std::process::id()]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(Switches::of(&[std::process::id()]).voluntary > me.voluntary);
    }

    #[test]
    fn perf_stat_output_gives_syscalls_and_fsyncs_or_says_why_not() {
        let out = "\n1234,,raw_syscalls:sys_enter,5000,100.00,,\n3,,syscalls:sys_enter_fsync,5000,100.00,,\n5,,syscalls:sys_enter_fdatasync,5000,100.00,,\n0,,syscalls:sys_enter_sync_file_range,5000,100.00,,\n";
        assert_eq!(parse_perf_stat(out), Ok((1234, 8)));
        let unsupported = "<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n";
        let err = parse_perf_stat(unsupported).unwrap_err();
        assert!(err.contains("raw_syscalls:sys_enter"), "{err}");
        let nothing = "Error:\nNo permission to enable raw_syscalls:sys_enter event.\n";
        assert!(parse_perf_stat(nothing)
            .unwrap_err()
            .contains("No permission"));
    }

    #[test]
    fn plumb_counters_are_summed_over_processes_and_divided_per_operation() {
        let node = "# HELP plumb_frames_routed_total x\n# TYPE plumb_frames_routed_total counter\nplumb_frames_routed_total{from=\"order\",to=\"peer\"} 300\nplumb_frames_routed_total{from=\"order\",to=\"local\"} 100\nplumb_frame_bytes_routed_total{from=\"order\",to=\"peer\"} 30720\nplumb_hashes_total 50\nplumb_allocations_total 1000\nplumb_allocations_created 17\n";
        let gateway = "plumb_hashes_total 50\nplumb_allocations_total 1000\n";
        let mut counters = BTreeMap::new();
        add_plumb_counters(node, &mut counters);
        add_plumb_counters(gateway, &mut counters);
        assert_eq!(counters["frames order->peer"], 300);
        assert_eq!(counters["hashes"], 100);
        assert_eq!(counters["allocations"], 2000);
        let before = Cost {
            wakeups: 10,
            counters: counters.keys().map(|k| (k.clone(), 0)).collect(),
            ..Cost::default()
        };
        let after = Cost {
            wakeups: 210,
            counters,
            ..Cost::default()
        };
        let per = PerOp::of(&after.since(&before), 100);
        assert_eq!(per.wakeups, 2.0);
        assert_eq!(per.frames, Some(4.0));
        assert_eq!(per.socket_frames, Some(3.0));
        assert_eq!(per.frame_kib, Some(0.3));
        assert_eq!(per.hashes, Some(1.0));
        assert_eq!(per.allocations, Some(20.0));
        assert_eq!(per.syscalls, None);
        assert_eq!(
            frames_by_sender(&after.since(&before), 100),
            "order 4.0 (local 1.0, peer 3.0)"
        );
        assert_eq!(PerOp::of(&Cost::default(), 5).frames, None);
    }
}

#[cfg(test)]
mod perf_tests {
    use super::*;

    /// Under CI=true a missing or refused perf fails the test; elsewhere it is reported.
    fn or_skip<T>(r: Result<T, String>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("{e}"),
            Err(e) => {
                eprintln!("not checked here: {e}");
                None
            }
        }
    }

    #[test]
    fn perf_counts_this_process_system_calls_and_fsyncs() {
        let Some(counting) = or_skip(SyscallCount::start(&[std::process::id()])) else {
            return;
        };
        // perf attaches to the threads after it starts.
        std::thread::sleep(std::time::Duration::from_millis(700));
        for _ in 0..20_000 {
            // SAFETY: getppid has no preconditions.
            std::hint::black_box(unsafe { libc::getppid() });
        }
        let file = tempfile::tempfile().unwrap();
        for _ in 0..3 {
            file.sync_data().unwrap();
        }
        let Some((syscalls, fsyncs)) = or_skip(counting.stop()) else {
            return;
        };
        assert!(syscalls >= 20_000, "{syscalls} system calls");
        assert!(fsyncs >= 3, "{fsyncs} fsyncs");
    }
}
