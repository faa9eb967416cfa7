//! BP-Wrapper (README "BP-Wrapper (`bpw-<policy>`, `BpWrapper`)"): batching and prefetching
//! around any policy whose hits take a lock (Ding, Shan & Jiang, TPDS 2015).
//!
//! Every hit, and every insert, is first appended to a private FIFO queue of the calling thread
//! (except hits the inner policy ignores, which are dropped: rule 5). Only when `batch_threshold`
//! accesses have piled up (entries, and hits dropped since the first of them) does the thread ask
//! for the wrapper's lock,
//! without blocking; if the lock is busy it keeps working until the queue is full (`queue_size`),
//! and only then blocks. The queue is committed in FIFO order under the lock, so the inner policy
//! sees each thread's accesses in their order, one lock acquisition per batch. Removals,
//! rejections and proposals take the lock at once and commit the calling thread's queue first, so
//! in a single thread the inner policy sees exactly the unwrapped sequence. An eviction batch
//! (`evict_batch`, R10) holds the lock for the whole batch: the paper's "reclaim F victims under
//! one lock".
//!
//! # Queues
//!
//! The queues live in the wrapper, in [`QUEUE_SLOTS`] cache-line-aligned slots. Thread numbers are
//! returned when a thread ends and reused (`swizzledb_sync::thread`), so live threads have distinct numbers,
//! and a thread numbered below [`QUEUE_SLOTS`] owns slot `number` alone; a thread beyond
//! them (more than 64 alive at once) has no queue and applies each access under the lock, like
//! the unbatched variants. A slot is a ring of `queue_size` entries with one producer and no
//! mutex, which is what makes a hit cheap:
//!
//! - The producer, the owning thread, writes an entry's two words and then advances `tail`
//!   (release). It appends only while fewer than `queue_size` entries are queued: the access
//!   that fills the queue blocks on the lock and commits before the thread goes on.
//! - Consumers hold the wrapper's lock: the owner committing its own queue, or any thread that
//!   drains every queue. A consumer reads `tail` (acquire), applies the entries from `head` to
//!   it, then advances `head` (release). The producer reads `head` (acquire) when it counts its
//!   queue after an append, so a ring position is overwritten only after its entry was read.
//! - Entries are atomics, so even a broken assumption (two producers on one slot) could only mix
//!   up an entry's words; a mixed entry names a frame and a page, and it is applied only if the
//!   frame holds that page (rules 1 and 2 below), so the inner policy's structures stay exact.
//!
//! Keeping the queues reachable is what lets an insert wait in a queue: a frame whose insert is
//! still queued is not yet a candidate, and an evicting thread that runs out of candidates drains
//! the other threads' queues.
//!
//! # Why the inner policy never sees a hook for a frame it does not hold (R1)
//!
//! Each queue entry is `(frame, page the frame held at the access, kind)`. Per frame the wrapper
//! keeps two words, both storing a page as id + 1 so that `NO_PAGE` (0) means none:
//!
//! - `pages[f]`, the frame's current page, published by `on_insert` (the pool calls it under the
//!   frame's exclusive latch, before any other hook for the page) and cleared by `on_remove` and
//!   by an eviction in a batch, both under the lock;
//! - `held[f]`, the page the inner policy holds the frame with, written and read only under the
//!   lock, in the same critical section as the inner `on_insert` / `on_remove` / `NotResident`
//!   rejection that changes it.
//!
//! `held[f]` is always `NO_PAGE` or `pages[f]`: it is set only to an entry's page that equals
//! `pages[f]` (step 2 below), and `pages[f]` changes only while `held[f]` is `NO_PAGE` (a new
//! page is published after the old one's removal cleared both, R1; a removal clears `held[f]`
//! first). So it is stored as one flag next to `pages[f]`, and a frame's words take 16 bytes.
//!
//! Then:
//!
//! 1. An entry is applied under the lock only if `held[f]` is the entry's page; the inner policy
//!    then holds `f` with that page.
//! 2. If `held[f]` is `NO_PAGE` but `pages[f]` is the entry's page, the page's insert is still
//!    queued (in this or another thread's queue). The commit inserts it into the inner policy
//!    first, then applies the entry; the queued insert, when its turn comes, finds the page held
//!    and does nothing more. Any other entry is stale (its frame was emptied or reused) and is
//!    skipped, so an old page's hit never lands on a new page. A frame removed and reloaded with
//!    the same page since the access gets the hit, which is a true hit on that page.
//! 3. `pages[f]` is cleared under the lock before the frame can be reused: by `on_remove`, which
//!    the pool calls before returning the frame to its free list, and inside `evict_batch`,
//!    before the pool frees the batch's victims (R10). So a frame is never republished while an
//!    older removal of it is still unrecorded.
//! 4. Removals, rejections and `sweep_admits` are forwarded only if `held[f]` is not `NO_PAGE`.
//!    `on_remove` clears `pages[f]`, and `held[f]` before it forwards; a `NotResident` rejection
//!    clears `held[f]`; an eviction in a batch clears both (`frames.rs`, `Victims`).
//! 5. A hit is dropped, neither queued nor forwarded, only if the inner policy's
//!    [`Policy::hit_effect`] says the hit would change nothing (next section), now or, for a
//!    policy whose answers are stable, earlier for the same page (section "Hooks"). That answer
//!    is never given for a frame the inner policy does not hold (R5, unless no hit ever changes
//!    anything), so a hit for a page whose insert is still queued is queued as usual.
//!
//! Tests: `r1_bpw_is_invisible_in_one_thread` (`tests/contract.rs`) checks that every variant of
//! `bpw-P` proposes exactly what `P` proposes, for every policy, on random single-threaded
//! histories. `r1_concurrent_hits_inserts_and_removes_keep_the_resident_sets_equal` runs four
//! threads that load, hit and free pages while one evicts in batches, every frame under its
//! latch; after a flush the inner policy holds exactly the pool's resident frames, for every
//! variant. The worked example of rules 1 and 2 is in `commit.rs`.
//!
//! # Hits the inner policy ignores (the paper's Fig. 7)
//!
//! Ding et al. combine BP-Wrapper with a policy whose hot pages need no lock (Oracle's hot FIFO
//! and cold LRU; here [`crate::HotCold`]): a hit on a hot page runs the policy's lock-free code
//! at once and is not queued, and only misses and cold hits fill the queue. The batching
//! variants do this for any inner policy through [`Policy::hit_effect`]: a dropped hit still
//! counts toward the threshold (the paper's `Access_Count`) if the queue holds entries, and does
//! nothing more when it is empty (BP-Wrapper idle). The unbatched variants forward every hit, as
//! the locked baseline should.
//!
//! The answer is read when the hit happens, the queued accesses before it not yet applied. For
//! 2Q (a page outside `Am`) and FIFO (every page) it depends only on the frame's own insert,
//! removal and rejection, which commit the caller's queue first or are queued behind it (rule 5),
//! so in one thread the wrapped policy still sees exactly the unwrapped sequence. For hot/cold
//! it also depends on other pages' promotions, which demote the oldest hot page: a hit on that
//! page dropped while such a promotion waits in the queue would have promoted it again (test
//! `fig7_hot_cold_checks_hotness_at_the_access`). That is the paper's design (the hot check at the
//! access, the commit later), an approximation only while the queue holds entries; the
//! single-thread equivalence test skips hot/cold's batching variants for it.
//!
//! The check reads only the inner policy's state, never the wrapper's words for the frame: the
//! inner policy cleared its state for the frame when it forgot the previous page (under the
//! lock, before the frame was freed, rule 3), the pool's free list and page table order that
//! before any hit on the new page, and only the commit of the new page's insert sets it again.
//! So a hit racing with that commit reads either the cleared state (and is queued) or the state
//! the insert set.
//!
//! # Hooks
//!
//! A queued entry cannot keep the pool's [`FrameHook`], so the wrapper gives the inner policy a
//! private array of hooks, one per frame, for every hook call and as the [`HookTable`] of
//! `next_candidate` (as the simulator does, R7). A policy that keeps its hit state in the hook
//! (CLOCK and kin) gains nothing from this wrapper.
//!
//! The pool's hooks are the wrapper's own. If the inner policy's `Nothing` answers are stable
//! ([`Policy::hit_effects_are_stable`]: 2Q, FIFO), the pool's hook of a frame remembers the
//! definite answer for the frame's page (`HOOK_UNKNOWN`, `HOOK_CHANGES`, `HOOK_NOTHING`): the
//! page's `on_insert` resets it, the first hit that gets a definite answer sets it, and later
//! hits read only that word, in the descriptor line the fix has just loaded, instead of the inner
//! policy's state for the frame: for 2Q a byte in a 9 KiB array (at 8,960 frames) whose lines the
//! committing thread on the other core keeps writing, so that reading it missed (the cycles it
//! cost are in `docs/ding.md`). A stale `Changes` (2Q blocks an `Am` page) only queues a hit that
//! changes nothing; a `Nothing` stays true while the page is held, and the next page starts from
//! `HOOK_UNKNOWN`.
//!
//! # Where the code is
//!
//! `queue.rs` (entries, a thread's ring), `frames.rs` (the words per frame and
//! the batch's evictor), `lock.rs` (the lock and its counted acquisitions), `access.rs` (the
//! producer side: queueing, dropping ignored hits, committing at T), `commit.rs` (the consumer
//! side, under the lock), `stats.rs` and `config.rs`; this file holds the wrapper itself and its
//! [`Policy`] hooks, and `tests.rs` its unit tests. The words per frame and the lock are types
//! of their own (`Frames`, `Lock`) that the wrapper holds, so that neither file imports the
//! wrapper; `access.rs` and `commit.rs` extend the wrapper itself. The rules, in terms of the pool's contract,
//! are in the replacement README ("BP-Wrapper"); what they were measured to cost is in
//! `docs/ding.md`.

