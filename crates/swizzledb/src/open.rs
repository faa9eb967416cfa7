//! Creating, opening and restarting a database (RECOVERY.md R8–R14, R22).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use swizzledb_btree::{BTreeOwner, TreeError};
use swizzledb_buffer::{BufferError, PageFile, PoolConfig, PoolMode};
use swizzledb_sync::{Lsn, PageId};
use swizzledb_wal::{LogError, LogManager};

use crate::builder::{Builder, Locking};
use crate::cleaner::{self, Cleaner};
use crate::database::{Background, Database};
use crate::engine::Core;
use crate::error::{Error, Result};
use crate::files::{self, archive_dir, wal_dir};
use crate::instant::{self, RestartMode};
use crate::lock;
use crate::logging::{self, CheckpointKind};
use crate::logging::{PoolLog, Wal};
use crate::record::{self, TxnState};
use crate::restart::{self, RestartStats};

/// The error of a database path that can only name a directory — empty, ending with a
/// separator (or `/.`), or whose last component is none (`/`) or `..` — saying what is wrong
/// with it; `None` for a path that can name a file.
fn directory_path(path: &Path) -> Option<Error> {
    let text = path.as_os_str().to_string_lossy();
    let ends_with_separator = text.ends_with(std::path::MAIN_SEPARATOR) || text.ends_with("/.");
    if path.file_name().is_some() && !ends_with_separator {
        return None;
    }
    let reason = if text.is_empty() {
        "the path is empty: name the database's file"
    } else if !ends_with_separator {
        "the path ends with `..` and names a directory, not the database's file: name a file in it"
    } else {
        "the path ends with a separator and names a directory, not the database's file: \
         drop the trailing `/`"
    };
    let source = std::io::Error::new(std::io::ErrorKind::InvalidInput, reason);
    Some(BufferError::Io { file: path.to_path_buf(), source }.into())
}

impl Builder {
    pub(crate) fn create_at(self, path: &Path) -> Result<Database> {
        if self.read_only {
            return Err(Error::Tree(swizzledb_btree::TreeError::ReadOnly));
        }
        let path = &self.anchored(path)?;
        // A path that ends in a separator names a directory: the log directory's
        // `create_dir_all` made it (`<path>/.wal`) before the file's create failed on it, and
        // the failed create left it behind (R14).
        if let Some(e) = directory_path(path) {
            return Err(e);
        }
        // Every setting before anything is made: a refused create leaves nothing behind.
        self.check_create()?;
        self.check_trace(path)?;
        // The directory the file goes in must exist: a logged create would otherwise make it
        // with its log directory, an unlogged one fail on the file (R14). (A bare name's is
        // the current directory.)
        let parent = path.parent().filter(|dir| !dir.as_os_str().is_empty());
        if let Some(dir) = parent.filter(|dir| !self.config.vfs.exists(dir)) {
            return Err(Error::DirectoryMissing(dir.to_path_buf()));
        }
        // Nor in a database's log directory (R14): that database's compaction (R28) removed a
        // database made there, with its own log directory, without a word.
        if files::in_a_log_directory(&*self.config.vfs, path, None) {
            return Err(Error::InLogDirectory(path.to_path_buf()));
        }
        let vfs = Arc::clone(&self.config.vfs);
        // R14: a marker beside the file until the database is complete, so that a create a
        // crash cuts short leaves nothing the next create or open refuses. A backup's copy
        // (`create_unclean`) has its own rule for that (R26) and needs none.
        let creating = if self.config.create_unclean {
            if vfs.exists(path) {
                let source =
                    std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the database file exists");
                return Err(BufferError::Io { file: path.to_path_buf(), source }.into());
            }
            None
        } else {
            Some(files::Creating::begin(&*vfs, path)?)
        };
        let mut made = Made { vfs: &*vfs, file: None, log_dir: None, log_dir_made: false };
        let created = self.create_files(path, &mut made);
        let Some(creating) = creating else {
            if created.is_err() {
                made.remove();
            }
            return created;
        };
        match created {
            Ok(db) => match creating.finish(&*vfs) {
                Ok(()) => Ok(db),
                Err(e) => {
                    // The marker stays: the next create removes the database (nobody was
                    // told of it) and starts again.
                    drop(db);
                    Err(e)
                }
            },
            Err(e) => {
                made.remove();
                // Best effort: a marker left behind only makes the next create clean up.
                let _ = creating.finish(&*vfs);
                Err(e)
            }
        }
    }

