//! Fix paths (B3, B6, B10): following a swip or a page id to a latched frame, reading the page
//! on a miss, and swizzling the parent's swip on the way.

use super::{BufferPool, FrameDesc, PoolMode, FREE, LOADING, RESIDENT};
use crate::error::{BufferError, Result};
use crate::guard::{Exclusive, LatchKind, PageGuard};
use crate::page::{self, get_u64, put_u64, PageType};
use crate::stats::{add, bump};
use crate::swip::{Swip, SwipTarget};
use crate::trace::EventKind;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use swizzledb_sync::{FrameId, LatchMode, PageId};

thread_local! {
    /// B32: the pool (its counters' registry id, never reused) and the page this thread last
    /// read with no latch held, until its descent fixes it (page 0: none).
    static LOADED: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Whether `pid` of the pool `pool` is the page this thread read with no latch held and has
/// not fixed since (B32); forgets it once it matches. A page of the same number in another
/// pool is not it.
#[inline]
fn take_loaded(pool: u64, pid: PageId) -> bool {
    LOADED.with(|l| {
        let mine = l.get() == (pool, pid.get());
        if mine {
            l.set((0, 0));
        }
        mine
    })
}

/// What [`BufferPool::load_new`] did.
enum Load {
    /// Read and resident, latched exclusively by the caller.
    Loaded(FrameId),
    /// Another thread entered the page in the page table first.
    Raced,
    /// The caller's check failed after the entry was made: nothing was read.
    Refused,
}

/// B3, B10: latches a frame the page table named for `pid`, waiting only while the frame still
/// holds `pid` (read racily). The caller may hold the parent's latch: if the frame was evicted
/// and reused for another page — an ancestor held exclusively by a thread that now waits for
/// that parent — a blocking wait would never end. Returns false when the frame no longer holds
/// the page (look it up again).
#[inline]
fn latch_while_holding(d: &FrameDesc, pid: PageId, mode: LatchMode) -> bool {
    d.latch.try_lock(mode) || latch_while_holding_slow(d, pid, mode)
}

/// The waiting part of [`latch_while_holding`], out of the hit path.
#[cold]
#[inline(never)]
fn latch_while_holding_slow(d: &FrameDesc, pid: PageId, mode: LatchMode) -> bool {
    let mut tries = 0u32;
    loop {
        if d.latch.try_lock(mode) {
            return true;
        }
        if d.page_id.load(Relaxed) != pid.get() || d.state.load(Acquire) == FREE {
            return false;
        }
        tries += 1;
        if tries < 64 {
            std::hint::spin_loop();
        } else if tries < 128 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

impl BufferPool {
    /// Fixes the child referenced by the swip at byte `swip_off` of the parent's page, latching
    /// the child before the caller releases the parent (lock coupling, B10). In swizzling modes an
    /// unswizzled swip is swizzled if the parent's latch can be held exclusively without waiting
    /// (B6).
    ///
    /// # Errors
    /// I/O errors, corruption, or no free frame.
    #[inline]
    pub fn fix_child<'p, P: LatchKind, M: LatchKind>(
        &'p self,
        parent: &mut PageGuard<'_, P>,
        swip_off: usize,
    ) -> Result<PageGuard<'p, M>> {
        assert!(std::ptr::eq(parent.pool, self), "B1: the parent guard belongs to another pool");
        let timer = self.fix_timer();
        let raw = get_u64(parent, swip_off);
        let Some(swip) = Swip::from_raw(raw) else {
            return Err(self.corrupted(parent.page_id(), format!("invalid swip {raw:#x} at {swip_off}")));
        };
        match swip.target() {
            SwipTarget::Frame(f) => {
                self.prefetch_frame(f);
                self.desc(f).latch.lock(M::MODE);
                self.hit(f, Some(parent.frame), M::MODE);
                self.fix_timed(timer, true, M::MODE);
                Ok(PageGuard::adopt(self, f))
            }
            SwipTarget::Page(pid) => {
                let (child, hit) = self.fix_untimed::<M>(pid, Some(parent.frame))?;
                if self.mode.swizzles() {
                    self.try_swizzle(parent, swip_off, &child);
                }
                self.fix_timed(timer, hit, M::MODE);
                Ok(child)
            }
        }
    }

    /// Starts the cache misses of a frame's page's first line (header and first slots), read
    /// right after the latch is taken, beside the descriptor's (F12).
    #[inline]
    pub(crate) fn prefetch_frame(&self, f: FrameId) {
        crate::page::prefetch_addr(self.frame_addr(f));
    }

    /// A hit on frame `f` just latched in `mode` through a swizzled swip of `parent` (B6):
    /// counted, told to the policy, traced.
    #[inline]
    pub(crate) fn hit(&self, f: FrameId, parent: Option<FrameId>, mode: LatchMode) {
        self.count(|b| {
            bump(&b.fixes);
            bump(&b.hits);
        });
        if self.mode != PoolMode::MainMemory {
            match self.hook_hit {
                // Replacement R12: the hit is one conditional store, made here.
                Some(hit) => hit.apply(&self.desc(f).hook),
                None => self.policy.on_page_hit(f, self.frame_page_id(f), &self.desc(f).hook),
            }
        }
        self.trace(EventKind::Fix, f, parent, Some(mode), Some(true));
    }

    /// B6: swizzles the parent's swip at `off` to `child`'s frame, if the parent can be held
    /// exclusively without waiting.
    fn try_swizzle<P: LatchKind, M: LatchKind>(
        &self,
        parent: &mut PageGuard<'_, P>,
        off: usize,
        child: &PageGuard<'_, M>,
    ) {
        let cd = self.desc(child.frame);
        if cd.root.load(Relaxed) {
            return;
        }
        // B6 on a damaged file: a child that already has a swizzled holder (a page named by two
        // swips) or that holds the parent (a reference back up the tree) stays a page id, so a
        // second swizzled swip or a cycle of them (which eviction and the sweep would follow)
        // never exists. The owner reports the damage; the pool only stays sound.
        if cd.parent().is_some() || self.holds(child.frame, parent.frame) {
            return;
        }
        let pd = self.desc(parent.frame);
        let upgraded = match P::MODE {
            LatchMode::Exclusive => false,
            LatchMode::Shared => {
                if !pd.latch.try_upgrade() {
                    return;
                }
                true
            }
        };
        // SAFETY: B1 — the parent (a frame of this pool, asserted in fix_child) is now latched
        // exclusively by this thread, and `&mut parent` guarantees no slice borrowed from the
        // guard is alive.
        let page = unsafe { self.page_mut(parent.frame) };
        debug_assert_eq!(
            get_u64(page, off),
            Swip::page(child.page_id()).raw(),
            "B6: swip changed under latch"
        );
        cd.set_parent(Some(parent.frame));
        put_u64(page, off, Swip::frame(child.frame).raw());
        self.gained_child(parent.frame);
        if upgraded {
            pd.latch.downgrade();
        }
        self.count(|b| bump(&b.swizzles));
    }

    /// Whether `frame` is `of` or one of its swizzled ancestors (parent frames, B6). A chain
    /// longer than any tree (B6 makes the parent links a forest) counts as holding.
    fn holds(&self, frame: FrameId, of: FrameId) -> bool {
        let mut at = Some(of);
        for _ in 0..64 {
            match at {
                None => return false,
                Some(f) if f == frame => return true,
                Some(f) => at = self.desc(f).parent(),
            }
        }
        true
    }

    /// Fixes a page by id through the page table, reading it on a miss (B3).
    ///
    /// # Errors
    /// I/O errors, corruption, or no free frame.
    pub fn fix_page<M: LatchKind>(&self, pid: PageId) -> Result<PageGuard<'_, M>> {
        self.fix_page_from(pid, None)
    }

    /// Fixes a page by id only if it is resident, never reading it (B3a): `None` if the page
    /// table has no entry for it — evicted, or freed. For a caller that may hold the id of a
    /// page freed since it looked (a scan checking that the leaves it passed did not change):
    /// [`BufferPool::fix_page`] would read a freed page's stale image back into the page table,
    /// where the page's next allocation would not replace it. A fix that finds the page is
    /// the same hit as `fix_page`'s (counted, and told to the policy).
    #[must_use]
    pub fn fix_resident<M: LatchKind>(&self, pid: PageId) -> Option<PageGuard<'_, M>> {
        self.fix_hit(pid, None)
    }

    /// `fix_page`, naming the latched parent frame the page id came from (for the trace, B17).
    fn fix_page_from<M: LatchKind>(&self, pid: PageId, parent: Option<FrameId>) -> Result<PageGuard<'_, M>> {
        let timer = self.fix_timer();
        let (guard, hit) = self.fix_untimed(pid, parent)?;
        self.fix_timed(timer, hit, M::MODE);
        Ok(guard)
    }

    /// The start of a timed fix, if fixes are timed (B12a).
    #[inline]
    fn fix_timer(&self) -> Option<std::time::Instant> {
        self.time_fixes.then(std::time::Instant::now)
    }

    /// B12a: adds a fix that began at `timer` to the counters of its kind.
    #[inline]
    fn fix_timed(&self, timer: Option<std::time::Instant>, hit: bool, mode: LatchMode) {
        let Some(start) = timer else { return };
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count(|b| {
            let (n, t) = match (hit, mode) {
                (true, LatchMode::Shared) => (&b.timed_hits_shared, &b.hit_shared_nanos),
                (true, LatchMode::Exclusive) => (&b.timed_hits_exclusive, &b.hit_exclusive_nanos),
                (false, LatchMode::Shared) => (&b.timed_misses_shared, &b.miss_shared_nanos),
                (false, LatchMode::Exclusive) => (&b.timed_misses_exclusive, &b.miss_exclusive_nanos),
            };
            bump(n);
            add(t, ns);
        });
    }

    /// The fix proper: the guard, and whether the page was resident (a hit).
    fn fix_untimed<M: LatchKind>(
        &self,
        pid: PageId,
        parent: Option<FrameId>,
    ) -> Result<(PageGuard<'_, M>, bool)> {
        loop {
            if let Some(g) = self.fix_hit(pid, parent) {
                return Ok((g, true));
            }
            let f = match self.load_new(pid, || true)? {
                Load::Loaded(f) => f,
                // Another thread is loading the same page; use its frame. (The check above
                // never refuses.)
                Load::Raced | Load::Refused => continue,
            };
            self.count(|b| bump(&b.fixes));
            self.trace(EventKind::Fix, f, parent, Some(M::MODE), Some(false));
            return Ok((PageGuard::<Exclusive>::adopt(self, f).into_mode::<M>(), false));
        }
    }

    /// The hit (B3): the page's frame from the page table, latched and checked to still hold
    /// the page (a frame found there may have been reused before the latch; then the table is
    /// asked again), counted and told to the policy; `None` once the table has no entry.
    #[inline]
    fn fix_hit<M: LatchKind>(&self, pid: PageId, parent: Option<FrameId>) -> Option<PageGuard<'_, M>> {
        loop {
            self.count(|b| bump(&b.page_table_lookups));
            let f = self.table.get(pid)?;
            #[cfg(test)]
            super::race_tests::found_in_table(pid, f);
            let d = self.desc(f);
            if !latch_while_holding(d, pid, M::MODE) {
                continue;
            }
            if d.state.load(Acquire) == RESIDENT && d.page_id.load(Relaxed) == pid.get() {
                // B32: the latched step after this thread's unlatched load of the page is the
                // rest of that fix, counted and told to the policy (its insert) then.
                if !(self.optimistic && take_loaded(self.stats.id(), pid)) {
                    self.count(|b| {
                        bump(&b.fixes);
                        bump(&b.hits);
                    });
                    if self.mode != PoolMode::MainMemory {
                        match self.hook_hit {
                            Some(hit) => hit.apply(&d.hook),
                            None => self.policy.on_page_hit(f, pid, &d.hook),
                        }
                    }
                }
                self.trace(EventKind::Fix, f, parent, Some(M::MODE), Some(true));
                return Some(PageGuard::adopt(self, f));
            }
            d.latch.unlock(M::MODE);
            std::thread::yield_now();
        }
    }

    /// The miss (B3): takes a free frame (B13), latches it exclusively, marks it LOADING and
    /// enters it in the page table; then, if `still_wanted` holds, reads the page (F3, B8, B25)
    /// and returns the frame RESIDENT, still latched exclusively, counted as a miss and told to
    /// the policy. `Raced`: another thread entered the page first (use its frame). `Refused`:
    /// `still_wanted` failed, and the entry is gone again. Either way the frame went back to
    /// the free list.
    ///
    /// # Errors
    /// No free frame (B13), or the read (the frame went back to the free list).
    fn load_new(&self, pid: PageId, still_wanted: impl FnOnce() -> bool) -> Result<Load> {
        let f = self.grab_free_frame()?;
        let d = self.desc(f);
        d.latch.lock_exclusive();
        d.page_id.store(pid.get(), Relaxed);
        d.state.store(LOADING, Release);
        let undo = |entered: bool| {
            if entered {
                self.table.remove(pid, f);
            }
            d.state.store(FREE, Release);
            d.latch.unlock_exclusive();
            self.push_free(f);
        };
        if self.table.insert_if_absent(pid, f).is_err() {
            undo(false);
            return Ok(Load::Raced);
        }
        if !still_wanted() {
            undo(true);
            return Ok(Load::Refused);
        }
        if self.mode != PoolMode::MainMemory {
            // The insert follows the read: the policy's words for it can load meanwhile.
            self.policy.prefetch_accesses(&[f], &[pid]);
        }
        // SAFETY: B1 — we hold the exclusive latch of a frame nobody else can have reached
        // in a usable state (it is LOADING).
        let page = unsafe { self.page_mut(f) };
        let reading = std::time::Instant::now();
        let loaded = self.load_page(pid, page);
        let read_nanos = u64::try_from(reading.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if let Err(e) = loaded {
            undo(true);
            return Err(e);
        }
        self.enter_resident(f, pid, false);
        self.count(|b| {
            bump(&b.misses);
            bump(&b.pages_read);
            add(&b.read_nanos, read_nanos);
        });
        self.trace(EventKind::Read, f, None, None, None);
        Ok(Load::Loaded(f))
    }

    /// Makes frame `f`, latched exclusively by the caller and holding `pid`'s bytes, RESIDENT
    /// (B4): dirty as given, no recovery LSN, no parent; the policy hears of the insert (R1).
    pub(super) fn enter_resident(&self, f: FrameId, pid: PageId, dirty: bool) {
        let d = self.desc(f);
        d.dirty.store(dirty, Relaxed);
        d.rec_lsn.store(0, Relaxed);
        d.set_parent(None);
        d.state.store(RESIDENT, Release);
        if self.mode != PoolMode::MainMemory {
            self.policy.on_insert(f, pid, &d.hook);
        }
    }

    /// B32: brings page `pid` into the pool with no latch held by the caller, for a descent that
    /// read `pid` in a swip of a page it did not latch (an optimistic view) and that will start
    /// again once the page is resident. `still_referenced` validates that view; it is called
    /// after the page's entry is in the page table and before the read: if it fails, the
    /// entry is removed and nothing is read (`Retry`). A page already resident, or being loaded
    /// by another thread (waited for, holding nothing), is `Ready` too.
    ///
    /// # Errors
    /// As a miss of [`BufferPool::fix_page`].
    pub(super) fn load_unlatched(
        &self,
        pid: PageId,
        still_referenced: impl FnOnce() -> bool,
    ) -> Result<bool> {
        if let Some(f) = self.table.get(pid) {
            // Resident or being loaded: wait for it here, where this thread holds no latch
            // (B10), rather than later under the parent's.
            let d = self.desc(f);
            if latch_while_holding(d, pid, LatchMode::Shared) {
                d.latch.unlock_shared();
            }
            return Ok(true);
        }
        match self.load_new(pid, still_referenced)? {
            Load::Loaded(f) => {
                self.count(|b| {
                    bump(&b.fixes);
                    bump(&b.unlatched_loads);
                });
                LOADED.with(|l| l.set((self.stats.id(), pid.get())));
                self.desc(f).latch.unlock_exclusive();
                Ok(true)
            }
            Load::Raced => Ok(true),
            Load::Refused => Ok(false),
        }
    }

    /// Reads page `pid` into `page` (F3, B8), and repairs it through the log if its copy is
    /// damaged or stale (B25): the rebuilt page is checked like a read one and written back at
    /// once, so the file holds a good copy again.
    fn load_page(&self, pid: PageId, page: &mut [u8]) -> Result<()> {
        let read = |page: &mut [u8]| {
            self.file.read_page(pid, page).and_then(|()| self.check_loaded(pid, page))?;
            self.check_not_stale(pid, page)
        };
        let Some(log) = &self.log else { return read(page) };
        let verdict = |page: &mut [u8]| match read(page) {
            Ok(()) => Ok(None),
            Err(BufferError::Corrupted { reason, .. }) => Ok(Some(reason)),
            Err(e) => Err(e),
        };
        // B26: the read takes no file lock, so a write from outside the pool (a `FilePage`
        // holder's) may have overlapped it, leaving in `page` a torn or stale copy that the
        // file no longer holds. Damage is believed only once a read under the page's file
        // lock, which no such write overlaps, finds it too.
        let damaged = if verdict(page)?.is_some() {
            let _lock = self.write_lock(pid);
            verdict(page)?
        } else {
            None
        };
        let Some(damage) = damaged else {
            log.page_loaded(pid, page::page_lsn(page));
            return Ok(());
        };
        log.repair_page(pid, page, &damage)
            .map_err(|why| self.corrupted(pid, format!("{damage}; single-page recovery failed: {why}")))?;
        self.check_loaded(pid, page).and_then(|()| self.check_not_stale(pid, page)).map_err(|e| {
            self.corrupted(pid, format!("{damage}; the page single-page recovery built fails: {e}"))
        })?;
        let lsn = page::page_lsn(page);
        self.wal_before_write(pid, lsn)?;
        self.write_file_page(pid, page)?;
        log.page_written(pid, lsn);
        log.page_loaded(pid, lsn);
        self.count(|b| {
            bump(&b.pages_repaired);
            bump(&b.pages_written);
        });
        Ok(())
    }

    /// B25: a copy read from the file must carry at least the page LSN of the page's last
    /// write the log knows of; below it, it is stale (a lost write), `Corrupted`.
    pub(super) fn check_not_stale(&self, pid: PageId, page: &[u8]) -> Result<()> {
        let lsn = page::page_lsn(page);
        match self.log.as_ref().and_then(|l| l.expected_page_lsn(pid)) {
            Some(want) if lsn < want => Err(self.corrupted(
                pid,
                format!("stale: its page LSN {lsn} is below {want}, the page LSN of its last write (a lost write)"),
            )),
            _ => Ok(()),
        }
    }

    /// B8: pages in the file never hold swizzled swips, and their structure must be sound.
    fn check_loaded(&self, pid: PageId, page: &[u8]) -> Result<()> {
        if page::page_type(page) == Some(PageType::Free) || page::page_type(page) == Some(PageType::Meta) {
            return Err(self.corrupted(pid, "expected a B-tree node, found a free or metadata page"));
        }
        self.owner.check_page(page).map_err(|r| self.corrupted(pid, r))?;
        let mut offs = Vec::new();
        self.owner.swip_offsets(page, &mut offs);
        if offs.is_empty() {
            return Ok(());
        }
        let page_count = self.meta.lock().page_count;
        for off in offs {
            let raw = get_u64(page, off);
            if Swip::from_raw(raw).is_none_or(Swip::is_swizzled) || raw == 0 {
                return Err(
                    self.corrupted(pid, format!("child reference {raw:#x} at {off} is not a page id"))
                );
            }
            if raw >= page_count || raw == pid.get() {
                return Err(self.corrupted(
                    pid,
                    format!("child reference to page {raw} at {off}: not another page of the {page_count} in the file"),
                ));
            }
        }
        Ok(())
    }
}
