//! The sabotage gate itself (`plumb sim --sabotage all` runs it over every breakage in CI): a
//! breakage is caught only by a property it violates, and a hunt whose expected property does
//! not fire fails. Only built with `--features sabotage`. One test function: the sabotage switch
//! is process-wide.
#![cfg(feature = "sabotage")]

use plumb_sim::apps::{kv::Kv, redis::Redis};
use plumb_sim::sabotage::{expectation, hunt, judge, Sabotage, Verdict, Workload, ALL};
use plumb_sim::{SeedReport, SimApps, Stats, Violation};

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

/// A workload whose application the registry lacks is an error that names it, never a hunt
/// skipped in silence.
#[test]
fn a_workload_the_registry_lacks_is_an_error_naming_it() {
    let apps = SimApps::new().with(&Kv);
    assert_eq!(Workload::SKETCHER.resolve(&apps).unwrap().name(), "kv");
    let e = Workload::COORD.resolve(&apps).err().unwrap();
    assert!(e.contains("\"coord\"") && e.contains("it has kv"), "{e}");
}

fn report(properties: &[&'static str], undecided: bool) -> SeedReport {
    SeedReport {
        app: "kv",
        seed: 7,
        u: 1,
        r: 1,
        sketcher: false,
        liveness_checked: true,
        violations: properties
            .iter()
            .map(|p| Violation {
                property: p,
                detail: String::new(),
            })
            .collect(),
        suppressed_violations: 0,
        undecided: if undecided {
            vec!["linearizability undecided".to_string()]
        } else {
            Vec::new()
        },
        warnings: Vec::new(),
        stats: Stats::default(),
        trace_digest: 0,
    }
}

#[test]
fn only_the_expected_property_catches() {
    let expected = ["OS-agreement"];
    assert_eq!(judge(&expected, &report(&[], false)), None);
    assert!(judge(&expected, &report(&["LL1", "OS-agreement"], false)).is_some_and(|v| v.caught()));
    // Another property, a panic or a checker that gave up is not a catch.
    for (props, undecided) in [
        (&["LL1"][..], false),
        (&["panic"][..], false),
        (&[][..], true),
    ] {
        let verdict = judge(&expected, &report(props, undecided));
        assert!(
            matches!(verdict, Some(Verdict::WrongProperty { seed: 7, .. })),
            "{props:?} undecided={undecided}: {verdict:?}"
        );
    }
}

#[test]
fn every_switch_is_in_the_list_once() {
    let mut names: Vec<&str> = ALL.iter().map(|(_, n)| *n).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ALL.len());
    for (s, _) in ALL {
        assert!(!expectation(*s).properties.is_empty());
    }
}
