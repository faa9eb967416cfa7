//! ARC, the Adaptive Replacement Cache (Megiddo & Modha, FAST 2003): two LRU lists of resident
//! frames, T1 (pages seen once since they were loaded) and T2 (seen at least twice), two ghost
//! lists B1 and B2 of recently evicted page ids, and a target `p` for the size of T1 that ghost
//! hits move: a hit in B1 says T1 was too small, a hit in B2 that T2 was.
//!
//! Like [`crate::Lru`], a hit relinks its frame under the policy's mutex, a documented breach of
//! R5 (the per-hit lock that BP-Wrapper batches away).
//!
//! # State
//!
//! All under one `parking_lot` mutex: T1 and T2, each from the LRU end to the MRU end; the blocked
//! list; each frame's list and page id; the ghost lists B1 and B2 (pages recently evicted from T1
//! and T2, oldest first); the target size `p` of T1, starting at 0; and a cursor, as in LRU. The
//! hooks are neither read nor written. ARC, CAR and S3-FIFO share the two-list bookkeeping
//! ([`TwoLists`], `src/list.rs`); ARC and CAR share the history code ([`History`], in this file),
//! where B1 and B2 are ghost directories ([`Ghosts`], `src/ghost.rs`).
//!
//! # Steps
//!
//! 1. `on_insert(frame, page)` is the paper's miss. If `page` is in B1, p grows by
//!    `max(1, ⌊|B2| / |B1|⌋)`, capped at c, the ghost is dropped, and the frame enters T2 at the
//!    MRU end. If it is in B2, p shrinks by `max(1, ⌊|B1| / |B2|⌋)`, floored at 0, the ghost is
//!    dropped, and the frame enters T2. Otherwise the history makes room first: if
//!    `|T1| + |B1| ≥ c`, B1's oldest ghost goes; else if `|T1| + |T2| + |B1| + |B2| ≥ 2c`, B2's
//!    oldest goes. Then the frame enters T1 at the MRU end.
//! 2. `on_hit`: the frame moves to the MRU end of T2, from T1 or T2, **under the lock**: like LRU,
//!    a deliberate breach of R5 until BP-Wrapper batching.
//! 3. `on_remove` with `evicted`: the page becomes the newest ghost of B1 or B2, after the list it
//!    was in. Without `evicted` (a freed page) it leaves no ghost. The bounds of step 1 are then
//!    restored, which matters only when a blocked frame is evicted: blocked frames count in
//!    neither list, so its ghost can overflow them.
//! 4. `next_candidate`: the cursor's frame if a search is under way; else T1's LRU frame if
//!    `|T1| ≥ 1` and `|T1| > p` (or T2 is empty), else T2's LRU frame; if both lists are empty, a
//!    blocked frame (rotating); else `None`. It always returns at once.
//! 5. `InUse` and `SwizzledChildren`: the frame keeps its place. The cursor moves to the next more
//!    recently used frame of its list, and past the MRU end to the LRU end of the other list (or
//!    of its own, if the other is empty). `Root`: the frame leaves its list for the blocked list,
//!    remembering which list it left. `NotResident`: forgotten, without a ghost.
//! 6. Every eviction resets the cursor. A frame leaving its place while under the cursor (hit,
//!    removal, block) moves the cursor to its more recent neighbour.
//!
//! Invariants, checked by the proptest `arc::tests::r3_r4_invariants_hold_on_random_histories`
//! after every step of random histories with ghost hits: `|T1| + |T2| ≤ c`, `|T1| + |B1| ≤ c`,
//! `|T1| + |T2| + |B1| + |B2| ≤ 2c`, `0 ≤ p ≤ c`, no resident page has a ghost, and the ghost
//! lists never allocate more than `c + 1` and `2c + 1` slots.
//!
//! # Deviations from the paper
//!
//! - **No missing page in REPLACE.** The paper evicts from T1 if `|T1| > p`, *or if `|T1| = p` and
//!   the missing page is in B2*. The pool evicts in batches ahead of misses, so `next_candidate`
//!   does not know the missing page: the tie-break is dropped, and a tie evicts from T2.
//! - **Adaptation after the eviction.** On a ghost hit the paper adapts p first, with the ghost
//!   lists' sizes as they were, and then runs REPLACE with the new p. The pool has already evicted
//!   when it loads the page, so REPLACE used the previous p, and the ratio sees the ghost lists as
//!   REPLACE left them. This is the order of CAR's paper.
//! - **Trimming by size.** The paper trims B1 or B2 during a miss, in its cases IV.A and IV.B,
//!   when the cache is full. Here this happens in `on_insert`, triggered by the directory sizes,
//!   since the cache is rarely full when the pool evicts ahead. In case IV.A with `|T1| = c`, the
//!   paper drops T1's LRU page without a ghost; here it goes to B1 and that ghost is dropped at
//!   the next insert.
//! - With one eviction per miss these are the only differences: the proptest
//!   `r4_matches_the_paper_model_one_eviction_per_miss` replays random traces against a naive
//!   model of the paper with only these two changes, and compares hits, victims, lists, ghosts
//!   and p.
//! - **Integer p.** The ratios `|B2| / |B1|` and `|B1| / |B2|` are rounded down, as Gilbert does
//!   for CAR; the paper's p is real-valued.
//! - **`InUse` is no hit.** The pool calls `on_insert` while the loading fix still holds the
//!   exclusive latch, and every other fix reports its own hit. Counting the rejection as a hit
//!   would count one reference twice, and in ARC a second reference is a promotion to T2.
//! - **Rejections, roots and the cursor** do not exist in the paper. The cursor is LRU's: the
//!   lists' order is not disturbed, and the search restarts at the chosen LRU end after every
//!   eviction.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_adaptation` (hand-worked, the paper gives no small trace), capacity 4,
//! frame `f` first holding page `f + 1`:
//!
//! - Load pages 1 to 4 and hit frames 0 and 1: `T1 = [2 3]`, `T2 = [0 1]`. Since
//!   `|T1| = 2 > p = 0`, frames 2 and 3 are evicted: `B1 = [3 4]`.
//! - Load page 3 into frame 2. This is a B1 ghost hit: p = 1, and `T2 = [0 1 2]`. Load page 9 into
//!   frame 3: `T1 = [3]`.
//! - `|T1| = 1` is not above p, so frames 0 and 1 are evicted from T2: `B2 = [1 2]`.
//! - Load page 1 into frame 0. This is a B2 ghost hit: p = 0. T1's frame 3 is now evicted first.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::ghost::Ghosts;
use crate::list::{Place, TwoLists};
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

