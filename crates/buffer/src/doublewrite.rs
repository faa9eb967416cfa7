//! The double-write area (README F15): a logged database's page writes are torn-proof without
//! whole-page images in the log.
//!
//! A crash can cut a page write short and leave a page that is half old, half new (a torn
//! write). Redo cannot start from such a copy, so before this area existed every page's first
//! change after a write logged the page's whole image (the log's largest cost by far). Now a
//! page file with a [`DoubleWrite`] writes each batch of pages twice: first into a free region
//! of the area's file, synced, then in place. At any moment a page whose in-place write may be
//! torn has a whole copy in the area; [`PageFile::torn_pages`](crate::PageFile::torn_pages)
//! names those copies when a logged database opens, before anything reads its pages, and the
//! engine puts them back.
//!
//! The area is `REGIONS` regions of `SLOTS` page slots. A region is *free*, *in use* by one
//! writer (its copies written and synced, the in-place writes in flight), or *unsynced* (the
//! in-place writes returned but are not yet durable: the copies must stay). A writer that finds
//! no free region syncs the data file, which frees every region that was unsynced before the
//! sync began, or waits for one in use.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use swizzledb_io::{OpenMode, Vfs, VfsFile};
use swizzledb_sync::PageId;

use crate::error::{BufferError, Result};
use crate::page;

/// Regions of the area: as many batches as can have their in-place writes in flight at once.
const REGIONS: usize = 8;
/// Page slots per region: a larger batch is written a region at a time.
pub(crate) const SLOTS: usize = 64;

/// The double-write area of one data file (README F15).
pub struct DoubleWrite {
    file: Arc<dyn VfsFile>,
    path: PathBuf,
    page_size: usize,
    regions: Mutex<Regions>,
    freed: Condvar,
}

struct Regions {
    free: Vec<usize>,
    unsynced: Vec<usize>,
}

impl std::fmt::Debug for DoubleWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoubleWrite").field("path", &self.path).field("page_size", &self.page_size).finish()
    }
}

impl DoubleWrite {
    /// Opens the area's file at `path` through `vfs`, creating it if it does not exist, for a
    /// data file of `page_size`-byte pages. Whatever the file holds stays until
    /// [`PageFile::torn_pages`](crate::PageFile::torn_pages) has read it: slots are only
    /// overwritten by later writes.
    ///
    /// # Errors
    /// [`BufferError::Config`] for an unsupported page size (before anything is created);
    /// [`BufferError::Io`] naming the file if it cannot be opened or created.
    pub fn open(vfs: &dyn Vfs, path: &Path, page_size: usize) -> Result<DoubleWrite> {
        if !crate::page::valid_page_size(page_size) {
            return Err(BufferError::Config(format!(
                "{}: unsupported page size {page_size}; use a power of two from {} to {} bytes",
                path.display(),
                crate::page::MIN_PAGE_SIZE,
                crate::page::MAX_PAGE_SIZE
            )));
        }
        let io_err = |source| BufferError::Io { file: path.to_path_buf(), source };
        let file = match vfs.open(path, OpenMode { create_new: false, direct: false }) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let f = vfs.open(path, OpenMode { create_new: true, direct: false }).map_err(io_err)?;
                if let Some(dir) = path.parent() {
                    vfs.sync_dir(dir).map_err(io_err)?;
                }
                f
            }
            Err(e) => return Err(io_err(e)),
        };
        Ok(DoubleWrite {
            file,
            path: path.to_path_buf(),
            page_size,
            regions: Mutex::new(Regions { free: (0..REGIONS).rev().collect(), unsynced: Vec::new() }),
            freed: Condvar::new(),
        })
    }

    /// The area's file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn offset(&self, region: usize, slot: usize) -> u64 {
        ((region * SLOTS + slot) * self.page_size) as u64
    }

    /// Writes `writes` (sealed pages and their offsets in `data`) to `data` the F15 way: a
    /// region at a time, each region's copies written and synced here first.
    pub(crate) fn write(&self, data: &dyn VfsFile, writes: &[(&[u8], u64)]) -> io::Result<()> {
        for chunk in writes.chunks(SLOTS) {
            let region = self.acquire(data)?;
            let copies: Vec<(&[u8], u64)> =
                chunk.iter().enumerate().map(|(slot, (buf, _))| (*buf, self.offset(region, slot))).collect();
            let mut result =
                first_error(self.file.write_all_at_batch(&copies)).and_then(|()| self.file.sync());
            if result.is_ok() {
                result = first_error(data.write_all_at_batch(chunk));
            }
            self.release(region);
            result?;
        }
        Ok(())
    }

    /// A free region, syncing `data` to free the unsynced ones when none is free.
    fn acquire(&self, data: &dyn VfsFile) -> io::Result<usize> {
        let mut regions = self.regions.lock();
        loop {
            if let Some(r) = regions.free.pop() {
                return Ok(r);
            }
            if regions.unsynced.is_empty() {
                self.freed.wait(&mut regions);
                continue;
            }
            // Every in-place write of these regions returned before the sync begins, so the
            // sync makes them durable and their copies are no longer needed.
            let synced = std::mem::take(&mut regions.unsynced);
            drop(regions);
            let result = data.sync();
            regions = self.regions.lock();
            match result {
                Ok(()) => {
                    regions.free.extend(synced);
                    self.freed.notify_all();
                }
                Err(e) => {
                    // Waiters that found nothing to sync while this sync ran must see the regions
                    // again (and try the sync themselves), or they would wait for a release that
                    // may never come.
                    regions.unsynced.extend(synced);
                    self.freed.notify_all();
                    return Err(e);
                }
            }
        }
    }

    fn release(&self, region: usize) {
        self.regions.lock().unsynced.push(region);
        self.freed.notify_all();
    }

    /// For each page with a copy in the area that verifies (checksum, id, type: F3) and has a
    /// page LSN below `below`, the copy with the highest page LSN, by page id
    /// ([`PageFile::torn_pages`](crate::PageFile::torn_pages) compares them with the file).
    ///
    /// # Errors
    /// I/O errors reading the area.
    pub(crate) fn newest_copies(&self, below: swizzledb_sync::Lsn) -> Result<BTreeMap<u64, Vec<u8>>> {
        let io_err = |source| BufferError::Io { file: self.path.clone(), source };
        let len = self.file.len().map_err(io_err)?;
        let slots = usize::try_from(len).unwrap_or(usize::MAX) / self.page_size;
        let mut best: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut buf = vec![0; self.page_size];
        for slot in 0..slots {
            self.file.read_exact_at(&mut buf, (slot * self.page_size) as u64).map_err(io_err)?;
            let Some(id) = PageId::new(page::page_id(&buf)) else { continue };
            if page::verify(&buf, id).is_err() || page::page_lsn(&buf) >= below {
                continue;
            }
            let newer = best.get(&id.get()).is_none_or(|b| page::page_lsn(b) < page::page_lsn(&buf));
            if newer {
                best.insert(id.get(), buf.clone());
            }
        }
        Ok(best)
    }
}

/// The first error of a batch of writes, if any.
pub(crate) fn first_error(results: Vec<io::Result<()>>) -> io::Result<()> {
    results.into_iter().find(std::result::Result::is_err).unwrap_or(Ok(()))
}
