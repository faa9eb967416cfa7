//! Exact least-recently-used. The rules R1–R11 are those of the crate README's section "The
//! contract"; the blocked list that LRU shares with FIFO and SIEVE is described in its section
//! "Shared building blocks".
//!
//! # State
//!
//! A doubly linked list of resident frames from the LRU end to the MRU end, plus the blocked list
//! and a *cursor*, all under one `parking_lot` mutex. The hooks are neither read nor written.
//!
//! # Steps
//!
//! 1. `on_insert`: the frame enters at the MRU end.
//! 2. `on_hit`: the frame moves to the MRU end, **under the lock**. This is a lock acquisition and
//!    shared writes on every hit, a deliberate breach of R5: it is the classic cost of exact LRU
//!    that BP-Wrapper (Ding et al., ICDE 2009) later removes by batching hits per thread.
//! 3. `InUse`: as a hit. `Root`: blocked. `NotResident` and `on_remove`: unlinked.
//! 4. `SwizzledChildren`: the frame stays where it is, and the cursor moves to the next more
//!    recently used frame (past the MRU end it wraps to the LRU end).
//! 5. `next_candidate` proposes the cursor's frame if a search is under way, else the LRU end; if
//!    the list is empty, a blocked frame; else `None`.
//! 6. Every eviction (`on_remove` with `evicted`) resets the cursor, so the next search starts at
//!    the LRU end again. A frame leaving its place (hit, removal, block) while under the cursor
//!    moves the cursor to its more recent neighbour.
//!
//! # Deviation: the cursor
//!
//! Exact LRU would always propose the LRU end, and a parent with swizzled children sitting there
//! would be proposed forever. The cursor skips it for the rest of the current search; resetting on
//! eviction keeps LRU exact across searches, at the price of one repeated rejection per search
//! while that parent stays swizzled.

use parking_lot::Mutex;

use crate::batch::{evict_batch_locked, LockedBatch};
use crate::capacity::{check_capacity, frame_id};
use crate::list::Tracked;
use crate::policy::{Evictor, FrameHook, HookTable, Policy, QueuedHook, Rejection, Verdict};
use swizzledb_sync::{FrameId, PageId};

struct State {
    /// `queue` runs from the LRU end (tail, oldest) to the MRU end (head, newest).
    tracked: Tracked,
    /// The frame to propose instead of the LRU end, after `SwizzledChildren` rejections: the
    /// search walks toward the MRU end past frames the pool cannot evict yet. Always a queued
    /// frame or `None`; reset to `None` (the LRU end) by every eviction.
    cursor: Option<usize>,
}

impl State {
    /// Keeps the cursor valid before `frame` leaves its place in the queue.
    fn step_off(&mut self, frame: usize) {
        if self.cursor == Some(frame) {
            self.cursor = self.tracked.queue.newer(frame);
        }
    }

    fn insert(&mut self, frame: usize) {
        self.step_off(frame);
        self.tracked.insert(frame);
    }

    /// A rejection (`on_rejected`, under the lock).
    fn reject(&mut self, index: usize, why: Rejection) {
        match why {
            // In use right now: as good as a hit.
            Rejection::InUse => self.touch(index),
            // Stays where it is; the search goes on with the next more recently used frame.
            Rejection::SwizzledChildren => {
                if self.tracked.queue.contains(index) {
                    self.cursor = self.tracked.queue.newer(index);
                }
            }
            Rejection::Root => {
                self.step_off(index);
                self.tracked.block(index);
            }
            Rejection::NotResident => {
                self.step_off(index);
                self.tracked.forget(index);
            }
        }
    }

    /// A removal (`on_remove`, under the lock).
    fn remove(&mut self, frame: usize, evicted: bool) {
        self.step_off(frame);
        self.tracked.forget(frame);
        if evicted {
            // The search succeeded; the next one starts again at the LRU end.
            self.cursor = None;
        }
    }

    fn touch(&mut self, frame: usize) {
        if self.tracked.queue.contains(frame) {
            self.step_off(frame);
            self.tracked.queue.move_to_newest(frame);
        }
    }
}

impl LockedBatch for State {
    fn propose(&mut self) -> Option<usize> {
        let queue = &self.tracked.queue;
        let unblocked = self.cursor.filter(|&f| queue.contains(f)).or_else(|| queue.oldest());
        unblocked.or_else(|| self.tracked.blocked_candidate())
    }

    fn guess_after(&self, frame: usize, _hooks: &dyn HookTable) -> Option<usize> {
        let queue = &self.tracked.queue;
        if !queue.contains(frame) {
            return None;
        }
        let next = queue.oldest_without(frame)?;
        queue.prefetch(next);
        Some(next)
    }

    fn record(&mut self, frame: usize, verdict: Verdict, _hook: &FrameHook) {
        match verdict {
            Verdict::Evicted => self.remove(frame, true),
            Verdict::Rejected(why) => self.reject(frame, why),
        }
    }
}

/// Exact LRU replacement.
///
/// Unlike the other policies, `on_hit` takes a lock (the list's mutex) on every hit and relinks
/// the frame, so it is neither wait-free nor free of shared writes: it violates R5 on purpose, as
/// the baseline that CLOCK-like approximations and BP-Wrapper's batching exist to beat. The
/// frames' [`FrameHook`]s are neither read nor written (R7).
pub struct Lru {
    state: Mutex<State>,
}

