//! CLOCK, or second chance (Corbató 1968): one reference bit per frame, kept in the frame's
//! [`FrameHook`] (R7), and a hand that clears set bits and proposes the first frame whose bit is
//! clear. The rules R1–R11 are those of the crate README's section "The contract".
//!
//! # State
//!
//! The reference bit in each frame's hook; in the policy, a state byte per frame (free, resident
//! or blocked), a resident count and the hand.
//!
//! # Steps
//!
//! 1. `on_insert`: bit = 0 (reset before the frame becomes resident), then resident.
//! 2. `on_hit`: bit = 1 via `set_if_changed`: one load, at most one plain store (R5).
//! 3. `InUse`: as a hit. `SwizzledChildren`: unchanged (the hand has moved past). `Root`: blocked.
//!    `NotResident`: as a removal. `on_remove`: bit = 0, free.
//! 4. `next_candidate` advances the hand one frame per step: it skips free and blocked frames,
//!    clears a set bit (compare-exchange, so a concurrent hit is not lost) and moves on, and
//!    proposes the first resident frame whose bit is clear, leaving the hand just past it.
//! 5. Bounded like GCLOCK: the sweep ends after a revolution that met no unblocked resident
//!    frame, or after `2 · capacity` steps. It then proposes the first unblocked resident frame it
//!    met, else the first blocked one, else `None`. Without concurrent hits one revolution clears
//!    every bit, so the bound is never reached.
//!
//! CLOCK is GCLOCK with `k = 1`, except that the blocked state lives in the policy rather than in
//! the hook, so a hit on a root cannot unblock it.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::capacity::{check_capacity, frame_id};
use crate::policy::{FrameHook, HookHit, HookTable, Policy, Rejection};
use crate::residency::{Residency, State};
use swizzledb_sync::{FrameId, PageId};

/// CLOCK: a reference bit per frame in its hook, and a clock hand.
///
/// A hit is one load of the hook and, only if the bit was clear, one plain store (R5). The
/// policy's own per-frame state (free, resident or blocked) is touched only by inserts,
/// removals, rejections and the hand.
pub struct Clock {
    frames: Residency,
    /// The next frame the hand examines. Only the evicting thread moves it (R2).
    hand: AtomicUsize,
}

impl Clock {
    /// CLOCK over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Clock {
        check_capacity(capacity);
        Clock { frames: Residency::new(capacity), hand: AtomicUsize::new(0) }
    }

    fn remove(&self, frame: FrameId, hook: &FrameHook) {
        hook.set(0);
        self.frames.remove(frame);
    }
}

impl Policy for Clock {
    fn name(&self) -> String {
        "clock".to_owned()
    }

