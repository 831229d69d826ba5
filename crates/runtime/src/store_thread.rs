//! A stage's store on a thread of its own: the stage's thread hands it writes and syncs, in
//! order, and goes on.
//!
//! Why: a write is not free even before its sync. An execution replica's checkpoint of a large
//! state writes megabytes of objects, folds older deltas into the base, and now and then moves
//! the log's compaction along by twice what it appended; on the stage's thread that made steps
//! of 100 to 500 ms, during which the replica neither executed nor reported (docs/zz.md: what
//! woke the sleeper of a fault-free cluster filled to 1 GiB). Here the stage pays only for
//! queueing the op.
//!
//! What a sync promises does not move: this thread carries out ops and syncs in the order the
//! stage asked for them, so when it answers a sync, every op asked for before it is durable;
//! the runner releases held actions only then. A failed write or sync ends the process, as it
//! did on the stage's thread: after a failed `fsync` the kernel may have dropped dirty pages,
//! and nothing after it may be acknowledged.

use plumb_core::StoreOp;
use plumb_storage::{Store, StoreError, StoreStats};
use plumb_wire::Principal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of writes gathered before they are handed to the store thread without waiting for a
/// sync: a checkpoint of megabytes goes to the disk while the stage still builds it.
const HAND_OVER_BYTES: usize = 1 << 20;

/// Hand-overs queued and not yet carried out, at most: past this the stage's thread waits for
/// the disk, as it did when it wrote itself (a stage must not outrun its disk without bound).
const QUEUED_MAX: usize = 64;

/// Writes for the store thread to carry out in order, then a sync if asked for.
struct Job {
    ops: Vec<StoreOp>,
    /// Make every op so far durable, then answer.
    sync: bool,
}

/// The stage thread's end of its store thread. Writes are gathered and handed over with the
/// group commit's sync (or once they weigh [`HAND_OVER_BYTES`]): one wake-up of the store
/// thread per group, not one per write (handing each write over on its own cost about 8% of
/// the throughput of `plumb bench --u 1 --r 1 --clients 128`, in five alternating rounds).
pub(crate) struct StoreThread {
    jobs: Option<mpsc::SyncSender<Job>>,
    /// One `()` per completed sync, in order.
    synced: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
    /// Writes not handed over yet, and about how many bytes they hold.
    gathered: Vec<StoreOp>,
    gathered_bytes: usize,
    /// A write came since the latest sync was asked for: the next one has work to do.
    written: bool,
}

impl StoreThread {
    /// Start the thread named `{principal}-store`. After each sync it calls `on_synced` with
    /// the store's counters and how long the sync took, there, once the sync's answer is
    /// ready to take: the runner wakes the stage's thread with it.
    pub(crate) fn start(
        store: Store,
        principal: Principal,
        on_synced: impl FnMut(StoreStats, Duration) + Send + 'static,
    ) -> std::io::Result<StoreThread> {
        let (jobs, job_rx) = mpsc::sync_channel::<Job>(QUEUED_MAX);
        let (synced_tx, synced) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("{principal}-store"))
            .spawn(move || run(store, principal, job_rx, synced_tx, on_synced))?;
        Ok(StoreThread {
            jobs: Some(jobs),
            synced,
            thread: Some(thread),
            gathered: Vec::new(),
            gathered_bytes: 0,
            written: false,
        })
    }

    /// A write (anything but `Sync`), carried out after every write before it. Returns how
    /// long the caller waited: nonzero only when it handed writes over and the disk was
    /// [`QUEUED_MAX`] hand-overs behind.
    pub(crate) fn write(&mut self, op: StoreOp) -> Duration {
        debug_assert!(!matches!(op, StoreOp::Sync), "syncs go through `sync`");
        self.gathered_bytes += match &op {
            StoreOp::Put { key, value } => key.len() + value.len(),
            StoreOp::Delete { key } => key.len(),
            StoreOp::DeletePrefix { prefix } => prefix.len(),
            StoreOp::Sync => 0,
        };
        self.gathered.push(op);
        self.written = true;
        if self.gathered_bytes >= HAND_OVER_BYTES {
            return self.hand_over(false);
        }
        Duration::ZERO
    }

    /// Ask for a sync of every write so far. `false`: nothing was written since the last
    /// one, so everything is durable once that one is, and no sync was asked for.
    pub(crate) fn sync(&mut self) -> bool {
        if !self.written {
            return false;
        }
        self.written = false;
        self.hand_over(true);
        true
    }

    /// Completed syncs not yet taken, without waiting.
    pub(crate) fn take_synced(&self) -> usize {
        self.synced.try_iter().count()
    }

    /// Wait for the next sync to complete.
    pub(crate) fn wait_synced(&self) {
        if self.synced.recv().is_err() {
            // The thread is gone without answering: it exited the process on a failure, or
            // panicked. Nothing after this may be acknowledged.
            std::process::exit(70);
        }
    }

    /// Let the thread carry out what was written (unsynced writes reach the file, as a
    /// process exit leaves them) and close the store: its lock is released when this returns.
    pub(crate) fn stop(&mut self) {
        if !self.gathered.is_empty() && self.jobs.is_some() {
            self.hand_over(false);
        }
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn hand_over(&mut self, sync: bool) -> Duration {
        let ops = std::mem::take(&mut self.gathered);
        self.gathered_bytes = 0;
        let started = Instant::now();
        let sent = self
            .jobs
            .as_ref()
            .is_some_and(|j| j.send(Job { ops, sync }).is_ok());
        if !sent {
            // As in `wait_synced`: the thread ended on a failure it already reported.
            std::process::exit(70);
        }
        started.elapsed()
    }
}

