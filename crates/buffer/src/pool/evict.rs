//! Free frames and eviction (B13, B14): the free list, eviction batches through the policy
//! (replacement R10), and Graefe's depth-first sweep.

use super::propagate::stripe as propagate_stripe;
use super::{BufferPool, FrameDesc, PoolMode, FREE, RESIDENT};
use crate::error::{BufferError, Result};
use crate::page::{self, get_u64, put_u64};
use crate::stats::{add, bump};
use crate::swip::{Swip, SwipTarget};
use crate::trace::EventKind;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::time::Instant;
use swizzledb_replacement::{Evictor, FrameHook, HookTable, Rejection, Verdict};
use swizzledb_sync::{FrameId, Lsn, PageId};

/// At most this many sweeps per eviction batch (R9: enough for GCLOCK's default k = 10 to age a
/// leaf hit just before the batch down to 0).
const SWEEP_PASSES: usize = 12;

/// The policy's view of the hooks in the descriptors.
struct DescHooks<'a>(&'a [FrameDesc]);

impl HookTable for DescHooks<'_> {
    #[inline]
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self.0[frame.index()].hook
    }
}

impl BufferPool {
    fn pop_free(&self) -> Option<FrameId> {
        let f = self.free.pop();
        if f.is_some() {
            self.free_count.fetch_sub(1, Relaxed);
        }
        f
    }

    /// Counted before the push: a frame popped by another thread between a push and its count
    /// would take the count below zero, and it wraps (a debug build's `free_count + n` then
    /// panicked in CI). Counted first, the count is never below the frames the lists hold.
    pub(super) fn push_free(&self, f: FrameId) {
        self.free_count.fetch_add(1, Relaxed);
        self.free.push(f);
    }

