//! CPU time of server processes, read from /proc, so benchmarks can charge it to requests.

/// User plus system CPU seconds `pid` has used, all threads together; `None` if it is gone.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
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
    }
}
