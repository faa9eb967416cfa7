//! Optimistic reads (B24): inner nodes read without a latch, validated by the latch's version
//! (sync README, L5), so a descent through resident, swizzled nodes performs no atomic
//! read-modify-write until it latches the leaf.

use super::{BufferPool, RESIDENT};
use crate::guard::{LatchKind, PageGuard, Shared, SharedGuard};
use crate::stats::bump;
use crate::swip::{Swip, SwipTarget};
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8};
use swizzledb_sync::FrameId;

/// A page read without a latch (B24): every load is atomic and bounds-checked, so a page
/// that changes under the reader yields wrong numbers but never undefined behaviour or an
/// out-of-range access. Nothing read through a view may be acted on before
/// [`PageView::validate`] (or a step that validates) has succeeded.
#[derive(Clone, Copy)]
pub struct PageView<'p> {
    pool: &'p BufferPool,
    frame: FrameId,
    version: u64,
    /// The frame's first byte and the page size, kept here so that a search's many loads
    /// neither recompute the address nor reload the pool's fields after each atomic load.
    page: *mut u8,
    len: usize,
}

/// The outcome of one optimistic step.
pub enum Step<T> {
    /// The step is valid.
    Ready(T),
    /// A page changed under the reader, or a writer holds it: start the descent again.
    Retry,
    /// The swip is a page id (not swizzled): latch the view ([`PageView::lock_shared`]) and go
    /// on with latches.
    Unswizzled,
}

impl BufferPool {
    /// Whether tree descents may read inner nodes optimistically (B24): in the swizzling
    /// modes, with optimistic reads configured, and with neither a reference trace nor fix
    /// timing, which count every latched fix.
    #[inline]
    #[must_use]
    pub fn optimistic_reads(&self) -> bool {
        self.optimistic
    }

    /// Whether lookups may read leaves through views too (B33): optimistic reads are on (B24),
    /// `PoolConfig::optimistic_leaf_reads` asks for it, and the policy takes hits without a
    /// latch (replacement R11) or the pool is in main-memory mode, which has no policy.
    #[inline]
    #[must_use]
    pub fn optimistic_leaf_reads(&self) -> bool {
        self.optimistic_leaves
    }

    /// Starts an optimistic read of a root frame (B5: roots stay resident). `None` while a
    /// writer holds it. A handle of a tree dropped since it last checked (btree T25) may pass
    /// the frame its root had, freed by now or another page's: the view reads what is there,
    /// and the tree tells from its dropped flag that it is not its own.
    #[inline]
    #[must_use]
    pub fn view_root(&self, root: FrameId) -> Option<PageView<'_>> {
        let version = self.desc(root).latch.read_begin()?;
        self.count_view();
        Some(PageView::new(self, root, version))
    }

    /// Counts a page read through a view as a fix and a hit (B12).
    #[inline]
    fn count_view(&self) {
        self.count(|b| {
            bump(&b.fixes);
            bump(&b.hits);
            bump(&b.optimistic_reads);
        });
    }

    /// Counts an optimistic descent that started again.
    #[inline]
    pub fn count_optimistic_restart(&self) {
        self.count(|b| bump(&b.optimistic_restarts));
    }
}

impl<'p> PageView<'p> {
    #[inline]
    fn new(pool: &'p BufferPool, frame: FrameId, version: u64) -> Self {
        PageView { pool, frame, version, page: pool.frame_addr(frame), len: pool.page_size }
    }

    /// The frame read.
    #[inline]
    #[must_use]
    pub fn frame(&self) -> FrameId {
        self.frame
    }

    /// The page size.
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Pages are never empty; present for symmetry with `len`.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    #[inline]
    fn at(&self, off: usize) -> *mut u8 {
        self.page.wrapping_add(off)
    }

    /// Byte `off` (0 if out of range).
    #[inline]
    #[must_use]
    pub fn u8(&self, off: usize) -> u8 {
        if off >= self.len() {
            return 0;
        }
        // SAFETY: B24 — in range of this frame's page (checked above) inside the pool's memory,
        // which lives as long as the pool; an atomic load, whose value is used only after the
        // version validates.
        unsafe { AtomicU8::from_ptr(self.at(off)) }.load(Relaxed)
    }

