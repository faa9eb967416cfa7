//! Hot/cold replacement, the Oracle Universal Server scheme that Ding, Shan & Jiang combine with
//! BP-Wrapper (TPDS 2015, Sec. 4.2 and Fig. 7): the buffer is split into a *hot* region kept as a
//! FIFO and a *cold* region kept as an LRU list. A hit on a hot page changes nothing, so it takes
//! no lock; a hit on a cold page moves it into the hot region, under the lock. New pages enter the
//! cold region, so a page must be used twice to become hot; victims come from the cold region's
//! LRU end. The hot region holds 50% of the frames by default (at least 1: [`HotCold::new`]).
//!
//! # State
//!
//! Under one mutex: the hot list (oldest first), the cold list (least recently used first), the
//! blocked list, and the hot limit; beside it, one atomic flag per frame, set iff the frame is in
//! the hot list (written under the mutex, read by hits without it). Hooks are not used (R7).
//!
//! # Steps
//!
//! 1. `on_insert`: the page enters the cold region at its MRU end. A page becomes hot on its
//!    second use, so a scan never reaches the hot region.
//! 2. `on_hit` on a hot page: nothing, without the lock (the flag is read, R5). On a cold page,
//!    under the lock: the page becomes the newest hot page; if the hot region then holds more
//!    than its limit, its oldest page goes back to the cold region's MRU end (a second chance
//!    there). On a blocked page: nothing.
//! 3. `next_candidate`: the cold region's LRU end, else the hot region's oldest page, else a
//!    blocked frame (rotating, R3/R4).
//! 4. Rejections: `InUse` and `SwizzledChildren` requeue the frame at the newest end of its own
//!    list (as 2Q does: passing it with the search cursor would re-propose it after every
//!    eviction); `Root` blocks it (its flag cleared); `NotResident` forgets it. `on_remove`
//!    forgets the frame.
//! 5. `hit_effect` is `Nothing` for a hot page (its flag), else `Unknown`; not stable, since a
//!    promotion demotes the oldest hot page, so BP-Wrapper asks at every hit. A hit that reads
//!    the flag just as another frame's promotion demotes this one is lost (the page stays cold
//!    until its next hit), as in the paper's lock-free hot region.
//!
//! # Notes
//!
//! The paper does not say where new pages go; entering cold (InnoDB's midpoint insertion does the
//! same with its old sublist) keeps one-time pages out of the FIFO whose hits are free. With a hot
//! limit of 0 every promotion is undone at once and the policy is LRU. `evict_batch` takes the
//! lock once per victim (`evict_batch_locked`), and `candidate_after` guesses exactly.
//!
//! Tests: a hand-worked promotion and demotion, rejections, a `VecDeque` reference model of the
//! victims over random reference strings (hot limits 0 to 5), and the invariants over random pool
//! runs (flag iff hot list, hot list within its limit, each resident frame in one list).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::batch::{evict_batch_locked, LockedBatch};
use crate::capacity::{check_capacity, frame_id};
use crate::lazy::LazyCells;
use crate::list::{Queues, SearchQueues};
use crate::policy::{Evictor, FrameHook, HitEffect, HookTable, Policy, QueuedHook, Rejection, Verdict};
use swizzledb_sync::{FrameId, PageId};

/// Pages hit while cold, in the order they became hot (oldest first).
const HOT: usize = 0;
/// New pages and pages pushed out of the hot region, least recently used first.
const COLD: usize = 1;

struct State {
    /// The most pages the hot region keeps; a promotion beyond it demotes the oldest hot page.
    hot_limit: usize,
    /// The hot and cold lists, and the blocked list. The search cursor is never moved: a refused
    /// frame is requeued instead (`reject`), so every proposal is the cold region's LRU end.
    search: SearchQueues,
    /// Per frame: its page is in the hot region. Written here, under the lock; read by hits
    /// without it (through [`HotCold`]'s handle on the same flags).
    hot: Arc<LazyCells<AtomicBool>>,
}

/// The cold region's LRU end, else the hot region's oldest page.
fn first_choice(queues: &Queues) -> Option<usize> {
    queues.oldest(COLD).or_else(|| queues.oldest(HOT))
}

impl State {
    fn set_hot(&self, frame: usize, hot: bool) {
        if hot {
            self.hot.cell(frame).store(true, Ordering::Relaxed);
        } else if let Some(flag) = self.hot.get(frame) {
            flag.store(false, Ordering::Relaxed);
        }
    }