mod access;
mod commit;
mod config;
mod frames;
mod lock;
mod queue;
mod stats;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::capacity::check_capacity;
use crate::lazy::LazyCells;

use crate::policy::{Evictor, FrameHook, HookTable, Policy, Rejection};

use swizzledb_sync::{FrameId, PageId};

pub use config::{BpConfig, BpConfigError, Variant, MAX_QUEUE_SIZE};
pub use queue::QUEUE_SLOTS;
pub use stats::BpStats;

use frames::{slot, FrameWords, Frames, Victims, NO_PAGE};
use lock::{Guard, Lock};
use queue::{Access, Entry, Slot};
use stats::Counters;
use swizzledb_sync::thread::thread_number;

/// Values of a pool hook (module doc, "Hooks"): the inner policy's answer for the frame's page
/// is not known yet; a hit on it changes something; a hit on it changes nothing.
const HOOK_UNKNOWN: u32 = 0;
const HOOK_CHANGES: u32 = 1;
const HOOK_NOTHING: u32 = 2;

/// Wraps a policy whose hits lock so that accesses are batched per thread (BP-Wrapper).
pub struct BpWrapper {
    inner: Box<dyn Policy>,
    config: BpConfig,
    /// Whether hits can be dropped: batching, and an inner policy that ignores some hits.
    drops_hits: bool,
    /// Whether the inner policy's answers are remembered in the pool's hooks: hits are dropped
    /// and its `Nothing` answers are stable (module doc, "Hooks").
    caches_effects: bool,
    /// Serializes every call into `inner` (`lock.rs`).
    lock: Lock,
    /// Per frame, its words (`pages[f]`, `held[f]` and the inner policy's hook of the module doc)
    /// together, so that an access, its commit and the inner policy's hook share one cache line.
    frames: Frames,
    /// The per-thread queues.
    queues: Box<[Slot]>,
    counters: Counters,
    /// Proposals of `next_candidate` refused in a row (`on_rejected`; an eviction resets it),
    /// `usize::MAX` after one refused as a root: at the capacity, the next proposal drains
    /// first (step 6, as `Victims` does for a batch). Written under the lock.
    refused: AtomicUsize,
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
    /// [`BpConfigError::Threshold`] unless `1 <= batch_threshold <= queue_size`;
    /// [`BpConfigError::QueueSize`] above [`MAX_QUEUE_SIZE`].
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    pub fn with_config(
        inner: Box<dyn Policy>,
        capacity: usize,
        config: BpConfig,
    ) -> Result<BpWrapper, BpConfigError> {
        config.check()?;
        check_capacity(capacity);
        Ok(BpWrapper {
            drops_hits: config.variant.batches() && inner.ignores_some_hits(),
            caches_effects: config.variant.batches()
                && inner.ignores_some_hits()
                && inner.hit_effects_are_stable(),
            inner,
            config,
            lock: Lock::new(),
            frames: Frames(LazyCells::new(capacity, FrameWords::default)),
            queues: (0..QUEUE_SLOTS).map(|_| Slot::new(config.queue_size)).collect(),
            counters: Counters::default(),
            refused: AtomicUsize::new(0),
        })
    }

