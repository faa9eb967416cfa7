//! BP-Wrapper (README "BP-Wrapper (`bpw-<policy>`)"): batching and prefetching around any policy
//! whose hits take a lock (Ding, Shan & Jiang, TPDS 2015).
//!
//! Every hit is first appended to a private FIFO of the calling thread (one per thread and wrapper
//! instance). Only when `batch_threshold` entries have piled up does the thread ask for the
//! wrapper's lock, without blocking; if the lock is busy it keeps working until the queue is full
//! (`queue_size`), and only then blocks. The queue is committed in FIFO order under the lock, so
//! the inner policy sees each thread's hits in their order, one lock acquisition per batch.
//! Every other hook takes the same lock and commits the calling thread's queue first, so the inner
//! policy sees one serialized stream, and in a single thread exactly the unwrapped sequence.
//!
//! # Per-thread queues
//!
//! A `thread_local!` map from the wrapper's id (a process-wide counter, never reused) to that
//! thread's queue. A wrapper dropped while other threads still hold queued entries leaves their
//! queues behind until those threads exit (at most `queue_size` entries each); a thread that exits
//! with queued hits loses them ([`BpWrapper::flush`] commits them first). Hits are statistics,
//! not data, so a lost hit only changes what the policy learns.
//!
//! # Why the inner policy never sees a hit for a frame it does not hold (R1)
//!
//! Each queue entry is `(frame, page the frame held at the hit)`. The wrapper keeps, per frame,
//! the page it currently holds (`pages`, stored as id + 1 so that `NO_PAGE`, 0, means free), and:
//!
//! 1. `pages[f]` is written only while holding the wrapper's lock, in the same critical section as
//!    the inner policy's `on_insert` (page stored, then forwarded) or its `on_remove` / `NotResident`
//!    rejection (`NO_PAGE` stored, then forwarded). So whenever the lock is free,
//!    `pages[f] != NO_PAGE` exactly when the inner policy holds `f`.
//! 2. A commit runs under the lock and forwards an entry only if `pages[f]` still equals the
//!    entry's page (which is never `NO_PAGE`). By 1, the inner policy then holds `f`.
//! 3. Rejections, `on_children` and `sweep_admits` are forwarded only if `pages[f] != NO_PAGE`
//!    under the lock, since a `NotResident` rejection can follow a concurrent free of the frame.
//! 4. A frame removed and reused for another page since the hit has another page id: the entry is
//!    skipped (counted as stale), so an old page's hit never lands on the new page. A frame removed
//!    and reloaded with the *same* page gets the hit, which is a true hit on that page.
//!
//! The page id in an entry is read without the lock when the hit is queued. The pool reports a hit
//! only for a resident frame under its latch (R1), after `on_insert` returned, so the read sees the
//! current page.
//!
//! # Hooks
//!
//! A hit's [`FrameHook`] cannot be kept in a queue, so the wrapper gives the inner policy a private
//! array of hooks, one per frame, for every hook call and as the [`HookTable`] of `next_candidate`
//! (as the simulator does, R7). The pool's hooks are never read or written. A policy that keeps its
//! hit state in the hook (CLOCK and kin) gains nothing from this wrapper anyway.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxHashMap;

use crate::{check_capacity, FrameHook, FrameId, HookTable, PageId, Policy, Rejection};

/// No page: the frame is free as far as the wrapper knows. Pages are stored as id + 1 (`slot`),
/// since page 0 is a valid page id.
const NO_PAGE: u64 = 0;

/// How `page` is stored in `pages` and in queue entries: never `NO_PAGE` (ids are below 2^63).
fn slot(page: PageId) -> u64 {
    page.get() + 1
}

/// Source of wrapper ids, the keys of the per-thread queue maps.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's queue for each wrapper it has reported hits to.
    static QUEUES: RefCell<FxHashMap<u64, Vec<Entry>>> = RefCell::new(FxHashMap::default());
}

/// Which of the paper's two techniques are on (for the ablation).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum Variant {
    /// Every hit takes the lock and is forwarded at once: the "locked" baseline.
    None,
    /// Hits are queued and committed in batches; no pre-reading.
    Batching,
    /// Every hit takes the lock, after pre-reading what the critical section reads (`pgPref`).
    Prefetching,
    /// Batching, with the queue pre-read before every lock request.
    #[default]
    Both,
}

