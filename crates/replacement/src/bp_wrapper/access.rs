//! The producer side: an access queued by the calling thread (or, without batching, applied at
//! once), hits the inner policy ignores dropped (`bp_wrapper` module doc, rule 5), and the
//! commit once T accesses have piled up (the paper's Fig. 7).
//!
//! The append below T is inlined into each hook (the entry's kind a constant there); dropping
//! an ignored hit, applying an access at once and trying the lock at T are out of line. From T
//! accesses on, a failed try-lock returns and the thread keeps working; only an access that
//! fills the queue blocks on the lock, at once, without the eviction batch's spin (`lock.rs`).
//! Tests: `fig7_ignored_hits_are_dropped_and_count_toward_the_threshold`,
//! `failed_try_locks_keep_working_until_the_queue_is_full` and
//! `r1_unbatched_variants_forward_every_hit`.

use std::sync::atomic::Ordering;

use super::frames::NO_PAGE;
use super::queue::{Access, Entry, Slot};
use super::stats::bump;
use super::{BpWrapper, HOOK_CHANGES, HOOK_NOTHING};
use crate::policy::{FrameHook, HitEffect};
use swizzledb_sync::FrameId;

impl BpWrapper {
    /// Queues (or, without batching, applies at once) an access to a resident frame; `hook` is
    /// the pool's hook of the frame.
    pub(super) fn access(&self, frame: FrameId, access: Access, hook: &FrameHook) {
        let page =
            self.frames.0.get(frame.index()).map_or(NO_PAGE, |words| words.page.load(Ordering::Acquire));
        if page == NO_PAGE {
            return; // not resident as far as the wrapper knows (a pool breaking R1): nothing to do
        }
        self.queue_access(Entry { frame, access, page }, hook);
    }

    /// Queues (or, without batching, applies at once) `entry`. The common path, an append below
    /// T, is inlined into the hooks; everything else is out of line, so that the append saves no
    /// registers it does not use.
    #[inline(always)]
    pub(super) fn queue_access(&self, entry: Entry, hook: &FrameHook) {
        let queue = if self.config.variant.batches() { self.my_queue() } else { None };
        let Some(queue) = queue else {
            self.apply_now(entry);
            return;
        };
        if self.drops_hits && entry.access == Access::Hit && self.ignorable(entry.frame, hook) {
            self.drop_ignored_hit(queue);
            return;
        }
        let len = queue.push(entry, matches!(entry.access, Access::Hit | Access::Insert));
        let count = len + queue.dropped_since.load(Ordering::Relaxed);
        self.maybe_commit(queue, count, len, Some(entry.frame));
    }

    /// Applies `entry` under the lock at once: the unbatched variants, or a thread without a
    /// queue slot.
    #[inline(never)]
    fn apply_now(&self, entry: Entry) {
        if self.config.variant.prefetches() {
            self.prefetch_one(entry);
        }
        let guard = self.lock();
        if matches!(entry.access, Access::Hit | Access::Insert) {
            bump(&self.counters.locked_accesses);
        }
        let applied = self.apply(&guard, entry);
        self.count_commits(u64::from(applied), u64::from(!applied));
    }

    /// Drops a hit the inner policy ignores (rule 5), counting it toward T while the caller's
    /// `queue` holds entries.
    #[inline(never)]
    fn drop_ignored_hit(&self, queue: &Slot) {
        if let Some((count, len)) = queue.drop_hit() {
            self.maybe_commit(queue, count, len, None);
        }
    }

    /// Whether a hit on `frame` can be dropped (rule 5): the inner policy says a hit on the frame's
    /// page would change nothing, which it says only of a page whose insert it has seen or of hits
    /// that never change anything (R5). The wrapper's own words for the frame are not read: the
    /// hook's address is only computed, so an inner policy that keeps its answer elsewhere (2Q,
    /// hot/cold) costs the hit no miss on them. If its answers are stable, a definite one is
    /// remembered in `pool_hook`, the pool's hook of the frame, whose cache line the fix has just
    /// loaded, and later hits on the page read only that (`bp_wrapper` module doc, "Hooks").
    #[inline(always)]
    fn ignorable(&self, frame: FrameId, pool_hook: &FrameHook) -> bool {
        if self.caches_effects {
            match pool_hook.get() {
                HOOK_NOTHING => return true,
                HOOK_CHANGES => return false,
                _ => {}
            }
        }
        self.ask_inner(frame, pool_hook)
    }

    /// [`BpWrapper::ignorable`] when the pool's hook does not know yet: asks the inner policy,
    /// and remembers a definite answer if its answers are stable.
    #[inline(never)]
    fn ask_inner(&self, frame: FrameId, pool_hook: &FrameHook) -> bool {
        let Some(words) = self.frames.0.get(frame.index()) else { return false };
        let effect = self.inner.hit_effect(frame, &words.hook);
        if self.caches_effects {
            match effect {
                HitEffect::Nothing => pool_hook.set(HOOK_NOTHING),
                HitEffect::Changes => pool_hook.set(HOOK_CHANGES),
                HitEffect::Unknown => {}
            }
        }
        effect == HitEffect::Nothing
    }

    /// The paper's lines 15-23 of Fig. 7, for the caller's own `queue` after an access: once
    /// `count` accesses (queued entries and hits dropped since) reach T, the thread tries the
    /// lock, and commits if it gets it; it blocks only when the queue holds S entries. (Fig. 7
    /// compares its access count with S, but its queue holds one entry more than it counts, so
    /// the entry that fills the queue would overrun it: the queue's own length decides here.)
    #[inline]
    fn maybe_commit(&self, queue: &Slot, count: usize, len: usize, newest: Option<FrameId>) {
        if count >= self.config.batch_threshold {
            self.try_commit(queue, count, len, newest);
        }
    }

    /// [`BpWrapper::maybe_commit`] from T accesses on: out of line, so that the common access
    /// below T costs one comparison.
    #[inline(never)]
    fn try_commit(&self, queue: &Slot, count: usize, len: usize, newest: Option<FrameId>) {
        if self.config.variant.prefetches() {
            // The whole queue when it reaches T; after a failed try-lock, only the new entry's
            // record (the rest is still on its way).
            if count == self.config.batch_threshold {
                self.prefetch(queue);
            } else if let Some(words) = newest.and_then(|frame| self.frames.0.get(frame.index())) {
                swizzledb_sync::hint::prefetch(words);
            }
        }
        let guard = match self.lock.try_lock(&self.counters) {
            Some(guard) => guard,
            None => {
                bump(&self.counters.failed_try_locks);
                if len < self.config.queue_size {
                    return; // keep working; the next access tries again
                }
                self.lock()
            }
        };
        self.commit(&guard, queue);
        queue.dropped_since.store(0, Ordering::Relaxed);
    }
}
