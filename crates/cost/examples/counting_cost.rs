//! What counting costs: an allocation through the counting allocator against one straight to
//! the system allocator, and one counter add, each timed over millions in this process.
//! `cargo run --release -p plumb-cost --example counting_cost`

use plumb_cost::{Counter, CountingAllocator};
use std::alloc::{GlobalAlloc, Layout, System};
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const N: u32 = 10_000_000;

fn per_call(label: &str, f: impl Fn()) {
    let start = Instant::now();
    for _ in 0..N {
        f();
    }
    println!(
        "{label}: {:.1} ns",
        start.elapsed().as_nanos() as f64 / f64::from(N)
    );
}

fn main() {
    let layout = Layout::from_size_align(64, 8).unwrap();
    for _ in 0..2 {
        // SAFETY: a layout of non-zero size; each pointer freed with the layout it was
        // allocated with.
        per_call("system allocator, alloc + free", || unsafe {
            let p = System.alloc(layout);
            std::hint::black_box(p);
            System.dealloc(p, layout);
        });
        // SAFETY: as above.
        per_call("counting allocator, alloc + free", || unsafe {
            let p = ALLOCATOR.alloc(layout);
            std::hint::black_box(p);
            ALLOCATOR.dealloc(p, layout);
        });
        static C: Counter = Counter::new();
        per_call("one counter add", || C.add(std::hint::black_box(1)));
    }
}
