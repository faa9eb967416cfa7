//! Flushing (B18–B20, B23): writing dirty pages back under the WAL rule, for `close`, the page
//! cleaner and fuzzy checkpoints.

use super::{BufferPool, FrameDesc, RESIDENT};
use crate::aligned::AlignedBuf;
use crate::error::{BufferError, Result};
use crate::page::{self, get_u64, put_u64};
use crate::stats::bump;
use crate::swip::Swip;
use rustc_hash::FxHashSet;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use swizzledb_sync::{FrameId, Lsn, PageId};

impl BufferPool {
    /// Writes every dirty page (with page ids in place of swizzled swips, B8), the free-page chain
    /// and the metadata page, then syncs the file. Each page is written under its shared latch,
    /// after the log is durable up to its page LSN (B18).
    ///
    /// # Errors
    /// [`BufferError::Wal`] if the log could not be flushed for a page (that page and the ones
    /// after it stay dirty; the file stays usable); I/O errors, after which the pool refuses
    /// further I/O (sticky error, F4).
    pub fn flush(&self) -> Result<()> {
        let mut buf = AlignedBuf::new(self.page_size, 4096)?;
        let mut offs = Vec::new();
        for (i, d) in self.used_frames() {
            if !d.dirty.load(Relaxed) {
                continue;
            }
            // The shared latch is held through the write: no one changes the page meanwhile
            // (changes need the exclusive latch), eviction cannot take the frame (B2), and the
            // dirty flag and recovery LSN are reset for exactly the bytes written (B19).
            d.latch.lock_shared();
            let written = self.flush_frame(FrameId(i as u32), &mut buf, &mut offs);
            d.latch.unlock_shared();
            written?;
        }
        let meta = self.meta.lock();
        self.file.set_len_pages(meta.page_count)?;
        self.file.write_meta(&meta)?;
        self.count(|b| bump(&b.pages_written));
        self.file.sync()
    }

    /// The page cleaner's write-back (B23): writes the dirty pages whose recovery LSN is below
    /// `below`, oldest first up to `max` pages, with the unwritten dependants of those (B36
    /// rule 5), deepest in a chain of dependants first and then in page-id order, in batches of
    /// one depth and up to one double-write region (F15): each batch as eviction writes its victims (B29: shared latches
    /// taken without waiting, one WAL flush to the batch's highest page LSN (B18), the dirty
    /// flag as the claim, one batched file write). A frame whose latch was taken is then written
    /// alone, as `flush` does, waiting for its shared latch while holding nothing else. Returns
    /// how many pages it wrote.
    ///
    /// # Errors
    /// As [`BufferPool::flush`]: a log failure leaves the pages dirty; I/O errors are sticky.
    pub fn write_back_older(&self, below: Lsn, max: usize) -> Result<usize> {
        let mut batch: Vec<(u64, u64, usize)> = self
            .used_frames()
            .filter_map(|(i, d)| {
                let rec = d.rec_lsn.load(Acquire);
                (rec != 0 && rec < below.0 && d.state.load(Acquire) == RESIDENT)
                    .then(|| (rec, d.page_id.load(Relaxed), i))
            })
            .collect();
        if batch.len() > max {
            batch.select_nth_unstable(max);
            batch.truncate(max);
        }
        let deps = self.deps_any();
        if deps {
            // B36: the unwritten dependants of the pages chosen (and theirs) go into the round.
            let mut chosen: FxHashSet<usize> = batch.iter().map(|&(_, _, i)| i).collect();
            let mut next = 0;
            while next < batch.len() {
                let page = batch[next].1;
                next += 1;
                for d in self.unwritten_dependants(PageId::new(page).expect("a data page")) {
                    if let Some(f) = self.table.get(d) {
                        let rec = self.desc(f).rec_lsn.load(Acquire);
                        if rec != 0 && chosen.insert(f.0 as usize) {
                            batch.push((rec, d.get(), f.0 as usize));
                        }
                    }
                }
            }
        }
        // Each page with its depth in a chain of dependants (B36 rule 5; 0 for most pages).
        let mut round: Vec<(u32, u64, usize)> = batch.iter().map(|&(_, page, i)| (0, page, i)).collect();
        if deps {
            self.dependant_depths(&mut round);
        }
        // Deepest first, so that every dependant's batch comes before its source's (a dependant
        // is deeper than its source), then in page order.
        round.sort_unstable_by_key(|&(depth, page, _)| (std::cmp::Reverse(depth), page));
        let mut written = 0;
        let mut busy = Vec::new();
        let mut frames = Vec::with_capacity(crate::doublewrite::SLOTS);
        let mut copies = match round.len().min(crate::doublewrite::SLOTS) {
            0 => None,
            n => Some(AlignedBuf::new(n * self.page_size, 4096)?),
        };
        // A batch holds pages of one depth: a source never shares one with its dependant, whose
        // write it must find made (and synced) when it resolves it.
        let batches =
            round.chunk_by(|a, b| a.0 == b.0).flat_map(|depth| depth.chunks(crate::doublewrite::SLOTS));
        for chunk in batches {
            frames.clear();
            frames.extend(chunk.iter().map(|&(_, _, i)| FrameId(i as u32)));
            let copies = copies.as_mut().expect("allocated for a non-empty batch");
            let (n, refused) = self.write_victims_latched(&frames, copies, &mut busy)?;
            written += n;
            if let Some(e) = refused {
                return Err(e);
            }
        }
        if !busy.is_empty() {
            let mut buf = AlignedBuf::new(self.page_size, 4096)?;
            let mut offs = Vec::new();
            for f in busy {
                let d = self.desc(f);
                d.latch.lock_shared();
                let r = self.flush_frame(f, &mut buf, &mut offs);
                d.latch.unlock_shared();
                written += usize::from(r?);
            }
        }
        Ok(written)
    }

