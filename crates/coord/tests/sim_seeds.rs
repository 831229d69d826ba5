//! The coordination application (sessions, expiry, ephemerals, watches) under every fault the
//! simulator knows; `plumb sim --app coord --seeds 1000` runs the long sweep.

use plumb_coord::sim::Coord;

#[test]
fn coordination_app_u1_r1() {
    plumb_sim::assert_seeds_pass(&Coord, 1, 1, 0..4);
}