    /// A new page starts with its bit clear. The hook is reset before the frame becomes resident,
    /// so the hand never reads a previous owner's word (R7).
    fn on_insert(&self, frame: FrameId, _page: PageId, hook: &FrameHook) {
        hook.set(0);
        self.frames.insert(frame);
    }

    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        hook.set_if_changed(1);
    }

    /// R12: a hit sets the reference bit.
    fn hook_hit(&self) -> Option<HookHit> {
        Some(HookHit { value: 1, unless: 1 })
    }

    /// R11: a hit is a conditional store to the hook, which `on_insert` resets.
    fn latch_free_hits(&self) -> bool {
        true
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        match why {
            // In use right now: as good as a reference.
            Rejection::InUse => hook.set_if_changed(1),
            // Unchanged (R3): the hand has moved past and returns next revolution.
            Rejection::SwizzledChildren => {}
            Rejection::Root => self.frames.block(frame),
            Rejection::NotResident => self.remove(frame, hook),
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, hook: &FrameHook) {
        self.remove(frame, hook);
    }

    /// Sweeps the hand from where the previous call stopped: free and blocked frames are skipped,
    /// a set bit is cleared (compare-exchange, so a concurrent hit is not lost) and the hand moves
    /// on; the first clear bit is proposed and the hand stops just past it.
    ///
    /// The sweep ends after a full revolution that met no unblocked resident frame, and in any
    /// case after `2 * capacity` steps; it then proposes the first unblocked resident frame it
    /// met, else the first blocked one, else `None` (R4). Without concurrent hits the bound is
    /// never reached: one revolution clears every bit.
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        let capacity = self.frames.capacity();
        if self.frames.resident() == 0 {
            return None;
        }
        let mut hand = self.hand.load(Ordering::Relaxed) % capacity;
        let (mut first_unblocked, mut first_blocked) = (None, None);
        let mut unblocked_this_revolution = false;
        let mut proposal = None;
        for step in 1..=capacity.saturating_mul(2) {
            let index = hand;
            hand = (hand + 1) % capacity;
            match self.frames.state(index) {
                State::Resident => {
                    let hook = hooks.hook(frame_id(index));
                    match hook.get() {
                        0 => {
                            proposal = Some(frame_id(index));
                            break;
                        }
                        bit => {
                            unblocked_this_revolution = true;
                            first_unblocked.get_or_insert(index);
                            let _ = hook.compare_exchange(bit, 0);
                        }
                    }
                }
                State::Blocked => {
                    first_blocked.get_or_insert(index);
                }
                _ => {}
            }
            if step % capacity == 0 {
                if !unblocked_this_revolution {
                    break;
                }
                unblocked_this_revolution = false;
            }
        }
        self.hand.store(hand, Ordering::Relaxed);
        proposal.or_else(|| first_unblocked.or(first_blocked).map(frame_id))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::testpool::{self as sim, TestHooks};

    /// Capacity 4, frames 0..4 loaded, hits on 0 and 2.
    /// - Hand at 0: clears 0, proposes 1 (hand -> 2).
    /// - Reload 1, hit 3. Hand at 2: clears 2 and 3, proposes 0 (hand -> 1).
    /// - Hand at 1: bit clear (reloaded, never hit), proposes 1 (hand -> 2).
    /// - Hit 0. Hand at 2: proposes 2 (bit cleared last sweep).
    #[test]
    fn r4_hand_worked_example() {
        let policy = Clock::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 2, 2]);
        assert_eq!(h.bits(), [1, 0, 1, 0]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.bits(), [0, 0, 1, 0]);
        h.insert(&policy, &[1]);
        h.hit(&policy, &[3]);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.bits(), [0, 0, 0, 0]);
        h.insert(&policy, &[0]);
        assert_eq!(h.evict(&policy), 1);
        h.hit(&policy, &[0]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 3);
        // Hand at 0: clears 0's bit, wraps around, proposes 0.
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(policy.next_candidate(&h), None);
    }

    #[test]
    fn r3_rejections() {
        let policy = Clock::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::InUse, &h[0]);
        assert_eq!(h.bits(), [1, 0, 0], "InUse acts as a reference");
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::SwizzledChildren, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        // Hand at 0: clears 0, proposes 1; then 0; the blocked 2 is skipped.
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(policy.next_candidate(&h), None);
    }

    proptest! {
        /// Corbató's second chance over the frames in order, written naively: on a miss with
        /// every frame taken, the hand clears set bits, advancing, until it finds a clear one,
        /// which is replaced in place; the hand then points just past it. Frames fill lowest
        /// first, as the simulated pool loads them. `Clock` hits and evicts the same pages.
        #[test]
        fn r4_matches_the_textbook_model_one_eviction_per_miss((capacity, trace) in sim::trace(10)) {
            let policy = Clock::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let mut frames: Vec<Option<(u64, bool)>> = vec![None; capacity];
            let mut hand = 0;
            let expected: Vec<(bool, Option<u64>)> = trace
                .iter()
                .map(|&x| {
                    if let Some(slot) = frames.iter_mut().flatten().find(|(p, _)| *p == x) {
                        slot.1 = true;
                        return (true, None);
                    }
                    if let Some(free) = frames.iter().position(Option::is_none) {
                        frames[free] = Some((x, false));
                        return (false, None);
                    }
                    while let Some((_, referenced @ true)) = &mut frames[hand] {
                        *referenced = false;
                        hand = (hand + 1) % capacity;
                    }
                    let victim = frames[hand].replace((x, false)).map(|(p, _)| p);
                    hand = (hand + 1) % capacity;
                    (false, victim)
                })
                .collect();
            prop_assert_eq!(served, expected);
        }
    }
}