    /// `create` once the settings are checked; `made` records what it made, for its removal
    /// if a later step fails.
    fn create_files(&self, path: &Path, made: &mut Made<'_>) -> Result<Database> {
        if self.logging == Some(false) {
            let pool = swizzledb_buffer::BufferPool::create(path, &self.config, Arc::new(BTreeOwner))?;
            made.file = Some(path.to_path_buf());
            let lock = files::FileLock::acquire(&*self.config.vfs, path, path)?;
            return Ok(self.database(pool, None, vec![lock]));
        }
        made.claim_log_dir(path)?;
        let (dir, log, archive, config) = self.new_log(path)?;
        let pool = swizzledb_buffer::BufferPool::create(path, &config, Arc::new(BTreeOwner))?;
        made.file = Some(path.to_path_buf());
        let mut locks = vec![files::FileLock::acquire(&*self.config.vfs, path, path)?];
        let segment_bytes = self.log_config(path).segment_bytes;
        locks.push(files::create_identity(
            &*self.config.vfs,
            &dir,
            pool.file_state().id,
            segment_bytes,
            path,
        )?);
        let wal = self.wal(log, archive);
        seed_new(&wal, &pool);
        let db = self.database(pool, Some(Arc::new(wal)), locks);
        db.checkpoint()?;
        self.start_background(&db);
        Ok(db)
    }

    /// The log archive of the database at `path`, if asked for, checked to continue `log`
    /// (R17).
    pub(crate) fn archive(
        &self,
        path: &Path,
        log: &LogManager,
    ) -> Result<Option<Arc<swizzledb_wal::Archive>>> {
        if !self.log_archive {
            return Ok(None);
        }
        let archive = swizzledb_wal::Archive::open(Arc::clone(&self.config.vfs), archive_dir(path))?;
        logging::check_archive(log, &archive)?;
        Ok(Some(Arc::new(archive)))
    }

    /// The kind of the background, cleaner and explicit checkpoints (R7, R19).
    pub(crate) fn checkpoints(&self) -> CheckpointKind {
        // R20: with the decoupled cleaner the pool's recovery LSNs lag behind the file (it
        // writes pages without their frames), so a classical checkpoint could name log the
        // decoupled ones already truncated: every checkpoint but the exact ones at open,
        // restart and close is decoupled then.
        match self.cleaner {
            Cleaner::Decoupled => CheckpointKind::Decoupled,
            _ => self.checkpoint_kind,
        }
    }

    /// R29: whether splits log their new node as a split-off: as asked, else wherever nothing
    /// refuses it — no log archive, whose page-local redo cannot follow a split-off, and
    /// classical checkpoints (the decoupled cleaner needs the archive).
    pub(crate) fn splits_lazily(&self) -> bool {
        self.lazy_split_images.unwrap_or(!self.log_archive && self.checkpoints() == CheckpointKind::Classical)
    }

    /// The engine's log over `log`, with the log archive if the database keeps one (R17).
    pub(crate) fn wal(&self, log: Arc<LogManager>, archive: Option<Arc<swizzledb_wal::Archive>>) -> Wal {
        let kind = self.checkpoints();
        let mut wal = Wal::new(log, self.commit_mode, self.config.page_size)
            .with_archive(archive)
            .with_checkpoint_kind(kind);
        // R25: not with the decoupled cleaner (R20, R21), whose pages the archive propagates:
        // a close that truncates the whole log there is not verified yet.
        wal.seal_on_close = !self.keep_log_on_close && self.cleaner != Cleaner::Decoupled;
        wal.lazy_split_images = self.splits_lazily();
        if let Some(bytes) = self.archive_memory {
            wal.archive_memory = bytes;
        }
        wal
    }

    /// R27: a cleanly closed database over a view of its file system that cannot change it,
    /// with a pool that never writes (buffer B34) and no log.
    fn open_read_only(self, path: &Path) -> Result<Database> {
        let own = Arc::clone(&self.config.vfs);
        let lock = files::FileLock::shared(&*own, path)?;
        if crate::compact::is_pending(&*own, path) {
            // R28: finishing the compaction writes.
            return Err(Error::NeedsRestart(path.to_path_buf()));
        }
        let view: Arc<dyn swizzledb_io::Vfs> = Arc::new(crate::inspect::ReadOnlyFs::over(own));
        let (_, meta) = PageFile::open_logged(&*view, path, false)?;
        if !meta.logged && self.logging == Some(true) {
            // As a read-write open refuses it (`Builder::logging`); converting it would write.
            return Err(if self.convert_to_logged {
                Error::Tree(TreeError::ReadOnly)
            } else {
                Error::NotLogged(path.to_path_buf())
            });
        }
        let mut this = self;
        if meta.logged && this.logging != Some(false) {
            // Settings that contradict each other, refused as a read-write open refuses them
            // (`check_log_settings`), with the archive a database keeps taken as asked for, as
            // there (R17: its archive directory listed, nothing of the log read); the log's
            // bound is checked against the log's segment size, which only the log's files
            // know, and this open reads none.
            this.log_archive |= files::keeps_archive(&*view, path);
            this.check_propagation()?;
        }
        if !meta.clean {
            return Err(if meta.logged {
                Error::NeedsRestart(path.to_path_buf())
            } else {
                Error::Unclean(path.to_path_buf())
            });
        }
        this.adopt_page_size(path, meta.page_size)?;
        // The pool reads through the view; the database keeps its own file system, which a
        // backup writes its copy on (R26) and nothing else of this open uses.
        let mut config = this.config.clone();
        config.vfs = view;
        config.read_only = true;
        config.log = None;
        config.direct_io = false;
        let pool = swizzledb_buffer::BufferPool::open(path, &config, Arc::new(BTreeOwner))?;
        let db = this.database(pool, None, vec![lock]);
        load_main_memory_trees(&db)?;
        Ok(db)
    }

