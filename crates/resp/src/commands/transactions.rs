//! Transactions: `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`, which the connection's
//! [`crate::Session`] carries out.

use crate::commands::call::{Call, Plan};

pub(super) fn multi(_: &Call) -> Plan {
    Plan::Multi
}

pub(super) fn exec(_: &Call) -> Plan {
    Plan::Exec
}

pub(super) fn discard(_: &Call) -> Plan {
    Plan::Discard
}

pub(super) fn watch(c: &Call) -> Plan {
    Plan::Watch { keys: c.rest(1) }
}

pub(super) fn unwatch(_: &Call) -> Plan {
    Plan::Unwatch
}
