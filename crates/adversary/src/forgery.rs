//! How a Byzantine replica lies in the application's own terms.
//!
//! The protocol-level lies (wrong digests, altered batches, bad MACs) need no knowledge of the
//! application. Three lies are stronger when they speak the application's language: a forged
//! request an authentication replica substitutes for a client's (a *write*, so that one that got
//! ordered would show up in the clients' histories), a wrong result that a client could take
//! for a real one, and a checkpoint that decodes and loads but holds the wrong state (so only
//! the token check can tell it apart). [`AppForgery`] supplies them; [`AnyApp`] is the
//! application-agnostic fallback, which lies with corrupted bytes.

/// An application's vocabulary for lies. Implement it next to the application's simulator
/// support; the simulator hands it to every Byzantine replica it creates.
pub trait AppForgery: Send + Sync {
    /// An operation body substituted for client request `nc`. Prefer a write: a forged
    /// request that got ordered then changes what correct clients observe.
    fn forged_op(&self, nc: u64) -> Vec<u8>;

    /// Well-formed results an execution replica may answer instead of the real one. Empty:
    /// the adversary flips a bit of the real result instead.
    fn plausible_results(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }

    /// The application checkpoint `app_checkpoint` (taken at agreed time `agreed_time`) with
    /// its contents altered but still well-formed, or `None` if it does not decode (the
    /// adversary then corrupts bytes).
    fn wrong_checkpoint(&self, _app_checkpoint: &[u8], _agreed_time: u64) -> Option<Vec<u8>> {
        None
    }
}

/// Lies that need no knowledge of the application: a forged body of arbitrary bytes, wrong
/// results and checkpoints by bit flips (the checkpoint still decodes at the execution stage's
/// layer, so it reaches the token check; the application may refuse to load it).
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyApp;

impl AppForgery for AnyApp {
    fn forged_op(&self, nc: u64) -> Vec<u8> {
        format!("forged-{nc}").into_bytes()
    }
}