    /// `flush` of one frame, which the caller holds latched shared. Returns whether it wrote.
    pub(super) fn flush_frame(
        &self,
        f: FrameId,
        buf: &mut AlignedBuf,
        offs: &mut Vec<usize>,
    ) -> Result<bool> {
        let d = self.desc(f);
        if d.state.load(Acquire) != RESIDENT || !d.dirty.load(Relaxed) {
            return Ok(false);
        }
        let pid = self.frame_page_id(f);
        // B36: its dependants first; waiting for their latches is in the latch order (T8).
        self.resolve_dependants(pid, true, &[])?;
        // SAFETY: B1 — the caller holds f's latch (shared) while this borrow lives.
        let page = unsafe { self.page(f) };
        let out = buf.as_mut_slice();
        out.copy_from_slice(page);
        self.disk_form(out, offs);
        let lsn = page::page_lsn(out);
        self.wal_before_write(pid, lsn)?;
        // Claim the write: of two flushes holding the shared latch, only one writes (F9).
        if !d.dirty.swap(false, Relaxed) {
            return Ok(false);
        }
        if let Err(e) = self.write_file_page(pid, out) {
            d.dirty.store(true, Relaxed);
            return Err(e);
        }
        self.written(d, pid, lsn);
        self.count(|b| {
            bump(&b.write_backs);
            bump(&b.pages_written);
        });
        Ok(true)
    }

    /// B8: turns a copy of a latched page into its disk form, every swizzled swip replaced by
    /// its child's page id. The page the copy came from must still be latched: its children stay
    /// resident (B6), so the ids are current.
    pub(super) fn disk_form(&self, out: &mut [u8], offs: &mut Vec<usize>) {
        offs.clear();
        self.owner.swip_offsets(out, offs);
        for &o in offs.iter() {
            if let Some(s) = Swip::from_raw(get_u64(out, o)) {
                put_u64(out, o, Swip::page(self.swip_page_id(s)).raw());
            }
        }
    }

    /// B18 (WAL rule): before a page carrying `lsn` is written, the log must be durable up to
    /// `lsn`. No call when logging is off or the page carries no LSN.
    pub(super) fn wal_before_write(&self, page: PageId, lsn: Lsn) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        if lsn == Lsn(0) {
            return Ok(());
        }
        self.count(|b| bump(&b.wal_flushes));
        log.flush_to(lsn).map_err(|source| BufferError::Wal {
            file: self.file.path().to_path_buf(),
            page,
            lsn,
            source,
        })
    }

    /// B19, B20: `page` of frame `d` is now in the file carrying `lsn`. Called with the latch
    /// that protected the write still held.
    pub(super) fn written(&self, d: &FrameDesc, page: PageId, lsn: Lsn) {
        // B36: noted before the reset, so a page found clean has its write noted.
        self.note_dependant_written(page);
        d.rec_lsn.store(0, Release);
        if let Some(log) = &self.log {
            log.page_written(page, lsn);
        }
    }

    /// The dirty pages and their recovery LSNs (B19), for a fuzzy checkpoint: `(page, rec_lsn)`
    /// of every resident dirty frame whose recovery LSN is set, in frame order.
    ///
    /// Reads the descriptors without latching or waiting, so the list is not a snapshot of one
    /// instant. That is safe for a checkpoint (README B19): a page written back meanwhile is at
    /// worst listed with its old recovery LSN (or listed although clean), which only makes redo
    /// start earlier or look at a page it need not change — redo compares page LSNs; a frame
    /// evicted and reused meanwhile can be listed under its old page id (same argument) or its
    /// new one with the old page's, older, recovery LSN.
    #[must_use]
    pub fn dirty_pages(&self) -> Vec<(PageId, Lsn)> {
        self.used_frames()
            .filter_map(|(_, d)| {
                let rec = d.rec_lsn.load(Acquire);
                // Not `dirty`: a write-back clears it before its write and resets `rec_lsn`
                // only after (B19), so `rec_lsn` alone keeps the page listed until it is in
                // the file.
                if rec == 0 || d.state.load(Acquire) != RESIDENT {
                    return None;
                }
                Some((PageId::new(d.page_id.load(Relaxed))?, Lsn(rec)))
            })
            .collect()
    }
}
