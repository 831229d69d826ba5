//! CI-sized run of the checkpoint benchmark (docs/performance.md, "State as objects"):
//! checks the proportions, never the time.

#[allow(dead_code)] // the benchmark prints fields the test does not check
#[path = "support/kv_figures.rs"]
mod kv_figures;

#[test]
fn a_checkpoint_costs_the_objects_written_and_catching_up_moves_what_was_missed() {
    let value_bytes = 256;
    // (a) the same 50 changed keys at 500 and at 5 000 keys of state.
    for keys in [500, 5_000] {
        let (mut store, mut tree, _) = kv_figures::build_store(keys, value_bytes, 3);
        let f = kv_figures::checkpoint_figures(&mut store, &mut tree, 50, value_bytes, 1);
        assert!(f.objects_written <= 50, "{f:?}");
        assert!(f.delta_bytes < f.whole_bytes / 5, "{f:?}");
    }
    // (b) a replica that missed 1% of the updates of 5 000 keys of 1 KiB moves a few percent
    // of the state (at this size the tree paths weigh more than at a million keys).
    let f = kv_figures::transfer_figures(5_000, 1024, 50);
    assert!(f.objects_fetched <= 50, "{f:?}");
    assert!(f.object_wire_bytes * 100 < f.whole_wire_bytes * 5, "{f:?}");
    assert!(f.whole_wire_bytes >= f.state_bytes);
}
