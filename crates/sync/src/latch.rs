//! The frame latch: a reader-writer latch with try-upgrade and a version counter.
//!
//! State word (`state`):
//!
//! ```text
//!  bit 31      bit 30           bits 0..=29
//! +--------+----------------+---------------------+
//! | WRITER | WRITER_WAITING |  number of readers  |
//! +--------+----------------+---------------------+
//! ```
//!
//! * L1. `WRITER` set ⇒ reader count is 0: exclusive and shared holders never coexist.
//! * L2. A writer that must wait sets `WRITER_WAITING`; new shared acquisitions then wait too, so a
//!   stream of readers cannot starve a writer. Consequence: a thread must never acquire the same
//!   latch twice (it could wait behind a writer that waits for it).
//! * L3. `try_upgrade` succeeds only for the sole reader; it never waits, so upgrading cannot
//!   deadlock two readers against each other.
//! * L4. `version` is odd exactly while the latch is held exclusively and grows by two per
//!   exclusive section, so an optimistic reader that sees the same even version before and after
//!   reading saw no writer.
//! * L5. Optimistic reads: `read_begin` returns the version if it is even (Acquire);
//!   `read_validate(v)` issues an Acquire fence and then compares the version with `v`.
//!   `begin_exclusive` stores the odd version and then issues a Release fence before the holder
//!   writes anything, so a reader whose loads saw any write of an exclusive section validates
//!   against the odd (or a later) version and fails. Readers load the protected bytes with
//!   atomic loads only, and use nothing they read before validation succeeds.
//! * L6. `try_lock_shared` fails only when a writer holds or waits for the latch: other readers
//!   coming and going, or a spurious failure of the swap, make it try again, never fail.
//!
//! Waiting spins briefly, then yields the CPU: latches are held for short sections (and for one
//! page read on a miss), and yielding keeps oversubscribed runs (threads > cores) moving.

use crate::primitive::{fence, spin_loop, yield_now, AtomicU32, AtomicU64};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

const WRITER: u32 = 1 << 31;
const WRITER_WAITING: u32 = 1 << 30;
const READERS: u32 = WRITER_WAITING - 1;

/// How a frame is latched.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum LatchMode {
    /// Many holders; the page is read only.
    Shared,
    /// One holder; the page may be changed.
    Exclusive,
}

/// A reader-writer latch with try-upgrade, downgrade and a version counter (rules L1–L4 above).
#[derive(Debug, Default)]
pub struct Latch {
    state: AtomicU32,
    version: AtomicU64,
}

struct Backoff(u32);

impl Backoff {
    /// Pause-instruction rounds (1, 2, ... 32 pauses) before the waiter yields the CPU.
    const SPINS: u32 = 6;
    /// Yields before the waiter sleeps between tries.
    const YIELDS: u32 = 16;
    /// The sleep between tries once spinning and yielding did not get the latch.
    const NAP: std::time::Duration = std::time::Duration::from_micros(50);

    fn snooze(&mut self) {
        if cfg!(loom) {
            yield_now();
        } else if self.0 < Self::SPINS {
            for _ in 0..(1u32 << self.0) {
                spin_loop();
            }
            self.0 += 1;
        } else if self.0 < Self::SPINS + Self::YIELDS {
            yield_now();
            self.0 += 1;
        } else {
            // With more waiters than cores, waiters that only yield keep the holder (which may
            // be waiting for a page read or a log flush to finish, then needs the CPU to go on)
            // off the cores it needs: sleep instead.
            std::thread::sleep(Self::NAP);
        }
    }
}

impl Latch {
    /// A new, unlatched latch.
    #[must_use]
    pub fn new() -> Latch {
        Latch { state: AtomicU32::new(0), version: AtomicU64::new(0) }
    }

    /// Acquires the latch in shared mode, waiting while a writer holds or waits for it (L2).
    #[inline]
    pub fn lock_shared(&self) {
        if !self.try_lock_shared() {
            self.lock_shared_slow();
        }
    }

    #[cold]
    fn lock_shared_slow(&self) {
        let mut backoff = Backoff(0);
        while !self.try_lock_shared() {
            backoff.snooze();
        }
    }

