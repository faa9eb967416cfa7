//! Read-only inspection of a database file and its log: what `swizzledb stat`, `verify`, `dump`
//! and `log` print, for library users too.
//!
//! Nothing here writes. Every file is opened read-only at the operating-system level
//! (`O_RDONLY`), through a private [`Vfs`] that fails every write; the one change the readers
//! below ask for — the log cutting a torn tail (wal README W7) — is kept in memory and reported
//! ([`LogRecords::torn_tail`]), never applied. No restart runs: a logged database that was not
//! closed cleanly is read as its file holds it, which restart would change (see
//! [`FileInfo::clean`]). A file open for writing in a [`crate::Database`] (in this or another
//! process) is read all the same and flagged ([`FileInfo::in_use`], [`LogRecords::in_use`]): its
//! pages may change while they are read, so what is read need not be consistent. While a file
//! is being inspected it holds a shared lock, so a `Database` cannot open it for writing
//! ([`crate::Error::AlreadyOpen`]); a read-only one can.
//!
//! # Pages restart rebuilds are not damage
//!
//! A logged database not closed cleanly ([`VerifyReport::needs_restart`]) is in the middle of
//! its history: pages written since the last checkpoint may be missing (beyond the end of the
//! file: their writes were never synced), never written (all zero), torn, or older than the
//! log. [`DatabaseFile::verify`] reads the log as restart's analysis would (RECOVERY.md R8)
//! and applies this rule to a page whose copy fails its checks (beyond the end of the file,
//! checksum, page id or page type):
//!
//! - it is **rebuilt by restart**, not damage ([`VerifyReport::rebuilt_by_restart`]), if
//!   restart's redo changes it — it is in the last checkpoint's dirty page table or a record
//!   from the checkpoint's begin record on changes it (R8) — and the log kept, or the log
//!   archive, holds a whole image of it (a structure image, a leaf change's base image, a new
//!   overflow page: `carries_image` in `repair.rs`). Redo then starts from that image (R9) or,
//!   when it needs the file's copy and finds it damaged, rebuilds it by single-page recovery
//!   from the same image on (R18). A page a record allocates is always logged as an image
//!   (R3), so every page the log allocates is covered;
//! - it is not damage either if it is free at the end of the log (the checkpoint's free set,
//!   then the records' allocations and frees): restart reads no free page;
//! - otherwise — a page restart does not touch, or one the log holds no image of — it is
//!   damage ([`VerifyReport::damage`]), as in a file at rest (all-zero pages excepted: a file
//!   restart would change may hold pages the pool reserved but never wrote).
//!
//! A tree whose structure check fails in such a file is not damage when restart's redo
//! changes any page ([`VerifyReport::pending_trees`]): its pages are as of the crash, some
//! older than others, and the check holds for the file restart leaves. When the log cannot be
//! read, none of this applies: every failing page is damage (and `open` would fail too).
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("inspect.swz");
//! let db = swizzledb::Database::builder().create(&path)?;
//! db.create_tree("t")?.insert(b"k", b"v")?;
//! db.close()?;
//!
//! let file = swizzledb::inspect::DatabaseFile::open(&path)?;
//! assert!(file.info().clean);
//! assert!(file.verify().is_clean());
//! let mut records = Vec::new();
//! file.dump("t", |k, v| records.push((k.to_vec(), v.to_vec())))?;
//! assert_eq!(records, vec![(b"k".to_vec(), b"v".to_vec())]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use swizzledb_btree::{BTreeOwner, Tree, TreeShape};
use swizzledb_buffer::{Allocation, BufferError, BufferPool, Meta, PageFile, PoolConfig, PoolMode};
use swizzledb_io::{OpenMode, Vfs, VfsFile};
use swizzledb_sync::{Lsn, PageId, TxnId};
use swizzledb_wal::{LogConfig, LogError, LogManager};

use crate::record::{Change, NodeLog, Record, RecordKind};

/// Why a file or log cannot be inspected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// The path cannot be opened or read (missing, no permission, an I/O error).
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The file is not a SwizzleDB database file of this format version (empty, too short, a
    /// directory, another magic or version).
    #[error("{} is not a SwizzleDB database file: {reason}", path.display())]
    NotADatabase {
        /// The path.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// The file is a SwizzleDB database but its page 0 or its length is damaged (truncated),
    /// so nothing further can be read from it.
    #[error("{} is damaged: {reason}; restore it from a backup", path.display())]
    Damaged {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No tree of that name is in the file's catalog.
    #[error("no tree named {name:?} in {}; its trees: {}", path.display(), if trees.is_empty() { "none".to_owned() } else { trees.join(", ") })]
    NoSuchTree {
        /// The file.
        path: PathBuf,
        /// The name asked for.
        name: String,
        /// The names in the catalog.
        trees: Vec<String>,
    },
    /// Reading a tree failed at a damaged page (`verify` lists every damaged page), or at one
    /// that a file which needs restart lacks (the reason then says to open the database).
    #[error("reading tree {tree:?} of {} failed: {reason}", path.display())]
    TreeDamaged {
        /// The file.
        path: PathBuf,
        /// The tree.
        tree: String,
        /// What failed.
        reason: String,
    },
    /// The directory is not a SwizzleDB log directory.
    #[error("{} is not a SwizzleDB log directory: {reason}", path.display())]
    NotALog {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The log directory beside a database file is another database's (its identity file
    /// names another id): `open` refuses the file with it ([`crate::Error::ForeignLog`], R14).
    #[error(
        "the log {} belongs to another database than {} (its database id is {found:#018x}, the file's \
         {id:#018x}); put the file's own log beside it, or name the directory to read that log alone",
        dir.display(),
        file.display()
    )]
    ForeignLog {
        /// The log directory.
        dir: PathBuf,
        /// The database file.
        file: PathBuf,
        /// The id the log's identity file records.
        found: u64,
        /// The id the file's page 0 records.
        id: u64,
    },
    /// The log is damaged: a record that cannot be read or decoded.
    #[error("the log {} is damaged{}: {reason}", dir.display(), lsn.map(|l| format!(" at {l}")).unwrap_or_default())]
    LogDamaged {
        /// The log directory.
        dir: PathBuf,
        /// Where, if known.
        lsn: Option<Lsn>,
        /// What was found.
        reason: String,
    },
}

/// Result alias with [`InspectError`].
pub type Result<T, E = InspectError> = std::result::Result<T, E>;

// ------------------------------------------------------------------------------------------
// The read-only file system
// ------------------------------------------------------------------------------------------

fn read_only() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "read-only inspection writes nothing")
}

