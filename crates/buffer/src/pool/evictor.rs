//! The background evictor (B31): a thread that keeps free frames ready, so that a miss finds
//! one without evicting, and writes the dirty victims itself, so that no miss waits for a write.

use super::BufferPool;
use crate::error::{BufferError, Result};
use crate::stats::{add, bump};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Arc;
use std::time::Duration;

/// How long the evictor waits after a round that freed nothing (every frame latched, the log
/// refusing, a failed file) before it tries again, whatever misses ask.
const BACKOFF: Duration = Duration::from_millis(2);

/// What the pool and its evictor thread share (B31). Part of every pool; `running` is false
/// unless [`BufferPool::start_evictor`] started a thread.
#[derive(Default)]
pub(super) struct Signal {
    /// A thread is started and not told to stop: misses nudge it.
    pub(super) running: AtomicBool,
    /// A miss saw free frames below the wake-up mark since the evictor last looked.
    wanted: AtomicBool,
    state: Mutex<State>,
    /// Wakes the evictor (a nudge, a stop).
    wake: Condvar,
    /// Wakes a `stop` waiting for the round in progress.
    idle: Condvar,
}

#[derive(Default)]
struct State {
    stop: bool,
    /// The evictor is in a round (it may be writing pages).
    busy: bool,
}

impl Signal {
    /// Called by a miss that found fewer than the high watermark of free frames (B13): wakes
    /// the evictor unless it was woken already since it last looked. One load when no evictor
    /// runs or it was woken already.
    #[inline]
    pub(super) fn nudge(&self) {
        if self.running.load(Relaxed) && !self.wanted.load(Relaxed) && !self.wanted.swap(true, Relaxed) {
            let _state = self.state.lock();
            self.wake.notify_one();
        }
    }

    /// Tells the evictor to stop and waits until it is out of its round: from then on it writes
    /// and evicts nothing. Used by `close` (B22) and by the handle; idempotent.
    pub(super) fn stop(&self) {
        self.running.store(false, Release);
        let mut state = self.state.lock();
        state.stop = true;
        self.wake.notify_all();
        while state.busy {
            self.idle.wait(&mut state);
        }
    }

    /// Waits for a nudge (after a round without progress, for `BACKOFF` first, whatever misses
    /// ask). Returns false if the evictor must stop; otherwise marks it busy. No timeout: a miss
    /// that needs frames nudges, and one that finds none evicts itself (B13).
    fn wait(&self, backoff: bool) -> bool {
        let mut state = self.state.lock();
        if backoff && !state.stop {
            self.wake.wait_for(&mut state, BACKOFF);
        }
        while !state.stop && !self.wanted.load(Relaxed) {
            self.wake.wait(&mut state);
        }
        if state.stop {
            return false;
        }
        self.wanted.store(false, Relaxed);
        state.busy = true;
        true
    }

    /// Waits until the evictor is out of its round and keeps it out while the guard lives: for
    /// checks that need the pool to themselves (`check_invariants`). A nudge meanwhile blocks.
    pub(super) fn quiesce(&self) -> parking_lot::MutexGuard<'_, impl Sized> {
        let mut state = self.state.lock();
        while state.busy {
            self.idle.wait(&mut state);
        }
        state
    }

    fn done(&self) {
        let mut state = self.state.lock();
        state.busy = false;
        self.idle.notify_all();
    }
}

/// The evictor's round in progress: ends it ([`Signal::done`]) when dropped, on unwinding too.
struct Busy<'a>(&'a Signal);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.done();
    }
}

/// The running background evictor of a pool (B31). Dropping it (or [`EvictorHandle::stop`])
/// stops the thread and joins it. The thread holds the pool alive until then.
#[must_use = "dropping the handle stops the evictor"]
pub struct EvictorHandle {
    pool: Arc<BufferPool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EvictorHandle {
    /// Stops the evictor and waits for its thread to end. A round in progress finishes first;
    /// the pages it wrote are written.
    pub fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.pool.evictor.stop();
            // The thread's panics are the pool's bugs; its message went to stderr, and the log
            // says that the pool ran without its evictor since.
            if t.join().is_err() {
                log::error!(
                    "swizzledb: the background evictor of {} panicked; misses evicted for themselves since",
                    self.pool.path().display()
                );
            }
        }
    }
}

impl Drop for EvictorHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for EvictorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvictorHandle").field("running", &self.thread.is_some()).finish()
    }
}