    /// `path` as the database keeps it while open (R13, io README IO18): a relative path
    /// joined to the current directory now, so that a later change of the process's current
    /// directory leads none of the files the database makes beside it (log segments, the
    /// master record, archive runs) into another directory.
    fn anchored(&self, path: &Path) -> Result<std::path::PathBuf> {
        self.config.vfs.anchored(path).map_err(|e| files::io(path, e))
    }

    pub(crate) fn open_at(self, path: &Path) -> Result<Database> {
        let path = &self.anchored(path)?;
        // Settings that do not depend on the file, before anything is read or written; the
        // rest once page 0 and the log's identity are read, still before anything is written.
        if self.page_size_set {
            self.check_pool(self.config.page_size)?;
        }
        // `db.swz/` names a directory: the file under it failed with "not a directory" only
        // where the file exists, and said nothing of the trailing `/`.
        if let Some(e) = directory_path(path) {
            return Err(e);
        }
        self.check_trace(path)?;
        // R14: a create's marker: a create is making the file, or a crash cut one short.
        if let Some(e) = files::cut_short_create(&*self.config.vfs, path) {
            return Err(e);
        }
        if self.read_only {
            return self.open_read_only(path);
        }
        // R28: a compaction that a crash stopped after its copy was complete is finished first.
        crate::compact::finish_pending(&*self.config.vfs, path)?;
        let vfs = Arc::clone(&self.config.vfs);
        // The lock first, so that nothing below reads a file another opener is writing.
        let lock = match files::FileLock::open_database(&*vfs, path) {
            Ok(lock) => lock,
            Err(e @ (Error::AlreadyOpen(_) | Error::NotFound(_))) => return Err(e),
            // Let the page file name what is wrong with the path (missing, not a database...).
            Err(e) => {
                PageFile::open_logged(&*vfs, path, self.config.direct_io)?;
                return Err(e);
            }
        };
        let (_, meta) = PageFile::open_logged(&*vfs, path, self.config.direct_io)?;
        let mut this = self;
        this.adopt_page_size(path, meta.page_size)?;
        this.check_main_memory_fits(path, &meta)?;
        let db = this.open_as(path, &meta, lock)?;
        load_main_memory_trees(&db)?;
        Ok(db)
    }

    /// R14, buffer B15: a main-memory pool loads every page in use at open, so one too small
    /// for the pages a cleanly closed file uses (page 0's count less its free chain's pages,
    /// both current after a clean close) is refused before restart writes anything. A file
    /// that needs restart learns its pages from restart, and a pool too small for them fails
    /// once restart is done; so does one whose free chain cannot be read here.
    fn check_main_memory_fits(&self, path: &Path, meta: &swizzledb_buffer::Meta) -> Result<()> {
        if self.config.mode != PoolMode::MainMemory || !meta.clean {
            return Ok(());
        }
        let frames = self.config.pool_bytes / meta.page_size;
        if meta.page_count.saturating_sub(1) <= frames as u64 {
            return Ok(());
        }
        // `meta` comes from a logged open, which skips the free chain; page 0's count holds the
        // free pages too (a file whose deletes freed most of its pages fits a small pool).
        let Ok((_, with_chain)) = PageFile::open(&*self.config.vfs, path, self.config.direct_io) else {
            return Ok(());
        };
        let in_use = with_chain.page_count.saturating_sub(1 + with_chain.free_pages.len() as u64);
        if in_use > frames as u64 {
            return Err(BufferError::MemoryLimit { limit_bytes: frames * meta.page_size, frames }.into());
        }
        Ok(())
    }

