//! What one fault did to the load, from the times at which operations succeeded: the longest
//! window with no successful operation, and how long after healing the load was back to half
//! of its fault-free rate. Pure functions of sorted success times, so they are unit-tested.

use std::time::Duration;

/// Nanoseconds since the load started.
pub type Nanos = u64;

/// The window over which "back to half throughput" is judged: short enough to see a stall,
/// long enough that eight closed-loop clients' bursts average out.
pub const RATE_WINDOW: Duration = Duration::from_millis(500);

/// Successful operations per second in `[from, to)`.
pub fn rate(successes: &[Nanos], from: Nanos, to: Nanos) -> f64 {
    if to <= from {
        return 0.0;
    }
    let n = count(successes, from, to);
    n as f64 / ((to - from) as f64 / 1e9)
}

fn count(successes: &[Nanos], from: Nanos, to: Nanos) -> usize {
    successes.partition_point(|&t| t < to) - successes.partition_point(|&t| t < from)
}

/// The longest interval inside `[from, to]` holding no success, and where it starts. The
/// edges count as boundaries: a stall that begins at `from` (the fault) is measured from
/// there, one still going at `to` up to `to`.
pub fn longest_gap(successes: &[Nanos], from: Nanos, to: Nanos) -> (Duration, Nanos) {
    let first = successes.partition_point(|&t| t < from);
    let last = successes.partition_point(|&t| t <= to);
    let mut previous = from;
    let mut best = (0, from);
    for &t in successes[first..last].iter().chain(std::iter::once(&to)) {
        if t - previous > best.0 {
            best = (t - previous, previous);
        }
        previous = t;
    }
    (Duration::from_nanos(best.0), best.1)
}

/// From `healed`, how long until a window of [`RATE_WINDOW`] starting there runs at half of
/// `baseline` (successes per second) or more; `None` if none does before `until`. Windows
/// start every 10 ms.
pub fn back_to_half(
    successes: &[Nanos],
    baseline: f64,
    healed: Nanos,
    until: Nanos,
) -> Option<Duration> {
    let window = RATE_WINDOW.as_nanos() as u64;
    let step = Duration::from_millis(10).as_nanos() as u64;
    let mut start = healed;
    while start + window <= until {
        if rate(successes, start, start + window) >= baseline / 2.0 {
            return Some(Duration::from_nanos(start - healed));
        }
        start += step;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A success every millisecond in `[from, to)`.
    fn steady(from: u64, to: u64) -> Vec<Nanos> {
        (from..to).map(|ms| ms * MS).collect()
    }

    #[test]
    fn the_longest_gap_is_found_between_successes_and_at_either_edge() {
        let mut s = steady(0, 1000);
        s.extend(steady(1400, 2000));
        let (gap, at) = longest_gap(&s, 500 * MS, 1900 * MS);
        assert_eq!((gap, at), (Duration::from_millis(401), 999 * MS));
        // Nothing after the fault: the gap runs from the fault to the end.
        let (gap, at) = longest_gap(&steady(0, 1000), 1000 * MS, 3000 * MS);
        assert_eq!((gap, at), (Duration::from_millis(2000), 1000 * MS));
        // Nothing before the first success after the fault.
        let s = steady(1300, 2000);
        assert_eq!(
            longest_gap(&s, 1000 * MS, 2000 * MS).0,
            Duration::from_millis(300)
        );
    }

    #[test]
    fn half_throughput_is_reached_when_a_window_runs_at_half_the_baseline() {
        // 1000/s before, nothing for 700 ms after healing at 1000 ms, then 1000/s again.
        let mut s = steady(0, 1000);
        s.extend(steady(1700, 4000));
        let back = back_to_half(&s, 1000.0, 1000 * MS, 4000 * MS).unwrap();
        // The first window with 250 successes of 500 ms starts 250 ms before 1700 ms.
        assert_eq!(back, Duration::from_millis(450));
        // Never back within the observed time.
        assert_eq!(
            back_to_half(&steady(0, 1000), 1000.0, 1000 * MS, 3000 * MS),
            None
        );
        // Never below: back at once.
        assert_eq!(
            back_to_half(&steady(0, 3000), 1000.0, 1000 * MS, 3000 * MS),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn rate_counts_half_open_windows() {
        let s = steady(0, 1000);
        assert_eq!(rate(&s, 0, 1000 * MS), 1000.0);
        assert_eq!(rate(&s, 500 * MS, 500 * MS), 0.0);
    }
}
