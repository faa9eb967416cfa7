//! BP-Wrapper (README "BP-Wrapper (`bpw-<policy>`)"): batching and prefetching around any policy
//! whose hits take a lock (Ding, Shan & Jiang, TPDS 2015).
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
//! handed out smallest-free-first and returned when a thread ends, so live threads have distinct
//! numbers, and a thread numbered below [`QUEUE_SLOTS`] owns slot `number` alone; a thread beyond
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
//!    skipped, so an old page's hit never lands on a new page.
//! 3. `pages[f]` is cleared under the lock before the frame can be reused: by `on_remove`, which
//!    the pool calls before returning the frame to its free list, and inside `evict_batch`,
//!    before the pool frees the batch's victims (R10). So a frame is never republished while an
//!    older removal of it is still unrecorded.
//! 4. Removals, rejections and `sweep_admits` are forwarded only if `held[f]` is not `NO_PAGE`.
//! 5. A hit is dropped, neither queued nor forwarded, only if the inner policy's
//!    [`Policy::hit_effect`] says the hit would change nothing (next section), now or, for a
//!    policy whose answers are stable, earlier for the same page (section "Hooks"). That answer
//!    is never given for a frame the inner policy does not hold (R5, unless no hit ever changes
//!    anything), so a hit for a page whose insert is still queued is queued as usual.
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
//! page dropped while such a promotion waits in the queue would have promoted it again. That is
//! the paper's design (the hot check at the access, the commit later), an approximation only
//! while the queue holds entries.
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
//! hits read only that word, in the descriptor line the fix has just loaded. A stale `Changes`
//! only queues a hit that changes nothing; a `Nothing` stays true while the page is held.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, ReentrantMutex, ReentrantMutexGuard};

use crate::{
    check_capacity, Evictor, FrameHook, FrameId, HitEffect, HookTable, PageId, Policy, QueuedHook, Rejection,
    Verdict,
};

/// Values of a pool hook (module doc, "Hooks"): the inner policy's answer for the frame's page
/// is not known yet; a hit on it changes something; a hit on it changes nothing.
const HOOK_UNKNOWN: u32 = 0;
const HOOK_CHANGES: u32 = 1;
const HOOK_NOTHING: u32 = 2;

/// No page: the frame is free as far as the wrapper knows. Pages are stored as id + 1 (`slot`),
/// since page 0 is a valid page id.
const NO_PAGE: u64 = 0;

/// How `page` is stored in `pages`, `held` and queue entries: never `NO_PAGE` (ids are below 2^63).
fn slot(page: PageId) -> u64 {
    page.get() + 1
}

/// The page a stored word names (which is not `NO_PAGE`).
fn unslot(word: u64) -> PageId {
    PageId::new(word - 1).expect("a stored page id is a valid page id")
}

/// Per-thread queues per wrapper; a thread numbered beyond them applies accesses under the lock
/// (module doc).
pub const QUEUE_SLOTS: usize = 64;

/// One lock acquisition in this many is timed, for the hold-time estimate (two clock reads per
/// acquisition would lengthen the critical section they measure).
const HOLD_SAMPLE: u64 = 16;

/// Queued entries handed to the inner policy's `prefetch_accesses` at a time (a stack buffer).
const PREFETCH_CHUNK: usize = 64;

/// `try_lock` attempts of an eviction batch, 64 spin hints apart (several microseconds in all),
/// before it blocks on the lock.
const EVICTION_SPINS: usize = 20;

/// Source of new thread numbers, which pick a thread's queue slot.
static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

/// Numbers of threads that have ended, for reuse: the numbers of live threads are distinct and
/// stay below the largest number of threads alive at once.
static FREE_NUMBERS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A thread's number, returned for reuse when the thread ends.
struct ThreadNumber(usize);

impl ThreadNumber {
    fn take() -> ThreadNumber {
        let reused = FREE_NUMBERS.lock().pop();
        ThreadNumber(reused.unwrap_or_else(|| NEXT_THREAD.fetch_add(1, Ordering::Relaxed)))
    }
}

impl Drop for ThreadNumber {
    fn drop(&mut self) {
        // Forgotten by the fast path before it is handed to another thread.
        let _ = CACHED_NUMBER.try_with(|n| n.set(NO_NUMBER));
        FREE_NUMBERS.lock().push(self.0);
    }
}

/// `CACHED_NUMBER` before the thread's number is taken, and after it was returned.
const NO_NUMBER: usize = usize::MAX;

thread_local! {
    /// This thread's number, taken on first use.
    static THREAD_NUMBER: ThreadNumber = ThreadNumber::take();
    /// A copy of this thread's number while it holds one: a constant-initialized word without a
    /// destructor, so reading it is one load (`THREAD_NUMBER` has a destructor, and every access
    /// to it checks whether it is alive).
    static CACHED_NUMBER: std::cell::Cell<usize> = const { std::cell::Cell::new(NO_NUMBER) };
}

/// The calling thread's number; `None` while the thread is being torn down.
fn thread_number() -> Option<usize> {
    let cached = CACHED_NUMBER.get();
    if cached != NO_NUMBER {
        return Some(cached);
    }
    let number = THREAD_NUMBER.try_with(|n| n.0).ok()?;
    CACHED_NUMBER.set(number);
    Some(number)
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
    /// T: from this many queued entries on, every access tries the lock without blocking.
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

/// What a queued entry reports.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Access {
    Insert,
    Hit,
    Unfix,
    Children(bool),
}

/// One queued access: the frame and the page it held then (as `slot`).
#[derive(Copy, Clone, Debug)]
struct Entry {
    frame: FrameId,
    access: Access,
    page: u64,
}

/// An entry's kind, as stored in the high half of its second word.
const KIND_INSERT: u64 = 0;
const KIND_HIT: u64 = 1;
const KIND_UNFIX: u64 = 2;
const KIND_CHILDREN: u64 = 3;
const KIND_CHILDREN_SWIZZLED: u64 = 4;

/// The frame a stored kind word names (its low half).
#[inline(always)]
fn word_frame(word: u64) -> FrameId {
    // The truncation is the point.
    #[allow(clippy::cast_possible_truncation)]
    FrameId(word as u32)
}

