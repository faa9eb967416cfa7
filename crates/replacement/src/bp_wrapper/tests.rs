//! The wrapper's unit tests: hand-worked batches (R1, Fig. 7) and concurrent queues.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::*;
use crate::policy::{HitEffect, Verdict};
use crate::testpool::TestHooks;
use crate::Lru;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// What the recording inner policy saw.
#[derive(Default)]
struct Log {
    /// Frames the policy holds, with their pages.
    tracked: FxHashMap<u32, u64>,
    /// Every hit, as (frame, page held then), in the order received.
    hits: Vec<(u32, u64)>,
}

/// An inner policy that panics on any R1 breach (a hook for a frame it does not hold, a double
/// insert) and records the hits it receives; it proposes its lowest frame.
#[derive(Default, Clone)]
struct Recording {
    log: Arc<Mutex<Log>>,
    /// Frames whose hits it says it ignores (`hit_effect`); it records them if they come.
    ignores: Arc<Mutex<HashSet<u32>>>,
}

impl Recording {
    fn check(&self, frame: FrameId) -> u64 {
        *self.log.lock().tracked.get(&frame.0).unwrap_or_else(|| panic!("R1: hook for untracked {frame:?}"))
    }
}

impl Policy for Recording {
    fn name(&self) -> String {
        "recording".into()
    }
    fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
        let old = self.log.lock().tracked.insert(frame.0, page.get());
        assert!(old.is_none(), "R1: double insert of {frame:?}");
    }
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        let page = self.check(frame);
        self.log.lock().hits.push((frame.0, page));
    }
    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        self.check(frame);
        if why == Rejection::NotResident {
            self.log.lock().tracked.remove(&frame.0);
        }
    }
    fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
        assert!(self.log.lock().tracked.remove(&frame.0).is_some(), "R1: removal of untracked {frame:?}");
    }
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        self.log.lock().tracked.keys().min().map(|&f| FrameId(f))
    }
    /// R5: `Nothing` only for frames it holds (a hit on a page whose insert is queued must
    /// reach it).
    fn hit_effect(&self, frame: FrameId, _hook: &FrameHook) -> HitEffect {
        if self.ignores.lock().contains(&frame.0) && self.log.lock().tracked.contains_key(&frame.0) {
            HitEffect::Nothing
        } else {
            HitEffect::Unknown
        }
    }
    fn ignores_some_hits(&self) -> bool {
        true
    }
}

fn page(raw: u64) -> PageId {
    PageId::new(raw).unwrap()
}

fn small(variant: Variant, inner: Recording) -> BpWrapper {
    let config = BpConfig { variant, queue_size: 4, batch_threshold: 3 };
    BpWrapper::with_config(Box::new(inner), 4, config).unwrap()
}

/// Hand-worked, T = 3, S = 4. Inserts and hits wait in the queue until the third entry, then
/// reach the inner policy in FIFO order. A hit queued for page 10 in frame 0 is skipped after
/// another thread removed that page and loaded page 20 into frame 0, so page 20 never gets it
/// (R1, stale). That thread's insert of page 20 stays in its queue; the next hit on frame 0
/// (page 20) inserts the page into the inner policy first when it commits (step 2).
///
/// Lock acquisitions: the third insert's batch (1), the third hit's (2), the other thread's
/// removal (3), the batch after it (4); nothing waited.
#[test]
fn r1_hits_commit_in_fifo_order_and_stale_entries_are_skipped() {
    let inner = Recording::default();
    let log = Arc::clone(&inner.log);
    let policy = small(Variant::Both, inner);
    let h = TestHooks::new(4);
    for (f, p) in [(0, 10), (1, 11)] {
        policy.on_insert(FrameId(f), page(p), &h[f as usize]);
    }
    assert!(log.lock().tracked.is_empty(), "inserts are queued too");
    policy.on_insert(FrameId(2), page(12), &h[2]);
    assert_eq!(log.lock().tracked.len(), 3);
    h.hit(&policy, &[2, 0]);
    assert!(log.lock().hits.is_empty(), "below T nothing is committed");
    h.hit(&policy, &[1]);
    assert_eq!(log.lock().hits, [(2, 12), (0, 10), (1, 11)]);
    // Queue: hit on frame 0 (page 10), then frame 2.
    h.hit(&policy, &[0, 2]);
    std::thread::scope(|s| {
        s.spawn(|| {
            policy.on_remove(FrameId(0), true, &h[0]);
            policy.on_insert(FrameId(0), page(20), &h[0]);
        });
    });
    h.hit(&policy, &[1]);
    assert_eq!(log.lock().hits[3..], [(2, 12), (1, 11)], "the hit for page 10 is not applied to 20");
    assert!(!log.lock().tracked.contains_key(&0), "page 20's insert waits in the other queue");
    let stats = policy.stats();
    assert_eq!(stats.entries_committed, 8);
    assert_eq!(stats.stale_entries_skipped, 1);
    assert_eq!(stats.accesses, 10, "four inserts and six hits");
    assert_eq!(stats.lock_acquisitions, 4);
    assert_eq!((stats.failed_try_locks, stats.blocking_waits, stats.wait_nanos), (0, 0, 0));
    // A miss-path hook commits the caller's queue first; the hit on page 20 inserts it.
    h.hit(&policy, &[0]);
    assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
    assert_eq!(log.lock().tracked.get(&0), Some(&20));
    assert_eq!(log.lock().hits.last(), Some(&(0, 20)));
    // The other thread's queued insert finds the page held: nothing more happens.
    policy.flush();
    assert_eq!(log.lock().tracked.len(), 3);
}