impl Variant {
    fn batches(self) -> bool {
        matches!(self, Variant::Batching | Variant::Both)
    }

    fn prefetches(self) -> bool {
        matches!(self, Variant::Prefetching | Variant::Both)
    }
}

/// The wrapper's parameters.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct BpConfig {
    /// Which techniques are on.
    pub variant: Variant,
    /// S: a thread whose queue holds this many entries blocks on the lock to commit.
    pub queue_size: usize,
    /// T: from this many queued entries on, every hit tries the lock without blocking.
    pub batch_threshold: usize,
}

impl Default for BpConfig {
    /// The paper's PostgreSQL setting: S = 64, T = 32, both techniques.
    fn default() -> BpConfig {
        BpConfig { variant: Variant::Both, queue_size: 64, batch_threshold: 32 }
    }
}

/// A [`BpConfig`] the wrapper cannot work with.
#[derive(Copy, Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum BpConfigError {
    /// T must be at least 1 and at most S.
    #[error("batch threshold {threshold} must be between 1 and the queue size {size}; lower it or raise the queue size")]
    Threshold {
        /// The threshold asked for.
        threshold: usize,
        /// The queue size asked for.
        size: usize,
    },
}

/// The wrapper's counters, as read by [`BpWrapper::stats`].
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct BpStats {
    /// Times the lock was taken (by any hook, batched or not).
    pub lock_acquisitions: u64,
    /// Non-blocking attempts of a hit that found the lock taken (the thread went on working).
    pub failed_try_locks: u64,
    /// Blocking acquisitions that found the lock taken and had to wait.
    pub blocking_waits: u64,
    /// Hits (and unfixes) forwarded to the inner policy.
    pub entries_committed: u64,
    /// Queued entries dropped because their frame no longer held their page.
    pub stale_entries_skipped: u64,
}

/// What a queued entry reports.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Access {
    Hit,
    Unfix,
}

/// One queued access: the frame and the page it held then (as `slot`).
#[derive(Copy, Clone, Debug)]
struct Entry {
    frame: FrameId,
    access: Access,
    page: u64,
}

/// The counters. Those outside the lock (`failed_try_locks`) are only bumped on a failure.
#[derive(Default)]
struct Counters {
    lock_acquisitions: AtomicU64,
    failed_try_locks: AtomicU64,
    blocking_waits: AtomicU64,
    entries_committed: AtomicU64,
    stale_entries_skipped: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Wraps a policy whose hits lock so that hits are batched per thread (BP-Wrapper).
pub struct BpWrapper {
    inner: Box<dyn Policy>,
    config: BpConfig,
    /// Key of this wrapper's queue in every thread's map.
    id: u64,
    /// Serializes every call into `inner`; it guards no data of its own.
    lock: Mutex<()>,
    /// Per frame, `slot` of the page it holds (`NO_PAGE` if free); written only under `lock` (module
    /// doc).
    pages: Box<[AtomicU64]>,
    /// The hooks the inner policy is given instead of the pool's.
    hooks: Box<[FrameHook]>,
    counters: Counters,
}

impl BpWrapper {
    /// Wraps `inner`, a policy over frames `0..capacity`, with the default configuration.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(inner: Box<dyn Policy>, capacity: usize) -> BpWrapper {
        BpWrapper::with_config(inner, capacity, BpConfig::default()).expect("the default config is valid")
    }

