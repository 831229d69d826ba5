//! The operator's request to stop a process: Ctrl-C or SIGTERM (what `kill` and `up` send).
//! Every long-running command (a node, a gateway, `up`) waits for it the same way.

/// Resolves on SIGINT or SIGTERM.
pub async fn terminated() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
