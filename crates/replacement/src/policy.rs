//! The contract between a policy and the buffer pool (README rules R1–R11): the [`Policy`]
//! trait, the per-frame [`FrameHook`] the pool keeps for it and the [`HookTable`] of every
//! frame's hook, what the pool reports ([`Rejection`], [`QueuedHook`], [`HitEffect`]) and the
//! pool's side of an eviction batch ([`Evictor`], [`Verdict`]). Every policy builds on this file;
//! it depends on no policy.

use crate::BpStats;
use std::sync::atomic::{AtomicU32, Ordering};
use swizzledb_sync::{FrameId, PageId};

/// What a hit on a frame would do now, as a policy can tell without its lock
/// ([`Policy::hit_effect`], R5).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum HitEffect {
    /// The policy cannot tell: it does not hold the frame (the page's insert may still be on its
    /// way, in BP-Wrapper's queues), or it would need its lock to know.
    Unknown,
    /// The hit would change the policy's state (2Q: a page in `Am`).
    Changes,
    /// The hit would change nothing (2Q: a page in `A1in`; hot/cold: a hot page; FIFO: any).
    Nothing,
}

/// A hook call that BP-Wrapper queued, as [`Policy::on_queued`] receives it.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum QueuedHook {
    /// [`Policy::on_insert`] of this page.
    Insert(PageId),
    /// [`Policy::on_hit`].
    Hit,
    /// [`Policy::on_unfix`].
    Unfix,
    /// [`Policy::on_children`] with this flag.
    Children(bool),
}

/// Why the pool refused a proposed victim.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Rejection {
    /// Some thread holds the frame's latch: the page is in use right now.
    InUse,
    /// The page is a tree root; roots stay resident for the pool's lifetime.
    Root,
    /// The page holds swizzled child references (un-swizzle its children first).
    SwizzledChildren,
    /// The frame holds no page (already free, or being loaded).
    NotResident,
}

/// A policy's word of per-frame state, kept by the buffer pool inside the frame descriptor, next
/// to the latch that every fix touches anyway (R7). A policy whose hit hook only reads or writes
/// this word costs the hit path no extra cache miss. Policies are free to ignore it and keep
/// their own structures; the offline simulator keeps a plain array of hooks.
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct FrameHook(AtomicU32);

impl FrameHook {
    /// A hook holding 0.
    #[must_use]
    pub const fn new() -> FrameHook {
        FrameHook(AtomicU32::new(0))
    }

    /// The current value.
    #[inline]
    #[must_use]
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Replaces the value (a plain store: no read-modify-write, R5).
    #[inline]
    pub fn set(&self, v: u32) {
        self.0.store(v, Ordering::Relaxed);
    }

    /// Stores `v` only if the value differs, so hits on hot frames do not dirty the line (R5).
    #[inline]
    pub fn set_if_changed(&self, v: u32) {
        if self.get() != v {
            self.set(v);
        }
    }

    /// Atomically replaces `current` by `new`; for the evicting thread, which must not overwrite
    /// a concurrent hit (R2).
    ///
    /// # Errors
    /// The value found instead of `current`.
    #[inline]
    pub fn compare_exchange(&self, current: u32, new: u32) -> Result<u32, u32> {
        self.0.compare_exchange(current, new, Ordering::Relaxed, Ordering::Relaxed)
    }
}

/// Every frame's hook, indexed by frame: the pool's descriptors, or a simulator's array.
pub trait HookTable: Sync {
    /// The hook of `frame` (which is below the policy's capacity).
    fn hook(&self, frame: FrameId) -> &FrameHook;
}

impl HookTable for [FrameHook] {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self[frame.index()]
    }
}

impl HookTable for Vec<FrameHook> {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self[frame.index()]
    }
}

impl HookTable for Box<[FrameHook]> {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self[frame.index()]
    }
}

