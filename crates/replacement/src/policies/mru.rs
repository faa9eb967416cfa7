//! MRU: evict the most recently used page. Chou & DeWitt (VLDB 1985, DBMIN) name it the right
//! policy for a *looping sequential* reference pattern, a file scanned over and over (the inner
//! relation of a nested-loops join) that does not fit in its buffers: LRU then misses on every
//! reference, while MRU keeps a fixed part of the loop resident.
//!
//! # State
//!
//! The unblocked resident frames from least to most recently used, the blocked list and the
//! cursor, under one mutex.
//!
//! # Steps
//!
//! 1. `on_insert`: the frame enters at the MRU end (a load is a reference).
//! 2. `on_hit`: the frame moves to the MRU end, under the lock (not R5).
//! 3. `next_candidate` proposes the cursor's frame during a search, else the MRU end; if only
//!    blocked frames are resident, one of them; else `None`.
//! 4. `InUse` and `SwizzledChildren`: the frame stays; the cursor moves to the next *less*
//!    recently used frame, wrapping from the LRU end to the MRU end.
//! 5. `Root`: blocked. `NotResident` and `on_remove`: unlinked; a frame under the cursor first
//!    moves it on. An eviction resets the cursor to the MRU end.
//!
//! # Worked example
//!
//! Test `r4_looping_sequential_pattern_keeps_most_of_the_loop`: a loop over pages a b c d with 3
//! frames. After a b c, d evicts c (the MRU); a b hit; c evicts b; d a hit; b evicts a; and so
//! on: after the first pass one miss every 3 references, where LRU misses all 16.
//!
//! # Deviations
//!
//! Chou & DeWitt use MRU *within* one query's locality set under DBMIN, never as the global policy
//! of a shared pool. Here it is global, so it evicts hot B-tree pages as readily as scan pages: it
//! is a baseline for looping workloads, not a general policy. `InUse` is not a hit: the fix that
//! holds the frame was already reported as a hit, so counting the rejection as another reference
//! would double it, and under MRU would make the frame the next victim again.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::list::Queues;
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// The list of unblocked resident frames, from least (oldest) to most recently used (newest).
const RESIDENT: usize = 0;
/// Frames rejected as roots (R3).
const BLOCKED: usize = 1;

struct State {
    queues: Queues,
    /// The frame to propose instead of the MRU end after `InUse` or `SwizzledChildren`
    /// rejections: the search walks toward the LRU end. Always a frame of [`RESIDENT`] or `None`;
    /// reset to `None` (the MRU end) by every eviction.
    cursor: Option<usize>,
}

impl State {
    /// The next frame of the search after `frame`: the next less recently used one, wrapping from
    /// the LRU end to the MRU end; `None` if `frame` is the only one.
    fn successor(&self, frame: usize) -> Option<usize> {
        let next = self.queues.older(frame).or_else(|| self.queues.newest(RESIDENT))?;
        (next != frame).then_some(next)
    }

    /// Keeps the cursor valid before `frame` leaves its place in the list.
    fn step_off(&mut self, frame: usize) {
        if self.cursor == Some(frame) {
            self.cursor = self.successor(frame);
        }
    }

    /// A reference: the frame becomes the most recently used (blocked frames stay blocked).
    fn touch(&mut self, frame: usize) {
        if self.queues.queue_of(frame) == Some(RESIDENT) {
            self.step_off(frame);
            self.queues.push_newest(RESIDENT, frame);
        }
    }

    fn forget(&mut self, frame: usize) {
        self.step_off(frame);
        self.queues.unlink(frame);
    }
}

/// Most-recently-used replacement.
///
/// Like [`crate::Lru`], every hit relinks its frame under the policy's mutex, a documented breach
/// of R5 (the per-hit lock that BP-Wrapper batches away). The frames' [`FrameHook`]s are neither
/// read nor written (R7).
pub struct Mru {
    state: Mutex<State>,
}

impl Mru {
    /// MRU over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Mru {
        check_capacity(capacity);
        Mru { state: Mutex::new(State { queues: Queues::new(capacity, 2), cursor: None }) }
    }
}

impl Policy for Mru {
    fn name(&self) -> String {
        "mru".to_owned()
    }

