//! The settings of a database, and the user's way to create or open one.

use std::path::Path;
use std::sync::Arc;

use swizzledb_buffer::{PolicySpec, PoolConfig, PoolMode};
use swizzledb_wal::{LogConfig, LogError};

use crate::cleaner::Cleaner;
use crate::database::Database;
use crate::engine::LOG_BUFFER_BYTES;
use crate::error::{Error, Result};
use crate::files::{resolved_on_os, wal_dir};
use crate::instant::RestartMode;
use crate::logging::{CheckpointKind, CommitMode};

/// Whether transactions take record locks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Locking {
    #[default]
    On,
    Off,
}

/// Settings for opening or creating a database.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    pub(crate) config: PoolConfig,
    /// `None`: not said (create logs; open follows the file).
    pub(crate) logging: Option<bool>,
    pub(crate) locking: Locking,
    pub(crate) deadlock_policy: crate::lock::DeadlockPolicy,
    /// `None`: [`crate::lock::DEFAULT_WAIT_TIMEOUT`].
    pub(crate) lock_wait_timeout: Option<std::time::Duration>,
    pub(crate) commit_mode: CommitMode,
    pub(crate) log_segment_bytes: Option<u64>,
    pub(crate) log_recovery: swizzledb_wal::Recovery,
    pub(crate) commit_wait: swizzledb_wal::CommitWait,
    pub(crate) checkpoint_every: Option<Option<std::time::Duration>>,
    pub(crate) max_log_bytes: Option<u64>,
    /// `None`: [`crate::DEFAULT_VERSION_MEMORY`].
    pub(crate) version_memory: Option<usize>,
    pub(crate) cleaner: Cleaner,
    pub(crate) cleaner_every: Option<std::time::Duration>,
    pub(crate) checkpoint_kind: CheckpointKind,
    pub(crate) log_archive: bool,
    /// [`crate::lab::LabOptions::lazy_split_images`]; `None`: the default, on where the log
    /// archive and decoupled checkpoints are off ([`Builder::splits_lazily`]).
    pub(crate) lazy_split_images: Option<bool>,
    pub(crate) archive_every: Option<Option<std::time::Duration>>,
    /// [`crate::lab::LabOptions::archive_memory`]; `None`: the default.
    pub(crate) archive_memory: Option<usize>,
    pub(crate) restart_mode: RestartMode,
    pub(crate) no_background_redo: bool,
    pub(crate) no_background_eviction: bool,
    pub(crate) discard_unclean: bool,
    /// [`Builder::keep_log_on_close`].
    pub(crate) keep_log_on_close: bool,
    /// [`Builder::read_only`].
    pub(crate) read_only: bool,
    pub(crate) convert_to_logged: bool,
    /// `page_size` was called: `open` checks the file's against it instead of adopting it.
    pub(crate) page_size_set: bool,
    /// [`Builder::create_in_memory`]: the file system is the database's own memory, so a
    /// backup is written on the operating system's instead (R26).
    pub(crate) in_memory: bool,
}

/// The fewest pages a new log's segment holds ([`Builder::log_segment_bytes`], RECOVERY.md
/// R14): a log record lies in one segment, and a structure change's holds the image of the
/// node it makes (a split's new node, a merged node, a grown root's child) beside a smaller
/// image or the other pages' logical changes; a leaf change holds at most a quarter page of
/// value and a sixteenth of key.
pub const MIN_SEGMENT_PAGES: u64 = 2;

/// Default interval of the background archiver ([`crate::lab::LabOptions::archive_interval`]).
pub const DEFAULT_ARCHIVE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Default bound of the log kept on disk (R15): 1 GiB, PostgreSQL's `max_wal_size`. The
/// classical cleaner writes a page back at most once per half a bound of log, so the bound sets
/// how often a hot page is written; restart reads up to about three quarters of it.
pub const DEFAULT_MAX_LOG_BYTES: u64 = 1 << 30;

/// The path an in-memory database's file has inside its own file system
/// ([`Builder::create_in_memory`]); errors that name the file name this.
pub(crate) const IN_MEMORY_PATH: &str = "/in-memory.swz";

