//! Watching the primary (seed 004 §3.4.3): everything a replica weighs before it asks for a new
//! view. Each part owns its state; the handlers that feed them and act on what they say are in
//! the file of the part.

use crate::monitor::Monitor;
use crate::skip::Liveness;
use crate::suspicion::Suspicions;
use plumb_core::{BrokenInvariant, Micros};
use plumb_wire::View;

#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// The heartbeat, rate and fairness checks on the primary (monitor.rs).
    pub monitor: Monitor,
    /// Who suspects the current primary, ourselves included, and why we do (suspicion.rs).
    pub suspicions: Suspicions,
    /// When each peer was last heard: which primaries are dead and skipped (skip.rs).
    pub liveness: Liveness,
    /// When this replica last applied a batch, entered a view or rejoined: the progress
    /// timeout (view_change.rs) and the idle tests of catching up count from here.
    pub last_progress: Micros,
}

impl Watch {
    pub fn check_invariants(&self, view: View) -> Result<(), BrokenInvariant> {
        self.suspicions.check_invariants(view)
    }
}