    /// Loading is a reference: the new page is the most recently used.
    fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
        let mut state = self.state.lock();
        state.forget(frame.index());
        state.queues.push_newest(RESIDENT, frame.index());
    }

    /// Moves the frame to the MRU end, under the lock (not R5).
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        self.state.lock().touch(frame.index());
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let index = frame.index();
        match why {
            // The page is in use right now, which under MRU would make it the next victim again.
            // The fix that holds it was already reported as a hit, so leave it in place and move
            // the search on to the next less recently used frame, as for swizzled children.
            Rejection::InUse | Rejection::SwizzledChildren => {
                if state.queues.queue_of(index) == Some(RESIDENT) {
                    state.cursor = state.successor(index);
                }
            }
            Rejection::Root => {
                if state.queues.queue_of(index) == Some(RESIDENT) {
                    state.step_off(index);
                    state.queues.push_newest(BLOCKED, index);
                }
            }
            Rejection::NotResident => state.forget(index),
        }
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let mut state = self.state.lock();
        state.forget(frame.index());
        if evicted {
            // The search succeeded; the next one starts again at the MRU end.
            state.cursor = None;
        }
    }

    /// The cursor's frame if a search is under way, else the MRU end; if only blocked frames are
    /// resident, one of them; else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        let queues = &state.queues;
        let unblocked = state
            .cursor
            .filter(|&f| queues.queue_of(f) == Some(RESIDENT))
            .or_else(|| queues.newest(RESIDENT));
        unblocked.or_else(|| state.queues.rotate_oldest(BLOCKED)).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;
    use proptest::prelude::*;

    fn order(policy: &Mru) -> Vec<usize> {
        policy.state.lock().queues.oldest_first(RESIDENT)
    }

    /// Reference string over 3 frames (LRU end first):
    /// load 0 1 2 -> [0 1 2]; hit 0 -> [1 2 0]; evict 0 (the MRU end) -> [1 2];
    /// load 0 -> [1 2 0]; hit 1 -> [2 0 1]; evict 1; evict 0; hit 2; evict 2.
    #[test]
    fn r4_reference_string_evicts_most_recently_used() {
        let policy = Mru::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        h.hit(&policy, &[0]);
        assert_eq!(order(&policy), [1, 2, 0]);
        assert_eq!(h.evict(&policy), 0);
        h.insert(&policy, &[0]);
        h.hit(&policy, &[1]);
        assert_eq!(order(&policy), [2, 0, 1]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 0);
        h.hit(&policy, &[2]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// Chou & DeWitt's looping-sequential case, hand-worked: a loop over 4 pages a b c d with 3
    /// frames. LRU misses on every reference once the loop is running. MRU, counting misses:
    /// a b c miss (frames hold a b c); d misses and evicts c (the MRU); then a b hit, c misses and
    /// evicts b, d hits... After the first pass MRU misses once every 3 references, where LRU
    /// misses all 16. The test plays the pool: page -> frame, and a miss evicts the proposal.
    #[test]
    fn r4_looping_sequential_pattern_keeps_most_of_the_loop() {
        let capacity = 3;
        let policy = Mru::new(capacity);
        let h = TestHooks::new(capacity);
        let mut frames: Vec<Option<u64>> = vec![None; capacity];
        let mut misses = Vec::new();
        for (t, page) in [0u64, 1, 2, 3].iter().cycle().take(16).enumerate() {
            if let Some(f) = frames.iter().position(|&p| p == Some(*page)) {
                policy.on_hit(FrameId(f as u32), &h[f]);
                continue;
            }
            misses.push(t);
            let f = match frames.iter().position(Option::is_none) {
                Some(f) => f,
                None => h.evict(&policy) as usize,
            };
            frames[f] = Some(*page);
            policy.on_insert(FrameId(f as u32), PageId::new(*page).unwrap(), &h[f]);
        }
        // t:  0 1 2 3 | 4 5 6 7 | 8 9 10 11 | 12 13 14 15
        // pg: a b c d | a b c d | a b c  d  | a  b  c  d
        // 3 (d) evicts c; 6 (c) evicts b; 9 (b) evicts a; 12 (a) evicts d; 15 (d) evicts c.
        assert_eq!(misses, [0, 1, 2, 3, 6, 9, 12, 15]);
    }

    /// `InUse` and `SwizzledChildren` leave the frame in place and move the search toward the LRU
    /// end (wrapping to the MRU end); an eviction restarts at the MRU end; `Root` blocks.
    #[test]
    fn r3_rejections_move_the_search_toward_the_lru_end() {
        let policy = Mru::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(3)));
        policy.on_rejected(FrameId(3), Rejection::InUse, &h[3]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::SwizzledChildren, &h[2]);
        // A hit on the cursor's frame moves the cursor on before the frame moves.
        h.hit(&policy, &[1]);
        assert_eq!(order(&policy), [0, 2, 3, 1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        // Past the LRU end the search wraps to the MRU end.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 3, "after an eviction the search restarts at the MRU end");
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 0, "the root goes last");
        assert_eq!(policy.next_candidate(&h), None);
    }

    proptest! {
        /// Invariants: every resident frame is in exactly one list (the MRU list or the blocked
        /// one), free frames in none; the cursor is `None` or a frame of the MRU list. The run
        /// itself checks R3 and R4 on every proposal.
        #[test]
        fn invariants_hold_over_random_pool_runs((capacity, ops) in sim::scenario(10)) {
            let policy = Mru::new(capacity);
            sim::run(capacity, &ops, &policy, |pool| {
                let state = policy.state.lock();
                for (f, page) in pool.pages.iter().enumerate() {
                    let expected = page.map(|_| if pool.blocked[f] { BLOCKED } else { RESIDENT });
                    assert_eq!(state.queues.queue_of(f), expected, "frame {f}");
                }
                if let Some(c) = state.cursor {
                    assert_eq!(state.queues.queue_of(c), Some(RESIDENT));
                }
            });
        }
    }

    proptest! {
        /// MRU written naively over a `Vec` of pages from least to most recently used: a hit
        /// moves the page to the end, a miss with every frame taken evicts the last (the most
        /// recently used). `Mru` hits and evicts the same.
        #[test]
        fn r4_matches_the_textbook_model_one_eviction_per_miss((capacity, trace) in sim::trace(10)) {
            let policy = Mru::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let mut stack: Vec<u64> = Vec::new();
            let expected: Vec<(bool, Option<u64>)> = trace
                .iter()
                .map(|&x| {
                    let hit = stack.contains(&x);
                    stack.retain(|&p| p != x);
                    let victim = if !hit && stack.len() == capacity { stack.pop() } else { None };
                    stack.push(x);
                    (hit, victim)
                })
                .collect();
            prop_assert_eq!(served, expected);
        }
    }
}
