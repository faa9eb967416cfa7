//! LRU-K (O'Neil, O'Neil & Weikum, SIGMOD 1993): evict the page whose K-th most recent reference
//! lies furthest in the past (the largest *backward K-distance*). Pages with fewer than K
//! references have an infinite distance and go first, least recently used first. The reference
//! history of evicted pages is retained for a while, so a page that comes back is judged by all
//! its references, not only the new one.
//!
//! # State
//!
//! Under one mutex: a reference clock (one tick per hit or load); per frame `HIST(1..K)` (most
//! recent first, 0 for "no such reference"), `LAST` and the page; an ordered set of the unblocked
//! resident frames by `(HIST(K), LAST, frame)`; the blocked list; the cursor (a key of that set);
//! and the *retained history*, the `HIST` blocks of evicted pages, at most `capacity` of them.
//!
//! # Steps
//!
//! 1. `on_insert` (a miss at time t): if the page has a retained block, it leaves the history and
//!    shifts by one (`HIST(i) = old HIST(i-1)`); otherwise `HIST(2..K) = 0`. Then
//!    `HIST(1) = LAST = t`.
//! 2. `on_hit` at time t: if `t - LAST > CRP`, the reference is new: the correlated period that
//!    just closed collapses to a point, `HIST(i) = HIST(i-1) + (LAST - HIST(1))` for i = K down
//!    to 2 (a 0 stays 0), and `HIST(1) = t`. In every case `LAST = t`. Under the lock (not R5).
//! 3. `next_candidate` walks the set in key order from the cursor (wrapping) and proposes the
//!    first frame outside its correlated period at the next tick (`now + 1 - LAST > CRP`); if
//!    there is none, the first frame. A `HIST(K)` of 0 sorts first: pages with fewer than K
//!    references go first, least recently used first (the subsidiary policy). If the set is
//!    empty, a blocked frame; else `None`. With CRP 0 this is one O(log n) lookup.
//! 4. `InUse` and `SwizzledChildren`: the cursor becomes the frame's key; its history is
//!    unchanged. `Root`: out of the set, blocked (hits still update its history). `NotResident`:
//!    forgotten, without history.
//! 5. `on_remove`: an eviction puts the page's block into the retained history and resets the
//!    cursor; a freed page leaves no history.
//!
//! # Parameters
//!
//! K is 1..=8 (`lru-k:K`; LRU-1 is LRU). The Correlated Reference Period is 0 by default, so every
//! reference counts; [`LruK::with_correlated_period`] sets it, in references. The paper's Retained
//! Information Period drops a block a fixed (wall-clock) time after the page's last reference.
//! Here the retained history holds at most `capacity` blocks, and when it is full the block of the
//! page evicted longest ago goes: `capacity` evictions are one full turnover of the pool, so a
//! page keeps its history if it comes back within about one turnover, as long as a page that could
//! win a frame back by its K-distance. Memory is O(capacity × K). A page whose block was dropped
//! comes back as a new page.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_lru2_string_uses_retained_history`, LRU-2, 3 frames, `HIST` written
//! `[HIST(1),HIST(2)]`: load a b c (t1–t3), hit a, b (t4, t5): `[4,1] [5,2] [3,0]`. c goes
//! (infinite distance); load d (t6), hit a (t7); d goes. c comes back at t8 as `[8,3]` thanks to
//! its retained block, so the next victim is b (`HIST(2)` = 2), not c. Load and hit e (t9, t10):
//! LRU-2 evicts c (`HIST(2)` = 3) where LRU would evict a (last used at t7).
//! `victims_match_an_unbounded_history_model` checks the victims against a model that keeps every
//! reference time.
//!
//! # Deviations
//!
//! Time counts references, not seconds. A 0 in `HIST` stays 0 when a correlated period collapses
//! (the paper's formula would turn "no reference" into a small time). The paper leaves the
//! subsidiary policy open; we use LRU on `LAST`. An ordered set replaces the paper's linear
//! search. `InUse` is not a reference: the fix that holds the frame was already reported as a hit.

use std::collections::BTreeSet;
use std::ops::Bound;

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::ghost::Ghosts;
use crate::lazy::FrameVec;
use crate::list::Queues;
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// Where a frame stands.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Slot {
    Free,
    /// Resident and in the victim order.
    Ranked,
    /// Resident, rejected as a root (R3): out of the victim order.
    Blocked,
}

