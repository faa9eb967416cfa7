//! The wrapper's counters: the public snapshot ([`BpStats`]) and the atomics behind it.
//!
//! Read through `BpWrapper::stats`, `Policy::lock_stats` and the pool's `policy_lock_*` and
//! `policy_dropped_hits` counters. Page accesses (hits and inserts) and dropped hits are counted
//! per queue slot by its owner, with plain stores; those applied at once (the unbatched
//! variants, a thread without a slot), under the lock. Lock acquisitions (a thread's nested
//! ones not counted), failed try-locks and blocking waits are counted where they happen;
//! entries committed and stale entries skipped are added once per batch, not per entry. The
//! hold time is measured for one acquisition in 16: timing every one would lengthen the section
//! it measures, and an eviction batch's acquisition counts its whole batch. Every blocking wait
//! is timed (`wait_nanos`): a wait is the slow path already.

use std::sync::atomic::{AtomicU64, Ordering};

/// The wrapper's counters, as read by [`BpWrapper::stats`](super::BpWrapper::stats).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct BpStats {
    /// Page accesses reported: hits and inserts (misses).
    pub accesses: u64,
    /// Times the lock was taken (by any hook, batched or not; nested acquisitions by a thread
    /// that already holds it are not counted).
    pub lock_acquisitions: u64,
    /// Non-blocking attempts that found the lock taken (the thread went on working).
    pub failed_try_locks: u64,
    /// Blocking acquisitions that found the lock taken and had to wait.
    pub blocking_waits: u64,
    /// Queued entries applied to the inner policy (an insert that an earlier entry of the same
    /// page already applied counts here too).
    pub entries_committed: u64,
    /// Queued entries dropped because their frame no longer held their page.
    pub stale_entries_skipped: u64,
    /// Hits neither queued nor forwarded because the inner policy ignores them (its lock-free
    /// hits, such as 2Q's `A1in` and hot/cold's hot pages; the paper's Fig. 7). Counted in
    /// `accesses` too.
    pub dropped_hits: u64,
    /// Acquisitions whose hold time was measured (one in 16).
    pub timed_holds: u64,
    /// Total nanoseconds the timed acquisitions held the lock.
    pub timed_hold_nanos: u64,
    /// Total nanoseconds threads spent blocked in [`BpStats::blocking_waits`], every wait timed
    /// (a wait is already the slow path, so its two clock reads cost the fast path nothing):
    /// with the hold time, the lock's cost per access including contention (the paper's Fig. 4).
    pub wait_nanos: u64,
}

impl BpStats {
    /// Blocking waits per million page accesses: the paper's contention metric.
    #[must_use]
    pub fn waits_per_million(&self) -> f64 {
        per_million(self.blocking_waits, self.accesses)
    }

    /// Estimated nanoseconds of lock hold time per page access.
    #[must_use]
    pub fn hold_nanos_per_access(&self) -> f64 {
        if self.timed_holds == 0 || self.accesses == 0 {
            return 0.0;
        }
        let per_hold = self.timed_hold_nanos as f64 / self.timed_holds as f64;
        per_hold * self.lock_acquisitions as f64 / self.accesses as f64
    }

    /// Estimated nanoseconds per page access that the lock costs: held
    /// ([`BpStats::hold_nanos_per_access`]) plus waited for ([`BpStats::wait_nanos`]).
    #[must_use]
    pub fn lock_nanos_per_access(&self) -> f64 {
        if self.accesses == 0 {
            return 0.0;
        }
        self.hold_nanos_per_access() + self.wait_nanos as f64 / self.accesses as f64
    }

    /// The counters of `self` and `other` added (for partitioned wrappers).
    #[must_use]
    pub fn plus(&self, other: &BpStats) -> BpStats {
        BpStats {
            accesses: self.accesses + other.accesses,
            lock_acquisitions: self.lock_acquisitions + other.lock_acquisitions,
            failed_try_locks: self.failed_try_locks + other.failed_try_locks,
            blocking_waits: self.blocking_waits + other.blocking_waits,
            entries_committed: self.entries_committed + other.entries_committed,
            stale_entries_skipped: self.stale_entries_skipped + other.stale_entries_skipped,
            dropped_hits: self.dropped_hits + other.dropped_hits,
            timed_holds: self.timed_holds + other.timed_holds,
            timed_hold_nanos: self.timed_hold_nanos + other.timed_hold_nanos,
            wait_nanos: self.wait_nanos + other.wait_nanos,
        }
    }
}

/// `count` per million `of` (0 when `of` is 0).
fn per_million(count: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        count as f64 * 1e6 / of as f64
    }
}

/// The counters kept outside the lock. Each is bumped only on a slow path (a failed try-lock,
/// a wait) or under the lock, so none adds a shared read-modify-write to the fast path.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) lock_acquisitions: AtomicU64,
    pub(super) failed_try_locks: AtomicU64,
    pub(super) blocking_waits: AtomicU64,
    pub(super) entries_committed: AtomicU64,
    pub(super) stale_entries_skipped: AtomicU64,
    /// Page accesses of the unbatched variants, which take the lock for each.
    pub(super) locked_accesses: AtomicU64,
    pub(super) timed_holds: AtomicU64,
    pub(super) timed_hold_nanos: AtomicU64,
    pub(super) wait_nanos: AtomicU64,
}

pub(super) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Adds one to a counter that only the calling thread writes (a plain load and store, no
/// read-modify-write).
pub(super) fn bump_own(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
