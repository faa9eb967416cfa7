//! S3-FIFO (Yang et al., SOSP 2023): a small FIFO queue S that takes new pages (10% of the
//! frames), a main FIFO queue M for the rest, and a ghost FIFO queue G of page ids evicted from S,
//! as large as M. Each frame has a 2-bit access counter, capped at 3, kept in its [`FrameHook`]
//! (R7): a hit takes no lock (R5). Pages that were accessed while in S move on to M when they
//! reach its end; the others leave quickly ("quick demotion"), and M is a CLOCK with the counter
//! as its weight.
//!
//! # State
//!
//! S and M, both queues of frames; G, holding at most `c − ⌊c/10⌋` ids (M's 90% share, rounded up:
//! "as large as the main queue"); the access counter per frame in its hook, capped at 3; the
//! blocked list; and passed counts as in CAR (module [`super::car`]). Everything but the counters
//! lives under a `parking_lot` mutex. The two queues, the passed counts and the rejection rules are
//! [`TwoLists`] (`src/list.rs`), shared with ARC and CAR. S is *due* when it holds at least 10% of
//! the frames (`10 |S| ≥ c`), and M is *over its share* when `10 |M| > 9c`.
//!
//! # Steps
//!
//! 1. `on_insert`: counter = 0, before the frame is queued. A page in G leaves G and enters M at
//!    the head; any other page enters S at the head.
//! 2. `on_hit`: counter = min(counter + 1, 3). This is a load and at most one plain store, with no
//!    lock (R5). Two racing hits may count as one.
//! 3. `on_remove` with `evicted`: a page evicted from S becomes the newest ghost in G, and the
//!    oldest ghosts beyond the bound go. A page evicted from M, or freed, leaves no ghost.
//! 4. `next_candidate` starts in S if S is due, else in M, and walks:
//!    - In S, the oldest frame is proposed if its counter is at most 1. Otherwise it moves to the
//!      head of M with its counter, and the walk goes on in M if M is now over its share, else in
//!      S.
//!    - In M, the oldest frame is proposed if its counter is 0. Otherwise its counter is
//!      decremented (compare-exchange) and it moves to the head of M.
//!    - A walk whose queue is empty goes on in the other queue.
//! 5. Bounded: without concurrent hits the walk takes at most `|S| + 3 |M| + 1` steps. After
//!    `4 (|S| + |M|) + 2` steps it proposes the oldest frame of its queue. If both queues are
//!    empty, a blocked frame is proposed; else `None`.
//! 6. `InUse` and `SwizzledChildren`: the frame goes back to the head of its own queue with its
//!    counter unchanged, as FIFO does, and the queue's passed count grows. The start queue avoids
//!    a fully passed queue while the other has unpassed frames; every eviction resets the counts.
//!    `Root`: blocked. `NotResident`: forgotten without a ghost. `InUse` is no access, for ARC's
//!    reason (module [`super::arc`], "Deviations from the paper").
//!
//! Invariants, checked by `s3_fifo::tests::r3_r4_invariants_hold_on_random_histories`: counters
//! in 0..=3, `|G| ≤ c − ⌊c/10⌋`, no ghost for a resident page, consistent queues, and the
//! rejection rules. With one eviction per miss and no rejections, the proptest
//! `s3_fifo::tests::r4_matches_the_paper_model_one_eviction_per_miss` compares hits, victims,
//! queues and ghosts with a naive model of the paper's Algorithm 1. The model includes the
//! one-proposal change below.
//!
//! # Choices and deviations
//!
//! - **Promotion threshold.** A page moves from S to M if its counter is above 1. This is the
//!   paper's Algorithm 1 (`t.freq > 1`) and the move-to-main threshold of 2 in the authors'
//!   original simulator. The counter is kept on the move, as in the pseudocode.
//! - **One proposal per call.** When a move to M leaves M over its share, the paper's `evictS`
//!   runs `evictM` and then keeps looking in S, so one call can evict two objects. Here the M
//!   victim is proposed and the call ends; the next call decides afresh.
//! - **Ghost hits remove the ghost**, as in the authors' simulator. The paper only says that G is
//!   a FIFO of ids.
//! - **Frames, not bytes.** All pages have the same size, so the 10%, 90% and G bounds count
//!   frames. The comparisons are exact (`10 |S| ≥ c`), so for `c < 10` S is due whenever it is
//!   not empty.
//! - **When to evict** is the pool's decision (it evicts ahead). New pages always enter S, as in
//!   the original algorithm. The authors' later variant sends them to M when S is full but the
//!   cache is not.
//! - **Rejections and roots** do not exist in the paper.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_quick_demotion_and_ghost_hit` (hand-worked, the paper's figures give no
//! small trace), capacity 4, queues oldest first:
//!
//! - Load pages 1 to 4 into frames 0 to 3. Hit frame 0 twice, frame 1 once and frame 2 four
//!   times; the counters are 2, 1, 3, 0.
//! - In S, 0 moves to M and 1 is evicted: `G = [2]`. Then 2 moves to M and 3 is evicted:
//!   `G = [2 4]`.
//! - Page 2 comes back into frame 1. It is a ghost, so it goes to `M = [0 2 1]`. Page 7 goes into
//!   frame 3 and is evicted at once (counter 0).
//! - S is empty, so M: 0 (2 → 1) and 2 (3 → 2) go round, and 1 (counter 0) is evicted without a
//!   ghost.
//!
//! The test `r4_move_that_overfills_main_evicts_from_main` continues this example through the
//! nested `evictM` case.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::ghost::Ghosts;
use crate::list::{Place, TwoLists};
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// The counter's cap: two bits.
const MAX_FREQ: u32 = 3;

