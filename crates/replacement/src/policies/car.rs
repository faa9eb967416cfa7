//! CAR, Clock with Adaptive Replacement (Bansal & Modha, FAST 2004): ARC with its two LRU lists
//! replaced by two clocks, T1 and T2, so that a hit only sets a reference bit. The bit lives in the
//! frame's [`FrameHook`] (R7), and a hit takes no lock (R5). The ghost lists B1 and B2 and the
//! adaptive target `p` are ARC's: [`super::arc`], whose steps and deviations the notes below cite
//! as ARC's.
//!
//! Each clock is a [`crate::list::FrameList`]: the clock's *head* (where its hand points) is the
//! list's oldest end, its *tail* (just behind the hand) the newest end. Advancing the hand past a
//! frame is moving it from the head to the tail.
//!
//! # State
//!
//! The clocks T1 and T2 (each a list from its head to its tail), a reference bit per frame in its
//! hook (R7), and ARC's B1, B2, p, blocked list and per-frame list and page. Everything but the
//! bits lives under a `parking_lot` mutex, with a count of frames per clock that the hand *passed*
//! since the last eviction. The clocks, the passed counts, the rule that avoids a fully passed
//! clock and the rejection rules (`TwoLists::reject`) are [`TwoLists`] (`src/list.rs`), shared
//! with S3-FIFO.
//!
//! # Steps
//!
//! 1. `on_insert`: bit = 0, before the frame is queued. Then ARC's step 1, with "the tail of T1 or
//!    T2" for "the MRU end".
//! 2. `on_hit`: bit = 1 via `set_if_changed`, with no lock (R5). Hits never move frames.
//! 3. `on_remove`: as ARC's step 3.
//! 4. `next_candidate` repeats: pick T1 if `|T1| ≥ max(1, p)`, else T2, and look at its head. If
//!    the bit is clear, propose the frame, which stays at the head, so an ignored proposal
//!    repeats. If the bit is set, clear it (compare-exchange, so a concurrent hit is not lost) and
//!    move the frame to the tail of **T2**, from either clock.
//! 5. Bounded: every step but the last clears a bit, so without concurrent hits at most
//!    `|T1| + |T2| + 1` frames are examined. After `2 (|T1| + |T2|) + 1` steps the chosen head is
//!    proposed. If both clocks are empty, a blocked frame is proposed (rotating); else `None`.
//! 6. `InUse` and `SwizzledChildren`: the hand passes the frame. It moves from the head to the
//!    tail of its own clock with its bit unchanged, and the clock's passed count grows. A clock
//!    whose passed count has reached its size is not picked while the other clock still has
//!    unpassed frames. Every eviction resets both counts. `Root`: blocked. `NotResident`:
//!    forgotten without a ghost. `InUse` is no hit, for ARC's reason.
//!
//! Invariants, checked like ARC's by `car::tests::r3_r4_invariants_hold_on_random_histories`:
//! `|T1| + |T2| ≤ c`, `|T1| + |B1| ≤ c`, `|T1| + |T2| + |B1| + |B2| ≤ 2c`, `0 ≤ p ≤ c`, no ghost
//! for a resident page, and bounded ghost memory. With one eviction per miss and no rejections,
//! CAR matches a naive model of the paper's pseudocode exactly, with no deviation: its paper
//! already replaces before it adapts. The proptest
//! `car::tests::r4_matches_the_paper_model_one_eviction_per_miss` compares hits, victims, clocks,
//! ghosts and p.
//!
//! # Which definition, and Gilbert's
//!
//! We follow the paper. In step 4 it says to clear a referenced T1 head's bit and *make it the
//! tail page in T2*: a page referenced again while in T1 has been seen twice. Gilbert 2017
//! (§3.3.4) formalizes CAR differently in his Algorithm 3.4: a referenced T1 head has its bit
//! cleared and T1's hand moves on, so it stays in T1. With that rule, pages reach T2 only through
//! ghost hits. His code (Listing 3.10, `switch_head_to_tail(T_1, T_2, …)`) does what the paper
//! says, not what his pseudocode says, so our CAR matches his implementation on this point. His
//! other differences from ours:
//!
//! - His `c` is the frame count minus one (frame 0 is reserved in Zero).
//! - He counts hits on unfix too.
//! - His `used_ref` treats `InUse` as a hit.
//! - His per-call `blocked_t_1` / `blocked_t_2` counters are our passed counts. Ours persist
//!   across calls until an eviction, because our pool calls `next_candidate` once per proposal.
//! - His `pick_victim` never ends if nothing is evictable.
//!
//! # Deviations from the paper
//!
//! ARC's trimming by size, integer p, and rejections and roots. Also, if T2 is empty when it is
//! picked, T1 is used. The paper cannot meet this case, because a full cache with an empty T2 has
//! `|T1| = c ≥ p`.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_example` (hand-worked), capacity 4, clocks head first:
//!
//! - Load pages 1 to 4 into frames 0 to 3 and hit frames 0 and 1. `T1 = [0 1 2 3]`.
//! - The hand finds 0 and 1 referenced and moves them to `T2 = [0 1]` with cleared bits. It evicts
//!   2, then 3: `B1 = [3 4]`.
//! - Page 3 comes back into frame 2. This is a B1 ghost hit: p = 1, `T2 = [0 1 2]`. Page 9 goes
//!   into frame 3: `T1 = [3]`.
//! - Hit 3 and 1. T1's head 3 is referenced, so it moves to T2's tail, leaving T1 empty. T2's head
//!   0 is clear and is evicted. T2's head 1 is referenced and goes round, then 2 is evicted:
//!   `B2 = [1 3]`.
//! - Page 1 comes back, a B2 ghost hit: p = 0.