/// A view of a file system that cannot change it: files open read-only
/// ([`Vfs::open_read_only`]: `O_RDONLY` on the operating system's, io README IO14), writes
/// and renames fail, and truncations and removals (a log cutting its torn tail) change only
/// this view, recorded in `cuts`. Inspection views the operating system's file system
/// ([`ReadOnlyFs::default`]); a database opened read-only views its own (RECOVERY.md R27).
#[derive(Debug)]
pub(crate) struct ReadOnlyFs {
    inner: Arc<dyn Vfs>,
    hidden: Mutex<HashSet<PathBuf>>,
    cuts: Arc<Mutex<Vec<(PathBuf, u64, u64)>>>,
}

impl Default for ReadOnlyFs {
    fn default() -> Self {
        ReadOnlyFs::over(Arc::new(swizzledb_io::OsFs))
    }
}

impl ReadOnlyFs {
    /// A view of `inner` that writes nothing through it.
    pub(crate) fn over(inner: Arc<dyn Vfs>) -> ReadOnlyFs {
        ReadOnlyFs { inner, hidden: Mutex::default(), cuts: Arc::default() }
    }
}

#[derive(Debug)]
struct ReadOnlyFile {
    file: Arc<dyn VfsFile>,
    path: PathBuf,
    /// The length this view gives the file after a `set_len` that shortened it.
    cut: Mutex<Option<u64>>,
    cuts: Arc<Mutex<Vec<(PathBuf, u64, u64)>>>,
}

impl VfsFile for ReadOnlyFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = match *self.cut.lock() {
            Some(len) if offset >= len => return Ok(0),
            Some(len) => buf.len().min(usize::try_from(len - offset).unwrap_or(usize::MAX)),
            None => buf.len(),
        };
        self.file.read_at(&mut buf[..n], offset)
    }

    fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(read_only())
    }

    fn sync(&self) -> io::Result<()> {
        // Nothing was written through this view.
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        match *self.cut.lock() {
            Some(len) => Ok(len),
            None => self.file.len(),
        }
    }

    /// wal README W13 allocates a log's end segment whole when it opens; nothing is written
    /// through this view, so it allocates nothing (reads past the file's end find no frame,
    /// as zeros would not).
    fn allocate(&self, _: u64, _: u64) -> io::Result<()> {
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let now = self.len()?;
        if len > now {
            return Err(read_only());
        }
        *self.cut.lock() = Some(len);
        self.cuts.lock().push((self.path.clone(), now, len));
        Ok(())
    }

    /// The shared lock of a read-only open (R27), on the file under the view. (`try_lock`
    /// grants without locking, the default: nothing is written through the view.)
    fn try_lock_shared(&self) -> io::Result<bool> {
        self.file.try_lock_shared()
    }

    fn unlock(&self) -> io::Result<()> {
        self.file.unlock()
    }

    fn id(&self) -> io::Result<Option<swizzledb_io::FileId>> {
        self.file.id()
    }
}

impl Vfs for ReadOnlyFs {
    fn is_symlink(&self, path: &Path) -> bool {
        self.inner.is_symlink(path)
    }

    fn file_id(&self, path: &Path) -> io::Result<Option<swizzledb_io::FileId>> {
        if self.hidden.lock().contains(path) {
            return Err(io::ErrorKind::NotFound.into());
        }
        self.inner.file_id(path)
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        if mode.create_new {
            return Err(read_only());
        }
        self.open_read_only(path)
    }

    fn open_read_only(&self, path: &Path) -> io::Result<Arc<dyn VfsFile>> {
        if self.hidden.lock().contains(path) {
            return Err(io::ErrorKind::NotFound.into());
        }
        Ok(Arc::new(ReadOnlyFile {
            file: self.inner.open_read_only(path)?,
            path: path.to_path_buf(),
            cut: Mutex::new(None),
            cuts: Arc::clone(&self.cuts),
        }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        // A spare segment file that open removes (wal W15) holds no part of the log: not a cut.
        // A live database's log (inspected while in use) may have taken it as its next
        // segment since it was listed: gone is as good as removed then.
        let spare = swizzledb_wal::is_spare(path);
        if !self.exists(path) {
            if spare {
                self.hidden.lock().insert(path.to_path_buf());
                return Ok(());
            }
            return Err(io::ErrorKind::NotFound.into());
        }
        if !spare {
            let len = self.inner.open_read_only(path)?.len()?;
            self.cuts.lock().push((path.to_path_buf(), len, 0));
        }
        self.hidden.lock().insert(path.to_path_buf());
        Ok(())
    }

    fn remove_dir(&self, _: &Path) -> io::Result<()> {
        Err(read_only())
    }

    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        Err(read_only())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = self.inner.list(dir)?;
        let hidden = self.hidden.lock();
        out.retain(|path| !hidden.contains(path));
        Ok(out)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // A directory lists; a file does not.
        if self.inner.list(dir).is_ok() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no such directory (a read-only view creates nothing)",
            ))
        }
    }

    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        !self.hidden.lock().contains(path) && self.inner.exists(path)
    }
}

/// Opens `path` read-only and takes a shared advisory lock on it, or `None` if a
/// [`crate::Database`] holds its exclusive one (it is open, RECOVERY.md R13).
fn lock_shared(path: &Path) -> Result<Option<File>> {
    let file =
        File::open(path).map_err(|source| InspectError::Unreadable { path: path.to_path_buf(), source })?;
    match file.try_lock_shared() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(source)) => {
            Err(InspectError::Unreadable { path: path.to_path_buf(), source })
        }
    }
}

