//! The sabotage gate's hunt (`plumb sim --sabotage all` runs it over every breakage in CI), over
//! the key-value store's and the Redis workload's adapters: a breakage passes only through a
//! property it violates, and a hunt whose expected property does not fire fails. Only built
//! with `--features sim,sabotage`. One test function: the sabotage switch is process-wide.

use plumb_kv::sim::Kv;
use plumb_script::sim::Redis;
use plumb_sim::sabotage::{expectation, hunt, Sabotage, Verdict};
use plumb_sim::SimApps;

#[test]
fn a_breakage_passes_the_gate_only_through_the_property_it_breaks() {
    let apps = SimApps::new().with(&Kv).with(&Redis);
    for s in [Sabotage::CommitQuorumMinusOne, Sabotage::PopKeepsElement] {
        let e = expectation(s);
        let app = e.workload.resolve(&apps).unwrap();
        let right = hunt(s, (app, e.workload), e.properties, (1, 1), 0..e.seeds, 2);
        let Verdict::Caught { seed, property } = &right else {
            panic!("{s:?} is not caught by {:?}: {right:?}", e.properties);
        };
        assert!(e.properties.contains(&property.as_str()));
        // The same hunt expecting a property the breakage does not touch fails at the same
        // seed, naming what that seed did report.
        let wrong = hunt(
            s,
            (app, e.workload),
            &["COORD-watch"],
            (1, 1),
            0..e.seeds,
            2,
        );
        match &wrong {
            Verdict::WrongProperty { seed: at, found } => {
                assert_eq!(at, seed);
                assert!(found.contains(property), "{found:?}");
            }
            other => panic!("{s:?} expecting COORD-watch: {other:?}"),
        }
    }
}
