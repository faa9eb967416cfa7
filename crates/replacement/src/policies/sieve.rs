//! SIEVE (Zhang et al., NSDI 2024): a FIFO queue, one visited bit per frame kept in the frame's
//! [`FrameHook`] (R7), and a hand that moves from the oldest entry toward the newest, clearing
//! visited bits and proposing the first unvisited frame. Unlike CLOCK, frames are not reordered:
//! survivors keep their place and new pages enter at the head. The rules R1–R11 are those of the
//! crate README's section "The contract"; the blocked list that SIEVE shares with FIFO and LRU is
//! described in its section "Shared building blocks".
//!
//! # State
//!
//! A FIFO queue (new entries at the head, the oldest at the tail), the visited bit in each
//! frame's hook, and a hand pointing at a queued frame or at nothing (the tail), all under a
//! `parking_lot` mutex except the bits.
//!
//! # Steps
//!
//! 1. `on_insert`: bit = 0 (reset before the frame is queued), then the frame enters at the head.
//! 2. `on_hit`: bit = 1 via `set_if_changed`, no lock (R5). Hits never reorder the queue.
//! 3. `next_candidate` starts at the hand, or at the tail if the hand points at nothing. While the
//!    frame there is visited, it clears the bit (compare-exchange) and moves toward the head,
//!    wrapping from the head to the tail. It proposes the first unvisited frame and leaves the
//!    hand on it, so the hand keeps its position across calls and an ignored proposal repeats.
//! 4. When a frame under the hand leaves the queue (eviction, removal, block), the hand moves to
//!    its newer neighbour, or to the tail if it was the head: the paper's `hand = obj.prev`.
//! 5. `InUse`: as a hit, so the next call clears the bit and moves on. `SwizzledChildren`: the bit
//!    is kept and the hand moves on toward the head. `Root`: blocked. `NotResident`: as a removal.
//! 6. Bounded: the walk stops after `2 · queue length` steps and proposes the frame under the
//!    hand. Without concurrent hits at most `queue length + 1` frames are examined.
//!
//! Worked example (test `r4_hand_worked_example`), capacity 4, the queue written tail first:
//!
//! - Load 0, 1, 2, 3 and hit 0, 1. The hand starts at the tail, clears 0 and 1, and proposes 2.
//! - Evict 2 (the hand moves to 3), load 2 at the head: queue `[0 1 3 2]`. Hit 0.
//! - The hand proposes 3, then, after its eviction, the new page 2 (unvisited new pages are
//!   demoted quickly). The hand then points at nothing.
//! - From the tail: 0 is visited again, so it is cleared and 1 is proposed; then 0.
//!
//! # Deviations from the paper
//!
//! Rejections (step 5) and blocked frames do not exist there. The paper evicts inside the
//! eviction loop; here the hand stops *on* the proposal and moves only when the frame actually
//! leaves the queue (step 4), which gives the same sequence when every proposal is evicted.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::list::Tracked;
use crate::policy::{FrameHook, HookHit, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

struct State {
    /// `queue` runs from the tail (oldest) to the head (newest insert).
    tracked: Tracked,
    /// The frame the hand points at: a queued frame, or `None` for the tail.
    hand: Option<usize>,
}

impl State {
    /// Before `frame` leaves the queue, moves the hand off it toward the head (the paper's
    /// `hand = obj.prev`), or to `None` (the tail) if it was the head.
    fn step_off(&mut self, frame: usize) {
        if self.hand == Some(frame) {
            self.hand = self.tracked.queue.newer(frame);
        }
    }
}

/// SIEVE replacement.
///
/// A hit is one load of the hook and, only if the bit was clear, one plain store (R5). Inserts,
/// removals, rejections and proposals take the policy's (normally uncontended) mutex.
pub struct Sieve {
    state: Mutex<State>,
}

impl Sieve {
    /// SIEVE over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Sieve {
        check_capacity(capacity);
        Sieve { state: Mutex::new(State { tracked: Tracked::new(capacity), hand: None }) }
    }
}

impl Policy for Sieve {
    fn name(&self) -> String {
        "sieve".to_owned()
    }