    /// `open` once the file is locked and its page 0 read.
    pub(crate) fn open_as(
        self,
        path: &Path,
        meta: &swizzledb_buffer::Meta,
        lock: files::FileLock,
    ) -> Result<Database> {
        let vfs = Arc::clone(&self.config.vfs);
        Ok(if meta.logged {
            let (log_lock, segment_bytes) =
                files::check_identity(&*vfs, &wal_dir(path), meta.id, path, meta.clean)?;
            // The log's segment size is the log's, whatever the builder says (R14); the
            // settings are checked against it before anything is written.
            let mut this = self;
            this.log_segment_bytes = Some(segment_bytes);
            // R17: a database that keeps an archive keeps it, asked for or not: without it,
            // checkpoints would truncate the log past the archive's end, and the archive
            // would never continue the log again.
            this.log_archive |= files::keeps_archive(&*vfs, path);
            this.check_log_settings()?;
            this.restart(path, vec![lock, log_lock], meta.clean)?
        } else if self.logging == Some(true) && !self.convert_to_logged {
            return Err(Error::NotLogged(path.to_path_buf()));
        } else {
            if !meta.clean {
                if !self.discard_unclean {
                    return Err(Error::Unclean(path.to_path_buf()));
                }
                // R14: the new database's settings before the old file goes; refused after,
                // the open left no database at all.
                let fresh = self.logging(false);
                fresh.check_create()?;
                drop(lock);
                vfs.remove(path).map_err(|e| BufferError::Io { file: path.to_path_buf(), source: e })?;
                return fresh.create_at(path);
            }
            if self.logging == Some(true) {
                return self.convert(path, lock, meta.id);
            }
            let pool = swizzledb_buffer::BufferPool::open(path, &self.config, Arc::new(BTreeOwner))?;
            self.database(pool, None, vec![lock])
        })
    }