/// A frame's rank in the victim order, smallest first: `HIST(K)` (0 = fewer than K references,
/// an infinite backward K-distance), then `LAST` (the subsidiary LRU order), then the frame.
type Key = (u64, u64, usize);

/// A retained `HIST` block: the first `k` entries are used.
type Block = [u64; LruK::MAX_K];

struct State {
    k: usize,
    /// The Correlated Reference Period, in references.
    crp: u64,
    /// The reference clock: every hit and every load is one tick.
    now: u64,
    slots: FrameVec<Slot>,
    pages: FrameVec<Option<PageId>>,
    /// `HIST(f, 1..=K)` in the first `k` words of `hist[f]`, most recent first; 0 means no such
    /// reference.
    hist: FrameVec<Block>,
    /// `LAST(f)`: the time of the frame's most recent reference, correlated or not.
    last: FrameVec<u64>,
    /// The ranked frames.
    order: BTreeSet<Key>,
    /// Blocked frames, in list 0.
    blocked: Queues,
    /// After `InUse` or `SwizzledChildren` rejections, the search resumes after this key (and
    /// wraps to the start); `None` starts at the smallest key. Reset by every eviction.
    cursor: Option<Key>,
    /// The `HIST` blocks of evicted pages (the retained information), at most `capacity` of them,
    /// in fixed arrays of which the first `k` entries are used.
    retained: Ghosts<Block>,
}

impl State {
    fn hist(&self, frame: usize) -> &[u64] {
        &self.hist[frame][..self.k]
    }

    fn key(&self, frame: usize) -> Key {
        (self.hist(frame)[self.k - 1], self.last[frame], frame)
    }

    /// Takes `frame` out of every structure; returns its page and `HIST` block if it was resident.
    fn forget(&mut self, frame: usize) -> Option<(PageId, Block)> {
        match self.slots[frame] {
            Slot::Free => return None,
            Slot::Ranked => {
                let key = self.key(frame);
                self.order.remove(&key);
            }
            Slot::Blocked => {
                self.blocked.unlink(frame);
            }
        }
        self.slots[frame] = Slot::Free;
        let mut block = [0; LruK::MAX_K];
        block[..self.k].copy_from_slice(self.hist(frame));
        self.hist[frame] = [0; LruK::MAX_K];
        self.last[frame] = 0;
        self.pages[frame].take().map(|page| (page, block))
    }

    /// Applies the paper's hit rule at time `now` to a resident frame.
    fn reference(&mut self, frame: usize) {
        self.now += 1;
        let t = self.now;
        let ranked = self.slots[frame] == Slot::Ranked;
        if ranked {
            let key = self.key(frame);
            self.order.remove(&key);
        }
        let last = self.last[frame];
        let k = self.k;
        let hist = &mut self.hist[frame][..k];
        if t - last > self.crp {
            // A new, uncorrelated reference. The correlated period that just closed collapses
            // to a point: older references move forward by its length.
            let correlated = last - hist[0];
            for i in (1..k).rev() {
                hist[i] = if hist[i - 1] == 0 { 0 } else { hist[i - 1] + correlated };
            }
            hist[0] = t;
        }
        self.last[frame] = t;
        if ranked {
            let key = self.key(frame);
            self.order.insert(key);
        }
    }

    /// The first frame in the search order (after the cursor, wrapping) that is not within its
    /// correlated period at the next tick; if every frame is, the first one.
    fn candidate(&self) -> Option<usize> {
        let t = self.now + 1;
        let after = match self.cursor {
            Some(c) => self.order.range((Bound::Excluded(c), Bound::Unbounded)),
            None => self.order.range(..),
        };
        let before = self.cursor.map(|c| self.order.range(..=c)).into_iter().flatten();
        let walk = after.chain(before);
        let mut first = None;
        for &(_, last, frame) in walk {
            if t - last > self.crp {
                return Some(frame);
            }
            first = first.or(Some(frame));
        }
        first
    }
}

/// LRU-K replacement (default K = 2, Correlated Reference Period 0).
///
/// Every hit updates the frame's history and its place in an ordered set under the policy's
/// mutex, a documented breach of R5 (the per-hit lock that BP-Wrapper batches away). The frames'
/// [`FrameHook`]s are neither read nor written (R7).
pub struct LruK {
    k: usize,
    state: Mutex<State>,
}

impl LruK {
    /// The K of LRU-2, the variant the paper recommends.
    pub const DEFAULT_K: usize = 2;
    /// The largest accepted K.
    pub const MAX_K: usize = 8;

