//! MQ, the Multi-Queue algorithm (Zhou, Philbin & Li, USENIX ATC 2001): `m` LRU queues
//! `Q0..Qm-1`, a page living in the queue of its access frequency (`Q[log2 f]`), victims taken
//! from the LRU end of the lowest non-empty queue, a ghost FIFO `Qout` that remembers the
//! frequencies of evicted pages, and demotion by one queue of pages not referenced for
//! `lifeTime` references, so that formerly hot pages eventually leave. Defaults ([`Mq::new`]):
//! 8 queues, `Qout` = 4 × capacity, adaptive `lifeTime`. The rules R1–R11 are the crate README's
//! contract.
//!
//! # State
//!
//! Under one mutex: LRU queues `Q0..Q7`, the blocked list, per frame the page, its reference
//! count `freq`, `expireTime` and the time of its last reference; `currentTime`, one tick per
//! reference (hit or load); `Qout`, a FIFO of `(page, freq, last reference)` for evicted pages;
//! `lifeTime`; the cursor.
//!
//! # Steps
//!
//! 1. `on_insert(page)`: `freq` = the count remembered in `Qout` plus 1 (the entry leaves
//!    `Qout`), or 1 for a page `Qout` does not know. Then step 3.
//! 2. `on_hit`: `freq += 1`, then step 3. Under the lock (not R5).
//! 3. `expireTime = currentTime + lifeTime`; the frame moves to the MRU end of
//!    `Q[min(log2 freq, 7)]` (a blocked frame stays blocked); `currentTime += 1`; then `Adjust`:
//!    for k = 1..7, if the LRU page of `Qk` has `expireTime < currentTime`, it moves to the MRU
//!    end of `Qk-1` with `expireTime = currentTime + lifeTime`.
//! 4. `next_candidate`: the cursor's frame during a search, else the LRU end of the lowest
//!    non-empty queue; if only blocked frames are resident, one of them; else `None`.
//! 5. `on_remove`: an eviction appends the page with its `freq` to `Qout` (dropping the oldest
//!    entry beyond 4 × capacity) and resets the cursor; a freed page leaves nothing.
//! 6. `InUse` and `SwizzledChildren`: the cursor moves toward the MRU end of the frame's queue,
//!    then to the next queue's LRU end, cyclically over `Q0..Q7`; frequencies are unchanged.
//!    `Root`: blocked (its hits still count). `NotResident`: forgotten.
//!
//! # `lifeTime`
//!
//! The paper sets it to the *peak temporal distance* (the distance between two consecutive
//! references to a block, in references) and suggests adjusting it at run time from observed
//! distances. Our estimator ([`LifeTime`]) samples the distance of every re-reference (hits, and
//! `Qout` hits through the remembered last reference) that is at least `capacity`, in
//! power-of-two buckets; every 256 samples `lifeTime` becomes the upper end of the fullest bucket
//! and all counts halve, so old samples fade. It starts at, and never goes below, `capacity`. The
//! paper studies second-level caches, where every distance exceeds the first-level cache. In a
//! first-level pool most re-references are short (B-tree upper levels, correlated fixes); they
//! would set `lifeTime` to a few references and demote every page all the time, while saying
//! nothing about how long an idle page should keep its rank: a distance below the pool size is a
//! hit under any LRU-like policy. [`Mq::with_params`] sets a fixed `lifeTime`, the number of
//! queues and the `Qout` size.
//!
//! # Deviations from the paper
//!
//! The paper's `EvictBlock` runs inside the miss; here the victim is chosen ahead of the miss,
//! which is possible because the choice does not depend on the missing block, and the `Qout`
//! lookup moves to `on_insert`. A blocked frame evicted at last still enters `Qout`.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_demotion_by_life_time`, 2 queues, 2 frames, `lifeTime` 2: load a (t0),
//! hit a (t1, `freq` 2, `Q1`, expires 3), load b (t2, `Q0`), hit b (t3, `Q1` behind a). After
//! that tick `currentTime` is 4 > 3, so `Adjust` demotes a to `Q0`, and a is the victim though it
//! has as many references as b. `r4_hand_worked_frequency_queues_and_qout` shows a page coming
//! back from `Qout` with its old frequency. `victims_match_a_reference_model` checks the victims
//! on random reference strings (fixed `lifeTime`) against a plain-queue model written from the
//! paper.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::ghost::Ghosts;
use crate::lazy::FrameVec;
use crate::list::SearchQueues;
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// Number of sample distances between two re-estimations of `lifeTime`.
const LIFETIME_EPOCH: u32 = 256;