    /// A new log for the database at `path` (refused if `<path>.wal` holds files already,
    /// [`Error::StaleLog`]), its archive if asked for, and the pool settings that log to them.
    #[allow(clippy::type_complexity)]
    fn new_log(
        &self,
        path: &Path,
    ) -> Result<(PathBuf, Arc<LogManager>, Option<Arc<swizzledb_wal::Archive>>, PoolConfig)> {
        // Before the log directory is made: a page size the area refuses would leave it behind.
        self.check_pool(self.config.page_size)?;
        let dir = wal_dir(path);
        if self.config.vfs.list(&dir).is_ok_and(|files| !files.is_empty()) {
            return Err(Error::StaleLog(dir));
        }
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let archive = self.archive(path, &log)?;
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog::new(
            Arc::clone(&log),
            archive.clone(),
            self.checkpoints() == CheckpointKind::Decoupled,
        )));
        // The pool's page size: a conversion's is the file's (`convert_at` sets it).
        config.double_write = Some(Arc::new(swizzledb_buffer::DoubleWrite::open(
            &*self.config.vfs,
            &files::double_write_path(path),
            self.config.page_size,
        )?));
        Ok((dir, log, archive, config))
    }

    /// Converts the cleanly closed unlogged database at `path` into a logged one: a new log
    /// with a first checkpoint of the file's state, then page 0 marked logged (R13). A failure
    /// before page 0 is written removes the new log (as a failed create does, R14), so the
    /// database is the unlogged one it was and the conversion can be tried again; once page 0
    /// is being written the log stays, as page 0 may say logged. A crash before page 0 is
    /// written leaves the unlogged database, still clean, and a log directory: the next
    /// conversion removes it if its identity file names this file (`id`, from page 0) or it
    /// holds no record (a double-write area and no readable identity file), and refuses any
    /// other as stale ([`Error::StaleLog`]).
    pub(crate) fn convert(self, path: &Path, lock: files::FileLock, id: u64) -> Result<Database> {
        self.check_log_settings()?;
        self.check_new_log()?;
        let vfs = Arc::clone(&self.config.vfs);
        // A killed conversion's log (the rule in the doc above): page 0 says unlogged and this
        // open holds the file's lock, so it holds nothing to replay.
        let dir = wal_dir(path);
        let identity = files::read_identity(&*vfs, &dir);
        let no_records = || {
            vfs.list(&dir).is_ok_and(|found| {
                found.iter().all(|f| *f == files::double_write_path(path) || f.ends_with(files::ID_FILE))
            })
        };
        if identity.as_ref().is_ok_and(|(of, _)| *of == id) || (identity.is_err() && no_records()) {
            files::remove_under(&*vfs, &dir, &mut warn_left);
        }
        let mut made = Made { vfs: &*vfs, file: None, log_dir: None, log_dir_made: false };
        made.claim_log_dir(path)?;
        let (pool, wal, log_lock) = match self.convert_log(path) {
            Ok(converted) => converted,
            Err(e) => {
                made.remove();
                return Err(e);
            }
        };
        pool.mark_logged()?;
        let db = self.database(pool, Some(wal), vec![lock, log_lock]);
        self.start_background(&db);
        Ok(db)
    }

    /// A conversion's new log, with its identity file and a first checkpoint of the file's
    /// state, and the pool over it; page 0 not yet marked logged.
    fn convert_log(&self, path: &Path) -> Result<(swizzledb_buffer::BufferPool, Arc<Wal>, files::FileLock)> {
        let (dir, log, archive, config) = self.new_log(path)?;
        let pool = swizzledb_buffer::BufferPool::open(path, &config, Arc::new(BTreeOwner))?;
        let segment_bytes = self.log_config(path).segment_bytes;
        let log_lock =
            files::create_identity(&*self.config.vfs, &dir, pool.file_state().id, segment_bytes, path)?;
        let wal = Arc::new(self.wal(log, archive));
        seed_new(&wal, &pool);
        wal.checkpoint_classical(&pool)?;
        Ok((pool, wal, log_lock))
    }

    pub(crate) fn database(
        &self,
        pool: swizzledb_buffer::BufferPool,
        wal: Option<Arc<Wal>>,
        locks: Vec<files::FileLock>,
    ) -> Database {
        let cleaner = (wal.is_some() && self.cleaner != Cleaner::None)
            .then(|| Arc::new(cleaner::Shared::new(self.cleaner, self.cleaner_every, self.log_bound())));
        // K17, K21: a database with record locks keeps versions, so that reads outside
        // transactions and read-only transactions take no lock and wait for no writer.
        let record_locks = (self.locking == Locking::On).then(|| {
            Arc::new(
                lock::LockManager::new(lock::ENGINE_SHARDS)
                    .with_deadlock_policy(self.deadlock_policy)
                    .with_wait_timeout(self.lock_wait_timeout.unwrap_or(lock::DEFAULT_WAIT_TIMEOUT)),
            )
        });
        let versions = record_locks.as_ref().map(|locks| {
            Arc::new(crate::versions::Versions::new(
                self.version_memory.unwrap_or(crate::versions::DEFAULT_VERSION_MEMORY),
                Arc::clone(locks),
            ))
        });
        let core = Arc::new_cyclic(|me| Core {
            me: Mutex::new(me.clone()),
            pool: Arc::new(pool),
            vfs: Arc::clone(&self.config.vfs),
            in_memory: self.in_memory,
            trees: Mutex::new(HashMap::new()),
            wal,
            locks: record_locks,
            versions,
            cleaner,
            next_txn: AtomicU64::new(1),
            restart_stats: Mutex::new(RestartStats::default()),
            running: (0..crate::engine::RUNNING_STRIPES)
                .map(|_| crate::engine::RunningStripe::default())
                .collect(),
            quiesce: std::sync::atomic::AtomicBool::new(false),
            dropping: Mutex::new(()),
            rollback_failed: std::sync::atomic::AtomicBool::new(false),
        });
        if let Some(wal) = &core.wal {
            let _ = wal.pool.set(Arc::downgrade(&core.pool));
        }
        let mut background = Background::default();
        if !self.no_background_eviction {
            // B31. Without it the misses evict for themselves: slower, not wrong.
            background.evictor = core.pool.start_evictor().unwrap_or_else(|e| {
                log::warn!("swizzledb: the background evictor could not start ({e}); misses evict");
                None
            });
        }
        Database {
            snapshot_reads: core.snapshot_reads(),
            core,
            background: Box::new(Mutex::new(background)),
            files: Mutex::new(locks),
            closed: false,
        }
    }

    pub(crate) fn start_background(&self, db: &Database) {
        let Some(wal) = &db.core.wal else { return };
        let mut threads = db.background.lock();
        if let Some(pending) = wal.pending.as_ref().filter(|p| !self.no_background_redo && !p.is_finished()) {
            let finisher = Arc::clone(wal);
            threads.redo = Some(instant::RedoThread::start(
                Arc::clone(&wal.log),
                wal.archive.clone(),
                Arc::clone(&db.core.pool),
                Arc::clone(pending),
                move |pool| finisher.finish_restart(pool).map(drop),
            ));
        }
        if let Some(every) = self.checkpoint_every() {
            threads.checkpointer =
                Some(logging::start_checkpointer(Arc::clone(wal), Arc::clone(&db.core.pool), every));
        }
        if let (Some(_), Some(every)) = (&wal.archive, self.archive_every()) {
            threads.archiver = Some(logging::start_archiver(Arc::clone(wal), every));
            threads.merger = Some(logging::start_merger(Arc::clone(wal), every));
        }
        if let Some(shared) = &db.core.cleaner {
            threads.cleaner =
                Some(cleaner::Thread::start(Arc::clone(shared), Arc::clone(wal), Arc::clone(&db.core.pool)));
        }
    }

    /// R3, buffer README F15: the double-write area of the logged database at `path`, and the
    /// number of pages torn by a crash it put back: each page the area names whose changes
    /// after the area's copy are all still in the log or the archive, brought forward by
    /// replaying them (as single-page recovery does, R18) — one that ends free, to where it was
    /// just before its last free. Any other is left for R18 to rebuild or refuse when it is
    /// read.
    fn restore_torn_pages(
        &self,
        path: &Path,
        log: &LogManager,
        archive: Option<&swizzledb_wal::Archive>,
    ) -> Result<(Arc<swizzledb_buffer::DoubleWrite>, u64)> {
        let vfs = &*self.config.vfs;
        let (file, meta) = PageFile::open_logged(vfs, path, self.config.direct_io)?;
        let area = swizzledb_buffer::DoubleWrite::open(vfs, &files::double_write_path(path), meta.page_size)?;
        let mut restored = 0;
        for (id, copy) in file.torn_pages(&area, log.end())? {
            let after = Lsn(swizzledb_buffer::page::page_lsn(&copy).0 + 1);
            let covered = log.oldest() <= after
                || archive.and_then(swizzledb_wal::Archive::begin).is_some_and(|b| b <= after);
            if !covered {
                log::warn!("page {id} is torn, and the log no longer holds every change after its copy in the double-write area; single-page recovery rebuilds it when it is read, if it can");
                continue;
            }
            match crate::repair::redo_torn_page(log, archive, id, meta.page_size, copy) {
                Ok(mut page) => {
                    file.write_page(id, &mut page)?;
                    restored += 1;
                }
                Err(e @ Error::PageUnrecoverable { .. }) => {
                    log::warn!("page {id} is torn and could not be put back from the double-write area: {e}");
                }
                // I/O and log errors fail the open (R11: a restart never hides a failed call).
                Err(e) => return Err(e),
            }
        }
        if restored > 0 {
            file.sync()?;
            log::info!(
                "{}: {restored} pages torn by a crash put back from the double-write area",
                path.display()
            );
        }
        Ok((Arc::new(area), restored))
    }

    /// Restart (RECOVERY.md R8–R11): analysis and redo on the file, then the pool opens with
    /// the recovered allocation, the losers are rolled back with compensation records, and a
    /// checkpoint ends it. Crashing anywhere in here and restarting again is safe (R11).
    /// `clean`: page 0 says CLEAN, cleared once the log and the archive are open and the log
    /// holds a checkpoint, before the first write to the file (buffer F11, R14): a refusal
    /// up to there leaves the file as it was.
    pub(crate) fn restart(&self, path: &Path, locks: Vec<files::FileLock>, clean: bool) -> Result<Database> {
        let log = Arc::new(LogManager::open(self.log_config(path))?);
        let opened = log.opened().clone();
        let archive = self.archive(path, &log)?;
        if restart::last_checkpoint_end(&log)?.is_none() {
            return Err(Error::LogMissing {
                file: path.to_path_buf(),
                dir: wal_dir(path),
                reason: "it holds no checkpoint".into(),
            });
        }
        if clean {
            // Buffer F11: page 0 of a logged file says CLEAN only while it is closed.
            let (file, _) = PageFile::open_logged(&*self.config.vfs, path, false)?;
            file.clear_clean()?;
        }
        // R3: torn page writes are put back before anything reads a page.
        let (area, torn) = self.restore_torn_pages(path, &log, archive.as_deref())?;
        if self.restart_mode == RestartMode::Instant {
            let known_pages = {
                let (file, meta) = PageFile::open_logged(&*self.config.vfs, path, self.config.direct_io)?;
                meta.page_count.max(file.len_pages()?)
            };
            if let Some(plan) = instant::plan(&log, archive.as_deref(), known_pages)? {
                return self.restart_instant(path, locks, log, archive, plan, (area, torn));
            }
        }
        let recovered = restart::analyze_and_redo(
            &*self.config.vfs,
            path,
            self.config.direct_io,
            &log,
            archive.as_deref(),
            &area,
        )?;
        let mut config = self.config.clone();
        config.log = Some(Arc::new(PoolLog::new(
            Arc::clone(&log),
            archive.clone(),
            self.checkpoints() == CheckpointKind::Decoupled,
        )));
        config.double_write = Some(area);
        let pool = swizzledb_buffer::BufferPool::open_recovered(
            path,
            &config,
            Arc::new(BTreeOwner),
            recovered.allocation,
        )?;
        let wal = self.wal(log, archive);
        // R22: the archive catches up with the log, storing restart's analysis state, so that
        // the archiver carries it forward from here. Not fatal: without it the runs carry no
        // state until the next restart, and instant restart falls back to classical.
        if let Err(e) = wal.archive_restart_end(&recovered.state) {
            log::warn!("restart could not archive the log's tail ({e}); the next checkpoint tries again");
        }
        let mut db = self.database(pool, Some(Arc::new(wal)), locks);
        db.core.set_next_txn(recovered.next_txn);
        let mut stats = recovered.stats;
        stats.torn_pages_restored = torn;
        stats.note_log_open(&opened);
        finish_losers(&mut db, &recovered.unfinished, &mut stats)?;
        *db.core.restart_stats.lock() = stats;
        // Classical whatever the configured kind: redo wrote pages without page-write records,
        // and the pool knows exactly which pages are dirty now.
        if let Some(wal) = &db.core.wal {
            wal.checkpoint_classical(&db.core.pool)?;
        }
        self.start_background(&db);
        Ok(db)
    }

    /// Instant restart (RECOVERY.md R22): the archive catches up with the log's tail, carrying
    /// its analysis state forward over it; the pages changed since the checkpoint's redo LSN
    /// become pending (stale below their newest change, B25); the pool opens with the
    /// allocation of the state, and the losers are rolled back through the trees. Redo of the
    /// other pending pages is left to their first fetch and the background redo thread.
    pub(crate) fn restart_instant(
        &self,
        path: &Path,
        locks: Vec<files::FileLock>,
        log: Arc<LogManager>,
        archive: Option<Arc<swizzledb_wal::Archive>>,
        plan: instant::Plan,
        (area, torn): (Arc<swizzledb_buffer::DoubleWrite>, u64),
    ) -> Result<Database> {
        let wal = self.wal(Arc::clone(&log), archive.clone());
        wal.seed_archiver(&plan.state);
        let analyzed_before = wal.stats.archived_records.load(Ordering::Relaxed);
        wal.archive_durable_unmerged()?;
        let analyzed = wal.stats.archived_records.load(Ordering::Relaxed) - analyzed_before;
        let state = wal.archiver_state().ok_or_else(|| {
            Error::Log(LogError::BadConfig { reason: "the archiver lost its analysis state".into() })
        })?;
        // R10: the tail's records may name transaction numbers no engine gives (the archiver
        // refuses implausible pages, `Wal::archive_durable`); refused as classical restart does.
        let next_txn = state.next_txn().map_err(|why| crate::redo::corrupted(plan.state.at(), why))?;
        let archive_ref = archive.as_deref().expect("instant::plan needs the archive");
        let pages: Vec<(PageId, Lsn)> = archive_ref
            .last_lsns_since(plan.redo_from)
            .into_iter()
            .filter(|&(_, last)| last >= plan.redo_from)
            .filter_map(|(p, last)| PageId::new(p).map(|p| (p, last)))
            .collect();
        let page_count = state.tables.page_count;
        {
            // What the file holds now is what the pending pages' redo starts from: make it
            // durable (writes of the crashed process may be in the OS's cache only).
            let (file, _) = PageFile::open_logged(&*self.config.vfs, path, self.config.direct_io)?;
            if file.len_pages()? < page_count {
                file.set_len_pages(page_count)?;
            }
            file.sync()?;
        }
        let pending = Arc::new(instant::PendingRedo::new(&pages));
        let mut config = self.config.clone();
        let pool_log =
            PoolLog::new(Arc::clone(&log), archive.clone(), self.checkpoints() == CheckpointKind::Decoupled)
                .with_pending(Arc::clone(&pending), &pages);
        config.log = Some(Arc::new(pool_log));
        config.double_write = Some(area);
        let allocation = swizzledb_buffer::Allocation {
            page_count,
            free_pages: state.tables.free.clone(),
            trees: state.tables.catalog.iter().cloned().collect(),
        };
        let pool =
            swizzledb_buffer::BufferPool::open_recovered(path, &config, Arc::new(BTreeOwner), allocation)?;
        let wal = wal.with_pending(pending);
        let mut db = self.database(pool, Some(Arc::new(wal)), locks);
        db.core.set_next_txn(next_txn);
        let mut stats = RestartStats {
            instant: true,
            analyzed,
            pages_deferred: pages.len() as u64,
            torn_pages_restored: torn,
            ..RestartStats::default()
        };
        stats.note_log_open(log.opened());
        // With record locks, losers are rolled back in the background, their keys locked until
        // then; without, here (R22).
        let mut background_undo = Vec::new();
        let mut deletes = Vec::new();
        for entry in &state.tables.txns {
            if db.core.locks.is_none() || entry.state == TxnState::Committed {
                finish_losers(&mut db, std::slice::from_ref(entry), &mut stats)?;
                continue;
            }
            match db.core.hold_loser(entry) {
                Ok(deleted) => deletes.push((entry.txn, deleted)),
                Err(e) => {
                    db.closed = true;
                    db.core.pool.mark_closed();
                    return Err(e);
                }
            }
            stats.losers += 1;
            background_undo.push(entry.clone());
        }
        // The gaps once every loser holds its keys: a closing key may be another loser's.
        for (txn, deleted) in &deletes {
            if let Err(e) = db.core.hold_loser_gaps(*txn, deleted) {
                db.closed = true;
                db.core.pool.mark_closed();
                return Err(e);
            }
        }
        *db.core.restart_stats.lock() = stats;
        self.start_background(&db);
        if !background_undo.is_empty() {
            let pending = db.core.wal.as_ref().and_then(|w| w.pending.clone()).expect("instant restart");
            let core = Arc::clone(&db.core);
            let releases = Arc::clone(&core);
            db.background.lock().undo = Some(instant::UndoThread::start(
                background_undo,
                pending,
                // The stats the open returned grow by each loser's compensations as it is
                // rolled back.
                move |entry| {
                    let compensations = core.finish_loser(entry)?;
                    core.restart_stats.lock().compensations += compensations;
                    Ok(())
                },
                move |entry| releases.finish_txn(entry.txn),
            ));
        }
        Ok(db)
    }
}