struct State {
    /// S (`first`) and M (`second`), each from the tail (oldest) to the head (newest).
    lists: TwoLists,
    /// G: page ids evicted from S, at most `capacity - capacity / 10` of them (the oldest goes
    /// first).
    ghost: Ghosts,
    capacity: usize,
}

impl State {
    /// Whether S holds at least 10% of the frames (the paper's `S.size >= 0.1 * cache size`).
    fn small_is_due(&self) -> bool {
        10 * self.lists.first.len() >= self.capacity
    }

    /// Whether M holds more than its 90% share (the paper's "M is full" after a move).
    fn main_is_over(&self) -> bool {
        10 * self.lists.second.len() > 9 * self.capacity
    }

    /// The queue to start from: S if it is due, else M; a queue whose every frame was passed by
    /// rejections since the last eviction is avoided while the other has unpassed frames
    /// (module docs, step 6); an empty queue is never chosen (one must be non-empty).
    /// Returns true for M.
    fn start_in_main(&self) -> bool {
        self.lists.choose_second(self.small_is_due())
    }
}

/// S3-FIFO replacement (Yang et al., SOSP 2023).
///
/// A hit is one load of the hook and, unless the counter is already 3, one plain store (R5); two
/// racing hits may count as one. Inserts, removals, rejections and proposals take the policy's
/// mutex. The ghost queue holds at most `capacity - capacity / 10` page ids.
pub struct S3Fifo {
    state: Mutex<State>,
}

impl S3Fifo {
    /// S3-FIFO over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> S3Fifo {
        check_capacity(capacity);
        let ghost_capacity = capacity - capacity / 10;
        S3Fifo {
            state: Mutex::new(State {
                lists: TwoLists::new(capacity),
                ghost: Ghosts::preallocated(ghost_capacity),
                capacity,
            }),
        }
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> String {
        "s3-fifo".to_owned()
    }