// ------------------------------------------------------------------------------------------
// The database file
// ------------------------------------------------------------------------------------------

/// What a database file is, from its page 0 (buffer crate's `meta.rs`) and, when it is logged,
/// its log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileInfo {
    /// The file.
    pub path: PathBuf,
    /// The on-disk format version (only the version this build writes opens).
    pub format_version: u32,
    /// Bytes per page.
    pub page_size: usize,
    /// Pages in use or free, page 0 included, as page 0 records them (for a logged database
    /// not closed cleanly, as of its last clean close: the log holds the newer count).
    pub page_count: u64,
    /// The file's length in bytes.
    pub file_bytes: u64,
    /// Free pages, from the free-page chain; `None` when the chain on disk is not current
    /// (a file not closed cleanly) or cannot be read (`verify` says why).
    pub free_pages: Option<u64>,
    /// The trees of page 0's catalog, by name.
    pub trees: Vec<(String, PageId)>,
    /// The database has a write-ahead log (in [`crate::wal_dir`] of the path).
    pub logged: bool,
    /// The database id (its log directory records the same).
    pub id: u64,
    /// Closed cleanly: opening it redoes and undoes nothing. An unlogged database: page 0's
    /// CLEAN flag (buffer F11; `open` refuses one without it). A logged one: its log ends with
    /// the checkpoint the master record names, listing no dirty page and no transaction (page
    /// 0's flag means nothing for logged databases, which always restart).
    pub clean: bool,
    /// Page 0 says the file was closed cleanly (its CLEAN flag, buffer F11): no page was
    /// written since its last clean close, and for a logged database it was not opened since
    /// either (its open clears the flag first). Unlike [`clean`](Self::clean) it does not need
    /// the log: a cleanly closed logged file whose log directory was not copied with it is
    /// `closed_cleanly` with [`LogState::missing`].
    pub closed_cleanly: bool,
    /// The log, for a logged database.
    pub log: Option<LogState>,
    /// The file is open for writing in a [`crate::Database`] (in this or another process, or
    /// one that was leaked without being dropped): it may change while it is read, so what was
    /// read need not be consistent. A read-only open (RECOVERY.md R27) changes nothing and
    /// does not count.
    pub in_use: bool,
}

/// Where a logged database's log stands.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogState {
    /// The log directory.
    pub dir: PathBuf,
    /// Bytes per segment file.
    pub segment_bytes: u64,
    /// The oldest LSN kept.
    pub oldest: Lsn,
    /// The end of the log.
    pub end: Lsn,
    /// The last checkpoint's end record (the master record), if any.
    pub checkpoint: Option<Lsn>,
    /// Records after the last checkpoint: what restart would analyze and redo.
    pub records_after_checkpoint: u64,
    /// Dirty pages the last checkpoint lists.
    pub dirty_pages: usize,
    /// Unfinished transactions the last checkpoint lists.
    pub open_txns: usize,
    /// The trees the log knows: the last checkpoint's catalog and the trees created after it
    /// (page 0's catalog lags behind it until a clean close).
    pub trees: Vec<(String, PageId)>,
    /// Why the log could not be read, if it could not (then `clean` is false).
    pub problem: Option<String>,
    /// The log directory, or its identity file, is missing: the directory was not copied or
    /// moved with the file (`Builder::open` refuses it, [`crate::Error::LogMissing`]).
    pub missing: bool,
}

/// One damaged page or tree found by [`DatabaseFile::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Damage {
    /// The page, when the damage is one page's (a checksum, page-id or page-type failure).
    pub page: Option<PageId>,
    /// The tree, when a tree's structure check found it (its reason names the page).
    pub tree: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.tree, self.page) {
            (Some(tree), _) => write!(f, "tree {tree:?}: {}", self.reason),
            (None, Some(page)) => write!(f, "page {page}: {}", self.reason),
            (None, None) => write!(f, "{}", self.reason),
        }
    }
}

/// What [`DatabaseFile::verify`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Pages whose checksum, page id and page type were checked (page 0 included).
    pub pages_checked: u64,
    /// Every damaged page and tree found.
    pub damage: Vec<Damage>,
    /// Each tree of the catalog and its shape, if its structure checked out.
    pub trees: Vec<(String, Option<TreeShape>)>,
    /// The file was not closed cleanly and has a log: restart would change its pages, so the
    /// findings describe the file as it is now.
    pub needs_restart: bool,
    /// Pages whose copy in the file is missing (beyond its end), never written, torn or
    /// damaged, and which restart rebuilds from the log (the rule in the module docs): not
    /// damage. Empty unless [`needs_restart`](Self::needs_restart).
    pub rebuilt_by_restart: Vec<PageId>,
    /// Trees whose structure check failed in a file whose pages restart's redo changes, with
    /// what failed: the pages are as of the crash, so this is not damage (the check holds for
    /// the file restart leaves). Their entry in [`trees`](Self::trees) has no shape.
    pub pending_trees: Vec<(String, String)>,
    /// Pages neither free nor reached from any tree (nodes and overflow pages): space lost, not
    /// damage — a crash between a page's allocation and the record naming it, or in the middle
    /// of `drop_tree`, leaves such pages. `None` unless the file was closed cleanly and every
    /// tree checked out.
    pub unreachable_pages: Option<u64>,
}

impl VerifyReport {
    /// No damage was found.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.damage.is_empty()
    }
}

/// A database file opened read-only for inspection; the file stays shared-locked (so no
/// `Database` opens it) until this is dropped.
pub struct DatabaseFile {
    info: FileInfo,
    meta: Meta,
    file: PageFile,
    vfs: Arc<ReadOnlyFs>,
    /// Why the free-page chain could not be read (a clean file only).
    chain_damage: Option<(PageId, String)>,
    /// What restart would do, for a logged file not closed cleanly whose log can be read.
    restart: Option<RestartView>,
    _lock: Option<File>,
}

