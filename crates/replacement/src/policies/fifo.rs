//! FIFO: evict the page that was loaded first, whatever its use.
//!
//! The rules R1–R11 are those of the crate README's section "The contract"; the blocked list
//! that FIFO shares with LRU and SIEVE is described in its section "Shared building blocks".
//!
//! # State
//!
//! The queue of resident frames in insertion order, under a `parking_lot` mutex. The hooks are
//! neither read nor written (R7).
//!
//! # Steps
//!
//! 1. `on_insert` appends the frame at the newest end. `on_remove` and `NotResident` unlink it.
//! 2. `on_hit` and `on_unfix` do nothing (no lock, R5).
//! 3. `next_candidate` proposes the oldest queued frame; if the queue is empty, a blocked frame;
//!    else `None`. An ignored proposal is proposed again.
//! 4. `InUse` and `SwizzledChildren` move the frame to the newest end, as if just loaded. `Root`
//!    blocks it.
//!
//! # Deviation
//!
//! Pure FIFO has no rejections. Requeuing a rejected frame at the newest end gives it a full trip
//! through the queue, which is generous for `SwizzledChildren` (its children may soon be
//! unswizzled) but keeps every proposal O(1) and never loses a frame (R3).

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::list::Tracked;
use crate::policy::{FrameHook, HitEffect, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// FIFO replacement: a queue of resident frames in insertion order under a mutex.
///
/// Hits and unfixes cost nothing. Inserts, removals, rejections and proposals take the (normally
/// uncontended) lock. The frames' [`FrameHook`]s are neither read nor written (R7).
pub struct Fifo {
    tracked: Mutex<Tracked>,
}

impl Fifo {
    /// FIFO over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Fifo {
        check_capacity(capacity);
        Fifo { tracked: Mutex::new(Tracked::new(capacity)) }
    }
}

impl Policy for Fifo {
    fn name(&self) -> String {
        "fifo".to_owned()
    }

    fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
        self.tracked.lock().insert(frame.index());
    }

    fn on_hit(&self, _frame: FrameId, _hook: &FrameHook) {}

    /// Every hit changes nothing.
    fn hit_effect(&self, _frame: FrameId, _hook: &FrameHook) -> HitEffect {
        HitEffect::Nothing
    }

    fn ignores_some_hits(&self) -> bool {
        true
    }

    fn hit_effects_are_stable(&self) -> bool {
        true
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let mut tracked = self.tracked.lock();
        match why {
            // Back of the queue, as if just loaded: the pool cannot use it now, so try the others
            // first. A frame that is not queued (free or blocked) is left alone.
            Rejection::InUse | Rejection::SwizzledChildren => {
                tracked.queue.move_to_newest(frame.index());
            }
            Rejection::Root => tracked.block(frame.index()),
            Rejection::NotResident => tracked.forget(frame.index()),
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
        self.tracked.lock().forget(frame.index());
    }

    /// The oldest queued frame; if only blocked frames are resident, one of them; else `None`.
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut tracked = self.tracked.lock();
        tracked.queue.oldest().or_else(|| tracked.blocked_candidate()).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;
    use crate::testpool::{self as sim, TestHooks};

    /// Proposes and evicts `n` victims.
    fn evict(policy: &Fifo, h: &TestHooks, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let victim = policy.next_candidate(h).unwrap();
                policy.on_remove(victim, true, &h[victim.index()]);
                victim.0
            })
            .collect()
    }

    /// Hits change nothing: the victims come in insertion order, with reloaded frames last.
    #[test]
    fn r4_reference_string_evicts_in_insertion_order() {
        let policy = Fifo::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[2, 0, 3, 1]);
        for f in [2, 2, 0, 1] {
            policy.on_hit(FrameId(f), &h[f as usize]);
        }
        assert_eq!(evict(&policy, &h, 2), [2, 0]);
        h.insert(&policy, &[0, 2]);
        assert_eq!(evict(&policy, &h, 4), [3, 1, 0, 2]);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// `InUse` and `SwizzledChildren` send the frame to the back of the queue; `Root` blocks it.
    #[test]
    fn r3_rejections_requeue_or_block() {
        let policy = Fifo::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::InUse, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::SwizzledChildren, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        // Queue now 3, 0, 1; frame 2 is blocked.
        assert_eq!(evict(&policy, &h, 3), [3, 0, 1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::NotResident, &h[2]);
        assert_eq!(policy.next_candidate(&h), None);
    }

    proptest! {
        /// FIFO written naively over a `VecDeque` of pages: a hit changes nothing, a miss with
        /// every frame taken evicts the page loaded first. `Fifo` hits and evicts the same.
        #[test]
        fn r4_matches_the_textbook_model_one_eviction_per_miss((capacity, trace) in sim::trace(10)) {
            let policy = Fifo::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let mut queue = VecDeque::new();
            let expected: Vec<(bool, Option<u64>)> = trace
                .iter()
                .map(|&x| {
                    if queue.contains(&x) {
                        return (true, None);
                    }
                    let victim = if queue.len() == capacity { queue.pop_front() } else { None };
                    queue.push_back(x);
                    (false, victim)
                })
                .collect();
            prop_assert_eq!(served, expected);
        }
    }
}