/// The `lifeTime` parameter: fixed, or estimated from observed temporal distances (module docs).
struct LifeTime {
    value: u64,
    adaptive: bool,
    /// Distances below this are not sampled, and the estimate never goes below it: the cache
    /// size in frames.
    floor: u64,
    /// Samples per power-of-two bucket: `buckets[b]` counts distances in `2^b..2^(b+1)`.
    buckets: [u32; 64],
    /// Samples since the last estimate.
    samples: u32,
}

impl LifeTime {
    /// Records the temporal distance of a re-reference (references since the page's previous
    /// one). Every [`LIFETIME_EPOCH`] samples, `lifeTime` becomes the upper end of the most
    /// populated bucket and all counts are halved, so old samples fade.
    fn observe(&mut self, distance: u64) {
        if !self.adaptive || distance < self.floor || distance == 0 {
            return;
        }
        self.buckets[distance.ilog2() as usize] += 1;
        self.samples += 1;
        if self.samples == LIFETIME_EPOCH {
            let peak = (0..64).rev().max_by_key(|&b| self.buckets[b]).expect("64 buckets");
            self.value = 1u64.checked_shl(peak as u32 + 1).unwrap_or(u64::MAX).max(self.floor);
            self.buckets.iter_mut().for_each(|c| *c /= 2);
            self.samples = 0;
        }
    }
}

struct State {
    /// `m`: the number of frequency queues.
    m: usize,
    /// The frequency queues `Q0..Qm-1`, searched in that order, and the blocked list (list `m`);
    /// the cursor starts at the LRU end of the lowest non-empty queue and is reset by every
    /// eviction.
    search: SearchQueues,
    pages: FrameVec<Option<PageId>>,
    /// Reference count of the resident page (restored from `Qout` on a ghost hit).
    freq: FrameVec<u64>,
    /// The paper's `expireTime`.
    expire: FrameVec<u64>,
    /// The time of the page's most recent reference (for the temporal distances).
    last: FrameVec<u64>,
    /// The paper's `currentTime`: one tick per reference (hit or load).
    now: u64,
    life_time: LifeTime,
    /// The paper's `Qout`: `(freq, last reference)` of evicted pages.
    qout: Ghosts<(u64, u64)>,
}

impl State {
    /// The paper's `QueueNum(f)`: `log2 f`, capped at the last queue.
    fn queue_num(&self, freq: u64) -> usize {
        (freq.max(1).ilog2() as usize).min(self.m - 1)
    }

    /// Unlinks `frame`; returns its page, frequency and last reference if it was resident.
    fn forget(&mut self, frame: usize) -> Option<(PageId, u64, u64)> {
        self.search.unlink(frame)?;
        let page = self.pages[frame].take()?;
        Some((page, self.freq[frame], self.last[frame]))
    }

    /// The common tail of a hit and a load, at the current time: set `expireTime`, queue the
    /// frame at the MRU end of `Q[QueueNum(freq)]` (unless blocked), tick, and `Adjust`.
    fn settle(&mut self, frame: usize) {
        self.expire[frame] = self.now + self.life_time.value;
        self.last[frame] = self.now;
        if self.search.queues.queue_of(frame) != Some(self.search.blocked()) {
            let q = self.queue_num(self.freq[frame]);
            self.search.relink(q, frame);
        }
        self.now += 1;
        self.adjust();
    }

    /// The paper's `Adjust`: the LRU page of each queue above `Q0` whose `expireTime` has passed
    /// moves to the MRU end of the queue below, with a new `expireTime`.
    fn adjust(&mut self) {
        for k in 1..self.m {
            let Some(head) = self.search.queues.oldest(k) else { continue };
            if self.expire[head] < self.now {
                self.search.relink(k - 1, head);
                self.expire[head] = self.now + self.life_time.value;
            }
        }
    }
}