impl fmt::Debug for DatabaseFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseFile").field("info", &self.info).finish_non_exhaustive()
    }
}

/// The inspection error for a page file's error while opening `path`.
fn open_error(path: &Path, e: BufferError) -> InspectError {
    match e {
        BufferError::NotADatabase { reason, .. } => {
            InspectError::NotADatabase { path: path.to_path_buf(), reason }
        }
        BufferError::FormatVersion { found, expected, .. } => InspectError::NotADatabase {
            path: path.to_path_buf(),
            reason: format!("format version {found}; this build reads version {expected}"),
        },
        BufferError::Io { source, .. } => InspectError::Unreadable { path: path.to_path_buf(), source },
        BufferError::Corrupted { page, reason, .. } => {
            InspectError::Damaged { path: path.to_path_buf(), reason: format!("page {page}: {reason}") }
        }
        other => InspectError::Damaged { path: path.to_path_buf(), reason: other.to_string() },
    }
}

impl DatabaseFile {
    /// Opens the database file at `path` read-only, reads its page 0 and, if it is logged, where
    /// its log stands (without running restart or changing either).
    ///
    /// # Errors
    /// [`InspectError::Unreadable`] (missing, no permission), [`InspectError::NotADatabase`]
    /// (a directory, a pipe, socket or device, empty, too short, another magic or format
    /// version),
    /// [`InspectError::Damaged`] (page 0 fails its checks, or the file is shorter than page 0
    /// says).
    pub fn open(path: impl AsRef<Path>) -> Result<DatabaseFile> {
        let path = path.as_ref();
        let stat = std::fs::metadata(path)
            .map_err(|source| InspectError::Unreadable { path: path.to_path_buf(), source })?;
        if stat.is_dir() {
            return Err(InspectError::NotADatabase {
                path: path.to_path_buf(),
                reason: "it is a directory (`swizzledb log` reads log directories)".into(),
            });
        }
        // A FIFO, socket or device is no database file, and opening a FIFO waits for a writer
        // that may never come.
        if !stat.is_file() {
            return Err(InspectError::NotADatabase {
                path: path.to_path_buf(),
                reason: "it is not a regular file (a pipe, socket or device)".into(),
            });
        }
        let lock = lock_shared(path)?;
        let vfs = Arc::new(ReadOnlyFs::default());
        let (file, meta) = PageFile::open_logged(&*vfs, path, false).map_err(|e| open_error(path, e))?;
        let file_bytes = stat.len();
        // Page 0 read and checked by the open: the version follows the magic (buffer `meta.rs`).
        let mut page0 = vec![0u8; meta.page_size];
        file.read_page(PageId::META, &mut page0).map_err(|e| open_error(path, e))?;
        let format_version = swizzledb_buffer::page::get_u32(&page0, swizzledb_buffer::page::HEADER_SIZE + 8);
        let (free_pages, chain_damage, log, clean, restart);
        if meta.logged {
            let known_pages = meta.page_count.max(file_bytes / meta.page_size as u64);
            let (state, view) = log_state(&vfs, path, meta.id, known_pages);
            restart = view;
            clean = state.problem.is_none()
                && state.checkpoint.is_some()
                && state.records_after_checkpoint == 0
                && state.dirty_pages == 0
                && state.open_txns == 0;
            log = Some(state);
        } else {
            clean = meta.clean;
            log = None;
            restart = None;
        }
        // The chain on disk is current only after a clean close (F10, F11).
        if clean {
            match PageFile::open(&*vfs, path, false) {
                Ok((_, m)) => (free_pages, chain_damage) = (Some(m.free_pages.len() as u64), None),
                Err(BufferError::Corrupted { page, reason, .. }) => {
                    (free_pages, chain_damage) = (None, Some((page, reason)));
                }
                Err(e) => (free_pages, chain_damage) = (None, Some((PageId::META, e.to_string()))),
            }
        } else {
            (free_pages, chain_damage) = (None, None);
        }
        let info = FileInfo {
            path: path.to_path_buf(),
            format_version,
            page_size: meta.page_size,
            page_count: meta.page_count,
            file_bytes,
            free_pages,
            trees: meta.trees.iter().map(|(n, r)| (n.clone(), *r)).collect(),
            logged: meta.logged,
            id: meta.id,
            clean,
            closed_cleanly: meta.clean,
            log,
            in_use: lock.is_none(),
        };
        let restart = restart.filter(|_| !clean);
        Ok(DatabaseFile { info, meta, file, vfs, chain_damage, restart, _lock: lock })
    }

    /// What the file is.
    #[must_use]
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// A buffer pool over the file that can only read it (no log, no evictor, traditional
    /// mode: it changes no frame it reads).
    fn pool(&self) -> std::result::Result<Arc<BufferPool>, BufferError> {
        let config = PoolConfig {
            vfs: Arc::clone(&self.vfs) as Arc<dyn Vfs>,
            mode: PoolMode::Traditional,
            pool_bytes: (self.meta.page_size * 1024).max(4 << 20),
            page_size: self.meta.page_size,
            optimistic_reads: false,
            ..PoolConfig::default()
        };
        let allocation =
            Allocation { page_count: self.page_end(), free_pages: Vec::new(), trees: self.trees() };
        Ok(Arc::new(BufferPool::open_recovered(&self.info.path, &config, Arc::new(BTreeOwner), allocation)?))
    }

    /// Whether restart would change the file (logged, not closed cleanly).
    fn needs_restart(&self) -> bool {
        self.info.logged && !self.info.clean
    }

    /// The pages to read: page 0's page count; for a file restart would change, every whole
    /// page the file holds (page 0's count lags behind the log's until a clean close).
    fn page_end(&self) -> u64 {
        let held = self.info.file_bytes / self.meta.page_size as u64;
        if self.needs_restart() {
            held.max(self.meta.page_count).max(self.restart.as_ref().map_or(0, |r| r.page_count))
        } else {
            self.meta.page_count
        }
    }