/// What a `create` (or a conversion, R13) made, so that a failure after it removes that and
/// nothing else (R14): the
/// data file it created (`create_new`: never one that was there), and everything in the log
/// directory, which it found missing or empty — its files and subdirectories, and the
/// directory itself if it was missing. The directories above them existed before (a create
/// refuses a missing one).
struct Made<'a> {
    vfs: &'a dyn swizzledb_io::Vfs,
    file: Option<PathBuf>,
    log_dir: Option<PathBuf>,
    /// The log directory was missing: the create made it.
    log_dir_made: bool,
}

impl Made<'_> {
    /// Takes the log directory of the database at `path` for this create or conversion: refused
    /// ([`Error::StaleLog`]) if it holds files, which belong to another database; everything in
    /// it from here on is this call's, and the directory itself too if it is missing.
    fn claim_log_dir(&mut self, path: &Path) -> Result<()> {
        let dir = wal_dir(path);
        if self.vfs.list(&dir).is_ok_and(|files| !files.is_empty()) {
            return Err(Error::StaleLog(dir));
        }
        self.log_dir_made = !self.vfs.exists(&dir);
        self.log_dir = Some(dir);
        Ok(())
    }

    fn remove(&self) {
        if let Some(dir) = &self.log_dir {
            files::remove_under(self.vfs, dir, &mut warn_left);
            if self.log_dir_made {
                if let Err(e) = self.vfs.remove_dir(dir) {
                    log::warn!(
                        "{}: the failed create or conversion could not remove the directory it made ({e})",
                        dir.display()
                    );
                }
            }
        }
        if let Some(file) = &self.file {
            if let Err(e) = self.vfs.remove(file) {
                log::warn!(
                    "{}: the failed create or conversion could not remove the file it made ({e})",
                    file.display()
                );
            }
        }
    }
}