struct State {
    /// T1 (`first`) and T2 (`second`), each from the LRU end (tail) to the MRU end (head).
    lists: TwoLists,
    history: History,
    /// The frame to propose instead of the chosen LRU end after `InUse` or `SwizzledChildren`
    /// rejections (module docs, step 6). Always a frame of T1 or T2, or `None`; reset by every
    /// eviction.
    cursor: Option<usize>,
}

impl State {
    /// Keeps the cursor valid before `frame` leaves its place: it moves to the frame's more
    /// recently used neighbour, or back to the start of the search.
    fn step_off(&mut self, frame: usize) {
        if self.cursor == Some(frame) {
            self.cursor = match self.lists.place(frame) {
                Place::First => self.lists.first.newer(frame),
                Place::Second => self.lists.second.newer(frame),
                Place::Free | Place::Blocked { .. } => None,
            };
        }
    }

    /// Moves the search past `frame` without touching its position: to the next more recently
    /// used frame of its list, past the MRU end to the LRU end of the other list (or of its own,
    /// if the other is empty).
    fn move_on(&mut self, frame: usize) {
        let second = match self.lists.place(frame) {
            Place::First => false,
            Place::Second => true,
            Place::Free | Place::Blocked { .. } => return,
        };
        let own = self.lists.list(second);
        self.cursor = own.newer(frame).or_else(|| self.lists.list(!second).oldest()).or_else(|| own.oldest());
    }

