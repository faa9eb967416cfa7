//! The wrapper's words per frame (`bp_wrapper` module doc, "Why the inner policy never sees a
//! hook for a frame it does not hold"): `pages[f]`, `held[f]` and the inner policy's hook, and
//! the evictor through which a batch's verdicts update them.
//!
//! # The record
//!
//! A frame's `pages[f]`, its `held[f]` flag and its private hook sit together in one 16-byte
//! record, four to a cache line: an insert writes `pages[f]`, its commit reads `held[f]` and the
//! inner policy's hook calls touch the hook, so a frame costs the wrapper one cache line where
//! three arrays cost three (140 KiB at 8,960 frames; 280 KiB when `held[f]` was a word of its
//! own). `held[f]` can be a flag because it is always `NO_PAGE` or `pages[f]`.
//!
//! A hit from the live pool does not touch the record at all: the pool names the page it found
//! (`on_page_hit`, read from the descriptor line the fix has loaded), and the entry is tagged
//! with that page instead of `pages[f]`; a hit through plain `on_hit` (the simulator) reads
//! `pages[f]`. Nor does the check for hits the inner policy ignores (rule 5): it reads the pool's
//! hook, or asks the inner policy, which answers from its own state (2Q's list byte and
//! hot/cold's byte per frame, 9 KiB at 8,960 frames; FIFO's constant).
//!
//! # Eviction lookahead (R10, not in the paper)
//!
//! Before the pool tries a candidate, the batch asks the inner policy for
//! `candidate_after(frame)`, and the pool prefetches that frame's descriptor (`Victims::prefetch`
//! adds the frame's record). 2Q and LRU answer with the oldest frame of the list they will
//! reclaim from once `frame` has left (exact unless a rejection moves the search), and prefetch
//! their own words for it; 2Q also prefetches the `A1out` index lines that the eviction of an
//! `A1in` page touches. CLOCK's hand walks descriptors in frame order, which the hardware
//! prefetcher follows; 2Q's and LRU's victims come from all over the pool, so each victim's
//! checks used to wait for a cache miss on its descriptor (the profile is in `docs/ding.md`).
//! Test: the contract simulation checks after every eviction that a guess, when given, is
//! exactly the next proposal.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::lazy::LazyCells;
use crate::policy::{Evictor, FrameHook, HookTable, Rejection, Verdict};
use swizzledb_sync::{FrameId, PageId};

/// No page: the frame is free as far as the wrapper knows. Pages are stored as id + 1 (`slot`),
/// since page 0 is a valid page id.
pub(super) const NO_PAGE: u64 = 0;

/// How `page` is stored in `pages`, `held` and queue entries: never `NO_PAGE` (ids are below 2^63).
pub(super) fn slot(page: PageId) -> u64 {
    page.get() + 1
}

/// The page a stored word names (which is not `NO_PAGE`).
pub(super) fn unslot(word: u64) -> PageId {
    PageId::new(word - 1).expect("a stored page id is a valid page id")
}

/// A frame's words in the wrapper (`bp_wrapper` module doc): four per frame to a cache line.
#[repr(align(16))]
#[derive(Default)]
pub(super) struct FrameWords {
    /// `slot` of the frame's current page (`NO_PAGE` if none): `pages[f]`.
    pub(super) page: AtomicU64,
    /// The hook the inner policy is given instead of the pool's.
    pub(super) hook: FrameHook,
    /// Whether the inner policy holds the frame, with page `pages[f]` (`held[f]` is then
    /// `pages[f]`, else `NO_PAGE`; `bp_wrapper` module doc, rule 3). Written and read under the
    /// lock only.
    pub(super) held: AtomicBool,
}

const _: () = assert!(std::mem::size_of::<FrameWords>() == 16);

/// Every frame's words; the inner policy's hook table.
pub(super) struct Frames(pub(super) LazyCells<FrameWords>);

impl HookTable for Frames {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self.0.cell(frame.index()).hook
    }
}