/// A hit that names its page (`on_page_hit`, as the live pool reports hits) is tagged with
/// that page, not the frame's published one: a hit naming a page the frame does not hold is
/// skipped as stale (rule 2), and one naming the page whose insert is still queued inserts it
/// first, as a hit through `on_hit` would.
#[test]
fn r1_hits_naming_their_page_are_checked_like_queued_ones() {
    let inner = Recording::default();
    let log = Arc::clone(&inner.log);
    let policy = small(Variant::Both, inner);
    let h = TestHooks::new(4);
    policy.on_insert(FrameId(0), page(10), &h[0]);
    policy.on_page_hit(FrameId(0), page(10), &h[0]);
    policy.on_page_hit(FrameId(0), page(99), &h[0]);
    assert_eq!(log.lock().hits, [(0, 10)], "the insert went first; page 99's hit was skipped");
    assert_eq!(log.lock().tracked.get(&0), Some(&10));
    let stats = policy.stats();
    assert_eq!((stats.entries_committed, stats.stale_entries_skipped), (2, 1));
    policy.on_page_hit(FrameId(1), page(11), &h[1]);
    policy.flush();
    assert!(!log.lock().tracked.contains_key(&1), "a hit on a frame never loaded inserts nothing");
    assert_eq!(policy.stats().stale_entries_skipped, 2);
}

/// Fig. 7, T = 3, S = 4, with frame 0's hits ignored by the inner policy: such a hit is
/// neither queued nor forwarded; while the queue is empty it does nothing more (BP-Wrapper
/// idle), while the queue holds entries it counts toward T, and the third access since the
/// queue's first entry commits it. A hit for a page whose insert is still queued is queued
/// even if the inner policy would ignore it (rule 5). The unbatched variants forward all.
#[test]
fn fig7_ignored_hits_are_dropped_and_count_toward_the_threshold() {
    let inner = Recording::default();
    let (log, ignores) = (Arc::clone(&inner.log), Arc::clone(&inner.ignores));
    let policy = small(Variant::Both, inner);
    let h = TestHooks::new(4);
    for (f, p) in [(0, 10), (1, 11), (2, 12)] {
        policy.on_insert(FrameId(f), page(p), &h[f as usize]);
    }
    assert_eq!(log.lock().tracked.len(), 3);
    ignores.lock().extend([0, 3]);
    let before = policy.stats();
    h.hit(&policy, &[0, 0, 0, 0]);
    let idle = policy.stats();
    assert_eq!(idle.dropped_hits, 4);
    assert_eq!(idle.accesses - before.accesses, 4);
    assert_eq!(idle.lock_acquisitions, before.lock_acquisitions, "idle: no lock, no commit");
    h.hit(&policy, &[1, 0]);
    assert!(log.lock().hits.is_empty(), "one entry and one dropped hit: below T");
    policy.on_page_hit(FrameId(0), page(10), &h[0]);
    assert_eq!(log.lock().hits, [(1, 11)], "the third access since the entry commits it");
    assert_eq!(policy.stats().lock_acquisitions, before.lock_acquisitions + 1);
    // Frame 3's insert is queued: its hit is queued too, though the inner policy ignores it.
    policy.on_insert(FrameId(3), page(13), &h[3]);
    h.hit(&policy, &[3, 2]);
    assert_eq!(log.lock().hits[1..], [(3, 13), (2, 12)]);
    let stats = policy.stats();
    assert_eq!((stats.dropped_hits, stats.stale_entries_skipped), (6, 0));
    assert!(log.lock().hits.iter().all(|&(f, _)| f != 0), "no ignored hit was forwarded");
    for variant in [Variant::None, Variant::Prefetching] {
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        inner.ignores.lock().insert(0);
        let policy = small(variant, inner);
        policy.on_insert(FrameId(0), page(10), &h[0]);
        h.hit(&policy, &[0]);
        assert_eq!(log.lock().hits, [(0, 10)], "{variant:?}");
        assert_eq!(policy.stats().dropped_hits, 0);
    }
}