/// A hit that is one conditional store to the frame's hook (R12): the hook takes `value` unless
/// it holds `value` or `unless` already. A policy whose hits are only that says so
/// ([`Policy::hook_hit`]), and the pool makes the store itself, without a call through the
/// policy's trait object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookHit {
    /// What a hit stores.
    pub value: u32,
    /// A value a hit leaves alone (a frame the evictor has claimed, say).
    pub unless: u32,
}

impl HookHit {
    /// The hit on `hook`: a load, and a store only if the value changes (R5).
    #[inline]
    pub fn apply(self, hook: &FrameHook) {
        let current = hook.get();
        if current != self.value && current != self.unless {
            hook.set(self.value);
        }
    }
}

/// A page-replacement policy over a fixed set of frames `0..capacity`.
///
/// All hooks take `&self`: policies synchronize internally (hit hooks should be a plain store, not
/// a lock). `next_candidate` is called by one evicting thread at a time (R2). Every hook also
/// receives the frame's [`FrameHook`] (R7).
pub trait Policy: Send + Sync {
    /// Short name, as accepted by [`PolicyKind`](crate::PolicyKind)'s parser (for example `gclock(k=10)`).
    fn name(&self) -> String;

    /// A frame now holds `page`: a miss loaded it or a new page was created there (R1).
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook);

    /// A fix found the page resident in `frame`.
    fn on_hit(&self, frame: FrameId, hook: &FrameHook);

    /// [`Policy::on_hit`], naming the page the fix found, which the pool has at hand (in the
    /// descriptor line the fix has just loaded). A policy that would otherwise look the frame's
    /// page up (BP-Wrapper, to tag its queue entry) saves that cache miss. The default forgets
    /// the page; the pool calls this, the offline simulator `on_hit`.
    fn on_page_hit(&self, frame: FrameId, _page: PageId, hook: &FrameHook) {
        self.on_hit(frame, hook);
    }

    /// R12: `Some` if every hit (`on_hit`, `on_page_hit`) is exactly [`HookHit::apply`] on the
    /// frame's hook and nothing else, so that the pool may make that store instead of calling
    /// the policy. Default: `None` (the pool calls the policy).
    fn hook_hit(&self) -> Option<HookHit> {
        None
    }

    /// Whether `on_hit` and `on_page_hit` may be called for a frame the caller does not hold
    /// latched (R11): possibly after the frame's page was removed, or another page inserted in
    /// it. Such a call must touch nothing but the frame's hook, with at most a load and a
    /// conditional store, and leave it as a hit on whatever page the frame holds would (or, on
    /// a free frame, a state its next `on_insert` resets). The pool then reads leaves without
    /// latching them and reports their hits this way (buffer README B33). Default: false.
    fn latch_free_hits(&self) -> bool {
        false
    }

    /// What a hit on the page in `frame` would do now, as the policy's own `on_hit` finds
    /// without taking a lock. It must not block or write. `Nothing` only when `on_hit` would then
    /// change nothing, and, for a frame the policy does not hold, only if no hit ever changes
    /// anything (FIFO): BP-Wrapper asks before queueing a hit, possibly before the page's insert
    /// has reached the policy, so that it neither queues nor commits what the policy would drop
    /// (the paper's lock-free hot hits, its Fig. 7), and it trusts the answer without a look at
    /// its own record of the frame. A policy that answers from per-frame state clears that state
    /// when it forgets the frame. `Changes` is a hint (a hit that is queued for it may still
    /// change nothing). The default, `Unknown`, queues every hit.
    fn hit_effect(&self, _frame: FrameId, _hook: &FrameHook) -> HitEffect {
        HitEffect::Unknown
    }

    /// Whether a hit on `frame` would change nothing: [`Policy::hit_effect`] is `Nothing`.
    fn ignores_hit(&self, frame: FrameId, hook: &FrameHook) -> bool {
        self.hit_effect(frame, hook) == HitEffect::Nothing
    }

    /// True if [`Policy::hit_effect`] can ever be `Nothing`. BP-Wrapper asks once, when it is
    /// built, so that a policy that reacts to every hit (LRU) costs its hits nothing for the
    /// check. The default is false; a policy overriding `hit_effect` overrides this too.
    fn ignores_some_hits(&self) -> bool {
        false
    }

    /// True if a `Nothing` from [`Policy::hit_effect`] holds for as long as the policy holds
    /// the frame with the same page (2Q: an `A1in` or blocked page stays so; FIFO), so that
    /// BP-Wrapper may remember the answer in the pool's hook of the frame, which a hit reads
    /// anyway, until the frame's next insert. Not hot/cold, whose hot pages are demoted. The
    /// default is false.
    fn hit_effects_are_stable(&self) -> bool {
        false
    }

    /// Several hook calls, in order, exactly as if each were made on its own with
    /// `table.hook(frame)`: BP-Wrapper commits a batch of queued accesses through this. The
    /// default is that loop; a policy behind one lock (LRU, 2Q) takes it once for the whole batch.
    fn on_queued(&self, calls: &[(FrameId, QueuedHook)], table: &dyn HookTable) {
        for &(frame, call) in calls {
            let hook = table.hook(frame);
            match call {
                QueuedHook::Insert(page) => self.on_insert(frame, page, hook),
                QueuedHook::Hit => self.on_hit(frame, hook),
                QueuedHook::Unfix => self.on_unfix(frame, hook),
                QueuedHook::Children(swizzled) => self.on_children(frame, swizzled, hook),
            }
        }
    }
    /// A fix of `frame` ended. "Usage" can be defined by fix or by unfix; most policies ignore this.
    fn on_unfix(&self, _frame: FrameId, _hook: &FrameHook) {}

    /// True if the policy wants [`Policy::on_unfix`]; the pool skips the call on every unfix
    /// otherwise (it is on the hot path).
    fn uses_unfix(&self) -> bool {
        false
    }

    /// The pool refused the candidate it was offered (R3): the policy must not lose the frame.
    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook);

    /// `frame` no longer holds a page: it was evicted (`evicted == true`) or its page was freed.
    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook);

    /// Proposes the next eviction candidate among frames that hold a page, or `None` when the
    /// policy tracks no resident frame (R4). `hooks` gives access to every frame's hook.
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId>;

    /// The resident `frame` gained its first swizzled child (`true`) or lost its last one
    /// (`false`), so it stopped or started being a leaf of the cached subtree (R8). Only the
    /// swizzling pool calls this; most policies ignore it and learn about such frames through
    /// `SwizzledChildren` rejections instead.
    fn on_children(&self, _frame: FrameId, _swizzled: bool, _hook: &FrameHook) {}

    /// True if, in swizzling mode, the pool should evict through the depth-first sweep first and
    /// ask [`Policy::next_candidate`] only for the rest (R9).
    fn prefers_sweep(&self) -> bool {
        false
    }

    /// The depth-first sweep found `frame`, a leaf of the cached subtree: may it be evicted
    /// (R9)? A policy with usage statistics can age the frame and refuse it. The default admits
    /// every leaf.
    fn sweep_admits(&self, _frame: FrameId, _hook: &FrameHook) -> bool {
        true
    }

    /// Runs one eviction batch (R10): proposes candidates one at a time while
    /// `evictor.wants_more()` and fewer than `max_proposals` were made, hands each to
    /// `evictor.try_evict`, and records the verdict as a removal or a rejection before the next
    /// proposal. Returns the number of proposals. The default is exactly that loop over
    /// [`Policy::next_candidate`], [`Policy::on_remove`] and [`Policy::on_rejected`]; a policy
    /// whose state sits behind one lock (BP-Wrapper) takes it once for the whole batch.
    fn evict_batch(&self, hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        evict_one_by_one(self, hooks, evictor, max_proposals)
    }

    /// Runs `work` while holding the policy's lock, if it has a reentrant one that every hook
    /// takes (BP-Wrapper), so that the hooks `work` makes take it again for free: a wrapper
    /// around this policy (`LeafOnly`) runs its eviction batch (R10) inside, one acquisition for
    /// the batch instead of one per proposal and verdict. The default runs `work` as it is.
    fn hold_lock_for(&self, work: &mut dyn FnMut()) {
        work();
    }

    /// The counters of the policy's instrumented lock (BP-Wrapper and its `locked-` baseline), or
    /// `None` for a policy without one.
    fn lock_stats(&self) -> Option<BpStats> {
        None
    }

    /// A guess at the candidate this policy will propose after `frame`, its latest proposal, once
    /// `frame` has left: a hint the eviction batch passes to [`Evictor::prefetch`] so that the
    /// pool's checks of the next victim find its descriptor in the cache (R10). Wrong or missing
    /// guesses cost only the prefetch. A policy whose candidates already come in frame order, or
    /// that cannot tell cheaply, returns `None` (the default). `hooks` are the frames' hooks, as
    /// for `next_candidate`.
    fn candidate_after(&self, _frame: FrameId, _hooks: &dyn HookTable) -> Option<FrameId> {
        None
    }

    /// A hint that hooks for `frames`, among them inserts of the `inserted` pages, will soon
    /// reach the policy, so that it may start loading what they will read (its list links, its
    /// ghost index). The pool calls it for a missing page before reading the page (its insert
    /// follows the read); BP-Wrapper's prefetching for its queued entries before it asks for its
    /// lock to commit them. It must not block: a policy whose state sits behind its own mutex
    /// tries that lock and skips the hint if it is taken. It must change nothing. The default
    /// ignores it.
    fn prefetch_accesses(&self, _frames: &[FrameId], _inserted: &[PageId]) {}
}