    /// The trees to read: page 0's catalog; for a file restart would change, also the trees
    /// the log knows ([`LogState::trees`]).
    fn trees(&self) -> std::collections::BTreeMap<String, PageId> {
        let mut trees = self.meta.trees.clone();
        if self.needs_restart() {
            for (name, root) in self.info.log.iter().flat_map(|l| &l.trees) {
                trees.entry(name.clone()).or_insert(*root);
            }
        }
        trees
    }

    /// Checks every page's checksum, page id and type (pages `1..page_count`; page 0 was checked
    /// by `open`), the free-page chain of a cleanly closed file, and the structure of every tree
    /// (`Tree::verify`: fences, key order, levels, every node reached once). Nothing is repaired.
    ///
    /// A file restart would change ([`VerifyReport::needs_restart`]) is checked as far as it
    /// holds pages, and its never-written (all-zero) pages are not damage: restart writes them.
    /// Its trees are page 0's and the ones its log knows.
    #[must_use]
    pub fn verify(&self) -> VerifyReport {
        let mut damage = Vec::new();
        let mut buf = vec![0u8; self.meta.page_size];
        let mut rebuilt_by_restart = Vec::new();
        let mut archive = None;
        let end = self.page_end();
        for n in 1..end {
            let Some(id) = PageId::new(n) else { break };
            buf.fill(0);
            if let Err(e) = self.file.read_page(id, &mut buf) {
                if let Some(view) = &self.restart {
                    if view.redo.contains(&id)
                        && (view.imaged.contains(&id) || self.archived_image(&mut archive, id))
                    {
                        rebuilt_by_restart.push(id);
                        continue;
                    }
                    if view.free.contains(&id) {
                        // Free after restart, which reads no free page.
                        continue;
                    }
                }
                if self.needs_restart() && buf.iter().all(|&b| b == 0) {
                    continue;
                }
                let reason = match e {
                    BufferError::Corrupted { reason, .. } => reason,
                    other => other.to_string(),
                };
                damage.push(Damage { page: Some(id), tree: None, reason });
            }
        }
        if let Some((page, reason)) = &self.chain_damage {
            if !damage.iter().any(|d| d.page == Some(*page)) {
                damage.push(Damage {
                    page: Some(*page),
                    tree: None,
                    reason: format!("free-page chain: {reason}"),
                });
            }
        }
        let mut trees = Vec::new();
        let mut pending_trees = Vec::new();
        match self.pool() {
            Err(e) => damage.push(Damage { page: None, tree: None, reason: e.to_string() }),
            Ok(pool) => {
                for (name, root) in &self.trees() {
                    let shape = Tree::open(&pool, *root).map_err(|e| e.to_string()).and_then(|t| t.verify());
                    match shape {
                        Ok(shape) => trees.push((name.clone(), Some(shape))),
                        Err(reason) if self.restart.as_ref().is_some_and(|r| !r.redo.is_empty()) => {
                            trees.push((name.clone(), None));
                            pending_trees.push((name.clone(), reason));
                        }
                        Err(reason) => {
                            trees.push((name.clone(), None));
                            damage.push(Damage { page: None, tree: Some(name.clone()), reason });
                        }
                    }
                }
            }
        }
        let reached: Option<u64> =
            trees.iter().map(|(_, shape)| shape.map(|s| (s.nodes + s.overflow_pages) as u64)).sum();
        let unreachable_pages = match (self.info.free_pages, reached) {
            (Some(free), Some(reached)) if !self.needs_restart() => {
                Some(self.info.page_count.saturating_sub(1 + free + reached))
            }
            _ => None,
        };
        VerifyReport {
            pages_checked: end,
            damage,
            trees,
            needs_restart: self.needs_restart(),
            rebuilt_by_restart,
            pending_trees,
            unreachable_pages,
        }
    }

    /// Whether the log archive (RECOVERY.md R17), opened read-only into `archive` at the first
    /// call, holds a whole image of page `id`, from which R18 rebuilds it.
    fn archived_image(&self, archive: &mut Option<Option<swizzledb_wal::Archive>>, id: PageId) -> bool {
        let archive = archive.get_or_insert_with(|| {
            let dir = crate::archive_dir(&self.info.path);
            dir.is_dir()
                .then(|| swizzledb_wal::Archive::open(Arc::clone(&self.vfs) as Arc<dyn Vfs>, dir).ok())
                .flatten()
        });
        let Some(archive) = archive else { return false };
        archive.page_entries(id.get(), Lsn(0)).is_ok_and(|entries| {
            entries
                .iter()
                .any(|e| Record::decode(&e.body).is_ok_and(|r| crate::repair::carries_image(&r, id)))
        })
    }

    /// Calls `each` with every record of tree `name` in key order, as the file holds them
    /// (for a logged database not closed cleanly, that may include uncommitted changes and lack
    /// committed ones the log still holds; its trees are page 0's and the ones its log knows).
    /// Returns the number of records.
    ///
    /// # Errors
    /// [`InspectError::NoSuchTree`]; [`InspectError::TreeDamaged`] at the first page that
    /// cannot be read (for a file that needs restart, the reason says so: such a page may be
    /// one restart writes).
    pub fn dump(&self, name: &str, mut each: impl FnMut(&[u8], &[u8])) -> Result<u64> {
        let path = &self.info.path;
        let trees = self.trees();
        let Some(&root) = trees.get(name) else {
            return Err(InspectError::NoSuchTree {
                path: path.clone(),
                name: name.to_owned(),
                trees: trees.keys().cloned().collect(),
            });
        };
        // A file in the middle of its history (in use, or not closed cleanly) may lack pages
        // its log would write: say so beside what failed.
        // `verify` finds no damage in such a page (restart rebuilds it), so it is not the
        // advice there.
        let restart = if self.needs_restart() {
            " (the file needs restart: a page its log would write may be missing or older there; \
             open the database, or a copy of it, to bring the file up to date)"
        } else {
            "; run `swizzledb verify` on it"
        };
        let damaged = |reason: String| InspectError::TreeDamaged {
            path: path.clone(),
            tree: name.to_owned(),
            reason: format!("{reason}{restart}"),
        };
        let pool = self.pool().map_err(|e| damaged(e.to_string()))?;
        let tree = Tree::open(&pool, root).map_err(|e| damaged(e.to_string()))?;
        let mut iter = tree.range(Bound::Unbounded, Bound::Unbounded);
        let mut n = 0;
        while let Some(step) = iter.next_with(|k, v| each(k, v)) {
            step.map_err(|e| damaged(e.to_string()))?;
            n += 1;
        }
        Ok(n)
    }
}