/// Fig. 7's approximation for hot/cold (module doc): 4 frames, one hot page. With page 1 hot,
/// a hit on cold page 2 is queued, and a hit on page 1 right after it is dropped, since page
/// 1 is still hot when it is read; the commit then promotes 2 and demotes 1. Unwrapped, the
/// hit on 1 comes after 2's promotion demoted it, so it promotes 1 back and demotes 2. With
/// T = 1 every access commits before the next, and the two agree.
#[test]
fn fig7_hot_cold_checks_hotness_at_the_access() {
    let h = TestHooks::new(4);
    let victims = |policy: &dyn Policy| {
        h.insert(policy, &[0, 1, 2, 3]);
        h.hit(policy, &[1]);
        policy.next_candidate(&h); // commits the queue: page 1 is hot
        h.hit(policy, &[2, 1]);
        (0..4).map(|_| h.evict(policy)).collect::<Vec<_>>()
    };
    let plain = victims(&crate::HotCold::with_hot_limit(4, 1));
    assert_eq!(plain, [0, 3, 2, 1], "unwrapped: 1 promoted again, 2 demoted");
    let wrap = |threshold| {
        let config = BpConfig { variant: Variant::Both, queue_size: 4, batch_threshold: threshold };
        BpWrapper::with_config(Box::new(crate::HotCold::with_hot_limit(4, 1)), 4, config).unwrap()
    };
    assert_eq!(victims(&wrap(3)), [0, 3, 1, 2], "batched: the hit on 1 was dropped");
    assert_eq!(victims(&wrap(1)), plain, "T = 1: nothing waits in the queue");
}

/// Without batching every hit is forwarded at once, each under its own lock acquisition (on
/// page 0, a valid page id that must not read as "no page").
#[test]
fn r1_unbatched_variants_forward_every_hit() {
    for variant in [Variant::None, Variant::Prefetching] {
        let inner = Recording::default();
        let log = Arc::clone(&inner.log);
        let policy = small(variant, inner);
        let h = TestHooks::new(4);
        policy.on_insert(FrameId(3), page(0), &h[3]);
        h.hit(&policy, &[3]);
        assert_eq!(log.lock().hits, [(3, 0)], "{variant:?}");
        assert_eq!(policy.stats().lock_acquisitions, 2);
    }
}