    /// LRU-K over frames `0..capacity`, all initially free, with a Correlated Reference Period
    /// of 0 (every reference counts).
    ///
    /// # Panics
    /// If `k` is outside 1..=[`LruK::MAX_K`], or if `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize, k: usize) -> LruK {
        LruK::with_correlated_period(capacity, k, 0)
    }

    /// As [`LruK::new`], with a Correlated Reference Period of `crp` references: a reference
    /// within `crp` ticks of the page's previous one is correlated with it and does not count as
    /// a new one, and a page is not evicted within `crp` ticks of its last reference unless every
    /// page is.
    ///
    /// # Panics
    /// As [`LruK::new`].
    #[must_use]
    pub fn with_correlated_period(capacity: usize, k: usize, crp: u64) -> LruK {
        assert!((1..=Self::MAX_K).contains(&k), "LRU-K: K={k} outside 1..={}", Self::MAX_K);
        check_capacity(capacity);
        let state = State {
            k,
            crp,
            now: 0,
            slots: FrameVec::new(capacity, Slot::Free),
            pages: FrameVec::new(capacity, None),
            hist: FrameVec::new(capacity, [0; LruK::MAX_K]),
            last: FrameVec::new(capacity, 0),
            order: BTreeSet::new(),
            blocked: Queues::new(capacity, 1),
            cursor: None,
            retained: Ghosts::new(capacity),
        };
        LruK { k, state: Mutex::new(state) }
    }

    /// The K this policy was built with.
    #[must_use]
    pub fn k(&self) -> usize {
        self.k
    }
}

impl Policy for LruK {
    fn name(&self) -> String {
        format!("lru-k(k={})", self.k)
    }