    /// REPLACE without the missing page: T1's LRU frame if `|T1| > p` (or T2 is empty), else T2's.
    fn replace_from_t1(&self) -> bool {
        let (t1, t2) = (self.lists.first.len(), self.lists.second.len());
        t1 >= 1 && (t1 > self.history.p || t2 == 0)
    }
}

/// ARC replacement (Megiddo & Modha, FAST 2003).
///
/// `on_hit` takes the policy's mutex and relinks the frame, so it is not wait-free (not R5, as
/// for [`crate::Lru`]). The frames' [`FrameHook`]s are neither read nor written (R7). The ghost
/// lists hold at most `2 * capacity` page ids.
pub struct ArcPolicy {
    state: Mutex<State>,
}

impl ArcPolicy {
    /// ARC over frames `0..capacity`, all initially free, with `p = 0`.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> ArcPolicy {
        check_capacity(capacity);
        ArcPolicy {
            state: Mutex::new(State {
                lists: TwoLists::new(capacity),
                history: History::new(capacity),
                cursor: None,
            }),
        }
    }
}

impl Policy for ArcPolicy {
    fn name(&self) -> String {
        "arc".to_owned()
    }

    /// A page with a ghost in B1 or B2 adapts `p` and enters T2; any other page enters T1, after
    /// the history is trimmed to make room for it (module docs, step 1).
    fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let index = frame.index();
        state.step_off(index);
        state.lists.take(index);
        let (t1, t2) = (state.lists.first.len(), state.lists.second.len());
        let second = state.history.admit(page, t1, t2);
        state.lists.insert(index, page, second);
    }

    /// Moves the frame to the MRU end of T2, under the lock (not R5).
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        let mut state = self.state.lock();
        state.step_off(frame.index());
        state.lists.promote(frame.index());
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let index = frame.index();
        match why {
            // Left where it is: the fix holding the latch has already reported its hit (or is
            // the load itself). The search moves on.
            Rejection::InUse | Rejection::SwizzledChildren => state.move_on(index),
            Rejection::Root => {
                state.step_off(index);
                state.lists.block(index);
            }
            Rejection::NotResident => {
                state.step_off(index);
                state.lists.take(index);
            }
        }
    }

    /// An evicted page becomes the newest ghost of B1 or B2, after the list it left; a freed
    /// page leaves no ghost.
    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        state.step_off(frame.index());
        let (place, page) = state.lists.take(frame.index());
        if evicted {
            state.cursor = None;
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

    /// The cursor's frame if a search is under way; else the LRU end of T1 if `|T1| > p` or T2
    /// is empty, else the LRU end of T2; if only blocked frames are resident, one of them; else
    /// `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        if state.lists.unblocked() == 0 {
            return state.lists.blocked_candidate().map(frame_id);
        }
        let cursor = state.cursor.filter(|&f| matches!(state.lists.place(f), Place::First | Place::Second));
        let from_t1 = state.replace_from_t1();
        cursor.or_else(|| state.lists.list(!from_t1).oldest()).map(frame_id)
    }
}

/// The history of ARC and CAR: the ghost lists B1 and B2 and the adaptive target `p` for the size
/// of T1 (module docs, steps 1 and 3). `c` is the capacity.
pub(crate) struct History {
    pub(crate) b1: Ghosts,
    pub(crate) b2: Ghosts,
    pub(crate) p: usize,
    pub(crate) c: usize,
}

impl History {
    pub(crate) fn new(capacity: usize) -> History {
        History {
            // One more than the bounds `remember` restores, so that the directories never drop
            // an entry on their own.
            b1: Ghosts::preallocated(capacity + 1),
            b2: Ghosts::preallocated(2 * capacity + 1),
            p: 0,
            c: capacity,
        }
    }