/// What restart would do to the pages of a logged file not closed cleanly, from its log
/// (RECOVERY.md R8, R9): the inputs of [`DatabaseFile::verify`]'s rule in the module docs.
#[derive(Debug, Default)]
struct RestartView {
    /// The pages restart's redo changes: the last checkpoint's dirty pages and every page a
    /// record from its begin record on changes (R8's dirty page table).
    redo: HashSet<PageId>,
    /// The pages the log kept holds a whole image of (`repair::carries_image`: a structure
    /// image, a leaf change's base image, a new overflow page).
    imaged: HashSet<PageId>,
    /// The pages free at the end of the log (the checkpoint's free set, then every record's
    /// allocations and frees from its begin on): restart reads no free page.
    free: HashSet<PageId>,
    /// The page count at the end of the log.
    page_count: u64,
}

/// Reads where the log of the logged database at `path` stands and, if it can be read, what
/// restart would do to the file's pages; `known_pages` is how many pages page 0 and the file's
/// length say it has.
fn log_state(
    vfs: &Arc<ReadOnlyFs>,
    path: &Path,
    id: u64,
    known_pages: u64,
) -> (LogState, Option<RestartView>) {
    let dir = crate::wal_dir(path);
    let mut state = LogState {
        dir: dir.clone(),
        segment_bytes: 0,
        oldest: Lsn(0),
        end: Lsn(0),
        checkpoint: None,
        records_after_checkpoint: 0,
        dirty_pages: 0,
        open_txns: 0,
        trees: Vec::new(),
        problem: None,
        missing: !dir.is_dir() || !dir.join("database-id").is_file(),
    };
    let mut view = RestartView::default();
    let result = (|| -> std::result::Result<(), String> {
        let (log, segment_bytes) = open_log(vfs, &dir, Some((path, id))).map_err(|e| e.to_string())?;
        state.segment_bytes = segment_bytes;
        state.oldest = log.oldest();
        state.end = log.end();
        let Some(at) = crate::restart::last_checkpoint_end(&log).map_err(|e| e.to_string())? else {
            return Err("the log holds no checkpoint".into());
        };
        state.checkpoint = Some(at);
        // Whole, its parts gathered (R7).
        let c = crate::restart::read_checkpoint(&log, at)
            .map_err(|e| format!("the last checkpoint at {at}: {e}"))?;
        // As restart refuses it (RECOVERY.md R10).
        if let Some(why) = crate::restart::implausible_checkpoint(&c, known_pages) {
            return Err(format!("the last checkpoint at {at}: {why}"));
        }
        state.dirty_pages = c.dirty.len();
        state.open_txns = c.txns.len();
        state.trees = c.catalog;
        view.redo.extend(c.dirty.iter().map(|(p, _)| *p));
        view.free.extend(c.free.iter().copied());
        view.page_count = c.page_count;
        let begin = c.begin;
        // The whole log kept: images anywhere in it serve single-page recovery (R18), which
        // restart's redo uses for a page it must read and finds damaged; analysis from `begin`.
        for item in log.scan(state.oldest).map_err(|e| e.to_string())? {
            let (lsn, body) = item.map_err(|e| e.to_string())?;
            let record = Record::decode(&body).map_err(|e| format!("the record at {lsn}: {e}"))?;
            if lsn > at {
                state.records_after_checkpoint += 1;
                match &record {
                    Record::CreateTree { name, root } => state.trees.push((name.clone(), *root)),
                    Record::DropTree { name, .. } => state.trees.retain(|(n, _)| n != name),
                    _ => {}
                }
            }
            let pages = Record::pages_in(&body).map_err(|e| format!("the record at {lsn}: {e}"))?;
            for &page in &pages {
                if crate::repair::carries_image(&record, page) {
                    view.imaged.insert(page);
                }
            }
            if lsn >= begin {
                for &page in &pages {
                    // As restart refuses it (RECOVERY.md R10).
                    if let Some(why) = crate::restart::implausible_page(page, view.page_count) {
                        return Err(format!("the record at {lsn}: {why}"));
                    }
                    view.redo.insert(page);
                    if crate::repair::frees(&record, page) {
                        view.free.insert(page);
                    } else if writes(&record, page) {
                        view.free.remove(&page);
                        view.page_count = view.page_count.max(page.get() + 1);
                    }
                }
            }
        }
        state.trees.sort();
        Ok(())
    })();
    state.problem = result.err();
    let view = state.problem.is_none().then_some(view);
    (state, view)
}

/// Whether `record` writes page `id` (which is then allocated: R8).
fn writes(record: &Record, id: PageId) -> bool {
    match record {
        Record::Structure { pages, .. } => pages.iter().any(|(p, _)| *p == id),
        Record::Leaf { page, chain, .. } => *page == id || chain.contains(&id),
        _ => false,
    }
}

