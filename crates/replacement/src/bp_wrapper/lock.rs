//! The wrapper's lock: a reentrant mutex around the state below it, with counted and sampled
//! acquisitions, and the brief spin of an eviction batch.
//!
//! Every call into the inner policy is made under this lock, so the inner policy sees one
//! serialized stream of hooks. It is a `parking_lot` reentrant mutex because an eviction batch
//! holds it while the pool runs code that reports hooks back (a parent losing its last swizzled
//! child, R8); a thread's nested acquisitions are neither counted nor timed.
//!
//! An eviction batch (and `hold_lock_for`) spins on `try_lock` for a few microseconds first:
//! `EVICTION_SPINS` (20) rounds of 64 spin hints, about as long as a commit holds the lock.
//! Every thread that needs a free frame waits for the evicting thread, and a thread that blocks
//! may wait a whole scheduling slice to run again when the cores are oversubscribed. Only one
//! thread spins at a time (the `spinning` flag); the others block at once, since where every
//! thread evicts (the emulator's all-miss mode) spinners took the cores from the holder. A
//! thread whose queue is full does not spin: it blocks at once, as in the paper (`access.rs`;
//! spinning there made things worse). The measurements are in `docs/ding.md`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};

use super::stats::{bump, Counters};
use crate::policy::QueuedHook;
use swizzledb_sync::FrameId;

/// One lock acquisition in this many is timed, for the hold-time estimate (two clock reads per
/// acquisition would lengthen the critical section they measure).
const HOLD_SAMPLE: u64 = 16;

/// `try_lock` attempts of an eviction batch, 64 spin hints apart (several microseconds in all),
/// before it blocks on the lock.
const EVICTION_SPINS: usize = 20;

/// The wrapper's lock: serializes every call into the inner policy. Reentrant: an eviction batch
/// holds it while the pool runs code (un-swizzling a parent) that reports hooks back to the
/// wrapper. The wrapper's counters are passed in, for the acquisitions, waits and hold times.
pub(super) struct Lock {
    /// The mutex and the state under it.
    pub(super) mutex: ReentrantMutex<RefCell<Locked>>,
    /// Set while a thread spins for the lock in `lock_for_eviction` (one spinner at a time).
    spinning: AtomicBool,
}

/// State under the lock.
pub(super) struct Locked {
    /// Scratch for a commit: the calls passed to the inner policy's `on_queued`.
    pub(super) calls: Vec<(FrameId, QueuedHook)>,
    /// How many guards the holding thread has open (the lock is reentrant).
    pub(super) depth: usize,
    /// Acquisitions so far, for sampling hold times.
    pub(super) acquisitions: u64,
}

/// The lock, held: the state under it and, for a sampled acquisition, when it was taken.
pub(super) struct Guard<'a> {
    guard: ReentrantMutexGuard<'a, RefCell<Locked>>,
    /// When the lock was taken, for the outermost acquisition of a thread if it is a sampled one.
    timed: Option<(Instant, &'a Counters)>,
}

impl Guard<'_> {
    pub(super) fn state(&self) -> std::cell::RefMut<'_, Locked> {
        self.guard.borrow_mut()
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.guard.borrow_mut().depth -= 1;
        if let Some((started, counters)) = self.timed {
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            counters.timed_holds.fetch_add(1, Ordering::Relaxed);
            counters.timed_hold_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }
}

impl Lock {
    /// The lock, free, over empty state.
    pub(super) fn new() -> Lock {
        let locked = Locked { calls: Vec::new(), depth: 0, acquisitions: 0 };
        Lock { mutex: ReentrantMutex::new(RefCell::new(locked)), spinning: AtomicBool::new(false) }
    }

    /// Counts an acquisition and starts timing it if it is a sampled one (outermost only).
    fn acquired<'a>(guard: ReentrantMutexGuard<'a, RefCell<Locked>>, counters: &'a Counters) -> Guard<'a> {
        let timed = {
            let mut state = guard.borrow_mut();
            state.depth += 1;
            if state.depth > 1 {
                None // nested in this thread's own acquisition
            } else {
                bump(&counters.lock_acquisitions);
                state.acquisitions += 1;
                state.acquisitions.is_multiple_of(HOLD_SAMPLE).then(|| (Instant::now(), counters))
            }
        };
        Guard { guard, timed }
    }

    /// Takes the lock, blocking; counts a wait, and the nanoseconds it took, if another thread
    /// held it.
    pub(super) fn lock<'a>(&'a self, counters: &'a Counters) -> Guard<'a> {
        let guard = self.mutex.try_lock().unwrap_or_else(|| {
            bump(&counters.blocking_waits);
            let started = Instant::now();
            let guard = self.mutex.lock();
            let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            counters.wait_nanos.fetch_add(nanos, Ordering::Relaxed);
            guard
        });
        Lock::acquired(guard, counters)
    }

    /// Takes the lock if it is free (or held by this thread), without blocking; counts the
    /// acquisition as `lock` does, and nothing if it fails.
    pub(super) fn try_lock<'a>(&'a self, counters: &'a Counters) -> Option<Guard<'a>> {
        self.mutex.try_lock().map(|guard| Lock::acquired(guard, counters))
    }

    /// Takes the lock for an eviction batch: spins on `try_lock` for a few microseconds (a commit
    /// holds the lock for about that long) before blocking, because a thread that blocks may wait
    /// a whole scheduling slice to run again when the cores are oversubscribed, and every thread
    /// that needs a free frame waits for the evicting one.
    ///
    /// Only one thread spins at a time: where many threads evict at once (every miss in the
    /// emulator's all-miss mode), spinners would take the cores from the lock holder.
    pub(super) fn lock_for_eviction<'a>(&'a self, counters: &'a Counters) -> Guard<'a> {
        if self.spinning.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            let mut taken = None;
            for _ in 0..EVICTION_SPINS {
                if let Some(guard) = self.mutex.try_lock() {
                    taken = Some(guard);
                    break;
                }
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
            self.spinning.store(false, Ordering::Release);
            if let Some(guard) = taken {
                return Lock::acquired(guard, counters);
            }
        }
        self.lock(counters)
    }
}