    /// Unlinks `frame` from whichever list holds it.
    fn forget(&mut self, frame: usize) {
        self.search.unlink(frame);
        self.set_hot(frame, false);
    }

    /// A new page: the cold region's MRU end.
    fn insert(&mut self, frame: usize) {
        self.forget(frame);
        self.search.queues.push_newest(COLD, frame);
    }

    /// A hit under the lock: a cold page becomes the newest hot page, and the oldest hot page
    /// goes back to the cold region's MRU end if the hot region is over its limit. A hot or
    /// blocked page stays where it is.
    fn hit(&mut self, frame: usize) {
        if self.search.queues.queue_of(frame) != Some(COLD) {
            return;
        }
        self.search.relink(HOT, frame);
        self.set_hot(frame, true);
        if self.search.queues.len(HOT) > self.hot_limit {
            let oldest = self.search.queues.oldest(HOT).expect("the hot region is over its limit");
            self.search.relink(COLD, oldest);
            self.set_hot(oldest, false);
        }
    }

    fn reject(&mut self, frame: usize, why: Rejection) {
        match why {
            // Unevictable for now: back to the newest end of its own list, as 2Q does, so that the
            // next proposal is another frame.
            Rejection::InUse | Rejection::SwizzledChildren => self.search.requeue(frame),
            Rejection::Root => {
                self.search.block(frame);
                self.set_hot(frame, false);
            }
            Rejection::NotResident => self.forget(frame),
        }
    }
}

impl LockedBatch for State {
    fn propose(&mut self) -> Option<usize> {
        self.search.propose(first_choice)
    }

    fn guess_after(&self, frame: usize, _hooks: &dyn HookTable) -> Option<usize> {
        let queues = &self.search.queues;
        queues.queue_of(frame).filter(|&q| q == HOT || q == COLD)?;
        let next = queues.oldest_without(COLD, frame).or_else(|| queues.oldest_without(HOT, frame))?;
        queues.prefetch(next);
        Some(next)
    }

    fn record(&mut self, frame: usize, verdict: Verdict, _hook: &FrameHook) {
        match verdict {
            Verdict::Evicted => self.forget(frame),
            Verdict::Rejected(why) => self.reject(frame, why),
        }
    }
}

/// Hot/cold replacement: a FIFO hot region whose hits take no lock, and an LRU cold region.
///
/// Each frame's hot flag is an atomic of the policy's own, written under the mutex and read by
/// hits without it (R5 for hot hits; a cold hit relinks under the mutex, a documented breach of
/// R5 like LRU's). The frames' [`FrameHook`]s are neither read nor written (R7). A hit that reads
/// a hot flag just as a promotion elsewhere clears it is lost, as in the paper's lock-free hot
/// region: the page stays where it is, cold, and the next hit promotes it.
pub struct HotCold {
    hot_limit: usize,
    state: Mutex<State>,
    /// The hot flags of [`State`], read by hits without the lock.
    hot: Arc<LazyCells<AtomicBool>>,
}

impl HotCold {
    /// Hot/cold over frames `0..capacity` with a hot region of half the frames (at least 1).
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> HotCold {
        HotCold::with_hot_limit(capacity, (capacity / 2).max(1))
    }

    /// Hot/cold whose hot region keeps at most `hot_limit` pages (0: a promoted page is demoted
    /// at once, so the policy is LRU).
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn with_hot_limit(capacity: usize, hot_limit: usize) -> HotCold {
        check_capacity(capacity);
        let hot = Arc::new(LazyCells::new(capacity, || AtomicBool::new(false)));
        let state = State { hot_limit, search: SearchQueues::new(capacity, 2), hot: Arc::clone(&hot) };
        HotCold { hot_limit, state: Mutex::new(state), hot }
    }

    /// The most pages the hot region keeps.
    #[must_use]
    pub fn hot_limit(&self) -> usize {
        self.hot_limit
    }
}

impl Policy for HotCold {
    fn name(&self) -> String {
        "hot-cold".to_owned()
    }

    fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
        self.state.lock().insert(frame.index());
    }

    /// Hot: nothing, without the lock. Otherwise a promotion under the lock.
    fn on_hit(&self, frame: FrameId, hook: &FrameHook) {
        if !self.ignores_hit(frame, hook) {
            self.state.lock().hit(frame.index());
        }
    }

    /// A hot page's hit changes nothing; anything else is `Unknown` (a cold page's hit promotes
    /// it, and a frame the policy does not hold has its flag clear: cleared when it forgets the
    /// frame, as R5 asks). Not stable: a promotion elsewhere may demote a hot page.
    fn hit_effect(&self, frame: FrameId, _hook: &FrameHook) -> HitEffect {
        if self.hot.get(frame.index()).is_some_and(|hot| hot.load(Ordering::Relaxed)) {
            HitEffect::Nothing
        } else {
            HitEffect::Unknown
        }
    }

    fn ignores_some_hits(&self) -> bool {
        true
    }

    /// BP-Wrapper's batch under one acquisition of the lock. Unfixes and changes of children are
    /// ignored.
    fn on_queued(&self, calls: &[(FrameId, QueuedHook)], _table: &dyn HookTable) {
        let mut state = self.state.lock();
        for &(frame, call) in calls {
            match call {
                QueuedHook::Insert(_) => state.insert(frame.index()),
                QueuedHook::Hit => state.hit(frame.index()),
                QueuedHook::Unfix | QueuedHook::Children(_) => {}
            }
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        self.state.lock().reject(frame.index(), why);
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
        self.state.lock().forget(frame.index());
    }

    /// The cold region's LRU end, else the hot region's oldest page; if only blocked frames are
    /// resident, one of them; else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        self.state.lock().search.propose(first_choice).map(frame_id)
    }

    /// One acquisition of the lock per victim (`evict_batch_locked`).
    fn evict_batch(&self, hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        evict_batch_locked(&self.state, hooks, evictor, max_proposals)
    }

    /// Prefetches the links of the cold frames (a hit relinks them), if the lock is free.
    fn prefetch_accesses(&self, frames: &[FrameId], _inserted: &[PageId]) {
        if let Some(state) = self.state.try_lock() {
            for frame in frames {
                if state.search.queues.queue_of(frame.index()) == Some(COLD) {
                    state.search.queues.prefetch(frame.index());
                }
            }
        }
    }

    /// The cold region's LRU end once `frame` has left, else the hot region's oldest.
    fn candidate_after(&self, frame: FrameId, hooks: &dyn HookTable) -> Option<FrameId> {
        self.state.lock().guess_after(frame.index(), hooks).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;

    /// (hot, cold) frames oldest first.
    fn lists(policy: &HotCold) -> (Vec<usize>, Vec<usize>) {
        let state = policy.state.lock();
        (state.search.queues.oldest_first(HOT), state.search.queues.oldest_first(COLD))
    }

    /// Hand-worked, 4 frames, hot limit 1:
    /// - 0 1 2 3 load: all cold, in load order.
    /// - 1 hit: hot [1]. 2 hit: hot [2], and 1, the oldest hot page beyond the limit, goes back
    ///   to the cold region's MRU end: cold [0 3 1]. 2 hit again: hot, nothing changes.
    /// - Victims: the cold LRU end 0, then 3, then 1; the hot page last.
    #[test]
    fn r4_hand_worked_promotion_and_demotion() {
        let policy = HotCold::with_hot_limit(4, 1);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        assert_eq!(lists(&policy), (vec![], vec![0, 1, 2, 3]));
        h.hit(&policy, &[1]);
        assert_eq!(lists(&policy), (vec![1], vec![0, 2, 3]));
        assert!(policy.ignores_hit(FrameId(1), &h[1]) && !policy.ignores_hit(FrameId(2), &h[2]));
        h.hit(&policy, &[2]);
        assert_eq!(lists(&policy), (vec![2], vec![0, 3, 1]), "1 demoted to the cold MRU end");
        assert!(!policy.ignores_hit(FrameId(1), &h[1]), "demotion clears the hot flag");
        h.hit(&policy, &[2]);
        assert_eq!(lists(&policy), (vec![2], vec![0, 3, 1]));
        assert_eq!([h.evict(&policy), h.evict(&policy), h.evict(&policy)], [0, 3, 1]);
        assert_eq!(h.evict(&policy), 2, "only the hot page is left");
        assert_eq!(policy.next_candidate(&h), None);
        assert_eq!(h.bits(), [0; 4], "hooks are not used");
    }

    /// `InUse` and `SwizzledChildren` requeue at the newest end of the frame's own list; `Root`
    /// blocks (and a blocked page's hit changes nothing); a removal forgets the hot flag.
    #[test]
    fn r3_rejections_and_removals() {
        let policy = HotCold::with_hot_limit(4, 2);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        h.hit(&policy, &[0, 1]);
        assert_eq!(lists(&policy), (vec![0, 1], vec![2, 3]));
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::InUse, &h[2]);
        assert_eq!(lists(&policy).1, [3, 2]);
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren, &h[0]);
        assert_eq!(lists(&policy).0, [1, 0], "requeued at the hot region's newest end");
        policy.on_rejected(FrameId(3), Rejection::Root, &h[3]);
        h.hit(&policy, &[3]);
        assert_eq!(lists(&policy), (vec![1, 0], vec![2]), "blocked, and its hit changes nothing");
        policy.on_remove(FrameId(0), false, &h[0]);
        assert!(!policy.ignores_hit(FrameId(0), &h[0]));
        assert_eq!([h.evict(&policy), h.evict(&policy), h.evict(&policy)], [2, 1, 3], "the root last");
    }

    /// Victims of hot/cold over page ids, with plain `VecDeque`s (oldest first), for a pool of
    /// `capacity` frames that evicts on every miss once full.
    fn model_victims(capacity: usize, hot_limit: usize, refs: &[u64]) -> Vec<u64> {
        let (mut hot, mut cold) = (VecDeque::new(), VecDeque::new());
        let mut victims = Vec::new();
        for &x in refs {
            if hot.contains(&x) {
                continue;
            }
            if let Some(at) = cold.iter().position(|&p| p == x) {
                cold.remove(at);
                hot.push_back(x);
                if hot.len() > hot_limit {
                    cold.push_back(hot.pop_front().unwrap());
                }
                continue;
            }
            if hot.len() + cold.len() == capacity {
                victims.push(cold.pop_front().or_else(|| hot.pop_front()).unwrap());
            }
            cold.push_back(x);
        }
        victims
    }

    proptest! {
        /// The policy, driven by a pool that evicts on every miss, picks the model's victims.
        #[test]
        fn victims_match_a_reference_model(
            capacity in 1usize..=8,
            hot_limit in 0usize..6,
            refs in proptest::collection::vec(0u64..20, 0..300),
        ) {
            let policy = HotCold::with_hot_limit(capacity, hot_limit);
            let victims: Vec<u64> = sim::replay(capacity, &refs, &policy).into_iter().filter_map(|(_, v)| v).collect();
            prop_assert_eq!(victims, model_victims(capacity, hot_limit, &refs));
        }

        /// R5's `ignores_hit`: whenever it says a hit changes nothing (a hot page), the hit leaves
        /// both lists as they were; a cold page's hit is not ignored.
        #[test]
        fn ignored_hits_change_nothing((capacity, ops) in sim::scenario(10), hot_limit in 0usize..5) {
            let policy = HotCold::with_hot_limit(capacity, hot_limit);
            sim::run_checking_ignored_hits(capacity, &ops, &policy, || lists(&policy), |f, ignored| {
                let cold = policy.state.lock().search.queues.queue_of(f) == Some(COLD);
                assert!(!(ignored && cold), "a cold page's hit promotes it (frame {f})");
            });
        }

        /// Invariants: each resident frame is in exactly one of the hot, cold and blocked lists,
        /// and its hot flag is set iff it is in the hot list; the hot list keeps its limit; free
        /// frames are in no list and not hot.
        #[test]
        fn invariants_hold_over_random_pool_runs((capacity, ops) in sim::scenario(10)) {
            let policy = HotCold::new(capacity);
            sim::run(capacity, &ops, &policy, |pool| {
                let state = policy.state.lock();
                for (f, page) in pool.pages.iter().enumerate() {
                    let list = state.search.queues.queue_of(f);
                    let hot = policy.hot.get(f).is_some_and(|h| h.load(Ordering::Relaxed));
                    assert_eq!(hot, list == Some(HOT), "frame {f}'s hot flag");
                    match page {
                        None => assert_eq!(list, None),
                        Some(_) => {
                            assert!(list.is_some());
                            assert_eq!(list == Some(state.search.blocked()), pool.blocked[f], "frame {f}");
                        }
                    }
                }
                assert!(state.search.queues.len(HOT) <= policy.hot_limit());
                assert_eq!(state.search.cursor, None, "the search cursor never moves");
            });
        }
    }
}
