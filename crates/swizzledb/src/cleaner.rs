//! The page cleaners (RECOVERY.md R15, R20): a background thread that keeps a logged
//! database's log below its bound. The classical one writes back the pages that hold
//! truncation back, then takes a checkpoint, which truncates; the decoupled one (Lersch 2015,
//! ch. 4) replays the log archive onto the pages' copies in the file instead (`decoupled.rs`),
//! then takes a decoupled checkpoint (R19).
//!
//! One round: if the log kept on disk (`end - oldest`) exceeds three quarters of the bound, write
//! back every dirty page whose recovery LSN lies more than half the bound behind the end (found in
//! one pass over the frames, written in page-id order through the double-write area 64 pages at
//! a time: `BufferPool::write_back_older`), then checkpoint. Pages changed within
//! the newest half stay dirty: they are the ones most likely to change again, and writing them
//! would cost a write each time without moving truncation much. Writers that
//! begin a transaction while the log is over its bound wait for a round (`Throttle`), so a
//! writer faster than the disk cannot outrun the cleaner.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use swizzledb_buffer::BufferPool;
use swizzledb_sync::Lsn;

use crate::logging::Wal;

/// Which page cleaner a logged database runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cleaner {
    /// The classical cleaner: writes back the pages whose changes are oldest in the log, then
    /// checkpoints (RECOVERY.md R15).
    #[default]
    Classical,
    /// No cleaner: the log shrinks only when evictions and checkpoints let it.
    None,
    /// The decoupled cleaner (Lersch 2015): replays the page changes of the log archive onto
    /// the pages' copies in the data file, in page-id order, without latching or copying
    /// buffer-pool frames, then takes a decoupled checkpoint (RECOVERY.md R19, R20). Needs
    /// [`crate::Builder::log_archive`].
    Decoupled,
}

/// What the page cleaner did since the database opened.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CleanerStats {
    /// Rounds that cleaned: those that found the log over three quarters of its bound, and
    /// those the cleaner interval forced ([`crate::lab::LabOptions::cleaner_interval`]), whatever
    /// the log's size.
    pub rounds: u64,
    /// Pages written back by the cleaner.
    pub pages_written: u64,
    /// Rounds that failed (I/O or log errors); the next round retries.
    pub failures: u64,
    /// Transactions that waited at `begin` for the log to get below its bound.
    pub throttled: u64,
    /// The largest log size (bytes kept on disk) any round saw.
    pub max_log_bytes_seen: u64,
    /// Decoupled cleaner: frames the pool marked clean after their page was written (R20).
    pub marked_clean: u64,
    /// Rounds that left the log over the trigger (a running transaction, or a failed archiving,
    /// held truncation back); the next round waits 20 ms.
    pub held_back: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    rounds: AtomicU64,
    pages_written: AtomicU64,
    failures: AtomicU64,
    throttled: AtomicU64,
    max_seen: AtomicU64,
    held_back: AtomicU64,
    marked_clean: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> CleanerStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CleanerStats {
            rounds: l(&self.rounds),
            pages_written: l(&self.pages_written),
            failures: l(&self.failures),
            throttled: l(&self.throttled),
            max_log_bytes_seen: l(&self.max_seen),
            held_back: l(&self.held_back),
            marked_clean: l(&self.marked_clean),
        }
    }
}

/// How often the cleaner looks at the log when no writer wakes it.
const PERIOD: Duration = Duration::from_millis(20);
/// The longest a transaction waits at `begin` for the log to shrink: a long-running transaction
/// can hold truncation back, and then waiting longer would not help.
const MAX_THROTTLE: Duration = Duration::from_secs(2);

/// State shared by the cleaner thread and the writers it throttles.
pub(crate) struct Shared {
    pub(crate) kind: Cleaner,
    /// Also clean every this often, whatever the log's size (`LabOptions::cleaner_interval`).
    pub(crate) every: Option<Duration>,
    pub(crate) max_log_bytes: u64,
    pub(crate) counters: Counters,
    /// Stop flag and round number, under one mutex: writers wait for the round to advance.
    state: Mutex<(bool, u64)>,
    wake: Condvar,
    done: Condvar,
}