impl Database {
    /// Settings for creating or opening a database.
    #[must_use]
    pub fn builder() -> Builder {
        Builder::default()
    }
}

impl Builder {
    /// Buffer mode (default: swizzling).
    #[must_use]
    pub fn mode(mut self, mode: PoolMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Bytes of frame memory (default 64 MiB); the memory limit in main-memory mode. Every
    /// tree's root stays in the pool while the database is open (buffer README B5), so a pool
    /// needs a frame per tree beside those its operations latch: a tree made when none is
    /// left fails with `PoolExhausted`, and nothing is lost. In main-memory mode `open` loads
    /// every page in use: a pool too small for those of a cleanly closed database is refused
    /// with [`BufferError::MemoryLimit`](crate::BufferError::MemoryLimit) before anything is
    /// written; one that needs restart counts its pages in restart, and fails so after it.
    ///
    /// The pool takes memory as pages come in, not for its size (buffer README B30a): frames,
    /// their descriptors and the page table are committed as frames are first used, so a pool
    /// far larger than the data (up to 2^32 − 2 frames) is made at once and costs what the data
    /// uses. The replacement policy's state is the exception: GCLOCK (the default) and RANDOM
    /// commit theirs on use too, the other policies write several bytes per frame at creation.
    #[must_use]
    pub fn pool_bytes(mut self, bytes: usize) -> Self {
        self.config.pool_bytes = bytes;
        self
    }

    /// Page size for a new file (default 8 KiB; a power of two from 4 KiB to 32 KiB). `open`
    /// uses the file's page size, unless one is set here: then a file with another page size is
    /// an error.
    #[must_use]
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.config.page_size = bytes;
        self.page_size_set = true;
        self
    }

    /// Replacement policy (default GCLOCK with k = 10): a [`PolicyKind`](crate::PolicyKind), or a [`PolicySpec`] for
    /// a wrapped one such as `leaf-lru`.
    #[must_use]
    pub fn policy(mut self, policy: impl Into<PolicySpec>) -> Self {
        self.config.policy = policy.into();
        self
    }

    /// Open the file with O_DIRECT (bypassing the OS page cache). A file system that cannot
    /// do it fails the open or create with [`BufferError::Config`](crate::BufferError::Config)
    /// naming it. A read-only open ([`Builder::read_only`]) ignores it.
    #[must_use]
    pub fn direct_io(mut self, on: bool) -> Self {
        self.config.direct_io = on;
        self
    }