/// What `files::remove_under` could not remove of a failed create or conversion: a warning.
fn warn_left(entry: &Path, e: std::io::Error) {
    log::warn!("{}: the failed create or conversion could not remove what it made ({e})", entry.display());
}

/// R22: the archiver of a new log begins with the pool's (empty) tables.
pub(crate) fn seed_new(wal: &Wal, pool: &swizzledb_buffer::BufferPool) {
    let allocation = pool.allocation();
    let at = wal.log.end();
    wal.seed_archiver(&restart::ArchivedState {
        max_txn: 0,
        tables: record::Checkpoint {
            begin: at,
            page_count: allocation.page_count,
            free: allocation.free_pages,
            catalog: allocation.trees.into_iter().collect(),
            ..record::Checkpoint::default()
        },
    });
}

/// Restart's undo (R10): every transaction restart found unfinished is rolled back (or, if
/// committed, ended).
pub(crate) fn finish_losers(
    db: &mut Database,
    unfinished: &[record::TxnEntry],
    stats: &mut RestartStats,
) -> Result<()> {
    for entry in unfinished {
        match db.core.finish_loser(entry) {
            Ok(compensations) => stats.compensations += compensations,
            Err(e) => {
                // No checkpoint on the way out (Drop): it would list the unfinished losers
                // without their first records and truncate the log they still need.
                db.closed = true;
                db.core.pool.mark_closed();
                return Err(e);
            }
        }
        stats.losers += u64::from(entry.state != TxnState::Committed);
    }
    Ok(())
}

/// A main-memory pool holds every tree whole: their pages are loaded at open.
fn load_main_memory_trees(db: &Database) -> Result<()> {
    if db.core.pool.mode() == PoolMode::MainMemory {
        for name in db.core.pool.catalog_names() {
            db.tree(&name)?;
        }
    }
    Ok(())
}