    /// Wraps `inner` with the given parameters.
    ///
    /// # Errors
    /// [`BpConfigError::Threshold`] unless `1 <= batch_threshold <= queue_size`.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    pub fn with_config(
        inner: Box<dyn Policy>,
        capacity: usize,
        config: BpConfig,
    ) -> Result<BpWrapper, BpConfigError> {
        if config.batch_threshold == 0 || config.batch_threshold > config.queue_size {
            return Err(BpConfigError::Threshold {
                threshold: config.batch_threshold,
                size: config.queue_size,
            });
        }
        check_capacity(capacity);
        Ok(BpWrapper {
            inner,
            config,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            lock: Mutex::new(()),
            pages: (0..capacity).map(|_| AtomicU64::new(NO_PAGE)).collect(),
            hooks: (0..capacity).map(|_| FrameHook::new()).collect(),
            counters: Counters::default(),
        })
    }

    /// The parameters the wrapper was built with.
    #[must_use]
    pub fn config(&self) -> BpConfig {
        self.config
    }

    /// A snapshot of the counters.
    #[must_use]
    pub fn stats(&self) -> BpStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BpStats {
            lock_acquisitions: get(&c.lock_acquisitions),
            failed_try_locks: get(&c.failed_try_locks),
            blocking_waits: get(&c.blocking_waits),
            entries_committed: get(&c.entries_committed),
            stale_entries_skipped: get(&c.stale_entries_skipped),
        }
    }

    /// Commits the calling thread's queue now (for example before the thread exits).
    pub fn flush(&self) {
        let guard = self.lock();
        self.commit_own_queue(&guard);
    }

    /// Whether the inner policy holds `frame`; exact while the caller holds the lock (module doc).
    fn holds(&self, frame: FrameId) -> bool {
        self.pages[frame.index()].load(Ordering::Relaxed) != NO_PAGE
    }

    /// Takes the lock, blocking; counts a wait if it was taken.
    fn lock(&self) -> MutexGuard<'_, ()> {
        let guard = self.lock.try_lock().unwrap_or_else(|| {
            bump(&self.counters.blocking_waits);
            self.lock.lock()
        });
        bump(&self.counters.lock_acquisitions);
        guard
    }

    /// Pre-reads what committing `entries` will read: the entries themselves, each frame's page
    /// id and the hook given to the inner policy. Plain loads, folded into a value the optimizer
    /// must keep; correctness never depends on them, since everything is read again under the lock.
    fn prefetch(&self, entries: &[Entry]) {
        let mut sum = 0u64;
        for entry in entries {
            let index = entry.frame.index();
            sum ^= entry.page ^ self.pages[index].load(Ordering::Relaxed);
            sum = sum.wrapping_add(u64::from(self.hooks[index].get()));
        }
        std::hint::black_box(sum);
    }

    /// Forwards one entry under the lock if its frame still holds its page (R1).
    fn apply(&self, _guard: &MutexGuard<'_, ()>, entry: Entry) {
        let index = entry.frame.index();
        if self.pages[index].load(Ordering::Relaxed) != entry.page {
            bump(&self.counters.stale_entries_skipped);
            return;
        }
        let hook = &self.hooks[index];
        match entry.access {
            Access::Hit => self.inner.on_hit(entry.frame, hook),
            Access::Unfix => self.inner.on_unfix(entry.frame, hook),
        }
        bump(&self.counters.entries_committed);
    }

    /// Commits the calling thread's queue in FIFO order; the caller holds the lock.
    fn commit_own_queue(&self, guard: &MutexGuard<'_, ()>) {
        // The queue leaves the map while the inner policy runs, so that no borrow of the
        // thread-local map is held across foreign code (a nested wrapper uses the same map).
        let mut queue = QUEUES.with(|q| q.borrow_mut().get_mut(&self.id).map(std::mem::take));
        let Some(entries) = queue.as_mut() else {
            return;
        };
        for &entry in entries.iter() {
            self.apply(guard, entry);
        }
        entries.clear();
        QUEUES.with(|q| {
            let mut map = q.borrow_mut();
            let slot = map.entry(self.id).or_default();
            // Keep the allocation unless the slot was refilled meanwhile (it cannot be).
            if slot.is_empty() {
                *slot = queue.unwrap_or_default();
            }
        });
    }

    /// A hit or unfix of a resident frame.
    fn access(&self, frame: FrameId, access: Access) {
        let page = self.pages[frame.index()].load(Ordering::Acquire);
        if page == NO_PAGE {
            return; // not resident as far as the wrapper knows (a pool breaking R1): nothing to do
        }
        let entry = Entry { frame, access, page };
        if !self.config.variant.batches() {
            if self.config.variant.prefetches() {
                self.prefetch(&[entry]);
            }
            let guard = self.lock();
            self.apply(&guard, entry);
            return;
        }
        let len = QUEUES.with(|q| {
            let mut map = q.borrow_mut();
            let queue = map.entry(self.id).or_insert_with(|| Vec::with_capacity(self.config.queue_size));
            queue.push(entry);
            if self.config.variant.prefetches() && queue.len() >= self.config.batch_threshold {
                self.prefetch(queue);
            }
            queue.len()
        });
        if len < self.config.batch_threshold {
            return;
        }
        let guard = match self.lock.try_lock() {
            Some(guard) => {
                bump(&self.counters.lock_acquisitions);
                guard
            }
            None => {
                bump(&self.counters.failed_try_locks);
                if len < self.config.queue_size {
                    return; // keep working; the next hit tries again
                }
                self.lock()
            }
        };
        self.commit_own_queue(&guard);
    }
}