    /// A miss loads `page` while T1 and T2 hold `t1` and `t2` frames. Returns true if the page
    /// goes to T2 (a ghost hit, which adapts `p` and removes the ghost), false if it goes to T1;
    /// for a page with no ghost, first drops the oldest ghost of B1 if `|T1| + |B1| >= c`, else
    /// of B2 if the directory holds `2c` entries, so that the new page fits both bounds.
    pub(crate) fn admit(&mut self, page: PageId, t1: usize, t2: usize) -> bool {
        let (b1, b2) = (self.b1.len(), self.b2.len());
        if self.b1.remove(page).is_some() {
            self.p = (self.p + (b2 / b1).max(1)).min(self.c);
            true
        } else if self.b2.remove(page).is_some() {
            self.p = self.p.saturating_sub((b1 / b2).max(1));
            true
        } else {
            if t1 + b1 >= self.c {
                self.b1.pop_oldest();
            } else if t1 + t2 + b1 + b2 >= 2 * self.c {
                self.b2.pop_oldest();
            }
            false
        }
    }

    /// `page` was evicted from T2 (`second`) or T1: it becomes the newest ghost of B2 or B1. Then
    /// the bounds are restored (they can only break when a blocked frame is evicted, as its list
    /// no longer counted it).
    pub(crate) fn remember(&mut self, page: PageId, second: bool, t1: usize, t2: usize) {
        if second {
            self.b2.insert(page, ());
        } else {
            self.b1.insert(page, ());
        }
        while t1 + self.b1.len() > self.c {
            self.b1.pop_oldest();
        }
        while t1 + t2 + self.b1.len() + self.b2.len() > 2 * self.c {
            if self.b2.pop_oldest().is_none() {
                self.b1.pop_oldest();
            }
        }
    }

    /// The ARC/CAR invariants over lists of `t1` and `t2` frames (for the proptests).
    #[cfg(test)]
    pub(crate) fn check(&self, t1: usize, t2: usize) {
        let (b1, b2, c) = (self.b1.len(), self.b2.len(), self.c);
        assert!(t1 + t2 <= c, "|T1| + |T2| = {t1} + {t2} > c = {c}");
        assert!(t1 + b1 <= c, "|T1| + |B1| = {t1} + {b1} > c = {c}");
        assert!(t1 + t2 + b1 + b2 <= 2 * c, "directory {t1} + {t2} + {b1} + {b2} > 2c, c = {c}");
        assert!(self.p <= c, "p = {} > c = {c}", self.p);
        assert!(self.b1.allocated() <= c + 1 && self.b2.allocated() <= 2 * c + 1, "ghost memory");
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;

    fn page(id: u64) -> PageId {
        PageId::new(id).unwrap()
    }

    fn load(policy: &ArcPolicy, h: &TestHooks, frame: u32, id: u64) {
        policy.on_insert(FrameId(frame), page(id), &h[frame as usize]);
    }

    /// (T1, T2) frames from the LRU end, p, and (B1, B2) pages from the oldest.
    fn snapshot(policy: &ArcPolicy) -> (Vec<usize>, Vec<usize>, usize, Vec<u64>, Vec<u64>) {
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
    /// frame `f` first holding page `f + 1`:
    /// - load 1 2 3 4 into frames 0..4: T1 = [0 1 2 3]. Hit 0, 1: T1 = [2 3], T2 = [0 1].
    /// - |T1| = 2 > p = 0: evict T1's LRU frames 2 and 3, B1 = [3 4].
    /// - load page 3 into frame 2: a B1 ghost hit, p += max(1, |B2|/|B1| = 0/2) = 1; T2 = [0 1 2].
    /// - load page 9 into frame 3: no ghost, |T1| + |B1| = 1 < 4, total 4 < 8: no trim; T1 = [3].
    /// - |T1| = 1 is not > p = 1: evict T2's LRU frames 0 and 1 (pages 1, 2), B2 = [1 2].
    /// - load page 1 into frame 0: a B2 ghost hit, p -= max(1, |B1|/|B2| = 1/2 = 0): p = 0.
    /// - |T1| = 1 > 0: evict frame 3 (page 9), B1 = [4 9].
    #[test]
    fn r4_hand_worked_adaptation() {
        let policy = ArcPolicy::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 1]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(snapshot(&policy), (vec![], vec![0, 1], 0, vec![3, 4], vec![]));
        load(&policy, &h, 2, 3);
        load(&policy, &h, 3, 9);
        assert_eq!(snapshot(&policy), (vec![3], vec![0, 1, 2], 1, vec![4], vec![]));
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 1);
        load(&policy, &h, 0, 1);
        assert_eq!(snapshot(&policy), (vec![3], vec![2, 0], 0, vec![4], vec![2]));
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(snapshot(&policy), (vec![], vec![2, 0], 0, vec![4, 9], vec![2]));
    }