impl Lru {
    /// LRU over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Lru {
        check_capacity(capacity);
        Lru { state: Mutex::new(State { tracked: Tracked::new(capacity), cursor: None }) }
    }
}

impl Policy for Lru {
    fn name(&self) -> String {
        "lru".to_owned()
    }

    fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
        self.state.lock().insert(frame.index());
    }

    /// Moves the frame to the MRU end, under the lock (not R5: see the type's documentation).
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        self.state.lock().touch(frame.index());
    }

    /// BP-Wrapper's batch of inserts and hits, under one acquisition of the lock. LRU ignores
    /// unfixes and changes of children. (A first pass that prefetched the hit frames'
    /// neighbours was dropped: README "BP-Wrapper", it shortened no critical section.)
    fn on_queued(&self, calls: &[(FrameId, QueuedHook)], _table: &dyn HookTable) {
        let mut state = self.state.lock();
        for &(frame, call) in calls {
            match call {
                QueuedHook::Insert(_) => state.insert(frame.index()),
                QueuedHook::Hit => state.touch(frame.index()),
                QueuedHook::Unfix | QueuedHook::Children(_) => {}
            }
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        self.state.lock().reject(frame.index(), why);
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        self.state.lock().remove(frame.index(), evicted);
    }

    /// The cursor's frame if a search is under way, else the LRU end; if only blocked frames are
    /// resident, one of them; else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        self.state.lock().propose().map(frame_id)
    }

    /// One acquisition of the lock per victim (`evict_batch_locked`).
    fn evict_batch(&self, hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        evict_batch_locked(&self.state, hooks, evictor, max_proposals)
    }

    /// Prefetches each frame's links, if the lock is free (never waits).
    fn prefetch_accesses(&self, frames: &[FrameId], _inserted: &[PageId]) {
        if let Some(state) = self.state.try_lock() {
            for frame in frames {
                state.tracked.queue.prefetch(frame.index());
            }
        }
    }

    /// The LRU end once `frame` has been evicted (which resets the search), with its links
    /// prefetched.
    fn candidate_after(&self, frame: FrameId, hooks: &dyn HookTable) -> Option<FrameId> {
        self.state.lock().guess_after(frame.index(), hooks).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::testpool::{self as sim, TestHooks};

    fn order(policy: &Lru) -> Vec<usize> {
        policy.state.lock().tracked.queue.oldest_first()
    }

    /// Reference string over 3 frames (LRU end first):
    /// load 0 1 2 -> [0 1 2]; hit 0 -> [1 2 0]; hit 1 -> [2 0 1]; evict 2 -> [0 1];
    /// load 2 -> [0 1 2]; hit 0 -> [1 2 0]; evict 1; hit 2 -> [0 2]; evict 0; evict 2.
    #[test]
    fn r4_reference_string_evicts_least_recently_used() {
        let policy = Lru::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        h.hit(&policy, &[0, 1]);
        assert_eq!(order(&policy), [2, 0, 1]);
        assert_eq!(h.evict(&policy), 2);
        h.insert(&policy, &[2]);
        h.hit(&policy, &[0]);
        assert_eq!(h.evict(&policy), 1);
        h.hit(&policy, &[2]);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// `SwizzledChildren` leaves the frame at the LRU end but moves the search on; `InUse` moves
    /// the frame to the MRU end; an eviction restarts at the LRU end; `Root` blocks.
    #[test]
    fn r3_rejections() {
        let policy = Lru::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[1, 0]);
        assert_eq!(h.evict(&policy), 2);
        h.insert(&policy, &[2]);
        h.hit(&policy, &[3]);
        assert_eq!(order(&policy), [1, 0, 2, 3]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::SwizzledChildren, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::InUse, &h[0]);
        assert_eq!(order(&policy), [1, 2, 3, 0]);
        assert_eq!(h.evict(&policy), 2);
        // Frame 1 stayed at the LRU end and is proposed again.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::Root, &h[1]);
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// The cursor walks past every swizzled frame and wraps to the LRU end at the MRU end.
    #[test]
    fn r4_cursor_wraps_when_every_frame_has_swizzled_children() {
        let policy = Lru::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        let mut proposals = Vec::new();
        for _ in 0..4 {
            let victim = policy.next_candidate(&h).unwrap();
            policy.on_rejected(victim, Rejection::SwizzledChildren, &h[victim.index()]);
            proposals.push(victim.0);
        }
        assert_eq!(proposals, [0, 1, 2, 0]);
    }

    proptest! {
        /// LRU written naively over a `Vec` of pages from least to most recently used: a hit
        /// moves the page to the end, a miss with every frame taken evicts the first. `Lru`
        /// hits and evicts the same.
        #[test]
        fn r4_matches_the_textbook_model_one_eviction_per_miss((capacity, trace) in sim::trace(10)) {
            let policy = Lru::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let mut stack: Vec<u64> = Vec::new();
            let expected: Vec<(bool, Option<u64>)> = trace
                .iter()
                .map(|&x| {
                    let hit = stack.contains(&x);
                    stack.retain(|&p| p != x);
                    let victim = (!hit && stack.len() == capacity).then(|| stack.remove(0));
                    stack.push(x);
                    (hit, victim)
                })
                .collect();
            prop_assert_eq!(served, expected);
        }
    }
}