impl Shared {
    pub(crate) fn new(kind: Cleaner, every: Option<Duration>, max_log_bytes: u64) -> Shared {
        Shared {
            kind,
            every,
            max_log_bytes,
            counters: Counters::default(),
            state: Mutex::new((false, 0)),
            wake: Condvar::new(),
            done: Condvar::new(),
        }
    }

    /// Called by `begin` (no latch held): if the log is over its bound, wake the cleaner and
    /// wait for its rounds until the log is below the bound again, or `MAX_THROTTLE` passed,
    /// unless a running transaction holds it over the bound.
    /// A failed log (wal README W11) is never waited for: no round can shrink it, and the
    /// transaction meets the failure at its first record.
    pub(crate) fn throttle(&self, wal: &Wal) {
        let over = || log_bytes_near(wal) > self.max_log_bytes && !wal.log.is_failed();
        // R15: a running transaction whose first record lies more than the bound behind the
        // end keeps the log over the bound until it ends, whatever the cleaner writes: waiting
        // would only stall every writer for the whole deadline.
        let pinned = || {
            wal.oldest_running_first()
                .is_some_and(|first| wal.log.end().0.saturating_sub(first.0) > self.max_log_bytes)
        };
        if !over() || pinned() {
            return;
        }
        self.counters.throttled.fetch_add(1, Ordering::Relaxed);
        let deadline = std::time::Instant::now() + MAX_THROTTLE;
        let mut state = self.state.lock();
        while !state.0 && over() && !pinned() {
            let round = state.1;
            self.wake.notify_one();
            while state.1 == round && !state.0 {
                if self.done.wait_until(&mut state, deadline).timed_out() {
                    return;
                }
            }
        }
    }
}

/// The log kept past which a round cleans: three quarters of the bound.
fn trigger(bound: u64) -> u64 {
    bound / 4 * 3
}

/// Bytes of log kept on disk: from the oldest record not yet truncated to the end.
pub(crate) fn log_bytes(wal: &Wal) -> u64 {
    wal.log.end().0.saturating_sub(wal.log.oldest().0)
}

/// [`log_bytes`] with the end to within a granule (wal README W12), read from a line that
/// appends do not write: for the look every `begin` takes (R15); the bound is many granules.
fn log_bytes_near(wal: &Wal) -> u64 {
    wal.log.end_near().0.saturating_sub(wal.log.oldest().0)
}

