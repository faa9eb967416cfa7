//! Writes of pages to the file from outside the pool (B26): Lersch's decoupled page cleaner
//! brings the file's copy of a page forward by replaying the log onto it, without the frame.
//! Every write of a page — the pool's own (eviction, flush, write-back, repair) and these —
//! holds the page's stripe of `write_locks`, so a copy read under it is the newest in the file
//! and nothing the pool writes is overwritten by an older version.

use super::{BufferPool, RESIDENT};
use crate::error::Result;
use crate::page;
use crate::stats::bump;
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

impl BufferPool {
    fn write_lock(&self, id: PageId) -> MutexGuard<'_, ()> {
        self.write_locks[stripe(id)].lock()
    }

    /// The pool's own page writes: the file write under the page's write lock (B26).
    pub(super) fn write_file_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        let _lock = self.write_lock(id);
        self.file.write_page(id, buf)
    }

    /// B26: the file's copy of page `id`, locked against every write of the pool to it until
    /// the returned guard drops. The holder must not wait for a frame latch meanwhile (the
    /// pool takes this lock while it holds a latch).
    pub fn lock_file_page(&self, id: PageId) -> FilePage<'_> {
        FilePage { pool: self, id, _lock: self.write_lock(id) }
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
