//! Buffer-pool counters: per thread, single writer, aggregated on demand (rule B12).
//!
//! Each thread that touches a pool gets its own block of counters. Only that thread writes them,
//! with a plain load + store (no read-modify-write), so counting costs no shared cache-line
//! traffic. [`crate::BufferPool::stats`] sums all blocks.

use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{fence, AtomicU64, Ordering::Acquire, Ordering::Relaxed};
use std::sync::Arc;

macro_rules! counters {
    ($($name:ident: $doc:literal),* $(,)?) => {
        /// A snapshot of the pool's counters, summed over all threads.
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Stats {
            $(#[doc = $doc] pub $name: u64,)*
        }

        /// One thread's counters.
        #[derive(Default, Debug)]
        pub(crate) struct Block {
            $(pub(crate) $name: AtomicU64,)*
        }

        impl Block {
            fn add_to(&self, s: &mut Stats) {
                $(s.$name += self.$name.load(Relaxed);)*
            }
        }

        impl Stats {
            /// Counts that happened between `earlier` and `self`.
            #[must_use]
            pub fn since(&self, earlier: &Stats) -> Stats {
                Stats { $($name: self.$name.saturating_sub(earlier.$name),)* }
            }
        }
    };
}

counters! {
    fixes: "Page fixes (root and non-root).",
    hits: "Fixes that found the page resident.",
    misses: "Fixes that had to read the page.",
    page_table_lookups: "Lookups in the page table (page id -> frame).",
    swizzles: "Swips turned into frame references.",
    optimistic_reads: "Pages read without a latch on an optimistic descent (B24: inner nodes; B33: leaves too, with optimistic leaf reads on); also counted as fixes and hits.",
    optimistic_restarts: "Optimistic descents started again because a page changed under them (B24).",
    unlatched_loads: "Misses of optimistic descents read with no latch held (B32); counted as fixes and misses, and the latched step that follows is the same fix, not counted again.",
    unswizzles: "Swips turned back into page ids (on eviction).",
    evictions: "Frames freed by eviction.",
    write_backs: "Dirty pages written (eviction and flush).",
    wal_flushes: "Calls of `LogFlush::flush_to` by the pool before page writes (WAL rule, B18).",
    rejected_wal: "Eviction victims kept because the log could not be flushed to their page LSN (B18).",
    pages_read: "Pages read from the file.",
    pages_written: "Pages written to the file (including metadata and free-chain pages).",
    elided_writes: "Dirty pages evicted without being written (write elision, B27); the log rebuilds them when read.",
    pages_repaired: "Pages read damaged or stale and rebuilt from the log by single-page recovery (B25), then written back.",
    eviction_rounds: "Batches run by the evicting thread (B13): each one call of the evictioner.",
    eviction_nanos: "Wall-clock nanoseconds spent in eviction batches, sweeps included.",
    free_frame_waits: "Requests for a free frame (misses, and allocations of new pages) that found the free list empty and blocked on the eviction lock (B13); not a subset of `misses`.",
    free_frame_wait_nanos: "Nanoseconds the requests counted in `free_frame_waits` spent waiting for the eviction lock (B13).",
    read_nanos: "Nanoseconds misses spent reading (and checking) the page they load (B29).",
    deferred_writes: "Dirty eviction victims left latched by no one and written after the eviction lock was released (B29), instead of under it.",
    victim_writes: "Dirty eviction victims written back after their batch (B29), in page order; also counted in `write_backs`.",
    victim_write_nanos: "Nanoseconds the evicting threads spent writing deferred victims (B29), the WAL flush included.",
    evictor_rounds: "Rounds of the background evictor (B31): each woken by a miss, evicting until its target of free frames.",
    evictor_evictions: "Frames the background evictor freed (B31); also counted in `evictions`.",
    evictor_writes: "Dirty victims the background evictor wrote (B31); also counted in `victim_writes`.",
    evictor_failures: "Rounds of the background evictor that ended in an error (the log refused, a write failed); it backs off and tries again.",
    proposals: "Candidates the policy proposed.",
    rejected_in_use: "Proposals refused because a latch on the frame or its parent was held.",
    rejected_root: "Proposals refused because the frame holds a tree root.",
    rejected_swizzled_children: "Proposals refused because the page has swizzled children.",
    rejected_not_resident: "Proposals refused because the frame held no page any more.",
    sweep_evictions: "Frames freed by the depth-first sweep (B14) rather than by a proposal.",
    sweep_refusals: "Leaves the sweep found but the policy refused (recently used, R9).",
    policy_lock_acquisitions: "Acquisitions of the policy's instrumented lock (BP-Wrapper, `locked-`; 0 otherwise).",
    policy_lock_failed_tries: "Non-blocking attempts on the policy's lock that found it taken.",
    policy_lock_waits: "Blocking acquisitions of the policy's lock that had to wait (contention).",
    policy_lock_timed_holds: "Acquisitions of the policy's lock whose hold time was sampled.",
    policy_lock_hold_nanos: "Nanoseconds the sampled acquisitions held the policy's lock.",
    policy_accesses: "Page accesses (hits and inserts) reported to the instrumented policy; root fixes are not reported.",
    policy_dropped_hits: "Hits BP-Wrapper neither queued nor forwarded because the policy ignores them (2Q's A1in, hot/cold's hot pages; Ding et al. Fig. 7).",
    timed_hits_shared: "Fixes timed (`time_fixes`, B12a) that hit, with a shared latch.",
    hit_shared_nanos: "Nanoseconds of the timed shared-latch hits.",
    timed_hits_exclusive: "Fixes timed that hit, with an exclusive latch.",
    hit_exclusive_nanos: "Nanoseconds of the timed exclusive-latch hits.",
    timed_misses_shared: "Fixes timed that missed (read the page), with a shared latch.",
    miss_shared_nanos: "Nanoseconds of the timed shared-latch misses (eviction and the read included).",
    timed_misses_exclusive: "Fixes timed that missed, with an exclusive latch.",
    miss_exclusive_nanos: "Nanoseconds of the timed exclusive-latch misses.",
    policy_lock_wait_nanos: "Nanoseconds threads spent blocked in `policy_lock_waits` (every wait timed): with the hold time, what the policy's lock costs per access (Ding et al. Fig. 4).",
}

/// Adds one to a counter owned by the current thread (single writer: load + store).
#[inline]
pub(crate) fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed) + 1, Relaxed);
}