/// While another thread holds the lock, hits from T on only try it, and a full queue (S)
/// blocks until the lock is free, then commits all S entries in order.
#[test]
fn failed_try_locks_keep_working_until_the_queue_is_full() {
    let inner = Recording::default();
    let log = Arc::clone(&inner.log);
    let policy = small(Variant::Batching, inner);
    let h = TestHooks::new(4);
    policy.on_insert(FrameId(1), page(5), &h[1]);
    policy.flush();
    let locked = AtomicBool::new(false);
    let three_done = AtomicBool::new(false);
    let released = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let held = policy.lock.mutex.lock();
            locked.store(true, Ordering::SeqCst);
            while !three_done.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            // Give the main thread time to block; correctness does not depend on it.
            std::thread::sleep(std::time::Duration::from_millis(20));
            released.store(true, Ordering::SeqCst);
            drop(held);
        });
        while !locked.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        h.hit(&policy, &[1, 1, 1]);
        assert_eq!(policy.stats().failed_try_locks, 1, "the third hit tried the lock and went on");
        assert!(log.lock().hits.is_empty());
        three_done.store(true, Ordering::SeqCst);
        h.hit(&policy, &[1]); // the fourth entry fills the queue: blocks
        assert!(released.load(Ordering::SeqCst), "a full queue waits for the lock");
    });
    assert_eq!(log.lock().hits, [(1, 5); 4]);
    // A blocking wait is timed (the main thread normally blocks for most of the 20 ms).
    let stats = policy.stats();
    assert_eq!(stats.blocking_waits > 0, stats.wait_nanos > 0, "{stats:?}");
    assert!(stats.lock_nanos_per_access() >= stats.hold_nanos_per_access());
}

/// The lock-free queues under a draining thread: four producers hit their own four frames in
/// a known pseudo-random order (no period, so an entry overwritten by a later one would
/// show) while another thread drains every queue as fast as it can. Every hit reaches the inner policy
/// exactly once, and each producer's hits in its own order, whoever commits them.
#[test]
fn queues_hand_every_hit_over_once_and_in_order_under_concurrent_drains() {
    const PRODUCERS: u32 = 4;
    const HITS: usize = 50_000;
    // Producer t's i-th hit: one of its frames t * 4 .. t * 4 + 3.
    let frame_of = |t: u32, i: usize| t * 4 + ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62) as u32;
    let inner = Recording::default();
    let log = Arc::clone(&inner.log);
    let config = BpConfig { variant: Variant::Both, queue_size: 8, batch_threshold: 5 };
    let policy = BpWrapper::with_config(Box::new(inner), 16, config).unwrap();
    let h = TestHooks::new(16);
    for f in 0..16u32 {
        policy.on_insert(FrameId(f), page(u64::from(f)), &h[f as usize]);
    }
    policy.flush();
    let done = AtomicBool::new(false);
    let start = std::sync::Barrier::new(PRODUCERS as usize + 1);
    std::thread::scope(|s| {
        s.spawn(|| {
            start.wait();
            while !done.load(Ordering::SeqCst) {
                policy.flush();
            }
        });
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|t| {
                let (policy, h, start, frame_of) = (&policy, &h, &start, &frame_of);
                s.spawn(move || {
                    start.wait();
                    for i in 0..HITS {
                        if i % 64 == 0 {
                            std::thread::yield_now(); // interleave with the others
                        }
                        let f = frame_of(t, i);
                        policy.on_hit(FrameId(f), &h[f as usize]);
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
    });
    policy.flush();
    let hits = log.lock().hits.clone();
    assert_eq!(hits.len(), PRODUCERS as usize * HITS, "no hit lost or applied twice");
    for t in 0..PRODUCERS {
        let mine: Vec<u32> = hits.iter().map(|&(f, _)| f).filter(|f| f / 4 == t).collect();
        let expected: Vec<u32> = (0..HITS).map(|i| frame_of(t, i)).collect();
        assert!(mine == expected, "producer {t}'s hits arrived out of order");
    }
    let stats = policy.stats();
    assert_eq!(stats.accesses, 16 + u64::from(PRODUCERS) * HITS as u64);
    assert_eq!(stats.stale_entries_skipped, 0);
}

#[test]
fn bad_thresholds_are_refused() {
    for (size, threshold) in [(4, 0), (4, 5)] {
        let config = BpConfig { variant: Variant::Both, queue_size: size, batch_threshold: threshold };
        let err = BpWrapper::with_config(Box::new(Lru::new(2)), 2, config).err();
        assert_eq!(err, Some(BpConfigError::Threshold { threshold, size }));
    }
}

/// One frame of the simulated pool, under its latch.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Frame {
    Free,
    Page(u64),
    /// Evicted in a batch that has not returned yet: not reusable (R10).
    Evicting,
}

/// The test pool's side of an eviction batch: try-latches each candidate, as the pool does.
struct TryLatch<'a> {
    frames: &'a [Mutex<Frame>],
    evicted: Vec<usize>,
    wanted: usize,
}

impl Evictor for TryLatch<'_> {
    fn wants_more(&mut self) -> bool {
        self.evicted.len() < self.wanted
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        let Some(mut latch) = self.frames[frame.index()].try_lock() else {
            return Verdict::Rejected(Rejection::InUse);
        };
        match *latch {
            Frame::Page(_) => {
                *latch = Frame::Evicting;
                self.evicted.push(frame.index());
                Verdict::Evicted
            }
            _ => Verdict::Rejected(Rejection::NotResident),
        }
    }
}

