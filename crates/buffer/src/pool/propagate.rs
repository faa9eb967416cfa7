//! Writes of pages to the file from outside the pool (B26): Lersch's decoupled page cleaner
//! brings the file's copy of a page forward by replaying the log onto it, without the frame.
//! Every write of a page — the pool's own (eviction, flush, write-back, repair) and these —
//! holds the page's stripe of `write_locks`, so a copy read under it is the newest in the file
//! and nothing the pool writes is overwritten by an older version. [`FilePages`] holds the
//! stripes of a batch of pages, whose writes then share the double-write area's sync (F15).

use super::{BufferPool, RESIDENT};
use crate::aligned::AlignedBuf;
use crate::error::{BufferError, Result};
use crate::page;
use crate::stats::{add, bump};
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use swizzledb_sync::{Lsn, PageId};

/// Stripes of the per-page write locks.
pub(super) const WRITE_LOCKS: usize = 64;

/// The stripe of `write_locks` that page `id`'s writes hold (B26).
pub(super) fn stripe(id: PageId) -> usize {
    (id.get() as usize) % WRITE_LOCKS
}

/// The file's copy of one page, locked against the pool's writes of it (B26).
pub struct FilePage<'a> {
    pool: &'a BufferPool,
    id: PageId,
    _lock: MutexGuard<'a, ()>,
}

impl FilePage<'_> {
    /// The page.
    #[must_use]
    pub fn id(&self) -> PageId {
        self.id
    }

    /// Reads the file's copy into `buf` and verifies it (F3), and that it is not stale (older
    /// than the page's last write the log knows of, B25): the newest copy, since no write of
    /// the page can run meanwhile.
    ///
    /// # Errors
    /// Those of [`crate::PageFile::read_page`]; `Corrupted` for a stale copy.
    pub fn read(&self, buf: &mut [u8]) -> Result<()> {
        self.pool.file.read_page(self.id, buf)?;
        self.pool.check_not_stale(self.id, buf)
    }

    /// Reads the file's copy into `buf` and verifies its checksum (F3) only: a stale copy is
    /// returned as it is — for a writer that brings it forward (instant restart's redo).
    ///
    /// # Errors
    /// Those of [`crate::PageFile::read_page`].
    pub fn read_unchecked(&self, buf: &mut [u8]) -> Result<()> {
        self.pool.file.read_page(self.id, buf)
    }

    /// Writes `buf` (the page's disk form, carrying its page LSN) as the file's copy, which
    /// holds every change of the page below `complete_below`: after the WAL flush to its page
    /// LSN (B18), reported to the log as propagated (B20, B26), counted in `pages_written`.
    ///
    /// # Errors
    /// `Wal` if the log cannot be flushed (nothing written); I/O errors (sticky, F4).
    pub fn write(&self, buf: &mut [u8], complete_below: Lsn) -> Result<()> {
        let lsn = page::page_lsn(buf);
        self.pool.wal_before_write(self.id, lsn)?;
        self.pool.file.write_page(self.id, buf)?;
        if let Some(log) = &self.pool.log {
            log.page_propagated(self.id, lsn, complete_below);
        }
        self.pool.count(|b| bump(&b.pages_written));
        Ok(())
    }
}

/// The file's copies of a batch of pages, locked against the pool's writes of them (B26): as
/// a [`FilePage`] each, but written together, so that the batch pays one sync of the
/// double-write area per region of pages (F15) where [`FilePage::write`] pays one per page.
pub struct FilePages<'a> {
    pool: &'a BufferPool,
    /// The pages, in page-id order.
    ids: Vec<PageId>,
    _locks: Vec<MutexGuard<'a, ()>>,
}