/// The cleaner thread; stops (and is joined) on [`Thread::stop`] or drop.
pub(crate) struct Thread {
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Thread {
    pub(crate) fn start(shared: Arc<Shared>, wal: Arc<Wal>, pool: Arc<BufferPool>) -> Thread {
        let s = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("swizzledb-cleaner".into())
            .spawn(move || {
                // The decoupled cleaner's progress (R20): every page's copy in the file holds
                // every change below it.
                let mut replayed = match s.kind {
                    Cleaner::Decoupled => crate::decoupled::progress(&wal).unwrap_or_else(|e| {
                        log::warn!(
                            "swizzledb page cleaner: its progress could not be read ({e}); replaying \
                             the whole archive"
                        );
                        Lsn(0)
                    }),
                    Cleaner::Classical | Cleaner::None => Lsn(0),
                };
                let period = s.every.map_or(PERIOD, |e| e.min(PERIOD));
                let mut last = std::time::Instant::now();
                loop {
                    {
                        let mut state = s.state.lock();
                        if state.0 {
                            return;
                        }
                        let due = s.every.is_some_and(|e| last.elapsed() >= e);
                        if !due && log_bytes(&wal) <= trigger(s.max_log_bytes) {
                            s.wake.wait_for(&mut state, period);
                            if state.0 {
                                return;
                            }
                        }
                    }
                    let forced = s.every.is_some_and(|e| last.elapsed() >= e);
                    if forced {
                        last = std::time::Instant::now();
                    }
                    let failed = !round(&s, &wal, &pool, forced, &mut replayed);
                    let stuck = log_bytes(&wal) > trigger(s.max_log_bytes);
                    let mut state = s.state.lock();
                    state.1 += 1;
                    s.done.notify_all();
                    if (failed || stuck) && !state.0 {
                        // Not at once, even for a throttled writer's wake-up: a failed log or
                        // file stays failed (W11, F4), and retrying back to back spins a core
                        // and floods the warnings; a round that left the log over the trigger
                        // was held back by a running transaction (or the archive, R17), and
                        // repeating it at once would only append checkpoints. (`stop`
                        // notifies `done` too.)
                        s.counters.held_back.fetch_add(u64::from(stuck && !failed), Ordering::Relaxed);
                        s.done.wait_for(&mut state, PERIOD);
                    }
                }
            })
            .inspect_err(|e| {
                // No cleaner: writers must not wait for one (the stop flag ends `throttle`).
                log::warn!("swizzledb: the page cleaner could not start ({e}); the log is not bounded");
                shared.state.lock().0 = true;
            })
            .ok();
        Thread { shared, handle }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let mut state = self.shared.state.lock();
            state.0 = true;
            self.shared.wake.notify_all();
            self.shared.done.notify_all();
            drop(state);
            if handle.join().is_err() {
                log::error!("swizzledb: the page cleaner thread panicked");
            }
        }
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One round (see the module doc): cleans if the log is over the trigger, or if `forced` (the
/// cleaner interval came round). Returns false if it failed.
fn round(s: &Shared, wal: &Wal, pool: &BufferPool, forced: bool, replayed: &mut Lsn) -> bool {
    let size = log_bytes(wal);
    s.counters.max_seen.fetch_max(size, Ordering::Relaxed);
    if size <= trigger(s.max_log_bytes) && !forced {
        return true;
    }
    s.counters.rounds.fetch_add(1, Ordering::Relaxed);
    let written_before = s.counters.pages_written.load(Ordering::Relaxed);
    let result = match s.kind {
        Cleaner::Decoupled => (|| -> crate::error::Result<()> {
            let (to, done) = crate::decoupled::replay(wal, pool, *replayed)?;
            *replayed = to;
            s.counters.pages_written.fetch_add(done.pages_written, Ordering::Relaxed);
            s.counters.marked_clean.fetch_add(done.marked_clean, Ordering::Relaxed);
            wal.checkpoint_decoupled(pool)?;
            Ok(())
        })(),
        Cleaner::Classical | Cleaner::None => (|| -> crate::error::Result<()> {
            // Everything older than the newest half of the bound goes (everything, when the
            // interval forced the round): after the checkpoint the log keeps about half the
            // bound plus what running transactions hold, and the next round comes a quarter
            // of the bound later.
            let keep = if size > trigger(s.max_log_bytes) { s.max_log_bytes / 2 } else { 0 };
            let target = Lsn(wal.log.end().0.saturating_sub(keep));
            // One log flush for the round, so that no page write waits for an fsync of the log
            // while it holds the page's latch (B18 then finds the log durable).
            wal.log.flush_all()?;
            // One pass over the frames: a page changed after it was picked has a recovery LSN
            // above the target, so nothing below the target is left when it returns.
            let n = pool.write_back_older(target, usize::MAX)?;
            s.counters.pages_written.fetch_add(n as u64, Ordering::Relaxed);
            wal.checkpoint(pool)?;
            Ok(())
        })(),
    };
    match &result {
        Ok(()) => log::debug!(
            "swizzledb page cleaner: a {} round ended (log {size} bytes before it, {} after; {} pages written)",
            if forced { "forced" } else { "triggered" },
            log_bytes(wal),
            s.counters.pages_written.load(Ordering::Relaxed) - written_before
        ),
        Err(e) => {
            s.counters.failures.fetch_add(1, Ordering::Relaxed);
            log::warn!("swizzledb page cleaner: a round failed ({e}); the next round retries");
        }
    }
    result.is_ok()
}
