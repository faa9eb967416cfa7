//! The consumer side of the queues: pre-reading a queue, checking each entry under the lock
//! (`bp_wrapper` module doc, rules 1 and 2), and handing the admitted ones to the inner
//! policy in one call.
//!
//! # A commit
//!
//! Under the lock, a commit reads the queue's `tail` (acquire) and walks the entries from `head`
//! in FIFO order. The common entry, a hit on a frame the inner policy holds with the hit's page,
//! is taken without decoding it; any other goes through `admit`: applied if `held[f]` is its
//! page, preceded by the page's insert if `held[f]` is empty and `pages[f]` is its page, else
//! skipped as stale. The calls go to the inner policy in one `on_queued` call, in order, so 2Q
//! and LRU take their own lock once per commit instead of once per insert and per run of hits.
//! Then `head` is advanced (release) and the queue is empty. The committed and stale entries are
//! counted once per batch, not per entry (an atomic add per entry would lengthen the section).
//!
//! Worked example (test `r1_hits_commit_in_fifo_order_and_stale_entries_are_skipped`), T = 3,
//! S = 4: frames 0, 1, 2 receive pages 10, 11, 12; the third insert commits all three. Hits on 2
//! and 0 wait in the queue; the hit on 1 reaches T, and the inner policy receives 2, 0, 1 in that
//! order. Hits on 0 (page 10) and 2 are queued; another thread frees page 10 and loads page 20
//! into frame 0 (its insert stays in its own queue); the next hit commits: frame 2's hit and the
//! new one are applied, frame 0's is skipped as stale. A hit on frame 0 (page 20) then commits
//! with `next_candidate`: it inserts page 20 first, then applies the hit.
//!
//! # Prefetching (the paper's second technique)
//!
//! Just before asking for the lock to commit (once the queue reaches T), the thread reads every
//! queued entry, prefetches each frame's record (`held` and the private hook), then hands the
//! entries' frames and inserted pages to the inner policy's `prefetch_accesses`. LRU prefetches
//! those frames' list links there; 2Q the links of every queued frame (reading each frame's list
//! byte to pick those in `Am`, the only hits that relink, would be a load, not a hint) and each
//! inserted page's `A1out` index line. They do so only if their own lock is free: it is taken
//! only inside the wrapper's lock, so it is free unless another thread is committing, and a
//! policy that finds it taken skips the hint rather than wait. The cache misses then overlap
//! each other, outside the critical section, where the commit would take them one after another;
//! everything is read again under the lock, so the hints never affect correctness (sync README,
//! H1). After a failed try-lock only the new entry's record is prefetched (`access.rs`). The
//! unbatched `bpw-pref-` variant does the same for its one entry (`prefetch_one`).
//!
//! A second pass inside the commit, in 2Q's and LRU's `on_queued` (loading each hit frame's links
//! and prefetching its neighbours' before relinking any), shortened no critical section and was
//! dropped (`docs/ding.md`).

use std::sync::atomic::Ordering;

use super::frames::{unslot, NO_PAGE};
use super::lock::Guard;
use super::queue::{word_frame, Access, Entry, Slot, KIND_HIT, KIND_INSERT};
use super::BpWrapper;
use crate::policy::QueuedHook;
use swizzledb_sync::FrameId;

/// Queued entries handed to the inner policy's `prefetch_accesses` at a time (a stack buffer).
const PREFETCH_CHUNK: usize = 64;

impl BpWrapper {
    /// Commits the calling thread's queue, if it has one; the caller holds the lock.
    pub(super) fn commit_mine(&self, guard: &Guard<'_>) {
        if let Some(queue) = self.my_queue() {
            self.commit(guard, queue);
        }
    }

    /// Pre-reads what committing `queue` (the caller's) will read: the entries themselves, each
    /// frame's words (its `held` word and the hook given to the inner policy), and, through the
    /// inner policy's [`Policy::prefetch_accesses`](crate::Policy::prefetch_accesses), what its
    /// hooks will read. Prefetches, not loads, so the misses overlap; correctness never depends
    /// on them (sync README H1), since everything is read again under the lock.
    pub(super) fn prefetch(&self, queue: &Slot) {
        let mut frames = [FrameId(0); PREFETCH_CHUNK];
        let mut inserted = [unslot(1); PREFETCH_CHUNK];
        let (mut nf, mut ni) = (0, 0);
        for i in queue.head.load(Ordering::Acquire)..queue.tail.load(Ordering::Relaxed) {
            let (page, word) = queue.words(i);
            let frame = word_frame(word);
            if let Some(words) = self.frames.0.get(frame.index()) {
                swizzledb_sync::hint::prefetch(words);
            }
            frames[nf] = frame;
            nf += 1;
            if word >> 32 == KIND_INSERT && page != NO_PAGE {
                inserted[ni] = unslot(page);
                ni += 1;
            }
            if nf == PREFETCH_CHUNK {
                self.inner.prefetch_accesses(&frames, &inserted[..ni]);
                (nf, ni) = (0, 0);
            }
        }
        if nf > 0 {
            self.inner.prefetch_accesses(&frames[..nf], &inserted[..ni]);
        }
    }