    /// The little-endian `u16` at `off` (0 if out of range).
    #[inline]
    #[must_use]
    pub fn u16(&self, off: usize) -> u16 {
        if off.checked_add(2).is_none_or(|end| end > self.len()) {
            return 0;
        }
        if off.is_multiple_of(2) {
            // SAFETY: B24 — in range (checked), 2-aligned (pages are page-aligned), an atomic load.
            u16::from_le(unsafe { AtomicU16::from_ptr(self.at(off).cast()) }.load(Relaxed))
        } else {
            u16::from_le_bytes([self.u8(off), self.u8(off + 1)])
        }
    }

    /// The little-endian `u32` at `off` (0 if out of range).
    #[inline]
    #[must_use]
    pub fn u32(&self, off: usize) -> u32 {
        if off.checked_add(4).is_none_or(|end| end > self.len()) {
            return 0;
        }
        if off.is_multiple_of(4) {
            // SAFETY: B24 — in range (checked), 4-aligned, an atomic load.
            u32::from_le(unsafe { AtomicU32::from_ptr(self.at(off).cast()) }.load(Relaxed))
        } else {
            u32::from(self.u16(off)) | u32::from(self.u16(off + 2)) << 16
        }
    }

    /// The little-endian `u64` at `off` (0 if out of range).
    #[inline]
    #[must_use]
    pub fn u64(&self, off: usize) -> u64 {
        if off.checked_add(8).is_none_or(|end| end > self.len()) {
            return 0;
        }
        let skew = off % 8;
        if skew == 0 {
            return self.word(off);
        }
        // Two aligned words: the page is a whole number of words long, so an unaligned
        // `off + 8 <= len` leaves room for the second one (`off - skew + 16 <= len`).
        let lo = self.word(off - skew);
        let hi = self.word(off - skew + 8);
        (lo >> (8 * skew)) | (hi << (64 - 8 * skew))
    }

    /// The little-endian word at the 8-aligned `off`, which the caller has checked is in range.
    #[inline]
    fn word(&self, off: usize) -> u64 {
        debug_assert!(off.is_multiple_of(8) && off + 8 <= self.len());
        // SAFETY: B24 — in range and 8-aligned (checked by every caller; pages are page-aligned),
        // an atomic load whose value is used only after the version validates.
        u64::from_le(unsafe { AtomicU64::from_ptr(self.at(off).cast()) }.load(Relaxed))
    }

    /// Copies the bytes from `off` into `out` (btree T21), a word per atomic load where they
    /// are aligned; bytes out of range read as 0, as every load of a view does (B24).
    pub fn copy_to(&self, off: usize, out: &mut [u8]) {
        if off.checked_add(out.len()).is_none_or(|end| end > self.len()) {
            out.iter_mut().enumerate().for_each(|(i, b)| *b = self.u8(off.wrapping_add(i)));
            return;
        }
        let mut i = 0;
        while i < out.len() && !(off + i).is_multiple_of(8) {
            out[i] = self.u8(off + i);
            i += 1;
        }
        while i + 8 <= out.len() {
            out[i..i + 8].copy_from_slice(&self.word(off + i).to_le_bytes());
            i += 8;
        }
        while i < out.len() {
            out[i] = self.u8(off + i);
            i += 1;
        }
    }

    /// Starts loading the cache line of byte `off` (F12); nothing if out of range.
    #[inline]
    pub fn prefetch(&self, off: usize) {
        if off < self.len() {
            crate::page::prefetch_addr(self.at(off));
        }
    }

    /// True if the page has not changed since the view began (L5): everything read through the
    /// view so far is a consistent image of the page.
    #[inline]
    #[must_use]
    pub fn validate(&self) -> bool {
        self.pool.desc(self.frame).latch.read_validate(self.version)
    }

    /// The frame a swizzled swip at `swip_off` names, once the view has validated (B24): the
    /// child of this page at this moment.
    #[inline]
    fn swizzled_child(&self, swip_off: usize) -> Step<FrameId> {
        let raw = self.u64(swip_off);
        match Swip::from_raw(raw).map(Swip::target) {
            Some(SwipTarget::Frame(f)) if f.index() < self.pool.frames.len() => Step::Ready(f),
            Some(SwipTarget::Page(_)) if self.validate() => Step::Unswizzled,
            // A torn or out-of-range value: only a concurrent change can produce it (B6, B8).
            _ => Step::Retry,
        }
    }