/// Opens the log in `dir` read-only, with the segment size its identity file records. With
/// `owner` (a database file and the id its page 0 records), another database's log is
/// [`InspectError::ForeignLog`], as `open` refuses it (R14).
fn open_log(vfs: &Arc<ReadOnlyFs>, dir: &Path, owner: Option<(&Path, u64)>) -> Result<(LogManager, u64)> {
    if !dir.is_dir() {
        return Err(InspectError::NotALog { path: dir.to_path_buf(), reason: "no such directory".into() });
    }
    let (found, segment_bytes) = crate::files::read_identity(&**vfs, dir)
        .map_err(|reason| InspectError::NotALog { path: dir.to_path_buf(), reason })?;
    if let Some((file, id)) = owner.filter(|&(_, id)| id != found) {
        return Err(InspectError::ForeignLog { dir: dir.to_path_buf(), file: file.to_path_buf(), found, id });
    }
    let mut config = LogConfig::new(dir);
    config.segment_bytes = segment_bytes;
    config.flush_interval = None;
    config.vfs = Arc::clone(vfs) as Arc<dyn Vfs>;
    let log = LogManager::open(config).map_err(|e| log_error(dir, e))?;
    Ok((log, segment_bytes))
}

fn log_error(dir: &Path, e: LogError) -> InspectError {
    match e {
        LogError::Corrupted { lsn, reason } => {
            InspectError::LogDamaged { dir: dir.to_path_buf(), lsn: Some(lsn), reason }
        }
        // W8: not a torn tail: a sync marker beyond the bad frame proves it was durable.
        LogError::DurableDamage(d) => InspectError::LogDamaged {
            dir: dir.to_path_buf(),
            lsn: Some(d.lsn),
            reason: format!(
                "{}, below {} which a sync made durable (not a torn tail): {} valid records ({} bytes) follow",
                d.reason, d.durable, d.records_beyond, d.bytes_beyond
            ),
        },
        other => InspectError::LogDamaged { dir: dir.to_path_buf(), lsn: None, reason: other.to_string() },
    }
}

// ------------------------------------------------------------------------------------------
// The log
// ------------------------------------------------------------------------------------------

/// The records of a log, read read-only ([`read_log`]).
#[derive(Debug)]
pub struct LogRecords {
    /// The log directory.
    pub dir: PathBuf,
    /// The master record: the last checkpoint's end record, if any.
    pub checkpoint: Option<Lsn>,
    /// The bytes after the log's end that do not form a valid record (a torn tail that the
    /// next open of the database cuts): `(segment file, its length, where the log ends in it)`.
    pub torn_tail: Vec<(PathBuf, u64, u64)>,
    /// The database is open for writing (as [`FileInfo::in_use`]): records may be appended
    /// while it is read.
    pub in_use: bool,
    scan: swizzledb_wal::LogScan,
    failed: bool,
    _log: LogManager,
    _lock: Option<File>,
}

/// One record of the log ([`LogRecords`]); its `Display` is one line: LSN, kind, transaction,
/// pages and sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogEntry {
    /// Where it is.
    pub lsn: Lsn,
    /// Its body's length in bytes.
    pub bytes: usize,
    /// The decoded record.
    pub record: Record,
}

impl LogEntry {
    /// The record's kind.
    #[must_use]
    pub fn kind(&self) -> RecordKind {
        kind_of(&self.record)
    }

    /// The transaction it belongs to, if any.
    #[must_use]
    pub fn txn(&self) -> Option<TxnId> {
        match &self.record {
            Record::Begin { txn }
            | Record::Leaf { txn, .. }
            | Record::Commit { txn, .. }
            | Record::Abort { txn, .. }
            | Record::End { txn, .. } => Some(*txn),
            Record::Structure { .. }
            | Record::CreateTree { .. }
            | Record::DropTree { .. }
            | Record::CheckpointBegin
            | Record::CheckpointEnd(_)
            | Record::CheckpointPart(_)
            | Record::PageWrite { .. } => None,
        }
    }
}

fn kind_of(record: &Record) -> RecordKind {
    record.kind()
}

impl fmt::Display for LogEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lsn={} kind={:?}", self.lsn.0, self.kind())?;
        match &self.record {
            Record::Begin { txn } => write!(f, " txn={}", txn.0)?,
            Record::Leaf { txn, prev, undo_next, tree, page, change, base, chain, freed, commits } => {
                write!(f, " txn={} prev={} tree={tree} page={page}", txn.0, prev.0)?;
                match change {
                    Change::Insert { key, value } => {
                        write!(f, " change=insert key={}B value={}B", key.len(), value.len())?;
                    }
                    Change::Update { key, old, new } => {
                        write!(f, " change=update key={}B old={}B new={}B", key.len(), old.len(), new.len())?;
                    }
                    Change::Delete { key, old } => {
                        write!(f, " change=delete key={}B old={}B", key.len(), old.len())?
                    }
                    Change::Patch { key, edits } => write!(
                        f,
                        " change=patch key={}B edits={} old={}B new={}B",
                        key.len(),
                        edits.len(),
                        edits.iter().map(|e| e.old.len()).sum::<usize>(),
                        edits.iter().map(|e| e.new.len()).sum::<usize>()
                    )?,
                }
                if let Some(next) = undo_next {
                    write!(f, " clr undo_next={}", next.0)?;
                }
                if base.is_some() {
                    write!(f, " base_image")?;
                }
                if !chain.is_empty() {
                    write!(f, " overflow_pages={}", chain.len())?;
                }
                if !freed.is_empty() {
                    write!(f, " freed_overflow_pages={}", freed.len())?;
                }
                if *commits {
                    write!(f, " commits")?;
                }
            }
            Record::Commit { txn, prev } | Record::Abort { txn, prev } | Record::End { txn, prev } => {
                write!(f, " txn={} prev={}", txn.0, prev.0)?;
            }
            Record::Structure { pages, freed } => {
                let forms: Vec<String> = pages
                    .iter()
                    .map(|(p, form)| {
                        let what = match form {
                            NodeLog::Image(_) => "image",
                            NodeLog::Split { .. } => "split",
                            NodeLog::Adopt { .. } => "adopt",
                            NodeLog::Adopted { .. } => "adopted",
                            NodeLog::Unlink { .. } => "unlink",
                            NodeLog::SplitOff => "split-off",
                        };
                        format!("{p}:{what}")
                    })
                    .collect();
                write!(f, " pages={}", forms.join(","))?;
                if !freed.is_empty() {
                    let freed: Vec<String> = freed.iter().map(ToString::to_string).collect();
                    write!(f, " freed={}", freed.join(","))?;
                }
            }
            Record::CreateTree { name, root } => write!(f, " name={name:?} root={root}")?,
            Record::DropTree { name, root } => write!(f, " name={name:?} root={root}")?,
            Record::CheckpointBegin => {}
            Record::CheckpointEnd(c) => {
                write!(
                    f,
                    " begin={} dirty={} txns={} page_count={} free={} trees={}",
                    c.begin.0,
                    c.dirty.len(),
                    c.txns.len(),
                    c.page_count,
                    c.free.len(),
                    c.catalog.len()
                )?;
                if c.parts > 0 {
                    write!(f, " parts={}", c.parts)?;
                }
            }
            Record::CheckpointPart(c) => write!(
                f,
                " begin={} dirty={} txns={} free={} trees={}",
                c.begin.0,
                c.dirty.len(),
                c.txns.len(),
                c.free.len(),
                c.catalog.len()
            )?,
            Record::PageWrite { page, page_lsn, decoupled } => {
                write!(f, " page={page} page_lsn={}", page_lsn.0)?;
                if let Some(below) = decoupled {
                    write!(f, " decoupled_below={}", below.0)?;
                }
            }
        }
        write!(f, " bytes={}", self.bytes)
    }
}