    /// Paper, case IV.A: when `|T1| + |B1| = c`, loading a page with no ghost drops B1's oldest
    /// ghost, so a page evicted long enough ago is loaded as new. Capacity 2:
    /// load 1 2 -> T1 = [0 1]; evict 0 -> B1 = [1]; load 3 into 0: |T1| + |B1| = 2 = c, drop
    /// ghost 1; evict 1 (page 2) -> B1 = [2]; load 1 into 1: no ghost left, so it enters T1,
    /// and as |T1| + |B1| = 2 = c again, ghost 2 is dropped too.
    #[test]
    fn r4_b1_trimmed_when_t1_and_b1_fill_the_cache() {
        let policy = ArcPolicy::new(2);
        let h = TestHooks::new(2);
        h.insert(&policy, &[0, 1]);
        assert_eq!(h.evict(&policy), 0);
        load(&policy, &h, 0, 3);
        assert_eq!(snapshot(&policy), (vec![1, 0], vec![], 0, vec![], vec![]));
        assert_eq!(h.evict(&policy), 1);
        load(&policy, &h, 1, 1);
        assert_eq!(snapshot(&policy), (vec![0, 1], vec![], 0, vec![], vec![]));
    }

    /// A scan of new pages goes through T1 only: with T2 at least as large as p, the frequently
    /// used pages in T2 survive a scan of twice the capacity.
    #[test]
    fn r4_scan_does_not_flush_t2() {
        let policy = ArcPolicy::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 1]);
        for id in 100..108 {
            let victim = h.evict(&policy);
            assert!(victim >= 2, "scan evicted the hot frame {victim}");
            load(&policy, &h, victim, id);
        }
        assert_eq!(snapshot(&policy).1, [0, 1]);
    }

    /// `InUse` and `SwizzledChildren` leave the frame in place and move the search to the next
    /// more recently used frame, then across to the other list; an eviction restarts at the
    /// chosen LRU end; `Root` blocks; `NotResident` forgets without a ghost.
    #[test]
    fn r3_rejections() {
        let policy = ArcPolicy::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[3]);
        // T1 = [0 1 2], T2 = [3], p = 0: search T1 from the LRU end.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::InUse, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::SwizzledChildren, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::SwizzledChildren, &h[2]);
        // Past T1's MRU end, on to T2's LRU end.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(3)));
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(snapshot(&policy), (vec![0, 1, 2], vec![], 0, vec![], vec![4]));
        // The next search starts again at T1's LRU end.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::NotResident, &h[1]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 0, "only the root is left");
        assert_eq!(policy.next_candidate(&h), None);
        assert_eq!(snapshot(&policy), (vec![], vec![], 0, vec![3, 1], vec![4]));
    }

    /// A freed page leaves no ghost: loading it again is a plain miss into T1.
    #[test]
    fn r4_freed_page_has_no_ghost() {
        let policy = ArcPolicy::new(2);
        let h = TestHooks::new(2);
        h.insert(&policy, &[0, 1]);
        policy.on_remove(FrameId(0), false, &h[0]);
        load(&policy, &h, 0, 1);
        assert_eq!(snapshot(&policy), (vec![1, 0], vec![], 0, vec![], vec![]));
    }

    /// The paper's ARC (Figure 4) written naively over `VecDeque`s of page ids, LRU first, with
    /// the two changes the module docs document: REPLACE drops the tie-break on the missing page,
    /// and on a ghost hit it runs before `p` adapts, so the adaptation sees the ghost lists as
    /// REPLACE left them (the pool evicts before it loads; CAR's paper has this order). The
    /// history is trimmed by the paper's own case analysis (IV.A, IV.B), not by sizes.
    struct Model {
        c: usize,
        p: usize,
        t1: VecDeque<u64>,
        t2: VecDeque<u64>,
        b1: VecDeque<u64>,
        b2: VecDeque<u64>,
    }

    fn take(list: &mut VecDeque<u64>, x: u64) -> bool {
        list.iter().position(|&y| y == x).and_then(|i| list.remove(i)).is_some()
    }

    impl Model {
        fn replace(&mut self) -> u64 {
            if !self.t1.is_empty() && (self.t1.len() > self.p || self.t2.is_empty()) {
                let y = self.t1.pop_front().unwrap();
                self.b1.push_back(y);
                y
            } else {
                let y = self.t2.pop_front().unwrap();
                self.b2.push_back(y);
                y
            }
        }

        /// Whether `x` hit, and the page evicted for it.
        fn request(&mut self, x: u64) -> (bool, Option<u64>) {
            if take(&mut self.t1, x) || take(&mut self.t2, x) {
                self.t2.push_back(x);
                return (true, None);
            }
            let full = self.t1.len() + self.t2.len() == self.c;
            if self.b1.contains(&x) {
                let evicted = self.replace();
                let (b1, b2) = (self.b1.len(), self.b2.len());
                self.p = (self.p + (b2 / b1).max(1)).min(self.c);
                take(&mut self.b1, x);
                self.t2.push_back(x);
                return (false, Some(evicted));
            }
            if self.b2.contains(&x) {
                let evicted = self.replace();
                let (b1, b2) = (self.b1.len(), self.b2.len());
                self.p = self.p.saturating_sub((b1 / b2).max(1));
                take(&mut self.b2, x);
                self.t2.push_back(x);
                return (false, Some(evicted));
            }
            let l1 = self.t1.len() + self.b1.len();
            let total = l1 + self.t2.len() + self.b2.len();
            let mut evicted = None;
            if l1 == self.c {
                if self.t1.len() < self.c {
                    self.b1.pop_front();
                    evicted = Some(self.replace());
                } else {
                    evicted = self.t1.pop_front();
                }
            } else if total >= self.c {
                if total == 2 * self.c {
                    self.b2.pop_front();
                }
                evicted = Some(self.replace());
            }
            assert_eq!(evicted.is_some(), full, "the paper evicts exactly when the cache is full");
            self.t1.push_back(x);
            (false, evicted)
        }
    }

    /// [`Model`] with the module docs' rejections, removals and blocked frames (steps 1-6), over
    /// pages, for `r3_r4_matches_the_model_with_rejections`.
    struct RejModel {
        m: Model,
        /// Blocked pages, oldest first, with the list each left (true for T2).
        blocked: VecDeque<(u64, bool)>,
        /// The next proposal after `InUse` or `SwizzledChildren` rejections.
        cursor: Option<u64>,
    }

    impl RejModel {
        /// The list holding `x` (true for T2), if it is in T1 or T2.
        fn list_of(&self, x: u64) -> Option<bool> {
            if self.m.t1.contains(&x) {
                Some(false)
            } else if self.m.t2.contains(&x) {
                Some(true)
            } else {
                None
            }
        }

        fn list(&self, second: bool) -> &VecDeque<u64> {
            if second {
                &self.m.t2
            } else {
                &self.m.t1
            }
        }

        /// The page after `x` toward the MRU end of its list.
        fn newer(&self, x: u64, second: bool) -> Option<u64> {
            let list = self.list(second);
            let at = list.iter().position(|&y| y == x)?;
            list.get(at + 1).copied()
        }

        /// Step 6: a page leaving its place under the cursor moves it to its more recent
        /// neighbour (or back to the start of the search).
        fn step_off(&mut self, x: u64) {
            if self.cursor == Some(x) {
                self.cursor = self.list_of(x).and_then(|second| self.newer(x, second));
            }
        }

        fn hit(&mut self, x: u64) {
            if self.list_of(x).is_some() {
                self.step_off(x);
                take(&mut self.m.t1, x);
                take(&mut self.m.t2, x);
                self.m.t2.push_back(x);
            }
        }

        /// Step 5: `InUse` and `SwizzledChildren` move the search to the next more recently used
        /// page, past the MRU end to the LRU end of the other list (or of its own if that is
        /// empty).
        fn move_on(&mut self, x: u64) {
            if let Some(second) = self.list_of(x) {
                self.cursor = self
                    .newer(x, second)
                    .or_else(|| self.list(!second).front().copied())
                    .or_else(|| self.list(second).front().copied());
            }
        }

        fn block(&mut self, x: u64) {
            if let Some(second) = self.list_of(x) {
                self.step_off(x);
                take(&mut self.m.t1, x);
                take(&mut self.m.t2, x);
                self.blocked.push_back((x, second));
            }
        }

        /// Step 3: an evicted page becomes the newest ghost of the list it left (a blocked one,
        /// of the list it was blocked from), then the bounds are restored; a freed one leaves
        /// none. Every eviction resets the search.
        fn leave(&mut self, x: u64, evicted: bool) {
            self.step_off(x);
            let second = match self.list_of(x) {
                Some(second) => {
                    take(&mut self.m.t1, x);
                    take(&mut self.m.t2, x);
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
            self.cursor = None;
            let m = &mut self.m;
            if second {
                m.b2.push_back(x)
            } else {
                m.b1.push_back(x)
            }
            while m.t1.len() + m.b1.len() > m.c {
                m.b1.pop_front();
            }
            while m.t1.len() + m.t2.len() + m.b1.len() + m.b2.len() > 2 * m.c {
                if m.b2.pop_front().is_none() {
                    m.b1.pop_front();
                }
            }
        }

        /// Step 1.
        fn load(&mut self, x: u64) {
            let m = &mut self.m;
            let (b1, b2) = (m.b1.len(), m.b2.len());
            if take(&mut m.b1, x) {
                m.p = (m.p + (b2 / b1).max(1)).min(m.c);
                m.t2.push_back(x);
            } else if take(&mut m.b2, x) {
                m.p = m.p.saturating_sub((b1 / b2).max(1));
                m.t2.push_back(x);
            } else {
                if m.t1.len() + b1 >= m.c {
                    m.b1.pop_front();
                } else if m.t1.len() + m.t2.len() + b1 + b2 >= 2 * m.c {
                    m.b2.pop_front();
                }
                m.t1.push_back(x);
            }
        }

        /// Step 4.
        fn propose(&mut self) -> Option<u64> {
            let m = &self.m;
            if m.t1.is_empty() && m.t2.is_empty() {
                let (x, second) = self.blocked.pop_front()?;
                self.blocked.push_back((x, second));
                return Some(x);
            }
            if let Some(x) = self.cursor {
                return Some(x);
            }
            let from_t1 = !m.t1.is_empty() && (m.t1.len() > m.p || m.t2.is_empty());
            if from_t1 {
                m.t1.front().copied()
            } else {
                m.t2.front().copied()
            }
        }
    }

    proptest! {
        /// Serving a trace one eviction per miss, `ArcPolicy` hits, evicts, adapts `p` and keeps
        /// lists and ghosts exactly as the reference model of the paper does.
        #[test]
        fn r4_matches_the_paper_model_one_eviction_per_miss((capacity, trace) in sim::trace(8)) {
            let policy = ArcPolicy::new(capacity);
            let served = sim::replay(capacity, &trace, &policy);
            let c = capacity;
            let mut model =
                Model { c, p: 0, t1: VecDeque::new(), t2: VecDeque::new(), b1: VecDeque::new(), b2: VecDeque::new() };
            let expected: Vec<_> = trace.iter().map(|&x| model.request(x)).collect();
            prop_assert_eq!(served, expected);
            let state = policy.state.lock();
            prop_assert_eq!(state.lists.page_ids(false), Vec::from(model.t1));
            prop_assert_eq!(state.lists.page_ids(true), Vec::from(model.t2));
            prop_assert_eq!(state.history.b1.oldest_ids(), Vec::from(model.b1));
            prop_assert_eq!(state.history.b2.oldest_ids(), Vec::from(model.b2));
            prop_assert_eq!(state.history.p, model.p);
        }

        /// ARC's invariants (|T1| + |T2| <= c, |T1| + |B1| <= c, |T1| + |T2| + |B1| + |B2| <= 2c,
        /// 0 <= p <= c, no ghost for a resident page, ghost memory bounded) and the rejection
        /// rules hold after every step of random pool histories with ghost hits.
        #[test]
        fn r3_r4_invariants_hold_on_random_histories((capacity, ops) in sim::scenario(10)) {
            let policy = ArcPolicy::new(capacity);
            sim::run(capacity, &ops, &policy, |_| {
                let state = policy.state.lock();
                state.lists.check();
                state.history.check(state.lists.first.len(), state.lists.second.len());
                for ghost in state.history.b1.oldest_first().into_iter().chain(state.history.b2.oldest_first()) {
                    assert!(!state.lists.holds(ghost), "resident page {ghost:?} has a ghost");
                }
                if let Some(cursor) = state.cursor {
                    assert!(matches!(state.lists.place(cursor), Place::First | Place::Second));
                }
            });
        }
        /// ARC with the module docs' rejections (steps 1-6): `InUse` and `SwizzledChildren` move
        /// the search on without touching the page, `Root` blocks it (remembering its list, whose
        /// ghost list it joins if evicted), `NotResident` and frees leave no ghost, evictions
        /// reset the search and restore the history's bounds. `ArcPolicy` proposes the same
        /// pages and keeps the same lists, ghosts, p, blocked list and cursor on random pool
        /// histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections((capacity, ops) in sim::scenario(10)) {

            let policy = ArcPolicy::new(capacity);
            let c = capacity;
            let mut model = RejModel {
                m: Model { c, p: 0, t1: VecDeque::new(), t2: VecDeque::new(), b1: VecDeque::new(), b2: VecDeque::new() },
                blocked: VecDeque::new(),
                cursor: None,
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
                let cursor = state.cursor.map(|f| pool.pages[f].unwrap());
                drop(state);
                let m = &model.m;
                let expected = (
                    Vec::from(m.t1.clone()),
                    Vec::from(m.t2.clone()),
                    Vec::from(m.b1.clone()),
                    Vec::from(m.b2.clone()),
                    m.p,
                );
                prop_assert_eq!(seen, expected, "after step {} ({:?})", t, op);
                let want: Vec<u64> = model.blocked.iter().map(|&(x, _)| x).collect();
                prop_assert_eq!(blocked, want, "blocked after step {} ({:?})", t, op);
                prop_assert_eq!(cursor, model.cursor, "cursor after step {} ({:?})", t, op);
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
                Rejection::InUse | Rejection::SwizzledChildren => self.move_on(page),
                Rejection::Root => self.block(page),
                Rejection::NotResident => unreachable!("a refusal as NotResident is a removal"),
            }
        }
    }
}