    /// Starts an optimistic read of the child whose swizzled swip is at `swip_off` (B24): the
    /// child's version is read before this page is validated, so a valid step proves that the
    /// frame still held the child when its read began (eviction changes the parent first, B13).
    #[inline]
    #[must_use]
    pub fn child(&self, swip_off: usize) -> Step<PageView<'p>> {
        let f = match self.swizzled_child(swip_off) {
            Step::Ready(f) => f,
            Step::Retry => return Step::Retry,
            Step::Unswizzled => return Step::Unswizzled,
        };
        self.pool.prefetch_frame(f);
        let Some(version) = self.pool.desc(f).latch.read_begin() else { return Step::Retry };
        if !self.validate() {
            return Step::Retry;
        }
        self.pool.count_view();
        Step::Ready(PageView::new(self.pool, f, version))
    }

    /// Latches the child whose swizzled swip is at `swip_off` in mode `M` (B24) and validates
    /// this page afterwards, so the latched frame is this page's child. The caller holds no
    /// latch, so the blocking wait cannot close a cycle (B10).
    #[inline]
    #[must_use]
    pub fn fix_child<M: LatchKind>(&self, swip_off: usize) -> Step<PageGuard<'p, M>> {
        let f = match self.swizzled_child(swip_off) {
            Step::Ready(f) => f,
            Step::Retry => return Step::Retry,
            Step::Unswizzled => return Step::Unswizzled,
        };
        self.pool.prefetch_frame(f);
        let d = self.pool.desc(f);
        d.latch.lock(M::MODE);
        if !self.validate() || d.state.load(Acquire) != RESIDENT {
            d.latch.unlock(M::MODE);
            return Step::Retry;
        }
        self.pool.hit(f, Some(self.frame), M::MODE);
        Step::Ready(PageGuard::adopt(self.pool, f))
    }

    /// B32: brings the child whose swip at `swip_off` is a page id into the pool without
    /// latching this page, so that no latch is held across the read; the caller then starts its
    /// descent again and finds the child resident. The child's entry is made in the page table
    /// before this view is validated (and the read only after): a valid view proves the page
    /// still referenced the child when the entry was made, so the child was not free (B11), and
    /// whoever frees it from then on must fix it first and waits for the read.
    /// `Ready(())`: the child is resident (loaded here, or found resident or loading). `Retry`:
    /// this page changed (or the swip was swizzled meanwhile); nothing was read. The caller
    /// holds no latch.
    ///
    /// # Errors
    /// As a miss of [`BufferPool::fix_page`]: no free frame, I/O, a damaged page.
    pub fn load_child(&self, swip_off: usize) -> crate::Result<Step<()>> {
        let raw = self.u64(swip_off);
        let Some(SwipTarget::Page(pid)) = Swip::from_raw(raw).map(Swip::target) else {
            return Ok(Step::Retry);
        };
        if !self.validate() {
            return Ok(Step::Retry);
        }
        Ok(if self.pool.load_unlatched(pid, || self.validate())? { Step::Ready(()) } else { Step::Retry })
    }

    /// B33: tells the policy of a hit on this page, read through this view and validated, with
    /// no latch held; only where [`BufferPool::optimistic_leaf_reads`] allows it (the policy
    /// takes such hits, replacement R11). The frame may hold another page by now: the hit then
    /// counts for that page, which R11 makes harmless. Roots are not told (as `fix_root`).
    #[inline]
    pub fn record_hit(&self) {
        let pool = self.pool;
        debug_assert!(pool.optimistic_leaves, "B33: a latch-free hit the policy did not agree to");
        let d = pool.desc(self.frame);
        if pool.mode != super::PoolMode::MainMemory && !d.root.load(Relaxed) {
            match pool.hook_hit {
                Some(hit) => hit.apply(&d.hook),
                None => pool.policy.on_hit(self.frame, &d.hook),
            }
        }
    }

    /// Latches this page shared if it has not changed since the view began, so a descent can go
    /// on with lock coupling from here (B24). `None`: it changed; start again. The caller holds
    /// no latch.
    #[must_use]
    pub fn lock_shared(self) -> Option<SharedGuard<'p>> {
        let d = self.pool.desc(self.frame);
        d.latch.lock_shared();
        if d.latch.read_validate(self.version) {
            Some(PageGuard::<Shared>::adopt(self.pool, self.frame))
        } else {
            d.latch.unlock_shared();
            None
        }
    }
}
