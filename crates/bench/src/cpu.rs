//! CPU time of server processes, read from /proc, so benchmarks can charge it to requests.

/// User plus system CPU seconds `pid` has used, all threads together; `None` if it is gone.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    stat_cpu_seconds(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// utime plus stime of a `/proc/.../stat` line, in seconds.
fn stat_cpu_seconds(stat: &str) -> Option<f64> {
    // The command name (field 2) is in parentheses and may contain spaces: fields after it
    // start at the last ')'. utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) as f64 / ticks as f64)
}

/// User plus system CPU seconds of the threads of `pid` whose name (`comm`, at most 15 bytes)
/// `wanted` accepts; 0 if the process is gone.
pub fn threads_cpu_seconds(pid: u32, wanted: impl Fn(&str) -> bool) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|n| wanted(n.trim_end()))
        })
        .filter_map(|t| stat_cpu_seconds(&std::fs::read_to_string(t.path().join("stat")).ok()?))
        .sum()
}

/// Total CPU seconds of `pids` (those still running).
pub fn total_cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|&p| process_cpu_seconds(p)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_grows_with_work() {
        let me = std::process::id();
        let before = process_cpu_seconds(me).unwrap();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(300) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = process_cpu_seconds(me).unwrap();
        assert!(after > before, "{before} -> {after}");
        assert!(process_cpu_seconds(u32::MAX).is_none());
        let named = |want: &'static str| move |n: &str| n == want;
        std::thread::Builder::new()
            .name("cpu-test-burn".into())
            .spawn(move || {
                let start = std::time::Instant::now();
                let mut x = 1u64;
                while start.elapsed() < std::time::Duration::from_millis(200) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                std::hint::black_box(x);
                let burnt = threads_cpu_seconds(me, named("cpu-test-burn"));
                assert!(burnt > 0.0, "{burnt}");
                assert!(burnt <= threads_cpu_seconds(me, |_| true));
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(threads_cpu_seconds(me, named("no-such-thread")), 0.0);
    }
}