impl Entry {
    /// The entry's second word: frame index in the low half, kind above it.
    #[inline(always)]
    fn kind_word(self) -> u64 {
        let kind = match self.access {
            Access::Insert => KIND_INSERT,
            Access::Hit => KIND_HIT,
            Access::Unfix => KIND_UNFIX,
            Access::Children(false) => KIND_CHILDREN,
            Access::Children(true) => KIND_CHILDREN_SWIZZLED,
        };
        (kind << 32) | u64::from(self.frame.0)
    }

    /// The entry stored as `page` and `kind_word`.
    #[inline(always)]
    fn decode(page: u64, word: u64) -> Entry {
        let access = match word >> 32 {
            KIND_INSERT => Access::Insert,
            KIND_HIT => Access::Hit,
            KIND_UNFIX => Access::Unfix,
            KIND_CHILDREN => Access::Children(false),
            _ => Access::Children(true),
        };
        Entry { frame: word_frame(word), access, page }
    }
}

/// One thread's queue (module doc, "Queues"): a ring of `queue_size` entries with one producer,
/// the thread whose number is the slot's, and consumers that hold the wrapper's lock.
#[repr(align(128))]
struct Slot {
    /// Entries ever queued: written by the producer only (release), after the entry's words.
    tail: AtomicUsize,
    /// Entries ever committed: written under the lock only (release), after reading them.
    head: AtomicUsize,
    /// Page accesses (hits and inserts) reported by the owner, ever, queued or not: written by
    /// the producer only.
    accesses: AtomicU64,
    /// Hits the owner dropped because the inner policy ignores them (module doc, "Hits the inner
    /// policy ignores"), ever: written by the producer only.
    dropped: AtomicU64,
    /// Hits dropped while the queue held entries, since the owner's last commit: the part of the
    /// paper's `Access_Count` (Fig. 7) that is not in the queue. Producer only.
    dropped_since: AtomicUsize,
    /// Entry `i` is in `ring[i & mask]`: its page word and its kind word. At least `queue_size`
    /// positions, a power of two so that no division is needed.
    ring: Box<[[AtomicU64; 2]]>,
    mask: usize,
}

impl Slot {
    fn new(size: usize) -> Slot {
        let positions = size.next_power_of_two();
        Slot {
            tail: AtomicUsize::new(0),
            head: AtomicUsize::new(0),
            accesses: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            dropped_since: AtomicUsize::new(0),
            ring: (0..positions).map(|_| [AtomicU64::new(0), AtomicU64::new(0)]).collect(),
            mask: positions - 1,
        }
    }

    /// Appends `entry` (the producer; the queue is not full); returns the queue's length.
    #[inline(always)]
    fn push(&self, entry: Entry, counts: bool) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        let words = &self.ring[tail & self.mask];
        words[0].store(entry.page, Ordering::Relaxed);
        words[1].store(entry.kind_word(), Ordering::Relaxed);
        self.tail.store(tail + 1, Ordering::Release);
        if counts {
            bump_own(&self.accesses);
        }
        tail + 1 - self.head.load(Ordering::Acquire)
    }

    /// Counts a dropped hit (the producer); returns the paper's `Access_Count` and the queue's
    /// length, or `None` if the queue is empty (BP-Wrapper is idle, Fig. 7).
    fn drop_hit(&self) -> Option<(usize, usize)> {
        bump_own(&self.accesses);
        bump_own(&self.dropped);
        let len = self.tail.load(Ordering::Relaxed) - self.head.load(Ordering::Acquire);
        if len == 0 {
            self.dropped_since.store(0, Ordering::Relaxed);
            return None;
        }
        let since = self.dropped_since.load(Ordering::Relaxed) + 1;
        self.dropped_since.store(since, Ordering::Relaxed);
        Some((len + since, len))
    }

    /// Entry `i` (between head and the tail read with acquire) as stored: its page word and its
    /// kind word.
    #[inline(always)]
    fn words(&self, i: usize) -> (u64, u64) {
        let words = &self.ring[i & self.mask];
        (words[0].load(Ordering::Relaxed), words[1].load(Ordering::Relaxed))
    }
}

/// A frame's words in the wrapper (module doc): four per frame to a cache line.
#[repr(align(16))]
#[derive(Default)]
struct FrameWords {
    /// `slot` of the frame's current page (`NO_PAGE` if none): `pages[f]`.
    page: AtomicU64,
    /// The hook the inner policy is given instead of the pool's.
    hook: FrameHook,
    /// Whether the inner policy holds the frame, with page `pages[f]` (`held[f]` is then
    /// `pages[f]`, else `NO_PAGE`; module doc, rule 3). Written and read under the lock only.
    held: AtomicBool,
}

const _: () = assert!(std::mem::size_of::<FrameWords>() == 16);

/// Every frame's words; the inner policy's hook table.
struct Frames(Box<[FrameWords]>);

impl HookTable for Frames {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self.0[frame.index()].hook
    }
}

/// The pool's evictor as the inner policy's batch sees it (`evict_batch`, step 4): a verdict
/// first updates the wrapper's words for the frame (an eviction clears `held[f]` and `pages[f]`,
/// rule 3; a `NotResident` rejection clears `held[f]`), and then the inner policy records it.
/// The pool frees the batch's victims only after the batch (R10), so no frame is republished
/// before its removal is recorded.
struct Victims<'a> {
    wrapper: &'a BpWrapper,
    pool: &'a mut dyn Evictor,
}

impl Evictor for Victims<'_> {
    fn wants_more(&mut self) -> bool {
        self.pool.wants_more()
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        let verdict = self.pool.try_evict(frame);
        let index = frame.index();
        match verdict {
            Verdict::Evicted => {
                self.wrapper.set_held(index, NO_PAGE);
                self.wrapper.frames.0[index].page.store(NO_PAGE, Ordering::Release);
            }
            Verdict::Rejected(Rejection::NotResident) => self.wrapper.set_held(index, NO_PAGE),
            Verdict::Rejected(_) => {}
        }
        verdict
    }

    /// The pool's descriptor and the wrapper's words for the frame.
    fn prefetch(&mut self, frame: FrameId) {
        self.pool.prefetch(frame);
        if let Some(words) = self.wrapper.frames.0.get(frame.index()) {
            swizzledb_sync::hint::prefetch(words);
        }
    }
}

