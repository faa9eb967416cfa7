//! The emulated buffer's shared state: the lock-free page table, each frame's page and each
//! frame's pin latch (README E4, E5).

use std::sync::atomic::{AtomicU32, Ordering};

/// The latch word's exclusive bit; the bits below count pins.
const EXCLUSIVE: u32 = 1 << 31;

/// Spins of a waiter before it yields the core (the holder may be preempted, E5).
const SPINS_BEFORE_YIELD: u32 = 64;

/// Page table and frames. Entries store id + 1 so that 0 means "none".
pub(crate) struct Buffer {
    /// Page → frame + 1 (0: not resident). Set by compare-exchange from 0 by the installer, who
    /// holds the frame exclusively; cleared by the evictor, who holds it exclusively (E4).
    frame_of: Box<[AtomicU32]>,
    /// Frame → page + 1 (0: free). Written only by the frame's exclusive holder.
    page_of: Box<[AtomicU32]>,
    /// Per frame: pin count, plus [`EXCLUSIVE`] while an installer or evictor holds it.
    latch: Box<[AtomicU32]>,
}

/// What a lookup found.
pub(crate) enum Lookup {
    /// The page is resident in this frame, which is now pinned (call [`Buffer::unpin`]).
    Pinned(u32),
    /// The page is not resident.
    Absent,
}

impl Buffer {
    pub(crate) fn new(data_pages: u32, frames: u32) -> Buffer {
        let zeros = |n: u32| (0..n).map(|_| AtomicU32::new(0)).collect();
        Buffer { frame_of: zeros(data_pages), page_of: zeros(frames), latch: zeros(frames) }
    }

    pub(crate) fn frames(&self) -> u32 {
        self.page_of.len() as u32
    }

    pub(crate) fn data_pages(&self) -> u32 {
        self.frame_of.len() as u32
    }

    /// The frame holding `page`, pinned, or `Absent`. A frame that is being installed or evicted
    /// is waited for; a pinned frame is re-checked to still hold `page`, so a hit is only ever
    /// reported for the frame that holds the page (R1, E5).
    pub(crate) fn lookup(&self, page: u32) -> Lookup {
        let mut tries = 0u32;
        loop {
            let f1 = self.frame_of[page as usize].load(Ordering::Acquire);
            if f1 == 0 {
                return Lookup::Absent;
            }
            let frame = f1 - 1;
            if self.try_pin(frame) {
                if self.page_of[frame as usize].load(Ordering::Acquire) == page + 1 {
                    return Lookup::Pinned(frame);
                }
                self.unpin(frame);
            }
            backoff(&mut tries);
        }
    }

    fn try_pin(&self, frame: u32) -> bool {
        let latch = &self.latch[frame as usize];
        let old = latch.fetch_add(1, Ordering::Acquire);
        if old & EXCLUSIVE == 0 {
            return true;
        }
        latch.fetch_sub(1, Ordering::Release);
        false
    }

    pub(crate) fn unpin(&self, frame: u32) {
        self.latch[frame as usize].fetch_sub(1, Ordering::Release);
    }

    /// Takes `frame` exclusively without waiting: fails if it is pinned or held (the evictor's
    /// `InUse`).
    pub(crate) fn try_exclusive(&self, frame: u32) -> bool {
        self.latch[frame as usize]
            .compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes a free `frame` exclusively, waiting out the transient pins of lookups that read a
    /// stale page-table entry (they unpin at once).
    pub(crate) fn exclusive(&self, frame: u32) {
        let mut tries = 0u32;
        while !self.try_exclusive(frame) {
            backoff(&mut tries);
        }
    }

    pub(crate) fn release(&self, frame: u32) {
        self.latch[frame as usize].fetch_and(!EXCLUSIVE, Ordering::Release);
    }

    /// Maps `page` into `frame`, which the caller holds exclusively and which is free. Fails
    /// (and leaves the frame free) if another thread installed the page first.
    ///
    /// # Panics
    /// If the frame holds a page: the caller took a frame that was not free, a bug.
    pub(crate) fn install(&self, page: u32, frame: u32) -> bool {
        let old = self.page_of[frame as usize].load(Ordering::Relaxed);
        assert_eq!(old, 0, "frame {frame} handed out as free while holding page {}", old.wrapping_sub(1));
        self.page_of[frame as usize].store(page + 1, Ordering::Release);
        let cas =
            self.frame_of[page as usize].compare_exchange(0, frame + 1, Ordering::AcqRel, Ordering::Relaxed);
        if cas.is_err() {
            self.page_of[frame as usize].store(0, Ordering::Release);
        }
        cas.is_ok()
    }

    /// Unmaps the page of `frame`, which the caller holds exclusively; returns it, or `None` if
    /// the frame held none.
    pub(crate) fn unmap(&self, frame: u32) -> Option<u32> {
        let p1 = self.page_of[frame as usize].load(Ordering::Relaxed);
        let page = p1.checked_sub(1)?;
        self.frame_of[page as usize].store(0, Ordering::Release);
        self.page_of[frame as usize].store(0, Ordering::Release);
        Some(page)
    }

    /// The page in `frame`, if any (for the check, after the threads joined).
    pub(crate) fn page_in(&self, frame: u32) -> Option<u32> {
        self.page_of[frame as usize].load(Ordering::Acquire).checked_sub(1)
    }

    /// The frame of `page`, if resident (for the check).
    pub(crate) fn frame_of(&self, page: u32) -> Option<u32> {
        self.frame_of[page as usize].load(Ordering::Acquire).checked_sub(1)
    }

    /// The latch word of `frame` (for the check: 0 once every thread is done).
    pub(crate) fn latch_word(&self, frame: u32) -> u32 {
        self.latch[frame as usize].load(Ordering::Acquire)
    }
}

/// Spins a little, then yields: with more threads than cores the holder may be descheduled.
pub(crate) fn backoff(tries: &mut u32) {
    *tries += 1;
    if *tries < SPINS_BEFORE_YIELD {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