impl Drop for StoreThread {
    /// A runner dropped without running still closes its store before it is gone.
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(
    mut store: Store,
    principal: Principal,
    jobs: mpsc::Receiver<Job>,
    synced: mpsc::Sender<()>,
    mut on_synced: impl FnMut(StoreStats, Duration),
) {
    for job in jobs {
        let started = Instant::now();
        for op in job.ops {
            if let Err(e) = store.apply(op) {
                fail(principal, &e);
            }
        }
        if job.sync {
            if let Err(e) = store.apply(StoreOp::Sync) {
                fail(principal, &e);
            }
            if synced.send(()).is_err() {
                return;
            }
            on_synced(store.stats(), started.elapsed());
        }
    }
}

/// A write or sync failed: stop the process before anything unsynced is acknowledged.
fn fail(principal: Principal, e: &StoreError) -> ! {
    eprintln!(
        "plumb: {principal}: durable storage failed: {e}; stopping so nothing unsynced is acknowledged. Fix the disk, then restart the process: it recovers from what is on disk and from its peers."
    );
    std::process::exit(70);
}

#[cfg(test)]
mod tests {
    use super::*;
    use plumb_storage::Store;

    fn put(key: &str, value: &[u8]) -> StoreOp {
        StoreOp::Put {
            key: key.to_string(),
            value: value.to_vec(),
        }
    }

    #[test]
    fn a_sync_answers_once_every_op_before_it_is_on_disk_and_wakes_the_stage() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path()).unwrap();
        let (woken, wakes) = mpsc::channel();
        let principal = Principal::Exec(plumb_wire::ExecId(0));
        let mut thread = StoreThread::start(store, principal, move |stats, _| {
            let _ = woken.send(stats);
        })
        .unwrap();
        // Nothing written: no sync to ask for.
        assert!(!thread.sync());
        for i in 0..100u32 {
            thread.write(put(&format!("k{i:03}"), &i.to_le_bytes()));
        }
        thread.write(StoreOp::Delete {
            key: "k000".to_string(),
        });
        assert!(thread.sync());
        thread.wait_synced();
        let stats = wakes.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(stats.live_records, 99);
        assert_eq!(
            stats.synced_bytes, stats.log_bytes,
            "the sync covered every op"
        );
        assert!(!thread.sync(), "nothing written since the sync");
        // A write after the sync, never synced, may or may not survive; the synced ones must.
        thread.write(put("late", b"x"));
        thread.stop();
        let (reopened, _) = Store::open(dir.path()).unwrap();
        assert_eq!(reopened.get("k000"), None);
        assert_eq!(reopened.get("k099"), Some(&99u32.to_le_bytes()[..]));
    }
}
