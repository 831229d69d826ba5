//! Each deliberate breakage must be caught: proof that the checks are not vacuous. Only built
//! with `--features sabotage`. One test function: the sabotage switch is process-wide.
#![cfg(feature = "sabotage")]

use plumb_sim::apps::coord::Coord;
use plumb_sim::apps::redis::Redis;
use plumb_sim::apps::spec::Spec;
use plumb_sim::sabotage::{app_for, set, ALL};
use plumb_sim::{run_app_seed, run_seed, SimOptions};

/// Seeds of the u=1, r=1 cluster tried per sabotage before giving up (the subtle ones need a
/// Byzantine replica in the right place: a few percent of seeds).
const BUDGET: u64 = 60;

#[test]
fn every_sabotage_is_reported() {
    let mut missed = Vec::new();
    for (s, name) in ALL {
        set(Some(s));
        let caught = (0..BUDGET).find_map(|seed| {
            let mut opts = SimOptions::new(seed, 1, 1);
            opts.sketcher = app_for(s) == "sketcher";
            let report = match app_for(s) {
                "redis" => run_app_seed(&Redis, &opts),
                "coord" => run_app_seed(&Coord, &opts),
                "spec" => run_app_seed(&Spec, &opts),
                _ => run_seed(&opts),
            };
            report
                .violations
                .first()
                .map(|v| format!("{} -> {v}", report.replay_command()))
        });
        match caught {
            Some(how) => println!("{name}: {how}"),
            None => missed.push(name),
        }
    }
    set(None);
    assert!(
        missed.is_empty(),
        "sabotage not detected within {BUDGET} seeds: {missed:?}"
    );
}