use parking_lot::Mutex;

use super::arc::History;
use crate::capacity::{check_capacity, frame_id};
use crate::list::{Place, TwoLists};
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

struct State {
    /// T1 (`first`) and T2 (`second`), each from the head (oldest) to the tail (newest).
    lists: TwoLists,
    history: History,
}

impl State {
    /// The clock to examine next: T1 if `|T1| >= max(1, p)`, else T2; a clock whose every frame
    /// was passed by rejections since the last eviction is avoided while the other still has
    /// unpassed frames (module docs, step 6); an empty clock is never chosen (at least one must
    /// be non-empty). Returns true for T2.
    fn choose(&self) -> bool {
        self.lists.choose_second(self.lists.first.len() >= self.history.p.max(1))
    }
}

/// CAR replacement (Bansal & Modha, FAST 2004).
///
/// A hit is one load of the hook and, only if the bit was clear, one plain store (R5). Inserts,
/// removals, rejections and proposals take the policy's mutex. The ghost lists hold at most
/// `2 * capacity` page ids.
pub struct Car {
    state: Mutex<State>,
}

impl Car {
    /// CAR over frames `0..capacity`, all initially free, with `p = 0`.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Car {
        check_capacity(capacity);
        Car { state: Mutex::new(State { lists: TwoLists::new(capacity), history: History::new(capacity) }) }
    }
}

impl Policy for Car {
    fn name(&self) -> String {
        "car".to_owned()
    }