    /// The parameters the wrapper was built with.
    #[must_use]
    pub fn config(&self) -> BpConfig {
        self.config
    }

    /// A snapshot of the counters. Takes each queue slot's mutex briefly, never the lock.
    #[must_use]
    pub fn stats(&self) -> BpStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let queued: u64 = self.queues.iter().map(|q| q.accesses.load(Ordering::Relaxed)).sum();
        let dropped: u64 = self.queues.iter().map(|q| q.dropped.load(Ordering::Relaxed)).sum();
        BpStats {
            accesses: queued + get(&c.locked_accesses),
            lock_acquisitions: get(&c.lock_acquisitions),
            failed_try_locks: get(&c.failed_try_locks),
            blocking_waits: get(&c.blocking_waits),
            entries_committed: get(&c.entries_committed),
            stale_entries_skipped: get(&c.stale_entries_skipped),
            dropped_hits: dropped,
            timed_holds: get(&c.timed_holds),
            timed_hold_nanos: get(&c.timed_hold_nanos),
            wait_nanos: get(&c.wait_nanos),
        }
    }

    /// Commits every thread's queue now, so that the inner policy has seen every access reported
    /// so far (for example before comparing its resident set with the pool's).
    pub fn flush(&self) {
        let guard = self.lock();
        self.commit_all(&guard);
    }

    /// The calling thread's queue slot, if its number has one (module doc, "Queues").
    fn my_queue(&self) -> Option<&Slot> {
        thread_number().and_then(|n| self.queues.get(n))
    }

    /// Takes the lock, blocking (`Lock::lock`).
    #[inline]
    fn lock(&self) -> Guard<'_> {
        self.lock.lock(&self.counters)
    }

    /// Takes the lock for an eviction batch, spinning briefly first (`Lock::lock_for_eviction`).
    #[inline]
    fn lock_for_eviction(&self) -> Guard<'_> {
        self.lock.lock_for_eviction(&self.counters)
    }
}