    /// The counter starts at 0 (reset before the frame is queued, R7). A page with a ghost in G
    /// goes to the head of M (and its ghost is dropped), any other to the head of S.
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        hook.set(0);
        let mut guard = self.state.lock();
        let state = &mut *guard;
        state.lists.take(frame.index());
        let to_main = state.ghost.remove(page).is_some();
        state.lists.insert(frame.index(), page, to_main);
    }

    /// The counter goes up by one, capped at 3: a load and at most one plain store.
    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        let freq = hook.get();
        if freq < MAX_FREQ {
            hook.set(freq + 1);
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        self.state.lock().lists.reject(frame.index(), why);
    }

    /// A page evicted from S becomes the newest ghost in G (the oldest ghost goes if G is full);
    /// a page evicted from M, or freed, leaves no ghost.
    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let (place, page) = state.lists.take(frame.index());
        if evicted {
            state.lists.reset_passes();
            if let (Place::First | Place::Blocked { from_second: false }, Some(page)) = (place, page) {
                state.ghost.insert(page, ());
            }
        }
    }

    /// The paper's `evict` (module docs, step 4). From S: the oldest frame is proposed if
    /// its counter is at most 1; otherwise it moves to the head of M, and if M is then over its
    /// 90% share the search continues in M, else in S. From M: the oldest frame is proposed if
    /// its counter is 0; otherwise the counter is decremented (compare-exchange, so a concurrent
    /// hit is not lost) and the frame moves to the head of M. A walk that empties its queue
    /// continues in the other.
    ///
    /// Without concurrent hits the walk takes at most `|S| + 3 |M| + 1` steps; it is bounded by
    /// `4 (|S| + |M|) + 2`, after which the oldest frame of the current queue is proposed. If
    /// only blocked frames are resident, one of them is proposed; `None` if nothing is (R4).
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let tracked = state.lists.unblocked();
        if tracked == 0 {
            return state.lists.blocked_candidate().map(frame_id);
        }
        let mut in_main = state.start_in_main();
        for _ in 0..4 * tracked + 2 {
            if state.lists.list(in_main).oldest().is_none() {
                in_main = !in_main;
            }
            let oldest = state.lists.list(in_main).oldest().expect("one queue is non-empty");
            let hook = hooks.hook(frame_id(oldest));
            let freq = hook.get();
            if in_main {
                if freq == 0 {
                    return Some(frame_id(oldest));
                }
                let _ = hook.compare_exchange(freq, freq - 1);
                state.lists.rotate(oldest);
            } else {
                if freq <= 1 {
                    return Some(frame_id(oldest));
                }
                state.lists.promote(oldest);
                in_main = state.main_is_over();
            }
        }
        let queue = if state.lists.list(in_main).oldest().is_none() { !in_main } else { in_main };
        state.lists.list(queue).oldest().map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use proptest::prelude::*;

    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;

    fn load(policy: &S3Fifo, h: &TestHooks, frame: u32, id: u64) {
        policy.on_insert(FrameId(frame), PageId::new(id).unwrap(), &h[frame as usize]);
    }

    /// (S, M) frames from the oldest, and G's pages from the oldest.
    fn snapshot(policy: &S3Fifo) -> (Vec<usize>, Vec<usize>, Vec<u64>) {
        let state = policy.state.lock();
        (state.lists.first.oldest_first(), state.lists.second.oldest_first(), state.ghost.oldest_ids())
    }

    /// Hand-worked from the paper's Algorithm 1 (its figures give no small trace), capacity 4:
    /// S is due when it holds at least 0.4 frames (any), M is over its share at 4 frames, G holds
    /// 4 ghosts. Frame `f` first holds page `f + 1`; queues are written oldest first.
    /// - load 1 2 3 4: S = [0 1 2 3]. Hits: frame 0 twice, 1 once, 2 three times.
    /// - S: 0 has 2 > 1, to M = [0]; 1 has 1: evicted, G = [2].
    /// - S: 2 has 3, to M = [0 2]; 3 has 0: evicted, G = [2 4].
    /// - load page 2 into frame 1: a ghost hit, into M = [0 2 1]; G = [4].
    /// - load page 7 into frame 3: S = [3]; evicted at once (counter 0), G = [4 7].
    /// - S is empty, so M: 0 (2 -> 1) and 2 (3 -> 2) go round; 1 has 0: evicted, no ghost.
    #[test]
    fn r4_hand_worked_quick_demotion_and_ghost_hit() {
        let policy = S3Fifo::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 0, 1, 2, 2, 2, 2]);
        assert_eq!(h.bits(), [2, 1, 3, 0], "the counter stops at 3");
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(snapshot(&policy), (vec![2, 3], vec![0], vec![2]));
        assert_eq!(h.evict(&policy), 3);
        load(&policy, &h, 1, 2);
        load(&policy, &h, 3, 7);
        assert_eq!(snapshot(&policy), (vec![3], vec![0, 2, 1], vec![4]));
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(snapshot(&policy), (vec![], vec![0, 2], vec![4, 7]));
        assert_eq!(h.bits(), [1, 0, 2, 0]);
    }

    /// The paper's nested `evictM`: a move from S that leaves M over its share evicts from M.
    /// Capacity 4, starting where the previous test ends: S = [], M = [0 2] with counters 1 and
    /// 2, G = [4 7].
    /// - load page 4 (a ghost) into frame 1: M = [0 2 1], G = [7]. Load page 8 into frame 3:
    ///   S = [3]; hit it twice.
    /// - S: 3 has 2, to M = [0 2 1 3]: 4 frames, over 3.6, so on in M: 0 (1 -> 0) and 2 (2 -> 1)
    ///   go round; 1 has 0: evicted, without a ghost.
    #[test]
    fn r4_move_that_overfills_main_evicts_from_main() {
        let policy = S3Fifo::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 0, 1, 2, 2, 2]);
        let mut victims = vec![h.evict(&policy), h.evict(&policy)];
        load(&policy, &h, 1, 2);
        load(&policy, &h, 3, 7);
        victims.extend([h.evict(&policy), h.evict(&policy)]);
        assert_eq!(victims, [1, 3, 3, 1]);
        assert_eq!((snapshot(&policy), h.bits()), ((vec![], vec![0, 2], vec![4, 7]), vec![1, 0, 2, 0]));
        load(&policy, &h, 1, 4);
        load(&policy, &h, 3, 8);
        h.hit(&policy, &[3, 3]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(snapshot(&policy), (vec![], vec![3, 0, 2], vec![7]));
        assert_eq!(h.bits(), [0, 0, 1, 2]);
    }

    /// Without hits S3-FIFO is FIFO: every page leaves S in load order, and G keeps the newest
    /// `capacity - capacity / 10` of them.
    #[test]
    fn r4_without_hits_evicts_in_load_order_and_bounds_the_ghosts() {
        let policy = S3Fifo::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[2, 0, 1]);
        let victims: Vec<u32> = (0..3).map(|_| h.evict(&policy)).collect();
        assert_eq!(victims, [2, 0, 1]);
        h.insert(&policy, &[2]);
        assert_eq!(snapshot(&policy), (vec![], vec![2], vec![1, 2]), "page 3 was a ghost hit");
        load(&policy, &h, 0, 10);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(snapshot(&policy).2, [1, 2, 10]);
        load(&policy, &h, 0, 11);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(snapshot(&policy).2, [2, 10, 11], "G holds 3 - 0 = 3 ghosts");
    }

    /// `InUse` and `SwizzledChildren` send the frame to its queue's head, counter unchanged; once
    /// every frame of S was passed, the search turns to M; an eviction resets the count; `Root`
    /// blocks; `NotResident` forgets without a ghost.
    #[test]
    fn r3_rejections() {
        let policy = S3Fifo::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 0]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(snapshot(&policy), (vec![2, 3], vec![0], vec![2]));
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::SwizzledChildren, &h[2]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(3)));
        policy.on_rejected(FrameId(3), Rejection::InUse, &h[3]);
        assert_eq!(snapshot(&policy), (vec![2, 3], vec![0], vec![2]));
        // Both frames of S were passed: M, where 0 goes round twice (2 -> 1 -> 0).
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        assert_eq!(h.bits(), [0, 0, 0, 0]);
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(3)));
        policy.on_rejected(FrameId(3), Rejection::NotResident, &h[3]);
        assert_eq!(h.evict(&policy), 0, "only the root is left");
        assert_eq!(policy.next_candidate(&h), None);
        assert_eq!(snapshot(&policy), (vec![], vec![], vec![2, 3]));
    }

    /// The paper's Algorithm 1 written naively over `VecDeque`s of page ids (oldest first) and a
    /// map of counters, with the one change the module docs document: when a move leaves M over its
    /// share, `evictS` ends with the M victim instead of evicting from S as well.
    struct Model {
        c: usize,
        small: VecDeque<u64>,
        main: VecDeque<u64>,
        ghost: VecDeque<u64>,
        freq: HashMap<u64, u32>,
    }

    impl Model {
        fn evict_main(&mut self) -> u64 {
            loop {
                let t = self.main.pop_front().unwrap();
                if self.freq[&t] > 0 {
                    *self.freq.get_mut(&t).unwrap() -= 1;
                    self.main.push_back(t);
                } else {
                    return t;
                }
            }
        }

        fn evict_small(&mut self) -> u64 {
            while let Some(t) = self.small.pop_front() {
                if self.freq[&t] > 1 {
                    self.main.push_back(t);
                    if 10 * self.main.len() > 9 * self.c {
                        return self.evict_main();
                    }
                } else {
                    self.ghost.push_back(t);
                    if self.ghost.len() > self.c - self.c / 10 {
                        self.ghost.pop_front();
                    }
                    return t;
                }
            }
            self.evict_main()
        }

        /// Whether `x` hit, and the page evicted for it.
        fn request(&mut self, x: u64) -> (bool, Option<u64>) {
            if self.small.contains(&x) || self.main.contains(&x) {
                let freq = self.freq.get_mut(&x).unwrap();
                *freq = (*freq + 1).min(3);
                return (true, None);
            }
            let mut evicted = None;
            if self.small.len() + self.main.len() == self.c {
                evicted = Some(if 10 * self.small.len() >= self.c {
                    self.evict_small()
                } else {
                    self.evict_main()
                });
            }
            match self.ghost.iter().position(|&g| g == x) {
                Some(i) => {
                    self.ghost.remove(i);
                    self.main.push_back(x);
                }
                None => self.small.push_back(x),
            }
            self.freq.insert(x, 0);
            (false, evicted)
        }
    }

    /// S3-FIFO with the module docs' rejections and removals (steps 1-6), over pages, for
    /// `r3_r4_matches_the_model_with_rejections`: queues and G oldest first.
    struct RejModel {
        c: usize,
        s: VecDeque<u64>,
        m: VecDeque<u64>,
        g: VecDeque<u64>,
        /// Each resident page's counter (blocked ones too: a hit still counts).
        freq: HashMap<u64, u32>,
        /// Blocked pages, oldest first, with the queue each left (true for M).
        blocked: VecDeque<(u64, bool)>,
        passed: [usize; 2],
    }

    fn take_page(list: &mut VecDeque<u64>, x: u64) -> bool {
        list.iter().position(|&y| y == x).and_then(|i| list.remove(i)).is_some()
    }

    impl RejModel {
        fn queue_of(&self, x: u64) -> Option<bool> {
            if self.s.contains(&x) {
                Some(false)
            } else if self.m.contains(&x) {
                Some(true)
            } else {
                None
            }
        }

        fn hit(&mut self, x: u64) {
            let f = self.freq.get_mut(&x).expect("a hit page is resident");
            *f = (*f + 1).min(3);
        }

        /// Step 6: back to the head of its own queue, counter unchanged, counted as passed.
        fn pass(&mut self, x: u64) {
            match self.queue_of(x) {
                Some(false) => {
                    take_page(&mut self.s, x);
                    self.s.push_back(x);
                    self.passed[0] += 1;
                }
                Some(true) => {
                    take_page(&mut self.m, x);
                    self.m.push_back(x);
                    self.passed[1] += 1;
                }
                None => {}
            }
        }

        fn block(&mut self, x: u64) {
            if let Some(main) = self.queue_of(x) {
                take_page(&mut self.s, x);
                take_page(&mut self.m, x);
                self.blocked.push_back((x, main));
            }
        }

        /// Step 3: a page evicted from S (or blocked from it) becomes G's newest ghost, the
        /// oldest going past `c - c/10`; evictions reset the passes; frees leave nothing.
        fn leave(&mut self, x: u64, evicted: bool) {
            self.freq.remove(&x);
            let main = match self.queue_of(x) {
                Some(main) => {
                    take_page(&mut self.s, x);
                    take_page(&mut self.m, x);
                    main
                }
                None => {
                    let at =
                        self.blocked.iter().position(|&(y, _)| y == x).expect("a resident page is listed");
                    self.blocked.remove(at).unwrap().1
                }
            };
            if evicted {
                self.passed = [0, 0];
                if !main {
                    self.g.push_back(x);
                    if self.g.len() > self.c - self.c / 10 {
                        self.g.pop_front();
                    }
                }
            }
        }

        /// Step 1.
        fn load(&mut self, x: u64) {
            self.freq.insert(x, 0);
            if take_page(&mut self.g, x) {
                self.m.push_back(x);
            } else {
                self.s.push_back(x);
            }
        }

        /// Steps 4 and 6.
        fn propose(&mut self) -> Option<u64> {
            if self.s.is_empty() && self.m.is_empty() {
                let (x, main) = self.blocked.pop_front()?;
                self.blocked.push_back((x, main));
                return Some(x);
            }
            let (n1, n2) = (self.s.len(), self.m.len());
            let open1 = n1 > 0 && self.passed[0] < n1;
            let open2 = n2 > 0 && self.passed[1] < n2;
            let due = 10 * n1 >= self.c;
            let mut in_main = !match (open1, open2) {
                (true, true) => due,
                (true, false) => true,
                (false, true) => false,
                (false, false) => due || n2 == 0,
            };
            loop {
                if (if in_main { &self.m } else { &self.s }).is_empty() {
                    in_main = !in_main;
                }
                let x = *(if in_main { &self.m } else { &self.s }).front().unwrap();
                let f = self.freq[&x];
                if in_main {
                    if f == 0 {
                        return Some(x);
                    }
                    self.freq.insert(x, f - 1);
                    self.m.pop_front();
                    self.m.push_back(x);
                } else {
                    if f <= 1 {
                        return Some(x);
                    }
                    self.s.pop_front();
                    self.m.push_back(x);
                    in_main = 10 * self.m.len() > 9 * self.c;
                }
            }
        }
    }

    proptest! {
        /// Serving a trace one eviction per miss, `S3Fifo` hits, evicts and keeps its queues and
        /// ghosts exactly as the reference model of the paper does.
        #[test]
        fn r4_matches_the_paper_model_one_eviction_per_miss((capacity, trace) in sim::trace(8)) {
            let policy = S3Fifo::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let mut model = Model {
                c: capacity,
                small: VecDeque::new(),
                main: VecDeque::new(),
                ghost: VecDeque::new(),
                freq: HashMap::new(),
            };
            let expected: Vec<_> = trace.iter().map(|&x| model.request(x)).collect();
            prop_assert_eq!(served, expected);
            let state = policy.state.lock();
            prop_assert_eq!(state.lists.page_ids(false), Vec::from(model.small));
            prop_assert_eq!(state.lists.page_ids(true), Vec::from(model.main));
            prop_assert_eq!(state.ghost.oldest_ids(), Vec::from(model.ghost));
        }

        /// S3-FIFO's invariants (counters in 0..=3, |G| <= capacity - capacity / 10, no ghost for
        /// a resident page, queues consistent) and the rejection rules hold after every step of
        /// random pool histories with ghost hits.
        #[test]
        fn r3_r4_invariants_hold_on_random_histories((capacity, ops) in sim::scenario(10)) {
            let policy = S3Fifo::new(capacity);
            sim::run(capacity, &ops, &policy, |_| {
                let state = policy.state.lock();
                state.lists.check();
                let ghost_capacity = state.capacity - state.capacity / 10;
                assert!(state.ghost.len() <= ghost_capacity);
                assert!(state.ghost.allocated() <= ghost_capacity + 1);
                for ghost in state.ghost.oldest_first() {
                    assert!(!state.lists.holds(ghost), "resident page {ghost:?} has a ghost");
                }
            });
        }
        /// S3-FIFO with the module docs' rejections (step 6): `InUse` and `SwizzledChildren` send
        /// the page back to the head of its own queue, counter unchanged, and the start avoids
        /// a fully passed queue until the next eviction; `Root` blocks (a root from S leaves a
        /// ghost if evicted); `NotResident` and frees leave no ghost. `S3Fifo` proposes the
        /// same pages and keeps the same queues, counters, G and blocked list on random pool
        /// histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections((capacity, ops) in sim::scenario(10)) {

            let policy = S3Fifo::new(capacity);
            let mut model = RejModel {
                c: capacity,
                s: VecDeque::new(),
                m: VecDeque::new(),
                g: VecDeque::new(),
                freq: HashMap::new(),
                blocked: VecDeque::new(),
                passed: [0, 0],
            };
            sim::replay_with_model(capacity, &ops, &policy, &mut model, |pool, model, t, op| {
                let state = policy.state.lock();
                let seen = (state.lists.page_ids(false), state.lists.page_ids(true), state.ghost.oldest_ids());
                let blocked: Vec<u64> = state.lists.blocked.oldest_first().into_iter().map(|f| pool.pages[f].unwrap()).collect();
                drop(state);
                let expected = (Vec::from(model.s.clone()), Vec::from(model.m.clone()), Vec::from(model.g.clone()));
                prop_assert_eq!(&seen, &expected, "after step {} ({:?})", t, op);
                let want: Vec<u64> = model.blocked.iter().map(|&(x, _)| x).collect();
                prop_assert_eq!(blocked, want, "blocked after step {} ({:?})", t, op);
                let listed: Vec<u64> = model.s.iter().chain(&model.m).copied().collect();
                let counters: Vec<u32> = listed.iter().map(|&x| pool.hooks[pool.frame_of(x).unwrap()].get()).collect();
                let want: Vec<u32> = listed.iter().map(|x| model.freq[x]).collect();
                prop_assert_eq!(counters, want, "counters after step {} ({:?})", t, op);
                Ok(())
            })?;
        }
    }

    /// The model as [`sim::replay_with_model`] drives it.
    impl sim::PageModel for RejModel {
        fn hit(&mut self, page: u64) {
            RejModel::hit(self, page);
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
