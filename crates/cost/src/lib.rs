//! What an operation costs inside a plumb process, counted where the cost is paid: heap
//! allocations ([`CountingAllocator`]), hashes and MACs (`plumb-crypto` counts every
//! BLAKE3 call it makes). `plumb bench` reads them off `/metrics` before and after a measured
//! window and divides by the operations completed (docs/performance.md, "The cost model");
//! messages are counted where they are routed (the node's router), and system calls, fsyncs
//! and thread wake-ups by the kernel (`perf` and `/proc`), since those are the same for every
//! system compared.
//!
//! The counters are always on, so they must cost next to nothing on the hot path: each is
//! striped over cache lines, a thread adding to its own stripe (uncontended in the common
//! case), and a reader sums the stripes. They only ever grow; they are not reset.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stripes per counter: more than the threads of a node that touch a counter often is not
/// needed; two threads sharing a stripe only share a cache line.
const STRIPES: usize = 16;

/// One stripe on a cache line of its own.
#[repr(align(64))]
struct Stripe(AtomicU64);

/// A process-wide counter that many threads add to.
pub struct Counter {
    stripes: [Stripe; STRIPES],
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe, given out round robin on first use. `const` and without a
    /// destructor, so reading it never allocates (the allocator itself counts through it)
    /// and works while a thread is being torn down.
    static MY_STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_stripe() -> usize {
    MY_STRIPE
        .try_with(|s| {
            let mine = s.get();
            if mine != usize::MAX {
                return mine;
            }
            let given = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(given);
            given
        })
        .unwrap_or(0)
}

impl Counter {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Counter {
        Counter {
            stripes: [const { Stripe(AtomicU64::new(0)) }; STRIPES],
        }
    }

    pub fn add(&self, n: u64) {
        self.stripes[my_stripe()].0.fetch_add(n, Ordering::Relaxed);
    }

    /// The total so far (stripes read one by one: exact once the adding threads are quiet,
    /// within the adds in flight otherwise).
    pub fn get(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }
}

/// Heap allocations (`alloc`, `alloc_zeroed`, `realloc`) made by this process: counted only
/// in a binary that installs [`CountingAllocator`].
pub static ALLOCATIONS: Counter = Counter::new();
/// Bytes those allocations asked for.
pub static ALLOCATED_BYTES: Counter = Counter::new();
/// BLAKE3 digests computed (plain, keyed or over parts; MACs apart).
pub static HASHES: Counter = Counter::new();
/// Bytes those digests covered.
pub static HASHED_BYTES: Counter = Counter::new();
/// MACs computed, to send or to check one received.
pub static MACS: Counter = Counter::new();
/// Bytes those MACs covered.
pub static MACED_BYTES: Counter = Counter::new();

/// The system allocator, counting. A binary opts in with
/// `#[global_allocator] static A: plumb_cost::CountingAllocator = plumb_cost::CountingAllocator;`
pub struct CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// touches only atomics and a const thread-local without a destructor, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.add(1);
        ALLOCATED_BYTES.add(layout.size() as u64);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.add(1);
        ALLOCATED_BYTES.add(layout.size() as u64);
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.add(1);
        ALLOCATED_BYTES.add(new_size as u64);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Every process-wide counter: its name in `/metrics` (`plumb_<name>_total`), what it
/// counts, and the counter. The node's registry, a gateway's `/metrics` and `plumb bench`
/// take the names from here.
pub static PROCESS_COUNTERS: [(&str, &str, &Counter); 6] = [
    (
        "allocations",
        "Heap allocations made by this process (0 unless its binary counts them)",
        &ALLOCATIONS,
    ),
    (
        "allocated_bytes",
        "Bytes those heap allocations asked for",
        &ALLOCATED_BYTES,
    ),
    (
        "hashes",
        "BLAKE3 digests this process computed (MACs apart)",
        &HASHES,
    ),
    ("hashed_bytes", "Bytes those digests covered", &HASHED_BYTES),
    (
        "macs",
        "MACs this process computed, to send or to check",
        &MACS,
    ),
    ("maced_bytes", "Bytes those MACs covered", &MACED_BYTES),
];

/// The process-wide counters as Prometheus text lines (`plumb_allocations_total 123`, ...),
/// for a process's `/metrics`.
pub fn metrics_text() -> String {
    let mut text = String::new();
    for (name, help, counter) in &PROCESS_COUNTERS {
        let name = format!("plumb_{name}_total");
        text += &format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}\n",
            counter.get()
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_sums_what_every_thread_added() {
        static C: Counter = Counter::new();
        let threads: Vec<_> = (0..40)
            .map(|i| std::thread::spawn(move || (0..1000).for_each(|_| C.add(i))))
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(C.get(), 1000 * (0..40).sum::<u64>());
    }

    #[test]
    fn the_metrics_text_names_every_counter_once() {
        HASHES.add(3);
        let text = metrics_text();
        for (short, _, _) in &PROCESS_COUNTERS {
            let name = format!("plumb_{short}_total");
            let samples: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with(&format!("{name} ")))
                .collect();
            assert_eq!(samples.len(), 1, "{name} in {text}");
        }
        let hashes: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("plumb_hashes_total "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(hashes >= 3);
    }
}
