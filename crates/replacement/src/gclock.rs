//! GCLOCK [Smi78] as evaluated by Gilbert 2017, §3.3.3 (README "GCLOCK").
//!
//! Every frame has a 16-bit reference counter. A hit sets it to `k`; the hand sweeps the frames
//! in order, proposes the first resident frame whose counter is 0 and decrements the others it
//! passes. A higher `k` keeps a finer history at the price of longer sweeps.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};

use crate::{check_capacity, frame_id, FrameId, PageId, Policy, Rejection};

/// Counter value of a frame the pool rejected as a root: skipped by the hand, never decremented,
/// left alone by hits, and cleared only by removal or a new insert.
const BLOCKED: u16 = u16::MAX;

/// GCLOCK with weight `k`: per-frame counters and a clock hand.
///
/// Hits are a load and, only when the value changes, a plain store (R5): a hot frame whose counter
/// is already `k` is never written, so its cache line is not bounced between cores.
pub struct Gclock {
    k: u16,
    counters: Box<[AtomicU16]>,
    resident: Box<[AtomicBool]>,
    resident_count: AtomicUsize,
    /// The next frame the hand examines. Only the evicting thread moves it (R2).
    hand: AtomicUsize,
}

impl Gclock {
    /// The weight Gilbert used in all experiments (`sm_bufferpool_gclock_k`).
    pub const DEFAULT_K: u16 = 10;
    /// The largest accepted weight; `u16::MAX` marks blocked frames.
    pub const MAX_K: u16 = BLOCKED - 1;