/// MQ replacement (default 8 queues, `Qout` of 4 × capacity entries, adaptive `lifeTime`).
///
/// Every hit moves its frame to the MRU end of its frequency queue and runs `Adjust`, under the
/// policy's mutex: a documented breach of R5 (module docs). The frames' [`FrameHook`]s are
/// neither read nor written (R7).
pub struct Mq {
    m: usize,
    state: Mutex<State>,
}

impl Mq {
    /// The paper's number of queues.
    pub const DEFAULT_QUEUES: usize = 8;

    /// MQ over frames `0..capacity` with the defaults: 8 queues, `Qout` of `4 * capacity` ids,
    /// and `lifeTime` estimated at run time, starting at `capacity` (module docs).
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> Mq {
        Mq::with_params(capacity, Mq::DEFAULT_QUEUES, capacity.saturating_mul(4), None)
    }

    /// MQ with `queues` frequency queues (1..=64), a `Qout` of `qout` ids, and a fixed
    /// `lifeTime` (in references), or `None` to estimate it at run time.
    ///
    /// # Panics
    /// If `queues` is outside 1..=64, or if `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn with_params(capacity: usize, queues: usize, qout: usize, life_time: Option<u64>) -> Mq {
        assert!((1..=64).contains(&queues), "MQ: {queues} queues outside 1..=64");
        check_capacity(capacity);
        let floor = (capacity as u64).max(1);
        let state = State {
            m: queues,
            search: SearchQueues::new(capacity, queues),
            pages: FrameVec::new(capacity, None),
            freq: FrameVec::new(capacity, 0),
            expire: FrameVec::new(capacity, 0),
            last: FrameVec::new(capacity, 0),
            now: 0,
            life_time: LifeTime {
                value: life_time.unwrap_or(floor),
                adaptive: life_time.is_none(),
                floor,
                buckets: [0; 64],
                samples: 0,
            },
            qout: Ghosts::new(qout),
        };
        Mq { m: queues, state: Mutex::new(state) }
    }

    /// The current `lifeTime`, in references.
    #[must_use]
    pub fn life_time(&self) -> u64 {
        self.state.lock().life_time.value
    }
}

impl Policy for Mq {
    fn name(&self) -> String {
        "mq".to_owned()
    }

