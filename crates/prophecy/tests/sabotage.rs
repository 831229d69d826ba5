//! The sketcher's sabotage switches really break Algorithm 1 (so the simulator's delay-once
//! check that catches them is not vacuous). One test function: the switch is process-wide.
#![cfg(feature = "sabotage")]

mod common;

use plumb_core::sabotage::{self, Sabotage};
use plumb_prophecy::{Plan, Position, Sketch, Sketcher, SketcherConfig, Update, Verdict};

fn s(x: &str) -> Sketch {
    Sketch::of(x.as_bytes())
}

fn run(switch: Option<Sabotage>) -> (Verdict, Update, Option<Sketch>) {
    sabotage::set(switch);
    let mut sk = Sketcher::new(SketcherConfig::default()).expect("valid");
    let q = s("GET /x");
    assert_eq!(sk.plan(q, 0), Plan::Replicated);
    sk.on_replicated(q, s("v2"), Position::new(10, 0), 1);
    assert!(matches!(sk.plan(q, 2), Plan::Fast { .. }));
    // A stale replica answers the fast read with the older state v1.
    let verdict = sk.on_fast_reply(q, s("v1"), 3);
    // A replicated reply older than the entry arrives late.
    let update = sk.on_replicated(q, s("v1"), Position::new(9, 0), 4);
    let entry = sk.table().entry(q).map(|e| e.response());
    sabotage::set(None);
    (verdict, update, entry)
}

/// A one-entry sketcher holds `a`'s reply at position 5 until `b`'s evicts it; then a reply for
/// `a` older than what was evicted arrives. What the sketcher makes of it.
fn evicted_entrys_straggler() -> Update {
    let mut sk = Sketcher::new(SketcherConfig {
        max_entries: 1,
        ..SketcherConfig::default()
    })
    .expect("valid");
    sk.on_replicated(s("a"), s("a2"), Position::new(5, 0), 0);
    sk.on_replicated(s("b"), s("b1"), Position::new(6, 0), 1);
    sk.on_replicated(s("a"), s("a1"), Position::new(4, 0), 2)
}

#[test]
fn sabotage_switches_break_the_sketcher() {
    // Honest: the stale fast reply falls back, the older replicated reply is ignored.
    assert_eq!(run(None), (Verdict::Fallback, Update::Stale, Some(s("v2"))));
    // SketcherAcceptsUnmatched: the stale fast reply is returned to the client.
    let (verdict, update, entry) = run(Some(Sabotage::SketcherAcceptsUnmatched));
    assert_eq!(verdict, Verdict::Accept);
    assert_eq!((update, entry), (Update::Stale, Some(s("v2"))));
    // SketcherTakesOlder: the older reply replaces the newer entry, so the next fast read
    // of the old state is accepted.
    let (verdict, update, entry) = run(Some(Sabotage::SketcherTakesOlder));
    assert_eq!(verdict, Verdict::Fallback);
    assert_eq!((update, entry), (Update::Changed, Some(s("v1"))));

    sabotage::set(Some(Sabotage::SketcherTakesOlder));
    // Also below the floor: an evicted entry's straggler comes back.
    assert_eq!(evicted_entrys_straggler(), Update::Created);
    sabotage::set(None);
    assert_eq!(evicted_entrys_straggler(), Update::BelowFloor);

    // End to end: the modelled replica group catches each switch breaking delay-once.
    for switch in [
        Sabotage::SketcherAcceptsUnmatched,
        Sabotage::SketcherTakesOlder,
    ] {
        sabotage::set(Some(switch));
        let caught = (0..300).find_map(|seed| common::simulate(seed, 600).err());
        sabotage::set(None);
        assert!(caught.is_some(), "{switch:?} went unnoticed");
        eprintln!("{switch:?}: {}", caught.unwrap_or_default());
    }
    assert!((0..50).all(|seed| common::simulate(seed, 600).is_ok()));
}
