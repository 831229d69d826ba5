//! The counting allocator, installed as a binary would install it.

use plumb_cost::{CountingAllocator, ALLOCATED_BYTES, ALLOCATIONS};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[test]
fn every_allocation_is_counted_with_its_size() {
    let (count, bytes) = (ALLOCATIONS.get(), ALLOCATED_BYTES.get());
    let boxes: Vec<Box<[u8; 1000]>> = (0..100).map(|_| Box::new([7u8; 1000])).collect();
    assert!(ALLOCATIONS.get() - count >= 100);
    assert!(ALLOCATED_BYTES.get() - bytes >= 100 * 1000);
    assert_eq!(boxes.iter().map(|b| b[999] as usize).sum::<usize>(), 700);
}