/// Four threads hit, load and free pages through the wrapper while one of them also evicts in
/// batches (R10), every frame under its latch as in the pool. The inner policy panics on any
/// R1 breach, and after everything is flushed it tracks exactly the pool's resident frames;
/// every access was committed, skipped as stale, or dropped as a hit the inner policy ignores
/// (in the second round it ignores hits on even frames: rule 5).
#[test]
fn r1_concurrent_hits_inserts_and_removes_keep_the_resident_sets_equal() {
    const FRAMES: u32 = 16;
    let variants = [Variant::None, Variant::Batching, Variant::Prefetching, Variant::Both];
    for (variant, ignore_even) in variants.into_iter().flat_map(|v| [(v, false), (v, true)]) {
        let inner = Recording::default();
        if ignore_even {
            inner.ignores.lock().extend((0..FRAMES).step_by(2));
        }
        let log = Arc::clone(&inner.log);
        let config = BpConfig { variant, queue_size: 8, batch_threshold: 4 };
        let policy = BpWrapper::with_config(Box::new(inner), FRAMES as usize, config).unwrap();
        let hooks = TestHooks::new(FRAMES as usize);
        let frames: Vec<Mutex<Frame>> = (0..FRAMES).map(|_| Mutex::new(Frame::Free)).collect();
        let next_page = AtomicU64::new(1);
        let accesses = AtomicU64::new(0);
        std::thread::scope(|s| {
            for thread in 0..4u32 {
                let (policy, hooks, frames, next_page, accesses) =
                    (&policy, &hooks, &frames, &next_page, &accesses);
                s.spawn(move || {
                    let mut x = thread.wrapping_mul(2_654_435_761).wrapping_add(12345);
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let f = FrameId(x % FRAMES);
                        let hook = &hooks[f.index()];
                        let mut latch = frames[f.index()].lock();
                        match ((x >> 8) % 16, *latch) {
                            (0, Frame::Page(_)) => {
                                policy.on_remove(f, false, hook);
                                *latch = Frame::Free;
                            }
                            (1 | 2, Frame::Free) => {
                                let p = next_page.fetch_add(1, Ordering::Relaxed);
                                policy.on_insert(f, page(p), hook);
                                accesses.fetch_add(1, Ordering::Relaxed);
                                *latch = Frame::Page(p);
                            }
                            (3, _) if thread == 0 => {
                                drop(latch); // R2: only thread 0 evicts
                                let mut batch = TryLatch { frames, evicted: Vec::new(), wanted: 3 };
                                policy.evict_batch(hooks, &mut batch, 8);
                                for v in batch.evicted {
                                    *frames[v].lock() = Frame::Free;
                                }
                            }
                            (_, Frame::Page(_)) => {
                                policy.on_hit(f, hook);
                                accesses.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {}
                        }
                    }
                });
            }
        });
        policy.flush();
        let resident: FxHashMap<u32, u64> = (0..FRAMES)
            .filter_map(|f| match *frames[f as usize].lock() {
                Frame::Page(p) => Some((f, p)),
                _ => None,
            })
            .collect();
        let log = log.lock();
        assert_eq!(log.tracked, resident, "{variant:?}");
        let stats = policy.stats();
        assert_eq!(stats.accesses, accesses.load(Ordering::Relaxed));
        let handled = stats.entries_committed + stats.stale_entries_skipped + stats.dropped_hits;
        assert_eq!(handled, stats.accesses, "{variant:?}");
        assert_eq!(stats.dropped_hits > 0, ignore_even && variant.batches(), "{variant:?}");
        assert!(log.hits.len() as u64 <= stats.entries_committed);
        let pages: HashSet<u64> = log.hits.iter().map(|&(_, p)| p).collect();
        assert!(!pages.is_empty());
    }
}
