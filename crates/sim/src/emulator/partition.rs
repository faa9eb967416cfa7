//! A partition: a policy instance over its own frames, its eviction lock and its free lists
//! (README E4, E6, E7). Unpartitioned variants have one partition holding every frame.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use swizzledb_replacement::{
    BpConfig, BpStats, BpWrapper, Clock, Evictor, FrameHook, FrameId, PageId, Policy, Rejection, Verdict,
};

use super::buffer::Buffer;
use super::config::EmuConfig;

/// A mutex that counts its acquisitions and the acquisitions that had to wait (the miss lock of
/// every variant, and CLOCK's only lock).
#[derive(Default)]
pub(crate) struct CountingLock {
    lock: Mutex<()>,
    acquisitions: AtomicU64,
    waits: AtomicU64,
    /// Passes through the miss path, with or without the lock.
    passes: AtomicU64,
}

impl CountingLock {
    pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
        let guard = self.lock.try_lock().unwrap_or_else(|| {
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.lock.lock()
        });
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        self.passes.fetch_add(1, Ordering::Relaxed);
        guard
    }

    /// Counts a pass through the miss path that takes no miss lock (BP-Wrapper's variants, whose
    /// own lock serializes the batch).
    pub(crate) fn count_unlocked(&self) {
        self.passes.fetch_add(1, Ordering::Relaxed);
    }

    /// (acquisitions, waits, passes) so far.
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (get(&self.acquisitions), get(&self.waits), get(&self.passes))
    }
}

/// The replacement policy of a partition: a BP-Wrapper around the configured policy, or CLOCK
/// on its own.
pub(crate) enum Repl {
    Wrapped(Box<BpWrapper>),
    Plain(Box<dyn Policy>),
}

impl Repl {
    pub(crate) fn policy(&self) -> &dyn Policy {
        match self {
            Repl::Wrapped(w) => w.as_ref(),
            Repl::Plain(p) => p.as_ref(),
        }
    }

    pub(crate) fn stats(&self) -> Option<BpStats> {
        match self {
            Repl::Wrapped(w) => Some(w.stats()),
            Repl::Plain(_) => None,
        }
    }

    /// Commits the calling thread's queued accesses (every worker does before it exits, E8).
    pub(crate) fn flush(&self) {
        if let Repl::Wrapped(w) = self {
            w.flush();
        }
    }
}

/// One partition: frames `base..base + capacity` of the buffer, named `0..capacity` to its
/// policy.
pub(crate) struct Partition {
    pub(crate) base: u32,
    pub(crate) capacity: u32,
    pub(crate) repl: Repl,
    /// The hooks of this partition's frames, by local frame.
    pub(crate) hooks: Box<[FrameHook]>,
    /// Serializes eviction batches (R2) for CLOCK: the miss lock. BP-Wrapper's variants pass the
    /// miss path without it (their own lock serializes the batch); it only counts their passes.
    pub(crate) evict_lock: CountingLock,
    /// Free frames (local ids). Without batched free lists there is one list, which only holds
    /// frames a failed install gave back (E6).
    pub(crate) lists: Box<[Mutex<Vec<u32>>]>,
    /// Victims per eviction batch: F with free lists, else 1.
    pub(crate) reclaim: usize,
    /// Whether misses pop free lists before taking the miss lock (E6).
    batched: bool,
}

impl Partition {
    pub(crate) fn new(config: &EmuConfig, index: usize, base: u32, capacity: u32) -> Partition {
        let cap = capacity as usize;
        let seed = config.seed.wrapping_add(index as u64);
        let repl = match config.variant.wrapper() {
            Some(variant) => {
                let bp = BpConfig { variant, ..BpConfig::default() };
                let inner = config.policy.build(cap, seed);
                Repl::Wrapped(Box::new(
                    BpWrapper::with_config(inner, cap, bp).expect("the default S and T are valid"),
                ))
            }
            None => Repl::Plain(Box::new(Clock::new(cap))),
        };
        let batched = config.lists_per_partition();
        let (lists, reclaim) = (batched.unwrap_or(1), config.effective_reclaim());
        Partition {
            base,
            capacity,
            repl,
            hooks: (0..capacity).map(|_| FrameHook::new()).collect(),
            evict_lock: CountingLock::default(),
            lists: (0..lists).map(|_| Mutex::new(Vec::with_capacity(reclaim.min(cap)))).collect(),
            reclaim,
            batched: batched.is_some(),
        }
    }