    /// A miss: the frequency is the one remembered in `Qout` plus 1 (the id leaves `Qout`), or
    /// 1 for a page `Qout` does not know; then as a hit.
    fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let f = frame.index();
        state.forget(f);
        let now = state.now;
        let freq = match state.qout.remove(page) {
            Some((freq, last)) => {
                state.life_time.observe(now - last);
                freq + 1
            }
            None => 1,
        };
        state.freq[f] = freq;
        state.pages[f] = Some(page);
        state.search.queues.push_newest(0, f);
        state.settle(f);
    }

    /// The frequency grows by one and the frame moves to the MRU end of its frequency queue,
    /// under the lock (not R5). A blocked frame only counts the reference.
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let f = frame.index();
        if state.search.queues.queue_of(f).is_none() {
            return;
        }
        let distance = state.now - state.last[f];
        state.life_time.observe(distance);
        state.freq[f] += 1;
        state.settle(f);
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let f = frame.index();
        match why {
            // The frame keeps its place and frequency (the fix that holds it was reported as a
            // hit already); the search moves on.
            Rejection::InUse | Rejection::SwizzledChildren => state.search.pass(f),
            Rejection::Root => state.search.block(f),
            Rejection::NotResident => {
                state.forget(f);
            }
        }
    }

    /// An eviction remembers the page and its frequency in `Qout` (dropping the oldest entry
    /// beyond its size); a freed page leaves no trace.
    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        let mut state = self.state.lock();
        let forgotten = state.forget(frame.index());
        if evicted {
            state.search.cursor = None;
            if let Some((page, freq, last)) = forgotten {
                state.qout.insert(page, (freq, last));
            }
        }
    }

    /// The cursor's frame during a search, else the LRU end of the lowest non-empty queue; if
    /// only blocked frames are resident, one of them; else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        let m = self.m;
        // The LRU page of the lowest non-empty queue.
        state.search.propose(|queues| (0..m).find_map(|q| queues.oldest(q))).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;
    use proptest::prelude::*;
    use std::collections::{HashMap, VecDeque};

    fn pid(page: u64) -> PageId {
        PageId::new(page).unwrap()
    }

    fn load(policy: &Mq, h: &TestHooks, frame: u32, page: u64) {
        policy.on_insert(FrameId(frame), pid(page), &h[frame as usize]);
    }

    /// Each queue's frames, LRU end first.
    fn queues(policy: &Mq) -> Vec<Vec<usize>> {
        let state = policy.state.lock();
        (0..state.m).map(|q| state.search.queues.oldest_first(q)).collect()
    }

    /// Hand-worked, 3 queues, 3 frames, lifeTime 100 (no demotion): frequencies put pages in
    /// `Q[log2 f]`, victims come from the lowest non-empty queue, and `Qout` restores the
    /// frequency of a page that comes back.
    /// - Load a b c (frames 0 1 2, f = 1, all in Q0). Hit a (f = 2 -> Q1), hit a (f = 3, Q1),
    ///   hit a (f = 4 -> Q2), hit b (f = 2 -> Q1). Queues: Q0 [c], Q1 [b], Q2 [a].
    /// - Victim c (Q0's LRU); Qout = [c:1]. Load d into frame 2 (Q0).
    /// - Victim d; Qout = [c:1 d:1]. Load c into frame 2: f = 1 + 1 = 2 -> Q1 = [b c].
    /// - Victim b (Q0 empty, Q1's LRU); Qout = [d:1 b:2]. `currentTime` ticks once per
    ///   reference from 0, so b's last reference (its hit) was at t6.
    #[test]
    fn r4_hand_worked_frequency_queues_and_qout() {
        let policy = Mq::with_params(3, 3, 12, Some(100));
        let h = TestHooks::new(3);
        load(&policy, &h, 0, 1);
        load(&policy, &h, 1, 2);
        load(&policy, &h, 2, 3);
        h.hit(&policy, &[0, 0, 0, 1]);
        assert_eq!(queues(&policy), [vec![2], vec![1], vec![0]]);
        assert_eq!(h.evict(&policy), 2);
        load(&policy, &h, 2, 4);
        assert_eq!(h.evict(&policy), 2);
        load(&policy, &h, 2, 3);
        assert_eq!(queues(&policy), [vec![], vec![1, 2], vec![0]], "c back with f = 2");
        assert_eq!(h.evict(&policy), 1);
        let qout: Vec<u64> = policy.state.lock().qout.oldest_ids();
        assert_eq!(qout, [4, 2]);
        assert_eq!(policy.state.lock().qout.remove(pid(2)), Some((2, 6)), "b: f = 2, last referenced at t6");
    }

    /// Hand-worked demotion with lifeTime 2, 2 queues, 2 frames; `currentTime` starts at 0 and
    /// ticks after every reference, then `Adjust` demotes a queue's LRU page whose
    /// `expireTime` (time of its last reference + lifeTime) is below `currentTime`:
    /// - t0 load a: expire 2, Q0. t1 hit a: f = 2 -> Q1, expire 3. t2 load b: Q0, expire 4.
    /// - t3 hit b: f = 2 -> Q1 behind a, expire 5. After the tick, currentTime = 4 > 3: a is
    ///   demoted to Q0 with expire 6.
    /// - Victim: a, although it has as many references as b.
    #[test]
    fn r4_hand_worked_demotion_by_life_time() {
        let policy = Mq::with_params(2, 2, 8, Some(2));
        let h = TestHooks::new(2);
        load(&policy, &h, 0, 1);
        h.hit(&policy, &[0]);
        load(&policy, &h, 1, 2);
        assert_eq!(queues(&policy), [vec![1], vec![0]]);
        h.hit(&policy, &[1]);
        assert_eq!(queues(&policy), [vec![0], vec![1]], "a demoted by Adjust");
        assert_eq!(policy.state.lock().expire[0], 6);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 1);
    }

    /// `InUse` and `SwizzledChildren` move the search up through the queues and wrap; `Root`
    /// blocks; a freed page is not remembered in `Qout`.
    #[test]
    fn r3_rejections_and_frees() {
        let policy = Mq::with_params(3, 2, 6, Some(100));
        let h = TestHooks::new(3);
        for f in 0..3 {
            load(&policy, &h, f, u64::from(f) + 1);
        }
        h.hit(&policy, &[2]);
        assert_eq!(queues(&policy), [vec![0, 1], vec![2]]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::InUse, &h[1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)), "into Q1");
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)), "wraps to Q0");
        let freq = |f: usize| policy.state.lock().freq[f];
        assert_eq!([freq(0), freq(1), freq(2)], [1, 1, 2], "rejections keep frequencies");
        policy.on_remove(FrameId(1), false, &h[1]);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(h.evict(&policy), 2, "the root last");
        let qout: Vec<u64> = policy.state.lock().qout.oldest_ids();
        assert_eq!(qout, [1, 3], "the freed page 2 is not remembered");
    }

    /// The estimator: distances below the cache size are ignored; after an epoch, lifeTime is
    /// the upper end of the most populated power-of-two bucket.
    #[test]
    fn life_time_follows_the_peak_temporal_distance() {
        let policy = Mq::new(16);
        assert_eq!(policy.life_time(), 16, "starts at the cache size");
        let mut state = policy.state.lock();
        for i in 0..LIFETIME_EPOCH {
            // 3/4 of the samples in 64..128, the rest in 1000..1024; plus ignored short ones.
            state.life_time.observe(if i % 4 == 0 { 1000 } else { 64 + u64::from(i % 64) });
            state.life_time.observe(3);
        }
        assert_eq!(state.life_time.value, 128);
        for _ in 0..LIFETIME_EPOCH {
            state.life_time.observe(5000);
        }
        assert_eq!(state.life_time.value, 8192, "the old peak faded");
    }

    /// Victims of MQ with a fixed lifeTime over page ids, written from the paper with plain
    /// `VecDeque`s (LRU first), for a pool of `capacity` frames that evicts on every miss once
    /// full.
    fn model_victims(capacity: usize, m: usize, qout_size: usize, life: u64, refs: &[u64]) -> Vec<u64> {
        let mut q: Vec<VecDeque<u64>> = vec![VecDeque::new(); m];
        let mut qout: VecDeque<(u64, u64)> = VecDeque::new();
        let (mut freq, mut expire) = (HashMap::new(), HashMap::new());
        let (mut now, mut victims) = (0u64, Vec::new());
        for &x in refs {
            if let Some(k) = q.iter().position(|queue| queue.contains(&x)) {
                q[k].retain(|&p| p != x);
                *freq.get_mut(&x).unwrap() += 1;
            } else {
                if q.iter().map(VecDeque::len).sum::<usize>() == capacity {
                    let victim = q.iter_mut().find_map(VecDeque::pop_front).unwrap();
                    qout.push_back((victim, freq[&victim]));
                    if qout.len() > qout_size {
                        qout.pop_front();
                    }
                    victims.push(victim);
                }
                let remembered = qout.iter().position(|&(p, _)| p == x).map(|at| qout.remove(at).unwrap().1);
                freq.insert(x, remembered.map_or(1, |f| f + 1));
            }
            expire.insert(x, now + life);
            let k = (freq[&x].ilog2() as usize).min(m - 1);
            q[k].push_back(x);
            now += 1;
            for k in 1..m {
                if let Some(&head) = q[k].front() {
                    if expire[&head] < now {
                        q[k].pop_front();
                        q[k - 1].push_back(head);
                        expire.insert(head, now + life);
                    }
                }
            }
        }
        victims
    }

    /// MQ with the module docs' rejections and removals (steps 1-6) and a fixed `lifeTime`,
    /// over pages, for `r3_r4_matches_the_model_with_rejections`.
    struct RejModel {
        m: usize,
        life: u64,
        qout_size: usize,
        now: u64,
        /// `Q0..Qm-1`, each LRU end first.
        queues: Vec<VecDeque<u64>>,
        blocked: VecDeque<u64>,
        /// Per resident page: (freq, expireTime, last reference).
        meta: HashMap<u64, (u64, u64, u64)>,
        /// `Qout`, oldest first: (page, freq, last reference).
        qout: VecDeque<(u64, u64, u64)>,
        cursor: Option<u64>,
    }

    impl RejModel {
        fn queue_of(&self, x: u64) -> Option<usize> {
            self.queues.iter().position(|q| q.contains(&x))
        }

        /// The page after `x` in victim order (toward the MRU end of its queue, then the next
        /// non-empty queue's LRU end, cyclically); `None` if `x` is the only one.
        fn successor(&self, x: u64) -> Option<u64> {
            let order: Vec<u64> = self.queues.iter().flatten().copied().collect();
            let at = order.iter().position(|&y| y == x)?;
            let next = order[(at + 1) % order.len()];
            (next != x).then_some(next)
        }

        fn step_off(&mut self, x: u64) {
            if self.cursor == Some(x) && self.queue_of(x).is_some() {
                self.cursor = self.successor(x);
            }
        }

        fn unlink(&mut self, x: u64) {
            self.step_off(x);
            for q in &mut self.queues {
                q.retain(|&y| y != x);
            }
            self.blocked.retain(|&y| y != x);
        }

        fn relink(&mut self, q: usize, x: u64) {
            self.unlink(x);
            self.queues[q].push_back(x);
        }

        /// Step 3.
        fn settle(&mut self, x: u64) {
            let (freq, _, _) = self.meta[&x];
            self.meta.insert(x, (freq, self.now + self.life, self.now));
            if !self.blocked.contains(&x) {
                let q = (freq.max(1).ilog2() as usize).min(self.m - 1);
                self.relink(q, x);
            }
            self.now += 1;
            for k in 1..self.m {
                let Some(&head) = self.queues[k].front() else { continue };
                if self.meta[&head].1 < self.now {
                    self.relink(k - 1, head);
                    self.meta.get_mut(&head).unwrap().1 = self.now + self.life;
                }
            }
        }

        /// Step 1.
        fn load(&mut self, x: u64) {
            let freq = match self.qout.iter().position(|&(y, _, _)| y == x) {
                Some(at) => self.qout.remove(at).unwrap().1 + 1,
                None => 1,
            };
            self.meta.insert(x, (freq, 0, 0));
            self.queues[0].push_back(x);
            self.settle(x);
        }

        /// Step 2: blocked pages count the reference too.
        fn hit(&mut self, x: u64) {
            self.meta.get_mut(&x).unwrap().0 += 1;
            self.settle(x);
        }

        /// Step 6: the search moves on; the page keeps its place and frequency.
        fn pass(&mut self, x: u64) {
            if self.queue_of(x).is_some() {
                self.cursor = self.successor(x);
            }
        }

        fn block(&mut self, x: u64) {
            if self.queue_of(x).is_some() {
                self.unlink(x);
                self.blocked.push_back(x);
            }
        }

        /// Step 5: an eviction (of a root too) remembers the page and its frequency in `Qout`
        /// and resets the search; a free leaves nothing.
        fn leave(&mut self, x: u64, evicted: bool) {
            self.unlink(x);
            let (freq, _, last) = self.meta.remove(&x).unwrap();
            if evicted {
                self.cursor = None;
                if self.qout_size > 0 {
                    if self.qout.len() == self.qout_size {
                        self.qout.pop_front();
                    }
                    self.qout.push_back((x, freq, last));
                }
            }
        }

        /// Step 4.
        fn propose(&mut self) -> Option<u64> {
            if let Some(x) = self.cursor {
                return Some(x);
            }
            if let Some(&x) = self.queues.iter().find_map(|q| q.front()) {
                return Some(x);
            }
            let x = self.blocked.pop_front()?;
            self.blocked.push_back(x);
            Some(x)
        }
    }

    proptest! {
        /// The policy, driven by a pool that evicts on every miss, picks the model's victims.
        #[test]
        fn victims_match_a_reference_model(
            capacity in 1usize..=8,
            m in 1usize..=4,
            qout in 0usize..10,
            life in 1u64..20,
            refs in proptest::collection::vec(prop_oneof![0u64..4, 0u64..24], 0..300),
        ) {
            let policy = Mq::with_params(capacity, m, qout, Some(life));
            let victims: Vec<u64> = sim::replay(capacity, &refs, &policy).into_iter().filter_map(|(_, v)| v).collect();
            prop_assert_eq!(victims, model_victims(capacity, m, qout, life, &refs));
        }

        /// Invariants: each resident frame is in exactly one list, blocked iff rejected as a
        /// root, otherwise in `Q[k]` with `k <= QueueNum(freq)` (demotion only lowers it);
        /// |Qout| <= its size; no resident page in Qout; every resident page was last referenced
        /// before `currentTime` and, with a fixed lifeTime, expires at most lifeTime later.
        #[test]
        fn invariants_hold_over_random_pool_runs(
            m in 1usize..=4, life in prop_oneof![Just(None), (1u64..6).prop_map(Some)],
            (capacity, ops) in sim::scenario(10),
        ) {
            let policy = Mq::with_params(capacity, m, 2 * capacity, life);
            sim::run(capacity, &ops, &policy, |pool| {
                let state = policy.state.lock();
                for (f, page) in pool.pages.iter().enumerate() {
                    let list = state.search.queues.queue_of(f);
                    match page {
                        None => assert_eq!(list, None),
                        Some(page) => {
                            let list = list.expect("resident frames are queued");
                            assert_eq!(list == m, pool.blocked[f], "frame {f}");
                            if list < m {
                                assert!(list <= state.queue_num(state.freq[f]));
                            }
                            assert!(state.freq[f] >= 1);
                            assert!(!state.qout.contains(pid(*page)), "resident {page} in Qout");
                        }
                    }
                }
                assert!(state.qout.len() <= 2 * capacity);
                for (f, page) in pool.pages.iter().enumerate() {
                    if page.is_some() {
                        assert!(state.last[f] < state.now);
                        if let Some(life) = life {
                            assert!(state.expire[f] <= state.now + life, "frame {f}");
                        }
                    }
                }
            });
        }
        /// MQ with the module docs' rejections (step 6) and a fixed `lifeTime`: `InUse` and
        /// `SwizzledChildren` move the search to the next page in victim order without touching
        /// the page; `Root` blocks (hits still count; a root's eviction enters `Qout`);
        /// `NotResident` and frees leave nothing; a page that leaves its place under the cursor
        /// (hit, demotion by `Adjust`, block, removal) moves the cursor on; evictions reset it.
        /// `Mq` proposes the same pages and keeps the same queues, blocked list, cursor, `Qout`
        /// and frequencies on random pool histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections(
            m in 1usize..=4,
            qout in 0usize..10,
            life in 1u64..12,
            (capacity, ops) in sim::scenario(10),
        ) {

            let policy = Mq::with_params(capacity, m, qout, Some(life));
            let mut model = RejModel {
                m,
                life,
                qout_size: qout,
                now: 0,
                queues: vec![VecDeque::new(); m],
                blocked: VecDeque::new(),
                meta: HashMap::new(),
                qout: VecDeque::new(),
                cursor: None,
            };
            sim::replay_with_model(capacity, &ops, &policy, &mut model, |pool, model, t, op| {
                let page = |f: usize| pool.pages[f].unwrap();
                let state = policy.state.lock();
                let lists: Vec<Vec<u64>> = (0..=m).map(|q| state.search.queues.oldest_first(q).into_iter().map(page).collect()).collect();
                let cursor = state.search.cursor.map(page);
                let qout_ids = state.qout.oldest_ids();
                let freqs: Vec<(u64, u64)> = (0..capacity).filter_map(|f| pool.pages[f].map(|p| (p, state.freq[f]))).collect();
                drop(state);
                let mut want: Vec<Vec<u64>> = model.queues.iter().map(|q| Vec::from(q.clone())).collect();
                want.push(Vec::from(model.blocked.clone()));
                prop_assert_eq!(lists, want, "queues after step {} ({:?})", t, op);
                prop_assert_eq!(cursor, model.cursor, "cursor after step {} ({:?})", t, op);
                let want: Vec<u64> = model.qout.iter().map(|&(x, _, _)| x).collect();
                prop_assert_eq!(qout_ids, want, "Qout after step {} ({:?})", t, op);
                let want: Vec<(u64, u64)> = freqs.iter().map(|&(p, _)| (p, model.meta[&p].0)).collect();
                prop_assert_eq!(freqs, want, "frequencies after step {} ({:?})", t, op);
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
