//! Accepting connections without spinning. When the process runs out of file descriptors
//! (a connection flood, or a low `ulimit -n`) every `accept` fails at once and keeps failing
//! until a descriptor is freed: retrying at once would burn a core doing nothing. Failures
//! are counted and followed by a pause, short enough that service resumes promptly once a
//! connection closes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// The pause after a failed `accept`.
pub const ACCEPT_BACK_OFF: Duration = Duration::from_millis(50);

/// The next connection on `listener`; each failure on the way is counted in `failures` and
/// followed by [`ACCEPT_BACK_OFF`]. Failures are logged as `what`, the 1st, 2nd, 4th, 8th...
/// (a flood does not flood the log).
pub async fn accept(listener: &TcpListener, failures: &AtomicU64, what: &str) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => return stream,
            Err(e) => {
                let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    eprintln!(
                        "{what}: accepting a connection failed ({e}; {n} failures so far); retrying every {} ms{}",
                        ACCEPT_BACK_OFF.as_millis(),
                        if e.raw_os_error() == Some(libc_emfile()) {
                            " (out of file descriptors: raise `ulimit -n`, or fewer clients)"
                        } else {
                            ""
                        }
                    );
                }
                tokio::time::sleep(ACCEPT_BACK_OFF).await;
            }
        }
    }
}

/// EMFILE on Linux (the per-process descriptor limit).
const fn libc_emfile() -> i32 {
    24
}