impl Policy for BpWrapper {
    fn name(&self) -> String {
        format!("{}{}", self.config.variant.prefix(), self.inner.name())
    }

    /// Publishes the frame's page, then queues the insert like a hit (the paper's miss path
    /// records a page taken from a free list "like a hit").
    /// The pool's hook forgets what it remembered of the frame's previous page (module doc,
    /// "Hooks").
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        if self.caches_effects {
            hook.set(HOOK_UNKNOWN);
        }
        self.frames.0.cell(frame.index()).page.store(slot(page), Ordering::Release);
        self.access(frame, Access::Insert, hook);
    }

    /// Queued (or, without batching, forwarded under the lock).
    fn on_hit(&self, frame: FrameId, hook: &FrameHook) {
        self.access(frame, Access::Hit, hook);
    }

    /// As `on_hit`, with the page the pool named instead of the frame's `pages[f]`, which costs a
    /// cache miss. An entry whose page the frame does not hold is skipped at commit (rule 2), as
    /// for any stale entry.
    fn on_page_hit(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        self.queue_access(Entry { frame, access: Access::Hit, page: slot(page) }, hook);
    }

    /// As a hit, if the inner policy wants unfixes.
    fn on_unfix(&self, frame: FrameId, hook: &FrameHook) {
        if self.inner.uses_unfix() {
            self.access(frame, Access::Unfix, hook);
        }
    }

    fn uses_unfix(&self) -> bool {
        self.inner.uses_unfix()
    }

    /// Commits the caller's queue, then forwards if the inner policy holds the frame: a proposal
    /// can be rejected as `NotResident` after a concurrent free already removed it, and the inner
    /// policy then gets no hook for a frame it does not hold (R1).
    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_mine(&guard);
        let index = frame.index();
        let refused = if why == Rejection::Root { usize::MAX } else { self.refused.load(Ordering::Relaxed) };
        self.refused.store(refused.saturating_add(1), Ordering::Relaxed);
        if self.frames.held(index) == NO_PAGE {
            return;
        }
        if why == Rejection::NotResident {
            self.frames.set_held(index, NO_PAGE);
        }
        self.inner.on_rejected(frame, why, &self.frames.0.cell(index).hook);
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_mine(&guard);
        let index = frame.index();
        let held = self.frames.held(index);
        if evicted {
            self.refused.store(0, Ordering::Relaxed);
        }
        self.frames.set_held(index, NO_PAGE);
        self.frames.0.cell(index).page.store(NO_PAGE, Ordering::Release);
        if held != NO_PAGE {
            self.inner.on_remove(frame, evicted, &self.frames.0.cell(index).hook);
        }
    }

    /// Commits the caller's queue (the paper commits on the miss path), then asks the inner
    /// policy, over the wrapper's own hooks. If it is out of candidates in all but name — a
    /// proposal was refused as a root (R3) or as many in a row as there are frames since the
    /// last eviction — every queue is committed first (step 6).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let guard = self.lock();
        self.commit_mine(&guard);
        let mut drained = false;
        if self.refused.load(Ordering::Relaxed) >= self.frames.0.len() {
            self.refused.store(0, Ordering::Relaxed);
            self.commit_all(&guard);
            drained = true;
        }
        self.inner_candidate(&guard, &mut drained)
    }

    /// The whole batch under one acquisition of the lock (R10): the caller's queue is committed,
    /// then the inner policy runs its own batch (`evict_batch`) over the pool's evictor, seen
    /// through `Victims`, which updates the wrapper's words for each verdict before the inner
    /// policy records it. If the inner policy runs out of candidates — proposes nothing, or
    /// only what the pool keeps refusing: a root, which it proposes only when no unblocked
    /// frame is left (R3, R4), or frames the caller holds latched — every queue is committed (a
    /// frame whose insert is still queued is resident too, R4) and it is asked once more with
    /// the rest of the budget. Hooks the pool reports while trying a victim (a parent losing its
    /// last swizzled child) are queued as usual and may commit in the middle of the batch: the
    /// lock is reentrant.
    fn evict_batch(&self, _hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        let guard = self.lock_for_eviction();
        self.commit_mine(&guard);
        let mut victims = Victims::new(&self.frames, evictor, max_proposals);
        let mut proposals = self.inner.evict_batch(&self.frames, &mut victims, max_proposals);
        victims.patience = None;
        if proposals < max_proposals && victims.pool.wants_more() {
            self.commit_all(&guard);
            proposals += self.inner.evict_batch(&self.frames, &mut victims, max_proposals - proposals);
        }
        proposals
    }

    /// Holds the lock, taken as for an eviction batch (it spins briefly before blocking), while
    /// `work` runs; the hooks `work` makes take it again without counting (reentrant).
    fn hold_lock_for(&self, work: &mut dyn FnMut()) {
        let _guard = self.lock_for_eviction();
        work();
    }

    /// Queued like a hit (the pool calls it under the frame's exclusive latch, R8).
    fn on_children(&self, frame: FrameId, swizzled: bool, hook: &FrameHook) {
        self.access(frame, Access::Children(swizzled), hook);
    }

    fn prefers_sweep(&self) -> bool {
        self.inner.prefers_sweep()
    }

    fn lock_stats(&self) -> Option<BpStats> {
        Some(self.stats())
    }

    /// Prefetches the frames' records, which `on_insert` writes. The hint is not passed on: the
    /// inner policy sees these accesses only at the next commit, which prefetches for it then
    /// (trying its lock now would only contend with a committing thread).
    fn prefetch_accesses(&self, frames: &[FrameId], _inserted: &[PageId]) {
        for frame in frames {
            if let Some(words) = self.frames.0.get(frame.index()) {
                swizzledb_sync::hint::prefetch(words);
            }
        }
    }

    /// The inner policy's guess (the caller holds the lock during a batch: it is reentrant).
    fn candidate_after(&self, frame: FrameId, _hooks: &dyn HookTable) -> Option<FrameId> {
        let _guard = self.lock();
        self.inner.candidate_after(frame, &self.frames)
    }

    fn sweep_admits(&self, frame: FrameId, _hook: &FrameHook) -> bool {
        let guard = self.lock();
        self.commit_mine(&guard);
        let held = self.frames.held(frame.index()) != NO_PAGE;
        !held || self.inner.sweep_admits(frame, &self.frames.0.cell(frame.index()).hook)
    }
}