    /// The new page enters at the head, unvisited. The hook is reset before the frame is queued,
    /// so the hand never reads a previous owner's word (R7).
    fn on_insert(&self, frame: FrameId, _page: PageId, hook: &FrameHook) {
        hook.set(0);
        let mut state = self.state.lock();
        state.step_off(frame.index());
        state.tracked.insert(frame.index());
    }

    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        hook.set_if_changed(1);
    }

    /// R12: a hit marks the frame visited.
    fn hook_hit(&self) -> Option<HookHit> {
        Some(HookHit { value: 1, unless: 1 })
    }

    /// R11: a hit is a conditional store to the hook, which `on_insert` resets.
    fn latch_free_hits(&self) -> bool {
        true
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        let index = frame.index();
        match why {
            // In use right now: as good as a hit. The hand, still on the frame, clears the bit
            // and moves on at the next call.
            Rejection::InUse => hook.set_if_changed(1),
            // Stays in place with its bit; the hand moves on toward the head.
            Rejection::SwizzledChildren => self.state.lock().step_off(index),
            Rejection::Root => {
                let mut state = self.state.lock();
                state.step_off(index);
                state.tracked.block(index);
            }
            Rejection::NotResident => {
                let mut state = self.state.lock();
                state.step_off(index);
                state.tracked.forget(index);
            }
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
        let mut state = self.state.lock();
        state.step_off(frame.index());
        state.tracked.forget(frame.index());
    }

    /// From the hand (or the tail): while the frame is visited, clear its bit (compare-exchange,
    /// so a concurrent hit is not lost) and move toward the head, wrapping to the tail; propose
    /// the first unvisited frame and leave the hand on it.
    ///
    /// Without concurrent hits at most `queue length + 1` frames are examined. The walk is
    /// bounded by `2 * queue length + 1` steps, after which the frame under the hand is proposed.
    /// If only blocked frames are resident, one of them is proposed; `None` if nothing is (R4).
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        let queue = &state.tracked.queue;
        let Some(tail) = queue.oldest() else {
            return state.tracked.blocked_candidate().map(frame_id);
        };
        let mut at = state.hand.filter(|&f| queue.contains(f)).unwrap_or(tail);
        for _ in 0..queue.len().saturating_mul(2) {
            let hook = hooks.hook(frame_id(at));
            match hook.get() {
                0 => break,
                visited => {
                    let _ = hook.compare_exchange(visited, 0);
                    at = queue.newer(at).unwrap_or(tail);
                }
            }
        }
        state.hand = Some(at);
        Some(frame_id(at))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashSet, VecDeque};

    use proptest::prelude::*;

    use super::*;
    use crate::testpool::{self as sim, Op, Outcome, Pool, TestHooks};

    /// Hand-worked example (module docs), capacity 4, queue written tail (oldest) first:
    /// - load 0 1 2 3, hit 0 1: hand starts at the tail, clears 0 and 1, proposes 2.
    /// - evict 2 (hand -> 3), load 2 at the head: queue [0 1 3 2]; hit 0.
    /// - hand at 3: unvisited, proposed. Evict (hand -> 2).
    /// - hand at 2: the new page, unvisited, proposed (quick demotion). Evict (hand -> tail).
    /// - hand at 0: visited again, cleared; 1 proposed. Evict; then 0.
    #[test]
    fn r4_hand_worked_example() {
        let policy = Sieve::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 1, 1]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.bits(), [0, 0, 0, 0]);
        h.insert(&policy, &[2]);
        assert_eq!(policy.state.lock().tracked.queue.oldest_first(), [0, 1, 3, 2]);
        h.hit(&policy, &[0]);
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.bits(), [1, 0, 0, 0], "the hand has not reached frame 0 again yet");
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// The hand keeps its position across calls: an ignored proposal is proposed again, and a
    /// frame behind the hand is not reconsidered until the hand wraps.
    #[test]
    fn r4_hand_persists_across_calls() {
        let policy = Sieve::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        h.hit(&policy, &[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)), "ignored proposal repeats");
        policy.on_rejected(FrameId(1), Rejection::SwizzledChildren, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::InUse, &h[2]);
        // Hand on 2 (now visited): clears it, wraps to 0 (cleared earlier), proposes 0.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// SIEVE as the paper's Figure 2 (pseudo-code) has it, over a `VecDeque` of page ids from
    /// the tail (oldest) to the head (newest) and a set of visited pages. Evict: `o` = the hand,
    /// or the tail if the hand is null; while `o` is visited, clear it and go to `o.prev` (toward
    /// the head), or to the tail from the head; then `hand = o.prev` (null from the head) and
    /// `o` goes. A new object enters at the head, unvisited; a hit sets visited.
    struct Model {
        c: usize,
        queue: VecDeque<u64>,
        visited: HashSet<u64>,
        hand: Option<u64>,
    }

    impl Model {
        fn prev(&self, o: u64) -> Option<u64> {
            let at = self.queue.iter().position(|&p| p == o).unwrap();
            self.queue.get(at + 1).copied()
        }

        fn request(&mut self, x: u64) -> (bool, Option<u64>) {
            if self.queue.contains(&x) {
                self.visited.insert(x);
                return (true, None);
            }
            let mut evicted = None;
            if self.queue.len() == self.c {
                let tail = self.queue[0];
                let mut o = self.hand.unwrap_or(tail);
                while self.visited.remove(&o) {
                    o = self.prev(o).unwrap_or(tail);
                }
                self.hand = self.prev(o);
                self.queue.retain(|&p| p != o);
                evicted = Some(o);
            }
            self.queue.push_back(x);
            (false, evicted)
        }
    }

    proptest! {
        /// Serving a trace one eviction per miss, `Sieve` hits, evicts, and keeps its queue,
        /// visited bits and hand exactly as the paper's pseudo-code does, after every request.
        #[test]
        fn r4_matches_the_paper_model_one_eviction_per_miss((capacity, trace) in sim::trace(10)) {
            let policy = Sieve::new(capacity);
            let mut pool = Pool::new(capacity);
            let mut model = Model { c: capacity, queue: VecDeque::new(), visited: HashSet::new(), hand: None };
            for (t, &x) in trace.iter().enumerate() {
                let hit = pool.frame_of(x).is_some();
                let served = (hit, pool.fix(&policy, x));
                prop_assert_eq!(served, model.request(x), "request {} (page {})", t, x);
                let state = policy.state.lock();
                let queue: Vec<u64> = state.tracked.queue.oldest_first().into_iter().map(|f| pool.pages[f].unwrap()).collect();
                let visited: Vec<bool> = queue.iter().map(|&p| pool.hooks[pool.frame_of(p).unwrap()].get() != 0).collect();
                let hand = state.hand.filter(|&f| state.tracked.queue.contains(f)).map(|f| pool.pages[f].unwrap());
                drop(state);
                prop_assert_eq!(&queue, &Vec::from(model.queue.clone()), "queue after request {}", t);
                let expected: Vec<bool> = queue.iter().map(|p| model.visited.contains(p)).collect();
                prop_assert_eq!(visited, expected, "visited bits after request {}", t);
                prop_assert_eq!(hand, model.hand, "hand after request {}", t);
            }
        }

        /// The paper's SIEVE with the module docs' rejections (step 5) and the blocked list of
        /// "Shared building blocks", over frames: `InUse` marks the frame visited (the hand
        /// stays, so the next call clears it and moves on), `SwizzledChildren` moves the hand on
        /// toward the head, `Root` and `NotResident` take the frame out of the queue (the hand
        /// first moving on), a root into the blocked list, proposed oldest first and rotated
        /// only when the queue is empty; an ignored proposal repeats. `Sieve` proposes the
        /// same frames and keeps the same queue, blocked list, bits and hand on random pool
        /// histories (ghost-free, so frames are what matter).
        #[test]
        fn r3_r4_matches_the_model_with_rejections((capacity, ops) in sim::scenario(10)) {
            let policy = Sieve::new(capacity);
            let mut pool = Pool::new(capacity);
            let mut model = FrameModel {
                queue: VecDeque::new(),
                blocked: VecDeque::new(),
                visited: vec![false; capacity],
                hand: None,
            };
            for (t, &op) in ops.iter().enumerate() {
                match op {
                    Op::Fix(page) => match pool.frame_of(page) {
                        Some(f) => model.visited[f] = true,
                        None => {
                            let f = match pool.pages.iter().position(Option::is_none) {
                                Some(free) => free,
                                None => {
                                    let victim = model.propose().unwrap();
                                    model.remove(victim);
                                    victim
                                }
                            };
                            model.insert(f);
                        }
                    },
                    Op::Free(page) => {
                        if let Some(f) = pool.frame_of(page) {
                            model.remove(f);
                        }
                    }
                    Op::Propose(outcome) => {
                        let expected = model.propose();
                        let proposal = pool.propose(&policy).map(FrameId::index);
                        prop_assert_eq!(proposal, expected, "proposal at step {} ({:?})", t, op);
                        if let Some(f) = proposal {
                            match outcome {
                                Outcome::Evict | Outcome::Reject(Rejection::NotResident) => model.remove(f),
                                Outcome::Reject(Rejection::InUse) => model.visited[f] = true,
                                Outcome::Reject(Rejection::SwizzledChildren) => model.step_off(f),
                                Outcome::Reject(Rejection::Root) => {
                                    model.step_off(f);
                                    if let Some(at) = model.queue.iter().position(|&g| g == f) {
                                        model.queue.remove(at);
                                        model.blocked.push_back(f);
                                    }
                                }
                                Outcome::Ignore => {}
                            }
                            pool.answer(&policy, FrameId(f as u32), outcome);
                        }
                    }
                }
                if !matches!(op, Op::Propose(_)) {
                    sim::apply(&mut pool, &policy, op);
                }
                let state = policy.state.lock();
                let seen = (
                    state.tracked.queue.oldest_first(),
                    state.tracked.blocked.oldest_first(),
                    state.hand.filter(|&f| state.tracked.queue.contains(f)),
                );
                drop(state);
                let hand = model.hand.filter(|h| model.queue.contains(h));
                let expected = (Vec::from(model.queue.clone()), Vec::from(model.blocked.clone()), hand);
                prop_assert_eq!(seen, expected, "after step {} ({:?})", t, op);
                let queued: Vec<usize> = model.queue.iter().copied().collect();
                let bits: Vec<bool> = queued.iter().map(|&f| pool.hooks[f].get() != 0).collect();
                let want: Vec<bool> = queued.iter().map(|&f| model.visited[f]).collect();
                prop_assert_eq!(bits, want, "visited bits after step {}", t);
            }
        }
    }

    /// [`Model`] over frames, with the blocked list (test
    /// `r3_r4_matches_the_model_with_rejections`).
    struct FrameModel {
        queue: VecDeque<usize>,
        blocked: VecDeque<usize>,
        visited: Vec<bool>,
        hand: Option<usize>,
    }

    impl FrameModel {
        fn prev(&self, f: usize) -> Option<usize> {
            let at = self.queue.iter().position(|&g| g == f)?;
            self.queue.get(at + 1).copied()
        }

        /// The paper's `hand = obj.prev` before `f` leaves the hand's place.
        fn step_off(&mut self, f: usize) {
            if self.hand == Some(f) {
                self.hand = self.prev(f);
            }
        }

        fn remove(&mut self, f: usize) {
            self.step_off(f);
            self.queue.retain(|&g| g != f);
            self.blocked.retain(|&g| g != f);
        }

        fn insert(&mut self, f: usize) {
            self.remove(f);
            self.visited[f] = false;
            self.queue.push_back(f);
        }

        fn propose(&mut self) -> Option<usize> {
            let Some(&tail) = self.queue.front() else {
                let f = self.blocked.pop_front()?;
                self.blocked.push_back(f);
                return Some(f);
            };
            let mut o = self.hand.filter(|h| self.queue.contains(h)).unwrap_or(tail);
            while self.visited[o] {
                self.visited[o] = false;
                o = self.prev(o).unwrap_or(tail);
            }
            self.hand = Some(o);
            Some(o)
        }
    }
}
