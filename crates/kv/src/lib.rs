//! Key-value application. (in progress)
