//! The sabotage gate itself (`plumb sim --sabotage all` runs it over every breakage in CI): a
//! breakage is caught only by a property it violates, and a workload is resolved in the
//! caller's registry or named as missing. Only built with `--features sabotage`. The hunts
//! themselves need applications: crates/script/tests/sabotage.rs.
#![cfg(feature = "sabotage")]

use plumb_sim::sabotage::{expectation, judge, Verdict, Workload, ALL};
use plumb_sim::spec::Spec;
use plumb_sim::{SeedReport, SimApps, Stats, Violation};

/// A workload whose application the registry lacks is an error that names it, never a hunt
/// skipped in silence.
#[test]
fn a_workload_the_registry_lacks_is_an_error_naming_it() {
    let apps = SimApps::new().with(&Spec);
    assert_eq!(Workload::SPEC.resolve(&apps).unwrap().name(), "spec");
    let e = Workload::COORD.resolve(&apps).err().unwrap();
    assert!(e.contains("\"coord\"") && e.contains("it has spec"), "{e}");
}

fn report(properties: &[&'static str], undecided: bool) -> SeedReport {
    SeedReport {
        app: "kv",
        seed: 7,
        u: 1,
        r: 1,
        sketcher: false,
        partial: false,
        on_demand: false,
        zz: false,
        tentative: None,
        extra_exec: 0,
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
