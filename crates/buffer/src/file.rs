//! The page file: positional page I/O on the database file through a [`Vfs`], with checksums,
//! optional direct I/O, the persisted free-page chain, and a sticky failure flag.
//!
//! Rules (crate README): every page is sealed just before it is written (F2) and verified right
//! after it is read (F3); a failed write, sync or resize makes every later call fail with
//! [`BufferError::PreviousIoError`] (F4); [`PageFile::write_meta`] writes page 0 last (F5);
//! nothing is durable before [`PageFile::sync`] (F6); direct-I/O buffers are aligned by the file
//! itself (F7); bytes read from disk are untrusted (F8); all I/O is positional (F9).
//!
//! Free-page chain: every free page has page type `Free`; its body (at `HEADER_SIZE`) starts
//! with the id of the next free page as a little-endian u64, 0 ending the chain. The head is
//! stored in the meta page. Page 0 is the meta page and can never be free.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use swizzledb_io::{OpenMode, Vfs, VfsFile};
use swizzledb_sync::PageId;

use crate::aligned::AlignedBuf;
use crate::doublewrite::{first_error, DoubleWrite};
use crate::error::{BufferError, Result};
use crate::meta::{self, Meta};
use crate::page::{self, PageType, HEADER_SIZE, MIN_PAGE_SIZE};

/// Alignment of buffers, offsets and lengths for direct I/O (F7). 4096 covers every common
/// logical block size.
pub const DIRECT_ALIGN: usize = 4096;

/// The database file, accessed a page at a time with positional I/O through a [`Vfs`].
///
/// All methods take `&self` and may be called from several threads at once (F9).
#[derive(Debug)]
pub struct PageFile {
    file: Arc<dyn VfsFile>,
    path: PathBuf,
    page_size: usize,
    direct: bool,
    /// Set after a failed write, sync or resize (F4).
    failed: AtomicBool,
    /// F11: page 0 as the file holds it while its CLEAN flag is set on disk, and the state it
    /// and the free-page chain describe (`None`: the file says unclean, or the database is
    /// logged). The first change of the file clears it.
    clean_marker: parking_lot::Mutex<Option<CleanImage>>,
    /// Whether `clean_marker` is `Some` (read without the mutex on every write).
    marker_armed: AtomicBool,
    /// F13: pages the file is known to hold, reserved ahead of writes (direct I/O only; 0 until
    /// the first write past what is known).
    reserved: std::sync::atomic::AtomicU64,
    /// F13: serializes growing the reservation.
    grow: parking_lot::Mutex<()>,
    /// F15: the double-write area every page write goes through, once installed.
    double_write: std::sync::OnceLock<Arc<DoubleWrite>>,
    /// B36: the number of the last [`PageFile::sync`] begun, and the highest number of one
    /// that completed.
    syncs_begun: AtomicU64,
    syncs_done: AtomicU64,
}

/// F13: the reservation grows by an eighth of the file, at least this many bytes...
const RESERVE_MIN: u64 = 1 << 20;
/// ...and at most this many.
const RESERVE_MAX: u64 = 64 << 20;

/// The `Config` error for a file system that rejects `O_DIRECT`.
fn direct_unsupported(path: &Path) -> BufferError {
    BufferError::Config(format!(
        "{}: the file system does not support direct I/O (O_DIRECT was rejected); drop \
         --direct-io or put the database on a file system that supports it",
        path.display()
    ))
}

/// Wraps an OS error with the file name.
fn io_err(path: &Path, source: io::Error) -> BufferError {
    BufferError::Io { file: path.to_path_buf(), source }
}

/// Opens `path` through `vfs` for reading and writing, with `O_DIRECT` if `direct` (F7: a file
/// system that refuses it, with `EINVAL` or as unsupported, is a `Config` error).
fn open_rw(vfs: &dyn Vfs, path: &Path, direct: bool) -> Result<Arc<dyn VfsFile>> {
    vfs.open(path, OpenMode { create_new: false, direct }).map_err(|e| {
        // EINVAL has kind InvalidInput; other systems call it Unsupported.
        if direct && matches!(e.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported) {
            direct_unsupported(path)
        } else {
            io_err(path, e)
        }
    })
}

/// The directory holding `path`'s entry (empty for a bare file name: the current directory,
/// as `Vfs::sync_dir` reads it).
fn parent_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

/// F11: page 0 of a file that says CLEAN, as written, and the state it describes.
#[derive(Debug)]
struct CleanImage {
    page0: Vec<u8>,
    meta: Meta,
}

impl PageFile {
    fn with_file(file: Arc<dyn VfsFile>, path: &Path, page_size: usize, direct: bool) -> PageFile {
        PageFile {
            file,
            path: path.to_path_buf(),
            page_size,
            direct,
            failed: AtomicBool::new(false),
            clean_marker: parking_lot::Mutex::new(None),
            marker_armed: AtomicBool::new(false),
            reserved: std::sync::atomic::AtomicU64::new(0),
            grow: parking_lot::Mutex::new(()),
            double_write: std::sync::OnceLock::new(),
            syncs_begun: AtomicU64::new(0),
            syncs_done: AtomicU64::new(0),
        }
    }

    /// The pages whose copy in this file is torn (F15): it fails to verify (checksum, id, type:
    /// F3) and a slot holds a copy of it that verifies, with a page LSN below `below` (the end
    /// of the log); of several such slots the one with the highest page LSN counts. Slots of
    /// pages beyond the end of the file, and of page 0, are ignored, and so is a page whose
    /// copy in the file verifies: an in-place write lost whole leaves the page as it was, which
    /// redo brings forward from the log. Returns each page with the slot's copy, in page order;
    /// writes nothing.
    ///
    /// A slot is the page's last write only if that write may have been torn: a region is
    /// reused once its writes are durable, so for a page damaged some other way the newest slot
    /// may be older than the file's last copy. The caller puts a copy back only if the log
    /// still holds every change after its page LSN, and replays them (RECOVERY.md R3).
    ///
    /// # Errors
    /// I/O errors reading `area` or the file.
    pub fn torn_pages(
        &self,
        area: &DoubleWrite,
        below: swizzledb_sync::Lsn,
    ) -> Result<Vec<(PageId, Vec<u8>)>> {
        let best = area.newest_copies(below)?;
        let pages = self.len_pages()?;
        let mut torn = Vec::new();
        let mut current = vec![0; self.page_size()];
        for (id, copy) in best {
            let Some(pid) = PageId::new(id) else { continue };
            if id >= pages {
                continue;
            }
            match self.read_page(pid, &mut current) {
                Ok(()) => {}
                Err(BufferError::Corrupted { .. }) => torn.push((pid, copy)),
                Err(e) => return Err(e),
            }
        }
        Ok(torn)
    }

    /// F15: from now on every page write (but page 0's) goes through `area`: written there and
    /// synced before it is written in place. Installed once; a second call changes nothing.
    pub fn use_double_write(&self, area: Arc<DoubleWrite>) {
        let _ = self.double_write.set(area);
    }

    /// Writes sealed pages at their offsets: through the double-write area if one is installed
    /// (F15; page 0 never goes through it), else one write, or a batch of them (F14).
    fn write_sealed(&self, writes: &[(&[u8], u64)], meta: bool) -> io::Result<()> {
        match (self.double_write.get(), writes) {
            (Some(area), _) if !meta => area.write(&*self.file, writes),
            (_, &[(buf, off)]) => self.file.write_all_at(buf, off),
            _ => first_error(self.file.write_all_at_batch(writes)),
        }
    }

