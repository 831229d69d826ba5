//! The lost-record and NEW-VIEW regressions with the protections switched off: each must fail,
//! which shows the tests in `lost_records.rs` would catch the bugs they guard against. Only
//! with `--features sabotage`; one test, because the active sabotage is process-wide.
#![cfg(feature = "sabotage")]

mod harness;

use harness::scenarios::*;
use harness::Harness;
use plumb_core::sabotage::{self, Sabotage};
use plumb_wire::OrderId;

fn fails(what: &str, scenario: fn(&mut Harness)) {
    let result = std::panic::catch_unwind(|| {
        let mut h = Harness::new(1, 0, 4);
        scenario(&mut h);
    });
    let message = match &result {
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
        Ok(()) => String::new(),
    };
    assert!(
        message.contains("OS-agreement"),
        "{what}: expected two digests committed at one sequence number, got {message:?}"
    );
}

#[test]
fn without_the_protections_the_regressions_fail() {
    sabotage::set(Some(Sabotage::Amnesia));
    fails("wiped backup", wiped_backup_then_view_change);
    fails("wiped primary", wiped_primary_reproposes);
    fails("lost slot records", slot_records_lost);
    sabotage::set(Some(Sabotage::AnyNewView));
    let mut h = Harness::new(1, 1, 4);
    let forged = h.new_view(
        plumb_wire::View(1),
        &[OrderId(0), OrderId(2), OrderId(3)],
        OrderId(3),
    );
    h.deliver_to(OrderId(0), &forged, OrderId(3));
    assert_eq!(
        h.replica(OrderId(0)).view(),
        plumb_wire::View(1),
        "a backup's NEW-VIEW is installed"
    );
    sabotage::set(None);
}