    /// The free list of `page` (`page_in_partition`: the page's index among its partition's).
    pub(crate) fn list_of(&self, page_in_partition: u32) -> usize {
        page_in_partition as usize % self.lists.len()
    }

    /// Reports a hit on local frame `local` (pinned by the caller).
    pub(crate) fn hit(&self, local: u32) {
        self.repl.policy().on_hit(FrameId(local), &self.hooks[local as usize]);
    }

    /// Reports the load of `page` into local frame `local` (held exclusively by the caller).
    pub(crate) fn insert(&self, local: u32, page: u32) {
        let page = PageId::new(u64::from(page)).expect("page ids below 2^32 are valid");
        self.repl.policy().on_insert(FrameId(local), page, &self.hooks[local as usize]);
    }

    /// A free local frame for a miss on a page of free list `list` (E6, E7): popped from the list
    /// if it has one; else, under the eviction lock, one batch of victims (F, or 1) is reclaimed
    /// from the policy, the first is returned and the others go onto the list. `victims` is the
    /// caller's scratch vector.
    pub(crate) fn take_frame(&self, buffer: &Buffer, list: usize, victims: &mut Vec<u32>) -> u32 {
        if self.batched {
            if let Some(frame) = self.lists[list].lock().pop() {
                return frame;
            }
        }
        let mut tries = 0;
        loop {
            {
                // BP-Wrapper holds its own lock for the whole batch (R10), which keeps batches one
                // at a time (R2), as the paper's miss path does; CLOCK needs the miss lock for it.
                let _miss = match &self.repl {
                    Repl::Wrapped(_) => {
                        self.evict_lock.count_unlocked();
                        None
                    }
                    Repl::Plain(_) => Some(self.evict_lock.lock()),
                };
                // Another thread may have refilled the list while this one waited.
                if let Some(frame) = self.lists[list].lock().pop() {
                    return frame;
                }
                victims.clear();
                let mut evictor = Reclaimer { buffer, base: self.base, victims, want: self.reclaim };
                let max = self.reclaim * 2 + 16;
                self.repl.policy().evict_batch(&self.hooks, &mut evictor, max);
            }
            // Victims become free only now, after `evict_batch` returned (R10).
            if let Some(frame) = victims.pop() {
                if !victims.is_empty() {
                    self.lists[list].lock().append(victims);
                }
                return frame;
            }
            // Nothing evictable: every resident frame is pinned, or the free frames sit in other
            // lists (tiny buffers only).
            for other in &*self.lists {
                if let Some(frame) = other.lock().pop() {
                    return frame;
                }
            }
            super::buffer::backoff(&mut tries);
        }
    }

    /// Gives back a free frame that a failed install did not use.
    pub(crate) fn give_back(&self, list: usize, local: u32) {
        self.lists[list].lock().push(local);
    }
}

/// The emulator's side of an eviction batch (R10): evicts a proposed frame unless it is pinned.
struct Reclaimer<'a> {
    buffer: &'a Buffer,
    base: u32,
    victims: &'a mut Vec<u32>,
    want: usize,
}

impl Evictor for Reclaimer<'_> {
    fn wants_more(&mut self) -> bool {
        self.victims.len() < self.want
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        let global = self.base + frame.0;
        if !self.buffer.try_exclusive(global) {
            return Verdict::Rejected(Rejection::InUse);
        }
        let unmapped = self.buffer.unmap(global);
        self.buffer.release(global);
        if unmapped.is_none() {
            return Verdict::Rejected(Rejection::NotResident);
        }
        self.victims.push(frame.0);
        Verdict::Evicted
    }
}