impl Policy for BpWrapper {
    fn name(&self) -> String {
        format!("bpw-{}", self.inner.name())
    }

    fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_own_queue(&guard);
        self.pages[frame.index()].store(slot(page), Ordering::Release);
        self.inner.on_insert(frame, page, &self.hooks[frame.index()]);
    }

    /// Queued (or, without batching, forwarded under the lock).
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        self.access(frame, Access::Hit);
    }

    /// As a hit, if the inner policy wants unfixes.
    fn on_unfix(&self, frame: FrameId, _hook: &FrameHook) {
        if self.inner.uses_unfix() {
            self.access(frame, Access::Unfix);
        }
    }

    fn uses_unfix(&self) -> bool {
        self.inner.uses_unfix()
    }

    /// Commits the caller's queue, then forwards if the inner policy holds the frame: a proposal
    /// can be rejected as
    /// `NotResident` after a concurrent free already removed it, and the inner policy then gets
    /// no hook for a frame it does not hold (R1).
    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_own_queue(&guard);
        if !self.holds(frame) {
            return;
        }
        if why == Rejection::NotResident {
            self.pages[frame.index()].store(NO_PAGE, Ordering::Release);
        }
        self.inner.on_rejected(frame, why, &self.hooks[frame.index()]);
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_own_queue(&guard);
        self.pages[frame.index()].store(NO_PAGE, Ordering::Release);
        self.inner.on_remove(frame, evicted, &self.hooks[frame.index()]);
    }

    /// Commits the caller's queue (the paper commits on the miss path), then asks the inner
    /// policy, over the wrapper's own hooks.
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let guard = self.lock();
        self.commit_own_queue(&guard);
        self.inner.next_candidate(&self.hooks)
    }

    fn on_children(&self, frame: FrameId, swizzled: bool, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_own_queue(&guard);
        if self.holds(frame) {
            self.inner.on_children(frame, swizzled, &self.hooks[frame.index()]);
        }
    }

    fn prefers_sweep(&self) -> bool {
        self.inner.prefers_sweep()
    }

    fn sweep_admits(&self, frame: FrameId, _hook: &FrameHook) -> bool {
        let guard = self.lock();
        self.commit_own_queue(&guard);
        !self.holds(frame) || self.inner.sweep_admits(frame, &self.hooks[frame.index()])
    }
}