/// The default [`Policy::evict_batch`]: one `next_candidate` per proposal, each verdict recorded
/// through `on_remove` or `on_rejected` before the next.
pub(crate) fn evict_one_by_one<P: Policy + ?Sized>(
    policy: &P,
    hooks: &dyn HookTable,
    evictor: &mut dyn Evictor,
    max_proposals: usize,
) -> usize {
    let mut proposals = 0;
    while proposals < max_proposals && evictor.wants_more() {
        let Some(frame) = policy.next_candidate(hooks) else {
            break;
        };
        proposals += 1;
        if let Some(next) = policy.candidate_after(frame, hooks) {
            evictor.prefetch(next);
        }
        match evictor.try_evict(frame) {
            Verdict::Evicted => policy.on_remove(frame, true, hooks.hook(frame)),
            Verdict::Rejected(why) => policy.on_rejected(frame, why, hooks.hook(frame)),
        }
    }
    proposals
}

/// What the pool did with a candidate proposed during [`Policy::evict_batch`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// The frame no longer holds its page. The pool has not yet made the frame free for reuse:
    /// it does so only after `evict_batch` returns (R10), so the removal is recorded first.
    Evicted,
    /// The pool refused the candidate and the frame keeps its page.
    Rejected(Rejection),
}

/// The pool's side of an eviction batch (R10).
pub trait Evictor {
    /// Whether the batch still needs victims (false also once an error stopped it).
    fn wants_more(&mut self) -> bool;
    /// Tries to evict `frame`, which the policy has just proposed, and says what happened. It
    /// must not call the policy's `on_remove` or `on_rejected` for `frame`: the batch does.
    fn try_evict(&mut self, frame: FrameId) -> Verdict;
    /// A hint that `frame` will probably be proposed next ([`Policy::candidate_after`]): the pool
    /// may start loading what `try_evict` will read of it. It must change nothing. The default
    /// ignores it.
    fn prefetch(&mut self, _frame: FrameId) {}
}
