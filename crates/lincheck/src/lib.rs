//! Linearizability checker. (in progress)