impl FilePages<'_> {
    /// The pages, in page-id order.
    #[must_use]
    pub fn ids(&self) -> &[PageId] {
        &self.ids
    }

    fn holds(&self, id: PageId) -> bool {
        self.ids.binary_search(&id).is_ok()
    }

    /// [`FilePage::read_unchecked`] for page `id` of the batch.
    ///
    /// # Errors
    /// Those of [`crate::PageFile::read_page`]; `Config` if `id` is not in the batch.
    pub fn read_unchecked(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        if !self.holds(id) {
            return Err(BufferError::Config(format!("page {id} is not in the locked batch")));
        }
        self.pool.file.read_page(id, buf)
    }

    /// [`FilePage::read_unchecked`] for every page of the batch, in page-id order, read as one
    /// batch (F14, IO7): page `ids()[i]` into `room[i * page_size..]` (zeroed first), one result
    /// each. `room` is grown to the batch's pages if smaller; keep it for the next batch.
    ///
    /// # Errors
    /// Per page, those of [`crate::PageFile::read_page`]; `AlignedBuf`'s if `room` cannot grow.
    pub fn read_unchecked_all(&self, room: &mut Option<AlignedBuf>) -> Result<Vec<Result<()>>> {
        let size = self.pool.page_size;
        if room.as_ref().is_none_or(|b| b.as_slice().len() < self.ids.len() * size) {
            *room = Some(AlignedBuf::new(self.ids.len() * size, 4096)?);
        }
        let room = &mut room.as_mut().expect("made above").as_mut_slice()[..self.ids.len() * size];
        // A read that fails leaves its page as zeros and whatever it read, never a page of an
        // earlier batch.
        room.fill(0);
        let mut pages: Vec<(PageId, &mut [u8])> =
            self.ids.iter().copied().zip(room.chunks_mut(size)).collect();
        Ok(self.pool.file.read_pages(&mut pages))
    }

    /// [`FilePage::write`] for every page of `pages` (each in the batch, each at most once,
    /// its disk form carrying its page LSN), handed to the file as one batch (F14): one WAL
    /// flush to the highest page LSN first (B18), then the writes, which go through the
    /// double-write area a region at a time, then a report per page (B20, B26). `scratch` is
    /// the aligned room the batch is copied into (grown as needed; keep it for the next
    /// batch).
    ///
    /// # Errors
    /// `Wal` if the log cannot be flushed (nothing written); `Config` for a page not in the
    /// batch or named twice; I/O errors (sticky, F4: which pages reached the file is then
    /// unknown, and none is reported).
    pub fn write(
        &self,
        pages: &[(PageId, &[u8])],
        complete_below: Lsn,
        scratch: &mut Option<AlignedBuf>,
    ) -> Result<()> {
        let mut ids: Vec<PageId> = pages.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != pages.len() || !ids.iter().all(|&id| self.holds(id)) {
            return Err(BufferError::Config(
                "a batched write names a page twice or one not in the batch".into(),
            ));
        }
        let Some((top_lsn, top_id)) = pages.iter().map(|(id, buf)| (page::page_lsn(buf), *id)).max() else {
            return Ok(());
        };
        self.pool.wal_before_write(top_id, top_lsn)?;
        self.pool.file.write_copies(pages, scratch)?;
        if let Some(log) = &self.pool.log {
            for (id, buf) in pages {
                log.page_propagated(*id, page::page_lsn(buf), complete_below);
            }
        }
        self.pool.count(|b| add(&b.pages_written, pages.len() as u64));
        Ok(())
    }
}

impl BufferPool {
    pub(super) fn write_lock(&self, id: PageId) -> MutexGuard<'_, ()> {
        self.write_locks[stripe(id)].lock()
    }

    /// The pool's own page writes: the file write under the page's write lock (B26).
    pub(super) fn write_file_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        debug_assert!(!self.has_dependants(id), "B36: page {id} written before its dependants were resolved");
        let _lock = self.write_lock(id);
        self.file.write_page(id, buf)
    }

    /// B26: the file's copy of page `id`, locked against every write of the pool to it until
    /// the returned guard drops. The holder must not wait for a frame latch meanwhile (the
    /// pool takes this lock while it holds a latch).
    pub fn lock_file_page(&self, id: PageId) -> FilePage<'_> {
        FilePage { pool: self, id, _lock: self.write_lock(id) }
    }

    /// B26 for a batch: the file's copies of pages `ids`, locked against every write of the
    /// pool to them until the returned guard drops. Their stripes are taken in stripe order,
    /// as the pool's own batch writes take theirs, so that two batches never wait for each
    /// other in a cycle. The holder must not wait for a frame latch meanwhile.
    pub fn lock_file_pages(&self, ids: &[PageId]) -> FilePages<'_> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut stripes: Vec<usize> = ids.iter().map(|&id| stripe(id)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _locks = stripes.iter().map(|&s| self.write_locks[s].lock()).collect();
        FilePages { pool: self, ids, _locks }
    }

    /// B26: page `id` reached the file carrying `lsn`, written from outside the pool. If it is
    /// resident, its latch is free and it has not changed since (its page LSN is `lsn`), it is
    /// marked clean (dirty flag and recovery LSN reset, under its shared latch, as a write-back
    /// does, B19). Never waits. Returns whether it did.
    pub fn note_cleaned(&self, id: PageId, lsn: Lsn) -> bool {
        let Some(f) = self.table.get(id) else { return false };
        let d = self.desc(f);
        if !d.latch.try_lock_shared() {
            return false;
        }
        let mut cleaned = false;
        if d.state.load(Acquire) == RESIDENT && d.page_id.load(Relaxed) == id.get() {
            // SAFETY: B1 — we hold f's shared latch while this borrow lives.
            let p = unsafe { self.page(f) };
            if page::page_lsn(p) == lsn && d.dirty.swap(false, Relaxed) {
                d.rec_lsn.store(0, Release);
                cleaned = true;
            }
        }
        d.latch.unlock_shared();
        cleaned
    }
}