impl Drop for BpWrapper {
    /// Frees the dropping thread's queue; other threads' queues go when those threads exit.
    fn drop(&mut self) {
        // `try_with`: the thread-local may already be gone if the wrapper drops during thread exit.
        let _ = QUEUES.try_with(|q| q.borrow_mut().remove(&self.id));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;
    use crate::{Lru, TestHooks};

    /// What the recording inner policy saw.
    #[derive(Default)]
    struct Log {
        /// Frames the policy holds, with their pages.
        tracked: FxHashMap<u32, u64>,
        /// Every hit, as (frame, page held then), in the order received.
        hits: Vec<(u32, u64)>,
    }

    /// An inner policy that panics on any R1 breach (a hook for a frame it does not hold, a double
    /// insert) and records the hits it receives; it proposes its lowest frame.
    #[derive(Default, Clone)]
    struct Recording {
        log: Arc<Mutex<Log>>,
    }

    impl Recording {
        fn check(&self, frame: FrameId) -> u64 {
            *self
                .log
                .lock()
                .tracked
                .get(&frame.0)
                .unwrap_or_else(|| panic!("R1: hook for untracked {frame:?}"))
        }
    }

    impl Policy for Recording {
        fn name(&self) -> String {
            "recording".into()
        }
        fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
            let old = self.log.lock().tracked.insert(frame.0, page.get());
            assert!(old.is_none(), "R1: double insert of {frame:?}");
        }
        fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
            let page = self.check(frame);
            self.log.lock().hits.push((frame.0, page));
        }
        fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
            self.check(frame);
            if why == Rejection::NotResident {
                self.log.lock().tracked.remove(&frame.0);
            }
        }
        fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
            assert!(self.log.lock().tracked.remove(&frame.0).is_some(), "R1: removal of untracked {frame:?}");
        }
        fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
            self.log.lock().tracked.keys().min().map(|&f| FrameId(f))
        }
    }

    fn page(raw: u64) -> PageId {
        PageId::new(raw).unwrap()
    }

    fn small(variant: Variant, inner: Recording) -> BpWrapper {
        let config = BpConfig { variant, queue_size: 4, batch_threshold: 3 };
        BpWrapper::with_config(Box::new(inner), 4, config).unwrap()
    }

    /// Hand-worked, T = 3, S = 4: hits wait in the queue until the third, then reach the inner
    /// policy in FIFO order; a hit queued for page 10 in frame 0 is skipped after another thread
    /// removed that page and loaded page 20 into frame 0, so page 20 never gets it (R1, stale).
    #[test]
    fn r1_hits_commit_in_fifo_order_and_stale_entries_are_skipped() {
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        let policy = small(Variant::Both, inner);
        let h = TestHooks::new(4);
        for (f, p) in [(0, 10), (1, 11), (2, 12)] {
            policy.on_insert(FrameId(f), page(p), &h[f as usize]);
        }
        h.hit(&policy, &[2, 0]);
        assert!(log.lock().hits.is_empty(), "below T nothing is committed");
        h.hit(&policy, &[1]);
        assert_eq!(log.lock().hits, [(2, 12), (0, 10), (1, 11)]);
        // Queue: hit on frame 0 (page 10), then frame 2.
        h.hit(&policy, &[0, 2]);
        std::thread::scope(|s| {
            s.spawn(|| {
                policy.on_remove(FrameId(0), true, &h[0]);
                policy.on_insert(FrameId(0), page(20), &h[0]);
            });
        });
        h.hit(&policy, &[1]);
        assert_eq!(log.lock().hits[3..], [(2, 12), (1, 11)], "the hit for page 10 is not applied to 20");
        let stats = policy.stats();
        assert_eq!(stats.entries_committed, 5);
        assert_eq!(stats.stale_entries_skipped, 1);
        // Insert, insert, insert, batch, remove, insert, batch: no contention.
        assert_eq!(stats.lock_acquisitions, 7);
        assert_eq!((stats.failed_try_locks, stats.blocking_waits), (0, 0));
        // A miss-path hook commits the caller's queue first.
        h.hit(&policy, &[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        assert_eq!(log.lock().hits.last(), Some(&(0, 20)));
    }

    /// Without batching every hit is forwarded at once, each under its own lock acquisition (on
    /// page 0, a valid page id that must not read as "no page").
    #[test]
    fn r1_unbatched_variants_forward_every_hit() {
        for variant in [Variant::None, Variant::Prefetching] {
            let inner = Recording::default();
            let log = Arc::clone(&inner.log);
            let policy = small(variant, inner);
            let h = TestHooks::new(4);
            policy.on_insert(FrameId(3), page(0), &h[3]);
            h.hit(&policy, &[3]);
            assert_eq!(log.lock().hits, [(3, 0)], "{variant:?}");
            assert_eq!(policy.stats().lock_acquisitions, 2);
        }
    }

    /// While another thread holds the lock, hits from T on only try it, and a full queue (S)
    /// blocks until the lock is free, then commits all S entries in order.
    #[test]
    fn failed_try_locks_keep_working_until_the_queue_is_full() {
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        let policy = small(Variant::Batching, inner);
        let h = TestHooks::new(4);
        policy.on_insert(FrameId(1), page(5), &h[1]);
        let locked = AtomicBool::new(false);
        let three_done = AtomicBool::new(false);
        let released = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let held = policy.lock.lock();
                locked.store(true, Ordering::SeqCst);
                while !three_done.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                // Give the main thread time to block; correctness does not depend on it.
                std::thread::sleep(std::time::Duration::from_millis(20));
                released.store(true, Ordering::SeqCst);
                drop(held);
            });
            while !locked.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            h.hit(&policy, &[1, 1, 1]);
            assert_eq!(policy.stats().failed_try_locks, 1, "the third hit tried the lock and went on");
            assert!(log.lock().hits.is_empty());
            three_done.store(true, Ordering::SeqCst);
            h.hit(&policy, &[1]); // the fourth entry fills the queue: blocks
            assert!(released.load(Ordering::SeqCst), "a full queue waits for the lock");
        });
        assert_eq!(log.lock().hits, [(1, 5); 4]);
    }

    #[test]
    fn bad_thresholds_are_refused() {
        for (size, threshold) in [(4, 0), (4, 5)] {
            let config = BpConfig { variant: Variant::Both, queue_size: size, batch_threshold: threshold };
            let err = BpWrapper::with_config(Box::new(Lru::new(2)), 2, config).err();
            assert_eq!(err, Some(BpConfigError::Threshold { threshold, size }));
        }
    }

    /// One frame of the simulated pool: its latch and the page it holds.
    type Frame = Mutex<Option<u64>>;

    /// Four threads hit, load and free pages through the wrapper while one of them also evicts,
    /// every frame under its latch as in the pool. The inner policy panics on any R1 breach, and
    /// after everything is flushed it tracks exactly the pool's resident frames; every queued
    /// entry was either committed or skipped as stale.
    #[test]
    fn r1_concurrent_hits_inserts_and_removes_keep_the_resident_sets_equal() {
        const FRAMES: u32 = 16;
        for variant in [Variant::None, Variant::Batching, Variant::Prefetching, Variant::Both] {
            let inner = Recording::default();
            let log = Arc::clone(&inner.log);
            let config = BpConfig { variant, queue_size: 8, batch_threshold: 4 };
            let policy = BpWrapper::with_config(Box::new(inner), FRAMES as usize, config).unwrap();
            let hooks = TestHooks::new(FRAMES as usize);
            let frames: Vec<Frame> = (0..FRAMES).map(|_| Mutex::new(None)).collect();
            let next_page = AtomicU64::new(1);
            let hits = AtomicU64::new(0);
            std::thread::scope(|s| {
                for thread in 0..4u32 {
                    let (policy, hooks, frames, next_page, hits) =
                        (&policy, &hooks, &frames, &next_page, &hits);
                    s.spawn(move || {
                        let mut x = thread.wrapping_mul(2_654_435_761).wrapping_add(12345);
                        for _ in 0..20_000 {
                            x ^= x << 13;
                            x ^= x >> 17;
                            x ^= x << 5;
                            let f = FrameId(x % FRAMES);
                            let hook = &hooks[f.index()];
                            let mut latch = frames[f.index()].lock();
                            match (x >> 8) % 16 {
                                0 if latch.is_some() => {
                                    policy.on_remove(f, false, hook);
                                    *latch = None;
                                }
                                1 | 2 if latch.is_none() => {
                                    let p = next_page.fetch_add(1, Ordering::Relaxed);
                                    policy.on_insert(f, page(p), hook);
                                    *latch = Some(p);
                                }
                                3 if thread == 0 => {
                                    drop(latch); // R2: only thread 0 proposes
                                    if let Some(v) = policy.next_candidate(hooks) {
                                        let mut latch = frames[v.index()].lock();
                                        if latch.is_some() {
                                            policy.on_remove(v, true, &hooks[v.index()]);
                                            *latch = None;
                                        } else {
                                            policy.on_rejected(v, Rejection::NotResident, &hooks[v.index()]);
                                        }
                                    }
                                }
                                _ if latch.is_some() => {
                                    policy.on_hit(f, hook);
                                    hits.fetch_add(1, Ordering::Relaxed);
                                }
                                _ => {}
                            }
                        }
                        policy.flush();
                    });
                }
            });
            let resident: FxHashMap<u32, u64> =
                (0..FRAMES).filter_map(|f| frames[f as usize].lock().map(|p| (f, p))).collect();
            let log = log.lock();
            assert_eq!(log.tracked, resident, "{variant:?}");
            let stats = policy.stats();
            assert_eq!(stats.entries_committed, log.hits.len() as u64);
            assert_eq!(stats.entries_committed + stats.stale_entries_skipped, hits.load(Ordering::Relaxed));
            let pages: HashSet<u64> = log.hits.iter().map(|&(_, p)| p).collect();
            assert!(!pages.is_empty());
        }
    }
}