    /// A miss: the page's retained history, if any, is shifted by one and the new reference
    /// becomes `HIST(1)`; without history, only `HIST(1)` is known.
    fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let f = frame.index();
        state.forget(f);
        state.now += 1;
        let t = state.now;
        let k = state.k;
        let previous = state.retained.remove(page);
        let hist = &mut state.hist[f][..k];
        if let Some(previous) = previous {
            hist[1..].copy_from_slice(&previous[..k - 1]);
        }
        hist[0] = t;
        state.last[f] = t;
        state.pages[f] = Some(page);
        state.slots[f] = Slot::Ranked;
        let key = state.key(f);
        state.order.insert(key);
    }

    /// Records the reference and re-ranks the frame, under the lock (not R5).
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        let mut state = self.state.lock();
        if state.slots[frame.index()] != Slot::Free {
            state.reference(frame.index());
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let f = frame.index();
        match why {
            // The statistics stay as they are (the fix that holds the page was reported as a
            // hit already); the search moves on to the next frame in victim order.
            Rejection::InUse | Rejection::SwizzledChildren => {
                if state.slots[f] == Slot::Ranked {
                    state.cursor = Some(state.key(f));
                }
            }
            Rejection::Root => {
                if state.slots[f] == Slot::Ranked {
                    let key = state.key(f);
                    state.order.remove(&key);
                    state.slots[f] = Slot::Blocked;
                    state.blocked.push_newest(0, f);
                }
            }
            Rejection::NotResident => {
                state.forget(f);
            }
        }
    }

    /// An eviction keeps the page's `HIST` block in the retained history (dropping the oldest
    /// retained block beyond `capacity`); a freed page leaves no history.
    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let forgotten = state.forget(frame.index());
        if evicted {
            state.cursor = None;
            if let Some((page, block)) = forgotten {
                state.retained.insert(page, block);
            }
        }
    }

    /// The ranked frame with the largest backward K-distance (LRU among infinite ones), skipping
    /// frames within their correlated period and, during a search, the frames up to the cursor;
    /// if only blocked frames are resident, one of them; else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        state.candidate().or_else(|| state.blocked.rotate_oldest(0)).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;
    use proptest::prelude::*;

    fn pid(page: u64) -> PageId {
        PageId::new(page).unwrap()
    }

    fn load(policy: &LruK, h: &TestHooks, frame: u32, page: u64) {
        policy.on_insert(FrameId(frame), pid(page), &h[frame as usize]);
    }

    fn hist(policy: &LruK, frame: usize) -> Vec<u64> {
        policy.state.lock().hist(frame).to_vec()
    }

    /// Hand-worked LRU-2 string over 3 frames; pages a=10, b=11, c=12, d=13, e=14; `HIST` written
    /// `[HIST(1), HIST(2)]`, 0 for "none":
    /// - t1..t3 load a b c: `[1,0] [2,0] [3,0]`; t4 hit a `[4,1]`; t5 hit b `[5,2]`.
    /// - Victim: c, the only page with an infinite distance. Its block `[3,0]` is retained.
    /// - t6 load d `[6,0]`; t7 hit a `[7,4]`. Victim: d (infinite), retained `[6,0]`.
    /// - t8 load c: retained history `[3,0]` becomes `[8,3]`. Without it c would be `[8,0]`
    ///   and the next victim; with it the victim is b (`HIST(2)` = 2 is the oldest).
    /// - t9 load e, t10 hit e: a `[7,4]`, c `[8,3]`, e `[10,9]`. LRU-2 evicts c, whose second
    ///   most recent reference is the oldest, where LRU would evict a (last used at t7).
    #[test]
    fn r4_hand_worked_lru2_string_uses_retained_history() {
        let policy = LruK::new(3, 2);
        let h = TestHooks::new(3);
        load(&policy, &h, 0, 10);
        load(&policy, &h, 1, 11);
        load(&policy, &h, 2, 12);
        h.hit(&policy, &[0, 1]);
        assert_eq!(
            (hist(&policy, 0), hist(&policy, 1), hist(&policy, 2)),
            (vec![4, 1], vec![5, 2], vec![3, 0])
        );
        assert_eq!(h.evict(&policy), 2);
        load(&policy, &h, 2, 13);
        h.hit(&policy, &[0]);
        assert_eq!(h.evict(&policy), 2);
        load(&policy, &h, 2, 12);
        assert_eq!(hist(&policy, 2), [8, 3], "the retained block of c, shifted");
        assert_eq!(h.evict(&policy), 1);
        load(&policy, &h, 1, 14);
        h.hit(&policy, &[1]);
        assert_eq!(hist(&policy, 1), [10, 9]);
        assert_eq!(h.evict(&policy), 2, "c: HIST(2) = 3 is the oldest");
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// The Correlated Reference Period, hand-worked with K = 2, CRP = 2, 3 frames. A frame is
    /// eligible at tick t if t - LAST > 2.
    /// - t1 load a `[1,0]`; t2 hit a: correlated (2 - 1 <= 2), so only LAST = 2; t3 load b `[3,0]`.
    /// - Next tick 4: a (4 - 2) and b (4 - 3) are both within their CRP, so the first in victim
    ///   order is proposed: a (infinite distance, older LAST).
    /// - t4 hit b: correlated, LAST = 4. t5 hit a: uncorrelated (5 - 2 > 2); the closed
    ///   correlated period [1,2] collapses to a point, so `HIST` = `[5, 1 + (2 - 1)]` = `[5,2]`.
    /// - Next tick 6: b (6 - 4) and a (6 - 5) both within their CRP: first in order, b (infinite).
    /// - t6, t7, t8 hit a: each within the CRP of the previous one (LAST moves with every
    ///   reference), so they are one correlated burst and `HIST` stays `[5,2]`.
    /// - Next tick 9: b (9 - 4 = 5) is eligible and first in order.
    /// - t9 hit b: uncorrelated; its burst [3,4] collapses: `[9, 3 + (4 - 3)]` = `[9,4]`.
    /// - t10 load c into the third frame: `[10,0]`, first in order. At tick 11 it is within its
    ///   CRP, and so is b (11 - 9); a (11 - 8 = 3) is not, so a is proposed.
    #[test]
    fn r4_correlated_references_do_not_count() {
        let policy = LruK::with_correlated_period(3, 2, 2);
        let h = TestHooks::new(3);
        load(&policy, &h, 0, 1);
        h.hit(&policy, &[0]);
        assert_eq!(hist(&policy, 0), [1, 0]);
        load(&policy, &h, 1, 2);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)), "all correlated: first in order");
        h.hit(&policy, &[1, 0]);
        assert_eq!(hist(&policy, 0), [5, 2]);
        assert_eq!(hist(&policy, 1), [3, 0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        h.hit(&policy, &[0, 0, 0]);
        assert_eq!(hist(&policy, 0), [5, 2], "one correlated burst");
        assert_eq!(policy.state.lock().last[0], 8);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_hit(FrameId(1), &h[1]);
        assert_eq!(hist(&policy, 1), [9, 4], "b's burst [3,4] collapses: HIST(2) = 3 + (4 - 3)");
        load(&policy, &h, 2, 3);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)), "c is first in order but within its CRP");
    }

    /// `InUse` and `SwizzledChildren` move the search past the frame without touching its
    /// history; an eviction restarts the search; `Root` blocks until nothing else is resident.
    #[test]
    fn r3_rejections_keep_statistics() {
        let policy = LruK::new(4, 2);
        let h = TestHooks::new(4);
        for f in 0..4 {
            load(&policy, &h, f, u64::from(f));
        }
        h.hit(&policy, &[3]);
        // Order: 0 1 2 (infinite, LRU first), then 3.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::InUse, &h[1]);
        assert_eq!(hist(&policy, 1), [2, 0], "no reference recorded");
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(3)));
        policy.on_rejected(FrameId(3), Rejection::InUse, &h[3]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)), "wraps to the start");
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// A freed page leaves no history; the retained history never exceeds `capacity` blocks.
    #[test]
    fn retained_history_is_bounded_and_skips_freed_pages() {
        let policy = LruK::new(2, 2);
        let h = TestHooks::new(2);
        load(&policy, &h, 0, 1);
        h.hit(&policy, &[0]);
        policy.on_remove(FrameId(0), false, &h[0]);
        load(&policy, &h, 0, 1);
        assert_eq!(hist(&policy, 0), [3, 0], "page 1 was freed: no history");
        for page in 2..10 {
            load(&policy, &h, 1, page);
            policy.on_remove(FrameId(1), true, &h[1]);
            assert!(policy.state.lock().retained.len() <= 2);
        }
        let retained: Vec<u64> = policy.state.lock().retained.oldest_ids();
        assert_eq!(retained, [8, 9]);
    }

    /// The victim LRU-K must choose, from the full reference history: the resident page with the
    /// smallest (K-th most recent reference time or 0, most recent reference time).
    fn model_victim(refs: &[Vec<u64>], resident: &[u64], k: usize) -> u64 {
        *resident
            .iter()
            .min_by_key(|&&p| {
                let r = &refs[p as usize];
                let kth = if r.len() >= k { r[r.len() - k] } else { 0 };
                (kth, *r.last().unwrap())
            })
            .unwrap()
    }

    /// LRU-K with the module docs' rejections and removals (steps 1-5), over frames, for
    /// `r3_r4_matches_the_model_with_rejections`.
    struct RejModel {
        k: usize,
        crp: u64,
        limit: usize,
        now: u64,
        /// Per resident frame: its page, `HIST(1..=K)` and `LAST`.
        res: std::collections::HashMap<usize, (u64, Vec<u64>, u64)>,
        blocked: std::collections::VecDeque<usize>,
        cursor: Option<(u64, u64, usize)>,
        /// Evicted pages' `HIST` blocks, oldest first.
        retained: std::collections::VecDeque<(u64, Vec<u64>)>,
    }

    impl RejModel {
        fn key(&self, f: usize) -> (u64, u64, usize) {
            let (_, hist, last) = &self.res[&f];
            (hist[self.k - 1], *last, f)
        }

        /// The unblocked resident frames' keys, smallest first.
        fn ranked(&self) -> Vec<(u64, u64, usize)> {
            let mut keys: Vec<_> =
                self.res.keys().filter(|f| !self.blocked.contains(f)).map(|&f| self.key(f)).collect();
            keys.sort_unstable();
            keys
        }

        /// Step 1.
        fn load(&mut self, f: usize, page: u64) {
            self.now += 1;
            let mut hist = vec![0; self.k];
            if let Some(at) = self.retained.iter().position(|(p, _)| *p == page) {
                let (_, old) = self.retained.remove(at).unwrap();
                hist[1..].copy_from_slice(&old[..self.k - 1]);
            }
            hist[0] = self.now;
            self.res.insert(f, (page, hist, self.now));
        }

        /// Step 2 (blocked frames too).
        fn hit(&mut self, f: usize) {
            self.now += 1;
            let t = self.now;
            let crp = self.crp;
            let (_, hist, last) = self.res.get_mut(&f).unwrap();
            if t - *last > crp {
                let correlated = *last - hist[0];
                for i in (1..hist.len()).rev() {
                    hist[i] = if hist[i - 1] == 0 { 0 } else { hist[i - 1] + correlated };
                }
                hist[0] = t;
            }
            *last = t;
        }

        /// Step 4: the search resumes after the rejected frame's key.
        fn pass(&mut self, f: usize) {
            if self.res.contains_key(&f) && !self.blocked.contains(&f) {
                self.cursor = Some(self.key(f));
            }
        }

        fn block(&mut self, f: usize) {
            if self.res.contains_key(&f) && !self.blocked.contains(&f) {
                self.blocked.push_back(f);
            }
        }

        /// Step 5: an eviction (of a root too) retains the block, the oldest going past
        /// `capacity`, and resets the search; a free leaves nothing.
        fn leave(&mut self, f: usize, evicted: bool) {
            let (page, hist, _) = self.res.remove(&f).unwrap();
            self.blocked.retain(|&g| g != f);
            if evicted {
                self.cursor = None;
                if self.retained.len() == self.limit {
                    self.retained.pop_front();
                }
                self.retained.push_back((page, hist));
            }
        }

        /// Step 3.
        fn propose(&mut self) -> Option<usize> {
            let ranked = self.ranked();
            if ranked.is_empty() {
                let f = self.blocked.pop_front()?;
                self.blocked.push_back(f);
                return Some(f);
            }
            let walk: Vec<_> = match self.cursor {
                Some(c) => ranked
                    .iter()
                    .filter(|&&key| key > c)
                    .chain(ranked.iter().filter(|&&key| key <= c))
                    .collect(),
                None => ranked.iter().collect(),
            };
            let t = self.now + 1;
            walk.iter().find(|&&&(_, last, _)| t - last > self.crp).or(walk.first()).map(|&&(_, _, f)| f)
        }
    }

    proptest! {
        /// Against a reference model with unbounded history: a pool of `c` frames over `2c - 1`
        /// pages that evicts on every miss once full. When a victim enters the retained history,
        /// the non-resident pages (the victim and the missing page among them) number at most
        /// `c`, so the bounded history loses nothing and the victims must agree.
        #[test]
        fn victims_match_an_unbounded_history_model(
            k in 1usize..=4,
            capacity in 1usize..=6,
            refs in proptest::collection::vec(0u64..12, 0..200),
        ) {
            let pages = 2 * capacity as u64 - 1;
            let policy = LruK::new(capacity, k);
            let h = TestHooks::new(capacity);
            let mut frames: Vec<Option<u64>> = vec![None; capacity];
            let mut history: Vec<Vec<u64>> = vec![Vec::new(); pages as usize];
            for (t, page) in refs.iter().map(|p| p % pages).enumerate() {
                if let Some(f) = frames.iter().position(|&p| p == Some(page)) {
                    h.hit(&policy, &[f as u32]);
                } else {
                    let f = match frames.iter().position(Option::is_none) {
                        Some(f) => f,
                        None => {
                            let resident: Vec<u64> = frames.iter().map(|p| p.unwrap()).collect();
                            let expected = model_victim(&history, &resident, k);
                            let victim = h.evict(&policy) as usize;
                            prop_assert_eq!(frames[victim], Some(expected));
                            victim
                        }
                    };
                    frames[f] = Some(page);
                    load(&policy, &h, f as u32, page);
                }
                history[page as usize].push(t as u64 + 1);
            }
        }

        /// Invariants over random pool runs with every kind of rejection: ranked frames are
        /// exactly the unblocked resident ones, with keys matching their history; each `HIST`
        /// block is strictly decreasing until its zeros; the retained history holds at most
        /// `capacity` blocks and never a resident page.
        #[test]
        fn invariants_hold_over_random_pool_runs(k in 1usize..=3, (capacity, ops) in sim::scenario(8)) {
            let policy = LruK::new(capacity, k);
            sim::run(capacity, &ops, &policy, |pool| {
                let state = policy.state.lock();
                let mut ranked = BTreeSet::new();
                for (f, page) in pool.pages.iter().enumerate() {
                    let expected = match page {
                        None => Slot::Free,
                        Some(_) if pool.blocked[f] => Slot::Blocked,
                        Some(_) => Slot::Ranked,
                    };
                    assert_eq!(state.slots[f], expected, "frame {f}");
                    if expected == Slot::Ranked {
                        ranked.insert(state.key(f));
                    }
                    if let Some(page) = page {
                        assert_eq!(state.pages[f], Some(pid(*page)));
                        assert!(!state.retained.contains(pid(*page)), "resident page {page} retained");
                        let hist = state.hist(f);
                        assert!(hist[0] > 0 && hist[0] <= state.last[f] && state.last[f] <= state.now);
                        for pair in hist.windows(2) {
                            assert!(pair[1] == 0 || pair[1] < pair[0], "{hist:?}");
                        }
                    }
                }
                assert_eq!(ranked, state.order);
                assert!(state.retained.len() <= capacity);
            });
        }
        /// LRU-K with the module docs' rejections (step 4): `InUse` and `SwizzledChildren` make
        /// the rejected frame's key the cursor, history unchanged; `Root` takes the frame out of
        /// the order (its hits still update its history; its eviction is retained);
        /// `NotResident` and frees leave no history; evictions reset the cursor. `LruK` proposes
        /// the same frames and keeps the same `HIST`, `LAST`, blocked list, cursor and retained
        /// history on random pool histories, with K in 1..=3 and CRP in 0..3.
        #[test]
        fn r3_r4_matches_the_model_with_rejections(
            k in 1usize..=3,
            crp in 0u64..3,
            (capacity, ops) in sim::scenario(10),
        ) {
            use sim::{Op, Outcome, Pool};
            let policy = LruK::with_correlated_period(capacity, k, crp);
            let mut pool = Pool::new(capacity);
            let mut model = RejModel {
                k,
                crp,
                limit: capacity,
                now: 0,
                res: std::collections::HashMap::new(),
                blocked: std::collections::VecDeque::new(),
                cursor: None,
                retained: std::collections::VecDeque::new(),
            };
            for (t, &op) in ops.iter().enumerate() {
                match op {
                    Op::Fix(page) => {
                        if let Some(f) = pool.frame_of(page) {
                            model.hit(f);
                            pool.fix(&policy, page);
                        } else {
                            let (f, victim) = match pool.pages.iter().position(Option::is_none) {
                                Some(free) => (free, None),
                                None => {
                                    let v = model.propose().unwrap();
                                    let evicted = pool.pages[v];
                                    model.leave(v, true);
                                    (v, evicted)
                                }
                            };
                            model.load(f, page);
                            prop_assert_eq!(pool.fix(&policy, page), victim, "victim at step {} ({:?})", t, op);
                            prop_assert_eq!(pool.frame_of(page), Some(f));
                        }
                    }
                    Op::Free(page) => {
                        if let Some(f) = pool.frame_of(page) {
                            model.leave(f, false);
                        }
                        sim::apply(&mut pool, &policy, op);
                    }
                    Op::Propose(outcome) => {
                        let expected = model.propose();
                        let proposal = pool.propose(&policy).map(FrameId::index);
                        prop_assert_eq!(proposal, expected, "proposal at step {} ({:?})", t, op);
                        if let Some(f) = proposal {
                            match outcome {
                                Outcome::Evict => model.leave(f, true),
                                Outcome::Reject(Rejection::NotResident) => model.leave(f, false),
                                Outcome::Reject(Rejection::InUse | Rejection::SwizzledChildren) => model.pass(f),
                                Outcome::Reject(Rejection::Root) => model.block(f),
                                Outcome::Ignore => {}
                            }
                            pool.answer(&policy, FrameId(f as u32), outcome);
                        }
                    }
                }
                let state = policy.state.lock();
                let seen: Vec<(usize, Vec<u64>, u64)> = (0..capacity)
                    .filter(|&f| pool.pages[f].is_some())
                    .map(|f| (f, state.hist(f).to_vec(), state.last[f]))
                    .collect();
                let blocked = state.blocked.oldest_first(0);
                let cursor = state.cursor;
                let retained = state.retained.oldest_ids();
                drop(state);
                let want: Vec<(usize, Vec<u64>, u64)> = (0..capacity)
                    .filter(|&f| pool.pages[f].is_some())
                    .map(|f| (f, model.res[&f].1.clone(), model.res[&f].2))
                    .collect();
                prop_assert_eq!(seen, want, "histories after step {} ({:?})", t, op);
                prop_assert_eq!(blocked, Vec::from(model.blocked.clone()), "blocked after step {} ({:?})", t, op);
                prop_assert_eq!(cursor, model.cursor, "cursor after step {} ({:?})", t, op);
                let want: Vec<u64> = model.retained.iter().map(|(p, _)| *p).collect();
                prop_assert_eq!(retained, want, "retained after step {} ({:?})", t, op);
            }
        }
    }
}