/// The pool's evictor as the inner policy's batch sees it (`evict_batch`, step 4): a verdict
/// first updates the wrapper's words for the frame (an eviction clears `held[f]` and `pages[f]`,
/// rule 3; a `NotResident` rejection clears `held[f]`), and then the inner policy records it.
/// The pool frees the batch's victims only after the batch (R10), so no frame is republished
/// before its removal is recorded.
///
/// Before the drain (step 6) the batch also ends, so that the wrapper can drain and go on, once
/// the inner policy is out of candidates in all but name: it proposed a frame the pool refused
/// as a root, which R3 allows only while no unblocked frame is left (or once per root), or
/// `patience` proposals in a row were refused (frames the evicting thread itself holds latched,
/// proposed in turn). Frames whose inserts wait in other threads' queues are then the only
/// ones left to try.
pub(super) struct Victims<'a> {
    pub(super) frames: &'a Frames,
    pub(super) pool: &'a mut dyn Evictor,
    /// Refused proposals in a row after which the batch ends (`None`: the drain has run).
    pub(super) patience: Option<usize>,
    /// Proposals refused since the last eviction.
    pub(super) refused: usize,
    /// Whether a proposal was refused as a root.
    pub(super) met_root: bool,
}

impl<'a> Victims<'a> {
    /// The batch's evictor, before the drain, with `max_proposals` as its budget.
    pub(super) fn new(frames: &'a Frames, pool: &'a mut dyn Evictor, max_proposals: usize) -> Self {
        Victims { frames, pool, patience: Some((max_proposals / 2).max(1)), refused: 0, met_root: false }
    }

    /// Whether the inner policy is out of candidates as far as it knows, so that draining the
    /// queues may give it more.
    pub(super) fn out_of_candidates(&self) -> bool {
        self.patience.is_some_and(|patience| self.met_root || self.refused >= patience)
    }
}

impl Evictor for Victims<'_> {
    fn wants_more(&mut self) -> bool {
        !self.out_of_candidates() && self.pool.wants_more()
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        let verdict = self.pool.try_evict(frame);
        let index = frame.index();
        match verdict {
            Verdict::Evicted => {
                self.frames.set_held(index, NO_PAGE);
                self.frames.0.cell(index).page.store(NO_PAGE, Ordering::Release);
            }
            Verdict::Rejected(Rejection::NotResident) => self.frames.set_held(index, NO_PAGE),
            Verdict::Rejected(_) => {}
        }
        if verdict == Verdict::Evicted {
            self.refused = 0;
        } else {
            self.refused += 1;
            self.met_root |= verdict == Verdict::Rejected(Rejection::Root);
        }
        verdict
    }

    /// The pool's descriptor and the wrapper's words for the frame.
    fn prefetch(&mut self, frame: FrameId) {
        self.pool.prefetch(frame);
        if let Some(words) = self.frames.0.get(frame.index()) {
            swizzledb_sync::hint::prefetch(words);
        }
    }
}

impl Frames {
    /// The page the inner policy holds `index` with; the caller holds the lock.
    #[inline(always)]
    pub(super) fn held(&self, index: usize) -> u64 {
        match self.0.get(index) {
            Some(words) if words.held.load(Ordering::Relaxed) => words.page.load(Ordering::Relaxed),
            _ => NO_PAGE,
        }
    }

    /// Whether the inner policy holds `frame` with `page` (`held[f]` is `page`); the caller holds
    /// the lock.
    #[inline(always)]
    pub(super) fn holds(&self, frame: FrameId, page: u64) -> bool {
        self.0.get(frame.index()).is_some_and(|words| {
            words.held.load(Ordering::Relaxed) && words.page.load(Ordering::Relaxed) == page
        })
    }

    /// Records that the inner policy holds the frame with `page`, which is `pages[f]`, or with
    /// nothing (`NO_PAGE`); the caller holds the lock.
    pub(super) fn set_held(&self, index: usize, page: u64) {
        let words = self.0.cell(index);
        debug_assert!(page == NO_PAGE || page == words.page.load(Ordering::Relaxed), "held[f] is pages[f]");
        words.held.store(page != NO_PAGE, Ordering::Relaxed);
    }
}