/// Adds `n` to a counter owned by the current thread (single writer: load + store).
#[inline]
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

/// The registry of one pool's per-thread blocks.
#[derive(Default, Debug)]
pub(crate) struct Registry {
    id: u64,
    blocks: Mutex<Blocks>,
}

/// The blocks of the threads that may still count, and what the exited ones counted (B12).
#[derive(Default, Debug)]
struct Blocks {
    live: Vec<Arc<Block>>,
    exited: Stats,
}

impl Blocks {
    /// Folds the blocks of threads that have exited into `exited` (B12): a block only the
    /// registry holds any more is one whose thread dropped its list, so no one writes it again.
    /// Without this, a process whose threads come and go (a thread per connection) kept one
    /// block per thread it ever ran, and every `stats()` read them all.
    fn fold_exited(&mut self) {
        let exited = &mut self.exited;
        self.live.retain(|b| {
            if Arc::strong_count(b) > 1 {
                return true;
            }
            // The thread let its `Arc` go (a release decrement) after its last count.
            fence(Acquire);
            b.add_to(exited);
            false
        });
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// This thread's blocks, one per registry (pool) it has counted in. Dropping it (at thread
/// exit) forgets `LAST` first.
struct Local(RefCell<Vec<(u64, Arc<Block>)>>);

impl Drop for Local {
    fn drop(&mut self) {
        LAST.with(|l| l.set((0, std::ptr::null())));
    }
}

thread_local! {
    static LOCAL: Local = const { Local(RefCell::new(Vec::new())) };
    /// B12: the registry id and block `with` used last on this thread (id 0: none), so that a
    /// thread counting in one pool finds its block without searching `LOCAL`.
    static LAST: Cell<(u64, *const Block)> = const { Cell::new((0, std::ptr::null())) };
}

impl Registry {
    pub(crate) fn new() -> Registry {
        Registry { id: NEXT_ID.fetch_add(1, Relaxed), blocks: Mutex::new(Blocks::default()) }
    }

    /// This registry's id, unique in the process (ids are never reused): its pool's name in
    /// per-thread state (B12, B32).
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Runs `f` with the current thread's block, creating it on first use.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&Block) -> R) -> R {
        let (id, block) = LAST.with(Cell::get);
        if id == self.id {
            // B12: `LOCAL` holds this block's `Arc` (it drops entries only in `with_slow`, which
            // resets `LAST`, and forgets `LAST` when dropped); ids are never reused.
            // SAFETY: B12 — `LAST` names a live block of this registry, as said above.
            return f(unsafe { &*block });
        }
        self.with_slow(f)
    }

    /// `with` when the block is not the one used last: search this thread's blocks, or make one.
    #[cold]
    #[inline(never)]
    fn with_slow<R>(&self, f: impl FnOnce(&Block) -> R) -> R {
        LOCAL.with(|local| {
            let mut local = local.0.borrow_mut();
            if let Some((_, b)) = local.iter().find(|(id, _)| *id == self.id) {
                LAST.with(|l| l.set((self.id, Arc::as_ptr(b))));
                return f(b);
            }
            let b = Arc::new(Block::default());
            {
                let mut blocks = self.blocks.lock();
                blocks.fold_exited();
                blocks.live.push(Arc::clone(&b));
            }
            // Forget blocks of pools that are gone (only this thread's list holds them).
            local.retain(|(_, b)| Arc::strong_count(b) > 1);
            local.push((self.id, Arc::clone(&b)));
            LAST.with(|l| l.set((self.id, Arc::as_ptr(&b))));
            f(&b)
        })
    }

    /// Sums every thread's counters.
    pub(crate) fn snapshot(&self) -> Stats {
        let mut blocks = self.blocks.lock();
        blocks.fold_exited();
        let mut s = blocks.exited;
        for b in &blocks.live {
            b.add_to(&mut s);
        }
        s
    }

    /// How many blocks the registry holds for threads that may still count (tests of B12).
    #[cfg(test)]
    fn live_blocks(&self) -> usize {
        self.blocks.lock().live.len()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.blocks.lock().live.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b12_counts_from_many_threads_add_up() {
        let r = Arc::new(Registry::new());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let r = Arc::clone(&r);
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        r.with(|b| bump(&b.fixes));
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        r.with(|b| bump(&b.hits));
        let s = r.snapshot();
        assert_eq!(s.fixes, 4000);
        assert_eq!(s.hits, 1);
        assert_eq!(s.since(&Stats { fixes: 1000, ..Stats::default() }).fixes, 3000);
    }

    /// B12: the blocks of threads that exited are folded into the registry's totals, so a
    /// process whose threads come and go keeps a block per live thread, not one per thread it
    /// ever ran, and loses no count.
    #[test]
    fn b12_threads_that_come_and_go_leave_their_counts_and_not_their_blocks() {
        let r = Arc::new(Registry::new());
        for _ in 0..500 {
            let r = Arc::clone(&r);
            std::thread::spawn(move || {
                for _ in 0..10 {
                    r.with(|b| bump(&b.fixes));
                }
            })
            .join()
            .expect("no panic");
        }
        assert_eq!(r.snapshot().fixes, 5000);
        assert_eq!(r.live_blocks(), 0, "every counting thread has exited");
        r.with(|b| bump(&b.hits));
        assert_eq!(r.live_blocks(), 1);
        let s = r.snapshot();
        assert_eq!((s.fixes, s.hits), (5000, 1));
    }

    /// B12: one thread counting in several pools in turn, while pools come and go, credits every
    /// count to the pool it was made in (the last-used block is only a shortcut).
    #[test]
    fn b12_a_thread_alternating_between_pools_counts_each_in_its_own() {
        let a = Registry::new();
        let mut gone = Some(Registry::new());
        for i in 0..100 {
            a.with(|blk| bump(&blk.fixes));
            if let Some(g) = &gone {
                g.with(|blk| bump(&blk.hits));
            }
            if i == 50 {
                gone = None; // a pool dropped between counts
            }
            let c = Registry::new();
            c.with(|blk| add(&blk.misses, 7));
            assert_eq!(c.snapshot().misses, 7);
        }
        assert_eq!(a.snapshot().fixes, 100);
        assert_eq!(a.snapshot().hits, 0);
    }
}