    /// Tries to acquire the latch in shared mode without waiting for a writer: fails only when
    /// one holds the latch or waits for it (L2, L6), never because of other readers.
    #[inline]
    pub fn try_lock_shared(&self) -> bool {
        let mut s = self.state.load(Relaxed);
        // L6: a swap that failed because other readers came or went (or spuriously) is tried
        // again from the state it found; only a writer makes the try fail.
        loop {
            if s & (WRITER | WRITER_WAITING) != 0 {
                return false;
            }
            debug_assert!(s & READERS < READERS, "L1: reader count overflow");
            match self.state.compare_exchange_weak(s, s + 1, Acquire, Relaxed) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// Releases a shared hold.
    #[inline]
    pub fn unlock_shared(&self) {
        let prev = self.state.fetch_sub(1, Release);
        debug_assert!(prev & READERS != 0, "L1: unlock_shared without a shared hold");
    }

    /// Acquires the latch exclusively, announcing itself to new readers while it waits (L2).
    #[inline]
    pub fn lock_exclusive(&self) {
        if !self.try_lock_exclusive() {
            self.lock_exclusive_slow();
        }
    }

    #[cold]
    fn lock_exclusive_slow(&self) {
        let mut backoff = Backoff(0);
        loop {
            let s = self.state.load(Relaxed);
            if s & (WRITER | READERS) == 0 {
                if self.state.compare_exchange_weak(s, WRITER, Acquire, Relaxed).is_ok() {
                    self.begin_exclusive();
                    return;
                }
            } else if s & WRITER_WAITING == 0 {
                self.state.fetch_or(WRITER_WAITING, Relaxed);
            }
            backoff.snooze();
        }
    }

    /// Tries to acquire the latch exclusively without waiting.
    #[inline]
    pub fn try_lock_exclusive(&self) -> bool {
        let s = self.state.load(Relaxed);
        if s & (WRITER | READERS) != 0 {
            return false;
        }
        if self.state.compare_exchange(s, WRITER, Acquire, Relaxed).is_ok() {
            self.begin_exclusive();
            true
        } else {
            false
        }
    }

    /// Turns the caller's shared hold into an exclusive one if it is the only reader (L3).
    /// On failure the shared hold is kept.
    #[inline]
    pub fn try_upgrade(&self) -> bool {
        let s = self.state.load(Relaxed);
        if s & READERS != 1 {
            return false;
        }
        // Keep nothing of WRITER_WAITING: the waiting writer re-announces itself (L2).
        if self.state.compare_exchange(s, WRITER, Acquire, Relaxed).is_ok() {
            self.begin_exclusive();
            true
        } else {
            false
        }
    }

    /// Turns the caller's exclusive hold into a shared one without letting a writer in between.
    #[inline]
    pub fn downgrade(&self) {
        self.end_exclusive();
        let prev = self.state.fetch_add(1, Release);
        debug_assert!(prev & WRITER != 0, "L1: downgrade without an exclusive hold");
        self.state.fetch_and(!WRITER, Release);
    }

    /// Releases an exclusive hold.
    #[inline]
    pub fn unlock_exclusive(&self) {
        self.end_exclusive();
        let prev = self.state.fetch_and(!WRITER, Release);
        debug_assert!(prev & WRITER != 0, "L1: unlock_exclusive without an exclusive hold");
    }

    /// Releases a hold of the given mode.
    #[inline]
    pub fn unlock(&self, mode: LatchMode) {
        match mode {
            LatchMode::Shared => self.unlock_shared(),
            LatchMode::Exclusive => self.unlock_exclusive(),
        }
    }

    /// Acquires a hold of the given mode, waiting if needed.
    #[inline]
    pub fn lock(&self, mode: LatchMode) {
        match mode {
            LatchMode::Shared => self.lock_shared(),
            LatchMode::Exclusive => self.lock_exclusive(),
        }
    }

    /// Tries to acquire a hold of the given mode without waiting.
    #[inline]
    pub fn try_lock(&self, mode: LatchMode) -> bool {
        match mode {
            LatchMode::Shared => self.try_lock_shared(),
            LatchMode::Exclusive => self.try_lock_exclusive(),
        }
    }

    /// The version counter (L4): odd while held exclusively.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version.load(Acquire)
    }

    /// Starts an optimistic read (L5): the version if no exclusive section is under way, else
    /// `None`. Nothing read after this may be used before [`Latch::read_validate`] succeeds.
    #[inline]
    pub fn read_begin(&self) -> Option<u64> {
        let v = self.version.load(Acquire);
        v.is_multiple_of(2).then_some(v)
    }

    /// Ends an optimistic read begun at version `v` (L5): true if no exclusive section began
    /// since, so every atomic load made in between saw the bytes as they were at `v`.
    #[inline]
    pub fn read_validate(&self, v: u64) -> bool {
        fence(Acquire);
        self.version.load(Relaxed) == v
    }

    /// True if anyone holds the latch in any mode (a racy hint, for eviction heuristics).
    #[inline]
    pub fn is_latched(&self) -> bool {
        self.state.load(Relaxed) & (WRITER | READERS) != 0
    }

    fn begin_exclusive(&self) {
        let v = self.version.load(Relaxed);
        debug_assert!(v.is_multiple_of(2), "L4: version odd on exclusive acquire");
        self.version.store(v + 1, Relaxed);
        // L5: the odd version is ordered before every write of the section.
        fence(Release);
    }

    fn end_exclusive(&self) {
        let v = self.version.load(Relaxed);
        debug_assert!(!v.is_multiple_of(2), "L4: version even on exclusive release");
        self.version.store(v + 1, Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn l1_shared_and_exclusive_exclude_each_other() {
        let l = Latch::new();
        l.lock_shared();
        assert!(!l.try_lock_exclusive());
        assert!(l.try_lock_shared());
        l.unlock_shared();
        l.unlock_shared();
        assert!(l.try_lock_exclusive());
        assert!(!l.try_lock_shared());
        l.unlock_exclusive();
        assert!(!l.is_latched());
    }

    #[test]
    fn l3_upgrade_only_for_sole_reader() {
        let l = Latch::new();
        l.lock_shared();
        l.lock_shared();
        assert!(!l.try_upgrade());
        l.unlock_shared();
        assert!(l.try_upgrade());
        assert!(!l.try_lock_shared());
        l.downgrade();
        assert!(l.try_lock_shared());
        l.unlock_shared();
        l.unlock_shared();
        assert!(!l.is_latched());
    }

    #[test]
    fn l4_version_odd_while_exclusive() {
        let l = Latch::new();
        let v0 = l.version();
        l.lock_exclusive();
        assert_eq!(l.version() % 2, 1);
        l.unlock_exclusive();
        assert_eq!(l.version(), v0 + 2);
    }

    #[test]
    fn l2_waiting_writer_blocks_new_readers() {
        let l = Arc::new(Latch::new());
        l.lock_shared();
        let l2 = Arc::clone(&l);
        let writer = std::thread::spawn(move || {
            l2.lock_exclusive();
            l2.unlock_exclusive();
        });
        // Wait until the writer has announced itself.
        while l.state.load(Relaxed) & WRITER_WAITING == 0 {
            std::thread::yield_now();
        }
        assert!(!l.try_lock_shared(), "L2: a new reader must queue behind a waiting writer");
        l.unlock_shared();
        writer.join().unwrap();
        assert!(l.try_lock_shared());
        l.unlock_shared();
    }

    #[test]
    fn l6_try_lock_shared_fails_only_for_a_writer() {
        // Readers that come and go beside it never make it fail, nor does anything spurious.
        let l = Arc::new(Latch::new());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn: Vec<_> = (0..2)
            .map(|_| {
                let (l, stop) = (Arc::clone(&l), Arc::clone(&stop));
                std::thread::spawn(move || {
                    while !stop.load(Relaxed) {
                        l.lock_shared();
                        l.unlock_shared();
                    }
                })
            })
            .collect();
        let tries = if cfg!(miri) { 200 } else { 200_000 };
        let failed = (0..tries)
            .filter(|_| {
                let got = l.try_lock_shared();
                if got {
                    l.unlock_shared();
                }
                !got
            })
            .count();
        stop.store(true, Relaxed);
        for t in churn {
            t.join().unwrap();
        }
        assert_eq!(failed, 0, "L6: try_lock_shared failed {failed} of {tries} times with only readers about");
    }

    #[test]
    fn counter_under_exclusive_latch_is_exact() {
        struct Shared {
            latch: Latch,
            value: std::cell::UnsafeCell<u64>,
        }
        // SAFETY: L1 — `value` is only touched under the exclusive latch.
        unsafe impl Sync for Shared {}
        let s = Arc::new(Shared { latch: Latch::new(), value: std::cell::UnsafeCell::new(0) });
        // Under Miri, which checks each access for a race, a few hundred rounds a thread.
        let rounds = if cfg!(miri) { 300 } else { 10_000 };
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    for _ in 0..rounds {
                        s.latch.lock_exclusive();
                        // SAFETY: L1 — we hold the latch exclusively.
                        unsafe { *s.value.get() += 1 };
                        s.latch.unlock_exclusive();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        s.latch.lock_shared();
        // SAFETY: L1 — shared hold, no writer can be active.
        assert_eq!(unsafe { *s.value.get() }, 4 * rounds);
        s.latch.unlock_shared();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    struct Shared {
        latch: Latch,
        value: UnsafeCell<u64>,
    }
    // SAFETY: L1 — `value` is written only under the exclusive latch and read under a hold.
    unsafe impl Sync for Shared {}

    /// L1/L3 model-checked: a writer and an upgrading reader never overlap a write
    /// with another access (loom's UnsafeCell reports any such overlap), and no update is lost.
    #[test]
    fn loom_writer_upgrader_reader() {
        loom::model(|| {
            let s = Arc::new(Shared { latch: Latch::new(), value: UnsafeCell::new(0) });
            let w = {
                let s = s.clone();
                loom::thread::spawn(move || {
                    s.latch.lock_exclusive();
                    // SAFETY: L1 — exclusive hold.
                    s.value.with_mut(|v| unsafe { *v += 1 });
                    s.latch.unlock_exclusive();
                })
            };
            let u = {
                let s = s.clone();
                loom::thread::spawn(move || {
                    s.latch.lock_shared();
                    if s.latch.try_upgrade() {
                        // SAFETY: L3 — the upgrade made this the only holder.
                        s.value.with_mut(|v| unsafe { *v += 10 });
                        s.latch.downgrade();
                    }
                    // SAFETY: L1 — shared hold, no writer active.
                    s.value.with(|v| unsafe { *v });
                    s.latch.unlock_shared();
                })
            };
            w.join().unwrap();
            u.join().unwrap();
            // SAFETY: all other threads have been joined.
            let v = s.value.with(|v| unsafe { *v });
            assert!(v == 1 || v == 11, "lost update: {v}");
        });
    }

    /// L6 model-checked: with only readers about, `try_lock_shared` never fails, in whatever
    /// order another reader's acquisition and release fall between its load and its swap.
    #[test]
    fn loom_try_lock_shared_beside_readers_never_fails() {
        loom::model(|| {
            let l = Arc::new(Latch::new());
            let r = {
                let l = l.clone();
                loom::thread::spawn(move || {
                    l.lock_shared();
                    l.unlock_shared();
                })
            };
            assert!(l.try_lock_shared(), "L6: a try failed with only a reader about");
            l.unlock_shared();
            r.join().unwrap();
        });
    }

    /// L5 model-checked: an optimistic reader that validates saw no write of an exclusive
    /// section (the page's two words, written together, are equal in what it read).
    #[test]
    fn loom_optimistic_read_validates_only_consistent_images() {
        use loom::sync::atomic::AtomicU64;
        use std::sync::atomic::Ordering::Relaxed;
        loom::model(|| {
            let latch = Arc::new(Latch::new());
            let words = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
            let w = {
                let (latch, words) = (latch.clone(), words.clone());
                loom::thread::spawn(move || {
                    latch.lock_exclusive();
                    words[0].store(1, Relaxed);
                    words[1].store(1, Relaxed);
                    latch.unlock_exclusive();
                })
            };
            if let Some(v) = latch.read_begin() {
                let (a, b) = (words[0].load(Relaxed), words[1].load(Relaxed));
                if latch.read_validate(v) {
                    assert_eq!(a, b, "L5: a validated read saw half of a write");
                }
            }
            w.join().unwrap();
        });
    }

    /// L5 with the buffer pool's optimistic step (buffer README B24): a reader follows a
    /// swizzled swip of a parent it reads optimistically to the child frame, latches the child
    /// (or reads it optimistically too) and only then validates the parent. An evictor
    /// un-swizzles the swip under both exclusive latches and reuses the frame for another page.
    /// A reader whose validations succeed always sees the child it followed the swip to.
    #[test]
    fn loom_optimistic_step_never_reaches_a_reused_frame() {
        use loom::sync::atomic::AtomicU64;
        use std::sync::atomic::Ordering::Relaxed;
        const SWIZZLED: u64 = 1;
        const PAGE_ID: u64 = 2;
        const CHILD: u64 = 7;
        const OTHER: u64 = 9;
        for latch_child in [true, false] {
            loom::model(move || {
                let parent = Arc::new(Latch::new());
                let child = Arc::new(Latch::new());
                let swip = Arc::new(AtomicU64::new(SWIZZLED));
                let page = Arc::new(AtomicU64::new(CHILD));
                let evictor = {
                    let (parent, child, swip, page) =
                        (parent.clone(), child.clone(), swip.clone(), page.clone());
                    loom::thread::spawn(move || {
                        parent.lock_exclusive();
                        if child.try_lock_exclusive() {
                            swip.store(PAGE_ID, Relaxed);
                            parent.unlock_exclusive();
                            // The frame is reused for another page while still latched.
                            page.store(OTHER, Relaxed);
                            child.unlock_exclusive();
                        } else {
                            parent.unlock_exclusive();
                        }
                    })
                };
                if let Some(v) = parent.read_begin() {
                    if swip.load(Relaxed) == SWIZZLED {
                        if latch_child {
                            child.lock_shared();
                            if parent.read_validate(v) {
                                assert_eq!(page.load(Relaxed), CHILD, "B24: latched a reused frame");
                            }
                            child.unlock_shared();
                        } else if let Some(cv) = child.read_begin() {
                            if parent.read_validate(v) {
                                let seen = page.load(Relaxed);
                                if child.read_validate(cv) {
                                    assert_eq!(seen, CHILD, "B24: read a reused frame");
                                }
                            }
                        }
                    }
                }
                evictor.join().unwrap();
            });
        }
    }

    /// L5 with a leaf read through a view and its latch-free hit (buffer README B33): the reader
    /// steps from its parent's view to the leaf's view (as above), copies the leaf's value,
    /// validates the leaf, and only then tells the policy of the hit by a conditional store to
    /// the frame's hook, holding no latch. The evictor un-swizzles and frees the frame (its hook
    /// reset, replacement R7) and reuses it for another page, whose insert resets the hook again.
    /// A validated read always saw the leaf's own value; the hit, if it lands on the reused
    /// frame, can only leave the hook marked as referenced, never another value.
    #[test]
    fn loom_optimistic_leaf_read_and_its_hit_against_eviction() {
        use loom::sync::atomic::{AtomicU32, AtomicU64};
        use std::sync::atomic::Ordering::Relaxed;
        const SWIZZLED: u64 = 1;
        const PAGE_ID: u64 = 2;
        const VALUE: u64 = 7;
        const OTHER: u64 = 9;
        const REFERENCED: u32 = 1;
        loom::model(|| {
            let parent = Arc::new(Latch::new());
            let leaf = Arc::new(Latch::new());
            let swip = Arc::new(AtomicU64::new(SWIZZLED));
            let value = Arc::new(AtomicU64::new(VALUE));
            let hook = Arc::new(AtomicU32::new(0));
            let evictor = {
                let (parent, leaf, swip, value, hook) =
                    (parent.clone(), leaf.clone(), swip.clone(), value.clone(), hook.clone());
                loom::thread::spawn(move || {
                    parent.lock_exclusive();
                    if leaf.try_lock_exclusive() {
                        swip.store(PAGE_ID, Relaxed);
                        parent.unlock_exclusive();
                        hook.store(0, Relaxed); // on_remove
                        value.store(OTHER, Relaxed); // the frame's next page
                        hook.store(0, Relaxed); // its on_insert
                        leaf.unlock_exclusive();
                    } else {
                        parent.unlock_exclusive();
                    }
                })
            };
            if let Some(v) = parent.read_begin() {
                if swip.load(Relaxed) == SWIZZLED {
                    if let Some(lv) = leaf.read_begin() {
                        if parent.read_validate(v) {
                            let seen = value.load(Relaxed);
                            if leaf.read_validate(lv) {
                                assert_eq!(seen, VALUE, "B33: a validated leaf read saw another page");
                                if hook.load(Relaxed) != REFERENCED {
                                    hook.store(REFERENCED, Relaxed);
                                }
                            }
                        }
                    }
                }
            }
            evictor.join().unwrap();
            let h = hook.load(Relaxed);
            assert!(h == 0 || h == REFERENCED, "B33: a stale hit left {h}");
        });
    }
}