    /// Pre-reads what applying `entry` will read (the unbatched variant).
    pub(super) fn prefetch_one(&self, entry: Entry) {
        if let Some(words) = self.frames.0.get(entry.frame.index()) {
            swizzledb_sync::hint::prefetch(words);
        }
        let inserted = (entry.access == Access::Insert && entry.page != NO_PAGE).then(|| unslot(entry.page));
        self.inner.prefetch_accesses(&[entry.frame], inserted.as_slice());
    }

    /// Checks one entry under the lock (`bp_wrapper` module doc, rules 1 and 2) and appends the
    /// calls it makes of the inner policy to `calls`: first its page's insert if that is still
    /// queued (`held[f]` is set at once, so the rest of a batch sees the frame held, as the inner
    /// policy will by then), then the access itself. False, with nothing appended, if the entry is
    /// stale.
    #[inline(never)]
    fn admit(&self, entry: Entry, calls: &mut Vec<(FrameId, QueuedHook)>) -> bool {
        let index = entry.frame.index();
        let held = self.frames.held(index);
        if held != entry.page {
            if held != NO_PAGE
                || self.frames.0.get(index).map_or(NO_PAGE, |words| words.page.load(Ordering::Acquire))
                    != entry.page
            {
                return false;
            }
            self.frames.set_held(index, entry.page);
            calls.push((entry.frame, QueuedHook::Insert(unslot(entry.page))));
        }
        match entry.access {
            Access::Insert => {}
            Access::Hit => calls.push((entry.frame, QueuedHook::Hit)),
            Access::Unfix => calls.push((entry.frame, QueuedHook::Unfix)),
            Access::Children(swizzled) => calls.push((entry.frame, QueuedHook::Children(swizzled))),
        }
        true
    }

    /// Hands `calls` to the inner policy in one `on_queued` call and empties it.
    fn forward(&self, calls: &mut Vec<(FrameId, QueuedHook)>) {
        if !calls.is_empty() {
            self.inner.on_queued(calls, &self.frames);
            calls.clear();
        }
    }

    /// Applies one entry at once (the unbatched variants); false if it was stale. The caller
    /// counts (an atomic add per entry would lengthen the critical section of a commit).
    pub(super) fn apply(&self, guard: &Guard<'_>, entry: Entry) -> bool {
        let mut calls = std::mem::take(&mut guard.state().calls);
        let admitted = self.admit(entry, &mut calls);
        self.forward(&mut calls);
        guard.state().calls = calls;
        admitted
    }

    /// Counts `applied` committed and `stale` skipped entries.
    pub(super) fn count_commits(&self, applied: u64, stale: u64) {
        if applied > 0 {
            self.counters.entries_committed.fetch_add(applied, Ordering::Relaxed);
        }
        if stale > 0 {
            self.counters.stale_entries_skipped.fetch_add(stale, Ordering::Relaxed);
        }
    }

    /// Commits one queue in FIFO order; the caller holds the lock. The admitted entries reach the
    /// inner policy through one `on_queued` call, in order (so exactly as one hook call each): an
    /// inner policy behind its own lock takes it once per commit.
    pub(super) fn commit(&self, guard: &Guard<'_>, queue: &Slot) {
        // Only lock holders move `head`; the producer may append behind `tail` meanwhile, never
        // over entries before `head` is stored (`bp_wrapper` module doc, "Queues").
        let head = queue.head.load(Ordering::Relaxed);
        let tail = queue.tail.load(Ordering::Acquire);
        if head == tail {
            return;
        }
        let mut calls = std::mem::take(&mut guard.state().calls);
        let mut applied = 0u64;
        for i in head..tail {
            let (page, word) = queue.words(i);
            // The common entry, a hit on a frame the inner policy holds with the hit's page
            // (step 1), without decoding it; anything else through `admit`.
            if word >> 32 == KIND_HIT && self.frames.holds(word_frame(word), page) {
                calls.push((word_frame(word), QueuedHook::Hit));
                applied += 1;
            } else {
                applied += u64::from(self.admit(Entry::decode(page, word), &mut calls));
            }
        }
        self.forward(&mut calls);
        guard.state().calls = calls;
        queue.head.store(tail, Ordering::Release);
        self.count_commits(applied, (tail - head) as u64 - applied);
    }

    /// Commits every queue (a drain: when candidates ran out, or on `flush`).
    pub(super) fn commit_all(&self, guard: &Guard<'_>) {
        for queue in self.queues.iter() {
            self.commit(guard, queue);
        }
    }

    /// The inner policy's next candidate; if it has none, drains every queue (a frame whose insert
    /// is still queued is resident too, R4) and asks again.
    pub(super) fn inner_candidate(&self, guard: &Guard<'_>, drained: &mut bool) -> Option<FrameId> {
        loop {
            if let Some(frame) = self.inner.next_candidate(&self.frames) {
                return Some(frame);
            }
            if *drained {
                return None;
            }
            *drained = true;
            self.commit_all(guard);
        }
    }
}