impl Iterator for LogRecords {
    type Item = Result<LogEntry>;

    /// The next record; after an error (a damaged frame or an undecodable body), nothing more.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = match self.scan.next()? {
            Ok((lsn, body)) => match Record::decode(&body) {
                Ok(record) => Ok(LogEntry { lsn, bytes: body.len(), record }),
                Err(e) => Err(InspectError::LogDamaged {
                    dir: self.dir.clone(),
                    lsn: Some(lsn),
                    reason: e.to_string(),
                }),
            },
            Err(e) => Err(log_error(&self.dir, e)),
        };
        self.failed = item.is_err();
        Some(item)
    }
}

/// Opens a log read-only for reading its records, oldest first. `path` is a log directory, or
/// a database file whose log is [`crate::wal_dir`]`(path)`.
///
/// # Errors
/// [`InspectError::Unreadable`] (missing), [`InspectError::NotALog`] (no identity file, or an
/// unlogged database's file), [`InspectError::ForeignLog`] (a database file beside another
/// database's log), [`InspectError::LogDamaged`] (records after a damaged frame, a
/// damaged identity file).
pub fn read_log(path: impl AsRef<Path>) -> Result<LogRecords> {
    let path = path.as_ref();
    let stat = std::fs::metadata(path)
        .map_err(|source| InspectError::Unreadable { path: path.to_path_buf(), source })?;
    let dir = if stat.is_dir() { path.to_path_buf() } else { crate::wal_dir(path) };
    if !stat.is_dir() && !dir.is_dir() {
        return Err(InspectError::NotALog {
            path: dir,
            reason: format!("no such directory beside {} (an unlogged database has none)", path.display()),
        });
    }
    let id_file = dir.join("database-id");
    let lock = if id_file.is_file() { lock_shared(&id_file)? } else { None };
    let in_use = id_file.is_file() && lock.is_none();
    let vfs = Arc::new(ReadOnlyFs::default());
    // Named by its database file: that file's log, if the file is a database (R14).
    let owner = if stat.is_dir() {
        None
    } else {
        PageFile::open_logged(&*vfs, path, false).ok().map(|(_, meta)| (path, meta.id))
    };
    let (log, _) = open_log(&vfs, &dir, owner)?;
    let checkpoint = crate::restart::last_checkpoint_end(&log).map_err(|e| match e {
        crate::Error::Log(e) => log_error(&dir, e),
        other => InspectError::LogDamaged { dir: dir.clone(), lsn: None, reason: other.to_string() },
    })?;
    let scan = log.scan(Lsn(0)).map_err(|e| log_error(&dir, e))?;
    let torn_tail = vfs.cuts.lock().clone();
    Ok(LogRecords { dir, checkpoint, torn_tail, in_use, scan, failed: false, _log: log, _lock: lock })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_only_view_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let fs = ReadOnlyFs::default();
        let f = fs.open(&path, OpenMode::EXISTING).unwrap();
        assert_eq!(f.write_all_at(b"x", 0).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(f.set_len(20).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert!(fs.open(&path, OpenMode::CREATE_NEW).is_err());
        assert!(fs.rename(&path, &dir.path().join("g")).is_err());
        assert!(fs.create_dir_all(&dir.path().join("new")).is_err());
        // A truncation and a removal change the view only.
        f.set_len(4).unwrap();
        assert_eq!(f.len().unwrap(), 4);
        let mut buf = [0u8; 10];
        assert_eq!(f.read_at(&mut buf, 2).unwrap(), 2);
        assert_eq!(&buf[..2], b"23");
        assert_eq!(f.read_at(&mut buf, 4).unwrap(), 0);
        fs.remove(&path).unwrap();
        assert!(!fs.exists(&path) && fs.list(dir.path()).unwrap().is_empty());
        assert!(fs.open(&path, OpenMode::EXISTING).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"0123456789");
        assert_eq!(fs.cuts.lock().len(), 2);
        // A spare segment file the log's open removes (wal W15) is hidden, and no cut.
        let spare = dir.path().join("0000000000000000.spare");
        std::fs::write(&spare, b"old frames").unwrap();
        fs.remove(&spare).unwrap();
        assert!(!fs.exists(&spare) && spare.exists());
        assert_eq!(fs.cuts.lock().len(), 2);
        // A live database's log takes a listed spare file as its next segment: inspecting it
        // meanwhile finds the spare gone, which is no damage. A segment gone is.
        assert!(fs.remove(&dir.path().join("0000000000000001.spare")).is_ok());
        let gone = fs.remove(&dir.path().join("0000000000000001.log")).unwrap_err();
        assert_eq!(gone.kind(), io::ErrorKind::NotFound);
        assert_eq!(fs.cuts.lock().len(), 2);
    }
}
