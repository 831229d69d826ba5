//! Headers announcing huge requests allocate nothing in proportion to what they announce:
//! a counting allocator measures the bytes the parser asks for.

use plumb_resp::{Limits, Parser};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    /// Bytes allocated by this thread (each test runs on its own thread).
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + layout.size()));
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + new_size));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocated_by(f: impl FnOnce()) -> usize {
    let before = ALLOCATED.with(Cell::get);
    f();
    ALLOCATED.with(Cell::get) - before
}

#[test]
fn huge_headers_do_not_allocate() {
    // Over the default limits: refused before anything is reserved for them.
    let bytes = allocated_by(|| {
        let mut parser = Parser::new(Limits::default());
        parser.feed(b"*2000000000\r\n");
        assert!(parser.next_command().is_err());
        let mut parser = Parser::new(Limits::default());
        parser.feed(b"*1\r\n$1000000000\r\n");
        assert!(parser.next_command().is_err());
    });
    assert!(bytes < 64 * 1024, "allocated {bytes} bytes");

    // Within generous limits: the header alone still reserves little, until data arrives.
    let limits = Limits {
        max_bulk_len: usize::MAX / 4,
        max_array_len: usize::MAX / 4,
        max_inline_len: 64 * 1024,
    };
    let bytes = allocated_by(|| {
        let mut parser = Parser::new(limits);
        parser.feed(b"*2000000000\r\n$1000000000\r\nabc");
        assert_eq!(parser.next_command(), Ok(None));
    });
    assert!(bytes < 64 * 1024, "allocated {bytes} bytes");
}