/// State under the lock.
struct Locked {
    /// Scratch for a commit: the calls passed to the inner policy's `on_queued`.
    calls: Vec<(FrameId, QueuedHook)>,
    /// How many guards the holding thread has open (the lock is reentrant).
    depth: usize,
    /// Acquisitions so far, for sampling hold times.
    acquisitions: u64,
}

/// The lock, held: the state under it and, for a sampled acquisition, when it was taken.
struct Guard<'a> {
    guard: ReentrantMutexGuard<'a, RefCell<Locked>>,
    /// When the lock was taken, for the outermost acquisition of a thread if it is a sampled one.
    timed: Option<(Instant, &'a Counters)>,
}

impl Guard<'_> {
    fn state(&self) -> std::cell::RefMut<'_, Locked> {
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

/// The counters kept outside the lock. Each is bumped only on a slow path (a failed try-lock,
/// a wait) or under the lock, so none adds a shared read-modify-write to the fast path.
#[derive(Default)]
struct Counters {
    lock_acquisitions: AtomicU64,
    failed_try_locks: AtomicU64,
    blocking_waits: AtomicU64,
    entries_committed: AtomicU64,
    stale_entries_skipped: AtomicU64,
    /// Page accesses of the unbatched variants, which take the lock for each.
    locked_accesses: AtomicU64,
    timed_holds: AtomicU64,
    timed_hold_nanos: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Adds one to a counter that only the calling thread writes (a plain load and store, no
/// read-modify-write).
fn bump_own(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Wraps a policy whose hits lock so that accesses are batched per thread (BP-Wrapper).
pub struct BpWrapper {
    inner: Box<dyn Policy>,
    config: BpConfig,
    /// Whether hits can be dropped: batching, and an inner policy that ignores some hits.
    drops_hits: bool,
    /// Whether the inner policy's answers are remembered in the pool's hooks: hits are dropped
    /// and its `Nothing` answers are stable (module doc, "Hooks").
    caches_effects: bool,
    /// Serializes every call into `inner`. Reentrant: an eviction batch holds it while the pool
    /// runs code (un-swizzling a parent) that reports hooks back to the wrapper.
    lock: ReentrantMutex<RefCell<Locked>>,
    /// Per frame, its words (`pages[f]`, `held[f]` and the inner policy's hook of the module doc)
    /// together, so that an access, its commit and the inner policy's hook share one cache line.
    frames: Frames,
    /// The per-thread queues.
    queues: Box<[Slot]>,
    /// Set while a thread spins for the lock in `lock_for_eviction` (one spinner at a time).
    spinning: AtomicBool,
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
        let locked = Locked { calls: Vec::new(), depth: 0, acquisitions: 0 };
        Ok(BpWrapper {
            drops_hits: config.variant.batches() && inner.ignores_some_hits(),
            caches_effects: config.variant.batches()
                && inner.ignores_some_hits()
                && inner.hit_effects_are_stable(),
            inner,
            config,
            lock: ReentrantMutex::new(RefCell::new(locked)),
            frames: Frames((0..capacity).map(|_| FrameWords::default()).collect()),
            queues: (0..QUEUE_SLOTS).map(|_| Slot::new(config.queue_size)).collect(),
            spinning: AtomicBool::new(false),
            counters: Counters::default(),
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

    /// Commits the calling thread's queue, if it has one; the caller holds the lock.
    fn commit_mine(&self, guard: &Guard<'_>) {
        if let Some(queue) = self.my_queue() {
            self.commit(guard, queue);
        }
    }

    /// Counts an acquisition and starts timing it if it is a sampled one (outermost only).
    fn acquired<'a>(&'a self, guard: ReentrantMutexGuard<'a, RefCell<Locked>>) -> Guard<'a> {
        let timed = {
            let mut state = guard.borrow_mut();
            state.depth += 1;
            if state.depth > 1 {
                None // nested in this thread's own acquisition
            } else {
                bump(&self.counters.lock_acquisitions);
                state.acquisitions += 1;
                state.acquisitions.is_multiple_of(HOLD_SAMPLE).then(|| (Instant::now(), &self.counters))
            }
        };
        Guard { guard, timed }
    }

    /// Takes the lock, blocking; counts a wait if another thread held it.
    fn lock(&self) -> Guard<'_> {
        let guard = self.lock.try_lock().unwrap_or_else(|| {
            bump(&self.counters.blocking_waits);
            self.lock.lock()
        });
        self.acquired(guard)
    }

    /// Takes the lock for an eviction batch: spins on `try_lock` for a few microseconds (a commit
    /// holds the lock for about that long) before blocking, because a thread that blocks may wait
    /// a whole scheduling slice to run again when the cores are oversubscribed, and every thread
    /// that needs a free frame waits for the evicting one.
    ///
    /// Only one thread spins at a time: where many threads evict at once (every miss in the
    /// emulator's all-miss mode), spinners would take the cores from the lock holder.
    fn lock_for_eviction(&self) -> Guard<'_> {
        if self.spinning.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            let mut taken = None;
            for _ in 0..EVICTION_SPINS {
                if let Some(guard) = self.lock.try_lock() {
                    taken = Some(guard);
                    break;
                }
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
            self.spinning.store(false, Ordering::Release);
            if let Some(guard) = taken {
                return self.acquired(guard);
            }
        }
        self.lock()
    }

    /// Pre-reads what committing `queue` (the caller's) will read: the entries themselves, each
    /// frame's words (its `held` word and the hook given to the inner policy), and, through the
    /// inner policy's [`Policy::prefetch_accesses`], what its hooks will read. Prefetches, not
    /// loads, so the misses overlap; correctness never depends on them (sync README H1), since
    /// everything is read again under the lock.
    fn prefetch(&self, queue: &Slot) {
        let mut frames = [FrameId(0); PREFETCH_CHUNK];
        let mut inserted = [unslot(1); PREFETCH_CHUNK];
        let (mut nf, mut ni) = (0, 0);
        for i in queue.head.load(Ordering::Acquire)..queue.tail.load(Ordering::Relaxed) {
            let (page, word) = queue.words(i);
            let frame = word_frame(word);
            if let Some(words) = self.frames.0.get(frame.index()) {
                swizzledb_sync::hint::prefetch(words);
            }
            frames[nf] = frame;
            nf += 1;
            if word >> 32 == KIND_INSERT && page != NO_PAGE {
                inserted[ni] = unslot(page);
                ni += 1;
            }
            if nf == PREFETCH_CHUNK {
                self.inner.prefetch_accesses(&frames, &inserted[..ni]);
                (nf, ni) = (0, 0);
            }
        }
        if nf > 0 {
            self.inner.prefetch_accesses(&frames[..nf], &inserted[..ni]);
        }
    }

    /// Pre-reads what applying `entry` will read (the unbatched variant).
    fn prefetch_one(&self, entry: Entry) {
        if let Some(words) = self.frames.0.get(entry.frame.index()) {
            swizzledb_sync::hint::prefetch(words);
        }
        let inserted = (entry.access == Access::Insert && entry.page != NO_PAGE).then(|| unslot(entry.page));
        self.inner.prefetch_accesses(&[entry.frame], inserted.as_slice());
    }

    /// The page the inner policy holds `index` with; the caller holds the lock.
    #[inline(always)]
    fn held(&self, index: usize) -> u64 {
        let words = &self.frames.0[index];
        if words.held.load(Ordering::Relaxed) {
            words.page.load(Ordering::Relaxed)
        } else {
            NO_PAGE
        }
    }

    /// Whether the inner policy holds `frame` with `page` (`held[f]` is `page`); the caller holds
    /// the lock.
    #[inline(always)]
    fn holds(&self, frame: FrameId, page: u64) -> bool {
        self.frames.0.get(frame.index()).is_some_and(|words| {
            words.held.load(Ordering::Relaxed) && words.page.load(Ordering::Relaxed) == page
        })
    }

    /// Records that the inner policy holds the frame with `page`, which is `pages[f]`, or with
    /// nothing (`NO_PAGE`); the caller holds the lock.
    fn set_held(&self, index: usize, page: u64) {
        let words = &self.frames.0[index];
        debug_assert!(page == NO_PAGE || page == words.page.load(Ordering::Relaxed), "held[f] is pages[f]");
        words.held.store(page != NO_PAGE, Ordering::Relaxed);
    }

    /// Checks one entry under the lock (module doc, steps 1, 2 and 5) and appends the calls it
    /// makes of the inner policy to `calls`: first its page's insert if that is still queued
    /// (`held[f]` is set at once, so the rest of a batch sees the frame held, as the inner policy
    /// will by then), then the access itself. False, with nothing appended, if the entry is stale.
    #[inline(never)]
    fn admit(&self, entry: Entry, calls: &mut Vec<(FrameId, QueuedHook)>) -> bool {
        let index = entry.frame.index();
        let held = self.held(index);
        if held != entry.page {
            if held != NO_PAGE || self.frames.0[index].page.load(Ordering::Acquire) != entry.page {
                return false;
            }
            self.set_held(index, entry.page);
            calls.push((entry.frame, QueuedHook::Insert(unslot(entry.page))));
        }
        match entry.access {
            Access::Insert => {}
            Access::Hit => calls.push((entry.frame, QueuedHook::Hit)),
            Access::Unfix => calls.push((entry.frame, QueuedHook::Unfix)),
            Access::Children(swizzled) => calls.push((entry.frame, QueuedHook::Children(swizzled))),
        }
        true
    }

    /// Hands `calls` to the inner policy in one `on_queued` call and empties it.
    fn forward(&self, calls: &mut Vec<(FrameId, QueuedHook)>) {
        if !calls.is_empty() {
            self.inner.on_queued(calls, &self.frames);
            calls.clear();
        }
    }

    /// Applies one entry at once (the unbatched variants); false if it was stale. The caller
    /// counts (an atomic add per entry would lengthen the critical section of a commit).
    fn apply(&self, guard: &Guard<'_>, entry: Entry) -> bool {
        let mut calls = std::mem::take(&mut guard.state().calls);
        let admitted = self.admit(entry, &mut calls);
        self.forward(&mut calls);
        guard.state().calls = calls;
        admitted
    }

    /// Counts `applied` committed and `stale` skipped entries.
    fn count_commits(&self, applied: u64, stale: u64) {
        if applied > 0 {
            self.counters.entries_committed.fetch_add(applied, Ordering::Relaxed);
        }
        if stale > 0 {
            self.counters.stale_entries_skipped.fetch_add(stale, Ordering::Relaxed);
        }
    }

    /// Commits one queue in FIFO order; the caller holds the lock. The admitted entries reach the
    /// inner policy through one `on_queued` call, in order (so exactly as one hook call each): an
    /// inner policy behind its own lock takes it once per commit.
    fn commit(&self, guard: &Guard<'_>, queue: &Slot) {
        // Only lock holders move `head`; the producer may append behind `tail` meanwhile, never
        // over entries before `head` is stored (module doc, "Queues").
        let head = queue.head.load(Ordering::Relaxed);
        let tail = queue.tail.load(Ordering::Acquire);
        if head == tail {
            return;
        }
        let mut calls = std::mem::take(&mut guard.state().calls);
        let mut applied = 0u64;
        for i in head..tail {
            let (page, word) = queue.words(i);
            // The common entry, a hit on a frame the inner policy holds with the hit's page
            // (step 1), without decoding it; anything else through `admit`.
            if word >> 32 == KIND_HIT && self.holds(word_frame(word), page) {
                calls.push((word_frame(word), QueuedHook::Hit));
                applied += 1;
            } else {
                applied += u64::from(self.admit(Entry::decode(page, word), &mut calls));
            }
        }
        self.forward(&mut calls);
        guard.state().calls = calls;
        queue.head.store(tail, Ordering::Release);
        self.count_commits(applied, (tail - head) as u64 - applied);
    }

    /// Commits every queue (a drain: when candidates ran out, or on `flush`).
    fn commit_all(&self, guard: &Guard<'_>) {
        for queue in self.queues.iter() {
            self.commit(guard, queue);
        }
    }

    /// Queues (or, without batching, applies at once) an access to a resident frame; `hook` is
    /// the pool's hook of the frame.
    fn access(&self, frame: FrameId, access: Access, hook: &FrameHook) {
        let page = self.frames.0[frame.index()].page.load(Ordering::Acquire);
        if page == NO_PAGE {
            return; // not resident as far as the wrapper knows (a pool breaking R1): nothing to do
        }
        self.queue_access(Entry { frame, access, page }, hook);
    }

    /// Queues (or, without batching, applies at once) `entry`. The common path, an append below
    /// T, is inlined into the hooks; everything else is out of line, so that the append saves no
    /// registers it does not use.
    #[inline(always)]
    fn queue_access(&self, entry: Entry, hook: &FrameHook) {
        let queue = if self.config.variant.batches() { self.my_queue() } else { None };
        let Some(queue) = queue else {
            self.apply_now(entry);
            return;
        };
        if self.drops_hits && entry.access == Access::Hit && self.ignorable(entry.frame, hook) {
            self.drop_ignored_hit(queue);
            return;
        }
        let len = queue.push(entry, matches!(entry.access, Access::Hit | Access::Insert));
        let count = len + queue.dropped_since.load(Ordering::Relaxed);
        self.maybe_commit(queue, count, len, Some(entry.frame));
    }

    /// Applies `entry` under the lock at once: the unbatched variants, or a thread without a
    /// queue slot.
    #[inline(never)]
    fn apply_now(&self, entry: Entry) {
        if self.config.variant.prefetches() {
            self.prefetch_one(entry);
        }
        let guard = self.lock();
        if matches!(entry.access, Access::Hit | Access::Insert) {
            bump(&self.counters.locked_accesses);
        }
        let applied = self.apply(&guard, entry);
        self.count_commits(u64::from(applied), u64::from(!applied));
    }

    /// Drops a hit the inner policy ignores (rule 5), counting it toward T while the caller's
    /// `queue` holds entries.
    #[inline(never)]
    fn drop_ignored_hit(&self, queue: &Slot) {
        if let Some((count, len)) = queue.drop_hit() {
            self.maybe_commit(queue, count, len, None);
        }
    }

    /// Whether a hit on `frame` can be dropped (rule 5): the inner policy says a hit on the
    /// frame's page would change nothing, which it says only of a page whose insert it has seen
    /// or of hits that never change anything (R5). The wrapper's own words for the frame are not
    /// read: the hook's address is only computed, so an inner policy that keeps its answer
    /// elsewhere (2Q, hot/cold) costs the hit no miss on them. If its answers are stable, a
    /// definite one is remembered in `pool_hook`, the pool's hook of the frame, whose cache line
    /// the fix has just loaded, and later hits on the page read only that (module doc, "Hooks").
    #[inline(always)]
    fn ignorable(&self, frame: FrameId, pool_hook: &FrameHook) -> bool {
        if self.caches_effects {
            match pool_hook.get() {
                HOOK_NOTHING => return true,
                HOOK_CHANGES => return false,
                _ => {}
            }
        }
        self.ask_inner(frame, pool_hook)
    }

    /// [`BpWrapper::ignorable`] when the pool's hook does not know yet: asks the inner policy,
    /// and remembers a definite answer if its answers are stable.
    #[inline(never)]
    fn ask_inner(&self, frame: FrameId, pool_hook: &FrameHook) -> bool {
        let Some(words) = self.frames.0.get(frame.index()) else { return false };
        let effect = self.inner.hit_effect(frame, &words.hook);
        if self.caches_effects {
            match effect {
                HitEffect::Nothing => pool_hook.set(HOOK_NOTHING),
                HitEffect::Changes => pool_hook.set(HOOK_CHANGES),
                HitEffect::Unknown => {}
            }
        }
        effect == HitEffect::Nothing
    }

    /// The paper's lines 15-23 of Fig. 7, for the caller's own `queue` after an access: once
    /// `count` accesses (queued entries and hits dropped since) reach T, the thread tries the
    /// lock, and commits if it gets it; it blocks only when the queue holds S entries. (Fig. 7
    /// compares its access count with S, but its queue holds one entry more than it counts, so
    /// the entry that fills the queue would overrun it: the queue's own length decides here.)
    #[inline]
    fn maybe_commit(&self, queue: &Slot, count: usize, len: usize, newest: Option<FrameId>) {
        if count >= self.config.batch_threshold {
            self.try_commit(queue, count, len, newest);
        }
    }

    /// [`BpWrapper::maybe_commit`] from T accesses on: out of line, so that the common access
    /// below T costs one comparison.
    #[inline(never)]
    fn try_commit(&self, queue: &Slot, count: usize, len: usize, newest: Option<FrameId>) {
        if self.config.variant.prefetches() {
            // The whole queue when it reaches T; after a failed try-lock, only the new entry's
            // record (the rest is still on its way).
            if count == self.config.batch_threshold {
                self.prefetch(queue);
            } else if let Some(words) = newest.and_then(|frame| self.frames.0.get(frame.index())) {
                swizzledb_sync::hint::prefetch(words);
            }
        }
        let guard = match self.lock.try_lock() {
            Some(guard) => self.acquired(guard),
            None => {
                bump(&self.counters.failed_try_locks);
                if len < self.config.queue_size {
                    return; // keep working; the next access tries again
                }
                self.lock()
            }
        };
        self.commit(&guard, queue);
        queue.dropped_since.store(0, Ordering::Relaxed);
    }

    /// The inner policy's next candidate; if it has none, drains every queue (a frame whose insert
    /// is still queued is resident too, R4) and asks again.
    fn inner_candidate(&self, guard: &Guard<'_>, drained: &mut bool) -> Option<FrameId> {
        loop {
            if let Some(frame) = self.inner.next_candidate(&self.frames) {
                return Some(frame);
            }
            if *drained {
                return None;
            }
            *drained = true;
            self.commit_all(guard);
        }
    }
}

impl Policy for BpWrapper {
    fn name(&self) -> String {
        format!("{}{}", crate::spec::bpw_prefix(self.config.variant), self.inner.name())
    }

    /// Publishes the frame's page, then queues the insert like a hit (the paper's miss path
    /// records a page taken from a free list "like a hit").
    /// The pool's hook forgets what it remembered of the frame's previous page (module doc,
    /// "Hooks").
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        if self.caches_effects {
            hook.set(HOOK_UNKNOWN);
        }
        self.frames.0[frame.index()].page.store(slot(page), Ordering::Release);
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
        if self.held(index) == NO_PAGE {
            return;
        }
        if why == Rejection::NotResident {
            self.set_held(index, NO_PAGE);
        }
        self.inner.on_rejected(frame, why, &self.frames.0[index].hook);
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let guard = self.lock();
        self.commit_mine(&guard);
        let index = frame.index();
        let held = self.held(index);
        self.set_held(index, NO_PAGE);
        self.frames.0[index].page.store(NO_PAGE, Ordering::Release);
        if held != NO_PAGE {
            self.inner.on_remove(frame, evicted, &self.frames.0[index].hook);
        }
    }

    /// Commits the caller's queue (the paper commits on the miss path), then asks the inner
    /// policy, over the wrapper's own hooks.
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let guard = self.lock();
        self.commit_mine(&guard);
        self.inner_candidate(&guard, &mut false)
    }

    /// The whole batch under one acquisition of the lock (R10): the caller's queue is committed,
    /// then the inner policy runs its own batch (`evict_batch`) over the pool's evictor, seen
    /// through `Victims`, which updates the wrapper's words for each verdict before the inner
    /// policy records it. If the inner policy runs out of candidates, every queue is committed
    /// (a frame whose insert is still queued is resident too, R4) and it is asked once more. Hooks
    /// the pool reports while trying a victim (a parent losing its last swizzled child) are
    /// queued as usual and may commit in the middle of the batch: the lock is reentrant.
    fn evict_batch(&self, _hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        let guard = self.lock_for_eviction();
        self.commit_mine(&guard);
        let mut victims = Victims { wrapper: self, pool: evictor };
        let mut proposals = self.inner.evict_batch(&self.frames, &mut victims, max_proposals);
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
        let held = self.held(frame.index()) != NO_PAGE;
        !held || self.inner.sweep_admits(frame, &self.frames.0[frame.index()].hook)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;
    use crate::{Lru, TestHooks};
    use rustc_hash::FxHashMap;

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
        /// Frames whose hits it says it ignores (`hit_effect`); it records them if they come.
        ignores: Arc<Mutex<HashSet<u32>>>,
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
        /// R5: `Nothing` only for frames it holds (a hit on a page whose insert is queued must
        /// reach it).
        fn hit_effect(&self, frame: FrameId, _hook: &FrameHook) -> HitEffect {
            if self.ignores.lock().contains(&frame.0) && self.log.lock().tracked.contains_key(&frame.0) {
                HitEffect::Nothing
            } else {
                HitEffect::Unknown
            }
        }
        fn ignores_some_hits(&self) -> bool {
            true
        }
    }

    fn page(raw: u64) -> PageId {
        PageId::new(raw).unwrap()
    }

    fn small(variant: Variant, inner: Recording) -> BpWrapper {
        let config = BpConfig { variant, queue_size: 4, batch_threshold: 3 };
        BpWrapper::with_config(Box::new(inner), 4, config).unwrap()
    }

    /// Hand-worked, T = 3, S = 4. Inserts and hits wait in the queue until the third entry, then
    /// reach the inner policy in FIFO order. A hit queued for page 10 in frame 0 is skipped after
    /// another thread removed that page and loaded page 20 into frame 0, so page 20 never gets it
    /// (R1, stale). That thread's insert of page 20 stays in its queue; the next hit on frame 0
    /// (page 20) inserts the page into the inner policy first when it commits (step 2).
    ///
    /// Lock acquisitions: the third insert's batch (1), the third hit's (2), the other thread's
    /// removal (3), the batch after it (4); nothing waited.
    #[test]
    fn r1_hits_commit_in_fifo_order_and_stale_entries_are_skipped() {
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        let policy = small(Variant::Both, inner);
        let h = TestHooks::new(4);
        for (f, p) in [(0, 10), (1, 11)] {
            policy.on_insert(FrameId(f), page(p), &h[f as usize]);
        }
        assert!(log.lock().tracked.is_empty(), "inserts are queued too");
        policy.on_insert(FrameId(2), page(12), &h[2]);
        assert_eq!(log.lock().tracked.len(), 3);
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
        assert!(!log.lock().tracked.contains_key(&0), "page 20's insert waits in the other queue");
        let stats = policy.stats();
        assert_eq!(stats.entries_committed, 8);
        assert_eq!(stats.stale_entries_skipped, 1);
        assert_eq!(stats.accesses, 10, "four inserts and six hits");
        assert_eq!(stats.lock_acquisitions, 4);
        assert_eq!((stats.failed_try_locks, stats.blocking_waits), (0, 0));
        // A miss-path hook commits the caller's queue first; the hit on page 20 inserts it.
        h.hit(&policy, &[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        assert_eq!(log.lock().tracked.get(&0), Some(&20));
        assert_eq!(log.lock().hits.last(), Some(&(0, 20)));
        // The other thread's queued insert finds the page held: nothing more happens.
        policy.flush();
        assert_eq!(log.lock().tracked.len(), 3);
    }

    /// A hit that names its page (`on_page_hit`, as the live pool reports hits) is tagged with
    /// that page, not the frame's published one: a hit naming a page the frame does not hold is
    /// skipped as stale (rule 2), and one naming the page whose insert is still queued inserts it
    /// first, as a hit through `on_hit` would.
    #[test]
    fn r1_hits_naming_their_page_are_checked_like_queued_ones() {
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        let policy = small(Variant::Both, inner);
        let h = TestHooks::new(4);
        policy.on_insert(FrameId(0), page(10), &h[0]);
        policy.on_page_hit(FrameId(0), page(10), &h[0]);
        policy.on_page_hit(FrameId(0), page(99), &h[0]);
        assert_eq!(log.lock().hits, [(0, 10)], "the insert went first; page 99's hit was skipped");
        assert_eq!(log.lock().tracked.get(&0), Some(&10));
        let stats = policy.stats();
        assert_eq!((stats.entries_committed, stats.stale_entries_skipped), (2, 1));
        policy.on_page_hit(FrameId(1), page(11), &h[1]);
        policy.flush();
        assert!(!log.lock().tracked.contains_key(&1), "a hit on a frame never loaded inserts nothing");
        assert_eq!(policy.stats().stale_entries_skipped, 2);
    }

    /// Fig. 7, T = 3, S = 4, with frame 0's hits ignored by the inner policy: such a hit is
    /// neither queued nor forwarded; while the queue is empty it does nothing more (BP-Wrapper
    /// idle), while the queue holds entries it counts toward T, and the third access since the
    /// queue's first entry commits it. A hit for a page whose insert is still queued is queued
    /// even if the inner policy would ignore it (rule 5). The unbatched variants forward all.
    #[test]
    fn fig7_ignored_hits_are_dropped_and_count_toward_the_threshold() {
        let inner = Recording::default();
        let (log, ignores) = (Arc::clone(&inner.log), Arc::clone(&inner.ignores));
        let policy = small(Variant::Both, inner);
        let h = TestHooks::new(4);
        for (f, p) in [(0, 10), (1, 11), (2, 12)] {
            policy.on_insert(FrameId(f), page(p), &h[f as usize]);
        }
        assert_eq!(log.lock().tracked.len(), 3);
        ignores.lock().extend([0, 3]);
        let before = policy.stats();
        h.hit(&policy, &[0, 0, 0, 0]);
        let idle = policy.stats();
        assert_eq!(idle.dropped_hits, 4);
        assert_eq!(idle.accesses - before.accesses, 4);
        assert_eq!(idle.lock_acquisitions, before.lock_acquisitions, "idle: no lock, no commit");
        h.hit(&policy, &[1, 0]);
        assert!(log.lock().hits.is_empty(), "one entry and one dropped hit: below T");
        policy.on_page_hit(FrameId(0), page(10), &h[0]);
        assert_eq!(log.lock().hits, [(1, 11)], "the third access since the entry commits it");
        assert_eq!(policy.stats().lock_acquisitions, before.lock_acquisitions + 1);
        // Frame 3's insert is queued: its hit is queued too, though the inner policy ignores it.
        policy.on_insert(FrameId(3), page(13), &h[3]);
        h.hit(&policy, &[3, 2]);
        assert_eq!(log.lock().hits[1..], [(3, 13), (2, 12)]);
        let stats = policy.stats();
        assert_eq!((stats.dropped_hits, stats.stale_entries_skipped), (6, 0));
        assert!(log.lock().hits.iter().all(|&(f, _)| f != 0), "no ignored hit was forwarded");
        for variant in [Variant::None, Variant::Prefetching] {
            let inner = Recording::default();
            let log = Arc::clone(&inner.log);
            inner.ignores.lock().insert(0);
            let policy = small(variant, inner);
            policy.on_insert(FrameId(0), page(10), &h[0]);
            h.hit(&policy, &[0]);
            assert_eq!(log.lock().hits, [(0, 10)], "{variant:?}");
            assert_eq!(policy.stats().dropped_hits, 0);
        }
    }

    /// Fig. 7's approximation for hot/cold (module doc): 4 frames, one hot page. With page 1 hot,
    /// a hit on cold page 2 is queued, and a hit on page 1 right after it is dropped, since page
    /// 1 is still hot when it is read; the commit then promotes 2 and demotes 1. Unwrapped, the
    /// hit on 1 comes after 2's promotion demoted it, so it promotes 1 back and demotes 2. With
    /// T = 1 every access commits before the next, and the two agree.
    #[test]
    fn fig7_hot_cold_checks_hotness_at_the_access() {
        let h = TestHooks::new(4);
        let victims = |policy: &dyn Policy| {
            h.insert(policy, &[0, 1, 2, 3]);
            h.hit(policy, &[1]);
            policy.next_candidate(&h); // commits the queue: page 1 is hot
            h.hit(policy, &[2, 1]);
            (0..4).map(|_| h.evict(policy)).collect::<Vec<_>>()
        };
        let plain = victims(&crate::HotCold::with_hot_limit(4, 1));
        assert_eq!(plain, [0, 3, 2, 1], "unwrapped: 1 promoted again, 2 demoted");
        let wrap = |threshold| {
            let config = BpConfig { variant: Variant::Both, queue_size: 4, batch_threshold: threshold };
            BpWrapper::with_config(Box::new(crate::HotCold::with_hot_limit(4, 1)), 4, config).unwrap()
        };
        assert_eq!(victims(&wrap(3)), [0, 3, 1, 2], "batched: the hit on 1 was dropped");
        assert_eq!(victims(&wrap(1)), plain, "T = 1: nothing waits in the queue");
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
        policy.flush();
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

    /// The lock-free queues under a draining thread: four producers hit their own four frames in
    /// a known pseudo-random order (no period, so an entry overwritten by a later one would
    /// show) while another thread drains every queue as fast as it can. Every hit reaches the inner policy
    /// exactly once, and each producer's hits in its own order, whoever commits them.
    #[test]
    fn queues_hand_every_hit_over_once_and_in_order_under_concurrent_drains() {
        const PRODUCERS: u32 = 4;
        const HITS: usize = 50_000;
        // Producer t's i-th hit: one of its frames t * 4 .. t * 4 + 3.
        let frame_of =
            |t: u32, i: usize| t * 4 + ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) as u32;
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        let config = BpConfig { variant: Variant::Both, queue_size: 8, batch_threshold: 5 };
        let policy = BpWrapper::with_config(Box::new(inner), 16, config).unwrap();
        let h = TestHooks::new(16);
        for f in 0..16u32 {
            policy.on_insert(FrameId(f), page(u64::from(f)), &h[f as usize]);
        }
        policy.flush();
        let done = AtomicBool::new(false);
        let start = std::sync::Barrier::new(PRODUCERS as usize + 1);
        std::thread::scope(|s| {
            s.spawn(|| {
                start.wait();
                while !done.load(Ordering::SeqCst) {
                    policy.flush();
                }
            });
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|t| {
                    let (policy, h, start, frame_of) = (&policy, &h, &start, &frame_of);
                    s.spawn(move || {
                        start.wait();
                        for i in 0..HITS {
                            if i % 64 == 0 {
                                std::thread::yield_now(); // interleave with the others
                            }
                            let f = frame_of(t, i);
                            policy.on_hit(FrameId(f), &h[f as usize]);
                        }
                    })
                })
                .collect();
            for p in producers {
                p.join().unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        policy.flush();
        let hits = log.lock().hits.clone();
        assert_eq!(hits.len(), PRODUCERS as usize * HITS, "no hit lost or applied twice");
        for t in 0..PRODUCERS {
            let mine: Vec<u32> = hits.iter().map(|&(f, _)| f).filter(|f| f / 4 == t).collect();
            let expected: Vec<u32> = (0..HITS).map(|i| frame_of(t, i)).collect();
            assert!(mine == expected, "producer {t}'s hits arrived out of order");
        }
        let stats = policy.stats();
        assert_eq!(stats.accesses, 16 + u64::from(PRODUCERS) * HITS as u64);
        assert_eq!(stats.stale_entries_skipped, 0);
    }

    #[test]
    fn bad_thresholds_are_refused() {
        for (size, threshold) in [(4, 0), (4, 5)] {
            let config = BpConfig { variant: Variant::Both, queue_size: size, batch_threshold: threshold };
            let err = BpWrapper::with_config(Box::new(Lru::new(2)), 2, config).err();
            assert_eq!(err, Some(BpConfigError::Threshold { threshold, size }));
        }
    }

    /// One frame of the simulated pool, under its latch.
    #[derive(Copy, Clone, PartialEq, Eq, Debug)]
    enum Frame {
        Free,
        Page(u64),
        /// Evicted in a batch that has not returned yet: not reusable (R10).
        Evicting,
    }

    /// The test pool's side of an eviction batch: try-latches each candidate, as the pool does.
    struct TryLatch<'a> {
        frames: &'a [Mutex<Frame>],
        evicted: Vec<usize>,
        wanted: usize,
    }

    impl Evictor for TryLatch<'_> {
        fn wants_more(&mut self) -> bool {
            self.evicted.len() < self.wanted
        }

        fn try_evict(&mut self, frame: FrameId) -> Verdict {
            let Some(mut latch) = self.frames[frame.index()].try_lock() else {
                return Verdict::Rejected(Rejection::InUse);
            };
            match *latch {
                Frame::Page(_) => {
                    *latch = Frame::Evicting;
                    self.evicted.push(frame.index());
                    Verdict::Evicted
                }
                _ => Verdict::Rejected(Rejection::NotResident),
            }
        }
    }

    /// Four threads hit, load and free pages through the wrapper while one of them also evicts in
    /// batches (R10), every frame under its latch as in the pool. The inner policy panics on any
    /// R1 breach, and after everything is flushed it tracks exactly the pool's resident frames;
    /// every access was committed, skipped as stale, or dropped as a hit the inner policy ignores
    /// (in the second round it ignores hits on even frames: rule 5).
    #[test]
    fn r1_concurrent_hits_inserts_and_removes_keep_the_resident_sets_equal() {
        const FRAMES: u32 = 16;
        let variants = [Variant::None, Variant::Batching, Variant::Prefetching, Variant::Both];
        for (variant, ignore_even) in variants.into_iter().flat_map(|v| [(v, false), (v, true)]) {
            let inner = Recording::default();
            if ignore_even {
                inner.ignores.lock().extend((0..FRAMES).step_by(2));
            }
            let log = Arc::clone(&inner.log);
            let config = BpConfig { variant, queue_size: 8, batch_threshold: 4 };
            let policy = BpWrapper::with_config(Box::new(inner), FRAMES as usize, config).unwrap();
            let hooks = TestHooks::new(FRAMES as usize);
            let frames: Vec<Mutex<Frame>> = (0..FRAMES).map(|_| Mutex::new(Frame::Free)).collect();
            let next_page = AtomicU64::new(1);
            let accesses = AtomicU64::new(0);
            std::thread::scope(|s| {
                for thread in 0..4u32 {
                    let (policy, hooks, frames, next_page, accesses) =
                        (&policy, &hooks, &frames, &next_page, &accesses);
                    s.spawn(move || {
                        let mut x = thread.wrapping_mul(2_654_435_761).wrapping_add(12345);
                        for _ in 0..20_000 {
                            x ^= x << 13;
                            x ^= x >> 17;
                            x ^= x << 5;
                            let f = FrameId(x % FRAMES);
                            let hook = &hooks[f.index()];
                            let mut latch = frames[f.index()].lock();
                            match ((x >> 8) % 16, *latch) {
                                (0, Frame::Page(_)) => {
                                    policy.on_remove(f, false, hook);
                                    *latch = Frame::Free;
                                }
                                (1 | 2, Frame::Free) => {
                                    let p = next_page.fetch_add(1, Ordering::Relaxed);
                                    policy.on_insert(f, page(p), hook);
                                    accesses.fetch_add(1, Ordering::Relaxed);
                                    *latch = Frame::Page(p);
                                }
                                (3, _) if thread == 0 => {
                                    drop(latch); // R2: only thread 0 evicts
                                    let mut batch = TryLatch { frames, evicted: Vec::new(), wanted: 3 };
                                    policy.evict_batch(hooks, &mut batch, 8);
                                    for v in batch.evicted {
                                        *frames[v].lock() = Frame::Free;
                                    }
                                }
                                (_, Frame::Page(_)) => {
                                    policy.on_hit(f, hook);
                                    accesses.fetch_add(1, Ordering::Relaxed);
                                }
                                _ => {}
                            }
                        }
                    });
                }
            });
            policy.flush();
            let resident: FxHashMap<u32, u64> = (0..FRAMES)
                .filter_map(|f| match *frames[f as usize].lock() {
                    Frame::Page(p) => Some((f, p)),
                    _ => None,
                })
                .collect();
            let log = log.lock();
            assert_eq!(log.tracked, resident, "{variant:?}");
            let stats = policy.stats();
            assert_eq!(stats.accesses, accesses.load(Ordering::Relaxed));
            let handled = stats.entries_committed + stats.stale_entries_skipped + stats.dropped_hits;
            assert_eq!(handled, stats.accesses, "{variant:?}");
            assert_eq!(stats.dropped_hits > 0, ignore_even && variant.batches(), "{variant:?}");
            assert!(log.hits.len() as u64 <= stats.entries_committed);
            let pages: HashSet<u64> = log.hits.iter().map(|&(_, p)| p).collect();
            assert!(!pages.is_empty());
        }
    }
}
