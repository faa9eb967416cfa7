//! The write-ahead-log seam (the **log** of the crate README's vocabulary): what the buffer pool
//! needs from the log. The pool knows nothing of log records; the engine implements
//! [`LogFlush`] over its log manager. Rules B18–B20 of the crate README say when the pool calls
//! it.

use swizzledb_sync::{Lsn, PageId};

/// What the pool needs from the write-ahead log.
///
/// The pool calls both methods while it holds the latch of the frame being written (shared for
/// `flush`, exclusive for eviction and the sweep, possibly with the parent frame latched too) and,
/// during eviction, the eviction mutex. An implementation must therefore never fix pages of the
/// pool or wait for anything that waits for a frame latch.
pub trait LogFlush: Send + Sync {
    /// Returns when every log record with LSN <= `lsn` is durable (the WAL rule, B18).
    ///
    /// # Errors
    /// The log could not be made durable; the pool then does not write the page, which stays
    /// dirty, and reports [`crate::BufferError::Wal`].
    fn flush_to(&self, lsn: Lsn) -> std::io::Result<()>;

    /// `page` reached the file carrying `page_lsn` (Lersch's page-write records, B20). Called
    /// after the write succeeded and before the frame's latch is released, for every page the
    /// pool writes back (the metadata page and the free-page chain are not frames and are not
    /// reported).
    fn page_written(&self, page: PageId, page_lsn: Lsn);

    /// `page` reached the file carrying `page_lsn` and every change of the page below
    /// `complete_below`, written from outside the pool through a [`crate::FilePage`] (B26): no
    /// frame latch was held, so later changes of the page may already be logged. Default:
    /// [`LogFlush::page_written`].
    fn page_propagated(&self, page: PageId, page_lsn: Lsn, complete_below: Lsn) {
        let _ = complete_below;
        self.page_written(page, page_lsn);
    }

    /// Single-page recovery (B25): the page LSN the file's copy of `page` must carry at least —
    /// that of its newest write the log knows of — or `None`. Called after every read of a page
    /// from the file; a copy below it is stale (a lost write) and is repaired.
    fn expected_page_lsn(&self, page: PageId) -> Option<Lsn> {
        let _ = page;
        None
    }

    /// Single-page recovery (B25): rebuilds `page` into `buf` from the log, because the file's
    /// copy is damaged or stale (`damage` says how). Called while the pool holds the exclusive
    /// latch of the frame being loaded (and possibly its parent's), so it must not fix pages of
    /// the pool. The default cannot repair.
    ///
    /// # Errors
    /// Why the page cannot be rebuilt; the fix then fails with `Corrupted` naming both.
    fn repair_page(&self, page: PageId, buf: &mut [u8], damage: &str) -> Result<(), String> {
        let _ = (page, buf, damage);
        Err("no single-page recovery".into())
    }

    /// Instant restart (B28): `page` was loaded from the file into a frame, carrying
    /// `page_lsn` — read as it was, or repaired (B25) and written back. Called while the pool
    /// holds the frame's exclusive latch, before anything can change the page. Default: nothing.
    fn page_loaded(&self, page: PageId, page_lsn: Lsn) {
        let _ = (page, page_lsn);
    }

    /// B36: the log's end: the LSN of its next record is at least this. Default: 0 (no log
    /// images are asked of a log that keeps no dependants).
    fn log_end(&self) -> Lsn {
        Lsn(0)
    }

    /// B36: logs `image`, the disk image of `page` as it stands under the caller's latch, as
    /// the page's whole contents, and returns the record's LSN. It must not wait for anything
    /// that waits for a frame latch (the log's flusher may run; the page cleaner must not be
    /// waited for).
    ///
    /// # Errors
    /// The log could not record it; the page the caller was about to write stays unwritten.
    fn log_image(&self, page: PageId, image: &[u8]) -> std::io::Result<Lsn> {
        let _ = (page, image);
        Err(std::io::Error::other("this log takes no page images"))
    }

    /// Write elision (B27): eviction is about to drop `page`, dirty since `rec_lsn` and
    /// carrying `page_lsn`, without writing it; the log is durable up to `page_lsn` already.
    /// Returns true if the log takes the page over — it can rebuild it (B25) and will report it
    /// stale until then — and false if the page must be written. Default: false.
    fn elide_write(&self, page: PageId, page_lsn: Lsn, rec_lsn: Lsn) -> bool {
        let _ = (page, page_lsn, rec_lsn);
        false
    }
}