    /// GCLOCK over frames `0..capacity`, all initially free, with hit weight `k`.
    ///
    /// # Panics
    /// If `k` is 0 or above [`Gclock::MAX_K`], or if `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize, k: u16) -> Gclock {
        assert!((1..=Self::MAX_K).contains(&k), "GCLOCK weight k={k} outside 1..={}", Self::MAX_K);
        check_capacity(capacity);
        Gclock {
            k,
            counters: (0..capacity).map(|_| AtomicU16::new(0)).collect(),
            resident: (0..capacity).map(|_| AtomicBool::new(false)).collect(),
            resident_count: AtomicUsize::new(0),
            hand: AtomicUsize::new(0),
        }
    }

    /// The hit weight.
    #[must_use]
    pub fn k(&self) -> u16 {
        self.k
    }

    /// Sets `frame`'s counter to `k` unless it already is `k` or the frame is blocked.
    ///
    /// A load and a conditional store, no read-modify-write (R5). The race with a concurrent
    /// [`Rejection::Root`] may unblock a root; the pool then rejects it once more and it is blocked
    /// again, which costs one extra rejection and loses nothing.
    fn touch(&self, frame: FrameId) {
        let counter = &self.counters[frame.index()];
        let current = counter.load(Ordering::Relaxed);
        if current != self.k && current != BLOCKED {
            counter.store(self.k, Ordering::Relaxed);
        }
    }

    /// Marks `frame` free and resets its counter.
    fn remove(&self, frame: FrameId) {
        self.counters[frame.index()].store(0, Ordering::Relaxed);
        if self.resident[frame.index()].swap(false, Ordering::AcqRel) {
            self.resident_count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What the hand remembers while sweeping, for when the step bound runs out.
#[derive(Default)]
struct Fallback {
    /// Unblocked resident frame with the lowest counter seen (first one on ties).
    lowest: Option<(u16, usize)>,
    /// First blocked resident frame seen.
    blocked: Option<usize>,
}

impl Fallback {
    fn offer_unblocked(&mut self, counter: u16, index: usize) {
        match self.lowest {
            Some((best, _)) if best <= counter => {}
            _ => self.lowest = Some((counter, index)),
        }
    }

    fn result(&self) -> Option<FrameId> {
        self.lowest.map(|(_, index)| index).or(self.blocked).map(frame_id)
    }
}

impl Policy for Gclock {
    fn name(&self) -> String {
        format!("gclock(k={})", self.k)
    }

    /// Gilbert's Algorithm 3.1: a newly loaded page starts at 0 and is the next victim unless hit.
    fn on_insert(&self, frame: FrameId, _page: PageId) {
        self.counters[frame.index()].store(0, Ordering::Relaxed);
        if !self.resident[frame.index()].swap(true, Ordering::AcqRel) {
            self.resident_count.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn on_hit(&self, frame: FrameId) {
        self.touch(frame);
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection) {
        match why {
            // In use right now: as good as a hit (Gilbert's `used_ref`).
            Rejection::InUse => self.touch(frame),
            Rejection::Root => {
                if self.resident[frame.index()].load(Ordering::Acquire) {
                    self.counters[frame.index()].store(BLOCKED, Ordering::Relaxed);
                }
            }
            // Unchanged, no decrement (R3): the hand has moved past and returns next revolution.
            Rejection::SwizzledChildren => {}
            Rejection::NotResident => self.remove(frame),
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool) {
        self.remove(frame);
    }

    /// Sweeps the hand from where the previous call stopped:
    ///
    /// 1. a free frame is skipped;
    /// 2. a blocked frame is skipped without decrement;
    /// 3. a resident frame with counter 0 is proposed, and the hand stops just past it;
    /// 4. any other counter is decremented (never below 0) and the hand moves on.
    ///
    /// Every frame examined is one step. The sweep stops after a full revolution that met no
    /// unblocked resident frame, and in any case after `(k + 2) * capacity` steps; it then
    /// proposes the unblocked resident frame with the lowest counter seen, else the first blocked
    /// one, else `None`. Without concurrent hits the bound is never reached: `k + 1` revolutions
    /// bring every unblocked counter to 0.
    fn next_candidate(&self) -> Option<FrameId> {
        let capacity = self.counters.len();
        if self.resident_count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let max_steps = (usize::from(self.k) + 2).saturating_mul(capacity);
        let mut hand = self.hand.load(Ordering::Relaxed) % capacity;
        let mut fallback = Fallback::default();
        let mut unblocked_this_revolution = false;
        let mut proposal = None;
        for step in 1..=max_steps {
            let index = hand;
            hand = (hand + 1) % capacity;
            if self.resident[index].load(Ordering::Acquire) {
                let counter = &self.counters[index];
                match counter.load(Ordering::Relaxed) {
                    BLOCKED => {
                        fallback.blocked.get_or_insert(index);
                    }
                    0 => {
                        proposal = Some(frame_id(index));
                        break;
                    }
                    value => {
                        unblocked_this_revolution = true;
                        // Compare-exchange so that a concurrent hit is never overwritten by a
                        // stale decrement; if one landed, the frame simply keeps its `k`.
                        let _ =
                            counter.compare_exchange(value, value - 1, Ordering::Relaxed, Ordering::Relaxed);
                        fallback.offer_unblocked(value - 1, index);
                    }
                }
            }
            if step % capacity == 0 {
                if !unblocked_this_revolution {
                    break;
                }
                unblocked_this_revolution = false;
            }
        }
        self.hand.store(hand, Ordering::Relaxed);
        proposal.or_else(|| fallback.result())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(policy: &Gclock, frames: &[u32]) {
        for &f in frames {
            policy.on_insert(FrameId(f), PageId::new(u64::from(f)).unwrap());
        }
    }

    /// The hand-worked example from the README's GCLOCK section.
    #[test]
    fn r4_hand_worked_example_k1() {
        let policy = Gclock::new(3, 1);
        insert(&policy, &[0, 1, 2]);
        policy.on_hit(FrameId(1));
        // Counters [0, 1, 0], hand at 0: frame 0 is already 0.
        assert_eq!(policy.next_candidate(), Some(FrameId(0)));
        policy.on_remove(FrameId(0), true);
        insert(&policy, &[0]);
        policy.on_hit(FrameId(0));
        policy.on_hit(FrameId(2));
        // Counters [1, 1, 1], hand at 1. Frames 1, 2, 0 are decremented to 0 in turn; the hand
        // then reaches frame 1 again, now at 0.
        assert_eq!(policy.next_candidate(), Some(FrameId(1)));
        policy.on_remove(FrameId(1), true);
        // Hand at 2, counters [0, -, 0].
        assert_eq!(policy.next_candidate(), Some(FrameId(2)));
    }

    #[test]
    fn r1_insert_resets_the_counter() {
        let policy = Gclock::new(2, 5);
        insert(&policy, &[0, 1]);
        policy.on_hit(FrameId(0));
        policy.on_remove(FrameId(0), false);
        insert(&policy, &[0]);
        // Frame 0's new page starts at 0, so the hand at 0 takes it at once.
        assert_eq!(policy.next_candidate(), Some(FrameId(0)));
    }

    #[test]
    fn r3_in_use_rejection_acts_as_a_hit() {
        let policy = Gclock::new(2, 3);
        insert(&policy, &[0, 1]);
        assert_eq!(policy.next_candidate(), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::InUse);
        // Frame 0 now has counter 3; frame 1 (counter 0) comes first.
        assert_eq!(policy.next_candidate(), Some(FrameId(1)));
        policy.on_remove(FrameId(1), true);
        assert_eq!(policy.next_candidate(), Some(FrameId(0)));
    }

    #[test]
    fn r3_swizzled_children_rejection_keeps_the_frame_tracked() {
        let policy = Gclock::new(2, 3);
        insert(&policy, &[0, 1]);
        policy.on_hit(FrameId(1));
        assert_eq!(policy.next_candidate(), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren);
        // Frame 1 is decremented 3 -> 2 on the way; frame 0 (still 0) is proposed again.
        assert_eq!(policy.next_candidate(), Some(FrameId(0)));
    }

    #[test]
    fn r3_blocked_frames_survive_hits() {
        let policy = Gclock::new(2, 2);
        insert(&policy, &[0, 1]);
        policy.on_rejected(FrameId(0), Rejection::Root);
        policy.on_hit(FrameId(0));
        policy.on_hit(FrameId(1));
        for _ in 0..5 {
            assert_eq!(policy.next_candidate(), Some(FrameId(1)));
            policy.on_rejected(FrameId(1), Rejection::InUse);
        }
    }

    #[test]
    fn r3_only_blocked_frames_resident_terminates_with_a_blocked_proposal() {
        let policy = Gclock::new(4, Gclock::MAX_K);
        insert(&policy, &[1, 3]);
        policy.on_rejected(FrameId(1), Rejection::Root);
        policy.on_rejected(FrameId(3), Rejection::Root);
        let proposal = policy.next_candidate();
        assert!(matches!(proposal, Some(FrameId(1 | 3))), "{proposal:?}");
    }

    #[test]
    fn r4_nothing_resident_gives_none() {
        let policy = Gclock::new(4, 10);
        assert_eq!(policy.next_candidate(), None);
        insert(&policy, &[2]);
        policy.on_rejected(FrameId(2), Rejection::NotResident);
        assert_eq!(policy.next_candidate(), None);
        assert_eq!(Gclock::new(0, 10).next_candidate(), None);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn zero_weight_is_refused() {
        let _ = Gclock::new(4, 0);
    }

    #[test]
    fn name_matches_the_parser_spelling() {
        assert_eq!(Gclock::new(1, 10).name(), "gclock(k=10)");
    }
}