    /// Takes a free frame, evicting a batch first when free frames fall below the low watermark.
    /// Dirty victims of the batch are written after the eviction lock is released (B29), so
    /// other misses go on taking free frames meanwhile; the next batch finds them clean.
    pub(super) fn grab_free_frame(&self) -> Result<FrameId> {
        if self.mode == PoolMode::MainMemory {
            return self.pop_free().ok_or(BufferError::MemoryLimit {
                limit_bytes: self.memory.len(),
                frames: self.frames.len(),
            });
        }
        loop {
            let free = self.free_count.load(Relaxed);
            if free < self.high_watermark {
                // B31: the background evictor, if one runs, refills the free frames before
                // misses have to.
                self.evictor.nudge();
            }
            if free < self.low_watermark {
                if let Some(g) = self.evict_lock.try_lock() {
                    let batch = self.evict_batch(true, self.high_watermark);
                    drop(g);
                    match batch {
                        Ok(deferred) => {
                            self.write_victims(deferred)?;
                        }
                        Err(BufferError::PoolExhausted { .. }) if self.free_count.load(Relaxed) > 0 => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            if let Some(f) = self.pop_free() {
                return Ok(f);
            }
            let waiting = Instant::now();
            let g = self.evict_lock.lock();
            let waited = u64::try_from(waiting.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.count(|b| {
                bump(&b.free_frame_waits);
                add(&b.free_frame_wait_nanos, waited);
            });
            if let Some(f) = self.pop_free() {
                return Ok(f);
            }
            let deferred = self.evict_batch(true, self.high_watermark)?;
            drop(g);
            let (written, _) = self.write_victims(deferred)?;
            if written == 0 && self.free_count.load(Relaxed) == 0 {
                // B29: none of the batch's dirty victims could be written (latched, possibly by
                // this thread, or the log refused them) and nothing is free: a batch that writes
                // its victims itself, as eviction did before deferral, goes past them to any
                // other victim, or reports why there is none (B13).
                let _g = self.evict_lock.lock();
                if let Some(f) = self.pop_free() {
                    return Ok(f);
                }
                self.evict_batch(false, self.high_watermark)?;
            }
        }
    }

    /// Writes the dirty victims an eviction batch left (B29), each under its shared latch taken
    /// without waiting (the caller may hold latches, B10; a victim latched by anyone, cleaned
    /// meanwhile or evicted is skipped), after the WAL flush to the batch's highest page LSN
    /// (B18), as one batch of file writes in page order (F14), claiming each page by its dirty
    /// flag as `flush` does (B19) and reporting each write (B20). Returns the pages written and
    /// the log's failure, if it refused the flush (the victims then stay dirty).
    ///
    /// # Errors
    /// I/O errors writing the batch (sticky, F4): its victims stay dirty.
    pub(super) fn write_victims(&self, mut frames: Vec<FrameId>) -> Result<(usize, Option<BufferError>)> {
        if frames.is_empty() {
            return Ok((0, None));
        }
        let started = Instant::now();
        frames.sort_unstable_by_key(|&f| (self.desc(f).page_id.load(Relaxed), f));
        frames.dedup();
        let mut copies = crate::aligned::AlignedBuf::new(frames.len() * self.page_size, 4096)?;
        let result = self.write_victims_latched(&frames, &mut copies, &mut Vec::new());
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count(|b| {
            if let Ok((written, _)) = &result {
                add(&b.victim_writes, *written as u64);
            }
            add(&b.victim_write_nanos, nanos);
        });
        result
    }

    /// The batch write of `write_victims` (and of the page cleaner's `write_back_older`, B23):
    /// frames whose latch is taken are skipped and pushed to `busy`. `copies` holds the pages'
    /// disk forms: at least `frames.len()` pages, aligned for direct I/O, reused across calls
    /// by a caller that writes many batches (a fresh buffer is a page fault per 4 KiB).
    pub(super) fn write_victims_latched(
        &self,
        frames: &[FrameId],
        copies: &mut crate::aligned::AlignedBuf,
        busy: &mut Vec<FrameId>,
    ) -> Result<(usize, Option<BufferError>)> {
        debug_assert!(copies.as_mut_slice().len() >= frames.len() * self.page_size);
        // Latch what can be latched and copy it, with page ids for swizzled swips (B8).
        let mut batch: Vec<(FrameId, PageId, Lsn)> = Vec::with_capacity(frames.len());
        let mut offs = Vec::new();
        for &f in frames {
            let d = self.desc(f);
            if !d.latch.try_lock_shared() {
                busy.push(f);
                continue;
            }
            if d.state.load(Acquire) != RESIDENT || !d.dirty.load(Relaxed) {
                d.latch.unlock_shared();
                continue;
            }
            // B36: a source whose dependants cannot be resolved without waiting is left to a
            // writer that may wait (the cleaner's busy pass, `flush`).
            if !matches!(self.resolve_dependants(self.frame_page_id(f), false, &[]), Ok(true)) {
                d.latch.unlock_shared();
                busy.push(f);
                continue;
            }
            let n = batch.len();
            let out = &mut copies.as_mut_slice()[n * self.page_size..(n + 1) * self.page_size];
            // SAFETY: B1 — f is latched shared by this thread until the end of this function.
            out.copy_from_slice(unsafe { self.page(f) });
            self.disk_form(out, &mut offs);
            batch.push((f, self.frame_page_id(f), page::page_lsn(out)));
        }
        let unlatch = |batch: &[(FrameId, PageId, Lsn)]| {
            for &(f, _, _) in batch {
                self.desc(f).latch.unlock_shared();
            }
        };
        // B18: one flush of the log covers every page of the batch.
        let top = batch.iter().map(|&(_, pid, lsn)| (lsn, pid)).max();
        if let Some((lsn, pid)) = top {
            if let Err(e) = self.wal_before_write(pid, lsn) {
                self.count(|b| add(&b.rejected_wal, batch.len() as u64));
                unlatch(&batch);
                return Ok((0, Some(e)));
            }
        }
        // B19: of two writers holding shared latches only the one that clears `dirty` writes.
        let claimed: Vec<bool> =
            batch.iter().map(|&(f, _, _)| self.desc(f).dirty.swap(false, Relaxed)).collect();
        let mine = || batch.iter().zip(&claimed).filter(|(_, &c)| c).map(|(b, _)| *b);
        let written = {
            // B26: the stripes of every page written, in stripe order (no one waits for a
            // second stripe, so this order closes no cycle).
            let mut stripes: Vec<usize> = mine().map(|(_, pid, _)| propagate_stripe(pid)).collect();
            stripes.sort_unstable();
            stripes.dedup();
            let _locks: Vec<_> = stripes.iter().map(|&s| self.write_locks[s].lock()).collect();
            debug_assert!(
                mine().all(|(_, pid, _)| !self.has_dependants(pid)),
                "B36: a page written before its dependants were resolved"
            );
            let mut pages: Vec<(PageId, &mut [u8])> = copies
                .as_mut_slice()
                .chunks_mut(self.page_size)
                .zip(batch.iter().zip(&claimed))
                .filter(|(_, (_, &c))| c)
                .map(|(page, (&(_, pid, _), _))| (pid, page))
                .collect();
            self.file.write_pages(&mut pages)
        };
        let result = match written {
            Ok(()) => {
                let mut n = 0;
                for (f, pid, lsn) in mine() {
                    self.written(self.desc(f), pid, lsn);
                    n += 1;
                }
                self.count(|b| {
                    add(&b.write_backs, n as u64);
                    add(&b.pages_written, n as u64);
                });
                Ok((n, None))
            }
            Err(e) => {
                for (f, _, _) in mine() {
                    self.desc(f).dirty.store(true, Relaxed);
                }
                Err(e)
            }
        };
        unlatch(&batch);
        result
    }

    /// Frees frames for a caller that holds no latch (B13): operations that failed with
    /// [`BufferError::PoolExhausted`] while holding latches call this and retry, because a latch
    /// held on a parent keeps all its swizzled children from being evicted.
    ///
    /// # Errors
    /// `PoolExhausted` if nothing could be freed even so; I/O errors writing victims.
    pub fn make_room(&self) -> Result<()> {
        if self.mode == PoolMode::MainMemory {
            return Err(BufferError::MemoryLimit {
                limit_bytes: self.memory.len(),
                frames: self.frames.len(),
            });
        }
        // B29: a batch that leaves its dirty victims, then one that writes any it still meets
        // (so that nothing is left unfreed that eviction before deferral would have freed).
        for defer in [true, false] {
            let g = self.evict_lock.lock();
            if self.free_count.load(Relaxed) >= self.low_watermark {
                return Ok(());
            }
            let deferred = self.evict_batch(defer, self.high_watermark)?;
            drop(g);
            if deferred.is_empty() {
                return Ok(());
            }
            self.write_victims(deferred)?;
        }
        Ok(())
    }

    /// Runs the depth-first sweep (B14) on its own until `frames` more frames are free (or the
    /// cached trees offer no more leaves); returns how many frames it freed. The pool falls
    /// back to the sweep by itself when the policy finds too few victims; this entry point lets
    /// experiments and tests drive it directly. Swizzling mode only (elsewhere it frees nothing).
    ///
    /// # Errors
    /// I/O errors writing dirty victims; [`BufferError::Wal`] if nothing was freed and the log
    /// could not be flushed for a victim (B18).
    pub fn sweep_evict(&self, frames: usize) -> Result<usize> {
        if self.mode != PoolMode::Swizzling {
            return Ok(0);
        }
        let _g = self.evict_lock.lock();
        let target = self.free_count.load(Relaxed) + frames;
        let mut freed = 0;
        let mut wal_error = None;
        while self.free_count.load(Relaxed) < target {
            let n = self.sweep_passes(target, &mut wal_error, None)?;
            if n == 0 {
                break;
            }
            freed += n;
        }
        match wal_error {
            Some(e) if freed == 0 => Err(e),
            _ => Ok(freed),
        }
    }

    /// Evicts until `target` frames are free (B13: the high watermark; the background evictor's
    /// own target, B31), timing the batch. Called with the eviction lock held. Returns the dirty
    /// victims it left for the caller to write once it has released the lock (B29).
    pub(super) fn evict_batch(&self, defer: bool, target: usize) -> Result<Vec<FrameId>> {
        let started = Instant::now();
        let mut deferred = Vec::new();
        let result = self.evict_batch_untimed(&mut deferred, defer, target);
        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.count(|b| {
            bump(&b.eviction_rounds);
            add(&b.eviction_nanos, nanos);
            add(&b.deferred_writes, deferred.len() as u64);
        });
        result.map(|()| deferred)
    }

    fn evict_batch_untimed(&self, deferred: &mut Vec<FrameId>, defer: bool, target: usize) -> Result<()> {
        let target = target.max(1);
        let mut freed = 0usize;
        // R9: a policy may ask for the sweep first; otherwise it is the fallback (B14).
        let sweep_first = self.mode == PoolMode::Swizzling && self.policy.prefers_sweep();
        // The first failure of the log (B18): reported only if nothing else could be freed.
        let mut wal_error = None;
        if sweep_first {
            freed += self.sweep_passes(target, &mut wal_error, defer.then_some(&mut *deferred))?;
        }
        let max_proposals = 2 * self.frames.len() + 16;
        let mut proposals = 0;
        // Dirty victims count towards the target: they are freed by the next batch (B29).
        while self.free_count.load(Relaxed) + deferred.len() < target && proposals < max_proposals {
            // R10: the policy records each verdict during the chunk; the victims reach the free
            // list only afterwards, in one go (B13).
            let mut chunk = EvictionChunk {
                pool: self,
                // Another thread may have freed frames since the loop's test: never below zero.
                wanted: target
                    .saturating_sub(self.free_count.load(Relaxed) + deferred.len())
                    .min(EVICTION_CHUNK),
                freed: Vec::new(),
                deferred_before: deferred.len(),
                deferred: &mut *deferred,
                defer,
                error: None,
                wal_error: None,
            };
            let made =
                self.policy.evict_batch(&DescHooks(&self.frames), &mut chunk, max_proposals - proposals);
            proposals += made;
            freed += chunk.freed.len();
            for &f in &chunk.freed {
                self.push_free(f);
            }
            self.count(|b| add(&b.evictions, chunk.freed.len() as u64));
            if let Some(e) = chunk.error {
                return Err(e);
            }
            if wal_error.is_none() {
                wal_error = chunk.wal_error;
            }
            if made == 0 {
                break; // the policy tracks nothing (R4)
            }
        }
        if !sweep_first
            && self.free_count.load(Relaxed) + deferred.len() < target
            && self.mode == PoolMode::Swizzling
        {
            freed += self.sweep_passes(target, &mut wal_error, defer.then_some(&mut *deferred))?;
        }
        if freed == 0 && deferred.is_empty() && self.free_count.load(Relaxed) == 0 {
            return Err(wal_error.unwrap_or(BufferError::PoolExhausted { frames: self.frames.len() }));
        }
        Ok(())
    }

    /// Tries to evict frame `f` without waiting for any latch (B13). `Ok(None)` if evicted: the
    /// frame is then `FREE` but neither on the free list nor removed from the policy; the caller
    /// does both, in that order (R10). With `defer`, a dirty victim (unless the log may take its
    /// write over, B27) is left as it is, pushed to `defer` and rejected as in use: the caller
    /// writes it after releasing the eviction lock (B29). Without, it is written here, only after
    /// the log is durable up to its page LSN (B18); if the log fails, the victim keeps its page
    /// and stays dirty.
    pub(super) fn try_evict(
        &self,
        f: FrameId,
        defer: Option<&mut Vec<FrameId>>,
    ) -> Result<Option<Rejection>, EvictError> {
        let d = self.desc(f);
        if d.root.load(Relaxed) {
            return Ok(Some(Rejection::Root));
        }
        if d.state.load(Acquire) != RESIDENT {
            return Ok(Some(Rejection::NotResident));
        }
        // Latch order (B10): parent before child; both without waiting.
        let parent = d.parent();
        if let Some(p) = parent {
            if !self.desc(p).latch.try_lock_exclusive() {
                return Ok(Some(Rejection::InUse));
            }
        }
        let unlatch_parent = || {
            if let Some(p) = parent {
                self.desc(p).latch.unlock_exclusive();
            }
        };
        if !d.latch.try_lock_exclusive() {
            unlatch_parent();
            return Ok(Some(Rejection::InUse));
        }
        let reject = |why| {
            d.latch.unlock_exclusive();
            unlatch_parent();
            Ok(Some(why))
        };
        if d.state.load(Acquire) != RESIDENT || d.root.load(Relaxed) {
            return reject(Rejection::NotResident);
        }
        if d.parent() != parent {
            return reject(Rejection::InUse);
        }
        let pid = self.frame_page_id(f);
        // SAFETY: B1 — we hold f's latch exclusively.
        let page = unsafe { self.page_mut(f) };
        debug_assert_eq!(d.kids.load(Relaxed) > 0, self.has_swizzled_children(page), "B16 for {f}");
        if d.kids.load(Relaxed) > 0 {
            return reject(Rejection::SwizzledChildren);
        }
        if let Some(defer) = defer {
            if d.dirty.load(Relaxed) && !self.write_elision {
                // B29: written after the batch, under a shared latch, outside the eviction lock.
                defer.push(f);
                return reject(Rejection::InUse);
            }
        }
        // Find the swizzled swip in the parent before changing anything (B6).
        let parent_slot = match parent {
            None => None,
            Some(p) => {
                // SAFETY: B1 — we hold p's latch exclusively; `page` above is another frame.
                let ppage = unsafe { self.page_mut(p) };
                let me = Swip::frame(f).raw();
                match self.owner.find_swip(ppage, page, me) {
                    Some(o) => Some((ppage, o)),
                    None => {
                        debug_assert!(false, "B6: parent {p} does not reference {f}");
                        return reject(Rejection::InUse);
                    }
                }
            }
        };
        if d.dirty.load(Relaxed) && !matches!(self.resolve_dependants(pid, false, &[]), Ok(true)) {
            // B36: a source whose dependants cannot be resolved without waiting stays.
            return reject(Rejection::InUse);
        }
        if d.dirty.load(Relaxed) {
            // The page has no swizzled swips, so its bytes are already the on-disk form (B8).
            let lsn = page::page_lsn(page);
            if let Err(e) = self.wal_before_write(pid, lsn) {
                d.latch.unlock_exclusive();
                unlatch_parent();
                self.count(|b| bump(&b.rejected_wal));
                return Err(EvictError::Wal(e));
            }
            let rec = Lsn(d.rec_lsn.load(Acquire));
            let elided = self.write_elision
                && rec != Lsn(0)
                && self.log.as_ref().is_some_and(|log| log.elide_write(pid, lsn, rec));
            if elided {
                // B27: the log holds every change of the page since the file's copy and will
                // rebuild it when it is read again.
                d.dirty.store(false, Relaxed);
                d.rec_lsn.store(0, Release);
                self.count(|b| bump(&b.elided_writes));
            } else {
                if let Err(e) = self.write_file_page(pid, page) {
                    d.latch.unlock_exclusive();
                    unlatch_parent();
                    return Err(EvictError::Io(e));
                }
                d.dirty.store(false, Relaxed);
                self.written(d, pid, lsn);
                self.count(|b| {
                    bump(&b.write_backs);
                    bump(&b.pages_written);
                });
            }
        }
        if let Some((ppage, o)) = parent_slot {
            put_u64(ppage, o, Swip::page(pid).raw());
            self.count(|b| bump(&b.unswizzles));
        }
        d.set_parent(None);
        if let Some(p) = parent {
            self.lost_child(p);
        }
        self.table.remove(pid, f);
        d.state.store(FREE, Release);
        self.trace(EventKind::Evict, f, parent, None, None);
        d.latch.unlock_exclusive();
        unlatch_parent();
        Ok(None)
    }

    /// Repeats the sweep while it frees too little but the policy refused leaves (R9): each
    /// refusal ages a leaf, so a few passes reach leaves that were used recently. Bounded by
    /// [`SWEEP_PASSES`]; returns the frames freed.
    fn sweep_passes(
        &self,
        target: usize,
        wal_error: &mut Option<BufferError>,
        mut defer: Option<&mut Vec<FrameId>>,
    ) -> Result<usize> {
        let mut freed = 0;
        for _ in 0..SWEEP_PASSES {
            let (n, refused) = self.sweep(target, wal_error, defer.as_deref_mut())?;
            freed += n;
            let deferred = defer.as_ref().map_or(0, |d| d.len());
            if self.free_count.load(Relaxed) + deferred >= target || (n == 0 && refused == 0) {
                break;
            }
        }
        Ok(freed)
    }

    /// Graefe's depth-first sweep (B14): walks the cached part of each tree from its root, leaf-first,
    /// and evicts pages without swizzled children that the policy admits (R9). Returns the frames
    /// freed and the leaves the policy refused. A victim the log could not be flushed for (B18)
    /// stays; the first such error is kept in `wal_error`.
    fn sweep(
        &self,
        target: usize,
        wal_error: &mut Option<BufferError>,
        mut defer: Option<&mut Vec<FrameId>>,
    ) -> Result<(usize, usize)> {
        let roots = self.roots.lock().clone();
        let start = self.sweep_cursor.fetch_add(1, Relaxed);
        let mut candidates = Vec::new();
        let mut stack: Vec<FrameId> = roots;
        let mut offs = Vec::new();
        let want = target.max(1) * 2;
        let mut refused = 0;
        while let Some(f) = stack.pop() {
            let d = self.desc(f);
            if !d.latch.try_lock_shared() {
                continue;
            }
            if d.state.load(Acquire) != RESIDENT {
                d.latch.unlock_shared();
                continue;
            }
            // SAFETY: B1 — shared latch held until unlock below.
            let page = unsafe { self.page(f) };
            offs.clear();
            self.owner.swip_offsets(page, &mut offs);
            let children: Vec<FrameId> = offs
                .iter()
                .filter_map(|&o| match Swip::from_raw(get_u64(page, o)).map(Swip::target) {
                    Some(SwipTarget::Frame(c)) => Some(c),
                    _ => None,
                })
                .collect();
            d.latch.unlock_shared();
            if children.is_empty() {
                if d.root.load(Relaxed) {
                    continue;
                }
                if !self.policy.sweep_admits(f, &d.hook) {
                    refused += 1;
                    continue;
                }
                candidates.push(f);
                if candidates.len() >= want {
                    break;
                }
            } else {
                // Rotate the starting child so successive sweeps resume elsewhere.
                let k = start % children.len();
                stack.extend(children[k..].iter().chain(&children[..k]).rev());
            }
        }
        let mut freed = 0;
        for c in candidates {
            if self.free_count.load(Relaxed) + defer.as_ref().map_or(0, |d| d.len()) >= target {
                break;
            }
            match self.try_evict(c, defer.as_deref_mut()) {
                Ok(None) => {
                    self.policy.on_remove(c, true, &self.desc(c).hook);
                    self.push_free(c);
                    self.count(|b| bump(&b.evictions));
                    freed += 1;
                }
                Ok(Some(_)) => {}
                Err(EvictError::Wal(e)) => {
                    wal_error.get_or_insert(e);
                }
                Err(EvictError::Io(e)) => return Err(e),
            }
        }
        self.count(|b| {
            add(&b.sweep_evictions, freed as u64);
            add(&b.sweep_refusals, refused as u64);
        });
        Ok((freed, refused))
    }
}

/// Victims one [`Policy::evict_batch`] call looks for at most: they reach the free list together
/// when the call returns (R10), so a chunk bounds how long they are withheld from other threads
/// (BP-Wrapper's reclamation batch F).
const EVICTION_CHUNK: usize = 64;

/// The pool's side of one eviction chunk (R10).
struct EvictionChunk<'a> {
    pool: &'a BufferPool,
    wanted: usize,
    freed: Vec<FrameId>,
    /// Dirty victims left for write-back after the batch (B29).
    deferred: &'a mut Vec<FrameId>,
    /// How many the batch had deferred when this chunk began.
    deferred_before: usize,
    /// Whether dirty victims are left for later (B29) or written by `try_evict`.
    defer: bool,
    /// An I/O error writing a victim ends the chunk; the pool reports it after the chunk.
    error: Option<BufferError>,
    /// The first failure of the log (B18): its victim was rejected and the chunk goes on.
    wal_error: Option<BufferError>,
}

/// Why `try_evict` failed, beyond the rejections the policy hears of.
pub(super) enum EvictError {
    /// The log could not be flushed to the victim's page LSN (B18): it keeps its page, dirty.
    Wal(BufferError),
    /// Writing the victim failed (sticky, F4).
    Io(BufferError),
}

impl Evictor for EvictionChunk<'_> {
    fn wants_more(&mut self) -> bool {
        self.error.is_none() && self.freed.len() + self.deferred.len() - self.deferred_before < self.wanted
    }

    /// Starts loading the descriptor that `try_evict` reads first (replacement R10; a hint, sync
    /// H1). Worth it for policies whose victims come in no particular frame order: CLOCK's hand
    /// walks the descriptors in order, and the hardware prefetcher follows it.
    fn prefetch(&mut self, frame: FrameId) {
        if let Some(d) = self.pool.frames.get(frame.index()) {
            swizzledb_sync::hint::prefetch(d);
        }
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        let pool = self.pool;
        pool.count(|b| bump(&b.proposals));
        let before = self.deferred.len();
        let defer = self.defer.then_some(&mut *self.deferred);
        let why = match pool.try_evict(frame, defer) {
            Ok(None) => {
                self.freed.push(frame);
                return Verdict::Evicted;
            }
            // B29: a dirty victim left for write-back; counted as `deferred_writes`.
            Ok(Some(why)) if self.deferred.len() > before => return Verdict::Rejected(why),
            Ok(Some(why)) => why,
            Err(EvictError::Wal(e)) => {
                // Counted as `rejected_wal` by try_evict; the policy keeps the frame.
                self.wal_error.get_or_insert(e);
                return Verdict::Rejected(Rejection::InUse);
            }
            Err(EvictError::Io(e)) => {
                // The victim keeps its page (the write failed before anything changed).
                self.error = Some(e);
                Rejection::InUse
            }
        };
        pool.count(|b| {
            bump(match why {
                Rejection::InUse => &b.rejected_in_use,
                Rejection::Root => &b.rejected_root,
                Rejection::SwizzledChildren => &b.rejected_swizzled_children,
                Rejection::NotResident => &b.rejected_not_resident,
            });
        });
        Verdict::Rejected(why)
    }
}