    /// The bit is cleared first (R7). A page with a ghost in B1 or B2 adapts `p` and goes to the
    /// tail of T2; any other page goes to the tail of T1, after the history is trimmed to make
    /// room for it (module docs, step 1).
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        hook.set(0);
        let mut guard = self.state.lock();
        let state = &mut *guard;
        state.lists.take(frame.index());
        let (t1, t2) = (state.lists.first.len(), state.lists.second.len());
        let second = state.history.admit(page, t1, t2);
        state.lists.insert(frame.index(), page, second);
    }

    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        hook.set_if_changed(1);
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        self.state.lock().lists.reject(frame.index(), why);
    }

    /// An evicted page becomes the newest ghost of B1 or B2, after the clock it left; a freed
    /// page leaves no ghost.
    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let (place, page) = state.lists.take(frame.index());
        if evicted {
            state.lists.reset_passes();
            let second = match place {
                Place::Free => return,
                Place::First | Place::Blocked { from_second: false } => false,
                Place::Second | Place::Blocked { from_second: true } => true,
            };
            if let Some(page) = page {
                let (t1, t2) = (state.lists.first.len(), state.lists.second.len());
                state.history.remember(page, second, t1, t2);
            }
        }
    }

    /// The paper's REPLACE loop (module docs, step 4): at the head of the chosen clock, a frame
    /// whose bit is clear is proposed (it stays at the head until it is evicted); a set bit is
    /// cleared (compare-exchange, so a concurrent hit is not lost) and the frame goes to the tail
    /// of T2, whichever clock it came from.
    ///
    /// Without concurrent hits every step but the last clears a bit, so at most
    /// `|T1| + |T2| + 1` frames are examined; the loop is bounded by twice that, after which the
    /// chosen head is proposed. If only blocked frames are resident, one of them is proposed;
    /// `None` if nothing is (R4).
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let tracked = state.lists.unblocked();
        if tracked == 0 {
            return state.lists.blocked_candidate().map(frame_id);
        }
        for _ in 0..2 * tracked + 1 {
            let from_t2 = state.choose();
            let head = state.lists.list(from_t2).oldest().expect("choose picks a non-empty clock");
            let hook = hooks.hook(frame_id(head));
            match hook.get() {
                0 => return Some(frame_id(head)),
                bit => {
                    let _ = hook.compare_exchange(bit, 0);
                    state.lists.promote(head);
                }
            }
        }
        let from_t2 = state.choose();
        state.lists.list(from_t2).oldest().map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet, VecDeque};

    use proptest::prelude::*;

    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;

    fn load(policy: &Car, h: &TestHooks, frame: u32, id: u64) {
        policy.on_insert(FrameId(frame), PageId::new(id).unwrap(), &h[frame as usize]);
    }

    /// (T1, T2) frames from the head, p, and (B1, B2) pages from the oldest.
    fn snapshot(policy: &Car) -> (Vec<usize>, Vec<usize>, usize, Vec<u64>, Vec<u64>) {
        let state = policy.state.lock();
        (
            state.lists.first.oldest_first(),
            state.lists.second.oldest_first(),
            state.history.p,
            state.history.b1.oldest_ids(),
            state.history.b2.oldest_ids(),
        )
    }

    /// Hand-worked from the paper's definition (the paper gives no small trace), capacity 4,
    /// frame `f` first holding page `f + 1`, clocks written head first:
    /// - load 1 2 3 4: T1 = [0 1 2 3]. Hit 0, 1.
    /// - |T1| = 4 >= max(1, p = 0): heads 0 and 1 are referenced, so their bits are cleared
    ///   and they go to the tail of T2 (the paper; Gilbert's Algorithm 3.4 would keep them in
    ///   T1). Head 2 is clear: evict it, B1 = [3]. Then head 3: evict, B1 = [3 4].
    /// - load page 3 into frame 2: a B1 ghost hit, p = 0 + max(1, 0/2) = 1, T2 = [0 1 2].
    /// - load page 9 into frame 3: no ghost, no trim (|T1| + |B1| = 1, total 4): T1 = [3].
    /// - hit 3, 1. |T1| = 1 >= max(1, 1): head 3 is referenced, to T2's tail: T1 = [],
    ///   T2 = [0 1 2 3]. |T1| = 0: T2's head 0 is clear (cleared above): evict, B2 = [1].
    /// - T2's head 1 is referenced: cleared, to the tail; head 2 is clear: evict, B2 = [1 3].
    /// - load page 1 into frame 0: B2 ghost hit, p = max(1 - max(1, 1/2 = 0), 0) = 0.
    /// - T1 is empty: T2 = [3 1 0], head 3 (cleared) is evicted, B2 = [3 9].
    #[test]
    fn r4_hand_worked_example() {
        let policy = Car::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 1]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(snapshot(&policy), (vec![3], vec![0, 1], 0, vec![3], vec![]));
        assert_eq!(h.bits(), [0, 0, 0, 0]);
        assert_eq!(h.evict(&policy), 3);
        load(&policy, &h, 2, 3);
        load(&policy, &h, 3, 9);
        assert_eq!(snapshot(&policy), (vec![3], vec![0, 1, 2], 1, vec![4], vec![]));
        h.hit(&policy, &[3, 1]);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(snapshot(&policy), (vec![], vec![1, 2, 3], 1, vec![4], vec![1]));
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(snapshot(&policy), (vec![], vec![3, 1], 1, vec![4], vec![1, 3]));
        load(&policy, &h, 0, 1);
        assert_eq!(snapshot(&policy), (vec![], vec![3, 1, 0], 0, vec![4], vec![3]));
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(snapshot(&policy), (vec![], vec![1, 0], 0, vec![4], vec![3, 9]));
    }

    /// Without hits CAR is FIFO over T1: new pages are evicted in load order.
    #[test]
    fn r4_without_hits_evicts_in_load_order() {
        let policy = Car::new(5);
        let h = TestHooks::new(5);
        h.insert(&policy, &[3, 1, 4, 0, 2]);
        let victims: Vec<u32> = (0..5).map(|_| h.evict(&policy)).collect();
        assert_eq!(victims, [3, 1, 4, 0, 2]);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// A hit only sets the bit in the hook; the clocks change at the hand.
    #[test]
    fn r5_hit_sets_the_hook_bit_only() {
        let policy = Car::new(2);
        let h = TestHooks::new(2);
        h.insert(&policy, &[0, 1]);
        h.hit(&policy, &[1]);
        assert_eq!(h.bits(), [0, 1]);
        assert_eq!(snapshot(&policy), (vec![0, 1], vec![], 0, vec![], vec![]));
    }

    /// `InUse` and `SwizzledChildren` move the hand past the frame with its bit unchanged; once
    /// every frame of T1 was passed, the search turns to T2; an eviction resets the count; `Root`
    /// blocks; `NotResident` forgets without a ghost.
    #[test]
    fn r3_rejections() {
        let policy = Car::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[3]);
        // T1 = [0 1 2 3]; the hand moves 3 to T2 only when it reaches it.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::InUse, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::SwizzledChildren, &h[2]);
        assert_eq!(snapshot(&policy), (vec![3, 0, 1, 2], vec![], 0, vec![], vec![]));
        assert_eq!(h.bits(), [0, 0, 0, 1], "passing a frame keeps its bit");
        // Head 3 is referenced: cleared, to T2. Now every frame left in T1 was passed, so the
        // search turns to T2, where 3's bit is clear.
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(snapshot(&policy), (vec![0, 1, 2], vec![], 0, vec![], vec![4]));
        // The count was reset: T1 again.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::NotResident, &h[1]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 0, "only the root is left");
        assert_eq!(policy.next_candidate(&h), None);
        assert_eq!(snapshot(&policy), (vec![], vec![], 0, vec![3, 1], vec![4]));
    }

    /// The paper's CAR (Figure 2) written naively: clocks as `VecDeque`s of page ids from the
    /// head, reference bits in a map, B1 and B2 oldest first.
    struct Model {
        c: usize,
        p: usize,
        t1: VecDeque<u64>,
        t2: VecDeque<u64>,
        b1: VecDeque<u64>,
        b2: VecDeque<u64>,
        referenced: HashMap<u64, bool>,
    }

    fn take(list: &mut VecDeque<u64>, x: u64) -> bool {
        list.iter().position(|&y| y == x).and_then(|i| list.remove(i)).is_some()
    }

    impl Model {
        fn replace(&mut self) -> u64 {
            loop {
                if self.t1.len() >= self.p.max(1) {
                    let head = self.t1.pop_front().unwrap();
                    if self.referenced[&head] {
                        self.referenced.insert(head, false);
                        self.t2.push_back(head);
                    } else {
                        self.b1.push_back(head);
                        return head;
                    }
                } else {
                    let head = self.t2.pop_front().unwrap();
                    if self.referenced[&head] {
                        self.referenced.insert(head, false);
                        self.t2.push_back(head);
                    } else {
                        self.b2.push_back(head);
                        return head;
                    }
                }
            }
        }

        /// Whether `x` hit, and the page evicted for it.
        fn request(&mut self, x: u64) -> (bool, Option<u64>) {
            if self.t1.contains(&x) || self.t2.contains(&x) {
                self.referenced.insert(x, true);
                return (true, None);
            }
            let mut evicted = None;
            let ghost = self.b1.contains(&x) || self.b2.contains(&x);
            if self.t1.len() + self.t2.len() == self.c {
                evicted = Some(self.replace());
                let (t1, t2, b1, b2) = (self.t1.len(), self.t2.len(), self.b1.len(), self.b2.len());
                if !ghost && t1 + b1 == self.c {
                    self.b1.pop_front();
                } else if !ghost && t1 + t2 + b1 + b2 == 2 * self.c {
                    self.b2.pop_front();
                }
            }
            let (b1, b2) = (self.b1.len(), self.b2.len());
            if take(&mut self.b1, x) {
                self.p = (self.p + (b2 / b1).max(1)).min(self.c);
                self.t2.push_back(x);
            } else if take(&mut self.b2, x) {
                self.p = self.p.saturating_sub((b1 / b2).max(1));
                self.t2.push_back(x);
            } else {
                self.t1.push_back(x);
            }
            self.referenced.insert(x, false);
            (false, evicted)
        }
    }

    /// CAR with the module docs' rejections and removals (steps 1-6), over pages, for
    /// `r3_r4_matches_the_model_with_rejections`: clocks head first, ghosts oldest first.
    struct RejModel {
        c: usize,
        p: usize,
        t1: VecDeque<u64>,
        t2: VecDeque<u64>,
        b1: VecDeque<u64>,
        b2: VecDeque<u64>,
        referenced: HashSet<u64>,
        /// Blocked pages, oldest first, with the clock each left (true for T2).
        blocked: VecDeque<(u64, bool)>,
        /// Frames of T1 and T2 the hand passed by rejections since the last eviction.
        passed: [usize; 2],
    }

    impl RejModel {
        fn clock_of(&self, x: u64) -> Option<bool> {
            if self.t1.contains(&x) {
                Some(false)
            } else if self.t2.contains(&x) {
                Some(true)
            } else {
                None
            }
        }

        /// Step 6: `InUse` and `SwizzledChildren` move the page to its own clock's tail, bit
        /// unchanged, and count it as passed.
        fn pass(&mut self, x: u64) {
            match self.clock_of(x) {
                Some(false) => {
                    take(&mut self.t1, x);
                    self.t1.push_back(x);
                    self.passed[0] += 1;
                }
                Some(true) => {
                    take(&mut self.t2, x);
                    self.t2.push_back(x);
                    self.passed[1] += 1;
                }
                None => {}
            }
        }

        fn block(&mut self, x: u64) {
            if let Some(second) = self.clock_of(x) {
                take(&mut self.t1, x);
                take(&mut self.t2, x);
                self.blocked.push_back((x, second));
            }
        }

        /// ARC's step 3: an evicted page joins the ghost list of the clock it left (or was
        /// blocked from), the bounds are restored and the passes start again; a freed page
        /// leaves nothing.
        fn leave(&mut self, x: u64, evicted: bool) {
            self.referenced.remove(&x);
            let second = match self.clock_of(x) {
                Some(second) => {
                    take(&mut self.t1, x);
                    take(&mut self.t2, x);
                    second
                }
                None => {
                    let at =
                        self.blocked.iter().position(|&(y, _)| y == x).expect("a resident page is listed");
                    self.blocked.remove(at).unwrap().1
                }
            };
            if !evicted {
                return;
            }
            self.passed = [0, 0];
            if second {
                self.b2.push_back(x)
            } else {
                self.b1.push_back(x)
            }
            while self.t1.len() + self.b1.len() > self.c {
                self.b1.pop_front();
            }
            while self.t1.len() + self.t2.len() + self.b1.len() + self.b2.len() > 2 * self.c {
                if self.b2.pop_front().is_none() {
                    self.b1.pop_front();
                }
            }
        }

        /// ARC's step 1, the bit clear.
        fn load(&mut self, x: u64) {
            let (b1, b2) = (self.b1.len(), self.b2.len());
            if take(&mut self.b1, x) {
                self.p = (self.p + (b2 / b1).max(1)).min(self.c);
                self.t2.push_back(x);
            } else if take(&mut self.b2, x) {
                self.p = self.p.saturating_sub((b1 / b2).max(1));
                self.t2.push_back(x);
            } else {
                if self.t1.len() + b1 >= self.c {
                    self.b1.pop_front();
                } else if self.t1.len() + self.t2.len() + b1 + b2 >= 2 * self.c {
                    self.b2.pop_front();
                }
                self.t1.push_back(x);
            }
        }

        /// Steps 4 and 6: T1 if |T1| >= max(1, p), else T2, avoiding a clock whose every page
        /// was passed while the other has unpassed ones, never an empty one; a referenced head
        /// has its bit cleared and goes to T2's tail; a clear head is proposed.
        fn propose(&mut self) -> Option<u64> {
            if self.t1.is_empty() && self.t2.is_empty() {
                let (x, second) = self.blocked.pop_front()?;
                self.blocked.push_back((x, second));
                return Some(x);
            }
            loop {
                let (n1, n2) = (self.t1.len(), self.t2.len());
                let open1 = n1 > 0 && self.passed[0] < n1;
                let open2 = n2 > 0 && self.passed[1] < n2;
                let wants_first = n1 >= self.p.max(1);
                let first = match (open1, open2) {
                    (true, true) => wants_first,
                    (true, false) => true,
                    (false, true) => false,
                    (false, false) => wants_first || n2 == 0,
                };
                let clock = if first { &mut self.t1 } else { &mut self.t2 };
                let head = *clock.front().unwrap();
                if !self.referenced.remove(&head) {
                    return Some(head);
                }
                clock.pop_front();
                self.t2.push_back(head);
            }
        }
    }

    proptest! {
        /// Serving a trace one eviction per miss, `Car` hits, evicts, adapts `p` and keeps clocks
        /// and ghosts exactly as the reference model of the paper does (no deviation applies
        /// here: CAR's paper, too, replaces before it adapts).
        #[test]
        fn r4_matches_the_paper_model_one_eviction_per_miss((capacity, trace) in sim::trace(8)) {
            let policy = Car::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let c = capacity;
            let mut model = Model {
                c,
                p: 0,
                t1: VecDeque::new(),
                t2: VecDeque::new(),
                b1: VecDeque::new(),
                b2: VecDeque::new(),
                referenced: HashMap::new(),
            };
            let expected: Vec<_> = trace.iter().map(|&x| model.request(x)).collect();
            prop_assert_eq!(served, expected);
            let state = policy.state.lock();
            prop_assert_eq!(state.lists.page_ids(false), Vec::from(model.t1));
            prop_assert_eq!(state.lists.page_ids(true), Vec::from(model.t2));
            prop_assert_eq!(state.history.b1.oldest_ids(), Vec::from(model.b1));
            prop_assert_eq!(state.history.b2.oldest_ids(), Vec::from(model.b2));
            prop_assert_eq!(state.history.p, model.p);
        }

        /// CAR's invariants (|T1| + |T2| <= c, |T1| + |B1| <= c, |T1| + |T2| + |B1| + |B2| <= 2c,
        /// 0 <= p <= c, no ghost for a resident page, ghost memory bounded, bits 0 or 1) and the
        /// rejection rules hold after every step of random pool histories with ghost hits.
        #[test]
        fn r3_r4_invariants_hold_on_random_histories((capacity, ops) in sim::scenario(10)) {
            let policy = Car::new(capacity);
            sim::run(capacity, &ops, &policy, |_| {
                let state = policy.state.lock();
                state.lists.check();
                state.history.check(state.lists.first.len(), state.lists.second.len());
                for ghost in state.history.b1.oldest_first().into_iter().chain(state.history.b2.oldest_first()) {
                    assert!(!state.lists.holds(ghost), "resident page {ghost:?} has a ghost");
                }
            });
        }
        /// CAR with the module docs' rejections (step 6): `InUse` and `SwizzledChildren` pass
        /// the page to its own clock's tail, bit unchanged, and a fully passed clock is avoided
        /// until the next eviction; `Root` blocks (ghost after the clock it left, if evicted);
        /// `NotResident` and frees leave no ghost. `Car` proposes the same pages and keeps the
        /// same clocks, bits, ghosts, p and blocked list on random pool histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections((capacity, ops) in sim::scenario(10)) {

            let policy = Car::new(capacity);
            let mut model = RejModel {
                c: capacity,
                p: 0,
                t1: VecDeque::new(),
                t2: VecDeque::new(),
                b1: VecDeque::new(),
                b2: VecDeque::new(),
                referenced: HashSet::new(),
                blocked: VecDeque::new(),
                passed: [0, 0],
            };
            sim::replay_with_model(capacity, &ops, &policy, &mut model, |pool, model, t, op| {
                let state = policy.state.lock();
                let seen = (
                    state.lists.page_ids(false),
                    state.lists.page_ids(true),
                    state.history.b1.oldest_ids(),
                    state.history.b2.oldest_ids(),
                    state.history.p,
                );
                let blocked: Vec<u64> = state.lists.blocked.oldest_first().into_iter().map(|f| pool.pages[f].unwrap()).collect();
                drop(state);
                let expected = (
                    Vec::from(model.t1.clone()),
                    Vec::from(model.t2.clone()),
                    Vec::from(model.b1.clone()),
                    Vec::from(model.b2.clone()),
                    model.p,
                );
                prop_assert_eq!(&seen, &expected, "after step {} ({:?})", t, op);
                let want: Vec<u64> = model.blocked.iter().map(|&(x, _)| x).collect();
                prop_assert_eq!(blocked, want, "blocked after step {} ({:?})", t, op);
                let listed: Vec<u64> = model.t1.iter().chain(&model.t2).copied().collect();
                let bits: Vec<bool> = listed.iter().map(|&x| pool.hooks[pool.frame_of(x).unwrap()].get() != 0).collect();
                let want: Vec<bool> = listed.iter().map(|x| model.referenced.contains(x)).collect();
                prop_assert_eq!(bits, want, "bits after step {} ({:?})", t, op);
                Ok(())
            })?;
        }
    }

    /// The model as [`sim::replay_with_model`] drives it.
    impl sim::PageModel for RejModel {
        fn hit(&mut self, page: u64) {
            self.referenced.insert(page);
        }
        fn load(&mut self, page: u64) {
            RejModel::load(self, page);
        }
        fn propose(&mut self) -> Option<u64> {
            RejModel::propose(self)
        }
        fn leave(&mut self, page: u64, evicted: bool) {
            RejModel::leave(self, page, evicted);
        }
        fn refused(&mut self, page: u64, why: Rejection) {
            match why {
                Rejection::InUse | Rejection::SwizzledChildren => self.pass(page),
                Rejection::Root => self.block(page),
                Rejection::NotResident => unreachable!("a refusal as NotResident is a removal"),
            }
        }
    }
}