    /// Write-ahead logging for a new database (default on): every change is logged before it
    /// reaches the file, commits are durable, and every open restarts from the log
    /// (RECOVERY.md). The log lives in the directory `<path>.wal` beside the database file. The
    /// trees' own `insert`/`upsert`/`delete` run as single-operation transactions
    /// (auto-commit, in the [`CommitMode`]); a [`Transaction`](crate::Transaction) batches several.
    ///
    /// `false` makes a scratch database without a log, for measuring the buffer alone: its file
    /// is consistent only after [`Database::close`], and `open` refuses it after a crash
    /// ([`Error::Unclean`]) — after a crash that came once it was changed: one open and not
    /// yet written to is still as it was closed, and opens (buffer README F11). Its transactions still lock, roll back and read at snapshots, but
    /// its trees' own writes are no transactions: they take no record locks ([`Tree`](crate::Tree)'s
    /// documentation says what that allows).
    ///
    /// On `open`, the file decides (page 0 records whether it is logged): a logged database
    /// always restarts from its log; `logging(true)` on an unlogged one is [`Error::NotLogged`]
    /// unless [`crate::lab::LabOptions::convert_to_logged`] is set.
    #[must_use]
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = Some(on);
        self
    }

    /// How `open` treats an unlogged database that was not closed cleanly (default `false`:
    /// refuse with [`Error::Unclean`]). `true` discards it: the file is replaced by a new, empty
    /// unlogged database with this builder's settings, checked before the file is removed (a
    /// setting the create refuses fails the open and keeps the file). No effect on logged
    /// databases, which restart from their log.
    #[must_use]
    pub fn discard_unclean(mut self, on: bool) -> Self {
        self.discard_unclean = on;
        self
    }

    /// Keep the log's older segments when the database closes cleanly (default: off). A clean
    /// close normally leaves one small log segment (RECOVERY.md R25), so that the database file
    /// and its log directory copy as two small things. Kept, the log still holds the history of
    /// pages changed since its last truncation, from which single-page recovery (R18) rebuilds a
    /// page found damaged at the next open; without it, and without a log archive
    /// ([`Builder::log_archive`], which keeps every page's history), such a page is a typed
    /// error naming the restore from a backup. With the decoupled cleaner
    /// ([`crate::lab::LabOptions::cleaner`]) the log is always kept at close.
    #[must_use]
    pub fn keep_log_on_close(mut self, on: bool) -> Self {
        self.keep_log_on_close = on;
        self
    }

    /// Opens the database for reading only (RECOVERY.md R27): the file is opened read-only,
    /// so a read-only file, or one in a read-only directory, opens; the log directory is not
    /// written, nor read beyond the list of its archive's files. Reads, scans, read transactions and transactions that read work as on
    /// any database; every change — a write through a tree or a transaction, `create_tree`,
    /// `drop_tree`, `checkpoint`, `flush` — fails with
    /// [`TreeError::ReadOnly`](crate::TreeError::ReadOnly) (wrapped in [`Error::Tree`] where
    /// the method returns [`Error`]) and changes nothing; `close` writes nothing. Any number of
    /// read-only opens may share the file, in this process or others; a read-write open
    /// excludes them ([`Error::AlreadyOpen`]). `create` (and `open_or_create` of a path with no
    /// file) refuses with [`TreeError::ReadOnly`](crate::TreeError::ReadOnly) in
    /// [`Error::Tree`], and makes nothing.
    ///
    /// Only a database that was closed cleanly opens: one that needs restart (a logged
    /// database after a crash) fails with [`Error::NeedsRestart`], and an unlogged one not
    /// closed cleanly with [`Error::Unclean`], since bringing either back writes. As on any
    /// open, `logging(true)` refuses an unlogged file ([`Error::NotLogged`]), and settings that
    /// contradict each other ([`Builder::restart_mode`], [`crate::lab::LabOptions::cleaner`],
    /// `write_elision`, `lazy_split_images`) are refused on a logged file with
    /// [`Error::Log`]`(`[`LogError::BadConfig`]`)`, a database that keeps a log archive taken
    /// as asked for ([`Builder::log_archive`]); [`Builder::max_log_bytes`] is not checked,
    /// since the log's segment size it is checked against is in the log directory, which a
    /// read-only open does not read; and [`Builder::direct_io`] is ignored: the file is read
    /// through the operating system's page cache, so a file system without `O_DIRECT`, on
    /// which a read-write open with it fails, opens. The file is read
    /// through the database's file system ([`LabOptions::vfs`](crate::lab::LabOptions::vfs),
    /// the operating system's by default), through which nothing is written.
    #[must_use]
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }

    /// The bound of the log kept on disk, in bytes (default [`DEFAULT_MAX_LOG_BYTES`], at least
    /// four log segments): the page cleaner writes back the pages that hold older log and
    /// checkpoints once the log passes three quarters of it, and transactions that begin while
    /// it is over the bound wait for the cleaner (RECOVERY.md R15). Restart reads at most about this
    /// much log, plus what transactions running at the crash had written. The log cannot be
    /// truncated past a running transaction's first record: while one stays open, the log
    /// grows past the bound (writers do not wait then, as no cleaning would help) and shrinks
    /// once it ends. Keep writing transactions short.
    #[must_use]
    pub fn max_log_bytes(mut self, bytes: u64) -> Self {
        self.max_log_bytes = Some(bytes);
        self
    }

    /// The bound on the memory of the versions snapshot reads keep (default
    /// [`DEFAULT_VERSION_MEMORY`](crate::DEFAULT_VERSION_MEMORY), LOCKS.md K20): the before-images of changes that a running
    /// snapshot must not see, kept after their transactions ended (a running transaction's are
    /// its undo list, which its rollback needs anyway). Past it the oldest snapshots end, and their next read fails with
    /// [`Error::SnapshotTooOld`]; a plain read outside a transaction starts again with a fresh
    /// snapshot instead.
    #[must_use]
    pub fn version_memory(mut self, bytes: usize) -> Self {
        self.version_memory = Some(bytes);
        self
    }

    pub(crate) fn archive_every(&self) -> Option<std::time::Duration> {
        self.archive_every.unwrap_or(Some(DEFAULT_ARCHIVE_INTERVAL))
    }

    /// How a logged database restarts after a crash (default: [`RestartMode::Classical`]).
    /// [`RestartMode::Instant`] needs [`Builder::log_archive`]; `open` and `create` of a logged
    /// database refuse it without, before anything is written (RECOVERY.md R22). An unlogged
    /// database has no log to restart from: there the setting, like the archive's, is ignored.
    #[must_use]
    pub fn restart_mode(mut self, mode: RestartMode) -> Self {
        self.restart_mode = mode;
        self
    }

    /// Keep a log archive (Lersch 2015; RECOVERY.md R17) in `<path>.wal/archive`: every
    /// checkpoint first sorts the page changes of the durable log into a new run, indexed by
    /// page (wal README A1–A8), and the log is never truncated past what is archived. Off by
    /// default; only with logging. With it, single-page recovery (RECOVERY.md R18) can rebuild
    /// any page whose copy in the file is damaged or stale; without it, only pages whose newest
    /// image is still in the log. It is also the input of Lersch's decoupled cleaner
    /// ([`Cleaner::Decoupled`], R20). The archiving is not cheap yet (with checkpoints every 100 ms a TPC-B run
    /// keeps about 0.4 of its throughput; measured in `docs/tpcb.md`).
    ///
    /// A database that keeps an archive (its archive directory holds a run) goes on archiving
    /// when it is opened without this option: a checkpoint without the archive would truncate
    /// the log past the archive's end, and every later open with the archive would be refused
    /// for the records missing between them. To stop archiving, remove `<path>.wal/archive`
    /// while the database is closed; a later open with the option then starts a new archive
    /// from the log it finds.
    #[must_use]
    pub fn log_archive(mut self, on: bool) -> Self {
        self.log_archive = on;
        self
    }

    /// How long a transaction's request for a record lock waits for the holder before it fails
    /// with [`Error::Lock`]`(`[`LockError::Timeout`](crate::lock::LockError::Timeout)`)`
    /// (default [`DEFAULT_WAIT_TIMEOUT`](crate::lock::DEFAULT_WAIT_TIMEOUT), 10 s; LOCKS.md K9).
    /// Deadlocks are found without it (K23): the timeout ends the waits for a transaction that
    /// holds its locks too long, such as one left open. `Duration::ZERO` makes a request that
    /// would wait fail at once (no wait). [`Database::transact`] does not retry a timeout: it
    /// returns it. Only with record locks (the default on a logged database).
    #[must_use]
    pub fn lock_wait_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.lock_wait_timeout = Some(timeout);
        self
    }

    /// When commits return (default [`CommitMode::Sync`]); only with logging on.
    #[must_use]
    pub fn commit_mode(mut self, mode: CommitMode) -> Self {
        self.commit_mode = mode;
        self
    }

    /// How a committer waits for the log's sync round that makes its commit durable (default
    /// [`CommitWait::Adaptive`]; wal README W6 steps 6 and 7). Adaptive waiting spins out a
    /// round that was short last time while a core is free, and when more committers wait than
    /// there are free cores it keeps one core awake, yielding it, through a short round: more
    /// commits per second under sync commit where fsyncs are quick and committers many, for
    /// CPU the cores would otherwise spend idle. [`CommitWait::Sleep`] never waits awake, for a
    /// machine whose idle cores run other work or are billed. Only sync commits and explicit
    /// flushes wait for rounds; [`LogStats::busy_waits`] counts the waits spent awake.
    ///
    /// [`CommitWait::Adaptive`]: crate::CommitWait::Adaptive
    /// [`CommitWait::Sleep`]: crate::CommitWait::Sleep
    /// [`LogStats::busy_waits`]: crate::LogStats::busy_waits
    #[must_use]
    pub fn commit_wait(mut self, wait: swizzledb_wal::CommitWait) -> Self {
        self.commit_wait = wait;
        self
    }

    /// How often a background thread takes a fuzzy checkpoint (default every 30 s; `None`: only
    /// at open, close, [`Database::checkpoint`] and the page cleaner's rounds). Restart reads
    /// the log back to the last checkpoint, and from the oldest change not yet written back:
    /// the page cleaner bounds that by [`Builder::max_log_bytes`].
    #[must_use]
    pub fn checkpoint_interval(mut self, every: Option<std::time::Duration>) -> Self {
        self.checkpoint_every = Some(every);
        self
    }

    pub(crate) fn checkpoint_every(&self) -> Option<std::time::Duration> {
        self.checkpoint_every.unwrap_or(Some(std::time::Duration::from_secs(30)))
    }

    /// Bytes per log segment file of a new database (default 16 MiB; a multiple of 8 from 4 KiB
    /// to 1 GiB, and at least [`MIN_SEGMENT_PAGES`](crate::MIN_SEGMENT_PAGES) pages: a log
    /// record lies in one segment, and a structure change's record holds a page image; `create`
    /// refuses less with [`Error::Log`]`(`[`LogError::BadConfig`]`)`). An existing database
    /// keeps the size it was created with.
    #[must_use]
    pub fn log_segment_bytes(mut self, bytes: u64) -> Self {
        self.log_segment_bytes = Some(bytes);
        self
    }

    /// What opening a logged database does when its log is damaged below a point a sync made
    /// durable (wal README W8, RECOVERY.md R24). [`LogRecovery::Strict`] (the default) refuses
    /// with [`Error::Log`]`(`[`LogError::DurableDamage`]`)` naming the damaged LSN and what
    /// would be lost, changing nothing; [`LogRecovery::PointInTime`] opens at the last
    /// consistent point, dropping every record from the damage on, and
    /// [`Database::restart_stats`] reports the cut. A torn tail (the unsynced end a crash
    /// leaves) is cut silently either way.
    ///
    /// [`LogRecovery::Strict`]: crate::LogRecovery::Strict
    /// [`LogRecovery::PointInTime`]: crate::LogRecovery::PointInTime
    /// [`Database::restart_stats`]: crate::Database::restart_stats
    #[must_use]
    pub fn log_recovery(mut self, recovery: swizzledb_wal::Recovery) -> Self {
        self.log_recovery = recovery;
        self
    }

    /// Creates a new database file (fails if it exists), logged unless
    /// [`Builder::logging`]`(false)`.
    ///
    /// Every setting is checked before anything is made (RECOVERY.md R14): a refused create
    /// leaves no file. One that fails after it made files removes the files and directories
    /// it made (never one that was there), so it can be tried again. A create that a crash
    /// cuts short leaves its marker, `<path>.creating` (RECOVERY.md R14): until it is gone the
    /// path holds no database, [`Builder::open`] says [`Error::NotFound`], and the next
    /// `create` or [`Builder::open_or_create`] removes what the cut-short one left and creates
    /// the database anew. The directory `path`
    /// names must exist: a create makes the file and its log directory, never the directories
    /// above them.
    ///
    /// # Errors
    /// Invalid settings ([`BufferError::Config`](crate::BufferError::Config) for the pool's
    /// and the page size, [`Error::Log`]`(`[`LogError::BadConfig`]`)` for the log's), a
    /// missing directory ([`Error::DirectoryMissing`], logged or not), a path in a database's
    /// log directory ([`Error::InLogDirectory`]: that database owns it), a non-empty
    /// `<path>.wal` ([`Error::StaleLog`]), another create making the same database
    /// ([`Error::AlreadyOpen`]), or I/O errors (among them a `path` that ends with a separator
    /// or `..`, which names a directory, and an empty `path`:
    /// [`BufferError::Io`](crate::BufferError::Io) of kind `InvalidInput`, whose message says
    /// which, before anything is made).
    pub fn create(self, path: impl AsRef<Path>) -> Result<Database> {
        self.create_at(path.as_ref())
    }

    /// Creates a database in memory: its page file, log and everything else live in a file
    /// system of its own in memory ([`swizzledb_io::MemFs`], io README IO8), and are gone
    /// when the database is dropped or closed. It has the same API and the same guarantees as a
    /// database on disk (transactions, isolation, snapshots, rollback, the log's checks) except
    /// durability: nothing survives the process, and a crash or `close` loses everything. For
    /// tests, tools and caches.
    ///
    /// ```
    /// let db = swizzledb::Database::builder().create_in_memory()?;
    /// let tree = db.create_tree("sessions")?;
    /// tree.insert(b"alice", b"v1")?;
    /// assert_eq!(tree.get(b"alice")?.as_deref(), Some(&b"v1"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// Invalid settings, as [`Builder::create`]; running out of memory aborts the process, as
    /// any allocation does.
    pub fn create_in_memory(mut self) -> Result<Database> {
        self.config.vfs = Arc::new(swizzledb_io::MemFs::new());
        self.in_memory = true;
        self.create_at(Path::new(IN_MEMORY_PATH))
    }

    /// R20, R21: the decoupled cleaner replays the log archive, and write elision leaves pages
    /// to the decoupled cleaner and its checkpoints.
    pub(crate) fn check_propagation(&self) -> Result<()> {
        let refuse = |reason: &str| Err(Error::Log(LogError::BadConfig { reason: reason.into() }));
        if self.config.write_elision && self.cleaner != Cleaner::Decoupled {
            return refuse(
                "write elision needs the decoupled cleaner: add Builder::lab(|lab| lab.cleaner(Cleaner::Decoupled))",
            );
        }
        if self.cleaner == Cleaner::Decoupled && !self.log_archive {
            return refuse("Cleaner::Decoupled replays the log archive: add Builder::log_archive(true)");
        }
        if self.lazy_split_images == Some(true) && self.log_archive {
            return refuse(
                "lazy split images make a split's new node depend on another page's log, which the log \
                 archive's page-local redo cannot follow (RECOVERY.md R29): drop one of the two",
            );
        }
        if self.lazy_split_images == Some(true) && self.checkpoint_kind == CheckpointKind::Decoupled {
            return refuse(
                "lazy split images raise a resolved page's recovery LSN in the pool, which checkpoints \
                 computed from the log do not see (RECOVERY.md R29): use classical checkpoints with them",
            );
        }
        if self.restart_mode == RestartMode::Instant && !self.log_archive {
            return refuse(
                "RestartMode::Instant reads the log archive instead of the log: add Builder::log_archive(true)",
            );
        }
        Ok(())
    }

    /// R14: a new log's segments hold the largest record the engine appends, a structure
    /// change with a page image (checked where a log is created: `create`, a conversion).
    pub(crate) fn check_new_log(&self) -> Result<()> {
        let segment = self.log_segment_bytes.unwrap_or(LogConfig::new("").segment_bytes);
        let page = self.config.page_size as u64;
        let least = MIN_SEGMENT_PAGES * page;
        if segment < least {
            return Err(Error::Log(LogError::BadConfig {
                reason: format!(
                    "log_segment_bytes = {segment} must hold at least {MIN_SEGMENT_PAGES} pages of {page} \
                     bytes ({least}): a log record lies in one segment, and a structure change's \
                     holds a page image; raise it or lower page_size"
                ),
            }));
        }
        Ok(())
    }

    pub(crate) fn check_log_settings(&self) -> Result<()> {
        // Before anything is written; an unlogged database has no cleaner to check.
        if self.logging != Some(false) {
            self.check_propagation()?;
        }
        let segment = self.log_segment_bytes.unwrap_or(LogConfig::new("").segment_bytes);
        let bound = self.log_bound();
        // A segment size past the log's range (wal W1: at most 2^30) must not overflow here.
        let Some(four) = segment.checked_mul(4) else {
            return Err(Error::Log(LogError::BadConfig {
                reason: format!(
                    "log_segment_bytes = {segment} must be a multiple of 8 from 4096 to 2^30 bytes: \
                     lower it"
                ),
            }));
        };
        if bound < four {
            return Err(Error::Log(LogError::BadConfig {
                reason: format!(
                    "max_log_bytes = {bound} must be at least four log segments of {segment} bytes \
                     ({}): raise it, or lower log_segment_bytes when creating a database (an \
                     existing log keeps the segment size it was created with)",
                    four
                ),
            }));
        }
        Ok(())
    }

    /// The pool's settings over pages of `page_size` bytes (buffer `BufferPool::check_config`:
    /// the page size, the frames, the eviction batch, BP-Wrapper's queue), checked before
    /// anything is written.
    pub(crate) fn check_pool(&self, page_size: usize) -> Result<()> {
        swizzledb_buffer::BufferPool::check_config(&self.config, page_size)?;
        Ok(())
    }

    /// Every setting a `create` depends on, before it touches the file system: the pool's, and
    /// for a logged database the log's (R14, R15, R20–R22, R29).
    pub(crate) fn check_create(&self) -> Result<()> {
        self.check_pool(self.config.page_size)?;
        self.check_log_settings()?;
        if self.logging != Some(false) {
            self.check_new_log()?;
        }
        Ok(())
    }

    /// A trace ([`crate::lab::LabOptions::trace`]) is written where it says, created or
    /// truncated: never over the database's file at `path` or into its log directory, which
    /// it would destroy (checked on the operating system's file system, where traces are
    /// written; an in-memory database's files are not there); and only where it can be
    /// created. The pool creates it when it opens, after restart has written: one it cannot
    /// create is refused here, before anything is written (R14).
    pub(crate) fn check_trace(&self, path: &Path) -> Result<()> {
        let Some(trace) = self.config.trace.as_deref() else { return Ok(()) };
        if !self.in_memory {
            self.check_trace_beside(path, trace)?;
        }
        trace_creatable(trace).map_err(|source| {
            swizzledb_buffer::BufferError::from(swizzledb_buffer::TraceError::Io {
                file: trace.to_path_buf(),
                source,
            })
        })?;
        Ok(())
    }

    /// [`Builder::check_trace`]: not the database's file or in its log directory.
    fn check_trace_beside(&self, path: &Path, trace: &Path) -> Result<()> {
        let Some(at) = resolved_on_os(trace) else { return Ok(()) };
        let own = resolved_on_os(path).is_some_and(|file| file == at);
        let in_log = resolved_on_os(&wal_dir(path)).is_some_and(|dir| at.starts_with(dir));
        if own || in_log {
            return Err(swizzledb_buffer::BufferError::Config(format!(
                "the trace file {} is the database's {}: recording the trace would overwrite it; \
                 trace to another file",
                trace.display(),
                if own { "file" } else { "log directory" }
            ))
            .into());
        }
        Ok(())
    }

    /// `open`: the file's page size is the pool's, unless [`Builder::page_size`] set another
    /// ([`BufferError::PageSizeMismatch`](swizzledb_buffer::BufferError::PageSizeMismatch)); then
    /// the pool's settings over it are checked, before anything is written.
    pub(crate) fn adopt_page_size(&mut self, path: &Path, found: usize) -> Result<()> {
        if !self.page_size_set {
            self.config.page_size = found;
        } else if self.config.page_size != found {
            self.check_pool(self.config.page_size)?;
            return Err(swizzledb_buffer::BufferError::PageSizeMismatch {
                file: path.to_path_buf(),
                found,
                requested: self.config.page_size,
            }
            .into());
        }
        self.check_pool(found)
    }

    pub(crate) fn log_bound(&self) -> u64 {
        self.max_log_bytes.unwrap_or(DEFAULT_MAX_LOG_BYTES)
    }

    pub(crate) fn log_config(&self, path: &Path) -> LogConfig {
        let mut config = LogConfig::new(wal_dir(path));
        config.vfs = Arc::clone(&self.config.vfs);
        config.buffer_bytes = LOG_BUFFER_BYTES;
        config.recovery = self.log_recovery;
        config.commit_wait = self.commit_wait;
        if let Some(bytes) = self.log_segment_bytes {
            config.segment_bytes = bytes;
        }
        // wal W15: the segments a cleaner round lets truncation drop (about a quarter of the
        // bound) are kept for the next ones, so the log's files stay within the bound.
        config.spare_segments =
            usize::try_from(self.log_bound() / config.segment_bytes.saturating_mul(4).max(1))
                .unwrap_or(usize::MAX);
        config
    }

    /// Opens an existing database file. A logged database restarts from its log (whatever
    /// [`Builder::logging`] says); an unlogged one must have been closed cleanly. In
    /// main-memory mode every tree is loaded here. Settings the file or its log refuse are
    /// refused before anything is written (RECOVERY.md R14): the file and its log stay byte
    /// for byte as they were.
    ///
    /// # Errors
    /// [`Error::NotFound`] if there is no file, or only what a create that a crash cut short
    /// left ([`Builder::create`]); not a SwizzleDB file, another format version or
    /// page size, corruption, or I/O errors; settings the pool refuses
    /// ([`BufferError::Config`](crate::BufferError::Config)) or, for a logged database, the
    /// log ([`Error::Log`]`(`[`LogError::BadConfig`]`)`, with the log's own segment size);
    /// [`Error::AlreadyOpen`]; for a logged database [`Error::LogMissing`],
    /// [`Error::ForeignLog`] or a restart error; for an unlogged one [`Error::Unclean`] and
    /// [`Error::NotLogged`]. A restart whose undo must put back or free a loser's value longer
    /// than this pool takes (`Tree::max_value_len`, after a crash of a larger pool) fails with
    /// [`Error::Tree`]`(ValueTooLarge)` and loses nothing; reopen with the pool the database
    /// crashed with, which rolls the loser back. An instant restart checks this before it
    /// returns, rather than leave its background rollback to fail (RECOVERY.md, "Failure
    /// behaviour"). A `path` that can only name a directory (it ends with a separator,
    /// is empty or ends with `..`) is refused as [`Builder::create`] refuses it, before
    /// anything is read.
    pub fn open(self, path: impl AsRef<Path>) -> Result<Database> {
        self.open_at(path.as_ref())
    }

    /// Opens the database at `path` if the file exists, creates it otherwise (as
    /// [`Builder::open`] and [`Builder::create`] do).
    ///
    /// A file beside the marker of a create that a crash cut short (`<path>.creating`,
    /// [`Builder::create`]) is no database yet: it is created anew. Any other file that exists
    /// counts as a database, whatever its length: one that is not a database is refused by
    /// `open` with the page file's error, never overwritten. The check and the create are not
    /// one atomic step against another process creating the same file; the file lock
    /// ([`Error::AlreadyOpen`]) still keeps the two from both opening it.
    ///
    /// # Errors
    /// As [`Builder::open`] for an existing file, as [`Builder::create`] otherwise.
    pub fn open_or_create(self, path: impl AsRef<Path>) -> Result<Database> {
        let path = path.as_ref();
        if self.config.vfs.exists(path) && !self.config.vfs.exists(&crate::files::creating_marker(path)) {
            self.open_at(path)
        } else {
            self.create_at(path)
        }
    }
}

/// Whether the trace file at `path` can be opened for writing, as the pool creates it: an
/// existing file is opened without truncating it; a missing one is created and removed again.
fn trace_creatable(path: &Path) -> std::io::Result<()> {
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(file) => {
            drop(file);
            std::fs::remove_file(path)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::OpenOptions::new().write(true).open(path).map(drop)
        }
        Err(e) => Err(e),
    }
}