    /// F13: with direct I/O, makes sure page `id` lies inside the file's allocated space before
    /// it is written, reserving (`VfsFile::allocate`) an eighth of the file ahead (1 to 64 MiB)
    /// when it does not, so that the write is an overwrite.
    fn reserve_through(&self, id: PageId) -> Result<()> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if !self.direct || id.get() < self.reserved.load(Acquire) {
            return Ok(());
        }
        let _g = self.grow.lock();
        let ps = self.page_size as u64;
        let mut have = self.reserved.load(Acquire);
        if id.get() >= have {
            have = have.max(self.file.len().map_err(|e| io_err(&self.path, e))? / ps);
        }
        if id.get() >= have {
            let ahead = (have * ps / 8).clamp(RESERVE_MIN, RESERVE_MAX) / ps;
            let end = (id.get() + 1).max(have + ahead);
            self.file.allocate(have * ps, (end - have) * ps).map_err(|e| self.fail(e))?;
            have = end;
        }
        self.reserved.store(have, Release);
        Ok(())
    }

    fn arm_marker(&self, page0: &[u8], meta: &Meta) {
        *self.clean_marker.lock() = Some(CleanImage { page0: page0.to_vec(), meta: meta.clone() });
        self.marker_armed.store(true, std::sync::atomic::Ordering::Release);
    }

    /// F11: whether the file says CLEAN and holds `meta` (its page count, free pages and
    /// catalog; the CLEAN flag aside), with no page written since: a close has nothing to
    /// write then, and leaves the file as it is.
    #[must_use]
    pub fn clean_with(&self, meta: &Meta) -> bool {
        if !self.marker_armed.load(std::sync::atomic::Ordering::Acquire) {
            return false;
        }
        self.clean_marker
            .lock()
            .as_ref()
            .is_some_and(|c| Meta { clean: meta.clean, ..c.meta.clone() } == *meta)
    }

    /// F11: before the first change of a file whose page 0 says CLEAN, page 0 is rewritten
    /// without the flag and synced, so a crash from here on is seen as unclean at the next open.
    /// F4: after a failed write, sync or resize no change is made at all (`PreviousIoError`).
    pub(crate) fn before_change(&self) -> Result<()> {
        self.check_usable()?;
        if !self.marker_armed.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let mut marker = self.clean_marker.lock();
        let Some(clean) = marker.as_ref() else { return Ok(()) };
        let mut buf = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
        buf.as_mut_slice().copy_from_slice(&clean.page0);
        let flags = page::get_u32(buf.as_slice(), meta::OFF_FLAGS) & !meta::FLAG_CLEAN;
        page::put_u32(buf.as_mut_slice(), meta::OFF_FLAGS, flags);
        self.write_raw(PageId::META, buf.as_mut_slice())?;
        self.sync()?;
        *marker = None;
        self.marker_armed.store(false, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Writes `meta` as page 0 with its CLEAN flag set, alone, and syncs (F11): the last step
    /// of a clean close, after every page, the free-page chain and page 0 without the flag were
    /// written and synced. The next change of the file clears the flag again.
    ///
    /// # Errors
    /// As [`write_meta`](Self::write_meta) and [`sync`](Self::sync).
    pub fn mark_clean(&self, meta: &Meta) -> Result<()> {
        self.check_usable()?;
        let mut clean = meta.clone();
        clean.clean = true;
        let mut page0 = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
        clean.encode(page0.as_mut_slice())?;
        self.write_raw(PageId::META, page0.as_mut_slice())?;
        self.sync()?;
        if clean.logged {
            *self.clean_marker.lock() = None;
            self.marker_armed.store(false, std::sync::atomic::Ordering::Release);
        } else {
            self.arm_marker(page0.as_slice(), &clean);
        }
        Ok(())
    }

    /// Rewrites page 0 without its CLEAN flag and syncs, if it has the flag (F11): a logged
    /// database's open does this before restart changes anything, so that CLEAN on a logged
    /// file says it was closed cleanly and not opened since.
    ///
    /// # Errors
    /// As [`read_page`](Self::read_page), [`write_meta`](Self::write_meta) and
    /// [`sync`](Self::sync).
    pub fn clear_clean(&self) -> Result<()> {
        self.check_usable()?;
        let mut buf = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
        self.read_page(PageId::META, buf.as_mut_slice())?;
        let flags = page::get_u32(buf.as_slice(), meta::OFF_FLAGS);
        if flags & meta::FLAG_CLEAN == 0 {
            return Ok(());
        }
        page::put_u32(buf.as_mut_slice(), meta::OFF_FLAGS, flags & !meta::FLAG_CLEAN);
        self.write_raw(PageId::META, buf.as_mut_slice())?;
        self.sync()?;
        *self.clean_marker.lock() = None;
        self.marker_armed.store(false, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Creates a new, empty database file through `vfs` (it holds no pages until written; call
    /// [`write_meta`](Self::write_meta) and [`sync`](Self::sync) with [`Meta::new`]), and syncs
    /// its directory so that the name survives a crash (F6).
    ///
    /// # Errors
    /// [`BufferError::Config`] for an unsupported page size or a file system that rejects
    /// direct I/O; [`BufferError::Io`] if the file exists (kind `AlreadyExists`), cannot be
    /// created, or its directory cannot be synced.
    pub fn create(vfs: &dyn Vfs, path: &Path, page_size: usize, direct: bool) -> Result<PageFile> {
        if !page::valid_page_size(page_size) {
            return Err(BufferError::Config(format!(
                "{}: unsupported page size {page_size}; use a power of two from {} to {} bytes",
                path.display(),
                page::MIN_PAGE_SIZE,
                page::MAX_PAGE_SIZE
            )));
        }
        let plain = vfs.open(path, OpenMode::CREATE_NEW).map_err(|e| io_err(path, e))?;
        let file = if direct {
            // Created without O_DIRECT so that a rejection cannot leave a half-made file
            // behind unnoticed: the empty file is removed again (F7).
            drop(plain);
            match open_rw(vfs, path, true) {
                Ok(f) => f,
                Err(e) => {
                    let _ = vfs.remove(path);
                    return Err(e);
                }
            }
        } else {
            plain
        };
        vfs.sync_dir(parent_dir(path)).map_err(|e| io_err(path, e))?;
        Ok(PageFile::with_file(file, path, page_size, direct))
    }

    /// Opens an existing database file through `vfs` and returns it with its metadata, `free_pages` filled
    /// from the persisted free-page chain.
    ///
    /// The page size comes from the file; comparing it with the configured one is the caller's
    /// job (`meta.page_size`).
    ///
    /// # Errors
    /// [`BufferError::NotADatabase`] for an empty or short file or a bad magic,
    /// [`BufferError::FormatVersion`] for another format version, [`BufferError::Corrupted`] for a
    /// damaged meta page (page 0), a file shorter than the recorded page count, or a bad
    /// free-page chain (naming the page); [`BufferError::Config`] if direct I/O is not
    /// supported; [`BufferError::Io`] otherwise. A partial page at the end of the file (a torn
    /// extension, F10a) is not an error: it does not count as a page.
    pub fn open(vfs: &dyn Vfs, path: &Path, direct: bool) -> Result<(PageFile, Meta)> {
        PageFile::open_impl(vfs, path, direct, true)
    }

    /// Like [`PageFile::open`], but without reading the free-page chain (`free_pages` is
    /// empty): for a database whose allocation state is kept by its write-ahead log, where the
    /// chain on disk is only as recent as the last clean close and its pages may have been
    /// reused since (F10).
    ///
    /// # Errors
    /// As [`PageFile::open`], except for free-chain errors.
    pub fn open_logged(vfs: &dyn Vfs, path: &Path, direct: bool) -> Result<(PageFile, Meta)> {
        PageFile::open_impl(vfs, path, direct, false)
    }

    fn open_impl(vfs: &dyn Vfs, path: &Path, direct: bool, read_chain: bool) -> Result<(PageFile, Meta)> {
        let file = open_rw(vfs, path, direct)?;
        let len = file.len().map_err(|e| io_err(path, e))?;
        let not_db = |reason: String| BufferError::NotADatabase { file: path.to_path_buf(), reason };
        let corrupt =
            |reason: String| BufferError::Corrupted { file: path.to_path_buf(), page: PageId::META, reason };
        if len == 0 {
            return Err(not_db("file is empty".into()));
        }
        if len < MIN_PAGE_SIZE as u64 {
            return Err(not_db(format!(
                "file too short: {len} bytes, a database file has at least one \
                 {MIN_PAGE_SIZE}-byte page"
            )));
        }

        // The page size is in the meta page, whose size we do not know yet: every supported
        // page size is at least MIN_PAGE_SIZE, so read that much first.
        let mut first = AlignedBuf::new(MIN_PAGE_SIZE, DIRECT_ALIGN)?;
        file.read_exact_at(first.as_mut_slice(), 0).map_err(|e| io_err(path, e))?;
        let size_field = meta::check_prefix(first.as_slice(), path)?;
        drop(first);
        let page_size = usize::try_from(size_field).unwrap_or(usize::MAX);
        if !page::valid_page_size(page_size) {
            return Err(corrupt(format!("invalid page size {size_field} in the metadata page")));
        }
        if len < page_size as u64 {
            return Err(corrupt(format!(
                "file is {len} bytes, shorter than its first {page_size}-byte page"
            )));
        }

        let pf = PageFile::with_file(file, path, page_size, direct);
        let mut buf = AlignedBuf::new(page_size, DIRECT_ALIGN)?;
        pf.read_page(PageId::META, buf.as_mut_slice())?;
        let (mut meta, free_head) = Meta::decode_with_free_head(buf.as_slice(), path)?;
        let page0 = (meta.clean && !meta.logged).then(|| buf.as_slice().to_vec());

        let page_size_u64 = page_size as u64;
        // F10a: a partial page at the end (a torn extension) does not count as a page. Every
        // page the database uses is whole: the check below holds the recorded page count. Not
        // that of an unlogged file without CLEAN, which no open trusts (F11): a close cut short
        // can leave its page 0 with the count the close wrote and the file without the growth
        // it made, and such a file is unclean (the engine's `Unclean`), not corrupted.
        let file_pages = len / page_size_u64;
        if file_pages < meta.page_count && (meta.clean || meta.logged) {
            return Err(corrupt(format!(
                "the metadata page records {} pages but the file holds only {file_pages} \
                 (truncated file?)",
                meta.page_count
            )));
        }

        if read_chain {
            meta.free_pages = pf.read_free_chain(free_head, meta.page_count, &mut buf)?;
        }
        if let Some(page0) = page0 {
            pf.arm_marker(&page0, &meta);
        }
        Ok((pf, meta))
    }

    /// Follows the free-page chain from `head`, checking every entry (F8).
    fn read_free_chain(
        &self,
        head: Option<PageId>,
        page_count: u64,
        buf: &mut AlignedBuf,
    ) -> Result<Vec<PageId>> {
        let mut pages = Vec::new();
        let mut seen = HashSet::new();
        let mut next = head;
        while let Some(id) = next {
            if !seen.insert(id) {
                return Err(
                    self.corrupted(id, "visited twice while following the free-page chain (cycle)".into())
                );
            }
            self.read_page(id, buf.as_mut_slice())?;
            let page = buf.as_slice();
            match page::page_type(page) {
                Some(PageType::Free) => {}
                other => {
                    return Err(self.corrupted(
                        id,
                        format!(
                            "in the free-page chain but is not a free page (type {})",
                            other.map_or_else(|| "unknown".to_string(), |t| format!("{t:?}"))
                        ),
                    ))
                }
            }
            let link = page::get_u64(page, HEADER_SIZE);
            pages.push(id);
            next = if link == 0 {
                None
            } else if link < page_count {
                PageId::new(link)
            } else {
                return Err(self.corrupted(
                    id,
                    format!(
                        "free-page chain link to page {link} is beyond the page count \
                         {page_count}"
                    ),
                ));
            };
        }
        Ok(pages)
    }

    /// A `Corrupted` error for `page` of this file.
    fn corrupted(&self, page: PageId, reason: String) -> BufferError {
        BufferError::Corrupted { file: self.path.clone(), page, reason }
    }

    /// Fails with `PreviousIoError` once a write, sync or resize has failed (F4).
    fn check_usable(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(BufferError::PreviousIoError { file: self.path.clone() });
        }
        Ok(())
    }

    /// Records a failed write, sync or resize and wraps its error (F4).
    fn fail(&self, source: io::Error) -> BufferError {
        self.failed.store(true, Ordering::Release);
        io_err(&self.path, source)
    }

    /// Checks that a caller's buffer is exactly one page.
    fn check_len(&self, buf: &[u8]) -> Result<()> {
        if buf.len() != self.page_size {
            return Err(BufferError::Config(format!(
                "{}: page buffer of {} bytes, but the page size is {}",
                self.path.display(),
                buf.len(),
                self.page_size
            )));
        }
        Ok(())
    }

    /// Byte offset of page `id`, or `None` if it does not fit a u64.
    fn offset(&self, id: PageId) -> Option<u64> {
        id.get().checked_mul(self.page_size as u64)
    }

    /// True if direct I/O would need a bounce buffer for `buf`.
    fn needs_bounce(&self, buf: &[u8]) -> bool {
        self.direct && !(buf.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN)
    }

    /// Reads page `id` into `buf` and verifies it (F3).
    ///
    /// # Errors
    /// [`BufferError::Config`] if `buf` is not one page long; [`BufferError::Corrupted`] naming
    /// the page if it lies beyond the end of the file or fails its checksum, id or type check;
    /// [`BufferError::Io`] for other read errors; [`BufferError::PreviousIoError`] after an
    /// earlier failed write. On error the contents of `buf` are unspecified.
    pub fn read_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.check_usable()?;
        self.check_len(buf)?;
        let beyond = || self.corrupted(id, "beyond end of file".into());
        let off = self.offset(id).ok_or_else(beyond)?;
        let res = if self.needs_bounce(buf) {
            let mut bounce = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
            let r = self.file.read_exact_at(bounce.as_mut_slice(), off);
            if r.is_ok() {
                buf.copy_from_slice(bounce.as_slice());
            }
            r
        } else {
            self.file.read_exact_at(buf, off)
        };
        self.verify_read(id, buf, res)
    }

    /// The outcome of a read of page `id` into `buf` (F3): a short file is `Corrupted` ("beyond
    /// end of file"), another error `Io`, and a whole read is verified.
    fn verify_read(&self, id: PageId, buf: &[u8], read: io::Result<()>) -> Result<()> {
        match read {
            Ok(()) => page::verify(buf, id).map_err(|reason| self.corrupted(id, reason)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(self.corrupted(id, "beyond end of file".into()))
            }
            Err(e) => Err(io_err(&self.path, e)),
        }
    }

    /// [`read_page`](Self::read_page) for several pages, handed to the file system as one batch
    /// (`VfsFile::read_exact_at_batch`, IO7), which may have them in flight together; one result
    /// per page, in order. Buffers not aligned for direct I/O (where the file uses it) are read
    /// one at a time.
    pub fn read_pages(&self, pages: &mut [(PageId, &mut [u8])]) -> Vec<Result<()>> {
        if self.check_usable().is_err() {
            return pages.iter().map(|_| self.check_usable()).collect();
        }
        let mut results: Vec<Result<()>> = Vec::with_capacity(pages.len());
        let mut batch: Vec<(&mut [u8], u64)> = Vec::with_capacity(pages.len());
        let mut at: Vec<usize> = Vec::with_capacity(pages.len());
        for (i, (id, buf)) in pages.iter_mut().enumerate() {
            let checked = self.check_len(buf).and_then(|()| {
                self.offset(*id).ok_or_else(|| self.corrupted(*id, "beyond end of file".into()))
            });
            match checked {
                Ok(off) if !self.needs_bounce(buf) => {
                    results.push(Ok(()));
                    batch.push((&mut **buf, off));
                    at.push(i);
                }
                Ok(_) => results.push(self.read_page(*id, buf)),
                Err(e) => results.push(Err(e)),
            }
        }
        let read = self.file.read_exact_at_batch(&mut batch);
        drop(batch);
        for (i, r) in at.into_iter().zip(read) {
            let (id, buf) = &pages[i];
            results[i] = self.verify_read(*id, buf, r);
        }
        results
    }

    /// Seals `buf` (F2) and writes it as page `id`. The caller guarantees the header names `id`.
    ///
    /// # Errors
    /// [`BufferError::Config`] if `buf` is not one page long; [`BufferError::Io`] if the write
    /// fails, after which the file is unusable (F4); [`BufferError::PreviousIoError`] after an
    /// earlier failure.
    pub fn write_page(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.before_change()?;
        self.write_raw(id, buf)
    }

    /// [`write_pages`](Self::write_pages) of copies of `pages`, made in `room` (aligned for
    /// direct I/O, grown as needed; keep it for the next batch), in page-id order: for pages
    /// held in buffers that are not aligned, or that must not be sealed in place.
    ///
    /// # Errors
    /// As [`write_pages`](Self::write_pages); `Config` if the room cannot be allocated.
    pub fn write_copies(&self, pages: &[(PageId, &[u8])], room: &mut Option<AlignedBuf>) -> Result<()> {
        let size = self.page_size;
        if room.as_ref().is_none_or(|b| b.as_slice().len() < pages.len() * size) {
            *room = Some(AlignedBuf::new(pages.len() * size, DIRECT_ALIGN)?);
        }
        let out = room.as_mut().expect("made above").as_mut_slice();
        let mut copies: Vec<(PageId, &mut [u8])> = out
            .chunks_mut(size)
            .zip(pages)
            .map(|(out, (id, buf))| {
                out.copy_from_slice(buf);
                (*id, out)
            })
            .collect();
        copies.sort_unstable_by_key(|(id, _)| *id);
        self.write_pages(&mut copies)
    }

    /// Seals and writes several pages at once (F14): as [`write_page`](Self::write_page) each,
    /// but handed to the file system as one batch (`VfsFile::write_all_at_batch`), which may
    /// have them in flight together. The ids must differ. Every buffer must be one page,
    /// aligned for direct I/O if the file uses it.
    ///
    /// # Errors
    /// As [`write_page`](Self::write_page); the first failure makes the file unusable (F4),
    /// and which pages of the batch reached the file is then unknown.
    pub fn write_pages(&self, pages: &mut [(PageId, &mut [u8])]) -> Result<()> {
        self.before_change()?;
        self.check_usable()?;
        let mut offsets = Vec::with_capacity(pages.len());
        for (id, buf) in pages.iter() {
            self.check_len(buf)?;
            debug_assert_eq!(page::page_id(buf), id.get(), "page header names another page");
            if self.needs_bounce(buf) {
                return Err(BufferError::Config(format!(
                    "{}: a batched page write needs buffers aligned for direct I/O",
                    self.path.display()
                )));
            }
            offsets.push(self.offset(*id).ok_or_else(|| {
                BufferError::Config(format!(
                    "{}: page {id} lies beyond the largest file offset",
                    self.path.display()
                ))
            })?);
        }
        if let Some(last) = pages.iter().map(|(id, _)| *id).max() {
            self.reserve_through(last)?;
        }
        for (_, buf) in pages.iter_mut() {
            page::seal(buf);
        }
        let writes: Vec<(&[u8], u64)> = pages.iter().zip(&offsets).map(|((_, b), &o)| (&**b, o)).collect();
        self.write_sealed(&writes, false).map_err(|e| self.fail(e))
    }

    /// [`write_page`](Self::write_page) without the clean-marker step (F11).
    fn write_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.check_usable()?;
        self.check_len(buf)?;
        debug_assert_eq!(
            page::page_id(buf),
            id.get(),
            "page header names another page than the one being written"
        );
        let off = self.offset(id).ok_or_else(|| {
            BufferError::Config(format!(
                "{}: page {id} lies beyond the largest file offset",
                self.path.display()
            ))
        })?;
        self.reserve_through(id)?;
        page::seal(buf);
        let meta = id == PageId::META;
        let res = if self.needs_bounce(buf) {
            let mut bounce = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
            bounce.as_mut_slice().copy_from_slice(buf);
            self.write_sealed(&[(bounce.as_slice(), off)], meta)
        } else {
            self.write_sealed(&[(buf, off)], meta)
        };
        res.map_err(|e| self.fail(e))
    }

    /// Makes every completed write durable (`fdatasync`, F6).
    ///
    /// # Errors
    /// [`BufferError::Io`] if the sync fails, after which the file is unusable (F4);
    /// [`BufferError::PreviousIoError`] after an earlier failure.
    pub fn sync(&self) -> Result<()> {
        let ticket = self.syncs_begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        self.check_usable()?;
        self.file.sync().map_err(|e| self.fail(e))?;
        self.syncs_done.fetch_max(ticket, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// B36: a ticket for the writes that returned before this call; once
    /// [`PageFile::synced_since`] says so for it, they are durable.
    pub(crate) fn sync_ticket(&self) -> u64 {
        self.syncs_begun.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// B36: whether a [`PageFile::sync`] that began after `ticket` was taken has completed.
    pub(crate) fn synced_since(&self, ticket: u64) -> bool {
        self.syncs_done.load(std::sync::atomic::Ordering::SeqCst) > ticket
    }

    /// Sets the file length to `pages` pages (extending with zeroes or truncating).
    ///
    /// # Errors
    /// [`BufferError::Config`] if the length overflows; [`BufferError::Io`] if the resize fails,
    /// after which the file is unusable (F4); [`BufferError::PreviousIoError`] after an earlier
    /// failure.
    pub fn set_len_pages(&self, pages: u64) -> Result<()> {
        self.check_usable()?;
        self.before_change()?;
        let len = pages.checked_mul(self.page_size as u64).ok_or_else(|| {
            BufferError::Config(format!(
                "{}: {pages} pages of {} bytes exceed the largest file size",
                self.path.display(),
                self.page_size
            ))
        })?;
        self.file.set_len(len).map_err(|e| self.fail(e))?;
        self.reserved.store(pages, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Writes the free-page chain of `meta` (each free page formatted as a `Free` page linking
    /// to the next one), then `meta` itself as page 0 — page 0 last (F5). First extends the
    /// file to `meta.page_count` pages if it is shorter, so that `open` finds them all.
    /// Does not sync: call [`sync`](Self::sync) afterwards (F6).
    ///
    /// # Errors
    /// [`BufferError::PageSizeMismatch`] if `meta.page_size` is not this file's page size;
    /// [`BufferError::Corrupted`] naming the page if the allocation is inconsistent
    /// ([`Meta::check_allocation`]: in-memory state is wrong; nothing is written);
    /// [`BufferError::CatalogFull`] or [`BufferError::Config`] from [`Meta::encode`];
    /// [`BufferError::Io`] / [`BufferError::PreviousIoError`] as for
    /// [`write_page`](Self::write_page).
    pub fn write_meta(&self, meta: &Meta) -> Result<()> {
        self.check_usable()?;
        if meta.page_size != self.page_size {
            return Err(BufferError::PageSizeMismatch {
                file: self.path.clone(),
                found: self.page_size,
                requested: meta.page_size,
            });
        }
        if let Err((id, problem)) = meta.check_allocation() {
            return Err(self
                .corrupted(id, format!("{problem} (in-memory allocation is wrong; metadata not written)")));
        }
        // Encode first so a full catalog is reported before anything is written.
        let mut meta_page = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
        meta.encode(meta_page.as_mut_slice())?;

        let len = self.file.len().map_err(|e| io_err(&self.path, e))?;
        let needed = meta.page_count.saturating_mul(self.page_size as u64);
        if len < needed {
            self.set_len_pages(meta.page_count)?;
        }

        let mut buf = AlignedBuf::new(self.page_size, DIRECT_ALIGN)?;
        for (i, &id) in meta.free_pages.iter().enumerate() {
            let next = meta.free_pages.get(i + 1).map_or(0, |p| p.get());
            let page = buf.as_mut_slice();
            page::format(page, id, PageType::Free, 0);
            page::put_u64(page, HEADER_SIZE, next);
            self.write_page(id, page)?;
        }
        self.write_page(PageId::META, meta_page.as_mut_slice())?;
        if meta.clean && !meta.logged {
            self.arm_marker(meta_page.as_slice(), meta);
        }
        Ok(())
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The page size in bytes.
    #[must_use]
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Whole pages the file holds now.
    ///
    /// # Errors
    /// [`BufferError::Io`] if the length cannot be read.
    pub fn len_pages(&self) -> Result<u64> {
        let len = self.file.len().map_err(|e| io_err(&self.path, e))?;
        Ok(len / self.page_size as u64)
    }

    /// True if the file was opened with `O_DIRECT`.
    #[must_use]
    pub fn is_direct(&self) -> bool {
        self.direct
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{File, OpenOptions};
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    use swizzledb_io::{CrashMode, Fault, FaultFs, FaultRule, Op, OsFs};
    use swizzledb_sync::Lsn;

    fn pid(n: u64) -> PageId {
        PageId::new(n).expect("small page id")
    }

    /// A leaf page for `id` whose body is filled with `fill`.
    fn leaf(ps: usize, id: PageId, fill: u8) -> Vec<u8> {
        let mut p = vec![0u8; ps];
        page::format(&mut p, id, PageType::Leaf, 0);
        p[HEADER_SIZE..].fill(fill);
        p
    }

    /// A file of 10 pages: trees at 1 and 2, data pages 3, 5, 6, 8, 9, free chain 7 -> 4.
    fn build(path: &Path, ps: usize) -> Meta {
        let pf = PageFile::create(&OsFs, path, ps, false).expect("create");
        let mut m = Meta::new(ps);
        m.page_count = 10;
        m.free_pages = vec![pid(7), pid(4)];
        m.trees.insert("users".into(), pid(1));
        m.trees.insert("orders".into(), pid(2));
        for n in [1, 2, 3, 5, 6, 8, 9] {
            let mut p = leaf(ps, pid(n), n as u8);
            pf.write_page(pid(n), &mut p).expect("write");
        }
        pf.write_meta(&m).expect("write_meta");
        pf.sync().expect("sync");
        m
    }

    fn write_raw(path: &Path, bytes: &[u8]) {
        let mut f = File::create(path).expect("create raw");
        f.write_all(bytes).expect("write raw");
    }

    fn flip_byte(path: &Path, off: u64) {
        let f = OpenOptions::new().read(true).write(true).open(path).expect("open raw");
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, off).expect("read byte");
        b[0] ^= 0x40;
        f.write_all_at(&b, off).expect("write byte");
    }

    #[test]
    fn create_write_meta_reopen_roundtrip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        for ps in [4096, 8192, 32768] {
            let _ = std::fs::remove_file(&path);
            let m = build(&path, ps);
            let (pf, got) = PageFile::open(&OsFs, &path, false).expect("open");
            assert_eq!(got, m);
            assert_eq!(pf.page_size(), ps);
            assert_eq!(pf.path(), path.as_path());
            assert!(!pf.is_direct());
            let mut buf = vec![0u8; ps];
            pf.read_page(pid(5), &mut buf).expect("read");
            assert_eq!(buf, {
                let mut p = leaf(ps, pid(5), 5);
                page::seal(&mut p);
                p
            });
            // Rewrite with an empty chain and a new tree: the old free pages stay on disk but
            // are no longer reachable.
            let mut m2 = got.clone();
            m2.free_pages.clear();
            m2.trees.insert("new".into(), pid(7));
            pf.write_meta(&m2).expect("write_meta");
            pf.sync().expect("sync");
            drop(pf);
            let (_, got2) = PageFile::open(&OsFs, &path, false).expect("reopen");
            assert_eq!(got2, m2);
        }
    }

    #[test]
    fn fresh_file_roundtrip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let pf = PageFile::create(&OsFs, &path, 8192, false).expect("create");
        pf.write_meta(&Meta::new(8192)).expect("write_meta");
        pf.sync().expect("sync");
        drop(pf);
        let (_, m) = PageFile::open(&OsFs, &path, false).expect("open");
        assert_eq!(m, Meta { id: m.id, ..Meta::new(8192) });
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 8192);
    }

    #[test]
    fn create_rejects_existing_file_and_bad_page_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        write_raw(&path, b"hello");
        match PageFile::create(&OsFs, &path, 4096, false) {
            Err(BufferError::Io { source, file }) => {
                assert_eq!(source.kind(), io::ErrorKind::AlreadyExists);
                assert_eq!(file, path);
            }
            other => panic!("expected AlreadyExists, got {other:?}"),
        }
        let path2 = dir.path().join("db2");
        assert!(matches!(PageFile::create(&OsFs, &path2, 5000, false), Err(BufferError::Config(_))));
        assert!(!path2.exists());
    }

    #[test]
    fn open_non_database_files_is_not_a_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x");
        let mut seed = 0x1234_5678_9abc_def1_u64;
        let mut random = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect()
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (Vec::new(), "empty"),
            (b"SQLite format 3\0".to_vec(), "too short"),
            (random(4095), "too short"),
            (random(4096), "bad magic"),
            (random(100_000), "bad magic"),
            (vec![0u8; 8192], "bad magic"),
        ];
        for (bytes, want) in cases {
            write_raw(&path, &bytes);
            match PageFile::open(&OsFs, &path, false) {
                Err(BufferError::NotADatabase { file, reason }) => {
                    assert_eq!(file, path);
                    assert!(reason.contains(want), "{reason:?} should contain {want:?}");
                }
                other => panic!("{} bytes: expected NotADatabase, got {other:?}", bytes.len()),
            }
        }
        assert!(matches!(
            PageFile::open(&OsFs, &dir.path().join("missing"), false),
            Err(BufferError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound
        ));
    }

    #[test]
    fn wrong_format_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        let f = OpenOptions::new().write(true).open(&path).expect("open raw");
        f.write_all_at(&7u32.to_le_bytes(), meta::OFF_VERSION as u64).expect("patch version");
        match PageFile::open(&OsFs, &path, false) {
            Err(BufferError::FormatVersion { found, expected, .. }) => {
                assert_eq!((found, expected), (7, meta::FORMAT_VERSION));
            }
            other => panic!("expected FormatVersion, got {other:?}"),
        }
    }

    #[test]
    fn flipped_byte_in_data_page_is_corrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        flip_byte(&path, 5 * 4096 + 1000);
        let (pf, _) = PageFile::open(&OsFs, &path, false).expect("open still works");
        let mut buf = vec![0u8; 4096];
        match pf.read_page(pid(5), &mut buf) {
            Err(BufferError::Corrupted { file, page, reason }) => {
                assert_eq!(file, path);
                assert_eq!(page, pid(5));
                assert!(reason.contains("checksum"), "{reason}");
            }
            other => panic!("expected Corrupted, got {other:?}"),
        }
        // Other pages are unaffected; the error is not sticky.
        pf.read_page(pid(6), &mut buf).expect("page 6");
    }

    #[test]
    fn misdirected_and_unwritten_pages_are_corrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        let (pf, _) = PageFile::open(&OsFs, &path, false).expect("open");
        // Copy page 3 over page 6: the header names page 3.
        let mut buf = vec![0u8; 4096];
        pf.read_page(pid(3), &mut buf).expect("read 3");
        let f = OpenOptions::new().write(true).open(&path).expect("open raw");
        f.write_all_at(&buf, 6 * 4096).expect("misdirect");
        assert!(matches!(
            pf.read_page(pid(6), &mut buf),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == pid(6) && reason.contains("misdirected")
        ));
        pf.set_len_pages(12).expect("extend");
        assert!(matches!(
            pf.read_page(pid(11), &mut buf),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == pid(11) && reason.contains("never written")
        ));
        assert!(matches!(
            pf.read_page(pid(12), &mut buf),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == pid(12) && reason == "beyond end of file"
        ));
        assert!(matches!(
            pf.read_page(pid(PageId::LIMIT - 1), &mut buf),
            Err(BufferError::Corrupted { reason, .. }) if reason == "beyond end of file"
        ));
        let mut short = vec![0u8; 100];
        assert!(matches!(pf.read_page(pid(1), &mut short), Err(BufferError::Config(_))));
        assert!(matches!(pf.write_page(pid(1), &mut short), Err(BufferError::Config(_))));
    }

    #[test]
    fn flipped_byte_in_meta_page_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        let bytes = std::fs::read(&path).expect("read file");
        for off in [0u64, 4, 9, 20, 33, 41, 45, 50, 60, 66, 70, 75, 90, 2000, 4095] {
            write_raw(&path, &bytes);
            flip_byte(&path, off);
            match PageFile::open(&OsFs, &path, false) {
                Err(BufferError::Corrupted { page, .. }) => assert_eq!(page, PageId::META),
                Err(BufferError::NotADatabase { .. } | BufferError::FormatVersion { .. }) => {}
                other => panic!("flip at {off}: expected an error, got {other:?}"),
            }
        }
    }

    #[test]
    fn bad_file_lengths_are_corrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        let f = OpenOptions::new().write(true).open(&path).expect("open raw");
        // F10a: a partial last page (a torn extension) is no page, and no error.
        f.set_len(10 * 4096 + 100).expect("torn");
        let (_, meta) = PageFile::open(&OsFs, &path, false).expect("a partial last page is ignored");
        assert_eq!(meta.page_count, 10);
        f.set_len(9 * 4096 + 100).expect("truncate into the pages in use");
        assert!(matches!(
            PageFile::open(&OsFs, &path, false),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == PageId::META && reason.contains("truncated")
        ));
        f.set_len(9 * 4096).expect("truncate");
        assert!(matches!(
            PageFile::open(&OsFs, &path, false),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == PageId::META && reason.contains("truncated")
        ));
        // Extra pages beyond page_count (extension not yet recorded) are tolerated.
        f.set_len(12 * 4096).expect("extend");
        assert!(PageFile::open(&OsFs, &path, false).is_ok());
        // A meta page claiming 8 KiB pages in a 4 KiB file.
        let pf = PageFile::create(&OsFs, &dir.path().join("small"), 8192, false).expect("create");
        pf.write_meta(&Meta::new(8192)).expect("meta");
        pf.set_len_pages(0).expect("shrink");
        let f2 = OpenOptions::new().write(true).open(pf.path()).expect("raw");
        let mut page = vec![0u8; 8192];
        Meta::new(8192).encode(&mut page).expect("encode");
        f2.write_all_at(&page[..4096], 0).expect("half page");
        assert!(matches!(
            PageFile::open(&OsFs, pf.path(), false),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == PageId::META && reason.contains("shorter")
        ));
    }

    /// A handle that skips `open`'s checks, for damaging files in tests.
    fn unchecked(path: &Path, page_size: usize) -> PageFile {
        PageFile::with_file(OsFs.open(path, OpenMode::EXISTING).expect("raw"), path, page_size, false)
    }

    /// Rewrites the free-page link stored in page `id`.
    fn relink(pf: &PageFile, id: PageId, next: u64) {
        let mut buf = vec![0u8; pf.page_size()];
        pf.read_page(id, &mut buf).expect("read free page");
        page::put_u64(&mut buf, HEADER_SIZE, next);
        pf.write_page(id, &mut buf).expect("write free page");
    }

    #[test]
    fn free_chain_cycle_is_corrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        let (pf, _) = PageFile::open(&OsFs, &path, false).expect("open");
        relink(&pf, pid(4), 7); // 7 -> 4 -> 7
        drop(pf);
        match PageFile::open(&OsFs, &path, false) {
            Err(BufferError::Corrupted { page, reason, .. }) => {
                assert_eq!(page, pid(7));
                assert!(reason.contains("cycle"), "{reason}");
            }
            other => panic!("expected Corrupted, got {other:?}"),
        }
    }

    #[test]
    fn free_chain_bad_entries_are_corrupted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 4096);
        let (pf, _) = PageFile::open(&OsFs, &path, false).expect("open");
        relink(&pf, pid(4), 10); // beyond page_count
        drop(pf);
        assert!(matches!(
            PageFile::open(&OsFs, &path, false),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == pid(4) && reason.contains("beyond the page count")
        ));
        // Open fails now, so repair the link through an unchecked handle: point it at a leaf.
        relink(&unchecked(&path, 4096), pid(4), 3);
        assert!(matches!(
            PageFile::open(&OsFs, &path, false),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == pid(3) && reason.contains("Leaf")
        ));
        // A free page with a bad checksum.
        build(&dir.path().join("db2"), 4096);
        flip_byte(&dir.path().join("db2"), 4 * 4096 + 100);
        assert!(matches!(
            PageFile::open(&OsFs, &dir.path().join("db2"), false),
            Err(BufferError::Corrupted { page, reason, .. })
                if page == pid(4) && reason.contains("checksum")
        ));
    }

    #[test]
    fn write_meta_rejects_bad_free_lists_and_full_catalogs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let m = build(&path, 4096);
        let (pf, _) = PageFile::open(&OsFs, &path, false).expect("open");
        for bad in [vec![pid(0)], vec![pid(10)], vec![pid(4), pid(4)]] {
            let mut m2 = m.clone();
            m2.free_pages = bad;
            assert!(matches!(pf.write_meta(&m2), Err(BufferError::Corrupted { .. })));
        }
        assert!(matches!(
            pf.write_meta(&Meta::new(8192)),
            Err(BufferError::PageSizeMismatch { found: 4096, requested: 8192, .. })
        ));
        let mut m2 = m.clone();
        m2.page_count = 1000;
        for i in 0..100 {
            m2.trees.insert(format!("tree-with-a-rather-long-name-{i:030}"), pid(500 + i));
        }
        assert!(matches!(pf.write_meta(&m2), Err(BufferError::CatalogFull { trees: 102 })));
        // None of the rejected calls changed the file or made it unusable.
        pf.sync().expect("still usable");
        drop(pf);
        let (_, got) = PageFile::open(&OsFs, &path, false).expect("reopen");
        assert_eq!(got, m);
    }

    #[test]
    fn write_meta_extends_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let pf = PageFile::create(&OsFs, &path, 4096, false).expect("create");
        let mut m = Meta::new(4096);
        m.page_count = 5;
        m.free_pages = vec![pid(2)];
        pf.write_meta(&m).expect("write_meta");
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 5 * 4096);
        drop(pf);
        let (_, got) = PageFile::open(&OsFs, &path, false).expect("open");
        assert_eq!(got, m);
    }

    #[test]
    fn page_size_mismatch_is_left_to_the_caller() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        build(&path, 16384);
        let (pf, m) = PageFile::open(&OsFs, &path, false).expect("open");
        assert_eq!(m.page_size, 16384);
        assert_eq!(pf.page_size(), 16384);
    }

    /// A database file `/db/data` on a fresh `FaultFs`, built like [`build`] and synced.
    fn build_on(fs: &FaultFs) -> (PageFile, Meta) {
        fs.create_dir_all(Path::new("/db")).expect("mkdir");
        let pf = PageFile::create(fs, Path::new("/db/data"), 4096, false).expect("create");
        let mut m = Meta::new(4096);
        m.page_count = 10;
        m.free_pages = vec![pid(7), pid(4)];
        for n in [1, 2, 3, 5, 6, 8, 9] {
            pf.write_page(pid(n), &mut leaf(4096, pid(n), n as u8)).expect("write");
        }
        pf.write_meta(&m).expect("write_meta");
        pf.sync().expect("sync");
        (pf, m)
    }

    /// F11: the first change after an open of a clean file clears CLEAN durably before it is
    /// made; a file only read stays clean; `mark_clean` sets it; logged files never arm it.
    #[test]
    fn f11_the_first_change_clears_clean_durably_before_it_is_made() {
        let fs = FaultFs::new();
        let (pf, m) = build_on(&fs);
        assert!(m.clean);
        drop(pf);
        let path = Path::new("/db/data");
        let (pf, got) = PageFile::open(&fs, path, false).expect("open");
        assert!(got.clean, "written clean and synced");
        let mut buf = vec![0u8; 4096];
        pf.read_page(pid(3), &mut buf).expect("read");
        fs.crash(CrashMode::DropUnsynced);
        drop(pf);
        let (pf, got) = PageFile::open(&fs, path, false).expect("open");
        assert!(got.clean, "a file only read stays clean");
        let syncs = fs.calls(Op::Sync, Some("/db/data"));
        pf.write_page(pid(3), &mut leaf(4096, pid(3), 42)).expect("write");
        pf.write_page(pid(5), &mut leaf(4096, pid(5), 42)).expect("write");
        assert_eq!(fs.calls(Op::Sync, Some("/db/data")), syncs + 1, "one sync, before the first write");
        // Even if every unsynced write survives, page 0 says unclean.
        fs.crash(CrashMode::KeepUnsynced);
        drop(pf);
        let (pf, got) = PageFile::open(&fs, path, false).expect("open");
        assert!(!got.clean);
        pf.mark_clean(&got).expect("mark clean");
        fs.crash(CrashMode::DropUnsynced);
        drop(pf);
        let (pf, got) = PageFile::open(&fs, path, false).expect("open");
        assert!(got.clean, "mark_clean is durable");
        let logged = Meta { logged: true, ..got.clone() };
        pf.mark_clean(&logged).expect("mark clean");
        let syncs = fs.calls(Op::Sync, Some("/db/data"));
        pf.write_page(pid(3), &mut leaf(4096, pid(3), 43)).expect("write");
        assert_eq!(fs.calls(Op::Sync, Some("/db/data")), syncs, "a logged file never rewrites page 0");
    }

    #[test]
    fn f3_torn_page_reads_back_as_corrupted_naming_the_page() {
        let (mut torn, mut kept, mut dropped) = (0, 0, 0);
        for seed in 0..24 {
            let fs = FaultFs::new();
            let (pf, _) = build_on(&fs);
            let mut new = leaf(4096, pid(5), 0xEE);
            pf.write_page(pid(5), &mut new).expect("unsynced write");
            fs.crash(CrashMode::Torn { seed });
            assert!(
                matches!(pf.read_page(pid(5), &mut vec![0u8; 4096]), Err(BufferError::Io { .. })),
                "the handle from before the crash is dead"
            );
            let (pf, _) = PageFile::open(&fs, Path::new("/db/data"), false).expect("reopen");
            let mut buf = vec![0u8; 4096];
            match pf.read_page(pid(5), &mut buf) {
                Ok(()) if buf == new => kept += 1,
                Ok(()) => {
                    assert_eq!(buf[HEADER_SIZE], 5, "seed {seed}: neither the old nor the new page");
                    dropped += 1;
                }
                Err(BufferError::Corrupted { page, reason, .. }) => {
                    assert_eq!(page, pid(5), "seed {seed}");
                    assert!(reason.contains("checksum"), "seed {seed}: {reason}");
                    torn += 1;
                }
                Err(e) => panic!("seed {seed}: unexpected {e}"),
            }
            pf.read_page(pid(6), &mut buf).expect("other pages are intact");
        }
        assert!(torn > 0, "24 seeds never tore an 8-sector page (kept {kept}, dropped {dropped})");
    }

    /// F15: with the double-write area, a crash that tears unsynced in-place writes leaves no
    /// torn page once `torn_pages` are put back: each page is its old or its new version, across more batches
    /// than the area has regions (so regions were reused after data syncs); and a slot at or
    /// past `below` is never put back.
    #[test]
    fn f15_the_double_write_area_puts_back_every_torn_page() {
        use crate::DoubleWrite;
        let (mut restored, mut torn_without) = (0, 0);
        for seed in 0..12 {
            for guarded in [true, false] {
                let fs = FaultFs::new();
                let (pf, _) = build_on(&fs);
                pf.set_len_pages(40).expect("grow");
                pf.sync().expect("sync");
                let area = Arc::new(DoubleWrite::open(&fs, Path::new("/db/dw"), 4096).expect("area"));
                if guarded {
                    pf.use_double_write(Arc::clone(&area));
                }
                let ids: Vec<PageId> = (10..40).map(pid).collect();
                // 12 batches of 30 pages: more slots than the area's 8 regions of 64 hold once.
                for round in 0..12u8 {
                    let mut bufs: Vec<Vec<u8>> = ids.iter().map(|&id| lsn_leaf(id, round)).collect();
                    let mut pages: Vec<(PageId, &mut [u8])> =
                        ids.iter().copied().zip(bufs.iter_mut().map(Vec::as_mut_slice)).collect();
                    pf.write_pages(&mut pages).expect("batch");
                }
                fs.crash(CrashMode::Torn { seed });
                let (pf, _) = PageFile::open(&fs, Path::new("/db/data"), false).expect("reopen");
                let area = DoubleWrite::open(&fs, Path::new("/db/dw"), 4096).expect("area");
                for (id, mut copy) in pf.torn_pages(&area, Lsn(u64::MAX)).expect("torn pages") {
                    assert!(guarded, "seed {seed}: the area of an unguarded file names page {id}");
                    pf.write_page(id, &mut copy).expect("put back");
                    restored += 1;
                }
                let mut buf = vec![0u8; 4096];
                for &id in &ids {
                    match pf.read_page(id, &mut buf) {
                        Ok(()) => {
                            let round = buf[HEADER_SIZE];
                            assert!(
                                buf == lsn_leaf(id, round),
                                "seed {seed}: page {id} is no version written"
                            );
                        }
                        Err(e) => {
                            assert!(!guarded, "seed {seed}: page {id} torn after restore: {e}");
                            torn_without += 1;
                        }
                    }
                }
            }
        }
        assert!(restored > 0, "12 seeds tore no page the area put back");
        assert!(torn_without > 0, "12 seeds tore no page without the area: the test shows nothing");

        // A slot at or past `below` (a log cut below it) stays out.
        let fs = FaultFs::new();
        let (pf, _) = build_on(&fs);
        let area = Arc::new(DoubleWrite::open(&fs, Path::new("/db/dw"), 4096).expect("area"));
        pf.use_double_write(Arc::clone(&area));
        pf.write_page(pid(5), &mut lsn_leaf(pid(5), 9)).expect("write");
        let mut bad = vec![0u8; 4096];
        pf.read_page(pid(6), &mut bad).expect("read");
        bad[100] ^= 1; // not sealed again: page 5's copy in the file fails F3
        pf.file.write_all_at(&bad, pf.offset(pid(5)).unwrap()).expect("damage");
        assert!(pf.torn_pages(&area, Lsn(9)).expect("torn").is_empty(), "the slot is at the log's end");
        assert_eq!(pf.torn_pages(&area, Lsn(10)).expect("torn"), vec![(pid(5), lsn_leaf(pid(5), 9))]);
    }

    /// A leaf page whose body and page LSN are `round`.
    /// F15: when the data-file sync that frees the area's regions fails, every writer waiting
    /// for a region wakes and returns (the sync's error, or the file's F4 refusal): none waits
    /// for a release that never comes. Many rounds, so that a writer often arrives while
    /// another's sync runs.
    #[test]
    fn f15_a_failed_sync_for_regions_leaves_no_writer_waiting() {
        use crate::DoubleWrite;
        for round in 0..200u64 {
            let fs = FaultFs::new();
            let (pf, _) = build_on(&fs);
            pf.set_len_pages(40).expect("grow");
            pf.sync().expect("sync");
            pf.use_double_write(Arc::new(DoubleWrite::open(&fs, Path::new("/db/dw"), 4096).expect("area")));
            // Every region holds a batch whose in-place write is not synced yet.
            for n in 10..18 {
                pf.write_page(pid(n), &mut lsn_leaf(pid(n), 1)).expect("write");
            }
            fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).on_path("/db/data").repeating());
            let pf = Arc::new(pf);
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            for t in 0..4u64 {
                let (pf, done_tx) = (Arc::clone(&pf), done_tx.clone());
                std::thread::spawn(move || {
                    let n = 20 + t;
                    let result = pf.write_page(pid(n), &mut lsn_leaf(pid(n), 2));
                    done_tx.send(result.is_err()).unwrap();
                });
            }
            for _ in 0..4 {
                let failed = done_rx
                    .recv_timeout(std::time::Duration::from_secs(20))
                    .unwrap_or_else(|_| panic!("round {round}: a writer still waits for a region"));
                assert!(failed, "round {round}: a write needing a region succeeded without a sync");
            }
        }
    }

    fn lsn_leaf(id: PageId, round: u8) -> Vec<u8> {
        let mut p = leaf(4096, id, round);
        page::set_page_lsn(&mut p, Lsn(u64::from(round)));
        page::seal(&mut p);
        p
    }

    #[test]
    fn f4_write_sync_and_resize_errors_are_sticky() {
        let cases = [
            (Op::Write, Fault::Eio),
            (Op::Write, Fault::Enospc),
            (Op::Sync, Fault::Eio),
            (Op::Sync, Fault::Enospc),
            (Op::SetLen, Fault::Eio),
        ];
        for (op, fault) in cases {
            let fs = FaultFs::new();
            let (pf, m) = build_on(&fs);
            fs.fail_next(FaultRule::new(op, fault).on_path("/db/data"));
            let mut page = leaf(4096, pid(3), 33);
            let err = match op {
                Op::Write => pf.write_page(pid(3), &mut page),
                Op::Sync => pf.sync(),
                _ => pf.set_len_pages(12),
            };
            let want = fault.to_io_error().raw_os_error();
            assert!(
                matches!(&err, Err(BufferError::Io { source, .. }) if source.raw_os_error() == want),
                "{op:?}/{fault:?}: {err:?}"
            );
            let mut buf = vec![0u8; 4096];
            let prev = |r: Result<()>| matches!(r, Err(BufferError::PreviousIoError { .. }));
            assert!(prev(pf.read_page(pid(1), &mut buf)), "{op:?}: read after failure");
            assert!(prev(pf.write_page(pid(3), &mut page)), "{op:?}: write after failure");
            assert!(prev(pf.sync()), "{op:?}: sync after failure");
            assert!(prev(pf.set_len_pages(10)), "{op:?}: resize after failure");
            assert!(prev(pf.write_meta(&m)), "{op:?}: write_meta after failure");
        }
    }

    #[test]
    fn f4_read_errors_are_not_sticky() {
        let fs = FaultFs::new();
        let (pf, _) = build_on(&fs);
        fs.fail_next(FaultRule::new(Op::Read, Fault::Eio));
        let mut buf = vec![0u8; 4096];
        assert!(matches!(
            pf.read_page(pid(3), &mut buf),
            Err(BufferError::Io { source, .. }) if source.raw_os_error() == Some(libc::EIO)
        ));
        pf.read_page(pid(3), &mut buf).expect("the next read works");
        pf.sync().expect("and the file is still usable");
    }

    #[test]
    fn f6_create_makes_the_name_durable_and_nothing_else() {
        let fs = FaultFs::new();
        let (pf, m) = build_on(&fs);
        assert_eq!(fs.calls(Op::SyncDir, Some("/db")), 1, "create syncs the directory once");
        let mut page = leaf(4096, pid(3), 99);
        pf.write_page(pid(3), &mut page).expect("unsynced");
        fs.crash(CrashMode::DropUnsynced);
        let (pf, got) = PageFile::open(&fs, Path::new("/db/data"), false).expect("the file survives");
        // F11: the page write cleared the CLEAN flag, durably, before it was made.
        assert_eq!(got, Meta { clean: false, ..m.clone() });
        let mut buf = vec![0u8; 4096];
        pf.read_page(pid(3), &mut buf).expect("old page");
        assert_eq!(buf[HEADER_SIZE], 3, "the unsynced write is gone");

        // A failing directory sync fails the create.
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/db")).expect("mkdir");
        fs.fail_next(FaultRule::new(Op::SyncDir, Fault::Eio));
        assert!(matches!(
            PageFile::create(&fs, Path::new("/db/data"), 4096, false),
            Err(BufferError::Io { source, .. }) if source.raw_os_error() == Some(libc::EIO)
        ));
    }

    #[test]
    fn f13_direct_writes_past_the_end_reserve_space_ahead_and_flush_trims_it() {
        let path = Path::new("reserve.db");
        let fs = FaultFs::new();
        let pf = PageFile::create(&fs, path, 4096, true).expect("direct create");
        let mut m = Meta::new(4096);
        m.page_count = 6;
        pf.write_meta(&m).expect("write_meta");
        let write = |pf: &PageFile, id: u64, byte: u8| {
            let mut buf = AlignedBuf::new(4096, DIRECT_ALIGN).expect("alloc");
            page::format(buf.as_mut_slice(), pid(id), PageType::Leaf, 0);
            buf.as_mut_slice()[300] = byte;
            pf.write_page(pid(id), buf.as_mut_slice())
        };
        let set_lens = fs.calls(Op::SetLen, None);
        write(&pf, 9, 9).expect("write past the end");
        assert_eq!(pf.len_pages().unwrap(), 6 + RESERVE_MIN / 4096, "reserved 1 MiB ahead");
        assert_eq!(fs.calls(Op::SetLen, None), set_lens + 1, "one reservation");
        for id in 10..40 {
            write(&pf, id, id as u8).expect("write inside the reservation");
        }
        assert_eq!(fs.calls(Op::SetLen, None), set_lens + 1, "writes inside it reserve nothing");
        // The pages in between read as zeros (not a page: Corrupted), the written ones intact.
        let mut buf = AlignedBuf::new(4096, DIRECT_ALIGN).expect("alloc");
        assert!(matches!(pf.read_page(pid(7), buf.as_mut_slice()), Err(BufferError::Corrupted { .. })));
        pf.read_page(pid(9), buf.as_mut_slice()).expect("read");
        assert_eq!(buf.as_slice()[300], 9);
        // open tolerates the extra pages; flush's exact length (set_len_pages) trims them.
        m.page_count = 40;
        pf.write_meta(&m).expect("write_meta");
        pf.sync().expect("sync");
        drop(pf);
        let (pf, got) = PageFile::open(&fs, path, true).expect("open with reserved pages");
        assert_eq!(got.page_count, 40);
        pf.set_len_pages(40).expect("trim");
        assert_eq!(pf.len_pages().unwrap(), 40);
        // A failed reservation is a failed resize: sticky (F4), and nothing was written.
        fs.fail_next(FaultRule::new(Op::SetLen, Fault::Enospc));
        assert!(matches!(write(&pf, 41, 1), Err(BufferError::Io { .. })));
        assert!(matches!(write(&pf, 3, 1), Err(BufferError::PreviousIoError { .. })));
        assert_eq!(pf.len_pages().unwrap(), 40);

        // Without direct I/O nothing is reserved: the write extends the file by itself.
        let fs = FaultFs::new();
        let pf = PageFile::create(&fs, path, 4096, false).expect("create");
        write(&pf, 9, 9).expect("write past the end");
        assert_eq!(pf.len_pages().unwrap(), 10);
    }

    #[test]
    fn f7_direct_io_through_the_vfs_uses_aligned_calls_or_fails_as_config() {
        let path = Path::new("direct.db");
        // The plain create is open call 1, the direct reopen call 2: reject the latter, as
        // EINVAL (kind InvalidInput) or as unsupported.
        for kind in [io::ErrorKind::InvalidInput, io::ErrorKind::Unsupported] {
            let fs = FaultFs::new();
            fs.fail_next(FaultRule::new(Op::Open, Fault::Kind(kind)).nth(2));
            match PageFile::create(&fs, path, 4096, true) {
                Err(BufferError::Config(msg)) => assert!(msg.contains("--direct-io"), "{msg}"),
                other => panic!("expected Config, got {other:?}"),
            }
            assert!(!fs.exists(path), "the rejected file is removed");
        }
        // Another error on the reopen is reported as it is; the empty file is removed too.
        let fs = FaultFs::new();
        fs.fail_next(FaultRule::new(Op::Open, Fault::Eio).nth(2));
        assert!(matches!(PageFile::create(&fs, path, 4096, true), Err(BufferError::Io { .. })));
        assert!(!fs.exists(path));

        // Accepted: FaultFs fails any misaligned direct call with EINVAL, so this shows every call
        // the page file makes is aligned, bounce buffers included.
        let fs = FaultFs::new();
        let pf = PageFile::create(&fs, path, 4096, true).expect("direct create");
        let mut m = Meta::new(4096);
        m.page_count = 4;
        m.free_pages = vec![pid(3)];
        pf.write_meta(&m).expect("write_meta");
        let mut big = AlignedBuf::new(2 * 4096, DIRECT_ALIGN).expect("alloc");
        let unaligned = &mut big.as_mut_slice()[1..4097];
        page::format(unaligned, pid(2), PageType::Leaf, 0);
        unaligned[200] = 43;
        pf.write_page(pid(2), unaligned).expect("unaligned write");
        pf.sync().expect("sync");
        drop(pf);
        let (pf, got) = PageFile::open(&fs, path, true).expect("open direct");
        assert_eq!(got, Meta { clean: false, ..m.clone() }, "F11: a page write clears CLEAN");
        let unaligned = &mut big.as_mut_slice()[3..4099];
        pf.read_page(pid(2), unaligned).expect("unaligned read");
        assert_eq!(unaligned[200], 43);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no O_DIRECT")]
    fn direct_io_or_config_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("direct.db");
        let pf = match PageFile::create(&OsFs, &path, 4096, true) {
            Ok(pf) => pf,
            Err(BufferError::Config(msg)) => {
                // tmpfs and some other file systems reject O_DIRECT.
                assert!(msg.contains("--direct-io"), "{msg}");
                assert!(!path.exists(), "the rejected file must be removed");
                return;
            }
            Err(e) => panic!("unexpected error {e}"),
        };
        assert!(pf.is_direct());
        let mut m = Meta::new(4096);
        m.page_count = 4;
        m.free_pages = vec![pid(3)];
        m.trees.insert("t".into(), pid(1));
        // Aligned buffer.
        let mut aligned = AlignedBuf::new(4096, DIRECT_ALIGN).expect("alloc");
        page::format(aligned.as_mut_slice(), pid(1), PageType::Leaf, 0);
        aligned.as_mut_slice()[100] = 42;
        pf.write_meta(&m).expect("write_meta");
        pf.write_page(pid(1), aligned.as_mut_slice()).expect("aligned write");
        // Unaligned buffer: bytes 1..4097 of a larger aligned region.
        let mut big = AlignedBuf::new(2 * 4096, DIRECT_ALIGN).expect("alloc");
        let unaligned = &mut big.as_mut_slice()[1..4097];
        page::format(unaligned, pid(2), PageType::Leaf, 0);
        unaligned[200] = 43;
        pf.write_page(pid(2), unaligned).expect("unaligned write");
        pf.sync().expect("sync");
        drop(pf);

        let (pf, got) = PageFile::open(&OsFs, &path, true).expect("open direct");
        assert_eq!(got, Meta { clean: false, ..m.clone() }, "F11: a page write clears CLEAN");
        let mut big = AlignedBuf::new(2 * 4096, DIRECT_ALIGN).expect("alloc");
        let unaligned = &mut big.as_mut_slice()[7..4103];
        pf.read_page(pid(1), unaligned).expect("unaligned read");
        assert_eq!(unaligned[100], 42);
        let mut aligned = AlignedBuf::new(4096, DIRECT_ALIGN).expect("alloc");
        pf.read_page(pid(2), aligned.as_mut_slice()).expect("aligned read");
        assert_eq!(aligned.as_slice()[200], 43);
        assert!(matches!(
            pf.read_page(pid(4), aligned.as_mut_slice()),
            Err(BufferError::Corrupted { reason, .. }) if reason == "beyond end of file"
        ));
    }

    #[test]
    fn concurrent_positional_io() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let pf = PageFile::create(&OsFs, &path, 4096, false).expect("create");
        let mut m = Meta::new(4096);
        m.page_count = 65;
        pf.write_meta(&m).expect("meta");
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let pf = &pf;
                s.spawn(move || {
                    for n in (1 + t * 16)..(1 + (t + 1) * 16) {
                        let mut p = leaf(4096, pid(n), n as u8);
                        pf.write_page(pid(n), &mut p).expect("write");
                    }
                });
            }
        });
        let mut buf = vec![0u8; 4096];
        for n in 1..65 {
            pf.read_page(pid(n), &mut buf).expect("read");
            assert_eq!(buf[HEADER_SIZE], n as u8);
        }
    }
}