impl BufferPool {
    /// Starts the pool's background evictor (B31): a thread that, whenever a miss finds fewer
    /// than the high watermark of free frames, evicts until [`BufferPool::evictor_target`]
    /// frames are free, writing the dirty victims itself in batches (B29). Misses then rarely
    /// evict and almost never write; they still evict themselves when free frames fall below
    /// the low watermark (B13) before the evictor catches up.
    ///
    /// `Ok(None)`, and no thread, for a main-memory pool (it evicts nothing), a closed pool, and a
    /// pool that records a trace (B17): a trace holds the workload's threads and their own
    /// evictions, so that a one-thread run gives a one-thread trace whose events are in order.
    ///
    /// # Errors
    /// [`BufferError::Config`] if an evictor already runs for this pool; the operating system's
    /// error if it refuses a thread.
    pub fn start_evictor(self: &Arc<Self>) -> Result<Option<EvictorHandle>> {
        if self.mode == super::PoolMode::MainMemory || self.is_closed() || self.trace.is_some() {
            return Ok(None);
        }
        {
            let mut state = self.evictor.state.lock();
            if self.evictor.running.load(Acquire) || state.busy {
                return Err(BufferError::Config(
                    "this pool's background evictor is already running; stop its handle first".into(),
                ));
            }
            state.stop = false;
            self.evictor.running.store(true, Release);
        }
        let pool = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("swizzledb-evictor".into())
            .spawn(move || pool.evictor_loop())
            .map_err(|e| {
                self.evictor.running.store(false, Release);
                BufferError::Io { file: self.path().to_path_buf(), source: e }
            })?;
        Ok(Some(EvictorHandle { pool: Arc::clone(self), thread: Some(thread) }))
    }

    /// The free frames the background evictor (B31) keeps: four times the low watermark, at
    /// most an eighth of the pool, at least the high watermark; the configured batch, if one is
    /// (`PoolConfig::eviction_batch`, B13).
    #[must_use]
    pub fn evictor_target(&self) -> usize {
        if self.fixed_batch {
            return self.high_watermark;
        }
        (4 * self.low_watermark).min(self.frames.len() / 8).max(self.high_watermark)
    }

    fn evictor_loop(&self) {
        super::free::spread_pushes();
        let mut backoff = false;
        let mut failing = false;
        while self.evictor.wait(backoff) {
            // Out of the round however it ends: a round that panics must not leave `stop`
            // (and so `close`) waiting for it.
            let _busy = Busy(&self.evictor);
            let before = self.count(|b| b.evictions.load(Relaxed));
            let outcome = self.evictor_round();
            let freed = self.count(|b| b.evictions.load(Relaxed)) - before;
            self.count(|b| {
                bump(&b.evictor_rounds);
                add(&b.evictor_evictions, freed);
            });
            backoff = match outcome {
                Ok(progress) => {
                    failing = false;
                    !progress
                }
                Err(e) => {
                    self.count(|b| bump(&b.evictor_failures));
                    if !failing {
                        // Once per streak: a failed file stays failed (F4), and the misses
                        // report it themselves.
                        log::warn!(
                            "swizzledb: the background evictor of {} failed: {e}",
                            self.path().display()
                        );
                    }
                    failing = true;
                    true
                }
            };
        }
    }

    /// Evicts batches until the evictor's target is free (B31). Returns whether it freed or
    /// wrote anything.
    fn evictor_round(&self) -> Result<bool> {
        let target = self.evictor_target();
        let mut progress = false;
        while self.free_count.load(Relaxed) < target && !self.is_closed() {
            let evicted_before = self.count(|b| b.evictions.load(Relaxed));
            let batch = {
                let _g = self.evict_lock.lock();
                self.evict_batch(true, target)
            };
            let deferred = match batch {
                Ok(d) => d,
                // Everything latched or pinned: the misses will say so if they run out.
                Err(BufferError::PoolExhausted { .. }) => return Ok(progress),
                Err(e) => return Err(e),
            };
            let (written, refused) = self.write_victims(deferred)?;
            self.count(|b| add(&b.evictor_writes, written as u64));
            if let Some(e) = refused {
                return Err(e);
            }
            if written == 0 && self.count(|b| b.evictions.load(Relaxed)) == evicted_before {
                return Ok(progress);
            }
            progress = true;
        }
        Ok(progress)
    }
}
