//! The per-thread queues (`bp_wrapper` module doc, "Queues"): queue entries and
//! their two-word encoding, and the single-producer ring of one slot.
//!
//! A thread's queue slot is its thread number (`swizzledb_sync::thread`): distinct among the
//! live threads, returned when a thread ends, so the numbers stay below the largest number of
//! threads alive at once.
//!
//! Each slot sits on cache lines of its own (`align(128)`), so two threads' appends never share
//! a line. An append is two relaxed stores of the entry's words and a release store of `tail`,
//! plus plain stores to the owner's own counters (`bump_own`): no atomic read-modify-write,
//! where the mutex per slot that this ring replaced cost two per access.
//!
//! Test `queues_hand_every_hit_over_once_and_in_order_under_concurrent_drains`: four producers
//! against a draining thread; every hit arrives once and in its thread's order (breaking either
//! ordering rule of the ring fails it).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::stats::bump_own;
use swizzledb_sync::FrameId;

/// Per-thread queues per wrapper; a thread numbered beyond them applies accesses under the lock
/// (`bp_wrapper` module doc).
pub const QUEUE_SLOTS: usize = 64;

/// What a queued entry reports.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Access {
    Insert,
    Hit,
    Unfix,
    Children(bool),
}

/// One queued access: the frame and the page it held then (as `slot`).
#[derive(Copy, Clone, Debug)]
pub(super) struct Entry {
    pub(super) frame: FrameId,
    pub(super) access: Access,
    pub(super) page: u64,
}

/// An entry's kind, as stored in the high half of its second word.
pub(super) const KIND_INSERT: u64 = 0;
pub(super) const KIND_HIT: u64 = 1;
const KIND_UNFIX: u64 = 2;
const KIND_CHILDREN: u64 = 3;
const KIND_CHILDREN_SWIZZLED: u64 = 4;

/// The frame a stored kind word names (its low half).
#[inline(always)]
pub(super) fn word_frame(word: u64) -> FrameId {
    // The truncation is the point.
    #[allow(clippy::cast_possible_truncation)]
    FrameId(word as u32)
}

impl Entry {
    /// The entry's second word: frame index in the low half, kind above it.
    #[inline(always)]
    pub(super) fn kind_word(self) -> u64 {
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
    pub(super) fn decode(page: u64, word: u64) -> Entry {
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

/// One thread's queue (`bp_wrapper` module doc, "Queues"): a ring of `queue_size` entries with one
/// producer, the thread whose number is the slot's, and consumers that hold the wrapper's lock.
#[repr(align(128))]
pub(super) struct Slot {
    /// Entries ever queued: written by the producer only (release), after the entry's words.
    pub(super) tail: AtomicUsize,
    /// Entries ever committed: written under the lock only (release), after reading them.
    pub(super) head: AtomicUsize,
    /// Page accesses (hits and inserts) reported by the owner, ever, queued or not: written by
    /// the producer only.
    pub(super) accesses: AtomicU64,
    /// Hits the owner dropped because the inner policy ignores them (`bp_wrapper` module doc, "Hits
    /// the inner policy ignores"), ever: written by the producer only.
    pub(super) dropped: AtomicU64,
    /// Hits dropped while the queue held entries, since the owner's last commit: the part of the
    /// paper's `Access_Count` (Fig. 7) that is not in the queue. Producer only.
    pub(super) dropped_since: AtomicUsize,
    /// Entry `i` is in `ring[i & mask]`: its page word and its kind word. At least `queue_size`
    /// positions, a power of two so that no division is needed.
    pub(super) ring: Box<[[AtomicU64; 2]]>,
    pub(super) mask: usize,
}

impl Slot {
    pub(super) fn new(size: usize) -> Slot {
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
    pub(super) fn push(&self, entry: Entry, counts: bool) -> usize {
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
    pub(super) fn drop_hit(&self) -> Option<(usize, usize)> {
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
    pub(super) fn words(&self, i: usize) -> (u64, u64) {
        let words = &self.ring[i & self.mask];
        (words[0].load(Ordering::Relaxed), words[1].load(Ordering::Relaxed))
    }
}
