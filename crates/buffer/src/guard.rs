//! Fix guards: a fixed page is a latched frame; dropping the guard unfixes it (rules B1, B2).

use crate::pool::BufferPool;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::{Relaxed, Release};
use swizzledb_sync::{FrameId, LatchMode, Lsn, PageId};

/// Marker for the latch mode a guard holds.
pub trait LatchKind: sealed::Sealed + 'static {
    /// The mode as a value.
    const MODE: LatchMode;
}

/// Shared latch: the page can be read by many threads.
#[derive(Debug)]
pub enum Shared {}
/// Exclusive latch: the page can be changed by its one holder.
#[derive(Debug)]
pub enum Exclusive {}

impl LatchKind for Shared {
    const MODE: LatchMode = LatchMode::Shared;
}
impl LatchKind for Exclusive {
    const MODE: LatchMode = LatchMode::Exclusive;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Shared {}
    impl Sealed for super::Exclusive {}
}

/// A fixed page: the frame is latched in mode `M` for the guard's lifetime.
///
/// Dereferences to the page bytes; an exclusive guard also dereferences mutably, which marks the
/// page dirty (B9).
pub struct PageGuard<'p, M: LatchKind> {
    pub(crate) pool: &'p BufferPool,
    pub(crate) frame: FrameId,
    _mode: PhantomData<(M, *const ())>,
}

/// A page fixed with a shared latch.
pub type SharedGuard<'p> = PageGuard<'p, Shared>;
/// A page fixed with an exclusive latch.
pub type ExclusiveGuard<'p> = PageGuard<'p, Exclusive>;

impl<'p, M: LatchKind> PageGuard<'p, M> {
    /// Wraps a frame whose latch the caller holds in mode `M`.
    pub(crate) fn adopt(pool: &'p BufferPool, frame: FrameId) -> Self {
        PageGuard { pool, frame, _mode: PhantomData }
    }

    /// Gives up the guard without releasing the latch (the caller takes over the hold).
    pub(crate) fn into_frame(self) -> FrameId {
        let f = self.frame;
        std::mem::forget(self);
        f
    }

    /// The frame holding the page.
    #[inline]
    #[must_use]
    pub fn frame(&self) -> FrameId {
        self.frame
    }

    /// The page's id.
    #[inline]
    #[must_use]
    pub fn page_id(&self) -> PageId {
        self.pool.frame_page_id(self.frame)
    }

    /// The page LSN in the page's header: the LSN of the last logged change applied to it
    /// (`Lsn(0)` if none).
    #[inline]
    #[must_use]
    pub fn page_lsn(&self) -> Lsn {
        crate::page::page_lsn(self)
    }

    /// The pool the page belongs to.
    #[inline]
    #[must_use]
    pub fn pool(&self) -> &'p BufferPool {
        self.pool
    }

    /// The frame's latch version (B35): it moves with every exclusive section of the frame and
    /// stands still while this guard holds a shared latch. A later guard on the same frame
    /// with the same version holds the page as it is now, logged or not.
    #[inline]
    #[must_use]
    pub fn latch_version(&self) -> u64 {
        self.pool.desc(self.frame).latch.version()
    }
}

impl<'p> PageGuard<'p, Exclusive> {
    /// Trades the exclusive latch for a shared one without letting a writer in between.
    #[must_use]
    pub fn downgrade(self) -> PageGuard<'p, Shared> {
        let pool = self.pool;
        let f = self.into_frame();
        pool.desc(f).latch.downgrade();
        PageGuard::adopt(pool, f)
    }

    /// Records that a change just applied to the page was logged at `lsn` (B19): writes `lsn`
    /// into the header as the page LSN, marks the page dirty, and, if the frame has no recovery
    /// LSN yet, makes `lsn` its recovery LSN — the oldest change not yet in the file. Callers
    /// pass increasing LSNs for a page and call this under the same exclusive latch under which
    /// the change was logged and applied.
    pub fn set_page_lsn(&mut self, lsn: Lsn) {
        crate::page::set_page_lsn(self, lsn);
        let d = self.pool.desc(self.frame);
        // Only this latch holder writes rec_lsn now (B19); `dirty_pages` reads it racily.
        if d.rec_lsn.load(Relaxed) == 0 {
            d.rec_lsn.store(lsn.0, Release);
        }
    }

    /// The frame's recovery LSN (B19): `Lsn(0)` while no logged change waits to be written.
    #[must_use]
    pub fn rec_lsn(&self) -> Lsn {
        Lsn(self.pool.desc(self.frame).rec_lsn.load(Relaxed))
    }

    /// Called before a change to this page is logged, with a lower bound of the LSN the record
    /// will get (B21): if the frame has no recovery LSN, `at_most` becomes it, and the page is
    /// marked dirty. A checkpoint that begins after the record then lists the page, even if
    /// [`set_page_lsn`](Self::set_page_lsn) has not run yet.
    pub fn hold_rec_lsn(&self, at_most: Lsn) {
        let d = self.pool.desc(self.frame);
        if d.rec_lsn.load(Relaxed) == 0 {
            d.rec_lsn.store(at_most.0.max(1), Release);
        }
        d.mark_dirty();
    }

    /// Converts to a guard of mode `M` (downgrading if `M` is shared).
    pub(crate) fn into_mode<M: LatchKind>(self) -> PageGuard<'p, M> {
        let pool = self.pool;
        let f = self.into_frame();
        if M::MODE == LatchMode::Shared {
            pool.desc(f).latch.downgrade();
        }
        PageGuard::adopt(pool, f)
    }
}

impl<M: LatchKind> Deref for PageGuard<'_, M> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: B1 — the guard holds the frame's latch, so no exclusive holder writes the page
        // while this borrow lives; B2 — the frame cannot be evicted or reused while latched.
        unsafe { self.pool.page(self.frame) }
    }
}

impl DerefMut for PageGuard<'_, Exclusive> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.pool.desc(self.frame).mark_dirty();
        // SAFETY: B1 — the guard holds the frame's latch exclusively and `&mut self` makes this
        // the only borrow of the page through the guard.
        unsafe { self.pool.page_mut(self.frame) }
    }
}

impl<M: LatchKind> Drop for PageGuard<'_, M> {
    #[inline]
    fn drop(&mut self) {
        self.pool.unfix(self.frame, M::MODE);
    }
}

impl<M: LatchKind> std::fmt::Debug for PageGuard<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageGuard({:?} in {}, {:?})", self.page_id(), self.frame, M::MODE)
    }
}
